//! One row of `verify`'s summary, and how a stage ended: what every stage returns.

use retryq_conformance::ReplayError;
use retryq_conformance::run::Tally;

/// One line of the summary.
pub struct Row {
    /// The stage's name.
    pub stage: &'static str,
    /// What it checked, in words.
    pub checked: String,
    /// What `checked` says, as numbers: for `--json`.
    pub counts: Vec<(&'static str, u64)>,
    /// How it ended.
    pub verdict: Verdict,
    /// How long it ran.
    pub seconds: f64,
}

/// How a stage ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// It passed: what it showed.
    Pass(String),
    /// It failed: the first problem.
    Fail(String),
    /// It could not run here, and why (PostgreSQL not installed).
    Skipped(String),
}

impl Verdict {
    /// Whether the stage failed.
    pub fn is_fail(&self) -> bool {
        matches!(self, Verdict::Fail(_))
    }

    /// Whether the stage could not run here.
    pub fn is_skipped(&self) -> bool {
        matches!(self, Verdict::Skipped(_))
    }

    /// A pass for `Ok(what it showed)`, a failure for `Err(the problem)`.
    pub fn from_result(result: Result<String, String>) -> Verdict {
        match result {
            Ok(text) => Verdict::Pass(text),
            Err(text) => Verdict::Fail(text),
        }
    }
}

/// A row from a conformance tally: the first mismatch, shrunk, is the failure.
pub fn conformance_row(
    stage: &'static str,
    result: Result<Tally, ReplayError>,
    checked: impl Fn(&Tally) -> (String, Vec<(&'static str, u64)>),
) -> Row {
    let mut row = Row::new(stage);
    match result {
        Ok(tally) => {
            (row.checked, row.counts) = checked(&tally);
            row.verdict = match tally.mismatch {
                None => Verdict::Pass(format!("{} and the model agree on every step", store_name(stage))),
                Some(m) => Verdict::Fail(format!(
                    "{} found a divergence:\n{}\n  trace:\n{}",
                    m.source,
                    m.divergence,
                    m.trace.to_jsonl("")
                )),
            };
        }
        Err(e) => row.verdict = Verdict::Fail(e.to_string()),
    }
    row
}

/// The store a conformance stage runs on, as its row says it.
fn store_name(stage: &str) -> &'static str {
    if stage == "postgres" { "PostgreSQL" } else { "SQLite" }
}

impl Row {
    /// An empty row of `stage`, passing until a stage says otherwise.
    pub fn new(stage: &'static str) -> Row {
        Row {
            stage,
            checked: String::new(),
            counts: Vec::new(),
            verdict: Verdict::Pass(String::new()),
            seconds: 0.0,
        }
    }
}
