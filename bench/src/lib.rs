//! retryq's benchmarks: how close the queue comes to what its storage can do, measured side
//! by side in one run.
//!
//! - **Throughput**: jobs per second through enqueue, claim and complete on a durable file
//!   (WAL, `synchronous = FULL`), with one worker process and with two, against the floor —
//!   the same three writes as bare statements, same durability, no queue logic.
//! - **Batches**: jobs per second with `claim_batch` and `complete_batch` at k = 1, 10, 100.
//! - **Claim scaling**: the cost of one claim at 1,000, 100,000 and 1,000,000 pending jobs,
//!   in memory and on a durable file, beside SQLite's own claim statement on the same rows.
//! - **The worker**: `retryq work --concurrency N` in one process — jobs of 100 ms (a
//!   command, a slow HTTP receiver) at 1, 16 and 64 in flight against the ideal N / 0.1 s,
//!   and no-op jobs one at a time against 32 in flight, with commits per job (group commit).
//! - **Peers**: persist-queue (Python) on the same disk; effectum is reported as not built.
//! - **Model checking**: `retryq check` at the default and the deep bound, as child
//!   processes: unique states per second and peak memory.
//! - **Conformance**: a place in the report for a part of the project that this build does
//!   not have; it says so instead of showing a number.
//!
//! Every figure is a median of several runs; every ratio pairs runs taken next to each
//! other. [`run`] does it all; [`render`] prints the table; the report serialises to JSON.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod batch;
pub mod checker;
pub mod floor;
pub mod latency;
pub mod peer_line;
pub mod peer_run;
pub mod peer_setup;
pub mod peers;
pub mod peers_bench;
pub mod pg_floor;
pub mod pg_worker;
pub mod postgres;
pub mod retention;
pub mod scale;
pub mod scaling;
pub mod server;
pub mod throughput;
pub mod worker;

mod error;
mod median;
mod report;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use error::BenchError;
pub use median::median;
pub use peers::Peer;
pub use report::{
    Batch, BenchReport, ClaimScaling, Conformance, Machine, ModelChecking, PgRow, PgThroughput, ProcessRow,
    ScalingRow, Throughput,
};
pub use throughput::{Launcher, Side, worker_main};
pub use worker::WorkerBench;

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// A smaller run that still fills every field.
    pub quick: bool,
    /// Where the database files go (a fresh temporary directory under it). The disk measured
    /// is the one this is on.
    pub dir: Option<PathBuf>,
    /// How to start a worker process.
    pub launcher: Launcher,
    /// The Python interpreter for persist-queue.
    pub python: String,
    /// The `retryq` binary, for `retryq check` (model checking's speed); `None` leaves those
    /// figures null.
    pub checker: Option<PathBuf>,
    /// The watchdog `retryq work --exec` starts its commands beside; `None` leaves the
    /// watched figures out.
    pub trampoline: Option<retryq_worker::Trampoline>,
    /// Progress lines go here (stderr in the command).
    pub progress: fn(&str),
    /// Where the PostgreSQL figures are measured.
    pub postgres: postgres::Server,
}

impl Config {
    /// A fresh temporary directory for a run's databases, under [`Config::dir`] if given.
    pub(crate) fn scratch_dir(&self) -> Result<tempfile::TempDir, BenchError> {
        let builder = tempfile::Builder::new().prefix("retryq-bench-").to_owned();
        Ok(match &self.dir {
            Some(dir) => builder.tempdir_in(dir)?,
            None => builder.tempdir()?,
        })
    }

    /// Progress lines stamped with the seconds since `started`.
    pub(crate) fn stamped(&self, started: std::time::Instant) -> impl Fn(&str) + '_ {
        move |line: &str| (self.progress)(&format!("[{:5.1} s] {line}", started.elapsed().as_secs_f64()))
    }

    fn rounds(&self) -> usize {
        if self.quick { 3 } else { 5 }
    }

    /// The watchdog `retryq work --exec` starts its commands beside, when the benchmark has
    /// one.
    fn trampoline(&self) -> Option<retryq_worker::Trampoline> {
        self.trampoline.clone()
    }

    /// Jobs of each kind per run of [`latency`]: 200, 20 with `--quick`.
    fn latency_jobs(&self) -> usize {
        if self.quick { 20 } else { 200 }
    }

    /// Rounds of the worker's runs, which take seconds each.
    fn worker_rounds(&self) -> usize {
        if self.quick { 1 } else { 3 }
    }

    /// Jobs per run of the worker on PostgreSQL ([`pg_worker`]).
    fn pg_worker_jobs(&self) -> usize {
        if self.quick { pg_worker::JOBS / 5 } else { pg_worker::JOBS }
    }

    fn window(&self) -> Duration {
        Duration::from_millis(if self.quick { 600 } else { 3000 })
    }

    fn memory_sampling(&self) -> scaling::Sampling {
        if self.quick {
            scaling::Sampling { samples: 5, claims_per_sample: 100 }
        } else {
            scaling::Sampling { samples: 15, claims_per_sample: 300 }
        }
    }

    fn file_sampling(&self) -> scaling::Sampling {
        if self.quick {
            scaling::Sampling { samples: 3, claims_per_sample: 5 }
        } else {
            scaling::Sampling { samples: 7, claims_per_sample: 15 }
        }
    }
}

pub use checker::CheckerRun;

/// What this build says where it has no model checker or conformance harness to time.
pub const NOT_AVAILABLE: &str = "not available in this build";

/// Runs every benchmark.
pub fn run(config: &Config) -> Result<BenchReport, BenchError> {
    let load_before = load_average();
    let dir = config.scratch_dir()?;
    let progress = config.stamped(std::time::Instant::now());
    let window = config.window();
    let rounds = config.rounds();

    // Throughput, batches and the peer, interleaved round by round so that every figure
    // sees the machine in the same states; the order flips each round.
    let sizes = [1usize, 2];
    let ks = [1usize, 10, 100];
    let mut queue = vec![Vec::new(); sizes.len()];
    let mut floor = vec![Vec::new(); sizes.len()];
    let mut ratios = vec![Vec::new(); sizes.len()];
    let mut batches = vec![Vec::new(); ks.len()];
    let mut peer = Vec::new();
    let mut peer_ratios = Vec::new();
    let mut peer_unavailable = None;
    for round in 0..rounds {
        progress(&format!("round {}/{rounds}: throughput, batches, peer", round + 1));
        let mut queue_one = 0.0;
        for (i, &processes) in sizes.iter().enumerate() {
            let sides = if round % 2 == 0 { [Side::Queue, Side::Floor] } else { [Side::Floor, Side::Queue] };
            let mut pair = [0.0; 2];
            for side in sides {
                let rate = throughput::measure(&config.launcher, dir.path(), side, processes, window, round)?;
                pair[usize::from(side == Side::Floor)] = rate;
            }
            queue[i].push(pair[0]);
            floor[i].push(pair[1]);
            ratios[i].push(pair[0] / pair[1]);
            if processes == 1 {
                queue_one = pair[0];
            }
        }
        for (i, &k) in ks.iter().enumerate() {
            batches[i].push(batch::measure(dir.path(), k, window, round)?);
        }
        if peer_unavailable.is_none() {
            match peers::persist_queue(&config.python, dir.path(), window, round) {
                peers::PeerRun::JobsPerSecond(rate) => {
                    peer.push(rate);
                    peer_ratios.push(rate / queue_one);
                }
                peers::PeerRun::Unavailable(why) => peer_unavailable = Some(why),
            }
        }
    }
    let by_processes: Vec<ProcessRow> = sizes
        .iter()
        .enumerate()
        .map(|(i, &processes)| ProcessRow::of_rounds(processes, &queue[i], &floor[i], &ratios[i]))
        .collect();
    let throughput = Throughput {
        queue_jobs_per_s: by_processes[0].queue_jobs_per_s,
        floor_jobs_per_s: by_processes[0].floor_jobs_per_s,
        ratio: by_processes[0].ratio,
        by_processes,
        rounds,
        window_s: window.as_secs_f64(),
    };
    let batch = Batch {
        k_1_jobs_per_s: median(&mut batches[0]),
        k_10_jobs_per_s: median(&mut batches[1]),
        k_100_jobs_per_s: median(&mut batches[2]),
    };
    let persist_queue = match peer_unavailable {
        Some(why) => Peer {
            name: "persist-queue",
            available: false,
            jobs_per_s: None,
            ratio_to_queue: None,
            note: format!("unavailable: {why}"),
        },
        None => Peer {
            name: "persist-queue",
            available: true,
            jobs_per_s: Some(median(&mut peer)),
            ratio_to_queue: Some(median(&mut peer_ratios)),
            note: peers::PERSIST_QUEUE_NOTE.into(),
        },
    };

    // Claim scaling.
    let sizes = [
        scaling::Size { pending: 1_000, finished: 0 },
        scaling::Size { pending: 100_000, finished: 0 },
        scaling::Size { pending: 1_000_000, finished: 0 },
        scaling::Size { pending: 1_000, finished: 100_000 },
    ];
    progress(
        "claim cost in memory: loading 1,000 / 100,000 / 1,000,000 pending and 1,000 among 100,000 finished",
    );
    let memory = scaling::memory(dir.path(), &sizes, config.memory_sampling())?;
    progress("claim cost on a durable file: the same sizes");
    let file = scaling::file(dir.path(), &sizes, config.file_sampling())?;
    let row = |figures: [f64; 4]| ScalingRow {
        pending_1000_us: figures[0],
        pending_100000_us: figures[1],
        pending_1000000_us: figures[2],
        ratio: figures[2] / figures[0],
        pending_1000_among_100000_finished_us: figures[3],
    };
    let pick_memory = |pick: fn(&scaling::MemoryCost) -> f64| row([0, 1, 2, 3].map(|i| pick(&memory[i])));
    let pick_file = |pick: fn(&scaling::Cost) -> f64| row([0, 1, 2, 3].map(|i| pick(&file[i])));
    let queue_memory = pick_memory(|c| c.queue_us);
    let claim_scaling = ClaimScaling {
        pending_1000_us: queue_memory.pending_1000_us,
        pending_100000_us: queue_memory.pending_100000_us,
        pending_1000000_us: queue_memory.pending_1000000_us,
        ratio: queue_memory.ratio,
        pending_1000_among_100000_finished_us: queue_memory.pending_1000_among_100000_finished_us,
        bare_memory: pick_memory(|c| c.bare_us),
        bare_memdb: pick_memory(|c| c.bare_memdb_us),
        file: pick_file(|c| c.queue_us),
        bare_file: pick_file(|c| c.bare_us),
    };

    let worker = worker::measure(
        dir.path(),
        config.quick,
        config.worker_rounds(),
        config.trampoline().as_ref(),
        &progress,
    )?;
    let latency = latency::measure(
        dir.path(),
        &config.postgres,
        config.latency_jobs(),
        config.worker_rounds(),
        &progress,
    )?;

    let model_checking = model_checking(config, &progress);

    let machine = Machine {
        nproc: std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu: cpu_model(),
        disk: disk_of(dir.path()),
        load_before,
        load_after: load_average(),
    };
    Ok(BenchReport {
        quick: config.quick,
        machine,
        throughput,
        batch,
        claim_scaling,
        worker,
        latency,
        model_checking,
        conformance: conformance(config, &progress),
        peers: vec![persist_queue, peers::effectum()],
        postgres: postgres::measure(
            &config.launcher,
            dir.path(),
            &config.postgres,
            rounds,
            window,
            config.pg_worker_jobs(),
            &progress,
        )?,
    })
}

/// Only the PostgreSQL figures ([`postgres`]), in a fresh temporary directory (for the SQLite
/// queue measured beside them).
pub fn run_postgres(config: &Config) -> Result<PgThroughput, BenchError> {
    let dir = config.scratch_dir()?;
    let progress = config.stamped(std::time::Instant::now());
    postgres::measure(
        &config.launcher,
        dir.path(),
        &config.postgres,
        config.rounds(),
        config.window(),
        config.pg_worker_jobs(),
        &progress,
    )
}

/// Only retryq beside its peers ([`peers_bench`]), `jobs` no-op jobs a run (default 20,000,
/// 2,000 with `--quick`), in a fresh temporary directory.
pub fn run_peers(config: &Config, jobs: Option<usize>) -> Result<peers_bench::PeersBench, BenchError> {
    let dir = config.scratch_dir()?;
    let progress = config.stamped(std::time::Instant::now());
    let size = peers_bench::Size {
        jobs: jobs.unwrap_or(if config.quick { 2_000 } else { 20_000 }),
        pickup_jobs: if config.quick { 10 } else { 40 },
        rounds: if config.quick { 1 } else { 3 },
    };
    peers_bench::measure(dir.path(), &config.postgres, &config.python, size, &progress)
}

/// Only the pickup latency ([`latency`]), in a fresh temporary directory.
pub fn run_latency(config: &Config) -> Result<latency::Latency, BenchError> {
    let dir = config.scratch_dir()?;
    let progress = config.stamped(std::time::Instant::now());
    latency::measure(dir.path(), &config.postgres, config.latency_jobs(), config.worker_rounds(), &progress)
}

/// Only the worker's figures ([`worker`]), in a fresh temporary directory: seconds, not
/// minutes.
pub fn run_worker(config: &Config) -> Result<WorkerBench, BenchError> {
    let dir = config.scratch_dir()?;
    let progress = config.stamped(std::time::Instant::now());
    worker::measure(dir.path(), config.quick, config.worker_rounds(), config.trampoline().as_ref(), &progress)
}

/// `retryq conform`'s generated traces, timed: the default 2,400 (300 with `--quick`), with a
/// fixed seed, in memory and on files, on the threads `retryq conform` would use.
fn conformance(config: &Config, progress: &dyn Fn(&str)) -> Conformance {
    use retryq_conformance::run::{self, Setup, Storage};
    let traces: u32 = if config.quick { 300 } else { 2400 };
    let rate = |storage: Storage| -> Result<f64, String> {
        progress(&format!("conformance: {traces} traces, {storage:?}"));
        let tally =
            run::random(traces, 1, 40, &Setup::new(storage.clone()), run::default_threads(&storage), &|| {})
                .map_err(|e| e.to_string())?;
        match tally.mismatch {
            Some(m) => Err(format!("a mismatch ({}), so no rate: run retryq conform", m.source)),
            None => Ok(tally.traces_per_second()),
        }
    };
    let (memory, file) = (rate(Storage::Memory), rate(Storage::File));
    let note = match (&memory, &file) {
        (Ok(_), Ok(_)) => {
            format!("{traces} generated traces, seed 1, both readings compared after every step")
        }
        (Err(e), _) | (_, Err(e)) => e.clone(),
    };
    Conformance {
        available: memory.is_ok() && file.is_ok(),
        note,
        traces_per_s_memory: memory.ok(),
        traces_per_s_file: file.ok(),
        traces,
        threads_memory: run::default_threads(Storage::Memory),
        threads_file: run::default_threads(Storage::File),
    }
}

/// Model checking at the default bound, and at the deep bound unless `--quick`.
fn model_checking(config: &Config, progress: &dyn Fn(&str)) -> ModelChecking {
    let Some(program) = &config.checker else {
        return ModelChecking {
            available: false,
            note: NOT_AVAILABLE.into(),
            default_bound: CheckerRun::default(),
            deep_bound: CheckerRun::default(),
        };
    };
    progress("model checking: retryq check --json");
    let default_bound = checker::run(program, false);
    let deep_bound = if config.quick {
        Err("the deep bound is skipped in --quick".to_owned())
    } else {
        progress("model checking: retryq check --deep --json");
        checker::run(program, true)
    };
    let mut notes = vec![
        "`retryq check --json` as a child process; peak memory is its VmHWM, read every 20 ms".to_owned(),
    ];
    for (bound, run) in [("default", &default_bound), ("deep", &deep_bound)] {
        if let Err(why) = run {
            notes.push(format!("{bound} bound not measured: {why}"));
        }
    }
    ModelChecking {
        available: default_bound.is_ok(),
        note: notes.join("; "),
        default_bound: default_bound.unwrap_or_default(),
        deep_bound: deep_bound.unwrap_or_default(),
    }
}

/// The worker's section of the table.
pub fn render_worker(w: &WorkerBench) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<44} {:>14} {:>14} {:>8}",
        format!("worker, 100 ms jobs (medians of {})", w.rounds),
        "jobs/s",
        "ideal N/0.1 s",
        "share"
    );
    for (how, rows) in [("--exec 'sleep 0.1'", &w.slow_exec), ("--url, 100 ms receiver", &w.slow_http)] {
        for row in rows {
            let _ = writeln!(
                out,
                "{:<44} {:>14} {:>14} {:>8}",
                format!("{how}, --concurrency {}", row.concurrency),
                format!("{:.0}", row.jobs_per_s),
                format!("{:.0}", row.ideal_jobs_per_s),
                format!("{:.0}%", row.efficiency * 100.0)
            );
        }
    }
    let _ = writeln!(
        out,
        "{:<44} {:>14} {:>14} {:>8}",
        "spawn ceiling: sh -c 'sleep 0', 64 threads",
        format!("{:.0}", w.exec_spawn_ceiling_per_s),
        "",
        ""
    );
    let c = &w.exec_cost;
    let _ = writeln!(
        out,
        "{:<44} {:>14} {:>14} {:>8}",
        format!("--exec 'sleep 0.1', --concurrency {}", c.concurrency),
        "jobs/s",
        "CPU ms/attempt",
        "vs spawn"
    );
    let watched = if c.watched { "with its watchdog" } else { "no watchdog (no retryq binary)" };
    for (how, rate, cpu) in [
        (watched, c.watched_jobs_per_s, c.watched_cpu_ms_per_attempt),
        ("no watchdog", c.unwatched_jobs_per_s, c.unwatched_cpu_ms_per_attempt),
        ("bare spawn: sh -c 'sleep 0'", w.exec_spawn_ceiling_per_s, c.spawn_cpu_ms),
    ] {
        let _ = writeln!(
            out,
            "{:<44} {:>14} {:>14} {:>8}",
            how,
            format!("{rate:.0}"),
            format!("{cpu:.2}"),
            format!("{:.2}x", cpu / c.spawn_cpu_ms)
        );
    }
    let n = &w.noop;
    let _ = writeln!(
        out,
        "{:<44} {:>14} {:>14} {:>8}",
        "worker, no-op jobs, durable", "jobs/s", "commits/job", "ratio"
    );
    let _ = writeln!(
        out,
        "{:<44} {:>14} {:>14} {:>8}",
        "one at a time (--concurrency 1)",
        format!("{:.0}", n.one_at_a_time_jobs_per_s),
        format!("{:.2}", n.one_at_a_time_commits_per_job),
        ""
    );
    let _ = writeln!(
        out,
        "{:<44} {:>14} {:>14} {:>8}",
        format!("--concurrency {}, group commit", n.concurrency),
        format!("{:.0}", n.concurrent_jobs_per_s),
        format!("{:.2}", n.concurrent_commits_per_job),
        format!("{:.1}x", n.ratio)
    );
    out
}

/// The report as one table.
pub fn render(report: &BenchReport) -> String {
    let mut out = String::new();
    let m = &report.machine;
    let load = |l: Option<f64>| l.map_or("?".to_owned(), |l| format!("{l:.2}"));
    let _ = writeln!(
        out,
        "retryq bench{}: {} cores, {}; disk {}; load {} -> {}",
        if report.quick { " --quick" } else { "" },
        m.nproc,
        m.cpu,
        m.disk,
        load(m.load_before),
        load(m.load_after)
    );
    let t = &report.throughput;
    let _ = writeln!(
        out,
        "medians of {} rounds of {:.1} s; durable = WAL + synchronous=FULL, one commit per operation\n",
        t.rounds, t.window_s
    );
    let _ = writeln!(out, "{:<44} {:>14} {:>14} {:>8}", "measure", "retryq", "reference", "ratio");
    for row in &t.by_processes {
        let _ = writeln!(
            out,
            "{:<44} {:>14} {:>14} {:>8}",
            format!(
                "durable jobs/s, {} worker process{}",
                row.processes,
                if row.processes == 1 { "" } else { "es" }
            ),
            format!("{:.0}", row.queue_jobs_per_s),
            format!("floor {:.0}", row.floor_jobs_per_s),
            format!("{:.2}", row.ratio)
        );
    }
    let b = &report.batch;
    for (k, rate) in [(1, b.k_1_jobs_per_s), (10, b.k_10_jobs_per_s), (100, b.k_100_jobs_per_s)] {
        let _ = writeln!(
            out,
            "{:<44} {:>14} {:>14} {:>8}",
            format!("durable jobs/s, batches of k = {k}"),
            format!("{rate:.0}"),
            "",
            format!("{:.1}x", rate / b.k_1_jobs_per_s.max(f64::MIN_POSITIVE))
        );
    }
    let c = &report.claim_scaling;
    let _ = writeln!(
        out,
        "\n{:<34} {:>9} {:>9} {:>9} {:>7} {:>14}",
        "claim cost, µs per claim", "1,000", "100,000", "1,000,000", "1M/1k", "1,000 among"
    );
    let _ = writeln!(
        out,
        "{:<34} {:>9} {:>9} {:>9} {:>7} {:>14}",
        "(pending jobs)", "", "", "", "", "100,000 done"
    );
    let memory = ScalingRow {
        pending_1000_us: c.pending_1000_us,
        pending_100000_us: c.pending_100000_us,
        pending_1000000_us: c.pending_1000000_us,
        ratio: c.ratio,
        pending_1000_among_100000_finished_us: c.pending_1000_among_100000_finished_us,
    };
    for (label, row) in [
        ("retryq, in memory", &memory),
        ("bare claim, :memory:", &c.bare_memory),
        ("bare claim, memdb", &c.bare_memdb),
        ("retryq, durable file", &c.file),
        ("bare claim, durable file", &c.bare_file),
    ] {
        let _ = writeln!(
            out,
            "{:<34} {:>9.1} {:>9.1} {:>9.1} {:>7.2} {:>14.1}",
            label,
            row.pending_1000_us,
            row.pending_100000_us,
            row.pending_1000000_us,
            row.ratio,
            row.pending_1000_among_100000_finished_us
        );
    }
    let _ = writeln!(out);
    out.push_str(&render_worker(&report.worker));
    let _ = writeln!(out);
    out.push_str(&latency::render(&report.latency));
    let _ = writeln!(out);
    for peer in &report.peers {
        let rate = peer.jobs_per_s.map_or("-".to_owned(), |r| format!("{r:.0}"));
        let ratio = peer.ratio_to_queue.map_or("-".to_owned(), |r| format!("{r:.2}"));
        let _ = writeln!(
            out,
            "{:<44} {:>14} {:>14} {:>8}",
            format!("peer {}: durable jobs/s, 1 process", peer.name),
            rate,
            "vs retryq",
            ratio
        );
    }
    let mc = &report.model_checking;
    for (bound, run) in [("default", &mc.default_bound), ("deep", &mc.deep_bound)] {
        let text = match (run.unique_states, run.unique_states_per_s, run.peak_memory_bytes) {
            (Some(states), Some(rate), peak) => format!(
                "{states} unique states, {:.2} M unique/s ({:.1} M generated/s), peak {}",
                rate / 1e6,
                run.states.zip(run.seconds).map_or(0.0, |(n, s)| n as f64 / s / 1e6),
                peak.map_or("?".to_owned(), |b| format!("{:.0} MiB", b as f64 / (1024.0 * 1024.0)))
            ),
            _ => "not measured (see the note)".to_owned(),
        };
        let _ = writeln!(out, "{:<44} {}", format!("model checking, {bound} bound"), text);
    }
    let cf = &report.conformance;
    let conformance = match (cf.traces_per_s_memory, cf.traces_per_s_file) {
        (Some(memory), Some(file)) => format!(
            "{memory:.0} in memory ({} threads), {file:.0} on files ({} threads), over {} traces",
            cf.threads_memory, cf.threads_file, cf.traces
        ),
        _ => format!("not measured: {}", cf.note),
    };
    let _ = writeln!(out, "{:<44} {}", "conformance: traces/s", conformance);
    let _ = writeln!(out);
    for peer in &report.peers {
        let _ = writeln!(out, "{}: {}", peer.name, peer.note);
    }
    let _ = writeln!(out, "model checking: {}", mc.note);
    out
}

/// The CPU model from /proc/cpuinfo.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// The 1-minute load average.
pub(crate) fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// The device and file system under `dir`, from /proc/mounts (the longest matching mount).
pub(crate) fn disk_of(dir: &Path) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (device, point, fs) = (fields.next()?, fields.next()?, fields.next()?);
            dir.starts_with(point).then(|| (point.len(), format!("{device} ({fs}, mounted on {point})")))
        })
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| "unknown".into(), |(_, disk)| disk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }
}
