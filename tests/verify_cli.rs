//! `retryq verify` through the binary, piped as CI runs it: a line on stderr as each stage
//! starts and as it ends and nothing else — no progress line, no control character — and
//! `--stage` runs only the stages it names. On a terminal (a pseudo-terminal of `script(1)`,
//! util-linux's, in Debian's essential `bsdutils`), the running stage's count is redrawn in
//! place between those lines.

mod common;

use std::process::{Command, Stdio};

use common::{BIN, ran};

#[test]
fn piped_verify_writes_a_start_and_an_end_line_per_stage_and_nothing_else() {
    let traces = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/traces");
    let out = Command::new(BIN)
        .args(["verify", "--stage", "regressions", "--stage", "crash", "--kills", "3", "--traces", traces])
        .stdin(Stdio::null())
        .output()
        .expect("run verify");
    let r = ran(out);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stderr.chars().any(|c| c.is_control() && c != '\n'), "control characters in {:?}", r.stderr);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 4, "{}", r.stderr);
    assert_eq!(lines[0], "verify: regressions: started");
    assert!(lines[1].starts_with("verify: regressions: ok in "), "{}", r.stderr);
    assert_eq!(lines[2], "verify: crash: started");
    assert!(lines[3].starts_with("verify: crash: ok in "), "{}", r.stderr);
    let rows: Vec<&str> = r.stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "two rows and the verdict:\n{}", r.stdout);
    assert!(rows[0].starts_with("regressions ") && rows[1].starts_with("crash "), "{}", r.stdout);
    assert!(rows[1].contains("3 kills"), "{}", r.stdout);
    assert_eq!(rows[2], "verify: all 2 stages pass");
}

#[test]
fn an_unknown_stage_is_refused_naming_the_flag() {
    let r = ran(Command::new(BIN).args(["verify", "--stage", "everything"]).output().expect("run"));
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--stage") && r.stderr.contains("overlap"), "{}", r.stderr);
}

#[test]
fn on_a_terminal_the_running_stage_is_redrawn_in_place() {
    let Ok(script) = which("script") else {
        // util-linux's script is on every Debian (bsdutils is essential); say so where not,
        // and fail under CI, as a skipped PostgreSQL test does.
        assert!(std::env::var_os("CI").is_none(), "no script(1) to give verify a terminal");
        eprintln!("SKIPPED: no script(1) to give verify a terminal");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let typescript = dir.path().join("typescript");
    let traces = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/traces");
    let command = format!("{BIN} verify --stage crash --kills 20 --traces {traces}");
    let out = Command::new(script)
        .args(["-qfec", &command])
        .arg(&typescript)
        .stdin(Stdio::null())
        .output()
        .expect("run script");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&typescript).expect("typescript");
    // indicatif's redraw: back to the line's start, the line erased, the new count.
    let frames: Vec<&str> = text.split("\r\x1b[2K").skip(1).collect();
    assert!(frames.len() >= 2, "not redrawn in place:\n{text:?}");
    assert!(
        frames.iter().any(|f| f.starts_with("verify: crash: ") && f.contains(" kills, ")),
        "no count of kills:\n{text:?}"
    );
    let end = text.find("verify: crash: ok in ").expect("the end line");
    assert!(text.find("verify: crash: started").is_some_and(|start| start < end), "{text:?}");
}

/// The program `name` on `PATH`.
fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    let path = std::env::var_os("PATH").ok_or(())?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file()).ok_or(())
}
