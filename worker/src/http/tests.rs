//! The HTTP transport against a canned local server: one connection per request, each
//! answered with the next scripted response (or none), each request kept for the test.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;

use retryq::Lease;
use retryq_control::budget::TpsBudget;

use super::*;

/// What the canned server does with a connection.
#[derive(Clone)]
enum Canned {
    /// Writes these bytes and closes.
    Answer(String),
    /// Reads the request, then holds the connection open this long without answering.
    Hang(Duration),
}

/// A request as received: its head (request line and headers, lower-cased names) and body.
#[derive(Debug)]
struct Received {
    line: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == &name.to_ascii_lowercase()).map(|(_, v)| v.as_str())
    }
}

/// Serves `script` in order, one connection each, on 127.0.0.1; the URL and the requests.
fn canned(script: Vec<Canned>) -> (String, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/orders", listener.local_addr().expect("addr"));
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for canned in script {
            let Ok((stream, _)) = listener.accept() else { return };
            let Some(received) = read_request(&stream) else { return };
            let _ = tx.send(received);
            let mut stream = stream;
            match canned {
                Canned::Answer(bytes) => {
                    let _ = stream.write_all(bytes.as_bytes());
                }
                Canned::Hang(d) => thread::sleep(d),
            }
        }
    });
    (url, rx)
}

fn read_request(stream: &TcpStream) -> Option<Received> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers.iter().find(|(n, _)| n == "content-length")?.1.parse().ok()?;
    let mut body = vec![0; length];
    std::io::Read::read_exact(&mut reader, &mut body).ok()?;
    Some(Received { line: line.trim_end().to_owned(), headers, body: String::from_utf8(body).ok()? })
}

/// A complete response with `Connection: close`.
fn answer(status: &str, headers: &[&str], body: &str) -> Canned {
    let mut text = format!("HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for h in headers {
        text.push_str(h);
        text.push_str("\r\n");
    }
    text.push_str("\r\n");
    text.push_str(body);
    Canned::Answer(text)
}

/// A port nothing listens on (bound, then let go).
fn dead_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    format!("http://{}/orders", listener.local_addr().expect("addr"))
}

fn job(id: &str, attempt: u64) -> Claimed {
    Claimed {
        lease: Lease::new("w", id, attempt),
        lease_until: 0,
        payload: "{\"sku\":42}".into(),
        deadline: 0,
        last_node: None,
        kind: String::new(),
    }
}

fn http(urls: &[String]) -> Http {
    Http::new(urls, HttpOptions::default()).expect("transport")
}

const SECOND: Duration = Duration::from_secs(1);

#[test]
fn a_2xx_is_ok_and_the_request_carries_the_key_the_attempt_and_the_payload() {
    let (url, rx) = canned(vec![answer("201 Created", &[], "{\"accepted\":true}")]);
    let report = http(std::slice::from_ref(&url)).attempt(&job("order-7", 3), &Window::new(5 * SECOND));
    assert_eq!(report, Ok(Report::from(Outcome::Ok).node(url.clone())));
    let r = rx.recv().expect("request");
    assert_eq!(r.line, "POST /orders HTTP/1.1");
    assert_eq!(r.header(IDEMPOTENCY_KEY), Some("order-7"));
    assert_eq!(r.header(RETRY_ATTEMPT), Some("3"));
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(r.body, "{\"sku\":42}");
}

#[test]
fn a_503_with_retry_after_in_seconds_is_retryable_with_a_floor() {
    let (url, _rx) = canned(vec![answer("503 Service Unavailable", &["Retry-After: 3"], "busy")]);
    let report = http(&[url]).attempt(&job("a", 1), &Window::new(5 * SECOND)).expect("classified");
    assert_eq!((report.outcome, report.retry_after_ms), (Outcome::Retryable, Some(3000)));
    let error = report.error.expect("error");
    assert!(error.starts_with("HTTP 503 Service Unavailable from http://127.0.0.1:"), "{error}");
    assert!(error.contains("Retry-After: 3 (no retry sooner than 3000 ms): busy"), "{error}");
}

#[test]
fn a_retry_after_date_is_counted_from_now() {
    let at = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(10));
    let header = format!("Retry-After: {at}");
    let (url, _rx) = canned(vec![answer("429 Too Many Requests", &[&header], "")]);
    let report = http(&[url]).attempt(&job("a", 1), &Window::new(5 * SECOND)).expect("classified");
    let floor = report.retry_after_ms.expect("floor");
    // An HTTP date has whole seconds: 9 to 10 s from now.
    assert!((8_000..=10_000).contains(&floor), "{floor}");
    assert_eq!(report.outcome, Outcome::Retryable);
}

#[test]
fn a_negative_pushback_is_permanent_with_the_reason() {
    let (url, _rx) = canned(vec![answer("503 Service Unavailable", &["Retry-Pushback-Ms: -1"], "stop")]);
    let report = http(&[url]).attempt(&job("a", 1), &Window::new(5 * SECOND)).expect("classified");
    assert_eq!(report.outcome, Outcome::Permanent);
    let error = report.error.expect("error");
    assert!(error.contains("Retry-Pushback-Ms: -1: the receiver asked not to be retried: stop"), "{error}");
}

#[test]
fn the_larger_of_two_pushbacks_is_the_floor() {
    let headers = ["Retry-After: 1", "Retry-Pushback-Ms: 2500"];
    let (url, _rx) = canned(vec![answer("503 Service Unavailable", &headers, "")]);
    let report = http(&[url]).attempt(&job("a", 1), &Window::new(5 * SECOND)).expect("classified");
    assert_eq!((report.outcome, report.retry_after_ms), (Outcome::Retryable, Some(2500)));
}

#[test]
fn pushback_on_a_success_is_ignored() {
    let (url, _rx) = canned(vec![answer("200 OK", &["Retry-Pushback-Ms: -1", "Retry-After: 60"], "")]);
    let report = http(&[url]).attempt(&job("a", 1), &Window::new(5 * SECOND)).expect("classified");
    assert_eq!((report.outcome, report.retry_after_ms, report.error), (Outcome::Ok, None, None));
}

#[test]
fn a_400_is_permanent_with_the_body() {
    let (url, _rx) = canned(vec![answer("400 Bad Request", &[], "{\"error\":\"no sku\"}\n")]);
    let report = http(&[url]).attempt(&job("a", 1), &Window::new(5 * SECOND)).expect("classified");
    assert_eq!(report.outcome, Outcome::Permanent);
    let error = report.error.expect("error");
    assert!(
        error.starts_with("HTTP 400 Bad Request from ") && error.ends_with(": {\"error\":\"no sku\"}"),
        "{error}"
    );
}

#[test]
fn a_redirect_is_unclassified_and_not_followed() {
    let (url, rx) = canned(vec![answer("302 Found", &["Location: http://127.0.0.1:9/elsewhere"], "")]);
    let err = http(&[url]).attempt(&job("a", 1), &Window::new(5 * SECOND)).unwrap_err();
    assert!(err.0.starts_with("HTTP 302 Found from ") && err.0.contains("unclassified"), "{err}");
    assert_eq!(rx.iter().count(), 1, "one request, no redirect");
}

#[test]
fn an_answer_that_is_not_http_is_unclassified() {
    let (url, _rx) = canned(vec![Canned::Answer("SNACKS\r\n\r\n".into())]);
    let err = http(&[url]).attempt(&job("a", 1), &Window::new(5 * SECOND)).unwrap_err();
    assert!(err.0.contains("no readable answer") && err.0.contains("unclassified"), "{err}");
}

#[test]
fn a_refused_connection_is_retryable() {
    let url = dead_url();
    let report =
        http(std::slice::from_ref(&url)).attempt(&job("a", 1), &Window::new(5 * SECOND)).expect("classified");
    assert_eq!((report.outcome, report.node.as_deref()), (Outcome::Retryable, Some(url.as_str())));
    assert!(report.error.expect("error").starts_with(&format!("could not reach {url}")));
}

#[test]
fn a_timeout_is_retryable_and_ends_at_the_timeout() {
    let (url, _rx) = canned(vec![Canned::Hang(Duration::from_secs(5))]);
    let start = Instant::now();
    let report =
        http(&[url]).attempt(&job("a", 1), &Window::new(Duration::from_millis(300))).expect("classified");
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(3), "{took:?}");
    assert_eq!(report.outcome, Outcome::Retryable);
    assert!(report.error.expect("error").contains("(limit 300 ms)"));
}

#[test]
fn a_refused_heartbeat_gives_the_request_up() {
    // The receiver holds the request for 5 s; 200 ms in, the store thread's heartbeat is
    // refused. The slot stops waiting within a look at the window, whatever the 10 s timeout.
    let (url, rx) = canned(vec![Canned::Hang(Duration::from_secs(5))]);
    let held = Arc::new(crate::held::Held::new(Instant::now(), Duration::from_secs(30), u64::MAX / 2));
    let refuser = {
        let held = Arc::clone(&held);
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(200));
            held.abandon();
        })
    };
    let window = Window::leased(
        Duration::from_secs(10),
        held,
        Duration::from_millis(500),
        Duration::from_millis(250),
        &crate::SystemClock,
    );
    let start = Instant::now();
    let report = http(std::slice::from_ref(&url)).attempt(&job("a", 1), &window).expect("classified");
    let took = start.elapsed();
    refuser.join().expect("refuser");
    assert!(rx.recv_timeout(Duration::from_secs(1)).is_ok(), "the request was sent");
    assert!(took >= Duration::from_millis(200) && took < Duration::from_secs(2), "{took:?}");
    assert_eq!(report.outcome, Outcome::Retryable);
    let error = report.error.expect("error");
    assert!(error.starts_with("gave up after ") && error.contains("a refused heartbeat"), "{error}");
}

#[test]
fn no_time_left_sends_nothing() {
    let (url, rx) = canned(vec![answer("200 OK", &[], "")]);
    let report = http(&[url]).attempt(&job("a", 1), &Window::new(Duration::ZERO)).expect("classified");
    assert_eq!(report.outcome, Outcome::Retryable);
    assert_eq!(report.node, None);
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "nothing was sent");
}

#[test]
fn the_url_the_last_attempt_reached_is_avoided() {
    let (first, first_rx) = canned(vec![answer("200 OK", &[], "")]);
    let (second, second_rx) = canned(vec![answer("200 OK", &[], "")]);
    let mut t = http(&[first.clone(), second.clone()]);
    // Round robin would start at the first URL; the job's last attempt reached it.
    let retry = Claimed { last_node: Some(first.clone()), ..job("a", 2) };
    assert_eq!(
        t.attempt(&retry, &Window::new(5 * SECOND)).expect("ok").node.as_deref(),
        Some(second.as_str())
    );
    assert!(second_rx.recv_timeout(SECOND).is_ok());
    assert!(first_rx.recv_timeout(Duration::from_millis(100)).is_err());
}

#[test]
fn a_failed_url_is_left_out_while_another_is_available() {
    let dead = dead_url();
    let (live, live_rx) = canned(vec![answer("200 OK", &[], ""); 4]);
    let mut t = http(&[dead.clone(), live.clone()]);
    let first = t.attempt(&job("a", 1), &Window::new(5 * SECOND)).expect("classified");
    assert_eq!((first.outcome, first.node.as_deref()), (Outcome::Retryable, Some(dead.as_str())));
    // Other jobs, no last node: the dead URL is not available (RocketMQ: 600 s) and the
    // round robin skips it.
    for id in ["b", "c", "d", "e"] {
        let r = t.attempt(&job(id, 1), &Window::new(5 * SECOND)).expect("ok");
        assert_eq!((r.outcome, r.node.as_deref()), (Outcome::Ok, Some(live.as_str())), "{id}");
    }
    assert_eq!(live_rx.iter().count(), 4);
}

#[test]
fn a_spent_budget_holds_the_retry_back_unsent() {
    let (url, rx) = canned(vec![answer("503 Service Unavailable", &[], ""), answer("200 OK", &[], "")]);
    let options = HttpOptions {
        budget: TpsBudget::new(1000, 0, 0.0).expect("budget"),
        budget_wait: Duration::from_millis(700),
        ..HttpOptions::default()
    };
    let mut t = Http::new(&[url], options).expect("transport");
    assert_eq!(
        t.attempt(&job("a", 1), &Window::new(5 * SECOND)).expect("classified").outcome,
        Outcome::Retryable
    );
    let held = t.attempt(&job("a", 2), &Window::new(5 * SECOND)).expect("classified");
    assert_eq!((held.outcome, held.retry_after_ms, held.node), (Outcome::Retryable, Some(700), None));
    assert!(held.error.expect("error").contains("retry budget for 127.0.0.1:"), "names the target");
    // A new job's first attempt is not a retry: it goes.
    assert_eq!(t.attempt(&job("b", 1), &Window::new(5 * SECOND)).expect("classified").outcome, Outcome::Ok);
    assert_eq!(rx.iter().count(), 2, "the held retry was never sent");
}

#[test]
fn urls_are_checked() {
    for (url, why) in [
        ("ftp://example.com/", "http or https"),
        ("example.com/orders", "http:// or https://"),
        ("/orders", "scheme"),
        ("http://", ""),
        ("http://exa mple.com/", ""),
    ] {
        let err = Http::new(&[url.to_owned()], HttpOptions::default()).err().expect("refused");
        assert!(matches!(&err, HttpError::Url { .. }) && err.to_string().contains(why), "{url}: {err}");
    }
    assert!(matches!(Http::new(&[], HttpOptions::default()), Err(HttpError::NoUrl)));
    let https = ["https://example.com/orders".to_owned(), "http://[::1]:8080/x".to_owned()];
    assert!(Http::new(&https, HttpOptions::default()).is_ok());
    let bad_type = HttpOptions { content_type: "a\nb".into(), ..HttpOptions::default() };
    assert!(matches!(Http::new(&https, bad_type), Err(HttpError::ContentType(_))));
}

#[test]
fn credentials_in_the_url_go_as_basic_auth_and_nowhere_else() {
    let (url, rx) = canned(vec![answer("503 Service Unavailable", &[], "")]);
    let with_password = url.replacen("http://", "http://alice:s3cr3t@", 1);
    let mut t = http(&[with_password]);
    assert_eq!(t.urls(), [url.replacen("http://", "http://***@", 1)]);
    let report = t.attempt(&job("a", 1), &Window::new(5 * SECOND)).expect("classified");
    let received = rx.recv_timeout(5 * SECOND).expect("a request");
    assert_eq!(received.header("authorization"), Some("Basic YWxpY2U6czNjcjN0"));
    assert_eq!(received.line, "POST /orders HTTP/1.1");
    let stored = format!("{:?} {:?}", report.node, report.error);
    assert!(stored.contains("http://***@127.0.0.1") && !stored.contains("s3cr3t"), "{stored}");
}

#[test]
fn any_id_is_a_key_and_a_plain_one_is_itself() {
    assert_eq!(idempotency_key("order-7:a/b"), "order-7:a/b");
    assert_eq!(idempotency_key("caf\u{e9} 100%"), "caf%C3%A9%20100%25");
    assert_eq!(idempotency_key("a\nb"), "a%0Ab");
    // Different ids, different keys: % itself is encoded.
    assert_ne!(idempotency_key("%41"), idempotency_key("A"));
}

#[test]
fn retry_after_reads_seconds_and_dates() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    assert_eq!(retry_after("120", now), Some(120_000));
    assert_eq!(retry_after(" 0 ", now), Some(0));
    assert_eq!(retry_after("99999999999999999999999", now), Some(u64::MAX));
    let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
    assert_eq!(retry_after(&later, now), Some(30_000));
    assert_eq!(retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), Some(0), "a past date");
    for bad in ["", "soon", "-5", "1.5", "5 s"] {
        assert_eq!(retry_after(bad, now), None, "{bad:?}");
    }
}
