//! `retryq get ID [--human]`: SPEC section 5's `get` result for one job, as one JSON line
//! (`{"ok":"job",…}`), or `{"error":"not_found"}` and exit 1.
//!
//! The JSON stays exactly SPEC's, times in Unix milliseconds, because scripts and the
//! conformance tests read it. `--human` is for a person at a terminal: one field a line, every
//! time in milliseconds and in UTC, and what SPEC's object leaves out (when the job was
//! enqueued, who holds its lease, the last attempt's error).

use std::process::ExitCode;

use retryq::{Job, Lookup, Status};

use super::db::Db;
use super::{CliError, print_json, view};
use crate::out::{noteln, outln};
use crate::printable::printable;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    /// The job's id.
    #[arg(value_name = "ID", value_parser = super::name)]
    id: String,
    /// One field a line, for reading: times also in UTC, with the lease holder and the last
    /// error. Without it, SPEC's JSON object.
    #[arg(long)]
    human: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let queue = args.db.open_read()?;
    let job = match queue.lookup(&args.id).map_err(|e| args.db.explain(e))? {
        Some(Lookup::Pruned(tombstone)) if args.human => {
            let reason = tombstone.dead_reason.map(|r| format!(" ({r})")).unwrap_or_default();
            outln!(
                "{:?} was pruned: it ended {}{reason} at {} after {} attempts, in queue {:?}; its tombstone keeps the id from running again",
                printable(&tombstone.id),
                tombstone.status,
                view::stamp(tombstone.ended_at),
                tombstone.attempts,
                printable(&tombstone.queue)
            )?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(Lookup::Pruned(tombstone)) => {
            print_json(&view::tombstone(&tombstone))?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(Lookup::Job(job)) => Some(job),
        _ => None,
    };
    match (job, args.human) {
        (Some(job), false) => {
            print_json(&view::job(&job))?;
            Ok(ExitCode::SUCCESS)
        }
        (Some(job), true) => {
            for (name, value) in fields(&job) {
                outln!("{name:<13} {value}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        (None, false) => {
            print_json(&view::NOT_FOUND)?;
            Ok(ExitCode::FAILURE)
        }
        (None, true) => {
            noteln!("retryq: no job {:?}", args.id);
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The job's fields as `--human` shows them, in the order a person asks about a job: what
/// it is, where it stands, when it moves next, then the budget and the notes.
fn fields(job: &Job) -> Vec<(&'static str, String)> {
    let mut lines = vec![
        ("id", printable(&job.id).into_owned()),
        ("status", job.status.to_string()),
        ("attempts", format!("{} of {}", job.attempts, job.max_attempts)),
        ("queue", format!("{} (priority {})", printable(&job.queue), job.priority)),
    ];
    if job.cancel_requested {
        lines.push(("cancel", "requested: its worker is asked to stop the attempt".into()));
    }
    if let Some(at) = job.ended_at {
        lines.push(("ended at", view::stamp(at)));
    }
    if let Some(reason) = job.dead_reason {
        lines.push(("dead reason", reason.to_string()));
    }
    if let Some(at) = job.available_at {
        let name = if job.status == Status::Leased { "lease until" } else { "available at" };
        lines.push((name, view::stamp(at)));
    }
    if let Some(owner) = &job.owner {
        lines.push(("worker", printable(owner).into_owned()));
    }
    if let Some(at) = job.claimed_at {
        lines.push(("claimed at", view::stamp(at)));
    }
    lines.push(("deadline", view::stamp(job.deadline)));
    lines.push(("enqueued at", view::stamp(job.enqueued_at)));
    // Only a schedule that differs from the enqueue: an unscheduled job was due at once.
    if job.not_before != job.enqueued_at {
        lines.push(("not before", view::stamp(job.not_before)));
    }
    if let Some(base_ms) = job.base_ms {
        lines.push(("backoff base", format!("{base_ms} ms (its own)")));
    }
    if let Some(cap_ms) = job.cap_ms {
        lines.push(("backoff cap", format!("{cap_ms} ms (its own)")));
    }
    lines.push(("redrives", job.redrives.to_string()));
    if let Some(error) = &job.last_error {
        // One line: the error's own lines are joined.
        let error = error.split_whitespace().collect::<Vec<_>>().join(" ");
        lines.push(("last error", printable(&error).into_owned()));
    }
    if let Some(node) = &job.last_node {
        lines.push(("last node", printable(node).into_owned()));
    }
    lines
}
