//! `retryq verify`: the main job. Every check the project can run on its own claims, one
//! summary table, one exit status.
//!
//! Each stage returns a [`Row`]; a stage that cannot run at all (say, its directory is
//! missing) is a failed row, not a skipped one. The one row that may be skipped is
//! PostgreSQL's, where PostgreSQL is not installed: the summary says so, and under CI (`CI`
//! set, as `.ci/run` sets it) the skip fails the run, as a skipped PostgreSQL test does.

mod meter;
mod postgres;
mod row;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use retryq_conformance::overlap::{Overlap, Store};
use retryq_conformance::run::{self, Setup, Storage};
use retryq_conformance::{crash, exhaustive};
use retryq_model::Bug;
use retryq_model::checker::Status;
use retryq_model::model::{Bounds, QueueModel};

use self::meter::Meter;
use self::row::{Row, Verdict, conformance_row};
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
    /// How many of the generated traces to replay on PostgreSQL too (the first of the same
    /// seed's), when it is installed.
    #[arg(long, default_value_t = 600, value_name = "N")]
    pg_cases: u32,
    /// Run only this stage (repeat the flag for more): `model-check`, `seeded-bugs`,
    /// `regressions`, `exhaustive`, `generated`, `crash`, `overlap` or `postgres`. All of them
    /// by default.
    #[arg(long = "stage", value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(STAGES))]
    stages: Vec<String>,
    /// Print one JSON object instead of the table: every stage's counts, verdict and
    /// seconds, and what the run was measured on (date, commit, machine).
    #[arg(long)]
    json: bool,
}

/// How long the overlap stage's trouble lasts (as in `tests/overlap.rs`); the drain after it
/// keeps the stage under half a minute.
const OVERLAP_TROUBLE: Duration = Duration::from_secs(12);

/// The stages, in the order they run, as `--stage` names them (a row's name with `-` for
/// its space).
const STAGES: [&str; 8] =
    ["model-check", "seeded-bugs", "regressions", "exhaustive", "generated", "crash", "overlap", "postgres"];

/// One stage: its row's name, the unit its meter counts, and the stage itself.
type Stage<'a> = (&'static str, &'static str, Box<dyn FnOnce(&Meter) -> Row + 'a>);

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let traces = args.traces.unwrap_or_else(super::default_traces);
    let log = &mut std::io::stderr();
    let terminal = std::io::stderr().is_terminal();
    let (depth, cases, pg_cases, seed, kills) =
        (args.depth, args.cases, args.pg_cases, args.seed, args.kills);
    let stages: [Stage<'_>; 8] = [
        ("model check", "states", Box::new(model_check)),
        ("seeded bugs", "bugs", Box::new(seeded_bugs)),
        ("regressions", "traces", Box::new(|_| regressions(&traces))),
        ("exhaustive", "paths", Box::new(move |m| exhaustive(depth, m))),
        ("generated", "traces", Box::new(move |m| generated(cases, seed, m))),
        ("crash", "kills", Box::new(move |m| crashes(kills, seed, m))),
        ("overlap", "events", Box::new(move |m| overlap(seed, m))),
        ("postgres", "traces", Box::new(move |m| postgres::stage(pg_cases, seed, MAX_LEN, m))),
    ];
    let rows: Vec<Row> = stages
        .into_iter()
        .filter(|(name, ..)| args.stages.is_empty() || args.stages.contains(&name.replace(' ', "-")))
        .map(|(name, unit, stage)| timed(name, unit, terminal, stage, log))
        .collect();
    if !args.stages.is_empty() && rows.is_empty() {
        return Err(CliError::Other(format!("--stage {}: no such stage", args.stages.join(", "))));
    }
    if args.json {
        print_json(&rows)?;
    } else {
        print_summary(&rows)?;
    }
    Ok(if passed(&rows, under_ci()) { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Whether this runs under CI (`CI` set), where a skipped stage is a failure.
fn under_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Whether the run passes: no stage failed, and (under CI) none was skipped.
fn passed(rows: &[Row], ci: bool) -> bool {
    !rows.iter().any(|r| r.verdict.is_fail() || (ci && r.verdict.is_skipped()))
}

/// Runs one stage, with a line on `log` (stderr) as it starts and as it ends: a stage may
/// run for minutes, and the summary comes only at the end. Written whether or not stderr is
/// a terminal, so that CI's log shows where a long run is; a log that cannot be written is
/// not a reason to stop checking. On a `terminal`, a [`Meter`] counting `unit`s shows the
/// stage's progress between the two lines.
fn timed(
    name: &'static str,
    unit: &'static str,
    terminal: bool,
    stage: impl FnOnce(&Meter) -> Row,
    log: &mut dyn Write,
) -> Row {
    let _ = writeln!(log, "verify: {name}: started");
    let start = Instant::now();
    let meter = Meter::new(name, unit, terminal);
    let mut row = stage(&meter);
    drop(meter);
    row.seconds = start.elapsed().as_secs_f64();
    let (verdict, why) = match &row.verdict {
        Verdict::Pass(_) => ("ok", String::new()),
        Verdict::Fail(_) => ("FAILED", String::new()),
        Verdict::Skipped(why) => ("skipped", format!(": {why}")),
    };
    let _ = writeln!(log, "verify: {name}: {verdict} in {:.1} s{why}", row.seconds);
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
fn exhaustive(depth: u16, meter: &Meter) -> Row {
    let result = exhaustive::exhaustive(
        Bounds::default(),
        usize::from(depth),
        &Setup::new(Storage::Memory),
        threads(),
        &|| meter.tick(),
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
fn generated(cases: u32, seed: u64, meter: &Meter) -> Row {
    let result = run::random(
        cases,
        seed,
        MAX_LEN,
        &Setup::new(Storage::File),
        run::default_threads(Storage::File),
        &|| meter.tick(),
    );
    conformance_row("generated", result, |t| {
        let checked = format!("{} traces, {} steps, seed {seed}", t.traces, t.steps);
        (checked, vec![("traces", t.traces), ("steps", t.steps), ("seed", seed)])
    })
}

/// The longest generated trace, in steps.
const MAX_LEN: usize = 40;

/// This program, to run as a child; a failed row if it cannot be found.
fn this_program(row: &mut Row) -> Option<PathBuf> {
    match std::env::current_exe() {
        Ok(program) => Some(program),
        Err(e) => {
            row.verdict = Verdict::Fail(format!("cannot find this program to run it as a child: {e}"));
            None
        }
    }
}

/// `retryq replay` processes killed with SIGKILL at random points.
fn crashes(kills: u64, seed: u64, meter: &Meter) -> Row {
    let mut row = Row::new("crash");
    let Some(program) = this_program(&mut row) else { return row };
    match crash::kill_runs(&program, kills, seed, &|| meter.tick()) {
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
                None => Verdict::Pass(format!(
                    "before {}, after {}, claimed-only {}; never a mixture",
                    tally.before, tally.after, tally.claimed
                )),
                Some(problem) => Verdict::Fail(problem),
            };
        }
        Err(e) => row.verdict = Verdict::Fail(e.to_string()),
    }
    row
}

/// Workers of this program on a SQLite file, killed, stopped past their lease and resumed,
/// their watchdogs killed and their clock stepped, while their commands log every tick: no
/// two attempts of a job ran at once (`retryq_conformance::overlap`).
fn overlap(seed: u64, meter: &Meter) -> Row {
    let mut row = Row::new("overlap");
    let Some(program) = this_program(&mut row) else { return row };
    let run = Overlap {
        seed,
        store: Store::Sqlite,
        url: None,
        workers: program.clone(),
        audit: program,
        trouble: OVERLAP_TROUBLE,
    };
    match run.run(&|| meter.tick()) {
        Ok(seen) => {
            row.checked = format!(
                "{} attempts, {} kills, {} stops, {} watchdogs killed",
                seen.attempts, seen.kills, seen.stops, seen.orphaned
            );
            row.counts = vec![
                ("attempts", seen.attempts as u64),
                ("kills", seen.kills as u64),
                ("stops", seen.stops as u64),
                ("watchdogs_killed", seen.orphaned as u64),
                ("clock_steps", seen.steps as u64),
                ("terms", seen.terms as u64),
                ("overlaps", seen.overlaps.len() as u64),
            ];
            row.verdict = Verdict::Pass(format!(
                "no attempt ran beside another of its job ({} stopped by their watchdog)",
                seen.terms
            ));
        }
        Err(why) => row.verdict = Verdict::Fail(why),
    }
    row
}

fn model_check(meter: &Meter) -> Row {
    let model = QueueModel::new(Bounds::default(), None);
    let report = model.check_with(threads(), true, &|p| meter.set(p.unique_states as u64), None);
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
    let verdict = Verdict::from_result(verdict);
    let counts = vec![
        ("states", report.unique_states as u64),
        ("properties", report.findings.len() as u64),
        ("cells", report.cells.len() as u64),
    ];
    Row { stage: "model check", checked, counts, verdict, seconds: 0.0 }
}

/// Every seeded bug, at small bounds: each must be reported by the property meant to catch it.
fn seeded_bugs(meter: &Meter) -> Row {
    let mut missed = Vec::new();
    for bug in Bug::ALL {
        let report = QueueModel::new(Bounds::small_for(bug), Some(bug)).show_bug(threads());
        if report.finding(bug.caught_by()).map(|f| f.status) != Some(Status::Violated) {
            missed.push(bug.name());
        }
        meter.tick();
    }
    let checked = format!("{} bugs", Bug::ALL.len());
    let verdict = if missed.is_empty() {
        Verdict::Pass("each caught by its property".into())
    } else {
        Verdict::Fail(format!("not caught: {}", missed.join(", ")))
    };
    let counts = vec![("bugs", Bug::ALL.len() as u64), ("caught", (Bug::ALL.len() - missed.len()) as u64)];
    Row { stage: "seeded bugs", checked, counts, verdict, seconds: 0.0 }
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn print_json(rows: &[Row]) -> Result<(), CliError> {
    outln!("{}", super::json_text(&json_report(rows, under_ci()))?)
}

/// `--json`: `{"stages":[{"stage","checked","counts":{…},"ok","skipped","result","seconds"}…],
/// "pass","skipped","measured"}`; a skipped stage is not `ok`, and the run's `pass` is false
/// with one under CI (`ci`).
fn json_report(rows: &[Row], ci: bool) -> serde_json::Value {
    let stages: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            let counts: serde_json::Map<String, serde_json::Value> =
                row.counts.iter().map(|(name, n)| ((*name).to_owned(), (*n).into())).collect();
            let (ok, result) = match &row.verdict {
                Verdict::Pass(text) => (true, text),
                Verdict::Fail(text) | Verdict::Skipped(text) => (false, text),
            };
            serde_json::json!({
                "stage": row.stage,
                "checked": row.checked,
                "counts": counts,
                "ok": ok,
                "skipped": row.verdict.is_skipped(),
                "result": result,
                "seconds": (row.seconds * 10.0).round() / 10.0,
            })
        })
        .collect();
    serde_json::json!({
        "stages": stages,
        "pass": passed(rows, ci),
        "skipped": rows.iter().filter(|r| r.verdict.is_skipped()).map(|r| r.stage).collect::<Vec<_>>(),
        "measured": crate::measured::Measured::now(),
    })
}

fn print_summary(rows: &[Row]) -> Result<(), CliError> {
    let wide = rows.iter().map(|r| r.checked.len()).max().unwrap_or(0).max("checked".len());
    outln!("{:<12} {:<wide$} {:>8}  result", "stage", "checked", "seconds")?;
    for row in rows {
        let (mark, text) = match &row.verdict {
            Verdict::Pass(text) => ("ok", text),
            Verdict::Fail(text) => ("FAIL", text),
            Verdict::Skipped(text) => ("skipped", text),
        };
        outln!("{:<12} {:<wide$} {:>8.1}  {mark}: {text}", row.stage, row.checked, row.seconds)?;
    }
    outln!("{}", verdict_line(rows, under_ci()))
}

/// The summary's last line: how many stages passed, failed and were skipped, naming the
/// skipped ones (a skip is never a silent pass).
fn verdict_line(rows: &[Row], ci: bool) -> String {
    let failed = rows.iter().filter(|r| r.verdict.is_fail()).count();
    let skipped: Vec<&str> = rows.iter().filter(|r| r.verdict.is_skipped()).map(|r| r.stage).collect();
    let passing = rows.len() - failed - skipped.len();
    let mut line = if failed == 0 && skipped.is_empty() {
        format!("verify: all {} stages pass", rows.len())
    } else if failed == 0 {
        format!("verify: {passing} of {} stages pass", rows.len())
    } else {
        format!("verify: {failed} of {} stages FAILED", rows.len())
    };
    if !skipped.is_empty() {
        line.push_str(&format!(", {} SKIPPED: {}", skipped.len(), skipped.join(", ")));
        if ci {
            line.push_str(" (a failure under CI)");
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(stage: &'static str, counts: Vec<(&'static str, u64)>, verdict: Verdict) -> Row {
        Row { stage, checked: "what".into(), counts, verdict, seconds: 1.26 }
    }

    #[test]
    fn each_stage_says_when_it_starts_and_how_it_ended_and_piped_nothing_else() {
        let mut log = Vec::new();
        let stage = |verdict: Verdict| {
            move |meter: &Meter| {
                meter.tick();
                row("crash", Vec::new(), verdict)
            }
        };
        let passed = timed("crash", "kills", false, stage(Verdict::Pass("fine".into())), &mut log);
        let failed = timed("exhaustive", "paths", false, stage(Verdict::Fail("differs".into())), &mut log);
        let skipped =
            timed("postgres", "traces", false, stage(Verdict::Skipped("not installed".into())), &mut log);
        assert!(!passed.verdict.is_fail() && failed.verdict.is_fail() && skipped.verdict.is_skipped());
        let log = String::from_utf8(log).expect("utf-8");
        assert!(!log.chars().any(|c| c.is_control() && c != '\n'), "control characters in {log:?}");
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 6, "{log}");
        assert_eq!(lines[0], "verify: crash: started");
        assert!(lines[1].starts_with("verify: crash: ok in ") && lines[1].ends_with(" s"), "{log}");
        assert_eq!(lines[2], "verify: exhaustive: started");
        assert!(lines[3].starts_with("verify: exhaustive: FAILED in "), "{log}");
        assert!(
            lines[5].starts_with("verify: postgres: skipped in ") && lines[5].ends_with(" s: not installed"),
            "{log}"
        );
    }

    #[test]
    fn the_json_report_gives_each_stages_counts_and_fails_with_any_stage() {
        let rows = [
            row(
                "model check",
                vec![("states", 3_180_817), ("properties", 62)],
                Verdict::Pass("holds".into()),
            ),
            row("crash", vec![("kills", 40)], Verdict::Pass("never a mixture".into())),
        ];
        let json = json_report(&rows, false);
        assert_eq!(json["pass"], true);
        assert_eq!(json["stages"][0]["counts"]["states"], 3_180_817);
        assert_eq!(json["stages"][0]["counts"]["properties"], 62);
        assert_eq!(json["stages"][1]["stage"], "crash");
        assert_eq!(json["stages"][1]["seconds"], 1.3);
        assert_eq!(json["measured"]["commit"], env!("RETRYQ_COMMIT"));
        let failed = [row("generated", vec![], Verdict::Fail("a divergence".into()))];
        let json = json_report(&failed, false);
        assert_eq!((json["pass"].clone(), json["stages"][0]["ok"].clone()), (false.into(), false.into()));
        assert_eq!(json["stages"][0]["result"], "a divergence");
    }

    #[test]
    fn a_skipped_stage_is_said_in_the_summary_and_fails_the_run_under_ci() {
        let rows = [
            row("overlap", vec![("attempts", 40)], Verdict::Pass("no attempt beside another".into())),
            row("postgres", vec![], Verdict::Skipped("PostgreSQL not installed".into())),
        ];
        assert!(passed(&rows, false));
        assert!(!passed(&rows, true));
        assert_eq!(verdict_line(&rows, false), "verify: 1 of 2 stages pass, 1 SKIPPED: postgres");
        assert_eq!(
            verdict_line(&rows, true),
            "verify: 1 of 2 stages pass, 1 SKIPPED: postgres (a failure under CI)"
        );
        let json = json_report(&rows, false);
        assert_eq!(json["pass"], true);
        assert_eq!(json["skipped"], serde_json::json!(["postgres"]));
        assert_eq!(
            (json["stages"][1]["ok"].clone(), json["stages"][1]["skipped"].clone()),
            (false.into(), true.into())
        );
        assert_eq!(json["stages"][1]["result"], "PostgreSQL not installed");
        assert_eq!(json_report(&rows, true)["pass"], false);
        let all = [row("overlap", vec![], Verdict::Pass("fine".into()))];
        assert_eq!(verdict_line(&all, true), "verify: all 1 stages pass");
        let broken = [
            row("overlap", vec![], Verdict::Fail("ran at once".into())),
            row("postgres", vec![], Verdict::Skipped("PostgreSQL not installed".into())),
        ];
        assert_eq!(verdict_line(&broken, false), "verify: 1 of 2 stages FAILED, 1 SKIPPED: postgres");
    }
}
