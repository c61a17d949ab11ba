//! The operations of SPEC section 5, as typed values.
//!
//! Field values are kept as the trace gave them (any `u64`, any `f64`): deciding that a
//! `max_attempts` of 0 or a `jitter` of 2 is `invalid_input` is the job of whoever executes
//! the operation, so that both readings of the SPEC make that decision on their own.
//!
//! Layer: the SPEC's vocabulary, the bottom. It uses only [`crate::response`]'s line writer
//! and may not reach up: a trace line means the same to the store, the checker and
//! `retryq replay`, so it cannot depend on any of them.

use serde::Serialize;

/// What the transport reported for an attempt, in `complete`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The attempt succeeded: the job ends `done`.
    Ok,
    /// The attempt failed in a way a later attempt may not: retry after the backoff, budget
    /// permitting.
    Retryable,
    /// The attempt failed in a way no retry can fix: the job ends `dead(permanent)` at once.
    Permanent,
}

/// What happened to an attempt, in `run_once`: a classified [`Outcome`], an error the
/// transport did not classify, or the process dying after its claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// The transport said `ok`.
    Ok,
    /// The transport said `retryable`.
    Retryable,
    /// The transport said `permanent`.
    Permanent,
    /// The transport failed without a classification: the job stays leased until its lease
    /// runs out, so the attempt is neither wasted nor repeated early.
    Unknown,
    /// The process died after its claim: nothing is recorded, and the lease running out is the
    /// only way the job comes back.
    Crash,
}

impl RunOutcome {
    /// The classified outcome, if the transport gave one.
    pub fn classified(self) -> Option<Outcome> {
        match self {
            RunOutcome::Ok => Some(Outcome::Ok),
            RunOutcome::Retryable => Some(Outcome::Retryable),
            RunOutcome::Permanent => Some(Outcome::Permanent),
            RunOutcome::Unknown | RunOutcome::Crash => None,
        }
    }
}

/// One line of a trace. Serializes to exactly the JSON object SPEC section 5 reads.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// `config`: sets the timing parameters later operations use; an absent one keeps its value.
    Config {
        /// The first retry's window.
        #[serde(skip_serializing_if = "Option::is_none")]
        base_ms: Option<u64>,
        /// The largest retry window.
        #[serde(skip_serializing_if = "Option::is_none")]
        cap_ms: Option<u64>,
        /// How long a claim leases its job.
        #[serde(skip_serializing_if = "Option::is_none")]
        lease_ms: Option<u64>,
        /// The most jobs one claim or `reap` ends (SPEC 3.11, 6.37).
        #[serde(skip_serializing_if = "Option::is_none")]
        reap_limit: Option<u64>,
    },
    /// `enqueue`: stores a new job with its budget, or does nothing for an identical one.
    Enqueue {
        /// The job's name, unique in the store.
        id: String,
        /// What the transport sends; compared on a repeated enqueue.
        payload: String,
        /// The attempt budget (at least 1).
        max_attempts: u64,
        /// The time budget: no claim at or after it.
        deadline: u64,
        /// The caller's clock.
        now: u64,
        /// The job's first `available_at` (SPEC 3.2); absent means `now`.
        #[serde(skip_serializing_if = "Option::is_none")]
        not_before: Option<u64>,
        /// The job's own `base_ms`, replacing the queue's in its retries (SPEC 3.2, 6.23).
        #[serde(skip_serializing_if = "Option::is_none")]
        base_ms: Option<u64>,
        /// The job's own `cap_ms`, likewise.
        #[serde(skip_serializing_if = "Option::is_none")]
        cap_ms: Option<u64>,
        /// The job's queue (SPEC 1.6); absent means `"default"`.
        #[serde(skip_serializing_if = "Option::is_none")]
        queue: Option<String>,
        /// The job's priority, 0 … 9, lower first (SPEC 1.6); absent means 0.
        #[serde(skip_serializing_if = "Option::is_none")]
        priority: Option<u64>,
        /// The job's kind, 0 … 64 bytes (SPEC 1.1, contract 1.4); absent means `""`, none.
        /// Compared with the payload on a repeated enqueue.
        #[serde(skip_serializing_if = "Option::is_none")]
        kind: Option<String>,
    },
    /// `claim`: leases the first due job of its queues to `worker`, reaping every queue first.
    Claim {
        /// Who takes the lease.
        worker: String,
        /// The caller's clock.
        now: u64,
        /// The queues the worker serves (SPEC 3.3); absent means `["default"]`.
        #[serde(skip_serializing_if = "Option::is_none")]
        queues: Option<Vec<String>>,
    },
    /// `complete`: records an attempt's outcome, fenced by the lease it names.
    Complete {
        /// Who claims to hold the lease.
        worker: String,
        /// The job.
        id: String,
        /// The attempt number the claim returned: the fencing token.
        attempt: u64,
        /// What the attempt came to.
        outcome: Outcome,
        /// The caller's clock.
        now: u64,
        /// The jitter draw in `[0, 1)` for a retry's delay; absent when no retry can follow.
        #[serde(skip_serializing_if = "Option::is_none")]
        jitter: Option<f64>,
    },
    /// `run_once`: a claim, one attempt through a transport, and its completion.
    RunOnce {
        /// Who runs the attempt.
        worker: String,
        /// The clock at the claim.
        now: u64,
        /// The clock after sending; absent means the same as `now`.
        #[serde(skip_serializing_if = "Option::is_none")]
        after: Option<u64>,
        /// What happened to the attempt.
        outcome: RunOutcome,
        /// The jitter draw for a retry's delay, as in `complete`.
        #[serde(skip_serializing_if = "Option::is_none")]
        jitter: Option<f64>,
        /// The queues the worker serves, as in `claim`.
        #[serde(skip_serializing_if = "Option::is_none")]
        queues: Option<Vec<String>>,
    },
    /// The holder of a running attempt keeps its lease (SPEC 3.12).
    Heartbeat {
        /// Who claims to hold the lease.
        worker: String,
        /// The job.
        id: String,
        /// The attempt number the claim returned: the fencing token, as in `complete`.
        attempt: u64,
        /// The caller's clock: the lease runs `lease_ms` from it, never shorter than before.
        now: u64,
    },
    /// `redrive`: gives a dead job a new budget and makes it pending.
    Redrive {
        /// The dead job.
        id: String,
        /// The caller's clock: the job is due at once.
        now: u64,
        /// Attempts added to those already spent.
        add_attempts: u64,
        /// The new deadline.
        deadline: u64,
    },
    /// An operator takes a pending job off the queue, or asks a leased one's holder to stop
    /// (SPEC 3.13).
    Cancel {
        /// The job.
        id: String,
        /// The caller's clock, recorded in the history.
        now: u64,
    },
    /// `reap`: ends the jobs due to end, at most `reap_limit` of them (SPEC 3.7).
    Reap {
        /// The caller's clock.
        now: u64,
    },
    /// `get`: shows one job.
    Get {
        /// The job.
        id: String,
    },
    /// `stats`: counts the store, or one queue of it.
    Stats {
        /// The caller's clock, for the expired-lease and age figures.
        now: u64,
        /// The queue counted (SPEC 3.8); absent means every queue.
        #[serde(skip_serializing_if = "Option::is_none")]
        queue: Option<String>,
    },
    /// `prune`: ended jobs leave the store, each leaving a tombstone (SPEC 3.14).
    Prune {
        /// Jobs that ended at or before it are pruned; at most `now`.
        before: u64,
        /// The caller's clock.
        now: u64,
    },
    /// `forget`: tombstones leave the store, and their ids may be enqueued anew (SPEC 3.15).
    Forget {
        /// Tombstones of jobs that ended at or before it are removed; at most `now`.
        before: u64,
        /// The caller's clock.
        now: u64,
    },
    /// `retry_delay`: evaluates SPEC section 2's formula alone, without a job.
    RetryDelay {
        /// The attempt that failed (1, 2, …).
        attempt: u64,
        /// The first window.
        base_ms: u64,
        /// The largest window.
        cap_ms: u64,
        /// The jitter draw in `[0, 1)`.
        jitter: f64,
    },
    /// `pause`: no claim picks the queue's jobs until it is resumed (SPEC 3.16).
    Pause {
        /// The queue paused; it need not carry any job.
        queue: String,
        /// The caller's clock, kept as the time of the first pause (no answer depends on it).
        now: u64,
    },
    /// `resume`: the queue's jobs are picked again (SPEC 3.17).
    Resume {
        /// The queue resumed.
        queue: String,
        /// The caller's clock.
        now: u64,
    },
    /// `run_now`: a pending job becomes due at `min(available_at, now)` (SPEC 3.18).
    RunNow {
        /// The job.
        id: String,
        /// The caller's clock.
        now: u64,
    },
    /// `restart`: the process stops and comes back; what was committed stays.
    Restart,
}

impl Op {
    /// The `now` the operation carries, if any (`run_once`'s first reading).
    pub fn now(&self) -> Option<u64> {
        match *self {
            Op::Enqueue { now, .. }
            | Op::Claim { now, .. }
            | Op::Complete { now, .. }
            | Op::RunOnce { now, .. }
            | Op::Heartbeat { now, .. }
            | Op::Redrive { now, .. }
            | Op::Cancel { now, .. }
            | Op::Reap { now }
            | Op::Stats { now, .. }
            | Op::Prune { now, .. }
            | Op::Forget { now, .. }
            | Op::Pause { now, .. }
            | Op::Resume { now, .. }
            | Op::RunNow { now, .. } => Some(now),
            Op::Config { .. } | Op::Get { .. } | Op::RetryDelay { .. } | Op::Restart => None,
        }
    }

    /// The id of the job the operation names, if it names one.
    pub fn id(&self) -> Option<&str> {
        match self {
            Op::Enqueue { id, .. }
            | Op::Complete { id, .. }
            | Op::Heartbeat { id, .. }
            | Op::Redrive { id, .. }
            | Op::Cancel { id, .. }
            | Op::RunNow { id, .. }
            | Op::Get { id } => Some(id),
            _ => None,
        }
    }

    /// The operation as one line of JSON, without the newline.
    pub fn to_json_line(&self) -> String {
        // Serializing these plain enums cannot fail: every key is a string and every f64 a
        // finite or non-finite number serde_json writes as a number or `null`.
        let json = serde_json::to_string(self)
            .unwrap_or_else(|e| format!("{{\"op\":\"unserializable\",\"why\":{:?}}}", e.to_string()));
        crate::response::one_line(json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_serialize_as_spec_lines() {
        let op = Op::RunOnce {
            queues: None,
            worker: "w1".into(),
            now: 0,
            after: None,
            outcome: RunOutcome::Retryable,
            jitter: Some(0.5),
        };
        assert_eq!(
            op.to_json_line(),
            r#"{"op":"run_once","worker":"w1","now":0,"outcome":"retryable","jitter":0.5}"#
        );
        assert_eq!(Op::Restart.to_json_line(), r#"{"op":"restart"}"#);
        let config = Op::Config { base_ms: Some(100), cap_ms: None, lease_ms: Some(1000), reap_limit: None };
        assert_eq!(config.to_json_line(), r#"{"op":"config","base_ms":100,"lease_ms":1000}"#);
        let limited = Op::Config { base_ms: None, cap_ms: None, lease_ms: None, reap_limit: Some(2) };
        assert_eq!(limited.to_json_line(), r#"{"op":"config","reap_limit":2}"#);
        let enqueue = |not_before, base_ms, cap_ms| Op::Enqueue {
            priority: None,
            queue: None,
            id: "a".into(),
            payload: String::new(),
            max_attempts: 2,
            deadline: 9,
            now: 1,
            not_before,
            base_ms,
            cap_ms,
            kind: None,
        };
        assert_eq!(
            enqueue(None, None, None).to_json_line(),
            r#"{"op":"enqueue","id":"a","payload":"","max_attempts":2,"deadline":9,"now":1}"#,
            "the 1.1 fields only when present"
        );
        assert_eq!(
            enqueue(Some(3), Some(0), Some(7)).to_json_line(),
            r#"{"op":"enqueue","id":"a","payload":"","max_attempts":2,"deadline":9,"now":1,"not_before":3,"base_ms":0,"cap_ms":7}"#
        );
        let heartbeat = Op::Heartbeat { worker: "w".into(), id: "a".into(), attempt: 2, now: 5 };
        assert_eq!(
            heartbeat.to_json_line(),
            r#"{"op":"heartbeat","worker":"w","id":"a","attempt":2,"now":5}"#
        );
        let cancel = Op::Cancel { id: "a".into(), now: 5 };
        assert_eq!(cancel.to_json_line(), r#"{"op":"cancel","id":"a","now":5}"#);
        let pause = Op::Pause { queue: "mail".into(), now: 5 };
        assert_eq!(pause.to_json_line(), r#"{"op":"pause","queue":"mail","now":5}"#);
        let resume = Op::Resume { queue: "mail".into(), now: 6 };
        assert_eq!(resume.to_json_line(), r#"{"op":"resume","queue":"mail","now":6}"#);
        let run_now = Op::RunNow { id: "a".into(), now: 7 };
        assert_eq!(run_now.to_json_line(), r#"{"op":"run_now","id":"a","now":7}"#);
    }

    #[test]
    fn classified_outcomes() {
        assert_eq!(RunOutcome::Retryable.classified(), Some(Outcome::Retryable));
        assert_eq!(RunOutcome::Unknown.classified(), None);
        assert_eq!(RunOutcome::Crash.classified(), None);
    }
}
