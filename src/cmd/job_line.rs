//! One line of `enqueue --file`: a JSON object with the fields of `enqueue`'s flags in snake
//! case, read into a job and checked by every rule the queue would apply — a refusal names the
//! line and the field.

use retryq::{DEFAULT_QUEUE, MAX_ATTEMPTS, MAX_INT, MAX_PAYLOAD_BYTES, MAX_PRIORITY, NewJob};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::schedule::{self, When};
use super::{duration, instant};

/// The fields a line may have: `enqueue`'s flags, in snake case.
pub const FIELDS: [&str; 12] = [
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
    "kind",
];

/// Why a line was refused: its number, and what was wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("line {line}: not a JSON object ({why})")]
    NotObject { line: usize, why: String },
    #[error("line {line}: {field}: {why}")]
    Field { line: usize, field: String, why: String },
}

/// One line's job, its times as given.
#[derive(Debug)]
pub struct Line {
    pub number: usize,
    pub id: String,
    payload: String,
    max_attempts: u64,
    deadline: When,
    start: Option<When>,
    backoff_base: Option<u64>,
    backoff_cap: Option<u64>,
    queue: String,
    priority: Option<u64>,
    kind: String,
}

/// A JSON object's members as written, a key given twice kept twice: serde_json's own map
/// keeps the last, so `{"id":"d3","id":"d4"}` would enqueue `d4` without a word.
struct Members(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, Value>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Each)
    }
}

/// The JSON object of line `number`, every key once.
fn object(number: usize, raw: &str) -> Result<Map<String, Value>, LineError> {
    let not_object = |why: String| LineError::NotObject { line: number, why };
    if !raw.trim_start().starts_with('{') {
        // Not an object: said by what it is, when it is JSON at all.
        let value: Value = serde_json::from_str(raw).map_err(|e| not_object(e.to_string()))?;
        return Err(not_object(format!("a JSON {}", kind(&value))));
    }
    let Members(members) = serde_json::from_str(raw).map_err(|e| not_object(e.to_string()))?;
    let mut map = Map::new();
    for (key, value) in members {
        if map.contains_key(&key) {
            let why = "given twice: each field once a line (JSON would keep the last without a word)";
            return Err(LineError::Field { line: number, field: key, why: why.into() });
        }
        map.insert(key, value);
    }
    Ok(map)
}

/// The job of line `number`, `raw` (not blank), checked as the queue would check it but for its
/// times, which [`Line::times`] checks against a clock.
pub fn parse_line(number: usize, raw: &str) -> Result<Line, LineError> {
    let fields = Fields { line: number, map: object(number, raw)? };
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
    let kind = match fields.string("kind")? {
        Some(kind) => super::kind_name(&kind).map_err(|why| fields.wrong("kind", why))?,
        None => String::new(),
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
        kind,
    })
}

impl Line {
    /// The job's deadline and first start as of `now`, by SPEC 3.2's rules (`schedule.rs`).
    pub fn times(&self, now: u64) -> Result<(u64, Option<u64>), LineError> {
        let wrong =
            |field: &str, why: String| LineError::Field { line: self.number, field: field.into(), why };
        let field = if matches!(self.deadline, When::At(_)) { "deadline" } else { "ttl" };
        let deadline = schedule::deadline(self.deadline, now).map_err(|why| wrong(field, why))?;
        let Some(start) = self.start else { return Ok((deadline, None)) };
        let field = if matches!(start, When::At(_)) { "not_before" } else { "start_in" };
        let at = schedule::start(start, now, deadline).map_err(|why| wrong(field, why))?;
        Ok((deadline, Some(at)))
    }

    /// The job at `now`, its times `times` (`Line::times` at that `now`).
    pub fn job(&self, now: u64, (deadline, not_before): (u64, Option<u64>)) -> NewJob<'_> {
        NewJob {
            id: &self.id,
            payload: &self.payload,
            max_attempts: self.max_attempts,
            deadline,
            now,
            not_before,
            base_ms: self.backoff_base,
            cap_ms: self.backoff_cap,
            queue: Some(&self.queue),
            priority: self.priority,
            kind: &self.kind,
        }
    }

    /// The bytes it holds, for bounding how many are kept at once.
    pub fn size(&self) -> usize {
        self.id.len() + self.payload.len() + self.queue.len() + self.kind.len()
    }
}

/// One line's object, read field by field, each refusal naming the line and the field.
struct Fields {
    line: usize,
    map: Map<String, Value>,
}

impl Fields {
    fn wrong(&self, field: &str, why: impl Into<String>) -> LineError {
        LineError::Field { line: self.line, field: field.to_owned(), why: why.into() }
    }

    /// The field's value; a `null` is the field left out.
    fn get(&self, field: &str) -> Option<&Value> {
        self.map.get(field).filter(|v| !v.is_null())
    }

    fn required<T>(&self, field: &str, value: Option<T>) -> Result<T, LineError> {
        value.ok_or_else(|| self.wrong(field, "missing"))
    }

    fn string(&self, field: &str) -> Result<Option<String>, LineError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => {
                Err(self.wrong(field, format!("a string is expected, not a JSON {}", kind(other))))
            }
        }
    }

    /// A whole number in `min ..= max`.
    fn number(&self, field: &str, min: u64, max: u64) -> Result<Option<u64>, LineError> {
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
    fn time(&self, field: &str, min: u64) -> Result<Option<u64>, LineError> {
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
    fn duration(&self, field: &str, min: u64) -> Result<Option<u64>, LineError> {
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

    /// The jobs of `text`'s lines that are not blank.
    fn parse(text: &str) -> Result<Vec<Line>, LineError> {
        let lines = text.lines().enumerate().filter(|(_, raw)| !raw.trim().is_empty());
        lines.map(|(i, raw)| parse_line(i + 1, raw)).collect()
    }

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
        assert_eq!(lines.iter().map(|l| l.number).collect::<Vec<_>>(), [1, 3, 4, 5]);
        assert_eq!(lines[0].deadline, When::After(3_600_000));
        let b = &lines[1];
        assert_eq!((b.deadline, b.start), (When::At(4_102_444_800_000), Some(When::At(1000))));
        assert_eq!(
            (b.backoff_base, b.backoff_cap, b.queue.as_str(), b.priority),
            (Some(2_000), Some(60_000), "mail", Some(9))
        );
        assert_eq!((lines[2].start, lines[2].queue.as_str()), (Some(When::After(0)), DEFAULT_QUEUE));
        let job = b.job(500, b.times(500).expect("times"));
        assert_eq!(
            (job.id, job.payload, job.max_attempts, job.deadline, job.now, job.not_before),
            ("b", "", 1, 4_102_444_800_000, 500, Some(1000))
        );
        assert_eq!(
            (job.base_ms, job.cap_ms, job.queue, job.priority),
            (Some(2_000), Some(60_000), Some("mail"), Some(9))
        );
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
            // A key given twice is refused, whichever comes first, a null included.
            (r#"{"id":"d3","id":"d4","payload":"p","max_attempts":3,"ttl":"1h"}"#, "line 2: id: given twice"),
            (
                r#"{"id":"b","payload":"p","max_attempts":3,"ttl":"1h","ttl":null}"#,
                "line 2: ttl: given twice",
            ),
            (
                r#"{"id":"b","max_attempts":3,"payload":"p","ttl":"1h","max_attempts":9}"#,
                "line 2: max_attempts: given twice",
            ),
            (r#"["a"]"#, "line 2: not a JSON object (a JSON array)"),
            (r#" "a""#, "line 2: not a JSON object (a JSON string)"),
            (r#"{"id":"b""#, "line 2: not a JSON object (EOF while parsing"),
            (r#"{"id":"b"} x"#, "line 2: not a JSON object (trailing characters"),
        ];
        for (bad, said) in cases {
            let text = format!("{ok}\n{bad}\n{ok}\n");
            let why = refusal(&text);
            assert!(why.starts_with(said), "{bad}: {why}");
        }
        // Nested objects may repeat keys: only the line's own fields are the job's.
        assert!(parse(r#"{"id":"b","payload":"{\"k\":1,\"k\":2}","max_attempts":3,"ttl":"1h"}"#).is_ok());
    }

    #[test]
    fn times_are_checked_against_now_by_line() {
        let text = r#"{"id":"a","payload":"p","max_attempts":3,"ttl":"1h"}
{"id":"b","payload":"p","max_attempts":3,"ttl":"1h","start_in":"2h"}"#;
        let lines = parse(text).expect("read");
        assert_eq!(lines[0].times(1_000).expect("a").0, 3_601_000);
        let why = lines[1].times(1_000).expect_err("refused").to_string();
        assert!(why.starts_with("line 2: start_in: 2h from now, "), "{why}");
        let text = r#"{"id":"a","payload":"p","max_attempts":3,"deadline":999}"#;
        let why = parse(text).expect("read")[0].times(1_000).expect_err("refused").to_string();
        assert!(
            why.starts_with("line 1: deadline: 999 (1970-01-01T00:00:00.999Z) is not after now"),
            "{why}"
        );
    }
}
