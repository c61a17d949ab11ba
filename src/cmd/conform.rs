//! `retryq conform`: the SQLite queue (or, with `--db`, the PostgreSQL one) against the
//! reference model, on traces nobody wrote by hand — saved regressions first, then generated
//! traces, then (with `--crash`) killed processes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use indicatif::style::ProgressTracker;
use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use retryq_conformance::crash::Target;
use retryq_conformance::pg::{self, Databases, Fresh};
use retryq_conformance::run::{self, Mismatch, Setup, Storage, Tally};
use retryq_conformance::trace::Trace;
use retryq_model::model::Bounds;

use super::CliError;
use crate::out::outln;

#[derive(clap::Args)]
pub struct Args {
    /// How many generated traces to run (two thirds proptest, one third quickcheck).
    #[arg(long, default_value_t = 2400, value_name = "N")]
    cases: u32,
    /// The generators' seed; a run is reproduced by its seed. Default: from the clock.
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// The longest generated trace, in steps.
    #[arg(long, default_value_t = 40, value_name = "L", value_parser = clap::value_parser!(u16).range(1..=1000))]
    max_len: u16,
    /// Run every path the model checker explores up to this depth as a trace as well.
    #[arg(long, value_name = "D")]
    depth: Option<u16>,
    /// In-memory databases (faster; `restart` keeps the connection) instead of files.
    #[arg(long, conflicts_with = "db")]
    memory: bool,
    /// Run against PostgreSQL instead: each trace gets an empty database of its own on the
    /// server this URL names (its user must be allowed to create databases; the run drops
    /// them when it ends).
    #[arg(long, value_name = "URL")]
    db: Option<String>,
    /// Also kill this many `retryq replay` processes at random points and check the files
    /// they leave.
    #[arg(long, value_name = "N")]
    crash: Option<u64>,
    /// Replay this one trace against both readings instead, and show where they differ.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cases", "seed", "depth", "crash"])]
    trace: Option<PathBuf>,
    /// How many traces to run at once (default: 4 per core on files, 1 per core in memory).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: Option<u16>,
    /// Where regressions live (replayed first) and where a new one is saved.
    #[arg(long, value_name = "DIR")]
    regressions: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let storage = match &args.db {
        Some(url) => Storage::Postgres(server(url)?),
        None if args.memory => Storage::Memory,
        None => Storage::File,
    };
    let setup = Setup::new(storage.clone());
    if let Some(path) = &args.trace {
        return one_trace(path, &setup);
    }
    let dir = args.regressions.clone().unwrap_or_else(super::default_traces);
    let seed = args.seed.unwrap_or_else(clock_seed);
    outln!("retryq conform: seed {seed}, {} storage", storage.name())?;

    let regressions = run::regressions(&dir, &setup)?;
    report("regressions", &regressions)?;
    if let Some(mismatch) = &regressions.mismatch {
        print_mismatch(mismatch)?;
        return Ok(ExitCode::FAILURE);
    }

    let bar = progress(u64::from(args.cases), "traces");
    let threads = args.threads.map_or_else(|| run::default_threads(&storage), usize::from);
    let random = run::random(args.cases, seed, usize::from(args.max_len), &setup, threads, &|| bar.inc(1))?;
    bar.finish_and_clear();
    report("generated", &random)?;
    if let Some(mismatch) = &random.mismatch {
        print_mismatch(mismatch)?;
        let name = format!("conform-{}-seed-{seed}", mismatch.source);
        let saved = run::save_regression(mismatch, &dir, &name, &setup)?;
        outln!("saved the minimal trace as {}", saved.display())?;
        return Ok(ExitCode::FAILURE);
    }

    if let Some(depth) = args.depth {
        let bar = ProgressBar::new_spinner();
        let coverage = retryq_conformance::exhaustive::exhaustive(
            Bounds::default(),
            usize::from(depth),
            &setup,
            threads,
            &|| bar.inc(1),
        )?;
        bar.finish_and_clear();
        report("exhaustive", &coverage.tally)?;
        outln!(
            "{:<12} {} model states within {depth} actions, each reached by a replayed path",
            "",
            coverage.states
        )?;
        if let Some(mismatch) = &coverage.tally.mismatch {
            print_mismatch(mismatch)?;
            let saved =
                run::save_regression(mismatch, &dir, &format!("conform-exhaustive-depth-{depth}"), &setup)?;
            outln!("saved the trace as {}", saved.display())?;
            return Ok(ExitCode::FAILURE);
        }
    }

    if let Some(runs) = args.crash {
        let program = std::env::current_exe()?;
        let bar = progress(runs, "kills");
        let target = match &storage {
            Storage::Postgres(databases) => Target::Postgres(databases.clone()),
            Storage::File | Storage::Memory => Target::Files,
        };
        let crash = retryq_conformance::crash::kill_runs_on(&program, &target, runs, seed, &|| bar.inc(1))?;
        bar.finish_and_clear();
        outln!(
            "{:<12} {} kills, {:.1} lines answered on average before each ({} mid-trace: {} found the state before the running operation, {} after it, {} a run_once claimed but not completed) in {:.1}s",
            "crash",
            crash.runs,
            crash.answered as f64 / crash.runs.max(1) as f64,
            crash.mid_trace,
            crash.before,
            crash.after,
            crash.claimed,
            crash.seconds
        )?;
        if let Some(problem) = crash.problem {
            outln!("MISMATCH after a kill:\n{problem}")?;
            return Ok(ExitCode::FAILURE);
        }
    }
    outln!("conform: no mismatch")?;
    Ok(ExitCode::SUCCESS)
}

/// The server `--db` names, checked at once: a URL that is not PostgreSQL's, or a server
/// that cannot be reached with it, is said before anything runs.
fn server(url: &str) -> Result<std::sync::Arc<Databases>, CliError> {
    if !pg::is_url(url) {
        return Err(CliError::flag(
            "--db",
            "must be a postgres:// or postgresql:// URL (on SQLite, conform makes its own files)",
        ));
    }
    Databases::new(url, Fresh::Reset)
        .map_err(|e| CliError::Database(format!("--db {}: {e}", retryq::redacted(url))))
}

fn one_trace(path: &Path, setup: &Setup) -> Result<ExitCode, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Other(format!("cannot read trace {}: {e}", path.display())))?;
    let trace = Trace::from_jsonl(&text);
    match run::check_trace(&trace, setup)? {
        None => {
            outln!(
                "{}: {} steps, both readings agree on every step and every probe",
                path.display(),
                trace.len()
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Some(divergence) => {
            outln!("{}: the readings diverge\n{divergence}", path.display())?;
            Ok(ExitCode::FAILURE)
        }
    }
}

fn report(what: &str, tally: &Tally) -> Result<(), CliError> {
    outln!(
        "{what:<12} {} traces, {} steps, {} mismatches, {:.1}s, {:.0} traces/s",
        tally.traces,
        tally.steps,
        u8::from(tally.mismatch.is_some()),
        tally.seconds,
        tally.traces_per_second()
    )
}

fn print_mismatch(mismatch: &Mismatch) -> Result<(), CliError> {
    outln!("MISMATCH ({}):\n{}", mismatch.source, mismatch.divergence)?;
    outln!("minimal trace:\n{}", mismatch.trace.to_jsonl(""))
}

/// A bar counting `unit`s, with a rate and a time left once [`Eta`] has one.
fn progress(total: u64, unit: &'static str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let template = format!("{{bar:40}} {{pos}}/{{len}} {unit}{{eta}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.with_key("eta", Eta { unit, warm: None }));
    }
    bar
}

/// A phase (the warm-up, then the first measure) lasts at least this many items …
const PHASE_ITEMS: u64 = 10;
/// … and this share of them (1 in 20) …
const PHASE_SHARE: u64 = 20;
/// … and this long.
const PHASE_TIME: Duration = Duration::from_secs(1);

/// The time left, from the rate since a warm-up.
///
/// The first traces are the least representative (threads starting, files created, the
/// shortest traces finishing first): a rate that includes them, or one over the last few
/// moments, is off by several times, and indicatif's own estimate said minutes, then
/// seconds, in the first moments of a run. So nothing is estimated during a warm-up, and
/// then only from what was done after it, once that too is a fair share of the work.
#[derive(Debug, Clone)]
struct Eta {
    unit: &'static str,
    /// Items done and time elapsed when the warm-up ended.
    warm: Option<(u64, Duration)>,
}

/// How fast the work goes and how long the rest will take.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Estimate {
    per_sec: f64,
    left: Duration,
}

/// Whether `done` items over `elapsed` make a phase of a run of `total`.
fn phase_done(done: u64, total: u64, elapsed: Duration) -> bool {
    done >= PHASE_ITEMS.max(total / PHASE_SHARE) && elapsed >= PHASE_TIME
}

impl Eta {
    /// Notes the end of the warm-up, the first time it is seen.
    fn observe(&mut self, done: u64, total: u64, elapsed: Duration) {
        if self.warm.is_none() && phase_done(done, total, elapsed) {
            self.warm = Some((done, elapsed));
        }
    }

    /// The rate since the warm-up and the time left at it; `None` until that rate has been
    /// measured over a phase of its own.
    fn estimate(&self, done: u64, total: u64, elapsed: Duration) -> Option<Estimate> {
        let (warm_done, warm_elapsed) = self.warm?;
        let (since, over) = (done.saturating_sub(warm_done), elapsed.saturating_sub(warm_elapsed));
        if !phase_done(since, total, over) {
            return None;
        }
        let per_sec = since as f64 / over.as_secs_f64();
        let left = total.saturating_sub(done) as f64 / per_sec;
        // Whole seconds: the estimate is not more precise than that.
        Some(Estimate { per_sec, left: Duration::from_secs(left.round() as u64) })
    }
}

impl ProgressTracker for Eta {
    fn clone_box(&self) -> Box<dyn ProgressTracker> {
        Box::new(self.clone())
    }

    fn tick(&mut self, state: &ProgressState, _: Instant) {
        self.observe(state.pos(), state.len().unwrap_or(state.pos()), state.elapsed());
    }

    fn reset(&mut self, _: &ProgressState, _: Instant) {
        self.warm = None;
    }

    fn write(&self, state: &ProgressState, w: &mut dyn std::fmt::Write) {
        let total = state.len().unwrap_or(state.pos());
        let unit = self.unit;
        // The bar is best effort: a line that cannot be formatted is left short.
        let _ = match self.estimate(state.pos(), total, state.elapsed()) {
            Some(e) => write!(w, ", {:.0} {unit}/s, eta {}", e.per_sec, humantime::format_duration(e.left)),
            None if state.pos() >= total => Ok(()),
            None => write!(w, ", estimating the time left"),
        };
    }
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn nothing_is_estimated_during_the_warm_up_or_the_first_measure() {
        let mut eta = Eta { unit: "traces", warm: None };
        // Warm-up: 120 of 2400 (1 in 20) and a second.
        eta.observe(500, 2400, secs(0.5));
        eta.observe(100, 2400, secs(3.0));
        assert_eq!(eta.warm, None, "too early, then too few");
        eta.observe(120, 2400, secs(4.0));
        assert_eq!(eta.warm, Some((120, secs(4.0))));
        eta.observe(200, 2400, secs(5.0));
        assert_eq!(eta.warm, Some((120, secs(4.0))), "the warm-up ends once");
        // The measure: another 120 and another second after it.
        assert_eq!(eta.estimate(200, 2400, secs(5.0)), None);
        assert_eq!(eta.estimate(400, 2400, secs(4.5)), None);
        assert!(eta.estimate(240, 2400, secs(5.0)).is_some());
        // A run too short for both phases is never estimated.
        let mut short = Eta { unit: "kills", warm: None };
        for done in 0..=5 {
            short.observe(done, 5, secs(done as f64));
            assert_eq!(short.estimate(done, 5, secs(done as f64)), None);
        }
    }

    #[test]
    fn a_slow_start_does_not_skew_the_estimate() {
        // 20 traces in the first 2 s, then 100 a second: 2400 end at 25.8 s.
        let at = |done: u64| if done <= 20 { done as f64 / 10.0 } else { 2.0 + (done - 20) as f64 / 100.0 };
        let mut eta = Eta { unit: "traces", warm: None };
        let mut first = None;
        for done in 1..=2400 {
            eta.observe(done, 2400, secs(at(done)));
            if let Some(e) = eta.estimate(done, 2400, secs(at(done))) {
                first.get_or_insert((done, e));
                let end = at(done) + e.left.as_secs_f64();
                assert!((end - 25.8).abs() <= 1.0, "at {done}: ends at {end}");
            }
        }
        let (done, e) = first.expect("estimated at some point");
        assert_eq!(done, 240, "after a warm-up of 120 and a measure of 120");
        assert!((e.per_sec - 100.0).abs() < 1e-6, "{e:?}");
    }
}
