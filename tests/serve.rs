//! `retryq serve` over HTTP, on SQLite and on PostgreSQL: who is admitted (loopback hosts
//! without a token, the token or a session signed in with it everywhere else), that a
//! change needs the dashboard's CSRF token, that nothing from a job is markup, that
//! `/metrics` parses as Prometheus text and agrees with `stats`, and that nothing a client
//! sends before it is admitted holds memory or threads. The browser's view is
//! `tests/dashboard.rs`.

mod common;

use common::{Serving, fresh, kill, start_serve, wait};
use retryq::{Backend, Completion, Lease, NewJob, Outcome, Report, open_backend};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

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
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).expect("timeout");
    let mut request = format!("{method} {path} HTTP/1.0\r\nConnection: close\r\n");
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("content-length")) {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
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

    // Pause, resume and run now are changes as cancel is: a forged request to each (no
    // CSRF token, a wrong one, another origin, a GET) is refused and changes nothing.
    let before = store.get("mail-1").expect("get").expect("mail-1").available_at;
    for (path, form) in [("/pause", "queue=default"), ("/resume", "queue=default"), ("/run-now", "id=mail-1")]
    {
        let forged = [
            exchange(&base, "POST", path, &[FORM], form),
            exchange(&base, "POST", path, &[FORM], &format!("{form}&csrf=0123")),
            exchange(
                &base,
                "POST",
                path,
                &[FORM, ("Origin", "http://attacker.example")],
                &format!("{form}&csrf={csrf}"),
            ),
            exchange(&base, "GET", &format!("{path}?{form}&csrf={csrf}"), &[], ""),
        ];
        let statuses: Vec<u16> = forged.iter().map(|(status, _, _)| *status).collect();
        assert_eq!(statuses, [403, 403, 403, 405], "{path}");
        assert_eq!(store.paused().expect("paused"), [], "{path} changed the store");
        assert_eq!(store.get("mail-1").expect("get").expect("mail-1").available_at, before, "{path}");
    }
    // With the page's token: pausing shows the queue paused, with its Resume button.
    let location = |headers: &[(String, String)]| {
        headers.iter().find(|(n, _)| n == "location").map(|(_, v)| v.clone()).unwrap_or_default()
    };
    let (status, headers, _) =
        exchange(&base, "POST", "/pause", &[FORM], &format!("queue=default&csrf={csrf}"));
    assert_eq!((status, location(&headers).as_str()), (303, "/?said=paused"));
    let paused = store.paused().expect("paused");
    assert_eq!(paused.iter().map(|(q, _)| q.as_str()).collect::<Vec<_>>(), ["default"]);
    let (_, overview) = get(&base, "/?said=paused");
    assert!(overview.contains("Paused: no job of the queue is claimed"), "{overview}");
    let row = overview.split("data-queue=\"default\"").nth(1).expect("the default queue's row");
    let row = row.split("</tr>").next().expect("row");
    assert!(row.contains("since ") && row.contains("action=\"/resume\""), "{row}");
    let (status, headers, _) =
        exchange(&base, "POST", "/resume", &[FORM], &format!("queue=default&csrf={csrf}"));
    assert_eq!((status, location(&headers).as_str()), (303, "/?said=resumed"));
    assert_eq!(store.paused().expect("paused"), []);
    // A name no job carries, paused ahead of its first job, has its row too (SPEC 6.40).
    exchange(&base, "POST", "/pause", &[FORM], &format!("queue=not-yet&csrf={csrf}"));
    let (_, overview) = get(&base, "/");
    let row = overview.split("data-queue=\"not-yet\"").nth(1).expect("the paused name's row");
    assert!(row.split("</tr>").next().is_some_and(|row| row.contains("action=\"/resume\"")), "{row}");
    exchange(&base, "POST", "/resume", &[FORM], &format!("queue=not-yet&csrf={csrf}"));
    assert_eq!(store.paused().expect("paused"), []);
    // Run now: a pending job is due at once; a leased one is refused with its reason.
    let (status, headers, _) =
        exchange(&base, "POST", "/run-now", &[FORM], &format!("id=mail-1&csrf={csrf}"));
    assert_eq!(status, 303);
    assert!(location(&headers).ends_with("&said=run_now"), "{headers:?}");
    let (status, headers, _) = exchange(&base, "POST", "/run-now", &[FORM], &format!("id=run-1&csrf={csrf}"));
    assert_eq!(status, 303);
    assert!(location(&headers).ends_with("&said=not_pending"), "{headers:?}");
    let (_, refused) = get(&base, &location(&headers));
    assert!(refused.contains("Not run now (not_pending)"), "{refused}");

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
    // Every series is a queue's: the store's count is their sum.
    let gauge = |name: &str, labels: &[(&str, &str)]| -> f64 {
        let samples: Vec<f64> = scrape
            .samples
            .iter()
            .filter(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .map(|s| match s.value {
                prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
                ref other => panic!("{name} is {other:?}"),
            })
            .collect();
        assert!(!samples.is_empty(), "no {name}{labels:?} in\n{text}");
        samples.iter().sum()
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

    // The redrive of every dead job of a reason says how many it redrove.
    store.cancel("mail-1", retryq_worker::now_ms().expect("clock")).expect("cancel");
    let body = format!("reason=cancelled&csrf={csrf}&add_attempts=1&ttl=1h");
    let (status, headers, _) = exchange(&base, "POST", "/redrive", &[FORM], &body);
    assert_eq!((status, location(&headers).as_str()), (303, "/?redrove=1"));
    let (_, overview) = get(&base, "/?redrove=1");
    assert!(overview.contains("Redrove 1 dead job."), "{overview}");
    assert_eq!(store.get("mail-1").expect("get").expect("mail-1").status.as_str(), "pending");
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

/// The sum of the `data-value`s of one series' bars in one chart of an overview.
fn charted(overview: &str, window: &str, series: &str) -> u64 {
    let chart = overview.split(&format!("data-window=\"{window}\"")).nth(1).expect("the chart");
    let chart = chart.split("</svg>").next().expect("its end");
    chart
        .split("<rect")
        .filter(|rect| rect.contains(&format!("data-series=\"{series}\"")))
        .map(|rect| {
            let value = rect.split("data-value=\"").nth(1).and_then(|v| v.split('"').next()).expect("value");
            value.parse::<u64>().expect("a count")
        })
        .sum()
}

/// A `data-NAME="N"` of the bulk action's answer.
fn said(page: &str, name: &str) -> u64 {
    let marker = format!("data-{name}=\"");
    page.split(&marker).nth(1).and_then(|v| v.split('"').next()).and_then(|v| v.parse().ok()).expect(name)
}

#[test]
fn bulk_actions_count_what_they_changed_and_refuse_forgeries() {
    let (_dir, db) = fresh("serve-bulk");
    let db = db.to_str().expect("path");
    let mut store = open_backend(db).expect("open");
    fill(&mut *store);
    let serving = start_serve(db, &[]);
    let base = serving.url.clone();
    let (_, page) = get(&base, "/jobs");
    assert!(page.contains("action=\"/bulk\"") && page.contains("type=\"checkbox\""), "{page}");
    let csrf =
        page.split("name=\"csrf\" value=\"").nth(1).and_then(|rest| rest.split('"').next()).expect("csrf");
    let snapshot = |store: &dyn Backend| {
        ["ok-1", MARKUP_ID, "run-1", "mail-1"].map(|id| store.get(id).expect("get").expect(id))
    };
    let before = snapshot(&*store);

    // Forged: no CSRF token, a wrong one, another origin, a GET. Each refused, nothing changed.
    let form = "action=cancel&id=mail-1&id=run-1";
    let forged = [
        exchange(&base, "POST", "/bulk", &[FORM], form),
        exchange(&base, "POST", "/bulk", &[FORM], &format!("{form}&csrf=0123")),
        exchange(
            &base,
            "POST",
            "/bulk",
            &[FORM, ("Origin", "http://attacker.example")],
            &format!("{form}&csrf={csrf}"),
        ),
        exchange(&base, "GET", &format!("/bulk?{form}&csrf={csrf}"), &[], ""),
    ];
    assert_eq!(forged.iter().map(|(status, _, _)| *status).collect::<Vec<_>>(), [403, 403, 403, 405]);
    assert_eq!(snapshot(&*store), before, "a forged bulk action changed the store");

    // More ids than a request may name, or none, or no action: refused, nothing changed.
    let many: String = (0..500).map(|n| format!("&id=j{n}")).collect();
    let (status, _, text) =
        exchange(&base, "POST", "/bulk", &[FORM], &format!("action=cancel&csrf={csrf}&id=mail-1{many}"));
    assert_eq!(status, 400, "{text}");
    assert_eq!(text, "id: 501 jobs selected; a bulk action takes at most 500 (nothing was changed)");
    let (status, _, text) = exchange(&base, "POST", "/bulk", &[FORM], &format!("action=cancel&csrf={csrf}"));
    assert_eq!((status, text.as_str()), (400, "id: select at least one job"));
    let (status, _, text) =
        exchange(&base, "POST", "/bulk", &[FORM], &format!("action=drop&csrf={csrf}&id=mail-1"));
    assert_eq!((status, text.as_str()), (400, "action: redrive, cancel or run_now"));
    assert_eq!(snapshot(&*store), before, "a refused bulk action changed the store");

    // Cancel: the pending job dies, the leased one is asked to stop, the rest are refused by
    // reason — and the store agrees.
    let body = format!("action=cancel&csrf={csrf}&id=ok-1&id=mail-1&id=run-1&id=nope&id=mail-1");
    let (status, _, page) = exchange(&base, "POST", "/bulk", &[FORM], &body);
    assert_eq!(status, 200, "{page}");
    assert_eq!(["asked", "changed", "requested", "refused"].map(|n| said(&page, n)), [4, 1, 1, 2], "{page}");
    assert!(page.contains("Cancelled 1 of 4 selected jobs."), "{page}");
    for (reason, id) in [("not_cancellable", "ok-1"), ("not_found", "nope")] {
        let row = page.split(&format!("data-reason=\"{reason}\"")).nth(1).expect(reason);
        assert!(row.split("</tr>").next().is_some_and(|row| row.contains(id)), "{row}");
    }
    let after = snapshot(&*store);
    assert_eq!(after[3].dead_reason.map(|r| r.as_str()), Some("cancelled"));
    assert!(after[2].cancel_requested);

    // Redrive two dead jobs and refuse a done one; then run both now.
    let body = format!(
        "action=redrive&csrf={csrf}&add_attempts=2&ttl=1h&id=%3Cb%3Ebold%3C%2Fb%3E%26x&id=mail-1&id=ok-1"
    );
    let (status, _, page) = exchange(&base, "POST", "/bulk", &[FORM], &body);
    assert_eq!((status, said(&page, "changed"), said(&page, "refused")), (200, 2, 1), "{page}");
    assert!(page.contains("data-reason=\"not_dead\""), "{page}");
    let after = snapshot(&*store);
    assert_eq!((after[1].status.as_str(), after[3].status.as_str()), ("pending", "pending"));
    let body = format!("action=run_now&csrf={csrf}&id=mail-1&id=run-1&back=status%3Dpending%26queue%3Dx");
    let (status, _, page) = exchange(&base, "POST", "/bulk", &[FORM], &body);
    assert_eq!((status, said(&page, "changed"), said(&page, "refused")), (200, 1, 1), "{page}");
    assert!(page.contains("data-reason=\"not_pending\""), "{page}");
    assert!(
        page.contains("href=\"/jobs?status=pending&amp;queue=x\""),
        "the way back keeps the filters: {page}"
    );

    // The overview's charts count what happened since the dashboard began: one death (the
    // cancel), no attempt ended.
    let (_, overview) = get(&base, "/");
    for window in ["hour", "day"] {
        assert_eq!(charted(&overview, window, "dead"), 1, "{window}");
        assert_eq!(charted(&overview, window, "processed"), 0, "{window}");
    }
    stop(serving);
}

/// The ids of a jobs page's rows.
fn listed(page: &str) -> Vec<String> {
    page.split("class=\"job\" href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('>').nth(1)?.split('<').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn sqlite_workers_page_shows_who_holds_which_lease_since_when_and_until_when() {
    let (_dir, db) = fresh("serve-workers");
    workers_page(db.to_str().expect("path"));
}

#[test]
fn postgres_workers_page_shows_who_holds_which_lease_since_when_and_until_when() {
    let Some(url) = retryq_pgtest::database("postgres_workers_page") else { return };
    workers_page(&url);
}

/// The workers page of the store `db`.
fn workers_page(db: &str) {
    let mut store = open_backend(db).expect("open");
    let now = retryq_worker::now_ms().expect("clock");
    let (early, late) = (now - 20 * 60_000, now - 10 * 60_000);
    for (id, queue) in [("a-1", "a"), ("b-1", "b"), ("b-2", "b"), ("c-1", "c")] {
        let job = NewJob {
            id,
            payload: "{}",
            max_attempts: 3,
            deadline: now + 3_600_000,
            now: early,
            queue: Some(queue),
            ..NewJob::default()
        };
        store.enqueue(&job).expect("enqueue");
    }
    let serving = start_serve(db, &[]);
    let (status, page) = get(&serving.url, "/workers");
    assert!(status == 200 && page.contains("No worker holds a lease."), "{page}");
    // beta claimed b-1 ten minutes ago and never heartbeated: its lease has run out. alpha
    // holds a-1 now, and b-2, and asked to stop a-1. c-1 waits.
    let b1 = store.claim_from("beta", &["b"], late).expect("claim").expect("b-1");
    assert_eq!(b1.id(), "b-1");
    store.claim_from("alpha", &["a"], now).expect("claim").expect("a-1");
    store.claim_from("alpha", &["b"], now).expect("claim").expect("b-2");
    store.cancel("a-1", now).expect("cancel");
    let (status, page) = get(&serving.url, "/workers");
    assert_eq!(status, 200, "{page}");
    let row = |key: &str, value: &str| -> String {
        let marker = format!("data-{key}=\"{value}\"");
        let (before, after) = page.split_once(&marker).unwrap_or_else(|| panic!("{marker}: {page}"));
        let start = before.rfind("<tr").unwrap_or(0);
        format!("{}{marker}{}", &before[start..], after.split("</tr>").next().unwrap_or_default())
    };
    let cell = |row: &str, class: &str| -> String {
        let marker = format!("class=\"{class}\">");
        row.split(&marker).nth(1).and_then(|r| r.split("</td>").next()).unwrap_or_default().to_owned()
    };
    let alpha = row("worker", "alpha");
    assert_eq!((cell(&alpha, "leased"), cell(&alpha, "expired")), ("2".into(), "0".into()), "{alpha}");
    let beta = row("worker", "beta");
    assert_eq!((cell(&beta, "leased"), cell(&beta, "expired")), ("1".into(), "1".into()), "{beta}");
    assert!(!page.contains("data-job=\"c-1\""), "a pending job listed as a lease");
    let b1 = row("job", "b-1");
    assert!(b1.contains("class=\"expired\""), "{b1}");
    assert_eq!(cell(&b1, "worker"), "beta");
    assert!(b1.contains("(10m ago)") || b1.contains("(10m 1s ago)"), "{b1}");
    assert!(cell(&b1, "until").contains("run out"), "{b1}");
    let a1 = row("job", "a-1");
    assert!(!a1.contains("expired") && a1.contains("(cancelling)"), "{a1}");
    assert!(cell(&a1, "until").contains("(in "), "{a1}");
    assert!(!page.contains("more-leases"), "{page}");
    stop(serving);
}

/// Where a jobs page's "Next page" leads.
fn next_link(page: &str) -> String {
    let next = page.split("id=\"next\" href=\"").nth(1).and_then(|r| r.split('"').next()).expect("next");
    next.replace("&amp;", "&")
}

#[test]
fn sqlite_text_filters_search_errors_and_payloads_in_a_bounded_scan() {
    let (_dir, db) = fresh("serve-search");
    text_filters(db.to_str().expect("path"));
}

#[test]
fn postgres_text_filters_search_errors_and_payloads_in_a_bounded_scan() {
    let Some(url) = retryq_pgtest::database("postgres_text_filters") else { return };
    text_filters(&url);
}

/// The jobs list's text filters on the store `db`.
fn text_filters(db: &str) {
    let mut store = open_backend(db).expect("open");
    fill(&mut *store);
    // 250 more, the newest first in the list; one in every hundred holds the needle.
    for n in 0..250 {
        let id = format!("bulk-{n:03}");
        let payload = if n % 100 == 42 { r#"{"sku":"needle-1"}"# } else { "{}" };
        let kind = if n % 50 == 7 { "mail" } else { "" };
        let job = NewJob {
            id: &id,
            payload,
            kind,
            max_attempts: 1,
            deadline: 1 << 50,
            now: 2_000,
            ..NewJob::default()
        };
        store.enqueue(&job).expect("enqueue");
    }
    let serving = start_serve(db, &[]);
    let base = serving.url.clone();
    let scanned = |page: &str| said(page, "scanned");

    // The first page reads 200 jobs (bulk-249 down to bulk-050): two needles, and a link on.
    let (status, page) = get(&base, "/jobs?payload=needle");
    assert_eq!(status, 200, "{page}");
    assert_eq!((listed(&page), scanned(&page)), (vec!["bulk-242".to_owned(), "bulk-142".to_owned()], 200));
    assert!(page.contains("at most 200 jobs per page"), "{page}");
    let next = next_link(&page);
    assert!(next.contains("payload=needle"), "{next}");
    let (_, page) = get(&base, &next);
    assert_eq!((listed(&page), scanned(&page)), (vec!["bulk-042".to_owned()], 54));
    assert!(!page.contains("id=\"next\""), "{page}");

    // A kind, exactly, in the same bounded scan; the list shows each job's kind.
    let (_, page) = get(&base, "/jobs?kind=mail");
    let mail = ["bulk-207", "bulk-157", "bulk-107", "bulk-057"].map(str::to_owned);
    assert_eq!((listed(&page), scanned(&page)), (mail.to_vec(), 200), "{page}");
    assert!(page.contains("<td class=\"kind\">mail</td>"), "{page}");
    let (_, page) = get(&base, "/jobs?kind=Mail");
    assert!(page.contains("No job matches."), "{page}");

    // Error text, with the other filters: only the dead job's error holds "onerror".
    let (_, page) = get(&base, "/jobs?status=dead&error=onerror");
    assert_eq!(listed(&page), ["&lt;b&gt;bold&lt;/b&gt;&amp;x"], "{page}");
    // Without them, it lies beyond the first 200 read: none on this page, and the page says
    // so and leads on to it.
    let (_, page) = get(&base, "/jobs?error=onerror&payload=__pwned");
    assert_eq!((listed(&page).len(), scanned(&page)), (0, 200), "{page}");
    assert!(page.contains("No job matches.") && page.contains("Next page"), "{page}");
    let (_, page) = get(&base, &next_link(&page));
    assert_eq!(listed(&page).len(), 1, "{page}");
    let (_, page) = get(&base, "/jobs?queue=default&error=no+such+text");
    assert!(page.contains("No job matches."), "{page}");
    // Without a text, no scan is said to have run.
    let (_, page) = get(&base, "/jobs");
    assert!(!page.contains("data-scanned"), "{page}");
    stop(serving);
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
    // Signing in sets a session's cookie, never the token (a browser sends its cookies to
    // every port of the host, and the token is also /metrics' credential).
    let (status, headers, _) = exchange(&base, "POST", "/login", &[FORM], &format!("token={token}"));
    assert_eq!(status, 303);
    let cookie = headers.iter().find(|(n, _)| n == "set-cookie").map(|(_, v)| v.clone()).expect("cookie");
    assert!(!cookie.contains(token), "the cookie carries the token: {cookie}");
    let pair = cookie.split(';').next().expect("pair");
    let session = pair.strip_prefix("retryq_session=").expect("the session cookie");
    assert!(session.len() == 64 && session.bytes().all(|b| b.is_ascii_hexdigit()), "{cookie}");
    let attributes: Vec<&str> = cookie.split(';').skip(1).map(str::trim).collect();
    assert_eq!(
        attributes,
        ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200"],
        "no Secure over plain HTTP"
    );
    let (status, _, _) = exchange(&base, "GET", "/", &[("Cookie", pair), ("Host", "dashboard.example")], "");
    assert_eq!(status, 200, "with a session any host name is fine");
    // Behind a proxy that terminates TLS, the cookie is Secure: the browser keeps it off
    // plain HTTP.
    let https = [FORM, ("X-Forwarded-Proto", "https")];
    let (status, headers, _) = exchange(&base, "POST", "/login", &https, &format!("token={token}"));
    assert_eq!(status, 303);
    let secure = headers.iter().find(|(n, _)| n == "set-cookie").map(|(_, v)| v.clone()).expect("cookie");
    assert!(secure.ends_with("; Secure"), "{secure}");
    // The token is no cookie, under the old name or the new.
    for forged in [format!("retryq_token={token}"), format!("retryq_session={token}")] {
        let (status, _, _) = exchange(&base, "GET", "/", &[("Cookie", &forged)], "");
        assert_eq!(status, 401, "{forged}");
    }
    // /metrics keeps its Bearer token.
    let (status, _, _) = exchange(&base, "GET", "/metrics", &[("Authorization", &bearer)], "");
    assert_eq!(status, 200);
    // Sign-out (the page's form, with its CSRF token) ends the session and deletes the cookie.
    let (_, page) = {
        let (status, _, body) = exchange(&base, "GET", "/", &[("Cookie", pair)], "");
        (status, body)
    };
    let csrf =
        page.split("name=\"csrf\" value=\"").nth(1).and_then(|rest| rest.split('"').next()).expect("csrf");
    let (status, _, _) = exchange(&base, "POST", "/logout", &[FORM, ("Cookie", pair)], "csrf=0");
    assert_eq!(status, 403, "a sign-out without the page's CSRF token is refused");
    let (status, headers, _) =
        exchange(&base, "POST", "/logout", &[FORM, ("Cookie", pair)], &format!("csrf={csrf}"));
    assert_eq!(status, 303, "{headers:?}");
    assert!(headers.iter().any(|(n, v)| n == "location" && v == "/login"), "{headers:?}");
    assert!(
        headers
            .iter()
            .any(|(n, v)| n == "set-cookie" && v.starts_with("retryq_session=;") && v.contains("Max-Age=0"))
    );
    let (status, _, _) = exchange(&base, "GET", "/", &[("Cookie", pair)], "");
    assert_eq!(status, 401, "a session signed out admits nothing");
    let (status, _, _) = exchange(&base, "POST", "/login", &[FORM], "token=wrong");
    assert_eq!(status, 401);
    stop(serving);
}

#[test]
fn the_token_comes_from_a_file_or_the_environment_never_a_flag() {
    let (dir, db) = fresh("serve-token-env");
    let db = db.to_str().expect("path");
    open_backend(db).expect("create");
    let token = "a-token-of-enough-bytes-0123456789";
    // The flag that put the token on the command line, where `ps` shows it, is gone.
    let out = std::process::Command::new(common::BIN)
        .args(["serve", "--db", db, "--listen", "127.0.0.1:0", "--token-from-env", token])
        .env_remove("RETRYQ_TOKEN")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("unexpected argument '--token-from-env'"),
        "{}",
        common::stderr(&out)
    );
    let help = common::stdout(&common::retryq(&["serve", "--help"]));
    assert!(!help.contains("token-from-env") && help.contains("RETRYQ_TOKEN"), "{help}");
    // Both ways at once is one too many.
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{token}\n")).expect("write");
    let out = std::process::Command::new(common::BIN)
        .args(["serve", "--db", db, "--listen", "127.0.0.1:0", "--token-file", file.to_str().expect("path")])
        .env("RETRYQ_TOKEN", token)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(common::stderr(&out).contains("RETRYQ_TOKEN is set too"), "{}", common::stderr(&out));
    // From the environment, it is required.
    let mut child = std::process::Command::new(common::BIN)
        .args(["serve", "--db", db, "--listen", "127.0.0.1:0"])
        .env("RETRYQ_TOKEN", token)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("first line");
    let serving =
        Serving { child, url: line.split('"').nth(3).expect("url").trim_end_matches('/').to_owned() };
    assert_eq!(get(&serving.url, "/").0, 401);
    let bearer = format!("Bearer {token}");
    assert_eq!(exchange(&serving.url, "GET", "/metrics", &[("Authorization", &bearer)], "").0, 200);
    stop(serving);
}

/// `(peak resident KiB, threads)` of process `pid`, as the kernel counts them.
fn peak_and_threads(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|value| value.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("{name} in\n{status}"))
    };
    (field("VmHWM:"), field("Threads:"))
}

/// What arrives on `stream` until it closes (or 10 s pass): the status of its answer, if any.
fn answer_status(stream: &mut TcpStream) -> Option<u16> {
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).split(' ').nth(1).and_then(|s| s.parse().ok())
}

/// Before anyone is admitted, what a client sends holds little: four 32 MiB headers (before,
/// 4 × 100 MiB took the process to 902 MB) and 600 connections each holding half a head
/// (before, 1,000 of them held 946 threads) leave the peak memory and the threads within
/// their bounds, while a request carrying the token is still served. Each refusal has its
/// status: 431 a head too large, 413 a body too large, 411 a chunked one, 408 a request too
/// slow, 503 a connection pushed out by a newer one when all places are taken.
#[test]
fn slow_and_oversized_clients_hold_no_thread_nor_memory_and_a_signed_in_request_is_served() {
    const STORE_THREADS: u64 = 2;
    const PLACES: usize = 64;
    const SLOW: usize = 600;
    let (dir, db) = fresh("serve-bounds");
    let db = db.to_str().expect("path");
    open_backend(db).expect("create");
    let token = "a-token-of-enough-bytes-0123456789";
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{token}\n")).expect("write");
    let flags = ["--token-file", file.to_str().expect("path"), "--threads", "2", "--max-connections", "64"];
    let serving = start_serve(db, &[&flags[..], &["--request-timeout", "3s"]].concat());
    let (base, pid) = (serving.url.clone(), serving.child.id());
    let address = base.trim_start_matches("http://").to_owned();
    let bearer = format!("Bearer {token}");
    let signed_in = || exchange(&base, "GET", "/metrics", &[("Authorization", &bearer)], "").0;
    assert_eq!(signed_in(), 200);
    // A browser's session, signed in before the flood.
    let (status, headers, _) = exchange(&base, "POST", "/login", &[FORM], &format!("token={token}"));
    assert_eq!(status, 303);
    let cookie = headers.iter().find(|(n, _)| n == "set-cookie").map(|(_, v)| v.clone()).expect("cookie");
    let session = cookie.split(';').next().expect("pair").to_owned();
    let browsing = || exchange(&base, "GET", "/", &[("Cookie", &session)], "").0;
    let (peak_before, _) = peak_and_threads(pid);
    let mut most_threads = 0;

    // Four heads of 32 MiB each, sent at once.
    let big: Vec<_> = (0..4)
        .map(|_| {
            let address = address.clone();
            thread::spawn(move || {
                let mut stream = TcpStream::connect(&address).expect("connect");
                let mut sent = stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ").is_ok();
                let chunk = vec![b'a'; 1 << 20];
                for _ in 0..32 {
                    sent = sent && stream.write_all(&chunk).is_ok();
                }
                sent
            })
        })
        .collect();
    for writer in big {
        writer.join().expect("writer");
        most_threads = most_threads.max(peak_and_threads(pid).1);
    }
    // 600 connections, each with half a head, held open.
    let start = Instant::now();
    let mut slow: Vec<TcpStream> = (0..SLOW)
        .map(|n| {
            let mut stream = TcpStream::connect(&address).expect("connect");
            stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ").expect("half a head");
            if n % 100 == 0 {
                most_threads = most_threads.max(peak_and_threads(pid).1);
            }
            stream
        })
        .collect();
    // A request with the token, meanwhile: served.
    assert_eq!(signed_in(), 200, "a request with the token while {SLOW} connections hold half a head");
    assert_eq!(browsing(), 200, "a signed-in browser's request while {SLOW} connections hold half a head");
    let held = start.elapsed();
    let (peak_after, threads) = peak_and_threads(pid);
    most_threads = most_threads.max(threads);
    let grew_kib = peak_after.saturating_sub(peak_before);
    eprintln!(
        "serve bounds: peak resident {peak_before} KiB before, {peak_after} KiB after four 32 MiB heads and {SLOW} \
         half heads (+{grew_kib} KiB); at most {most_threads} threads"
    );
    // The network thread, the signal watcher, the charts' sampler and the store's threads;
    // nothing per client.
    assert!(most_threads <= STORE_THREADS + 3, "{most_threads} threads");
    // At most 64 places × (a 16 KiB head + a 64 KiB body), with room for the allocator.
    assert!(grew_kib < 16 * 1024, "the peak resident memory grew by {grew_kib} KiB");

    // Each refusal with its status. The connections pushed out by newer ones are answered
    // 503; those that kept their place, 408 once their 3 s are up.
    let statuses: Vec<Option<u16>> = slow.iter_mut().map(answer_status).collect();
    let count = |status| statuses.iter().filter(|s| **s == Some(status)).count();
    assert_eq!(count(503) + count(408), SLOW, "{statuses:?}");
    assert!(count(408) >= 1, "no slow request timed out with 408");
    // Unless the machine was so slow that places came free by timeouts meanwhile, every
    // connection past the 64 places pushed one out.
    if held < Duration::from_secs(3) {
        assert!(count(503) >= SLOW - PLACES, "{} pushed out", count(503));
    }
    let mut oversized = TcpStream::connect(&address).expect("connect");
    let head = format!("GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n", "a".repeat(20 * 1024));
    oversized.write_all(head.as_bytes()).expect("send");
    assert_eq!(answer_status(&mut oversized), Some(431));
    let (status, _, _) = exchange(&base, "POST", "/login", &[FORM, ("Content-Length", "1048576")], "");
    assert_eq!(status, 413);
    let (status, _, _) = exchange(&base, "POST", "/login", &[FORM, ("Transfer-Encoding", "chunked")], "");
    assert_eq!(status, 411);
    assert_eq!(signed_in(), 200);
    stop(serving);
}
