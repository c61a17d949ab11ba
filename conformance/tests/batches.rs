//! The batch calls — `enqueue_many`, `claim_batch_from`, `complete_batch`, the worker's hot
//! path — against the model's single operations, on SQLite and on PostgreSQL: generated
//! traces whose runs of enqueues, claims and completions go to the store as batches, every
//! item's answer and every job after every batch compared with the model's (see
//! `retryq_conformance::batched`). A divergence is shrunk by proptest before it is shown.
//!
//! A `prune` goes as the worker's retention sends it, through `prune_at_most` with a small
//! limit, and the model prunes at the bound that call's rule names.
//!
//! These are the tests that kill the batch paths' mutants (`.cargo/mutants.toml`) and
//! `prune_at_most`'s.

use std::cell::RefCell;
use std::sync::Arc;

use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use retryq::{Backend, Completion, Lease, NewJob, Outcome, Status};
use retryq_conformance::Side;
use retryq_conformance::batched::{Batched, batched_trace, compare_batched};
use retryq_conformance::compare::Comparison;
use retryq_conformance::generate::materialize;
use retryq_conformance::pg::{Databases, Fresh};

/// Runs `cases` batched traces from `seed`, each on a fresh side from `open`; panics with the
/// shrunk trace and where it diverged. What went in batches of two or more, in all.
fn run(cases: u32, seed: u64, open: &dyn Fn() -> Side) -> Batched {
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed.to_le_bytes().repeat(4)),
    );
    let total = RefCell::new(Batched::default());
    let result = runner.run(&batched_trace(12), |steps| {
        let trace = materialize(&steps);
        let (comparison, batched) =
            compare_batched(&trace, &mut open()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        match comparison {
            Comparison::Agree(_) => {
                total.borrow_mut().add(batched);
                Ok(())
            }
            Comparison::Diverge(d) => {
                Err(TestCaseError::fail(format!("{d}\ntrace:\n{}", trace.to_jsonl(""))))
            }
        }
    });
    match result {
        Ok(()) => {
            let total = total.into_inner();
            eprintln!("{cases} traces, in batches of two or more: {total:?}");
            total
        }
        Err(TestError::Fail(why, _)) => panic!("a batch did not do what its items do:\n{why}"),
        Err(e) => panic!("{e}"),
    }
}

/// The run tested batches, not batches of one: many of each kind, and claim batches that
/// leased jobs as well as ones that asked for more than was due.
fn assert_batched(batched: Batched, at_least: usize) {
    assert!(batched.enqueues >= at_least, "{batched:?}");
    assert!(batched.claims >= at_least, "{batched:?}");
    assert!(batched.completions >= at_least, "{batched:?}");
    let leased = batched.claims - batched.idle_claims;
    assert!(batched.idle_claims >= at_least / 4 && leased >= at_least / 4, "{batched:?}");
    // `prune_at_most` cut at both places its rule names.
    assert!(batched.cut_prunes >= at_least / 40, "{batched:?}");
    assert!(batched.first_instant_prunes >= at_least / 20, "{batched:?}");
    // Claim batches during a backlog: reaps past one claim's limit, and reaps stopped at k of
    // them (SPEC 6.17, 6.37).
    assert!(batched.reaps_past_one_limit >= at_least / 40, "{batched:?}");
    assert!(batched.reaps_stopped >= at_least / 40, "{batched:?}");
}

#[test]
fn batches_on_sqlite_do_what_their_items_do_on_the_model() {
    let batched = run(400, 20_261_202, &|| Side::in_memory().expect("memory store"));
    assert_batched(batched, 1000);
}

#[test]
fn batches_on_postgres_do_what_their_items_do_on_the_model() {
    let Some(url) = retryq_pgtest::database("batches on postgres") else { return };
    let databases: Arc<Databases> = Databases::new(&url, Fresh::Reset).expect("the test database's server");
    let batched = run(100, 20_261_203, &|| Side::lent(databases.lend().expect("lend")).expect("postgres"));
    assert_batched(batched, 200);
}

fn job(id: &str) -> NewJob<'_> {
    NewJob { id, payload: "p", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() }
}

/// A storage failure inside a batch fails the whole batch and records none of it: the items
/// before the failing one are rolled back with it (the batch calls' rustdoc). Only an
/// injected failure shows it — `inject` installs triggers that refuse job `b`'s completion
/// and job `d`'s insertion — and no generated trace can.
fn a_failure_inside_a_batch_records_none_of_it(q: &mut dyn Backend, inject: &dyn Fn()) {
    let first = q.enqueue_many(&[job("a"), job("b")]).expect("enqueue_many");
    assert!(first.iter().all(Result::is_ok), "{first:?}");
    let claimed = q.claim_batch_from("w", &["default"], 1, 2).expect("claim_batch");
    assert_eq!(claimed.len(), 2);
    inject();
    let (a, b) = (Lease::new("w", "a", 1), Lease::new("w", "b", 1));
    let completions = [Completion::new(&a, Outcome::Ok, 2, 0.0), Completion::new(&b, Outcome::Ok, 2, 0.0)];
    let failed = q.complete_batch(&completions);
    assert!(failed.is_err(), "a storage failure on b answered {failed:?}");
    assert_eq!(q.get("a").expect("get").expect("a").status, Status::Leased, "a's completion was kept");
    let failed = q.enqueue_many(&[job("c"), job("d")]);
    assert!(failed.is_err(), "a storage failure on d answered {failed:?}");
    assert_eq!(q.get("c").expect("get"), None, "c's enqueue was kept");
}

#[test]
fn a_storage_failure_inside_a_batch_records_none_of_it_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("batch.db");
    let mut q = retryq::Queue::open(&path).expect("open");
    let inject = || {
        let conn = rusqlite::Connection::open(&path).expect("a second connection");
        conn.execute_batch(
            "CREATE TRIGGER refuse_b BEFORE UPDATE ON jobs WHEN NEW.id = 'b' AND NEW.status = 'done'
                 BEGIN SELECT RAISE(ABORT, 'injected failure'); END;
             CREATE TRIGGER refuse_d BEFORE INSERT ON jobs WHEN NEW.id = 'd'
                 BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
        )
        .expect("triggers");
    };
    a_failure_inside_a_batch_records_none_of_it(&mut q, &inject);
}

#[test]
fn a_storage_failure_inside_a_batch_records_none_of_it_on_postgres() {
    let Some(url) = retryq_pgtest::database("a failure inside a batch on postgres") else { return };
    let mut q = retryq::PgQueue::connect(&url).expect("connect");
    let inject = || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("a second connection");
        client
            .batch_execute(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql
                     AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$;
                 CREATE TRIGGER refuse_b BEFORE UPDATE ON jobs FOR EACH ROW
                     WHEN (NEW.id = 'b' AND NEW.status = 'done') EXECUTE FUNCTION refuse();
                 CREATE TRIGGER refuse_d BEFORE INSERT ON jobs FOR EACH ROW
                     WHEN (NEW.id = 'd') EXECUTE FUNCTION refuse();",
            )
            .expect("triggers");
    };
    a_failure_inside_a_batch_records_none_of_it(&mut q, &inject);
}

/// A batch on PostgreSQL whose pick came back short answers with what it leased: an enqueue
/// made meanwhile waits for the claims' turn (SPEC 6.26) and is the next claim's. Only
/// connections at once show it, which no sequential trace makes: another connection holds
/// `j1`'s row (as a heartbeat does), so the batch's lease of it waits; an enqueue of `j2`, due
/// at once, starts while the batch waits. A batch of 3 must answer `j1` alone, and the
/// enqueue commit after it.
#[test]
fn a_short_batch_on_postgres_answers_before_an_enqueue_begun_inside_it() {
    let Some(url) = retryq_pgtest::database("a short batch on postgres") else { return };
    let mut q = retryq::PgQueue::connect(&url).expect("connect");
    q.enqueue(&job("j1")).expect("enqueue");
    let mut holder = postgres::Client::connect(&url, postgres::NoTls).expect("holder");
    let mut held = holder.transaction().expect("begin");
    held.batch_execute("SELECT 1 FROM jobs WHERE id = 'j1' FOR UPDATE").expect("hold j1");
    // Sessions waiting for a lock, seen from a connection of its own: a transaction reads
    // `pg_stat_activity` once and keeps what it read.
    let mut watcher = postgres::Client::connect(&url, postgres::NoTls).expect("watcher");
    let mut waiting = || -> i64 {
        let sql = "SELECT count(*) FROM pg_stat_activity
                   WHERE datname = current_database() AND wait_event_type = 'Lock'";
        watcher.query_one(sql, &[]).expect("waiting").get(0)
    };
    let claim = std::thread::spawn(move || {
        let claimed = q.claim_batch_from("w", &["default"], 2000, 3).expect("claim_batch");
        claimed.into_iter().map(|c| c.lease.id).collect::<Vec<_>>()
    });
    while waiting() == 0 {
        assert!(!claim.is_finished(), "the batch did not wait for the held row");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let mut other = retryq::PgQueue::connect(&url).expect("connect");
    let enqueue = std::thread::spawn(move || {
        other.enqueue(&NewJob { now: 1000, ..job("j2") }).expect("enqueue");
        other
    });
    while waiting() < 2 {
        assert!(!enqueue.is_finished(), "the enqueue did not wait for the claims' turn");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    held.commit().expect("commit");
    assert_eq!(claim.join().expect("the batch"), ["j1"]);
    let mut other = enqueue.join().expect("the enqueue");
    let next: Vec<String> =
        other.claim_batch("w", 2000, 3).expect("claim_batch").into_iter().map(|c| c.lease.id).collect();
    assert_eq!(next, ["j2"]);
}
