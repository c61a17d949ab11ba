//! Kill -9, for real: worker processes on one database file, killed with SIGKILL at random
//! while they work, and nothing is lost.
//!
//! 200 jobs (half enqueued up front, half by `retryq enqueue` processes while the workers
//! run); 3 `retryq work` processes; every 150–450 ms a random worker is killed with SIGKILL
//! and a new one started, until no job is pending or leased. Twice over: one attempt at a
//! time per worker (`--concurrency 1`, a random seed), and sixteen (`--concurrency 16`) on
//! twenty fixed seeds, with 120 jobs of 200 ms each so that the kills land among many
//! attempts in flight (two runs at a time: about 80 s in a debug build on two cores). Each job's payload is its plan:
//! the exit status of each attempt (0, 75 or 65, drawn from the seed); the command appends
//! "id attempt" to a log, waits a moment (so that kills land inside attempts), and exits as
//! planned (20 ms, or 200 ms with sixteen in flight). Then:
//!
//! - every job is done or dead, and no id is lost;
//! - `retryq audit` is clean (SPEC section 4, invariants 1–6, on rows and history);
//! - no (id, attempt) ran twice, and no logged attempt exceeds the job's stored attempts;
//! - a done job's last attempt planned 0, a dead(permanent) one's planned 65: outcomes were
//!   recorded for the attempt that produced them;
//! - no claim of a job while its lease was live, read straight from the history;
//! - no worker or enqueue failed, and no log mentions a busy or locked database;
//! - every outcome a worker logged is in the job's history, as that attempt's transition: a
//!   worker killed between its commit and its log line loses a line, never stores less than
//!   it said;
//! - kills happened, and some landed inside an attempt (a lease was recovered).
//!
//! `RETRYQ_KILL9_SEED=N` repeats a run; the seed is printed either way.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{BIN, now_ms, read_only};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use retryq::{DeadReason, NewJob, Queue, Status};

const WORKERS: usize = 3;

/// How a run is shaped: attempts in flight per worker, how many jobs (how many of them up
/// front, how many per round after), and how long each attempt's command takes: long
/// enough that kills land inside attempts, as many as run at once.
#[derive(Clone, Copy)]
struct Shape {
    concurrency: u16,
    jobs: usize,
    up_front: usize,
    per_round: usize,
    sleep: &'static str,
}

/// One attempt at a time, 200 jobs, 20 ms each.
const ONE: Shape = Shape { concurrency: 1, jobs: 200, up_front: 100, per_round: 10, sleep: "0.02" };
/// Sixteen at a time, 120 jobs, 200 ms each. Every round that is not the last kills one
/// worker, and the run cannot end before the last job is enqueued: ten jobs a round after the
/// first sixty make at least five kills however fast the machine empties the queue.
const SIXTEEN: Shape = Shape { concurrency: 16, jobs: 120, up_front: 60, per_round: 10, sleep: "0.2" };
/// The whole run, enqueues to idle, must end within this.
const BOUND: Duration = Duration::from_secs(60);

const HANDLER: &str = r#"plan=$(cat)
printf '%s %s\n' "$RETRYQ_JOB_ID" "$RETRYQ_ATTEMPT" >> "$KILL9_LOG"
sleep "$KILL9_SLEEP"
set -- $plan
eval "code=\${$RETRYQ_ATTEMPT:-0}"
exit "$code"
"#;

struct Run {
    dir: tempfile::TempDir,
    db: PathBuf,
    log: PathBuf,
    handler: PathBuf,
    workers: Vec<(String, Child)>,
    started: usize,
    shape: Shape,
}

impl Run {
    fn new(shape: Shape) -> Run {
        let dir = tempfile::Builder::new().prefix("retryq-kill9-").tempdir().expect("tempdir");
        let db = dir.path().join("queue.db");
        let log = dir.path().join("attempts.log");
        let handler = dir.path().join("handler.sh");
        fs::write(&handler, HANDLER).expect("handler");
        fs::write(&log, "").expect("log");
        Run { dir, db, log, handler, workers: Vec::new(), started: 0, shape }
    }

    fn spawn_worker(&mut self) {
        let name = format!("w{}", self.started);
        self.started += 1;
        let stderr = File::create(self.dir.path().join(format!("{name}.log"))).expect("worker log");
        let child = Command::new(BIN)
            .args(["work", "--worker", &name, "--exec"])
            .arg(format!("sh {}", self.handler.display()))
            .args(["--lease-ms", "1500", "--timeout-ms", "500", "--base-ms", "20", "--cap-ms", "200"])
            .args(["--until-idle", "--concurrency", &self.shape.concurrency.to_string()])
            .env("RETRYQ_DB", &self.db)
            .env("KILL9_LOG", &self.log)
            .env("KILL9_SLEEP", self.shape.sleep)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn worker");
        self.workers.push((name, child));
    }

    fn worker_logs(&self) -> Vec<(String, String)> {
        (0..self.started)
            .map(|n| {
                let name = format!("w{n}");
                let text =
                    fs::read_to_string(self.dir.path().join(format!("{name}.log"))).unwrap_or_default();
                (name, text)
            })
            .collect()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // A failed run must not leave workers behind.
        for (_, child) in &mut self.workers {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A job's plan: the exit status of each of its attempts.
fn plan(rng: &mut StdRng, max_attempts: u64) -> Vec<u8> {
    (0..max_attempts)
        .map(|_| match rng.random_range(0..20) {
            0..10 => 0,
            10..17 => 75,
            _ => 65,
        })
        .collect()
}

fn words(plan: &[u8]) -> String {
    plan.iter().map(u8::to_string).collect::<Vec<_>>().join(" ")
}

/// The seed of `RETRYQ_KILL9_SEED`, if set.
fn seed_from_env() -> Option<u64> {
    std::env::var("RETRYQ_KILL9_SEED").ok().and_then(|s| s.parse().ok())
}

#[test]
fn workers_killed_with_sigkill_lose_nothing() {
    let seed = seed_from_env().unwrap_or_else(rand::random);
    eprintln!("kill9: seed {seed} (RETRYQ_KILL9_SEED={seed} repeats this run)");
    killed_with_sigkill(seed, ONE);
}

#[test]
fn workers_with_sixteen_attempts_in_flight_killed_with_sigkill_lose_nothing() {
    let seeds: Vec<u64> = match seed_from_env() {
        Some(seed) => vec![seed],
        None => (1..=20).collect(),
    };
    // Two runs at a time, each on its own database file: a run mostly waits (for commands,
    // leases, backoff). More at once on two cores and the commands overrun their timeouts.
    let chunks: Vec<&[u64]> = seeds.chunks(seeds.len().div_ceil(2)).collect();
    thread::scope(|scope| {
        for chunk in chunks {
            scope.spawn(move || {
                for &seed in chunk {
                    eprintln!("kill9: seed {seed}, 16 in flight (RETRYQ_KILL9_SEED={seed} repeats this run)");
                    killed_with_sigkill(seed, SIXTEEN);
                }
            });
        }
    });
}

fn killed_with_sigkill(seed: u64, shape: Shape) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut run = Run::new(shape);
    let start = Instant::now();

    // The jobs: a budget of 1–5 attempts; most have two minutes, some only 0.3–3 s, so that
    // deadlines bite too.
    let now = now_ms();
    let jobs: Vec<(String, Vec<u8>, u64, u64)> = (0..shape.jobs)
        .map(|n| {
            let max_attempts = rng.random_range(1..=5);
            let ttl = if rng.random_range(0..100) < 15 { rng.random_range(300..3000) } else { 120_000 };
            (format!("job-{n:03}"), plan(&mut rng, max_attempts), max_attempts, ttl)
        })
        .collect();
    {
        let mut q = Queue::open(&run.db).expect("create");
        let plans: Vec<String> = jobs[..shape.up_front].iter().map(|(_, p, _, _)| words(p)).collect();
        let batch: Vec<NewJob<'_>> = jobs[..shape.up_front]
            .iter()
            .zip(&plans)
            .map(|((id, _, max_attempts, ttl), payload)| NewJob {
                id,
                payload,
                max_attempts: *max_attempts,
                deadline: now + ttl,
                now,
                ..NewJob::default()
            })
            .collect();
        for result in q.enqueue_many(&batch).expect("enqueue") {
            result.expect("enqueued");
        }
    }
    for _ in 0..WORKERS {
        run.spawn_worker();
    }

    let mut kills = 0;
    let mut enqueued = shape.up_front;
    loop {
        assert!(start.elapsed() < BOUND, "not idle after {BOUND:?} (seed {seed})");
        thread::sleep(Duration::from_millis(rng.random_range(150..=450)));
        // The rest of the jobs arrive while the workers run, through the command line.
        for (id, plan, max_attempts, ttl) in jobs.iter().skip(enqueued).take(shape.per_round) {
            let out = Command::new(BIN)
                .args(["enqueue", "--id", id, "--payload", &words(plan)])
                .args(["--max-attempts", &max_attempts.to_string(), "--ttl", &ttl.to_string()])
                .env("RETRYQ_DB", &run.db)
                .output()
                .expect("enqueue");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.trim() == r#"{"ok":"enqueued"}"#,
                "enqueue {id}: {:?} {stdout} {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            enqueued += 1;
        }
        // Workers that ran out of work (until idle) must have exited cleanly.
        let mut i = 0;
        while i < run.workers.len() {
            if let Some(status) = run.workers[i].1.try_wait().expect("try_wait") {
                let (name, _) = run.workers.remove(i);
                assert!(status.success(), "worker {name} exited with {status} (seed {seed})");
            } else {
                i += 1;
            }
        }
        let open = read_only(&run.db).next_due().expect("next_due").is_some();
        if enqueued == shape.jobs && !open {
            break;
        }
        while run.workers.len() < WORKERS {
            run.spawn_worker();
        }
        let victim = rng.random_range(0..run.workers.len());
        let (_, mut child) = run.workers.remove(victim);
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
        kills += 1;
        run.spawn_worker();
    }
    // The rest see nothing open and exit by themselves.
    let waiting = Instant::now();
    while let Some((name, mut child)) = run.workers.pop() {
        loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                assert!(status.success(), "worker {name} exited with {status} (seed {seed})");
                break;
            }
            assert!(waiting.elapsed() < Duration::from_secs(10), "worker {name} did not exit when idle");
            thread::sleep(Duration::from_millis(20));
        }
    }
    let elapsed = start.elapsed();
    assert!(elapsed < BOUND, "{elapsed:?}");

    // Every job done or dead; no id lost.
    let q = read_only(&run.db);
    let stats = q.stats(now_ms()).expect("stats");
    assert_eq!(
        (stats.pending, stats.leased, stats.done + stats.dead),
        (0, 0, shape.jobs as u64),
        "{stats:?}"
    );
    let mut stored = HashMap::new();
    for (id, plan, _, _) in &jobs {
        let job = q.get(id).expect("get").unwrap_or_else(|| panic!("{id} lost (seed {seed})"));
        assert!(matches!(job.status, Status::Done | Status::Dead), "{id}: {:?}", job.status);
        // The outcome recorded is the one the last attempt planned.
        let last = job.attempts.checked_sub(1).map(|n| plan[n as usize]);
        match (job.status, job.dead_reason) {
            (Status::Done, _) => {
                assert_eq!(last, Some(0), "{id} done on attempt {} of plan {plan:?}", job.attempts)
            }
            (Status::Dead, Some(DeadReason::Permanent)) => {
                assert_eq!(last, Some(65), "{id} permanent on attempt {} of plan {plan:?}", job.attempts)
            }
            _ => {}
        }
        stored.insert(id.clone(), job);
    }

    // The audit, through the command line.
    let out = Command::new(BIN).args(["audit", "--db"]).arg(&run.db).output().expect("audit");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && report.contains("audit: clean"), "audit (seed {seed}):\n{report}");

    // No (id, attempt) ran twice; none beyond the stored attempts.
    let log = fs::read_to_string(&run.log).expect("log");
    let mut ran = HashSet::new();
    for line in log.lines() {
        let (id, attempt) = line.split_once(' ').unwrap_or_else(|| panic!("log line {line:?}"));
        let attempt: u64 = attempt.parse().unwrap_or_else(|_| panic!("log line {line:?}"));
        let job = stored.get(id).unwrap_or_else(|| panic!("logged an unknown job {id:?}"));
        assert!(attempt >= 1 && attempt <= job.attempts, "{id} ran attempt {attempt} of {}", job.attempts);
        assert!(ran.insert((id.to_owned(), attempt)), "{id} attempt {attempt} ran twice (seed {seed})");
    }

    // No claim while a lease was live. A lease that ran out instead of being completed (its
    // worker was killed inside the attempt) shows as a claim of a leased job, or as a job
    // dead `exhausted` whose last attempt did not plan 75. A heartbeat is leased → leased
    // too, but keeps the attempt: only a new attempt is a claim.
    let mut recovered = 0;
    for (id, plan, _, _) in &jobs {
        let history = q.history(id).expect("history");
        for pair in history.windows(2) {
            let (prev, cur) = (&pair[0], &pair[1]);
            if prev.to == Status::Leased && cur.to == Status::Leased && cur.attempt != prev.attempt {
                let until = prev.available_at.unwrap_or(u64::MAX);
                assert!(
                    until <= cur.at,
                    "{id}: claimed at {} under a lease until {until} (seed {seed})",
                    cur.at
                );
                recovered += 1;
            }
        }
        let job = &stored[id];
        if job.dead_reason == Some(DeadReason::Exhausted) && plan[job.attempts as usize - 1] != 75 {
            recovered += 1;
        }
    }

    // No worker reported a failure; none saw a busy or locked database. Every outcome a
    // worker logged is stored: the attempt's transition out of leased is in the history.
    let mut logged = 0;
    for (name, text) in run.worker_logs() {
        for line in text.lines() {
            let lower = line.to_lowercase();
            assert!(
                !line.contains(" ERROR ") && !lower.contains("busy") && !lower.contains("locked"),
                "worker {name}: {line}"
            );
            let Some((id, attempt, to)) = logged_outcome(line) else { continue };
            let stored = q
                .history(&id)
                .expect("history")
                .iter()
                .any(|h| h.from == Some(Status::Leased) && h.to == to && h.attempt == attempt);
            assert!(stored, "worker {name} logged an outcome that is not stored (seed {seed}): {line}");
            logged += 1;
        }
    }
    assert!(logged > 0, "no outcome logged (seed {seed})");

    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for job in stored.values() {
        let key = match job.dead_reason {
            Some(reason) => format!("dead {reason}"),
            None => job.status.to_string(),
        };
        *outcomes.entry(key).or_default() += 1;
    }
    eprintln!(
        "kill9: seed {seed}, {} in flight: {} jobs {outcomes:?}; {logged} outcomes logged, {kills} kills, {} workers started, {} attempts run, \
         {recovered} leases recovered; {:.1} s",
        shape.concurrency,
        shape.jobs,
        run.started,
        ran.len(),
        elapsed.as_secs_f64()
    );
    assert!(kills >= 3, "only {kills} kills: the run proves little");
    assert!(recovered > 0, "no kill landed inside an attempt (seed {seed})");
}

/// The job, attempt and the status it went to, of a worker's log line for a recorded
/// outcome (`… attempt job=ID attempt=N outcome="done" …`).
fn logged_outcome(line: &str) -> Option<(String, u64, Status)> {
    let field = |name: &str| {
        line.split_whitespace().find_map(|word| word.strip_prefix(name)).map(|v| v.trim_matches('"'))
    };
    let to = match field("outcome=")? {
        "done" => Status::Done,
        "retry" => Status::Pending,
        "dead" => Status::Dead,
        _ => return None,
    };
    let attempt = field("attempt=")?.parse().ok()?;
    Some((field("job=")?.to_owned(), attempt, to))
}
