//! `retryq enqueue --id ID [--payload TEXT | --empty-payload | payload on stdin]
//! --max-attempts N (--deadline TIME | --ttl DURATION) [--not-before TIME | --start-in
//! DURATION] [--backoff-base DURATION] [--backoff-cap DURATION]`: accept a job once, by its
//! business id.
//!
//! A scheduled start is given as the deadline is: a point in time, RFC 3339 or Unix
//! milliseconds (`--not-before`, see `instant.rs`), or a duration from now (`--start-in`).
//! The point is the primary form because a schedule is usually a time ("after midnight")
//! that a script computes the way it computes a deadline; the duration is the shorthand, resolved against the same clock
//! reading as the enqueue's `now`, so `--start-in 0` is due at once. `--backoff-base` and
//! `--backoff-cap` are the job's own retry windows (SPEC 3.2): each one given replaces the
//! worker's `--backoff-base`/`--backoff-cap` for this job alone, the other stays the worker's.
//!
//! Prints SPEC section 5's result: `{"ok":"enqueued"}`, `{"ok":"existing"}` (same id and
//! payload: nothing changed) or `{"error":"conflict"}` (same id, another payload; exit 1),
//! and on standard error what that means for this job in words (its id, payload size and
//! deadline in UTC). Creates the database if it does not exist.
//!
//! `--file FILE` (or `-`, standard input) enqueues many jobs at once, one JSON object a line:
//! see `enqueue_file.rs`.
//!
//! An empty payload is accepted only when said (`--payload ''` or `--empty-payload`): an
//! empty standard input is far more often a producer that failed upstream of the pipe than
//! a job meant to carry nothing, and a job enqueued once cannot be taken back.

use std::io::{self, IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use retryq::{Enqueued, MAX_ATTEMPTS, MAX_INT, MAX_PAYLOAD_BYTES, NewJob};
use retryq_model::{Failure, Reply, Response};

use super::db::{ClockFlag, Db};
use super::schedule::{self, When};
use super::{CliError, Deadline, duration, instant, print_json};
use crate::out::noteln;
use crate::printable::printable;

/// `--deadline`'s help here: the shared flag speaks of "the deadline", and in `enqueue` it is
/// the job's own.
const DEADLINE_HELP: &str = "The job's deadline, RFC 3339 or Unix milliseconds (2026-12-31T00:00:00Z, \
                             1798675200000): no attempt starts at or after it";

/// What `--file` replaces: every flag that describes the one job.
const ONE_JOB: [&str; 13] = [
    "id",
    "payload",
    "empty_payload",
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

#[derive(clap::Args, Debug)]
#[command(
    override_usage = "retryq enqueue [OPTIONS] --id <ID> --max-attempts <N> <--deadline <TIME>|--ttl <DURATION>>\n       \
                      retryq enqueue [OPTIONS] --file <FILE>",
    mut_arg("deadline", |a| a.help(DEADLINE_HELP).required_unless_present_any(["ttl", "file"])),
    mut_group("Deadline", |g| g.required(false))
)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    #[command(flatten)]
    clock: ClockFlag,
    /// Enqueue many jobs: one JSON object a line, with the fields of the flags below
    /// (`{"id":"a","payload":"…","max_attempts":5,"ttl":"1h"}`); `-` reads standard input.
    /// Written in short transactions that running workers go on between, checked up to 10,000
    /// lines at a time: a bad line stops the import before any of its lines is written, and
    /// says up to which line the file was enqueued
    #[arg(long, value_name = "FILE", conflicts_with_all = ONE_JOB)]
    file: Option<PathBuf>,
    /// The business id (1 to 256 bytes); receivers drop duplicates by it.
    #[arg(long, value_name = "ID", value_parser = super::name, required_unless_present = "file")]
    id: Option<String>,
    /// The payload (at most 1 MiB of UTF-8). Without it, standard input is read, and must
    /// not be empty (say --payload '' or --empty-payload for that); a terminal is never read.
    #[arg(long, value_name = "TEXT")]
    payload: Option<String>,
    /// Enqueue an empty payload, without reading standard input.
    #[arg(long, conflicts_with = "payload")]
    empty_payload: bool,
    /// The attempt budget: 1 to 2^31-1 claims.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=MAX_ATTEMPTS), required_unless_present = "file")]
    max_attempts: Option<u64>,
    #[command(flatten)]
    deadline: Deadline,
    /// No attempt before this time, RFC 3339 or Unix milliseconds: from now up to the
    /// deadline − 1 ms.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, value_parser = instant::at_least(0), conflicts_with = "start_in")]
    not_before: Option<u64>,
    /// No attempt before this long from now, with a unit: 90s, 1h, 2d (or 0).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = duration::millis(0, MAX_INT))]
    start_in: Option<u64>,
    /// This job's own first retry window, in place of the worker's --backoff-base.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = duration::millis(0, MAX_INT))]
    backoff_base: Option<u64>,
    /// This job's own largest retry window, in place of the worker's --backoff-cap.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = duration::millis(0, MAX_INT))]
    backoff_cap: Option<u64>,
    /// The queue the job goes to: only workers serving it (`work --queue`) run it. 1–64 bytes.
    #[arg(long, value_name = "NAME", default_value = retryq::DEFAULT_QUEUE, value_parser = super::queue_name)]
    queue: String,
    /// 0 (the most urgent, the default) … 9: a worker takes a smaller priority first.
    #[arg(long, value_name = "0-9", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(0..=retryq::MAX_PRIORITY))]
    priority: Option<u64>,
    /// What kind of job it is: the label a worker serving many kinds picks its handler by.
    /// At most 64 bytes; none by default. A re-enqueue of the id compares it with the payload.
    #[arg(long, value_name = "KIND", default_value = "", hide_default_value = true, value_parser = super::kind_name)]
    kind: String,
}

pub fn run(mut args: Args) -> Result<ExitCode, CliError> {
    if let Some(file) = &args.file {
        return super::enqueue_file::run(&args.db, &args.clock, file);
    }
    // clap requires both without --file; said again here rather than unwrapped.
    let (Some(id), Some(max_attempts)) = (args.id.take(), args.max_attempts) else {
        return Err(CliError::Usage("--id and --max-attempts are required without --file".into()));
    };
    let payload = match (args.payload.take(), args.empty_payload) {
        (Some(payload), _) => payload,
        (None, true) => String::new(),
        (None, false) => read_stdin()?,
    };
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err(CliError::flag(
            "--payload",
            format!("is {} bytes; at most 1 MiB allowed", payload.len()),
        ));
    }
    // The flags are checked against this host's clock before anything is opened, so that a
    // wrong one creates nothing; on PostgreSQL the server's clock then decides.
    schedule(&args, super::now()?)?;
    let mut queue = args.db.open_write(true)?;
    let now = args.clock.now(&args.db, &*queue)?;
    let (deadline, not_before) = schedule(&args, now)?;
    let job = NewJob {
        id: &id,
        payload: &payload,
        max_attempts,
        deadline,
        now,
        not_before,
        base_ms: args.backoff_base,
        cap_ms: args.backoff_cap,
        queue: Some(&args.queue),
        priority: args.priority,
        kind: &args.kind,
    };
    let (response, code) = match queue.enqueue(&job) {
        Ok(Enqueued::New) => (Response::Ok(Reply::Enqueued), ExitCode::SUCCESS),
        Ok(Enqueued::Existing) => (Response::Ok(Reply::Existing), ExitCode::SUCCESS),
        Ok(other) => {
            return Err(CliError::Other(format!(
                "the queue answered {other:?}, which this command does not name"
            )));
        }
        Err(retryq::Error::Conflict { .. }) => (Response::Err(Failure::Conflict), ExitCode::FAILURE),
        Err(retryq::Error::InvalidInput { field, reason }) => {
            let flag = match field {
                "not_before" if args.start_in.is_some() => "--start-in".to_owned(),
                "base_ms" => "--backoff-base".to_owned(),
                "cap_ms" => "--backoff-cap".to_owned(),
                field => format!("--{}", field.replace('_', "-")),
            };
            return Err(CliError::flag(&flag, reason));
        }
        Err(e) => return Err(args.db.explain(e)),
    };
    print_json(&response)?;
    say(&response, &job);
    Ok(code)
}

/// What the answer means for this job, in words, on standard error: scripts read the JSON
/// line, a person reads this.
fn say(response: &Response, job: &NewJob) {
    let id = printable(job.id);
    let from_now = |at: u64| humantime::format_duration(Duration::from_millis(at.saturating_sub(job.now)));
    match response {
        Response::Ok(Reply::Enqueued) => {
            noteln!(
                "enqueued \"{id}\": {} of payload, up to {}, deadline {} (in {})",
                plural(job.payload.len() as u64, "byte"),
                plural(job.max_attempts, "attempt"),
                super::view::utc(job.deadline),
                from_now(job.deadline)
            );
            if let Some(at) = job.not_before {
                noteln!("no attempt before {} (in {})", super::view::utc(at), from_now(at));
            }
        }
        Response::Ok(Reply::Existing) => noteln!(
            "\"{id}\" was already enqueued with this payload: nothing changed (its attempts, deadline, \
             schedule and backoff are those it was first given)"
        ),
        Response::Err(Failure::Conflict) => {
            noteln!("\"{id}\" was already enqueued with another payload: nothing changed")
        }
        _ => {}
    }
}

/// `1 byte`, `2 bytes`.
fn plural(n: u64, word: &str) -> String {
    if n == 1 { format!("1 {word}") } else { format!("{n} {word}s") }
}

/// The payload from standard input: 1 byte to 1 MiB of UTF-8, and never from a terminal (a
/// forgotten `--payload` would otherwise wait for typing).
fn read_stdin() -> Result<String, CliError> {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        return Err(CliError::flag(
            "--payload",
            "a payload is expected: give it with --payload TEXT or on standard input (standard input \
             is a terminal, and is not read), or say --empty-payload",
        ));
    }
    let mut bytes = Vec::new();
    stdin.lock().take(MAX_PAYLOAD_BYTES as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.is_empty() {
        return Err(CliError::flag(
            "--payload",
            "standard input was empty: nothing was enqueued; an empty payload must be said, with \
             --payload '' or --empty-payload",
        ));
    }
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return Err(CliError::flag("--payload", "standard input holds more than 1 MiB"));
    }
    String::from_utf8(bytes).map_err(|_| CliError::flag("--payload", "standard input is not UTF-8 text"))
}

/// The deadline and the first start the flags ask for, as of `now` (see `schedule.rs`).
fn schedule(args: &Args, now: u64) -> Result<(u64, Option<u64>), CliError> {
    let deadline = args.deadline.at(now)?;
    let (flag, when) = match (args.not_before, args.start_in) {
        (Some(at), _) => ("--not-before", When::At(at)),
        (None, Some(after)) => ("--start-in", When::After(after)),
        (None, None) => return Ok((deadline, None)),
    };
    let at = schedule::start(when, now, deadline).map_err(|why| CliError::flag(flag, why))?;
    Ok((deadline, Some(at)))
}
