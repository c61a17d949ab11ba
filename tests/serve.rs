//! `retryq serve` over HTTP, on SQLite and on PostgreSQL: who is admitted (loopback hosts
//! without a token, the token everywhere else), that a change needs the dashboard's CSRF
//! token, that nothing from a job is markup, and that `/metrics` parses as Prometheus text
//! and agrees with `stats`. The browser's view is `tests/dashboard.rs`.

mod common;

use common::{Serving, fresh, kill, start_serve, wait};
use retryq::{Backend, Completion, Lease, NewJob, Outcome, Report, open_backend};
use std::io::{Read, Write};
use std::net::TcpStream;

/// A job whose id, payload and error are markup: the dashboard must show them as text.
pub const MARKUP_ID: &str = "<b>bold</b>&x";
const MARKUP_PAYLOAD: &str = "<script>window.__pwned = 1</script>";
const MARKUP_ERROR: &str = "<img src=x onerror=\"window.__pwned = 2\">";

/// One job of each kind: done, dead (with markup everywhere), pending in another queue, and
/// leased.
fn fill(store: &mut dyn Backend) {
    let job = |id, payload, queue| NewJob {
        id,
        payload,
        max_attempts: 1,
        deadline: 1 << 50,
        now: 1_000,
        queue: Some(queue),
        ..NewJob::default()
    };
    store.enqueue(&job("ok-1", "{}", "default")).expect("enqueue");
    let claimed = store.claim("w", 1_000).expect("claim").expect("ok-1");
    store.complete(&Completion::new(&Lease::new("w", claimed.id(), 1), Outcome::Ok, 1_000, 0.0)).expect("ok");
    store.enqueue(&job(MARKUP_ID, MARKUP_PAYLOAD, "default")).expect("enqueue");
    let claimed = store.claim("w", 1_000).expect("claim").expect("markup");
    let report = Report::with_error(Outcome::Retryable, MARKUP_ERROR);
    store.complete(&Completion::new(&Lease::new("w", claimed.id(), 1), report, 1_000, 0.0)).expect("dead");
    store.enqueue(&job("run-1", "{}", "default")).expect("enqueue");
    store.claim("w", 1_000).expect("claim").expect("run-1");
    store.enqueue(&job("mail-1", "{}", "mail\"\nq")).expect("enqueue");
}

/// An HTTP/1.0 exchange by hand (the server closes the connection after the answer), so that the test sets any `Host` it likes: the status, the
/// headers (lower-cased names) and the body.
fn exchange(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let address = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).expect("connect");
    let mut request =
        format!("{method} {path} HTTP/1.0\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {address}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let mut lines = head.lines();
    let status =
        lines.next().and_then(|line| line.split(' ').nth(1)).and_then(|s| s.parse().ok()).expect("status");
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

fn get(base: &str, path: &str) -> (u16, String) {
    let (status, _, body) = exchange(base, "GET", path, &[], "");
    (status, body)
}

const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");

fn stop(mut serving: Serving) {
    kill(serving.child.id(), "TERM");
    assert!(
        wait(&mut serving.child, std::time::Duration::from_secs(10)).success(),
        "serve stops with 0 on SIGTERM"
    );
}

/// The checks of one store, named `db`.
fn admits_escapes_and_measures(db: &str) {
    let mut store = open_backend(db).expect("open");
    fill(&mut *store);
    let serving = start_serve(db, &[]);
    let base = serving.url.clone();

    // Loopback hosts are admitted; another name pointed at this address is not.
    assert_eq!(get(&base, "/").0, 200);
    let (status, _, _) = exchange(&base, "GET", "/", &[("Host", "attacker.example")], "");
    assert_eq!(status, 403, "a foreign Host is refused without a token");

    // Nothing from a job is markup, on any page that shows it.
    let (status, dead) = get(&base, "/jobs?status=dead");
    assert_eq!(status, 200);
    assert!(dead.contains("&lt;b&gt;bold&lt;/b&gt;&amp;x"), "the id shown as text:\n{dead}");
    let (status, page) = get(&base, "/job?id=%3Cb%3Ebold%3C%2Fb%3E%26x");
    assert_eq!(status, 200, "{page}");
    for raw in [MARKUP_ID, MARKUP_PAYLOAD, MARKUP_ERROR, "<img", "<script>window"] {
        assert!(!page.contains(raw) && !dead.contains(raw), "{raw:?} appears unescaped");
    }
    assert!(page.contains("&lt;script&gt;window.__pwned = 1&lt;/script&gt;"), "{page}");
    let (_, headers, _) = exchange(&base, "GET", "/", &[], "");
    let csp = headers.iter().find(|(name, _)| name == "content-security-policy").map(|(_, v)| v.as_str());
    assert!(csp.is_some_and(|csp| csp.contains("script-src 'self'")), "{headers:?}");

    // A change without the page's CSRF token is refused, and changes nothing.
    let (status, _, _) = exchange(&base, "POST", "/cancel", &[FORM], "id=run-1");
    assert_eq!(status, 403);
    let (status, _, _) = exchange(&base, "POST", "/cancel", &[FORM], "id=run-1&csrf=0123");
    assert_eq!(status, 403);
    assert!(!store.get("run-1").expect("get").expect("run-1").cancel_requested);
    // With it (read from the page, as a browser would), the change is made.
    let csrf =
        page.split("name=\"csrf\" value=\"").nth(1).and_then(|rest| rest.split('"').next()).expect("csrf");
    let (status, headers, _) = exchange(&base, "POST", "/cancel", &[FORM], &format!("id=run-1&csrf={csrf}"));
    assert_eq!(status, 303, "{headers:?}");
    assert!(store.get("run-1").expect("get").expect("run-1").cancel_requested);
    // From another origin, even with it, no.
    let body = format!("id=ok-1&csrf={csrf}&add_attempts=1&ttl=1h");
    let (status, _, _) =
        exchange(&base, "POST", "/redrive", &[FORM, ("Origin", "http://attacker.example")], &body);
    assert_eq!(status, 403);

    // A redrive from the dashboard, with the page's token: the markup job is pending again.
    let body = format!("id=%3Cb%3Ebold%3C%2Fb%3E%26x&csrf={csrf}&add_attempts=2&ttl=1h");
    let (status, _, _) = exchange(&base, "POST", "/redrive", &[FORM], &body);
    assert_eq!(status, 303);
    let redriven = store.get(MARKUP_ID).expect("get").expect("the job");
    assert_eq!((redriven.status.as_str(), redriven.redrives), ("pending", 1));

    // /metrics is Prometheus text, and its gauges are stats' counts.
    let (status, headers, text) = exchange(&base, "GET", "/metrics", &[], "");
    assert_eq!(status, 200);
    assert!(
        headers.iter().any(|(n, v)| n == "content-type" && v.starts_with("application/openmetrics-text"))
    );
    let lines = text.lines().map(|line| Ok(line.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
    let stats = store.stats(retryq_worker::now_ms().expect("clock")).expect("stats");
    let gauge = |name: &str, labels: &[(&str, &str)]| -> f64 {
        let sample = scrape
            .samples
            .iter()
            .find(|s| {
                s.metric == name
                    && s.labels.iter().count() == labels.len()
                    && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v))
            })
            .unwrap_or_else(|| panic!("no {name}{labels:?} in\n{text}"));
        match sample.value {
            prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
            ref other => panic!("{name} is {other:?}"),
        }
    };
    assert_eq!(gauge("retryq_jobs", &[("status", "pending")]), stats.pending as f64);
    assert_eq!(gauge("retryq_jobs", &[("status", "leased")]), stats.leased as f64);
    assert_eq!(gauge("retryq_jobs", &[("status", "done")]), stats.done as f64);
    assert_eq!(
        gauge("retryq_jobs", &[("status", "dead"), ("reason", "exhausted")]),
        stats.dead_exhausted as f64
    );
    assert_eq!((stats.pending, stats.leased, stats.done, stats.dead_exhausted), (2, 1, 1, 0));
    // The queue whose name holds a quote and a line feed is one label value, escaped, not a
    // line of its own (the parser keeps the escapes as it reads them).
    assert_eq!(gauge("retryq_jobs", &[("status", "pending"), ("queue", r#"mail\"\nq"#)]), 1.0);
    assert_eq!(gauge("retryq_jobs", &[("status", "pending"), ("queue", "default")]), 1.0);

    // Its counters are what the history of every job shows: enqueues, claims, deaths by
    // reason, redrives, each summed over the queues.
    let counted = |name: &str, label: Option<(&str, &str)>| -> f64 {
        scrape
            .samples
            .iter()
            .filter(|s| s.metric == name && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
                ref other => panic!("{name} is {other:?}"),
            })
            .sum()
    };
    let mut history = Vec::new();
    for id in ["ok-1", MARKUP_ID, "run-1", "mail-1"] {
        history.extend(store.history(id).expect("history"));
    }
    let moves = |from: Option<&str>, to: &str| {
        history.iter().filter(|e| e.from.map(|s| s.as_str()) == from && e.to.as_str() == to).count() as f64
    };
    assert_eq!(counted("retryq_enqueued_total", None), moves(None, "pending"));
    assert_eq!(counted("retryq_claims_total", None), moves(Some("pending"), "leased"));
    assert_eq!(counted("retryq_redrives_total", None), moves(Some("dead"), "pending"));
    let exhausted =
        history.iter().filter(|e| e.reason.is_some_and(|r| r.as_str() == "exhausted")).count() as f64;
    assert_eq!(counted("retryq_deaths_total", Some(("reason", "exhausted"))), exhausted);
    assert_eq!((moves(None, "pending"), moves(Some("pending"), "leased"), exhausted), (4.0, 3.0, 1.0));
    assert_eq!(moves(Some("dead"), "pending"), 1.0);
    // And its histograms: the wait of every claim, and the duration of every ended attempt.
    let observed = |name: &str| scrape.samples.iter().filter(|s| s.metric == name).count();
    assert!(observed("retryq_claim_wait_seconds") > 0, "no claim wait histogram in\n{text}");
    stop(serving);
}

#[test]
fn sqlite_dashboard_admits_escapes_and_measures() {
    let (_dir, db) = fresh("serve");
    admits_escapes_and_measures(db.to_str().expect("path"));
}

#[test]
fn postgres_dashboard_admits_escapes_and_measures() {
    let Some(url) = retryq_pgtest::database("postgres_dashboard_admits_escapes_and_measures") else { return };
    admits_escapes_and_measures(&url);
}

#[test]
fn a_token_is_required_where_one_is_given_and_off_loopback() {
    let (dir, db) = fresh("serve-token");
    open_backend(db.to_str().expect("path")).expect("create");
    // Off loopback, no token: refused before listening, naming the flag.
    let out = std::process::Command::new(common::BIN)
        .args(["serve", "--listen", "0.0.0.0:0", "--db"])
        .arg(&db)
        .env_remove("RETRYQ_TOKEN")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(common::stderr(&out).contains("--listen"), "{}", common::stderr(&out));
    // A short token is refused too.
    let short = dir.path().join("short");
    std::fs::write(&short, "abc\n").expect("write");
    let out = common::retryq(&[
        "serve",
        "--db",
        db.to_str().expect("path"),
        "--token-file",
        short.to_str().expect("path"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));

    let token = "a-token-of-enough-bytes-0123456789";
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{token}\n")).expect("write");
    let serving = start_serve(db.to_str().expect("path"), &["--token-file", file.to_str().expect("path")]);
    let base = serving.url.clone();
    assert_eq!(get(&base, "/").0, 401, "no token, no page");
    assert_eq!(get(&base, "/metrics").0, 401);
    let bearer = format!("Bearer {token}");
    let (status, _, _) = exchange(&base, "GET", "/metrics", &[("Authorization", &bearer)], "");
    assert_eq!(status, 200, "a scrape with the token");
    let (status, _, _) =
        exchange(&base, "GET", "/", &[("Authorization", "Bearer wrong-token-0123456789")], "");
    assert_eq!(status, 401);
    // The login form sets the cookie a browser then sends.
    let (status, headers, _) = exchange(&base, "POST", "/login", &[FORM], &format!("token={token}"));
    assert_eq!(status, 303);
    let cookie = headers.iter().find(|(n, _)| n == "set-cookie").map(|(_, v)| v.clone()).expect("cookie");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    let pair = cookie.split(';').next().expect("pair");
    let (status, _, _) = exchange(&base, "GET", "/", &[("Cookie", pair), ("Host", "dashboard.example")], "");
    assert_eq!(status, 200, "with the token any host name is fine");
    let (status, _, _) = exchange(&base, "POST", "/login", &[FORM], "token=wrong");
    assert_eq!(status, 401);
    stop(serving);
}
