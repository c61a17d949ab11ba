//! Strict parsing of one replay line (SPEC section 5, "Input rules").
//!
//! serde_json checks the JSON; everything after that is checked here on each value's raw
//! text, because the rules are about how a number is *written*: `100.0`, `1e2` and `-0`
//! are not integers even though they have integer values, and `1e400` must be refused
//! naming its field rather than failing the whole line.
//!
//! What a value *means* is left to whoever runs the operation (see [`retryq_model::op`]): an
//! `attempt` of 0, a `deadline` not after `now` or a `not_before` outside `now … deadline − 1`
//! parse, and the executor refuses them naming the field, so both readings of the SPEC decide
//! those ranges on their own.

use std::fmt;

use retryq_model::{MAX_INT, Op, Outcome, RunOutcome};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// What one input line is.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    /// Empty, white space, or a `#` comment: produces no output.
    Skip,
    /// An operation to run.
    Op(Op),
    /// Refused: the detail names the field (or says what is wrong with the line).
    Invalid(String),
}

/// JSON's white space: what may surround a value, and all a skipped line may hold.
const JSON_WHITESPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// Reads one line (without or with its line ending).
pub fn parse_line(line: &str) -> Line {
    let content = line.trim_matches(JSON_WHITESPACE);
    if content.is_empty() || content.starts_with('#') {
        return Line::Skip;
    }
    match parse_op(content) {
        Ok(op) => Line::Op(op),
        Err(detail) => Line::Invalid(detail),
    }
}

fn parse_op(content: &str) -> Result<Op, String> {
    if !content.starts_with('{') {
        return Err("line: not a JSON object".into());
    }
    let Object(entries) = serde_json::from_str(content).map_err(|e| malformed(content, &e))?;
    for (i, (key, _)) in entries.iter().enumerate() {
        if entries[..i].iter().any(|(k, _)| k == key) {
            return Err(format!("{key}: duplicate key"));
        }
    }
    let mut fields = Fields { op: "", entries };
    let name = fields.required("op", string)?;
    fields.op = match OPS.iter().find(|&&op| op == name) {
        Some(op) => op,
        None => return Err(format!("op: unknown op {name:?}")),
    };
    let op = read_op(&mut fields)?;
    fields.finish()?;
    Ok(op)
}

const OPS: [&str; 18] = [
    "config",
    "enqueue",
    "claim",
    "complete",
    "run_once",
    "heartbeat",
    "redrive",
    "cancel",
    "reap",
    "prune",
    "forget",
    "pause",
    "resume",
    "run_now",
    "get",
    "stats",
    "retry_delay",
    "restart",
];

fn read_op(f: &mut Fields<'_>) -> Result<Op, String> {
    Ok(match f.op {
        "config" => Op::Config {
            base_ms: f.optional("base_ms", int)?,
            cap_ms: f.optional("cap_ms", int)?,
            lease_ms: f.optional("lease_ms", int)?,
            reap_limit: f.optional("reap_limit", int)?,
        },
        "enqueue" => Op::Enqueue {
            id: f.required("id", string)?,
            payload: f.optional("payload", string)?.unwrap_or_default(),
            max_attempts: f.required("max_attempts", int)?,
            deadline: f.required("deadline", int)?,
            now: f.required("now", int)?,
            not_before: f.optional("not_before", int)?,
            base_ms: f.optional("base_ms", int)?,
            cap_ms: f.optional("cap_ms", int)?,
            queue: f.optional("queue", string)?,
            priority: f.optional("priority", int)?,
            kind: f.optional("kind", string)?,
        },
        "claim" => Op::Claim {
            worker: f.required("worker", string)?,
            now: f.required("now", int)?,
            queues: f.optional("queues", strings)?,
        },
        "complete" => Op::Complete {
            worker: f.required("worker", string)?,
            id: f.required("id", string)?,
            attempt: f.required("attempt", int)?,
            outcome: f.required("outcome", outcome)?,
            now: f.required("now", int)?,
            jitter: f.optional("jitter", number)?,
        },
        "run_once" => Op::RunOnce {
            worker: f.required("worker", string)?,
            now: f.required("now", int)?,
            after: f.optional("after", int)?,
            outcome: f.required("outcome", run_outcome)?,
            jitter: f.optional("jitter", number)?,
            queues: f.optional("queues", strings)?,
        },
        "heartbeat" => Op::Heartbeat {
            worker: f.required("worker", string)?,
            id: f.required("id", string)?,
            attempt: f.required("attempt", int)?,
            now: f.required("now", int)?,
        },
        "cancel" => Op::Cancel { id: f.required("id", string)?, now: f.required("now", int)? },
        "redrive" => Op::Redrive {
            id: f.required("id", string)?,
            now: f.required("now", int)?,
            add_attempts: f.required("add_attempts", int)?,
            deadline: f.required("deadline", int)?,
        },
        "reap" => Op::Reap { now: f.required("now", int)? },
        "pause" => Op::Pause { queue: f.required("queue", string)?, now: f.required("now", int)? },
        "resume" => Op::Resume { queue: f.required("queue", string)?, now: f.required("now", int)? },
        "run_now" => Op::RunNow { id: f.required("id", string)?, now: f.required("now", int)? },
        "get" => Op::Get { id: f.required("id", string)? },
        "stats" => Op::Stats { now: f.required("now", int)?, queue: f.optional("queue", string)? },
        "prune" => Op::Prune { before: f.required("before", int)?, now: f.required("now", int)? },
        "forget" => Op::Forget { before: f.required("before", int)?, now: f.required("now", int)? },
        "retry_delay" => Op::RetryDelay {
            attempt: f.required("attempt", int)?,
            base_ms: f.required("base_ms", int)?,
            cap_ms: f.required("cap_ms", int)?,
            jitter: f.required("jitter", number)?,
        },
        _ => Op::Restart,
    })
}

/// Says what is malformed, naming the member it broke in when there is one: in
/// `{"now":NaN}` the field is `now`, even though no JSON reader got as far as a value.
fn malformed(content: &str, error: &serde_json::Error) -> String {
    // serde_json counts columns from 1, in bytes; the line is one line.
    let before = content.get(..error.column().saturating_sub(1)).unwrap_or(content);
    let key = before.rfind("\":").and_then(|end| {
        let start = before[..end].rfind('"')?;
        let key = &before[start + 1..end];
        (!key.is_empty() && !before[end + 2..].contains([',', '{', '}', '"'])).then_some(key)
    });
    match key {
        Some(key) => format!("{key}: malformed JSON value: {error}"),
        None => format!("line: malformed JSON: {error}"),
    }
}

/// The members of one JSON object, in order, each value still as written.
struct Object<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Object<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Members<'a> {
            type Value = Object<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Object<'a>, M::Error> {
                let mut members = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, &'de RawValue>()? {
                    members.push((key, value));
                }
                Ok(Object(members))
            }
        }
        deserializer.deserialize_map(Members(std::marker::PhantomData))
    }
}

/// The members of one line, taken one by one; whatever is left at the end is unknown.
struct Fields<'a> {
    op: &'static str,
    entries: Vec<(String, &'a RawValue)>,
}

impl Fields<'_> {
    fn take(&mut self, name: &str) -> Option<String> {
        let i = self.entries.iter().position(|(k, _)| k == name)?;
        Some(self.entries.remove(i).1.get().to_owned())
    }

    fn optional<T>(&mut self, name: &str, read: fn(&str) -> Result<T, String>) -> Result<Option<T>, String> {
        match self.take(name) {
            None => Ok(None),
            Some(raw) => read(&raw).map(Some).map_err(|why| format!("{name}: {why}")),
        }
    }

    fn required<T>(&mut self, name: &str, read: fn(&str) -> Result<T, String>) -> Result<T, String> {
        let op = self.op;
        self.optional(name, read)?.ok_or_else(|| match op {
            "" => format!("{name}: missing"),
            op => format!("{name}: missing (required by {op})"),
        })
    }

    fn finish(self) -> Result<(), String> {
        match self.entries.first() {
            None => Ok(()),
            Some((key, _)) => Err(format!("{key}: unknown field for op {}", self.op)),
        }
    }
}

/// What a raw JSON value is, for error messages.
fn kind(raw: &str) -> &'static str {
    match raw.as_bytes().first() {
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        _ => "a number",
    }
}

/// An integer: digits only, within 0 … 2^53 − 1.
fn int(raw: &str) -> Result<u64, String> {
    if kind(raw) != "a number" {
        return Err(format!("must be an integer, not {}", kind(raw)));
    }
    if raw.starts_with('-') {
        return Err(format!("must be a non-negative integer written without a sign, not {raw}"));
    }
    if !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "must be an integer written with digits only (no fraction or exponent), not {raw}"
        ));
    }
    match raw.parse::<u64>() {
        Ok(value) if value <= MAX_INT => Ok(value),
        _ => Err(format!("{raw} is out of range 0 … 2^53-1")),
    }
}

/// Any finite JSON number.
fn number(raw: &str) -> Result<f64, String> {
    if kind(raw) != "a number" {
        return Err(format!("must be a number, not {}", kind(raw)));
    }
    match serde_json::from_str::<f64>(raw) {
        Ok(value) if value.is_finite() => Ok(value),
        _ => Err(format!("{raw} is out of range")),
    }
}

/// A JSON string.
fn string(raw: &str) -> Result<String, String> {
    if kind(raw) != "a string" {
        return Err(format!("must be a string, not {}", kind(raw)));
    }
    serde_json::from_str::<String>(raw).map_err(|e| format!("invalid string: {e}"))
}

/// A JSON array of strings (a claim's `queues`); its length and names are the executor's to
/// judge (SPEC 5.2).
fn strings(raw: &str) -> Result<Vec<String>, String> {
    if kind(raw) != "an array" {
        return Err(format!("must be an array of strings, not {}", kind(raw)));
    }
    let values: Vec<Box<RawValue>> = serde_json::from_str(raw).map_err(|e| format!("invalid array: {e}"))?;
    values.iter().map(|value| string(value.get()).map_err(|why| format!("an element {why}"))).collect()
}

fn outcome(raw: &str) -> Result<Outcome, String> {
    Ok(match string(raw)?.as_str() {
        "ok" => Outcome::Ok,
        "retryable" => Outcome::Retryable,
        "permanent" => Outcome::Permanent,
        other => return Err(format!("{other:?} is not one of ok, retryable, permanent")),
    })
}

fn run_outcome(raw: &str) -> Result<RunOutcome, String> {
    Ok(match string(raw)?.as_str() {
        "ok" => RunOutcome::Ok,
        "retryable" => RunOutcome::Retryable,
        "permanent" => RunOutcome::Permanent,
        "unknown" => RunOutcome::Unknown,
        "crash" => RunOutcome::Crash,
        other => return Err(format!("{other:?} is not one of ok, retryable, permanent, unknown, crash")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(line: &str) -> String {
        match parse_line(line) {
            Line::Invalid(detail) => detail,
            other => panic!("{line} parsed as {other:?}"),
        }
    }

    #[test]
    fn blank_and_comment_lines_are_skipped() {
        for line in ["", "   ", "\t\r", "# a comment", "   # indented", "#"] {
            assert_eq!(parse_line(line), Line::Skip, "{line:?}");
        }
    }

    #[test]
    fn every_op_parses() {
        let cases = [
            (
                r#"{"op":"config"}"#,
                Op::Config { base_ms: None, cap_ms: None, lease_ms: None, reap_limit: None },
            ),
            (
                r#"{"op":"config","reap_limit":2}"#,
                Op::Config { base_ms: None, cap_ms: None, lease_ms: None, reap_limit: Some(2) },
            ),
            (
                r#"{"op":"enqueue","id":"a","max_attempts":5,"deadline":700,"now":0}"#,
                Op::Enqueue {
                    priority: None,
                    queue: None,
                    id: "a".into(),
                    payload: String::new(),
                    max_attempts: 5,
                    deadline: 700,
                    now: 0,
                    not_before: None,
                    base_ms: None,
                    cap_ms: None,
                    kind: None,
                },
            ),
            (
                r#"{"op":"enqueue","id":"a","payload":"x","max_attempts":5,"deadline":700,"now":0,"not_before":10,"base_ms":0,"cap_ms":9007199254740991}"#,
                Op::Enqueue {
                    priority: None,
                    queue: None,
                    id: "a".into(),
                    payload: "x".into(),
                    max_attempts: 5,
                    deadline: 700,
                    now: 0,
                    not_before: Some(10),
                    base_ms: Some(0),
                    cap_ms: Some(MAX_INT),
                    kind: None,
                },
            ),
            (
                r#"{"cap_ms":3,"op":"enqueue","id":"a","max_attempts":5,"deadline":700,"now":0}"#,
                Op::Enqueue {
                    priority: None,
                    queue: None,
                    id: "a".into(),
                    payload: String::new(),
                    max_attempts: 5,
                    deadline: 700,
                    now: 0,
                    not_before: None,
                    base_ms: None,
                    cap_ms: Some(3),
                    kind: None,
                },
            ),
            (
                r#"{"op":"heartbeat","worker":"w","id":"a","attempt":2,"now":5}"#,
                Op::Heartbeat { worker: "w".into(), id: "a".into(), attempt: 2, now: 5 },
            ),
            (r#"{"op":"cancel","id":"a","now":5}"#, Op::Cancel { id: "a".into(), now: 5 }),
            (
                r#" {"now":3,"op":"claim","worker":"w"} "#,
                Op::Claim { queues: None, worker: "w".into(), now: 3 },
            ),
            (
                r#"{"op":"complete","worker":"w","id":"a","attempt":1,"outcome":"retryable","now":5,"jitter":1}"#,
                Op::Complete {
                    worker: "w".into(),
                    id: "a".into(),
                    attempt: 1,
                    outcome: Outcome::Retryable,
                    now: 5,
                    jitter: Some(1.0),
                },
            ),
            (
                r#"{"op":"run_once","worker":"w","now":1,"after":2,"outcome":"crash"}"#,
                Op::RunOnce {
                    queues: None,
                    worker: "w".into(),
                    now: 1,
                    after: Some(2),
                    outcome: RunOutcome::Crash,
                    jitter: None,
                },
            ),
            (
                r#"{"op":"redrive","id":"a","now":1,"add_attempts":2,"deadline":9}"#,
                Op::Redrive { id: "a".into(), now: 1, add_attempts: 2, deadline: 9 },
            ),
            (r#"{"op":"reap","now":9007199254740991}"#, Op::Reap { now: MAX_INT }),
            (r#"{"op":"get","id":"\u00e9"}"#, Op::Get { id: "é".into() }),
            (r#"{"op":"stats","now":0}"#, Op::Stats { queue: None, now: 0 }),
            (
                r#"{"op":"retry_delay","attempt":3,"base_ms":100,"cap_ms":250,"jitter":5e-1}"#,
                Op::RetryDelay { attempt: 3, base_ms: 100, cap_ms: 250, jitter: 0.5 },
            ),
            (r#"{"op":"pause","queue":"mail","now":10}"#, Op::Pause { queue: "mail".into(), now: 10 }),
            (r#"{"op":"resume","now":0,"queue":"q\u00e9"}"#, Op::Resume { queue: "qé".into(), now: 0 }),
            (r#"{"op":"run_now","id":"b","now":40}"#, Op::RunNow { id: "b".into(), now: 40 }),
            (r#"{"op":"restart"}"#, Op::Restart),
        ];
        for (line, op) in cases {
            assert_eq!(parse_line(line), Line::Op(op.clone()), "{line}");
            // What the vocabulary writes, this parser reads back.
            assert_eq!(parse_line(&op.to_json_line()), Line::Op(op), "{line}");
        }
    }

    #[test]
    fn integers_are_digits_only_and_in_range() {
        for (value, why) in [
            ("100.0", "digits only"),
            ("1e2", "digits only"),
            ("1E2", "digits only"),
            ("-0", "without a sign"),
            ("-1", "without a sign"),
            ("9007199254740992", "out of range"),
            ("99999999999999999999999", "out of range"),
            ("true", "not a boolean"),
            ("\"5\"", "not a string"),
            ("null", "not null"),
            ("[1]", "not an array"),
            ("{}", "not an object"),
        ] {
            let detail = invalid(&format!(r#"{{"op":"stats","now":{value}}}"#));
            assert!(detail.starts_with("now: ") && detail.contains(why), "{value}: {detail}");
        }
    }

    #[test]
    fn jitter_is_any_finite_number() {
        let line =
            |j: &str| format!(r#"{{"op":"retry_delay","attempt":1,"base_ms":1,"cap_ms":1,"jitter":{j}}}"#);
        for ok in ["0", "1", "0.5", "1e-1", "-0", "1.0", "2"] {
            assert!(matches!(parse_line(&line(ok)), Line::Op(_)), "{ok}");
        }
        for bad in ["1e400", "-1e400", "\"0.5\"", "true", "null"] {
            assert!(invalid(&line(bad)).starts_with("jitter: "), "{bad}");
        }
    }

    /// SPEC 5.2 and 6.2: a jitter literal is the nearest binary64 value. This needs
    /// serde_json's `float_roundtrip` feature: without it this literal lands one ulp away.
    #[test]
    fn jitter_literals_round_to_the_nearest_binary64() {
        let line = r#"{"op":"retry_delay","attempt":1,"base_ms":1,"cap_ms":1,"jitter":0.818108110530233188}"#;
        let Line::Op(Op::RetryDelay { jitter, .. }) = parse_line(line) else { panic!("parses") };
        assert_eq!(jitter.to_bits(), 0x3fea_2df1_0f6a_3b05, "0x1.a2df10f6a3b05p-1, not a neighbour");
    }

    #[test]
    fn malformed_lines_and_objects_are_refused() {
        for (line, field) in [
            ("{", "line: "),
            ("[1,2]", "line: "),
            ("\"op\"", "line: "),
            ("nonsense", "line: "),
            (r#"{"op":"stats","now":1} {}"#, "line: "),
            (r#"{"op":"stats","now":01}"#, "now: malformed"),
            (r#"{"op":"stats","now":NaN}"#, "now: malformed"),
            (r#"{"op":"stats","now":Infinity}"#, "now: malformed"),
            (r#"{"op":"stats","now":-Infinity}"#, "now: malformed"),
            (r#"{"op":"stats","now":1,"x":tru}"#, "x: malformed"),
            (r#"{"op":"stats","now":1,}"#, "line: "),
            (r#"{"op":"stats" "now":1}"#, "line: "),
            (r#"{"now":1}"#, "op: missing"),
            (r#"{"op":"frobnicate"}"#, "op: unknown op"),
            (r#"{"op":5}"#, "op: must be a string"),
            (r#"{"op":"stats"}"#, "now: missing"),
            (r#"{"op":"stats","now":1,"extra":2}"#, "extra: unknown field"),
            (r#"{"op":"restart","now":1}"#, "now: unknown field"),
            (r#"{"op":"stats","now":1,"now":2}"#, "now: duplicate key"),
            (r#"{"op":"stats","op":"stats","now":1}"#, "op: duplicate key"),
            (r#"{"op":"complete","worker":"w","id":"a","attempt":1,"outcome":"fine","now":1}"#, "outcome: "),
            (r#"{"op":"run_once","worker":"w","now":1,"outcome":"Crash"}"#, "outcome: "),
            (r#"{"op":"enqueue","id":7,"max_attempts":1,"deadline":2,"now":1}"#, "id: must be a string"),
            (
                r#"{"op":"enqueue","id":"a","payload":null,"max_attempts":1,"deadline":2,"now":1}"#,
                "payload: ",
            ),
            (r#"{"op":"config","lease_ms":null}"#, "lease_ms: "),
            (r#"{"op":"config","reap_limit":1.0}"#, "reap_limit: "),
            (r#"{"op":"config","reap_limit":-1}"#, "reap_limit: "),
            (r#"{"op":"heartbeat","worker":"w","id":"a","attempt":1}"#, "now: missing"),
            (r#"{"op":"heartbeat","worker":"w","id":"a","now":1}"#, "attempt: missing"),
            (r#"{"op":"heartbeat","id":"a","attempt":1,"now":1}"#, "worker: missing"),
            (
                r#"{"op":"heartbeat","worker":"w","id":"a","attempt":1,"now":1,"jitter":0}"#,
                "jitter: unknown field",
            ),
            (
                r#"{"op":"heartbeat","worker":"w","id":"a","attempt":1.0,"now":1}"#,
                "attempt: must be an integer",
            ),
            (
                r#"{"op":"heartbeat","worker":"w","id":"a","attempt":-1,"now":1}"#,
                "attempt: must be a non-negative",
            ),
            (r#"{"op":"heartbeat","worker":"w","id":["a"],"attempt":1,"now":1}"#, "id: must be a string"),
            (r#"{"op":"cancel","id":"a"}"#, "now: missing"),
            (r#"{"op":"cancel","now":1}"#, "id: missing"),
            (r#"{"op":"cancel","id":"a","now":1,"worker":"w"}"#, "worker: unknown field"),
            (r#"{"op":"cancel","id":"a","now":1e0}"#, "now: must be an integer"),
            (r#"{"op":"cancel","id":"a","now":1,"now":2}"#, "now: duplicate key"),
            (r#"{"op":"pause","now":1}"#, "queue: missing"),
            (r#"{"op":"pause","queue":"q"}"#, "now: missing"),
            (r#"{"op":"pause","queue":["q"],"now":1}"#, "queue: must be a string"),
            (r#"{"op":"resume","queue":"q","now":-1}"#, "now: must be a non-negative"),
            (r#"{"op":"resume","queue":"q","now":1,"id":"a"}"#, "id: unknown field"),
            (r#"{"op":"run_now","now":1}"#, "id: missing"),
            (r#"{"op":"run_now","id":"a","now":9007199254740992}"#, "now: 9007199254740992 is out of range"),
            (r#"{"op":"run_now","id":"a","now":1,"queue":"q"}"#, "queue: unknown field"),
            (
                r#"{"op":"enqueue","id":"a","max_attempts":1,"deadline":2,"now":1,"not_before":"1"}"#,
                "not_before: must be an integer",
            ),
            (
                r#"{"op":"enqueue","id":"a","max_attempts":1,"deadline":2,"now":1,"not_before":null}"#,
                "not_before: ",
            ),
            (
                r#"{"op":"enqueue","id":"a","max_attempts":1,"deadline":2,"now":1,"not_before":1.5}"#,
                "not_before: must be an integer",
            ),
            (
                r#"{"op":"enqueue","id":"a","max_attempts":1,"deadline":2,"now":1,"base_ms":-0}"#,
                "base_ms: must be a non-negative",
            ),
            (
                r#"{"op":"enqueue","id":"a","max_attempts":1,"deadline":2,"now":1,"cap_ms":9007199254740992}"#,
                "cap_ms: 9007199254740992 is out of range",
            ),
            (
                r#"{"op":"enqueue","id":"a","max_attempts":1,"deadline":2,"now":1,"cap_ms":1e3}"#,
                "cap_ms: must be an integer",
            ),
            (
                r#"{"op":"enqueue","id":"a","max_attempts":1,"deadline":2,"now":1,"lease_ms":5}"#,
                "lease_ms: unknown field",
            ),
            (
                r#"{"op":"enqueue","id":"a","max_attempts":1,"deadline":2,"now":1,"not_before":1,"not_before":1}"#,
                "not_before: duplicate key",
            ),
        ] {
            let detail = invalid(line);
            assert!(detail.starts_with(field), "{line}: {detail}");
        }
    }

    /// The ranges that need other fields or the meaning of a value are the executor's (the
    /// module doc): these lines parse, and the reference store refuses each naming its field.
    #[test]
    fn the_1_1_ranges_are_refused_by_the_executor_naming_the_field() {
        for (line, field) in [
            (
                r#"{"op":"enqueue","id":"a","max_attempts":1,"deadline":9,"now":5,"not_before":4}"#,
                "not_before:",
            ),
            (
                r#"{"op":"enqueue","id":"a","max_attempts":1,"deadline":9,"now":5,"not_before":9}"#,
                "not_before:",
            ),
            (
                r#"{"op":"enqueue","id":"a","max_attempts":1,"deadline":9,"now":5,"not_before":10}"#,
                "not_before:",
            ),
            (r#"{"op":"heartbeat","worker":"w","id":"a","attempt":0,"now":1}"#, "attempt:"),
            (r#"{"op":"heartbeat","worker":"","id":"a","attempt":1,"now":1}"#, "worker:"),
            (r#"{"op":"heartbeat","worker":"w","id":"a\u0000","attempt":1,"now":1}"#, "id:"),
            (r#"{"op":"cancel","id":"","now":1}"#, "id:"),
            (r#"{"op":"run_now","id":"","now":1}"#, "id:"),
            (r#"{"op":"run_now","id":"a\u0000","now":1}"#, "id:"),
            (r#"{"op":"pause","queue":"","now":1}"#, "queue:"),
            (r#"{"op":"resume","queue":"q\u0000","now":1}"#, "queue:"),
            (
                r#"{"op":"pause","queue":"qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq","now":1}"#,
                "queue:",
            ),
        ] {
            let Line::Op(op) = parse_line(line) else { panic!("{line} parses") };
            match retryq_model::Store::new().step(&op) {
                retryq_model::Response::Err(retryq_model::Failure::InvalidInput { detail }) => {
                    assert!(detail.starts_with(field), "{line}: {detail}")
                }
                other => panic!("{line}: {other:?}"),
            }
        }
        // The edges of the schedule are accepted: `now` itself and `deadline − 1`.
        for line in [
            r#"{"op":"enqueue","id":"a","max_attempts":1,"deadline":9,"now":5,"not_before":5}"#,
            r#"{"op":"enqueue","id":"a","max_attempts":1,"deadline":9,"now":5,"not_before":8}"#,
        ] {
            let Line::Op(op) = parse_line(line) else { panic!("{line} parses") };
            let enqueued = retryq_model::Response::Ok(retryq_model::Reply::Enqueued);
            assert_eq!(retryq_model::Store::new().step(&op), enqueued, "{line}");
        }
    }
}
