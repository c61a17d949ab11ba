//! `retryq pause QUEUE` and `retryq resume QUEUE`: an operator stops a queue's jobs from
//! starting (its receiver is down, a deploy is under way) and lets them start again (SPEC
//! 3.16, 3.17).
//!
//! Prints SPEC section 5's result, `{"ok":"paused"}` or `{"ok":"resumed"}`, and on standard
//! error what that means in words. Both are idempotent: pausing a paused queue keeps the first
//! pause's time; a name no job carries may be paused ahead of its first job. The pause is the
//! store's: every worker of every host stops picking the queue's jobs, and a restart keeps it.
//! `retryq stats` lists the paused queues.

use std::process::ExitCode;

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
    /// The queue: 1 to 64 bytes.
    #[arg(value_name = "QUEUE", value_parser = super::queue_name)]
    queue: String,
}

/// The answer.
#[derive(Serialize)]
struct Line {
    ok: &'static str,
}

/// `retryq pause QUEUE`.
pub fn pause(args: Args) -> Result<ExitCode, CliError> {
    let mut store = args.db.open_write(false)?;
    let now = args.clock.now(&args.db, &*store)?;
    store.pause(&args.queue, now).map_err(|e| args.db.explain(e))?;
    noteln!(
        "paused \"{}\": no worker starts its jobs until `retryq resume`; attempts in flight run on, \
         and jobs still end at their deadlines",
        printable(&args.queue)
    );
    print_json(&Line { ok: "paused" })?;
    Ok(ExitCode::SUCCESS)
}

/// `retryq resume QUEUE`.
pub fn resume(args: Args) -> Result<ExitCode, CliError> {
    let mut store = args.db.open_write(false)?;
    let now = args.clock.now(&args.db, &*store)?;
    store.resume(&args.queue, now).map_err(|e| args.db.explain(e))?;
    noteln!("\"{}\" is not paused: its due jobs are claimed again", printable(&args.queue));
    print_json(&Line { ok: "resumed" })?;
    Ok(ExitCode::SUCCESS)
}
