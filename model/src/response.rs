//! The results of SPEC section 5, as typed values that serialize to exactly its JSON.
//!
//! Keys come out in the order SPEC lists them, so a replay's output can be compared with the
//! SPEC's worked trace to the letter.
//!
//! Layer: the SPEC's vocabulary, the bottom. It uses nothing of the crate and may not reach
//! up: an answer is compared line for line between the model and SQLite, so it cannot depend
//! on either side.

use serde::Serialize;

/// A job's status (SPEC section 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Waiting for a claim: due at `available_at`.
    Pending,
    /// Claimed by a worker, whose lease runs until `lease_until`.
    Leased,
    /// Finished: an attempt's outcome was `ok`. Final unless redriven (never: only `dead` is).
    Done,
    /// Out of budget, time or luck: kept with its reason until an operator redrives it.
    Dead,
}

/// Why a job is `dead` (SPEC section 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadReason {
    /// Every allowed attempt was claimed and none succeeded.
    Exhausted,
    /// The deadline came before an attempt could succeed (or before the next could start).
    Deadline,
    /// An attempt's outcome said retrying could never help.
    Permanent,
    /// An operator cancelled the job while it was pending (SPEC 3.13).
    Cancelled,
}

/// What `get` shows of a job.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct JobView {
    /// The job's name, unique in the store.
    pub id: String,
    /// Where the job is in its life.
    pub status: Status,
    /// Claims so far: never rolls back, so a crashed attempt counts.
    pub attempts: u64,
    /// The attempt budget: no claim past it.
    pub max_attempts: u64,
    /// When a pending job becomes claimable; `null` unless pending.
    pub available_at: Option<u64>,
    /// The time budget: no claim at or after it.
    pub deadline: u64,
    /// Why the job is dead; `null` unless dead.
    pub dead_reason: Option<DeadReason>,
    /// How often an operator granted a new budget.
    pub redrives: u64,
    /// The job's first `available_at`: its enqueue's `not_before`, or its enqueue's `now`.
    pub not_before: u64,
    /// The job's own `base_ms`, `null` unless it was enqueued with one: an absent one means
    /// the queue's setting at each retry (SPEC 6.23), so it is never filled in.
    pub base_ms: Option<u64>,
    /// The job's own `cap_ms`, `null` unless it was enqueued with one (SPEC 6.23).
    pub cap_ms: Option<u64>,
    /// The job's queue (SPEC 1.6).
    pub queue: String,
    /// The job's priority, 0 … 9, lower first (SPEC 1.6).
    pub priority: u64,
    /// When it ended `done` or `dead`; `null` while open (SPEC 1.1).
    pub ended_at: Option<u64>,
    /// Whether an operator asked the holder of its lease to stop (SPEC 3.13).
    pub cancel_requested: bool,
    /// The job's kind (contract 1.4), shown only when not `""`: a job without one answers
    /// exactly as in contract 1.3.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
}

/// What `get` shows of a pruned job: its tombstone (SPEC 1.7, 3.9).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct TombstoneView {
    /// The pruned job's id, taken for good (until a forget).
    pub id: String,
    /// Its queue.
    pub queue: String,
    /// Its final status: `done` or `dead`.
    pub status: Status,
    /// Why it died; `null` unless dead.
    pub dead_reason: Option<DeadReason>,
    /// The claims it had.
    pub attempts: u64,
    /// When it ended.
    pub ended_at: u64,
}

/// What `stats` shows of the store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct StatsView {
    /// Jobs waiting for a claim.
    pub pending: u64,
    /// Jobs under a lease, expired or not.
    pub leased: u64,
    /// Jobs that succeeded.
    pub done: u64,
    /// Jobs that ended without success: the sum of the three reasons below.
    pub dead: u64,
    /// Dead jobs whose attempts ran out.
    pub dead_exhausted: u64,
    /// Dead jobs whose deadline passed.
    pub dead_deadline: u64,
    /// Dead jobs an attempt declared hopeless.
    pub dead_permanent: u64,
    /// Dead jobs cancelled by an operator (SPEC 3.13).
    pub dead_cancelled: u64,
    /// Leased jobs whose lease has run out: their holder is presumed gone.
    pub leased_expired: u64,
    /// `now − min(enqueued_at)` over pending and leased jobs (SPEC 3.8): the one figure that
    /// shows a queue falling behind.
    pub oldest_open_age_ms: Option<u64>,
    /// Tombstones of jobs that ended `done` (SPEC 3.14).
    pub pruned_done: u64,
    /// Tombstones of jobs that ended `dead`.
    pub pruned_dead: u64,
    /// Paused queue names (SPEC 3.8, 3.16): all of them, or 1/0 for the one queue counted.
    pub paused_queues: u64,
}

/// A successful result: `{"ok": …}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "ok", rename_all = "snake_case")]
pub enum Reply {
    /// `config` applied.
    Config,
    /// `enqueue` stored a new job.
    Enqueued,
    /// `enqueue` of an id already stored with the same payload: nothing changed (idempotent).
    Existing,
    /// `claim` leased a job.
    Claimed {
        /// The job leased.
        id: String,
        /// Its attempt number: the fencing token a completion must present.
        attempt: u64,
        /// When the lease runs out and the job may be claimed again.
        lease_until: u64,
    },
    /// `claim` found nothing due (or `run_once` nothing to run).
    None,
    /// `complete` → `ok`.
    Done,
    /// `complete` → `retryable` with time left.
    Retry {
        /// When the retry becomes claimable.
        available_at: u64,
    },
    /// `complete` → quarantined.
    Dead {
        /// Why it ended.
        reason: DeadReason,
    },
    /// `run_once` → `done`, naming the job it ran.
    #[serde(rename = "done")]
    RanDone {
        /// The job run.
        id: String,
        /// The attempt that succeeded.
        attempt: u64,
    },
    /// `run_once` → `retry`.
    #[serde(rename = "retry")]
    RanRetry {
        /// The job run.
        id: String,
        /// The attempt that failed.
        attempt: u64,
        /// When the retry becomes claimable.
        available_at: u64,
    },
    /// `run_once` → `dead`.
    #[serde(rename = "dead")]
    RanDead {
        /// The job run.
        id: String,
        /// The attempt that ended it.
        attempt: u64,
        /// Why it ended.
        reason: DeadReason,
    },
    /// `run_once` → the process died after its claim.
    Crashed {
        /// The job run.
        id: String,
        /// The attempt spent by the crash: attempts never roll back.
        attempt: u64,
    },
    /// `heartbeat` → the lease's new expiry.
    Extended {
        /// The lease's expiry after the heartbeat; it may exceed 2^53−1 (SPEC 6.10).
        lease_until: u64,
    },
    /// `redrive` granted a dead job a new budget.
    Redriven,
    /// `cancel` of a pending job.
    Cancelled,
    /// `cancel` of a leased job: the request is recorded (SPEC 3.13).
    Cancelling,
    /// `reap` ended jobs out of budget or time.
    Reaped {
        /// How many jobs it ended.
        count: u64,
    },
    /// `prune` removed ended jobs, leaving tombstones (SPEC 3.14).
    Pruned {
        /// How many jobs it removed.
        count: u64,
    },
    /// `forget` removed tombstones (SPEC 3.15).
    Forgotten {
        /// How many tombstones it removed.
        count: u64,
    },
    /// `get`'s view of a job.
    Job(JobView),
    /// `get`'s view of a pruned job's tombstone.
    #[serde(rename = "pruned")]
    Tombstone(TombstoneView),
    /// `stats`' view of the store.
    Stats(StatsView),
    /// `retry_delay`: the delay SPEC section 2's formula gives.
    Delay {
        /// The delay in milliseconds.
        delay_ms: u64,
    },
    /// `pause`: the queue is paused (SPEC 3.16), whether or not it was already.
    Paused,
    /// `resume`: the queue is not paused (SPEC 3.17), whether or not it was.
    Resumed,
    /// `run_now` made a pending job due (SPEC 3.18).
    Due {
        /// The job's `available_at` after it: `min(available_at, now)`.
        available_at: u64,
    },
    /// `restart`: the process stopped and came back; leases and jobs are as stored.
    Restart,
}

/// A refused operation: `{"error": …}`. Each changed nothing.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum Failure {
    /// `detail` names the field and what was wrong with it. Its wording is not part of the
    /// contract; two readings compare only the fact that input was refused.
    InvalidInput {
        /// What was wrong, for people; not compared.
        detail: String,
    },
    /// `enqueue` of an existing id with a different payload.
    Conflict,
    /// No job has this id.
    NotFound,
    /// The completer does not hold the lease it names (another worker, another attempt, or none).
    LeaseLost,
    /// `redrive` of a job that is not dead.
    NotDead,
    /// `complete` dated before the claim it completes.
    ClockWentBackwards,
    /// `heartbeat` at or after the job's deadline (SPEC 3.12).
    DeadlinePassed,
    /// `cancel` of a job that is done or dead.
    NotCancellable,
    /// `heartbeat` of a lease whose job an operator cancelled: stop the attempt (SPEC 3.12).
    Cancelled,
    /// `redrive`, `cancel` or `run_now` of a pruned id (SPEC 3.14).
    Pruned,
    /// `run_now` of a job that is leased, done or dead (SPEC 3.18).
    NotPending,
    /// `run_once`: the transport failed in a way it did not classify; the job stays leased.
    UnknownError {
        /// The job left leased.
        id: String,
        /// The attempt left open.
        attempt: u64,
    },
    /// `run_once`: the clock read after sending was before the one read at the claim.
    #[serde(rename = "clock_went_backwards")]
    RanClockWentBackwards {
        /// The job whose attempt was refused.
        id: String,
        /// The attempt left open.
        attempt: u64,
    },
}

/// One output line.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum Response {
    /// The operation applied.
    Ok(Reply),
    /// The operation was refused and changed nothing.
    Err(Failure),
}

impl Response {
    /// `{"error":"invalid_input","detail":…}`.
    pub fn invalid(detail: impl Into<String>) -> Response {
        Response::Err(Failure::InvalidInput { detail: detail.into() })
    }

    /// The response as one line of JSON, without the newline (SPEC 5.4).
    pub fn to_json_line(&self) -> String {
        // Every field is a string, an integer, or null: serialization cannot fail.
        let json = serde_json::to_string(self)
            .unwrap_or_else(|e| format!("{{\"error\":\"internal\",\"detail\":{:?}}}", e.to_string()));
        one_line(json)
    }

    /// The job a claim (alone or in `run_once`) took, as the answer says.
    pub fn taken_id(&self) -> Option<&str> {
        match self {
            Response::Ok(
                Reply::Claimed { id, .. }
                | Reply::RanDone { id, .. }
                | Reply::RanRetry { id, .. }
                | Reply::RanDead { id, .. }
                | Reply::Crashed { id, .. },
            )
            | Response::Err(Failure::UnknownError { id, .. } | Failure::RanClockWentBackwards { id, .. }) => {
                Some(id)
            }
            _ => None,
        }
    }

    /// The same response with any `invalid_input` detail blanked: what two readings of the
    /// SPEC must agree on.
    pub fn observable(&self) -> Response {
        match self {
            Response::Err(Failure::InvalidInput { .. }) => Response::invalid(""),
            other => other.clone(),
        }
    }
}

/// JSON text with U+2028, U+2029 and U+0085 escaped (SPEC 5.4, 6.3). JSON allows them raw
/// inside strings, but readers that split lines on them (JavaScript's, Python's
/// `str.splitlines`, many log shippers) would cut one object in two. They can only occur
/// inside strings, so escaping them leaves the same JSON value.
pub fn one_line(json: String) -> String {
    if !json.contains(['\u{2028}', '\u{2029}', '\u{85}']) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        match c {
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            '\u{85}' => out.push_str("\\u0085"),
            c => out.push(c),
        }
    }
    out
}

impl From<Reply> for Response {
    fn from(reply: Reply) -> Self {
        Response::Ok(reply)
    }
}

impl From<Failure> for Response {
    fn from(failure: Failure) -> Self {
        Response::Err(failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_serialize_in_spec_key_order() {
        let r: Response = Reply::RanRetry { id: "order-7".into(), attempt: 1, available_at: 50 }.into();
        assert_eq!(r.to_json_line(), r#"{"ok":"retry","id":"order-7","attempt":1,"available_at":50}"#);
        let r: Response = Reply::Job(JobView {
            id: "order-7".into(),
            status: Status::Dead,
            attempts: 4,
            max_attempts: 5,
            available_at: None,
            deadline: 700,
            dead_reason: Some(DeadReason::Deadline),
            redrives: 0,
            not_before: 0,
            base_ms: None,
            cap_ms: None,
            queue: "default".into(),
            priority: 0,
            ended_at: Some(1275),
            cancel_requested: false,
            kind: String::new(),
        })
        .into();
        assert_eq!(
            r.to_json_line(),
            r#"{"ok":"job","id":"order-7","status":"dead","attempts":4,"max_attempts":5,"available_at":null,"deadline":700,"dead_reason":"deadline","redrives":0,"not_before":0,"base_ms":null,"cap_ms":null,"queue":"default","priority":0,"ended_at":1275,"cancel_requested":false}"#
        );
        // Contract 1.4: a kind is shown last, and only when the job has one.
        let Response::Ok(Reply::Job(view)) = r else { unreachable!("built as a job") };
        let r: Response = Reply::Job(JobView { kind: "receipt".into(), ..view }).into();
        assert!(r.to_json_line().ends_with(r#""cancel_requested":false,"kind":"receipt"}"#));
        let r: Response = Reply::Stats(StatsView::default()).into();
        assert_eq!(
            r.to_json_line(),
            r#"{"ok":"stats","pending":0,"leased":0,"done":0,"dead":0,"dead_exhausted":0,"dead_deadline":0,"dead_permanent":0,"dead_cancelled":0,"leased_expired":0,"oldest_open_age_ms":null,"pruned_done":0,"pruned_dead":0,"paused_queues":0}"#
        );
        let r: Response = Reply::Tombstone(TombstoneView {
            id: "a".into(),
            queue: "mail".into(),
            status: Status::Dead,
            dead_reason: Some(DeadReason::Exhausted),
            attempts: 3,
            ended_at: 9,
        })
        .into();
        assert_eq!(
            r.to_json_line(),
            r#"{"ok":"pruned","id":"a","queue":"mail","status":"dead","dead_reason":"exhausted","attempts":3,"ended_at":9}"#
        );
        assert_eq!(Response::from(Reply::Pruned { count: 2 }).to_json_line(), r#"{"ok":"pruned","count":2}"#);
    }

    #[test]
    fn failures_serialize_with_their_code() {
        let r: Response = Failure::RanClockWentBackwards { id: "a".into(), attempt: 2 }.into();
        assert_eq!(r.to_json_line(), r#"{"error":"clock_went_backwards","id":"a","attempt":2}"#);
        assert_eq!(Response::from(Failure::LeaseLost).to_json_line(), r#"{"error":"lease_lost"}"#);
        assert_eq!(Response::from(Failure::DeadlinePassed).to_json_line(), r#"{"error":"deadline_passed"}"#);
        assert_eq!(Response::from(Failure::Cancelled).to_json_line(), r#"{"error":"cancelled"}"#);
        assert_eq!(Response::from(Failure::Pruned).to_json_line(), r#"{"error":"pruned"}"#);
        assert_eq!(Response::from(Reply::Cancelling).to_json_line(), r#"{"ok":"cancelling"}"#);
        assert_eq!(Response::from(Failure::NotCancellable).to_json_line(), r#"{"error":"not_cancellable"}"#);
        assert_eq!(
            Response::from(Reply::Extended { lease_until: 7 }).to_json_line(),
            r#"{"ok":"extended","lease_until":7}"#
        );
        assert_eq!(Response::from(Reply::Cancelled).to_json_line(), r#"{"ok":"cancelled"}"#);
        assert_eq!(Response::from(Reply::Paused).to_json_line(), r#"{"ok":"paused"}"#);
        assert_eq!(Response::from(Reply::Resumed).to_json_line(), r#"{"ok":"resumed"}"#);
        assert_eq!(
            Response::from(Reply::Due { available_at: 4 }).to_json_line(),
            r#"{"ok":"due","available_at":4}"#
        );
        assert_eq!(Response::from(Failure::NotPending).to_json_line(), r#"{"error":"not_pending"}"#);
        let r: Response = Reply::Dead { reason: DeadReason::Cancelled }.into();
        assert_eq!(r.to_json_line(), r#"{"ok":"dead","reason":"cancelled"}"#);
        assert_eq!(
            Response::invalid("now: x").to_json_line(),
            r#"{"error":"invalid_input","detail":"now: x"}"#
        );
    }

    #[test]
    fn line_separators_are_escaped() {
        let r: Response =
            Failure::UnknownError { id: "a\u{2028}b\u{2029}c\u{85}d\ne".into(), attempt: 1 }.into();
        let line = r.to_json_line();
        assert_eq!(line, r#"{"error":"unknown_error","id":"a\u2028b\u2029c\u0085d\ne","attempt":1}"#);
        assert_eq!(line.lines().count(), 1);
        let back: serde_json::Value = serde_json::from_str(&line).expect("still JSON");
        assert_eq!(back["id"], "a\u{2028}b\u{2029}c\u{85}d\ne", "the same value");
    }

    #[test]
    fn observable_blanks_only_invalid_input_details() {
        assert_eq!(Response::invalid("a").observable(), Response::invalid("b").observable());
        let r: Response = Reply::Reaped { count: 2 }.into();
        assert_eq!(r.observable(), r);
    }
}
