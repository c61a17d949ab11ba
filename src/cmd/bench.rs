//! `retryq bench [--json] [--quick] [--worker-only]`: the queue against SQLite's own limit,
//! in one table (or one JSON object); `retryq bench --scale`: every operation's cost at 10^3
//! to 10^7 jobs, on both stores. The measuring lives in the `retryq-bench` library; this module parses
//! flags, starts the run and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use retryq_bench::scale::Store;
use retryq_bench::{Config, Launcher};

use super::CliError;
use crate::measured::Measured;
use crate::out::{noteln, out, outln};

#[derive(clap::Args)]
pub struct Args {
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// A smaller run (about a third of the full one's time) that still fills every field.
    #[arg(long)]
    quick: bool,
    /// Put the database files in a temporary directory under DIR: the disk measured is
    /// DIR's. Default: the system's temporary directory.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Measure only the worker (100 ms jobs at 1, 16, 64 in flight; no-op jobs one at a time
    /// against 32 in flight): its section alone, `{"worker":{…}}` with --json.
    #[arg(long)]
    worker_only: bool,
    /// Measure only pickup latency: an idle worker, on SQLite and PostgreSQL, jobs enqueued
    /// one at a time, due now and scheduled (200 of each, 20 with --quick; p50 and p99):
    /// its section alone, `{"latency":{…}}` with --json.
    #[arg(long, conflicts_with_all = ["worker_only", "postgres_only", "retention_only", "scale"])]
    latency: bool,
    /// Measure only retryq beside its peers: pgqueuer and graphile-worker on one throwaway
    /// PostgreSQL server, huey and persist-queue on SQLite, each installed by the benchmark
    /// (pinned, in ~/.cache/retryq-bench-peers): bulk load, 1 to 8 workers, pickup latency.
    /// Its section alone, `{"peers_bench":{…}}` with --json.
    #[arg(long, conflicts_with_all = ["worker_only", "postgres_only", "retention_only", "scale", "latency"])]
    peers: bool,
    /// With --peers: no-op jobs per run (default 20,000; 2,000 with --quick).
    #[arg(long, value_name = "N", requires = "peers", value_parser = clap::value_parser!(u64).range(100..=10_000_000))]
    peers_jobs: Option<u64>,
    /// Measure only PostgreSQL (the queue and the server's floor at 1, 2, 4 and 8 worker
    /// processes, the SQLite queue beside): its section alone, `{"postgres":{…}}` with --json.
    #[arg(long, conflicts_with = "worker_only")]
    postgres_only: bool,
    /// Measure only retention under steady load: a million jobs through a SQLite queue,
    /// pruned as they go (kept one minute of queue time) and kept, with the file's size and
    /// `stats`' latency at 100,000 and at 1,000,000 (a tenth of each with --quick).
    #[arg(long, conflicts_with_all = ["worker_only", "postgres_only"])]
    retention_only: bool,
    /// Measure every operation at 10^3, 10^5, 10^6 and 10^7 jobs (10^3 and 2×10^3 with --quick)
    /// on SQLite and PostgreSQL: each store filled with a working store's mix, then claim,
    /// complete, enqueue, import, reap, stats, list, the dashboard, prune, audit and an older
    /// schema's upgrade timed at each size. Its section alone, `{"scale":{…}}` with --json.
    #[arg(long, conflicts_with_all = ["worker_only", "postgres_only", "retention_only"])]
    scale: bool,
    /// With --scale: the sizes, in jobs (`1000,100000`).
    #[arg(long, value_name = "N,N,…", value_delimiter = ',', requires = "scale",
          value_parser = clap::value_parser!(u64).range(100..=100_000_000))]
    sizes: Option<Vec<u64>>,
    /// With --scale: one store only.
    #[arg(long, value_name = "STORE", value_enum, requires = "scale")]
    store: Option<ScaleStore>,
    /// With --scale: a step not done after this long is stopped and reported so (default
    /// 15m; 2m with --quick).
    #[arg(long, value_name = "DURATION", requires = "scale", value_parser = super::duration::millis(1_000, 86_400_000))]
    step_timeout: Option<u64>,
    /// Measure PostgreSQL on this server (the URL of a database there; its user must be
    /// allowed to create databases) instead of a throwaway local cluster.
    #[arg(long, value_name = "URL")]
    pg_url: Option<String>,
    /// The Python interpreter that runs the persist-queue peer (and makes --peers' venv).
    #[arg(long, value_name = "PROGRAM", default_value = "python3")]
    python: String,
}

/// A store `--scale --store` names.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum ScaleStore {
    Sqlite,
    Postgres,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let program = std::env::current_exe()?;
    let config = Config {
        quick: args.quick,
        dir: args.dir.clone(),
        launcher: Launcher { program: program.clone(), args: vec!["bench-worker".into()] },
        checker: Some(program.clone()),
        trampoline: super::trampoline::this_binary().ok(),
        python: args.python,
        progress: |line| noteln!("bench: {line}"),
        postgres: match args.pg_url {
            Some(url) => retryq_bench::postgres::Server::At(url),
            None => retryq_bench::postgres::Server::Own,
        },
    };
    if args.scale {
        let options = retryq_bench::scale::Options {
            sizes: args.sizes.clone(),
            stores: match args.store {
                Some(ScaleStore::Sqlite) => vec![Store::Sqlite],
                Some(ScaleStore::Postgres) => vec![Store::Postgres],
                None => vec![Store::Sqlite, Store::Postgres],
            },
            step: Launcher { program: program.clone(), args: vec!["bench-scale-step".into()] },
            program,
            step_timeout: args.step_timeout.map(std::time::Duration::from_millis),
        };
        let scale = retryq_bench::scale::run(&config, &options)?;
        if args.json {
            print_json(serde_json::json!({ "scale": scale }))?;
        } else {
            out!("{}", retryq_bench::scale::render(&scale))?;
            print_measured()?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.postgres_only {
        let postgres = retryq_bench::run_postgres(&config)?;
        if args.json {
            print_json(serde_json::json!({ "postgres": postgres }))?;
        } else {
            out!("{}", retryq_bench::postgres::render(&postgres))?;
            print_measured()?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.retention_only {
        let retention = retryq_bench::retention::run(&config)?;
        if args.json {
            print_json(serde_json::json!({ "retention": retention }))?;
        } else {
            out!("{}", retryq_bench::retention::render(&retention))?;
            print_measured()?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.peers {
        let jobs = args.peers_jobs.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let peers = retryq_bench::run_peers(&config, jobs)?;
        if args.json {
            print_json(serde_json::json!({ "peers_bench": peers }))?;
        } else {
            out!("{}", retryq_bench::peers_bench::render(&peers))?;
            print_measured()?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.latency {
        let latency = retryq_bench::run_latency(&config)?;
        if args.json {
            print_json(serde_json::json!({ "latency": latency }))?;
        } else {
            out!("{}", retryq_bench::latency::render(&latency))?;
            print_measured()?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.worker_only {
        let worker = retryq_bench::run_worker(&config)?;
        if args.json {
            print_json(serde_json::json!({ "worker": worker }))?;
        } else {
            out!("{}", retryq_bench::render_worker(&worker))?;
            print_measured()?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let report = retryq_bench::run(&config)?;
    let versus = retryq_bench::batch::versus_floor(config.dir.as_ref(), config.quick, &|line| {
        (config.progress)(line)
    })?;
    if args.json {
        let json_error = |e: serde_json::Error| CliError::Other(e.to_string());
        let mut json = serde_json::to_value(&report).map_err(json_error)?;
        json["batch"]["versus_floor"] = serde_json::to_value(&versus).map_err(json_error)?;
        print_json(json)?;
    } else {
        out!("{}", retryq_bench::render(&report))?;
        out!("{}", retryq_bench::postgres::render(&report.postgres))?;
        outln!(
            "{:<44} {:>14} {:>14} {:>8}",
            format!("durable jobs/s, k = {}: batches vs batched floor", versus.k),
            format!("{:.0}", versus.queue_jobs_per_s),
            format!("floor {:.0}", versus.floor_jobs_per_s),
            format!("{:.2}", versus.ratio)
        )?;
        print_measured()?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The report with what it was measured on, as `"measured"` beside the figures.
fn print_json(mut json: serde_json::Value) -> Result<(), CliError> {
    json["measured"] = serde_json::to_value(Measured::now()).map_err(|e| CliError::Other(e.to_string()))?;
    outln!("{}", super::json_text(&json)?)
}

/// The table's last line: what it was measured on.
fn print_measured() -> Result<(), CliError> {
    outln!("{}", Measured::now().line())
}

/// `retryq bench-worker SPEC` (hidden): one worker process of the throughput benchmark.
#[derive(clap::Args)]
pub struct WorkerArgs {
    /// The worker's instructions, as JSON.
    spec: String,
}

pub fn run_worker(args: WorkerArgs) -> Result<ExitCode, CliError> {
    retryq_bench::worker_main(&args.spec)?;
    Ok(ExitCode::SUCCESS)
}

/// `retryq bench-scale-step SPEC` (hidden): one measured step of `retryq bench --scale`.
#[derive(clap::Args)]
pub struct StepArgs {
    /// The step, as JSON.
    spec: String,
}

pub fn run_step(args: StepArgs) -> Result<ExitCode, CliError> {
    retryq_bench::scale::step::step_main(&args.spec)?;
    Ok(ExitCode::SUCCESS)
}
