//! The kill -9 run, on either store: worker processes killed with SIGKILL at random while
//! they work (or the database server restarted under them), until no job is pending or
//! leased; then every check of `tests/kill9.rs`'s doc. Shared by `tests/kill9.rs` (a SQLite
//! file) and `tests/pg_kill9.rs` (a PostgreSQL database).

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{BIN, now_ms, read_only};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use retryq::{Backend, DeadReason, NewJob, PgQueue, Status};

/// How a run is shaped: attempts in flight per worker, how many jobs (how many of them up
/// front, how many per round after), and how long each attempt's command takes: long
/// enough that kills land inside attempts, as many as run at once.
#[derive(Clone, Copy)]
pub struct Shape {
    /// Worker processes running at once.
    pub workers: usize,
    pub concurrency: u16,
    pub jobs: usize,
    pub up_front: usize,
    pub per_round: usize,
    pub sleep: &'static str,
}

/// One attempt at a time, 200 jobs, 20 ms each.
pub const ONE: Shape =
    Shape { workers: 3, concurrency: 1, jobs: 200, up_front: 100, per_round: 10, sleep: "0.02" };
/// Sixteen at a time, 120 jobs, 200 ms each. Every round that is not the last kills one
/// worker, and the run cannot end before the last job is enqueued: ten jobs a round after the
/// first sixty make at least five kills however fast the machine empties the queue.
pub const SIXTEEN: Shape =
    Shape { workers: 3, concurrency: 16, jobs: 120, up_front: 60, per_round: 10, sleep: "0.2" };
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
    /// A SQLite file's path or a PostgreSQL URL: what `RETRYQ_DB` says.
    db: String,
    log: PathBuf,
    handler: PathBuf,
    workers: Vec<(String, Child)>,
    started: usize,
    shape: Shape,
}

impl Run {
    fn new(shape: Shape, db: Option<&str>) -> Run {
        let dir = tempfile::Builder::new().prefix("retryq-kill9-").tempdir().expect("tempdir");
        let db = match db {
            Some(url) => url.to_owned(),
            None => dir.path().join("queue.db").to_str().expect("a UTF-8 temporary path").to_owned(),
        };
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
            .args([
                "--lease",
                "1500ms",
                "--timeout",
                "500ms",
                "--backoff-base",
                "20ms",
                "--backoff-cap",
                "200ms",
            ])
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

/// What happens each round besides the enqueues: a worker killed with SIGKILL, or, once, the
/// database server stopped as a crash would stop it and started again after a pause.
pub enum Trouble<'a> {
    /// A random worker is killed each round, and a new one started.
    Kills,
    /// No worker is killed: in the third round `restart` runs (it stops the server, waits
    /// and starts it again), and the workers must carry on by themselves.
    ServerRestart(&'a dyn Fn()),
}

/// The store `db` names, for the test to read: a PostgreSQL URL, or a SQLite file opened read
/// only.
fn reader(db: &str) -> Box<dyn Backend> {
    if db.starts_with("postgres://") {
        Box::new(PgQueue::connect_existing(db).expect("connect"))
    } else {
        Box::new(read_only(Path::new(db)))
    }
}

/// The whole run on a SQLite file of its own (`db` None) or on the empty PostgreSQL
/// database `db` names, then every check of the module's doc.
/// Runs the workers under `trouble` and checks everything the module's doc lists but the
/// last: how many leases a kill left to be recovered ([`until_a_kill_lands`] checks that).
pub fn killed_with_sigkill(seed: u64, shape: Shape, db: Option<&str>, trouble: Trouble<'_>) -> usize {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut run = Run::new(shape, db);
    let mut restarts = 0;
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
        let mut q = retryq::open_backend(&run.db).expect("create");
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
    for _ in 0..shape.workers {
        run.spawn_worker();
    }

    let mut kills = 0;
    let mut enqueued = shape.up_front;
    let mut round = 0;
    loop {
        round += 1;
        assert!(start.elapsed() < BOUND, "not idle after {BOUND:?} (seed {seed})");
        thread::sleep(Duration::from_millis(rng.random_range(150..=450)));
        // The rest of the jobs arrive while the workers run, through the command line.
        for (id, plan, max_attempts, ttl) in jobs.iter().skip(enqueued).take(shape.per_round) {
            let out = Command::new(BIN)
                .args(["enqueue", "--id", id, "--payload", &words(plan)])
                .args(["--max-attempts", &max_attempts.to_string(), "--ttl", &format!("{ttl}ms")])
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
        if let Trouble::ServerRestart(restart) = &trouble
            && round == 3
        {
            restart();
            restarts += 1;
        }
        let open = reader(&run.db).next_due().expect("next_due").is_some();
        if enqueued == shape.jobs && !open {
            break;
        }
        while run.workers.len() < shape.workers {
            run.spawn_worker();
        }
        if matches!(trouble, Trouble::ServerRestart(_)) {
            continue;
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
    let q = reader(&run.db);
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
    let out = Command::new(BIN).args(["audit", "--db", &run.db]).output().expect("audit");
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
    let (mut outages, mut answers) = (0, 0);
    for (name, text) in run.worker_logs() {
        for line in text.lines() {
            // The store away, and back: the one line each of a server restart.
            if line.contains("the store cannot be used for now") {
                outages += 1;
                continue;
            }
            answers += usize::from(line.contains("the store answers again"));
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
        "kill9: seed {seed}, {} workers of {} in flight on {}: {} jobs {outcomes:?}; {logged} outcomes logged, {kills} kills, \
         {restarts} server restarts ({outages} outages and {answers} returns logged), {} workers started, {} attempts run, \
         {recovered} leases recovered; {:.1} s",
        shape.workers,
        shape.concurrency,
        q.kind(),
        shape.jobs,
        run.started,
        ran.len(),
        elapsed.as_secs_f64()
    );
    match trouble {
        Trouble::Kills => {
            assert!(kills >= 3, "only {kills} kills: the run proves little");
        }
        Trouble::ServerRestart(_) => {
            assert_eq!(restarts, 1, "the run ended before the server was restarted: it proves little");
            assert!(outages > 0 && answers > 0, "no worker noticed the server going and coming back");
        }
    }
    recovered
}

/// How many runs [`until_a_kill_lands`] tries.
const RUNS_FOR_A_LANDED_KILL: u64 = 3;

/// Runs `run` (one [`killed_with_sigkill`] with `Trouble::Kills`, on a store of its own) with
/// `seed`, then the seeds after it, until a kill has landed inside an attempt, at most
/// [`RUNS_FOR_A_LANDED_KILL`] times. Where a kill lands is the machine's timing, not the
/// seed's: on a loaded machine a run's kills can all fall between attempts, and that run
/// checks everything but a recovered lease, so another run is asked for, not a failure.
/// Every run's own checks hold either way; no kill landing in any run fails.
pub fn until_a_kill_lands(seed: u64, mut run: impl FnMut(u64) -> usize) {
    for n in 0..RUNS_FOR_A_LANDED_KILL {
        let seed = seed.wrapping_add(n);
        if run(seed) > 0 {
            return;
        }
        eprintln!("kill9: seed {seed}: no kill landed inside an attempt; another run");
    }
    panic!("no kill landed inside an attempt in {RUNS_FOR_A_LANDED_KILL} runs from seed {seed}");
}

/// The job, attempt and the status it went to, of a worker's log line for a recorded
/// outcome (`… attempt job=ID attempt=N outcome="done" …`).
pub fn logged_outcome(line: &str) -> Option<(String, u64, Status)> {
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
