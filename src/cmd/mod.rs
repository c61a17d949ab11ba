//! One module per subcommand. Each exposes `Args` (its clap flags) and
//! `run(Args) -> Result<ExitCode, CliError>`.
//!
//! Exit statuses, for every command: 0 success; 1 the operation was refused or failed (a
//! conflict, a missing job, an unusable database, audit violations); 2 a flag is wrong (the
//! message names it). `retryq work` adds 128 + N for a second signal N, and 78 (`EX_CONFIG`)
//! when its `--exec` command cannot be run at all (the shell exits 127, not found, or 126,
//! not executable): it stops at the first such attempt instead of spending every job's
//! budget on it. 141: standard output was closed.

pub mod audit;
pub mod bench;
pub mod cancel;
pub mod check;
pub mod conform;
pub mod db;
pub mod dead;
pub mod duration;
pub mod enqueue;
pub mod enqueue_file;
pub mod error;
pub mod explore;
pub mod file_lines;
pub mod get;
pub mod history;
pub mod instant;
pub mod job_line;
pub mod list;
pub mod pause;
pub mod prune;
pub mod reap;
pub mod redrive;
pub mod replay;
pub mod run_now;
pub mod schedule;
pub mod serve;
pub mod serve_demo;
pub mod simulate;
pub mod stats;
pub mod trampoline;
pub mod usage;
pub mod verify;
pub mod view;
pub mod work;

use std::path::{Path, PathBuf};

use retryq::MAX_ID_BYTES;

use crate::out::outln;
use schedule::When;

pub use error::CliError;

/// `tests/traces` under the working directory, or else under this checkout: where the
/// regression cases live.
pub fn default_traces() -> PathBuf {
    let here = PathBuf::from("tests/traces");
    if here.is_dir() { here } else { Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/traces") }
}

/// An id or worker name flag: 1 to 256 bytes.
pub fn name(value: &str) -> Result<String, String> {
    match value.len() {
        0 => Err("must not be empty".into()),
        n if n > MAX_ID_BYTES => Err(format!("is {n} bytes; at most {MAX_ID_BYTES} allowed")),
        _ => Ok(value.to_owned()),
    }
}

/// A queue name flag: 1 to 64 bytes, no NUL (SPEC 1.6).
pub fn queue_name(value: &str) -> Result<String, String> {
    match value.len() {
        0 => Err("a queue name must not be empty".into()),
        _ if value.contains('\0') => Err("a queue name must not contain NUL".into()),
        n if n > retryq::MAX_QUEUE_BYTES => {
            Err(format!("is {n} bytes; a queue name has at most {} bytes", retryq::MAX_QUEUE_BYTES))
        }
        _ => Ok(value.to_owned()),
    }
}

/// A job's kind (`enqueue --kind`, a job line's `kind`): at most 64 bytes, no NUL; empty is
/// no kind (SPEC 1.1).
pub fn kind_name(value: &str) -> Result<String, String> {
    match value.len() {
        _ if value.contains('\0') => Err("a kind must not contain NUL".into()),
        n if n > retryq::MAX_KIND_BYTES => {
            Err(format!("is {n} bytes; a kind has at most {} bytes", retryq::MAX_KIND_BYTES))
        }
        _ => Ok(value.to_owned()),
    }
}

/// The system clock, or a clear error.
pub fn now() -> Result<u64, CliError> {
    retryq_worker::now_ms().map_err(|e| CliError::Other(e.to_string()))
}

/// `--deadline TIME` or `--ttl DURATION`: exactly one. Its help speaks of "the deadline";
/// each command says whose in its own help (`enqueue`: the job's; `redrive`: the new one).
#[derive(clap::Args, Debug)]
#[group(required = true, multiple = false)]
pub struct Deadline {
    /// The deadline, RFC 3339 or Unix milliseconds (2026-12-31T00:00:00Z, 1798675200000):
    /// no attempt starts at or after it.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, value_parser = instant::at_least(1))]
    deadline: Option<u64>,
    /// The deadline as a duration from now, with a unit: 90s, 1h, 1h30m, 7d.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = duration::positive)]
    ttl: Option<u64>,
}

impl Deadline {
    /// The deadline in Unix milliseconds, which must be after `now`.
    pub fn at(&self, now: u64) -> Result<u64, CliError> {
        let (flag, when) = match (self.deadline, self.ttl) {
            (Some(deadline), _) => ("--deadline", When::At(deadline)),
            (None, Some(ttl)) => ("--ttl", When::After(ttl)),
            (None, None) => return Err(CliError::Usage("one of --deadline and --ttl is required".into())),
        };
        schedule::deadline(when, now).map_err(|why| CliError::flag(flag, why))
    }
}

/// Prints one JSON value as a line: every command's JSON goes through here (or
/// [`json_text`]).
pub fn print_json(value: &impl serde::Serialize) -> Result<(), CliError> {
    let line = serde_json::to_string(value).map_err(|e| CliError::Other(e.to_string()))?;
    outln!("{}", one_line(line))
}

/// `value` as pretty-printed JSON, escaped as [`print_json`] escapes.
pub fn json_text(value: &impl serde::Serialize) -> Result<String, CliError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| CliError::Other(e.to_string()))?;
    Ok(one_line(text))
}

/// JSON text with SPEC 5.4's escapes besides JSON's own: U+2028, U+2029 and U+0085 — legal
/// raw in a JSON string, but line ends to some line splitters — and, with U+0085, the rest of
/// the C1 controls (U+0080–U+009F), which a terminal may act on. They can only stand inside
/// strings, so the value is unchanged: `\u2028` reads back as U+2028.
pub fn one_line(json: String) -> String {
    let escaped = |c: char| matches!(c, '\u{80}'..='\u{9f}' | '\u{2028}' | '\u{2029}');
    if !json.contains(escaped) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if escaped(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}
