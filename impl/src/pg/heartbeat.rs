//! `heartbeat`: the holder of a running attempt keeps its lease, unless an operator asked it
//! to stop (SPEC 3.12, 3.13).

use super::complete::not_held;
use super::store::{PgQueue, Turn, Tx};
use super::value::{big, opt_uint, uint, word};
use crate::error::{Error, Result};
use crate::input;
use crate::job::Status;
use crate::queue::complete::{lease_lost, validate_lease};
use crate::queue::lease::Lease;

/// How many times a heartbeat starts over when the row changed between its two reads (see
/// `complete.rs`).
const STARTS: usize = 4;

/// The whole heartbeat in one statement when it is accepted, as on SQLite: the lease held as
/// named, the clock not before the claim, no cancel request, the deadline not come. The
/// expiry only grows, and a refused heartbeat locks nothing. The fence names no status, as a
/// completion's does not (`complete.rs`): an owner and a claim time say leased.
pub(super) const EXTEND: &str = "
    UPDATE jobs SET available_at = GREATEST(available_at, $5), updated_at = $4
    WHERE id = $1 AND owner = $2 AND attempts = $3
      AND claimed_at <= $4 AND NOT cancel_requested AND deadline > $4
    RETURNING available_at";

/// What a refused heartbeat needs to say why, in SPEC 3.12's order (6.34).
const HELD: &str =
    "SELECT status, owner, attempts, claimed_at, deadline, cancel_requested FROM jobs WHERE id = $1";

impl PgQueue {
    /// [`Queue::heartbeat`](crate::Queue::heartbeat) on PostgreSQL: the lease's expiry
    /// becomes `max(current expiry, now + lease_ms)`, returned; the same refusals in the
    /// same order.
    pub fn heartbeat(&mut self, lease: &Lease, now: u64) -> Result<u64> {
        validate_lease(lease)?;
        input::int("now", now)?;
        let lease_ms = self.settings.lease_ms;
        self.write(Turn::Beside, |tx| extend(tx, lease, now, lease_ms))
    }
}

/// The heartbeat inside the caller's transaction, once validated. A refusal writes nothing.
fn extend(tx: &mut Tx<'_>, lease: &Lease, now: u64, lease_ms: u64) -> Result<u64> {
    let Lease { worker, id, attempt } = lease;
    // Both terms are below 2^53, so the sum fits in 64 bits (it may pass 2^53 − 1).
    let renewed = big("lease_until", now + lease_ms)?;
    let (at, attempt_big) = (big("now", now)?, big("attempt", *attempt)?);
    for _ in 0..STARTS {
        if let Some(row) = tx.query_opt(EXTEND, &[id, worker, &attempt_big, &at, &renewed])? {
            return uint(&row, 0);
        }
        let Some(row) = tx.query_opt(HELD, &[id])? else {
            return Err(not_held(tx, lease)?);
        };
        let status: Status = word(&row, 0)?;
        let owner: Option<String> = row.try_get(1)?;
        if status != Status::Leased || owner.as_deref() != Some(worker.as_str()) || uint(&row, 2)? != *attempt
        {
            return Err(lease_lost(lease));
        }
        let claimed_at = opt_uint(&row, 3)?
            .ok_or_else(|| Error::Corrupt(format!("job {id:?} is leased without a claim time")))?;
        if now < claimed_at {
            return Err(Error::ClockWentBackwards { now, claimed_at });
        }
        if row.try_get::<_, bool>(5)? {
            return Err(Error::Cancelled { id: id.clone() });
        }
        if now >= uint(&row, 4)? {
            return Err(Error::DeadlinePassed { id: id.clone() });
        }
        // Every check passes on the row as it now is: it changed since the write's statement
        // began. Start over.
    }
    Err(Error::Corrupt(format!("job {id:?} changed under a heartbeat {STARTS} times")))
}
