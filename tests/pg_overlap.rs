//! Execution on PostgreSQL: no two attempts of a job run at once through killed and stopped
//! workers and killed watchdogs (`retryq_conformance::overlap`, on the tests' throwaway
//! cluster), nor through a forward step of the server's clock, on a server of its own run
//! under libfaketime; a worker stopped while it holds the claims' turn holds up the rest of
//! the fleet for a bounded time; a lock held past the lock timeout is logged with its holder
//! and waited out, never fatal; SIGTERM ends a worker whose claim waits for a lock.
//!
//! Without PostgreSQL installed they skip loudly (and fail under CI); the clock step also
//! needs libfaketime (Debian's `faketime`, which `.ci/run` installs).

mod common;
#[path = "harness/overlap.rs"]
mod overlap;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{BIN, now_ms};
use overlap::{Store, overlap_run};
use retryq::{NewJob, PgQueue};
use retryq_pgtest::{Cluster, Unavailable};

/// The turn's key (`impl/src/pg/turn.rs`): the advisory lock claims take.
const TURN: i64 = retryq::APPLICATION_ID + 1;

/// One test at a time: each measures times that two cores shared with the others would
/// stretch.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn seed() -> u64 {
    std::env::var("RETRYQ_OVERLAP_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random)
}

fn client(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).expect("connect")
}

fn enqueue_all(url: &str, ids: &[String], payload: &str) {
    let mut q = PgQueue::connect(url).expect("connect");
    let now = now_ms();
    let jobs: Vec<NewJob<'_>> = ids
        .iter()
        .map(|id| NewJob { id, payload, max_attempts: 5, deadline: now + 600_000, now, ..NewJob::default() })
        .collect();
    for result in q.enqueue_many(&jobs).expect("enqueue") {
        result.expect("enqueued");
    }
}

/// `retryq work` as `name` on `url`, running `exec` in `dir`, its log in `dir/NAME.log`.
fn worker(dir: &Path, url: &str, name: &str, exec: &str, flags: &[&str]) -> Child {
    let stderr = fs::File::create(dir.join(format!("{name}.log"))).expect("log");
    Command::new(BIN)
        .current_dir(dir)
        .args(["work", "--worker", name, "--exec", exec, "--until-idle"])
        .args(flags)
        .env("RETRYQ_DB", url)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("worker")
}

fn signal(pid: u32, name: &str) {
    let _ = Command::new("kill").args([&format!("-{name}"), &pid.to_string()]).status();
}

fn wait_exit(child: &mut Child, within: Duration, what: &str) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        assert!(start.elapsed() < within, "{what}: still running after {within:?}");
        thread::sleep(Duration::from_millis(10));
    }
}

fn audit_clean(url: &str) {
    let out = Command::new(BIN).args(["audit", "--db", url]).output().expect("audit");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && report.contains("audit: clean"), "audit:\n{report}");
}

#[test]
fn no_two_attempts_of_a_job_run_at_once_on_postgres() {
    let _serial = one_at_a_time();
    let Some(url) = retryq_pgtest::database("no_two_attempts_of_a_job_run_at_once_on_postgres") else {
        return;
    };
    overlap_run(seed(), Store::Postgres, Some(&url));
}

/// Whether worker `name` has a session on the database (they are named `NAME.…`).
fn connected(admin: &mut postgres::Client, name: &str) -> bool {
    sessions(admin, name, false)
}

/// Whether a session of worker `name` holds the claims' turn: whichever of its sessions
/// (the claims', the committer's, the listener's) it is, not the one first connected.
fn holds_turn(admin: &mut postgres::Client, name: &str) -> bool {
    sessions(admin, name, true)
}

/// Whether worker `name` has a session on the database; with `turn`, one holding the turn.
fn sessions(admin: &mut postgres::Client, name: &str, turn: bool) -> bool {
    admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity a WHERE a.datname = current_database() \
             AND a.application_name LIKE $1 AND (NOT $2 OR a.pid IN (SELECT l.pid FROM pg_locks l \
             WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid = $3::int8::oid \
             AND l.objsubid = 1))",
            &[&format!("{name}.%"), &turn, &TURN],
        )
        .map(|row| row.get::<_, i64>(0) > 0)
        .expect("pg_stat_activity")
}

/// One of three workers is stopped (SIGSTOP) at a moment it holds the claims' turn, found by
/// stopping it again and again until `pg_locks` shows it holding the turn. The others' claims
/// wait for it: each fails after the lock timeout (2 s), logs SQLSTATE 55P03 and the
/// holder's name, and tries again; the server ends the stopped session once it has idled
/// in its transaction for 5 s, and the rest of the fleet claims again. The stopped worker,
/// resumed, reconnects and carries on; no worker exits with an error.
#[test]
fn the_fleet_resumes_claiming_when_a_worker_stalls_holding_the_turn() {
    let _serial = one_at_a_time();
    let Some(url) =
        retryq_pgtest::database("the_fleet_resumes_claiming_when_a_worker_stalls_holding_the_turn")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("starts.log");
    fs::write(&log, "").expect("log");
    let ids: Vec<String> = (0..4000).map(|n| format!("j{n:05}")).collect();
    enqueue_all(&url, &ids, "p");
    let exec = format!("echo \"$(date +%s%N)\" >> {}", log.display());
    let flags = ["--concurrency", "2"];
    let mut workers: Vec<Child> =
        ["w0", "w1", "w2"].iter().map(|n| worker(dir.path(), &url, n, &exec, &flags)).collect();
    let mut admin = client(&url);
    let start = Instant::now();
    while !connected(&mut admin, "w0") {
        assert!(start.elapsed() < Duration::from_secs(10), "w0 never connected");
        thread::sleep(Duration::from_millis(10));
    }
    // Stop w0 until it is caught holding the turn.
    let pid = workers[0].id();
    let mut tries: u64 = 0;
    let stalled_at = loop {
        tries += 1;
        assert!(tries < 2000, "w0 was never caught holding the turn");
        signal(pid, "STOP");
        thread::sleep(Duration::from_millis(3));
        if holds_turn(&mut admin, "w0") {
            break now_ms();
        }
        signal(pid, "CONT");
        thread::sleep(Duration::from_millis(tries % 7));
    };
    // The first command started by a claim made after the stall: any start 300 ms past it
    // (the attempts claimed before it start within milliseconds).
    let mut resumed_ms = None;
    while Instant::now() < start + Duration::from_secs(60) {
        thread::sleep(Duration::from_millis(20));
        let text = fs::read_to_string(&log).expect("log");
        let after = text
            .lines()
            .filter_map(|l| l.trim().parse::<u128>().ok())
            .map(|ns| (ns / 1_000_000) as u64)
            .filter(|&ms| ms > stalled_at + 300)
            .min();
        if let Some(ms) = after {
            resumed_ms = Some(ms - stalled_at);
            break;
        }
    }
    signal(pid, "CONT");
    let resumed_ms = resumed_ms.expect("the fleet never claimed again");
    eprintln!(
        "pg stall: w0 stopped holding the turn after {tries} tries; the fleet claimed again {resumed_ms} ms later"
    );
    for (n, child) in workers.iter_mut().enumerate() {
        let status = wait_exit(child, Duration::from_secs(90), "a worker");
        assert!(status.success(), "w{n} exited with {status}");
    }
    let logs: Vec<String> =
        (0..3).map(|n| fs::read_to_string(dir.path().join(format!("w{n}.log"))).expect("log")).collect();
    let waited = logs[1..].iter().flat_map(|l| l.lines()).find(|l| l.contains("SQLSTATE 55P03"));
    let waited = waited.expect("no worker logged the lock timeout");
    assert!(waited.contains("w0."), "the holder is not named: {waited}");
    assert!(logs[0].contains("the store answers again"), "w0 did not come back:\n{}", logs[0]);
    let stats = PgQueue::connect_existing(&url).expect("connect").stats(now_ms()).expect("stats");
    assert_eq!((stats.pending, stats.leased, stats.done), (0, 0, ids.len() as u64), "{stats:?}");
    audit_clean(&url);
    // Within the idle-in-transaction timeout and one retry of the claim after it; well
    // under the 30 s lease.
    let bound = PgQueue::IDLE_IN_TRANSACTION_TIMEOUT + PgQueue::LOCK_TIMEOUT;
    assert!(u128::from(resumed_ms) <= bound.as_millis(), "{resumed_ms} ms, past {bound:?}");
}

/// An operator's `SELECT … FOR UPDATE` on the one due job, held 3 s: the worker's claim waits
/// 2 s for the row, fails with 55P03, logs it with the SQLSTATE, the server's message and the
/// operator's session, and claims the job once the row is free. Before, every worker exited 1
/// logging only `storage: db error`.
#[test]
fn a_row_lock_past_the_lock_timeout_is_logged_and_waited_out() {
    let _serial = one_at_a_time();
    let Some(url) = retryq_pgtest::database("a_row_lock_past_the_lock_timeout_is_logged_and_waited_out")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    enqueue_all(&url, &["due".to_owned()], "p");
    let mut operator = client(&url);
    operator.batch_execute("SET application_name = 'operator'").expect("name");
    let mut tx = operator.transaction().expect("begin");
    tx.query("SELECT * FROM jobs WHERE id = 'due' FOR UPDATE", &[]).expect("lock the row");
    let mut w = worker(dir.path(), &url, "w", "true", &[]);
    thread::sleep(Duration::from_secs(3));
    tx.commit().expect("commit");
    let status = wait_exit(&mut w, Duration::from_secs(20), "the worker");
    let log = fs::read_to_string(dir.path().join("w.log")).expect("log");
    assert!(status.success(), "{status}:\n{log}");
    let line =
        log.lines().find(|l| l.contains("SQLSTATE 55P03")).unwrap_or_else(|| panic!("no 55P03:\n{log}"));
    assert!(line.contains("lock timeout") && line.contains("operator (pid"), "{line}");
    assert!(log.contains("outcome=\"done\""), "{log}");
}

/// A claim waiting for the turn (held by this test's session) is cancelled by the worker's
/// first SIGTERM: the worker exits 0 at once, not after the 2 s lock timeout.
#[test]
fn sigterm_ends_a_worker_whose_claim_waits_for_a_lock() {
    let _serial = one_at_a_time();
    let Some(url) = retryq_pgtest::database("sigterm_ends_a_worker_whose_claim_waits_for_a_lock") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    enqueue_all(&url, &["a".to_owned()], "p");
    let mut holder = client(&url);
    holder.query_one("SELECT pg_advisory_lock($1)", &[&TURN]).expect("take the turn");
    let mut w = worker(dir.path(), &url, "w", "true", &[]);
    let mut admin = client(&url);
    let start = Instant::now();
    loop {
        let waiting: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'w.%' AND wait_event_type = 'Lock'",
                &[],
            )
            .expect("pg_stat_activity")
            .get(0);
        if waiting > 0 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "the worker never waited for the turn");
        thread::sleep(Duration::from_millis(10));
    }
    let asked = Instant::now();
    signal(w.id(), "TERM");
    let status = wait_exit(&mut w, Duration::from_secs(10), "the worker after SIGTERM");
    let took = asked.elapsed();
    let log = fs::read_to_string(dir.path().join("w.log")).expect("log");
    assert!(status.success(), "{status}:\n{log}");
    assert!(took < Duration::from_millis(1000), "exited {took:?} after SIGTERM:\n{log}");
    assert!(log.contains("SQLSTATE 57014"), "the statement was not cancelled:\n{log}");
    eprintln!("pg sigterm: a worker waiting for the turn exited {} ms after SIGTERM", took.as_millis());
}

/// Where libfaketime is, if installed.
fn libfaketime() -> Option<&'static str> {
    [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    ]
    .into_iter()
    .find(|path| Path::new(path).exists())
}

/// `--clock server` on a server whose clock is stepped 40 s forward (libfaketime, its offset
/// read from a file at every reading): every lease ends at once for the other workers. The
/// holder learns of it at its next reading of the server's clock, at most a second later
/// (the store thread reads it every second while attempts are in flight), and cuts its
/// attempts; a worker that sees the server's clock jump (or reads it for the first time)
/// holds the attempts it takes over until every holder has read it too. Measured on the
/// commands' own log: how long each old attempt went on after the new attempt of its job
/// started — nothing, with the second worker idle through the step or started right after it.
/// (Before the hold, the holder's commands ran up to a second beside the new attempts.) How
/// soon the holder cut its attempts is printed, not asserted: a time on a shared host, and
/// the overlap says whether it was soon enough.
fn a_forward_step_of_the_servers_clock_overlaps_nothing(second_after_step: bool) {
    let _serial = one_at_a_time();
    let Some(faketime) = libfaketime() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "libfaketime is not installed; under CI it must be (.ci/run installs faketime)"
        );
        eprintln!("SKIPPED the server clock's step: no libfaketime");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let step = dir.path().join("faketime");
    fs::write(&step, "+0\n").expect("faketime file");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
    fs::set_permissions(&step, fs::Permissions::from_mode(0o644)).expect("chmod");
    let env = [
        ("LD_PRELOAD", faketime),
        ("FAKETIME_TIMESTAMP_FILE", step.to_str().expect("UTF-8 path")),
        ("FAKETIME_NO_CACHE", "1"),
        ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
    ];
    let cluster = match Cluster::start_with_env(false, &env) {
        Ok(cluster) => cluster,
        Err(Unavailable::NotInstalled) => {
            assert!(
                retryq_pgtest::database("a_forward_step_of_the_servers_clock_overlaps_nothing").is_none()
            );
            return;
        }
        Err(Unavailable::Failed(why)) => panic!("PostgreSQL did not start under libfaketime: {why}"),
    };
    let url = cluster.create_database().expect("database");
    let deliver = dir.path().join("deliver.sh");
    fs::write(
        &deliver,
        "#!/bin/sh\nsay() { echo \"$1 $RETRYQ_JOB_ID $RETRYQ_ATTEMPT $(date +%s%N)\" >> \"$STEP_LOG\"; }\nsay start\n\
         i=0; while [ $i -lt 60 ]; do sleep 0.1; say tick; i=$((i+1)); done\nsay end\n",
    )
    .expect("deliver.sh");
    fs::set_permissions(&deliver, fs::Permissions::from_mode(0o755)).expect("chmod");
    let log = dir.path().join("attempts.log");
    fs::write(&log, "").expect("log");
    let ids: Vec<String> = (0..4).map(|n| format!("job-{n}")).collect();
    let server_before = PgQueue::connect(&url).expect("connect").server_now().expect("server clock");
    enqueue_all(&url, &ids, "p");
    let spawn = |name: &str| {
        let stderr = fs::File::create(dir.path().join(format!("{name}.log"))).expect("log");
        // RETRYQ_OVERLAP_BIN: another build's workers, for comparison.
        let bin = std::env::var("RETRYQ_OVERLAP_BIN").unwrap_or_else(|_| BIN.to_owned());
        Command::new(bin)
            .current_dir(dir.path())
            .args(["work", "--worker", name, "--exec", "./deliver.sh", "--concurrency", "4", "--until-idle"])
            .env("RETRYQ_DB", &url)
            .env("STEP_LOG", &log)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("worker")
    };
    // w1 claims all four (30 s lease, the default); then w2 starts, with nothing to claim —
    // or, the worst case for the holder, only once the clock has stepped.
    let mut w1 = spawn("w1");
    let start = Instant::now();
    while fs::read_to_string(&log).expect("log").matches("start").count() < 4 {
        assert!(start.elapsed() < Duration::from_secs(10), "w1 did not start the four jobs");
        thread::sleep(Duration::from_millis(20));
    }
    let mut w2 = (!second_after_step).then(|| spawn("w2"));
    thread::sleep(Duration::from_millis(1500));
    let stepped_ns = u128::from(now_ms()) * 1_000_000;
    fs::write(&step, "+40s\n").expect("step the server's clock");
    let w2 = w2.get_or_insert_with(|| spawn("w2"));
    let server_after = PgQueue::connect_existing(&url).expect("connect").server_now().expect("server clock");
    assert!(
        server_after >= server_before + 40_000,
        "the server's clock did not step: {server_before} → {server_after}"
    );
    for (name, child) in [("w1", &mut w1), ("w2", w2)] {
        let status = wait_exit(child, Duration::from_secs(60), name);
        assert!(status.success(), "{name} exited with {status}");
    }
    let text = fs::read_to_string(&log).expect("log");
    // Per job: the time attempt 2 started, and the last line attempt 1 wrote.
    let mut worst_ms: f64 = 0.0;
    let mut cut_ms: f64 = 0.0;
    let mut gap_ms = f64::INFINITY;
    let mut measured = 0;
    for id in &ids {
        let time = |what: Option<&str>, attempt: &str| {
            text.lines()
                .filter(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    w.len() == 4 && w[1] == id && w[2] == attempt && what.is_none_or(|what| w[0] == what)
                })
                .filter_map(|l| l.split_whitespace().nth(3).and_then(|t| t.parse::<u128>().ok()))
                .collect::<Vec<_>>()
        };
        let Some(&second) = time(Some("start"), "2").first() else { continue };
        let last_of_first = time(None, "1").into_iter().max().expect("attempt 1 ran");
        cut_ms = cut_ms.max(last_of_first.saturating_sub(stepped_ns) as f64 / 1e6);
        let overlap = (last_of_first.saturating_sub(second)) as f64 / 1e6;
        worst_ms = worst_ms.max(overlap);
        gap_ms = gap_ms.min(second.saturating_sub(last_of_first) as f64 / 1e6);
        measured += 1;
    }
    let when = if second_after_step { "started after the step" } else { "idle through the step" };
    eprintln!(
        "pg clock step: +40 s on the server, the second worker {when}; {measured} jobs claimed again; the \
         holder's last command line {cut_ms:.0} ms after the step; longest overlap {worst_ms:.0} ms; the \
         closest new attempt started {gap_ms:.0} ms after its old one's last line"
    );
    assert!(measured > 0, "no job was claimed again after the step:\n{text}");
    assert_eq!(worst_ms, 0.0, "an old attempt ran {worst_ms:.0} ms beside the new one:\n{text}");
    audit_clean(&url);
}

#[test]
fn a_forward_step_of_the_servers_clock_overlaps_nothing_with_a_worker_idle_through_it() {
    a_forward_step_of_the_servers_clock_overlaps_nothing(false);
}

#[test]
fn a_forward_step_of_the_servers_clock_overlaps_nothing_with_a_worker_started_after_it() {
    a_forward_step_of_the_servers_clock_overlaps_nothing(true);
}
