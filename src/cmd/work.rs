//! `retryq work --worker NAME --exec 'CMD' [--lease-ms] [--base-ms] [--cap-ms]
//! [--timeout-ms] [--until-idle]`: a worker process (the loop is `retryq_worker::work`).
//!
//! Logs go to standard error through `tracing`, filtered by `RUST_LOG` (default `info`):
//! one line per attempt. Exit 0 after SIGTERM or SIGINT (the attempt under way finished
//! and was recorded) or, with `--until-idle`, once no job is pending or leased; 128 + N on
//! a second signal N; 1 if the store failed; 2 for a wrong flag.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use retryq::{MAX_INT, Settings};
use retryq_worker::{Config, ConfigError, Exec, Stop, WorkError};
use tracing_subscriber::EnvFilter;

use super::{CliError, Db};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    /// The name this worker holds its leases under (1 to 256 bytes).
    #[arg(long, value_name = "NAME", value_parser = super::name)]
    worker: String,
    /// The command run per attempt, with `sh -c`: payload on stdin, RETRYQ_JOB_ID and
    /// RETRYQ_ATTEMPT in the environment; exit 0 ok, 75 retryable, 65 permanent.
    #[arg(long, value_name = "CMD")]
    exec: String,
    /// How long a claim holds a job; must be longer than --timeout-ms.
    #[arg(long, value_name = "MS", allow_negative_numbers = true, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..=MAX_INT))]
    lease_ms: u64,
    /// The first retry's backoff window.
    #[arg(long, value_name = "MS", allow_negative_numbers = true, default_value_t = 100, value_parser = clap::value_parser!(u64).range(0..=MAX_INT))]
    base_ms: u64,
    /// The largest backoff window.
    #[arg(long, value_name = "MS", allow_negative_numbers = true, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(0..=MAX_INT))]
    cap_ms: u64,
    /// The longest one attempt may run (also never past the job's deadline); then its
    /// process group is killed and the attempt counts as retryable.
    #[arg(long, value_name = "MS", allow_negative_numbers = true, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=MAX_INT))]
    timeout_ms: u64,
    /// Exit once no job is pending or leased.
    #[arg(long)]
    until_idle: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    if args.exec.trim().is_empty() {
        return Err(CliError::flag("--exec", "must not be empty"));
    }
    let config = Config {
        settings: Settings { lease_ms: args.lease_ms, base_ms: args.base_ms, cap_ms: args.cap_ms },
        timeout: Duration::from_millis(args.timeout_ms),
        until_idle: args.until_idle,
        ..Config::new(args.worker.clone())
    };
    config.validate().map_err(|e| match e {
        ConfigError::LeaseNotLonger { lease_ms, timeout_ms } => CliError::flag(
            "--lease-ms",
            format!(
                "{lease_ms} ms must be longer than --timeout-ms ({timeout_ms} ms): an attempt could outlive \
                 its lease, and another worker would claim the job while the command still runs"
            ),
        ),
        other => CliError::Usage(other.to_string()),
    })?;
    init_logging();
    let stop = Stop::new();
    stop.on_signals()?;
    let mut queue = args.db.open_write(true)?;
    let mut exec = Exec::new(args.exec).with_stop(&stop);
    match retryq_worker::work(&mut queue, &config, &mut exec, &stop) {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(WorkError::Queue(e)) => Err(args.db.explain(e)),
        Err(WorkError::Config(e)) => Err(CliError::Usage(e.to_string())),
        Err(e) => Err(CliError::Other(e.to_string())),
    }
}

/// Logs to standard error, filtered by `RUST_LOG` (default `info`).
fn init_logging() {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) => EnvFilter::try_new(&spec).unwrap_or_else(|e| {
            eprintln!("retryq: RUST_LOG={spec:?} is not a filter ({e}); logging at info");
            EnvFilter::new("info")
        }),
        Err(_) => EnvFilter::new("info"),
    };
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    // Only fails if a subscriber is already set, which then keeps logging.
    let _ = subscriber.try_init();
}
