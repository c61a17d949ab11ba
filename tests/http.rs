//! `retryq work --url` against `retryq serve-demo`, both as processes on 127.0.0.1: duplicates
//! dropped, pushback stored, permanent statuses, node avoidance across URLs, timeouts within
//! the deadline, and the flags of both commands.

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{BIN, FAST, enqueue, kill, now_ms, read_only, spawn_logged, start_demo, url_worker, wait};
use retryq::{DeadReason, Job, Queue, Status};
use serde_json::Value;

/// A `retryq serve-demo` process.
struct Demo {
    child: Child,
    stdout: BufReader<ChildStdout>,
    url: String,
    base: String,
}

impl Demo {
    fn start(flags: &[&str]) -> Demo {
        let (child, stdout, url) = start_demo(flags, Stdio::piped());
        let base = url.trim_end_matches("/orders").to_owned();
        Demo { child, stdout, url, base }
    }

    fn get(&self, path: &str) -> Value {
        let mut response = ureq::get(format!("{}{path}", self.base)).call().expect("get");
        serde_json::from_str(&response.body_mut().read_to_string().expect("body")).expect("json")
    }

    fn stats(&self) -> Value {
        self.get("/stats")
    }

    /// Waits (at most 5 s) until no request is being served, then the counts.
    fn settled(&self) -> Value {
        let start = Instant::now();
        loop {
            let stats = self.stats();
            if stats["in_flight"] == 0 || start.elapsed() > Duration::from_secs(5) {
                return stats;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn inbox_keys(&self) -> Vec<String> {
        let inbox = self.get("/inbox");
        let orders = inbox["orders"].as_array().expect("orders");
        orders.iter().map(|o| o["key"].as_str().expect("key").to_owned()).collect()
    }

    /// Sends `signal`; the exit status, the `summary` line and standard error.
    fn stop(mut self, signal: &str) -> (ExitStatus, Value, String) {
        kill(self.child.id(), signal);
        let status = wait(&mut self.child, Duration::from_secs(5));
        let mut summary = Value::Null;
        for line in (&mut self.stdout).lines() {
            let line: Value = serde_json::from_str(&line.expect("line")).expect("a JSON line");
            if line.get("summary").is_some() {
                summary = line["summary"].clone();
            }
        }
        let mut err = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
        }
        (status, summary, err)
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A database in a temporary directory.
struct Store {
    _dir: tempfile::TempDir,
    db: PathBuf,
}

impl Store {
    fn new() -> Store {
        let dir = tempfile::Builder::new().prefix("retryq-http-").tempdir().expect("tempdir");
        let db = dir.path().join("q.db");
        Store { _dir: dir, db }
    }

    fn enqueue(&self, id: &str, payload: &str, max_attempts: u64, ttl_ms: u64) -> u64 {
        enqueue(&self.db, id, payload, max_attempts, ttl_ms)
    }

    fn queue(&self) -> Queue {
        read_only(&self.db)
    }

    fn job(&self, id: &str) -> Job {
        self.queue().get(id).expect("get").expect("job")
    }

    fn worker(&self, urls: &[&str], flags: &[&str]) -> Child {
        spawn_logged(url_worker(&self.db, urls).args(flags))
    }

    /// Runs a worker `--until-idle`; its log. It must exit 0 within `within`.
    fn work_until_idle(&self, urls: &[&str], flags: &[&str], within: Duration) -> String {
        let mut child = self.worker(urls, &[&["--until-idle"], flags].concat());
        let status = wait(&mut child, within);
        let out = child.wait_with_output().expect("output");
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(status.code(), Some(0), "{log}");
        log
    }

    fn audit_is_clean(&self) {
        let audit = self.queue().audit().expect("audit");
        assert!(audit.is_clean(), "{:?}", audit.violations);
    }
}

/// A URL nothing listens on.
fn dead_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    format!("http://{}/orders", listener.local_addr().expect("addr"))
}

#[test]
fn a_flaky_slow_warehouse_gets_every_order_once() {
    // 30 % of requests fail with 503; a quarter take 500 ms, past the worker's 200 ms
    // timeout, and are decided all the same (accepted, unless they fail): the sender retries,
    // the inbox drops the repeat.
    let demo = Demo::start(&["--fail-rate", "0.3", "--slow", "500ms", "--slow-rate", "0.25", "--seed", "7"]);
    let store = Store::new();
    let ids: Vec<String> = (0..30).map(|i| format!("order-{i:02}")).collect();
    for id in &ids {
        store.enqueue(id, &format!("{{\"snack\":\"{id}\"}}"), 8, 60_000);
    }
    let start = Instant::now();
    let log = store.work_until_idle(
        &[&demo.url],
        &["--backoff-base", "10ms", "--backoff-cap", "50ms", "--lease", "5s", "--timeout", "200ms"],
        Duration::from_secs(20),
    );
    let took = start.elapsed();
    let stats = demo.settled();
    let jobs: Vec<Job> = ids.iter().map(|id| store.job(id)).collect();
    let attempts: u64 = jobs.iter().map(|j| j.attempts).sum();
    let done: Vec<&str> = jobs.iter().filter(|j| j.status == Status::Done).map(|j| j.id.as_str()).collect();
    assert!(jobs.iter().all(|j| matches!(j.status, Status::Done | Status::Dead)), "{jobs:?}");
    assert!(jobs.iter().all(|j| j.last_node.as_deref() == Some(demo.url.as_str())), "{jobs:?}");
    // Each claim was one request; the inbox holds each order once, and every done job's.
    let n = |field: &str| stats[field].as_u64().expect(field);
    assert_eq!(n("requests"), attempts, "one POST per attempt: {stats}\n{log}");
    assert_eq!(n("requests"), n("orders") + n("duplicates") + n("failed") + n("in_flight"), "{stats}");
    assert!(n("requests") > n("orders") && n("failed") > 0 && n("duplicates") > 0, "{stats}");
    let keys = demo.inbox_keys();
    let mut distinct = keys.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), keys.len(), "an order twice in the inbox: {keys:?}");
    assert!(done.iter().all(|id| keys.iter().any(|k| k == id)), "a done job's order is missing");
    assert!(keys.iter().all(|k| ids.contains(k)));
    eprintln!(
        "flaky warehouse: {} jobs ({} done) in {took:?}: {attempts} attempts; warehouse {stats}",
        ids.len(),
        done.len()
    );
    for dead in jobs.iter().filter(|j| j.status == Status::Dead) {
        eprintln!(
            "  dead: {} {:?} after {} attempts: {:?}",
            dead.id, dead.dead_reason, dead.attempts, dead.last_error
        );
    }
    store.audit_is_clean();
    let (status, summary, err) = demo.stop("TERM");
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(summary["requests"], stats["requests"]);
    assert!(err.contains("requests received") && err.contains("distinct orders accepted"), "{err}");
}

#[test]
fn retry_after_shifts_the_stored_reservation() {
    let demo = Demo::start(&["--fail-rate", "1", "--retry-after", "30"]);
    let store = Store::new();
    store.enqueue("a", "crisps", 3, 120_000);
    let before = now_ms();
    let mut worker = store.worker(&[&demo.url], &FAST);
    let start = Instant::now();
    while store.job("a").attempts == 0 || store.job("a").status != Status::Pending {
        assert!(start.elapsed() < Duration::from_secs(5), "no attempt recorded");
        thread::sleep(Duration::from_millis(20));
    }
    let after = now_ms();
    kill(worker.id(), "TERM");
    assert_eq!(wait(&mut worker, Duration::from_secs(5)).code(), Some(0));
    let job = store.job("a");
    // Without the pushback the backoff would be at most 10 ms.
    let at = job.available_at.expect("reserved");
    assert!(at >= before + 30_000 && at <= after + 30_000, "{before} {at} {after}");
    let error = job.last_error.expect("error");
    assert!(error.contains("HTTP 503") && error.contains("Retry-After: 30"), "{error}");
    assert_eq!(job.last_node.as_deref(), Some(demo.url.as_str()));
    assert_eq!(demo.stats()["requests"], 1, "no retry before the reservation");
}

#[test]
fn retry_after_past_the_deadline_ends_the_job_now() {
    let demo = Demo::start(&["--fail-rate", "1", "--retry-after", "120"]);
    let store = Store::new();
    store.enqueue("a", "crisps", 5, 10_000);
    let start = Instant::now();
    store.work_until_idle(&[&demo.url], &FAST, Duration::from_secs(5));
    assert!(start.elapsed() < Duration::from_secs(5));
    let job = store.job("a");
    assert_eq!((job.status, job.dead_reason, job.attempts), (Status::Dead, Some(DeadReason::Deadline), 1));
    assert!(job.last_error.expect("error").contains("no retry sooner than 120000 ms"));
}

#[test]
fn a_dont_retry_pushback_is_permanent_with_the_reason() {
    let demo = Demo::start(&["--fail-rate", "1", "--pushback-ms", "-1", "--stats-every", "50ms"]);
    let store = Store::new();
    store.enqueue("a", "crisps", 5, 60_000);
    store.work_until_idle(&[&demo.url], &FAST, Duration::from_secs(5));
    let job = store.job("a");
    assert_eq!((job.status, job.dead_reason, job.attempts), (Status::Dead, Some(DeadReason::Permanent), 1));
    let error = job.last_error.expect("error");
    assert!(error.contains("Retry-Pushback-Ms: -1: the receiver asked not to be retried"), "{error}");
    // `retryq dead` shows it to the operator.
    let out = Command::new(BIN).args(["dead", "--json"]).arg("--db").arg(&store.db).output().expect("dead");
    assert!(String::from_utf8_lossy(&out.stdout).contains("asked not to be retried"));
    thread::sleep(Duration::from_millis(120));
    let (status, summary, _) = demo.stop("INT");
    assert_eq!(status.code(), Some(0));
    assert_eq!((summary["requests"].as_u64(), summary["failed"].as_u64()), (Some(1), Some(1)));
}

#[test]
fn a_400_is_permanent() {
    // The warehouse refuses an empty order with 400; the other job goes through.
    let demo = Demo::start(&[]);
    let store = Store::new();
    store.enqueue("empty", "", 5, 60_000);
    store.enqueue("crisps", "crisps", 5, 60_000);
    store.work_until_idle(&[&demo.url], &FAST, Duration::from_secs(5));
    let empty = store.job("empty");
    assert_eq!(
        (empty.status, empty.dead_reason, empty.attempts),
        (Status::Dead, Some(DeadReason::Permanent), 1)
    );
    let error = empty.last_error.expect("error");
    assert!(error.starts_with("HTTP 400 Bad Request from ") && error.contains("empty order"), "{error}");
    assert_eq!(store.job("crisps").status, Status::Done);
    // Configured: a 409 from the warehouse, made permanent by the table.
    let demo = Demo::start(&["--fail-rate", "1", "--fail-status", "409"]);
    store.enqueue("b", "nuts", 5, 60_000);
    store.work_until_idle(
        &[&demo.url],
        &[&FAST[..], &["--retry-status", "503"]].concat(),
        Duration::from_secs(5),
    );
    let b = store.job("b");
    assert_eq!((b.status, b.dead_reason), (Status::Dead, Some(DeadReason::Permanent)));
}

#[test]
fn a_dead_url_gets_one_attempt_and_the_rest_go_to_the_live_one() {
    let demo = Demo::start(&[]);
    let dead = dead_url();
    let store = Store::new();
    let ids = ["a", "b", "c", "d", "e"];
    for id in ids {
        store.enqueue(id, "crisps", 3, 60_000);
    }
    // One attempt at a time: attempts in flight together are all sent before the first
    // failure is known, and round robin would send several to the dead URL.
    let one_at_a_time = [&FAST[..], &["--concurrency", "1"]].concat();
    store.work_until_idle(&[&dead, &demo.url], &one_at_a_time, Duration::from_secs(5));
    let jobs: Vec<Job> = ids.iter().map(|id| store.job(id)).collect();
    assert!(
        jobs.iter().all(|j| j.status == Status::Done && j.last_node.as_deref() == Some(demo.url.as_str()))
    );
    let attempts: u64 = jobs.iter().map(|j| j.attempts).sum();
    // One attempt (the first, round robin starting there) reached the dead URL; after that
    // it was left out (RocketMQ's table: 600 s after a failure).
    assert_eq!(attempts, 6, "{jobs:?}");
    assert_eq!(demo.stats()["requests"], 5);
}

#[test]
fn a_retry_avoids_the_url_its_last_attempt_reached_even_in_another_worker() {
    let demo = Demo::start(&[]);
    let dead = dead_url();
    let store = Store::new();
    // A worker that knows only the dead URL spends the job's one attempt there.
    store.enqueue("a", "crisps", 1, 60_000);
    store.work_until_idle(&[&dead], &FAST, Duration::from_secs(5));
    let job = store.job("a");
    assert_eq!((job.status, job.dead_reason), (Status::Dead, Some(DeadReason::Exhausted)));
    assert_eq!(job.last_node.as_deref(), Some(dead.as_str()));
    assert!(job.last_error.expect("error").starts_with(&format!("could not reach {dead}")));
    // An operator redrives it; a fresh worker, whose round robin starts at the dead URL,
    // sends the retry to the other one because the job's last attempt reached the first.
    let db = store.db.to_str().expect("path");
    let (code, err) = run(&["redrive", "--db", db, "--id", "a", "--add-attempts", "2", "--ttl", "1m"]);
    assert_eq!(code, Some(0), "{err}");
    store.work_until_idle(&[&dead, &demo.url], &FAST, Duration::from_secs(5));
    let job = store.job("a");
    assert_eq!((job.status, job.attempts), (Status::Done, 2));
    assert_eq!(job.last_node.as_deref(), Some(demo.url.as_str()));
    assert_eq!(demo.stats()["requests"], 1);
    store.audit_is_clean();
}

#[test]
fn timeouts_are_retried_and_never_run_past_the_deadline() {
    let demo = Demo::start(&["--slow", "5s"]);
    let store = Store::new();
    let deadline = store.enqueue("a", "crisps", 5, 1_500);
    let start = Instant::now();
    store.work_until_idle(
        &[&demo.url],
        &["--timeout", "1s", "--backoff-base", "10ms", "--backoff-cap", "10ms", "--lease", "5s"],
        Duration::from_secs(8),
    );
    let took = start.elapsed();
    let job = store.job("a");
    // Attempt 1 timed out after 1000 ms and was retried; attempt 2 was given only what was
    // left before the deadline, then the job died of it.
    assert_eq!((job.status, job.dead_reason, job.attempts), (Status::Dead, Some(DeadReason::Deadline), 2));
    let error = job.last_error.expect("error");
    assert!(error.starts_with("timed out after") && !error.contains("(limit 1000 ms)"), "{error}");
    let history = store.queue().history("a").expect("history");
    let end = history.last().expect("entries");
    assert_eq!(end.to, Status::Dead);
    assert!(
        end.at >= deadline && end.at < deadline + 500,
        "recorded at {} for a deadline of {deadline}",
        end.at
    );
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert!(
        history.iter().filter(|h| h.to == Status::Pending && h.from.is_some()).count() == 1,
        "{history:?}"
    );
}

/// A command's exit status and standard error.
fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(BIN).args(args).stdin(Stdio::null()).output().expect("run");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_flags_are_refused_by_name() {
    let store = Store::new();
    let db = store.db.to_str().expect("path");
    let work =
        |flags: &[&str]| run(&[&["work", "--worker", "w", "--db", db, "--until-idle"], flags].concat());
    for (flags, named) in [
        (&["--url", "ftp://example.com/"][..], "--url"),
        (&["--url", "example.com"], "--url"),
        (&["--url", "http://127.0.0.1:99999/orders"], "--url"),
        (&["--url", "http://127.0.0.1:0/orders"], "--url"),
        (&["--url", "http://alice:s3cr3t@127.0.0.1:65536/orders"], "--url"),
        (&["--url", "http://127.0.0.1:9/", "--retry-status", ""], "--retry-status"),
        (&["--url", "http://127.0.0.1:9/", "--retry-status", ","], "--retry-status"),
        (&["--url", "http://127.0.0.1:9/", "--permanent-status", " "], "--permanent-status"),
        (&["--url", "http://127.0.0.1:9/", "--retry-status", "200"], "--retry-status"),
        (&["--url", "http://127.0.0.1:9/", "--retry-status", "5xx"], "--retry-status"),
        (&["--url", "http://127.0.0.1:9/", "--permanent-status", "503"], "--permanent-status"),
        (&["--url", "http://127.0.0.1:9/", "--retry-budget-ratio", "-1"], "--retry-budget-ratio"),
        (&["--url", "http://127.0.0.1:9/", "--retry-budget-ttl", "500ms"], "--retry-budget-ttl"),
        (&["--url", "http://127.0.0.1:9/", "--fault-latency", "100ms,50ms"], "--fault-latency"),
        (&["--url", "http://127.0.0.1:9/", "--fault-unavailable", "1ms,2ms"], "--fault-unavailable"),
        (&["--url", "http://127.0.0.1:9/", "--content-type", "a\u{1}b"], "--content-type"),
        (&["--url", "http://127.0.0.1:9/", "--exec", "true"], "--exec"),
        (&["--exec", "true", "--retry-status", "503"], "--retry-status"),
        (&[], "--exec"),
    ] {
        let (code, err) = work(flags);
        assert_eq!(code, Some(2), "{flags:?}: {err}");
        assert!(err.contains(named), "{flags:?} should name {named}: {err}");
        assert!(!err.contains("s3cr3t"), "{flags:?}: the password was printed: {err}");
    }
    assert!(!store.db.exists(), "a refused worker created the database");
    // `none` is the way to list no status.
    let (code, err) = work(&["--url", "http://127.0.0.1:9/", "--retry-status", "none"]);
    assert_eq!(code, Some(0), "{err}");
    let busy = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = busy.local_addr().expect("addr").port().to_string();
    for (flags, named) in [
        (&["--fail-rate", "1.5"][..], "--fail-rate"),
        (&["--fail-rate", "NaN"], "--fail-rate"),
        (&["--slow-rate", "-0.5"], "--slow-rate"),
        (&["--fail-status", "200"], "--fail-status"),
        (&["--threads", "0"], "--threads"),
        (&["--slow", "-1"], "--slow"),
        (&["--port", &port], "--port"),
    ] {
        let (code, err) = run(&[&["serve-demo"], flags].concat());
        assert_eq!(code, Some(2), "{flags:?}: {err}");
        assert!(err.contains(named), "{flags:?} should name {named}: {err}");
    }
}

/// A receiver on 127.0.0.1 that reads each request whole and answers it with `response`;
/// its URL.
fn answering(response: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/orders", listener.local_addr().expect("addr"));
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = std::io::Read::read_exact(&mut reader, &mut body);
            let _ = std::io::Write::write_all(&mut stream, response.as_bytes());
        }
    });
    url
}

#[test]
fn a_pushback_too_large_to_count_is_a_long_delay_not_a_refusal() {
    let url = answering(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-Pushback-Ms: 99999999999999999999\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n",
    );
    let store = Store::new();
    store.enqueue("a", "crisps", 5, 60_000);
    store.work_until_idle(&[&url], &FAST, Duration::from_secs(5));
    // As `Retry-After: 99999999999999999999` would: no retry before the deadline, so the job
    // ends now, of its deadline; not dead(permanent) as if the receiver had said "never".
    let job = store.job("a");
    assert_eq!((job.status, job.dead_reason, job.attempts), (Status::Dead, Some(DeadReason::Deadline), 1));
    let error = job.last_error.expect("error");
    assert!(error.contains("no retry sooner than 18446744073709551615 ms"), "{error}");
}

#[test]
fn credentials_in_a_url_are_sent_but_never_stored_or_printed() {
    let demo = Demo::start(&[]);
    let with_password = |url: &str| url.replacen("http://", "http://alice:s3cr3t@", 1);
    let shown = |url: &str| url.replacen("http://", "http://***@", 1);
    let store = Store::new();
    store.enqueue("a", "crisps", 3, 60_000);
    let log = store.work_until_idle(&[&with_password(&demo.url)], &FAST, Duration::from_secs(5));
    let a = store.job("a");
    assert_eq!(a.status, Status::Done);
    assert_eq!(a.last_node.as_deref(), Some(shown(&demo.url).as_str()));
    // A URL that fails puts itself in last_error too.
    let dead = dead_url();
    store.enqueue("b", "nuts", 1, 60_000);
    let dead_log = store.work_until_idle(&[&with_password(&dead)], &FAST, Duration::from_secs(5));
    let b = store.job("b");
    assert_eq!(b.last_node.as_deref(), Some(shown(&dead).as_str()));
    let error = b.last_error.expect("error");
    assert!(error.starts_with(&format!("could not reach {}", shown(&dead))), "{error}");
    let db = store.db.to_str().expect("path");
    let (_, dead_out) = {
        let out = Command::new(BIN).args(["dead", "--json", "--db", db]).output().expect("dead");
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    assert!(dead_out.contains("***@"), "{dead_out}");
    for (what, text) in [("log", &log), ("log", &dead_log), ("dead", &dead_out)] {
        assert!(!text.contains("s3cr3t") && !text.contains("alice"), "{what}: {text}");
    }
    assert!(log.contains("***@"), "{log}");
}

/// The README's `--exec examples/deliver.sh` speaks the exec protocol to a receiver: an
/// accepted order is done (and in the inbox once, keyed by the job's id), a 4xx refusal is
/// `permanent`, a 503 is retried until the budget is spent.
#[test]
fn the_readmes_exec_script_delivers_and_answers_in_exit_statuses() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/deliver.sh");
    for (flags, want) in [
        (&[][..], (Status::Done, None, 1)),
        (&["--fail-rate", "1", "--fail-status", "422"][..], (Status::Dead, Some(DeadReason::Permanent), 1)),
        (&["--fail-rate", "1", "--fail-status", "503"][..], (Status::Dead, Some(DeadReason::Exhausted), 2)),
    ] {
        let demo = Demo::start(flags);
        let store = Store::new();
        store.enqueue("order-1", "{\"snack\":\"crisps\"}", 2, 60_000);
        let mut worker = Command::new(BIN);
        worker.args([
            "work",
            "--worker",
            "w1",
            "--until-idle",
            "--backoff-base",
            "10ms",
            "--backoff-cap",
            "20ms",
        ]);
        worker.arg("--db").arg(&store.db).args(["--exec", script]).env("DELIVER_URL", &demo.url);
        for proxy in common::PROXIES {
            worker.env_remove(proxy);
        }
        let mut child = spawn_logged(&mut worker);
        let status = wait(&mut child, Duration::from_secs(20));
        let log = String::from_utf8_lossy(&child.wait_with_output().expect("output").stderr).into_owned();
        assert_eq!(status.code(), Some(0), "{log}");
        let job = store.job("order-1");
        assert_eq!((job.status, job.dead_reason, job.attempts), want, "{flags:?}: {log}");
        let inbox = demo.inbox_keys();
        assert_eq!(inbox, if flags.is_empty() { vec!["order-1".to_owned()] } else { vec![] }, "{flags:?}");
    }
}
