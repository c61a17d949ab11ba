//! `enqueue_bulk` on PostgreSQL: a bulk import, each transaction one multi-row insert of a
//! few milliseconds.
//!
//! One `enqueue` is a statement, a round trip and the statement-level triggers that keep the
//! counts and tallies (`ddl.rs`): some 2 ms a job, so an import of 100,000 lines took minutes,
//! and in one transaction (`enqueue_many`) it held the claims' turn shared all that time, so
//! that no claim could take it (`turn.rs`). Here a transaction takes the turn shared, as every
//! enqueue does (SPEC 6.26), writes a piece of the jobs with one statement — their columns
//! sent as arrays and `unnest`ed, inserted in the order given — and commits. The piece grows
//! or shrinks so that its writes take about [`PgQueue::BULK_PIECE`]; the commit's fsync comes
//! on top, and no piece size shortens it (sized to the whole transaction, pieces shrank to one
//! job on a disk whose commit alone took that long). A claim that asks for the turn meanwhile
//! waits for one piece at most, and the pieces after wait for it (PostgreSQL queues a lock
//! request behind a conflicting waiter): no gap is needed between them, as SQLite's busy
//! handler needs one (`queue/pace.rs`).
//!
//! Every job is answered as its own `enqueue` would answer it: the insert skips an id that is a
//! job's already (`ON CONFLICT DO NOTHING`, which also keeps the first of an id given twice in
//! the piece) or a tombstone's, and returns the ids it wrote; each job not written is then
//! read against what holds its id — a job (the same payload: `existing`, else `conflict`) or a
//! tombstone (its digest) — and a job whose id neither holds any longer (pruned and forgotten
//! in between) is enqueued again by `enqueue`'s own code. The triggers write each new job's
//! history row by row and add the piece's counts and tallies in one statement, the sums that
//! single enqueues would add.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::enqueue::{insert, place, validate};
use super::store::{PgQueue, Turn, Tx};
use super::value::{big, opt_big};
use crate::error::{Error, Result};
use crate::job::job_digest;
use crate::queue::enqueue::{Enqueued, NewJob};

/// The jobs of a piece, as arrays: each new one is stored `pending` from its `not_before`
/// (already `now` when none was given), in the order given (`ord`), so that the order of first
/// enqueues is the order of the piece (SPEC 6.1). An id that is a job's or a tombstone's is not
/// written: the ids written are returned. The transaction holds the turn already.
const INSERT_PIECE: &str = "
    INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline,
                      redrives, enqueued_at, updated_at, not_before, base_ms, cap_ms, queue,
                      priority, cancel_requested, kind)
    SELECT t.id, t.payload, 'pending', 0, t.max_attempts, t.not_before, t.deadline, 0, t.now,
           t.now, t.not_before, t.base_ms, t.cap_ms, t.queue, t.priority, false, t.kind
    FROM unnest($1::text[], $2::bytea[], $3::int8[], $4::int8[], $5::int8[], $6::int8[],
                $7::int8[], $8::int8[], $9::text[], $10::int2[], $11::text[])
         WITH ORDINALITY AS t (id, payload, max_attempts, deadline, now, not_before, base_ms,
                               cap_ms, queue, priority, kind, ord)
    WHERE NOT EXISTS (SELECT 1 FROM tombstones s WHERE s.id = t.id)
    ORDER BY t.ord
    ON CONFLICT (id) DO NOTHING
    RETURNING id";

/// What holds the id of each job the insert did not write, in the order given: whether a
/// job's payload and kind are the same (byte for byte), and a tombstone's digest.
const HOLDERS: &str = "
    SELECT j.payload = t.payload AND j.kind = t.kind, s.digest
    FROM unnest($1::text[], $2::bytea[], $3::text[]) WITH ORDINALITY AS t (id, payload, kind, ord)
    LEFT JOIN jobs j ON j.id = t.id
    LEFT JOIN tombstones s ON s.id = t.id
    ORDER BY t.ord";

/// The jobs of the first piece, before any has been timed.
const FIRST_PIECE: usize = 64;
/// The most jobs in one piece.
pub(super) const MAX_PIECE: usize = 2_000;
/// The most payload bytes in one piece (beyond its first job): the arrays are one message.
const MAX_PIECE_BYTES: usize = 4 << 20;

impl PgQueue {
    /// About how long the writes of one transaction of [`PgQueue::enqueue_bulk`] take, its
    /// piece's insert sized to it; then it commits.
    pub const BULK_PIECE: Duration = Duration::from_millis(5);

    /// [`Queue::enqueue_bulk`](crate::Queue::enqueue_bulk) on PostgreSQL: `jobs` in their
    /// order, each answered as [`PgQueue::enqueue`] would answer it, in transactions of about
    /// [`PgQueue::BULK_PIECE`] each, every one of them a single insert of many rows in the
    /// claims' turn, shared (SPEC 6.26). Each answer is pushed onto `answers` once its
    /// transaction has committed; after a storage failure `answers` holds exactly the jobs
    /// written, the first of `jobs`, and running the same jobs again is safe.
    pub fn enqueue_bulk(&mut self, jobs: &[NewJob<'_>], answers: &mut Vec<Result<Enqueued>>) -> Result<()> {
        let mut rest = jobs;
        let mut size = FIRST_PIECE;
        while !rest.is_empty() {
            let piece = rest.get(..fits(rest, size)).unwrap_or(rest);
            let (answered, took) = self.write(Turn::Shared, |tx| {
                // Timed once the turn is held, and up to the commit.
                let began = Instant::now();
                write_piece(tx, piece).map(|answered| (answered, began.elapsed()))
            })?;
            size = next_size(piece.len(), took);
            rest = rest.get(piece.len()..).unwrap_or_default();
            answers.extend(answered);
        }
        Ok(())
    }
}

/// How many of the first `size` jobs of `jobs` one piece takes: at least one, and no more
/// than [`MAX_PIECE_BYTES`] of payload after the first.
fn fits(jobs: &[NewJob<'_>], size: usize) -> usize {
    let mut bytes = 0;
    let mut n = 0;
    for job in jobs.iter().take(size.max(1)) {
        bytes += job.payload.len();
        if n > 0 && bytes > MAX_PIECE_BYTES {
            break;
        }
        n += 1;
    }
    n
}

/// The size of the next piece after one of `size` jobs took `took`: scaled towards
/// [`PgQueue::BULK_PIECE`], by at most half or double at a time, within 1 … [`MAX_PIECE`].
fn next_size(size: usize, took: Duration) -> usize {
    let target = PgQueue::BULK_PIECE.as_secs_f64();
    let ratio = (target / took.as_secs_f64().max(1e-6)).clamp(0.5, 2.0);
    ((size as f64 * ratio) as usize).clamp(1, MAX_PIECE)
}

/// One piece, in the transaction `tx` (which holds the turn): every job checked, the valid
/// ones inserted in one statement, each one not inserted answered by what holds its id.
fn write_piece(tx: &mut Tx<'_>, piece: &[NewJob<'_>]) -> Result<Vec<Result<Enqueued>>> {
    let mut answers: Vec<Option<Result<Enqueued>>> = Vec::with_capacity(piece.len());
    let mut columns = Columns::default();
    let mut sent = Vec::new();
    for (i, job) in piece.iter().enumerate() {
        match validate(job).and_then(|()| columns.push(job)) {
            Ok(()) => {
                sent.push(i);
                answers.push(None);
            }
            Err(e) => answers.push(Some(Err(e))),
        }
    }
    if sent.is_empty() {
        return Ok(answers.into_iter().flatten().collect());
    }
    let rows = tx.query(
        INSERT_PIECE,
        &[
            &columns.ids,
            &columns.payloads,
            &columns.max_attempts,
            &columns.deadlines,
            &columns.nows,
            &columns.not_befores,
            &columns.base_ms,
            &columns.cap_ms,
            &columns.queues,
            &columns.priorities,
            &columns.kinds,
        ],
    )?;
    let mut written: HashSet<String> = rows.iter().map(|row| row.try_get(0)).collect::<Result<_, _>>()?;
    // The first of an id given twice is the one written; a later one is answered below.
    let mut unwritten = Vec::new();
    for &i in &sent {
        if written.remove(piece[i].id) {
            answers[i] = Some(Ok(Enqueued::New));
        } else {
            unwritten.push(i);
        }
    }
    if !unwritten.is_empty() {
        let ids: Vec<&str> = unwritten.iter().map(|&i| piece[i].id).collect();
        let payloads: Vec<&[u8]> = unwritten.iter().map(|&i| piece[i].payload.as_bytes()).collect();
        let kinds: Vec<&str> = unwritten.iter().map(|&i| piece[i].kind).collect();
        let holders = tx.query(HOLDERS, &[&ids, &payloads, &kinds])?;
        if holders.len() != unwritten.len() {
            return Err(Error::Corrupt(format!(
                "{} jobs not inserted, {} looked up",
                unwritten.len(),
                holders.len()
            )));
        }
        for (&i, row) in unwritten.iter().zip(&holders) {
            let job = &piece[i];
            let same: Option<bool> = row.try_get(0)?;
            let digest: Option<String> = row.try_get(1)?;
            answers[i] = Some(match (same, digest) {
                (Some(true), _) => Ok(Enqueued::Existing),
                (Some(false), _) => Err(Error::Conflict { id: job.id.to_owned() }),
                (None, Some(digest)) if digest == job_digest(job.kind, job.payload) => Ok(Enqueued::Existing),
                (None, Some(_)) => Err(Error::Conflict { id: job.id.to_owned() }),
                // Neither a job nor a tombstone holds it now: enqueue it as `enqueue` does.
                (None, None) => match insert(tx, job) {
                    // The transaction is lost with the statement: nothing of the piece commits.
                    Err(Error::Postgres(e)) => return Err(Error::Postgres(e)),
                    answer => answer,
                },
            });
        }
    }
    answers
        .into_iter()
        .map(|answer| answer.ok_or_else(|| Error::Corrupt("a job of a piece was not answered".into())))
        .collect()
}

/// The valid jobs of a piece, column by column, as the insert's arrays.
#[derive(Default)]
struct Columns<'a> {
    ids: Vec<&'a str>,
    payloads: Vec<&'a [u8]>,
    max_attempts: Vec<i64>,
    deadlines: Vec<i64>,
    nows: Vec<i64>,
    not_befores: Vec<i64>,
    base_ms: Vec<Option<i64>>,
    cap_ms: Vec<Option<i64>>,
    queues: Vec<&'a str>,
    priorities: Vec<i16>,
    kinds: Vec<&'a str>,
}

impl<'a> Columns<'a> {
    /// Adds `job`, checked already; nothing (an error) when a value does not fit its column.
    fn push(&mut self, job: &NewJob<'a>) -> Result<()> {
        let (queue, priority) = place(job)?;
        let row = (
            big("max_attempts", job.max_attempts)?,
            big("deadline", job.deadline)?,
            big("now", job.now)?,
            big("not_before", job.not_before.unwrap_or(job.now))?,
            opt_big("base_ms", job.base_ms)?,
            opt_big("cap_ms", job.cap_ms)?,
        );
        self.ids.push(job.id);
        self.payloads.push(job.payload.as_bytes());
        self.max_attempts.push(row.0);
        self.deadlines.push(row.1);
        self.nows.push(row.2);
        self.not_befores.push(row.3);
        self.base_ms.push(row.4);
        self.cap_ms.push(row.5);
        self.queues.push(queue);
        self.priorities.push(priority);
        self.kinds.push(job.kind);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(payload: &str) -> NewJob<'_> {
        NewJob { id: "a", payload, max_attempts: 1, deadline: 10, now: 0, ..NewJob::default() }
    }

    #[test]
    fn a_piece_holds_at_least_one_job_and_at_most_its_bytes() {
        let big = "x".repeat(crate::MAX_PAYLOAD_BYTES);
        let jobs = vec![job(&big); 10];
        assert_eq!(fits(&jobs, 10), 4, "4 MiB after the first");
        assert_eq!(fits(&jobs, 2), 2);
        assert_eq!(fits(&jobs, 0), 1);
        assert_eq!(fits(&[], 5), 0);
        let small = vec![job("p"); 10];
        assert_eq!(fits(&small, 7), 7);
    }

    #[test]
    fn the_piece_grows_or_shrinks_towards_its_time_by_at_most_double_or_half() {
        let target = PgQueue::BULK_PIECE;
        assert_eq!(next_size(100, target), 100);
        assert_eq!(next_size(100, target / 2), 200);
        assert_eq!(next_size(100, target / 100), 200, "at most double");
        assert_eq!(next_size(100, target * 100), 50, "at most half");
        assert_eq!(next_size(1, target * 100), 1);
        assert_eq!(next_size(MAX_PIECE, Duration::ZERO), MAX_PIECE);
    }
}
