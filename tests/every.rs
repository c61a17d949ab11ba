//! `retryq work --every`: periodic jobs through the binary. Several workers on one file
//! enqueue each period's id once, with none skipped, also across a restart; a restart
//! enqueues the period under way and no backlog, on the worker's own (stepped) clock; a
//! conflict is logged as an error; and a wrong `--every` is a usage error that opens nothing.

mod common;

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{BIN, Ran, command, fresh, kill, now_ms, ran, read_only, wait, wait_until};
use retryq::{Queue, Status};
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// `retryq work --every tick=1s` as worker `name`, logging at info to `log`.
fn ticker(db: &Path, name: &str, log: &Path) -> Child {
    Command::new(BIN)
        .args(["work", "--worker", name, "--exec", "true", "--every", "tick=1s"])
        .arg("--db")
        .arg(db)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(log).expect("log"))
        .spawn()
        .expect("spawn worker")
}

/// SIGTERM to `child`, which must exit 0 within 10 s.
fn stop(child: &mut Child) {
    kill(child.id(), "TERM");
    let status = wait(child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "the worker did not exit 0 on SIGTERM");
}

/// The ids `retryq list` shows, every status.
fn listed(db: &Path) -> Vec<(String, Value)> {
    let r = ran(command(db, &["list", "--json", "--limit", "10000"]).output().expect("list"));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    r.stdout
        .lines()
        .map(|line| {
            let job: Value = serde_json::from_str(line).expect(line);
            (job["id"].as_str().expect("id").to_owned(), job)
        })
        .collect()
}

/// The start, in Unix seconds, that `id` (`tick@2026-12-02T03:00:00Z`) names; the test fails
/// for any other form.
fn start_of(id: &str) -> i64 {
    let stamp = id.strip_prefix("tick@").unwrap_or_else(|| panic!("{id:?} is not tick@<start>"));
    let at = OffsetDateTime::parse(stamp, &Rfc3339).unwrap_or_else(|e| panic!("{id:?}: {e}"));
    assert!(stamp.len() == 20 && stamp.ends_with('Z'), "{id:?}: not RFC 3339 UTC to the second");
    at.unix_timestamp()
}

fn text(path: &Path) -> String {
    fs::read_to_string(path).expect("log")
}

#[test]
fn three_workers_enqueue_each_period_once_and_a_restart_skips_none() {
    let (dir, db) = fresh("retryq-every-");
    drop(Queue::open(&db).expect("create"));
    let log = |n: &str| dir.path().join(format!("{n}.log"));
    let began = now_ms() / 1000;
    let mut workers: Vec<Child> = ["w1", "w2", "w3"].iter().map(|n| ticker(&db, n, &log(n))).collect();
    let ticks = || listed(&db).into_iter().filter(|(id, _)| id.starts_with("tick")).count();
    wait_until("no periodic job within 20 s", Duration::from_secs(20), || ticks() >= 3);
    // One worker stopped for over a period, then started again, while the others run.
    stop(&mut workers[0]);
    let stopped = now_ms() / 1000;
    thread::sleep(Duration::from_millis(1_500));
    let restarted = now_ms() / 1000;
    workers[0] = ticker(&db, "w1", &log("w1-again"));
    let since = Instant::now();
    wait_until("the restarted worker did not start", Duration::from_secs(20), || {
        text(&log("w1-again")).contains("worker started")
    });
    thread::sleep(Duration::from_millis(2_000).saturating_sub(since.elapsed()));
    for worker in &mut workers {
        stop(worker);
    }
    let ended = now_ms() / 1000;

    let jobs = listed(&db);
    let mut starts: Vec<i64> = jobs.iter().map(|(id, _)| start_of(id)).collect();
    starts.sort_unstable();
    // One job a period, with no gap and no duplicate, from the first workers' start to the
    // end, across the stop and the restart.
    assert!(starts.windows(2).all(|w| w[1] == w[0] + 1), "periods missing or twice: {starts:?}");
    let (first, last) = (starts[0], starts[starts.len() - 1]);
    assert!(
        first >= i64::try_from(began).expect("s") && last <= i64::try_from(ended).expect("s"),
        "{starts:?}"
    );
    assert!(
        first < i64::try_from(stopped).expect("s") && last > i64::try_from(restarted).expect("s"),
        "the run does not span the restart ({stopped}…{restarted}): {starts:?}"
    );
    let store = read_only(&db);
    for (id, _) in &jobs {
        assert_eq!(store.get(id).expect("get").expect("job").payload, "", "{id}");
        let history = store.history(id).expect("history");
        let enqueues = history.iter().filter(|h| h.from.is_none()).count();
        assert_eq!(enqueues, 1, "{id}: {history:?}");
    }
    // Each period was enqueued by exactly one worker: the others were answered `existing`,
    // which is no conflict.
    let logs: Vec<String> = ["w1", "w2", "w3", "w1-again"].iter().map(|n| text(&log(n))).collect();
    let enqueued: usize = logs.iter().map(|l| l.matches("enqueued a periodic job").count()).sum();
    assert_eq!(enqueued, jobs.len(), "{logs:#?}");
    for l in &logs {
        assert!(l.contains("enqueues a job each period") && l.contains("every=1s"), "{l}");
        assert!(!l.contains("conflict") && !l.contains("ERROR"), "{l}");
    }
}

/// A worker on a clock stepped by what `step` holds, working off what is due and exiting.
fn work_until_idle(db: &Path, step: &Path, flags: &[&str]) -> Ran {
    let mut command = command(db, &["work", "--worker", "w", "--exec", "true", "--until-idle"]);
    command.args(flags).env(retryq_worker::STEP_FILE_VAR, step).env("RUST_LOG", "info");
    ran(command.output().expect("work"))
}

/// The periodic job ids in `db`, sorted.
fn ids(db: &Path) -> Vec<String> {
    let mut ids: Vec<String> = listed(db).into_iter().map(|(id, _)| id).collect();
    ids.sort();
    ids
}

fn stamp(ms: u64) -> String {
    let at = OffsetDateTime::from_unix_timestamp(i64::try_from(ms / 1000).expect("s")).expect("time");
    let (date, time) = (at.date(), at.time());
    format!(
        "tick@{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        date.year(),
        u8::from(date.month()),
        date.day(),
        time.hour(),
        time.minute(),
        time.second()
    )
}

#[test]
fn a_restart_enqueues_the_period_under_way_and_no_backlog_on_the_workers_clock() {
    const HOUR: u64 = 3_600_000;
    let (dir, db) = fresh("retryq-every-clock-");
    let step: PathBuf = dir.path().join("step");
    // The worker's clock 10 s into an hour, whatever this machine's says.
    let real = now_ms();
    let first = (real / HOUR + 2) * HOUR;
    let mut offset = first + 10_000 - real;
    let mut run = |advance: u64| {
        offset += advance;
        fs::write(&step, offset.to_string()).expect("step");
        let r = work_until_idle(&db, &step, &["--every", "tick=1h", "--every-payload", "tick={}"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        r.stderr
    };
    run(0);
    assert_eq!(ids(&db), [stamp(first)]);
    // Again in the same period: nothing new.
    let log = run(0);
    assert!(!log.contains("enqueued a periodic job"), "{log}");
    // Stopped during one period, started during the next: that one.
    run(HOUR);
    // Down for three periods: the one under way, not the two that passed.
    run(3 * HOUR);
    assert_eq!(ids(&db), [stamp(first), stamp(first + HOUR), stamp(first + 4 * HOUR)]);
    let job = read_only(&db).get(&stamp(first + 4 * HOUR)).expect("get").expect("job");
    assert_eq!((job.status, job.payload.as_str(), job.deadline), (Status::Done, "{}", first + 5 * HOUR));
    assert_eq!(job.max_attempts, retryq_worker::DEFAULT_MAX_ATTEMPTS);

    // The next period's id already holds another payload: a worker configured differently.
    let next = stamp(first + 5 * HOUR);
    let enqueue = ["enqueue", "--id", &next, "--payload", "other", "--max-attempts", "1", "--ttl", "1d"];
    let r = ran(command(&db, &enqueue).output().expect("enqueue"));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let log = run(HOUR);
    let line =
        log.lines().find(|l| l.contains("conflict")).unwrap_or_else(|| panic!("no conflict logged: {log}"));
    assert!(line.contains("ERROR") && line.contains(&next) && line.contains("--every-payload"), "{line}");
    let job = read_only(&db).get(&next).expect("get").expect("job");
    assert_eq!(job.payload, "other", "a conflict changes nothing");
}

#[test]
fn a_wrong_every_is_a_usage_error_that_opens_nothing() {
    let (dir, db) = fresh("retryq-every-usage-");
    let long = format!("{}=1s", "n".repeat(236));
    let cases: [(&[&str], &str); 12] = [
        (&["--every", "x"], "expected NAME=INTERVAL or NAME=cron:PATTERN"),
        (&["--every", "a=5"], "5 has no unit"),
        (&["--every", "a=500ms"], "at least 1s"),
        (&["--every", "a=1500ms"], "whole number of seconds"),
        (&["--every", "a=cron:0 3 * *"], "cannot be read"),
        (&["--every", "a=cron:0 0 30 2 *"], "matches no date"),
        (&["--every", "=1s"], "the name \"\" is empty"),
        (&["--every", "a@b=1s"], "holds '@'"),
        (&["--every", "a\u{1}b=1s"], "control character"),
        (&["--every", &long], "at most 235"),
        (&["--every", "a=1s", "--every", "a=1m"], "\"a\" is given twice"),
        (&["--every", "a=1s", "--every-payload", "b=x"], "\"b\" is not the name of an --every"),
    ];
    for (flags, says) in cases {
        let mut command = command(&db, &["work", "--worker", "w", "--exec", "true"]);
        let r = ran(command.args(flags).output().expect("work"));
        assert_eq!(r.code, Some(2), "{flags:?}: {}", r.stderr);
        assert!(r.stderr.contains("--every") && r.stderr.contains(says), "{flags:?}: {}", r.stderr);
    }
    assert!(!db.exists(), "{:?}", common::files(dir.path()));
}
