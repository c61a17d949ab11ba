//! `retryq`: the command line of the retryq durable retry queue.
//!
//! Kept thin on purpose: each subcommand is a module under `cmd/` that parses its flags,
//! calls the libraries, and prints. Logic lives in `impl/` (the queue), `model/` (the
//! reference model and its checker), `conformance/` (the replay harness), `control/` (retry control on
//! the calling side, and its simulation), `worker/` (the worker loop and its transports) and
//! `demo/` (the receiving end of the HTTP demo).

#![forbid(unsafe_code)]

mod cmd;
mod measured;
mod metrics;
mod out;
mod printable;
mod serve;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// A durable retry queue on SQLite or PostgreSQL whose correctness claims are checked.
#[derive(Parser)]
#[command(name = "retryq", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
// Parsed once per process: the size of its largest variant (`work`'s flags) costs nothing.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Add a job (creates the database if missing).
    Enqueue(cmd::enqueue::Args),
    /// Run jobs: a worker process that runs a command or POSTs to a URL per attempt.
    Work(cmd::work::Args),
    /// Counts by status and dead reason, now.
    Stats(cmd::stats::Args),
    /// One job, as SPEC's `get` shows it.
    Get(cmd::get::Args),
    /// Every job, or those of one status: in claim order (pending, leased), newest first (done, dead).
    List(cmd::list::Args),
    /// The dead jobs, why, and their last error.
    Dead(cmd::dead::Args),
    /// Every recorded transition of one job.
    History(cmd::history::Args),
    /// Give dead jobs a new budget.
    Redrive(cmd::redrive::Args),
    /// Take a pending job off the queue, or ask a running one to stop.
    Cancel(cmd::cancel::Args),
    /// Stop a queue's jobs from starting, on every worker, until it is resumed.
    Pause(cmd::pause::Args),
    /// Let a paused queue's jobs start again.
    Resume(cmd::pause::Args),
    /// Make a pending job due now, ahead of its backoff or schedule.
    RunNow(cmd::run_now::Args),
    /// The dashboard and /metrics of a store, on 127.0.0.1 unless a token is given.
    Serve(cmd::serve::Args),
    /// Remove ended jobs older than a duration, leaving tombstones (and forget old ones).
    Prune(cmd::prune::Args),
    /// End every job due to end (out of budget, past its deadline, asked to stop), in bounded
    /// transactions: the way out of a backlog.
    Reap(cmd::reap::Args),
    /// Check SPEC section 4's invariants on every job and recorded transition.
    Audit(cmd::audit::Args),
    /// Run a JSON Lines trace (SPEC section 5) against a SQLite database.
    Replay(cmd::replay::Args),
    /// The SQLite queue against the reference model, on generated traces and killed processes.
    Conform(cmd::conform::Args),
    /// The main job: check every claim the project makes, with one summary and one exit status.
    Verify(cmd::verify::Args),
    /// Model-check SPEC.md exhaustively within bounds (or the store with a seeded bug).
    Check(cmd::check::Args),
    /// Serve stateright's Explorer on the model, on 127.0.0.1.
    Explore(cmd::explore::Args),
    /// Simulate retry storms: clients retrying against a contended server, per backoff strategy.
    Simulate(cmd::simulate::Args),
    /// The snack warehouse: a local HTTP receiver that drops duplicate orders, with injected
    /// slowness and failures, for `retryq work --url`.
    ServeDemo(cmd::serve_demo::Args),
    /// Benchmarks: the queue against SQLite's own limit, batches, claim scaling, peers.
    Bench(cmd::bench::Args),
    /// One worker process of `retryq bench` (started by it, not by hand).
    #[command(hide = true)]
    BenchWorker(cmd::bench::WorkerArgs),
    /// One measured step of `retryq bench --scale` (started by it, not by hand).
    #[command(hide = true)]
    BenchScaleStep(cmd::bench::StepArgs),
}

/// What clap would print and exit with, without its `exit`, which drops a failed write: help
/// and version text go to standard output and a write that fails there is an error (exit
/// 141 for a closed pipe, 1 otherwise, said on standard error); a wrong command line's
/// message goes to standard error, exit 2.
fn clap_exit(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let text = e.render();
            let written = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                out::print(format_args!("{}", text.ansi()))
            } else {
                out::print(format_args!("{text}"))
            };
            match written {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => {
                    if !err.is_quiet() {
                        out::noteln!("retryq: error: {err:#}");
                    }
                    err.exit_code()
                }
            }
        }
        _ => {
            let _ = e.print();
            ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
        }
    }
}

fn main() -> ExitCode {
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|first| first == cmd::trampoline::NAME) {
        return cmd::trampoline::run(args);
    }
    let matches = match cmd::usage::help_usage_after_errors(Cli::command()).try_get_matches() {
        Ok(matches) => matches,
        Err(e) => return clap_exit(&e),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    let result = match cli.command {
        Command::Enqueue(args) => cmd::enqueue::run(args),
        Command::Work(args) => cmd::work::run(args),
        Command::Stats(args) => cmd::stats::run(args),
        Command::Get(args) => cmd::get::run(args),
        Command::List(args) => cmd::list::run(args),
        Command::Dead(args) => cmd::dead::run(args),
        Command::History(args) => cmd::history::run(args),
        Command::Redrive(args) => cmd::redrive::run(args),
        Command::Cancel(args) => cmd::cancel::run(args),
        Command::Pause(args) => cmd::pause::pause(args),
        Command::Resume(args) => cmd::pause::resume(args),
        Command::RunNow(args) => cmd::run_now::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Prune(args) => cmd::prune::run(args),
        Command::Reap(args) => cmd::reap::run(args),
        Command::Audit(args) => cmd::audit::run(args),
        Command::Replay(args) => cmd::replay::run(args),
        Command::Verify(args) => cmd::verify::run(args),
        Command::Conform(args) => cmd::conform::run(args),
        Command::Check(args) => cmd::check::run(args),
        Command::Explore(args) => cmd::explore::run(args),
        Command::Simulate(args) => cmd::simulate::run(args),
        Command::ServeDemo(args) => cmd::serve_demo::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::BenchWorker(args) => cmd::bench::run_worker(args),
        Command::BenchScaleStep(args) => cmd::bench::run_step(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            if !err.is_quiet() {
                out::noteln!("retryq: error: {err:#}");
            }
            err.exit_code()
        }
    }
}
