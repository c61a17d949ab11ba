//! `retryq replay` through the real binary: every saved regression case, the SPEC's worked
//! traces to the letter, standard input, `--db`, and a process killed mid-trace.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use common::BIN;

use retryq_conformance::regress::{self, Verdict};

fn traces_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/traces")
}

fn replay(args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(BIN)
        .arg("replay")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn retryq");
    // A process that refuses its arguments may exit before reading: a broken pipe is fine.
    if let Err(e) = child.stdin.take().expect("stdin").write_all(stdin.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn every_regression_case_passes_through_the_binary() {
    let cases = regress::discover(&traces_dir()).expect("discover cases");
    assert!(cases.len() >= 10, "only {} cases found", cases.len());
    for case in cases {
        let trace = case.trace.to_str().expect("utf-8 path");
        let (code, stdout, stderr) = replay(&[trace], "");
        assert_eq!(code, 0, "{}: {stderr}", case.name);
        let expected = std::fs::read_to_string(&case.expected).expect("expected file");
        let actual: Vec<String> = stdout.lines().map(str::to_owned).collect();
        match regress::compare(&expected, &actual) {
            Verdict::Pass { .. } => {}
            Verdict::Mismatch { line, expected, actual } => {
                panic!("{}: line {line}\n expected {expected}\n actual   {actual}", case.name)
            }
        }
    }
}

/// The indented blocks of one section of SPEC.md: the trace, then what it gives.
fn spec_blocks(section: &str) -> (String, String) {
    let spec =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("SPEC.md")).expect("SPEC.md");
    let start = spec.find(section).unwrap_or_else(|| panic!("SPEC.md has no {section}"));
    let rest = &spec[start + section.len()..];
    let body = &rest[..rest.find("\n## ").or_else(|| rest.find("\n### ")).unwrap_or(rest.len())];
    let mut blocks: Vec<String> = Vec::new();
    let mut current = String::new();
    for line in body.lines() {
        if let Some(code) = line.strip_prefix("    ") {
            current.push_str(code);
            current.push('\n');
        } else if !current.is_empty() {
            blocks.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        blocks.push(current);
    }
    assert!(blocks.len() >= 2, "{section}: a trace and its output");
    (blocks[0].clone(), blocks[1].clone())
}

#[test]
fn the_spec_worked_traces_print_exactly_what_the_spec_says() {
    for (section, file) in [
        ("### 5.6 The worked trace\n", "spec_worked_trace"),
        ("### 5.7 The worked trace of retention", "retention"),
        ("### 5.8 The worked trace of a bounded reap", "bounded_reap"),
        ("### 5.9 The worked trace of pause and run_now", "pause_run_now"),
    ] {
        let (trace, gives) = spec_blocks(section);
        let saved = std::fs::read_to_string(traces_dir().join(format!("{file}.jsonl"))).expect("trace");
        // The saved trace may open with comment lines, which a replay skips.
        let saved: String = saved.lines().filter(|l| !l.starts_with('#')).map(|l| format!("{l}\n")).collect();
        assert_eq!(trace, saved, "{section}: SPEC.md's trace is tests/traces/{file}.jsonl");
        let (code, stdout, _) = replay(&["-"], &trace);
        assert_eq!(code, 0);
        assert_eq!(stdout, gives, "{section}");
    }
}

#[test]
fn standard_input_is_the_default() {
    let (code, stdout, _) =
        replay(&[], "{\"op\":\"retry_delay\",\"attempt\":3,\"base_ms\":100,\"cap_ms\":250,\"jitter\":0.5}\n");
    assert_eq!((code, stdout.as_str()), (0, "{\"ok\":\"delay\",\"delay_ms\":125}\n"));
}

#[test]
fn a_named_database_outlives_the_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    let db = db.to_str().expect("utf-8 path");
    let first = "{\"op\":\"enqueue\",\"id\":\"a\",\"max_attempts\":2,\"deadline\":99999,\"now\":0}\n\
                 {\"op\":\"claim\",\"worker\":\"w1\",\"now\":0}\n";
    let (code, stdout, _) = replay(&["--db", db, "-"], first);
    assert_eq!(code, 0);
    assert_eq!(
        stdout.lines().nth(1),
        Some("{\"ok\":\"claimed\",\"id\":\"a\",\"attempt\":1,\"lease_until\":30000}")
    );
    // A second process: the lease and the spent attempt are still there.
    let second = "{\"op\":\"claim\",\"worker\":\"w2\",\"now\":29999}\n{\"op\":\"claim\",\"worker\":\"w2\",\"now\":30000}\n";
    let (code, stdout, _) = replay(&["--db", db, "-"], second);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        "{\"ok\":\"none\"}\n{\"ok\":\"claimed\",\"id\":\"a\",\"attempt\":2,\"lease_until\":60000}\n"
    );
}

#[test]
fn a_claim_survives_the_process_being_killed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    let mut child = Command::new(BIN)
        .args(["replay", "--db", db.to_str().expect("utf-8 path"), "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn retryq");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    writeln!(stdin, "{{\"op\":\"enqueue\",\"id\":\"a\",\"max_attempts\":3,\"deadline\":99999,\"now\":0}}")
        .expect("write");
    writeln!(stdin, "{{\"op\":\"claim\",\"worker\":\"w1\",\"now\":5}}").expect("write");
    stdin.flush().expect("flush");
    let mut line = String::new();
    for _ in 0..2 {
        line.clear();
        stdout.read_line(&mut line).expect("read");
    }
    assert!(line.starts_with("{\"ok\":\"claimed\""), "{line}");
    // SIGKILL while the process waits for more input, holding the database open.
    child.kill().expect("kill");
    child.wait().expect("reap");
    let queue = retryq::Queue::open(&db).expect("reopen");
    let job = queue.get("a").expect("get").expect("job survived");
    assert_eq!((job.status, job.attempts, job.available_at), (retryq::Status::Leased, 1, Some(30_005)));
}

#[test]
fn a_missing_trace_is_a_clear_error() {
    let (code, stdout, stderr) = replay(&["/nonexistent/trace.jsonl"], "");
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert!(stderr.contains("/nonexistent/trace.jsonl"), "{stderr}");
}

#[test]
fn a_foreign_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "not a database, just notes\n".repeat(200)).expect("write");
    let before = std::fs::read(&path).expect("read");
    let (code, stdout, stderr) =
        replay(&["--db", path.to_str().expect("utf-8 path"), "-"], "{\"op\":\"restart\"}\n");
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert!(stderr.contains("not a retryq database"), "{stderr}");
    assert_eq!(std::fs::read(&path).expect("read"), before);
}
