//! `retryq history ID [--json]`: every recorded transition of a job, oldest first. The text
//! shows each time in Unix milliseconds and in UTC; `--json` keeps the milliseconds alone.

use std::process::ExitCode;

use retryq::{HistoryEntry, Status};
use serde::Serialize;

use super::db::Db;
use super::view::stamp;
use super::{CliError, print_json};
use crate::out::{noteln, outln};
use crate::printable::printable;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    /// The job's id.
    #[arg(value_name = "ID", value_parser = super::name)]
    id: String,
    /// One JSON object per transition.
    #[arg(long)]
    json: bool,
}

/// One transition, as `--json` prints it: the state after it, keys in this order.
#[derive(Serialize)]
struct Line<'a> {
    at: u64,
    from: Option<&'static str>,
    to: &'static str,
    attempts: u64,
    max_attempts: u64,
    available_at: Option<u64>,
    deadline: u64,
    dead_reason: Option<&'static str>,
    redrives: u64,
    worker: Option<&'a str>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let queue = args.db.open_read()?;
    let entries = queue.history(&args.id).map_err(|e| args.db.explain(e))?;
    if entries.is_empty() {
        noteln!("retryq: no job {:?}", args.id);
        return Ok(ExitCode::FAILURE);
    }
    for entry in &entries {
        if args.json {
            print_json(&Line {
                at: entry.at,
                from: entry.from.map(Status::as_str),
                to: entry.to.as_str(),
                attempts: entry.attempt,
                max_attempts: entry.max_attempts,
                available_at: entry.available_at,
                deadline: entry.deadline,
                dead_reason: entry.reason.map(|r| r.as_str()),
                redrives: entry.redrives,
                worker: entry.worker.as_deref(),
            })?;
        } else {
            outln!("{}", line(entry))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn line(e: &HistoryEntry) -> String {
    let from = e.from.map_or("(new)", Status::as_str);
    let mut text = format!(
        "{}  {from:>7} -> {:<7}  attempts {}/{}  deadline {}",
        stamp(e.at),
        e.to,
        e.attempt,
        e.max_attempts,
        stamp(e.deadline)
    );
    if let Some(at) = e.available_at {
        let word = if e.to == Status::Leased { "lease until" } else { "available at" };
        text.push_str(&format!("  {word} {}", stamp(at)));
    }
    if let Some(reason) = e.reason {
        text.push_str(&format!("  reason {reason}"));
    }
    if e.redrives > 0 {
        text.push_str(&format!("  redrives {}", e.redrives));
    }
    if let Some(worker) = &e.worker {
        text.push_str(&format!("  worker {}", printable(worker)));
    }
    text
}
