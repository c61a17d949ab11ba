//! `retryq list [--status S] [--reason R] [--limit N] [--json]`: the jobs of one status, or
//! of every status, a page at a time, in the order an operator needs them.
//!
//! Without `--status` (or `--reason`, which means the dead) every job is listed, status by
//! status in the order a job lives through them — pending, leased, done, dead — each in its
//! own order below and, in text, under its own header; `--limit` bounds the page as a whole.
//! A bare `retryq list` is what an operator types first, and it should answer rather than
//! ask for a flag.
//!
//! Pending and leased jobs come in the order claim takes them (`available_at`, then first
//! enqueue): the top of the list is what runs next. Done and dead jobs come the most recently
//! enqueued first: no index orders them by when they finished, and a listing does not change
//! the schema (see `Queue::list`). How many more match than the page shows is said on
//! standard error, so that the page's lines stay the jobs alone.

use std::process::ExitCode;

use retryq::{DeadReason, Job, Status};

use super::db::Db;
use super::view::{self, stamp};
use super::{CliError, print_json};
use crate::out::{noteln, outln};
use crate::printable::printable;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    /// Which jobs: pending, leased, done or dead (dead if only --reason is given). Default:
    /// every job, status by status in that order.
    #[arg(long, value_name = "S")]
    status: Option<Status>,
    /// Only the dead jobs dead for this reason: exhausted, deadline, permanent or cancelled.
    #[arg(long, value_name = "R")]
    reason: Option<DeadReason>,
    /// At most this many jobs; how many more there are is said on standard error.
    #[arg(long, value_name = "N", default_value_t = 100, allow_negative_numbers = true)]
    limit: u32,
    /// One JSON object per job, exactly as `retryq get` prints it.
    #[arg(long)]
    json: bool,
}

/// Every status, in the order a job lives through them: what a bare `list` shows.
const EVERY: [Status; 4] = [Status::Pending, Status::Leased, Status::Done, Status::Dead];

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let status = match (args.status, args.reason) {
        (None, None) => return every(&args),
        (None, Some(_)) | (Some(Status::Dead), _) => Status::Dead,
        (Some(status), None) => status,
        (Some(status), Some(reason)) => {
            return Err(CliError::flag(
                "--reason",
                format!(
                    "only dead jobs have a reason: use --reason {reason} with --status dead or alone, \
                     not with --status {status}"
                ),
            ));
        }
    };
    let queue = args.db.open_read()?;
    let page = queue.list(status, args.reason, args.limit).map_err(|e| args.db.explain(e))?;
    let what = match args.reason {
        Some(reason) => format!("{status} ({reason})"),
        None => status.to_string(),
    };
    if args.json {
        for job in &page.jobs {
            print_json(&view::job(job))?;
        }
    } else if !page.jobs.is_empty() {
        let columns = columns(status);
        outln!("{}", row(columns, columns.iter().map(|(name, _)| name.to_string()).collect()))?;
        for job in &page.jobs {
            outln!("{}", row(columns, cells(job)))?;
        }
    } else if page.more == 0 {
        noteln!("no {what} jobs");
    }
    if page.more > 0 {
        let jobs = if page.more == 1 { "job" } else { "jobs" };
        noteln!("retryq: {} more {what} {jobs} not shown (--limit {})", page.more, args.limit);
    }
    Ok(ExitCode::SUCCESS)
}

/// Every job: each status's page in turn, out of one `--limit`, in text each under its own
/// header (the columns that tell its jobs apart) with a blank line between. What the limit
/// left out is counted, status by status, and said once.
fn every(args: &Args) -> Result<ExitCode, CliError> {
    let queue = args.db.open_read()?;
    let mut left = args.limit;
    let mut more = 0;
    let mut shown = 0;
    for status in EVERY {
        let page = queue.list(status, None, left).map_err(|e| args.db.explain(e))?;
        more += page.more;
        if page.jobs.is_empty() {
            continue;
        }
        left = left.saturating_sub(u32::try_from(page.jobs.len()).unwrap_or(u32::MAX));
        if args.json {
            for job in &page.jobs {
                print_json(&view::job(job))?;
            }
        } else {
            if shown > 0 {
                outln!()?;
            }
            let columns = columns(status);
            outln!("{}", row(columns, columns.iter().map(|(name, _)| name.to_string()).collect()))?;
            for job in &page.jobs {
                outln!("{}", row(columns, cells(job)))?;
            }
        }
        shown += page.jobs.len();
    }
    if shown == 0 && more == 0 {
        noteln!("no jobs");
    }
    if more > 0 {
        let jobs = if more == 1 { "job" } else { "jobs" };
        noteln!("retryq: {more} more {jobs} not shown (--limit {})", args.limit);
    }
    Ok(ExitCode::SUCCESS)
}

/// A time in milliseconds with its UTC form beside it is at most this wide.
const TIME: usize = 40;

/// The columns a listing of `status` shows, with their widths: what tells one such job from
/// another. The last column is as wide as its text.
fn columns(status: Status) -> &'static [(&'static str, usize)] {
    const ID: (&str, usize) = ("id", 24);
    const STATUS: (&str, usize) = ("status", 7);
    const ATTEMPTS: (&str, usize) = ("attempts", 8);
    const KIND: (&str, usize) = ("kind", 16);
    match status {
        Status::Pending => &[ID, STATUS, KIND, ATTEMPTS, ("available at", TIME), ("deadline", 0)],
        Status::Leased => {
            &[ID, STATUS, KIND, ATTEMPTS, ("lease until", TIME), ("deadline", TIME), ("worker", 0)]
        }
        Status::Done => &[ID, STATUS, KIND, ATTEMPTS, ("enqueued at", TIME), ("redrives", 0)],
        _ => &[ID, STATUS, KIND, ATTEMPTS, ("reason", 9), ("enqueued at", TIME), ("deadline", 0)],
    }
}

/// One job's cells, in [`columns`]' order for its status.
fn cells(job: &Job) -> Vec<String> {
    let mut cells = vec![
        printable(&job.id).into_owned(),
        job.status.to_string(),
        if job.kind.is_empty() { "-".to_owned() } else { printable(&job.kind).into_owned() },
        format!("{}/{}", job.attempts, job.max_attempts),
    ];
    let available = job.available_at.map_or_else(|| "-".to_owned(), stamp);
    match job.status {
        Status::Pending => cells.extend([available, stamp(job.deadline)]),
        Status::Leased => {
            let worker = job.owner.as_deref().map_or_else(|| "-".to_owned(), |w| printable(w).into_owned());
            cells.extend([available, stamp(job.deadline), worker]);
        }
        Status::Done => cells.extend([stamp(job.enqueued_at), job.redrives.to_string()]),
        _ => {
            let reason = job.dead_reason.map_or("?", DeadReason::as_str).to_owned();
            cells.extend([reason, stamp(job.enqueued_at), stamp(job.deadline)]);
        }
    }
    cells
}

/// Cells as one line, each padded to its column's width (attempts, a number, to the right)
/// and two spaces apart; a longer id pushes the rest of its line along rather than being cut.
fn row(columns: &[(&str, usize)], cells: Vec<String>) -> String {
    let mut line = String::new();
    for ((name, width), cell) in columns.iter().zip(cells) {
        if !line.is_empty() {
            line.push_str("  ");
        }
        if *name == "attempts" {
            line.push_str(&format!("{cell:>width$}"));
        } else {
            line.push_str(&format!("{cell:<width$}"));
        }
    }
    line.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_under_their_names() {
        let job = Job {
            id: "order-7".into(),
            payload: String::new(),
            status: Status::Dead,
            attempts: 3,
            max_attempts: 3,
            available_at: None,
            deadline: 1_796_062_956_712,
            dead_reason: Some(DeadReason::Exhausted),
            redrives: 0,
            enqueued_at: 1_796_059_356_712,
            owner: None,
            claimed_at: None,
            last_error: None,
            last_node: None,
            not_before: 1_796_059_356_712,
            base_ms: None,
            cap_ms: None,
            queue: retryq::DEFAULT_QUEUE.into(),
            priority: 0,
            ended_at: Some(1_796_062_956_712),
            cancel_requested: false,
            kind: "receipt".into(),
        };
        let head =
            row(columns(Status::Dead), columns(Status::Dead).iter().map(|c| c.0.to_string()).collect());
        let line = row(columns(Status::Dead), cells(&job));
        let starts = |text: &str, word: &str| text.find(word).expect(word);
        assert_eq!(starts(&line, "dead"), starts(&head, "status"), "\n{head}\n{line}");
        assert_eq!(starts(&line, "receipt"), starts(&head, "kind"), "\n{head}\n{line}");
        assert_eq!(starts(&line, "3/3") + 3, starts(&head, "attempts") + 8, "\n{head}\n{line}");
        assert_eq!(starts(&line, "exhausted"), starts(&head, "reason"), "\n{head}\n{line}");
        assert_eq!(starts(&line, "1796059356712"), starts(&head, "enqueued at"), "\n{head}\n{line}");
        assert_eq!(starts(&line, "1796062956712"), starts(&head, "deadline"), "\n{head}\n{line}");
        assert!(line.ends_with("1796062956712 (2026-11-30T18:22:36.712Z)"), "{line}");
    }
}
