//! `retryq stats [--json | --prometheus] [--workers]`: counts by status and dead reason,
//! expired leases, and the oldest open job's age, at the current time.
//!
//! `--json` prints SPEC section 5's `stats` result (`{"ok":"stats",…}`); `--prometheus` the
//! same exposition as `serve`'s `/metrics` (`crate::metrics`), for a textfile collector or a
//! scrape wrapper.
//! `--workers` prints instead each lease holder (a worker process: `NAME.PID-RANDOM`) with
//! the leases it holds, live and expired; with `--json` as `{"ok":"workers","workers":[…]}`.

use std::process::ExitCode;

use retryq::{Owner, Stats};
use serde::Serialize;

use super::db::{ClockFlag, Db};
use super::{CliError, print_json, view};
use crate::metrics;
use crate::out::out;
use crate::printable::printable;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    #[command(flatten)]
    clock: ClockFlag,
    /// Print SPEC section 5's stats object, one JSON line.
    #[arg(long, conflicts_with = "prometheus")]
    json: bool,
    /// Print the metrics `serve`'s /metrics answers (OpenMetrics text): every queue's series,
    /// or --queue's.
    #[arg(long)]
    prometheus: bool,
    /// Count one queue's jobs and tombstones only (default: every queue).
    #[arg(long, value_name = "NAME", value_parser = super::queue_name, conflicts_with = "workers")]
    queue: Option<String>,
    /// List each worker holding leases, with how many it holds and how many have expired
    /// (its process may have died), instead of the counts.
    #[arg(long, conflicts_with = "prometheus")]
    workers: bool,
}

/// `--workers --json`: `{"ok":"workers","workers":[{"worker":…,"leased":…,"expired":…}]}`.
#[derive(Serialize)]
struct Workers<'a> {
    ok: &'static str,
    workers: Vec<WorkerLeases<'a>>,
}

#[derive(Serialize)]
struct WorkerLeases<'a> {
    worker: &'a str,
    leased: u64,
    expired: u64,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let queue = args.db.open_read()?;
    let now = args.clock.now(&args.db, &*queue)?;
    if args.workers {
        let owners = queue.owners(now).map_err(|e| args.db.explain(e))?;
        if args.json {
            let workers = owners
                .iter()
                .map(|o| WorkerLeases { worker: &o.worker, leased: o.leased, expired: o.expired })
                .collect();
            print_json(&Workers { ok: "workers", workers })?;
        } else {
            out!("{}", workers(&owners))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.prometheus {
        let families = metrics::read(&*queue, now, args.queue.as_deref()).map_err(|e| args.db.explain(e))?;
        let text = metrics::encode(families).map_err(|_| CliError::Other("the exposition failed".into()))?;
        out!("{text}")?;
        return Ok(ExitCode::SUCCESS);
    }
    let stats = queue.stats_of(now, args.queue.as_deref()).map_err(|e| args.db.explain(e))?;
    if args.json {
        print_json(&view::stats(&stats))?;
    } else {
        let paused = queue.paused().map_err(|e| args.db.explain(e))?;
        let paused: Vec<&str> = paused
            .iter()
            .map(|(name, _)| name.as_str())
            .filter(|name| args.queue.as_deref().is_none_or(|one| one == *name))
            .collect();
        out!("{}{}", human(&stats), paused_line(&paused))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per holder, names escaped (they come from the command line of whoever ran a
/// worker); a line saying so when nobody holds a lease.
fn workers(owners: &[Owner]) -> String {
    if owners.is_empty() {
        return "no worker holds a lease\n".to_owned();
    }
    let mut out = String::new();
    for o in owners {
        out.push_str(&format!("{}  leased {} ({} expired)\n", printable(&o.worker), o.leased, o.expired));
    }
    out
}

fn human(s: &Stats) -> String {
    let oldest = s.oldest_open_age_ms.map_or_else(|| "-".to_owned(), |ms| format!("{ms} ms"));
    format!(
        "pending         {}\nleased          {} ({} expired)\ndone            {}\n\
         dead            {} (exhausted {}, deadline {}, permanent {}, cancelled {})\n\
         pruned          {} (done {}, dead {}: tombstones)\n\
         oldest open age {oldest}\n",
        s.pending,
        s.leased,
        s.leased_expired,
        s.done,
        s.dead,
        s.dead_exhausted,
        s.dead_deadline,
        s.dead_permanent,
        s.dead_cancelled,
        s.pruned_done + s.pruned_dead,
        s.pruned_done,
        s.pruned_dead
    )
}

/// The paused queues by name, escaped (SPEC 3.16): a pause is never forgotten silently.
fn paused_line(paused: &[&str]) -> String {
    match paused {
        [] => "paused queues   0\n".to_owned(),
        names => {
            let names: Vec<String> = names.iter().map(|n| printable(n).to_string()).collect();
            format!("paused queues   {} ({})\n", names.len(), names.join(", "))
        }
    }
}
