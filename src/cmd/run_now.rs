//! `retryq run-now ID`: an operator has a pending job run at once rather than at its
//! backoff's or its schedule's end (SPEC 3.18).
//!
//! Prints SPEC section 5's result, `{"ok":"due","available_at":…}` (the job's new
//! reservation: now, or the earlier one it had), or the refusal with exit 1 —
//! `{"error":"not_pending","status":…}` (leased, done or dead), `{"error":"deadline_passed"}`
//! (only a redrive grants a new budget), `{"error":"pruned"}`, `{"error":"not_found"}` — and
//! on standard error what that means in words. The job keeps its attempts, deadline and
//! priority: it is claimed after the due jobs of a smaller priority, and not while its queue
//! is paused.

use std::process::ExitCode;

use retryq::Error;
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
    /// The pending job to make due now.
    #[arg(value_name = "ID", value_parser = super::name)]
    id: String,
}

/// The answer, keys in this order.
#[derive(Serialize)]
#[serde(untagged)]
enum Line {
    Due {
        ok: &'static str,
        available_at: u64,
    },
    Refused {
        error: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<&'static str>,
    },
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut store = args.db.open_write(false)?;
    let now = args.clock.now(&args.db, &*store)?;
    let id = printable(&args.id);
    let refused = |error, status| (Line::Refused { error, status }, ExitCode::FAILURE);
    let (line, code) = match store.run_now(&args.id, now) {
        Ok(available_at) => {
            noteln!("\"{id}\" is due: a worker of its queue claims it next, after the due jobs before it");
            (Line::Due { ok: "due", available_at }, ExitCode::SUCCESS)
        }
        Err(Error::NotPending { status, .. }) => {
            noteln!(
                "\"{id}\" is {status}, not pending: nothing changed (`retryq redrive` brings a dead job back)"
            );
            refused("not_pending", Some(status.as_str()))
        }
        Err(Error::DeadlinePassed { .. }) => {
            noteln!(
                "\"{id}\" is past its deadline and ends at the next reap: nothing changed (`retryq redrive` \
                 grants a new budget once it is dead)"
            );
            refused("deadline_passed", None)
        }
        Err(Error::Pruned { .. }) => {
            noteln!("\"{id}\" was pruned: only its tombstone is left; nothing changed");
            refused("pruned", None)
        }
        Err(Error::NotFound { .. }) => {
            noteln!("no job \"{id}\": nothing changed");
            refused("not_found", None)
        }
        Err(e) => return Err(args.db.explain(e)),
    };
    print_json(&line)?;
    Ok(code)
}
