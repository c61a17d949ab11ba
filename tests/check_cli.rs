//! `retryq check` as a user runs it (`retryq explore`: `explore_cli.rs`).

mod common;

use common::{retryq, stdout};

/// One job: every property holds and every example is found but those that need two jobs or
/// the range's edges, so the check fails (exit 1) naming exactly those.
#[test]
fn json_report_has_every_property_with_its_kind_and_status() {
    let output = retryq(&["check", "--jobs", "1", "--json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let report: serde_json::Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON object");
    for key in ["unique_states", "states", "probes", "max_depth", "cells", "cells_reached"] {
        assert!(report[key].as_u64().is_some_and(|n| n > 0), "{key}");
    }
    assert!(report["seconds"].as_f64().is_some());
    // What the figures were measured on: a date, the commit built, the machine.
    let measured = &report["measured"];
    assert!(measured["date"].as_str().is_some_and(|d| d.starts_with("20") && d.ends_with('Z')), "{measured}");
    assert!(measured["commit"].as_str().is_some_and(|c| !c.is_empty()), "{measured}");
    assert!(measured["machine"]["cpus"].as_u64().is_some_and(|n| n >= 1), "{measured}");
    assert_eq!(report["unique_states"], 336_508);
    assert!(report["cells_reached"].as_u64() <= report["cells"].as_u64());
    let properties = report["properties"].as_array().expect("properties");
    assert_eq!(properties.len(), 70);
    let kinds = |kind: &str| properties.iter().filter(|p| p["kind"] == kind).count();
    assert_eq!((kinds("always"), kinds("liveness"), kinds("sometimes")), (33, 1, 36));
    let elsewhere = [
        "a claim breaks a tie by first enqueue",
        "a claim takes a later-enqueued job due earlier",
        "a claim breaks a tie by first enqueue, not enqueued_at",
        "a lease ends past 2^53 - 1",
        "a low-priority job waits while a higher one goes first",
        "a claim takes a job, passing over a queue it does not serve",
        "a running job is cancelled and ends",
        "a pruned id is enqueued again: existing, not run",
        "a forgotten id is enqueued anew",
        "a reap stops at its limit, leaving a job due to end",
        "a claim passes over a job due to end that its reap left",
        "a forgotten id lives again: enqueued anew, redriven, pruned again",
        "a job made due by run_now is claimed before its not_before",
    ];
    for p in properties {
        let expected = match p["kind"].as_str() {
            Some("sometimes") if elsewhere.iter().any(|name| p["name"] == *name) => "not_found",
            Some("sometimes") => "found",
            _ => "holds",
        };
        assert_eq!(p["status"], expected, "{p}");
    }
    assert!(!std::path::Path::new("retryq-counterexample.jsonl").exists(), "no file unless --out asks");
}

#[test]
fn a_missing_example_fails_the_check() {
    // Up to 4 ms no job can be claimed again after its lease expires: no stale completion.
    let output = retryq(&["check", "--jobs", "1", "--horizon", "4", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains(r#""status":"not_found""#));
}

#[test]
fn a_seeded_bug_gives_a_counterexample_that_replays_on_sqlite() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("ce.jsonl");
    let file_arg = file.to_str().expect("utf-8 path");
    let output = retryq(&[
        "check",
        "--bug",
        "rollback-attempt-on-crash",
        "--jobs",
        "1",
        "--horizon",
        "5",
        "--out",
        file_arg,
    ]);
    assert_eq!(output.status.code(), Some(1), "a violation fails the check");
    let report = stdout(&output);
    assert!(report.contains("violated  (counterexample: 2 steps)"), "{report}");
    assert!(report.contains("seeded bug rollback-attempt-on-crash caught by"), "{report}");
    let trace = std::fs::read_to_string(&file).expect("counterexample written");
    let ops: Vec<&str> = trace.lines().filter(|l| l.starts_with('{')).collect();
    let model: Vec<&str> = trace.lines().filter_map(|l| l.strip_prefix("#   model: ")).collect();
    assert_eq!(ops.len(), 5, "config, enqueue, the crash, get, enqueue again:\n{trace}");
    let replayed = retryq(&["replay", file_arg]);
    assert!(replayed.status.success());
    let sqlite: Vec<String> = stdout(&replayed).lines().map(String::from).collect();
    assert_eq!(sqlite.len(), ops.len(), "one output line per operation");
    assert_eq!(sqlite[..3], model[..3], "the same up to the crash");
    assert_eq!(sqlite[4], model[4], "the payload is the job's own: existing");
    assert!(sqlite[3].contains(r#""attempts":1"#), "SQLite keeps the spent attempt: {}", sqlite[3]);
    assert!(model[3].contains(r#""attempts":0"#), "the buggy model gave it back: {}", model[3]);
}

#[test]
fn list_bugs_names_every_bug_and_unknown_names_are_refused() {
    let output = retryq(&["check", "--list-bugs"]);
    assert!(output.status.success());
    let listed = stdout(&output);
    for bug in retryq_model::Bug::ALL {
        assert!(listed.contains(bug.name()), "{bug}");
    }
    // Every bug, at the default bounds, through the binary: exit 1, its property violated.
    for bug in retryq_model::Bug::ALL {
        let output = retryq(&["check", "--bug", bug.name(), "--json"]);
        assert_eq!(output.status.code(), Some(1), "{bug}");
        let report: serde_json::Value = serde_json::from_str(stdout(&output).trim()).expect("JSON");
        let properties = report["properties"].as_array().expect("properties");
        let named = properties.iter().find(|p| p["name"] == bug.caught_by()).expect("its property");
        assert_eq!(named["status"], "violated", "{bug}");
    }
    let output = retryq(&["check", "--bug", "no-such-bug"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("rollback-attempt-on-crash"));
}
