//! The worker with attempts in flight (`retryq work --concurrency N`), in one process.
//!
//! - **Jobs that wait**: each attempt takes 100 ms — a command (`sleep 0.1`) or a POST to a
//!   local receiver that answers after 100 ms — at 1, 16 and 64 in flight. The ideal is
//!   N / 0.1 s; what is measured is jobs per second from the first claim to idle.
//! - **No-op jobs**: an attempt that returns at once, on a durable file, one at a time
//!   against 32 in flight. Here the attempts cost nothing and the fsyncs are everything: the
//!   ratio is what group commit buys. Commits per job counts the transactions that wrote
//!   (the worker's [`Summary::writes`]: claims that leased, group commits, reaps that reaped);
//!   a claim or reap that finds nothing writes no page and costs no fsync.
//!
//! A command costs the machine something of its own, whatever the worker does: a shell
//! and a `sleep` started and reaped. The spawn ceiling measures it — 64 threads starting
//! `sh -c 'sleep 0'` back to back, no queue — so that the command figures can be read
//! against what the machine can start at all. The commands run as `retryq work --exec`
//! runs them, beside their watchdog (`retryq exec-trampoline`), when the benchmark is given
//! the `retryq` binary; at 64 in flight they also run without it, and the CPU time of each
//! attempt (the worker's and every child's, from `/proc/self/stat`) is set against the
//! spawn ceiling's CPU time per command, measured in the same round.
//!
//! Every job is enqueued before the clock starts, on a fresh file per run; figures are
//! medians over rounds, and the no-op ratio pairs runs taken back to back.

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use retryq::{Backend, Claimed, NewJob, Outcome, Queue, Report, Settings};
use retryq_worker::{
    Config, Exec, Http, HttpOptions, Stop, Summary, SystemClock, Trampoline, Transport, Unclassified, Window,
    work_in_slots,
};
use serde::Serialize;

use crate::{BenchError, median};

/// How long each slow attempt takes.
pub const SLOW: Duration = Duration::from_millis(100);
/// Attempts in flight measured for slow jobs.
pub const SLOW_CONCURRENCY: [usize; 3] = [1, 16, 64];
/// Attempts in flight for the no-op run.
pub const NOOP_CONCURRENCY: usize = 32;

/// The worker's figures.
#[derive(Clone, Debug, Serialize)]
pub struct WorkerBench {
    /// `--exec 'sleep 0.1'`.
    pub slow_exec: Vec<SlowRow>,
    /// `--url` to a receiver that answers after 100 ms.
    pub slow_http: Vec<SlowRow>,
    /// No-op jobs, one at a time against many in flight.
    pub noop: NoopRow,
    /// Commands (`sh -c 'sleep 0'`) the machine starts and reaps per second from 64 threads
    /// at once, with no queue: the most any command transport could run (median).
    pub exec_spawn_ceiling_per_s: f64,
    /// What an attempt of `--exec 'sleep 0.1'` costs at 64 in flight, with and without its
    /// watchdog, against a bare spawn.
    pub exec_cost: ExecCost,
    /// Rounds each median is over.
    pub rounds: usize,
}

/// Jobs of 100 ms at one concurrency.
#[derive(Clone, Debug, Serialize)]
pub struct SlowRow {
    /// Attempts in flight.
    pub concurrency: usize,
    /// Jobs per run.
    pub jobs: usize,
    /// N / 0.1 s.
    pub ideal_jobs_per_s: f64,
    /// Median over rounds.
    pub jobs_per_s: f64,
    /// `jobs_per_s / ideal_jobs_per_s`.
    pub efficiency: f64,
    /// Every round's jobs per second, in order: what the median was taken over.
    pub rounds_jobs_per_s: Vec<f64>,
}

/// An exec attempt's price at [`EXEC_COST_CONCURRENCY`] in flight: CPU time per attempt
/// (the worker process's and its children's, medians over rounds) with the watchdog and
/// without, and per bare `sh -c 'sleep 0'` of the spawn ceiling.
#[derive(Clone, Debug, Serialize)]
pub struct ExecCost {
    /// Attempts in flight.
    pub concurrency: usize,
    /// Whether the watched figures are through `retryq exec-trampoline` (else the benchmark
    /// had no `retryq` binary, and both rows are unwatched).
    pub watched: bool,
    /// Jobs per second with the watchdog (the `--exec` row at this concurrency).
    pub watched_jobs_per_s: f64,
    /// Jobs per second with no watchdog.
    pub unwatched_jobs_per_s: f64,
    /// CPU milliseconds per attempt with the watchdog.
    pub watched_cpu_ms_per_attempt: f64,
    /// CPU milliseconds per attempt with no watchdog.
    pub unwatched_cpu_ms_per_attempt: f64,
    /// CPU milliseconds per command of the spawn ceiling.
    pub spawn_cpu_ms: f64,
    /// `watched_cpu_ms_per_attempt / spawn_cpu_ms`.
    pub cpu_ratio: f64,
}

/// Attempts in flight for [`ExecCost`].
pub const EXEC_COST_CONCURRENCY: usize = 64;

/// CPU milliseconds this process and its reaped children have used: `/proc/self/stat`'s
/// utime, stime, cutime and cstime, in clock ticks. `None` where there is no `/proc`.
fn cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    // After `STATE` (field 3), utime is field 14: the 12th word of `rest`.
    let ticks: Option<Vec<u64>> = rest.split_whitespace().skip(11).take(4).map(|w| w.parse().ok()).collect();
    let ticks: u64 = ticks?.iter().sum();
    Some(ticks as f64 * 1000.0 / rustix::param::clock_ticks_per_second() as f64)
}

/// `f`'s result and the CPU milliseconds it cost this process and its children (0 where
/// `/proc` cannot be read).
fn with_cpu<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let before = cpu_ms();
    let out = f();
    let spent = match (before, cpu_ms()) {
        (Some(before), Some(after)) => after - before,
        _ => 0.0,
    };
    (out, spent)
}

/// No-op jobs, durable: one at a time against [`NOOP_CONCURRENCY`] in flight.
#[derive(Clone, Debug, Serialize)]
pub struct NoopRow {
    /// Jobs per run.
    pub jobs: usize,
    /// Attempts in flight in the concurrent run.
    pub concurrency: usize,
    /// Jobs per second with one slot (median).
    pub one_at_a_time_jobs_per_s: f64,
    /// Jobs per second with `concurrency` slots (median).
    pub concurrent_jobs_per_s: f64,
    /// Median over rounds of concurrent / one at a time, each pair back to back.
    pub ratio: f64,
    /// Transactions that wrote, per job (medians).
    pub one_at_a_time_commits_per_job: f64,
    /// The same with `concurrency` slots.
    pub concurrent_commits_per_job: f64,
}

/// An attempt that is over as soon as it starts.
#[derive(Clone, Copy)]
pub(crate) struct Noop;

impl Transport for Noop {
    fn attempt(&mut self, _: &Claimed, _: &Window<'_>) -> Result<Report, Unclassified> {
        Ok(Report::from(Outcome::Ok))
    }
}

/// Runs the worker benchmarks: `rounds` of each, in files under `dir`.
pub fn measure(
    dir: &Path,
    quick: bool,
    rounds: usize,
    trampoline: Option<&Trampoline>,
    progress: &dyn Fn(&str),
) -> Result<WorkerBench, BenchError> {
    // Jobs per run: about 2 s of ideal time at each concurrency (1 s with --quick).
    let slow_jobs = |n: usize| if quick { n * 10 } else { n * 20 };
    let receiver = retryq_demo::Server::start(
        retryq_demo::Config { slow: SLOW, slow_rate: 1.0, threads: 256, ..retryq_demo::Config::default() },
        0,
    )
    .map_err(|e| BenchError::Setup(format!("the slow receiver: {e}")))?;
    let url = receiver.url();
    let http = Http::new(std::slice::from_ref(&url), HttpOptions::default())
        .map_err(|e| BenchError::Setup(format!("the HTTP transport: {e}")))?;
    let bare = Exec::new(format!("sleep {}", SLOW.as_secs_f64()));
    let exec = match trampoline {
        Some(trampoline) => bare.clone().with_trampoline(trampoline.clone()),
        None => bare.clone(),
    };
    let (mut watched_cpu, mut unwatched_cpu, mut unwatched_rates, mut spawn_cpu) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut exec_rates = vec![Vec::new(); SLOW_CONCURRENCY.len()];
    let mut http_rates = vec![Vec::new(); SLOW_CONCURRENCY.len()];
    let noop_jobs = if quick { 300 } else { 2000 };
    let (mut one, mut many, mut ratios, mut one_commits, mut many_commits) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut ceiling = Vec::new();
    for round in 0..rounds {
        progress(&format!("round {}/{rounds}: worker, 100 ms jobs and no-op jobs", round + 1));
        for (i, &n) in SLOW_CONCURRENCY.iter().enumerate() {
            let jobs = slow_jobs(n);
            let (rate, cpu) =
                with_cpu(|| run(dir, &format!("exec-{n}-{round}"), jobs, &mut vec![exec.clone(); n]));
            exec_rates[i].push(rate?.0);
            if n == EXEC_COST_CONCURRENCY {
                watched_cpu.push(cpu / jobs as f64);
                let (rate, cpu) =
                    with_cpu(|| run(dir, &format!("bare-{n}-{round}"), jobs, &mut vec![bare.clone(); n]));
                unwatched_rates.push(rate?.0);
                unwatched_cpu.push(cpu / jobs as f64);
            }
            let (rate, _) = run(dir, &format!("http-{n}-{round}"), jobs, &mut vec![http.clone(); n])?;
            http_rates[i].push(rate);
        }
        let ((rate, spawned), cpu) = with_cpu(|| spawn_ceiling(64, Duration::from_secs(1)));
        ceiling.push(rate);
        spawn_cpu.push(cpu / spawned.max(1) as f64);
        let (rate_one, summary_one) = run(dir, &format!("noop-1-{round}"), noop_jobs, &mut [Noop])?;
        let (rate_many, summary_many) =
            run(dir, &format!("noop-{NOOP_CONCURRENCY}-{round}"), noop_jobs, &mut [Noop; NOOP_CONCURRENCY])?;
        one.push(rate_one);
        many.push(rate_many);
        ratios.push(rate_many / rate_one);
        one_commits.push(summary_one.writes as f64 / noop_jobs as f64);
        many_commits.push(summary_many.writes as f64 / noop_jobs as f64);
    }
    drop(receiver);
    let rows = |rates: &mut Vec<Vec<f64>>| -> Vec<SlowRow> {
        SLOW_CONCURRENCY
            .iter()
            .zip(rates.iter_mut())
            .map(|(&n, rounds)| {
                let ideal = n as f64 / SLOW.as_secs_f64();
                let rounds_jobs_per_s = rounds.clone();
                let jobs_per_s = median(rounds);
                SlowRow {
                    concurrency: n,
                    jobs: slow_jobs(n),
                    ideal_jobs_per_s: ideal,
                    jobs_per_s,
                    efficiency: jobs_per_s / ideal,
                    rounds_jobs_per_s,
                }
            })
            .collect()
    };
    let slow_exec = rows(&mut exec_rates);
    let spawn_cpu_ms = median(&mut spawn_cpu);
    let watched_cpu_ms_per_attempt = median(&mut watched_cpu);
    let exec_cost = ExecCost {
        concurrency: EXEC_COST_CONCURRENCY,
        watched: trampoline.is_some(),
        watched_jobs_per_s: slow_exec
            .iter()
            .find(|row| row.concurrency == EXEC_COST_CONCURRENCY)
            .map_or(0.0, |row| row.jobs_per_s),
        unwatched_jobs_per_s: median(&mut unwatched_rates),
        watched_cpu_ms_per_attempt,
        unwatched_cpu_ms_per_attempt: median(&mut unwatched_cpu),
        spawn_cpu_ms,
        cpu_ratio: watched_cpu_ms_per_attempt / spawn_cpu_ms,
    };
    Ok(WorkerBench {
        slow_exec,
        exec_cost,
        slow_http: rows(&mut http_rates),
        noop: NoopRow {
            jobs: noop_jobs,
            concurrency: NOOP_CONCURRENCY,
            one_at_a_time_jobs_per_s: median(&mut one),
            concurrent_jobs_per_s: median(&mut many),
            ratio: median(&mut ratios),
            one_at_a_time_commits_per_job: median(&mut one_commits),
            concurrent_commits_per_job: median(&mut many_commits),
        },
        exec_spawn_ceiling_per_s: median(&mut ceiling),
        rounds,
    })
}

/// Commands per second that `threads` threads start and reap for `window`, each one after
/// another, and how many they started.
fn spawn_ceiling(threads: usize, window: Duration) -> (f64, u64) {
    let start = Instant::now();
    let started: u64 = thread::scope(|scope| {
        let spawners: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut n = 0;
                    while start.elapsed() < window {
                        if Command::new("sh").args(["-c", "sleep 0"]).status().is_ok_and(|s| s.success()) {
                            n += 1;
                        }
                    }
                    n
                })
            })
            .collect();
        spawners.into_iter().map(|s| s.join().unwrap_or(0)).sum()
    });
    (started as f64 / start.elapsed().as_secs_f64(), started)
}

/// Enqueues `jobs` no-op jobs (`job-000000` on), all due now, with an hour to run and three
/// attempts each: the work of one run, in one transaction.
pub(crate) fn fill(queue: &mut dyn Backend, jobs: usize) -> Result<(), BenchError> {
    let now = retryq_core::now_ms()?;
    let ids = job_ids(jobs);
    let batch = noop_jobs(&ids, now);
    for enqueued in queue.enqueue_many(&batch)? {
        enqueued?;
    }
    Ok(())
}

/// `job-000000`, `job-000001`, … : the ids of `jobs` benchmark jobs.
pub(crate) fn job_ids(jobs: usize) -> Vec<String> {
    (0..jobs).map(|n| format!("job-{n:06}")).collect()
}

/// A no-op job under each of `ids`, due `now`, with an hour to run and three attempts.
pub(crate) fn noop_jobs(ids: &[String], now: u64) -> Vec<NewJob<'_>> {
    ids.iter()
        .map(|id| NewJob {
            id,
            payload: "{}",
            max_attempts: 3,
            deadline: now + 3_600_000,
            now,
            ..NewJob::default()
        })
        .collect()
}

/// A worker that runs until idle, with a lease and a timeout no no-op attempt comes near.
pub(crate) fn config(name: impl Into<String>) -> Config {
    Config {
        settings: Settings { lease_ms: 30_000, base_ms: 100, cap_ms: 1000, ..Settings::default() },
        timeout: Duration::from_secs(20),
        until_idle: true,
        max_sleep: Duration::from_millis(50),
        ..Config::new(name)
    }
}

/// Enqueues `jobs` on a fresh durable file, then runs the worker with one slot per
/// transport until idle: jobs per second from the start of the loop, and its summary.
fn run<T: Transport + Send>(
    dir: &Path,
    name: &str,
    jobs: usize,
    transports: &mut [T],
) -> Result<(f64, Summary), BenchError> {
    let path = dir.join(format!("worker-{name}.db"));
    let mut queue = Queue::open(&path)?;
    fill(&mut queue, jobs)?;
    let config = config("bench");
    let start = Instant::now();
    let summary = work_in_slots(&mut queue, &config, transports, &Stop::new(), &SystemClock)
        .map_err(|e| BenchError::Setup(format!("the worker loop: {e}")))?;
    let elapsed = start.elapsed().as_secs_f64();
    if summary.done != jobs as u64 {
        return Err(BenchError::Setup(format!(
            "{name}: {} of {jobs} jobs done ({summary:?}): the run is not comparable",
            summary.done
        )));
    }
    drop(queue);
    let _ = std::fs::remove_file(&path);
    Ok((jobs as f64 / elapsed, summary))
}
