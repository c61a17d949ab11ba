//! Tests of the PostgreSQL store: the SQLite queue's scenarios run on both stores through
//! `&mut dyn Backend`, random call sequences answered alike by both, the schema's refusals
//! and triggers, and many connections claiming at once. Each test gets a fresh database of a
//! throwaway cluster (`retryq-pgtest`), or skips loudly where PostgreSQL is not installed.

use std::sync::{Arc, Barrier};

use super::PgQueue;
use crate::backend::Backend;
use crate::queue::store::tests::queue;
use crate::{
    Completed, Completion, DeadReason, Enqueued, Error, ErrorKind, Lease, NewJob, Outcome, Redrive,
    RedriveDead, Report, Settings, Status,
};

/// The SPEC's worked-trace settings, as `queue()` has them.
const SETTINGS: Settings =
    Settings { lease_ms: 1000, base_ms: 100, cap_ms: 250, reap_limit: crate::DEFAULT_REAP_LIMIT };

/// A fresh PostgreSQL queue with [`SETTINGS`], or `None` (after a loud skip line).
fn pg(test: &str) -> Option<PgQueue> {
    pg_at(test).map(|(_, q)| q)
}

/// [`pg`], with the database's URL, for a test that also opens connections of its own.
pub(super) fn pg_at(test: &str) -> Option<(String, PgQueue)> {
    let url = retryq_pgtest::database(test)?;
    let mut q = PgQueue::connect(&url).expect("connect");
    q.set_settings(SETTINGS).expect("settings");
    Some((url, q))
}

/// Runs `scenario` on a SQLite queue and on a PostgreSQL one: its assertions must hold on
/// both.
pub(super) fn both(test: &str, scenario: impl Fn(&mut dyn Backend)) {
    if let Some(mut q) = pg(test) {
        scenario(&mut q);
    }
    scenario(&mut queue());
}

fn job(id: &str, max_attempts: u64, deadline: u64, now: u64) -> NewJob<'_> {
    NewJob { id, payload: "", max_attempts, deadline, now, ..NewJob::default() }
}

fn enqueue(q: &mut dyn Backend, id: &str, max_attempts: u64, deadline: u64, now: u64) {
    assert_eq!(q.enqueue(&job(id, max_attempts, deadline, now)).expect("enqueue"), Enqueued::New);
}

fn status(q: &dyn Backend, id: &str) -> (Status, Option<u64>, Option<DeadReason>) {
    let job = q.get(id).expect("get").expect("job");
    (job.status, job.available_at, job.dead_reason)
}

#[test]
fn claims_take_the_smallest_available_at_then_the_first_enqueued() {
    both("claims_take_the_smallest_available_at_then_the_first_enqueued", |q| {
        enqueue(q, "late", 3, 10_000, 50);
        enqueue(q, "b", 3, 10_000, 10);
        enqueue(q, "a", 3, 10_000, 10);
        let order: Vec<String> =
            (0..3).map(|_| q.claim("w", 100).expect("claim").expect("claimed").lease.id).collect();
        assert_eq!(order, ["b", "a", "late"]);
        assert_eq!(q.claim("w", 100).expect("claim"), None);
        enqueue(q, "c", 3, 10_000, 200);
        enqueue(q, "d", 3, 10_000, 200);
        let batch = q.claim_batch("w", 200, 5).expect("batch");
        assert_eq!(
            batch.iter().map(|c| (c.id(), c.lease_until)).collect::<Vec<_>>(),
            [("c", 1200), ("d", 1200)]
        );
        assert_eq!(q.claim_batch("w", 200, 0).expect("k = 0"), []);
    });
}

#[test]
fn a_claim_spends_an_attempt_and_a_live_lease_is_nobody_elses() {
    both("a_claim_spends_an_attempt_and_a_live_lease_is_nobody_elses", |q| {
        enqueue(q, "a", 3, 10_000, 0);
        assert_eq!(q.claim("w1", 9_999_999).expect("claim"), None, "reaped at its deadline instead");
        enqueue(q, "b", 3, 10_000, 0);
        let c = q.claim("w1", 7).expect("claim").expect("claimed");
        assert_eq!((c.id(), c.attempt(), c.lease_until, c.deadline), ("b", 1, 1007, 10_000));
        let got = q.get("b").expect("get").expect("job");
        assert_eq!(
            (got.status, got.attempts, got.owner.as_deref(), got.claimed_at),
            (Status::Leased, 1, Some("w1"), Some(7))
        );
        assert_eq!(q.claim("w2", 1006).expect("claim"), None);
        let again = q.claim("w2", 1007).expect("claim").expect("reclaimed at expiry");
        assert_eq!((again.attempt(), again.lease_until), (2, 2007));
        assert_eq!(status(q, "a").2, Some(DeadReason::Deadline));
    });
}

#[test]
fn reaps_are_exhaustion_first_and_never_touch_a_live_lease() {
    both("reaps_are_exhaustion_first_and_never_touch_a_live_lease", |q| {
        enqueue(q, "crash", 1, 100_000, 0);
        enqueue(q, "both", 1, 500, 0);
        enqueue(q, "live", 5, 500, 0);
        q.claim("w1", 0).expect("claim").expect("crash");
        q.claim("w1", 0).expect("claim").expect("both");
        q.claim("w1", 499).expect("claim").expect("live");
        assert_eq!(q.reap(999).expect("reap"), 0);
        assert_eq!(q.reap(1000).expect("reap"), 2, "crash and both: their last leases expired");
        assert_eq!(status(q, "crash").2, Some(DeadReason::Exhausted));
        assert_eq!(status(q, "both").2, Some(DeadReason::Exhausted), "exhaustion wins over the deadline");
        assert_eq!(status(q, "live").0, Status::Leased, "a live lease is not reaped past its deadline");
        assert_eq!(q.reap(1499).expect("reap"), 1);
        assert_eq!(status(q, "live").2, Some(DeadReason::Deadline));
        assert_eq!(q.reap(1 << 53).map_err(|e| e.kind()), Err(ErrorKind::InvalidInput));
    });
}

#[test]
fn completions_are_fenced_and_refused_in_the_spec_order() {
    both("completions_are_fenced_and_refused_in_the_spec_order", |q| {
        enqueue(q, "a", 5, 10_000, 0);
        let n = q.claim("w1", 100).expect("claim").expect("claimed").attempt();
        let before = q.get("a").expect("get");
        for outcome in [Outcome::Ok, Outcome::Permanent, Outcome::Retryable] {
            let tries = [
                (Lease::new("w1", "missing", 1), 200, 0.0),
                (Lease::new("w2", "a", n), 200, 0.0),
                (Lease::new("w1", "a", n + 1), 200, 0.0),
                (Lease::new("w1", "a", n), 99, 0.0),
                (Lease::new("w1", "missing", 1), 200, 2.0),
                (Lease::new("w1", "a", 0), 200, 0.0),
            ];
            let kinds: Vec<_> = tries
                .iter()
                .map(|(lease, now, jitter)| {
                    q.complete(&Completion::new(lease, outcome, *now, *jitter)).map_err(|e| e.kind())
                })
                .collect();
            use ErrorKind::*;
            assert_eq!(
                kinds,
                [
                    Err(NotFound),
                    Err(LeaseLost),
                    Err(LeaseLost),
                    Err(ClockWentBackwards),
                    Err(InvalidInput),
                    Err(InvalidInput)
                ],
                "{outcome:?}"
            );
            assert_eq!(q.get("a").expect("get"), before, "{outcome:?}: a refusal changes nothing");
        }
        assert_eq!(q.history("a").expect("history").len(), 2, "no refusal is recorded");
        let lease = Lease::new("w1", "a", n);
        let report = Report::with_error(Outcome::Retryable, "HTTP 503").node("n1");
        assert_eq!(
            q.complete(&Completion::new(&lease, report, 110, 0.5)).expect("retry"),
            Completed::Retry { available_at: 160 }
        );
        let got = q.get("a").expect("get").expect("job");
        assert_eq!((got.last_error.as_deref(), got.last_node.as_deref()), (Some("HTTP 503"), Some("n1")));
        let stale = q.complete(&Completion::new(&lease, Outcome::Ok, 120, 0.0));
        assert_eq!(stale.map_err(|e| e.kind()), Err(ErrorKind::LeaseLost));
        let c = q.claim("w2", 160).expect("claim").expect("claimed");
        assert_eq!(c.last_node.as_deref(), Some("n1"));
        assert_eq!(
            q.complete(&Completion::new(&c.lease, Outcome::Ok, 170, 0.0)).expect("done"),
            Completed::Done
        );
        let got = q.get("a").expect("get").expect("job");
        assert_eq!((got.status, got.last_error, got.last_node), (Status::Done, None, None));
    });
}

#[test]
fn retryable_outcomes_follow_the_budget_then_the_deadline() {
    both("retryable_outcomes_follow_the_budget_then_the_deadline", |q| {
        let cases: [(&str, u64, u64, Report, u64, Completed); 5] = [
            ("retry", 5, 10_000, Outcome::Retryable.into(), 10, Completed::Retry { available_at: 60 }),
            (
                "spent",
                1,
                10_000,
                Outcome::Retryable.into(),
                10,
                Completed::Dead { reason: DeadReason::Exhausted },
            ),
            ("late", 5, 60, Outcome::Retryable.into(), 10, Completed::Dead { reason: DeadReason::Deadline }),
            (
                "pushed",
                5,
                100_000,
                Report::from(Outcome::Retryable).retry_after(5_000),
                10,
                Completed::Retry { available_at: 5_010 },
            ),
            (
                "hopeless",
                5,
                10_000,
                Outcome::Permanent.into(),
                10,
                Completed::Dead { reason: DeadReason::Permanent },
            ),
        ];
        for (id, max_attempts, deadline, report, now, expected) in cases {
            enqueue(q, id, max_attempts, deadline, 0);
            let c = q.claim("w", 0).expect("claim").expect("claimed");
            assert_eq!(c.id(), id);
            let got = q.complete(&Completion::new(&c.lease, report, now, 0.5)).expect("complete");
            assert_eq!(got, expected, "{id}");
        }
        // A job's own backoff replaces the queue's, setting by setting.
        let own = NewJob { base_ms: Some(1000), cap_ms: Some(3000), ..job("own", 5, 100_000, 0) };
        q.enqueue(&own).expect("enqueue");
        let c = q.claim("w", 0).expect("claim").expect("claimed");
        let got = q.complete(&Completion::new(&c.lease, Outcome::Retryable, 10, 1.0)).expect("complete");
        assert_eq!(got, Completed::Retry { available_at: 1_010 });
        let stats = q.stats(20).expect("stats");
        assert_eq!(
            (stats.pending, stats.dead_exhausted, stats.dead_deadline, stats.dead_permanent),
            (3, 1, 1, 1)
        );
        assert!(q.audit().expect("audit").is_clean());
    });
}

#[test]
fn heartbeats_extend_never_shrink_and_stop_at_the_deadline() {
    both("heartbeats_extend_never_shrink_and_stop_at_the_deadline", |q| {
        enqueue(q, "a", 3, 5000, 0);
        let lease = q.claim("w1", 100).expect("claim").expect("claimed").lease;
        let kind =
            |q: &mut dyn Backend, lease: &Lease, now: u64| q.heartbeat(lease, now).map_err(|e| e.kind());
        assert_eq!(kind(q, &Lease::new("w1", "nope", 0), 200), Err(ErrorKind::InvalidInput));
        assert_eq!(kind(q, &Lease::new("w1", "nope", 1), 200), Err(ErrorKind::NotFound));
        assert_eq!(kind(q, &Lease::new("w2", "a", 1), 200), Err(ErrorKind::LeaseLost));
        assert_eq!(kind(q, &Lease::new("w2", "a", 1), 99), Err(ErrorKind::LeaseLost));
        assert_eq!(kind(q, &lease, 99), Err(ErrorKind::ClockWentBackwards));
        assert_eq!(q.heartbeat(&lease, 600).expect("heartbeat"), 1600);
        q.set_settings(Settings { lease_ms: 10, ..q.settings() }).expect("settings");
        assert_eq!(q.heartbeat(&lease, 700).expect("heartbeat"), 1600, "never shortened");
        q.set_settings(SETTINGS).expect("settings");
        assert_eq!(q.heartbeat(&lease, 4999).expect("heartbeat"), 5999);
        assert_eq!(kind(q, &lease, 5000), Err(ErrorKind::DeadlinePassed));
        let last = q.history("a").expect("history").pop().expect("entries");
        assert_eq!(
            (last.from, last.to, last.attempt, last.available_at),
            (Some(Status::Leased), Status::Leased, 1, Some(5999))
        );
        q.set_settings(Settings { lease_ms: crate::MAX_INT, ..SETTINGS }).expect("settings");
        enqueue(q, "far", 3, crate::MAX_INT, 0);
        let c = q.claim("w", crate::MAX_INT - 1).expect("claim").expect("claimed");
        assert_eq!(c.lease_until, 2 * crate::MAX_INT - 1, "a lease may pass 2^53");
        assert_eq!(q.get("far").expect("get").expect("job").available_at, Some(2 * crate::MAX_INT - 1));
        assert!(q.audit().expect("audit").is_clean());
    });
}

#[test]
fn cancel_ends_a_pending_job_and_asks_a_leased_one_to_stop() {
    both("cancel_ends_a_pending_job_and_asks_a_leased_one_to_stop", |q| {
        for id in ["first", "leased", "done"] {
            enqueue(q, id, 3, 500, 0);
        }
        q.enqueue(&NewJob { not_before: Some(400), ..job("scheduled", 3, 500, 0) }).expect("enqueue");
        let c = q.claim("w1", 0).expect("claim").expect("first");
        q.complete(&Completion::new(&c.lease, Outcome::Permanent, 1, 0.0)).expect("dead");
        q.claim("w1", 1).expect("claim").expect("leased");
        let c = q.claim("w1", 2).expect("claim").expect("done");
        q.complete(&Completion::new(&c.lease, Outcome::Ok, 3, 0.0)).expect("done");
        let kind = |q: &mut dyn Backend, id: &str, now: u64| q.cancel(id, now).map_err(|e| e.kind());
        let before = q.get("leased").expect("get").expect("job");
        assert_eq!(q.cancel("leased", 5000).expect("cancel"), crate::Cancelled::Requested);
        let after = q.get("leased").expect("get").expect("job");
        assert!(after.cancel_requested);
        assert_eq!(after, crate::Job { cancel_requested: true, ..before }, "nothing else changes");
        let entries = q.history("leased").expect("history").len();
        assert_eq!(q.cancel("leased", 5001).expect("again"), crate::Cancelled::Requested);
        assert_eq!(q.history("leased").expect("history").len(), entries, "a second request records nothing");
        assert_eq!(kind(q, "done", 10), Err(ErrorKind::NotCancellable));
        assert_eq!(kind(q, "first", 10), Err(ErrorKind::NotCancellable));
        assert_eq!(kind(q, "nope", 10), Err(ErrorKind::NotFound));
        assert_eq!(kind(q, "", 10), Err(ErrorKind::InvalidInput));
        assert_eq!(
            kind(q, "scheduled", 900),
            Ok(crate::Cancelled::Ended),
            "past its deadline, still pending"
        );
        assert_eq!(status(q, "scheduled"), (Status::Dead, None, Some(DeadReason::Cancelled)));
        assert_eq!(q.get("scheduled").expect("get").expect("job").ended_at, Some(900));
        q.redrive(&Redrive { id: "scheduled", add_attempts: 1, deadline: 2000, now: 950 }).expect("redrive");
        assert_eq!(q.get("scheduled").expect("get").expect("job").ended_at, None, "a redrive clears the end");
        assert_eq!(q.claim("w1", 950).expect("claim").expect("claimed").id(), "scheduled");
    });
}

#[test]
fn redrives_grant_a_new_budget_and_refuse_in_the_spec_order() {
    both("redrives_grant_a_new_budget_and_refuse_in_the_spec_order", |q| {
        let kind = |q: &mut dyn Backend, r: Redrive<'_>| q.redrive(&r).map_err(|e| e.kind());
        assert_eq!(
            kind(q, Redrive { id: "a", add_attempts: 0, deadline: 10, now: 0 }),
            Err(ErrorKind::InvalidInput)
        );
        assert_eq!(
            kind(q, Redrive { id: "a", add_attempts: 1, deadline: 10, now: 0 }),
            Err(ErrorKind::NotFound)
        );
        for id in ["a", "b", "c"] {
            enqueue(q, id, 1, 500, 3);
        }
        assert_eq!(
            kind(q, Redrive { id: "a", add_attempts: 1, deadline: 10, now: 0 }),
            Err(ErrorKind::NotDead)
        );
        let c = q.claim("w", 3).expect("claim").expect("a");
        q.complete(&Completion::new(&c.lease, Outcome::Retryable, 10, 0.0)).expect("exhausted");
        let c = q.claim("w", 10).expect("claim").expect("b");
        q.complete(&Completion::new(&c.lease, Outcome::Permanent, 10, 0.0)).expect("permanent");
        q.redrive(&Redrive { id: "a", add_attempts: 2, deadline: 9000, now: 600 }).expect("redrive");
        let got = q.get("a").expect("get").expect("job");
        assert_eq!(
            (got.status, got.attempts, got.max_attempts, got.available_at, got.redrives, got.enqueued_at),
            (Status::Pending, 1, 3, Some(600), 1, 3)
        );
        let over = Redrive { id: "b", add_attempts: crate::MAX_ATTEMPTS, deadline: 9000, now: 600 };
        assert_eq!(kind(q, over), Err(ErrorKind::InvalidInput), "1 spent + 2^31-1 is past the cap");
        q.reap(500).expect("reap");
        let only = q
            .redrive_dead(&RedriveDead {
                reason: Some(DeadReason::Deadline),
                add_attempts: 1,
                deadline: 900,
                now: 700,
            })
            .expect("redrive");
        assert_eq!(only.iter().map(|(id, r)| (id.as_str(), r.is_ok())).collect::<Vec<_>>(), [("c", true)]);
        let rest = q
            .redrive_dead(&RedriveDead {
                reason: None,
                add_attempts: crate::MAX_ATTEMPTS,
                deadline: 900,
                now: 700,
            })
            .expect("redrive");
        assert!(
            matches!(&rest[..], [(id, Err(Error::InvalidInput { field: "add_attempts", .. }))] if id == "b"),
            "{rest:?}"
        );
        assert_eq!(q.dead_jobs(None).expect("dead").len(), 1);
        assert!(q.audit().expect("audit").is_clean());
    });
}

#[test]
fn enqueue_stores_once_by_id_and_keeps_every_byte() {
    both("enqueue_stores_once_by_id_and_keeps_every_byte", |q| {
        let payload = "nul \0 inside, é, 😀, \u{2028}";
        let first =
            NewJob { id: "a", payload, not_before: Some(40), base_ms: Some(7), ..job("a", 3, 1000, 0) };
        assert_eq!(q.enqueue(&first).expect("enqueue"), Enqueued::New);
        let before = q.get("a").expect("get");
        let again = NewJob { max_attempts: 9, not_before: None, cap_ms: Some(1), now: 5, ..first };
        assert_eq!(q.enqueue(&again).expect("again"), Enqueued::Existing);
        assert_eq!(q.get("a").expect("get"), before);
        let other = NewJob { payload: "nul \0 inside, é, 😀, \u{2029}", ..first };
        assert_eq!(q.enqueue(&other).map_err(|e| e.kind()), Err(ErrorKind::Conflict));
        let bad = NewJob { deadline: 0, ..other };
        assert!(matches!(q.enqueue(&bad), Err(Error::InvalidInput { field: "deadline", .. })));
        assert_eq!(q.claim("w", 39).expect("claim"), None, "not before not_before");
        let c = q.claim("w", 40).expect("claim").expect("claimed");
        assert_eq!(c.payload, payload);
        let results =
            q.enqueue_many(&[job("a", 3, 1000, 0), job("b", 3, 1000, 0), job("", 3, 1000, 0)]).expect("many");
        let kinds: Vec<_> = results.iter().map(|r| r.as_ref().map_err(Error::kind).copied()).collect();
        assert_eq!(kinds, [Err(ErrorKind::Conflict), Ok(Enqueued::New), Err(ErrorKind::InvalidInput)]);
        let long = "é".repeat(crate::MAX_NOTE_BYTES);
        q.record_error(&c.lease, &long, Some("\0node")).expect("note");
        let got = q.get("a").expect("get").expect("job");
        assert_eq!(got.last_error.map(|e| e.len()), Some(crate::MAX_NOTE_BYTES));
        assert_eq!(got.last_node.as_deref(), Some("\0node"));
        assert_eq!(q.history("a").expect("history").len(), 2, "a note is not a transition");
        let forged = q.record_error(&Lease::new("w2", "a", 1), "x", None).map_err(|e| e.kind());
        assert_eq!(forged, Err(ErrorKind::LeaseLost));
        let missing = q.record_error(&Lease::new("w2", "zz", 1), "x", None).map_err(|e| e.kind());
        assert_eq!(missing, Err(ErrorKind::NotFound));
    });
}

#[test]
fn reads_answer_alike_listing_owners_and_next_due() {
    both("reads_answer_alike_listing_owners_and_next_due", |q| {
        assert_eq!(q.next_due().expect("next"), None);
        for (id, now) in [("late", 50), ("b", 10), ("a", 10), ("c", 20), ("d", 30)] {
            enqueue(q, id, 1, 5000, now);
        }
        assert_eq!(q.next_due().expect("next"), Some(10));
        let ids =
            |page: &crate::JobPage| page.jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>().join(" ");
        let page = q.list(Status::Pending, None, 3).expect("list");
        assert_eq!((ids(&page).as_str(), page.more), ("b a c", 2));
        for (worker, outcome) in [("Zed", Outcome::Ok), ("alpha", Outcome::Permanent)] {
            let c = q.claim(worker, 60).expect("claim").expect("claimed");
            q.complete(&Completion::new(&c.lease, outcome, 60, 0.0)).expect("complete");
        }
        q.claim("beta", 60).expect("claim").expect("c");
        q.claim("Zed", 61).expect("claim").expect("d");
        let owners: Vec<_> =
            q.owners(1060).expect("owners").into_iter().map(|o| (o.worker, o.leased, o.expired)).collect();
        assert_eq!(owners, [("Zed".to_owned(), 1, 0), ("beta".to_owned(), 1, 1)], "byte order: 'Z' < 'b'");
        q.reap(5000).expect("reap");
        assert_eq!(ids(&q.list(Status::Dead, None, 10).expect("list")), "d c a late");
        let page = q.list(Status::Dead, Some(DeadReason::Exhausted), 1).expect("list");
        assert_eq!((ids(&page).as_str(), page.more), ("d", 1));
        assert_eq!(
            q.list(Status::Leased, Some(DeadReason::Deadline), 10).expect("list"),
            crate::JobPage::default()
        );
        assert_eq!(q.stats(5000).expect("stats").oldest_open_age_ms, None);
    });
}

/// The schema: created once, found again, and refusing what is not its own.
#[test]
fn connect_creates_the_schema_once_and_finds_it_again() {
    let Some(url) = retryq_pgtest::database("connect_creates_the_schema_once_and_finds_it_again") else {
        return;
    };
    let mut a = PgQueue::connect(&url).expect("create");
    a.enqueue(&job("a", 3, 1000, 0)).expect("enqueue");
    let b = PgQueue::connect(&url).expect("connect again");
    assert!(b.get("a").expect("get").is_some(), "the same store");
    assert!(!b.name().contains("password"), "{}", b.name());
    let rows = b.raw_query("SELECT application_id, schema_version FROM retryq_meta").expect("meta");
    let mark: Vec<(i64, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(mark, [(crate::APPLICATION_ID, crate::PG_SCHEMA_VERSION)]);
    let sync = b.raw_query("SHOW synchronous_commit").expect("show");
    assert_eq!(sync[0].get::<_, String>(0), "on");
}

#[test]
fn concurrent_connects_to_an_empty_database_create_the_schema_once() {
    let Some(url) =
        retryq_pgtest::database("concurrent_connects_to_an_empty_database_create_the_schema_once")
    else {
        return;
    };
    let start = Arc::new(Barrier::new(6));
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let (url, start) = (url.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                PgQueue::connect(&url).map(|_| ())
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("thread").expect("every connect succeeds");
    }
}

#[test]
fn a_foreign_or_newer_schema_is_refused_and_left_as_it_was() {
    let Some(url) = retryq_pgtest::database("a_foreign_or_newer_schema_is_refused_and_left_as_it_was") else {
        return;
    };
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("admin");
    admin.batch_execute("CREATE TABLE orders (id bigint PRIMARY KEY)").expect("app's table");
    let err = PgQueue::connect(&url).err().expect("refused");
    assert!(
        matches!(&err, Error::NotRetryq { why, .. } if why.contains("2 relations of another program")),
        "{err}"
    );
    let count: i64 = admin
        .query_one("SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace", &[])
        .expect("count")
        .get(0);
    assert_eq!(count, 2, "the table and its index, nothing more: {err}");

    // The queue in a schema of its own beside the application's tables.
    admin.batch_execute("CREATE SCHEMA queue").expect("schema");
    let beside = with_search_path(&url, "queue");
    let q = PgQueue::connect(&beside).expect("a schema of its own");
    drop(q);
    admin.batch_execute("UPDATE queue.retryq_meta SET schema_version = 10").expect("newer");
    let err = PgQueue::connect(&beside).err().expect("refused");
    assert!(matches!(err, Error::NewerSchema { found: 10, supported: 9, .. }), "{err}");
    admin.batch_execute("UPDATE queue.retryq_meta SET schema_version = 1").expect("never written");
    let err = PgQueue::connect(&beside).err().expect("refused");
    assert!(matches!(&err, Error::NotRetryq { why, .. } if why.contains("schema version 1")), "{err}");
    admin
        .batch_execute("UPDATE queue.retryq_meta SET schema_version = 6, application_id = 7")
        .expect("foreign");
    let err = PgQueue::connect(&beside).err().expect("refused");
    assert!(matches!(&err, Error::NotRetryq { why, .. } if why.contains("application id 0x7")), "{err}");
    assert_eq!(err.kind(), ErrorKind::Storage);
}

#[test]
fn history_is_append_only_and_jobs_are_never_deleted_nor_renamed() {
    let Some(mut q) = pg("history_is_append_only_and_jobs_are_never_deleted_nor_renamed") else {
        return;
    };
    q.enqueue(&job("a", 3, 1000, 0)).expect("enqueue");
    for sql in [
        "UPDATE history SET at = 5",
        "DELETE FROM history",
        "TRUNCATE history",
        "DELETE FROM jobs",
        "TRUNCATE jobs",
        "UPDATE jobs SET payload = 'x'",
        "UPDATE jobs SET kind = 'mail'",
        "UPDATE jobs SET id = 'b'",
        "UPDATE jobs SET not_before = 0",
        "UPDATE jobs SET status = 'frozen'",
        "UPDATE jobs SET status = 'pending', available_at = 1000",
    ] {
        let err = q.raw(sql).err().unwrap_or_else(|| panic!("{sql} was allowed"));
        assert_eq!(err.kind(), ErrorKind::Storage, "{sql}: {err}");
    }
    q.raw("UPDATE jobs SET last_error = 'x'::bytea, last_node = NULL").expect("a note");
    assert_eq!(q.history("a").expect("history").len(), 1, "a note is not a transition");
    q.raw("UPDATE jobs SET updated_at = updated_at").expect("a named column");
    assert_eq!(q.history("a").expect("history").len(), 2, "naming a state column is recorded");
}

#[test]
fn the_audit_finds_what_a_hand_edit_broke() {
    let Some(mut q) = pg("the_audit_finds_what_a_hand_edit_broke") else {
        return;
    };
    q.enqueue(&job("a", 3, 1000, 0)).expect("enqueue");
    q.enqueue(&job("b", 3, 1000, 0)).expect("enqueue");
    let c = q.claim("w", 0).expect("claim").expect("claimed");
    q.complete(&Completion::new(&c.lease, Outcome::Ok, 1, 0.0)).expect("done");
    assert!(q.audit().expect("audit").is_clean());
    q.raw(
        "ALTER TABLE jobs DISABLE TRIGGER jobs_history_update;
         UPDATE jobs SET deadline = 99999 WHERE id = 'a';
         ALTER TABLE history DISABLE TRIGGER history_no_update;
         UPDATE history SET to_status = 'frozen' WHERE job = 'b';
         ALTER TABLE jobs DISABLE TRIGGER jobs_never_deleted;
         DELETE FROM jobs WHERE id = 'b';",
    )
    .expect("tamper");
    let audit = q.audit().expect("an audit reports, it does not fail");
    let found = |check: crate::Check, job: &str, what: &str| {
        audit.violations.iter().any(|v| v.check == check && v.job == job && v.what.contains(what))
    };
    assert!(found(crate::Check::HistoryMatchesRow, "a", "deadline 99999 vs 1000"), "{:#?}", audit.violations);
    assert!(found(crate::Check::NoSilentDrop, "b", "no longer in the store"), "{:#?}", audit.violations);
    assert_eq!((audit.jobs, audit.entries), (1, 4));
}

/// A connection the server dropped fails the operation under way, transiently; the next
/// operation connects again.
#[test]
fn a_dropped_connection_is_opened_again() {
    let Some(url) = retryq_pgtest::database("a_dropped_connection_is_opened_again") else {
        return;
    };
    let mut q = PgQueue::connect(&url).expect("connect");
    q.enqueue(&job("a", 3, 1000, 0)).expect("enqueue");
    let pid: i32 = q.raw_query("SELECT pg_backend_pid()").expect("pid")[0].get(0);
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("admin");
    // The second argument waits (up to 10 s) until the backend has exited.
    let gone: bool =
        admin.query_one("SELECT pg_terminate_backend($1, 10000)", &[&pid]).expect("terminate").get(0);
    assert!(gone);
    let err = q.get("a").expect_err("the dropped connection fails once");
    assert!(err.is_transient(), "{err}");
    assert!(q.get("a").expect("connected again").is_some());
}

/// `url` with its connections' `search_path` set to `schema`.
pub(super) fn with_search_path(url: &str, schema: &str) -> String {
    let join = if url.contains('?') { '&' } else { '?' };
    format!("{url}{join}options=-c%20search_path%3D{schema}")
}

/// A retryq schema as an older build left it: `ddl` run in a schema of its own, `name`, of the
/// database at `url`, and marked `version`. Its URL, and a client on it to add rows with.
pub(super) fn older_schema(url: &str, name: &str, ddl: &str, version: i64) -> (String, postgres::Client) {
    let mut admin = postgres::Client::connect(url, postgres::NoTls).expect("admin");
    admin.batch_execute(&format!("CREATE SCHEMA {name}")).expect("schema");
    let older = with_search_path(url, name);
    let mut client = postgres::Client::connect(&older, postgres::NoTls).expect("client");
    client.batch_execute(ddl).expect("the older schema");
    client
        .execute(
            "INSERT INTO retryq_meta (application_id, schema_version) VALUES ($1, $2)",
            &[&crate::APPLICATION_ID, &version],
        )
        .expect("mark");
    (older, client)
}

/// Eight connections claim and complete 200 jobs at once: each job is done exactly once, on
/// its first attempt, and the history audits clean.
#[test]
fn eight_connections_claim_each_job_exactly_once() {
    let Some(url) = retryq_pgtest::database("eight_connections_claim_each_job_exactly_once") else {
        return;
    };
    let mut q = PgQueue::connect(&url).expect("connect");
    let ids: Vec<String> = (0..200).map(|i| format!("job-{i:03}")).collect();
    let jobs: Vec<NewJob<'_>> = ids.iter().map(|id| job(id, 3, 1_000_000, 0)).collect();
    assert!(q.enqueue_many(&jobs).expect("enqueue").iter().all(|r| matches!(r, Ok(Enqueued::New))));
    let start = Arc::new(Barrier::new(8));
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let (url, start) = (url.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                let mut q = PgQueue::connect(&url).expect("connect");
                let worker = format!("w{w}");
                let mut done = Vec::new();
                start.wait();
                // Claims at one instant, well inside every lease: no lease expires, so a
                // second claim of a job would be a double delivery.
                while let Some(c) = q.claim(&worker, 10).expect("claim") {
                    let completed =
                        q.complete(&Completion::new(&c.lease, Outcome::Ok, 11, 0.0)).expect("complete");
                    assert_eq!(completed, Completed::Done);
                    done.push((c.lease.id, c.lease.attempt));
                }
                done
            })
        })
        .collect();
    let mut done: Vec<(String, u64)> = workers.into_iter().flat_map(|w| w.join().expect("worker")).collect();
    done.sort();
    assert_eq!(done.len(), 200, "each job once");
    assert!(done.iter().zip(&ids).all(|((id, attempt), want)| id == want && *attempt == 1));
    let stats = q.stats(20).expect("stats");
    assert_eq!((stats.done, stats.pending, stats.leased), (200, 0, 0));
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
    assert_eq!(audit.entries, 600, "enqueue, claim, done: three entries each");
    // Each claim and each end counted once, whatever shard its transaction wrote.
    let tallies = q.tallies().expect("tallies");
    let count = |metric: &str| -> Vec<u64> {
        tallies.counters.iter().filter(|t| t.metric == metric).map(|t| t.value).collect()
    };
    assert_eq!(
        ["retryq_enqueued_total", "retryq_claims_total", "retryq_attempts_ended_total"].map(count),
        [[200], [200], [200]]
    );
    assert!(ids.iter().all(|id| q.attempts(id).expect("attempts").len() == 1));
}

/// Claims `k` jobs at 2000 (by `claim` when `k` is 1, else by `claim_batch`) on `q` while
/// another transaction holds a row, taken and changed by `change` (one or more statements);
/// commits that change once the claim waits for the row, and returns the ids the claim took,
/// in its order.
fn claim_past_a_held_row(url: &str, mut q: PgQueue, change: &str, k: usize) -> Vec<String> {
    let mut holder = postgres::Client::connect(url, postgres::NoTls).expect("holder");
    let mut held = holder.transaction().expect("begin");
    held.batch_execute(change).expect("hold the row");
    let claim = std::thread::spawn(move || {
        let claimed = match k {
            1 => q.claim("w2", 2000).expect("claim").into_iter().collect(),
            _ => q.claim_batch("w2", 2000, k).expect("claim"),
        };
        claimed.into_iter().map(|c| c.lease.id).collect::<Vec<_>>()
    });
    // The claim waits for the row once the server says a session waits for a lock, asked
    // from a connection of its own: a transaction reads `pg_stat_activity` once and keeps it.
    let mut watcher = postgres::Client::connect(url, postgres::NoTls).expect("watcher");
    let waiting = "SELECT count(*) FROM pg_stat_activity
                   WHERE datname = current_database() AND wait_event_type = 'Lock'";
    while watcher.query_one(waiting, &[]).expect("waiting").get::<_, i64>(0) == 0 {
        assert!(!claim.is_finished(), "the claim did not wait for the held row");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    held.commit().expect("commit");
    claim.join().expect("claim")
}

/// A claim whose write waited for a row another transaction held takes it only if it is
/// still the first due once that transaction committed. `j2`'s lease expired at 1010 and
/// `j1` is due at 1050, so `j2` is first when the claim at 2000 reads; another transaction
/// holds `j2` and moves its expiry to 1080 (what a heartbeat does), behind `j1`. The claim,
/// which overwrites that transaction's row and so comes after it, must take `j1` (and a
/// batch of two `j1` then `j2`), not the job that was first before the change.
#[test]
fn a_claim_that_waited_for_a_row_takes_what_is_first_once_it_committed() {
    for k in [1, 2] {
        let test = format!("a_claim_that_waited_for_a_row_takes_what_is_first_{k}");
        let Some((url, mut q)) = pg_at(&test) else { return };
        enqueue(&mut q, "j2", 3, 9000, 0);
        assert_eq!(q.claim("w1", 10).expect("claim").expect("j2").id(), "j2");
        let scheduled = NewJob { not_before: Some(1050), ..job("j1", 3, 9000, 0) };
        assert_eq!(q.enqueue(&scheduled).expect("enqueue"), Enqueued::New);
        let change = "UPDATE jobs SET available_at = 1080, updated_at = 80 WHERE id = 'j2'";
        let want: &[&str] = if k == 1 { &["j1"] } else { &["j1", "j2"] };
        assert_eq!(claim_past_a_held_row(&url, q, change, k), want, "a batch of {k}");
    }
}

/// A batch whose second pick changed before its lease undoes the first lease too and picks
/// again: `j1`'s lease expired at 1000 and `j2`'s at 1010, so the batch leases `j1`, then
/// waits for `j2`, which another transaction moves to a retry due at 990 (what a retryable
/// completion with a short backoff does). After it, `j2` comes first; leasing on from `j1`
/// would answer `j1, j2`.
#[test]
fn a_batch_whose_later_pick_changed_picks_again_from_the_start() {
    let Some((url, mut q)) = pg_at("a_batch_whose_later_pick_changed") else { return };
    enqueue(&mut q, "j1", 3, 9000, 0);
    enqueue(&mut q, "j2", 3, 9000, 0);
    assert_eq!(q.claim("w1", 0).expect("claim").expect("j1").id(), "j1");
    assert_eq!(q.claim("w1", 10).expect("claim").expect("j2").id(), "j2");
    let change = "UPDATE jobs SET status = 'pending', owner = NULL, claimed_at = NULL,
                                  available_at = 990, updated_at = 900
                  WHERE id = 'j2'";
    assert_eq!(claim_past_a_held_row(&url, q, change, 2), ["j2", "j1"]);
}

/// A batch whose pick came back short is the answer: it took every job claimable at its
/// snapshot, and every operation that makes a job claimable takes the turn the claim holds
/// (`turn.rs`), so none commits before the claim does and a second look would find nothing.
/// A write outside the queue's operations, in no turn, is seen by the next claim: here only
/// `j1` is due when the batch of three reads; another transaction holds `j1` (without
/// changing it) and makes `j2`, `j3` and `j4` due by a bare `UPDATE`. The batch leases `j1`
/// once that commits and answers; the next batch takes the others.
#[test]
fn a_short_batch_is_the_answer_and_the_next_claim_sees_what_came_due() {
    let Some((url, mut q)) = pg_at("a_short_batch_is_the_answer") else { return };
    enqueue(&mut q, "j1", 3, 9000, 0);
    for id in ["j2", "j3", "j4"] {
        let later = NewJob { not_before: Some(5000), ..job(id, 3, 9000, 0) };
        assert_eq!(q.enqueue(&later).expect("enqueue"), Enqueued::New);
    }
    let change = "SELECT 1 FROM jobs WHERE id = 'j1' FOR UPDATE;
                  UPDATE jobs SET available_at = 500 WHERE id IN ('j2', 'j3', 'j4');";
    assert_eq!(claim_past_a_held_row(&url, q, change, 3), ["j1"]);
    let mut next = PgQueue::connect(&url).expect("connect");
    let ids: Vec<String> =
        next.claim_batch("w3", 2000, 3).expect("claim").into_iter().map(|c| c.lease.id).collect();
    assert_eq!(ids, ["j2", "j3", "j4"]);
}

/// A small, seeded generator, so that a failing sequence is found again by its seed.
struct Rng(u64);

impl Rng {
    /// splitmix64.
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[self.below(from.len() as u64) as usize]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const IDS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
const QUEUES: [&str; 2] = ["default", "other"];
const WORKERS: [&str; 3] = ["w1", "w2", "W3"];
const PAYLOADS: [&str; 3] = ["p", "q", "\0"];
const JITTERS: [f64; 6] = [0.0, 0.25, 0.5, 0.5, 1.0, 1.5];
const OUTCOMES: [Outcome; 3] = [Outcome::Ok, Outcome::Retryable, Outcome::Permanent];
const REASONS: [Option<DeadReason>; 5] = [
    None,
    Some(DeadReason::Exhausted),
    Some(DeadReason::Deadline),
    Some(DeadReason::Permanent),
    Some(DeadReason::Cancelled),
];
const STATUSES: [Status; 4] = [Status::Pending, Status::Leased, Status::Done, Status::Dead];

/// One random call, made on `q`, its answer in words. `leases` are the leases claimed so
/// far (from the answers), which completions and heartbeats present, stale or not.
fn call(rng: &mut Rng, q: &mut dyn Backend, now: u64, leases: &mut Vec<Lease>) -> String {
    let id = *rng.pick(&IDS);
    let worker = *rng.pick(&WORKERS);
    // Mostly one of the last few leases, which may still be held; sometimes an older one,
    // sometimes a forged one.
    let lease = |rng: &mut Rng, leases: &[Lease]| {
        if !leases.is_empty() && rng.chance(90) {
            let recent = if rng.chance(70) { leases.len().saturating_sub(3) } else { 0 };
            rng.pick(&leases[recent..]).clone()
        } else {
            Lease::new(*rng.pick(&WORKERS), *rng.pick(&IDS), rng.below(4))
        }
    };
    let new_job = |rng: &mut Rng, id: &'static str| NewJob {
        id,
        payload: PAYLOADS[rng.below(PAYLOADS.len() as u64) as usize],
        max_attempts: 1 + rng.below(3),
        deadline: now + rng.below(6000),
        now,
        not_before: rng.chance(20).then(|| now + rng.below(600)),
        base_ms: rng.chance(15).then(|| rng.below(400)),
        cap_ms: rng.chance(15).then(|| rng.below(400)),
        queue: rng.chance(30).then(|| *rng.pick(&QUEUES)),
        priority: rng.chance(30).then(|| rng.below(3)),
        kind: if rng.chance(25) { "mail" } else { "" },
    };
    let earlier = |rng: &mut Rng| if rng.chance(15) { now.saturating_sub(rng.below(300)) } else { now };
    let report = |rng: &mut Rng| {
        let mut report = Report::from(*rng.pick(&OUTCOMES));
        if rng.chance(20) {
            report = report.retry_after(rng.below(3000));
        }
        if rng.chance(20) {
            report.error = Some(format!("e{}", rng.below(9)));
        }
        report
    };
    match rng.below(20) {
        0..=2 => format!("{:?}", q.enqueue(&new_job(rng, id))),
        3 => {
            let mut jobs = Vec::new();
            for _ in 0..rng.below(3) {
                let id = *rng.pick(&IDS);
                jobs.push(new_job(rng, id));
            }
            format!("{:?}", q.enqueue_many(&jobs))
        }
        4..=5 => match q.claim(worker, now) {
            Ok(c) => claimed(c.into_iter().collect(), leases),
            err => format!("{err:?}"),
        },
        6 => match q.claim_from(worker, if rng.chance(50) { &QUEUES[1..] } else { &QUEUES }, now) {
            Ok(c) => claimed(c.into_iter().collect(), leases),
            err => format!("{err:?}"),
        },
        7 => match q.claim_batch(worker, now, rng.below(4) as usize) {
            Ok(c) => claimed(c, leases),
            err => format!("{err:?}"),
        },
        8..=10 => {
            let lease = lease(rng, leases);
            let c = Completion {
                lease: &lease,
                report: report(rng),
                now: earlier(rng),
                jitter: *rng.pick(&JITTERS),
            };
            format!("{:?}", q.complete(&c))
        }
        11 => {
            let (a, b) = (lease(rng, leases), lease(rng, leases));
            let batch =
                [Completion::new(&a, report(rng), now, 0.5), Completion::new(&b, report(rng), now, 0.25)];
            format!("{:?}", q.complete_batch(&batch))
        }
        12 => format!("{:?}", q.heartbeat(&lease(rng, leases), earlier(rng))),
        13 => format!("{:?}", q.record_error(&lease(rng, leases), "note", rng.chance(50).then_some("n"))),
        14 => format!("{:?}", q.cancel(id, now)),
        15 => {
            let r = Redrive { id, add_attempts: rng.below(3), deadline: now + rng.below(3000), now };
            format!("{:?}", q.redrive(&r))
        }
        16 => {
            let r = RedriveDead {
                reason: *rng.pick(&REASONS),
                add_attempts: 1,
                deadline: now + 1 + rng.below(3000),
                now,
            };
            format!("{:?}", q.redrive_dead(&r))
        }
        17 => match rng.below(4) {
            0 => format!("{:?}", q.prune(now.saturating_sub(rng.below(500)), now)),
            1 => format!("{:?}", q.prune_at_most(now, now, rng.below(3))),
            2 => format!("{:?}", q.forget(now.saturating_sub(rng.below(500)), now)),
            _ => format!("{:?}", q.reap(now)),
        },
        18 => {
            let settings = Settings {
                lease_ms: rng.below(1500),
                base_ms: rng.below(300),
                cap_ms: rng.below(600),
                ..Settings::default()
            };
            format!("{:?}", q.set_settings(settings))
        }
        _ => format!(
            "{:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            q.lookup(id),
            q.stats_of(now, rng.chance(50).then(|| *rng.pick(&QUEUES))),
            q.owners(now),
            q.history(id),
            q.dead_jobs(*rng.pick(&REASONS)),
            q.list(*rng.pick(&STATUSES), *rng.pick(&REASONS), rng.below(4) as u32),
            q.next_due(),
        ),
    }
}

/// Claims in words, their leases kept for later calls.
fn claimed(claims: Vec<crate::Claimed>, leases: &mut Vec<Lease>) -> String {
    leases.extend(claims.iter().map(|c| c.lease.clone()));
    format!("{claims:?}")
}

/// Everything a store holds, in words: each job, its history, the counts, every listing.
fn everything(q: &dyn Backend, now: u64) -> String {
    let mut all = format!("{:?} {:?} {:?}", q.stats(now), q.owners(now), q.next_due());
    for id in IDS {
        all += &format!(" {:?} {:?}", q.lookup(id), q.history(id));
    }
    for status in STATUSES {
        all += &format!(" {:?}", q.list(status, None, 10));
    }
    all + &format!(" {:?}", q.dead_jobs(None))
}

/// The same random calls on SQLite and on PostgreSQL: every answer the same, and at the end
/// every job, every history and every count the same, and both audits clean. Each sequence
/// runs in a schema of its own on one database (`search_path`), a fresh store each time.
#[test]
fn random_sequences_answer_alike_on_both_stores() {
    let Some(url) = retryq_pgtest::database("random_sequences_answer_alike_on_both_stores") else {
        return;
    };
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("admin");
    let sequences: u64 =
        std::env::var("RETRYQ_PG_SEQUENCES").ok().and_then(|n| n.parse().ok()).unwrap_or(300);
    for seed in 0..sequences {
        admin.batch_execute(&format!("CREATE SCHEMA s{seed}")).expect("schema");
        let mut pg = PgQueue::connect(&with_search_path(&url, &format!("s{seed}"))).expect("connect");
        let mut sqlite = queue();
        pg.set_settings(SETTINGS).expect("settings");
        let (mut a, mut b, mut clock) = (Rng(seed), Rng(seed), Rng(!seed));
        let (mut leases_a, mut leases_b) = (Vec::new(), Vec::new());
        let mut now = 0;
        for step in 0..60 {
            // Mostly forward, sometimes a step back: nothing requires times to grow.
            let back = if clock.chance(10) { clock.below(400) } else { 0 };
            now = (now + clock.below(700)).saturating_sub(back);
            let want = call(&mut a, &mut sqlite, now, &mut leases_a);
            let got = call(&mut b, &mut pg, now, &mut leases_b);
            assert_eq!(got, want, "seed {seed}, step {step}, now {now}");
        }
        assert_eq!(everything(&pg, now), everything(&sqlite, now), "seed {seed}: the stores differ");
        let audit = pg.audit().expect("audit");
        assert!(audit.is_clean(), "seed {seed}: {:#?}", audit.violations);
        assert_eq!(audit, sqlite.audit().expect("audit"), "seed {seed}");
    }
}

/// Eight connections at once doing what workers and operators do — claims, every outcome,
/// heartbeats, crashes that leave a lease to expire, notes, cancels, reaps — on one clock
/// they all read: every job ends done or dead, and the history of every one of them audits
/// clean (one live lease at a time, attempts within budget, claims before the deadline).
#[test]
fn concurrent_workers_keep_every_invariant() {
    use std::sync::atomic::{AtomicU64, Ordering};

    let Some(url) = retryq_pgtest::database("concurrent_workers_keep_every_invariant") else {
        return;
    };
    let mut q = PgQueue::connect(&url).expect("connect");
    let ids: Vec<String> = (0..80).map(|i| format!("job-{i:02}")).collect();
    // Deadlines spread over the run, so that some jobs meet theirs while workers hold them.
    let jobs: Vec<NewJob<'_>> = ids.iter().zip(0..).map(|(id, i)| job(id, 3, 2_000 + 150 * i, 0)).collect();
    q.enqueue_many(&jobs).expect("enqueue");
    let clock = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(8));
    let workers: Vec<_> = (0..8u64)
        .map(|w| {
            let (url, start, clock) = (url.clone(), Arc::clone(&start), Arc::clone(&clock));
            std::thread::spawn(move || {
                let mut q = PgQueue::connect(&url).expect("connect");
                q.set_settings(Settings { lease_ms: 300, base_ms: 50, cap_ms: 400, ..Settings::default() })
                    .expect("settings");
                let mut rng = Rng(w);
                let worker = format!("w{w}");
                let tick = |rng: &mut Rng| clock.fetch_add(1 + rng.below(20), Ordering::SeqCst);
                start.wait();
                for _ in 0..150 {
                    match rng.below(10) {
                        0 => {
                            let id = format!("job-{:02}", rng.below(80));
                            refused_or_ok(q.cancel(&id, tick(&mut rng)).map(drop));
                        }
                        1 => {
                            q.reap(tick(&mut rng)).expect("reap");
                        }
                        _ => {
                            let Some(c) = q.claim(&worker, tick(&mut rng)).expect("claim") else {
                                continue;
                            };
                            if rng.chance(20) {
                                refused_or_ok(q.heartbeat(&c.lease, tick(&mut rng)).map(drop));
                            }
                            if rng.chance(10) {
                                refused_or_ok(q.record_error(&c.lease, "reset", None));
                            }
                            if rng.chance(15) {
                                continue; // the worker dies: the lease expires
                            }
                            let report = Report::from(*rng.pick(&OUTCOMES));
                            let now = tick(&mut rng);
                            refused_or_ok(q.complete(&Completion::new(&c.lease, report, now, 0.5)).map(drop));
                        }
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker");
    }
    // Past every deadline and every lease, a reap ends every job still open.
    q.reap(1_000_000).expect("reap");
    let stats = q.stats(1_000_000).expect("stats");
    assert_eq!((stats.pending, stats.leased, stats.done + stats.dead), (0, 0, 80), "{stats:?}");
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
    assert!(audit.entries > 80 * 2, "{audit:?}");
    // The store runs a deadlocked transaction again; the server counts each one.
    assert_eq!(deadlocks(&q), 0, "the server detected a deadlock");
}

/// An answer a concurrent worker may get: applied, or refused because another worker got
/// there first (its lease was taken, the job moved on). Never a storage failure.
fn refused_or_ok(result: crate::Result<()>) {
    if let Err(e) = result {
        assert_ne!(e.kind(), ErrorKind::Storage, "{e}");
    }
}

/// Claim's pick and the batch's seek the partial index once per queue and priority: no
/// scan of the table, and the only sort is of those few candidates, above the seeks.
#[test]
fn the_pick_seeks_the_due_index_per_queue_and_priority() {
    let Some(q) = pg("the_pick_seeks_the_due_index_per_queue_and_priority") else {
        return;
    };
    q.raw("SET enable_seqscan = off").expect("planner");
    for (sql, args) in [
        (super::claim::CLAIM, "0, 'w', 0, ARRAY['default', 'b']"),
        (super::claim::PICK, "0, 10, ARRAY['default']"),
    ] {
        q.raw(&format!("PREPARE pick AS {sql}")).expect("prepare");
        let plan: Vec<String> = q
            .raw_query(&format!("EXPLAIN EXECUTE pick({args})"))
            .expect("explain")
            .iter()
            .map(|row| row.get(0))
            .collect();
        q.raw("DEALLOCATE pick").expect("deallocate");
        let plan = plan.join("\n");
        assert!(plan.contains("Index Scan using jobs_due on jobs"), "{plan}");
        assert!(!plan.contains("Seq Scan on jobs"), "{plan}");
        // Every sort is above the nested loop of the seeks: none sorts rows of a walk.
        let sorts = plan.lines().filter(|l| l.contains("Sort")).count();
        let top_sorts =
            plan.lines().take_while(|l| !l.contains("Nested Loop")).filter(|l| l.contains("Sort")).count();
        assert_eq!(sorts, top_sorts, "{plan}");
    }
}

/// Deadlocks the server detected in this database since it began, once every other session
/// of it has ended (a session's counts reach the statistics by the time it has left
/// `pg_stat_activity`): the store runs a deadlocked transaction again, so only the server
/// can tell that one happened.
pub(super) fn deadlocks(q: &PgQueue) -> i64 {
    let others = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()";
    for _ in 0..500 {
        if q.raw_query(others).expect("sessions")[0].get::<_, i64>(0) == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    q.raw("SELECT pg_stat_clear_snapshot()").expect("fresh statistics");
    q.raw_query("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
        .expect("deadlocks")[0]
        .get(0)
}

/// Every connection probes a silent server after [`PgQueue::KEEPALIVE_IDLE`] at the latest
/// (sooner when the URL asks), every [`PgQueue::KEEPALIVE_INTERVAL`], three times; and is
/// named `retryq` in `pg_stat_activity` unless the URL names it.
#[test]
fn every_connection_probes_a_silent_server_and_has_a_name() {
    use std::time::Duration;
    let config = |url: &str| super::client_config(url).expect("a valid URL").0;
    for (url, idle) in [
        ("postgres://u@h/db", PgQueue::KEEPALIVE_IDLE),
        ("postgres://u@h/db?keepalives_idle=3", Duration::from_secs(3)),
        ("postgres://u@h/db?keepalives_idle=10", PgQueue::KEEPALIVE_IDLE),
        ("postgres://u@h/db?keepalives_idle=60", PgQueue::KEEPALIVE_IDLE),
    ] {
        let c = config(url);
        assert!(c.get_keepalives(), "{url}");
        assert_eq!(c.get_keepalives_idle(), idle, "{url}");
        assert_eq!(c.get_keepalives_interval(), Some(PgQueue::KEEPALIVE_INTERVAL), "{url}");
        assert_eq!(c.get_keepalives_retries(), Some(3), "{url}");
        assert_eq!(c.get_application_name(), Some("retryq"), "{url}");
    }
    assert_eq!(config("postgres://u@h/db?application_name=billing").get_application_name(), Some("billing"));
}

/// A worker's batch of `ok` outcomes is one statement that writes all or none (`FINISH_EVERY`):
/// when one lease of it was lost, none is written by it, and the batch goes the whole way in
/// one transaction, answering each completion as it stands — `a` done, `b` refused — with
/// `b`'s job as it was. A statement that wrote what it could would commit `a` alone first, and
/// the transaction after it would find `a` no longer held.
#[test]
fn a_batch_of_ok_outcomes_with_a_lost_lease_answers_each_in_one_commit() {
    let Some(mut q) = pg("a_batch_of_ok_outcomes_with_a_lost_lease") else { return };
    enqueue(&mut q, "a", 3, 9000, 0);
    enqueue(&mut q, "b", 3, 9000, 0);
    assert_eq!(q.claim_batch("w", 10, 2).expect("claim").len(), 2);
    let (a, b) = (Lease::new("w", "a", 1), Lease::new("w", "b", 2));
    let answers = q
        .complete_batch(&[
            Completion::new(&a, Outcome::Ok, 20, 0.0),
            Completion::new(&b, Outcome::Ok, 20, 0.0),
        ])
        .expect("batch");
    assert!(matches!(answers[0], Ok(Completed::Done)), "{answers:?}");
    assert!(matches!(answers[1], Err(ref e) if e.kind() == ErrorKind::LeaseLost), "{answers:?}");
    assert_eq!(q.get("a").expect("get").expect("a").status, Status::Done);
    assert_eq!(q.get("b").expect("get").expect("b").status, Status::Leased);
}
