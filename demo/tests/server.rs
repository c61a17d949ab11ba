//! The warehouse on HTTP, on a free local port.

use std::thread;
use std::time::{Duration, Instant};

use retryq_demo::{Config, Server, Stats};

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).build().new_agent()
}

fn post(url: &str, key: Option<&str>, body: &str) -> (u16, String) {
    let mut request = agent().post(url);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    let mut response = request.send(body).expect("post");
    let status = response.status().as_u16();
    (status, response.body_mut().read_to_string().expect("body"))
}

fn get(url: &str) -> (u16, String) {
    let mut response = agent().get(url).call().expect("get");
    (response.status().as_u16(), response.body_mut().read_to_string().expect("body"))
}

#[test]
fn orders_duplicates_stats_and_inbox() {
    let server = Server::start(Config::default(), 0).expect("start");
    let url = server.url();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/orders"), "{url}");
    let base = format!("http://{}", server.addr());
    assert_eq!(post(&url, Some("a"), "crisps"), (201, r#"{"accepted":"a"}"#.into()));
    assert_eq!(post(&url, Some("a"), "crisps"), (200, r#"{"duplicate":"a"}"#.into()));
    assert_eq!(post(&format!("{base}/any/path"), Some("b"), "nuts").0, 201);
    assert_eq!(post(&url, None, "crisps").0, 400);
    let (status, stats) = get(&format!("{base}/stats"));
    assert_eq!(status, 200);
    assert_eq!(
        stats,
        r#"{"requests":4,"orders":2,"duplicates":1,"failed":0,"rejected":1,"full":0,"in_flight":0,"inbox_bytes":12,"refused_connections":0}"#
    );
    let (_, inbox) = get(&format!("{base}/inbox"));
    let inbox: serde_json::Value = serde_json::from_str(&inbox).expect("json");
    assert_eq!(
        inbox,
        serde_json::json!({"orders": [
            {"seq": 1, "key": "a", "payload": "crisps", "requests": 2},
            {"seq": 2, "key": "b", "payload": "nuts", "requests": 1},
        ], "next": null})
    );
    assert_eq!(get(&format!("{base}/nothing")).0, 404);
    assert_eq!(post(&format!("{base}/stats"), Some("c"), "x").0, 405);
    let stats = server.stop();
    assert_eq!((stats.requests, stats.orders), (4, 2), "GETs and 405s are not order requests");
}

#[test]
fn injected_failures_carry_the_pushback_headers() {
    let config =
        Config { fail_rate: 1.0, retry_after_s: Some(3), pushback_ms: Some(-1), ..Config::default() };
    let server = Server::start(config, 0).expect("start");
    let response = agent().post(&server.url()).header("Idempotency-Key", "a").send("x").expect("post");
    assert_eq!(response.status().as_u16(), 503);
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert_eq!((header("retry-after"), header("retry-pushback-ms")), (Some("3".into()), Some("-1".into())));
    assert_eq!(server.stop(), Stats { requests: 1, failed: 1, ..Stats::default() });
}

#[test]
fn slow_requests_are_served_side_by_side() {
    let config = Config { slow: Duration::from_millis(300), threads: 8, ..Config::default() };
    let server = Server::start(config, 0).expect("start");
    let url = server.url();
    let start = Instant::now();
    let senders: Vec<_> = (0..8)
        .map(|i| {
            let url = url.clone();
            thread::spawn(move || post(&url, Some(&i.to_string()), "x").0)
        })
        .collect();
    let statuses: Vec<u16> = senders.into_iter().map(|s| s.join().expect("sender")).collect();
    let took = start.elapsed();
    assert_eq!(statuses, [201; 8]);
    // One at a time would take 2.4 s; eight at once about 0.3 s.
    assert!(took >= Duration::from_millis(300) && took < Duration::from_millis(2000), "{took:?}");
    assert_eq!(server.stop().orders, 8);
}

#[test]
fn a_port_in_use_is_an_error() {
    let first = Server::start(Config::default(), 0).expect("start");
    let err = Server::start(Config::default(), first.addr().port()).err().expect("refused");
    assert!(err.to_string().contains("cannot listen on 127.0.0.1:"), "{err}");
}
