//! `cancel`: an operator takes a pending job off the queue (SPEC 3.13).
//!
//! Only what no worker holds: a leased job, its lease live or expired, is refused, so a
//! cancelled job never had an attempt cut short by the queue (SPEC 6.25).

use rusqlite::{OptionalExtension, Transaction, params};

use super::store::Queue;
use crate::error::{Error, Result};
use crate::input;
use crate::job::Status;

/// A pending job becomes dead(cancelled), whatever its deadline and its schedule: time moves
/// jobs to dead only in a claim or a reap (SPEC 3.1), so a pending job past its deadline is
/// still pending, and cancellable.
const CANCEL: &str = "
    UPDATE jobs SET status = 'dead', dead_reason = 'cancelled', available_at = NULL,
                    updated_at = ?2
    WHERE id = ?1 AND status = 'pending'";

/// Why a cancel did not apply.
const STATUS: &str = "SELECT status FROM jobs WHERE id = ?1";

impl Queue {
    /// Cancels the pending job `id`: it becomes dead with reason
    /// [`DeadReason::Cancelled`](crate::DeadReason::Cancelled), and a redrive can bring it
    /// back like any dead job.
    ///
    /// Refused with nothing changed: [`Error::InvalidInput`]; [`Error::NotFound`];
    /// [`Error::Leased`] for a leased job, its lease live or expired (the attempt in flight
    /// decides; cancel after it); [`Error::NotCancellable`] for a done or dead job.
    ///
    /// ```
    /// use retryq::{DeadReason, ErrorKind, NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// let job = NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() };
    /// q.enqueue(&job)?;
    /// q.enqueue(&NewJob { id: "b", ..job })?;
    /// q.claim("w1", 10)?;
    /// // `a` is leased: its attempt decides. `b` is pending: it is taken off the queue.
    /// assert_eq!(q.cancel("a", 20).map_err(|e| e.kind()), Err(ErrorKind::Leased));
    /// q.cancel("b", 20)?;
    /// assert_eq!(q.get("b")?.and_then(|job| job.dead_reason), Some(DeadReason::Cancelled));
    /// assert_eq!(q.cancel("b", 30).map_err(|e| e.kind()), Err(ErrorKind::NotCancellable));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn cancel(&mut self, id: &str, now: u64) -> Result<()> {
        input::name("id", id)?;
        input::int("now", now)?;
        self.write(|tx| cancel(tx, id, now))
    }
}

/// The cancel inside the caller's transaction, once validated. A refusal writes nothing.
pub(super) fn cancel(tx: &Transaction<'_>, id: &str, now: u64) -> Result<()> {
    if tx.prepare_cached(CANCEL)?.execute(params![id, now])? == 1 {
        return Ok(());
    }
    let status: Option<Status> = tx.prepare_cached(STATUS)?.query_row([id], |row| row.get(0)).optional()?;
    match status {
        None => Err(Error::NotFound { id: id.to_owned() }),
        Some(Status::Leased) => Err(Error::Leased { id: id.to_owned() }),
        Some(status @ (Status::Done | Status::Dead)) => {
            Err(Error::NotCancellable { id: id.to_owned(), status })
        }
        Some(status) => Err(Error::Corrupt(format!("job {id:?} is {status} and a cancel did not apply"))),
    }
}
