//! Usage lines through the real binary: `--db` has a variable (`RETRYQ_DB`) and a default, so
//! no usage line — in a command's help or after a wrong command line, with the database given
//! by the variable or by the flag — may show it as required.

use std::path::Path;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_retryq");

/// Everything `retryq ARGS` prints, standard output then standard error, with `RETRYQ_DB`
/// set: its help, or the error of a wrong command line.
fn printed(db: &Path, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env("RETRYQ_DB", db)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run retryq");
    // Help succeeds; anything else here is a wrong command line, which stops before work.
    assert_eq!(out.status.success(), args.contains(&"--help"), "{args:?}");
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The subcommands `retryq --help` lists, but `help`.
fn subcommands() -> Vec<String> {
    let out = Command::new(BIN).arg("--help").output().expect("run retryq");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let listed: Vec<String> = help
        .lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    assert!(listed.len() >= 15 && listed.iter().any(|c| c == "get"), "{help}");
    listed
}

/// `line` without its optional parts (`[…]`, nested included).
fn outside_brackets(line: &str) -> String {
    let mut depth = 0usize;
    let mut kept = String::new();
    for ch in line.chars() {
        match ch {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ if depth == 0 => kept.push(ch),
            _ => {}
        }
    }
    kept
}

#[test]
fn outside_brackets_drops_optional_parts_only() {
    assert_eq!(outside_brackets("retryq get [OPTIONS] <ID>"), "retryq get  <ID>");
    assert_eq!(outside_brackets("a [--x [<Y>]] --db <PATH>"), "a  --db <PATH>");
}

#[test]
fn no_usage_line_shows_db_as_required() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    // Errors that print a usage line: an unknown flag, a missing required argument, a
    // conflict; each with the database from the variable and from the flag.
    let mut runs: Vec<Vec<String>> = Vec::new();
    for sub in subcommands() {
        runs.push(vec![sub.clone(), "--help".into()]);
        runs.push(vec![sub.clone(), "--no-such-flag".into()]);
        runs.push(vec![sub, "--db".into(), "q.db".into(), "--no-such-flag".into()]);
    }
    let with_db: [&[&str]; 9] = [
        &["get"],
        &["history"],
        &["enqueue", "--id", "a"],
        &["redrive", "--add-attempts", "1"],
        &["redrive", "--id", "a", "--all-dead"],
        &["work", "--worker", "w"],
        &["work", "--worker", "w", "--exec", "true", "--url", "http://127.0.0.1:9/"],
        &["stats", "--json", "--prometheus"],
        &["dead", "--json", "--json"],
    ];
    for args in with_db {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        runs.push(args.clone());
        runs.push([&args[..1], &["--db".to_owned(), "q.db".to_owned()], &args[1..]].concat());
    }
    let mut lines = 0;
    for args in &runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let text = printed(&db, &args);
        let usage: Vec<&str> = text.lines().filter(|l| l.starts_with("Usage:")).collect();
        assert!(!usage.is_empty(), "{args:?} printed no usage line:\n{text}");
        for line in usage {
            lines += 1;
            assert!(!outside_brackets(line).contains("--db"), "{args:?}: {line}");
        }
    }
    assert!(lines >= runs.len());
    assert!(!db.exists(), "nothing ran");
}

#[test]
fn the_usage_after_an_error_is_the_help_usage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    let usage = |args: &[&str]| {
        let text = printed(&db, args);
        text.lines().find(|l| l.starts_with("Usage:")).map(str::to_owned).unwrap_or_default()
    };
    assert_eq!(usage(&["get", "--db", "q.db"]), "Usage: retryq get [OPTIONS] <ID>");
    assert_eq!(usage(&["get", "--help"]), "Usage: retryq get [OPTIONS] <ID>");
    assert_eq!(usage(&["stats", "--json", "--prometheus"]), "Usage: retryq stats [OPTIONS]");
}

/// `--clock` (whose clock gives `now` on PostgreSQL) is offered only by the commands whose
/// work takes a time — the writers that stamp one, and `stats`, which counts expired leases
/// at `now` — and its help says it is PostgreSQL's. On a SQLite file it is ignored with one
/// line of warning, and the worker does not log a clock it had no choice of.
#[test]
fn clock_is_offered_only_where_a_time_is_taken_and_only_for_postgresql() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(args)
            .env("RETRYQ_DB", &db)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .output()
            .expect("run retryq");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let timed = [
        "enqueue", "work", "redrive", "cancel", "prune", "reap", "stats", "serve", "pause", "resume",
        "run-now",
    ];
    for sub in subcommands() {
        let (_, help, _) = run(&[&sub, "--help"]);
        let offered = help.contains("--clock <WHOSE>");
        let is_timed = timed.contains(&sub.as_str());
        // The commands that open no database (check, replay, …) have no --clock either.
        assert_eq!(offered, is_timed, "{sub} --help:\n{help}");
        if offered {
            assert!(help.contains("PostgreSQL only (SQLite uses this host's clock)"), "{sub}: {help}");
        }
    }
    for read_only in ["get", "list", "dead", "history", "audit"] {
        let (code, _, err) = run(&[read_only, "--clock", "local"]);
        assert_eq!(code, Some(2), "{read_only}: {err}");
        assert!(err.contains("unexpected argument '--clock'"), "{read_only}: {err}");
    }
    let (code, out, err) = run(&[
        "enqueue",
        "--clock",
        "local",
        "--id",
        "a",
        "--payload",
        "p",
        "--max-attempts",
        "1",
        "--ttl",
        "1h",
    ]);
    assert_eq!((code, out.as_str()), (Some(0), "{\"ok\":\"enqueued\"}\n"), "{err}");
    let warning = "retryq: warning: --clock local is ignored: it applies to PostgreSQL only";
    assert_eq!(err.matches(warning).count(), 1, "{err}");
    let (code, _, log) = run(&["work", "--worker", "w", "--exec", "true", "--until-idle"]);
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("opened the store") && !log.contains("clock="), "{log}");
    assert!(!log.contains("warning: --clock"), "not given, not warned: {log}");
    let (code, _, log) =
        run(&["work", "--clock", "server", "--worker", "w", "--exec", "true", "--until-idle"]);
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("--clock server is ignored") && !log.contains("clock="), "{log}");
}
