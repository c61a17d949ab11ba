//! `retryq simulate` from the outside: its JSON rows, its determinism, its plot, and a
//! message naming the flag for every bad value.

mod common;

use std::process::{Command, Output};

use common::{BIN, stderr};

fn simulate(args: &[&str]) -> Output {
    Command::new(BIN).arg("simulate").args(args).output().expect("run retryq")
}

#[test]
fn json_prints_one_object_per_row_with_the_documented_fields() {
    let out = simulate(&["--json", "--clients", "10,20", "--runs", "2", "--layers", "3", "--attempts", "3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 4 * 2 * 2);
    let mut keys: Vec<&str> = rows[0].as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "amplification",
            "budget",
            "calls",
            "clients",
            "completion_ms",
            "layers",
            "strategy",
            "success_rate"
        ]
    );
    for row in &rows {
        let strategy = row["strategy"].as_str().unwrap();
        assert!(["immediate", "exponential", "full-jitter", "decorrelated"].contains(&strategy));
        assert!(row["budget"].is_boolean());
        assert_eq!(row["layers"], 3);
        let calls = row["calls"].as_f64().unwrap();
        let clients = row["clients"].as_f64().unwrap();
        assert_eq!(row["amplification"].as_f64().unwrap(), calls / clients);
        assert!(calls <= clients * 9.0, "at most n·r^(m−1) with r = 3, m = 3");
    }
}

#[test]
fn the_same_flags_print_the_same_output() {
    let args = ["--json", "--clients", "30", "--runs", "3", "--seed", "5"];
    let (a, b) = (simulate(&args), simulate(&args));
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn the_table_has_a_header_and_a_line_per_row() {
    let out = simulate(&["--clients", "5", "--runs", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("strategy"), "{}", lines[0]);
    assert_eq!(lines.len(), 1 + 8);
}

#[test]
fn svg_writes_a_plot() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.svg");
    let out = simulate(&["--clients", "5,10", "--runs", "1", "--svg", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
}

#[test]
fn every_bad_value_is_refused_naming_its_flag() {
    let cases: [(&[&str], &str); 7] = [
        (&["--clients", "0"], "--clients"),
        (&["--clients", "ten"], "--clients"),
        (&["--layers", "1"], "--layers"),
        (&["--layers", "9"], "--layers"),
        (&["--runs", "0"], "--runs"),
        (&["--attempts", "0"], "--attempts"),
        (&["--server", "failing"], "--attempts"),
    ];
    for (args, flag) in cases {
        let out = simulate(args);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(stderr(&out).contains(flag), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn an_unwritable_svg_path_names_the_flag() {
    let out = simulate(&["--clients", "5", "--runs", "1", "--svg", "/nonexistent-dir/x.svg"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--svg"), "{}", stderr(&out));
}
