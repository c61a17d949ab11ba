//! The operators' notes of schema 4 (SPEC 6.36) on both stores: one run with retries, a
//! permanent failure, a note on a live lease, reaps of expired leases (one with a cancel
//! request), an expired lease claimed again, a cancel of a running job, a pending one
//! cancelled, heartbeats, a redrive, a prune and a forget. The attempts' records must say what
//! happened, attempt by attempt; the tallies must be the counts the run's history gives, and
//! neither a prune, nor a forget, nor a reopening may take anything off them. The jobs are of
//! three kinds (one of them none, `""`): every tally about jobs is its kind's (SPEC 6.44).

use std::collections::BTreeMap;

use retryq::{
    AttemptRecord, Backend, Cancelled, Completion, ErrorKind, HistoryEntry, NewJob, Outcome, PgQueue, Queue,
    Redrive, Report, Settings, Status, Tallies,
};

const SETTINGS: Settings =
    Settings { lease_ms: 1000, base_ms: 100, cap_ms: 250, reap_limit: retryq::DEFAULT_REAP_LIMIT };

/// The run's jobs, each in a queue of its own (so that each claim takes the job meant), with
/// their budget, deadline and kind.
const JOBS: [(&str, u64, u64, &str); 9] = [
    ("flaky", 3, 100_000, "charge"),
    ("broken", 3, 100_000, "charge"),
    ("crashy", 1, 100_000, "mail"),
    ("slow", 3, 100_000, "mail"),
    ("stopped", 3, 100_000, "mail"),
    ("abandoned", 3, 100_000, ""),
    ("waiting", 3, 100_000, "charge"),
    ("beating", 3, 100_000, ""),
    ("late", 3, 900, "mail"),
];

/// The kind of the job of `queue`.
fn kind_of(queue: &str) -> &'static str {
    JOBS.iter().find(|(id, ..)| *id == queue).map_or("", |job| job.3)
}

fn claim(q: &mut dyn Backend, worker: &str, id: &str, now: u64) -> retryq::Lease {
    let claimed = q.claim_from(worker, &[id], now).expect("claim").expect("due");
    assert_eq!(claimed.id(), id);
    claimed.lease
}

fn complete(q: &mut dyn Backend, lease: &retryq::Lease, report: Report, now: u64) {
    q.complete(&Completion::new(lease, report, now, 0.5)).expect("complete");
}

fn report(outcome: Outcome, error: Option<&str>, node: Option<&str>) -> Report {
    Report { outcome, error: error.map(str::to_owned), node: node.map(str::to_owned), retry_after_ms: None }
}

/// The run, from an empty store.
fn run(q: &mut dyn Backend) {
    q.set_settings(SETTINGS).expect("settings");
    for (id, max_attempts, deadline, kind) in JOBS {
        let job = NewJob {
            id,
            payload: id,
            max_attempts,
            deadline,
            now: 0,
            queue: Some(id),
            kind,
            ..NewJob::default()
        };
        q.enqueue(&job).expect("enqueue");
    }
    assert_eq!(q.cancel("waiting", 5).expect("cancel"), Cancelled::Ended);
    // flaky: a retryable failure, then a note on the second attempt's live lease, then ok.
    let first = claim(q, "w1", "flaky", 10);
    complete(q, &first, report(Outcome::Retryable, Some("HTTP 503"), Some("n1")), 20);
    let second = claim(q, "w2", "flaky", 70);
    q.record_error(&second, "connection reset", Some("n2")).expect("note");
    complete(q, &second, report(Outcome::Ok, None, Some("n2")), 90);
    // broken: permanent, redriven, then ok.
    let lease = claim(q, "w1", "broken", 10);
    complete(q, &lease, report(Outcome::Permanent, Some("HTTP 400\u{1b}[2J"), None), 15);
    // crashy: its holder notes an error and dies on the last attempt.
    let lease = claim(q, "w3", "crashy", 10);
    q.record_error(&lease, "exit 137", None).expect("note");
    // slow: its holder dies; the lease is claimed again after it expires.
    claim(q, "w4", "slow", 10);
    // stopped: cancelled while running; the holder stops at its refused heartbeat.
    let lease = claim(q, "w6", "stopped", 10);
    assert_eq!(q.cancel("stopped", 12).expect("cancel"), Cancelled::Requested);
    assert_eq!(q.heartbeat(&lease, 13).map_err(|e| e.kind()), Err(ErrorKind::Cancelled));
    complete(q, &lease, report(Outcome::Retryable, Some("cancelled"), None), 14);
    // abandoned: cancelled while running; its holder never answers.
    claim(q, "w7", "abandoned", 10);
    assert_eq!(q.cancel("abandoned", 12).expect("cancel"), Cancelled::Requested);
    // beating: two heartbeats, then ok.
    let lease = claim(q, "w8", "beating", 10);
    assert_eq!(q.heartbeat(&lease, 500).expect("heartbeat"), 1500);
    assert_eq!(q.heartbeat(&lease, 600).expect("heartbeat"), 1600);
    complete(q, &lease, Outcome::Ok.into(), 700);
    q.redrive(&Redrive { id: "broken", add_attempts: 1, deadline: 100_000, now: 50 }).expect("redrive");
    let lease = claim(q, "w9", "broken", 60);
    complete(q, &lease, Outcome::Ok.into(), 65);
    // At 1010: crashy's and abandoned's leases expired, late's deadline passed.
    assert_eq!(q.reap(1010).expect("reap"), 3);
    let lease = claim(q, "w5", "slow", 1020);
    assert_eq!(lease.attempt, 2);
    complete(q, &lease, Outcome::Ok.into(), 1030);
}

/// (attempt, worker, claimed_at, ended_at, outcome, error, node) of a job's records.
type Said = (u64, &'static str, u64, u64, &'static str, Option<&'static str>, Option<&'static str>);

/// A record as [`Said`] has it, owned.
type Record = (u64, String, u64, u64, String, Option<String>, Option<String>);

fn said(records: &[AttemptRecord]) -> Vec<Record> {
    records
        .iter()
        .map(|r| {
            let worker = r.worker.clone().expect("a holder");
            (r.attempt, worker, r.claimed_at, r.ended_at, r.outcome.clone(), r.error.clone(), r.node.clone())
        })
        .collect()
}

fn expected(rows: &[Said]) -> Vec<Record> {
    rows.iter()
        .map(|&(a, w, c, e, o, err, node)| {
            (a, w.into(), c, e, o.into(), err.map(str::to_owned), node.map(str::to_owned))
        })
        .collect()
}

/// What happened, attempt by attempt.
fn records_say_what_happened(q: &dyn Backend) {
    let cases: [(&str, &[Said]); 9] = [
        (
            "flaky",
            // The report of the second attempt replaced its note: it said no error.
            &[
                (1, "w1", 10, 20, "retryable", Some("HTTP 503"), Some("n1")),
                (2, "w2", 70, 90, "ok", None, Some("n2")),
            ],
        ),
        (
            "broken",
            &[
                (1, "w1", 10, 15, "permanent", Some("HTTP 400\u{1b}[2J"), None),
                (2, "w9", 60, 65, "ok", None, None),
            ],
        ),
        // The reaped attempt keeps what its holder noted on the live lease.
        ("crashy", &[(1, "w3", 10, 1010, "lease expired", Some("exit 137"), None)]),
        (
            "slow",
            &[(1, "w4", 10, 1020, "lease expired", None, None), (2, "w5", 1020, 1030, "ok", None, None)],
        ),
        ("stopped", &[(1, "w6", 10, 14, "retryable", Some("cancelled"), None)]),
        ("abandoned", &[(1, "w7", 10, 1010, "lease expired", None, None)]),
        ("waiting", &[]),
        ("beating", &[(1, "w8", 10, 700, "ok", None, None)]),
        ("late", &[]),
    ];
    for (id, rows) in cases {
        assert_eq!(said(&q.attempts(id).expect("attempts")), expected(rows), "{id}");
    }
    assert_eq!(q.attempts("nobody").expect("attempts"), []);
}

/// Every counter and histogram, as `name{label=value,…}` → value, and each histogram's
/// count and sum.
fn flat(t: &Tallies) -> BTreeMap<String, u64> {
    let key = |metric: &str, labels: &[(String, String)], extra: &str| {
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{metric}{extra}{{{}}}", labels.join(","))
    };
    let mut flat = BTreeMap::new();
    for c in &t.counters {
        assert!(flat.insert(key(&c.metric, &c.labels, ""), c.value).is_none(), "{} twice", c.metric);
    }
    for h in &t.histograms {
        flat.insert(key(&h.metric, &h.labels, "_count"), h.count);
        flat.insert(key(&h.metric, &h.labels, "_sum"), h.sum_ms);
        let cumulative = h.buckets.windows(2).all(|b| b[0].0 < b[1].0 && b[0].1 <= b[1].1);
        assert!(cumulative && h.buckets.last() == Some(&(u64::MAX, h.count)), "{h:?}");
    }
    flat
}

/// The counts a run's histories give: enqueues, claims and their waits, ends of attempts,
/// deaths by reason, pending jobs reaped or cancelled, redrives.
fn counted(histories: &[(&str, Vec<HistoryEntry>)]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    let mut add = |key: String, n: u64| *counts.entry(key).or_insert(0) += n;
    for (queue, entries) in histories {
        let q = format!("queue={queue},kind={}", kind_of(queue));
        for pair in entries.windows(2) {
            let (prev, cur) = (&pair[0], &pair[1]);
            let claim = cur.to == Status::Leased && cur.attempt == prev.attempt + 1;
            if claim {
                add(format!("retryq_claims_total{{{q}}}"), 1);
                add(format!("retryq_claim_wait_milliseconds_count{{{q}}}"), 1);
                add(
                    format!("retryq_claim_wait_milliseconds_sum{{{q}}}"),
                    cur.at - prev.available_at.expect("due"),
                );
            }
            if prev.to == Status::Leased && (cur.to != Status::Leased || claim) {
                add(format!("ended{{{q}}}"), 1);
            }
            if cur.to == Status::Dead {
                let reason = cur.reason.expect("a reason");
                add(format!("retryq_deaths_total{{{q},reason={reason}}}"), 1);
                if prev.to == Status::Pending && reason == retryq::DeadReason::Deadline {
                    add(format!("retryq_reaped_total{{{q},reason={reason}}}"), 1);
                }
                if prev.to == Status::Pending && reason == retryq::DeadReason::Cancelled {
                    add(format!("retryq_cancels_total{{{q},type=pending}}"), 1);
                }
            }
            if prev.to == Status::Dead && cur.to == Status::Pending {
                add(format!("retryq_redrives_total{{{q}}}"), 1);
            }
        }
        add(
            format!("retryq_enqueued_total{{{q}}}"),
            entries.iter().filter(|e| e.from.is_none()).count() as u64,
        );
    }
    counts
}

/// The tallies are the run's counts: those its histories give, and the rest as the run made
/// them.
fn tallies_count_the_run(q: &dyn Backend) -> BTreeMap<String, u64> {
    let histories: Vec<(&str, Vec<HistoryEntry>)> =
        JOBS.iter().map(|(id, ..)| (*id, q.history(id).expect("history"))).collect();
    let tallies = flat(&q.tallies().expect("tallies"));
    let mut from_history = counted(&histories);
    // Ends of attempts, by outcome in the tallies, in all in the history.
    for (queue, _) in &histories {
        let ended: u64 = tallies
            .iter()
            .filter(|(k, _)| {
                k.starts_with(&format!("retryq_attempts_ended_total{{queue={queue},kind={},", kind_of(queue)))
            })
            .map(|(_, v)| v)
            .sum();
        let want =
            from_history.remove(&format!("ended{{queue={queue},kind={}}}", kind_of(queue))).unwrap_or(0);
        assert_eq!(ended, want, "{queue}: attempts ended");
    }
    for (key, value) in &from_history {
        assert_eq!(tallies.get(key), Some(value), "{key}, from the history; tallies: {tallies:#?}");
    }
    // What the history does not tell apart: heartbeats and cancel requests (a leased →
    // leased entry each), which ends were reaps, and what ended each attempt.
    for (key, value) in [
        ("retryq_heartbeats_total{queue=beating,kind=}", 2),
        ("retryq_cancels_total{queue=stopped,kind=mail,type=request}", 1),
        ("retryq_cancels_total{queue=abandoned,kind=,type=request}", 1),
        ("retryq_reaped_total{queue=crashy,kind=mail,reason=exhausted}", 1),
        ("retryq_reaped_total{queue=abandoned,kind=,reason=cancelled}", 1),
        ("retryq_attempts_ended_total{queue=flaky,kind=charge,outcome=retryable}", 1),
        ("retryq_attempts_ended_total{queue=flaky,kind=charge,outcome=ok}", 1),
        ("retryq_attempts_ended_total{queue=broken,kind=charge,outcome=permanent}", 1),
        ("retryq_attempts_ended_total{queue=crashy,kind=mail,outcome=lease expired}", 1),
        ("retryq_attempts_ended_total{queue=slow,kind=mail,outcome=lease expired}", 1),
        ("retryq_attempts_ended_total{queue=stopped,kind=mail,outcome=retryable}", 1),
        ("retryq_attempt_duration_milliseconds_sum{queue=slow,kind=mail,outcome=lease expired}", 1010),
        ("retryq_attempt_duration_milliseconds_sum{queue=beating,kind=,outcome=ok}", 690),
    ] {
        assert_eq!(tallies.get(key), Some(&value), "{key}: {tallies:#?}");
    }
    // Nothing else: every tally is one of those.
    let known = |k: &str| {
        from_history.contains_key(k)
            || k.starts_with("retryq_attempts_ended_total")
            || k.starts_with("retryq_attempt_duration_milliseconds")
            || k.starts_with("retryq_heartbeats_total")
            || k.contains("type=request")
            || k.starts_with("retryq_reaped_total")
    };
    let unknown: Vec<&String> = tallies.keys().filter(|k| !known(k)).collect();
    assert_eq!(unknown, Vec::<&String>::new(), "{tallies:#?}");
    tallies
}

/// The whole run on one store, `reopen` giving another handle on the same store.
fn scenario(q: &mut dyn Backend, reopen: &dyn Fn() -> Box<dyn Backend>) {
    run(q);
    records_say_what_happened(q);
    let before = tallies_count_the_run(q);
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
    // Another process reads the same tallies.
    assert_eq!(flat(&reopen().tallies().expect("tallies")), before);

    // A prune of everything that ended by 1015 (all but slow), then a forget of what ended by
    // 100: the records go with the jobs, the tallies only grow by the prune and the forget.
    assert_eq!(q.prune(1015, 2000).expect("prune"), 8);
    assert_eq!(q.attempts("flaky").expect("attempts"), []);
    assert_eq!(q.attempts("slow").expect("attempts").len(), 2, "slow ended at 1030: kept");
    let pruned = flat(&q.tallies().expect("tallies"));
    assert_eq!(q.forget(100, 2000).expect("forget"), 4, "flaky, broken, stopped, waiting");
    let forgotten = flat(&q.tallies().expect("tallies"));
    for (key, value) in &before {
        assert_eq!(pruned.get(key), Some(value), "{key} after the prune");
        assert_eq!(forgotten.get(key), Some(value), "{key} after the forget");
    }
    let added = |after: &BTreeMap<String, u64>| -> BTreeMap<String, u64> {
        after.iter().filter(|(k, _)| !before.contains_key(*k)).map(|(k, v)| (k.clone(), *v)).collect()
    };
    let by_prune: Vec<String> = JOBS
        .iter()
        .filter(|(id, ..)| *id != "slow")
        .map(|(id, ..)| {
            let status = if ["flaky", "broken", "beating"].contains(id) { "done" } else { "dead" };
            format!("retryq_pruned_total{{queue={id},status={status}}}")
        })
        .collect();
    assert_eq!(added(&pruned).into_keys().collect::<Vec<_>>(), {
        let mut keys = by_prune.clone();
        keys.sort();
        keys
    });
    assert!(added(&pruned).values().all(|&n| n == 1));
    let by_forget = added(&forgotten);
    for id in ["flaky", "broken", "stopped", "waiting"] {
        assert_eq!(by_forget.get(&format!("retryq_forgotten_total{{queue={id}}}")), Some(&1), "{id}");
    }
    assert_eq!(by_forget.len(), by_prune.len() + 4);
    // A forgotten id is new again: its enqueue counts once more, its records start afresh.
    let again = NewJob {
        id: "flaky",
        payload: "x",
        max_attempts: 1,
        deadline: 100_000,
        now: 2000,
        queue: Some("flaky"),
        kind: "charge",
        ..NewJob::default()
    };
    q.enqueue(&again).expect("enqueue");
    let lease = claim(q, "w1", "flaky", 2001);
    complete(q, &lease, Outcome::Ok.into(), 2002);
    assert_eq!(
        said(&q.attempts("flaky").expect("attempts")),
        expected(&[(1, "w1", 2001, 2002, "ok", None, None)])
    );
    let last = flat(&q.tallies().expect("tallies"));
    assert_eq!(last.get("retryq_enqueued_total{queue=flaky,kind=charge}"), Some(&2));
    assert_eq!(last.get("retryq_claims_total{queue=flaky,kind=charge}"), Some(&3));
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
    assert_eq!(flat(&reopen().tallies().expect("tallies")), last, "kept across a reopening");
}

#[test]
fn sqlite_records_every_attempt_and_tallies_survive() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let mut q = Queue::open(&path).expect("open");
    let reopen = || -> Box<dyn Backend> { Box::new(Queue::open(&path).expect("reopen")) };
    scenario(&mut q, &reopen);
}

#[test]
fn postgres_records_every_attempt_and_tallies_survive() {
    let Some(url) = retryq_pgtest::database("notes postgres_records_every_attempt") else { return };
    let mut q = PgQueue::connect(&url).expect("connect");
    let reopen = || -> Box<dyn Backend> { Box::new(PgQueue::connect(&url).expect("reconnect")) };
    scenario(&mut q, &reopen);
}

/// A bulk import's tallies (SPEC 6.36, 6.38, 6.44): 600 jobs of three kinds over two queues,
/// an id given twice (`existing`) and one given again with another kind (`conflict`), add per
/// queue and kind exactly what their enqueues one by one would add — whatever pieces the
/// import is cut into, each one statement on PostgreSQL.
fn a_bulk_import_tallies_each_kind(q: &mut dyn Backend) {
    const KINDS: [&str; 3] = ["", "mail", "charge"];
    let ids: Vec<String> = (0..600).map(|i| format!("bulk-{i}")).collect();
    let mut jobs: Vec<NewJob<'_>> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| NewJob {
            id,
            payload: "{}",
            max_attempts: 3,
            deadline: 100_000,
            now: 0,
            queue: Some(if i % 2 == 0 { "even" } else { "odd" }),
            kind: KINDS[i % 3],
            ..NewJob::default()
        })
        .collect();
    jobs.push(jobs[4]);
    jobs.push(NewJob { kind: "other", ..jobs[5] });
    let mut answers = Vec::new();
    q.enqueue_bulk(&jobs, &mut answers).expect("bulk");
    assert_eq!(answers.len(), 602);
    assert!(matches!(answers[600], Ok(retryq::Enqueued::Existing)), "{:?}", answers[600]);
    assert_eq!(answers[601].as_ref().map_err(|e| e.kind()).err(), Some(ErrorKind::Conflict));
    let tallies = flat(&q.tallies().expect("tallies"));
    for queue in ["even", "odd"] {
        for kind in KINDS {
            // i % 2 picks the queue and i % 3 the kind: each of the six pairs is 100 of the 600.
            let key = format!("retryq_enqueued_total{{queue={queue},kind={kind}}}");
            assert_eq!(tallies.get(&key), Some(&100), "{key}: {tallies:#?}");
        }
    }
    assert_eq!(tallies.keys().filter(|k| k.starts_with("retryq_enqueued_total")).count(), 6, "{tallies:#?}");
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
}

#[test]
fn sqlite_bulk_import_tallies_each_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut q = Queue::open(dir.path().join("q.db")).expect("open");
    a_bulk_import_tallies_each_kind(&mut q);
}

#[test]
fn postgres_bulk_import_tallies_each_kind() {
    let Some(url) = retryq_pgtest::database("notes postgres_bulk_import_tallies_each_kind") else { return };
    let mut q = PgQueue::connect(&url).expect("connect");
    a_bulk_import_tallies_each_kind(&mut q);
}
