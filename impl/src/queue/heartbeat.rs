//! `heartbeat`: the holder of a running attempt keeps its lease (SPEC 3.12).
//!
//! A lease then need not outlast the slowest attempt: a crash is recovered one lease after the
//! last heartbeat, not one attempt-length after the claim. The fence is `complete`'s, so a
//! stale or foreign holder can never keep a job it lost.

use rusqlite::{OptionalExtension, Transaction, params};

use super::complete::{lease_lost, validate_lease};
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
      AND claimed_at <= ?4 AND deadline > ?4
    RETURNING available_at";

/// What a refused heartbeat needs to say why, in SPEC 3.12's order.
const HELD: &str = "SELECT status, owner, attempts, claimed_at, deadline FROM jobs WHERE id = ?1";

/// A row of [`HELD`].
struct Held {
    status: Status,
    owner: Option<String>,
    attempts: u64,
    claimed_at: Option<u64>,
    deadline: u64,
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
            })
        })
        .optional()?;
    let Some(Held { status, owner, attempts, claimed_at, deadline }) = held else {
        return Err(Error::NotFound { id: id.clone() });
    };
    if status != Status::Leased || owner.as_deref() != Some(worker.as_str()) || attempts != *attempt {
        return Err(lease_lost(lease));
    }
    let claimed_at =
        claimed_at.ok_or_else(|| Error::Corrupt(format!("job {id:?} is leased without a claim time")))?;
    if now < claimed_at {
        return Err(Error::ClockWentBackwards { now, claimed_at });
    }
    if now >= deadline {
        return Err(Error::DeadlinePassed { id: id.clone() });
    }
    Err(Error::Corrupt(format!("job {id:?}: a heartbeat every check accepts was not applied")))
}
