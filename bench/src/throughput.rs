//! End-to-end durable throughput with real worker processes: each job is enqueued, claimed
//! and completed, three commits, by one process or by several sharing the database — a SQLite
//! file, or a PostgreSQL database (`postgres.rs` runs those).
//!
//! The parent creates a fresh database, starts the children (the `retryq` binary again, as a
//! hidden subcommand that calls [`worker_main`]), waits until each has opened the file and
//! says `ready`, then says `go` to all of them at once. Each child runs its loop for the
//! same window and reports how many jobs it took through. Throughput is the sum over the
//! longest window. The floor runs the same way with bare statements (see `floor.rs`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use retryq::{Backend, Completion, NewJob, Outcome, PgQueue, Queue};
use serde::{Deserialize, Serialize};

use crate::{BenchError, floor, pg_floor};

/// The payload every benchmark job carries: a small order, as a JSON text.
pub const PAYLOAD: &str = r#"{"order":"order-7","sku":"snack","qty":3}"#;

/// Which side a worker process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// `retryq::Queue`: enqueue, claim, complete.
    Queue,
    /// Bare statements: insert, lease, done.
    Floor,
    /// `retryq::PgQueue`: enqueue, claim, complete, on PostgreSQL.
    PgQueue,
    /// Bare statements on PostgreSQL (`pg_floor.rs`).
    PgFloor,
}

/// What one worker process is told to do (passed as one JSON argument).
#[derive(Debug, Serialize, Deserialize)]
pub struct WorkerSpec {
    /// The queue or the floor.
    pub side: Side,
    /// The shared database: a file for the SQLite sides, a URL for the PostgreSQL ones.
    pub db: String,
    /// The worker's name in its claims.
    pub name: String,
    /// How long to work, in milliseconds.
    pub window_ms: u64,
}

/// What one worker process reports when its window is over.
#[derive(Debug, Serialize, Deserialize)]
pub struct WorkerReport {
    /// Jobs taken through in the window.
    pub jobs: u64,
    /// Claims that found nothing due (the other process took the last one).
    pub misses: u64,
    /// Seconds actually spent.
    pub seconds: f64,
}

/// How to start a worker process: a program and its leading arguments; the spec is appended
/// as the last argument.
#[derive(Clone, Debug)]
pub struct Launcher {
    /// The program to run (this executable, in the command).
    pub program: PathBuf,
    /// Arguments before the spec (a subcommand naming the worker's role).
    pub args: Vec<String>,
}

impl Launcher {
    fn command(&self, spec: &WorkerSpec) -> Result<Command, BenchError> {
        let mut command = Command::new(&self.program);
        command.args(&self.args).arg(serde_json::to_string(spec)?);
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        Ok(command)
    }
}

/// Milliseconds since the Unix epoch: the production clock, `retryq-core`'s, so a benchmark
/// times its jobs exactly as a worker would (a clock the queue cannot store fails the run).
pub fn now_ms() -> Result<u64, BenchError> {
    Ok(retryq_core::now_ms()?)
}

/// The child's side: open, say `ready`, wait for `go`, run the window, print the report.
pub fn worker_main(spec: &str) -> Result<(), BenchError> {
    let spec: WorkerSpec = serde_json::from_str(spec)?;
    let window = Duration::from_millis(spec.window_ms);
    let mut out = std::io::stdout().lock();
    let mut line = String::new();
    let mut id = String::with_capacity(64);
    let next = |id: &mut String, n: u64| {
        use std::fmt::Write as _;
        id.clear();
        let _ = write!(id, "{}-{n:09}", spec.name);
    };
    let (mut jobs, mut misses) = (0u64, 0u64);
    let mut queue: Box<dyn Backend> = match spec.side {
        Side::Queue => Box::new(Queue::open(&spec.db)?),
        Side::PgQueue => Box::new(PgQueue::connect(&spec.db)?),
        Side::Floor => {
            let conn = floor::open(Path::new(&spec.db))?;
            let mut statements = floor::Floor::new(&conn)?;
            let cycle = |id: &str| statements.cycle(id, PAYLOAD, &spec.name, now_ms()?);
            return floor_loop(cycle, &mut out, &mut line, window, &spec.name);
        }
        Side::PgFloor => {
            let mut statements = pg_floor::Floor::new(pg_floor::open(&spec.db)?)?;
            let cycle = |id: &str| statements.cycle(id, PAYLOAD, &spec.name, now_ms()?);
            return floor_loop(cycle, &mut out, &mut line, window, &spec.name);
        }
    };
    ready(&mut out, &mut line)?;
    let start = Instant::now();
    while start.elapsed() < window {
        next(&mut id, jobs + misses);
        let now = now_ms()?;
        queue.enqueue(&NewJob {
            id: &id,
            payload: PAYLOAD,
            max_attempts: 5,
            deadline: now + 3_600_000,
            now,
            ..NewJob::default()
        })?;
        let now = now_ms()?;
        match queue.claim(&spec.name, now)? {
            Some(job) => {
                queue.complete(&Completion::new(&job.lease, Outcome::Ok, now_ms()?.max(now), 0.0))?;
                jobs += 1;
            }
            None => misses += 1,
        }
    }
    let report = WorkerReport { jobs, misses, seconds: start.elapsed().as_secs_f64() };
    writeln!(out, "{}", serde_json::to_string(&report)?)?;
    Ok(())
}

/// A floor worker's window: `cycle` takes one job through (`false`: nothing was due).
fn floor_loop(
    mut cycle: impl FnMut(&str) -> Result<bool, BenchError>,
    out: &mut impl Write,
    line: &mut String,
    window: Duration,
    name: &str,
) -> Result<(), BenchError> {
    ready(out, line)?;
    let (mut jobs, mut misses) = (0u64, 0u64);
    let start = Instant::now();
    while start.elapsed() < window {
        if cycle(&format!("{name}-{:09}", jobs + misses))? {
            jobs += 1;
        } else {
            misses += 1;
        }
    }
    let report = WorkerReport { jobs, misses, seconds: start.elapsed().as_secs_f64() };
    writeln!(out, "{}", serde_json::to_string(&report)?)?;
    Ok(())
}

fn ready(out: &mut impl Write, line: &mut String) -> Result<(), BenchError> {
    writeln!(out, "ready")?;
    out.flush()?;
    std::io::stdin().lock().read_line(line)?;
    if line.trim() != "go" {
        return Err(BenchError::Worker(format!("expected go, got {line:?}")));
    }
    Ok(())
}

/// One measurement: a fresh database in `dir`, `processes` workers for `window`.
pub fn measure(
    launcher: &Launcher,
    dir: &Path,
    side: Side,
    processes: usize,
    window: Duration,
    round: usize,
) -> Result<f64, BenchError> {
    let db = dir.join(format!("throughput-{side:?}-{processes}-{round}.db").to_lowercase());
    match side {
        // Create the schema (and WAL mode) before the workers race to open the file.
        Side::Queue => drop(Queue::open(&db)?),
        Side::Floor => drop(floor::open(&db)?),
        Side::PgQueue | Side::PgFloor => {
            return Err(BenchError::Setup(format!(
                "{side:?} runs on a PostgreSQL database, not in a directory"
            )));
        }
    }
    let rate = measure_on(launcher, &db.to_string_lossy(), side, processes, window);
    remove_db(&db);
    rate
}

/// One measurement on a database made ready for `side` (its schema created): `processes`
/// workers for `window`, jobs per second over them all.
pub fn measure_on(
    launcher: &Launcher,
    db: &str,
    side: Side,
    processes: usize,
    window: Duration,
) -> Result<f64, BenchError> {
    let mut children = Vec::with_capacity(processes);
    for p in 0..processes {
        let spec = WorkerSpec {
            side,
            db: db.to_owned(),
            name: format!("w{}", p + 1),
            window_ms: window.as_millis() as u64,
        };
        let child = launcher
            .command(&spec)?
            .spawn()
            .map_err(|e| BenchError::Worker(format!("cannot start {}: {e}", launcher.program.display())))?;
        children.push(Worker::new(child)?);
    }
    let result = run_children(&mut children);
    for child in &mut children {
        // A worker that failed is not left behind; one that finished has exited already.
        let _ = child.child.kill();
        let _ = child.child.wait();
    }
    let (jobs, seconds) = result?;
    Ok(jobs as f64 / seconds)
}

fn run_children(children: &mut [Worker]) -> Result<(u64, f64), BenchError> {
    for child in children.iter_mut() {
        let line = child.read_line()?;
        if line.trim() != "ready" {
            return Err(BenchError::Worker(format!("worker said {line:?} instead of ready")));
        }
    }
    let start = Instant::now();
    for child in children.iter_mut() {
        let stdin = child.child.stdin.as_mut().ok_or_else(|| BenchError::Worker("no stdin".into()))?;
        writeln!(stdin, "go")?;
        stdin.flush()?;
    }
    let mut jobs = 0;
    for child in children.iter_mut() {
        let line = child.read_line()?;
        let report: WorkerReport = serde_json::from_str(line.trim())
            .map_err(|e| BenchError::Worker(format!("worker report {line:?}: {e}")))?;
        jobs += report.jobs;
    }
    Ok((jobs, start.elapsed().as_secs_f64()))
}

struct Worker {
    child: Child,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Worker {
    fn new(mut child: Child) -> Result<Worker, BenchError> {
        let stdout = child.stdout.take().ok_or_else(|| BenchError::Worker("no stdout".into()))?;
        Ok(Worker { child, stdout: BufReader::new(stdout) })
    }

    fn read_line(&mut self) -> Result<String, BenchError> {
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            let status = self.child.wait()?;
            return Err(BenchError::Worker(format!("worker exited ({status}) without answering")));
        }
        Ok(line)
    }
}

/// Removes a database and its WAL and shared-memory files; the disk is not left to fill.
pub fn remove_db(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut path = db.as_os_str().to_owned();
        path.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(path));
    }
}
