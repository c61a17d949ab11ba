//! Schema 9's notes' path for a statement of one job row (`ddl.rs`, `OneRow::Apart`): the
//! same records and tallies as the statements for any number of rows, event for event (the
//! counts beside them), and the upgrade of a schema 8 database to it.

use super::PgQueue;
use super::ddl::{notes_7, schema_8};
use super::tests::{older_schema, pg_at, with_search_path};
use crate::{Cancelled, Completion, Lease, NewJob, Outcome, Redrive, Report, Settings};

const SETTINGS: Settings =
    Settings { lease_ms: 1000, base_ms: 100, cap_ms: 250, reap_limit: crate::DEFAULT_REAP_LIMIT };

/// The run's jobs, each in a queue of its own, with their budget and deadline.
const JOBS: [(&str, u64, u64); 8] = [
    ("retried", 3, 100_000),
    ("permanent", 3, 100_000),
    ("requested", 3, 100_000),
    ("pending", 3, 100_000),
    ("taken", 3, 100_000),
    ("reaped", 1, 100_000),
    ("late", 3, 900),
    ("spent", 1, 100_000),
];

fn claim(q: &mut PgQueue, worker: &str, id: &str, now: u64) -> Lease {
    let claimed = q.claim_from(worker, &[id], now).expect("claim").expect("due");
    assert_eq!(claimed.id(), id);
    claimed.lease
}

fn complete(q: &mut PgQueue, lease: &Lease, outcome: Outcome, error: Option<&str>, now: u64) {
    let report =
        Report { outcome, error: error.map(str::to_owned), node: Some("n1".into()), retry_after_ms: None };
    q.complete(&Completion::new(lease, report, now, 0.5)).expect("complete");
}

/// Every event a tally or a record keeps, each in a statement that moves one job row: an
/// enqueue, a claim of a pending job, a retry, a note and a heartbeat on a live lease, a
/// completion, a permanent failure and its redrive, a cancel request and the end it brings,
/// a note on a lease asked to stop, a pending job cancelled, an expired lease claimed again, a reap of one expired lease and
/// one of a pending job past its deadline, a last attempt spent.
fn run(q: &mut PgQueue) {
    q.set_settings(SETTINGS).expect("settings");
    for (id, max_attempts, deadline) in JOBS {
        let job = NewJob {
            id,
            payload: id,
            max_attempts,
            deadline,
            now: 0,
            queue: Some(id),
            kind: "k",
            ..NewJob::default()
        };
        q.enqueue(&job).expect("enqueue");
    }
    let first = claim(q, "w1", "retried", 10);
    complete(q, &first, Outcome::Retryable, Some("HTTP 503"), 20);
    let second = claim(q, "w2", "retried", 400);
    assert_eq!(q.heartbeat(&second, 450).expect("heartbeat"), 1450);
    q.record_error(&second, "connection reset", Some("n2")).expect("note");
    complete(q, &second, Outcome::Ok, None, 500);
    let lease = claim(q, "w1", "permanent", 10);
    complete(q, &lease, Outcome::Permanent, Some("HTTP 400"), 15);
    q.redrive(&Redrive { id: "permanent", add_attempts: 1, deadline: 100_000, now: 50 }).expect("redrive");
    let lease = claim(q, "w3", "permanent", 60);
    complete(q, &lease, Outcome::Ok, None, 65);
    let lease = claim(q, "w1", "requested", 10);
    assert_eq!(q.cancel("requested", 12).expect("cancel"), Cancelled::Requested);
    q.record_error(&lease, "stopping", None).expect("a note on a lease asked to stop");
    complete(q, &lease, Outcome::Retryable, Some("cancelled"), 14);
    assert_eq!(q.cancel("pending", 5).expect("cancel"), Cancelled::Ended);
    claim(q, "w1", "taken", 10);
    let lease = claim(q, "w1", "spent", 10);
    complete(q, &lease, Outcome::Retryable, Some("exit 1"), 20);
    assert_eq!(q.reap(950).expect("reap"), 1, "late, alone");
    let lease = claim(q, "w2", "taken", 1020);
    complete(q, &lease, Outcome::Ok, None, 1030);
    claim(q, "w1", "reaped", 3000);
    assert_eq!(q.reap(4001).expect("reap"), 1, "reaped, alone");
}

/// The records, the tallies, the buckets and the counts, each summed over the shards, as lines.
fn notes(q: &PgQueue) -> Vec<String> {
    let sql = "
        SELECT 'record ' || job || ' ' || attempt || ' ' || worker || ' ' || claimed_at || ' '
               || coalesce(ended_at::text, '-') || ' ' || coalesce(outcome, '-') || ' '
               || coalesce(error::text, '-') || ' ' || coalesce(node::text, '-')
        FROM attempts
        UNION ALL
        SELECT 'tally ' || metric || ' ' || queue || ' ' || kind || ' ' || label || ' ' || sum(n)
        FROM tallies GROUP BY metric, queue, kind, label
        UNION ALL
        SELECT 'bucket ' || metric || ' ' || queue || ' ' || kind || ' ' || label || ' ' || le || ' '
               || sum(n) || ' ' || sum(sum_ms)
        FROM tally_buckets GROUP BY metric, queue, kind, label, le
        UNION ALL
        SELECT 'count ' || queue || ' ' || status || ' ' || reason || ' ' || sum(n)
        FROM counts GROUP BY queue, status, reason
        ORDER BY 1";
    q.raw_query(sql).expect("notes").iter().map(|row| row.get(0)).collect()
}

/// Whether the queue's notes' function runs a statement of one row apart.
fn apart(q: &PgQueue) -> bool {
    let sql = "SELECT prosrc LIKE '%old_job%' FROM pg_proc
               WHERE proname = 'retryq_notes' AND pronamespace = current_schema()::regnamespace";
    q.raw_query(sql).expect("function")[0].get(0)
}

/// The run gives the same records, tallies and counts under schema 9's notes' function as
/// under schema 8's, which ran every statement as one of any number of rows; and the run
/// reaches every event.
#[test]
fn one_row_apart_keeps_the_notes_the_statements_for_many_keep() {
    let Some((url, mut nine)) = pg_at("one_row_apart_keeps_the_notes_the_statements_for_many_keep") else {
        return;
    };
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("admin");
    admin.batch_execute("CREATE SCHEMA any_rows").expect("schema");
    let mut eight = PgQueue::connect(&with_search_path(&url, "any_rows")).expect("connect");
    eight.raw(&notes_7()).expect("schema 8's function");
    assert!(apart(&nine) && !apart(&eight), "the two functions differ");
    run(&mut nine);
    run(&mut eight);
    let (kept, want) = (notes(&nine), notes(&eight));
    assert_eq!(kept, want);
    for event in [
        "tally enqueued late k  1",
        "tally claims retried k  2",
        "tally deaths permanent k permanent 1",
        "tally redrives permanent k  1",
        "tally cancels requested k request 1",
        "tally cancels pending k pending 1",
        "tally deaths requested k cancelled 1",
        "tally reaped late k deadline 1",
        "tally deaths spent k exhausted 1",
        "tally reaped reaped k exhausted 1",
        "tally deaths reaped k exhausted 1",
        "record taken 1 w1 10 1020 lease expired - -",
        "record reaped 1 w1 3000 4001 lease expired - -",
        "count retried done  1",
        "count reaped dead exhausted 1",
        "count pending dead cancelled 1",
        "count permanent pending  0",
    ] {
        assert!(kept.iter().any(|line| line == event), "{event} in {kept:#?}");
    }
    for bucket in [
        "bucket attempt_duration taken k lease expired ",
        "bucket attempt_duration reaped k lease expired ",
        "bucket attempt_duration retried k ok ",
        "bucket claim_wait taken k  ",
    ] {
        assert!(kept.iter().any(|line| line.starts_with(bucket)), "{bucket} in {kept:#?}");
    }
    assert!(nine.audit().expect("audit").is_clean());
}

/// A schema 8 database is upgraded in place by the first connect: schema 9's catalog
/// exactly, its lease kept, and its notes kept by the new function from then on.
#[test]
fn a_schema_8_database_gets_the_one_row_path_in_place() {
    let Some((url, fresh)) = pg_at("a_schema_8_database_gets_the_one_row_path_in_place") else { return };
    let want = super::tests_1_2::catalog(&fresh);
    drop(fresh);
    let (eight, mut client) = older_schema(&url, "eight", &schema_8(), 8);
    client
        .batch_execute(
            "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline, redrives,
                               enqueued_at, updated_at, not_before, queue, priority)
             VALUES ('held', 'p', 'pending', 0, 3, 0, 9000, 0, 0, 0, 0, 'default', 0);
             UPDATE jobs SET status = 'leased', attempts = 1, owner = 'w1', claimed_at = 10,
                             available_at = 1010, updated_at = 10 WHERE id = 'held';",
        )
        .expect("rows");
    let mut q = PgQueue::connect(&eight).expect("upgraded");
    assert_eq!(super::tests_1_2::catalog(&q), want, "an upgraded schema is a created one");
    let version: i64 = q.raw_query("SELECT schema_version FROM retryq_meta").expect("meta")[0].get(0);
    assert_eq!(version, crate::PG_SCHEMA_VERSION);
    assert!(apart(&q));
    let lease = q.claim("w2", 2000).expect("claim").expect("held, expired").lease;
    assert_eq!(lease.attempt, 2);
    complete(&mut q, &lease, Outcome::Ok, None, 2010);
    let kept = notes(&q);
    for line in ["record held 1 w1 10 2000 lease expired - -", "record held 2 w2 2000 2010 ok "] {
        assert!(kept.iter().any(|each| each.starts_with(line)), "{line} in {kept:#?}");
    }
    assert!(q.audit().expect("audit").is_clean());
}
