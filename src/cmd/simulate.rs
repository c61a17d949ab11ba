//! `retryq simulate`: the retry-storm simulation of `retryq_control::simulate`, as a table,
//! JSON lines, or an SVG plot. The model and its checks are documented in
//! `docs/retry-control.md`; this file only parses flags and prints.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::value_parser;
use retryq_control::simulate::{self, Row, Server, SimError};

use super::CliError;

#[derive(Clone, Copy, clap::ValueEnum)]
enum ServerArg {
    /// One row under optimistic concurrency: concurrent writers conflict (the AWS model).
    Contended,
    /// Every write fails: the worst case of n·r^(m−1). Needs --attempts.
    Failing,
}

#[derive(clap::Args)]
pub struct Args {
    /// Client counts: one row per count, strategy and budget (each 1 … 100000). The default
    /// picks points of the AWS simulator's sweep (10 … 190).
    #[arg(long, value_name = "N", num_args = 1.., value_delimiter = ',',
          default_values_t = [10u32, 20, 50, 100, 150, 190],
          value_parser = value_parser!(u32).range(1..=100_000))]
    clients: Vec<u32>,
    /// Layers, counting the clients as layer 1 and the server as the last (2 … 8).
    #[arg(long, value_name = "M", default_value_t = 2, value_parser = value_parser!(u32).range(2..=8))]
    layers: u32,
    /// Attempts per request at every hop, the first included (1 … 1000); no limit if absent.
    #[arg(long, value_name = "R", value_parser = value_parser!(u32).range(1..=1000))]
    attempts: Option<u32>,
    /// What the server does with a write.
    #[arg(long, value_enum, default_value_t = ServerArg::Contended)]
    server: ServerArg,
    /// Independent runs averaged per row (1 … 10000).
    #[arg(long, value_name = "K", default_value_t = 100, value_parser = value_parser!(u32).range(1..=10_000))]
    runs: u32,
    /// The seed: the same seed and flags give the same output.
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
    /// Also write an SVG plot to FILE: calls, and below them the success rate, against
    /// clients, one line per strategy (dashed with a budget).
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Print one JSON object per row instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let server = match args.server {
        ServerArg::Contended => Server::Contended,
        ServerArg::Failing => Server::Failing,
    };
    if matches!(server, Server::Failing) && args.attempts.is_none() {
        return Err(CliError::Other(
            "--attempts: required with --server failing, or no run would end".into(),
        ));
    }
    let rows = simulate::table(&args.clients, args.layers, args.attempts, server, args.runs, args.seed)
        .map_err(|e| match e {
            SimError::Config(c) => CliError::Other(format!("--{}: {}", c.field, c.reason)),
            too_long @ SimError::TooLong { .. } => {
                CliError::Other(format!("--clients: {too_long}; try fewer clients or an --attempts limit"))
            }
            other => CliError::Other(other.to_string()),
        })?;
    if let Some(path) = &args.svg {
        let svg = simulate::svg(&rows).map_err(|e| CliError::Other(format!("--svg: {e}")))?;
        std::fs::write(path, svg)
            .map_err(|e| CliError::Other(format!("--svg: cannot write {}: {e}", path.display())))?;
    }
    let mut out = io::stdout().lock();
    let printed = if args.json {
        rows.iter().try_for_each(|row| writeln!(out, "{}", super::one_line(json(row).to_string())))
    } else {
        print_table(&mut out, &rows)
    };
    printed.and_then(|()| out.flush()).map_err(crate::out::stdout_failed)?;
    Ok(ExitCode::SUCCESS)
}

fn json(row: &Row) -> serde_json::Value {
    serde_json::json!({
        "strategy": row.strategy.name(),
        "budget": row.budget,
        "clients": row.clients,
        "layers": row.layers,
        "calls": row.calls,
        "amplification": row.amplification,
        "completion_ms": row.completion_ms,
        "success_rate": row.success_rate,
    })
}

fn print_table(out: &mut impl Write, rows: &[Row]) -> io::Result<()> {
    writeln!(
        out,
        "{:<13} {:<6} {:>7} {:>6} {:>10} {:>13} {:>13} {:>12}",
        "strategy", "budget", "clients", "layers", "calls", "amplification", "completion_ms", "success_rate"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:<13} {:<6} {:>7} {:>6} {:>10.1} {:>13.2} {:>13.1} {:>12.3}",
            r.strategy.name(),
            if r.budget { "yes" } else { "no" },
            r.clients,
            r.layers,
            r.calls,
            r.amplification,
            r.completion_ms,
            r.success_rate
        )?;
    }
    Ok(())
}
