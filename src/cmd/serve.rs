//! `retryq serve [--db PATH|URL] [--listen ADDR] [--token-file FILE] [--threads N]
//! [--max-connections N] [--request-timeout DURATION] [--clock WHOSE]`: the dashboard and `/metrics` of one store, until
//! SIGINT or SIGTERM.
//!
//! On loopback (the default, 127.0.0.1:8080) no token is needed, and a request must name a
//! loopback host; on any other address a token is required (`--token-file`, or the
//! `RETRYQ_TOKEN` variable — never a flag's value, which every user of the host sees in
//! `ps`), and every request carries it or a session signed in with it (see
//! `serve/guard.rs`). What a client may hold before it is admitted is bounded
//! (`serve/server.rs`). Standard output gets one JSON line once listening,
//! `{"listening":"http://ADDR/"}`; standard error a line per refused or failed request.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use retryq::Backend;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::db::{ClockFlag, Db};
use super::{CliError, print_json};
use crate::out::noteln;
use crate::serve::activity::{Activity, SAMPLE_EVERY};
use crate::serve::guard::Guard;
use crate::serve::routes::Routes;
use crate::serve::server::{self, Limits};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    #[command(flatten)]
    clock: ClockFlag,
    /// The address and port to listen on; port 0 picks a free one (printed). Any address
    /// but loopback requires a token.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// A file whose first line is the token every request must carry (as `Authorization:
    /// Bearer TOKEN`), or sign in with (a browser then carries a session's cookie, never the
    /// token). Required on any address but loopback. Or the `RETRYQ_TOKEN` variable.
    #[arg(long, value_name = "FILE")]
    token_file: Option<std::path::PathBuf>,
    /// Requests served at once, each on its own connection to the store.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: u16,
    /// Client connections open at once. When all are taken, a new one takes the place of
    /// the one that has waited longest without sending its whole request.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u16).range(1..=4096))]
    max_connections: u16,
    /// How long a client has to send its whole request from its connection on (408 after
    /// it), and again to take the answer.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, default_value = "10s", value_parser = super::duration::positive)]
    request_timeout: u64,
}

/// The variable that may hold the token, read from the environment only.
const TOKEN_VAR: &str = "RETRYQ_TOKEN";

/// The shortest token accepted: guessing it must be hopeless.
const MIN_TOKEN_BYTES: usize = 16;

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let token = token(&args)?;
    if token.is_none() && !args.listen.ip().is_loopback() {
        return Err(CliError::flag(
            "--listen",
            format!(
                "{} is not a loopback address: a dashboard reachable from other hosts requires a token \
                 (--token-file FILE, or RETRYQ_TOKEN)",
                args.listen
            ),
        ));
    }
    // Open one connection per thread before listening: a wrong --db fails here, at once.
    let stores = (0..args.threads).map(|_| args.db.open_write(false)).collect::<Result<Vec<_>, _>>()?;
    let whose = args.clock.whose(&args.db);
    let now = move |store: &dyn Backend| -> Result<u64, String> {
        super::db::now_by(whose, store).map_err(|e| match e {
            super::db::NowError::Store(e) => e.to_string(),
            super::db::NowError::Clock(why) => why,
        })
    };
    let routes = Arc::new(Routes {
        guard: Guard::new(token.as_deref()),
        now: Box::new(now),
        activity: Activity::default(),
    });
    // The charts count from here: the first reading before listening, then one every
    // SAMPLE_EVERY on a connection of its own, so that no request waits for it.
    let sampler = args.db.open_read()?;
    let sampling = Arc::clone(&routes);
    let sample = move || {
        if let Err(why) = sampling.sample(&*sampler) {
            noteln!("retryq serve: reading the tallies for the charts failed: {why}");
        }
    };
    sample();
    std::thread::Builder::new().name("retryq-serve-activity".into()).spawn(move || {
        loop {
            std::thread::sleep(SAMPLE_EVERY);
            sample();
        }
    })?;
    let mut signals = Signals::new([SIGTERM, SIGINT])?;
    let listener = std::net::TcpListener::bind(args.listen)
        .map_err(|e| CliError::flag("--listen", format!("cannot listen on {}: {e}", args.listen)))?;
    let address = listener.local_addr().map_or_else(|_| args.listen.to_string(), |a| a.to_string());
    let limits = Limits {
        connections: usize::from(args.max_connections),
        request_timeout: Duration::from_millis(args.request_timeout),
    };
    // The first SIGTERM or SIGINT ends the serving.
    let stop = Arc::new(tokio::sync::Notify::new());
    let stopper = Arc::clone(&stop);
    std::thread::Builder::new().name("retryq-serve-signals".into()).spawn(move || {
        if let Some(signal) = signals.forever().next() {
            noteln!("retryq serve: signal {signal}, stopping");
        }
        stopper.notify_one();
    })?;
    print_json(&serde_json::json!({ "listening": format!("http://{address}/") }))?;
    server::serve(listener, routes, stores, limits, async move { stop.notified().await })?;
    Ok(ExitCode::SUCCESS)
}

/// The token, from the file or the environment; `None` when neither is given.
fn token(args: &Args) -> Result<Option<String>, CliError> {
    let from_env = std::env::var_os(TOKEN_VAR).filter(|v| !v.is_empty());
    let (token, from) = match (&args.token_file, from_env) {
        (Some(_), Some(_)) => {
            return Err(CliError::flag(
                "--token-file",
                format!("{TOKEN_VAR} is set too: give the token one way, not two"),
            ));
        }
        (Some(path), None) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError::flag("--token-file", format!("{}: {e}", path.display())))?;
            (text.lines().next().unwrap_or_default().trim().to_owned(), "--token-file")
        }
        (None, Some(token)) => {
            let token =
                token.into_string().map_err(|_| CliError::flag(TOKEN_VAR, "the token must be UTF-8"))?;
            (token.trim().to_owned(), TOKEN_VAR)
        }
        (None, None) => return Ok(None),
    };
    if token.len() < MIN_TOKEN_BYTES {
        return Err(CliError::flag(
            from,
            format!("the token is {} bytes; at least {MIN_TOKEN_BYTES} are required", token.len()),
        ));
    }
    if token.chars().any(|c| c.is_control() || c == ';' || c == ' ') {
        return Err(CliError::flag(from, "the token must not hold spaces, semicolons or control characters"));
    }
    Ok(Some(token))
}
