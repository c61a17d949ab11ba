//! `retryq check`: the model of SPEC.md checked exhaustively within bounds.
//!
//! Prints each property with its kind and status, the size of the search and its speed; a
//! violated property's shortest counterexample is printed as a replayable trace, and written
//! to a file when `--out` asks for one. On a terminal a progress line shows the search. Exit
//! status 1 on any violation, and (checking the SPEC's store, not a seeded bug) on any
//! `sometimes` property without an example. With `--bug`, the search stops after the level
//! where the property that names the bug is decided (`--full` explores everything).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use retryq_model::Bug;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use retryq_model::checker::{CheckReport, Finding, Kind, Progress, Status};
use retryq_model::model::{Action, Bounds, QueueModel, Scene, World};
use retryq_model::trace;
use retryq_model::{choices, contract};
use serde::Serialize;

use super::CliError;
use crate::out::{noteln, out, outln};

/// The bounds of the model, shared by `check` and `explore` (each has its own `--bug`, whose
/// help names what that command offers).
#[derive(clap::Args)]
pub struct BoundsArgs {
    /// How many job ids [default: 2]. Any of --jobs, --workers and --horizon checks one scene
    /// alone, with these bounds: the one-job scene's kind for one job, the two-job scene's for
    /// more.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=8))]
    pub jobs: Option<u64>,
    /// How many workers [default: 2].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=8))]
    pub workers: Option<u64>,
    /// That scene's clock runs from 0 to N milliseconds [default: 5].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub horizon: Option<u64>,
    /// The larger preset: budgets of 1 and 3 instead of 1 and 2, so that completions compute
    /// the delay after a second attempt.
    #[arg(long)]
    pub deep: bool,
    /// Check only these scenes of the preset (repeatable), by name with `-` for a space:
    /// two-jobs, one-job, range-edges, lanes, retention, backlog.
    #[arg(long, value_name = "NAME", value_parser = parse_scene, conflicts_with_all = ["jobs", "workers", "horizon"])]
    pub scene: Vec<String>,
}

/// A scene of the default preset, by name (`two-jobs` or `two jobs`).
fn parse_scene(name: &str) -> Result<String, String> {
    let wanted = name.replace('-', " ");
    let names: Vec<String> = Bounds::default().scenes.iter().map(|s| s.name.replace(' ', "-")).collect();
    if Bounds::default().scenes.iter().any(|s| s.name == wanted) {
        Ok(wanted)
    } else {
        Err(format!("no scene named {name:?}; the scenes are: {}", names.join(", ")))
    }
}

impl BoundsArgs {
    pub fn bounds(&self) -> Bounds {
        let mut bounds = if self.deep { Bounds::deep() } else { Bounds::default() };
        if !self.scene.is_empty() {
            bounds.scenes.retain(|s| self.scene.iter().any(|name| name == s.name));
        }
        if self.jobs.is_some() || self.workers.is_some() || self.horizon.is_some() {
            let main = Scene::main();
            let sized = Bounds::sized(
                self.jobs.map_or(main.jobs, |n| n as usize),
                self.workers.map_or(main.workers, |n| n as usize),
                self.horizon.unwrap_or(main.horizon),
            );
            bounds.scenes = sized.scenes;
        }
        bounds
    }
}

/// The seeded bug called `name`; an unknown name is refused with the list of them all.
pub fn parse_bug(name: &str) -> Result<Bug, String> {
    Bug::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Bug::ALL.iter().map(|b| b.name()).collect();
        format!("no seeded bug named {name:?}; the bugs are: {}", names.join(", "))
    })
}

#[derive(clap::Args)]
pub struct Args {
    /// Check the store with this seeded bug (see --list-bugs).
    #[arg(long, value_name = "NAME", value_parser = parse_bug)]
    bug: Option<Bug>,
    #[command(flatten)]
    bounds: BoundsArgs,
    /// List the seeded bugs and the property that catches each, then exit.
    #[arg(long)]
    list_bugs: bool,
    /// Worker threads [default: the number of cores].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=256))]
    threads: Option<u64>,
    /// Print one JSON object instead of the report.
    #[arg(long)]
    json: bool,
    /// Write the first counterexample's trace to FILE (it is printed either way).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// With --bug: explore the whole state space instead of stopping once the property that
    /// names the bug is decided.
    #[arg(long, requires = "bug")]
    full: bool,
    /// Explore without symmetry reduction over workers (for comparison).
    #[arg(long)]
    no_symmetry: bool,
    /// Print the contract's table (SPEC 5.3: operation, status of the job it meets, answer),
    /// each cell reached or not, with the length of a shortest path to it and the scene where
    /// that path starts.
    #[arg(long)]
    coverage: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    if args.list_bugs {
        for bug in Bug::ALL {
            outln!("{:<28} {}", bug.name(), bug.describe())?;
            outln!("{:<28}   caught by: {}", "", bug.caught_by())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let bug = args.bug;
    let model = QueueModel::new(args.bounds.bounds(), bug);
    let threads = match args.threads {
        Some(n) => n as usize,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let until = if args.full { None } else { bug.map(Bug::caught_by) };
    let line = ProgressLine::new(args.json);
    let report = model.check_with(threads, !args.no_symmetry, &|p| line.show(p), until);
    line.finish();
    let mut violations: Vec<&Finding<World, Action>> =
        report.findings.iter().filter(|f| f.status == Status::Violated).collect();
    // A seeded bug's own property comes first: its counterexample is the one written.
    violations.sort_by_key(|f| bug.is_none_or(|bug| f.name != bug.caught_by()));
    let written = match (violations.first(), &args.out) {
        (Some(first), Some(out)) => Some(write_counterexample(&model, first, out)?),
        _ => None,
    };
    if args.json {
        outln!("{}", json_report(&report))?;
        if let (Some(file), Some(first)) = (&written, violations.first()) {
            noteln!("retryq check: counterexample to \"{}\" written to {}", first.name, file.display());
        }
    } else {
        print_report(&model, &report, threads, !args.no_symmetry, args.bounds.deep)?;
        if args.coverage {
            print_coverage(&model, &report)?;
        }
        for (i, finding) in violations.iter().enumerate() {
            let file = if i == 0 { written.as_deref() } else { None };
            print_counterexample(&model, finding, file)?;
        }
    }
    Ok(if failed(&report, bug.is_some(), args.bounds.deep) { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// A progress line on standard error while a check runs, when standard error is a terminal
/// (and the report is not JSON): states, states per second, depth, after each level.
struct ProgressLine(Option<ProgressBar>);

impl ProgressLine {
    fn new(json: bool) -> ProgressLine {
        if json || !std::io::stderr().is_terminal() {
            return ProgressLine(None);
        }
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        ProgressLine(Some(bar))
    }

    fn show(&self, progress: &Progress) {
        if let Some(bar) = &self.0 {
            let rate = if progress.seconds > 0.0 { progress.states as f64 / progress.seconds } else { 0.0 };
            bar.set_message(format!(
                "depth {}: {} unique states, {} generated, {:.0} states/s, {:.0} s",
                progress.depth, progress.unique_states, progress.states, rate, progress.seconds
            ));
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

/// Any violation; or, for the SPEC's store, an example not found or a cell of the contract's
/// table not reached (a cell reached only at `--deep` counts only there).
pub fn failed(report: &CheckReport<World, Action>, seeded_bug: bool, deep: bool) -> bool {
    let violated_or_missing = report
        .findings
        .iter()
        .any(|f| f.status == Status::Violated || (f.status == Status::NotFound && !seeded_bug));
    violated_or_missing || (!seeded_bug && !unreached(report, deep).is_empty())
}

/// The cells of the contract's two tables the check should have reached and did not, each in
/// words: every cell, but those named as reached only at `--deep` when the check is not deep.
pub fn unreached(report: &CheckReport<World, Action>, deep: bool) -> Vec<String> {
    let table = contract::cells();
    let cells = table
        .iter()
        .zip(&report.cells)
        .filter(|(cell, path)| path.is_none() && (deep || !contract::DEEP_ONLY.contains(cell)))
        .map(|(cell, _)| {
            format!("{} meeting {} answering {}", cell.op.name(), cell.meets.name(), cell.answer.name())
        });
    let args = contract::arg_cells()
        .into_iter()
        .zip(report.cells.iter().skip(table.len()))
        .filter(|(_, path)| path.is_none())
        .map(|(cell, _)| format!("{} with {} {}", cell.op.name(), cell.field.name(), cell.class.name()));
    let relations = choices::choices()
        .into_iter()
        .zip(report.cells.iter().skip(table.len() + contract::arg_cells().len()))
        .filter(|(_, path)| path.is_none())
        .map(|(choice, _)| choice.name());
    cells.chain(args).chain(relations).collect()
}

/// The contract's table, each cell reached or not, with the length of a shortest path to it
/// and the scene it is in.
fn print_coverage(model: &QueueModel, report: &CheckReport<World, Action>) -> Result<(), CliError> {
    outln!()?;
    outln!("the contract's table (SPEC 5.3): operation, status of the job it meets, answer")?;
    let mut last = None;
    for (cell, path) in contract::cells().into_iter().zip(&report.cells) {
        let op = if last == Some(cell.op) { "" } else { cell.op.name() };
        last = Some(cell.op);
        let scene = |path: &retryq_model::checker::Path<World, Action>| {
            let world = path.states.first()?;
            model.bounds.scenes.get(usize::from(world.scene)).map(|s| s.name)
        };
        let reached = match path {
            Some(path) => format!("reached ({} steps, {})", path.len(), scene(path).unwrap_or("?")),
            None if contract::DEEP_ONLY.contains(&cell) => "reached only at --deep".into(),
            None => "NOT REACHED".into(),
        };
        outln!("{op:<12} {:<26} {:<24} {reached}", cell.meets.name(), cell.answer.name())?;
    }
    outln!()?;
    outln!("the argument table (SPEC 3.1, 5.2, 6.21): operation, field, class of its value")?;
    let table = contract::cells().len();
    for (cell, path) in contract::arg_cells().into_iter().zip(report.cells.iter().skip(table)) {
        let reached = match path {
            Some(path) => format!("reached ({} steps)", path.len()),
            None => "NOT REACHED".into(),
        };
        outln!("{:<12} {:<14} {:<10} {reached}", cell.op.name(), cell.field.name(), cell.class.name())?;
    }
    outln!()?;
    outln!("the contract's choices (SPEC 1.6, 3.3–3.15): each relation its rules compare")?;
    let skip = table + contract::arg_cells().len();
    for (choice, path) in choices::choices().into_iter().zip(report.cells.iter().skip(skip)) {
        let reached = match path {
            Some(path) => format!("reached ({} steps)", path.len()),
            None => "NOT REACHED".into(),
        };
        outln!("{:<78} {reached}", choice.name())?;
    }
    Ok(())
}

#[derive(Serialize)]
struct JsonReport<'a> {
    unique_states: usize,
    states: usize,
    probes: usize,
    cells_reached: usize,
    cells: usize,
    max_depth: usize,
    seconds: f64,
    properties: Vec<JsonProperty<'a>>,
    measured: crate::measured::Measured,
}

#[derive(Serialize)]
struct JsonProperty<'a> {
    name: &'a str,
    kind: &'a str,
    status: &'a str,
}

fn json_report(report: &CheckReport<World, Action>) -> String {
    let json = JsonReport {
        unique_states: report.unique_states,
        states: report.states,
        probes: report.probes,
        cells_reached: report.cells.iter().filter(|c| c.is_some()).count(),
        cells: report.cells.len(),
        max_depth: report.max_depth,
        seconds: report.seconds,
        properties: report
            .findings
            .iter()
            .map(|f| JsonProperty { name: f.name, kind: f.kind.name(), status: f.status.name() })
            .collect(),
        measured: crate::measured::Measured::now(),
    };
    // Strings and finite numbers only: serialization cannot fail.
    serde_json::to_string(&json).unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()))
}

fn store_line(model: &QueueModel) -> String {
    match model.bug {
        Some(bug) => format!("the store with seeded bug {bug}: {}", bug.describe()),
        None => "the SPEC's store".into(),
    }
}

fn print_report(
    model: &QueueModel,
    report: &CheckReport<World, Action>,
    threads: usize,
    symmetry: bool,
    deep: bool,
) -> Result<(), CliError> {
    outln!("retryq check: {}", store_line(model))?;
    outln!("bounds: {}", model.bounds)?;
    outln!(
        "search: breadth-first, shortest counterexamples, {threads} thread(s), {}",
        if symmetry { "symmetry reduction over workers" } else { "no symmetry reduction" }
    )?;
    outln!()?;
    let width = report.findings.iter().map(|f| f.name.len()).max().unwrap_or(0);
    outln!("{:<width$}  {:<9}  status", "property", "kind")?;
    for f in &report.findings {
        let steps = match (&f.path, f.status) {
            (Some(path), Status::Violated) => format!("  (counterexample: {} steps)", path.len()),
            (Some(path), Status::Found) => format!("  (example: {} steps)", path.len()),
            _ => String::new(),
        };
        outln!("{:<width$}  {:<9}  {}{steps}", f.name, f.kind.name(), f.status.name())?;
    }
    outln!()?;
    outln!(
        "states generated {}, unique {}, max depth {}, {:.2} s, {:.0} states/s",
        report.states,
        report.unique_states,
        report.max_depth,
        report.seconds,
        report.states_per_second()
    )?;
    if report.outside_boundary > 0 {
        outln!(
            "{} successors were past the claim bound and not explored (only a store breaking 4.1 gets there)",
            report.outside_boundary
        )?;
    }
    let table = contract::cells().len();
    let reached = |cells: &[Option<_>]| cells.iter().filter(|c| c.is_some()).count();
    if model.bug.is_none() {
        let (cells, rest) = report.cells.split_at(table.min(report.cells.len()));
        let (args, relations) = rest.split_at(contract::arg_cells().len().min(rest.len()));
        outln!(
            "cells reached: {} of {} of the contract's table, {} of {} of the argument table, {} of {} of its choices (--coverage prints them)",
            reached(cells),
            cells.len(),
            reached(args),
            args.len(),
            reached(relations),
            relations.len()
        )?;
    }
    let violated = report.findings.iter().filter(|f| f.status == Status::Violated).count();
    let missing = report.findings.iter().filter(|f| f.status == Status::NotFound).count()
        + if model.bug.is_none() { unreached(report, deep).len() } else { 0 };
    if report.findings.iter().any(|f| f.status == Status::Unchecked) {
        outln!(
            "stopped after depth {} once \"{}\" was decided; `unchecked` properties were not explored further (--full explores all)",
            report.max_depth,
            model.bug.map_or("", Bug::caught_by)
        )?;
    }
    match (violated, missing, model.bug) {
        (0, 0, _) => outln!("check: every property holds and every example was found"),
        (0, _, Some(bug)) => outln!("check: seeded bug {bug} was NOT caught"),
        (_, _, Some(bug))
            if report.finding(bug.caught_by()).is_some_and(|f| f.status == Status::Violated) =>
        {
            outln!("check: FAILED, as it must: seeded bug {bug} caught by \"{}\"", bug.caught_by())
        }
        (0, n, None) => outln!("check: FAILED: {n} sometimes-propert(ies) or cell(s) without an example"),
        (n, _, _) => outln!("check: FAILED: {n} propert(ies) violated"),
    }
}

/// The counterexample's trace: a header, then the replayable lines.
fn counterexample_text(model: &QueueModel, finding: &Finding<World, Action>) -> String {
    let Some(path) = &finding.path else {
        return String::new();
    };
    let lines = trace::trace(model, path, finding.kind == Kind::Liveness);
    let mut text = format!(
        "# retryq check: a shortest counterexample ({} steps) to \"{}\"\n# {}\n# bounds: {}\n\
         # Replay it with `retryq replay FILE`; each `#   model:` line is what the model answered.\n",
        path.len(),
        finding.name,
        store_line(model),
        model.bounds
    );
    text.push_str(&trace::render(&lines));
    text
}

fn write_counterexample(
    model: &QueueModel,
    finding: &Finding<World, Action>,
    file: &Path,
) -> Result<PathBuf, CliError> {
    fs::write(file, counterexample_text(model, finding)).map_err(|e| {
        CliError::Other(format!("cannot write the counterexample to {}: {e}", file.display()))
    })?;
    Ok(file.to_path_buf())
}

fn print_counterexample(
    model: &QueueModel,
    finding: &Finding<World, Action>,
    file: Option<&Path>,
) -> Result<(), CliError> {
    outln!()?;
    match file {
        Some(file) => outln!("counterexample to \"{}\", written to {}:", finding.name, file.display())?,
        None => outln!("counterexample to \"{}\":", finding.name)?,
    }
    out!("{}", counterexample_text(model, finding))
}
