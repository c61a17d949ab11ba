//! Heartbeats, as a process sees them (SPEC 3.12): `retryq work` renews the lease of an
//! attempt that runs ten times longer than the lease, so that a worker killed with SIGKILL
//! in the middle of it gives the job up about one lease after the kill — not one
//! attempt-length after the claim — and a heartbeat the queue refuses stops the command
//! without anything recorded.

mod common;

use std::fs::{self, File};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{command, enqueue, fresh, now_ms, read_only, wait, wait_until};
use retryq::{Completion, Job, Lease, Outcome, Queue, Status};

/// The lease every worker here runs with: a heartbeat every 200 ms.
const LEASE_MS: u64 = 600;
/// How long the job's command runs: ten leases.
const JOB_MS: u64 = 6_000;

/// `retryq work` as `w1` on `db`, running `exec` inline (so that `$$` is the shell the worker
/// started) with a 600 ms lease, logging at info to `log`.
fn worker(db: &Path, exec: &str, log: &Path, flags: &[&str]) -> Child {
    let lease = format!("{LEASE_MS}ms");
    let args = [&["work", "--worker", "w1", "--exec", exec, "--lease", &lease][..], flags].concat();
    command(db, &args)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(File::create(log).expect("log file"))
        .spawn()
        .expect("spawn worker")
}

fn job(db: &Path, id: &str) -> Job {
    read_only(db).get(id).expect("get").expect("job")
}

/// The process whose id `pid_file` holds, once the command has written it.
fn pid(pid_file: &Path) -> String {
    wait_until("the command did not start", Duration::from_secs(10), || {
        fs::read_to_string(pid_file).is_ok_and(|p| p.ends_with('\n'))
    });
    fs::read_to_string(pid_file).expect("pid").trim().to_owned()
}

/// Whether process `pid` runs (a zombie does not).
fn running(pid: &str) -> bool {
    fs::read_to_string(Path::new("/proc").join(pid).join("stat")).is_ok_and(|stat| !stat.contains(") Z"))
}

/// Kills what is left of the command's process group: its shell's own children are not the
/// worker's (nor the parent-death signal's) to end.
fn kill_group(pid: &str) {
    let _ = Command::new("kill").args(["-KILL", "--", &format!("-{pid}")]).status();
}

#[test]
fn a_worker_killed_mid_attempt_gives_the_job_up_one_lease_after_the_kill() {
    let (dir, db) = fresh("retryq-heartbeat-");
    enqueue(&db, "long", "p", 3, 120_000);
    let (pid_file, log) = (dir.path().join("pid"), dir.path().join("w1.log"));
    let exec = format!("echo $$ > {}; sleep {}; exit 0", pid_file.display(), JOB_MS / 1000);
    let mut w1 = worker(&db, &exec, &log, &[]);
    let shell = pid(&pid_file);
    let claim = job(&db, "long");
    assert_eq!((claim.status, claim.attempts), (Status::Leased, 1));
    let claimed_at = claim.claimed_at.expect("a claim time");
    let first_until = claim.available_at.expect("the claim's lease");
    assert_eq!(first_until, claimed_at + LEASE_MS);

    // The lease moves forward while the command runs, well past the claim's.
    wait_until("the lease was not renewed", Duration::from_secs(3), || {
        job(&db, "long").available_at.is_some_and(|until| until > first_until)
    });
    // Half the job's length after the claim, five leases on, the lease is still live.
    let half = claimed_at + JOB_MS / 2;
    thread::sleep(Duration::from_millis(half.saturating_sub(now_ms())));
    let held = job(&db, "long");
    let until = held.available_at.expect("a lease");
    assert_eq!((held.status, held.attempts), (Status::Leased, 1));
    assert!(until > now_ms() && until > first_until + 2 * LEASE_MS, "lease until {until} at {}", now_ms());

    let killed_at = now_ms();
    w1.kill().expect("SIGKILL");
    wait(&mut w1, Duration::from_secs(5));
    let gone = Instant::now();
    while running(&shell) {
        assert!(gone.elapsed() < Duration::from_secs(2), "the command outlived its worker");
        thread::sleep(Duration::from_millis(10));
    }
    kill_group(&shell);

    // Another holder polls for the job: it comes free once the last renewed lease is over.
    let mut q = Queue::open(&db).expect("open");
    let start = Instant::now();
    let (reclaimed_at, second) = loop {
        let now = now_ms();
        if let Some(claimed) = q.claim("w2", now).expect("claim") {
            break (now, claimed);
        }
        assert!(start.elapsed() < Duration::from_secs(5), "the job was not claimable again");
        thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(second.attempt(), 2);
    assert!(
        reclaimed_at <= killed_at + LEASE_MS + 1_500,
        "reclaimed {} ms after the kill",
        reclaimed_at - killed_at
    );
    assert!(
        reclaimed_at < claimed_at + JOB_MS,
        "reclaimed only {} ms after the first claim",
        reclaimed_at - claimed_at
    );
    q.complete(&Completion::new(&Lease::new("w2", "long", 2), Outcome::Ok, now_ms(), 0.0)).expect("complete");
    let done = job(&db, "long");
    assert_eq!((done.status, done.attempts), (Status::Done, 2));
    let audit = command(&db, &["audit"]).output().expect("audit");
    assert!(audit.status.success(), "{}", String::from_utf8_lossy(&audit.stdout));
    let log = fs::read_to_string(&log).expect("log");
    assert!(!log.contains("outcome="), "attempt 1 was never recorded: {log}");
}

#[test]
fn a_refused_heartbeat_kills_the_command_and_records_nothing() {
    let (dir, db) = fresh("retryq-heartbeat-");
    enqueue(&db, "a", "p", 3, 120_000);
    let (pid_file, log) = (dir.path().join("pid"), dir.path().join("w1.log"));
    let exec = format!("echo $$ > {}; sleep 30; exit 0", pid_file.display());
    let mut w1 = worker(&db, &exec, &log, &["--until-idle"]);
    let shell = pid(&pid_file);

    // A holder whose clock runs 10 s ahead sees the lease over and claims attempt 2: the
    // lease is not w1's any more, and its next heartbeat says so (lease_lost).
    let ahead = || now_ms() + 10_000;
    let mut q = Queue::open(&db).expect("open");
    let second = q.claim("w2", ahead()).expect("claim").expect("the lease is over 10 s ahead");
    assert_eq!(second.attempt(), 2);
    let refused = Instant::now();
    while running(&shell) {
        assert!(refused.elapsed() < Duration::from_secs(2), "the command ran on after a refused heartbeat");
        thread::sleep(Duration::from_millis(10));
    }
    kill_group(&shell);
    let entries = q.history("a").expect("history").len();

    q.complete(&Completion::new(&Lease::new("w2", "a", 2), Outcome::Ok, ahead(), 0.0)).expect("complete");
    let status = wait(&mut w1, Duration::from_secs(10));
    let log = fs::read_to_string(&log).expect("log");
    assert_eq!(status.code(), Some(0), "{log}");
    // Nothing of attempt 1 was written after w2's claim: only w2's outcome.
    assert_eq!(q.history("a").expect("history").len(), entries + 1);
    let a = job(&db, "a");
    assert_eq!((a.status, a.attempts, a.owner), (Status::Done, 2, None));
    let warned = log
        .lines()
        .find(|l| l.contains("attempt abandoned"))
        .unwrap_or_else(|| panic!("no line says the attempt was abandoned: {log}"));
    assert!(
        warned.contains("WARN")
            && warned.contains("job=a")
            && warned.contains("attempt=1")
            && warned.contains("reason=\"lease_lost\""),
        "{warned}"
    );
    assert!(log.contains("abandoned=1") && log.contains("unrecorded=0"), "{log}");
}
