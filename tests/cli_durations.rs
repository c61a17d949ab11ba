//! Duration flags through the real binary: units (`1h`, `30s`, `1h30m`) work, a bare number
//! other than `0` is refused naming the units, each flag has one name across commands with
//! its older `-ms` spelling a hidden alias, and a value the queue cannot hold is refused
//! naming the flag and why, with nothing changed.

mod common;

use common::{Ran, command, now_ms, ran};
use std::path::{Path, PathBuf};

fn retryq(db: &Path, args: &[&str]) -> Ran {
    ran(command(db, args).output().expect("run retryq"))
}

fn fresh() -> (tempfile::TempDir, PathBuf) {
    common::fresh("retryq-durations-")
}

/// The deadline `get` shows for `id`.
fn deadline(db: &Path, id: &str) -> u64 {
    let r = retryq(db, &["get", id]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let job: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    job["deadline"].as_u64().expect("a deadline")
}

#[test]
fn ttl_takes_units() {
    let (_dir, db) = fresh();
    let cases = [("hour", "1h", 3_600_000), ("mixed", "1h30m", 5_400_000), ("ms", "90000ms", 90_000)];
    for (id, ttl, ms) in cases {
        let before = now_ms();
        let r = retryq(&db, &["enqueue", "--id", id, "--payload", "p", "--max-attempts", "1", "--ttl", ttl]);
        let after = now_ms();
        assert_eq!((r.code, r.stdout.as_str()), (Some(0), "{\"ok\":\"enqueued\"}\n"), "{ttl}: {}", r.stderr);
        let at = deadline(&db, id);
        assert!((before + ms..=after + ms).contains(&at), "--ttl {ttl}: deadline {at}, now {before}…{after}");
    }
    // redrive's --ttl is the same flag.
    let r = retryq(&db, &["redrive", "--id", "hour", "--add-attempts", "1", "--ttl", "2d"]);
    assert_eq!(r.code, Some(1), "not dead: refused, but the flag was read: {}", r.stderr);
    assert!(r.stdout.contains("not_dead"), "{}", r.stdout);
}

/// `--ttl 5` meant 5 ms once, and a job that expires before anyone can claim it is a
/// mistake nobody would see: every duration flag now refuses a bare number, naming the units,
/// and changes nothing. `0` is the same in every unit and stays accepted where 0 is allowed.
#[test]
fn a_bare_number_is_refused_by_every_duration_flag_naming_the_units() {
    let (dir, db) = fresh();
    let enqueue = ["enqueue", "--id", "a", "--payload", "p", "--max-attempts", "1"];
    let work = ["work", "--worker", "w", "--exec", "true"];
    let url = ["work", "--worker", "w", "--url", "http://127.0.0.1:9/"];
    let commands: Vec<Vec<&str>> = vec![
        [&enqueue[..], &["--ttl"]].concat(),
        [&enqueue[..], &["--ttl", "1h", "--start-in"]].concat(),
        [&enqueue[..], &["--ttl", "1h", "--backoff-base"]].concat(),
        [&enqueue[..], &["--ttl", "1h", "--backoff-cap"]].concat(),
        vec!["redrive", "--all-dead", "--add-attempts", "1", "--ttl"],
        vec!["prune", "--older-than"],
        vec!["prune", "--older-than", "1d", "--forget-older-than"],
        [&work[..], &["--lease"]].concat(),
        [&work[..], &["--lease-ms"]].concat(),
        [&work[..], &["--timeout"]].concat(),
        [&work[..], &["--base"]].concat(),
        [&work[..], &["--cap-ms"]].concat(),
        [&work[..], &["--margin"]].concat(),
        [&work[..], &["--retain"]].concat(),
        [&work[..], &["--retain", "1d", "--forget-after"]].concat(),
        [&url[..], &["--retry-budget-ttl"]].concat(),
        vec!["serve-demo", "--slow"],
        vec!["serve-demo", "--read-timeout"],
        vec!["serve-demo", "--stats-every"],
    ];
    for command in &commands {
        let args = [&command[..], &["5"]].concat();
        let r = retryq(&db, &args);
        assert_eq!((r.code, r.stdout.as_str()), (Some(2), ""), "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("'5' for '--")
                && r.stderr.contains("5 has no unit; write 5ms, 5s, 5m, 5h or 5d"),
            "{args:?}: {}",
            r.stderr
        );
    }
    // An item of a list is refused the same way, by its place in the list.
    let r = retryq(&db, &[&url[..], &["--fault-unavailable-ms", "0,0,30s,1m,2m,3m,600000"]].concat());
    assert!(
        r.code == Some(2) && r.stderr.contains("\"600000\": 600000 has no unit; write 600000ms"),
        "{}",
        r.stderr
    );
    assert!(!db.exists(), "{:?}", std::fs::read_dir(dir.path()).map(|d| d.count()));
    // `0` needs no unit: a job due at once, with no backoff of its own.
    let flags = ["--ttl", "1h", "--start-in", "0", "--backoff-base", "0"];
    let r = retryq(&db, &[&enqueue[..], &flags[..]].concat());
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = retryq(&db, &["get", "a"]);
    let job: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(
        (job["base_ms"].as_u64(), job["available_at"].as_u64()),
        (Some(0), job["not_before"].as_u64())
    );
}

#[test]
fn work_reads_the_new_names_and_the_old_ones_for_one_release() {
    let (_dir, db) = fresh();
    // A quarter of a second of lease is too short to renew: the message shows it in
    // milliseconds, under the flag's one name, whichever spelling was typed.
    for args in [["--lease", "0.25s", "--timeout", "2m"], ["--lease-ms", "250ms", "--timeout-ms", "2m"]] {
        let r = retryq(&db, &[&["work", "--worker", "w", "--exec", "true"][..], &args[..]].concat());
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("--lease: 250 ms is shorter than 300 ms"), "{args:?}: {}", r.stderr);
    }
    let old = [
        [
            "--lease-ms",
            "3m",
            "--timeout-ms",
            "2m",
            "--margin-ms",
            "1s",
            "--base-ms",
            "50ms",
            "--cap-ms",
            "1.5s",
        ],
        ["--lease", "3m", "--timeout", "2m", "--margin", "1s", "--base", "50ms", "--cap", "1.5s"],
        [
            "--lease",
            "3m",
            "--timeout",
            "2m",
            "--margin",
            "1s",
            "--backoff-base",
            "50ms",
            "--backoff-cap",
            "1.5s",
        ],
    ];
    for (n, flags) in old.iter().enumerate() {
        let id = n.to_string();
        let r =
            retryq(&db, &["enqueue", "--id", &id, "--payload", "p", "--max-attempts", "1", "--ttl", "10m"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let r = retryq(
            &db,
            &[&["work", "--worker", "w", "--exec", "true", "--until-idle"][..], &flags[..]].concat(),
        );
        assert_eq!(r.code, Some(0), "{flags:?}: {}", r.stderr);
        assert!(r.stderr.contains("lease_ms=180000") && r.stderr.contains("margin_ms=1000"), "{}", r.stderr);
    }
    let r = retryq(&db, &["get", "2"]);
    assert!(r.stdout.contains("\"status\":\"done\""), "{}", r.stdout);
}

#[test]
fn what_the_queue_cannot_hold_is_refused_naming_the_flag_and_why() {
    let (dir, db) = fresh();
    let values = [
        ("1.5ms", "whole number of milliseconds"),
        ("-1s", "negative"),
        ("-5", "negative"),
        ("9007199254740992ms", "too large"),
        ("104249991375d", "too large"),
        ("99999999999999999999999999s", "too large"),
        ("10 parsecs", "unknown unit \"parsecs\""),
        ("1h30", "30 has no unit; write 30ms, 30s, 30m, 30h or 30d"),
        ("250", "250 has no unit; write 250ms, 250s, 250m, 250h or 250d"),
        ("", "empty"),
    ];
    let enqueue = ["enqueue", "--id", "a", "--payload", "p", "--max-attempts", "1", "--ttl"];
    let redrive = ["redrive", "--all-dead", "--add-attempts", "1", "--ttl"];
    let work = ["work", "--worker", "w", "--exec", "true"];
    let url = ["work", "--worker", "w", "--url", "http://127.0.0.1:9/"];
    let commands: Vec<(Vec<&str>, &str)> = vec![
        (enqueue.to_vec(), "--ttl"),
        (redrive.to_vec(), "--ttl"),
        ([&work[..], &["--lease"]].concat(), "--lease"),
        ([&work[..], &["--lease-ms"]].concat(), "--lease"),
        ([&work[..], &["--timeout"]].concat(), "--timeout"),
        ([&work[..], &["--base-ms"]].concat(), "--backoff-base"),
        ([&work[..], &["--cap"]].concat(), "--backoff-cap"),
        ([&url[..], &["--retry-budget-ttl-ms"]].concat(), "--retry-budget-ttl"),
        (vec!["serve-demo", "--slow-ms"], "--slow"),
        (vec!["serve-demo", "--read-timeout"], "--read-timeout"),
        (vec!["serve-demo", "--stats-every"], "--stats-every"),
    ];
    for (command, flag) in &commands {
        for (value, why) in values {
            let args = [&command[..], &[value]].concat();
            let r = retryq(&db, &args);
            assert_eq!(r.code, Some(2), "{args:?}: {}{}", r.stdout, r.stderr);
            assert!(
                r.stderr.contains(&format!("'{flag} <DURATION>'")),
                "{args:?} should name {flag}: {}",
                r.stderr
            );
            assert!(r.stderr.contains(why), "{args:?} should say {why:?}: {}", r.stderr);
        }
    }
    // Bounds of each flag, in its own terms.
    let cases: [(Vec<&str>, &str); 4] = [
        ([&enqueue[..], &["0s"]].concat(), "0 ms is too short; at least 1 ms needed"),
        ([&work[..], &["--timeout", "0"]].concat(), "0 ms is too short; at least 1 ms needed"),
        (vec!["serve-demo", "--slow", "2h"], "at most 3600000 ms (1h) allowed"),
        (vec!["serve-demo", "--stats-every", "2d"], "at most 86400000 ms (1day) allowed"),
    ];
    for (args, why) in cases {
        let r = retryq(&db, &args);
        assert!(r.code == Some(2) && r.stderr.contains(why), "{args:?}: {}", r.stderr);
    }
    // A list of durations names the item.
    let r = retryq(&db, &[&url[..], &["--fault-unavailable-ms", "0,0,30s,1m,2m,3m,1.5ms"]].concat());
    assert!(
        r.code == Some(2) && r.stderr.contains("--fault-unavailable: \"1.5ms\": not a whole number"),
        "{}",
        r.stderr
    );
    // Nothing was created, let alone changed.
    assert!(!db.exists(), "{:?}", std::fs::read_dir(dir.path()).map(|d| d.count()));
}

#[test]
fn help_shows_one_name_per_flag_and_the_defaults_in_units() {
    let (_dir, db) = fresh();
    let r = retryq(&db, &["work", "--help"]);
    for text in [
        "--lease <DURATION>",
        "At least 300ms [default: 30s]",
        "--timeout <DURATION>",
        "[default: 20s]",
        "--backoff-base <DURATION>",
        "[default: 100ms]",
        "--backoff-cap <DURATION>",
        "[default: 1s]",
        "--margin <DURATION>",
        "--retry-budget-ttl <DURATION>",
        "--fault-latency <LIST>",
        "--fault-unavailable <LIST>",
        "With --url (the HTTP transport):",
    ] {
        assert!(r.stdout.contains(text), "work --help lacks {text:?}:\n{}", r.stdout);
    }
    // The older spellings work, but are not shown: one name per flag.
    for text in ["-ms ", "-ms <", "alias", "--base ", "--cap "] {
        assert!(!r.stdout.contains(text), "work --help shows {text:?}:\n{}", r.stdout);
    }
    // The same concept has the same name on enqueue, and enqueue's deadline is the job's.
    let r = retryq(&db, &["enqueue", "--help"]);
    for text in [
        "--backoff-base <DURATION>",
        "--backoff-cap <DURATION>",
        "--deadline <TIME>",
        "The job's deadline, RFC 3339",
    ] {
        assert!(r.stdout.contains(text), "enqueue --help lacks {text:?}:\n{}", r.stdout);
    }
    assert!(!r.stdout.contains("The new deadline"), "{}", r.stdout);
    let r = retryq(&db, &["redrive", "--help"]);
    assert!(r.stdout.contains("The new deadline of each redriven job"), "{}", r.stdout);
    let r = retryq(&db, &["serve-demo", "--help"]);
    for text in ["--slow <DURATION>", "--read-timeout <DURATION>", "[default: 5s]"] {
        assert!(r.stdout.contains(text), "serve-demo --help lacks {text:?}:\n{}", r.stdout);
    }
    assert!(!r.stdout.contains("alias"), "{}", r.stdout);
    for command in ["enqueue", "redrive"] {
        let r = retryq(&db, &[command, "--help"]);
        assert!(r.stdout.contains("--ttl <DURATION>"), "{}", r.stdout);
        assert!(r.stdout.contains("with a unit: 90s, 1h, 1h30m, 7d"), "{}", r.stdout);
    }
}

/// `--margin` must hold the watchdog's grace between SIGTERM and SIGKILL and leave the
/// heartbeats room: above the grace, at most half the lease; refused by name otherwise,
/// before anything is opened.
#[test]
fn the_margin_is_refused_outside_the_grace_and_half_the_lease() {
    let (dir, db) = fresh();
    for (args, said) in [
        (
            ["--lease", "30s", "--margin", "500ms"],
            "--margin: 500 ms does not exceed the watchdog's grace of 500 ms",
        ),
        (["--lease", "30s", "--margin", "16s"], "--margin: 16000 ms is more than half the lease (15000 ms)"),
        (
            ["--lease", "1s", "--margin", "100ms"],
            "--margin: 100 ms does not exceed the watchdog's grace of 125 ms",
        ),
    ] {
        let r = retryq(&db, &[&["work", "--worker", "w", "--exec", "true"][..], &args[..]].concat());
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(said), "{args:?}: {}", r.stderr);
        assert!(!db.exists(), "{args:?} opened the database");
    }
    let r = retryq(&db, &["enqueue", "--id", "a", "--payload", "p", "--max-attempts", "1", "--ttl", "10m"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let flags = ["--lease", "2s", "--margin", "1s", "--until-idle"];
    let r = retryq(&db, &[&["work", "--worker", "w", "--exec", "true"][..], &flags[..]].concat());
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    drop(dir);
}
