//! `redrive`: the operator's way out of `dead`, with a new budget.

use super::store::{PgQueue, Turn, Tx};
use super::value::{big, uint, word};
use crate::error::{Error, Result};
use crate::input;
use crate::job::{DeadReason, Status};
use crate::queue::redrive::{Budget, Redrive, RedriveDead};

/// How many times a redrive starts over when the row changed between its two reads (see
/// `complete.rs`).
const STARTS: usize = 4;

/// A dead job's spent attempts, locked; nothing for a job that is not dead. A job is dead
/// exactly when it has a reason (the table's check): naming `status = 'dead'` instead let the
/// planner walk every ended job in `jobs_ended` where its statistics saw few
/// (`every_write_reaches_its_rows_by_key_on_any_plan`).
pub(super) const LOOKUP_DEAD: &str =
    "SELECT attempts FROM jobs WHERE id = $1 AND dead_reason IS NOT NULL FOR UPDATE";

/// Why a redrive did not find a dead job.
const LOOKUP: &str = "SELECT status FROM jobs WHERE id = $1";

/// Every dead job (of one reason) in enqueue order, locked, so that each is still dead when
/// its turn comes.
const DEAD: &str = "
    SELECT id FROM jobs WHERE status = 'dead' AND ($1::text IS NULL OR dead_reason = $1)
    ORDER BY seq FOR UPDATE";

/// A dead job has no cancel request to clear (SPEC 6.33); its end is undone.
const REDRIVE: &str = "
    UPDATE jobs SET status = 'pending', available_at = $2, max_attempts = $3, deadline = $4,
                    dead_reason = NULL, redrives = redrives + 1, updated_at = $2, ended_at = NULL
    WHERE id = $1";

impl PgQueue {
    /// [`Queue::redrive`](crate::Queue::redrive) on PostgreSQL: a dead job gets a new budget;
    /// the same refusals in the same order.
    pub fn redrive(&mut self, r: &Redrive<'_>) -> Result<()> {
        input::name("id", r.id)?;
        let budget = Budget::checked(r.add_attempts, r.deadline, r.now)?;
        self.write(Turn::Shared, |tx| redrive(tx, r.id, budget))
    }

    /// [`Queue::redrive_dead`](crate::Queue::redrive_dead) on PostgreSQL: every dead job (of
    /// one reason) redriven in one transaction, each answered on its own, in enqueue order.
    pub fn redrive_dead(&mut self, r: &RedriveDead) -> Result<Vec<(String, Result<()>)>> {
        let budget = Budget::checked(r.add_attempts, r.deadline, r.now)?;
        let reason = r.reason.map(DeadReason::as_str);
        self.write(Turn::Shared, |tx| {
            let ids = tx.query(DEAD, &[&reason])?;
            let mut results = Vec::with_capacity(ids.len());
            for id in ids {
                let id: String = id.try_get(0)?;
                let result = redrive(tx, &id, budget);
                if let Err(Error::Postgres(e)) = result {
                    return Err(Error::Postgres(e));
                }
                results.push((id, result));
            }
            Ok(results)
        })
    }
}

/// One job's redrive inside a write transaction; the arguments are already checked.
fn redrive(tx: &mut Tx<'_>, id: &str, budget: Budget) -> Result<()> {
    for _ in 0..STARTS {
        if let Some(row) = tx.query_opt(LOOKUP_DEAD, &[&id])? {
            let max_attempts = budget.max_attempts(uint(&row, 0)?)?;
            let now = big("now", budget.now)?;
            tx.execute(
                REDRIVE,
                &[&id, &now, &big("max_attempts", max_attempts)?, &big("deadline", budget.deadline)?],
            )?;
            return Ok(());
        }
        let Some(row) = tx.query_opt(LOOKUP, &[&id])? else {
            // SPEC 3.6: `pruned` right after `not_found`.
            let pruned: bool = tx.query_one(super::complete::PRUNED, &[&id])?.try_get(0)?;
            return Err(match pruned {
                true => Error::Pruned { id: id.to_owned() },
                false => Error::NotFound { id: id.to_owned() },
            });
        };
        let status: Status = word(&row, 0)?;
        if status != Status::Dead {
            return Err(Error::NotDead { id: id.to_owned(), status });
        }
        // Dead now, though not when the locking read began: start over.
    }
    Err(Error::Corrupt(format!("job {id:?} changed under a redrive {STARTS} times")))
}
