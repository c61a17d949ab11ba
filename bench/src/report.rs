//! What a run measured, as it is serialised to JSON, and the median every figure is taken
//! as. Apart from the crate root so that each benchmark fills its part of the report without
//! depending on the code that runs them all.

use serde::Serialize;

use crate::checker::CheckerRun;
use crate::peers::Peer;

/// Everything one run measured.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub quick: bool,
    pub machine: Machine,
    pub throughput: Throughput,
    pub batch: Batch,
    pub claim_scaling: ClaimScaling,
    pub model_checking: ModelChecking,
    pub conformance: Conformance,
    pub peers: Vec<Peer>,
}

/// The machine, as far as the run can see it.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    pub nproc: usize,
    pub cpu: String,
    /// The device and file system the databases were on.
    pub disk: String,
    /// 1-minute load average when the run started and when it ended.
    pub load_before: Option<f64>,
    pub load_after: Option<f64>,
}

/// End-to-end durable throughput. The top-level figures are one worker process.
#[derive(Clone, Debug, Serialize)]
pub struct Throughput {
    pub queue_jobs_per_s: f64,
    pub floor_jobs_per_s: f64,
    /// Median over rounds of queue / floor, each round's pair measured back to back.
    pub ratio: f64,
    pub by_processes: Vec<ProcessRow>,
    pub rounds: usize,
    pub window_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProcessRow {
    pub processes: usize,
    pub queue_jobs_per_s: f64,
    pub floor_jobs_per_s: f64,
    pub ratio: f64,
    /// Every round's figures, in order: what the medians were taken over.
    pub queue_rounds: Vec<f64>,
    pub floor_rounds: Vec<f64>,
}

/// Batched durable throughput (`enqueue_many`, `claim_batch`, `complete_batch`).
#[derive(Clone, Debug, Serialize)]
pub struct Batch {
    pub k_1_jobs_per_s: f64,
    pub k_10_jobs_per_s: f64,
    pub k_100_jobs_per_s: f64,
}

/// Claim cost by queue size. The top-level figures are the queue in memory.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimScaling {
    pub pending_1000_us: f64,
    pub pending_100000_us: f64,
    pub pending_1000000_us: f64,
    /// 1,000,000 over 1,000.
    pub ratio: f64,
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

#[derive(Clone, Debug, Serialize)]
pub struct ScalingRow {
    pub pending_1000_us: f64,
    pub pending_100000_us: f64,
    pub pending_1000000_us: f64,
    pub ratio: f64,
    pub pending_1000_among_100000_finished_us: f64,
}

/// Model checking: unique states per second and peak memory at the default and the deep
/// bound (`retryq check`, as a child process). A run that could not be made is null, and
/// `note` says why.
#[derive(Clone, Debug, Serialize)]
pub struct ModelChecking {
    pub available: bool,
    pub note: String,
    pub default_bound: CheckerRun,
    pub deep_bound: CheckerRun,
}

/// Conformance: generated traces replayed on both readings (SQLite and the reference
/// model, compared after every step), per second, in memory and on database files.
#[derive(Clone, Debug, Serialize)]
pub struct Conformance {
    pub available: bool,
    pub note: String,
    pub traces_per_s_memory: Option<f64>,
    pub traces_per_s_file: Option<f64>,
    /// How many traces each figure is over, and on how many threads.
    pub traces: u32,
    pub threads_memory: usize,
    pub threads_file: usize,
}

/// The median; 0 for no values. Sorts `values`.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 }
}
