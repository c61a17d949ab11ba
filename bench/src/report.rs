//! What a run measured, as it is serialised to JSON, and the median every figure is taken
//! as. Apart from the crate root so that each benchmark fills its part of the report without
//! depending on the code that runs them all.

use serde::Serialize;

use crate::checker::CheckerRun;
use crate::peers::Peer;
use crate::worker::WorkerBench;

/// Everything one run measured.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Whether this was the smaller `--quick` run.
    pub quick: bool,
    /// Where it ran.
    pub machine: Machine,
    /// Durable throughput against the floor.
    pub throughput: Throughput,
    /// Batched throughput.
    pub batch: Batch,
    /// Claim cost by queue size.
    pub claim_scaling: ClaimScaling,
    /// The worker with attempts in flight, and group commit.
    pub worker: WorkerBench,
    /// Pickup latency by an idle worker, on both stores.
    pub latency: crate::latency::Latency,
    /// The model checker's speed.
    pub model_checking: ModelChecking,
    /// The conformance harness's speed.
    pub conformance: Conformance,
    /// Other queues on the same disk.
    pub peers: Vec<Peer>,
    /// The queue on PostgreSQL, by worker processes, against the server's floor.
    pub postgres: PgThroughput,
}

/// The machine, as far as the run can see it.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Logical CPUs.
    pub nproc: usize,
    /// The CPU's model name.
    pub cpu: String,
    /// The device and file system the databases were on.
    pub disk: String,
    /// 1-minute load average when the run started and when it ended.
    pub load_before: Option<f64>,
    /// See `load_before`: a load that rose during the run taints its figures.
    pub load_after: Option<f64>,
}

/// End-to-end durable throughput. The top-level figures are one worker process.
#[derive(Clone, Debug, Serialize)]
pub struct Throughput {
    /// The queue's median jobs per second.
    pub queue_jobs_per_s: f64,
    /// The floor's median jobs per second.
    pub floor_jobs_per_s: f64,
    /// Median over rounds of queue / floor, each round's pair measured back to back.
    pub ratio: f64,
    /// The same figures with one and with two worker processes.
    pub by_processes: Vec<ProcessRow>,
    /// Rounds each median is over.
    pub rounds: usize,
    /// Seconds of each timed window.
    pub window_s: f64,
}

/// One line of throughput at a number of worker processes.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessRow {
    /// Worker processes sharing the file.
    pub processes: usize,
    /// The queue's median jobs per second, summed over the processes.
    pub queue_jobs_per_s: f64,
    /// The floor's median jobs per second, summed over the processes.
    pub floor_jobs_per_s: f64,
    /// Median over rounds of queue / floor.
    pub ratio: f64,
    /// Every round's figures, in order: what the medians were taken over.
    pub queue_rounds: Vec<f64>,
    /// See `queue_rounds`.
    pub floor_rounds: Vec<f64>,
}

impl ProcessRow {
    /// The row of `processes` from every round's figures: the rounds as they came, and their
    /// medians.
    pub fn of_rounds(processes: usize, queue: &[f64], floor: &[f64], ratios: &[f64]) -> ProcessRow {
        ProcessRow {
            processes,
            queue_jobs_per_s: crate::median(&mut queue.to_vec()),
            floor_jobs_per_s: crate::median(&mut floor.to_vec()),
            ratio: crate::median(&mut ratios.to_vec()),
            queue_rounds: queue.to_vec(),
            floor_rounds: floor.to_vec(),
        }
    }
}

/// Batched durable throughput (`enqueue_many`, `claim_batch`, `complete_batch`).
#[derive(Clone, Debug, Serialize)]
pub struct Batch {
    /// Jobs per second, one job per call.
    pub k_1_jobs_per_s: f64,
    /// Jobs per second, ten jobs per call.
    pub k_10_jobs_per_s: f64,
    /// Jobs per second, a hundred jobs per call.
    pub k_100_jobs_per_s: f64,
}

/// Claim cost by queue size. The top-level figures are the queue in memory.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimScaling {
    /// Microseconds per claim at 1,000 pending jobs.
    pub pending_1000_us: f64,
    /// Microseconds per claim at 100,000 pending jobs.
    pub pending_100000_us: f64,
    /// Microseconds per claim at 1,000,000 pending jobs.
    pub pending_1000000_us: f64,
    /// 1,000,000 over 1,000.
    pub ratio: f64,
    /// Microseconds per claim at 1,000 pending among 100,000 done or dead: finished jobs must
    /// not slow a claim down.
    pub pending_1000_among_100000_finished_us: f64,
    /// SQLite's own claim statement on the same rows, in a plain `:memory:` database.
    pub bare_memory: ScalingRow,
    /// SQLite's own claim statement on the same rows, in a `memdb` database (the storage
    /// of the queue's own in-memory mode).
    pub bare_memdb: ScalingRow,
    /// The queue on a durable file.
    pub file: ScalingRow,
    /// SQLite's own claim statement on the same durable file.
    pub bare_file: ScalingRow,
}

/// Claim cost by queue size for one storage (see [`ClaimScaling`]).
#[derive(Clone, Debug, Serialize)]
pub struct ScalingRow {
    /// Microseconds per claim at 1,000 pending jobs.
    pub pending_1000_us: f64,
    /// Microseconds per claim at 100,000 pending jobs.
    pub pending_100000_us: f64,
    /// Microseconds per claim at 1,000,000 pending jobs.
    pub pending_1000000_us: f64,
    /// 1,000,000 over 1,000: 1 means a claim costs the same at any size.
    pub ratio: f64,
    /// Microseconds per claim at 1,000 pending among 100,000 finished.
    pub pending_1000_among_100000_finished_us: f64,
}

/// Model checking: unique states per second and peak memory at the default and the deep
/// bound (`retryq check`, as a child process). A run that could not be made is null, and
/// `note` says why.
#[derive(Clone, Debug, Serialize)]
pub struct ModelChecking {
    /// Whether the checker could be run (a `retryq` binary was given).
    pub available: bool,
    /// Why a figure is missing, or how the runs were made.
    pub note: String,
    /// `retryq check` at its default bound.
    pub default_bound: CheckerRun,
    /// `retryq check --deep`.
    pub deep_bound: CheckerRun,
}

/// Conformance: generated traces replayed on both readings (SQLite and the reference
/// model, compared after every step), per second, in memory and on database files.
#[derive(Clone, Debug, Serialize)]
pub struct Conformance {
    /// Whether this build can time the harness.
    pub available: bool,
    /// Why a figure is missing, or how the runs were made.
    pub note: String,
    /// Traces per second with in-memory databases.
    pub traces_per_s_memory: Option<f64>,
    /// Traces per second with database files.
    pub traces_per_s_file: Option<f64>,
    /// How many traces each figure is over, and on how many threads.
    pub traces: u32,
    /// Threads for the in-memory figure.
    pub threads_memory: usize,
    /// Threads for the file figure.
    pub threads_file: usize,
}

/// The PostgreSQL section of the report.
#[derive(Clone, Debug, Serialize)]
pub struct PgThroughput {
    /// Whether a server could be had; when not, `note` says why and there are no rows.
    pub available: bool,
    /// Which server, and how it was set up, or why there was none.
    pub note: String,
    /// One row per process count.
    pub by_processes: Vec<PgRow>,
    /// The worker with attempts in flight (claims and completions in batches), one row per
    /// number of workers.
    pub worker: Vec<PgWorkerRow>,
    /// Rounds each median is over.
    pub rounds: usize,
    /// Seconds of each timed window.
    pub window_s: f64,
}

/// The worker with [`crate::pg_worker::SLOTS`] no-op attempts in flight per worker, on
/// PostgreSQL against the server's two-write floor, and on SQLite beside it.
#[derive(Clone, Debug, Serialize)]
pub struct PgWorkerRow {
    /// Workers on one database (threads, each with its own connection).
    pub workers: usize,
    /// Attempts in flight per worker.
    pub slots: usize,
    /// Jobs per run, all enqueued before the clock starts.
    pub jobs: usize,
    /// Median jobs per second on PostgreSQL, first claim to idle.
    pub jobs_per_s: f64,
    /// Median jobs per second of the floor: a bare lease and a bare `done` per job, in as
    /// many threads as there are slots in all.
    pub floor_jobs_per_s: f64,
    /// Median of each round's `jobs_per_s / floor_jobs_per_s`.
    pub ratio: f64,
    /// Median transactions that wrote, per job (claims that leased, group commits, reaps).
    pub commits_per_job: f64,
    /// The same workers on one SQLite file, same rounds (median).
    pub sqlite_jobs_per_s: f64,
    /// Every round's jobs per second on PostgreSQL, in order.
    pub rounds_jobs_per_s: Vec<f64>,
}

/// Throughput at one number of worker processes: the queue and the floor on PostgreSQL,
/// and the SQLite queue beside them.
#[derive(Clone, Debug, Serialize)]
pub struct PgRow {
    /// The queue on PostgreSQL against the server's floor (fields flattened into this row).
    #[serde(flatten)]
    pub postgres: ProcessRow,
    /// The SQLite queue with as many processes on one file, in the same rounds.
    pub sqlite_jobs_per_s: f64,
}
