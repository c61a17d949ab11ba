//! `retryq serve-demo [--port P] [--slow DURATION] [--slow-rate R] [--fail-rate R] [--fail-status
//! S] [--retry-after S] [--pushback-ms N] [--seed S] [--threads N] [--read-timeout DURATION]
//! [--inbox-max-orders N] [--inbox-max-bytes B] [--stats-every DURATION]`: the snack warehouse
//! (`retryq_demo::Server`) on 127.0.0.1 until SIGINT or SIGTERM.
//!
//! Standard output is JSON Lines: `{"listening":"http://127.0.0.1:PORT/orders"}` once
//! listening, `{"stats":{…}}` every `--stats-every`, and `{"summary":{…}}` when stopped
//! by a signal (then exit 0). A one-line summary in words goes to standard error.

use std::process::ExitCode;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use retryq_demo::{Config, DEFAULT_INBOX_MAX_BYTES, DEFAULT_INBOX_MAX_ORDERS, Server, StartError, Stats};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::{CliError, print_json};
use crate::out::noteln;

/// `--read-timeout`'s default, `retryq_demo::DEFAULT_READ_TIMEOUT`, as the flag is written
/// (clap parses a default as it parses the flag, and a duration needs its unit).
const READ_TIMEOUT: &str = "5s";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The port on 127.0.0.1; 0 picks a free one (printed).
    #[arg(long, value_name = "P", default_value_t = 0)]
    port: u16,
    /// How long a slow order request takes before it is decided and answered (the order is
    /// accepted even if the sender gave up meanwhile): up to 1h, as 250ms, 2s.
    #[arg(long, alias = "slow-ms", value_name = "DURATION", allow_hyphen_values = true, default_value_t = 0, value_parser = super::duration::millis(0, 3_600_000))]
    slow: u64,
    /// The share of order requests that are slow, 0 to 1.
    #[arg(long, value_name = "R", allow_negative_numbers = true, default_value_t = 1.0)]
    slow_rate: f64,
    /// The share of order requests that fail on purpose, 0 to 1.
    #[arg(long, value_name = "R", allow_negative_numbers = true, default_value_t = 0.0)]
    fail_rate: f64,
    /// The status a failure is answered with (400 to 599).
    #[arg(long, value_name = "S", allow_negative_numbers = true, default_value_t = 503)]
    fail_status: u16,
    /// Send `Retry-After: S` (seconds) with each failure.
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    retry_after: Option<u64>,
    /// Send `Retry-Pushback-Ms: N` with each failure: a delay, or negative for "do not retry".
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pushback_ms: Option<i64>,
    /// The seed of the failure draws.
    #[arg(long, value_name = "S", allow_negative_numbers = true, default_value_t = 0)]
    seed: u64,
    /// How many connections are served at once, one request each (1 to 1024); 128 more may
    /// wait, and any more are answered 503.
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value_t = 16)]
    threads: usize,
    /// How long a client has to send its whole request, head and body (1ms to 1h); a slower
    /// one is answered 408 and closed.
    #[arg(long, alias = "read-timeout-ms", value_name = "DURATION", allow_hyphen_values = true, default_value = READ_TIMEOUT, value_parser = super::duration::millis(1, 3_600_000))]
    read_timeout: u64,
    /// The most orders the inbox keeps; new orders past it are answered 507.
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value_t = DEFAULT_INBOX_MAX_ORDERS)]
    inbox_max_orders: usize,
    /// The most bytes of keys and payloads the inbox keeps; new orders past it are answered
    /// 507.
    #[arg(long, value_name = "B", allow_negative_numbers = true, default_value_t = DEFAULT_INBOX_MAX_BYTES)]
    inbox_max_bytes: u64,
    /// Print the counts at this interval (10s, 1m; up to 1d; 0: only at the end).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, default_value_t = 0, value_parser = super::duration::millis(0, 86_400_000))]
    stats_every: u64,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let config = Config {
        slow: Duration::from_millis(args.slow),
        slow_rate: args.slow_rate,
        fail_rate: args.fail_rate,
        fail_status: args.fail_status,
        retry_after_s: args.retry_after,
        pushback_ms: args.pushback_ms,
        seed: args.seed,
        threads: args.threads,
        read_timeout: Duration::from_millis(args.read_timeout),
        inbox_max_orders: args.inbox_max_orders,
        inbox_max_bytes: args.inbox_max_bytes,
    };
    config.validate().map_err(|e| {
        let flag = match e.field {
            "read_timeout" => "--read-timeout".to_owned(),
            field => format!("--{}", field.replace('_', "-")),
        };
        CliError::flag(&flag, e.reason)
    })?;
    // Listen for signals before anything is printed, so that a signal sent as soon as the
    // address is read is not lost.
    let mut signals = Signals::new([SIGTERM, SIGINT])?;
    let server = Server::start(config, args.port).map_err(|e| match e {
        StartError::Listen { .. } => CliError::flag("--port", e),
        other => CliError::Other(other.to_string()),
    })?;
    print_json(&Line::Listening(server.url()))?;
    let (tx, rx) = mpsc::channel();
    thread::Builder::new().name("retryq-signals".into()).spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let _ = tx.send(signal);
        }
    })?;
    let every = (args.stats_every > 0).then(|| Duration::from_millis(args.stats_every));
    loop {
        let signalled = match every {
            Some(every) => rx.recv_timeout(every),
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match signalled {
            Ok(_) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => print_json(&Line::Stats(server.stats()))?,
        }
    }
    let stats = server.stop();
    print_json(&Line::Summary(stats))?;
    noteln!("retryq serve-demo: {}", words(&stats));
    Ok(ExitCode::SUCCESS)
}

/// A line of standard output: an object with one field, its fields in `Stats`' order.
#[derive(serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum Line {
    Listening(String),
    Stats(Stats),
    Summary(Stats),
}

fn words(s: &Stats) -> String {
    format!(
        "{} requests received, {} distinct orders accepted, {} duplicates dropped, {} failed on purpose, {} rejected, \
         {} refused for a full inbox; {} connections refused",
        s.requests, s.orders, s.duplicates, s.failed, s.rejected, s.full, s.refused_connections
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use retryq_demo::DEFAULT_READ_TIMEOUT;

    #[test]
    fn the_read_timeout_default_is_the_demo_crates() {
        let ms = super::super::duration::parse_ms(READ_TIMEOUT).expect("a duration");
        assert_eq!(Duration::from_millis(ms), DEFAULT_READ_TIMEOUT);
    }
}
