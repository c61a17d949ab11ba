//! What retryq prints, through the real binary, when the output misbehaves or the text is
//! hostile: a closed pipe ends a command quietly (exit 141, no panic), a full disk is an
//! error naming standard output, a standard error that cannot be written stops nothing, and
//! stored text never reaches the terminal with its control characters.

mod common;

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{BIN, command, fresh};

fn run(command: &mut Command) -> (Option<i32>, String, String) {
    let out: Output = command.output().expect("run retryq");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A database with a done job `a` and a dead job `b` whose error is long.
fn with_jobs() -> (tempfile::TempDir, PathBuf) {
    let (dir, db) = fresh("retryq-out-");
    for id in ["a", "b"] {
        let (code, _, err) = run(&mut command(
            &db,
            &["enqueue", "--id", id, "--payload", id, "--max-attempts", "1", "--ttl", "10m"],
        ));
        assert_eq!(code, Some(0), "{err}");
    }
    let exec = "if [ \"$RETRYQ_JOB_ID\" = b ]; then echo nope >&2; exit 65; fi";
    let (code, _, err) = run(&mut command(&db, &["work", "--worker", "w", "--exec", exec, "--until-idle"]));
    assert_eq!(code, Some(0), "{err}");
    (dir, db)
}

/// The commands that print something on standard output.
fn printing_commands() -> Vec<Vec<&'static str>> {
    vec![
        vec!["dead"],
        vec!["dead", "--json"],
        vec!["history", "b"],
        vec!["history", "b", "--json"],
        vec!["stats"],
        vec!["stats", "--json"],
        vec!["stats", "--prometheus"],
        vec!["get", "a"],
        vec!["audit"],
        vec!["enqueue", "--id", "a", "--payload", "a", "--max-attempts", "1", "--ttl", "10m"],
        vec!["redrive", "--id", "a", "--add-attempts", "1", "--ttl", "10m"],
        vec!["check", "--list-bugs"],
        vec!["simulate", "--clients", "2", "--runs", "1"],
    ]
}

/// `retryq dead | head -c1` panicked with a backtrace (exit 101). A pipe whose reader is
/// gone before the first write: every write fails with EPIPE, deterministically.
#[test]
fn a_closed_standard_output_ends_every_command_quietly_with_141() {
    let (_dir, db) = with_jobs();
    for args in printing_commands() {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let (code, _, err) = run(command(&db, &args).stdout(writer));
        assert_eq!(code, Some(141), "{args:?}: {err}");
        assert_eq!(err, "", "{args:?}: quiet, no panic, no message");
    }
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut replay = command(&db, &["replay"]);
    let mut child =
        replay.stdin(Stdio::piped()).stdout(writer).stderr(Stdio::piped()).spawn().expect("replay");
    child.stdin.take().expect("stdin").write_all(b"{\"op\":\"stats\",\"now\":0}\n").expect("trace");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(141), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `retryq stats >/dev/full` panicked: it is an error naming standard output.
#[test]
fn a_full_standard_output_is_an_error_naming_it() {
    let (_dir, db) = with_jobs();
    for args in printing_commands() {
        let full = File::create("/dev/full").expect("/dev/full");
        let (code, _, err) = run(command(&db, &args).stdout(full));
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(
            err.contains("retryq: error: cannot write standard output: No space left"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// `work 2>/dev/full` died (exit 101) before claiming: a log that cannot be written must
/// not stop the worker. Nor does a note or an error message.
#[test]
fn a_standard_error_that_cannot_be_written_stops_nothing() {
    let (dir, db) = fresh("retryq-out-");
    let (code, _, err) = run(&mut command(
        &db,
        &["enqueue", "--id", "a", "--payload", "p", "--max-attempts", "1", "--ttl", "10m"],
    ));
    assert_eq!(code, Some(0), "{err}");
    let full = || File::create("/dev/full").expect("/dev/full");
    let (code, _, _) =
        run(command(&db, &["work", "--worker", "w", "--exec", "true", "--until-idle"]).stderr(full()));
    assert_eq!(code, Some(0), "the worker ran with its logs going nowhere");
    let (code, out, err) = run(&mut command(&db, &["get", "a"]));
    assert!(code == Some(0) && out.contains("\"status\":\"done\""), "{out}{err}");
    // `dead` notes "no dead jobs" on standard error; a missing database is an error message.
    let (code, _, _) = run(command(&db, &["dead"]).stderr(full()));
    assert_eq!(code, Some(0));
    let (code, _, _) = run(command(&dir.path().join("missing.db"), &["stats"]).stderr(full()));
    assert_eq!(code, Some(1), "the error's exit status, not a panic's");
}

/// Whether `text` holds a character a terminal acts on (anything below space but the
/// newline ending each line, DEL, C1).
fn has_control(text: &str) -> bool {
    text.chars().any(|c| c != '\n' && c.is_control())
}

/// `retryq dead` printed a receiver's `ESC]0;…BEL ESC[2J` raw. Ids, worker names and
/// errors come from outside; every text output escapes their control characters.
#[test]
fn stored_text_reaches_the_terminal_escaped() {
    let (dir, db) = fresh("retryq-out-");
    let id = "evil\x1b]0;pwned\x07\x1b[2J\rINFO forged";
    let worker = "w\x1b[31m\nred";
    let (code, _, err) = run(&mut command(
        &db,
        &["enqueue", "--id", id, "--payload", "p", "--max-attempts", "1", "--ttl", "10m"],
    ));
    assert_eq!(code, Some(0), "{err}");
    let handler = dir.path().join("handler.sh");
    fs::write(&handler, "printf 'bad \\033]0;t\\007\\033[2J\\302\\233 end\\n' >&2; exit 65\n")
        .expect("handler");
    let exec = format!("sh {}", handler.display());
    let (code, _, log) =
        run(command(&db, &["work", "--worker", worker, "--exec", &exec, "--until-idle"])
            .env("RUST_LOG", "info"));
    assert_eq!(code, Some(0), "{log}");
    assert!(!has_control(&log), "the worker's log: {log:?}");
    assert!(log.contains("job=evil\\x1b]0;pwned\\x07\\x1b[2J\\x0dINFO forged attempt=1"), "{log}");

    let (code, out, err) = run(&mut command(&db, &["dead"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(!has_control(&out), "dead: {out:?}");
    assert!(out.contains("evil\\x1b]0;pwned\\x07\\x1b[2J\\x0dINFO forged"), "{out}");
    assert!(out.contains("bad \\x1b]0;t\\x07\\x1b[2J\\u{9b} end"), "{out}");
    let (code, out, err) = run(&mut command(&db, &["history", id]));
    assert_eq!(code, Some(0), "{err}");
    assert!(!has_control(&out), "history: {out:?}");
    assert!(out.contains("worker w\\x1b[31m\\x0ared"), "{out}");
    // JSON keeps the text exact: its encoder escapes control characters itself.
    let (_, out, _) = run(&mut command(&db, &["dead", "--json"]));
    let job: serde_json::Value = serde_json::from_str(out.trim()).expect("json");
    assert_eq!(job["id"], id);
}

/// `explore --port 0` printed port 0 and listened on another: the address printed is the
/// one served.
#[test]
fn explore_on_port_0_prints_the_port_it_serves() {
    let mut child = Command::new(BIN)
        .args(["explore", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("explore");
    let mut first = String::new();
    let read = BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first);
    let served = read.ok().and_then(|_| {
        let address = first.split("http://").nth(1)?.split('/').next()?.to_owned();
        let port: u16 = address.rsplit(':').next()?.parse().ok()?;
        // The Explorer may take a moment to listen after printing.
        let answer = (0..50).find_map(|_| {
            std::thread::sleep(Duration::from_millis(100));
            let mut stream = TcpStream::connect(&address).ok()?;
            stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
            stream.write_all(b"GET / HTTP/1.0\r\n\r\n").ok()?;
            let mut answer = String::new();
            stream.take(64).read_to_string(&mut answer).ok()?;
            Some(answer)
        });
        Some((port, answer))
    });
    let _ = child.kill();
    let _ = child.wait();
    let (port, answer) = served.unwrap_or_else(|| panic!("no address printed: {first:?}"));
    assert_ne!(port, 0, "{first}");
    let answer = answer.unwrap_or_else(|| panic!("nothing serves {first}"));
    assert!(answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// Every command's JSON goes through one writer with SPEC 5.4's escapes: U+2028, U+2029,
/// U+0085 and the other C1 controls in an id, a payload or a `last_error` taken from a
/// command's standard error come out as `\uXXXX`, never raw, and read back as they were.
#[test]
fn json_output_escapes_line_separators_and_c1_controls() {
    let (_dir, db) = fresh("retryq-json-");
    let id = "a\u{2028}b\u{2029}c\u{85}d\u{9b}e";
    let (code, _, err) = run(&mut command(
        &db,
        &["enqueue", "--id", id, "--payload", "p\u{2028}q", "--max-attempts", "1", "--ttl", "10m"],
    ));
    assert_eq!(code, Some(0), "{err}");
    // The command's standard error holds U+0085, U+2028 and U+009B: the job's last_error.
    let exec = r"printf 'x\302\205y\342\200\250z\302\233w' >&2; exit 65";
    let (code, _, err) = run(&mut command(&db, &["work", "--worker", "w", "--exec", exec, "--until-idle"]));
    assert_eq!(code, Some(0), "{err}");
    let raw = |c: char| matches!(c, '\u{80}'..='\u{9f}' | '\u{2028}' | '\u{2029}');
    for args in [
        vec!["get", id],
        vec!["list", "--status", "dead", "--json"],
        vec!["dead", "--json"],
        vec!["history", id, "--json"],
        vec!["stats", "--json"],
    ] {
        let (code, out, err) = run(&mut command(&db, &args));
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(!out.contains(raw), "{args:?} printed a raw separator or C1 control: {out:?}");
        for line in out.lines() {
            let value: serde_json::Value = serde_json::from_str(line).expect("JSON");
            if let Some(shown) = value.get("id").and_then(|v| v.as_str()) {
                assert_eq!(shown, id, "{args:?}");
            }
            if let Some(error) = value.get("last_error").and_then(|v| v.as_str()) {
                assert!(error.contains("x\u{85}y\u{2028}z\u{9b}w"), "{args:?}: {error:?}");
            }
            // The history's attempt record holds the error too.
            if let Some(error) = value.pointer("/ended_attempt/error").and_then(|v| v.as_str()) {
                assert!(error.contains("x\u{85}y\u{2028}z\u{9b}w"), "{args:?}: {error:?}");
            }
        }
        // Stats names no id or error.
        if args[0] != "stats" {
            assert!(
                out.contains("\\u2028") && out.contains("\\u0085") && out.contains("\\u009b"),
                "{args:?}: {out}"
            );
        }
    }
}

/// Help and version text written to a full disk is an error, not a silent exit 0.
#[test]
fn help_and_version_to_a_full_disk_exit_non_zero() {
    for args in [vec!["--help"], vec!["--version"], vec!["help", "work"], vec!["work", "--help"], vec!["-V"]]
    {
        let full = File::options().write(true).open("/dev/full").expect("/dev/full");
        let out = Command::new(BIN).args(&args).stdout(full).stderr(Stdio::piped()).output().expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("standard output"), "{args:?}: {err}");
        // Written where it can be, it is what it was.
        let ok = Command::new(BIN).args(&args).output().expect("run");
        assert_eq!(ok.status.code(), Some(0), "{args:?}");
        assert!(!ok.stdout.is_empty(), "{args:?}");
    }
}
