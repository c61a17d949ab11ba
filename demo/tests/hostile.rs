//! The warehouse against clients that lie, stall or flood, over raw TCP on 127.0.0.1: each
//! test is a defect of issue 16, item 11 (short bodies stored as orders, large bodies cut
//! and accepted, stalled connections stopping the server, memory without bound).
//!
//! Every socket has a timeout and every loop a count, so that a test that fails does so
//! in seconds instead of hanging.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use retryq_demo::{
    Config, DEFAULT_INBOX_MAX_BYTES, INBOX_PAGE, INBOX_PAGE_MAX, MAX_BODY_BYTES, MAX_KEY_BYTES, MAX_WAITING,
    Server,
};
use serde_json::Value;

/// How long a test client waits for an answer before it counts as none.
const PATIENCE: Duration = Duration::from_secs(10);

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(PATIENCE)).expect("read timeout");
    stream.set_write_timeout(Some(PATIENCE)).expect("write timeout");
    stream
}

/// The head of a POST to /orders with these extra header lines.
fn post_head(headers: &[String]) -> String {
    let mut head = "POST /orders HTTP/1.1\r\nHost: 127.0.0.1\r\n".to_owned();
    for header in headers {
        head.push_str(header);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head
}

/// The answer on `stream` (after any interim `100 Continue`): its status and body, or
/// `None` when none came whole (the stream timed out, was reset or closed first).
fn answer(stream: &mut TcpStream) -> Option<(u16, String)> {
    let mut bytes = Vec::new();
    let mut chunk = [0; 64 << 10];
    for _ in 0..100_000 {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some((head, rest)) = text.split_once("\r\n\r\n") {
            let status: u16 = head.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()?;
            if status == 100 {
                bytes = rest.as_bytes().to_vec();
                continue;
            }
            let header = |wanted: &str| {
                head.lines().find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case(wanted).then(|| value.trim().to_owned())
                })
            };
            if header("transfer-encoding").is_some() {
                // Chunked (the warehouse never answers so; other servers may).
                if rest.ends_with("\r\n0\r\n\r\n") || rest == "0\r\n\r\n" {
                    return Some((status, unchunk(rest)?));
                }
            } else {
                let length: usize = header("content-length")?.parse().ok()?;
                if rest.len() >= length {
                    return Some((status, rest.get(..length)?.to_owned()));
                }
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => bytes.extend_from_slice(chunk.get(..n)?),
        }
    }
    None
}

/// A chunked body, decoded.
fn unchunk(mut rest: &str) -> Option<String> {
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        if size == 0 {
            return Some(body);
        }
        body.push_str(after.get(..size)?);
        rest = after.get(size + 2..)?;
    }
}

/// Sends `bytes` on a new connection (writing from another thread, so that an answer
/// before the end of the body cannot deadlock the test), optionally shuts the sending
/// side, and reads the answer.
fn exchange(addr: SocketAddr, bytes: Vec<u8>, shut: bool) -> Option<(u16, String)> {
    let mut stream = connect(addr);
    let mut writer = stream.try_clone().expect("clone");
    let sender = thread::spawn(move || {
        // The server may answer and close before it all went: that is its right.
        let _ = writer.write_all(&bytes);
        if shut {
            let _ = writer.shutdown(Shutdown::Write);
        }
    });
    let got = answer(&mut stream);
    let _ = sender.join();
    got
}

/// A whole, well-formed order.
fn order(key: &str, payload: &[u8]) -> Vec<u8> {
    let head = post_head(&[format!("Idempotency-Key: {key}"), format!("Content-Length: {}", payload.len())]);
    [head.as_bytes(), payload].concat()
}

fn get(addr: SocketAddr, target: &str) -> (u16, Value) {
    let request = format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    let (status, body) = exchange(addr, request.into_bytes(), false).expect("an answer to a GET");
    (status, serde_json::from_str(&body).unwrap_or(Value::String(body)))
}

fn stats(addr: SocketAddr) -> Value {
    get(addr, "/stats").1
}

fn n(value: &Value, field: &str) -> u64 {
    value[field].as_u64().unwrap_or_else(|| panic!("{field} in {value}"))
}

/// Waits (at most 5 s) until the warehouse has counted `requests` order requests.
fn until_requests(addr: SocketAddr, requests: u64) {
    let start = Instant::now();
    while n(&stats(addr), "requests") < requests {
        assert!(start.elapsed() < Duration::from_secs(5), "never counted {requests}: {}", stats(addr));
        thread::sleep(Duration::from_millis(10));
    }
}

/// Every order in the inbox, page by page.
fn inbox(addr: SocketAddr) -> Vec<Value> {
    let mut orders = Vec::new();
    let mut after = 0;
    for _ in 0..1000 {
        let (status, page) = get(addr, &format!("/inbox?after={after}"));
        assert_eq!(status, 200, "{page}");
        orders.extend(page["orders"].as_array().expect("orders").iter().cloned());
        match page["next"].as_u64() {
            Some(next) => after = next,
            None => return orders,
        }
    }
    panic!("more than 1000 pages");
}

#[test]
fn a_body_shorter_than_its_content_length_is_refused_and_stores_nothing() {
    let server = Server::start(Config::default(), 0).expect("start");
    let addr = server.addr();
    // Declares 1,000,000 bytes, sends 2 and closes its side.
    let head = post_head(&["Idempotency-Key: a".into(), "Content-Length: 1000000".into()]);
    let (status, body) = exchange(addr, format!("{head}ab").into_bytes(), true).expect("an answer");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("ended after 2 of the 1000000 bytes"), "{body}");
    // A sender killed three quarters of the way through a 1,048,000-byte order: it never
    // reads an answer.
    let payload = vec![b'x'; 1_048_000];
    let mut cut = order("b", &payload);
    cut.truncate(cut.len() - (1_048_000 - 786_432));
    let mut stream = connect(addr);
    stream.write_all(&cut).expect("send");
    drop(stream);
    until_requests(addr, 2);
    let s = stats(addr);
    assert_eq!((n(&s, "orders"), n(&s, "rejected")), (0, 2), "{s}");
    assert!(inbox(addr).is_empty());
    // Its retry is a new order, stored whole, not a duplicate of a corrupt one.
    let (status, body) = exchange(addr, order("b", &payload), false).expect("an answer");
    assert_eq!((status, body.as_str()), (201, r#"{"accepted":"b"}"#));
    let stored = inbox(addr);
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["payload"].as_str().map(str::len), Some(1_048_000));
}

#[test]
fn a_body_over_the_limit_is_refused_with_413_and_one_at_the_limit_is_taken() {
    let server = Server::start(Config::default(), 0).expect("start");
    let addr = server.addr();
    let limit = usize::try_from(MAX_BODY_BYTES).expect("usize");
    let (status, body) = exchange(addr, order("over", &vec![b'x'; limit + 1]), false).expect("an answer");
    assert_eq!(status, 413, "{body}");
    // Refused from the head alone: a client that declares a terabyte is not read from.
    let head = post_head(&["Idempotency-Key: tera".into(), "Content-Length: 1000000000000".into()]);
    let start = Instant::now();
    let (status, _) = exchange(addr, head.into_bytes(), false).expect("an answer");
    assert_eq!(status, 413);
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    let (status, body) = exchange(addr, order("at", &vec![b'x'; limit]), false).expect("an answer");
    assert_eq!(status, 201, "{body}");
    let stored = inbox(addr);
    assert_eq!(stored.len(), 1);
    assert_eq!(
        (stored[0]["key"].as_str(), stored[0]["payload"].as_str().map(str::len)),
        (Some("at"), Some(limit))
    );
    let s = stats(addr);
    assert_eq!((n(&s, "requests"), n(&s, "rejected"), n(&s, "orders")), (3, 2, 1), "{s}");
}

#[test]
fn a_body_without_a_content_length_is_refused_with_411() {
    let server = Server::start(Config::default(), 0).expect("start");
    let addr = server.addr();
    let chunked = post_head(&["Idempotency-Key: a".into(), "Transfer-Encoding: chunked".into()]);
    let (status, body) =
        exchange(addr, format!("{chunked}2\r\nab\r\n0\r\n\r\n").into_bytes(), false).expect("an answer");
    assert_eq!(status, 411, "{body}");
    // A body that ends when the connection does.
    let bare = post_head(&["Idempotency-Key: b".into()]);
    let (status, body) = exchange(addr, format!("{bare}ab").into_bytes(), true).expect("an answer");
    assert_eq!(status, 411, "{body}");
    let invalid =
        post_head(&["Idempotency-Key: c".into(), "Content-Length: 2".into(), "Content-Length: 3".into()]);
    let (status, body) = exchange(addr, format!("{invalid}abc").into_bytes(), true).expect("an answer");
    assert_eq!(status, 400, "{body}");
    assert!(inbox(addr).is_empty());
    assert_eq!(n(&stats(addr), "rejected"), 3);
}

#[test]
fn an_oversized_key_or_head_is_refused_with_431() {
    let server = Server::start(Config::default(), 0).expect("start");
    let addr = server.addr();
    // 200 KB: past the head's limit.
    let (status, body) = exchange(addr, order(&"k".repeat(200_000), b"crisps"), false).expect("an answer");
    assert_eq!(status, 431, "{body}");
    // Past the key's limit, within the head's.
    let (status, body) =
        exchange(addr, order(&"k".repeat(MAX_KEY_BYTES + 1), b"crisps"), false).expect("an answer");
    assert_eq!(status, 431, "{body}");
    // Too many header fields.
    let many: Vec<String> = (0..100).map(|i| format!("X-{i}: y")).collect();
    let (status, _) = exchange(addr, post_head(&many).into_bytes(), false).expect("an answer");
    assert_eq!(status, 431);
    // At the limit: taken.
    let (status, _) = exchange(addr, order(&"k".repeat(MAX_KEY_BYTES), b"crisps"), false).expect("an answer");
    assert_eq!(status, 201);
    let s = stats(addr);
    assert_eq!((n(&s, "orders"), n(&s, "rejected"), n(&s, "refused_connections")), (1, 1, 2), "{s}");
}

#[test]
fn stalled_connections_time_out_and_do_not_stop_the_warehouse() {
    let timeout = Duration::from_millis(500);
    let config = Config { read_timeout: timeout, ..Config::default() };
    let threads = config.threads;
    let server = Server::start(config, 0).expect("start");
    let addr = server.addr();
    // As many stalled connections as threads, each with a head and part of the body it
    // declares (what stopped the warehouse before), and four more that send nothing.
    let mut stalled: Vec<TcpStream> = (0..threads + 4)
        .map(|i| {
            let mut stream = connect(addr);
            if i < threads {
                let head = post_head(&[format!("Idempotency-Key: s{i}"), "Content-Length: 100000".into()]);
                stream.write_all(format!("{head}partial").as_bytes()).expect("send");
            }
            stream
        })
        .collect();
    thread::sleep(Duration::from_millis(100));
    let start = Instant::now();
    let served = exchange(addr, order("a", b"crisps"), false);
    let took = start.elapsed();
    assert_eq!(served.map(|(status, _)| status), Some(201), "not served within {PATIENCE:?}");
    assert!(took < timeout * 4, "{took:?}");
    // Each stalled connection was answered 408 and closed.
    for stream in &mut stalled {
        assert_eq!(answer(stream).map(|(status, _)| status), Some(408));
    }
    let s = stats(addr);
    // The ones that sent a head are order requests refused; the others are connections.
    assert_eq!((n(&s, "rejected"), n(&s, "refused_connections")), (16, 4), "{s}");
    assert!(inbox(addr).iter().all(|o| o["key"] == "a"));
}

#[test]
fn fewer_stalled_connections_than_threads_delay_nobody() {
    // A timeout far longer than the test: nothing is cut meanwhile.
    let config = Config { read_timeout: Duration::from_secs(30), ..Config::default() };
    let threads = config.threads;
    let server = Server::start(config, 0).expect("start");
    let addr = server.addr();
    let _stalled: Vec<TcpStream> = (0..threads - 1)
        .map(|i| {
            let mut stream = connect(addr);
            let head = post_head(&[format!("Idempotency-Key: s{i}"), "Content-Length: 100000".into()]);
            stream.write_all(head.as_bytes()).expect("send");
            stream
        })
        .collect();
    thread::sleep(Duration::from_millis(100));
    let start = Instant::now();
    let served = exchange(addr, order("a", b"crisps"), false);
    assert_eq!(served.map(|(status, _)| status), Some(201));
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
}

#[test]
fn a_client_sending_a_byte_at_a_time_is_cut_at_the_deadline() {
    let timeout = Duration::from_millis(500);
    let server = Server::start(Config { read_timeout: timeout, ..Config::default() }, 0).expect("start");
    let mut stream = connect(server.addr());
    let mut writer = stream.try_clone().expect("clone");
    let start = Instant::now();
    // 10 s of trickle if nothing cut it.
    let trickle = thread::spawn(move || {
        for byte in order("a", &[b'x'; 100]) {
            if writer.write_all(&[byte]).is_err() {
                return;
            }
            thread::sleep(Duration::from_millis(50));
        }
    });
    let got = answer(&mut stream);
    let took = start.elapsed();
    assert_eq!(got.map(|(status, _)| status), Some(408));
    assert!(took < timeout * 4, "{took:?}");
    drop(stream);
    let _ = trickle.join();
}

#[test]
fn connections_past_the_threads_and_their_queue_are_answered_503_at_once() {
    let config = Config { read_timeout: Duration::from_secs(3), threads: 2, ..Config::default() };
    let server = Server::start(config, 0).expect("start");
    let addr = server.addr();
    // Two served (once the threads have taken them), MAX_WAITING waiting: all stalled.
    let mut stalled: Vec<TcpStream> = (0..2).map(|_| connect(addr)).collect();
    thread::sleep(Duration::from_millis(300));
    stalled.extend((0..MAX_WAITING).map(|_| connect(addr)));
    thread::sleep(Duration::from_millis(100));
    let start = Instant::now();
    let mut extra = connect(addr);
    let got = answer(&mut extra);
    assert_eq!(got.map(|(status, _)| status), Some(503));
    assert!(start.elapsed() < Duration::from_secs(1), "{:?}", start.elapsed());
    assert_eq!(server.stats().refused_connections, 1);
}

#[test]
fn the_inbox_keeps_at_most_its_byte_cap_and_refuses_new_orders_with_507() {
    // The default cap, with orders of the largest body: the issue's 100 orders of 2 MiB.
    let server = Server::start(Config::default(), 0).expect("start");
    let addr = server.addr();
    let payload = vec![b'x'; usize::try_from(MAX_BODY_BYTES).expect("usize")];
    let mut statuses = Vec::new();
    for i in 0..40 {
        let (status, _) =
            exchange(addr, order(&format!("order-{i:03}"), &payload), false).expect("an answer");
        statuses.push(status);
    }
    let fit = usize::try_from(DEFAULT_INBOX_MAX_BYTES / (MAX_BODY_BYTES + 9)).expect("usize");
    assert_eq!(fit, 31);
    assert!(
        statuses[..fit].iter().all(|s| *s == 201) && statuses[fit..].iter().all(|s| *s == 507),
        "{statuses:?}"
    );
    // A duplicate of a kept order is still known, and dropped.
    let (status, _) = exchange(addr, order("order-000", &payload), false).expect("an answer");
    assert_eq!(status, 200);
    let s = stats(addr);
    assert_eq!((n(&s, "orders"), n(&s, "full"), n(&s, "duplicates")), (31, 9, 1), "{s}");
    assert!(n(&s, "inbox_bytes") <= DEFAULT_INBOX_MAX_BYTES, "{s}");
}

#[test]
fn the_inbox_keeps_at_most_its_count_of_orders() {
    let server = Server::start(Config { inbox_max_orders: 3, ..Config::default() }, 0).expect("start");
    let addr = server.addr();
    let statuses: Vec<u16> = (0..5)
        .map(|i| exchange(addr, order(&i.to_string(), b"crisps"), false).expect("an answer").0)
        .collect();
    assert_eq!(statuses, [201, 201, 201, 507, 507]);
    let (status, body) = exchange(addr, order("3", b"crisps"), false).expect("an answer");
    assert_eq!(status, 507);
    assert!(body.contains("the inbox is full"), "{body}");
}

#[test]
fn the_inbox_is_read_a_page_at_a_time() {
    let server = Server::start(Config::default(), 0).expect("start");
    let addr = server.addr();
    for i in 1..=150 {
        let (status, _) = exchange(addr, order(&format!("o{i}"), b"crisps"), false).expect("an answer");
        assert_eq!(status, 201);
    }
    let (status, first) = get(addr, "/inbox");
    assert_eq!(status, 200);
    let orders = first["orders"].as_array().expect("orders");
    assert_eq!(orders.len(), INBOX_PAGE);
    assert_eq!((orders[0]["seq"].as_u64(), orders[0]["key"].as_str()), (Some(1), Some("o1")));
    assert_eq!(first["next"], 100);
    let (_, rest) = get(addr, "/inbox?after=100&limit=1000");
    let orders = rest["orders"].as_array().expect("orders");
    assert_eq!((orders.len(), orders[0]["key"].as_str()), (50, Some("o101")));
    assert_eq!(rest["next"], Value::Null);
    let (_, one) = get(addr, "/inbox?after=149&limit=1");
    assert_eq!((one["orders"][0]["key"].as_str(), &one["next"]), (Some("o150"), &Value::Null));
    let (_, past) = get(addr, "/inbox?after=99999999999999999999");
    assert_eq!(past.get("error").and_then(Value::as_str).map(|e| e.starts_with("after=")), Some(true));
    for bad in ["limit=0", &format!("limit={}", INBOX_PAGE_MAX + 1), "after=-1", "limit=x"] {
        let (status, body) = get(addr, &format!("/inbox?{bad}"));
        assert_eq!(status, 400, "{bad}: {body}");
    }
    assert_eq!(inbox(addr).len(), 150);
}

#[test]
fn expect_100_continue_is_answered_before_the_body() {
    let server = Server::start(Config::default(), 0).expect("start");
    let mut stream = connect(server.addr());
    let head =
        post_head(&["Idempotency-Key: a".into(), "Content-Length: 6".into(), "Expect: 100-continue".into()]);
    stream.write_all(head.as_bytes()).expect("head");
    let mut interim = Vec::new();
    let mut byte = [0];
    while !interim.ends_with(b"\r\n\r\n") && interim.len() < 1000 {
        stream.read_exact(&mut byte).expect("100 Continue");
        interim.push(byte[0]);
    }
    assert!(interim.starts_with(b"HTTP/1.1 100 "), "{}", String::from_utf8_lossy(&interim));
    stream.write_all(b"crisps").expect("body");
    assert_eq!(answer(&mut stream).map(|(status, _)| status), Some(201));
}
