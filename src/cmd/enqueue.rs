//! `retryq enqueue --id ID [--payload TEXT | payload on stdin] --max-attempts N
//! (--deadline UNIX_MS | --ttl MS)`: accept a job once, by its business id.
//!
//! Prints SPEC section 5's result: `{"ok":"enqueued"}`, `{"ok":"existing"}` (same id and
//! payload: nothing changed) or `{"error":"conflict"}` (same id, another payload; exit 1).
//! Creates the database if it does not exist.

use std::io::{self, IsTerminal, Read};
use std::process::ExitCode;

use retryq::{Enqueued, MAX_ATTEMPTS, MAX_PAYLOAD_BYTES, NewJob};
use retryq_model::{Failure, Reply, Response};

use super::{CliError, Db, Deadline, print_json};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    /// The business id (1 to 256 bytes); receivers drop duplicates by it.
    #[arg(long, value_name = "ID", value_parser = super::name)]
    id: String,
    /// The payload (at most 1 MiB of UTF-8); without it, standard input is read.
    #[arg(long, value_name = "TEXT")]
    payload: Option<String>,
    /// The attempt budget: 1 to 2^31-1 claims.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=MAX_ATTEMPTS))]
    max_attempts: u64,
    #[command(flatten)]
    deadline: Deadline,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let payload = match args.payload {
        Some(payload) => payload,
        None => read_stdin()?,
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
    let job = NewJob { id: &args.id, payload: &payload, max_attempts: args.max_attempts, deadline, now };
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
    Ok(code)
}

/// The payload from standard input: at most 1 MiB of UTF-8, and never from a terminal (a
/// forgotten `--payload` would otherwise wait for typing).
fn read_stdin() -> Result<String, CliError> {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        return Err(CliError::flag("--payload", "give the payload with --payload TEXT or on standard input"));
    }
    let mut bytes = Vec::new();
    stdin.lock().take(MAX_PAYLOAD_BYTES as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return Err(CliError::flag("--payload", "standard input holds more than 1 MiB"));
    }
    String::from_utf8(bytes).map_err(|_| CliError::flag("--payload", "standard input is not UTF-8 text"))
}
