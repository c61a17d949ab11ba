//! `retryq serve [--db PATH|URL] [--listen ADDR] [--token-file FILE] [--threads N] [--clock
//! WHOSE]`: the dashboard and `/metrics` of one store, until SIGINT or SIGTERM.
//!
//! On loopback (the default, 127.0.0.1:8080) no token is needed, and a request must name a
//! loopback host; on any other address a token is required (`--token-file`, or the
//! `RETRYQ_TOKEN` variable), and every request carries it (see `serve/guard.rs`). Standard
//! output gets one JSON line once listening, `{"listening":"http://ADDR/"}`; standard error a
//! line per refused or failed request.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::thread;

use retryq::Backend;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::db::{ClockFlag, Db};
use super::{CliError, print_json};
use crate::out::noteln;
use crate::serve::guard::Guard;
use crate::serve::http::{Request, Response};
use crate::serve::routes::Routes;

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
    /// Bearer TOKEN`, or the cookie the login page sets). Required on any address but
    /// loopback.
    #[arg(long, value_name = "FILE", conflicts_with = "token_env")]
    token_file: Option<std::path::PathBuf>,
    /// The token, from the environment only (a flag's value is visible to every user of the
    /// host).
    #[arg(long = "token-from-env", hide = true, env = "RETRYQ_TOKEN", value_name = "TOKEN")]
    token_env: Option<String>,
    /// Requests served at once, each on its own connection to the store.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: u16,
}

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
    let routes = Arc::new(Routes { guard: Guard::new(token.as_deref()), now: Box::new(now) });
    let mut signals = Signals::new([SIGTERM, SIGINT])?;
    let server = tiny_http::Server::http(args.listen)
        .map_err(|e| CliError::flag("--listen", format!("cannot listen on {}: {e}", args.listen)))?;
    let server = Arc::new(server);
    let address = server.server_addr().to_ip().map_or_else(|| args.listen.to_string(), |a| a.to_string());
    print_json(&serde_json::json!({ "listening": format!("http://{address}/") }))?;
    let workers: Vec<_> = stores
        .into_iter()
        .enumerate()
        .map(|(n, store)| {
            let (server, routes) = (Arc::clone(&server), Arc::clone(&routes));
            thread::Builder::new()
                .name(format!("retryq-serve-{n}"))
                .spawn(move || serve(&server, &routes, store))
        })
        .collect::<Result<_, _>>()?;
    if let Some(signal) = signals.forever().next() {
        noteln!("retryq serve: signal {signal}, stopping");
    }
    for _ in &workers {
        server.unblock();
    }
    for worker in workers {
        let _ = worker.join();
    }
    Ok(ExitCode::SUCCESS)
}

/// Answers requests until the server is unblocked.
fn serve(server: &tiny_http::Server, routes: &Routes, mut store: Box<dyn Backend>) {
    while let Ok(mut request) = server.recv() {
        let asked = Request::read(&mut request);
        let response: Response = routes.handle(&mut *store, &asked);
        if response.status >= 400 && response.status != 404 {
            noteln!(
                "retryq serve: {} {} → {} {}",
                asked.method,
                crate::printable::printable(&asked.path),
                response.status,
                crate::printable::printable(&String::from_utf8_lossy(
                    &response.body[..response.body.len().min(200)]
                ))
            );
        }
        // A client that went away is no error of ours.
        let _ = request.respond(response.into_tiny());
    }
}

/// The token, from the file or the environment; `None` when neither is given.
fn token(args: &Args) -> Result<Option<String>, CliError> {
    let (token, from) = match (&args.token_file, &args.token_env) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError::flag("--token-file", format!("{}: {e}", path.display())))?;
            (text.lines().next().unwrap_or_default().trim().to_owned(), "--token-file")
        }
        (None, Some(token)) => (token.trim().to_owned(), "RETRYQ_TOKEN"),
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
