//! `retryq dead [--reason R] [--json]`: the dead jobs, why, and what their last recorded
//! attempt said went wrong. The table shows when each was enqueued and its deadline in Unix
//! milliseconds and in UTC; `--json` keeps the milliseconds alone.

use std::process::ExitCode;

use retryq::{DeadReason, Job};
use serde::Serialize;

use super::db::Db;
use super::view::{JobFields, stamp};
use super::{CliError, print_json};
use crate::out::{noteln, outln};
use crate::printable::printable;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    /// Only the jobs dead for this reason.
    #[arg(long, value_name = "R")]
    reason: Option<DeadReason>,
    /// One JSON object per job: SPEC's `get` fields plus `last_error` and `last_node`.
    #[arg(long)]
    json: bool,
}

/// SPEC's `get` fields, then the notes.
#[derive(Serialize)]
struct DeadJob<'a> {
    #[serde(flatten)]
    job: JobFields<'a>,
    last_error: Option<&'a str>,
    last_node: Option<&'a str>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let queue = args.db.open_read()?;
    let jobs = queue.dead_jobs(args.reason).map_err(|e| args.db.explain(e))?;
    if args.json {
        for job in &jobs {
            let line = DeadJob {
                job: JobFields::of(job),
                last_error: job.last_error.as_deref(),
                last_node: job.last_node.as_deref(),
            };
            print_json(&line)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if jobs.is_empty() {
        noteln!("no dead jobs");
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:<24} {:<16} {:<9} {:>8} {:>8}  {:<40}  {:<40}  last error",
        "id",
        "kind",
        "reason",
        "attempts",
        "redrives",
        "enqueued at",
        "deadline"
    )?;
    for job in &jobs {
        outln!("{}", line(job))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One job's line: its id and error as text a terminal shows and does not act on.
fn line(job: &Job) -> String {
    let reason = job.dead_reason.map_or("?", DeadReason::as_str);
    // One line per job: the error's lines are joined.
    let error = job.last_error.as_deref().unwrap_or("-").split_whitespace().collect::<Vec<_>>().join(" ");
    let error = printable(&error);
    let attempts = format!("{}/{}", job.attempts, job.max_attempts);
    format!(
        "{:<24} {:<16} {reason:<9} {attempts:>8} {:>8}  {:<40}  {:<40}  {error}",
        printable(&job.id),
        if job.kind.is_empty() { "-".into() } else { printable(&job.kind) },
        job.redrives,
        stamp(job.enqueued_at),
        stamp(job.deadline)
    )
}
