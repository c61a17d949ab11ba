//! `cancel`: an operator takes a pending job off the queue (SPEC 3.13).

use super::store::{PgQueue, Turn, Tx};
use super::value::{big, word};
use crate::error::{Error, Result};
use crate::input;
use crate::job::Status;

/// How many times a cancel starts over when the row changed between its two reads (see
/// `complete.rs`).
const STARTS: usize = 4;

/// A pending job becomes dead(cancelled), whatever its deadline and its schedule. Only a
/// pending row is locked: a refused cancel locks nothing.
const CANCEL: &str = "
    UPDATE jobs SET status = 'dead', dead_reason = 'cancelled', available_at = NULL,
                    updated_at = $2
    WHERE id = $1 AND status = 'pending'";

/// Why a cancel did not apply.
const STATUS: &str = "SELECT status FROM jobs WHERE id = $1";

impl PgQueue {
    /// [`Queue::cancel`](crate::Queue::cancel) on PostgreSQL: the pending job `id` becomes
    /// dead(cancelled); the same refusals.
    pub fn cancel(&mut self, id: &str, now: u64) -> Result<crate::Cancelled> {
        input::name("id", id)?;
        input::int("now", now)?;
        let at = big("now", now)?;
        self.write(Turn::Beside, |tx| cancel(tx, id, at))
    }
}

/// The cancel inside the caller's transaction, once validated. A refusal writes nothing.
fn cancel(tx: &mut Tx<'_>, id: &str, at: i64) -> Result<crate::Cancelled> {
    for _ in 0..STARTS {
        if tx.execute(CANCEL, &[&id, &at])? == 1 {
            return Ok(crate::Cancelled::Ended);
        }
        let Some(row) = tx.query_opt(STATUS, &[&id])? else {
            return Err(Error::NotFound { id: id.to_owned() });
        };
        match word(&row, 0)? {
            Status::Leased => todo!("WIP: the store's 1.2"),
            status @ (Status::Done | Status::Dead) => {
                return Err(Error::NotCancellable { id: id.to_owned(), status });
            }
            // Pending now, though not when the cancel's statement began: start over.
            _ => {}
        }
    }
    Err(Error::Corrupt(format!("job {id:?} changed under a cancel {STARTS} times")))
}
