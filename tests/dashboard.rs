//! The dashboard in a real browser — Debian's headless Chromium, driven through chromedriver
//! (WebDriver) — on SQLite and on PostgreSQL: the overview's counts refresh live, the job list
//! filters, a dead job's page opens with its attempts and its redrive makes it pending, and a
//! job whose id, payload and error are markup shows them as text without running anything;
//! a bulk cancel of selected rows says what the store then holds, and the activity charts'
//! bars add up to what the store's tallies grew by.
//! And, on a dashboard with a token, signing in leaves the browser a session's cookie that no
//! script can read, never the token, and signing out ends it; a server on another port of the
//! same host, to which the browser sends the cookie too, learns that session and not the token.
//!
//! `.ci/run` installs `chromium` and `chromium-driver`; without them this test fails under CI
//! and is skipped, loudly, elsewhere. With `RETRYQ_SCREENSHOTS=DIR` it saves what it saw as
//! PNG files in DIR (the ones in `docs/` were taken so).

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use common::{fresh, kill, start_serve, wait};
use fantoccini::{Client, ClientBuilder, Locator};
use retryq::{Backend, Completion, Lease, NewJob, Outcome, Report, open_backend};
use serde_json::json;

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/lib/chromium/chromium";

const MARKUP_ID: &str = "<b>bold</b>&x";
const MARKUP_PAYLOAD: &str = "<script>window.__pwned = 1</script>";
const MARKUP_ERROR: &str = "<img src=x onerror=\"window.__pwned = 2\">";

fn job<'a>(id: &'a str, payload: &'a str, now: u64) -> NewJob<'a> {
    NewJob { id, payload, max_attempts: 1, deadline: now + 3_600_000, now, ..NewJob::default() }
}

/// A done job, a dead one made of markup, and two pending ones.
fn fill(store: &mut dyn Backend) {
    let now = retryq_worker::now_ms().expect("clock");
    store.enqueue(&job("ok-1", "{}", now)).expect("enqueue");
    let claimed = store.claim("w", now).expect("claim").expect("ok-1");
    store.complete(&Completion::new(&Lease::new("w", claimed.id(), 1), Outcome::Ok, now, 0.0)).expect("ok");
    store.enqueue(&job(MARKUP_ID, MARKUP_PAYLOAD, now)).expect("enqueue");
    let claimed = store.claim("w", now).expect("claim").expect("markup");
    let report = Report::with_error(Outcome::Retryable, MARKUP_ERROR);
    store.complete(&Completion::new(&Lease::new("w", claimed.id(), 1), report, now, 0.0)).expect("dead");
    store.enqueue(&job("wait-1", "{}", now)).expect("enqueue");
    store.enqueue(&job("wait-2", "{}", now)).expect("enqueue");
}

/// chromedriver, killed when dropped: also when a test fails.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// chromedriver on a free port, once it answers; `None` (skipped) when it is not installed
/// and this is not CI.
fn chromedriver() -> Option<(Driver, String)> {
    if !Path::new(CHROMEDRIVER).exists() || !Path::new(CHROMIUM).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{CHROMEDRIVER} or {CHROMIUM} is missing; under CI the browser test must not skip (.ci/run installs them)"
        );
        eprintln!("SKIPPED the browser test: install chromium and chromium-driver (Debian) to run it");
        return None;
    }
    let port = TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port();
    let child = Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn chromedriver");
    let child = Driver(child);
    let url = format!("http://127.0.0.1:{port}");
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(20), "chromedriver did not listen within 20 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some((child, url))
}

async fn browser(driver: &str) -> Client {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": CHROMIUM,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", "--no-first-run"],
        }),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector).capabilities(capabilities).connect(driver).await.expect("a browser session")
}

async fn text(client: &Client, css: &str) -> String {
    client
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css(css))
        .await
        .expect(css)
        .text()
        .await
        .expect("text")
}

/// Polls `css`'s text until `done` holds it, for up to 15 s. A page still being replaced (a
/// form's redirect) may lose the element between finding and reading it: read again.
async fn text_until(client: &Client, css: &str, what: &str, done: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let read = match client.find(Locator::Css(css)).await {
            Ok(element) => element.text().await.ok(),
            Err(_) => None,
        };
        if let Some(now) = &read
            && done(now)
        {
            return now.clone();
        }
        assert!(start.elapsed() < Duration::from_secs(15), "{what}: {css} shows {read:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn screenshot(client: &Client, name: &str) {
    if let Some(dir) = std::env::var_os("RETRYQ_SCREENSHOTS") {
        let png = client.screenshot().await.expect("screenshot");
        std::fs::write(Path::new(&dir).join(name), png).expect("save the screenshot");
    }
}

/// Runs a call of the store off the test's runtime: the PostgreSQL client blocks on a
/// runtime of its own, which cannot start inside another.
fn off_runtime<T: Send>(call: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| scope.spawn(call).join().expect("the store's call"))
}

async fn scenario(client: &Client, base: &str, store: &mut dyn Backend, baseline: Counted) {
    // The overview: its counts, then a new job counted without a reload (the script runs).
    client.goto(&format!("{base}/")).await.expect("overview");
    assert_eq!(text(client, "[data-count=pending]").await, "2");
    assert_eq!(text(client, "[data-count=dead_exhausted]").await, "1");
    let held = &mut *store;
    off_runtime(move || {
        held.enqueue(&job("wait-3", "{}", retryq_worker::now_ms().expect("clock"))).expect("enqueue")
    });
    text_until(client, "[data-count=pending]", "the live count", |shown| shown == "3").await;
    screenshot(client, "dashboard-overview.png").await;

    // The job list, filtered to the dead jobs by the form.
    client.goto(&format!("{base}/jobs")).await.expect("jobs");
    let status = client.find(Locator::Css("select[name=status]")).await.expect("status filter");
    status.select_by_value("dead").await.expect("choose dead");
    client.find(Locator::Css("#filters button")).await.expect("filter").click().await.expect("submit");
    let link = text_until(client, "#jobs a.job", "the dead job listed", |id| id == MARKUP_ID).await;
    assert_eq!(link, MARKUP_ID, "the id shown as its text");
    let rows = client.find_all(Locator::Css("#jobs tbody tr")).await.expect("rows");
    assert_eq!(rows.len(), 1, "only the dead job");
    client.find(Locator::Css("#jobs a.job")).await.expect("link").click().await.expect("open the job");

    // Its page: the markup is text, and nothing of it ran.
    assert_eq!(text(client, "#job-id").await, MARKUP_ID);
    assert_eq!(text(client, "#payload").await, MARKUP_PAYLOAD);
    assert!(text(client, "td.error").await.contains(MARKUP_ERROR));
    let attempts = text(client, "#attempts").await;
    assert!(
        attempts.contains("retryable") && attempts.contains(MARKUP_ERROR),
        "the attempt's record: {attempts}"
    );
    let pwned = client.execute("return window.__pwned === undefined", Vec::new()).await.expect("script");
    assert_eq!(pwned, json!(true), "a payload or an error ran as script");
    assert!(text(client, "#job-status").await.starts_with("dead"));
    screenshot(client, "dashboard-job.png").await;

    // Redrive it from the page: it is pending again, in the store as on the page.
    client.find(Locator::Css("form.redrive button")).await.expect("redrive").click().await.expect("redrive");
    text_until(client, "#job-status", "the redriven job", |status| status == "pending").await;
    assert!(text(client, "p.message").await.starts_with("Redriven"));
    let held = &mut *store;
    let stored = off_runtime(move || held.get(MARKUP_ID)).expect("get").expect("the job");
    assert_eq!((stored.status.as_str(), stored.redrives), ("pending", 1));

    // Run it now from its page: the page says so, and the store has it due at once.
    client.find(Locator::Css("form.run-now button")).await.expect("run now").click().await.expect("run now");
    let said = text_until(client, "p.message", "run now's answer", |m| m.starts_with("Run now")).await;
    assert!(said.starts_with("Run now: the job is due at once"), "{said}");
    let after = retryq_worker::now_ms().expect("clock");
    let held = &mut *store;
    let stored = off_runtime(move || held.get(MARKUP_ID)).expect("get").expect("the job");
    assert_eq!(stored.status.as_str(), "pending");
    assert!(stored.available_at.is_some_and(|at| at <= after), "not due now: {stored:?}");

    // Pause its queue from the overview: the row says since when and offers Resume.
    client.goto(&format!("{base}/")).await.expect("overview");
    let pause = "tr[data-queue=default] form.pause button";
    client.find(Locator::Css(pause)).await.expect("pause").click().await.expect("pause");
    let since =
        text_until(client, "tr[data-queue=default] td.paused", "paused", |t| t.starts_with("since")).await;
    assert!(text(client, "p.message").await.starts_with("Paused"), "{since}");
    let held = &mut *store;
    let paused = off_runtime(move || held.paused()).expect("paused");
    assert_eq!(paused.iter().map(|(q, _)| q.as_str()).collect::<Vec<_>>(), ["default"]);
    assert_eq!(text(client, pause).await, "Resume");
    client.find(Locator::Css(pause)).await.expect("resume").click().await.expect("resume");
    text_until(client, "tr[data-queue=default] td.paused", "resumed", |t| t == "no").await;
    assert!(text(client, "p.message").await.starts_with("Resumed"));
    let held = &mut *store;
    assert_eq!(off_runtime(move || held.paused()).expect("paused"), []);

    // A bulk cancel of three selected rows: the two pending jobs die, the done one is
    // refused with its reason, and the page's count is the store's. The "select all" box
    // checks every row and clears them again.
    client.goto(&format!("{base}/jobs")).await.expect("jobs");
    let checked = "return document.querySelectorAll('#jobs input.select:checked').length";
    let rows = client.find_all(Locator::Css("#jobs input.select")).await.expect("boxes").len();
    assert_eq!(rows, 5, "every job of the store on one page");
    let all = client.find(Locator::Css("#select-all")).await.expect("select all");
    all.click().await.expect("select all");
    assert_eq!(client.execute(checked, Vec::new()).await.expect("script"), json!(rows));
    all.click().await.expect("clear all");
    assert_eq!(client.execute(checked, Vec::new()).await.expect("script"), json!(0));
    for id in ["ok-1", "wait-1", "wait-2"] {
        let css = format!("#jobs input.select[value={id}]");
        client.find(Locator::Css(&css)).await.expect(&css).click().await.expect("select");
    }
    client
        .find(Locator::Css("#bulk button[value=cancel]"))
        .await
        .expect("cancel")
        .click()
        .await
        .expect("cancel");
    let said = text_until(client, "#bulk-result", "the bulk answer", |t| t.starts_with("Cancelled")).await;
    assert_eq!(said, "Cancelled 2 of 3 selected jobs. 1 refused.");
    assert_eq!(text(client, "#refused tr[data-reason=not_cancellable]").await, "not_cancellable 1 ok-1");
    let changed = client.find(Locator::Css("#bulk-result")).await.expect("answer").attr("data-changed").await;
    let held = &mut *store;
    let cancelled = off_runtime(move || {
        ["ok-1", "wait-1", "wait-2"]
            .iter()
            .filter(|id| {
                held.get(id)
                    .expect("get")
                    .is_some_and(|j| j.dead_reason.is_some_and(|r| r.as_str() == "cancelled"))
            })
            .count()
    });
    assert_eq!(changed.expect("attribute"), Some(cancelled.to_string()), "the page and the store disagree");
    assert_eq!(cancelled, 2);
    screenshot(client, "dashboard-bulk.png").await;
    client.find(Locator::Css("a#back")).await.expect("back").click().await.expect("back");
    text_until(client, "#jobs", "the list again", |t| t.contains("dead (cancelled)")).await;

    // Two attempts end, one ok and one retryable: the charts' bars add up to what the
    // store's tallies grew by since the dashboard started, in both windows, of all queues
    // and of the one queue.
    let held = &mut *store;
    off_runtime(move || {
        let now = retryq_worker::now_ms().expect("clock");
        for report in [Report::from(Outcome::Ok), Report::with_error(Outcome::Retryable, "again")] {
            let claimed = held.claim("w", now).expect("claim").expect("a pending job");
            held.complete(&Completion::new(&claimed.lease, report, now, 0.0)).expect("complete");
        }
    });
    let held = &mut *store;
    let grown = activity(&off_runtime(move || held.tallies()).expect("tallies")).since(baseline);
    assert_eq!((grown.processed, grown.retried), (2, 1), "{grown:?}");
    assert!(grown.dead >= 2, "the bulk cancel's deaths: {grown:?}");
    for page in ["/", "/?queue=default"] {
        client.goto(&format!("{base}{page}")).await.expect("overview");
        for window in ["hour", "day"] {
            for (series, want) in
                [("processed", grown.processed), ("retried", grown.retried), ("dead", grown.dead)]
            {
                let css = format!("svg[data-window={window}] rect[data-series={series}]");
                let sum = format!(
                    "return Array.from(document.querySelectorAll('{css}')).reduce((n, r) => n + Number(r.getAttribute('data-value')), 0)"
                );
                let shown = client.execute(&sum, Vec::new()).await.expect("script");
                assert_eq!(shown, json!(want), "{page}: {css}");
            }
        }
    }
    // The retried attempt's error, found by the list's error text filter: the one job whose
    // last error holds it, and the page says how many jobs it read.
    client.goto(&format!("{base}/jobs")).await.expect("jobs");
    let field = client.find(Locator::Css("input[name=error]")).await.expect("the error filter");
    field.send_keys("again").await.expect("type");
    client.find(Locator::Css("#filters button")).await.expect("filter").click().await.expect("submit");
    let note = text_until(client, "#scanned", "the text search", |t| t.contains("this page read")).await;
    assert!(note.contains("at most 200 jobs per page") && note.contains("this page read 5."), "{note}");
    let rows = client.find_all(Locator::Css("#jobs tbody tr")).await.expect("rows");
    assert_eq!(rows.len(), 1, "one job's last error holds the text");
    assert!(text(client, "#jobs td.error").await.contains("again"));

    client.goto(&format!("{base}/")).await.expect("overview");
    let bars = client.find_all(Locator::Css("svg[data-window=hour] rect")).await.expect("bars");
    assert_eq!(bars.len(), 180, "60 minutes of three bars");
    client.execute("document.getElementById('activity').scrollIntoView()", Vec::new()).await.expect("scroll");
    screenshot(client, "dashboard-activity.png").await;
}

/// What the charts count, read off the store's tallies as `serve/activity.rs` defines it.
#[derive(Clone, Copy, Debug, Default)]
struct Counted {
    processed: u64,
    retried: u64,
    dead: u64,
}

impl Counted {
    fn since(self, before: Counted) -> Counted {
        Counted {
            processed: self.processed - before.processed,
            retried: self.retried - before.retried,
            dead: self.dead - before.dead,
        }
    }
}

fn activity(tallies: &retryq::Tallies) -> Counted {
    let mut counted = Counted::default();
    for tally in &tallies.counters {
        let outcome = tally.labels.iter().find(|(k, _)| k == "outcome").map(|(_, v)| v.as_str());
        match tally.metric.as_str() {
            "retryq_attempts_ended_total" => {
                counted.processed += tally.value;
                if matches!(outcome, Some("retryable" | "lease expired" | "expired or retryable")) {
                    counted.retried += tally.value;
                }
            }
            "retryq_deaths_total" => counted.dead += tally.value,
            _ => {}
        }
    }
    counted
}

fn run(db: &str) {
    let Some((_driver, driver_url)) = chromedriver() else { return };
    let mut store = open_backend(db).expect("open");
    fill(&mut *store);
    // The charts count from the dashboard's start: what the tallies hold then.
    let baseline = activity(&store.tallies().expect("tallies"));
    let mut serving = start_serve(db, &[]);
    let base = serving.url.clone();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let client = browser(&driver_url).await;
        scenario(&client, &base, &mut *store, baseline).await;
        client.close().await.expect("close the browser");
    });
    kill(serving.child.id(), "TERM");
    wait(&mut serving.child, Duration::from_secs(10));
}

const OTHER_PAGE: &str = "another server of this host";

/// A plain HTTP server on another port of 127.0.0.1, as any program of the host may run: it
/// answers every request with a page and keeps each request's `Cookie` headers. Its thread
/// waits for connections until the test's process ends.
fn other_port() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://127.0.0.1:{}", listener.local_addr().expect("address").port());
    let cookies = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&cookies);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut head = Vec::new();
            let mut chunk = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 1 << 16 {
                match stream.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&chunk[..n]),
                }
            }
            let head = String::from_utf8_lossy(&head);
            let sent = head
                .lines()
                .filter_map(|line| line.split_once(':'))
                .filter(|(name, _)| name.eq_ignore_ascii_case("cookie"));
            kept.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(sent.map(|(_, v)| v.trim().to_owned()));
            let body = format!("<!doctype html><title>other</title><p id=other>{OTHER_PAGE}</p>");
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, cookies)
}

/// The status of a GET of `path` from the dashboard at `base` with one more header line, by
/// hand (HTTP/1.0: the server closes the connection after its answer).
fn status(base: &str, path: &str, header: &str) -> u16 {
    let address = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n{header}\r\n\r\n").expect("send");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status in {answer:?}"))
}

/// Signs in with `token` through the form, visits a server on another port of the host,
/// checks the cookie the browser keeps and what the other port received, and signs out.
async fn sign_in_and_out(client: &Client, base: &str, token: &str) {
    client.goto(&format!("{base}/")).await.expect("overview");
    let field = client.wait().for_element(Locator::Css("input[name=token]")).await.expect("the sign-in form");
    field.send_keys(token).await.expect("type the token");
    client.find(Locator::Css("main form button")).await.expect("sign in").click().await.expect("submit");
    assert_eq!(text(client, "[data-count=pending]").await, "2", "signed in, the overview");

    // A cookie is scoped to a host, not to a port: the browser sends the dashboard's cookie
    // to whatever serves another port of 127.0.0.1. That server learns a session, never the
    // token, and the session is no Bearer credential for /metrics.
    let (other, received) = other_port();
    client.goto(&format!("{other}/")).await.expect("the other port");
    assert_eq!(text(client, "#other").await, OTHER_PAGE);
    let received = received.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert!(
        received.iter().all(|cookie| !cookie.contains(token)),
        "a server on another port of the host received the token: {received:?}"
    );
    let learned = received
        .iter()
        .flat_map(|cookie| cookie.split(';'))
        .find_map(|pair| pair.trim().strip_prefix("retryq_session="))
        .unwrap_or_else(|| panic!("the browser sent no session to the other port: {received:?}"))
        .to_owned();
    assert_eq!(
        status(base, "/metrics", &format!("Authorization: Bearer {learned}")),
        401,
        "a session opened /metrics"
    );
    client.goto(&format!("{base}/")).await.expect("back to the dashboard");
    assert_eq!(text(client, "[data-count=pending]").await, "2", "still signed in");

    let cookies = client.get_all_cookies().await.expect("cookies");
    let [cookie] = cookies.as_slice() else { panic!("one cookie expected: {cookies:?}") };
    assert_eq!(cookie.name(), "retryq_session", "{cookie:?}");
    assert_eq!(cookie.value(), learned, "the other port learned another value");
    assert!(!cookie.value().contains(token), "the browser holds the token: {cookie:?}");
    assert_eq!(cookie.http_only(), Some(true), "{cookie:?}");
    assert!(cookie.same_site().is_some_and(|same_site| same_site.is_strict()), "{cookie:?}");
    assert!(cookie.expires().is_some(), "a session's cookie ends: {cookie:?}");
    let seen = client.execute("return document.cookie", Vec::new()).await.expect("script");
    assert_eq!(seen, json!(""), "a script reads the session");
    client.find(Locator::Css("form.sign-out button")).await.expect("sign out").click().await.expect("submit");
    client.wait().for_element(Locator::Css("input[name=token]")).await.expect("the sign-in form again");
    assert!(client.get_all_cookies().await.expect("cookies").is_empty(), "the cookie outlived the sign-out");
    client.goto(&format!("{base}/")).await.expect("overview");
    client.wait().for_element(Locator::Css("input[name=token]")).await.expect("signed out, the sign-in form");
    assert_eq!(
        status(base, "/", &format!("Cookie: retryq_session={learned}")),
        401,
        "the session the other port learned outlived the sign-out"
    );
}

/// A dashboard with a token, signed in and out in the browser.
fn run_signed_in(db: &str) {
    let Some((_driver, driver_url)) = chromedriver() else { return };
    let mut store = open_backend(db).expect("open");
    fill(&mut *store);
    let token = "a-token-of-enough-bytes-0123456789";
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{token}\n")).expect("token file");
    let mut serving = start_serve(db, &["--token-file", file.to_str().expect("path")]);
    let base = serving.url.clone();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let client = browser(&driver_url).await;
        sign_in_and_out(&client, &base, token).await;
        client.close().await.expect("close the browser");
    });
    kill(serving.child.id(), "TERM");
    wait(&mut serving.child, Duration::from_secs(10));
}

#[test]
fn a_browser_signs_in_with_a_session_never_the_token() {
    let (_dir, db) = fresh("dashboard-session");
    run_signed_in(db.to_str().expect("path"));
}

#[test]
fn sqlite_dashboard_in_a_browser() {
    let (_dir, db) = fresh("dashboard");
    run(db.to_str().expect("path"));
}

#[test]
fn postgres_dashboard_in_a_browser() {
    let Some(url) = retryq_pgtest::database("postgres_dashboard_in_a_browser") else { return };
    run(&url);
}
