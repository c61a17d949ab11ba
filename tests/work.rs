//! `retryq work` as a process: signals, timeouts bounded by the deadline, unclassified exits,
//! a command the shell cannot run, the lease holding every wait, a database file deleted
//! under the worker, a file size limit.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{BIN, fresh, kill, read_only, spawn_logged, wait_until};
use retryq::{DeadReason, HistoryEntry, Job, NewJob, Queue, Status};

struct Setup {
    dir: tempfile::TempDir,
    db: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let (dir, db) = fresh("retryq-work-");
        Setup { dir, db }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn enqueue(&self, id: &str, max_attempts: u64, ttl_ms: u64) {
        let out = Command::new(BIN)
            .args(["enqueue", "--id", id, "--payload", "p", "--max-attempts", &max_attempts.to_string()])
            .args(["--ttl", &format!("{ttl_ms}ms")])
            .env("RETRYQ_DB", &self.db)
            .output()
            .expect("enqueue");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    /// A worker running `script` (a file, so the test can name what it does).
    fn work(&self, script: &str, flags: &[&str]) -> Child {
        let handler = self.path("handler.sh");
        fs::write(&handler, script).expect("handler");
        spawn_logged(
            Command::new(BIN)
                .args(["work", "--worker", "w1", "--exec"])
                .arg(format!("sh {}", handler.display()))
                .args(flags)
                .env("RETRYQ_DB", &self.db),
        )
    }

    fn job(&self, id: &str) -> Job {
        self.read().get(id).expect("get").expect("job")
    }

    fn history(&self, id: &str) -> Vec<HistoryEntry> {
        self.read().history(id).expect("history")
    }

    fn read(&self) -> Queue {
        read_only(&self.db)
    }
}

/// A worker's exit status and standard error, for one that must stop by itself quickly.
fn run_work(s: &Setup, flags: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(BIN)
        .args(["work", "--worker", "w1"])
        .args(flags)
        .env("RETRYQ_DB", &s.db)
        .stdin(Stdio::null())
        .output()
        .expect("run");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn wait_for(path: &Path, within: Duration) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < within, "{} did not appear", path.display());
        thread::sleep(Duration::from_millis(10));
    }
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
    // One attempt at a time, as before slots, and with slots to spare.
    for concurrency in ["1", "16"] {
        let s = Setup::new();
        s.enqueue("a", 3, 60_000);
        let started = s.path("started");
        let script = format!("touch {}; sleep 1; exit 0\n", started.display());
        let child = s.work(&script, &["--concurrency", concurrency]);
        wait_for(&started, Duration::from_secs(10));
        let signalled = Instant::now();
        kill(child.id(), "TERM");
        let (status, log) = finish(child, Duration::from_secs(10));
        assert_eq!(status.code(), Some(0), "{log}");
        assert!(signalled.elapsed() >= Duration::from_millis(500), "it did not wait for the attempt");
        let job = s.job("a");
        assert_eq!((job.status, job.attempts), (Status::Done, 1), "the attempt was recorded:\n{log}");
        assert!(log.contains("outcome=\"done\"") && log.contains("worker stopped"), "{log}");
        assert!(log.contains(&format!("concurrency={concurrency}")), "{log}");
    }
}

#[test]
fn sigint_while_idle_exits_0_at_once() {
    let s = Setup::new();
    s.enqueue("a", 1, 60_000);
    let child = s.work("exit 0\n", &[]);
    // Let it finish the job and go idle, then interrupt its sleep.
    wait_until("the job was not done", Duration::from_secs(10), || s.job("a").status == Status::Done);
    let signalled = Instant::now();
    kill(child.id(), "INT");
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
    for concurrency in ["1", "16"] {
        let s = Setup::new();
        s.enqueue("a", 3, 60_000);
        let started = s.path("started");
        let pid = s.path("pid");
        let script = format!("echo $$ > {}; touch {}; sleep 30\n", pid.display(), started.display());
        let child = s.work(&script, &["--concurrency", concurrency]);
        wait_for(&started, Duration::from_secs(10));
        kill(child.id(), "TERM");
        thread::sleep(Duration::from_millis(100));
        let signalled = Instant::now();
        kill(child.id(), "INT");
        let (status, log) = finish(child, Duration::from_secs(5));
        assert!(signalled.elapsed() < Duration::from_secs(2), "{:?}", signalled.elapsed());
        assert_eq!(status.code(), Some(128 + 2), "{log}");
        // The job stays leased, the attempt spent, as after a crash.
        let job = s.job("a");
        assert_eq!((job.status, job.attempts), (Status::Leased, 1));
        // The command went with the worker.
        wait_gone(&pid, Duration::from_secs(2), "the command outlived the worker");
    }
}

/// Waits until the process whose id `pid_file` holds is gone (or a zombie), at most `within`.
fn wait_gone(pid_file: &Path, within: Duration, why: &str) {
    let pid = fs::read_to_string(pid_file).expect("pid");
    let proc = PathBuf::from("/proc").join(pid.trim());
    let start = Instant::now();
    while fs::read_to_string(proc.join("stat")).is_ok_and(|stat| !stat.contains(") Z")) {
        assert!(start.elapsed() < within, "{why}");
        thread::sleep(Duration::from_millis(10));
    }
}

/// A worker killed with SIGKILL cannot kill its command: the kernel does, through the
/// parent-death signal the trampoline asked for before it became the shell. (The signal
/// reaches the shell the worker started; the shell's own children are its business.)
#[test]
fn a_worker_killed_with_sigkill_takes_its_command_with_it() {
    let s = Setup::new();
    s.enqueue("a", 3, 60_000);
    let (pid, started) = (s.path("pid"), s.path("started"));
    // Inline, not a script file: `$$` is then the shell the worker started.
    let command = format!("echo $$ > {}; touch {}; sleep 30", pid.display(), started.display());
    let mut child = Command::new(BIN)
        .args(["work", "--worker", "w1", "--exec", &command])
        .env("RETRYQ_DB", &s.db)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn worker");
    wait_for(&started, Duration::from_secs(10));
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    wait_gone(&pid, Duration::from_secs(2), "the command outlived a worker killed with SIGKILL");
    // The shell's `sleep`, in the same process group, is not the worker's to wait for.
    let group = format!("-{}", fs::read_to_string(&pid).expect("pid").trim());
    let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
    let job = s.job("a");
    assert_eq!((job.status, job.attempts), (Status::Leased, 1), "the attempt is spent, as after any crash");
}

#[test]
fn no_attempt_runs_past_the_deadline() {
    let s = Setup::new();
    s.enqueue("a", 5, 1500);
    let enqueued = Instant::now();
    let child = s.work("echo slow >&2; sleep 10\n", &["--timeout", "5s", "--lease", "6s", "--until-idle"]);
    let (status, log) = finish(child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{log}");
    // Killed at the deadline (1.5 s), not at the 5 s timeout.
    assert!(enqueued.elapsed() < Duration::from_millis(4000), "{:?}\n{log}", enqueued.elapsed());
    let job = s.job("a");
    assert_eq!((job.status, job.dead_reason, job.attempts), (Status::Dead, Some(DeadReason::Deadline), 1));
    let error = job.last_error.expect("an error");
    assert!(error.starts_with("timed out after ") && error.ends_with(": slow"), "{error}");
}

/// An ordinary failure (`exit 1`, what most commands exit on error) is recorded at once as
/// retryable with its standard error, and retried after the backoff, not after the lease.
#[test]
fn an_ordinary_failure_is_retryable_at_once() {
    let s = Setup::new();
    s.enqueue("a", 2, 60_000);
    let start = Instant::now();
    let child = s.work(
        "echo 'connection reset' >&2; exit 1\n",
        &[
            "--lease",
            "5s",
            "--timeout",
            "2s",
            "--backoff-base",
            "10ms",
            "--backoff-cap",
            "10ms",
            "--until-idle",
        ],
    );
    let (status, log) = finish(child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{log}");
    // Both attempts recorded, neither waiting out its 5 s lease.
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}\n{log}", start.elapsed());
    let job = s.job("a");
    assert_eq!((job.status, job.dead_reason, job.attempts), (Status::Dead, Some(DeadReason::Exhausted), 2));
    let error = job.last_error.expect("an error");
    assert!(error.starts_with("exit 1 (retryable)") && error.ends_with(": connection reset"), "{error}");
}

/// An exit status listed as unknown (`--exit-unknown`) records nothing: the job waits for
/// its lease, as after a crash.
#[test]
fn an_unclassified_exit_waits_for_the_lease() {
    let s = Setup::new();
    s.enqueue("a", 2, 60_000);
    let start = Instant::now();
    let child = s.work(
        "echo 'no such table' >&2; exit 3\n",
        &["--lease", "1200ms", "--timeout", "200ms", "--until-idle", "--exit-unknown", "3"],
    );
    let (status, log) = finish(child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{log}");
    // Two attempts, each waiting out its 1200 ms lease: the second claim and the final reap.
    assert!(start.elapsed() >= Duration::from_millis(2400), "{:?}", start.elapsed());
    assert_eq!(log.matches("outcome=\"unclassified\"").count(), 2, "{log}");
    let job = s.job("a");
    assert_eq!((job.status, job.dead_reason, job.attempts), (Status::Dead, Some(DeadReason::Exhausted), 2));
    assert!(
        job.last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("exit 3 (unclassified)") && e.ends_with("no such table"))
    );
}

/// A command the shell cannot run — not found (127), not executable (126) — is the worker's
/// configuration, not the job's: every job would fail the same way and spend its budget. The
/// attempt is recorded at once (not at its lease's end) as retryable with the shell's
/// reason, the worker logs an error, claims nothing more, and exits 78 (`EX_CONFIG`).
#[test]
fn a_command_the_shell_cannot_run_stops_the_worker_at_once_with_exit_78() {
    let dir = tempfile::tempdir().expect("tempdir");
    let not_executable = dir.path().join("deliver.sh");
    fs::write(&not_executable, "exit 0\n").expect("a script without its execute bit");
    let commands = [
        ("./no-such-command".to_owned(), "command not found (exit 127)"),
        (not_executable.display().to_string(), "command not executable (exit 126)"),
    ];
    for (command, said) in &commands {
        let s = Setup::new();
        let (a, b) = ("a", "b");
        s.enqueue(a, 5, 600_000);
        s.enqueue(b, 5, 600_000);
        let start = Instant::now();
        // No --until-idle, and a lease of a minute: only the stop can end this run in time.
        let child = spawn_logged(
            Command::new(BIN)
                .args(["work", "--worker", "w1", "--concurrency", "1", "--lease", "1m", "--exec", command])
                .env("RETRYQ_DB", &s.db),
        );
        let (status, log) = finish(child, Duration::from_secs(10));
        assert!(start.elapsed() < Duration::from_secs(5), "{:?}: {log}", start.elapsed());
        assert_eq!(status.code(), Some(78), "{command}: {log}");
        let error_line = log.lines().find(|l| l.contains("ERROR")).unwrap_or_else(|| panic!("{log}"));
        assert!(error_line.contains("cannot run any job") && error_line.contains(said), "{error_line}");
        assert!(log.contains(&format!("retryq: error: --exec: the command {command:?}: {said}")), "{log}");
        assert!(log.contains("claimed nothing more") && log.contains("(exit 78)"), "{log}");
        // The attempt is spent, recorded as retryable with the shell's reason: the job waits
        // pending for a worker that can run it, its budget otherwise whole.
        let job = s.job(a);
        assert_eq!((job.status, job.attempts, job.dead_reason), (Status::Pending, 1, None), "{log}");
        let error = job.last_error.expect("the shell's reason");
        assert!(error.starts_with(said), "{error}");
        assert!(log.contains("outcome=\"retry\""), "recorded, not left to its lease: {log}");
        let other = s.job(b);
        assert_eq!((other.status, other.attempts), (Status::Pending, 0), "nothing more was claimed");
    }
}

/// `--exec` is run by `/bin/sh -c` — named by its path, so that the docs and `--help` can
/// say which shell it is (dash on Debian) and how to get bash instead.
#[test]
fn the_exec_command_runs_under_bin_sh_and_help_says_so() {
    let s = Setup::new();
    s.enqueue("a", 1, 60_000);
    let seen = s.path("shell");
    let exec = format!("echo \"$0\" > {}", seen.display());
    let (code, log) = run_work(&s, &["--exec", &exec, "--until-idle"]);
    assert_eq!(code, Some(0), "{log}");
    assert_eq!(fs::read_to_string(&seen).expect("the command ran"), "/bin/sh\n");
    let out = Command::new(BIN).args(["work", "--help"]).output().expect("help");
    let help = String::from_utf8_lossy(&out.stdout);
    let exec_help = help.lines().find(|l| l.trim_start().starts_with("--exec")).expect("--exec in help");
    for text in ["/bin/sh -c", "dash on Debian", "$RANDOM", "no arrays", "bash -c", "#! line"] {
        assert!(exec_help.contains(text), "--exec's help lacks {text:?}: {exec_help}");
    }
}

#[test]
fn a_lease_too_short_to_renew_is_refused_and_one_shorter_than_the_timeout_is_not() {
    let s = Setup::new();
    // Renewed every third of itself: below 300 ms a renewal has too little time to commit.
    let exec = ["--exec", "true", "--until-idle"];
    let (code, err) = run_work(&s, &[&exec[..], &["--lease", "299ms"]].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--lease") && err.contains("300 ms") && err.contains("every third"), "{err}");
    assert!(!s.db.exists(), "a refused worker created the database");
    let url = ["--url", "http://127.0.0.1:9/", "--until-idle"];
    let (code, err) = run_work(&s, &[&url[..], &["--lease", "100ms"]].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--lease"), "{err}");
    // The lease need not hold the timeout any more: heartbeats keep it while the attempt runs.
    let (code, err) = run_work(&s, &[&exec[..], &["--lease", "300ms", "--timeout", "1m"]].concat());
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn a_process_that_left_the_session_is_killed_with_its_command() {
    let s = Setup::new();
    s.enqueue("a", 1, 60_000);
    // `setsid` takes the sleep out of the command's process group and session; it keeps
    // the standard error open for 5 s. The command exits once it is out. The watchdog is the
    // sleep's subreaper and kills it with the command, so the stream closes at once and the
    // record is not held up (it once waited out the 500 ms grace, the sleep living on).
    let held = s.path("held");
    let script = format!(
        "setsid sh -c 'echo $$ > {held}; exec sleep 5' &\n\
         while [ ! -s {held} ]; do sleep 0.01; done\n\
         echo before >&2; exit 65\n",
        held = held.display()
    );
    let child = s.work(&script, &["--lease", "2s", "--timeout", "1s", "--until-idle"]);
    let (status, log) = finish(child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{log}");
    let job = s.job("a");
    assert_eq!((job.status, job.dead_reason), (Status::Dead, Some(DeadReason::Permanent)), "{log}");
    let error = job.last_error.expect("an error");
    assert!(error.starts_with("exit 65 (permanent)") && error.ends_with(": before"), "{error}");
    let history = s.history("a");
    let claimed = history.iter().find(|h| h.to == Status::Leased).expect("claim").at;
    let took = history.last().expect("entries").at - claimed;
    assert!(took < 500, "recorded {took} ms after the claim");
    let pid = fs::read_to_string(&held).expect("pid");
    let stat = fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
    assert!(
        stat.is_err() || stat.is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z'))),
        "the process that left the session outlived its command"
    );
}

#[test]
fn a_database_deleted_under_the_worker_stops_it_with_exit_1() {
    let s = Setup::new();
    s.enqueue("a", 1, 60_000);
    let child = s.work("exit 0\n", &[]);
    wait_until("the job was not done", Duration::from_secs(10), || s.job("a").status == Status::Done);
    // The operator removes the file and starts over: a new file of that name gets a job.
    for suffix in ["", "-wal", "-shm"] {
        let _ = fs::remove_file(format!("{}{suffix}", s.db.display()));
    }
    s.enqueue("b", 1, 60_000);
    let (status, log) = finish(child, Duration::from_secs(5));
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(log.contains("the database file") && log.contains("deleted"), "{log}");
    assert!(log.contains(&s.db.display().to_string()), "{log}");
    // The new file's job was left for a worker on the new file.
    assert_eq!((s.job("b").status, s.job("b").attempts), (Status::Pending, 0));
}

#[test]
fn a_write_past_the_file_size_limit_is_a_clear_error_not_a_signal() {
    let s = Setup::new();
    {
        let mut q = Queue::open(&s.db).expect("open");
        let now = retryq_worker::now_ms().expect("clock");
        let payload = "x".repeat(2000);
        for i in 0..40 {
            let id = format!("job-{i}");
            q.enqueue(&NewJob {
                id: &id,
                payload: &payload,
                max_attempts: 3,
                deadline: now + 600_000,
                now,
                ..NewJob::default()
            })
            .expect("enqueue");
        }
    }
    // 100 blocks of 512 bytes: the log of the worker's writes soon passes it.
    let script = format!("ulimit -f 100 && exec {BIN} work --worker w1 --exec 'exit 0' --until-idle");
    let out = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .env("RETRYQ_DB", &s.db)
        .stdin(Stdio::null())
        .output()
        .expect("sh");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?}: {err}", out.status);
    assert!(err.contains("file size limit") && err.contains("EFBIG"), "{err}");
    assert!(err.contains(&s.db.display().to_string()), "{err}");
    // What was recorded is whole: the audit is clean.
    assert!(s.read().audit().expect("audit").is_clean());
}
