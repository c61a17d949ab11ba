//! `retryq bench --peers`: retryq beside the queues a user would pick instead, in one run.
//!
//! On one throwaway PostgreSQL server (fsync and `synchronous_commit` on, or `--pg-url`):
//! retryq's library worker ([`pg_worker::SLOTS`] slots a worker), pgqueuer and
//! graphile-worker. On SQLite files in the benchmark's directory (WAL, `synchronous=FULL`):
//! retryq, huey's SQLite storage and persist-queue. For each, every round on a fresh
//! database or file: the bulk load of N no-op jobs with the queue's own bulk call, then 1,
//! 2, 4 and 8 workers until all N are done (jobs per second from the first job handled to
//! the last, over every worker); and pickup of a single job by an idle worker, from the
//! enqueue's return to the handler's start, one job at a time. Medians over rounds, every
//! queue measured once per round, in an order that flips each round.
//!
//! The peers run as processes of their own runtime ([`peer_run`], [`peer_setup`]); retryq's
//! workers are threads of this process, each with its own connection (a server process each
//! on PostgreSQL), timed the same way from inside their handlers.

use std::sync::Mutex;
use std::thread;
use std::time::{SystemTime, UNIX_EPOCH};

use retryq::{Backend, Claimed, OpenOptions, Outcome, PgQueue, Queue, Report};
use retryq_pgtest::{Cluster, Unavailable};
use retryq_worker::{Stop, SystemClock, Transport, Unclassified, Window, work_in_slots};
use serde::Serialize;

use crate::peer_line::{self, Tally};
use crate::peer_run::Script;
use crate::peer_setup::{self, Installed};
use crate::server::Server;
use crate::{BenchError, latency, median, pg_worker, worker};

/// Worker counts measured.
pub const PROCESSES: [usize; 4] = [1, 2, 4, 8];

/// The size of a run.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Size {
    /// No-op jobs loaded before the workers start.
    pub jobs: usize,
    /// Jobs of the pickup run.
    pub pickup_jobs: usize,
    /// Rounds each median is over.
    pub rounds: usize,
}

/// Both stores' tables.
#[derive(Clone, Debug, Serialize)]
pub struct PeersBench {
    /// The run's size.
    pub size: Size,
    /// Where the PostgreSQL server came from, or why there was none.
    pub postgres_note: String,
    /// retryq, pgqueuer and graphile-worker.
    pub postgres: Vec<Row>,
    /// retryq, huey and persist-queue.
    pub sqlite: Vec<Row>,
    /// Where the peers were installed.
    pub cache: String,
}

/// One queue's figures (medians over rounds; `None` where not measured, `note` says why).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    /// The queue.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Whether it ran at all.
    pub available: bool,
    /// How it was run, its work per job, or why it could not run.
    pub note: String,
    /// Jobs per second at [`PROCESSES`] workers, in order.
    pub jobs_per_s: Vec<Option<f64>>,
    /// Seconds to load `size.jobs` jobs with its bulk call.
    pub load_s: Option<f64>,
    /// Pickup by an idle worker, milliseconds, p50 and p99.
    pub pickup_p50_ms: Option<f64>,
    /// The same, 99th percentile.
    pub pickup_p99_ms: Option<f64>,
}

/// Where a queue keeps its jobs for one measurement: a fresh database or file, and how to
/// give it back.
trait Place {
    /// A fresh target: a URL or a path.
    fn fresh(&self, tag: &str) -> Result<String, String>;
    /// Deletes it.
    fn release(&self, target: &str);
}

struct Postgres<'a>(&'a Cluster);

impl Place for Postgres<'_> {
    fn fresh(&self, _: &str) -> Result<String, String> {
        self.0.create_database()
    }
    fn release(&self, target: &str) {
        let _ = self.0.drop_database(target);
    }
}

struct Files<'a>(&'a std::path::Path);

impl Place for Files<'_> {
    fn fresh(&self, tag: &str) -> Result<String, String> {
        let path = self.0.join(format!("peers-{tag}"));
        std::fs::create_dir_all(&path).map_err(|e| e.to_string())?;
        Ok(path.join("queue.db").display().to_string())
    }
    fn release(&self, target: &str) {
        if let Some(dir) = std::path::Path::new(target).parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A queue under measurement: retryq in this process, or a peer's script.
enum Subject {
    Retryq {
        postgres: bool,
    },
    /// A peer's script; at most `max_processes` workers, and at most `pickup_jobs` in a
    /// pickup run (a peer that waits seconds per job gets fewer).
    Peer {
        script: Script,
        max_processes: usize,
        pickup_jobs: usize,
    },
}

/// Measures both stores.
pub fn measure(
    dir: &std::path::Path,
    server: &Server,
    python: &str,
    size: Size,
    progress: &dyn Fn(&str),
) -> Result<PeersBench, BenchError> {
    let cache = peer_setup::cache_dir();
    let installed = peer_setup::install(&cache, python, progress);
    let (cluster, postgres_note) = match server {
        Server::At(url) => (Some(Cluster::existing(url)), "the server named by --pg-url".to_owned()),
        Server::Own => match Cluster::start(true) {
            Ok(c) => (Some(c), "a throwaway local cluster, fsync on, synchronous_commit on".to_owned()),
            Err(why @ Unavailable::NotInstalled) => (None, format!("unavailable: {why}")),
            Err(e) => return Err(BenchError::Setup(format!("PostgreSQL: {e}"))),
        },
    };
    let files = Files(dir);
    let pg_place = cluster.as_ref().map(Postgres);
    let peer = |script: Result<Script, String>, max_processes: usize, pickup_jobs: usize| {
        script.map(|script| Subject::Peer { script, max_processes, pickup_jobs })
    };
    let mut postgres = Vec::new();
    if let Some(place) = &pg_place {
        postgres = vec![
            Contender::new("retryq", Ok(Subject::Retryq { postgres: true }), place, RETRYQ_PG_NOTE),
            Contender::new(
                "pgqueuer",
                peer(python_script(&installed, "pgqueuer_peer.py"), 8, usize::MAX),
                place,
                PGQUEUER_NOTE,
            ),
            Contender::new(
                "graphile-worker",
                peer(node_script(&installed, "graphile_worker_peer.js"), 8, usize::MAX),
                place,
                GRAPHILE_NOTE,
            ),
        ];
    }
    let mut sqlite = vec![
        Contender::new("retryq", Ok(Subject::Retryq { postgres: false }), &files, RETRYQ_SQLITE_NOTE),
        Contender::new(
            "huey",
            peer(python_script(&installed, "huey_peer.py"), 8, usize::MAX),
            &files,
            HUEY_NOTE,
        ),
        Contender::new(
            "persist-queue",
            peer(python_script(&installed, "persist_queue_peer.py"), 1, PERSIST_QUEUE_PICKUP_JOBS),
            &files,
            PERSIST_QUEUE_NOTE,
        ),
    ];
    // Round by round, every queue in turn (the order flipped each round), so that each
    // round's figures saw the machine in the same stretch of time.
    for round in 0..size.rounds {
        for contenders in [&mut postgres, &mut sqlite] {
            if round % 2 == 1 {
                contenders.reverse();
            }
            for contender in contenders.iter_mut() {
                contender.round(round, size, progress);
            }
            if round % 2 == 1 {
                contenders.reverse();
            }
        }
    }
    let postgres = postgres.into_iter().map(Contender::row).collect();
    let sqlite = sqlite.into_iter().map(Contender::row).collect();
    Ok(PeersBench { size, postgres_note, postgres, sqlite, cache: cache.display().to_string() })
}

/// How retryq runs on PostgreSQL, and what it does per job.
pub const RETRYQ_PG_NOTE: &str = "library worker (work_in_slots), 16 slots a worker, claim_batch and \
     complete_batch; per job: a claim counted in attempts, an attempt record, tallies, the outcome kept \
     as history; enqueue_bulk (bulk import) for the load; pickup: the library Worker's defaults (LISTEN/NOTIFY, polling as \
     the fallback)";
/// How pgqueuer runs, and what it does per job.
pub const PGQUEUER_NOTE: &str = "PgQueuer over asyncpg, run() with its default batch of 10, no \
     concurrency limit, LISTEN/NOTIFY; a done job is deleted from the queue and a row written to its log \
     table, completions buffered (10 or 0.1 s) before they commit (no attempt count, no deadline); \
     bulk enqueue with lists";
/// How graphile-worker runs, and what it does per job.
pub const GRAPHILE_NOTE: &str = "run() with concurrency 16, LISTEN/NOTIFY; a done job is deleted (no \
     history kept), attempts counted until then; addJobs for the load";
/// How retryq runs on SQLite.
pub const RETRYQ_SQLITE_NOTE: &str = "library worker (work_in_slots), 16 slots a worker, one file, WAL + \
     synchronous=FULL; same work per job as on PostgreSQL; enqueue_bulk (bulk import) for the load; pickup: the library Worker's defaults \
     (inotify on the write-ahead log, polling as the fallback)";
/// How huey runs.
pub const HUEY_NOTE: &str = "SqliteHuey, WAL + fsync=True (synchronous=FULL, read back), consumer with 16 \
     thread workers, default polling (0.1 s backing off to 10 s); a dequeued task is deleted, nothing \
     kept for a task returning None; no bulk enqueue (one commit a job)";
/// Jobs of persist-queue's pickup run: its blocking get sees another process's put only
/// when it re-reads the file, every 10 s (`TICK_FOR_WAIT`), so a job costs seconds.
pub const PERSIST_QUEUE_PICKUP_JOBS: usize = 5;
/// How persist-queue runs.
pub const PERSIST_QUEUE_NOTE: &str = "SQLiteAckQueue, WAL + synchronous=FULL (read back), put/get/ack, \
     one process only (its get is not safe across processes); no attempt count, deadline or history; no \
     bulk put; pickup over 5 jobs: its blocking get waits on an in-process event and re-reads the file \
     every 10 s, so a put from another process waits up to 10 s";

fn python_script(installed: &Installed, name: &str) -> Result<Script, String> {
    let python = installed.python.as_ref().map_err(Clone::clone)?;
    Ok(Script { program: python.clone(), script: installed.scripts.join(name), env: Vec::new() })
}

fn node_script(installed: &Installed, name: &str) -> Result<Script, String> {
    let (node, modules) = installed.node.as_ref().map_err(Clone::clone)?;
    Ok(Script {
        program: node.clone(),
        script: installed.scripts.join(name),
        env: vec![("NODE_PATH".into(), modules.clone())],
    })
}

/// One queue under measurement and its figures so far, round by round.
struct Contender<'a> {
    name: &'static str,
    subject: Result<Subject, String>,
    place: &'a dyn Place,
    how: &'static str,
    version: String,
    problems: Vec<String>,
    loads: Vec<f64>,
    rates: Vec<Vec<f64>>,
    p50: Vec<f64>,
    p99: Vec<f64>,
}

impl<'a> Contender<'a> {
    fn new(
        name: &'static str,
        subject: Result<Subject, String>,
        place: &'a dyn Place,
        how: &'static str,
    ) -> Self {
        Contender {
            name,
            subject,
            place,
            how,
            version: String::new(),
            problems: Vec::new(),
            loads: Vec::new(),
            rates: vec![Vec::new(); PROCESSES.len()],
            p50: Vec::new(),
            p99: Vec::new(),
        }
    }

    /// One round of every figure; a failure is noted and stops only what it stopped (a
    /// queue that never started is not tried again).
    fn round(&mut self, round: usize, size: Size, progress: &dyn Fn(&str)) {
        let Ok(subject) = &self.subject else { return };
        if round > 0 && self.version.is_empty() && !self.problems.is_empty() {
            return;
        }
        let name = self.name;
        for (i, &processes) in PROCESSES.iter().enumerate() {
            progress(&format!(
                "peers, round {}/{}: {name}, {} jobs, {processes} worker{}",
                round + 1,
                size.rounds,
                size.jobs,
                if processes == 1 { "" } else { "s" }
            ));
            match throughput(subject, self.place, &mut self.version, processes, size.jobs, round) {
                Ok(Some((load, rate))) => {
                    self.loads.push(load);
                    self.rates[i].push(rate);
                }
                Ok(None) => {}
                Err(why) => self.problems.push(format!("{processes} workers: {why}")),
            }
        }
        progress(&format!(
            "peers, round {}/{}: {name}, pickup of {} jobs",
            round + 1,
            size.rounds,
            size.pickup_jobs
        ));
        match pickup(subject, self.place, size.pickup_jobs, round) {
            Ok(mut waits) => {
                waits.sort_by(f64::total_cmp);
                self.p50.push(latency::quantile(&waits, 0.5));
                self.p99.push(latency::quantile(&waits, 0.99));
            }
            Err(why) => self.problems.push(format!("pickup: {why}")),
        }
    }

    /// The medians, and what was not measured.
    fn row(mut self) -> Row {
        let some_median = |v: &mut Vec<f64>| (!v.is_empty()).then(|| median(v));
        let note = match (&self.subject, self.problems.is_empty()) {
            (Err(why), _) => format!("unavailable: {why}"),
            (Ok(_), true) => self.how.to_owned(),
            (Ok(_), false) => {
                self.problems.dedup();
                format!("{}; not measured: {}", self.how, self.problems.join("; "))
            }
        };
        Row {
            name: self.name.into(),
            version: self.version,
            available: !self.loads.is_empty(),
            note,
            jobs_per_s: self.rates.iter_mut().map(some_median).collect(),
            load_s: some_median(&mut self.loads),
            pickup_p50_ms: some_median(&mut self.p50),
            pickup_p99_ms: some_median(&mut self.p99),
        }
    }
}

/// One load and one run of `processes` workers on a fresh place: seconds to load and jobs
/// per second. `None` where the queue does not run that many processes.
fn throughput(
    subject: &Subject,
    place: &dyn Place,
    version: &mut String,
    processes: usize,
    jobs: usize,
    round: usize,
) -> Result<Option<(f64, f64)>, String> {
    match subject {
        Subject::Peer { max_processes, .. } if processes > *max_processes => Ok(None),
        Subject::Peer { script, .. } => {
            let target = place.fresh(&format!("{processes}-{round}"))?;
            let ran = (|| {
                *version = script.install(&target)?;
                let load = script.load(&target, jobs)?;
                Ok(Some((load, script.work(&target, processes, jobs)?)))
            })();
            place.release(&target);
            ran
        }
        Subject::Retryq { postgres } => {
            *version = env!("CARGO_PKG_VERSION").to_owned();
            let target = place.fresh(&format!("retryq-{processes}-{round}"))?;
            let ran = retryq_throughput(*postgres, &target, processes, jobs).map_err(|e| e.to_string());
            place.release(&target);
            ran.map(Some)
        }
    }
}

fn open(postgres: bool, target: &str) -> Result<Box<dyn Backend>, BenchError> {
    Ok(if postgres {
        Box::new(PgQueue::connect(target)?)
    } else {
        Box::new(Queue::open_with(std::path::Path::new(target), &OpenOptions::default())?)
    })
}

/// retryq's load ([`bulk_load`]) and `processes` workers of [`pg_worker::SLOTS`]
/// slots until idle, each handler stamping its worker's tally.
fn retryq_throughput(
    postgres: bool,
    target: &str,
    processes: usize,
    jobs: usize,
) -> Result<(f64, f64), BenchError> {
    let mut first = open(postgres, target)?;
    let load = bulk_load(&mut *first, jobs)?;
    drop(first);
    let tallies: Vec<Mutex<Option<Tally>>> = (0..processes).map(|_| Mutex::new(None)).collect();
    thread::scope(|scope| {
        let handles: Vec<_> = tallies
            .iter()
            .enumerate()
            .map(|(w, tally)| {
                scope.spawn(move || -> Result<(), BenchError> {
                    let mut store = open(postgres, target)?;
                    let config = worker::config(format!("peers-{w}"));
                    let mut slots = [Stamped(tally); pg_worker::SLOTS];
                    work_in_slots(&mut *store, &config, &mut slots, &Stop::new(), &SystemClock)
                        .map_err(|e| BenchError::Setup(format!("the worker loop: {e}")))?;
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| {
            h.join().unwrap_or_else(|_| Err(BenchError::Setup("a worker thread panicked".into())))
        })
    })?;
    let tallies: Vec<Tally> = tallies.into_iter().filter_map(|t| t.into_inner().ok().flatten()).collect();
    let done: u64 = tallies.iter().map(|t| t.jobs).sum();
    if done != jobs as u64 {
        return Err(BenchError::Setup(format!("{done} of {jobs} jobs done: the run is not comparable")));
    }
    let rate =
        peer_line::throughput(&tallies).ok_or_else(|| BenchError::Setup("no span to measure".into()))?;
    Ok((load, rate))
}

/// Loads `jobs` no-op jobs with retryq's bulk import (`enqueue_bulk`, SPEC 6.38: pieces of
/// one multi-row insert each on PostgreSQL): the seconds it took.
fn bulk_load(store: &mut dyn Backend, jobs: usize) -> Result<f64, BenchError> {
    let now = retryq_core::now_ms()?;
    let ids = crate::worker::job_ids(jobs);
    let batch = crate::worker::noop_jobs(&ids, now);
    let mut answers = Vec::with_capacity(jobs);
    let start = std::time::Instant::now();
    store.enqueue_bulk(&batch, &mut answers)?;
    let seconds = start.elapsed().as_secs_f64();
    for answer in answers {
        answer?;
    }
    Ok(seconds)
}

/// A no-op attempt that stamps its worker's tally, as the peers' handlers do.
#[derive(Clone, Copy)]
struct Stamped<'a>(&'a Mutex<Option<Tally>>);

impl Transport for Stamped<'_> {
    fn attempt(&mut self, _: &Claimed, _: &Window<'_>) -> Result<Report, Unclassified> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        if let Ok(mut tally) = self.0.lock() {
            let t = tally.get_or_insert(Tally { jobs: 0, first: now, last: now });
            t.jobs += 1;
            t.last = now;
        }
        Ok(Report::from(Outcome::Ok))
    }
}

/// One pickup run on a fresh place: each job's wait in milliseconds.
fn pickup(subject: &Subject, place: &dyn Place, jobs: usize, round: usize) -> Result<Vec<f64>, String> {
    let target = place.fresh(&format!("pickup-{round}"))?;
    let ran = match subject {
        Subject::Peer { script, pickup_jobs, .. } => {
            script.install(&target).and_then(|_| script.pickup(&target, jobs.min(*pickup_jobs)))
        }
        Subject::Retryq { postgres } => (|| -> Result<Vec<f64>, BenchError> {
            let mut store = open(*postgres, &target)?;
            let other = open(*postgres, &target)?;
            Ok(latency::pickup(&mut *store, other, jobs)?.now)
        })()
        .map_err(|e| e.to_string()),
    };
    place.release(&target);
    ran
}

/// The section as two tables.
pub fn render(p: &PeersBench) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let cell = |v: Option<f64>, digits: usize| v.map_or("-".to_owned(), |v| format!("{v:.digits$}"));
    for (store, rows) in [
        (format!("PostgreSQL ({})", p.postgres_note), &p.postgres),
        ("SQLite (WAL, synchronous=FULL)".to_owned(), &p.sqlite),
    ] {
        let _ = writeln!(
            out,
            "\n{store}: {} no-op jobs, medians of {} rounds; pickup over {} jobs",
            p.size.jobs, p.size.rounds, p.size.pickup_jobs
        );
        let _ = writeln!(
            out,
            "{:<24} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>9}",
            "queue (jobs/s)", "1", "2", "4", "8", "load s", "p50 ms", "p99 ms"
        );
        for row in rows.iter() {
            let rates: Vec<String> = row.jobs_per_s.iter().map(|r| cell(*r, 0)).collect();
            let _ = writeln!(
                out,
                "{:<24} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>9}",
                format!("{} {}", row.name, row.version),
                rates[0],
                rates[1],
                rates[2],
                rates[3],
                cell(row.load_s, 2),
                cell(row.pickup_p50_ms, 1),
                cell(row.pickup_p99_ms, 1),
            );
        }
        for row in rows.iter() {
            let _ = writeln!(out, "  {}: {}", row.name, row.note);
        }
    }
    out
}
