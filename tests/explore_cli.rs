//! `retryq explore` as a user runs it: its help, and what its server answers (the Explorer's
//! JSON endpoints, read here without a browser).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, retryq, stdout};

/// Kills the child when dropped, so a failing test leaves no server behind.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A running `retryq explore` on a free port.
struct Explorer {
    port: u16,
    _server: Running,
    /// The server's standard output, kept open while it runs.
    _output: BufReader<std::process::ChildStdout>,
}

impl Explorer {
    /// Starts `retryq explore` with `args` on a port it picks itself (`--port 0`, read from
    /// the address it prints: a port picked here and handed over could be taken by another
    /// test's server in between) and waits until it answers.
    fn start(args: &[&str]) -> Explorer {
        let mut child = Command::new(BIN)
            .arg("explore")
            .args(["--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("retryq explore starts");
        let mut output = BufReader::new(child.stdout.take().expect("stdout"));
        let server = Running(child);
        let mut first = String::new();
        output.read_line(&mut first).expect("explore prints its address");
        let port = first
            .split("http://127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("no address in {first:?}"));
        let explorer = Explorer { port, _server: server, _output: output };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "explore never listened on {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        explorer
    }

    /// One request; the response's status line and body. HTTP/1.0, so that the body comes
    /// whole rather than in chunks.
    fn request(&self, method: &str, path: &str) -> (String, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
        write!(
            stream,
            "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .expect("request");
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
        (head.lines().next().unwrap_or("").to_string(), body.to_string())
    }

    fn json(&self, path: &str) -> serde_json::Value {
        let (status, body) = self.request("GET", path);
        assert!(is_ok(&status), "{path}: {status}");
        serde_json::from_str(&body).expect("JSON")
    }

    /// Runs the Explorer's checker to the end; its count of unique states.
    fn unique_states(&self) -> u64 {
        let (status, _) = self.request("POST", "/.runtocompletion");
        assert!(is_ok(&status), "{status}");
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let view = self.json("/.status");
            if view["done"] == true {
                return view["unique_state_count"].as_u64().expect("a count");
            }
            assert!(Instant::now() < deadline, "the Explorer's check never finished: {view}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The steps out of the state reached by `path` (`/.states/0/…`), as (action, outcome).
    fn steps(&self, path: &str) -> Vec<(String, String)> {
        let steps = self.json(path);
        steps
            .as_array()
            .expect("a list of steps")
            .iter()
            .map(|step| {
                let text = |key: &str| step[key].as_str().unwrap_or("").to_string();
                (text("action"), text("outcome"))
            })
            .collect()
    }
}

/// Whether a status line says 200.
fn is_ok(status: &str) -> bool {
    status.split_whitespace().nth(1) == Some("200")
}

fn check_unique_states(args: &[&str]) -> u64 {
    let output = retryq(&[&["check", "--json"], args].concat());
    let report: serde_json::Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON object");
    report["unique_states"].as_u64().expect("a count")
}

#[test]
fn explore_serves_the_explorer_on_loopback() {
    let explorer = Explorer::start(&["--jobs", "1", "--horizon", "3"]);
    let (status, body) = explorer.request("GET", "/.status");
    assert!(is_ok(&status), "{status}");
    assert!(body.contains("QueueModel"), "{body}");
}

/// Every flag `explore --help` mentions is one `explore` takes (it once sent readers to
/// `check`'s `--list-bugs`).
#[test]
fn explore_help_names_only_its_own_flags() {
    let output = retryq(&["explore", "--help"]);
    assert!(output.status.success());
    let help = stdout(&output);
    let defined: Vec<&str> = help
        .lines()
        .filter(|line| line.trim_start().starts_with('-'))
        .filter_map(|line| line.split_whitespace().take(2).find(|w| w.starts_with("--")))
        .map(|flag| flag.trim_end_matches(','))
        .collect();
    for flag in ["--bug", "--jobs", "--workers", "--horizon", "--port", "--no-symmetry"] {
        assert!(defined.contains(&flag), "{flag} is not an option of explore:\n{help}");
    }
    let mentioned = help.split(|c: char| c.is_whitespace() || "()[],.;:`'\"".contains(c));
    for word in mentioned.filter(|w| w.starts_with("--") && w.len() > 2) {
        let flag = word.split('=').next().unwrap_or(word);
        assert!(
            defined.contains(&flag),
            "explore --help mentions {flag}, which explore does not take:\n{help}"
        );
    }
}

/// The Explorer counts the states `check` counts: reduced by worker symmetry the same way, and
/// not reduced with `--no-symmetry`.
#[test]
fn explore_reduces_by_symmetry_as_check_does() {
    let bounds = ["--jobs", "1", "--horizon", "4"];
    let reduced = Explorer::start(&bounds).unique_states();
    assert_eq!(reduced, check_unique_states(&bounds));
    let no_symmetry = [&bounds[..], &["--no-symmetry"]].concat();
    let full = Explorer::start(&no_symmetry).unique_states();
    assert_eq!(full, check_unique_states(&no_symmetry));
    assert!(reduced < full, "symmetry reduction merges worlds: {reduced} vs {full}");
}

/// Actions and steps name workers and jobs as `check`'s traces do: `wé1`, `jöb-z`, and each
/// step as its trace line.
#[test]
fn explore_names_workers_as_check_traces_do() {
    let explorer = Explorer::start(&["--jobs", "1", "--horizon", "4"]);
    let first = explorer.steps("/.states/0");
    assert!(first.iter().all(|(action, _)| !action.contains("worker")), "{first:?}");
    let enqueue = first.iter().position(|(action, _)| action.starts_with("enqueue")).expect("an enqueue");
    let claim = explorer
        .steps(&format!("/.states/0/{enqueue}"))
        .into_iter()
        .find(|(action, _)| action == "wé1 claims")
        .expect("wé1 claims");
    let outcome = &claim.1;
    assert!(outcome.starts_with(r#"{"op":"claim","worker":"wé1","now":0}"#), "{outcome}");
    assert!(outcome.contains(r#"#   model: {"ok":"claimed","id":"jöb-z""#), "{outcome}");
    assert!(outcome.contains("# wé1 holds jöb-z (attempt 1, lease until 2)"), "{outcome}");
}
