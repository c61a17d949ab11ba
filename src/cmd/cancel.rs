//! `retryq cancel ID`: take a pending job off the queue, or ask a running one to stop (SPEC
//! 3.13).
//!
//! Prints SPEC section 5's result: `{"ok":"cancelled"}` (pending: now dead) or
//! `{"ok":"cancelling"}` (leased: its worker is told at its next heartbeat and stops the
//! attempt; the job ends dead(cancelled) by its report or at its lease's expiry), or the
//! refusal — `{"error":"not_cancellable","status":…}` (already done or dead),
//! `{"error":"pruned"}`, `{"error":"not_found"}` — with exit 1, and on standard error what
//! that means in words. A cancelled job is dead
//! with reason `cancelled`: `retryq dead --reason cancelled` lists it and `retryq redrive`
//! brings it back.

use std::process::ExitCode;

use retryq::{Cancelled, Error};
use serde::Serialize;

use super::db::{ClockFlag, Db};
use super::{CliError, print_json};
use crate::out::noteln;
use crate::printable::printable;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    #[command(flatten)]
    clock: ClockFlag,
    /// The job to cancel: a pending one ends now, a running one is asked to stop.
    #[arg(value_name = "ID", value_parser = super::name)]
    id: String,
}

/// The answer, keys in this order.
#[derive(Serialize)]
#[serde(untagged)]
enum Line {
    Ok {
        ok: &'static str,
    },
    Refused {
        error: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<&'static str>,
    },
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut queue = args.db.open_write(false)?;
    let now = args.clock.now(&args.db, &*queue)?;
    let id = printable(&args.id);
    let (line, code) = match queue.cancel(&args.id, now) {
        Ok(Cancelled::Requested) => {
            noteln!(
                "\"{id}\" is leased: its worker is asked to stop the attempt at its next heartbeat; \
                 the job ends dead with reason cancelled when the worker reports or its lease \
                 expires (an attempt that already succeeded ends it done)"
            );
            (Line::Ok { ok: "cancelling" }, ExitCode::SUCCESS)
        }
        Ok(_) => {
            noteln!("cancelled \"{id}\": dead with reason cancelled; `retryq redrive --id` brings it back");
            (Line::Ok { ok: "cancelled" }, ExitCode::SUCCESS)
        }
        Err(Error::Pruned { .. }) => {
            noteln!("\"{id}\" was pruned: only its tombstone is left; nothing changed");
            (Line::Refused { error: "pruned", status: None }, ExitCode::FAILURE)
        }
        Err(Error::NotCancellable { status, .. }) => {
            noteln!("\"{id}\" is {status} already: there is nothing left to cancel; nothing changed");
            (Line::Refused { error: "not_cancellable", status: Some(status.as_str()) }, ExitCode::FAILURE)
        }
        Err(Error::NotFound { .. }) => {
            noteln!("no job \"{id}\": nothing changed");
            (Line::Refused { error: "not_found", status: None }, ExitCode::FAILURE)
        }
        Err(e) => return Err(args.db.explain(e)),
    };
    print_json(&line)?;
    Ok(code)
}
