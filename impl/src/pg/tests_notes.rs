//! Tests of schema 4's operators' notes (SPEC 6.36) on the PostgreSQL store: the upgrade of
//! a schema 3 database, and the audit of planted records and lost counts. (The run both
//! stores share is `impl/tests/notes.rs`.)

use super::PgQueue;
use super::ddl::{schema_3, schema_4, schema_6};
use super::tests::pg_at;
use crate::{Check, Completion, Lease, NewJob, Outcome, Settings};

/// (attempt, worker, claimed_at, ended_at, outcome) of a job's records.
fn records(q: &PgQueue, id: &str) -> Vec<(u64, String, u64, u64, String)> {
    q.attempts(id)
        .expect("attempts")
        .into_iter()
        .map(|r| (r.attempt, r.worker.expect("a holder"), r.claimed_at, r.ended_at, r.outcome))
        .collect()
}

fn r(
    attempt: u64,
    worker: &str,
    claimed_at: u64,
    ended_at: u64,
    outcome: &str,
) -> (u64, String, u64, u64, String) {
    (attempt, worker.to_owned(), claimed_at, ended_at, outcome.to_owned())
}

/// A counter, summed over every label but the queue's and the `label` given.
fn tally(q: &PgQueue, metric: &str, label: &str) -> u64 {
    let tallies = q.tallies().expect("tallies");
    let of = tallies.counters.iter().filter(|t| t.metric == metric);
    of.filter(|t| label.is_empty() || t.labels.iter().skip(1).any(|(_, v)| v == label)).map(|t| t.value).sum()
}

/// A schema 3 database (schema 3's DDL, as this build's schema 4 begins with it) with rows
/// as retryq 1.2 wrote them — its triggers recording each — is upgraded in place by the first
/// connect: schema 4's catalog exactly, the records and the tallies filled from the history
/// and the tombstones, the audit clean, and the notes kept from then on.
#[test]
fn a_schema_3_database_is_upgraded_in_place() {
    let Some((url, fresh)) = pg_at("a_schema_3_database_is_upgraded_in_place") else { return };
    let want = super::tests_1_2::catalog(&fresh);
    drop(fresh);
    let (three, mut client) = super::tests::older_schema(&url, "three", &schema_3(), 3);
    // d: done by its report; r: its lease expired and was claimed again, still held; x: its
    // last attempt's lease expired and it was reaped; c: held, heartbeaten, with a cancel
    // request; p: a pending job cancelled; t: done, then pruned.
    client
        .batch_execute(
            "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline, redrives,
                               enqueued_at, updated_at, not_before, queue, priority)
             VALUES ('d', 'd', 'pending', 0, 3, 0, 9000, 0, 0, 0, 0, 'default', 0),
                    ('r', 'r', 'pending', 0, 3, 0, 9000, 0, 0, 0, 0, 'default', 0),
                    ('x', 'x', 'pending', 0, 1, 0, 9000, 0, 0, 0, 0, 'mail', 0),
                    ('c', 'c', 'pending', 0, 3, 0, 9000, 0, 0, 0, 0, 'mail', 0),
                    ('p', 'p', 'pending', 0, 3, 0, 9000, 0, 0, 0, 0, 'default', 0),
                    ('t', 't', 'pending', 0, 3, 0, 9000, 0, 0, 0, 0, 'default', 0);
             UPDATE jobs SET status = 'leased', attempts = 1, owner = 'w1', claimed_at = 10,
                             available_at = 1010, updated_at = 10 WHERE id <> 'p';
             UPDATE jobs SET status = 'done', available_at = NULL, owner = NULL, claimed_at = NULL,
                             updated_at = 20, ended_at = 20, last_error = NULL, last_node = NULL
             WHERE id IN ('d', 't');
             UPDATE jobs SET available_at = 1011, updated_at = 11 WHERE id = 'c';
             UPDATE jobs SET cancel_requested = true, updated_at = 12 WHERE id = 'c';
             UPDATE jobs SET status = 'dead', dead_reason = 'cancelled', available_at = NULL,
                             updated_at = 5, ended_at = 5 WHERE id = 'p';
             UPDATE jobs SET status = 'dead', dead_reason = 'exhausted', available_at = NULL, owner = NULL,
                             claimed_at = NULL, updated_at = 1020, ended_at = 1020 WHERE id = 'x';
             UPDATE jobs SET attempts = 2, owner = 'w2', claimed_at = 1020, available_at = 2020,
                             updated_at = 1020 WHERE id = 'r';
             INSERT INTO tombstones SELECT id, queue, encode(sha256(payload), 'hex'), status, dead_reason,
                                           attempts, ended_at FROM jobs WHERE id = 't';
             DELETE FROM jobs WHERE id = 't';
             DELETE FROM history WHERE job = 't';",
        )
        .expect("rows");
    let mut q = PgQueue::connect(&three).expect("upgraded");
    assert_eq!(super::tests_1_2::catalog(&q), want, "an upgraded schema is a created one");
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
    assert_eq!(records(&q, "d"), [r(1, "w1", 10, 20, "ok")]);
    assert_eq!(records(&q, "r"), [r(1, "w1", 10, 1020, "lease expired")]);
    assert_eq!(records(&q, "x"), [r(1, "w1", 10, 1020, "expired or retryable")]);
    assert_eq!((records(&q, "c"), records(&q, "p"), records(&q, "t")), (vec![], vec![], vec![]));
    assert_eq!(
        [
            tally(&q, "retryq_enqueued_total", ""),
            tally(&q, "retryq_claims_total", ""),
            tally(&q, "retryq_deaths_total", ""),
            tally(&q, "retryq_cancels_total", "request"),
            tally(&q, "retryq_cancels_total", "pending"),
            tally(&q, "retryq_pruned_total", "done"),
            tally(&q, "retryq_attempts_ended_total", ""),
            tally(&q, "retryq_heartbeats_total", ""),
        ],
        [6, 6, 2, 1, 1, 1, 3, 1],
        "5 jobs and a tombstone; 5 attempts and the tombstone's; x's and p's deaths"
    );
    // The notes are kept from now on: r's second attempt ends by its report, c's by a reap.
    q.set_settings(Settings { lease_ms: 1000, base_ms: 100, cap_ms: 250, ..Settings::default() })
        .expect("settings");
    q.complete(&Completion::new(&Lease::new("w2", "r", 2), Outcome::Ok, 1030, 0.5)).expect("complete");
    assert_eq!(q.reap(1011).expect("reap"), 1, "c: expired, with a request");
    assert_eq!(records(&q, "r"), [r(1, "w1", 10, 1020, "lease expired"), r(2, "w2", 1020, 1030, "ok")]);
    assert_eq!(records(&q, "c"), [r(1, "w1", 10, 1011, "lease expired")]);
    assert_eq!(tally(&q, "retryq_reaped_total", "cancelled"), 1);
    assert_eq!(tally(&q, "retryq_attempts_ended_total", ""), 5);
    assert!(q.audit().expect("audit").is_clean());
    let again = PgQueue::connect(&three).expect("connect again");
    assert_eq!(super::tests_1_2::catalog(&again), want, "found at version 5, left as it is");
}

/// A schema 4 database (contract 1.2's with the notes, as this build's schema 5 begins with
/// it) holding a backlog is upgraded in place by the first connect: schema 5's catalog
/// exactly (the claim's and the reaps' indexes rebuilt, the notes' function replaced), every
/// job, record and tally kept, the audit clean, and the backlog then reaped a limit at a time.
#[test]
fn a_schema_4_database_is_upgraded_in_place() {
    let Some((url, fresh)) = pg_at("a_schema_4_database_is_upgraded_in_place") else { return };
    let want = super::tests_1_2::catalog(&fresh);
    drop(fresh);
    let (four, mut client) = super::tests::older_schema(&url, "four", &schema_4(), 4);
    // Thirty jobs past their deadlines at 100, and one leased on its last attempt, by schema
    // 4's triggers.
    client
        .batch_execute(
            "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline, redrives,
                               enqueued_at, updated_at, not_before, queue, priority)
             SELECT 'late-' || i, '', 'pending', 0, 3, 0, 100, 0, 0, 0, 0, 'default', 0
             FROM generate_series(1, 30) AS i;
             INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline, redrives,
                               enqueued_at, updated_at, not_before, queue, priority)
             VALUES ('held', 'h', 'pending', 0, 1, 0, 9000, 0, 0, 0, 0, 'mail', 0);
             UPDATE jobs SET status = 'leased', attempts = 1, owner = 'w1', claimed_at = 10,
                             available_at = 1010, updated_at = 10 WHERE id = 'held';",
        )
        .expect("rows");
    let mut q = PgQueue::connect(&four).expect("upgraded");
    assert_eq!(super::tests_1_2::catalog(&q), want, "an upgraded schema is a created one");
    assert!(q.audit().expect("audit").is_clean());
    assert_eq!((tally(&q, "retryq_enqueued_total", ""), tally(&q, "retryq_claims_total", "")), (31, 1));
    q.set_settings(Settings { reap_limit: 20, ..q.settings() }).expect("settings");
    assert_eq!(q.reap(2000).expect("reap"), 20, "the held lease, exhausted, then 19 by deadline");
    assert_eq!(q.reap(2000).expect("reap"), 11, "the other eleven");
    assert_eq!(q.reap(2000).expect("reap"), 0);
    assert_eq!(tally(&q, "retryq_reaped_total", "deadline"), 30);
    assert_eq!(tally(&q, "retryq_reaped_total", "exhausted"), 1);
    assert_eq!(records(&q, "held"), [r(1, "w1", 10, 2000, "lease expired")]);
    assert!(q.audit().expect("audit").is_clean());
    let again = PgQueue::connect(&four).expect("connect again");
    assert_eq!(super::tests_1_2::catalog(&again), want, "found at version 5, left as it is");
}

/// A counter's value by its labels exactly, if the store keeps it.
fn counter(q: &PgQueue, metric: &str, labels: &[(&str, &str)]) -> Option<u64> {
    let labels: Vec<(String, String)> =
        labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    q.tallies()
        .expect("tallies")
        .counters
        .into_iter()
        .find(|c| c.metric == metric && c.labels == labels)
        .map(|c| c.value)
}

/// A schema 6 database (contract 1.3's, before kinds) whose triggers tallied an enqueue, a
/// claim and its end is upgraded in place by the first connect: schema 7's catalog exactly,
/// every tally kept under kind `""` (SPEC 6.36), and the tallies after it by kind.
#[test]
fn a_schema_6_database_keeps_its_tallies_under_no_kind() {
    let Some((url, fresh)) = pg_at("a_schema_6_database_keeps_its_tallies_under_no_kind") else { return };
    let want = super::tests_1_2::catalog(&fresh);
    drop(fresh);
    let (six, mut client) = super::tests::older_schema(&url, "six", &schema_6(), 6);
    client
        .batch_execute(
            "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline, redrives,
                               enqueued_at, updated_at, not_before, queue, priority)
             VALUES ('a', 'p', 'pending', 0, 3, 0, 9000, 0, 0, 0, 0, 'default', 0),
                    ('b', 'p', 'pending', 0, 3, 0, 9000, 0, 0, 0, 0, 'default', 0);
             UPDATE jobs SET status = 'leased', attempts = 1, owner = 'w1', claimed_at = 10,
                             available_at = 1010, updated_at = 10 WHERE id = 'a';
             UPDATE jobs SET status = 'done', available_at = NULL, owner = NULL, claimed_at = NULL,
                             updated_at = 20, ended_at = 20, last_error = NULL WHERE id = 'a';",
        )
        .expect("rows");
    let schema_6_tallies: i64 =
        client.query_one("SELECT sum(n)::bigint FROM tallies", &[]).expect("tallies").get(0);
    assert_eq!(schema_6_tallies, 3, "two enqueues and a claim, by schema 6's triggers");
    let mut q = PgQueue::connect(&six).expect("upgraded");
    assert_eq!(super::tests_1_2::catalog(&q), want, "an upgraded schema is a created one");
    let none = [("queue", "default"), ("kind", "")];
    assert_eq!(counter(&q, "retryq_enqueued_total", &none), Some(2));
    assert_eq!(counter(&q, "retryq_claims_total", &none), Some(1));
    let ok = [("queue", "default"), ("kind", ""), ("outcome", "ok")];
    assert_eq!(counter(&q, "retryq_attempts_ended_total", &ok), Some(1));
    assert!(q.audit().expect("audit").is_clean());
    let job = NewJob {
        id: "c",
        payload: "p",
        max_attempts: 3,
        deadline: 9000,
        now: 30,
        kind: "mail",
        ..NewJob::default()
    };
    q.enqueue(&job).expect("enqueue");
    let claimed = q.claim_from("w2", &["default"], 40).expect("claim").expect("b first");
    assert_eq!(claimed.id(), "b");
    let claimed = q.claim_from("w2", &["default"], 40).expect("claim").expect("c");
    q.complete(&Completion::new(&claimed.lease, Outcome::Permanent, 50, 0.0)).expect("complete");
    assert_eq!(counter(&q, "retryq_enqueued_total", &none), Some(2), "the old counts stay under \"\"");
    assert_eq!(counter(&q, "retryq_claims_total", &none), Some(2));
    let mail = [("queue", "default"), ("kind", "mail")];
    assert_eq!(counter(&q, "retryq_enqueued_total", &mail), Some(1));
    assert_eq!(counter(&q, "retryq_claims_total", &mail), Some(1));
    let died = [("queue", "default"), ("kind", "mail"), ("reason", "permanent")];
    assert_eq!(counter(&q, "retryq_deaths_total", &died), Some(1));
    assert!(q.audit().expect("audit").is_clean());
}

/// Each tampering with the records or the tallies, made without the guard that would refuse
/// it, is found by the audit and named, as on SQLite.
#[test]
fn a_planted_record_or_a_lost_count_is_found() {
    let cases: [(&str, &str, Check, &str, &str); 6] = [
        (
            "a record of a job that is not in the store",
            "DROP TRIGGER attempts_of_claims ON attempts;
             INSERT INTO attempts (job, attempt, worker, claimed_at) VALUES ('ghost', 1, 'w1', 5)",
            Check::AttemptsRecorded,
            "ghost",
            "1 attempts' records left of a job that is not in the store",
        ),
        (
            "a reaped attempt said to have succeeded",
            "DROP TRIGGER attempts_ended_never_change ON attempts;
             UPDATE attempts SET outcome = 'ok' WHERE job = 'crash'",
            Check::AttemptsRecorded,
            "crash",
            // Dead by a reap or by a late retryable report: the history cannot tell which.
            "attempt 1 ended as \"ok\", where its end allows [\"retryable\", \"lease expired\", \"expired or retryable\"]",
        ),
        (
            "a lost record",
            "DROP TRIGGER attempts_no_delete ON attempts; DELETE FROM attempts WHERE job = 'ok'",
            Check::AttemptsRecorded,
            "ok",
            "attempt 1 has no record",
        ),
        (
            "a claim not counted",
            "DROP TRIGGER tallies_only_grow ON tallies;
             UPDATE tallies SET n = 0 WHERE metric = 'claims'",
            Check::TalliesCoverStore,
            "default",
            "queue \"default\" tallies 0 claims, but the store holds 3",
        ),
        (
            "a kind's claim counted under another kind",
            "DROP TRIGGER tallies_only_grow ON tallies;
             UPDATE tallies SET n = 0 WHERE metric = 'claims' AND kind = 'mail';
             UPDATE tallies SET n = n + 1 WHERE metric = 'claims' AND kind = ''
             AND shard = (SELECT min(shard) FROM tallies WHERE metric = 'claims' AND kind = '')",
            Check::TalliesCoverStore,
            "default",
            "queue \"default\" tallies 0 claims of kind \"mail\", but the store holds 1",
        ),
        (
            "an enqueue not counted",
            "DROP TRIGGER tallies_never_deleted ON tallies; DELETE FROM tallies WHERE metric = 'enqueued'",
            Check::TalliesCoverStore,
            "default",
            "queue \"default\" tallies 0 enqueued, but the store holds 2",
        ),
    ];
    for (what, sql, check, job, said) in cases {
        let Some((_, mut q)) = pg_at(&format!("a_planted_record_or_a_lost_count_is_found {what}")) else {
            return;
        };
        // ok: done on its second attempt; crash (of kind mail): reaped, its lease expired.
        for (id, max_attempts, kind) in [("ok", 3, ""), ("crash", 1, "mail")] {
            q.enqueue(&crate::NewJob {
                id,
                payload: "",
                max_attempts,
                deadline: 5000,
                now: 0,
                kind,
                ..Default::default()
            })
            .expect("enqueue");
        }
        let first = q.claim_from("w1", &["default"], 0).expect("claim").expect("ok");
        assert_eq!(first.id(), "ok");
        q.complete(&Completion::new(&first.lease, Outcome::Retryable, 1, 0.0)).expect("retry");
        let crash = q.claim("w1", 2).expect("claim").expect("crash");
        assert_eq!(crash.id(), "crash");
        assert_eq!(q.reap(1002).expect("reap"), 1);
        let second = q.claim("w2", 1003).expect("claim").expect("ok again");
        q.complete(&Completion::new(&second.lease, Outcome::Ok, 1004, 0.0)).expect("done");
        assert!(q.audit().expect("audit").is_clean(), "{what}: clean before");
        q.raw(sql).expect("tamper");
        let found = q.audit().expect("audit").violations;
        assert!(
            found.iter().any(|v| v.check == check && v.job == job && v.what == said),
            "{what}: expected {check} on {job} saying {said:?}, found {found:#?}"
        );
    }
}

/// A forget waits for a pruned job's records as for its history: a prune that left them
/// behind (here by hand) keeps its tombstone from going.
#[test]
fn a_forget_waits_for_a_pruned_jobs_records() {
    let Some((_, mut q)) = pg_at("a_forget_waits_for_a_pruned_jobs_records") else { return };
    q.enqueue(&crate::NewJob {
        id: "a",
        payload: "",
        max_attempts: 3,
        deadline: 5000,
        now: 0,
        ..Default::default()
    })
    .expect("enqueue");
    let c = q.claim("w1", 0).expect("claim").expect("a");
    q.complete(&Completion::new(&c.lease, Outcome::Ok, 1, 0.0)).expect("done");
    q.raw(
        "INSERT INTO tombstones SELECT id, queue, encode(sha256(payload), 'hex'), status, dead_reason, attempts,
                                       ended_at FROM jobs WHERE id = 'a';
         DELETE FROM jobs WHERE id = 'a';
         DELETE FROM history WHERE job = 'a';",
    )
    .expect("a prune that forgot the records");
    let err = q.forget(1, 2).expect_err("refused");
    assert!(
        err.to_string().contains("a tombstone goes only once its job, history and attempts are gone"),
        "{err}"
    );
    q.raw("DELETE FROM attempts WHERE job = 'a'").expect("the records go, the job being gone");
    assert_eq!(q.forget(1, 2).expect("forget"), 1);
}

/// A schema 3 database where the application keeps a relation of a name schema 4 adds
/// (`attempts`, beside the queue) cannot take schema 4: the connect says so, and the schema
/// stays 3, the application's table with it.
#[test]
fn a_name_schema_4_adds_held_by_the_application_refuses_the_upgrade() {
    let Some((url, fresh)) = pg_at("a_name_schema_4_adds_held_by_the_application") else { return };
    drop(fresh);
    let (three, mut client) = super::tests::older_schema(&url, "three", &schema_3(), 3);
    client.batch_execute("CREATE TABLE attempts (order_id bigint, tries int)").expect("the application's");
    let err = PgQueue::connect(&three).err().expect("refused");
    assert!(err.to_string().contains("already has relations named attempts, which schema 4 adds"), "{err}");
    let version: i64 = client.query_one("SELECT schema_version FROM retryq_meta", &[]).expect("meta").get(0);
    assert_eq!(version, 3);
    let columns: i64 = client
        .query_one(
            "SELECT count(*) FROM information_schema.columns
             WHERE table_schema = 'three' AND table_name = 'attempts'",
            &[],
        )
        .expect("columns")
        .get(0);
    assert_eq!(columns, 2, "the application's table, as it was");
}
