//! `retryq enqueue --id ID [--payload TEXT | --empty-payload | payload on stdin]
//! --max-attempts N (--deadline UNIX_MS | --ttl DURATION)`: accept a job once, by its
//! business id.
//!
//! Prints SPEC section 5's result: `{"ok":"enqueued"}`, `{"ok":"existing"}` (same id and
//! payload: nothing changed) or `{"error":"conflict"}` (same id, another payload; exit 1),
//! and on standard error what that means for this job in words (its id, payload size and
//! deadline in UTC). Creates the database if it does not exist.
//!
//! An empty payload is accepted only when said (`--payload ''` or `--empty-payload`): an
//! empty standard input is far more often a producer that failed upstream of the pipe than
//! a job meant to carry nothing, and a job enqueued once cannot be taken back.

use std::io::{self, IsTerminal, Read};
use std::process::ExitCode;
use std::time::Duration;

use retryq::{Enqueued, MAX_ATTEMPTS, MAX_PAYLOAD_BYTES, NewJob};
use retryq_model::{Failure, Reply, Response};

use super::{CliError, Db, Deadline, print_json};
use crate::out::noteln;
use crate::printable::printable;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    /// The business id (1 to 256 bytes); receivers drop duplicates by it.
    #[arg(long, value_name = "ID", value_parser = super::name)]
    id: String,
    /// The payload (at most 1 MiB of UTF-8). Without it, standard input is read, and must
    /// not be empty (say --payload '' or --empty-payload for that); a terminal is never read.
    #[arg(long, value_name = "TEXT")]
    payload: Option<String>,
    /// Enqueue an empty payload, without reading standard input.
    #[arg(long, conflicts_with = "payload")]
    empty_payload: bool,
    /// The attempt budget: 1 to 2^31-1 claims.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=MAX_ATTEMPTS))]
    max_attempts: u64,
    #[command(flatten)]
    deadline: Deadline,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let payload = match (args.payload, args.empty_payload) {
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
    let now = super::now()?;
    let deadline = args.deadline.at(now)?;
    let mut queue = args.db.open_write(true)?;
    let job = NewJob {
        id: &args.id,
        payload: &payload,
        max_attempts: args.max_attempts,
        deadline,
        now,
        ..NewJob::default()
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
            return Err(CliError::flag(&format!("--{}", field.replace('_', "-")), reason));
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
    match response {
        Response::Ok(Reply::Enqueued) => noteln!(
            "enqueued \"{id}\": {} of payload, up to {}, deadline {} (in {})",
            plural(job.payload.len() as u64, "byte"),
            plural(job.max_attempts, "attempt"),
            super::view::utc(job.deadline),
            humantime::format_duration(Duration::from_millis(job.deadline.saturating_sub(job.now)))
        ),
        Response::Ok(Reply::Existing) => noteln!(
            "\"{id}\" was already enqueued with this payload: nothing changed (its attempts and deadline \
             are those it was first given)"
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
