//! One set of metrics: `retryq stats --prometheus` and the dashboard's `/metrics`, parsed by
//! the same parser, agree sample for sample on a store in a known state; the whole store is
//! the sum of the queues' series (`sum(retryq_jobs)` is the number of jobs); every counter is
//! there at 0 before its first event; the oldest due job's wait is not faked by a redrive;
//! and the runbook's alert expressions (docs/runbook.md), read from the file and evaluated
//! here, fire exactly for the queues the state calls for.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

use common::{command, now_ms, ran, start_serve};
use prometheus_parse::{Scrape, Value};
use retryq::{Completion, Lease, NewJob, Outcome, Queue, Redrive};

const MINUTE: u64 = 60_000;

/// A series: its metric name and its labels, sorted.
type Series = (String, Vec<(String, String)>);

/// Every sample of `text` by series; a histogram by its Debug text's hash-free summary.
fn parse(text: &str) -> (Scrape, BTreeMap<Series, String>) {
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("exposition text");
    let mut by_series = BTreeMap::new();
    for s in &scrape.samples {
        let mut labels: Vec<(String, String)> =
            s.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        labels.sort();
        let value = match &s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v.to_string(),
            other => format!("{other:?}"),
        };
        assert!(by_series.insert((s.metric.clone(), labels), value).is_none(), "a series twice in\n{text}");
    }
    (scrape, by_series)
}

fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => Some(*v),
        _ => None,
    }
}

/// `GET /metrics` from a dashboard on loopback.
fn scrape_metrics(base: &str) -> String {
    let address = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).expect("timeout");
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {address}\r\nConnection: close\r\n\r\n").expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    assert!(head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"), "{head}");
    body.to_owned()
}

fn stats_prometheus(db: &Path) -> String {
    let r = ran(command(db, &["stats", "--prometheus"]).output().expect("run"));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    r.stdout
}

/// Both expositions of `db` now, checked to agree: the same series, the same values (the
/// wait, which grows between the two reads, within 5 s). Returns `/metrics`' parse.
fn both(db: &Path, base: &str) -> Scrape {
    let (_, printed) = parse(&stats_prometheus(db));
    let text = scrape_metrics(base);
    let (scrape, served) = parse(&text);
    assert_eq!(
        printed.keys().collect::<Vec<_>>(),
        served.keys().collect::<Vec<_>>(),
        "stats --prometheus and /metrics name different series"
    );
    for (series, value) in &printed {
        let other = &served[series];
        if series.0 == "retryq_oldest_due_wait_seconds" {
            let (a, b): (f64, f64) = (value.parse().expect("a number"), other.parse().expect("a number"));
            assert!((a - b).abs() < 5.0, "{series:?}: {a} against {b}");
        } else {
            assert_eq!(value, other, "{series:?}");
        }
    }
    scrape
}

/// The value of one series of `scrape` (its labels exactly `labels`).
fn value(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<f64> = scrape
        .samples
        .iter()
        .filter(|s| {
            s.metric == metric
                && s.labels.iter().count() == labels.len()
                && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v))
        })
        .filter_map(|s| number(&s.value))
        .collect();
    assert_eq!(found.len(), 1, "{metric}{labels:?}: {found:?}");
    found[0]
}

// ---- A tiny evaluator of the PromQL the runbook's alerts use ----
//
// `AGG [by (L, …)] (SELECTOR) > N`, AGG `sum` or `max`, SELECTOR `name{k="v", …}` or
// `increase(name{…}[RANGE])` — the increase read as the difference between two scrapes (the
// window's ends) of the series present in both, as Prometheus has no increase of a series
// with one sample — optionally followed by `unless on (L, …) (SELECTOR == N)`, which drops
// the groups that a series of value N matches on the labels L.

/// A series' labels, sorted, and its value.
type Valued = (Vec<(String, String)>, f64);

/// The groups an expression fires for, by their `by` labels, with their values.
type Firing = BTreeMap<Vec<(String, String)>, f64>;

fn evaluate(expr: &str, before: &Scrape, after: &Scrape) -> Result<Firing, String> {
    match expr.split_once(" unless on (") {
        Some((kept, rest)) => {
            let (on, rest) = rest.split_once(')').ok_or(format!("{expr}: on (…"))?;
            let on: Vec<&str> = on.split(',').map(str::trim).collect();
            let excluded = equal_to(rest.trim(), after)?;
            let mut firing = aggregate(kept, before, after)?;
            firing.retain(|group, _| {
                !excluded.iter().any(|labels| {
                    on.iter().all(|k| {
                        let of = |set: &Vec<(String, String)>| {
                            set.iter().find(|(name, _)| name == k).map(|(_, v)| v.clone())
                        };
                        of(group) == of(labels)
                    })
                })
            });
            Ok(firing)
        }
        None => aggregate(expr, before, after),
    }
}

/// `(SELECTOR == N)`: the labels of the series of `scrape` whose value is N (the right side of
/// an `unless`).
fn equal_to(expr: &str, scrape: &Scrape) -> Result<Vec<Vec<(String, String)>>, String> {
    let inner = expr
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or(format!("{expr}: `unless on (…) (SELECTOR == N)`"))?;
    let (selector, n) = inner.split_once(" == ").ok_or(format!("{expr}: no `== N`"))?;
    let n: f64 = n.trim().parse().map_err(|_| format!("{expr}: the value"))?;
    Ok(select(selector, scrape)?.into_iter().filter(|(_, v)| *v == n).map(|(labels, _)| labels).collect())
}

/// `AGG [by (L, …)] (SELECTOR) > N`.
fn aggregate(expr: &str, before: &Scrape, after: &Scrape) -> Result<Firing, String> {
    let (lhs, threshold) = expr.rsplit_once(" > ").ok_or(format!("{expr}: no `> N`"))?;
    let threshold: f64 = threshold.trim().parse().map_err(|_| format!("{expr}: the threshold"))?;
    let (aggregate, rest) = lhs
        .strip_prefix("sum")
        .map(|r| ("sum", r))
        .or_else(|| lhs.strip_prefix("max").map(|r| ("max", r)))
        .ok_or(format!("{expr}: neither sum nor max"))?;
    let rest = rest.trim_start();
    let (by, inner): (Vec<&str>, &str) = match rest.strip_prefix("by (") {
        Some(r) => {
            let (labels, r) = r.split_once(')').ok_or(format!("{expr}: by (…"))?;
            (labels.split(',').map(str::trim).collect(), r.trim_start())
        }
        None => (Vec::new(), rest),
    };
    let inner = inner
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or(format!("{expr}: the aggregated expression"))?;
    let series: Vec<(Vec<(String, String)>, f64)> = match inner.strip_prefix("increase(") {
        Some(r) => {
            let (selector, _range) =
                r.strip_suffix(')').and_then(|r| r.split_once('[')).ok_or(format!("{expr}: increase"))?;
            let old = select(selector, before)?;
            select(selector, after)?
                .into_iter()
                .filter_map(|(labels, v)| {
                    old.iter().find(|(l, _)| *l == labels).map(|(_, was)| (labels.clone(), v - was))
                })
                .collect()
        }
        None => select(inner, after)?,
    };
    let mut groups: BTreeMap<Vec<(String, String)>, f64> = BTreeMap::new();
    for (labels, v) in series {
        let key = by
            .iter()
            .map(|b| {
                let value = labels.iter().find(|(k, _)| k == b).map_or("", |(_, v)| v.as_str());
                ((*b).to_owned(), value.to_owned())
            })
            .collect();
        let group = groups.entry(key).or_insert(if aggregate == "sum" { 0.0 } else { f64::MIN });
        *group = if aggregate == "sum" { *group + v } else { group.max(v) };
    }
    Ok(groups.into_iter().filter(|(_, v)| *v > threshold).collect())
}

/// The series of `scrape` a selector picks; an error when no series has its metric's name at
/// all (a metric renamed or gone), so that an alert on it cannot pass silently.
fn select(selector: &str, scrape: &Scrape) -> Result<Vec<Valued>, String> {
    let (name, matchers) = match selector.split_once('{') {
        Some((name, m)) => (name.trim(), m.strip_suffix('}').ok_or(format!("{selector}: {{…"))?),
        None => (selector.trim(), ""),
    };
    let mut wanted = Vec::new();
    for m in matchers.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        let (k, v) = m.split_once('=').ok_or(format!("{selector}: {m}"))?;
        if k.ends_with('!') {
            return Err(format!("{selector}: only = matchers are evaluated here"));
        }
        wanted.push((k.trim().to_owned(), v.trim().trim_matches('"').to_owned()));
    }
    let named: Vec<_> = scrape.samples.iter().filter(|s| s.metric == name).collect();
    if named.is_empty() {
        return Err(format!("no series named {name}"));
    }
    Ok(named
        .into_iter()
        .filter(|s| wanted.iter().all(|(k, v)| s.labels.get(k) == Some(v.as_str())))
        .filter_map(|s| {
            let mut labels: Vec<(String, String)> =
                s.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            labels.sort();
            number(&s.value).map(|v| (labels, v))
        })
        .collect())
}

/// The runbook's alerts: name → expression, read from docs/runbook.md.
fn runbook_alerts() -> BTreeMap<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/runbook.md");
    let text = std::fs::read_to_string(&path).expect("docs/runbook.md");
    let mut alerts = BTreeMap::new();
    let mut name = None;
    for line in text.lines().map(str::trim) {
        if let Some(n) = line.strip_prefix("- alert: ") {
            name = Some(n.to_owned());
        } else if let (Some(expr), Some(n)) = (line.strip_prefix("expr: "), name.take()) {
            alerts.insert(n, expr.to_owned());
        }
    }
    alerts
}

fn fired(expr: &str, before: &Scrape, after: &Scrape) -> Vec<String> {
    evaluate(expr, before, after)
        .unwrap_or_else(|e| panic!("{e}"))
        .keys()
        .map(|labels| labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(","))
        .collect()
}

#[test]
fn stats_and_metrics_agree_add_up_and_the_runbook_alerts_fire_as_they_should() {
    let (_dir, db) = common::fresh("retryq-metrics-");
    let t = now_ms();
    let mut q = Queue::open(&db).expect("open");
    let job = |id, queue, max_attempts, now| NewJob {
        id,
        payload: "{}",
        max_attempts,
        deadline: t + 60 * MINUTE,
        now,
        queue: Some(queue),
        ..NewJob::default()
    };
    let finish = |q: &mut Queue, queues: &[&str], at: u64, outcome: Outcome| {
        let c = q.claim_from("w", queues, at).expect("claim").expect("a due job");
        q.complete(&Completion::new(&Lease::new("w", c.id(), c.attempt()), outcome, at + 10, 0.0))
            .expect("complete");
    };
    // sms: dead (exhausted) 29 minutes ago, redriven a second ago: open since its first
    // enqueue 30 minutes ago, but due only since the redrive.
    q.enqueue(&job("s-1", "sms", 1, t - 30 * MINUTE)).expect("enqueue");
    finish(&mut q, &["sms"], t - 29 * MINUTE, Outcome::Retryable);
    // mail: one dead (permanent, of kind receipt), one due for 20 minutes and never claimed.
    q.enqueue(&NewJob { kind: "receipt", ..job("m-bad", "mail", 3, t - 21 * MINUTE) }).expect("enqueue");
    q.enqueue(&job("m-wait", "mail", 3, t - 20 * MINUTE)).expect("enqueue");
    finish(&mut q, &["mail"], t - 19 * MINUTE, Outcome::Permanent);
    // default: one done, one whose 30 s lease ran out 9.5 minutes ago.
    q.enqueue(&job("d-1", "default", 3, t - 11 * MINUTE)).expect("enqueue");
    finish(&mut q, &["default"], t - 11 * MINUTE, Outcome::Ok);
    q.enqueue(&job("d-2", "default", 3, t - 10 * MINUTE)).expect("enqueue");
    q.claim_from("w", &["default"], t - 10 * MINUTE).expect("claim").expect("d-2");
    q.redrive(&Redrive { id: "s-1", add_attempts: 1, deadline: t + 60 * MINUTE, now: t - 1000 })
        .expect("redrive");
    // push: paused 18 minutes ago, its job due for 20 minutes: waiting by design, no alert.
    q.enqueue(&job("p-wait", "push", 3, t - 20 * MINUTE)).expect("enqueue");
    q.pause("push", t - 18 * MINUTE).expect("pause");

    let serving = start_serve(db.to_str().expect("utf-8 path"), &[]);
    let first = both(&db, &serving.url);

    // The whole store is the sum of the queues: six jobs, one dead.
    let sum = |s: &Scrape, metric: &str| -> f64 {
        s.samples.iter().filter(|x| x.metric == metric).filter_map(|x| number(&x.value)).sum()
    };
    assert_eq!(sum(&first, "retryq_jobs"), 6.0);
    let stats = q.stats(now_ms()).expect("stats");
    assert_eq!(stats.pending + stats.leased + stats.done + stats.dead, 6);
    assert_eq!(
        value(&first, "retryq_jobs", &[("queue", "mail"), ("status", "dead"), ("reason", "permanent")]),
        1.0
    );
    assert_eq!(value(&first, "retryq_leases_expired", &[("queue", "default")]), 1.0);
    // Counters present before their first event, of no kind and of every kind a queue has
    // counted; the tallies about jobs by kind (SPEC 6.44), a prune's not.
    let no_kind = ("kind", "");
    let sms_permanent = [("queue", "sms"), no_kind, ("reason", "permanent")];
    assert_eq!(value(&first, "retryq_deaths_total", &sms_permanent), 0.0);
    assert_eq!(
        value(&first, "retryq_cancels_total", &[("queue", "default"), no_kind, ("type", "request")]),
        0.0
    );
    let receipt = ("kind", "receipt");
    assert_eq!(
        value(&first, "retryq_deaths_total", &[("queue", "mail"), receipt, ("reason", "permanent")]),
        1.0
    );
    assert_eq!(
        value(&first, "retryq_deaths_total", &[("queue", "mail"), no_kind, ("reason", "permanent")]),
        0.0
    );
    assert_eq!(value(&first, "retryq_enqueued_total", &[("queue", "mail"), receipt]), 1.0);
    assert_eq!(value(&first, "retryq_enqueued_total", &[("queue", "mail"), no_kind]), 1.0);
    assert_eq!(value(&first, "retryq_claims_total", &[("queue", "mail"), receipt]), 1.0);
    assert_eq!(value(&first, "retryq_claims_total", &[("queue", "mail"), no_kind]), 0.0);
    let receipts_outside_mail = first
        .samples
        .iter()
        .filter(|x| x.labels.get("kind") == Some("receipt") && x.labels.get("queue") != Some("mail"))
        .count();
    assert_eq!(receipts_outside_mail, 0, "a kind's series only in the queues that counted it");
    assert_eq!(value(&first, "retryq_pruned_total", &[("queue", "mail"), ("status", "dead")]), 0.0);
    // The wait: mail's job since it was enqueued (20 min), sms's since its redrive (1 s) though
    // it has been open 30 minutes (stats' oldest_open_age_ms counts from the enqueue), and the
    // expired lease since its expiry.
    let wait = |queue| value(&first, "retryq_oldest_due_wait_seconds", &[("queue", queue)]);
    assert!((1200.0..1260.0).contains(&wait("mail")), "{}", wait("mail"));
    assert!(wait("sms") < 60.0, "a redrive fakes an old job: {}", wait("sms"));
    assert!(q.stats_of(now_ms(), Some("sms")).expect("stats").oldest_open_age_ms >= Some(30 * MINUTE));
    assert!((570.0..630.0).contains(&wait("default")), "{}", wait("default"));
    assert_eq!(value(&first, "retryq_queue_paused", &[("queue", "push")]), 1.0);
    // A paused queue has nothing due to a worker: its wait reads 0 (the runbook's definition).
    assert_eq!(wait("push"), 0.0, "a paused queue's due wait");
    assert_eq!(value(&first, "retryq_queue_paused", &[("queue", "mail")]), 0.0);

    // A death between two scrapes: sms's redriven job, permanent now.
    finish(&mut q, &["sms"], now_ms(), Outcome::Permanent);
    let second = both(&db, &serving.url);

    let alerts = runbook_alerts();
    let names: Vec<&str> = alerts.keys().map(String::as_str).collect();
    assert_eq!(names, ["RetryqDeadJobs", "RetryqDeathsRising", "RetryqDueJobWaiting", "RetryqLeasesExpired"]);
    let expected: [(&str, Vec<&str>); 4] = [
        ("RetryqDeadJobs", vec![""]),
        ("RetryqDeathsRising", vec!["queue=sms,reason=permanent"]),
        ("RetryqDueJobWaiting", vec!["queue=mail"]),
        ("RetryqLeasesExpired", vec!["queue=default"]),
    ];
    for (name, groups) in expected {
        assert_eq!(fired(&alerts[name], &first, &second), groups, "{name}: {}", alerts[name]);
    }
    assert_eq!(evaluate(&alerts["RetryqDeadJobs"], &first, &second).expect("eval")[&Vec::new()], 2.0);
    // At the first scrape, before the redriven job was claimed again, its queue did not fire.
    assert_eq!(fired(&alerts["RetryqDueJobWaiting"], &first, &first), ["queue=mail"]);

    // A metric renamed under an alert fails it rather than passing silently.
    assert!(evaluate("sum(retryq_dead_jobs) > 0", &first, &second).is_err());
}

/// A paused queue's due jobs wait on purpose (SPEC 3.16): the due-wait alert leaves out every
/// queue `retryq_queue_paused` marks, however long its wait, and still fires for the others.
/// Evaluated on an exposition written here, since a store's paused queue reads a wait of 0
/// today (its `next_due_in` skips paused queues) where the runbook's table says it grows.
#[test]
fn the_due_wait_alert_leaves_paused_queues_out() {
    let text = "\
# TYPE retryq_oldest_due_wait_seconds gauge
retryq_oldest_due_wait_seconds{queue=\"push\"} 1500
retryq_oldest_due_wait_seconds{queue=\"mail\"} 1200
retryq_oldest_due_wait_seconds{queue=\"sms\"} 3
# TYPE retryq_queue_paused gauge
retryq_queue_paused{queue=\"push\"} 1
retryq_queue_paused{queue=\"mail\"} 0
retryq_queue_paused{queue=\"sms\"} 0
";
    let (scrape, _) = parse(text);
    let alert = &runbook_alerts()["RetryqDueJobWaiting"];
    assert_eq!(fired(alert, &scrape, &scrape), ["queue=mail"], "{alert}");
    // The wait alone would fire for the paused queue: the `unless` is what leaves it out.
    let (waiting, _) = alert.split_once(" unless ").expect("an unless");
    assert_eq!(fired(waiting, &scrape, &scrape), ["queue=mail", "queue=push"]);
    // Resumed, it is waited on again.
    let resumed = parse(
        &text.replace("retryq_queue_paused{queue=\"push\"} 1", "retryq_queue_paused{queue=\"push\"} 0"),
    )
    .0;
    assert_eq!(fired(alert, &resumed, &resumed), ["queue=mail", "queue=push"]);
}
