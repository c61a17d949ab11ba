//! `retryq verify`: the main job. Every check the project can run on its own claims, one
//! summary table, one exit status.
//!
//! Each stage returns a [`Row`]; a stage that cannot run at all (say, its directory is
//! missing) is a failed row, not a skipped one.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use retryq_conformance::run::{self, Setup, Storage, Tally};
use retryq_conformance::{ReplayError, crash, exhaustive};
use retryq_model::Bug;
use retryq_model::checker::Status;
use retryq_model::model::{Bounds, QueueModel};

use super::CliError;
use crate::out::outln;

#[derive(clap::Args)]
pub struct Args {
    /// The directory of saved regression traces (NAME.jsonl beside NAME.expected.jsonl).
    #[arg(long, value_name = "DIR")]
    traces: Option<PathBuf>,
    /// The generators' seed. Fixed by default, so that the main job is repeatable; vary it
    /// (or run `retryq conform`, whose seed comes from the clock) to explore further.
    #[arg(long, default_value_t = 1, value_name = "S")]
    seed: u64,
    /// How many generated traces to replay on both readings.
    #[arg(long, default_value_t = 2400, value_name = "N")]
    cases: u32,
    /// How deep the exhaustive replay of the model's paths goes.
    #[arg(long, default_value_t = 6, value_name = "D", value_parser = clap::value_parser!(u16).range(0..=12))]
    depth: u16,
    /// How many replay processes to kill at random points.
    #[arg(long, default_value_t = 40, value_name = "N")]
    kills: u64,
    /// Print one JSON object instead of the table: every stage's counts, verdict and
    /// seconds, and what the run was measured on (date, commit, machine).
    #[arg(long)]
    json: bool,
}

/// One line of the summary.
struct Row {
    stage: &'static str,
    checked: String,
    /// What `checked` says, as numbers: for `--json`.
    counts: Vec<(&'static str, u64)>,
    /// `Ok(summary)` or `Err(first problem)`.
    verdict: Result<String, String>,
    seconds: f64,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let traces = args.traces.unwrap_or_else(super::default_traces);
    let log = &mut std::io::stderr();
    let rows = vec![
        timed("model check", model_check, log),
        timed("seeded bugs", seeded_bugs, log),
        timed("regressions", || regressions(&traces), log),
        timed("exhaustive", || exhaustive(args.depth), log),
        timed("generated", || generated(args.cases, args.seed), log),
        timed("crash", || crashes(args.kills, args.seed), log),
    ];
    if args.json {
        print_json(&rows)?;
    } else {
        print_summary(&rows)?;
    }
    Ok(if rows.iter().all(|r| r.verdict.is_ok()) { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Runs one stage, with a line on `log` (stderr) as it starts and as it ends: a stage may
/// run for minutes, and the summary comes only at the end. Written whether or not stderr is
/// a terminal, so that CI's log shows where a long run is; a log that cannot be written is
/// not a reason to stop checking.
fn timed(name: &str, stage: impl FnOnce() -> Row, log: &mut dyn Write) -> Row {
    let _ = writeln!(log, "verify: {name}: started");
    let start = Instant::now();
    let mut row = stage();
    row.seconds = start.elapsed().as_secs_f64();
    let verdict = match &row.verdict {
        Ok(_) => "ok",
        Err(_) => "FAILED",
    };
    let _ = writeln!(log, "verify: {name}: {verdict} in {:.1} s", row.seconds);
    row
}

/// Every saved regression trace against a fresh temporary database file: its expected
/// output, and the reference model step by step.
fn regressions(dir: &Path) -> Row {
    conformance_row("regressions", run::regressions(dir, &Setup::new(Storage::File)), |t| {
        (format!("{} traces, {} steps", t.traces, t.steps), vec![("traces", t.traces), ("steps", t.steps)])
    })
}

/// Every path the model checker explores within `depth` actions, replayed in memory.
fn exhaustive(depth: u16) -> Row {
    let result = exhaustive::exhaustive(
        Bounds::default(),
        usize::from(depth),
        &Setup::new(Storage::Memory),
        threads(),
        &|| {},
    );
    match result {
        Ok(coverage) => {
            let states = coverage.states;
            conformance_row("exhaustive", Ok(coverage.tally), |t| {
                let checked = format!("{} paths to {states} states, depth {depth}", t.traces);
                (checked, vec![("paths", t.traces), ("states", states), ("depth", u64::from(depth))])
            })
        }
        Err(e) => conformance_row("exhaustive", Err(e), |_| (String::new(), Vec::new())),
    }
}

/// Generated traces from both generators, on database files.
fn generated(cases: u32, seed: u64) -> Row {
    let result =
        run::random(cases, seed, 40, &Setup::new(Storage::File), run::default_threads(Storage::File), &|| {});
    conformance_row("generated", result, |t| {
        let checked = format!("{} traces, {} steps, seed {seed}", t.traces, t.steps);
        (checked, vec![("traces", t.traces), ("steps", t.steps), ("seed", seed)])
    })
}

/// `retryq replay` processes killed with SIGKILL at random points.
fn crashes(kills: u64, seed: u64) -> Row {
    let mut row = Row {
        stage: "crash",
        checked: String::new(),
        counts: Vec::new(),
        verdict: Ok(String::new()),
        seconds: 0.0,
    };
    let program = match std::env::current_exe() {
        Ok(program) => program,
        Err(e) => {
            row.verdict = Err(format!("cannot find this program to run it as a child: {e}"));
            return row;
        }
    };
    match crash::kill_runs(&program, kills, seed, &|| {}) {
        Ok(tally) => {
            row.checked = format!("{} kills, {} mid-trace", tally.runs, tally.mid_trace);
            row.counts = vec![
                ("kills", tally.runs),
                ("mid_trace", tally.mid_trace),
                ("before", tally.before),
                ("after", tally.after),
                ("claimed_only", tally.claimed),
            ];
            row.verdict = match tally.problem {
                None => Ok(format!(
                    "before {}, after {}, claimed-only {}; never a mixture",
                    tally.before, tally.after, tally.claimed
                )),
                Some(problem) => Err(problem),
            };
        }
        Err(e) => row.verdict = Err(e.to_string()),
    }
    row
}

/// A row from a conformance tally: the first mismatch, shrunk, is the failure.
fn conformance_row(
    stage: &'static str,
    result: Result<Tally, ReplayError>,
    checked: impl Fn(&Tally) -> (String, Vec<(&'static str, u64)>),
) -> Row {
    let mut row =
        Row { stage, checked: String::new(), counts: Vec::new(), verdict: Ok(String::new()), seconds: 0.0 };
    match result {
        Ok(tally) => {
            (row.checked, row.counts) = checked(&tally);
            row.verdict = match tally.mismatch {
                None => Ok("SQLite and the model agree on every step".into()),
                Some(m) => Err(format!(
                    "{} found a divergence:\n{}\n  trace:\n{}",
                    m.source,
                    m.divergence,
                    m.trace.to_jsonl("")
                )),
            };
        }
        Err(e) => row.verdict = Err(e.to_string()),
    }
    row
}

fn model_check() -> Row {
    let model = QueueModel::new(Bounds::default(), None);
    let report = model.check(threads(), true);
    let checked = format!(
        "{} states, {} properties, {} cells",
        report.unique_states,
        report.findings.len(),
        report.cells.len()
    );
    let unreached = super::check::unreached(&report, false);
    let verdict = match (report.findings.iter().find(|f| f.status.is_failure()), unreached.first()) {
        (Some(f), _) => Err(format!("{}: {} (run `retryq check` for the trace)", f.name, f.status.name())),
        (None, Some(cell)) => Err(format!("{cell} not reached (run `retryq check --coverage`)")),
        (None, None) => Ok("every property holds, every example found, every cell reached".into()),
    };
    let counts = vec![
        ("states", report.unique_states as u64),
        ("properties", report.findings.len() as u64),
        ("cells", report.cells.len() as u64),
    ];
    Row { stage: "model check", checked, counts, verdict, seconds: 0.0 }
}

/// Every seeded bug, at small bounds: each must be reported by the property meant to catch it.
fn seeded_bugs() -> Row {
    let mut missed = Vec::new();
    for bug in Bug::ALL {
        let report = QueueModel::new(Bounds::small_for(bug), Some(bug)).show_bug(threads());
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
    let counts = vec![("bugs", Bug::ALL.len() as u64), ("caught", (Bug::ALL.len() - missed.len()) as u64)];
    Row { stage: "seeded bugs", checked, counts, verdict, seconds: 0.0 }
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn print_json(rows: &[Row]) -> Result<(), CliError> {
    outln!("{}", super::json_text(&json_report(rows))?)
}

/// `--json`: `{"stages":[{"stage","checked","counts":{…},"ok","result","seconds"}…],"pass",
/// "measured"}`.
fn json_report(rows: &[Row]) -> serde_json::Value {
    let stages: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            let counts: serde_json::Map<String, serde_json::Value> =
                row.counts.iter().map(|(name, n)| ((*name).to_owned(), (*n).into())).collect();
            let (ok, result) = match &row.verdict {
                Ok(text) => (true, text),
                Err(text) => (false, text),
            };
            serde_json::json!({
                "stage": row.stage,
                "checked": row.checked,
                "counts": counts,
                "ok": ok,
                "result": result,
                "seconds": (row.seconds * 10.0).round() / 10.0,
            })
        })
        .collect();
    serde_json::json!({
        "stages": stages,
        "pass": rows.iter().all(|r| r.verdict.is_ok()),
        "measured": crate::measured::Measured::now(),
    })
}

fn print_summary(rows: &[Row]) -> Result<(), CliError> {
    let wide = rows.iter().map(|r| r.checked.len()).max().unwrap_or(0).max("checked".len());
    outln!("{:<12} {:<wide$} {:>8}  result", "stage", "checked", "seconds")?;
    for row in rows {
        let (mark, text) = match &row.verdict {
            Ok(text) => ("ok", text),
            Err(text) => ("FAIL", text),
        };
        outln!("{:<12} {:<wide$} {:>8.1}  {mark}: {text}", row.stage, row.checked, row.seconds)?;
    }
    let failed = rows.iter().filter(|r| r.verdict.is_err()).count();
    if failed == 0 {
        outln!("verify: all {} stages pass", rows.len())
    } else {
        outln!("verify: {failed} of {} stages FAILED", rows.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(stage: &'static str, counts: Vec<(&'static str, u64)>, verdict: Result<String, String>) -> Row {
        Row { stage, checked: "what".into(), counts, verdict, seconds: 1.26 }
    }

    #[test]
    fn each_stage_says_when_it_starts_and_how_it_ended() {
        let mut log = Vec::new();
        let passed = timed("crash", || row("crash", Vec::new(), Ok("fine".into())), &mut log);
        let failed = timed("exhaustive", || row("exhaustive", Vec::new(), Err("differs".into())), &mut log);
        assert!(passed.verdict.is_ok() && failed.verdict.is_err());
        let log = String::from_utf8(log).expect("utf-8");
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 4, "{log}");
        assert_eq!(lines[0], "verify: crash: started");
        assert!(lines[1].starts_with("verify: crash: ok in ") && lines[1].ends_with(" s"), "{log}");
        assert_eq!(lines[2], "verify: exhaustive: started");
        assert!(lines[3].starts_with("verify: exhaustive: FAILED in "), "{log}");
    }

    #[test]
    fn the_json_report_gives_each_stages_counts_and_fails_with_any_stage() {
        let rows = [
            row("model check", vec![("states", 3_180_817), ("properties", 62)], Ok("holds".into())),
            row("crash", vec![("kills", 40)], Ok("never a mixture".into())),
        ];
        let json = json_report(&rows);
        assert_eq!(json["pass"], true);
        assert_eq!(json["stages"][0]["counts"]["states"], 3_180_817);
        assert_eq!(json["stages"][0]["counts"]["properties"], 62);
        assert_eq!(json["stages"][1]["stage"], "crash");
        assert_eq!(json["stages"][1]["seconds"], 1.3);
        assert_eq!(json["measured"]["commit"], env!("RETRYQ_COMMIT"));
        let failed = [row("generated", vec![], Err("a divergence".into()))];
        let json = json_report(&failed);
        assert_eq!((json["pass"].clone(), json["stages"][0]["ok"].clone()), (false.into(), false.into()));
        assert_eq!(json["stages"][0]["result"], "a divergence");
    }
}
