//! `retryq enqueue --file FILE` (`-`: standard input): many jobs in one transaction, one JSON
//! object a line, each with the fields of `enqueue`'s flags in snake case:
//!
//! ```text
//! {"id":"order-7","payload":"{\"sku\":42}","max_attempts":5,"ttl":"1h"}
//! {"id":"order-8","payload":"…","max_attempts":3,"deadline":"2026-12-31T00:00:00Z","start_in":"10m","queue":"mail","priority":2}
//! ```
//!
//! `id`, `payload` (a string: the job's text) and `max_attempts` are required, and one of
//! `deadline` and `ttl`; `not_before` or `start_in`, `backoff_base`, `backoff_cap`, `queue` and
//! `priority` are optional. Durations are strings with their unit, as the flags take them
//! (`"90s"`); times are RFC 3339 strings or Unix milliseconds (a number or a string of
//! digits). A `null` is the field left out. Blank lines are skipped.
//!
//! The whole file is read and checked before anything is opened, every rule the queue would
//! apply included, and checked again against the store's clock before the one transaction
//! (`enqueue_many`, SPEC 6.17): so a bad line — not JSON, an unknown or missing field, a value
//! out of range, a deadline already past, an id given twice with two payloads — refuses the
//! whole file with its line number and field, exit 2, and enqueues nothing. What only the
//! store can tell, an id already stored with another payload, is that line's `conflict`, as
//! for one `enqueue`: it changes nothing for that id and does not stop the others (SPEC 6.17),
//! and the command exits 1.
//!
//! Standard output has one line per job, in the file's order: its id, a tab, and `enqueued`,
//! `existing` or `conflict` (ids with control characters escaped, so a tab in one cannot
//! shift the column). Standard error sums it up.

use std::collections::HashMap;
use std::io::{self, IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;

use retryq::{DEFAULT_QUEUE, Enqueued, MAX_ATTEMPTS, MAX_INT, MAX_PAYLOAD_BYTES, MAX_PRIORITY, NewJob};
use serde_json::{Map, Value};

use super::db::{ClockFlag, Db};
use super::schedule::{self, When};
use super::{CliError, duration, instant};
use crate::out::{noteln, outln};
use crate::printable::printable;

/// The fields a line may have: `enqueue`'s flags, in snake case.
const FIELDS: [&str; 11] = [
    "id",
    "payload",
    "max_attempts",
    "deadline",
    "ttl",
    "not_before",
    "start_in",
    "backoff_base",
    "backoff_cap",
    "queue",
    "priority",
];

/// Why a file was refused. Each is said after the file's name, and nothing was enqueued.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot be read: {0}")]
    Read(io::Error),
    #[error("is not UTF-8 text")]
    NotText,
    #[error("standard input is a terminal, and is not read: pipe the lines in, or name a file")]
    Terminal,
    #[error("holds no job: it is empty or only blank lines")]
    Empty,
    #[error("line {line}: not a JSON object ({why})")]
    NotObject { line: usize, why: String },
    #[error("line {line}: {field}: {why}")]
    Field { line: usize, field: String, why: String },
}

/// One line's job, its times as given.
#[derive(Debug)]
struct Line {
    number: usize,
    id: String,
    payload: String,
    max_attempts: u64,
    deadline: When,
    start: Option<When>,
    backoff_base: Option<u64>,
    backoff_cap: Option<u64>,
    queue: String,
    priority: Option<u64>,
}

/// Enqueues the jobs of `file` in one transaction (see the module's doc).
pub fn run(db: &Db, clock: &ClockFlag, file: &Path) -> Result<ExitCode, CliError> {
    let name = if file == Path::new("-") { "standard input".to_owned() } else { file.display().to_string() };
    let refuse = |e: FileError| CliError::flag("--file", format!("{name} {e}; nothing was enqueued"));
    let lines = read(file).and_then(|text| parse(&text)).map_err(refuse)?;
    // Checked against this host's clock before anything is opened, so that a bad line
    // creates nothing; on PostgreSQL the server's clock then decides.
    resolve(&lines, super::now()?).map_err(refuse)?;
    let mut queue = db.open_write(true)?;
    let now = clock.now(db, &*queue)?;
    let times = resolve(&lines, now).map_err(refuse)?;
    let jobs: Vec<NewJob<'_>> = lines
        .iter()
        .zip(&times)
        .map(|(line, &(deadline, not_before))| NewJob {
            id: &line.id,
            payload: &line.payload,
            max_attempts: line.max_attempts,
            deadline,
            now,
            not_before,
            base_ms: line.backoff_base,
            cap_ms: line.backoff_cap,
            queue: Some(&line.queue),
            priority: line.priority,
        })
        .collect();
    let results = queue.enqueue_many(&jobs).map_err(|e| db.explain(e))?;
    let (mut new, mut existing, mut conflicts, mut refused) = (0, 0, 0, 0);
    for (line, result) in lines.iter().zip(&results) {
        let word = match result {
            Ok(Enqueued::New) => {
                new += 1;
                "enqueued"
            }
            Ok(Enqueued::Existing) => {
                existing += 1;
                "existing"
            }
            Err(retryq::Error::Conflict { .. }) => {
                conflicts += 1;
                "conflict"
            }
            // Every rule was checked above; a refusal here is the store's own, said by line.
            Ok(_) | Err(_) => {
                refused += 1;
                noteln!("retryq: line {}: the queue answered {result:?}", line.number);
                "refused"
            }
        };
        outln!("{}\t{word}", printable(&line.id))?;
    }
    noteln!(
        "{name}: {new} enqueued, {existing} existing (nothing changed), {conflicts} conflicting (another \
         payload under the same id: nothing changed), in one transaction"
    );
    Ok(if conflicts + refused == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The file's text, or standard input's for `-` (never a terminal's).
fn read(file: &Path) -> Result<String, FileError> {
    let bytes = if file == Path::new("-") {
        let stdin = io::stdin();
        if stdin.is_terminal() {
            return Err(FileError::Terminal);
        }
        let mut bytes = Vec::new();
        stdin.lock().read_to_end(&mut bytes).map_err(FileError::Read)?;
        bytes
    } else {
        std::fs::read(file).map_err(FileError::Read)?
    };
    String::from_utf8(bytes).map_err(|_| FileError::NotText)
}

/// Every job of `text`, in order, each checked as the queue would check it; an id given twice
/// must carry the same payload both times (the second is then `existing`).
fn parse(text: &str) -> Result<Vec<Line>, FileError> {
    let mut lines: Vec<Line> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (index, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let line = parse_line(index + 1, raw)?;
        if let Some(&earlier) = seen.get(&line.id) {
            let first = &lines[earlier];
            if first.payload != line.payload {
                return Err(FileError::Field {
                    line: line.number,
                    field: "id".into(),
                    why: format!(
                        "\"{}\" is on line {} too, with another payload: one of them would be a conflict",
                        printable(&line.id),
                        first.number
                    ),
                });
            }
        } else {
            seen.insert(line.id.clone(), lines.len());
        }
        lines.push(line);
    }
    if lines.is_empty() { Err(FileError::Empty) } else { Ok(lines) }
}

/// One line's job.
fn parse_line(number: usize, raw: &str) -> Result<Line, FileError> {
    let value: Value =
        serde_json::from_str(raw).map_err(|e| FileError::NotObject { line: number, why: e.to_string() })?;
    let Value::Object(map) = value else {
        return Err(FileError::NotObject { line: number, why: format!("a JSON {}", kind(&value)) });
    };
    let fields = Fields { line: number, map };
    if let Some(unknown) = fields.map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(
            fields.wrong(unknown, format!("not a field of a job; the fields are {}", FIELDS.join(", ")))
        );
    }
    let id = fields.required("id", fields.string("id")?)?;
    super::name(&id).map_err(|why| fields.wrong("id", why))?;
    if id.contains('\0') {
        return Err(fields.wrong("id", "must not contain NUL (U+0000)"));
    }
    let payload = fields.required("payload", fields.string("payload")?)?;
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err(fields.wrong("payload", format!("is {} bytes; at most 1 MiB allowed", payload.len())));
    }
    let max_attempts = fields.required("max_attempts", fields.number("max_attempts", 1, MAX_ATTEMPTS)?)?;
    let deadline = match (fields.time("deadline", 1)?, fields.duration("ttl", 1)?) {
        (Some(_), Some(_)) => return Err(fields.wrong("ttl", "give deadline or ttl, not both")),
        (Some(at), None) => When::At(at),
        (None, Some(ttl)) => When::After(ttl),
        (None, None) => {
            return Err(fields.wrong("deadline", "missing: give deadline (a time) or ttl (a duration)"));
        }
    };
    let start = match (fields.time("not_before", 0)?, fields.duration("start_in", 0)?) {
        (Some(_), Some(_)) => return Err(fields.wrong("start_in", "give not_before or start_in, not both")),
        (at, after) => at.map(When::At).or(after.map(When::After)),
    };
    let queue = match fields.string("queue")? {
        Some(queue) => super::queue_name(&queue).map_err(|why| fields.wrong("queue", why))?,
        None => DEFAULT_QUEUE.to_owned(),
    };
    Ok(Line {
        number,
        id,
        payload,
        max_attempts,
        deadline,
        start,
        backoff_base: fields.duration("backoff_base", 0)?,
        backoff_cap: fields.duration("backoff_cap", 0)?,
        queue,
        priority: fields.number("priority", 0, MAX_PRIORITY)?,
    })
}

/// Each line's deadline and first start as of `now`, by SPEC 3.2's rules (`schedule.rs`).
fn resolve(lines: &[Line], now: u64) -> Result<Vec<(u64, Option<u64>)>, FileError> {
    let wrong = |line: &Line, field: &str, why: String| FileError::Field {
        line: line.number,
        field: field.into(),
        why,
    };
    lines
        .iter()
        .map(|line| {
            let field = if matches!(line.deadline, When::At(_)) { "deadline" } else { "ttl" };
            let deadline = schedule::deadline(line.deadline, now).map_err(|why| wrong(line, field, why))?;
            let Some(start) = line.start else { return Ok((deadline, None)) };
            let field = if matches!(start, When::At(_)) { "not_before" } else { "start_in" };
            let at = schedule::start(start, now, deadline).map_err(|why| wrong(line, field, why))?;
            Ok((deadline, Some(at)))
        })
        .collect()
}

/// One line's object, read field by field, each refusal naming the line and the field.
struct Fields {
    line: usize,
    map: Map<String, Value>,
}

impl Fields {
    fn wrong(&self, field: &str, why: impl Into<String>) -> FileError {
        FileError::Field { line: self.line, field: field.to_owned(), why: why.into() }
    }

    /// The field's value; a `null` is the field left out.
    fn get(&self, field: &str) -> Option<&Value> {
        self.map.get(field).filter(|v| !v.is_null())
    }

    fn required<T>(&self, field: &str, value: Option<T>) -> Result<T, FileError> {
        value.ok_or_else(|| self.wrong(field, "missing"))
    }

    fn string(&self, field: &str) -> Result<Option<String>, FileError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => {
                Err(self.wrong(field, format!("a string is expected, not a JSON {}", kind(other))))
            }
        }
    }

    /// A whole number in `min ..= max`.
    fn number(&self, field: &str, min: u64, max: u64) -> Result<Option<u64>, FileError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                _ => Err(self.wrong(field, format!("{n} is not a whole number in {min} … {max}"))),
            },
            Some(other) => {
                Err(self.wrong(field, format!("a number is expected, not a JSON {}", kind(other))))
            }
        }
    }

    /// A time at or after `min`: RFC 3339, or Unix milliseconds as a number or a string.
    fn time(&self, field: &str, min: u64) -> Result<Option<u64>, FileError> {
        let text = match self.get(field) {
            None => return Ok(None),
            Some(Value::String(text)) => text.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(other) => {
                return Err(self.wrong(
                    field,
                    format!("a time is RFC 3339 or Unix milliseconds, not a JSON {}", kind(other)),
                ));
            }
        };
        instant::at_least(min)(&text).map(Some).map_err(|e| self.wrong(field, format!("{text:?}: {e}")))
    }

    /// A duration of at least `min` ms, written as the flags take it: a string with its unit.
    fn duration(&self, field: &str, min: u64) -> Result<Option<u64>, FileError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(text)) => duration::millis(min, MAX_INT)(text)
                .map(Some)
                .map_err(|e| self.wrong(field, format!("{text:?}: {e}"))),
            Some(other) => Err(self.wrong(
                field,
                format!("a duration is a string with its unit (\"90s\", \"1h\"), not a JSON {}", kind(other)),
            )),
        }
    }
}

/// What kind of JSON value `value` is, for a refusal.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(text: &str) -> String {
        parse(text).map(|lines| format!("{lines:?}")).expect_err("refused").to_string()
    }

    #[test]
    fn every_field_is_read_as_its_flag_reads_it() {
        let text = r#"{"id":"a","payload":"p","max_attempts":3,"ttl":"1h"}

{"id":"b","payload":"","max_attempts":1,"deadline":"2100-01-01T00:00:00Z","not_before":1000,"backoff_base":"2s","backoff_cap":"1m","queue":"mail","priority":9}
{"id":"c","payload":"p","max_attempts":2,"deadline":"4102444800000","start_in":"0","queue":null}
{"id":"a","payload":"p","max_attempts":7,"ttl":"2h"}"#;
        let lines = parse(text).expect("read");
        assert_eq!(
            lines.iter().map(|l| l.number).collect::<Vec<_>>(),
            [1, 3, 4, 5],
            "blank lines are skipped"
        );
        assert_eq!(lines[0].deadline, When::After(3_600_000));
        let b = &lines[1];
        assert_eq!((b.deadline, b.start), (When::At(4_102_444_800_000), Some(When::At(1000))));
        assert_eq!(
            (b.backoff_base, b.backoff_cap, b.queue.as_str(), b.priority),
            (Some(2_000), Some(60_000), "mail", Some(9))
        );
        assert_eq!((lines[2].start, lines[2].queue.as_str()), (Some(When::After(0)), DEFAULT_QUEUE));
    }

    #[test]
    fn a_bad_line_is_named_with_its_field() {
        let ok = r#"{"id":"a","payload":"p","max_attempts":3,"ttl":"1h"}"#;
        let cases = [
            (r#"{"id":"b","payload":"p","max_attempts":3,"ttl":"5"}"#, "line 2: ttl: \"5\": 5 has no unit"),
            (
                r#"{"id":"b","payload":"p","max_attempts":3,"ttl":3600}"#,
                "line 2: ttl: a duration is a string",
            ),
            (r#"{"id":"b","payload":"p","max_attempts":0,"ttl":"1h"}"#, "line 2: max_attempts: 0 is not"),
            (r#"{"id":"b","payload":"p","ttl":"1h"}"#, "line 2: max_attempts: missing"),
            (r#"{"id":"b","payload":"p","max_attempts":3}"#, "line 2: deadline: missing"),
            (
                r#"{"id":"b","payload":"p","max_attempts":3,"ttl":"1h","deadline":5}"#,
                "line 2: ttl: give deadline or ttl",
            ),
            (
                r#"{"id":"b","payload":{"sku":1},"max_attempts":3,"ttl":"1h"}"#,
                "line 2: payload: a string is expected",
            ),
            (r#"{"id":"","payload":"p","max_attempts":3,"ttl":"1h"}"#, "line 2: id: must not be empty"),
            (
                r#"{"id":"b\u0000","payload":"p","max_attempts":3,"ttl":"1h"}"#,
                "line 2: id: must not contain NUL",
            ),
            (
                r#"{"id":"b","payload":"p","max_attempts":3,"ttl":"1h","priority":10}"#,
                "line 2: priority: 10 is not",
            ),
            (
                r#"{"id":"b","payload":"p","max_attempts":3,"ttl":"1h","queue":""}"#,
                "line 2: queue: a queue name",
            ),
            (
                r#"{"id":"b","payload":"p","max_attempts":3,"deadline":"2100-01-01T00:00:00.0001Z"}"#,
                "line 2: deadline: \"2100-01-01T00:00:00.0001Z\": finer",
            ),
            (
                r#"{"id":"b","payload":"p","max_attempts":3,"ttl":"1h","max_attempt":3}"#,
                "line 2: max_attempt: not a field of a job",
            ),
            (
                r#"{"id":"a","payload":"q","max_attempts":3,"ttl":"1h"}"#,
                "line 2: id: \"a\" is on line 1 too, with another payload",
            ),
            (r#"["a"]"#, "line 2: not a JSON object (a JSON array)"),
            (r#"{"id":"b""#, "line 2: not a JSON object (EOF while parsing"),
        ];
        for (bad, said) in cases {
            let text = format!("{ok}\n{bad}\n{ok}\n");
            let why = refusal(&text);
            assert!(why.starts_with(said), "{bad}: {why}");
        }
        assert_eq!(refusal("\n  \n"), "holds no job: it is empty or only blank lines");
    }

    #[test]
    fn times_are_checked_against_now_by_line() {
        let text = r#"{"id":"a","payload":"p","max_attempts":3,"ttl":"1h"}
{"id":"b","payload":"p","max_attempts":3,"ttl":"1h","start_in":"2h"}"#;
        let lines = parse(text).expect("read");
        let why = resolve(&lines, 1_000).expect_err("refused").to_string();
        assert!(why.starts_with("line 2: start_in: 2h from now, "), "{why}");
        let text = r#"{"id":"a","payload":"p","max_attempts":3,"deadline":999}"#;
        let why = resolve(&parse(text).expect("read"), 1_000).expect_err("refused").to_string();
        assert!(
            why.starts_with("line 1: deadline: 999 (1970-01-01T00:00:00.999Z) is not after now"),
            "{why}"
        );
    }
}
