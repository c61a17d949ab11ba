//! `retryq`: the command line of the retryq durable retry queue.
//!
//! Kept thin on purpose: each subcommand is a module under `cmd/` that parses its flags,
//! calls the libraries, and prints. Logic lives in `impl/` (the queue), `model/` (the
//! reference model and its checker) and `conformance/` (the replay harness).

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
    /// Model-check SPEC.md exhaustively within bounds (or the store with a seeded bug).
    Check(cmd::check::Args),
    /// Serve stateright's Explorer on the model, on 127.0.0.1.
    Explore(cmd::explore::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Replay(args) => cmd::replay::run(args),
        Command::Verify(args) => cmd::verify::run(args),
        Command::Check(args) => cmd::check::run(args),
        Command::Explore(args) => cmd::explore::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("retryq: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
