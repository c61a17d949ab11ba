//! `retryq serve-demo` as a process, against what broke it in issue 16 (item 11): a send cut
//! off mid-body left a truncated order that the retry then "duplicated", stalled clients were
//! never timed out, and the inbox grew without bound. Its flags for those limits are checked
//! here too; the happy paths with `retryq work --url` are in tests/http.rs.
//!
//! Everything runs on 127.0.0.1, every socket has a timeout and every wait a bound.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{BIN, FAST, enqueue, read_only, start_demo, url_worker, wait};
use retryq::{DeadReason, Status};
use serde_json::Value;

/// A `retryq serve-demo` process, killed when dropped.
struct Demo {
    child: Child,
    /// `127.0.0.1:PORT`.
    addr: String,
    url: String,
}

impl Demo {
    fn start(flags: &[&str]) -> Demo {
        // Only the first line is read: the rest of standard output goes with the reader.
        let (child, _, url) = start_demo(flags, Stdio::null());
        let addr = url.trim_start_matches("http://").trim_end_matches("/orders").to_owned();
        Demo { child, addr, url }
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(&self.addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("read timeout");
        stream.set_write_timeout(Some(Duration::from_secs(10))).expect("write timeout");
        stream
    }

    /// A GET's JSON body.
    fn get(&self, target: &str) -> Value {
        let mut response = ureq::get(format!("http://{}{target}", self.addr)).call().expect("get");
        let body = response.body_mut().with_config().limit(64 << 20).read_to_string().expect("body");
        serde_json::from_str(&body).unwrap_or_else(|_| panic!("not JSON: {body:.200}"))
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A database in a temporary directory, and a worker on it.
struct Store {
    dir: tempfile::TempDir,
}

impl Store {
    fn new() -> Store {
        Store { dir: tempfile::Builder::new().prefix("retryq-serve-demo-").tempdir().expect("tempdir") }
    }

    fn enqueue(&self, id: &str, payload: &str) {
        enqueue(&self.dir.path().join("q.db"), id, payload, 3, 60_000);
    }

    fn job(&self, id: &str) -> retryq::Job {
        read_only(&self.dir.path().join("q.db")).get(id).expect("get").expect("job")
    }

    /// Runs a worker `--until-idle` against `url`; it must exit 0 within 20 s.
    fn work(&self, url: &str, flags: &[&str]) {
        let mut child = url_worker(&self.dir.path().join("q.db"), &[url])
            .arg("--until-idle")
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("work");
        assert_eq!(wait(&mut child, Duration::from_secs(20)).code(), Some(0));
    }
}

#[test]
fn a_send_cut_short_stores_nothing_and_its_retry_stores_the_whole_order() {
    // The case: a worker killed during its POST of a 1,048,000-byte payload, after
    // 786,432 bytes. Its retry was answered `200 duplicate` and the job ended `done` with a
    // corrupt order.
    let demo = Demo::start(&[]);
    let payload = "x".repeat(1_048_000);
    let mut cut = demo.connect();
    let head = format!(
        "POST /orders HTTP/1.1\r\nHost: {}\r\nIdempotency-Key: order-1\r\nContent-Length: {}\r\n\r\n",
        demo.addr,
        payload.len()
    );
    cut.write_all(head.as_bytes()).expect("head");
    cut.write_all(&payload.as_bytes()[..786_432]).expect("part of the body");
    drop(cut);
    let start = Instant::now();
    while demo.get("/stats")["requests"] != 1 {
        assert!(start.elapsed() < Duration::from_secs(5), "the cut request was never counted");
        thread::sleep(Duration::from_millis(10));
    }
    let store = Store::new();
    store.enqueue("order-1", &payload);
    store.work(&demo.url, &FAST);
    let job = store.job("order-1");
    assert_eq!((job.status, job.attempts), (Status::Done, 1));
    let inbox = demo.get("/inbox");
    let orders = inbox["orders"].as_array().expect("orders");
    assert_eq!(orders.len(), 1, "{:.300}", inbox.to_string());
    assert_eq!(orders[0]["payload"].as_str().map(str::len), Some(1_048_000));
    let stats = demo.get("/stats");
    assert_eq!(
        (&stats["rejected"], &stats["orders"], &stats["duplicates"]),
        (&1.into(), &1.into(), &0.into())
    );
}

#[test]
fn slow_clients_time_out_and_the_inbox_is_capped_by_flags() {
    let demo = Demo::start(&["--read-timeout", "300ms", "--inbox-max-orders", "1"]);
    // A client that connects and sends nothing is answered 408 and closed.
    let mut stalled = demo.connect();
    let start = Instant::now();
    let mut answer = String::new();
    let _ = stalled.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{answer:?}");
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    // One order fits; the other is refused with 507, made permanent here so that the
    // worker does not wait out its lease.
    let store = Store::new();
    store.enqueue("a", "crisps");
    store.enqueue("b", "nuts");
    store.work(&demo.url, &[&FAST[..], &["--permanent-status", "507"]].concat());
    let (a, b) = (store.job("a"), store.job("b"));
    let (done, dead) = if a.status == Status::Done { (a, b) } else { (b, a) };
    assert_eq!(done.status, Status::Done);
    assert_eq!((dead.status, dead.dead_reason), (Status::Dead, Some(DeadReason::Permanent)));
    let error = dead.last_error.expect("error");
    assert!(
        error.starts_with("HTTP 507 Insufficient Storage") && error.contains("the inbox is full"),
        "{error}"
    );
    let stats = demo.get("/stats");
    assert_eq!(
        (&stats["orders"], &stats["full"], &stats["refused_connections"]),
        (&1.into(), &1.into(), &1.into())
    );
}

#[test]
fn bad_limits_are_refused_by_name() {
    for (flags, named) in [
        (&["--read-timeout", "0"][..], "--read-timeout"),
        (&["--read-timeout", "3600001ms"], "--read-timeout"),
        (&["--inbox-max-orders", "0"], "--inbox-max-orders"),
        (&["--inbox-max-bytes", "0"], "--inbox-max-bytes"),
        (&["--inbox-max-bytes", "-1"], "--inbox-max-bytes"),
    ] {
        let mut child = Command::new(BIN)
            .arg("serve-demo")
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        // Bounded: a value taken by mistake would start a server that runs until killed.
        let code = wait(&mut child, Duration::from_secs(5)).code();
        let mut err = String::new();
        child.stderr.take().expect("stderr").read_to_string(&mut err).expect("stderr");
        assert_eq!(code, Some(2), "{flags:?}: {err}");
        assert!(err.contains(named), "{flags:?} should name {named}: {err}");
    }
}
