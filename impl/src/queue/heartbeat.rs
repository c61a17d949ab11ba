//! `heartbeat`: the holder of a running attempt keeps its lease (SPEC 3.12).
//!
//! A lease then need not outlast the slowest attempt: a crash is recovered one lease after the
//! last heartbeat, not one attempt-length after the claim. The fence is `complete`'s, so a
//! stale or foreign holder can never keep a job it lost.

use rusqlite::{OptionalExtension, Transaction, params};

use super::complete::{lease_lost, not_held, validate_lease};
use super::lease::Lease;
use super::store::Queue;
use crate::error::{Error, Result};
use crate::input;
use crate::job::Status;

/// The whole heartbeat in one statement when it is accepted: the lease is held as named, the
/// clock is not before the claim, the deadline has not come. The expiry only grows
/// (`max`), so a shorter `lease_ms` than the claim's never shortens it (SPEC 6.24); setting
/// `available_at` (and `updated_at`) records the extension in the history as a
/// `leased → leased` entry with the attempt unchanged.
const EXTEND: &str = "
    UPDATE jobs SET available_at = max(available_at, ?5), updated_at = ?4
    WHERE id = ?1 AND status = 'leased' AND owner = ?2 AND attempts = ?3
      AND claimed_at <= ?4 AND cancel_requested = 0 AND deadline > ?4
    RETURNING available_at";

/// What a refused heartbeat needs to say why, in SPEC 3.12's order.
const HELD: &str =
    "SELECT status, owner, attempts, claimed_at, deadline, cancel_requested FROM jobs WHERE id = ?1";

/// A row of [`HELD`].
struct Held {
    status: Status,
    owner: Option<String>,
    attempts: u64,
    claimed_at: Option<u64>,
    deadline: u64,
    cancel_requested: bool,
}

impl Queue {
    /// Keeps the lease `lease` names: its expiry becomes `max(current expiry, now +
    /// lease_ms)`, with the `lease_ms` in effect now, and the new expiry is returned. A lease
    /// never shrinks; nothing else changes (not the attempt, the owner, nor `claimed_at`).
    /// The expiry is an exact 64-bit sum and may pass 2^53 − 1, as a claim's may.
    ///
    /// Refused with nothing changed, in this order: [`Error::InvalidInput`];
    /// [`Error::NotFound`]; [`Error::LeaseLost`] unless the job is leased to the lease's
    /// worker on this very attempt (an expired lease nobody took since still counts, and is
    /// renewed from `now`); [`Error::ClockWentBackwards`] if `now` is before the claim;
    /// [`Error::DeadlinePassed`] at or after the deadline, so that a lease ends by
    /// `deadline − 1 + lease_ms` however long its holder heartbeats.
    ///
    /// ```
    /// use retryq::{ErrorKind, NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() })?;
    /// let claimed = q.claim("w1", 10)?.expect("due");
    /// assert_eq!(claimed.lease_until, 30_010);
    /// // Still working at 20 s: the lease now runs 30 s from here.
    /// assert_eq!(q.heartbeat(&claimed.lease, 20_000)?, 50_000);
    /// // At the deadline no attempt may start, and none is kept alive either.
    /// let late = q.heartbeat(&claimed.lease, 60_000);
    /// assert_eq!(late.map_err(|e| e.kind()), Err(ErrorKind::DeadlinePassed));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn heartbeat(&mut self, lease: &Lease, now: u64) -> Result<u64> {
        validate_lease(lease)?;
        input::int("now", now)?;
        let lease_ms = self.settings.lease_ms;
        self.write(|tx| extend(tx, lease, now, lease_ms))
    }
}

/// The heartbeat inside the caller's transaction, once validated. A refusal writes nothing.
pub(super) fn extend(tx: &Transaction<'_>, lease: &Lease, now: u64, lease_ms: u64) -> Result<u64> {
    let Lease { worker, id, attempt } = lease;
    // Both terms are below 2^53, so the sum fits in 64 bits (it may pass 2^53 − 1).
    let renewed = now + lease_ms;
    let extended: Option<u64> = tx
        .prepare_cached(EXTEND)?
        .query_row(params![id, worker, attempt, now, renewed], |row| row.get(0))
        .optional()?;
    if let Some(until) = extended {
        return Ok(until);
    }
    let held = tx
        .prepare_cached(HELD)?
        .query_row([id], |row| {
            Ok(Held {
                status: row.get(0)?,
                owner: row.get(1)?,
                attempts: row.get(2)?,
                claimed_at: row.get(3)?,
                deadline: row.get(4)?,
                cancel_requested: row.get(5)?,
            })
        })
        .optional()?;
    let Some(Held { status, owner, attempts, claimed_at, deadline, cancel_requested }) = held else {
        return Err(not_held(tx, lease)?);
    };
    if status != Status::Leased || owner.as_deref() != Some(worker.as_str()) || attempts != *attempt {
        return Err(lease_lost(lease));
    }
    let claimed_at =
        claimed_at.ok_or_else(|| Error::Corrupt(format!("job {id:?} is leased without a claim time")))?;
    if now < claimed_at {
        return Err(Error::ClockWentBackwards { now, claimed_at });
    }
    if cancel_requested {
        return Err(Error::Cancelled { id: id.clone() });
    }
    if now >= deadline {
        return Err(Error::DeadlinePassed { id: id.clone() });
    }
    Err(Error::Corrupt(format!("job {id:?}: a heartbeat every check accepts was not applied")))
}

#[cfg(test)]
mod tests {
    use super::super::store::tests::queue;
    use crate::{Error, ErrorKind, Lease, NewJob, Settings, Status};

    /// `a` enqueued at 0 with deadline 5000, claimed by `w1` at 100 (lease 1000): until 1100.
    fn held(q: &mut crate::Queue) -> Lease {
        let job =
            NewJob { id: "a", payload: "", max_attempts: 3, deadline: 5000, now: 0, ..NewJob::default() };
        q.enqueue(&job).expect("enqueue");
        q.claim("w1", 100).expect("claim").expect("claimed").lease
    }

    #[test]
    fn a_heartbeat_extends_from_now_and_never_shrinks() {
        let mut q = queue();
        let lease = held(&mut q);
        assert_eq!(q.heartbeat(&lease, 600).expect("heartbeat"), 1600);
        // A shorter lease_ms now never shortens what was granted.
        q.set_settings(Settings { lease_ms: 10, ..q.settings() }).expect("settings");
        assert_eq!(q.heartbeat(&lease, 700).expect("heartbeat"), 1600);
        // Nothing else changes: still leased to w1 on attempt 1, claimed at 100.
        let job = q.get("a").expect("get").expect("job");
        assert_eq!(
            (job.status, job.attempts, job.owner.as_deref(), job.claimed_at, job.available_at),
            (Status::Leased, 1, Some("w1"), Some(100), Some(1600))
        );
    }

    #[test]
    fn an_expired_lease_nobody_took_is_renewed_from_now() {
        let mut q = queue();
        let lease = held(&mut q);
        assert_eq!(q.heartbeat(&lease, 3000).expect("heartbeat"), 4000);
    }

    #[test]
    fn the_last_instant_is_deadline_minus_one() {
        let mut q = queue();
        let lease = held(&mut q);
        assert_eq!(q.heartbeat(&lease, 4999).expect("heartbeat"), 5999);
        let err = q.heartbeat(&lease, 5000).unwrap_err();
        assert!(matches!(&err, Error::DeadlinePassed { id } if id == "a"), "{err}");
        assert_eq!(q.get("a").expect("get").expect("job").available_at, Some(5999));
    }

    #[test]
    fn refusals_come_in_the_spec_order_and_change_nothing() {
        let mut q = queue();
        let lease = held(&mut q);
        let kind =
            |q: &mut crate::Queue, lease: &Lease, now: u64| q.heartbeat(lease, now).map_err(|e| e.kind());
        assert_eq!(kind(&mut q, &Lease::new("w1", "nope", 0), 200), Err(ErrorKind::InvalidInput));
        assert_eq!(kind(&mut q, &Lease::new("w1", "nope", 1), 200), Err(ErrorKind::NotFound));
        assert_eq!(kind(&mut q, &Lease::new("w2", "a", 1), 200), Err(ErrorKind::LeaseLost));
        assert_eq!(kind(&mut q, &Lease::new("w1", "a", 2), 200), Err(ErrorKind::LeaseLost));
        // The fence before the clock, the clock before the deadline.
        assert_eq!(kind(&mut q, &Lease::new("w2", "a", 1), 99), Err(ErrorKind::LeaseLost));
        assert_eq!(kind(&mut q, &lease, 99), Err(ErrorKind::ClockWentBackwards));
        assert_eq!(kind(&mut q, &lease, crate::MAX_INT + 1), Err(ErrorKind::InvalidInput));
        assert_eq!(q.get("a").expect("get").expect("job").available_at, Some(1100));
        assert_eq!(q.history("a").expect("history").len(), 2, "no refusal is recorded");
    }

    #[test]
    fn the_expiry_may_pass_2_pow_53() {
        let mut q = queue();
        let lease = held(&mut q);
        q.set_settings(Settings { lease_ms: crate::MAX_INT, ..q.settings() }).expect("settings");
        assert_eq!(q.heartbeat(&lease, 4999).expect("heartbeat"), 4999 + crate::MAX_INT);
    }

    #[test]
    fn a_heartbeat_is_recorded_as_an_extension() {
        let mut q = queue();
        let lease = held(&mut q);
        q.heartbeat(&lease, 600).expect("heartbeat");
        let last = q.history("a").expect("history").pop().expect("entries");
        assert_eq!(
            (last.from, last.to, last.attempt, last.available_at, last.worker.as_deref(), last.at),
            (Some(Status::Leased), Status::Leased, 1, Some(1600), Some("w1"), 600)
        );
    }
}
