//! `retryq work` as a process: signals, timeouts bounded by the deadline, unclassified exits.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use retryq::{DeadReason, Job, OpenOptions, Queue, Status};

const BIN: &str = env!("CARGO_BIN_EXE_retryq");

struct Setup {
    dir: tempfile::TempDir,
    db: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::Builder::new().prefix("retryq-work-").tempdir().expect("tempdir");
        let db = dir.path().join("q.db");
        Setup { dir, db }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn enqueue(&self, id: &str, max_attempts: u64, ttl_ms: u64) {
        let out = Command::new(BIN)
            .args(["enqueue", "--id", id, "--payload", "p", "--max-attempts", &max_attempts.to_string()])
            .args(["--ttl", &ttl_ms.to_string()])
            .env("RETRYQ_DB", &self.db)
            .output()
            .expect("enqueue");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    /// A worker running `script` (a file, so the test can name what it does).
    fn work(&self, script: &str, flags: &[&str]) -> Child {
        let handler = self.path("handler.sh");
        fs::write(&handler, script).expect("handler");
        Command::new(BIN)
            .args(["work", "--worker", "w1", "--exec"])
            .arg(format!("sh {}", handler.display()))
            .args(flags)
            .env("RETRYQ_DB", &self.db)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn worker")
    }

    fn job(&self, id: &str) -> Job {
        let options = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
        let mut q = Queue::open_with(&self.db, &options).expect("open");
        q.get(id).expect("get").expect("job")
    }
}

fn wait_for(path: &Path, within: Duration) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < within, "{} did not appear", path.display());
        thread::sleep(Duration::from_millis(10));
    }
}

fn signal(child: &Child, name: &str) {
    let status =
        Command::new("kill").args([&format!("-{name}"), &child.id().to_string()]).status().expect("kill");
    assert!(status.success());
}

/// Waits for the worker, at most `within`; its status and its log.
fn finish(mut child: Child, within: Duration) -> (ExitStatus, String) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            let out = child.wait_with_output().expect("output");
            return (status, String::from_utf8_lossy(&out.stderr).into_owned());
        }
        if start.elapsed() > within {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!("the worker did not exit within {within:?}:\n{}", String::from_utf8_lossy(&out.stderr));
        }
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn sigterm_lets_the_attempt_finish_records_it_and_exits_0() {
    let s = Setup::new();
    s.enqueue("a", 3, 60_000);
    let started = s.path("started");
    let script = format!("touch {}; sleep 1; exit 0\n", started.display());
    let child = s.work(&script, &[]);
    wait_for(&started, Duration::from_secs(10));
    let signalled = Instant::now();
    signal(&child, "TERM");
    let (status, log) = finish(child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(signalled.elapsed() >= Duration::from_millis(500), "it did not wait for the attempt");
    let job = s.job("a");
    assert_eq!((job.status, job.attempts), (Status::Done, 1), "the attempt was recorded:\n{log}");
    assert!(log.contains("outcome=\"done\"") && log.contains("worker stopped"), "{log}");
}

#[test]
fn sigint_while_idle_exits_0_at_once() {
    let s = Setup::new();
    s.enqueue("a", 1, 60_000);
    let child = s.work("exit 0\n", &[]);
    // Let it finish the job and go idle, then interrupt its sleep.
    let start = Instant::now();
    while s.job("a").status != Status::Done {
        assert!(start.elapsed() < Duration::from_secs(10));
        thread::sleep(Duration::from_millis(20));
    }
    let signalled = Instant::now();
    signal(&child, "INT");
    let (status, log) = finish(child, Duration::from_secs(5));
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(
        signalled.elapsed() < Duration::from_millis(900),
        "the sleep was not interrupted: {:?}",
        signalled.elapsed()
    );
}

#[test]
fn a_second_signal_exits_at_once_and_kills_the_command() {
    let s = Setup::new();
    s.enqueue("a", 3, 60_000);
    let started = s.path("started");
    let pid = s.path("pid");
    let script = format!("echo $$ > {}; touch {}; sleep 30\n", pid.display(), started.display());
    let child = s.work(&script, &[]);
    wait_for(&started, Duration::from_secs(10));
    signal(&child, "TERM");
    thread::sleep(Duration::from_millis(100));
    let signalled = Instant::now();
    signal(&child, "INT");
    let (status, log) = finish(child, Duration::from_secs(5));
    assert!(signalled.elapsed() < Duration::from_secs(2), "{:?}", signalled.elapsed());
    assert_eq!(status.code(), Some(128 + 2), "{log}");
    // The job stays leased, the attempt spent, as after a crash.
    let job = s.job("a");
    assert_eq!((job.status, job.attempts), (Status::Leased, 1));
    // The command went with the worker.
    let pid = fs::read_to_string(&pid).expect("pid");
    let proc = PathBuf::from("/proc").join(pid.trim());
    let start = Instant::now();
    while fs::read_to_string(proc.join("stat")).is_ok_and(|stat| !stat.contains(") Z")) {
        assert!(start.elapsed() < Duration::from_secs(2), "the command outlived the worker");
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn no_attempt_runs_past_the_deadline() {
    let s = Setup::new();
    s.enqueue("a", 5, 1500);
    let enqueued = Instant::now();
    let child =
        s.work("echo slow >&2; sleep 10\n", &["--timeout-ms", "5000", "--lease-ms", "6000", "--until-idle"]);
    let (status, log) = finish(child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{log}");
    // Killed at the deadline (1.5 s), not at the 5 s timeout.
    assert!(enqueued.elapsed() < Duration::from_millis(4000), "{:?}\n{log}", enqueued.elapsed());
    let job = s.job("a");
    assert_eq!((job.status, job.dead_reason, job.attempts), (Status::Dead, Some(DeadReason::Deadline), 1));
    let error = job.last_error.expect("an error");
    assert!(error.starts_with("timed out after ") && error.ends_with(": slow"), "{error}");
}

#[test]
fn an_unclassified_exit_waits_for_the_lease() {
    let s = Setup::new();
    s.enqueue("a", 2, 60_000);
    let start = Instant::now();
    let child = s.work(
        "echo 'no such table' >&2; exit 3\n",
        &["--lease-ms", "700", "--timeout-ms", "500", "--until-idle"],
    );
    let (status, log) = finish(child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{log}");
    // Two attempts, each waiting out its 700 ms lease: the second claim and the final reap.
    assert!(start.elapsed() >= Duration::from_millis(1400), "{:?}", start.elapsed());
    assert_eq!(log.matches("outcome=\"unclassified\"").count(), 2, "{log}");
    let job = s.job("a");
    assert_eq!((job.status, job.dead_reason, job.attempts), (Status::Dead, Some(DeadReason::Exhausted), 2));
    assert!(
        job.last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("exit 3 (unclassified)") && e.ends_with("no such table"))
    );
}
