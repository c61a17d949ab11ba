//! Pickup latency (`retryq bench --latency`): how long a job waits for an idle worker.
//!
//! A library [`Worker`] with its default settings idles on a store; another connection
//! enqueues one job at a time, each after a pause of 5 to 25 ms (so that the worker is
//! asleep again and the enqueues fall at no fixed phase of its schedule), and waits until the
//! handler has started it. Two figures per job:
//!
//! - **due now**: from the enqueue's return (its commit acknowledged) to the handler's start;
//! - **scheduled**: a job enqueued with `not_before` 50 ms ahead, from that instant (the
//!   host's wall clock, which both the store and the handler read) to the handler's start.
//!
//! p50 and p99 of each run, on SQLite (WAL, `synchronous=FULL`) and on PostgreSQL (a
//! throwaway cluster with fsync on, or `--pg-url`); medians over rounds.
//!
//! Beside them, the **floor**: the p50 of one durable commit of a one-row insert on the same
//! store, in the same round. A pickup commits its claim before the handler starts, so no
//! pickup can beat one commit; the gap between the two is what waking and claiming add.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use retryq::{Backend, NewJob, PgQueue, Queue};
use retryq_pgtest::{Cluster, Unavailable};
use retryq_worker::{Attempt, Stop, Worker};
use serde::Serialize;

use crate::server::Server;
use crate::{BenchError, median};

/// How far ahead a scheduled job's `not_before` is set.
pub const SCHEDULED_AHEAD_MS: u64 = 50;

/// Both stores' pickup figures.
#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    /// Jobs per run, of each kind.
    pub jobs: usize,
    /// Rounds each median is over.
    pub rounds: usize,
    /// On SQLite: WAL, `synchronous=FULL`, a file in the benchmark's directory.
    pub sqlite: Pickup,
    /// `None` where PostgreSQL is not installed (then `note` says so).
    pub postgres: Option<Pickup>,
    /// Where the PostgreSQL server came from, or why there was none.
    pub note: String,
}

/// One store's figures, in milliseconds (medians over rounds of each run's percentile).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Pickup {
    /// A job due now: median wait from its enqueue's commit to its handler's start.
    pub now_p50_ms: f64,
    /// The same, 99th percentile.
    pub now_p99_ms: f64,
    /// A scheduled job: median wait from its `not_before` to its handler's start.
    pub scheduled_p50_ms: f64,
    /// The same, 99th percentile.
    pub scheduled_p99_ms: f64,
    /// The largest wait seen in any round, due now and scheduled.
    pub now_max_ms: f64,
    /// The largest wait of a scheduled job in any round.
    pub scheduled_max_ms: f64,
    /// The floor: the median of each round's p50 of one durable commit on the same store.
    pub commit_p50_ms: f64,
}

/// Measures both stores: `jobs` of each kind per round, `rounds` rounds.
pub fn measure(
    dir: &std::path::Path,
    server: &Server,
    jobs: usize,
    rounds: usize,
    progress: &dyn Fn(&str),
) -> Result<Latency, BenchError> {
    let mut sqlite = Vec::new();
    for round in 0..rounds {
        progress(&format!("round {}/{rounds}: pickup latency on SQLite, {jobs} jobs", round + 1));
        let path = dir.join(format!("latency-{round}.db"));
        let mut store = Queue::open(&path)?;
        let other = Queue::open(&path)?;
        let mut run = pickup(&mut store, Box::new(other), jobs)?;
        drop(store);
        let floor = dir.join(format!("latency-floor-{round}.db"));
        run.commits = sqlite_commits(&floor, jobs)?;
        for file in [&path, &floor] {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
            }
        }
        sqlite.push(run);
    }
    let (cluster, note) = match server {
        Server::At(url) => {
            (Some(Cluster::existing(url)), "PostgreSQL: the server named by --pg-url".to_owned())
        }
        Server::Own => match Cluster::start(true) {
            Ok(cluster) => (Some(cluster), "PostgreSQL: a throwaway local cluster, fsync on".to_owned()),
            Err(why @ Unavailable::NotInstalled) => (None, format!("PostgreSQL unavailable: {why}")),
            Err(e) => return Err(BenchError::Setup(format!("PostgreSQL: {e}"))),
        },
    };
    let postgres = match &cluster {
        None => None,
        Some(cluster) => {
            let mut runs = Vec::new();
            for round in 0..rounds {
                progress(&format!("round {}/{rounds}: pickup latency on PostgreSQL, {jobs} jobs", round + 1));
                let url = cluster.create_database().map_err(BenchError::Setup)?;
                let mut store = PgQueue::connect(&url)?;
                let other = PgQueue::connect(&url)?;
                let run = pickup(&mut store, Box::new(other), jobs)
                    .and_then(|run| Ok(Run { commits: postgres_commits(&url, jobs)?, ..run }));
                drop(store);
                cluster.drop_database(&url).map_err(BenchError::Setup)?;
                runs.push(run?);
            }
            Some(summarize(&runs))
        }
    };
    Ok(Latency { jobs, rounds, sqlite: summarize(&sqlite), postgres, note })
}

/// One run's waits, in milliseconds: due now, then scheduled; and its floor's commits.
pub(crate) struct Run {
    pub(crate) now: Vec<f64>,
    scheduled: Vec<f64>,
    commits: Vec<f64>,
}

/// `n` durable commits of a one-row insert into a fresh SQLite file (WAL, FULL, as the
/// queue's), each timed from `BEGIN IMMEDIATE` to the end of `COMMIT`, in milliseconds.
fn sqlite_commits(path: &std::path::Path, n: usize) -> Result<Vec<f64>, BenchError> {
    let conn = crate::floor::open(path)?;
    conn.execute_batch("CREATE TABLE IF NOT EXISTS latency_floor (n INTEGER)")?;
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let start = Instant::now();
        conn.execute_batch("BEGIN IMMEDIATE")?;
        conn.execute("INSERT INTO latency_floor (n) VALUES (?1)", [i as i64])?;
        conn.execute_batch("COMMIT")?;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(times)
}

/// `n` durable commits of a one-row insert on the PostgreSQL database at `url`
/// (`synchronous_commit` as the server has it: on), in milliseconds.
fn postgres_commits(url: &str, n: usize) -> Result<Vec<f64>, BenchError> {
    let mut client = postgres::Client::connect(url, postgres::NoTls)?;
    client.batch_execute("CREATE TABLE IF NOT EXISTS latency_floor (n bigint)")?;
    let insert = client.prepare("INSERT INTO latency_floor (n) VALUES ($1)")?;
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let start = Instant::now();
        client.execute(&insert, &[&(i as i64)])?;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    client.batch_execute("DROP TABLE latency_floor")?;
    Ok(times)
}

/// The `q`-quantile of `sorted` by nearest rank.
pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn summarize(runs: &[Run]) -> Pickup {
    let per = |pick: fn(&Run) -> &Vec<f64>, q: f64| {
        let mut values: Vec<f64> = runs
            .iter()
            .map(|run| {
                let mut v = pick(run).clone();
                v.sort_by(f64::total_cmp);
                quantile(&v, q)
            })
            .collect();
        median(&mut values)
    };
    Pickup {
        now_p50_ms: per(|r| &r.now, 0.5),
        now_p99_ms: per(|r| &r.now, 0.99),
        scheduled_p50_ms: per(|r| &r.scheduled, 0.5),
        scheduled_p99_ms: per(|r| &r.scheduled, 0.99),
        now_max_ms: runs.iter().flat_map(|r| r.now.iter().copied()).fold(0.0, f64::max),
        scheduled_max_ms: runs.iter().flat_map(|r| r.scheduled.iter().copied()).fold(0.0, f64::max),
        commit_p50_ms: per(|r| &r.commits, 0.5),
    }
}

/// The wall clock now, in milliseconds since the epoch, with its fraction.
fn wall_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// A pause of 5 to 25 ms, the `n`th of a fixed sequence.
pub(crate) fn pause(n: usize) -> Duration {
    let spread = (n as u64).wrapping_mul(2_654_435_761) % 20_000;
    Duration::from_micros(5_000 + spread)
}

/// Runs an idle worker on `store` while `other` enqueues `jobs` due now and `jobs`
/// scheduled, one at a time; each one's wait.
pub(crate) fn pickup(
    store: &mut dyn Backend,
    mut other: Box<dyn Backend>,
    jobs: usize,
) -> Result<Run, BenchError> {
    let stop = Stop::new();
    let (started_tx, started) = mpsc::channel::<(String, f64)>();
    let worker = Worker::new("latency").map_err(|e| BenchError::Setup(e.to_string()))?;
    thread::scope(|scope| {
        let stop = &stop;
        let enqueuer = scope.spawn(move || -> Result<Run, BenchError> {
            let ran = (|| {
                let mut run = Run {
                    now: Vec::with_capacity(jobs),
                    scheduled: Vec::with_capacity(jobs),
                    commits: Vec::new(),
                };
                for n in 0..2 * jobs {
                    thread::sleep(pause(n));
                    let scheduled = n % 2 == 1;
                    let id = format!("job-{n:06}");
                    let now = retryq_core::now_ms()?;
                    let not_before = scheduled.then_some(now + SCHEDULED_AHEAD_MS);
                    let job = NewJob {
                        id: &id,
                        payload: "",
                        max_attempts: 1,
                        deadline: now + 3_600_000,
                        now,
                        not_before,
                        ..NewJob::default()
                    };
                    other.enqueue(&job)?;
                    let from = match not_before {
                        Some(at) => at as f64,
                        None => wall_ms(),
                    };
                    let (started_id, at) = started.recv_timeout(Duration::from_secs(30)).map_err(|_| {
                        BenchError::Setup(format!("{id} was not started within 30 s of its enqueue"))
                    })?;
                    if started_id != id {
                        return Err(BenchError::Setup(format!(
                            "{started_id} started where {id} was expected"
                        )));
                    }
                    let waited = (at - from).max(0.0);
                    if scheduled { run.scheduled.push(waited) } else { run.now.push(waited) }
                }
                Ok(run)
            })();
            stop.request();
            ran
        });
        let worked = worker.run(store, stop, |attempt: &Attempt| {
            let _ = started_tx.send((attempt.id().to_owned(), wall_ms()));
            Ok(())
        });
        let run = enqueuer.join().map_err(|_| BenchError::Setup("the enqueuing thread panicked".into()))?;
        worked.map_err(|e| BenchError::Setup(format!("the worker: {e}")))?;
        run
    })
}

/// The section as table lines.
pub fn render(l: &Latency) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<44} {:>14} {:>14} {:>8}",
        format!("pickup by an idle worker, ms ({} jobs, medians of {})", l.jobs, l.rounds),
        "p50",
        "p99",
        "max"
    );
    let rows = [("SQLite", Some(&l.sqlite)), ("PostgreSQL", l.postgres.as_ref())];
    for (store, pickup) in rows {
        let Some(p) = pickup else {
            let _ = writeln!(out, "{store}: {}", l.note);
            continue;
        };
        for (what, p50, p99, max) in [
            ("due now, from the enqueue's commit", p.now_p50_ms, p.now_p99_ms, p.now_max_ms),
            ("scheduled, from its not_before", p.scheduled_p50_ms, p.scheduled_p99_ms, p.scheduled_max_ms),
        ] {
            let _ = writeln!(
                out,
                "{:<44} {:>14} {:>14} {:>8}",
                format!("{store}, {what}"),
                format!("{p50:.1}"),
                format!("{p99:.1}"),
                format!("{max:.0}")
            );
        }
        let _ = writeln!(
            out,
            "{:<44} {:>14}",
            format!("{store}, floor: one durable commit"),
            format!("{:.1}", p.commit_p50_ms)
        );
    }
    out
}
