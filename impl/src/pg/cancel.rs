//! `cancel`: an operator takes a pending job off the queue, or asks the attempt in flight to
//! stop (SPEC 3.13).
//!
//! A leased job, its lease live or expired, is not ended by the cancel: it gets a request,
//! which its holder's next heartbeat is refused with; the attempt's report or the next reap
//! ends it (SPEC 6.25). The request turns an expired lease from claimable into reaped, so a
//! cancel takes the turn shared, as the writes that can make a job due do (SPEC 6.26,
//! `turn.rs`): it never commits while a claim or a reap decides.

use super::store::{PgQueue, Turn, Tx};
use super::value::{big, word};
use crate::error::{Error, Result};
use crate::input;
use crate::job::Status;
use crate::queue::cancel::Cancelled;

/// How many times a cancel starts over when the row changed between its two reads (see
/// `complete.rs`).
const STARTS: usize = 4;

/// A pending job becomes dead(cancelled), whatever its deadline and its schedule, ending at
/// `now`. Only a pending row is locked: a refused cancel locks nothing. Pending is said
/// without naming the status — open (`available_at` set) and not leased (no owner or no claim
/// time), exactly pending by the table's checks — so that the row is reached by its id: with
/// `status = 'pending'` the planner walked every open job in `jobs_open_deadline` where its
/// statistics saw none (`every_write_reaches_its_rows_by_key_on_any_plan`).
pub(super) const CANCEL: &str = "
    UPDATE jobs SET status = 'dead', dead_reason = 'cancelled', available_at = NULL,
                    updated_at = $2, ended_at = $2
    WHERE id = $1 AND available_at IS NOT NULL AND (owner IS NULL OR claimed_at IS NULL)";

/// A leased job gets the request, once: a second cancel changes nothing (no history entry).
/// The history records it as a `leased → leased` entry with `cancel_requested` set, dated
/// `now` (`updated_at`); status, attempts, lease and deadline stay as they are. The row is
/// reached by its id: a job is leased exactly when it has an owner and a claim time (the
/// table's check), and naming `status = 'leased'` instead let the planner walk every lease in
/// `jobs_leases` where its statistics saw few (`every_write_reaches_its_rows_by_key_on_any_plan`).
pub(super) const REQUEST: &str = "
    UPDATE jobs SET cancel_requested = true, updated_at = $2
    WHERE id = $1 AND owner IS NOT NULL AND claimed_at IS NOT NULL AND NOT cancel_requested";

/// Why neither applied: the job's status and request, or whether the id is a pruned one's.
const STATUS: &str = "
    SELECT j.status, j.cancel_requested, EXISTS (SELECT 1 FROM tombstones WHERE id = $1)
    FROM (SELECT 1) AS one LEFT JOIN jobs j ON j.id = $1";

impl PgQueue {
    /// [`Queue::cancel`](crate::Queue::cancel) on PostgreSQL: the pending job `id` becomes
    /// dead(cancelled) ([`Cancelled::Ended`]); a leased one gets a cancel request
    /// ([`Cancelled::Requested`], also when it had one); the same refusals in the same order:
    /// not found, pruned, not cancellable.
    pub fn cancel(&mut self, id: &str, now: u64) -> Result<Cancelled> {
        input::name("id", id)?;
        input::int("now", now)?;
        let at = big("now", now)?;
        self.write(Turn::Shared, |tx| cancel(tx, id, at))
    }
}

/// The cancel inside the caller's transaction, once validated. A refusal writes nothing.
fn cancel(tx: &mut Tx<'_>, id: &str, at: i64) -> Result<Cancelled> {
    for _ in 0..STARTS {
        if tx.execute(CANCEL, &[&id, &at])? == 1 {
            return Ok(Cancelled::Ended);
        }
        if tx.execute(REQUEST, &[&id, &at])? == 1 {
            return Ok(Cancelled::Requested);
        }
        let row = tx.query_one(STATUS, &[&id])?;
        let status: Option<String> = row.try_get(0)?;
        if status.is_none() {
            let pruned: bool = row.try_get(2)?;
            return Err(match pruned {
                true => Error::Pruned { id: id.to_owned() },
                false => Error::NotFound { id: id.to_owned() },
            });
        }
        match word(&row, 0)? {
            // A request stands already: the same answer, nothing more changes.
            Status::Leased if row.try_get::<_, bool>(1)? => return Ok(Cancelled::Requested),
            status @ (Status::Done | Status::Dead) => {
                return Err(Error::NotCancellable { id: id.to_owned(), status });
            }
            // Pending, or leased without a request, now, though not when the cancel's
            // statements began: start over.
            _ => {}
        }
    }
    Err(Error::Corrupt(format!("job {id:?} changed under a cancel {STARTS} times")))
}
