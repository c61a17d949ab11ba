//! `retryq`: the command line of the retryq durable retry queue.
//!
//! Kept thin on purpose: each subcommand is a module under `cmd/` that parses its flags,
//! calls the libraries, and prints. Logic lives in `impl/` (the queue), `model/` (the
//! reference model) and `conformance/` (the replay harness).

mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A durable retry queue on SQLite whose correctness claims are checked.
#[derive(Parser)]
#[command(name = "retryq", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a JSON Lines trace (SPEC section 5) against a SQLite database.
    Replay(cmd::replay::Args),
    /// The main job: check every claim the project makes, with one summary and one exit status.
    Verify(cmd::verify::Args),
    /// Benchmarks: the queue against SQLite's own limit, batches, claim scaling, peers.
    Bench(cmd::bench::Args),
    /// One worker process of `retryq bench` (started by it, not by hand).
    #[command(hide = true)]
    BenchWorker(cmd::bench::WorkerArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Replay(args) => cmd::replay::run(args),
        Command::Verify(args) => cmd::verify::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::BenchWorker(args) => cmd::bench::run_worker(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("retryq: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
