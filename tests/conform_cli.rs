//! `retryq conform` through the real binary: regressions first, both generators, the
//! model's paths, and replay processes killed with SIGKILL — on a small fixed-seed sample
//! (the full default run is `retryq conform`, and `retryq verify` runs one too).

mod common;

use std::process::Command;

use common::BIN;

fn conform(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN).arg("conform").args(args).output().expect("run retryq conform");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn a_small_fixed_seed_run_agrees_everywhere() {
    let traces = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/traces");
    let (code, text) = conform(&[
        "--cases",
        "120",
        "--seed",
        "42",
        "--depth",
        "3",
        "--crash",
        "12",
        "--regressions",
        traces,
    ]);
    assert_eq!(code, 0, "{text}");
    for line in ["regressions ", "generated ", "exhaustive ", "crash ", "conform: no mismatch"] {
        assert!(text.contains(line), "no {line:?} in\n{text}");
    }
    assert!(text.contains("120 traces"), "{text}");
}

#[test]
fn one_trace_is_replayed_against_both_readings() {
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/traces/spec_worked_trace.jsonl");
    let (code, text) = conform(&["--trace", trace]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("both readings agree"), "{text}");
}

#[test]
fn bad_flags_name_themselves() {
    let (code, text) = conform(&["--threads", "0"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("--threads"), "{text}");
    let (code, text) = conform(&["--trace", "/nonexistent.jsonl"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("/nonexistent.jsonl"), "{text}");
}
