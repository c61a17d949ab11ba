//! `retryq work --concurrency N` as a process: attempts in flight together, a first signal
//! that lets them all finish and be recorded, a second that exits at once, a summary that
//! adds up to `stats`, and lease holders named per process.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use retryq::{OpenOptions, Queue, Stats};

const BIN: &str = env!("CARGO_BIN_EXE_retryq");

/// Logs the start and the end of each attempt to `$LOG`, sleeping `$NAP` seconds between.
const NAPPER: &str = r#"echo "start $RETRYQ_JOB_ID" >> "$LOG"
sleep "$NAP"
echo "end $RETRYQ_JOB_ID" >> "$LOG"
"#;

struct Setup {
    dir: tempfile::TempDir,
    db: PathBuf,
    log: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::Builder::new().prefix("retryq-conc-").tempdir().expect("tempdir");
        let db = dir.path().join("q.db");
        let log = dir.path().join("attempts.log");
        fs::write(&log, "").expect("log");
        Setup { dir, db, log }
    }

    fn enqueue(&self, id: &str, max_attempts: u64) {
        let out = Command::new(BIN)
            .args(["enqueue", "--id", id, "--payload", "p", "--max-attempts", &max_attempts.to_string()])
            .args(["--ttl", "10m"])
            .env("RETRYQ_DB", &self.db)
            .output()
            .expect("enqueue");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    /// A worker named `name` running `script` (a file), `nap` seconds per attempt.
    fn work(&self, name: &str, script: &str, nap: &str, flags: &[&str]) -> Child {
        let handler = self.dir.path().join("handler.sh");
        fs::write(&handler, script).expect("handler");
        Command::new(BIN)
            .args(["work", "--worker", name, "--exec"])
            .arg(format!("sh {}", handler.display()))
            .args(flags)
            .env("RETRYQ_DB", &self.db)
            .env("LOG", &self.log)
            .env("NAP", nap)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn worker")
    }

    /// The lines of the attempt log that start with `word`.
    fn logged(&self, word: &str) -> usize {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().filter(|l| l.split_whitespace().next() == Some(word)).count()
    }

    /// Waits (at most 10 s) until `n` attempts have started.
    fn wait_for_starts(&self, n: usize) {
        let start = Instant::now();
        while self.logged("start") < n {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{} of {n} attempts started",
                self.logged("start")
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn read(&self) -> Queue {
        let options = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
        Queue::open_with(&self.db, &options).expect("open")
    }

    fn stats(&self) -> Stats {
        self.read().stats(retryq_worker::now_ms().expect("clock")).expect("stats")
    }

    fn retryq(&self, args: &[&str]) -> String {
        let out = Command::new(BIN).args(args).env("RETRYQ_DB", &self.db).output().expect("retryq");
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

fn signal(child: &Child, name: &str) {
    let status =
        Command::new("kill").args([&format!("-{name}"), &child.id().to_string()]).status().expect("kill");
    assert!(status.success());
}

/// The exit status and standard error of a worker that must exit within `within`.
fn finish(mut child: Child, within: Duration) -> (ExitStatus, String) {
    let start = Instant::now();
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            let out = child.wait_with_output().expect("output");
            return (out.status, String::from_utf8_lossy(&out.stderr).into_owned());
        }
        if start.elapsed() > within {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!("no exit within {within:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// A numeric field of the log line that contains `message`: `name=N`.
fn field(log: &str, message: &str, name: &str) -> u64 {
    let line = log.lines().find(|l| l.contains(message)).unwrap_or_else(|| panic!("no {message:?} in {log}"));
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}

#[test]
fn the_summary_adds_up_to_stats_reaped_jobs_included() {
    // Each job's id says what its attempts do: ok, permanent, retryable (two attempts), and an
    // unclassified exit on the only attempt, after which the lease expires and a reap ends
    // the job dead(exhausted) — the worker's own reap, while it waits until idle.
    let script = r#"case "$RETRYQ_JOB_ID" in
ok*) exit 0 ;;
perm*) exit 65 ;;
retry*) exit 75 ;;
*) exit 3 ;;
esac
"#;
    for concurrency in ["1", "4"] {
        let s = Setup::new();
        for (id, max_attempts) in [("ok", 1), ("ok2", 1), ("perm", 1), ("retry", 2), ("crash", 1)] {
            s.enqueue(id, max_attempts);
        }
        let flags = [
            "--until-idle",
            "--concurrency",
            concurrency,
            "--lease",
            "1500ms",
            "--timeout",
            "500ms",
            "--backoff-base",
            "0",
            "--backoff-cap",
            "0",
            "--exit-unknown",
            "3",
        ];
        let (status, log) = finish(s.work("w", script, "0", &flags), Duration::from_secs(20));
        assert!(status.success(), "{status}: {log}");
        let stats = s.stats();
        let count = |name| field(&log, "worker stopped", name);
        assert_eq!((stats.pending, stats.leased), (0, 0), "{stats:?}");
        assert_eq!(count("done"), stats.done, "--concurrency {concurrency}: {log}");
        assert_eq!(count("dead") + count("reaped"), stats.dead, "--concurrency {concurrency}: {log}");
        assert_eq!(
            (count("attempts"), count("retried"), count("reaped"), count("unrecorded")),
            (6, 1, 1, 1),
            "--concurrency {concurrency}: {log}"
        );
        assert_eq!(field(&log, "worker started", "concurrency").to_string(), concurrency);
    }
}

#[test]
fn a_first_signal_lets_every_attempt_in_flight_finish_and_be_recorded() {
    let s = Setup::new();
    for n in 0..12 {
        s.enqueue(&format!("j{n:02}"), 3);
    }
    let child = s.work("w", NAPPER, "1", &["--concurrency", "4"]);
    s.wait_for_starts(4);
    let signalled = Instant::now();
    signal(&child, "TERM");
    let (status, log) = finish(child, Duration::from_secs(10));
    assert!(status.success(), "{status}: {log}");
    assert!(signalled.elapsed() >= Duration::from_millis(500), "it did not wait for the attempts");
    // Four attempts ran to their end and were recorded; nothing more was claimed.
    assert_eq!((s.logged("start"), s.logged("end")), (4, 4));
    let stats = s.stats();
    assert_eq!((stats.done, stats.leased, stats.pending), (4, 0, 8), "{stats:?}");
    assert_eq!((field(&log, "worker stopped", "attempts"), field(&log, "worker stopped", "done")), (4, 4));
    assert_eq!(log.matches("outcome=\"done\"").count(), 4, "{log}");
}

#[test]
fn a_second_signal_exits_at_once_and_kills_every_command() {
    let s = Setup::new();
    for n in 0..6 {
        s.enqueue(&format!("j{n}"), 3);
    }
    let child = s.work("w", NAPPER, "5", &["--concurrency", "4"]);
    s.wait_for_starts(4);
    signal(&child, "TERM");
    thread::sleep(Duration::from_millis(100));
    let signalled = Instant::now();
    signal(&child, "TERM");
    let (status, log) = finish(child, Duration::from_secs(5));
    assert_eq!(status.code(), Some(128 + 15), "{log}");
    assert!(signalled.elapsed() < Duration::from_secs(2), "{:?}", signalled.elapsed());
    // The four attempts stay spent, their jobs leased until their leases expire; none of
    // their commands ran on.
    let stats = s.stats();
    assert_eq!((stats.leased, stats.pending, stats.done), (4, 2, 0), "{stats:?}");
    thread::sleep(Duration::from_millis(300));
    assert_eq!(s.logged("end"), 0, "a command outlived the second signal");
    assert!(!log.contains("outcome="), "nothing was recorded, so nothing is logged as if: {log}");
}

#[test]
fn two_processes_with_one_name_hold_their_leases_under_names_of_their_own() {
    let s = Setup::new();
    for n in 0..4 {
        s.enqueue(&format!("j{n}"), 3);
    }
    let a = s.work("same", NAPPER, "3", &["--concurrency", "2"]);
    let b = s.work("same", NAPPER, "3", &["--concurrency", "2"]);
    s.wait_for_starts(4);
    let listed: serde_json::Value =
        serde_json::from_str(&s.retryq(&["stats", "--workers", "--json"])).expect("json");
    assert_eq!(listed["ok"], "workers", "{listed}");
    let workers = listed["workers"].as_array().expect("workers");
    assert_eq!(workers.len(), 2, "{listed}");
    for w in workers {
        let name = w["worker"].as_str().expect("name");
        assert!(name.starts_with("same."), "{name}");
        assert_eq!((w["leased"].as_u64(), w["expired"].as_u64()), (Some(2), Some(0)), "{listed}");
    }
    assert_ne!(workers[0]["worker"], workers[1]["worker"]);
    let human = s.retryq(&["stats", "--workers"]);
    assert_eq!(
        human.lines().filter(|l| l.starts_with("same.") && l.contains("leased 2 (0 expired)")).count(),
        2
    );
    signal(&a, "TERM");
    signal(&b, "TERM");
    let mut names = Vec::new();
    for child in [a, b] {
        let (status, log) = finish(child, Duration::from_secs(10));
        assert!(status.success(), "{status}: {log}");
        let started = log.lines().find(|l| l.contains("worker started")).expect("start line");
        let name = started.split_whitespace().find_map(|w| w.strip_prefix("worker=")).expect("name");
        names.push(name.trim_matches('"').to_owned());
    }
    let mut listed_names: Vec<String> =
        workers.iter().map(|w| w["worker"].as_str().unwrap_or_default().to_owned()).collect();
    listed_names.sort();
    names.sort();
    assert_eq!(names, listed_names, "the start lines name the holders stats lists");
    assert_eq!(s.retryq(&["stats", "--workers"]), "no worker holds a lease\n");
}

#[test]
fn a_name_with_no_room_for_the_suffix_is_refused() {
    let s = Setup::new();
    let long = "n".repeat(250);
    let out = Command::new(BIN)
        .args(["work", "--worker", &long, "--exec", "true", "--until-idle"])
        .env("RETRYQ_DB", &s.db)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--worker") && err.contains("at most"), "{err}");
    assert!(!Path::new(&s.db).exists() || s.stats() == Stats::default());
}
