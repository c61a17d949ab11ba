//! One measured step of the scale benchmark, in a child process: the `retryq` binary again,
//! as a hidden subcommand that calls [`step_main`] with a [`StepSpec`].
//!
//! A child because an operation that does not end at ten million jobs (as an older schema's
//! audit, quadratic before schema 5's code, did not) must not hang the benchmark, and SQLite
//! cannot be interrupted from outside the connection that runs the statement: the parent
//! kills a step that outlives its time limit, or grows past its memory limit, and reports so
//! instead of hanging. The child opens the store before it starts its clock, so a
//! figure is the operation's cost alone, never the process's start or the store's open (but
//! for [`StepOp::Upgrade`], whose operation is the open). Every cheap operation runs once
//! untimed first, so that the first timed run does not pay for a cold cache alone.

use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use retryq::{Backend, Completion, DeadReason, Enqueued, NewJob, OpenOptions, Outcome, Queue, Status};
use serde::{Deserialize, Serialize};

use super::mix::{DAY, Mix};
use crate::BenchError;
use crate::throughput::{Launcher, now_ms};

/// What one child measures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepSpec {
    /// The store: a SQLite file or a PostgreSQL URL.
    pub db: String,
    /// The operation.
    pub op: StepOp,
    /// Timed runs (a step that touches many jobs may stop early: see [`StepOp`]).
    pub reps: usize,
}

/// The operations a step times.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum StepOp {
    /// A claim of the next due job of `queue` at the wall clock, then the completion `ok` of
    /// the job it leased: two series, `claim` and `complete`.
    ClaimComplete {
        /// The queue served.
        queue: String,
    },
    /// One new job per run, ids `PREFIX-N`.
    Enqueue {
        /// Makes the ids new.
        prefix: String,
    },
    /// A bulk import per run: `jobs` new jobs (ids `PREFIX-RUN-N`) through
    /// [`Backend::enqueue_bulk`], handed over [`IMPORT_SLICE`] at a time as `retryq enqueue
    /// --file` hands over its lines. Every answer must be `New`.
    Import {
        /// Makes the ids new.
        prefix: String,
        /// Jobs per run.
        jobs: u64,
    },
    /// `stats` of the whole store at the wall clock.
    Stats,
    /// `list`: a page of `limit` jobs of `status` (dead ones of `reason`, if given), each
    /// in the word the command line takes.
    List {
        /// The status listed.
        status: String,
        /// The dead reason, if any.
        reason: Option<String>,
        /// The page's size.
        limit: u32,
    },
    /// Reaps at `now` in pieces, as `retryq reap` does: a reap ends at most the store's
    /// `reap_limit` jobs, and the next piece follows until one ends fewer. One run; each
    /// piece's time is reported too.
    Reap {
        /// The reap's `now`: a cohort's deadline.
        now: u64,
    },
    /// One `prune(before, now)`, or `prune_at_most(before, now, limit)`: one run.
    Prune {
        /// Ended at or before this is pruned.
        before: u64,
        /// At most about this many, if given.
        limit: Option<u64>,
        /// The prune's `now`.
        now: u64,
    },
    /// `audit`, on a store opened read-only when `read_only` (an older schema is then read as
    /// it is, not upgraded). Runs stop once they have taken a minute in all.
    Audit {
        /// Open without writing (SQLite).
        read_only: bool,
    },
    /// A read-write open of the store, which upgrades an older schema in place: one run.
    Upgrade,
}

/// What a child prints: microseconds per run of each series, and how many jobs each run
/// touched, where that is the measure.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StepOutput {
    /// Each series by name, its runs in microseconds.
    pub series: Vec<(String, Vec<f64>)>,
    /// Jobs each run touched (reaped, pruned, audited); empty for per-operation steps.
    pub touched: Vec<u64>,
    /// What went wrong without stopping the step (an audit's violations).
    pub problem: Option<String>,
    /// A reap's pieces: microseconds each, in order (empty for every other step).
    #[serde(default)]
    pub pieces: Vec<f64>,
}

/// How many jobs one call of [`Backend::enqueue_bulk`] is handed in an import: what `retryq
/// enqueue --file` hands it (its block of lines).
pub const IMPORT_SLICE: usize = 10_000;

/// Audits stop repeating once their runs took this long in all.
const AUDIT_BUDGET: Duration = Duration::from_secs(60);

/// The child's side: opens the store, runs the step, prints one JSON line. It is killed if
/// the benchmark that started it ends first (a step of ten million jobs may run for hours).
pub fn step_main(spec: &str) -> Result<(), BenchError> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(std::io::Error::from)?;
    let spec: StepSpec = serde_json::from_str(spec)?;
    let output = run(&spec)?;
    println!("{}", serde_json::to_string(&output)?);
    Ok(())
}

fn micros(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e6
}

fn run(spec: &StepSpec) -> Result<StepOutput, BenchError> {
    let reps = spec.reps.max(1);
    let mut out = StepOutput::default();
    match &spec.op {
        StepOp::Upgrade => {
            let started = Instant::now();
            drop(retryq::open_backend(&spec.db)?);
            out.series.push(("upgrade".into(), vec![micros(started)]));
            return Ok(out);
        }
        StepOp::Audit { read_only: true } if !retryq::is_conninfo(&spec.db) && !is_url(&spec.db) => {
            let options = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
            let store = Queue::open_with(&spec.db, &options)?;
            audit(&store, reps, &mut out)?;
            return Ok(out);
        }
        _ => {}
    }
    let mut store = retryq::open_backend(&spec.db)?;
    let store = store.as_mut();
    match &spec.op {
        StepOp::ClaimComplete { queue } => {
            let (mut claims, mut completes) = (Vec::new(), Vec::new());
            for rep in 0..=reps {
                let now = now_ms()?;
                let started = Instant::now();
                let claimed = store.claim_from("bench", &[queue], now)?;
                let claim = micros(started);
                let claimed =
                    claimed.ok_or_else(|| BenchError::Setup(format!("no job of {queue} was due")))?;
                let now = now_ms()?.max(now);
                let started = Instant::now();
                store.complete(&Completion::new(&claimed.lease, Outcome::Ok, now, 0.0))?;
                if rep > 0 {
                    claims.push(claim);
                    completes.push(micros(started));
                }
            }
            out.series.push(("claim".into(), claims));
            out.series.push(("complete".into(), completes));
        }
        StepOp::Enqueue { prefix } => {
            let mut runs = Vec::new();
            for rep in 0..=reps {
                let id = format!("{prefix}-{rep}");
                let payload = Mix::payload(rep as u64);
                let now = now_ms()?;
                let job = NewJob {
                    id: &id,
                    payload: &payload,
                    max_attempts: 3,
                    deadline: now + 90 * DAY,
                    now,
                    ..NewJob::default()
                };
                let started = Instant::now();
                store.enqueue(&job)?;
                if rep > 0 {
                    runs.push(micros(started));
                }
            }
            out.series.push(("enqueue".into(), runs));
        }
        StepOp::Import { prefix, jobs } => import(store, prefix, *jobs, reps, &mut out)?,
        StepOp::Stats => {
            let runs = repeat(reps, || {
                store.stats(now_ms()?)?;
                Ok(())
            })?;
            out.series.push(("stats".into(), runs));
        }
        StepOp::List { status, reason, limit } => {
            let word = |e: retryq::UnknownWord| BenchError::Setup(e.to_string());
            let status: Status = status.parse().map_err(word)?;
            let reason: Option<DeadReason> = reason.as_deref().map(str::parse).transpose().map_err(word)?;
            let runs = repeat(reps, || {
                store.list(status, reason, *limit)?;
                Ok(())
            })?;
            out.series.push(("list".into(), runs));
        }
        StepOp::Reap { now } => {
            let limit = store.settings().reap_limit;
            let started = Instant::now();
            let mut reaped = 0;
            loop {
                let piece = Instant::now();
                let n = store.reap(*now)?;
                out.pieces.push(micros(piece));
                reaped += n;
                if n < limit {
                    break;
                }
            }
            out.series.push(("reap".into(), vec![micros(started)]));
            out.touched.push(reaped);
        }
        StepOp::Prune { before, limit, now } => {
            let started = Instant::now();
            let pruned = match limit {
                Some(limit) => store.prune_at_most(*before, *now, *limit)?,
                None => store.prune(*before, *now)?,
            };
            out.series.push(("prune".into(), vec![micros(started)]));
            out.touched.push(pruned);
        }
        StepOp::Audit { .. } => audit(store, reps, &mut out)?,
        StepOp::Upgrade => unreachable!("handled above"),
    }
    Ok(out)
}

/// `reps` imports of `jobs` new jobs each, the jobs of each made before its clock starts:
/// due now, a 90-day time to live, the mix's queues and priorities, as an operator's file of
/// orders would hold them.
fn import(
    store: &mut dyn Backend,
    prefix: &str,
    jobs: u64,
    reps: usize,
    out: &mut StepOutput,
) -> Result<(), BenchError> {
    let mix = Mix::new(jobs, 0);
    let mut runs = Vec::with_capacity(reps);
    for run in 0..reps {
        let ids: Vec<String> = (0..jobs).map(|i| format!("{prefix}-{run}-{i}")).collect();
        let payloads: Vec<String> = (0..jobs).map(Mix::payload).collect();
        let planned: Vec<_> = (0..jobs).map(|i| mix.job(i)).collect();
        let now = now_ms()?;
        let new_jobs: Vec<NewJob<'_>> = planned
            .iter()
            .zip(ids.iter().zip(&payloads))
            .map(|(p, (id, payload))| NewJob {
                id,
                payload,
                max_attempts: 3,
                deadline: now + 90 * DAY,
                now,
                queue: Some(p.queue),
                priority: Some(p.priority),
                ..NewJob::default()
            })
            .collect();
        let mut answers = Vec::with_capacity(new_jobs.len());
        let started = Instant::now();
        for slice in new_jobs.chunks(IMPORT_SLICE) {
            store.enqueue_bulk(slice, &mut answers)?;
        }
        runs.push(micros(started));
        let new = answers.iter().filter(|a| matches!(a, Ok(Enqueued::New))).count();
        out.touched.push(new as u64);
        if new != new_jobs.len() {
            out.problem =
                Some(format!("{} of {} imported jobs were not new", new_jobs.len() - new, new_jobs.len()));
        }
    }
    out.series.push(("import".into(), runs));
    Ok(())
}

fn is_url(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// `reps` timed runs of `op` after one untimed.
fn repeat(reps: usize, mut op: impl FnMut() -> Result<(), BenchError>) -> Result<Vec<f64>, BenchError> {
    op()?;
    let mut runs = Vec::with_capacity(reps);
    for _ in 0..reps {
        let started = Instant::now();
        op()?;
        runs.push(micros(started));
    }
    Ok(runs)
}

/// Up to `reps` audits, fewer once they took [`AUDIT_BUDGET`]; an audit that finds anything
/// says so in `problem`.
fn audit(store: &dyn Backend, reps: usize, out: &mut StepOutput) -> Result<(), BenchError> {
    let begun = Instant::now();
    let mut runs = Vec::new();
    for _ in 0..reps {
        let started = Instant::now();
        let audit = store.audit()?;
        runs.push(micros(started));
        out.touched.push(audit.jobs);
        if !audit.is_clean() {
            let first: Vec<String> = audit.violations.iter().take(3).map(ToString::to_string).collect();
            out.problem =
                Some(format!("the audit found {} violations: {}", audit.violations.len(), first.join("; ")));
        }
        if begun.elapsed() >= AUDIT_BUDGET {
            break;
        }
    }
    out.series.push(("audit".into(), runs));
    Ok(())
}

/// The limits a child runs under.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Killed after this long.
    pub time: Duration,
    /// Killed once its resident memory passes this.
    pub memory_bytes: u64,
}

/// How a child ended.
#[derive(Debug)]
pub struct Supervised {
    /// Why it was killed, if it was: its time or its memory ran out.
    pub stopped: Option<String>,
    /// Its exit status, when it ended by itself.
    pub success: bool,
    /// What it printed.
    pub stdout: String,
    /// The last line it printed on standard error.
    pub last_error: String,
    /// Wall-clock seconds from its start to its end.
    pub seconds: f64,
    /// Its peak resident memory.
    pub peak_rss_bytes: Option<u64>,
}

/// Runs `command` to its end, or kills it once it passes `limits`. Its output goes to
/// unnamed files, so that a child that prints much never blocks on a full pipe.
pub fn supervise(command: &mut Command, limits: Limits) -> Result<Supervised, BenchError> {
    let mut stdout_file = tempfile::tempfile()?;
    let mut stderr_file = tempfile::tempfile()?;
    command.stdin(Stdio::null()).stdout(stdout_file.try_clone()?).stderr(stderr_file.try_clone()?);
    let started = Instant::now();
    let mut child = command.spawn()?;
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0;
    let mut stopped = None;
    let status = loop {
        if let Some((rss, hwm)) = memory_kib(&status_file) {
            peak_kib = peak_kib.max(hwm);
            if rss * 1024 > limits.memory_bytes {
                stopped = Some(format!("stopped: its memory passed {} MiB", limits.memory_bytes >> 20));
            }
        }
        if started.elapsed() > limits.time {
            stopped = Some(format!("stopped: not done after {:.0} s", limits.time.as_secs_f64()));
        }
        if stopped.is_some() {
            child.kill()?;
            break child.wait()?;
        }
        match child.try_wait()? {
            Some(status) => break status,
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let read = |file: &mut std::fs::File| -> Result<String, BenchError> {
        use std::io::Seek as _;
        file.rewind()?;
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        Ok(text)
    };
    Ok(Supervised {
        stopped,
        success: status.success(),
        stdout: read(&mut stdout_file)?,
        last_error: last_line(&read(&mut stderr_file)?),
        seconds,
        peak_rss_bytes: (peak_kib > 0).then_some(peak_kib * 1024),
    })
}

/// Runs `spec` in a child started by `launcher` under `limits`: its report, or why there is
/// none, and its peak memory.
pub fn launch(
    launcher: &Launcher,
    spec: &StepSpec,
    limits: Limits,
) -> Result<(Result<StepOutput, String>, Option<u64>), BenchError> {
    let mut command = Command::new(&launcher.program);
    command.args(&launcher.args).arg(serde_json::to_string(spec)?);
    let run = supervise(&mut command, limits)?;
    let output = match run.stopped {
        Some(why) => Err(why),
        None if !run.success => Err(format!("failed: {}", run.last_error)),
        None => serde_json::from_str(run.stdout.trim())
            .map_err(|e| format!("an unreadable report ({e}): {}", run.stdout.trim())),
    };
    Ok((output, run.peak_rss_bytes))
}

fn last_line(text: &str) -> String {
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message").trim().to_owned()
}

/// `VmRSS` and `VmHWM` of a running process, in KiB.
fn memory_kib(status_file: &str) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(status_file).ok()?;
    let field = |name: &str| -> Option<u64> {
        status.lines().find(|l| l.starts_with(name))?.split_whitespace().nth(1)?.parse().ok()
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}
