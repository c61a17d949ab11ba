//! Saved regression cases: `NAME.jsonl` (a trace) beside `NAME.expected.jsonl` (what it
//! must print). Adding a case is adding these two files.
//!
//! An expected line matches an output line when every key it names is present with the
//! same value — so an expected file may leave out fields it does not care about — except
//! `detail`, whose expected text need only appear inside the actual one (the detail's
//! wording is free; that it names the field is not).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::replay::replay_to_lines;
use crate::{ReplayError, Side};

/// One saved case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The file name without its suffix.
    pub name: String,
    /// The trace to replay.
    pub trace: PathBuf,
    /// What the replay must print (an `invalid_input` detail need only contain the expected one).
    pub expected: PathBuf,
}

const EXPECTED_SUFFIX: &str = ".expected.jsonl";

/// Every case in `dir`, by name. A trace without its expected file is an error, so that a
/// half-added case is noticed rather than skipped.
pub fn discover(dir: &Path) -> io::Result<Vec<Case>> {
    let mut cases = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(file) = path.file_name().and_then(|f| f.to_str()) else { continue };
        if file.ends_with(EXPECTED_SUFFIX) || !file.ends_with(".jsonl") {
            continue;
        }
        let name = file.trim_end_matches(".jsonl").to_owned();
        let expected = dir.join(format!("{name}{EXPECTED_SUFFIX}"));
        if !expected.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} has no {}", path.display(), expected.display()),
            ));
        }
        cases.push(Case { name, trace: path, expected });
    }
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(cases)
}

/// How a case went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every output line matched; `steps` lines were compared.
    Pass {
        /// Output lines compared.
        steps: usize,
    },
    /// The first difference: the 1-based output line, what was expected, what came.
    Mismatch {
        /// The 1-based output line.
        line: usize,
        /// What the expected file has there (`(nothing)` past its end).
        expected: String,
        /// What the replay printed (`(nothing)` past its end).
        actual: String,
    },
}

/// Replays `case` against a fresh temporary SQLite file and compares its output.
pub fn check(case: &Case) -> Result<Verdict, ReplayError> {
    check_on(case, &mut Side::temporary()?)
}

/// Replays `case` against `side` (which should be fresh: SQLite or PostgreSQL) and compares
/// its output.
pub fn check_on(case: &Case, side: &mut Side) -> Result<Verdict, ReplayError> {
    let trace = fs::read(&case.trace)?;
    let expected = fs::read_to_string(&case.expected)?;
    let actual = replay_to_lines(&trace, side)?;
    Ok(compare(&expected, &actual))
}

/// Compares output lines with an expected file's text.
pub fn compare(expected: &str, actual: &[String]) -> Verdict {
    let expected: Vec<&str> = expected.lines().filter(|l| !l.trim().is_empty()).collect();
    let lines = expected.len().max(actual.len());
    for i in 0..lines {
        let want = expected.get(i).copied().unwrap_or("(nothing)");
        let got = actual.get(i).map(String::as_str).unwrap_or("(nothing)");
        if !line_matches(want, got) {
            return Verdict::Mismatch { line: i + 1, expected: want.to_owned(), actual: got.to_owned() };
        }
    }
    Verdict::Pass { steps: actual.len() }
}

/// A response as an expected line: the whole response, with an `invalid_input` detail cut
/// to its field name (`jitter:`), since only that part of the wording is promised.
pub fn expected_line(response: &retryq_model::Response) -> String {
    match response {
        retryq_model::Response::Err(retryq_model::Failure::InvalidInput { detail }) => {
            let field = detail.split_once(':').map_or(detail.as_str(), |(field, _)| field);
            retryq_model::Response::invalid(format!("{field}:")).to_json_line()
        }
        other => other.to_json_line(),
    }
}

/// Whether one output line satisfies one expected line (see the module comment).
pub fn line_matches(expected: &str, actual: &str) -> bool {
    let (Ok(Value::Object(want)), Ok(Value::Object(got))) =
        (serde_json::from_str::<Value>(expected), serde_json::from_str::<Value>(actual))
    else {
        return false;
    };
    want.iter().all(|(key, value)| match (key.as_str(), value, got.get(key)) {
        ("detail", Value::String(part), Some(Value::String(whole))) => whole.contains(part.as_str()),
        (_, value, Some(actual)) => value == actual,
        (_, _, None) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_lines_match_by_named_fields_and_detail_substrings() {
        assert!(line_matches(r#"{"ok":"none"}"#, r#"{"ok":"none"}"#));
        assert!(line_matches(r#"{"ok":"claimed","id":"a"}"#, r#"{"ok":"claimed","id":"a","attempt":1}"#));
        assert!(!line_matches(r#"{"ok":"claimed","id":"a"}"#, r#"{"ok":"claimed","id":"b"}"#));
        assert!(!line_matches(r#"{"ok":"job","available_at":null}"#, r#"{"ok":"job"}"#));
        assert!(line_matches(r#"{"ok":"job","available_at":null}"#, r#"{"ok":"job","available_at":null}"#));
        assert!(line_matches(
            r#"{"error":"invalid_input","detail":"now"}"#,
            r#"{"error":"invalid_input","detail":"now: must be an integer"}"#
        ));
        assert!(!line_matches(
            r#"{"error":"invalid_input","detail":"jitter"}"#,
            r#"{"error":"invalid_input","detail":"now: must be an integer"}"#
        ));
        assert!(!line_matches("not json", r#"{"ok":"none"}"#));
    }

    #[test]
    fn a_missing_or_extra_line_is_a_mismatch() {
        let actual = vec![r#"{"ok":"none"}"#.to_owned()];
        assert_eq!(compare("{\"ok\":\"none\"}\n", &actual), Verdict::Pass { steps: 1 });
        assert!(matches!(compare("", &actual), Verdict::Mismatch { line: 1, .. }));
        assert!(matches!(
            compare("{\"ok\":\"none\"}\n{\"ok\":\"none\"}\n", &actual),
            Verdict::Mismatch { line: 2, .. }
        ));
    }
}
