//! `retryq reap [--limit N]`: ends every job that is due to end (SPEC 3.7) — expired leases
//! asked to stop or on their last attempt, and jobs past their deadline — in transactions of
//! at most `--limit` jobs each (SPEC 6.37), until one ends fewer: the way out of a backlog
//! after an outage without waiting for a worker's claims, each transaction short enough that
//! workers claim between them. Prints `{"ok":"reaped","count":N}`, the total.

use std::process::ExitCode;
use std::time::Instant;

use retryq::{DEFAULT_REAP_LIMIT, MAX_INT, Settings};
use serde::Serialize;

use super::db::{ClockFlag, Db};
use super::{CliError, print_json};
use crate::out::noteln;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    #[command(flatten)]
    clock: ClockFlag,
    /// The most jobs one transaction ends.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_REAP_LIMIT, value_parser = clap::value_parser!(u64).range(1..=MAX_INT))]
    limit: u64,
}

#[derive(Serialize)]
struct Reaped {
    ok: &'static str,
    count: u64,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut queue = args.db.open_write(false)?;
    queue
        .set_settings(Settings { reap_limit: args.limit, ..queue.settings() })
        .map_err(|e| args.db.explain(e))?;
    let started = Instant::now();
    let (mut reaped, mut pieces) = (0, 0);
    loop {
        // Each piece at the clock's reading then: a reap ends what is due to end at its `now`.
        let now = args.clock.now(&args.db, &*queue)?;
        let count = queue.reap(now).map_err(|e| args.db.explain(e))?;
        reaped += count;
        pieces += 1;
        if count < args.limit {
            break;
        }
    }
    noteln!(
        "reaped {reaped} jobs due to end (out of budget, past their deadline, or asked to stop) in \
         {pieces} transactions of at most {} in {} ms",
        args.limit,
        started.elapsed().as_millis()
    );
    print_json(&Reaped { ok: "reaped", count: reaped })?;
    Ok(ExitCode::SUCCESS)
}
