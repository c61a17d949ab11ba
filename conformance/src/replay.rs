//! A whole trace: JSON Lines in, one JSON object out per operation, in order.

use std::io::{BufRead, Write};

use retryq_model::Response;

use crate::parse::{Line, parse_line};
use crate::{ReplayError, Side};

/// What a replay went through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplayStats {
    /// Input lines read, skipped ones included.
    pub lines: u64,
    /// Output lines written: one per line that was not skipped.
    pub steps: u64,
}

/// Replays `input` against `side`, writing each result to `output` as soon as it is known
/// (so that a driver can talk to `retryq replay -` line by line).
pub fn replay(
    mut input: impl BufRead,
    mut output: impl Write,
    side: &mut Side,
) -> Result<ReplayStats, ReplayError> {
    let mut stats = ReplayStats::default();
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        if input.read_until(b'\n', &mut buffer)? == 0 {
            break;
        }
        stats.lines += 1;
        let response = match std::str::from_utf8(&buffer) {
            Err(_) => Response::invalid("line: not valid UTF-8"),
            Ok(text) => match parse_line(text) {
                Line::Skip => continue,
                Line::Invalid(detail) => Response::invalid(detail),
                Line::Op(op) => side.step(&op)?,
            },
        };
        stats.steps += 1;
        writeln!(output, "{}", response.to_json_line())?;
        output.flush()?;
    }
    Ok(stats)
}

/// Replays a whole trace held in memory and returns its output lines.
pub fn replay_to_lines(trace: &[u8], side: &mut Side) -> Result<Vec<String>, ReplayError> {
    let mut output = Vec::new();
    replay(trace, &mut output, side)?;
    Ok(String::from_utf8_lossy(&output).lines().map(str::to_owned).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORKED_TRACE: &str = r#"{"op":"config","base_ms":100,"cap_ms":250,"lease_ms":1000}
{"op":"enqueue","id":"order-7","max_attempts":5,"deadline":700,"now":0}
{"op":"run_once","worker":"w1","now":0,"outcome":"retryable","jitter":0.5}
{"op":"run_once","worker":"w1","now":50,"outcome":"retryable","jitter":0.5}
{"op":"run_once","worker":"w1","now":150,"outcome":"retryable","jitter":0.5}
{"op":"run_once","worker":"w1","now":275,"outcome":"crash"}
{"op":"claim","worker":"w2","now":1274}
{"op":"claim","worker":"w2","now":1275}
{"op":"get","id":"order-7"}
"#;

    const WORKED_OUTPUT: [&str; 9] = [
        r#"{"ok":"config"}"#,
        r#"{"ok":"enqueued"}"#,
        r#"{"ok":"retry","id":"order-7","attempt":1,"available_at":50}"#,
        r#"{"ok":"retry","id":"order-7","attempt":2,"available_at":150}"#,
        r#"{"ok":"retry","id":"order-7","attempt":3,"available_at":275}"#,
        r#"{"ok":"crashed","id":"order-7","attempt":4}"#,
        r#"{"ok":"none"}"#,
        r#"{"ok":"none"}"#,
        r#"{"ok":"job","id":"order-7","status":"dead","attempts":4,"max_attempts":5,"available_at":null,"deadline":700,"dead_reason":"deadline","redrives":0,"not_before":0,"base_ms":null,"cap_ms":null,"queue":"default","priority":0,"ended_at":1275,"cancel_requested":false}"#,
    ];

    #[test]
    fn the_spec_worked_trace_prints_exactly_its_output() {
        let mut side = Side::temporary().expect("temporary database");
        let lines = replay_to_lines(WORKED_TRACE.as_bytes(), &mut side).expect("replay");
        assert_eq!(lines, WORKED_OUTPUT);
    }

    #[test]
    fn skipped_lines_print_nothing_and_bad_bytes_are_invalid_input() {
        let mut side = Side::in_memory().expect("memory database");
        let mut trace = b"\n  \n# comment\n{\"op\":\"stats\",\"now\":0}\n".to_vec();
        trace.extend_from_slice(b"\xff\xfe\n{\"op\":\"restart\"}");
        let mut output = Vec::new();
        let stats = replay(trace.as_slice(), &mut output, &mut side).expect("replay");
        assert_eq!(stats, ReplayStats { lines: 6, steps: 3 });
        let output = String::from_utf8(output).expect("utf-8");
        let lines: Vec<&str> = output.lines().collect();
        assert!(lines[0].starts_with(r#"{"ok":"stats""#));
        assert_eq!(lines[1], r#"{"error":"invalid_input","detail":"line: not valid UTF-8"}"#);
        assert_eq!(lines[2], r#"{"ok":"restart"}"#);
    }
}
