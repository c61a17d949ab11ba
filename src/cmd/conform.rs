//! `retryq conform`: the SQLite queue against the reference model, on traces nobody wrote
//! by hand — saved regressions first, then generated traces, then (with `--crash`) killed
//! processes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
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
    #[arg(long)]
    memory: bool,
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
    let storage = if args.memory { Storage::Memory } else { Storage::File };
    let setup = Setup::new(storage);
    if let Some(path) = &args.trace {
        return one_trace(path, &setup);
    }
    let dir = args.regressions.clone().unwrap_or_else(super::default_traces);
    let seed = args.seed.unwrap_or_else(clock_seed);
    outln!("retryq conform: seed {seed}, {} storage", if args.memory { "in-memory" } else { "file" })?;

    let regressions = run::regressions(&dir, &setup)?;
    report("regressions", &regressions)?;
    if let Some(mismatch) = &regressions.mismatch {
        print_mismatch(mismatch)?;
        return Ok(ExitCode::FAILURE);
    }

    let bar = progress(u64::from(args.cases));
    let threads = args.threads.map_or_else(|| run::default_threads(storage), usize::from);
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
        let bar = progress(runs);
        let crash = retryq_conformance::crash::kill_runs(&program, runs, seed, &|| bar.inc(1))?;
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

fn progress(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} traces, {per_sec}, eta {eta}") {
        bar.set_style(style);
    }
    bar
}

fn clock_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}
