//! `retryq stats [--json | --prometheus] [--workers]`: counts by status and dead reason,
//! expired leases, and the oldest open job's age, at the current time.
//!
//! `--json` prints SPEC section 5's `stats` result (`{"ok":"stats",…}`); `--prometheus` the
//! text exposition format, for a node exporter's textfile collector or a scrape wrapper.
//! `--workers` prints instead each lease holder (a worker process: `NAME.PID-RANDOM`) with
//! the leases it holds, live and expired; with `--json` as `{"ok":"workers","workers":[…]}`.

use std::process::ExitCode;

use retryq::{Owner, Stats};
use serde::Serialize;

use super::db::{ClockFlag, Db};
use super::{CliError, print_json, view};
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
    /// Print Prometheus text exposition format.
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
    let stats = queue.stats_of(now, args.queue.as_deref()).map_err(|e| args.db.explain(e))?;
    if args.json {
        print_json(&view::stats(&stats))?;
    } else if args.prometheus {
        out!("{}", prometheus(&stats))?;
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

/// The exposition format. The oldest open age has no sample when no job is open (the SPEC's
/// `null`): an absent series, not a misleading 0.
fn prometheus(s: &Stats) -> String {
    let mut out = String::new();
    out.push_str("# HELP retryq_jobs Jobs in the store by status.\n# TYPE retryq_jobs gauge\n");
    for (status, n) in [("pending", s.pending), ("leased", s.leased), ("done", s.done), ("dead", s.dead)] {
        out.push_str(&format!("retryq_jobs{{status=\"{status}\"}} {n}\n"));
    }
    out.push_str(
        "# HELP retryq_pruned_jobs Pruned jobs (tombstones) by their final status.\n# TYPE retryq_pruned_jobs gauge\n",
    );
    for (status, n) in [("done", s.pruned_done), ("dead", s.pruned_dead)] {
        out.push_str(&format!("retryq_pruned_jobs{{status=\"{status}\"}} {n}\n"));
    }
    out.push_str("# HELP retryq_dead_jobs Dead jobs by reason.\n# TYPE retryq_dead_jobs gauge\n");
    for (reason, n) in [
        ("exhausted", s.dead_exhausted),
        ("deadline", s.dead_deadline),
        ("permanent", s.dead_permanent),
        ("cancelled", s.dead_cancelled),
    ] {
        out.push_str(&format!("retryq_dead_jobs{{reason=\"{reason}\"}} {n}\n"));
    }
    out.push_str(
        "# HELP retryq_leased_expired_jobs Leased jobs whose lease has expired (their worker may have died).\n\
         # TYPE retryq_leased_expired_jobs gauge\n",
    );
    out.push_str(&format!("retryq_leased_expired_jobs {}\n", s.leased_expired));
    out.push_str(
        "# HELP retryq_oldest_open_age_seconds Age of the oldest pending or leased job.\n\
         # TYPE retryq_oldest_open_age_seconds gauge\n",
    );
    if let Some(ms) = s.oldest_open_age_ms {
        out.push_str(&format!("retryq_oldest_open_age_seconds {}.{:03}\n", ms / 1000, ms % 1000));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_has_a_sample_per_status_and_reason() {
        let s = Stats {
            pending: 3,
            dead: 2,
            dead_deadline: 2,
            dead_cancelled: 1,
            oldest_open_age_ms: Some(1500),
            ..Stats::default()
        };
        let text = prometheus(&s);
        assert!(text.contains("retryq_jobs{status=\"pending\"} 3\n"), "{text}");
        assert!(text.contains("retryq_dead_jobs{reason=\"deadline\"} 2\n"), "{text}");
        assert!(text.contains("retryq_dead_jobs{reason=\"cancelled\"} 1\n"), "{text}");
        assert!(text.contains("retryq_oldest_open_age_seconds 1.500\n"), "{text}");
        assert!(text.contains("retryq_pruned_jobs{status=\"done\"} 0\n"), "{text}");
        let none = prometheus(&Stats::default());
        assert!(!none.contains("retryq_oldest_open_age_seconds 0"), "{none}");
        assert!(none.contains("# TYPE retryq_oldest_open_age_seconds gauge"), "{none}");
    }
}
