//! `retryq list` through the real binary: one status's jobs in the order an operator needs
//! them (claim's order for pending and leased, newest first for done and dead), or with no
//! flag every job status by status, a page at a time with how many more are left said on
//! standard error, `--json` lines exactly as `get` prints them, and wrong words refused with
//! the words that are accepted.
//!
//! The jobs are made through the library with chosen clocks, so that the order under test
//! is not an accident of when the test ran.

mod common;

use std::path::{Path, PathBuf};

use common::{Ran, command, ran};
use retryq::{Completion, NewJob, OpenOptions, Outcome, Queue};

/// 2100-01-01T00:00:00.123Z.
const DEADLINE: u64 = 4_102_444_800_123;

fn retryq(db: &Path, args: &[&str]) -> Ran {
    ran(command(db, args).output().expect("run retryq"))
}

fn fresh() -> (tempfile::TempDir, PathBuf) {
    common::fresh("retryq-list-")
}

/// The first word of each line after the header: the ids, in the order listed.
fn ids(stdout: &str) -> Vec<&str> {
    stdout.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect()
}

/// A queue with every status: `late`, `b`, `a`, `c`, `d` and `e` enqueued at 50, 10, 10, 20,
/// 30 and 40; at 60 `b` succeeds, `a` fails for good, `c` is leased to w1 and `d` to w2 on
/// their last attempt; `late` and `e` stay pending.
fn queue_with_every_status(db: &Path) {
    let mut q = Queue::open_with(db, &OpenOptions { create: true, ..OpenOptions::default() }).expect("open");
    for (id, max_attempts, now) in
        [("late", 3, 50), ("b", 3, 10), ("a", 3, 10), ("c", 3, 20), ("d", 1, 30), ("e", 3, 40)]
    {
        q.enqueue(&NewJob { id, payload: "x", max_attempts, deadline: DEADLINE, now, ..NewJob::default() })
            .expect("enqueue");
    }
    for outcome in [Outcome::Ok, Outcome::Permanent] {
        let claimed = q.claim("w0", 60).expect("claim").expect("claimed");
        q.complete(&Completion::new(&claimed.lease, outcome, 60, 0.0)).expect("complete");
    }
    assert_eq!(q.claim("w1", 60).expect("claim").expect("c").id(), "c");
    assert_eq!(q.claim("w2", 61).expect("claim").expect("d").id(), "d");
}

#[test]
fn pending_and_leased_come_in_claim_order_with_readable_times() {
    let (_dir, db) = fresh();
    queue_with_every_status(&db);

    let r = retryq(&db, &["list", "--status", "pending"]);
    assert_eq!((r.code, r.stderr.as_str()), (Some(0), ""), "{}", r.stderr);
    assert_eq!(ids(&r.stdout), ["e", "late"], "{}", r.stdout);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(
        lines[0].starts_with("id ") && lines[0].contains("available at") && lines[0].contains("deadline")
    );
    assert!(lines[1].contains("pending") && lines[1].contains("0/3"), "{}", lines[1]);
    assert!(
        lines[1].contains("40 (1970-01-01T00:00:00.040Z)")
            && lines[1].ends_with("4102444800123 (2100-01-01T00:00:00.123Z)"),
        "{}",
        lines[1]
    );

    // Leased jobs by lease expiry: c's (60 + 30 s) before d's (61 + 30 s), each with its holder.
    let r = retryq(&db, &["list", "--status", "leased"]);
    assert_eq!(ids(&r.stdout), ["c", "d"], "{}", r.stdout);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines[0].contains("lease until") && lines[0].ends_with("worker"), "{}", lines[0]);
    assert!(
        lines[1].contains("30060 (1970-01-01T00:00:30.060Z)") && lines[1].ends_with("w1"),
        "{}",
        lines[1]
    );
    assert!(lines[2].contains("1/1") && lines[2].ends_with("w2"), "{}", lines[2]);
}

#[test]
fn done_and_dead_come_newest_first_and_reason_alone_means_dead() {
    let (_dir, db) = fresh();
    queue_with_every_status(&db);
    // d's lease on its last attempt expires: it is reaped as exhausted.
    let mut q = Queue::open(&db).expect("open");
    q.reap(31_061).expect("reap");
    drop(q);

    let r = retryq(&db, &["list", "--status", "done"]);
    assert_eq!(ids(&r.stdout), ["b"], "{}", r.stdout);
    assert!(r.stdout.lines().next().expect("header").contains("enqueued at"), "{}", r.stdout);
    assert!(r.stdout.contains("10 (1970-01-01T00:00:00.010Z)"), "{}", r.stdout);

    let r = retryq(&db, &["list", "--status", "dead"]);
    assert_eq!(ids(&r.stdout), ["d", "a"], "the most recently enqueued first:\n{}", r.stdout);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines[1].contains("exhausted") && lines[2].contains("permanent"), "{}", r.stdout);

    for args in
        [&["list", "--reason", "permanent"][..], &["list", "--status", "dead", "--reason", "permanent"]]
    {
        let r = retryq(&db, args);
        assert_eq!((r.code, ids(&r.stdout)), (Some(0), vec!["a"]), "{args:?}: {}", r.stderr);
    }
    let r = retryq(&db, &["list", "--reason", "deadline"]);
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (Some(0), "", "no dead (deadline) jobs\n"));
}

#[test]
fn a_page_says_how_many_more_and_json_lines_are_gets() {
    let (_dir, db) = fresh();
    let mut q = Queue::open_with(&db, &OpenOptions { create: true, ..OpenOptions::default() }).expect("open");
    for n in 0..5u64 {
        let id = format!("job-{n}");
        q.enqueue(&NewJob {
            id: &id,
            payload: "x",
            max_attempts: 2,
            deadline: DEADLINE,
            now: 100 - n,
            ..NewJob::default()
        })
        .expect("enqueue");
    }
    drop(q);

    let r = retryq(&db, &["list", "--status", "pending", "--limit", "2"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(ids(&r.stdout), ["job-4", "job-3"], "the earliest available first:\n{}", r.stdout);
    assert_eq!(r.stderr, "retryq: 3 more pending jobs not shown (--limit 2)\n");
    let r = retryq(&db, &["list", "--status", "pending", "--limit", "4"]);
    assert_eq!(r.stderr, "retryq: 1 more pending job not shown (--limit 4)\n");
    let r = retryq(&db, &["list", "--status", "pending", "--limit", "0"]);
    assert_eq!(
        (r.stdout.as_str(), r.stderr.as_str()),
        ("", "retryq: 5 more pending jobs not shown (--limit 0)\n")
    );

    // Without --limit, a page of 100 holds them all; --json keeps standard output to the jobs.
    let r = retryq(&db, &["list", "--status", "pending", "--json"]);
    assert_eq!((r.code, r.stderr.as_str()), (Some(0), ""));
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", r.stdout);
    for (line, n) in lines.iter().zip((0..5).rev()) {
        let get = retryq(&db, &["get", &format!("job-{n}")]);
        assert_eq!(format!("{line}\n"), get.stdout, "job-{n}");
    }
    let r = retryq(&db, &["list", "--status", "pending", "--json", "--limit", "1"]);
    assert_eq!(
        (r.stdout.lines().count(), r.stderr.as_str()),
        (1, "retryq: 4 more pending jobs not shown (--limit 1)\n")
    );
}

#[test]
fn wrong_words_are_refused_with_the_accepted_ones() {
    let (_dir, db) = fresh();
    queue_with_every_status(&db);
    let cases: [(&[&str], &[&str]); 4] = [
        (&["list", "--status", "failed"], &["--status", "\"failed\"", "pending, leased, done, dead"]),
        (&["list", "--reason", "timeout"], &["--reason", "\"timeout\"", "exhausted, deadline, permanent"]),
        (
            &["list", "--status", "leased", "--reason", "deadline"],
            &["--reason", "only dead jobs have a reason"],
        ),
        (&["list", "--status", "pending", "--limit", "-1"], &["--limit"]),
    ];
    for (args, said) in cases {
        let r = retryq(&db, args);
        assert_eq!((r.code, r.stdout.as_str()), (Some(2), ""), "{args:?}: {}", r.stderr);
        for words in said {
            assert!(r.stderr.contains(words), "{args:?} should say {words:?}:\n{}", r.stderr);
        }
    }
}

/// What an operator types first: every job, status by status in the order a job lives
/// through them (pending, leased, done, dead), each in its own order under its own header,
/// out of one `--limit`.
#[test]
fn a_bare_list_shows_every_job_status_by_status() {
    let (_dir, db) = fresh();
    queue_with_every_status(&db);

    let r = retryq(&db, &["list"]);
    assert_eq!((r.code, r.stderr.as_str()), (Some(0), ""), "{}", r.stderr);
    let sections: Vec<&str> = r.stdout.split("\n\n").collect();
    assert_eq!(sections.len(), 4, "one section per status:\n{}", r.stdout);
    let headers = ["available at", "lease until", "redrives", "reason"];
    let expected: [&[&str]; 4] = [&["e", "late"], &["c", "d"], &["b"], &["a"]];
    for ((section, header), want) in sections.iter().zip(headers).zip(expected) {
        assert!(section.starts_with("id ") && section.lines().next().is_some_and(|h| h.contains(header)));
        assert_eq!(ids(section), want, "{section}");
    }
    // The same as each status alone, in the same order.
    let alone: Vec<String> = ["pending", "leased", "done", "dead"]
        .iter()
        .map(|s| retryq(&db, &["list", "--status", s]).stdout.trim_end().to_owned())
        .collect();
    assert_eq!(sections.iter().map(|s| s.trim_end()).collect::<Vec<_>>(), alone);

    // One limit for the whole page; what it left out is said once.
    let r = retryq(&db, &["list", "--limit", "3"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let shown: Vec<&str> = r.stdout.split("\n\n").flat_map(ids).collect();
    assert_eq!(shown, ["e", "late", "c"], "{}", r.stdout);
    assert_eq!(r.stderr, "retryq: 3 more jobs not shown (--limit 3)\n");
    let r = retryq(&db, &["list", "--json"]);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{}", r.stdout);
    for (line, id) in lines.iter().zip(["e", "late", "c", "d", "b", "a"]) {
        assert_eq!(format!("{line}\n"), retryq(&db, &["get", id]).stdout, "{id}");
    }
    let (_dir, empty) = fresh();
    Queue::open(&empty).expect("create");
    let r = retryq(&empty, &["list"]);
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (Some(0), "", "no jobs\n"));
}

#[test]
fn a_missing_database_is_an_error_and_stays_missing() {
    let (_dir, db) = fresh();
    let r = retryq(&db, &["list", "--status", "pending"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(1), ""));
    assert!(r.stderr.contains("no such database"), "{}", r.stderr);
    assert!(!db.exists());
}
