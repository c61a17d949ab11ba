//! `retryq work [--db PATH|URL] [--clock server|local] --worker NAME (--exec 'CMD' | --url
//! URL…) [--concurrency N] [--lease DURATION] [--timeout DURATION] [--margin DURATION]
//! [--backoff-base DURATION] [--backoff-cap DURATION] [--until-idle] [--every
//! NAME=INTERVAL|NAME=cron:PATTERN…]` and, with `--url`, the HTTP transport's flags: a worker
//! process (the loop is `retryq_worker::work_in_slots`, the transports `Exec` and `Http`, one
//! per slot). `--every` is read here into `retryq_worker::Periodic`s, which the loop enqueues.
//!
//! Each flag has one name across commands, without a unit in it (the value carries its unit):
//! `--backoff-base` and `--backoff-cap` as on `enqueue`. The older spellings (`--lease-ms`,
//! `--timeout-ms`, `--margin-ms`, `--base-ms`/`--base`, `--cap-ms`/`--cap`,
//! `--retry-budget-ttl-ms`, `--fault-latency-ms`, `--fault-unavailable-ms`) are hidden
//! aliases, kept for one release so that scripts can move.
//!
//! `--db` is a SQLite file (created if missing) or a PostgreSQL URL (the schema is created in
//! an empty database). On PostgreSQL every claim, heartbeat round and group commit is stamped
//! with the server's clock (`--clock server`, the default; `--clock local` uses this host's),
//! and a server that goes away — a dropped connection, a restart, a server down for a while
//! — is waited out with a capped backoff (one log line when it goes, one when it answers
//! again), the attempts under way running on; see docs/operating.md.
//!
//! Leases are held under `NAME.PID-XXXXXXXX` (`retryq_worker::process_name`), logged at
//! start, so that two processes given the same name never share a fencing identity, and
//! renewed every third of `--lease` while their attempts run (heartbeats, SPEC 3.12).
//!
//! Logs go to standard error through `tracing`, filtered by `RUST_LOG` (default `info`):
//! one line per attempt, once its outcome is committed. Exit 0 after SIGTERM or SIGINT (the
//! attempts under way finished and were recorded) or, with `--until-idle`, once no job is
//! pending or leased and no attempt is in flight; 128 + N on a second signal N; 1 if the
//! store cannot be opened (a bad URL, wrong credentials, no server: named with `--db`), if it
//! failed for a reason that does not pass (a write past the file size limit included), the
//! database file was deleted or replaced under the worker, or the clock is out of range; 2
//! for a wrong flag; 78 (`EX_CONFIG`) when the `--exec` command cannot be run at all — the
//! shell exits 127 (not found) or 126 (not executable): that attempt is recorded at once as
//! retryable, logged as an error, and the worker claims nothing more, since every later job
//! would fail the same way and spend its budget.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use retryq::Settings;
use retryq_control::{FaultTable, TpsBudget};
use retryq_worker::http::{HttpError, HttpOptions, StatusTable};
use retryq_worker::{
    Clock, Config, ConfigError, Every, Exec, ExitClass, ExitTable, Http, Periodic, ServerClock, SteppedClock,
    Stop, SystemClock, Transport, WorkError,
};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::field::MakeExt;

use super::db::{ClockFlag, Db};
use super::{CliError, duration};
use crate::out::noteln;
use crate::printable::printable;

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("transport").required(true).args(["exec", "url"])))]
pub struct Args {
    #[command(flatten)]
    db: Db,
    #[command(flatten)]
    clock: ClockFlag,
    /// The worker's name: leases are held under NAME.PID-RANDOM, unique to this process and
    /// logged at start; with the suffix it must fit in 256 bytes (236 always does).
    #[arg(long, value_name = "NAME", value_parser = super::name)]
    worker: String,
    /// A queue this worker serves; repeat for several (at most 64). Every claim takes the
    /// most urgent due job of all of them together. Default: the `default` queue.
    #[arg(long = "queue", value_name = "NAME", value_parser = super::queue_name)]
    queues: Vec<String>,
    /// Attempts in flight at once. The default, 16, suits I/O-bound work (a command or
    /// receiver that mostly waits): 16 waits overlap on two cores at little cost; raise it
    /// for slow receivers, lower it (1: one at a time) for CPU-bound commands.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=1024))]
    concurrency: u16,
    /// The command run per attempt, by `/bin/sh -c` — dash on Debian and Ubuntu: no $RANDOM,
    /// no arrays, no [[ ]]; for bash write `bash -c '…'` or run a script with its own #! line.
    /// Payload on stdin, RETRYQ_JOB_ID and RETRYQ_ATTEMPT in the environment; exit 0 ok, 65
    /// permanent, any other retryable (see --exit-*); 127 or 126 (the shell could not run
    /// it) stops the worker.
    #[arg(long, value_name = "CMD")]
    exec: Option<String>,
    #[command(flatten)]
    exits: ExitArgs,
    /// POST each attempt's payload to this URL (http or https), with Idempotency-Key and
    /// Retry-Attempt headers. Repeat for several receivers: a retry avoids the one that
    /// failed. Credentials (`http://user:pw@host/`) are sent as Basic auth and shown and
    /// stored as `http://***@host/`.
    #[arg(long, value_name = "URL")]
    url: Vec<String>,
    /// How long a claim holds a job before another worker may claim it again. While an
    /// attempt runs the worker renews its lease every third of it (a heartbeat), so the
    /// lease may be shorter than --timeout: it is how long a job waits after its worker
    /// crashed. At least 300ms.
    #[arg(long, alias = "lease-ms", value_name = "DURATION", allow_hyphen_values = true, default_value = "30s", value_parser = duration::positive)]
    lease: u64,
    /// The longest one attempt may run (also never past the job's deadline); then its
    /// process group is killed and the attempt counts as retryable.
    #[arg(long, alias = "timeout-ms", value_name = "DURATION", allow_hyphen_values = true, default_value = "20s", value_parser = duration::positive)]
    timeout: u64,
    /// How long before its lease's end each attempt is stopped, by the worker or, when the
    /// worker cannot (killed, stopped, frozen), by the watchdog beside each --exec command
    /// (SIGTERM to the command's process group, SIGKILL up to 500ms later). Default: a
    /// quarter of the lease (7.5s of 30s), which tolerates clocks 7s apart. Above the
    /// watchdog's grace, at most half the lease.
    #[arg(long, alias = "margin-ms", value_name = "DURATION", allow_hyphen_values = true, value_parser = duration::positive)]
    margin: Option<u64>,
    /// The first retry's backoff window, for jobs enqueued without their own
    /// (`enqueue --backoff-base`).
    #[arg(long, aliases = ["base-ms", "base"], value_name = "DURATION", allow_hyphen_values = true, default_value = "100ms", value_parser = duration::parse_ms)]
    backoff_base: u64,
    /// The largest backoff window, for jobs enqueued without their own
    /// (`enqueue --backoff-cap`).
    #[arg(long, aliases = ["cap-ms", "cap"], value_name = "DURATION", allow_hyphen_values = true, default_value = "1s", value_parser = duration::parse_ms)]
    backoff_cap: u64,
    /// The most jobs one claim (or one reap) ends as out of budget or time (SPEC 6.37): a
    /// backlog of them is ended a bounded transaction at a time, the worker reaping again at
    /// once while a reap ends this many.
    #[arg(long, value_name = "N", default_value_t = retryq::DEFAULT_REAP_LIMIT, value_parser = clap::value_parser!(u64).range(1..=retryq::MAX_INT))]
    reap_limit: u64,
    /// Retention: prune done and dead jobs that ended at least this long ago (7d, 1h),
    /// leaving a tombstone for each, at most 1,000 a transaction. Default: keep everything.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = duration::positive)]
    retain: Option<u64>,
    /// With --retain, also forget the tombstones of jobs that ended at least this long ago
    /// (at least --retain): their ids may then be enqueued and run anew. Default: keep
    /// tombstones for good, so a pruned id never runs again.
    #[arg(long, value_name = "DURATION", requires = "retain", allow_hyphen_values = true, value_parser = duration::positive)]
    forget_after: Option<u64>,
    /// Exit once no job is pending or leased.
    #[arg(long)]
    until_idle: bool,
    #[command(flatten)]
    every: EveryArgs,
    #[command(flatten)]
    http: HttpArgs,
}

/// Periodic jobs (docs/operating.md, "Periodic jobs"), under a heading of their own.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Periodic jobs")]
struct EveryArgs {
    /// Enqueue the job NAME@<period start> (tick@2026-12-02T03:00:00Z) once per period, into
    /// the first --queue, due at once, its deadline the period's end. INTERVAL has a unit
    /// (30s, 1h, 1d: whole seconds) and its periods are aligned to the Unix epoch, in UTC;
    /// `cron:` takes a crontab pattern, in UTC (`report=cron:0 3 * * *`). The period under
    /// way is enqueued at start; periods that passed while no worker ran are not. Any number
    /// of workers with the same flags enqueue each period once. Repeat for several.
    #[arg(long, value_name = "NAME=INTERVAL|NAME=cron:PATTERN", value_parser = every)]
    every: Vec<Periodic>,
    /// The payload of NAME's jobs (default: empty). Every worker must give the same: one that
    /// differs is refused each period, logged as a conflict.
    #[arg(long, value_name = "NAME=TEXT", requires = "every")]
    every_payload: Vec<String>,
    /// The attempts of each periodic job.
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value_t = retryq_worker::DEFAULT_MAX_ATTEMPTS, value_parser = clap::value_parser!(u64).range(1..=retryq::MAX_ATTEMPTS))]
    every_max_attempts: u64,
}

/// `--every NAME=INTERVAL` or `--every NAME=cron:PATTERN`: a periodic job with an empty
/// payload (`--every-payload` and `--every-max-attempts` are applied in [`periodic`]).
fn every(text: &str) -> Result<Periodic, String> {
    let Some((name, when)) = text.split_once('=') else {
        return Err("expected NAME=INTERVAL or NAME=cron:PATTERN (tick=30s, report=cron:0 3 * * *)".into());
    };
    let every = match when.strip_prefix("cron:") {
        Some(pattern) => Every::cron(pattern),
        None => {
            let ms = duration::parse_ms(when).map_err(|e| format!("the interval {when:?}: {e}"))?;
            Every::interval(Duration::from_millis(ms))
        }
    };
    every.and_then(|every| Periodic::new(name, every)).map_err(|e| e.to_string())
}

/// The periodic jobs the flags name, with their payloads and attempts; each has a period now
/// (a cron pattern that matches no time is refused here).
fn periodic(args: &EveryArgs, now: u64) -> Result<Vec<Periodic>, CliError> {
    let mut jobs: Vec<Periodic> = Vec::with_capacity(args.every.len());
    for job in &args.every {
        if jobs.iter().any(|j| j.name() == job.name()) {
            return Err(CliError::flag("--every", format!("{:?} is given twice", job.name())));
        }
        job.period_at(now).map_err(|e| CliError::flag("--every", format!("{}: {e}", job.name())))?;
        let job = job.clone().with_max_attempts(args.every_max_attempts);
        jobs.push(job.map_err(|e| CliError::flag("--every-max-attempts", e))?);
    }
    let mut given: Vec<&str> = Vec::new();
    for text in &args.every_payload {
        let Some((name, payload)) = text.split_once('=') else {
            return Err(CliError::flag("--every-payload", format!("{text:?}: expected NAME=TEXT")));
        };
        if given.contains(&name) {
            return Err(CliError::flag("--every-payload", format!("{name:?} is given twice")));
        }
        given.push(name);
        let Some(job) = jobs.iter_mut().find(|j| j.name() == name) else {
            return Err(CliError::flag("--every-payload", format!("{name:?} is not the name of an --every")));
        };
        *job = job.clone().with_payload(payload).map_err(|e| CliError::flag("--every-payload", e))?;
    }
    Ok(jobs)
}

/// The exec transport's exit table (SPEC 6.42), under a heading of its own in `work --help`.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "With --exec (exit statuses)")]
struct ExitArgs {
    /// Exit statuses retried after the backoff, as statuses and ranges (`1,2,75`), or
    /// `none`. Default 75.
    #[arg(long, value_name = "LIST", requires = "exec")]
    exit_retry: Option<String>,
    /// Exit statuses that end the job dead(permanent) at once, or `none`. Default 65.
    #[arg(long, value_name = "LIST", requires = "exec")]
    exit_permanent: Option<String>,
    /// Exit statuses recorded as nothing (unknown): the job waits for its lease, as after a
    /// crash. For commands whose side effect may have happened when they fail. Default none.
    #[arg(long, value_name = "LIST", requires = "exec")]
    exit_unknown: Option<String>,
    /// What every other failing exit status means.
    #[arg(long, value_name = "OUTCOME", value_enum, default_value = "retryable", requires = "exec")]
    exit_other: ExitOther,
}

/// `--exit-other`'s outcomes.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ExitOther {
    Retryable,
    Permanent,
    Unknown,
}

impl ExitArgs {
    fn table(&self) -> Result<ExitTable, CliError> {
        let list = |flag: &str, text: &Option<String>| -> Result<Option<Vec<u8>>, CliError> {
            text.as_deref().map(ExitTable::parse_list).transpose().map_err(|e| CliError::flag(flag, e))
        };
        let other = match self.exit_other {
            ExitOther::Retryable => ExitClass::Retryable,
            ExitOther::Permanent => ExitClass::Permanent,
            ExitOther::Unknown => ExitClass::Unknown,
        };
        ExitTable::new(
            list("--exit-retry", &self.exit_retry)?,
            list("--exit-permanent", &self.exit_permanent)?,
            list("--exit-unknown", &self.exit_unknown)?,
            other,
        )
        .map_err(|e| CliError::flag(&format!("--exit-{}", e.list), e))
    }
}

/// The HTTP transport's flags (docs/retry-control.md, "The worker's HTTP transport"), under
/// a heading of their own in `work --help`: they mean nothing with `--exec`.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "With --url (the HTTP transport)")]
struct HttpArgs {
    /// Statuses retried, as codes and ranges: `408,429,500-504`, or `none`. Default
    /// 408,429,500,502,503,504. Connection errors and timeouts are always retried.
    #[arg(long, value_name = "LIST", conflicts_with = "exec")]
    retry_status: Option<String>,
    /// Statuses that quarantine the job at once, or `none`. Default: every 4xx not retried.
    /// 2xx is always ok; a status in neither list is unclassified (the job waits for its
    /// lease).
    #[arg(long, value_name = "LIST", conflicts_with = "exec")]
    permanent_status: Option<String>,
    /// Per target (host and port): retries allowed per request sent, over the budget's
    /// window (Finagle's and tower's retry budget).
    #[arg(
        long,
        value_name = "RATIO",
        allow_negative_numbers = true,
        default_value_t = 0.2,
        conflicts_with = "exec"
    )]
    retry_budget_ratio: f64,
    /// Per target: retries a second allowed whatever the traffic.
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        default_value_t = 10,
        conflicts_with = "exec"
    )]
    retry_budget_min_per_sec: u32,
    /// The budget's window (1s to 60s). A retry the budget
    /// refuses is not sent; it counts as retryable and waits at least a tenth of the window.
    #[arg(
        long,
        alias = "retry-budget-ttl-ms",
        value_name = "DURATION",
        allow_hyphen_values = true,
        default_value = "10s",
        value_parser = duration::parse_ms,
        conflicts_with = "exec"
    )]
    retry_budget_ttl: u64,
    /// Latency bands of the URL selector, ascending: a URL whose answer took at least a band
    /// is left out for that band's duration. Durations with units. Default RocketMQ's
    /// 50ms,100ms,550ms,1s,2s,3s,15s.
    #[arg(long, alias = "fault-latency-ms", value_name = "LIST", conflicts_with = "exec")]
    fault_latency: Option<String>,
    /// How long a URL is left out, per band, as durations with units; a failure counts as
    /// the top band. Default RocketMQ's 0,0,30s,1m,2m,3m,10m.
    #[arg(long, alias = "fault-unavailable-ms", value_name = "LIST", conflicts_with = "exec")]
    fault_unavailable: Option<String>,
    /// The Content-Type of each POST.
    #[arg(long, value_name = "TYPE", default_value = "text/plain; charset=utf-8", conflicts_with = "exec")]
    content_type: String,
}

impl HttpArgs {
    fn options(&self) -> Result<HttpOptions, CliError> {
        let list = |flag: &str, text: &Option<String>| -> Result<Option<Vec<u16>>, CliError> {
            text.as_deref().map(StatusTable::parse_list).transpose().map_err(|e| CliError::flag(flag, e))
        };
        let retryable = list("--retry-status", &self.retry_status)?;
        let permanent = list("--permanent-status", &self.permanent_status)?;
        let statuses = StatusTable::new(
            retryable.unwrap_or_else(|| retryq_worker::http::DEFAULT_RETRYABLE.to_vec()),
            permanent,
        )
        .map_err(|e| {
            let flag = if e.list == "permanent" { "--permanent-status" } else { "--retry-status" };
            CliError::flag(flag, e)
        })?;
        let budget =
            TpsBudget::new(self.retry_budget_ttl, self.retry_budget_min_per_sec, self.retry_budget_ratio)
                .map_err(|e| {
                    let flag = match e.field {
                        "ttl_ms" => "--retry-budget-ttl",
                        "retry_ratio" => "--retry-budget-ratio",
                        _ => "--retry-budget-min-per-sec",
                    };
                    CliError::flag(flag, e.reason)
                })?;
        let rocketmq = FaultTable::rocketmq();
        let faults = match (&self.fault_latency, &self.fault_unavailable) {
            (None, None) => rocketmq,
            (latency, unavailable) => {
                let latency = numbers(
                    "--fault-latency",
                    latency.as_deref(),
                    &retryq_control::nodes::ROCKETMQ_LATENCY_MAX_MS,
                )?;
                let unavailable = numbers(
                    "--fault-unavailable",
                    unavailable.as_deref(),
                    &retryq_control::nodes::ROCKETMQ_NOT_AVAILABLE_MS,
                )?;
                if latency.len() != unavailable.len() {
                    let flag = if self.fault_unavailable.is_some() {
                        "--fault-unavailable"
                    } else {
                        "--fault-latency"
                    };
                    return Err(CliError::flag(
                        flag,
                        format!(
                            "{} durations for {} latency bands: --fault-latency and --fault-unavailable \
                             need one entry each per band (the default tables have 7)",
                            unavailable.len(),
                            latency.len()
                        ),
                    ));
                }
                FaultTable::new(latency, unavailable).map_err(|e| {
                    let flag =
                        if e.field == "latency_max_ms" { "--fault-latency" } else { "--fault-unavailable" };
                    CliError::flag(flag, e.reason)
                })?
            }
        };
        Ok(HttpOptions {
            statuses,
            faults,
            budget,
            budget_wait: Duration::from_millis(self.retry_budget_ttl / 10),
            content_type: self.content_type.clone(),
        })
    }
}

/// A comma-separated list of durations in milliseconds, or `default` when not given.
fn numbers(flag: &str, text: Option<&str>, default: &[u64]) -> Result<Vec<u64>, CliError> {
    let Some(text) = text else { return Ok(default.to_vec()) };
    text.split(',')
        .map(|item| {
            duration::parse_ms(item).map_err(|e| CliError::flag(flag, format!("{:?}: {e}", item.trim())))
        })
        .collect()
}

/// The transports the flags name, one per slot: clones of one, so that HTTP slots share
/// their node selector and retry budgets.
fn transports(args: &Args, stop: &Stop) -> Result<Vec<Box<dyn Transport + Send>>, CliError> {
    let n = usize::from(args.concurrency);
    if let Some(command) = &args.exec {
        let trampoline = super::trampoline::this_binary()?;
        let exits = args.exits.table()?;
        tracing::info!(exits = %exits, "the command's exit statuses");
        let exec = Exec::new(command.clone()).with_stop(stop).with_trampoline(trampoline).with_exits(exits);
        return Ok((0..n).map(|_| Box::new(exec.clone()) as Box<dyn Transport + Send>).collect());
    }
    let options = args.http.options()?;
    let statuses = options.statuses.to_string();
    let http = Http::new(&args.url, options).map_err(|e| match e {
        HttpError::ContentType(_) => CliError::flag("--content-type", e),
        other => CliError::flag("--url", other),
    })?;
    // Credentials in a URL are shown as `***`.
    tracing::info!(urls = ?http.urls(), statuses, "posting each attempt to one of the URLs");
    Ok((0..n).map(|_| Box::new(http.clone()) as Box<dyn Transport + Send>).collect())
}

/// `--lease` below the shortest lease the worker renews, in the flag's words.
fn lease_too_short(e: &ConfigError, lease_ms: u64) -> CliError {
    let least = e.lease_needed_ms().unwrap_or_default();
    CliError::flag(
        "--lease",
        format!(
            "{lease_ms} ms is shorter than {least} ms: the worker renews each lease every third of it \
             while the attempt runs (a heartbeat), and each renewal needs time to commit; raise \
             --lease to at least {least}ms"
        ),
    )
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    if args.exec.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return Err(CliError::flag("--exec", "must not be empty"));
    }
    if let (Some(retain), Some(forget)) = (args.retain, args.forget_after)
        && forget < retain
    {
        return Err(CliError::flag(
            "--forget-after",
            "is shorter than --retain: a tombstone would be forgotten before its job is pruned",
        ));
    }
    let worker = retryq_worker::process_name(&args.worker).map_err(|e| CliError::flag("--worker", e))?;
    let periodic = periodic(&args.every, super::now()?)?;
    let config = Config {
        settings: Settings {
            lease_ms: args.lease,
            base_ms: args.backoff_base,
            cap_ms: args.backoff_cap,
            reap_limit: args.reap_limit,
        },
        timeout: Duration::from_millis(args.timeout),
        until_idle: args.until_idle,
        margin: args.margin.map(Duration::from_millis),
        retain: args.retain.map(Duration::from_millis),
        forget: args.forget_after.map(Duration::from_millis),
        queues: if args.queues.is_empty() {
            vec![retryq::DEFAULT_QUEUE.to_owned()]
        } else {
            args.queues.clone()
        },
        periodic,
        ..Config::new(worker)
    };
    let stop = Stop::new();
    init_logging();
    let whose = args.clock.whose(&args.db);
    let mut transports = transports(&args, &stop)?;
    config.validate().map_err(|e| match e {
        ConfigError::LeaseTooShort { .. } => lease_too_short(&e, args.lease),
        ConfigError::MarginTooShort { .. } | ConfigError::MarginTooLong { .. } => {
            let what = e.to_string();
            CliError::flag("--margin", what.strip_prefix("margin: ").unwrap_or(&what))
        }
        other => CliError::Usage(other.to_string()),
    })?;
    // Before the first write: past the file size limit a write fails, it does not kill.
    retryq_worker::catch_file_size_signal()?;
    stop.on_signals()?;
    let mut store = match args.db.file() {
        Some(path) => {
            let queue = args.db.open_file(&path, true).map_err(|e| file_too_large(&path, e))?;
            Box::new(queue) as Box<dyn retryq::Backend>
        }
        // An empty database gets the schema, as a new file does.
        None => args.db.open_write(true)?,
    };
    let config = Config { db_file: args.db.file(), ..config };
    // Whose clock is logged only where there is a choice: a SQLite file has this host's.
    let db = retryq::redacted(&args.db.db);
    match args.db.file() {
        Some(_) => tracing::info!(db = %db, store = store.kind(), "opened the store"),
        None => tracing::info!(db = %db, store = store.kind(), clock = whose.as_str(), "opened the store"),
    }
    let server = ServerClock::new();
    // A test's stepped wall clock (retryq_worker::STEP_FILE_VAR), where this host's clock is
    // the one leases are kept on; the trampolines read the same.
    let stepped = SteppedClock::from_env();
    let clock: &dyn Clock = match (&stepped, args.db.file(), whose) {
        (Some(stepped), Some(_), _) | (Some(stepped), None, super::db::Clock::Local) => stepped,
        (_, _, super::db::Clock::Server) => &server,
        (_, _, super::db::Clock::Local) => &SystemClock,
    };
    let ran = retryq_worker::work_in_slots(&mut *store, &config, &mut transports, &stop, clock);
    let path = args.db.file();
    match ran {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(WorkError::Queue(e)) => match &path {
            Some(path) => Err(file_too_large(path, args.db.explain(e))),
            None => Err(args.db.explain(e)),
        },
        Err(WorkError::FileTooLarge { why, source }) => {
            let db = path.map_or_else(|| retryq::redacted(&args.db.db), |p| p.display().to_string());
            Err(CliError::Database(format!("{db}: {why}: nothing was written ({source})")))
        }
        Err(WorkError::Config(e)) => Err(CliError::Usage(e.to_string())),
        Err(e @ WorkError::DbFile(_)) => Err(CliError::Database(e.to_string())),
        Err(e @ WorkError::Misconfigured { .. }) => {
            Err(CliError::Misconfigured(format!("--exec: {e} (exit {})", super::error::EXIT_MISCONFIGURED)))
        }
        Err(e) => Err(CliError::Other(e.to_string())),
    }
}

/// `error`, or, if a write went past the file size limit, that.
fn file_too_large(db: &Path, error: CliError) -> CliError {
    if !retryq_worker::file_size_limit_hit() {
        return error;
    }
    CliError::Database(format!("{}: {} ({error})", db.display(), retryq_worker::describe_limit()))
}

/// Logs to standard error, filtered by `RUST_LOG` (default `info`).
///
/// A log line that cannot be written is dropped: the subscriber's own report of that would
/// go to the same standard error, and panic (`work 2>/dev/full` died before claiming). And
/// every field is printed through [`printable`]: ids and errors come from outside, and a
/// newline or an escape sequence in one must not forge a log line or reach the terminal.
fn init_logging() {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) => EnvFilter::try_new(&spec).unwrap_or_else(|e| {
            noteln!("retryq: RUST_LOG={spec:?} is not a filter ({e}); logging at info");
            EnvFilter::new("info")
        }),
        Err(_) => EnvFilter::new("info"),
    };
    // As the default formatter writes fields (the message bare, then `name=value`), but
    // escaped.
    let fields = tracing_subscriber::fmt::format::debug_fn(|writer, field, value| {
        let text = format!("{value:?}");
        match field.name() {
            "message" => write!(writer, "{}", printable(&text)),
            name => write!(writer, "{name}={}", printable(&text)),
        }
    })
    .delimited(" ");
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .fmt_fields(fields)
        .log_internal_errors(false)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    // Only fails if a subscriber is already set, which then keeps logging.
    let _ = subscriber.try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(every: &[&str], payloads: &[&str]) -> EveryArgs {
        EveryArgs {
            every: every.iter().map(|text| super::every(text).expect(text)).collect(),
            every_payload: payloads.iter().map(|p| (*p).to_owned()).collect(),
            every_max_attempts: 3,
        }
    }

    #[test]
    fn every_reads_a_name_and_an_interval_or_a_cron_pattern() {
        let tick = every("tick=1s").expect("tick");
        assert_eq!((tick.name(), tick.every().to_string()), ("tick", "1s".to_owned()));
        assert_eq!(every("daily=24h").expect("daily").every().to_string(), "1d");
        let report = every("report=cron:0 3 * * *").expect("report");
        assert_eq!((report.name(), report.every().to_string()), ("report", "cron:0 3 * * *".to_owned()));
        // The first '=' ends the name: here the interval is "b=1s".
        assert!(every("a=b=1s").expect_err("a=b=1s").contains("\"b=1s\""));
        for (bad, says) in [
            ("x", "expected NAME=INTERVAL"),
            ("a=5", "5 has no unit"),
            ("a=", "empty"),
            ("a=500ms", "at least 1s"),
            ("a=1500ms", "whole number of seconds"),
            ("a=cron:", "cannot be read"),
            ("a=cron:61 * * * *", "cannot be read"),
            ("=1s", "is empty"),
            ("a@b=1s", "'@'"),
            ("a\0b=1s", "control"),
        ] {
            let e = every(bad).expect_err(bad);
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }

    #[test]
    fn payloads_and_attempts_go_to_the_jobs_they_name() {
        let jobs = periodic(&args(&["a=1s", "b=cron:@hourly"], &["b={\"x\":1}", "a="]), 0).expect("jobs");
        assert_eq!(jobs.len(), 2);
        assert_eq!((jobs[0].payload(), jobs[0].max_attempts()), ("", 3));
        assert_eq!((jobs[1].payload(), jobs[1].max_attempts()), ("{\"x\":1}", 3));
        // `=` may stand in a payload: the first one ends the name.
        let jobs = periodic(&args(&["a=1s"], &["a=k=v"]), 0).expect("jobs");
        assert_eq!(jobs[0].payload(), "k=v");
        for (every, payloads, says) in [
            (&["a=1s", "a=2s"][..], &[][..], "--every: \"a\" is given twice"),
            (&["a=1s"], &["b=x"], "\"b\" is not the name of an --every"),
            (&["a=1s"], &["a=x", "a=y"], "--every-payload: \"a\" is given twice"),
            (&["a=1s"], &["a"], "expected NAME=TEXT"),
            (&["a=cron:0 0 30 2 *"], &[], "matches no date"),
        ] {
            let e = periodic(&args(every, payloads), 1_800_000_000_000).expect_err(says).to_string();
            assert!(e.contains(says), "{every:?} {payloads:?}: {e}");
        }
    }
}
