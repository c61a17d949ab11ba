//! Claim cost against queue size: 1,000, 100,000 and 1,000,000 pending jobs, and 1,000
//! pending among 100,000 done and dead, in memory (where the index walk shows) and on a
//! durable file (where the commit's fsync does).
//!
//! Each timed claim is followed by an untimed put-back (a `retryable` completion with jitter
//! 0, so the job is due again at once, behind the others), which keeps the pending count
//! fixed. Beside the queue, the reference: SQLite's own claim statement — the queue's pick
//! and lease, one `UPDATE … RETURNING` in its own transaction, without the reap, the checks
//! or the Rust around it — on the same rows. Samples of the two alternate, so both see the
//! machine in the same state.

use std::path::Path;
use std::time::{Duration, Instant};

use retryq::{Completion, NewJob, Outcome, Queue};
use retryq_core::{MAX_ATTEMPTS, MAX_INT};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use crate::BenchError;
use crate::throughput::{PAYLOAD, remove_db};

/// The queue's pick and lease as one statement (the text of `retryq`'s own claim).
const BARE_CLAIM: &str = "
    UPDATE jobs SET status = 'leased', attempts = attempts + 1, owner = ?2, claimed_at = ?1,
                    available_at = ?3, updated_at = ?1
    WHERE seq = (SELECT seq FROM jobs
                 WHERE queue = 'default' AND priority = 0 AND status IN ('pending', 'leased')
                   AND available_at <= ?1
                 ORDER BY available_at, seq LIMIT 1)
    RETURNING id";

const BARE_PUT_BACK: &str = "
    UPDATE jobs SET status = 'pending', available_at = ?2, owner = NULL, claimed_at = NULL,
                    updated_at = ?2
    WHERE id = ?1";

/// Jobs 0 … ?1 − 1 named as [`id`] names them; the first ?2 finished, alternately done and
/// dead(permanent) after one attempt, the rest pending since 0.
const BARE_LOAD: &str = "
    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
    INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline,
                      dead_reason, redrives, enqueued_at, updated_at, not_before, ended_at)
    SELECT printf('order-%08d', i), ?3,
           CASE WHEN i >= ?2 THEN 'pending' WHEN i % 2 = 0 THEN 'done' ELSE 'dead' END,
           CASE WHEN i >= ?2 THEN 0 ELSE 1 END, ?4,
           CASE WHEN i >= ?2 THEN 0 END, ?5,
           CASE WHEN i < ?2 AND i % 2 = 1 THEN 'permanent' END, 0, 0, 0, 0,
           CASE WHEN i < ?2 THEN 0 END
    FROM n";

/// One queue size.
#[derive(Clone, Copy, Debug)]
pub struct Size {
    /// Pending jobs, the ones a claim chooses among.
    pub pending: usize,
    /// Done and dead jobs around the pending ones.
    pub finished: usize,
}

/// How many claims to time.
#[derive(Clone, Copy, Debug)]
pub struct Sampling {
    /// Timed samples, of which the median is kept.
    pub samples: usize,
    /// Claims timed in each sample (their mean is the sample).
    pub claims_per_sample: usize,
}

/// Median microseconds per claim, the queue's and the bare statement's.
#[derive(Clone, Copy, Debug)]
pub struct Cost {
    /// The queue's claim.
    pub queue_us: f64,
    /// SQLite's own claim statement on the same rows.
    pub bare_us: f64,
}

fn id(i: usize) -> String {
    format!("order-{i:08}")
}

/// Loads `size` into a queue: every job enqueued at 0, then the first `finished` claimed and
/// finished, alternately done and dead(permanent), a thousand per transaction.
pub fn load_queue(queue: &mut Queue, size: Size) -> Result<(), BenchError> {
    const CHUNK: usize = 50_000;
    let total = size.pending + size.finished;
    let mut start = 0;
    while start < total {
        let ids: Vec<String> = (start..total.min(start + CHUNK)).map(id).collect();
        let jobs: Vec<NewJob<'_>> = ids
            .iter()
            .map(|id| NewJob {
                id,
                payload: PAYLOAD,
                max_attempts: MAX_ATTEMPTS,
                deadline: MAX_INT,
                now: 0,
                ..NewJob::default()
            })
            .collect();
        for result in queue.enqueue_many(&jobs)? {
            result?;
        }
        start += CHUNK;
    }
    let mut finished = 0;
    while finished < size.finished {
        let claimed = queue.claim_batch("loader", 0, (size.finished - finished).min(1000))?;
        let completions: Vec<Completion<'_>> = claimed
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let outcome = if (finished + i) % 2 == 0 { Outcome::Ok } else { Outcome::Permanent };
                Completion::new(&c.lease, outcome, 0, 0.0)
            })
            .collect();
        for result in queue.complete_batch(&completions)? {
            result?;
        }
        finished += claimed.len();
    }
    Ok(())
}

/// The same rows as [`load_queue`], written by one bare `INSERT … SELECT` into a connection
/// that holds the queue's schema (its history trigger included).
fn load_bare(conn: &Connection, size: Size) -> Result<(), BenchError> {
    conn.execute(
        BARE_LOAD,
        params![(size.pending + size.finished) as i64, size.finished as i64, PAYLOAD, MAX_ATTEMPTS, MAX_INT],
    )?;
    Ok(())
}

/// Copies the schema (tables, indexes, triggers) of the retryq database `from` into `to`.
fn copy_schema(from: &Connection, to: &Connection) -> Result<(), BenchError> {
    let mut statement = from.prepare(
        "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'
         ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, rowid",
    )?;
    let ddl: Vec<String> = statement.query_map([], |row| row.get(0))?.collect::<rusqlite::Result<_>>()?;
    for sql in ddl {
        to.execute_batch(&sql)?;
    }
    Ok(())
}

/// Times `sampling.claims_per_sample` claims of the queue, each put back untimed.
fn sample_queue(queue: &mut Queue, now: &mut u64, n: usize) -> Result<f64, BenchError> {
    let mut timed = Duration::ZERO;
    for _ in 0..n {
        *now += 1;
        let start = Instant::now();
        let claimed = queue.claim("bench", *now)?;
        timed += start.elapsed();
        let claimed = claimed.ok_or_else(|| BenchError::Setup("no due job to claim".into()))?;
        queue.complete(&Completion::new(&claimed.lease, Outcome::Retryable, *now, 0.0))?;
    }
    Ok(timed.as_secs_f64() * 1e6 / n as f64)
}

/// Times the bare claim statement the same way.
fn sample_bare(conn: &Connection, now: &mut u64, n: usize) -> Result<f64, BenchError> {
    let mut claim = conn.prepare_cached(BARE_CLAIM)?;
    let mut put_back = conn.prepare_cached(BARE_PUT_BACK)?;
    let mut timed = Duration::ZERO;
    for _ in 0..n {
        *now += 1;
        let start = Instant::now();
        let claimed: Option<String> =
            claim.query_row(params![*now, "bench", *now + 30_000], |row| row.get(0)).optional()?;
        timed += start.elapsed();
        let claimed = claimed.ok_or_else(|| BenchError::Setup("no due row to claim".into()))?;
        put_back.execute(params![claimed, *now])?;
    }
    Ok(timed.as_secs_f64() * 1e6 / n as f64)
}

/// Runs the samplers in turn, `sampling.samples` times each after one untimed warm-up round,
/// and returns each one's median.
fn alternate(
    sampling: Sampling,
    samplers: &mut [&mut dyn FnMut() -> Result<f64, BenchError>],
) -> Result<Vec<f64>, BenchError> {
    for sampler in samplers.iter_mut() {
        sampler()?;
    }
    let mut samples = vec![Vec::with_capacity(sampling.samples); samplers.len()];
    for _ in 0..sampling.samples {
        for (sampler, samples) in samplers.iter_mut().zip(&mut samples) {
            samples.push(sampler()?);
        }
    }
    Ok(samples.iter_mut().map(|s| crate::median(s)).collect())
}

/// A fresh bare database in memory holding `size` under the queue's schema: plain
/// `:memory:`, or a private `memdb` database as the queue's own in-memory mode uses.
fn bare_in_memory(dir: &Path, size: Size, memdb: bool) -> Result<Connection, BenchError> {
    let schema = dir.join("schema.db");
    drop(Queue::open(&schema)?);
    let bare = if memdb {
        let flags =
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_URI;
        // 1,000,000 jobs with their history stay well under memdb's default limit of 1 GiB.
        Connection::open_with_flags("file:bare?vfs=memdb", flags)?
    } else {
        Connection::open_in_memory()?
    };
    copy_schema(&Connection::open(&schema)?, &bare)?;
    remove_db(&schema);
    load_bare(&bare, size)?;
    Ok(bare)
}

/// One size's databases in memory: the queue, and bare copies under `:memory:` and `memdb`.
struct InMemory {
    queue: Queue,
    plain: Connection,
    memdb: Connection,
    now: [u64; 3],
}

/// Claim cost in memory at every size: the queue in memory, and the bare statement on
/// in-memory copies of the same rows, under plain `:memory:` and under `memdb`. Every
/// size's databases are built first and then sampled in turn, so that the sizes are
/// compared over the same stretch of time.
pub fn memory(dir: &Path, sizes: &[Size], sampling: Sampling) -> Result<Vec<MemoryCost>, BenchError> {
    let mut sets = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let mut queue = Queue::open_in_memory()?;
        load_queue(&mut queue, size)?;
        let plain = bare_in_memory(dir, size, false)?;
        let memdb = bare_in_memory(dir, size, true)?;
        sets.push(InMemory { queue, plain, memdb, now: [0; 3] });
    }
    let n = sampling.claims_per_sample;
    let mut samplers: Vec<Box<dyn FnMut() -> Result<f64, BenchError> + '_>> = Vec::new();
    for set in &mut sets {
        let InMemory { queue, plain, memdb, now } = set;
        let [queue_now, plain_now, memdb_now] = now;
        samplers.push(Box::new(move || sample_queue(queue, queue_now, n)));
        samplers.push(Box::new(move || sample_bare(plain, plain_now, n)));
        samplers.push(Box::new(move || sample_bare(memdb, memdb_now, n)));
    }
    let mut refs: Vec<&mut dyn FnMut() -> Result<f64, BenchError>> =
        samplers.iter_mut().map(|s| s.as_mut() as &mut dyn FnMut() -> Result<f64, BenchError>).collect();
    let medians = alternate(sampling, &mut refs)?;
    Ok(medians.chunks(3).map(|m| MemoryCost { queue_us: m[0], bare_us: m[1], bare_memdb_us: m[2] }).collect())
}

/// Median microseconds per claim in memory.
#[derive(Clone, Copy, Debug)]
pub struct MemoryCost {
    /// The queue (its in-memory mode is `memdb`).
    pub queue_us: f64,
    /// The bare statement on plain `:memory:`.
    pub bare_us: f64,
    /// The bare statement on `memdb`.
    pub bare_memdb_us: f64,
}

/// One size's durable file: the queue, and a second, bare connection to the same file.
struct OnFile {
    queue: Queue,
    bare: Connection,
    now: [u64; 2],
}

/// Claim cost on a durable file (WAL, `synchronous = FULL`) at every size: the queue, and
/// the bare statement through a second connection to the very same file. As in memory,
/// every size is loaded first and the sizes are then sampled in turn. After loading, the
/// WAL is checkpointed and truncated so that no size inherits its load's write-back.
pub fn file(dir: &Path, sizes: &[Size], sampling: Sampling) -> Result<Vec<Cost>, BenchError> {
    let dbs: Vec<_> =
        sizes.iter().map(|size| dir.join(format!("scaling-{}-{}.db", size.pending, size.finished))).collect();
    let result = (|| {
        let mut sets = Vec::with_capacity(sizes.len());
        for (&size, db) in sizes.iter().zip(&dbs) {
            let mut queue = Queue::open(db)?;
            load_queue(&mut queue, size)?;
            let bare = Connection::open(db)?;
            bare.pragma_update(None, "synchronous", "FULL")?;
            bare.busy_timeout(Duration::from_secs(10))?;
            bare.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
            // Both sides put their claims back at their own `now`; the bare side's times are
            // after every time the queue side uses, so neither's put-backs jump the other's.
            sets.push(OnFile { queue, bare, now: [0, 1 << 40] });
        }
        let n = sampling.claims_per_sample;
        let mut samplers: Vec<Box<dyn FnMut() -> Result<f64, BenchError> + '_>> = Vec::new();
        for set in &mut sets {
            let OnFile { queue, bare, now } = set;
            let [queue_now, bare_now] = now;
            samplers.push(Box::new(move || sample_queue(queue, queue_now, n)));
            samplers.push(Box::new(move || sample_bare(bare, bare_now, n)));
        }
        let mut refs: Vec<&mut dyn FnMut() -> Result<f64, BenchError>> =
            samplers.iter_mut().map(|s| s.as_mut() as &mut dyn FnMut() -> Result<f64, BenchError>).collect();
        let medians = alternate(sampling, &mut refs)?;
        Ok(medians.chunks(2).map(|m| Cost { queue_us: m[0], bare_us: m[1] }).collect())
    })();
    for db in &dbs {
        remove_db(db);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bare_copy_holds_the_same_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let size = Size { pending: 30, finished: 20 };
        let mut queue = Queue::open_in_memory().expect("queue");
        load_queue(&mut queue, size).expect("load");
        let stats = queue.stats(0).expect("stats");
        assert_eq!((stats.pending, stats.done, stats.dead), (30, 10, 10));
        let schema = dir.path().join("schema.db");
        drop(Queue::open(&schema).expect("schema"));
        let bare = Connection::open_in_memory().expect("bare");
        copy_schema(&Connection::open(&schema).expect("open"), &bare).expect("copy");
        load_bare(&bare, size).expect("load bare");
        let count = |status: &str| -> i64 {
            bare.query_row("SELECT count(*) FROM jobs WHERE status = ?1", [status], |r| r.get(0))
                .expect("count")
        };
        assert_eq!((count("pending"), count("done"), count("dead")), (30, 10, 10));
        // The bare statement picks what the queue's claim picks: the first pending job.
        let mut now = 0;
        sample_bare(&bare, &mut now, 1).expect("bare claim");
        let claimed = queue.claim("bench", 1).expect("claim").expect("due");
        let leased: String = bare
            .query_row("SELECT id FROM jobs WHERE status = 'leased'", [], |r| r.get(0))
            .or_else(|_| bare.query_row("SELECT id FROM jobs WHERE updated_at = 1", [], |r| r.get(0)))
            .expect("bare leased");
        assert_eq!(leased, claimed.id());
    }
}
