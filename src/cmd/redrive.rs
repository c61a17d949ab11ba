//! `retryq redrive (--id ID | --all-dead [--reason R]) --add-attempts N
//! (--deadline TIME | --ttl DURATION)`: the operator's way out of `dead`, with a new budget.
//!
//! Prints one JSON line per job: `{"ok":"redriven","id":…}` or the refusal
//! (`{"error":"not_found"|"not_dead"|"invalid_input","id":…}`); exit 1 if any was refused.
//! `--all-dead` redrives every matching job in one transaction.

use std::process::ExitCode;

use retryq::{DeadReason, Error, ErrorKind, MAX_ATTEMPTS, Redrive, RedriveDead};
use serde::Serialize;

use super::db::{ClockFlag, Db};
use super::{CliError, Deadline, print_json};
use crate::out::noteln;

/// `--deadline`'s help here: the new deadline each redriven job gets.
const DEADLINE_HELP: &str = "The new deadline of each redriven job, RFC 3339 or Unix milliseconds \
                             (2026-12-31T00:00:00Z, 1798675200000): no attempt starts at or after it";

#[derive(clap::Args, Debug)]
#[group(id = "which", required = true, multiple = false, args = ["id", "all_dead"])]
#[command(mut_arg("deadline", |a| a.help(DEADLINE_HELP)))]
pub struct Args {
    #[command(flatten)]
    db: Db,
    #[command(flatten)]
    clock: ClockFlag,
    /// The dead job to redrive.
    #[arg(long, value_name = "ID", value_parser = super::name)]
    id: Option<String>,
    /// Every dead job (with --reason, only those dead for it).
    #[arg(long)]
    all_dead: bool,
    /// With --all-dead: only jobs dead for this reason (exhausted, deadline, permanent,
    /// cancelled).
    #[arg(long, value_name = "R", conflicts_with = "id")]
    reason: Option<DeadReason>,
    /// How many attempts to grant beyond those spent (1 to 2^31-1).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=MAX_ATTEMPTS))]
    add_attempts: u64,
    #[command(flatten)]
    deadline: Deadline,
}

/// One job's line, keys in this order.
#[derive(Serialize)]
#[serde(untagged)]
enum Line<'a> {
    Ok {
        ok: &'static str,
        id: &'a str,
    },
    Refused {
        error: &'static str,
        id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<&'static str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    // Checked against this host's clock before anything is opened; on PostgreSQL the
    // server's clock then decides.
    args.deadline.at(super::now()?)?;
    let mut queue = args.db.open_write(false)?;
    let now = args.clock.now(&args.db, &*queue)?;
    let deadline = args.deadline.at(now)?;
    let results = match &args.id {
        Some(id) => match queue.redrive(&Redrive { id, add_attempts: args.add_attempts, deadline, now }) {
            Err(e) if e.kind() == ErrorKind::Storage => return Err(args.db.explain(e)),
            result => vec![(id.clone(), result)],
        },
        None => queue
            .redrive_dead(&RedriveDead {
                reason: args.reason,
                add_attempts: args.add_attempts,
                deadline,
                now,
            })
            .map_err(|e| args.db.explain(e))?,
    };
    let mut refused = 0;
    for (id, result) in &results {
        let line = match result {
            Ok(()) => Line::Ok { ok: "redriven", id },
            Err(Error::NotDead { status, .. }) => {
                Line::Refused { error: "not_dead", id, status: Some(status.as_str()), detail: None }
            }
            Err(Error::InvalidInput { field, reason }) => Line::Refused {
                error: "invalid_input",
                id,
                status: None,
                detail: Some(format!("{field}: {reason}")),
            },
            Err(e) => Line::Refused { error: e.kind().code(), id, status: None, detail: None },
        };
        if result.is_err() {
            refused += 1;
        }
        print_json(&line)?;
    }
    if args.id.is_none() {
        noteln!("redriven {} of {} dead jobs", results.len() - refused, results.len());
    }
    Ok(if refused == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
