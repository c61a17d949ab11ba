//! The upgrade of a schema 3 file (contract 1.2's, before the operators' notes) to schema 4,
//! on a copy of `tests/fixtures/schema-3.db`, which schema 3 code wrote (see
//! `tests/fixtures/README.md`): every job, entry and tombstone kept, the attempts' records and
//! the tallies filled from what the file holds, exactly what a read-only open showed before,
//! the schema the same as a new file's, and the notes kept from then on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use retryq::rusqlite::{Connection, OpenFlags};
use retryq::{Completion, Lease, NewJob, OpenOptions, Outcome, Queue, SCHEMA_VERSION, Tallies};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/schema-3.db");

/// The fixture's jobs (the forgotten one left nothing; the pruned one a tombstone).
const IDS: [&str; 15] = [
    "done-1",
    "retried-2",
    "permanent-3",
    "exhausted-4",
    "late-5",
    "early-6",
    "reclaimed-7",
    "cancelling-8",
    "cancel-reaped-9",
    "cancel-pending-10",
    "redriven-11",
    "pruned-12",
    "leased-13",
    "requested-14",
    "deadline-15",
];

fn copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("schema-3.db");
    std::fs::copy(FIXTURE, &path).expect("copy the fixture");
    (dir, path)
}

fn user_version(path: &Path) -> i64 {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    conn.pragma_query_value(None, "user_version", |row| row.get(0)).expect("user_version")
}

/// Every counter and histogram, as `name{labels}` → value (a histogram: its count and sum).
fn flat(t: &Tallies) -> BTreeMap<String, u64> {
    let key = |metric: &str, labels: &[(String, String)]| {
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{metric}{{{}}}", labels.join(","))
    };
    let mut flat: BTreeMap<String, u64> =
        t.counters.iter().map(|c| (key(&c.metric, &c.labels), c.value)).collect();
    for h in &t.histograms {
        flat.insert(key(&format!("{}_count", h.metric), &h.labels), h.count);
        flat.insert(key(&format!("{}_sum", h.metric), &h.labels), h.sum_ms);
    }
    flat
}

/// (attempt, worker, claimed_at, ended_at, outcome) of one record.
type Record = (u64, String, u64, u64, String);

/// A job's records.
fn records(q: &Queue, id: &str) -> Vec<Record> {
    q.attempts(id)
        .expect("attempts")
        .into_iter()
        .map(|r| {
            assert_eq!(
                (r.error.as_deref(), r.node.as_deref()),
                (None, None),
                "{id}: schema 3 kept no attempt's notes"
            );
            (r.attempt, r.worker.expect("a holder"), r.claimed_at, r.ended_at, r.outcome)
        })
        .collect()
}

/// The schema's objects, each by type, name and SQL.
fn objects(path: &Path) -> Vec<(String, String, Option<String>)> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("read");
    let mut statement = conn
        .prepare(
            "SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
        )
        .expect("prepare");
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[test]
fn the_fixture_is_schema_3() {
    assert_eq!(user_version(Path::new(FIXTURE)), 3);
}

#[test]
fn an_upgrade_keeps_everything_and_fills_the_notes_from_the_history() {
    let (dir, path) = copy();
    let bytes = std::fs::read(&path).expect("read");
    let read = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
    let before = Queue::open_with(&path, &read).expect("read schema 3");
    let jobs: Vec<_> = IDS.iter().map(|id| before.lookup(id).expect("lookup")).collect();
    let histories: Vec<_> = IDS.iter().map(|id| before.history(id).expect("history")).collect();
    let shown: Vec<_> = IDS.iter().map(|id| records(&before, id)).collect();
    let tallies = flat(&before.tallies().expect("tallies"));
    let stats = before.stats(2000).expect("stats");
    let audit = before.audit().expect("audit");
    assert!(audit.is_clean(), "read as it is: {:#?}", audit.violations);
    drop(before);
    assert_eq!(user_version(&path), 3, "a read-only open writes nothing");
    assert_eq!(std::fs::read(&path).expect("read"), bytes, "byte for byte");

    let mut q = Queue::open(&path).expect("open upgrades");
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    for (i, id) in IDS.iter().enumerate() {
        assert_eq!(q.lookup(id).expect("lookup"), jobs[i], "{id}");
        assert_eq!(q.history(id).expect("history"), histories[i], "{id}");
        assert_eq!(records(&q, id), shown[i], "{id}: what the read-only open showed");
    }
    assert_eq!(q.stats(2000).expect("stats"), stats);
    assert_eq!(flat(&q.tallies().expect("tallies")), tallies, "what the read-only open showed");
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);

    // The records: every claim of the history, ended as it tells; where a reap and a late
    // retryable report leave the same entry, said so.
    let r = |a: u64, w: &str, c: u64, e: u64, o: &str| (a, w.to_owned(), c, e, o.to_owned());
    let want: [(&str, Vec<Record>); 15] = [
        ("done-1", vec![r(1, "w1", 10, 11, "ok")]),
        ("retried-2", vec![r(1, "w1", 12, 13, "retryable"), r(2, "w2", 70, 75, "ok")]),
        ("permanent-3", vec![r(1, "w1", 20, 21, "permanent")]),
        ("exhausted-4", vec![r(1, "w1", 22, 1600, "expired or retryable")]),
        ("late-5", vec![r(1, "w1", 23, 1500, "expired or retryable")]),
        ("early-6", vec![r(1, "w1", 24, 25, "retryable")]),
        ("reclaimed-7", vec![r(1, "w1", 26, 1600, "lease expired"), r(2, "w2", 1600, 1601, "ok")]),
        ("cancelling-8", vec![r(1, "w1", 27, 29, "retryable")]),
        ("cancel-reaped-9", vec![r(1, "w1", 30, 1600, "expired or retryable")]),
        ("cancel-pending-10", vec![]),
        ("redriven-11", vec![r(1, "w1", 33, 34, "permanent"), r(2, "w3", 36, 37, "ok")]),
        ("pruned-12", vec![]),
        ("leased-13", vec![]),
        ("requested-14", vec![]),
        ("deadline-15", vec![]),
    ];
    for (id, records_of) in &want {
        assert_eq!(&records(&q, id), records_of, "{id}");
    }

    // The tallies: what the history and the tombstones tell, and nothing of the forgotten job.
    let t = flat(&q.tallies().expect("tallies"));
    let sum = |prefix: &str| -> u64 { t.iter().filter(|(k, _)| k.starts_with(prefix)).map(|(_, v)| v).sum() };
    assert_eq!(sum("retryq_enqueued_total{"), 15, "14 jobs and a tombstone");
    assert_eq!(sum("retryq_claims_total{"), 16, "the jobs' attempts and the tombstone's");
    assert_eq!(
        sum("retryq_attempts_ended_total{"),
        13,
        "every claim of a job in the file but the two live leases'"
    );
    assert_eq!(sum("retryq_claim_wait_milliseconds_count{"), 15, "the claims the history holds");
    for (key, value) in [
        ("retryq_deaths_total{queue=b,kind=,reason=exhausted}", 1),
        ("retryq_deaths_total{queue=i,kind=,reason=permanent}", 1),
        ("retryq_deaths_total{queue=g,kind=,reason=cancelled}", 1),
        ("retryq_reaped_total{queue=m,kind=,reason=deadline}", 1),
        ("retryq_redrives_total{queue=i,kind=}", 1),
        ("retryq_cancels_total{queue=h,kind=,type=pending}", 1),
        ("retryq_cancels_total{queue=f,kind=,type=request}", 1),
        ("retryq_cancels_total{queue=l,kind=,type=request}", 1),
        ("retryq_heartbeats_total{queue=k,kind=}", 1),
        ("retryq_pruned_total{queue=j,status=done}", 1),
        ("retryq_claims_total{queue=j,kind=}", 1),
        ("retryq_attempts_ended_total{queue=e,kind=,outcome=lease expired}", 1),
        ("retryq_attempts_ended_total{queue=c,kind=,outcome=expired or retryable}", 1),
        ("retryq_claim_wait_milliseconds_sum{queue=mail,kind=}", 12 + 7),
        ("retryq_attempt_duration_milliseconds_sum{queue=e,kind=,outcome=lease expired}", 1574),
    ] {
        assert_eq!(t.get(key), Some(&value), "{key}: {t:#?}");
    }
    assert_eq!(sum("retryq_deaths_total{"), 9, "the 8 dead jobs' and redriven-11's first");
    assert_eq!(sum("retryq_forgotten_total{"), 0, "schema 3 kept nothing of a forget");
    assert_eq!(sum("retryq_reaped_total{"), 1, "the history tells no reap of a lease from a late report");

    // The schema is a new file's.
    let fresh = dir.path().join("fresh.db");
    drop(Queue::open(&fresh).expect("create"));
    assert_eq!(objects(&path), objects(&fresh), "an upgraded schema is a created one");

    // From now on the notes are kept: the live leases end, one by its report, one reaped.
    q.set_settings(retryq::Settings {
        lease_ms: 1000,
        base_ms: 100,
        cap_ms: 250,
        ..retryq::Settings::default()
    })
    .expect("settings");
    let held = Lease::new("w1", "leased-13", 1);
    q.record_error(&held, "slow receiver", None).expect("note");
    q.complete(&Completion::new(&held, Outcome::Ok, 2100, 0.5)).expect("complete");
    assert_eq!(q.reap(2710).expect("reap"), 1, "requested-14: its lease expired with a request");
    assert_eq!(records(&q, "requested-14"), [r(1, "w1", 1710, 2710, "lease expired")]);
    let done = q.attempts("leased-13").expect("attempts");
    assert_eq!((done.len(), done[0].outcome.as_str(), done[0].error.as_deref()), (1, "ok", None));
    let after = flat(&q.tallies().expect("tallies"));
    for (key, value) in &t {
        assert!(after.get(key).is_some_and(|v| v >= value), "{key} went down");
    }
    assert_eq!(after.get("retryq_reaped_total{queue=l,kind=,reason=cancelled}"), Some(&1));
    assert_eq!(after.get("retryq_attempts_ended_total{queue=k,kind=,outcome=ok}"), Some(&1));
    let again = NewJob {
        id: "forgotten-16",
        payload: "z",
        max_attempts: 1,
        deadline: 9000,
        now: 2800,
        ..NewJob::default()
    };
    assert_eq!(q.enqueue(&again).expect("enqueue"), retryq::Enqueued::New, "forgotten: a new id");
    assert!(q.audit().expect("audit").is_clean());
    let last = flat(&q.tallies().expect("tallies"));
    assert_eq!(
        last.get("retryq_enqueued_total{queue=default,kind=}"),
        Some(&2),
        "done-1, and forgotten-16 anew"
    );
    drop(q);
    assert_eq!(flat(&Queue::open(&path).expect("reopen").tallies().expect("tallies")), last);
}

/// A file where the application keeps a table of a name schema 4 adds (`tallies`, beside the
/// queue) cannot take schema 4: the open says so, and the file stays schema 3, its table with
/// it.
#[test]
fn a_name_schema_4_adds_held_by_the_application_refuses_the_upgrade() {
    let (_dir, path) = copy();
    Connection::open(&path)
        .expect("the application's connection")
        .execute_batch("CREATE TABLE tallies (day TEXT, n INTEGER)")
        .expect("the application's table");
    let err = Queue::open(&path).err().expect("refused");
    assert!(matches!(err, retryq::Error::NotRetryq { .. }), "{err}");
    assert!(err.to_string().contains("already has objects named tallies, which schema 4 adds"), "{err}");
    assert_eq!(user_version(&path), 3);
    let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("read");
    let left: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_schema WHERE name IN ('tallies', 'attempts')", [], |r| {
            r.get(0)
        })
        .expect("count");
    assert_eq!(left, 1, "the application's table, and nothing of schema 4");
}
