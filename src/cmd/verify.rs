//! `retryq verify`: the main job. Every check the project can run on its own claims, one
//! summary table, one exit status.
//!
//! Each stage returns a [`Row`]; a stage that cannot run at all (say, its directory is
//! missing) is a failed row, not a skipped one.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use retryq_conformance::regress::{self, Verdict};
use retryq_model::Bug;
use retryq_model::checker::Status;
use retryq_model::model::{Bounds, QueueModel};

use super::CliError;

#[derive(clap::Args)]
pub struct Args {
    /// The directory of saved regression traces (NAME.jsonl beside NAME.expected.jsonl).
    #[arg(long, value_name = "DIR")]
    traces: Option<PathBuf>,
}

/// One line of the summary.
struct Row {
    stage: &'static str,
    checked: String,
    /// `Ok(summary)` or `Err(first problem)`.
    verdict: Result<String, String>,
    seconds: f64,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let traces = args.traces.unwrap_or_else(default_traces);
    let rows = vec![timed(|| regressions(&traces)), timed(model_check), timed(seeded_bugs)];
    print_summary(&rows);
    Ok(if rows.iter().all(|r| r.verdict.is_ok()) { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `tests/traces` under the working directory, or else under this checkout.
fn default_traces() -> PathBuf {
    let here = PathBuf::from("tests/traces");
    if here.is_dir() { here } else { Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/traces") }
}

fn timed(stage: impl FnOnce() -> Row) -> Row {
    let start = Instant::now();
    let mut row = stage();
    row.seconds = start.elapsed().as_secs_f64();
    row
}

/// Every saved regression trace against a fresh temporary database file.
fn regressions(dir: &Path) -> Row {
    let mut row =
        Row { stage: "regressions", checked: String::new(), verdict: Ok(String::new()), seconds: 0.0 };
    let cases = match regress::discover(dir) {
        Ok(cases) if cases.is_empty() => {
            row.verdict = Err(format!("no traces in {}", dir.display()));
            return row;
        }
        Ok(cases) => cases,
        Err(e) => {
            row.verdict = Err(format!("{}: {e}", dir.display()));
            return row;
        }
    };
    let mut steps = 0;
    for case in &cases {
        match regress::check(case) {
            Ok(Verdict::Pass { steps: n }) => steps += n,
            Ok(Verdict::Mismatch { line, expected, actual }) => {
                row.verdict = Err(format!(
                    "{}: output line {line}\n    expected {expected}\n    actual   {actual}",
                    case.name
                ));
                break;
            }
            Err(e) => {
                row.verdict = Err(format!("{}: {e}", case.name));
                break;
            }
        }
    }
    row.checked = format!("{} traces, {steps} steps", cases.len());
    if row.verdict.is_ok() {
        row.verdict = Ok("all match".into());
    }
    row
}

/// The model of SPEC.md at the default bounds: every property holds, every example found.
fn model_check() -> Row {
    let model = QueueModel::new(Bounds::default(), None);
    let report = model.check(threads(), true);
    let checked = format!("{} states, {} properties", report.unique_states, report.findings.len());
    let verdict = match report.findings.iter().find(|f| f.status.is_failure()) {
        Some(f) => Err(format!("{}: {} (run `retryq check` for the trace)", f.name, f.status.name())),
        None => Ok("every property holds, every example found".into()),
    };
    Row { stage: "model check", checked, verdict, seconds: 0.0 }
}

/// Every seeded bug, at small bounds: each must be reported by the property meant to catch it.
fn seeded_bugs() -> Row {
    let mut missed = Vec::new();
    for bug in Bug::ALL {
        let report = QueueModel::new(Bounds::small_for(bug), Some(bug)).check(threads(), true);
        if report.finding(bug.caught_by()).map(|f| f.status) != Some(Status::Violated) {
            missed.push(bug.name());
        }
    }
    let checked = format!("{} bugs", Bug::ALL.len());
    let verdict = if missed.is_empty() {
        Ok("each caught by its property".into())
    } else {
        Err(format!("not caught: {}", missed.join(", ")))
    };
    Row { stage: "seeded bugs", checked, verdict, seconds: 0.0 }
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn print_summary(rows: &[Row]) {
    println!("{:<14} {:<34} {:>8}  result", "stage", "checked", "seconds");
    for row in rows {
        let (mark, text) = match &row.verdict {
            Ok(text) => ("ok", text),
            Err(text) => ("FAIL", text),
        };
        println!("{:<14} {:<34} {:>8.2}  {mark}: {text}", row.stage, row.checked, row.seconds);
    }
    let failed = rows.iter().filter(|r| r.verdict.is_err()).count();
    if failed == 0 {
        println!("verify: all {} stages pass", rows.len());
    } else {
        println!("verify: {failed} of {} stages FAILED", rows.len());
    }
}
