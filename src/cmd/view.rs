//! How the operator commands show the queue's own types ([`Job`], [`Stats`]) as JSON: the
//! shapes of SPEC section 5's `get` and `stats` results, built here from the library's
//! values rather than borrowed from the replay's, so the CLI depends on the queue alone.
//!
//! The keys and their order are SPEC section 5's; `tests/cli.rs` and `tests/output.rs`
//! compare these lines with the replay's byte for byte.

use std::time::{Duration, UNIX_EPOCH};

use retryq::{Job, Stats, Tombstone};
use serde::Serialize;

/// The first millisecond RFC 3339 cannot write: 10000-01-01T00:00:00Z. `humantime` refuses
/// (with a formatting error, which `format!` turns into a panic) anything from there on.
const YEAR_10000_MS: u64 = 253_402_300_800_000;

/// A Unix-millisecond time as UTC in RFC 3339 with milliseconds, `2026-11-30T18:22:36.712Z`:
/// what an operator compares with logs and clocks. A time past the year 9999 — a deadline
/// or a lease expiry can be as far as 2^53−1 or 2^54−2 ms, some 285,000 years, which in
/// practice means "never" — is said as such rather than as a date nothing else can read.
pub fn utc(ms: u64) -> String {
    if ms >= YEAR_10000_MS {
        return "after the year 9999".to_owned();
    }
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// A time as the human-readable outputs show it: the milliseconds, which scripts and the
/// JSON outputs use, and the same instant in UTC beside them, `1796062956712
/// (2026-11-30T18:22:36.712Z)`.
pub fn stamp(ms: u64) -> String {
    format!("{ms} ({})", utc(ms))
}

/// A successful result: `{"ok":KIND,…fields}`.
#[derive(Serialize)]
pub struct Ok<T> {
    ok: &'static str,
    #[serde(flatten)]
    fields: T,
}

/// `{"ok":"job",…}`: SPEC section 5's `get` result.
pub fn job(job: &Job) -> Ok<JobFields<'_>> {
    Ok { ok: "job", fields: JobFields::of(job) }
}

/// `{"ok":"stats",…}`: SPEC section 5's `stats` result.
pub fn stats(stats: &Stats) -> Ok<StatsFields> {
    Ok { ok: "stats", fields: StatsFields::of(stats) }
}

/// `{"error":"not_found"}`: SPEC section 5's refusal of a job that does not exist.
#[derive(Serialize)]
pub struct NotFound {
    error: &'static str,
}

pub const NOT_FOUND: NotFound = NotFound { error: "not_found" };

/// The fields SPEC section 5's `get` shows of a job, in its order. The job's notes
/// (`last_error`, `last_node`) are not among them: `retryq dead` adds those itself.
#[derive(Serialize)]
pub struct JobFields<'a> {
    id: &'a str,
    status: &'static str,
    attempts: u64,
    max_attempts: u64,
    available_at: Option<u64>,
    deadline: u64,
    dead_reason: Option<&'static str>,
    redrives: u64,
    not_before: u64,
    base_ms: Option<u64>,
    cap_ms: Option<u64>,
    queue: &'a str,
    priority: u8,
    ended_at: Option<u64>,
    cancel_requested: bool,
    /// Shown only when the job has one (contract 1.4): a job without keeps 1.3's answer.
    #[serde(skip_serializing_if = "str::is_empty")]
    kind: &'a str,
}

impl<'a> JobFields<'a> {
    pub fn of(job: &'a Job) -> JobFields<'a> {
        JobFields {
            id: &job.id,
            status: job.status.as_str(),
            attempts: job.attempts,
            max_attempts: job.max_attempts,
            available_at: job.available_at,
            deadline: job.deadline,
            dead_reason: job.dead_reason.map(|r| r.as_str()),
            redrives: job.redrives,
            not_before: job.not_before,
            base_ms: job.base_ms,
            cap_ms: job.cap_ms,
            queue: &job.queue,
            priority: job.priority,
            ended_at: job.ended_at,
            cancel_requested: job.cancel_requested,
            kind: &job.kind,
        }
    }
}

/// `{"ok":"pruned",…}`: SPEC section 5's `get` result for a pruned id.
pub fn tombstone(t: &Tombstone) -> Ok<TombstoneFields<'_>> {
    Ok {
        ok: "pruned",
        fields: TombstoneFields {
            id: &t.id,
            queue: &t.queue,
            status: t.status.as_str(),
            dead_reason: t.dead_reason.map(|r| r.as_str()),
            attempts: t.attempts,
            ended_at: t.ended_at,
        },
    }
}

/// The fields SPEC section 5's `get` shows of a tombstone, in its order.
#[derive(Serialize)]
pub struct TombstoneFields<'a> {
    id: &'a str,
    queue: &'a str,
    status: &'static str,
    dead_reason: Option<&'static str>,
    attempts: u64,
    ended_at: u64,
}

/// The fields SPEC section 5's `stats` shows, in its order.
#[derive(Serialize)]
pub struct StatsFields {
    pending: u64,
    leased: u64,
    done: u64,
    dead: u64,
    dead_exhausted: u64,
    dead_deadline: u64,
    dead_permanent: u64,
    dead_cancelled: u64,
    leased_expired: u64,
    oldest_open_age_ms: Option<u64>,
    pruned_done: u64,
    pruned_dead: u64,
    paused_queues: u64,
}

impl StatsFields {
    fn of(s: &Stats) -> StatsFields {
        StatsFields {
            pending: s.pending,
            leased: s.leased,
            done: s.done,
            dead: s.dead,
            dead_exhausted: s.dead_exhausted,
            dead_deadline: s.dead_deadline,
            dead_permanent: s.dead_permanent,
            dead_cancelled: s.dead_cancelled,
            leased_expired: s.leased_expired,
            oldest_open_age_ms: s.oldest_open_age_ms,
            pruned_done: s.pruned_done,
            pruned_dead: s.pruned_dead,
            paused_queues: s.paused_queues,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use retryq::{DeadReason, Status};

    #[test]
    fn a_job_is_shown_with_the_spec_keys_in_order() {
        let job = Job {
            id: "order-7".into(),
            payload: "{}".into(),
            status: Status::Dead,
            attempts: 4,
            max_attempts: 5,
            available_at: None,
            deadline: 700,
            dead_reason: Some(DeadReason::Deadline),
            redrives: 0,
            enqueued_at: 0,
            owner: None,
            claimed_at: None,
            last_error: Some("exit 3".into()),
            last_node: None,
            not_before: 0,
            base_ms: Some(50),
            cap_ms: None,
            queue: retryq::DEFAULT_QUEUE.into(),
            priority: 0,
            ended_at: Some(1275),
            cancel_requested: false,
            kind: String::new(),
        };
        let line = serde_json::to_string(&super::job(&job)).expect("json");
        assert_eq!(
            line,
            r#"{"ok":"job","id":"order-7","status":"dead","attempts":4,"max_attempts":5,"available_at":null,"deadline":700,"dead_reason":"deadline","redrives":0,"not_before":0,"base_ms":50,"cap_ms":null,"queue":"default","priority":0,"ended_at":1275,"cancel_requested":false}"#
        );
        // A kind comes last, and only when there is one (contract 1.4).
        let kinded = Job { kind: "receipt".into(), ..job };
        let line = serde_json::to_string(&super::job(&kinded)).expect("json");
        assert!(line.ends_with(r#""cancel_requested":false,"kind":"receipt"}"#), "{line}");
    }

    #[test]
    fn times_are_utc_with_milliseconds_up_to_the_year_9999_and_said_past_it() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(stamp(1_796_062_956_712), "1796062956712 (2026-11-30T18:22:36.712Z)");
        assert_eq!(utc(YEAR_10000_MS - 1), "9999-12-31T23:59:59.999Z");
        for far in [YEAR_10000_MS, retryq::MAX_INT, 2 * retryq::MAX_INT, u64::MAX] {
            assert_eq!(utc(far), "after the year 9999", "{far}");
        }
    }

    #[test]
    fn stats_are_shown_with_the_spec_keys_in_order() {
        let line = serde_json::to_string(&stats(&Stats { pending: 2, ..Stats::default() })).expect("json");
        assert_eq!(
            line,
            r#"{"ok":"stats","pending":2,"leased":0,"done":0,"dead":0,"dead_exhausted":0,"dead_deadline":0,"dead_permanent":0,"dead_cancelled":0,"leased_expired":0,"oldest_open_age_ms":null,"pruned_done":0,"pruned_dead":0,"paused_queues":0}"#
        );
        assert_eq!(serde_json::to_string(&NOT_FOUND).expect("json"), r#"{"error":"not_found"}"#);
    }
}
