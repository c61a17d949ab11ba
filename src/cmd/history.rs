//! `retryq history ID [--json]`: every recorded transition of a job, oldest first, and under
//! each transition that ended an attempt, that attempt's record (SPEC 6.36): who held it,
//! how long it ran, what ended it, and the error and node it left. The text shows each time
//! in Unix milliseconds and in UTC; `--json` keeps the milliseconds alone.

use std::process::ExitCode;

use retryq::{AttemptRecord, HistoryEntry, Status};
use serde::Serialize;

use super::db::Db;
use super::duration::words;
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

/// One transition, as `--json` prints it: the state after it, keys in this order, and the
/// record of the attempt it ended (`null` when it ended none).
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
    ended_attempt: Option<Ended<'a>>,
}

/// An ended attempt's record, as `--json` prints it.
#[derive(Serialize)]
struct Ended<'a> {
    attempt: u64,
    worker: Option<&'a str>,
    claimed_at: u64,
    ended_at: u64,
    duration_ms: u64,
    outcome: &'a str,
    error: Option<&'a str>,
    node: Option<&'a str>,
}

impl<'a> Ended<'a> {
    fn of(r: &'a AttemptRecord) -> Ended<'a> {
        Ended {
            attempt: r.attempt,
            worker: r.worker.as_deref(),
            claimed_at: r.claimed_at,
            ended_at: r.ended_at,
            duration_ms: r.ended_at.saturating_sub(r.claimed_at),
            outcome: &r.outcome,
            error: r.error.as_deref(),
            node: r.node.as_deref(),
        }
    }
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let queue = args.db.open_read()?;
    let entries = queue.history(&args.id).map_err(|e| args.db.explain(e))?;
    if entries.is_empty() {
        noteln!("retryq: no job {:?}", args.id);
        return Ok(ExitCode::FAILURE);
    }
    let records = queue.attempts(&args.id).map_err(|e| args.db.explain(e))?;
    for (entry, ended) in entries.iter().zip(ended_attempts(&entries, &records)) {
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
                ended_attempt: ended.map(Ended::of),
            })?;
        } else {
            outln!("{}", line(entry))?;
            if let Some(record) = ended {
                outln!("{}", attempt_line(record))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// For each transition, the record of the attempt it ended, if it ended one and the store
/// has its record: a move out of `leased`, or a claim that took an expired lease, ends the
/// attempt the job was on before it, at the transition's time. (The records are read after
/// the history: one of an attempt that ended since has no transition here, and is left out.)
fn ended_attempts<'a>(
    entries: &[HistoryEntry],
    records: &'a [AttemptRecord],
) -> Vec<Option<&'a AttemptRecord>> {
    let mut ended = vec![None];
    for pair in entries.windows(2) {
        let (prev, cur) = (&pair[0], &pair[1]);
        let ends = prev.to == Status::Leased
            && cur.from.is_some()
            && (cur.to != Status::Leased || cur.attempt > prev.attempt);
        let record = ends.then(|| records.iter().find(|r| r.attempt == prev.attempt && r.ended_at == cur.at));
        ended.push(record.flatten());
    }
    ended
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

/// An ended attempt, under the transition that ended it: `    attempt 2 by w1, 1s 10ms:
/// retryable  node n1  error: HTTP 503` (the error last: it is the longest, and may hold
/// anything, escaped).
fn attempt_line(r: &AttemptRecord) -> String {
    let mut text = format!("    attempt {}", r.attempt);
    if let Some(worker) = &r.worker {
        text.push_str(&format!(" by {}", printable(worker)));
    }
    text.push_str(&format!(", {}: {}", words(r.ended_at.saturating_sub(r.claimed_at)), r.outcome));
    if let Some(node) = &r.node {
        text.push_str(&format!("  node {}", printable(node)));
    }
    if let Some(error) = &r.error {
        text.push_str(&format!("  error: {}", printable(error)));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(from: Option<Status>, to: Status, attempt: u64, at: u64) -> HistoryEntry {
        HistoryEntry {
            from,
            to,
            attempt,
            max_attempts: 3,
            deadline: 100_000,
            available_at: None,
            redrives: 0,
            reason: None,
            worker: Some("w1".into()),
            at,
        }
    }

    fn record(attempt: u64, claimed_at: u64, ended_at: u64, outcome: &str) -> AttemptRecord {
        AttemptRecord {
            attempt,
            claimed_at,
            ended_at,
            outcome: outcome.into(),
            error: Some("exit 3\u{1b}[2J\nforged".into()),
            node: None,
            worker: Some("w1".into()),
        }
    }

    /// A record goes under the transition that ended its attempt: a move out of leased, or
    /// a claim of the expired lease; a heartbeat ends nothing.
    #[test]
    fn each_record_goes_under_the_transition_that_ended_its_attempt() {
        use Status::{Done, Leased, Pending};
        let entries = [
            entry(None, Pending, 0, 0),
            entry(Some(Pending), Leased, 1, 10),
            entry(Some(Leased), Leased, 1, 20),
            entry(Some(Leased), Leased, 2, 1030),
            entry(Some(Leased), Done, 2, 1040),
        ];
        let records = [record(1, 10, 1030, "lease expired"), record(2, 1030, 1040, "ok")];
        let ended: Vec<Option<u64>> =
            ended_attempts(&entries, &records).into_iter().map(|r| r.map(|r| r.attempt)).collect();
        assert_eq!(ended, [None, None, None, Some(1), Some(2)]);
        let text = attempt_line(&records[0]);
        assert_eq!(text, "    attempt 1 by w1, 1s 20ms: lease expired  error: exit 3\\x1b[2J\\x0aforged");
    }
}
