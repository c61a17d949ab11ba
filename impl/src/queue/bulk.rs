//! `enqueue_bulk`: a bulk import, in transactions of a few milliseconds each, paced so that
//! the workers on the same file go on between them (`pace.rs`).
//!
//! [`Queue::enqueue_many`] writes its batch in one transaction (SPEC 6.17), and holds SQLite's
//! one write lock for all of it: 300,000 jobs held it some 30 s, and every worker's claim,
//! heartbeat and completion waited that long. An import is many enqueues, not one operation;
//! nothing in the contract asks for them to commit together. So here each transaction writes
//! jobs until it has held the lock for [`Queue::BULK_PIECE`], commits, and sleeps a gap before
//! the next. Each job is written by `enqueue`'s own code, in order, and answered as one
//! `enqueue` would answer it, with the same history, tallies and counts.

use std::time::{Duration, Instant};

use super::enqueue::{Enqueued, NewJob, insert};
use super::store::Queue;
use crate::error::{Error, Result};

/// The reading that changes when another connection has committed to the file.
const DATA_VERSION: &str = "PRAGMA data_version";

impl Queue {
    /// How long one transaction of [`Queue::enqueue_bulk`] writes before it commits: a few
    /// milliseconds of the write lock, and then its commit's fsync.
    pub const BULK_PIECE: Duration = Duration::from_millis(5);

    /// Enqueues `jobs` in their order, each by exactly [`Queue::enqueue`]'s rules, in as many
    /// transactions as it takes for none to hold the write lock much longer than
    /// [`Queue::BULK_PIECE`] — and with a pause after each, so that other connections' claims,
    /// heartbeats and completions go on between them: a bulk import beside running workers.
    /// [`Queue::enqueue_many`] is one transaction, for a batch that must commit whole.
    ///
    /// Each job's answer is pushed onto `answers` once the transaction that wrote it has
    /// committed; a refused job (a conflict, an invalid argument) does not stop the others. On
    /// a storage failure the transaction under way is rolled back and its error returned:
    /// `answers` then holds exactly the jobs that were written — the first ones of `jobs`,
    /// one answer each — and none after them was. Enqueuing the same jobs again is safe:
    /// every one already written answers [`Enqueued::Existing`].
    ///
    /// ```
    /// use retryq::{Enqueued, NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// let ids: Vec<String> = (0..1000).map(|n| format!("import-{n}")).collect();
    /// let jobs: Vec<NewJob> = ids
    ///     .iter()
    ///     .map(|id| NewJob { id, payload: "{}", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() })
    ///     .collect();
    /// let mut answers = Vec::new();
    /// q.enqueue_bulk(&jobs, &mut answers)?;
    /// assert!(answers.iter().all(|a| matches!(a, Ok(Enqueued::New))));
    /// // Run again (after a crash, say), every job written is existing.
    /// answers.clear();
    /// q.enqueue_bulk(&jobs, &mut answers)?;
    /// assert!(answers.iter().all(|a| matches!(a, Ok(Enqueued::Existing))));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn enqueue_bulk(&mut self, jobs: &[NewJob<'_>], answers: &mut Vec<Result<Enqueued>>) -> Result<()> {
        let mut rest = jobs;
        while !rest.is_empty() {
            let version: i64 = self.conn.query_row(DATA_VERSION, [], |row| row.get(0))?;
            self.pace.read(version, Instant::now());
            let mut began = Instant::now();
            let piece = self.write(|tx| {
                // The lock is held from here: BEGIN IMMEDIATE may have waited for it.
                began = Instant::now();
                let mut piece = Vec::new();
                for job in rest {
                    let answer = job.validate().and_then(|()| insert(tx, job));
                    if let Err(Error::Storage(e)) = answer {
                        return Err(Error::Storage(e));
                    }
                    piece.push(answer);
                    if began.elapsed() >= Self::BULK_PIECE {
                        break;
                    }
                }
                Ok(piece)
            })?;
            let held = began.elapsed();
            rest = rest.get(piece.len()..).unwrap_or_default();
            answers.extend(piece);
            std::thread::sleep(self.pace.gap(held, Instant::now(), rand::random()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::store::tests::queue;
    use super::*;
    use crate::ErrorKind;

    fn job<'a>(id: &'a str, payload: &'a str) -> NewJob<'a> {
        NewJob { id, payload, max_attempts: 3, deadline: 1000, now: 0, ..NewJob::default() }
    }

    #[test]
    fn each_job_is_answered_as_enqueue_would_in_order_across_transactions() {
        let mut q = queue();
        q.enqueue(&job("taken", "p")).expect("enqueue");
        let ids: Vec<String> = (0..3000).map(|n| format!("j{n}")).collect();
        let mut jobs: Vec<NewJob<'_>> = ids.iter().map(|id| job(id, "p")).collect();
        jobs[10] = job("taken", "p");
        jobs[11] = job("taken", "q");
        jobs[2500] = NewJob { max_attempts: 0, ..job("bad", "p") };
        jobs[2999] = job("j0", "p");
        let mut answers = Vec::new();
        q.enqueue_bulk(&jobs, &mut answers).expect("bulk");
        let kinds: Vec<Result<Enqueued, ErrorKind>> =
            answers.iter().map(|a| a.as_ref().copied().map_err(|e| e.kind())).collect();
        assert_eq!(kinds.len(), 3000);
        assert_eq!(kinds[10], Ok(Enqueued::Existing));
        assert_eq!(kinds[11], Err(ErrorKind::Conflict));
        assert_eq!(kinds[2500], Err(ErrorKind::InvalidInput));
        assert_eq!(kinds[2999], Ok(Enqueued::Existing));
        let new = kinds.iter().filter(|k| **k == Ok(Enqueued::New)).count();
        assert_eq!(new, 2996);
        assert_eq!(q.stats(0).expect("stats").pending, 2997);
        // In the order of `jobs`: claims take them first enqueued first.
        let first = q.claim_batch("w", 1, 3).expect("claim");
        assert_eq!(first.iter().map(|c| c.id()).collect::<Vec<_>>(), ["taken", "j0", "j1"]);
        assert!(q.audit().expect("audit").is_clean());
    }
}
