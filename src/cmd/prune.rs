//! `retryq prune --older-than 7d [--forget-older-than 90d]`: retention (SPEC 3.14, 3.15).
//!
//! Prunes the done and dead jobs that ended at least `--older-than` ago, in transactions of
//! at most 1,000 jobs each (`prune_at_most`: each one exactly the contract's prune at a
//! bound, so the write lock is never held long), leaving a tombstone for each: their ids
//! stay taken and never run again. With `--forget-older-than`, then removes the tombstones of
//! jobs that ended at least that long ago, which ends idempotency for those ids. Prints
//! `{"ok":"pruned","count":N}` (and `{"ok":"forgotten","count":M}`), one JSON line each.
//! On SQLite the freed pages then go back to the file system (`incremental_vacuum`); on
//! PostgreSQL autovacuum reclaims them.

use std::process::ExitCode;

use serde::Serialize;

use super::db::{ClockFlag, Db};
use super::duration;
use super::{CliError, print_json};
use crate::out::noteln;

/// The most jobs one transaction prunes.
pub const BATCH: u64 = 1_000;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    #[command(flatten)]
    clock: ClockFlag,
    /// Prune done and dead jobs that ended at least this long ago: 90s, 1h, 7d. Their
    /// history goes with them; a tombstone keeps each id from running again.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = duration::parse_ms)]
    older_than: u64,
    /// Then forget the tombstones of jobs that ended at least this long ago: their ids may
    /// be enqueued anew and run again. At least --older-than.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = duration::parse_ms)]
    forget_older_than: Option<u64>,
}

#[derive(Serialize)]
struct Counted {
    ok: &'static str,
    count: u64,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    if args.forget_older_than.is_some_and(|forget| forget < args.older_than) {
        return Err(CliError::flag(
            "--forget-older-than",
            "is shorter than --older-than: a tombstone would be forgotten before its job is pruned",
        ));
    }
    let mut queue = args.db.open_write(false)?;
    let now = args.clock.now(&args.db, &*queue)?;
    let before = now.saturating_sub(args.older_than);
    let mut pruned = 0;
    loop {
        let count = queue.prune_at_most(before, now, BATCH).map_err(|e| args.db.explain(e))?;
        pruned += count;
        if count == 0 {
            break;
        }
    }
    noteln!("pruned {pruned} jobs that ended at or before {before} (Unix ms): each left a tombstone");
    print_json(&Counted { ok: "pruned", count: pruned })?;
    if let Some(forget) = args.forget_older_than {
        let before = now.saturating_sub(forget);
        let forgotten = queue.forget(before, now).map_err(|e| args.db.explain(e))?;
        noteln!(
            "forgot {forgotten} tombstones of jobs that ended at or before {before}: those ids may run again"
        );
        print_json(&Counted { ok: "forgotten", count: forgotten })?;
    }
    if pruned > 0 {
        let free = queue.reclaim().map_err(|e| args.db.explain(e))?;
        if free > 0 {
            noteln!("gave {free} free pages back to the file system");
        }
    }
    Ok(ExitCode::SUCCESS)
}
