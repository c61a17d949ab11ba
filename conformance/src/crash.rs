//! Crash consistency: a `retryq replay --db FILE -` child is killed with SIGKILL at a
//! random instant while it runs a generated trace — most of its time is spent inside write
//! transactions, waiting on fsync — and the file is reopened. The state found must equal
//! the reference model's state either before or after the operation that was running,
//! never a mixture, and invariants 1 to 6 must hold on it.
//!
//! The same runs go against PostgreSQL ([`Target`]): the child replays into an empty
//! database of its own and is killed, or the server itself is stopped at once (`pg_ctl stop
//! -m immediate`, as a crash of the server) and started again, and the database is read
//! through a new connection.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rand::RngExt;
use retryq_model::reference::Store;
use retryq_model::{Op, Reply, Response, RunOutcome, Status};

use crate::generate::{IDS, abstract_trace, materialize};
use crate::parse::{Line, parse_line};
use crate::pg::{Databases, Lent};
use crate::trace::Trace;
use crate::{ReplayError, Side};

/// Starts or stops a server of the caller's own.
pub type Control<'a> = &'a dyn Fn() -> Result<(), String>;

/// Where each killed replay keeps its jobs, and what is killed.
pub enum Target<'a> {
    /// A new SQLite file per run; the replay process is killed.
    Files,
    /// An empty PostgreSQL database per run; the replay process is killed.
    Postgres(Arc<Databases>),
    /// An empty PostgreSQL database per run on a server the caller may stop: the server is
    /// stopped at once instead (`stop`, as a crash of the server would), the replay process
    /// is then killed, and the server is started again (`start`) before the database is read.
    PostgresServer {
        /// The server's databases.
        databases: Arc<Databases>,
        /// Stops the server at once.
        stop: Control<'a>,
        /// Starts it again; it recovers from its write-ahead log.
        start: Control<'a>,
    },
}

/// How long a killed client's server process may take to notice and end.
const IDLE_LIMIT: Duration = Duration::from_secs(30);

/// The database one run replays into, kept until it has been read.
enum Place {
    File { _dir: tempfile::TempDir, path: std::path::PathBuf },
    Postgres(Lent),
}

impl Place {
    fn new(target: &Target<'_>) -> Result<Place, ReplayError> {
        Ok(match target {
            Target::Files => {
                let dir = tempfile::Builder::new().prefix("retryq-crash-").tempdir()?;
                let path = dir.path().join("crash.db");
                Place::File { _dir: dir, path }
            }
            Target::Postgres(databases) | Target::PostgresServer { databases, .. } => {
                Place::Postgres(databases.lend()?)
            }
        })
    }

    /// The `--db` value that names it.
    fn db(&self) -> OsString {
        match self {
            Place::File { path, .. } => path.clone().into_os_string(),
            Place::Postgres(lent) => lent.url().into(),
        }
    }

    /// Every job's `get` and the `stats`, read anew. A SQLite file that is missing means the
    /// child died before creating it: the state before the first operation. An empty
    /// PostgreSQL database gets its schema from the reading connection: the same state.
    fn observe(&self, trace: &Trace) -> Result<Vec<Response>, ReplayError> {
        match self {
            Place::File { path, .. } if !path.exists() => Ok(observe_model(&Store::new(), trace)),
            Place::File { path, .. } => observe(&mut Side::file(path)?, trace),
            Place::Postgres(lent) => {
                lent.databases().wait_idle(lent.name(), IDLE_LIMIT)?;
                observe(&mut Side::postgres(lent.url())?, trace)
            }
        }
    }
}

/// What the kills found.
#[derive(Clone, Debug, Default)]
pub struct CrashTally {
    /// Kill-and-reopen runs made.
    pub runs: u64,
    /// Lines answered before the kills, in all: how far into their traces the kills landed.
    pub answered: u64,
    /// Kills that landed while an operation of the trace was still to finish.
    pub mid_trace: u64,
    /// Of those, how often the file held the state before the running operation, and how
    /// often the state after it (committed, not yet printed).
    pub before: u64,
    /// See `before`.
    pub after: u64,
    /// Of those, how often a `run_once` was killed between its claim and its completion (two
    /// transactions by design): the job claimed and nothing more, as a crash leaves it.
    pub claimed: u64,
    /// The first run whose reopened state matched neither, or broke an invariant.
    pub problem: Option<String>,
    /// Seconds the runs took.
    pub seconds: f64,
}

/// Kills `runs` children of `program` (the `retryq` binary) at random points, each replaying
/// into a new SQLite file.
pub fn kill_runs(
    program: &Path,
    runs: u64,
    seed: u64,
    progress: &dyn Fn(),
) -> Result<CrashTally, ReplayError> {
    kill_runs_on(program, &Target::Files, runs, seed, progress)
}

/// [`kill_runs`] against `target`: SQLite files, or PostgreSQL with the replay or the server
/// killed.
pub fn kill_runs_on(
    program: &Path,
    target: &Target<'_>,
    runs: u64,
    seed: u64,
    progress: &dyn Fn(),
) -> Result<CrashTally, ReplayError> {
    let start = Instant::now();
    let mut rng = TestRng::from_seed(
        RngAlgorithm::ChaCha,
        &seed.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes().repeat(4),
    );
    let mut runner = TestRunner::new_with_rng(Config::default(), rng.clone());
    let strategy = abstract_trace(48);
    let mut tally = CrashTally::default();
    let mut next_trace = || -> Result<Trace, ReplayError> {
        let steps = strategy
            .new_tree(&mut runner)
            .map_err(|why| ReplayError::Io(std::io::Error::other(format!("generator: {why}"))))?
            .current();
        Ok(materialize(&steps))
    };
    // Aim the kills within the time a whole trace takes on this machine: time the start-up
    // (a one-line trace) and a long trace first.
    let startup = run_through(program, target, &Trace { steps: vec![crate::trace::Step::Op(Op::Restart)] })?;
    let per_step = {
        let trace = next_trace()?;
        let whole = run_through(program, target, &trace)?;
        whole.saturating_sub(startup).div_f64(trace.len().max(1) as f64)
    };
    for _ in 0..runs {
        let trace = next_trace()?;
        let span = (startup + per_step.mul_f64(trace.len() as f64)).as_micros() as u64;
        let delay = Duration::from_micros(rng.random_range(0..=span));
        let run = kill_once(program, target, &trace, delay)?;
        progress();
        tally.runs += 1;
        tally.answered += run.finished as u64;
        if run.finished < trace.len() {
            tally.mid_trace += 1;
        }
        match judge(&trace, &run) {
            Ok(Judged::Before) => tally.before += 1,
            Ok(Judged::After) => tally.after += 1,
            Ok(Judged::Claimed) => tally.claimed += 1,
            Ok(Judged::Complete) => {}
            Err(problem) => {
                tally.problem = Some(format!("{problem}\ntrace:\n{}", trace.to_jsonl("")));
                break;
            }
        }
    }
    tally.seconds = start.elapsed().as_secs_f64();
    Ok(tally)
}

/// Runs a whole trace (nothing killed until every line is answered) and returns how long it
/// took.
fn run_through(program: &Path, target: &Target<'_>, trace: &Trace) -> Result<Duration, ReplayError> {
    let place = Place::new(target)?;
    let started = Instant::now();
    let output = Command::new(program)
        .arg("replay")
        .arg("--db")
        .arg(place.db())
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .and_then(|mut child| {
            if let Some(mut stdin) = child.stdin.take() {
                stdin.write_all(trace.to_jsonl("").as_bytes())?;
            }
            child.wait_with_output()
        })?;
    if !output.status.success() {
        return Err(ReplayError::Io(std::io::Error::other(format!(
            "{} replay failed: {}",
            program.display(),
            output.status
        ))));
    }
    Ok(started.elapsed())
}

struct Run {
    /// How many of the trace's lines the child answered before it died.
    finished: usize,
    /// Every job's `get` and the `stats`, read from the reopened store.
    observed: Vec<Response>,
}

fn kill_once(
    program: &Path,
    target: &Target<'_>,
    trace: &Trace,
    delay: Duration,
) -> Result<Run, ReplayError> {
    let place = Place::new(target)?;
    let mut child = Command::new(program)
        .arg("replay")
        .arg("--db")
        .arg(place.db())
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    // All lines at once; stdin stays open so the child waits rather than exits at the end.
    let mut stdin = child.stdin.take().ok_or_else(|| std::io::Error::other("no stdin"))?;
    stdin.write_all(trace.to_jsonl("").as_bytes())?;
    stdin.flush()?;
    std::thread::sleep(delay);
    if let Target::PostgresServer { stop, .. } = target {
        stop().map_err(|why| std::io::Error::other(format!("stopping the server: {why}")))?;
    }
    child.kill()?;
    child.wait()?;
    drop(stdin);
    if let Target::PostgresServer { start, .. } = target {
        start().map_err(|why| std::io::Error::other(format!("starting the server again: {why}")))?;
    }
    let mut output = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_string(&mut output)?;
    }
    let finished = output.lines().filter(|line| line.ends_with('}')).count();
    let observed = place.observe(trace)?;
    Ok(Run { finished, observed })
}

enum Judged {
    Before,
    After,
    /// Between the claim and the completion of a `run_once`.
    Claimed,
    /// The child finished the whole trace before it was killed.
    Complete,
}

/// The probes: every id's `get`, then `stats` at the trace's last time.
fn probes(trace: &Trace) -> Vec<Op> {
    let now = trace
        .steps
        .iter()
        .filter_map(|step| match parse_line(&step.to_line()) {
            Line::Op(
                Op::Claim { now, .. }
                | Op::Reap { now }
                | Op::Stats { queue: _, now }
                | Op::RunOnce { now, .. },
            ) => Some(now),
            Line::Op(Op::Enqueue { now, .. } | Op::Complete { now, .. } | Op::Redrive { now, .. }) => {
                Some(now)
            }
            _ => None,
        })
        .max()
        .unwrap_or(0);
    IDS.iter().map(|id| Op::Get { id: (*id).into() }).chain([Op::Stats { queue: None, now }]).collect()
}

fn observe(side: &mut Side, trace: &Trace) -> Result<Vec<Response>, ReplayError> {
    probes(trace).iter().map(|op| side.step(op)).collect()
}

fn observe_model(store: &Store, trace: &Trace) -> Vec<Response> {
    let mut store = store.clone();
    probes(trace).iter().map(|op| store.step(op)).collect()
}

/// The model after the first `n` lines of the trace.
fn model_after(trace: &Trace, n: usize) -> Store {
    let mut store = Store::new();
    for step in trace.steps.iter().take(n) {
        if let Line::Op(op) = parse_line(&step.to_line()) {
            store.step(&op);
        }
    }
    store
}

fn judge(trace: &Trace, run: &Run) -> Result<Judged, String> {
    check_invariants(&run.observed)?;
    let before = observe_model(&model_after(trace, run.finished), trace);
    if run.finished >= trace.len() {
        return if before == run.observed { Ok(Judged::Complete) } else { Err(mismatch(run, &before, None)) };
    }
    if before == run.observed {
        return Ok(Judged::Before);
    }
    let after = observe_model(&model_after(trace, run.finished + 1), trace);
    if after == run.observed {
        return Ok(Judged::After);
    }
    // `run_once` is two transactions by design — the claim commits before anything is sent —
    // so a kill between them leaves the job claimed and nothing more: exactly a `crash`.
    if let Some(Line::Op(Op::RunOnce { worker, now, after: t1, jitter, queues, .. })) =
        trace.steps.get(run.finished).map(|step| parse_line(&step.to_line()))
    {
        let mut claimed = model_after(trace, run.finished);
        // The same claim, from the same queues, and nothing after it.
        claimed.step(&Op::RunOnce { queues, worker, now, after: t1, outcome: RunOutcome::Crash, jitter });
        if observe_model(&claimed, trace) == run.observed {
            return Ok(Judged::Claimed);
        }
    }
    Err(mismatch(run, &before, Some(&after)))
}

fn mismatch(run: &Run, before: &[Response], after: Option<&[Response]>) -> String {
    let lines = |responses: &[Response]| {
        responses.iter().map(|r| format!("    {}", r.to_json_line())).collect::<Vec<_>>().join("\n")
    };
    let mut text = format!(
        "killed after {} answered lines, the reopened store matches neither the state before nor after the running operation\n  found:\n{}\n  before:\n{}",
        run.finished,
        lines(&run.observed),
        lines(before)
    );
    if let Some(after) = after {
        text.push_str(&format!("\n  after:\n{}", lines(after)));
    }
    text
}

/// Invariants 1 to 6 as far as one state shows them: attempts within budget, a reason for
/// every dead job and only for dead jobs, a reservation exactly for open jobs, and a
/// pending job's reservation before its deadline.
fn check_invariants(observed: &[Response]) -> Result<(), String> {
    for response in observed {
        let Response::Ok(Reply::Job(job)) = response else { continue };
        let open = matches!(job.status, Status::Pending | Status::Leased);
        let bad = if job.attempts > job.max_attempts {
            "attempts above max_attempts"
        } else if (job.status == Status::Dead) != job.dead_reason.is_some() {
            "dead without a reason, or a reason without dead"
        } else if open != job.available_at.is_some() {
            "available_at set on a finished job or missing on an open one"
        } else if job.status == Status::Pending && job.available_at.is_some_and(|at| at >= job.deadline) {
            "a pending job reserved at or after its deadline"
        } else {
            continue;
        };
        return Err(format!("invariant broken ({bad}): {}", response.to_json_line()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kill between a `run_once`'s claim and its completion leaves its job claimed from the
    /// queues the line serves: here `q1`, where the only job is, which a claim of the default
    /// queue alone would not take.
    #[test]
    fn a_run_once_killed_after_its_claim_is_judged_claimed_from_its_own_queues() {
        let trace = Trace::from_jsonl(
            r#"{"op":"enqueue","id":"c","payload":"p","max_attempts":2,"deadline":122,"now":44,"queue":"q1"}
{"op":"run_once","worker":"w1","now":44,"outcome":"retryable","jitter":1.0,"queues":["q1","default"]}"#,
        );
        let mut claimed = model_after(&trace, 1);
        claimed.step(&Op::Claim { worker: "w1".into(), now: 44, queues: Some(vec!["q1".into()]) });
        let run = Run { finished: 1, observed: observe_model(&claimed, &trace) };
        assert!(matches!(judge(&trace, &run), Ok(Judged::Claimed)));
    }
}
