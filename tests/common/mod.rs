//! What the tests of the `retryq` binary share: running it, temporary databases, the clock,
//! bounded waits for child processes, and the serve-demo receiver and URL workers of the
//! HTTP tests.
//!
//! Each test file is its own crate and uses only some of these, so the module allows dead
//! code rather than have every file that leaves one out warn about it.
#![allow(dead_code)]

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use retryq::{NewJob, OpenOptions, Queue};
use serde_json::Value;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_retryq");

/// Proxy variables the HTTP client would honour: removed from a worker's environment so that
/// its requests to 127.0.0.1 go straight there whatever the machine is configured with.
pub const PROXIES: [&str; 6] =
    ["ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"];

/// Short backoff (10 ms doubling to 50), a 5 s lease and a 2 s timeout: retries in a test
/// take milliseconds, not the defaults' seconds.
pub const FAST: [&str; 8] =
    ["--backoff-base", "10ms", "--backoff-cap", "50ms", "--lease", "5s", "--timeout", "2s"];

/// What a finished run of the binary left: its exit code and both streams, as text.
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// `out` as a [`Ran`].
pub fn ran(out: Output) -> Ran {
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The binary with `args` on `db` (as `RETRYQ_DB`), no log filter from the environment and
/// nothing on standard input.
pub fn command(db: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command.args(args).env("RETRYQ_DB", db).env_remove("RUST_LOG").stdin(Stdio::null());
    command
}

/// A fresh temporary directory named after `prefix`, and the path `q.db` in it (not created).
pub fn fresh(prefix: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new().prefix(prefix).tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    (dir, db)
}

/// The names in `dir`, sorted: what a command left beside the database.
pub fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The wall clock in Unix milliseconds, as the worker reads it.
pub fn now_ms() -> u64 {
    retryq_worker::now_ms().expect("clock")
}

/// `db` opened for reading only: what a test inspects while workers may still write.
pub fn read_only(db: &Path) -> Queue {
    let options = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
    Queue::open_with(db, &options).expect("open read-only")
}

/// Enqueues `id` on `db` now, due at once, with a deadline `ttl_ms` from now; that deadline.
pub fn enqueue(db: &Path, id: &str, payload: &str, max_attempts: u64, ttl_ms: u64) -> u64 {
    let mut q = Queue::open(db).expect("open");
    let now = now_ms();
    q.enqueue(&NewJob { id, payload, max_attempts, deadline: now + ttl_ms, now, ..NewJob::default() })
        .expect("enqueue");
    now + ttl_ms
}

/// Sends `signal` (`TERM`, `INT`, …) to process `pid`.
pub fn kill(pid: u32, signal: &str) {
    let status = Command::new("kill").args([&format!("-{signal}"), &pid.to_string()]).status().expect("kill");
    assert!(status.success());
}

/// Waits for `child`, killing it and failing the test if it is still running after `within`.
pub fn wait(child: &mut Child, within: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if start.elapsed() > within {
            let _ = child.kill();
            panic!("pid {} did not exit within {within:?}", child.id());
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Starts `retryq serve-demo` on a free port with `flags`, its standard error to `stderr`;
/// the process, the rest of its standard output, and the URL it accepts orders at (from
/// its first line).
pub fn start_demo(flags: &[&str], stderr: Stdio) -> (Child, BufReader<ChildStdout>, String) {
    let mut child = Command::new(BIN)
        .args(["serve-demo", "--port", "0"])
        .args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("spawn serve-demo");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("first line");
    let first: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not listening: {line:?}"));
    let url = first["listening"].as_str().expect("listening").to_owned();
    (child, stdout, url)
}

/// `retryq work` as worker `w1` on `db`, posting to `urls`, with no proxy in its way; the
/// caller adds flags and standard streams.
pub fn url_worker(db: &Path, urls: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command.args(["work", "--worker", "w1"]).arg("--db").arg(db);
    for url in urls {
        command.args(["--url", url]);
    }
    for proxy in PROXIES {
        command.env_remove(proxy);
    }
    command
}

/// The binary with `args` and nothing else set, run to the end.
pub fn retryq(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("retryq runs")
}

/// A run's standard output, as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A run's standard error, as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every command that opens the database, readers and writers: what a refused or broken
/// file must be refused by, each in its own words.
pub fn db_commands() -> Vec<Vec<&'static str>> {
    vec![
        vec!["get", "a"],
        vec!["stats"],
        vec!["dead"],
        vec!["history", "a"],
        vec!["audit"],
        vec!["enqueue", "--id", "z", "--payload", "p", "--max-attempts", "1", "--ttl", "1m"],
        vec!["redrive", "--all-dead", "--add-attempts", "1", "--ttl", "1m"],
        vec!["work", "--worker", "w", "--exec", "true", "--until-idle"],
    ]
}

/// Polls `done` every 20 ms until it holds, failing the test with `what` after `within`.
pub fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < within, "{what}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// Spawns a worker `command` with `info` logging on a piped standard error (the test reads
/// its log) and nothing on standard input or output.
pub fn spawn_logged(command: &mut Command) -> Child {
    command
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn worker")
}

/// A running `retryq serve`, killed when dropped (a failed test leaves no server behind).
pub struct Serving {
    pub child: Child,
    /// The dashboard's base URL, `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `retryq serve` on `db` (a file or a PostgreSQL URL) on a free loopback port with
/// `flags`, once it listens (its first line names the address).
pub fn start_serve(db: &str, flags: &[&str]) -> Serving {
    let mut child = Command::new(BIN)
        .args(["serve", "--db", db])
        .args(if flags.contains(&"--listen") { &[][..] } else { &["--listen", "127.0.0.1:0"][..] })
        .args(flags)
        .env_remove("RETRYQ_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn serve");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("first line");
    let first: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not listening: {line:?}"));
    let url = first["listening"].as_str().expect("listening").trim_end_matches('/').to_owned();
    Serving { child, url }
}
