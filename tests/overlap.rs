//! No two attempts of a job run at once, on a SQLite file: workers SIGKILLed, SIGSTOPped past
//! their lease and resumed, and the wall clock stepped forward under them, while their
//! commands (`--exec './deliver.sh'`, a script run by dash) log every tick; see
//! `retryq_conformance::overlap` for what is checked (`retryq verify` runs it too). And a
//! killed worker's command dies with it in every form a shell command takes, not only
//! `exec prog`.
//!
//! `RETRYQ_OVERLAP_SEED=N` repeats a run; `RETRYQ_OVERLAP_BIN=PATH` runs another build's
//! workers (a build whose commands outlive their workers fails it).

mod common;
#[path = "harness/overlap.rs"]
mod overlap;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{BIN, enqueue};
use overlap::{Store, overlap_run};

fn seed() -> u64 {
    std::env::var("RETRYQ_OVERLAP_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random)
}

#[test]
fn no_two_attempts_of_a_job_run_at_once_through_kills_stops_and_clock_steps() {
    overlap_run(seed(), Store::Sqlite, None);
}

/// Whether process `pid` is still running (a zombie is not).
fn running(pid: &str) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// The nine forms of one command the issue tried: before the watchdog only `exec prog` died
/// with a worker killed by SIGKILL. Each runs under a worker of its own, which is killed once
/// the program has started; the program must be gone within half a second.
#[test]
fn a_worker_killed_with_sigkill_takes_its_command_along_in_every_form() {
    let dir = tempfile::tempdir().expect("tempdir");
    let prog = dir.path().join("prog");
    fs::write(&prog, "#!/bin/sh\necho $$ > \"$PID_FILE\"\nwhile :; do sleep 0.1; done\n").expect("prog");
    fs::set_permissions(&prog, fs::Permissions::from_mode(0o755)).expect("chmod");
    let forms = [
        "prog",
        "cd /tmp && prog",
        "set -e; prog",
        "prog; echo done",
        "prog | cat",
        "if true; then prog; fi",
        "timeout 100 prog",
        "bash -c prog",
        "exec prog",
    ];
    let mut workers = Vec::new();
    for (n, form) in forms.iter().enumerate() {
        let db = dir.path().join(format!("q{n}.db"));
        enqueue(&db, "a", "p", 1, 600_000);
        let pid_file = dir.path().join(format!("pid{n}"));
        let path = format!("{}:{}", dir.path().display(), std::env::var("PATH").unwrap_or_default());
        let bin = std::env::var("RETRYQ_OVERLAP_BIN").unwrap_or_else(|_| BIN.to_owned());
        let child = Command::new(bin)
            .args(["work", "--worker", "w", "--exec", form, "--lease", "30s"])
            .arg("--db")
            .arg(&db)
            .env("PATH", path)
            .env("PID_FILE", &pid_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("worker");
        workers.push((form, child, pid_file));
    }
    let mut survivors = Vec::new();
    for (form, mut child, pid_file) in workers {
        let start = Instant::now();
        let pid = loop {
            if let Ok(pid) = fs::read_to_string(&pid_file)
                && !pid.trim().is_empty()
            {
                break pid.trim().to_owned();
            }
            assert!(start.elapsed() < Duration::from_secs(10), "{form}: the program never started");
            thread::sleep(Duration::from_millis(10));
        };
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
        let killed = Instant::now();
        while running(&pid) && killed.elapsed() < Duration::from_millis(500) {
            thread::sleep(Duration::from_millis(5));
        }
        if running(&pid) {
            survivors.push(*form);
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
        }
    }
    assert!(survivors.is_empty(), "these forms outlived their worker: {survivors:?}");
}
