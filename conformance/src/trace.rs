//! A trace: the lines of one replay, each an operation or a line that must be refused.

use std::fmt::Write as _;

use retryq_model::Op;

use crate::parse::{Line, parse_line};

/// One line of a trace.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// An operation, replayed as is.
    Op(Op),
    /// A line the replay format refuses (`invalid_input`), kept as written.
    Invalid(String),
}

/// The lines of one replay, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// The lines, in order.
    pub steps: Vec<Step>,
}

impl Step {
    /// The step as one line of JSON Lines.
    pub fn to_line(&self) -> String {
        match self {
            Step::Op(op) => op.to_json_line(),
            Step::Invalid(line) => line.clone(),
        }
    }

    /// The step as the replay reads it: an operation goes as it is — even with values no JSON
    /// line could carry past the parser (an integer above 2^53 − 1), which each reading must
    /// refuse on its own — and a raw line is parsed.
    pub fn line(&self) -> Line {
        match self {
            Step::Op(op) => Line::Op(op.clone()),
            Step::Invalid(raw) => parse_line(raw),
        }
    }
}

impl Trace {
    /// Reads JSON Lines; skipped lines (blank, `#` comments) are dropped.
    pub fn from_jsonl(text: &str) -> Trace {
        let steps = text
            .lines()
            .filter_map(|line| match parse_line(line) {
                Line::Skip => None,
                Line::Op(op) => Some(Step::Op(op)),
                Line::Invalid(_) => Some(Step::Invalid(line.to_owned())),
            })
            .collect();
        Trace { steps }
    }

    /// The trace as JSON Lines, one step a line, after an optional `#` comment header.
    pub fn to_jsonl(&self, header: &str) -> String {
        let mut text = String::new();
        for line in header.lines() {
            let _ = writeln!(text, "# {line}");
        }
        for step in &self.steps {
            let _ = writeln!(text, "{}", step.to_line());
        }
        text
    }

    /// The number of lines.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the trace has no line.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_round_trips_through_json_lines() {
        let text = "# header\n{\"op\":\"stats\",\"now\":3}\n\n{\"op\":\"stats\",\"now\":1.5}\n{\"op\":\"restart\"}\n";
        let trace = Trace::from_jsonl(text);
        assert_eq!(
            trace.steps,
            [
                Step::Op(Op::Stats { queue: None, now: 3 }),
                Step::Invalid("{\"op\":\"stats\",\"now\":1.5}".into()),
                Step::Op(Op::Restart)
            ]
        );
        assert_eq!(Trace::from_jsonl(&trace.to_jsonl("a\nb")), trace);
        assert!(trace.to_jsonl("a\nb").starts_with("# a\n# b\n"));
    }
}
