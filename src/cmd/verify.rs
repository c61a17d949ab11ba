//! `retryq verify`: the main job. Every check the project can run on its own claims, one
//! summary table, one exit status.
//!
//! Each stage returns a [`Row`]; a stage that cannot run at all (say, its directory is
//! missing) is a failed row, not a skipped one.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use retryq_conformance::regress::{self, Verdict};

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
    let traces = args.traces.unwrap_or_else(super::default_traces);
    let rows = vec![timed(|| regressions(&traces))];
    print_summary(&rows);
    Ok(if rows.iter().all(|r| r.verdict.is_ok()) { ExitCode::SUCCESS } else { ExitCode::FAILURE })
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
