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

/// Leases `a` and `b` on a fresh store from `open`, then completes them with `outcomes`
/// (`(job, outcome)` in order, each at 2), as one batch or one at a time: each item's answer,
/// and each job's status and attempts after.
fn complete_twice(
    open: &dyn Fn() -> Box<dyn Backend>,
    outcomes: &[(&str, Outcome)],
    batch: bool,
) -> (Vec<String>, Vec<(Status, u64)>) {
    let mut q = open();
    assert!(q.enqueue_many(&[job("a"), job("b")]).expect("enqueue_many").iter().all(Result::is_ok));
    assert_eq!(q.claim_batch_from("w", &["default"], 1, 2).expect("claim_batch").len(), 2);
    let leases: Vec<Lease> = outcomes.iter().map(|(id, _)| Lease::new("w", *id, 1)).collect();
    let completions: Vec<Completion<'_>> = leases
        .iter()
        .zip(outcomes)
        .map(|(lease, (_, outcome))| Completion::new(lease, *outcome, 2, 0.0))
        .collect();
    let answers: Vec<String> = if batch {
        q.complete_batch(&completions).expect("complete_batch").iter().map(|r| format!("{r:?}")).collect()
    } else {
        completions.iter().map(|c| format!("{:?}", q.complete(c))).collect()
    };
    let jobs = ["a", "b"].map(|id| q.get(id).expect("get").map(|j| (j.status, j.attempts)).expect("the job"));
    (answers, jobs.to_vec())
}

/// A batch that names a job twice answers as its items would one at a time: the first
/// completion of the lease counts and the second finds it gone (`lease_lost`), whether the
/// first ended the job or sent it back to wait, and the batch's other item is recorded
/// beside them. No generated trace puts one job twice into one batch.
fn a_job_named_twice_in_a_batch(open: &dyn Fn() -> Box<dyn Backend>) {
    use Outcome::{Ok as Done, Permanent, Retryable};
    for outcomes in [
        [("a", Done), ("a", Done), ("b", Done)],
        [("a", Done), ("b", Permanent), ("a", Permanent)],
        [("a", Retryable), ("b", Done), ("a", Done)],
        [("b", Done), ("a", Permanent), ("a", Retryable)],
    ] {
        let batched = complete_twice(open, &outcomes, true);
        let single = complete_twice(open, &outcomes, false);
        assert_eq!(batched, single, "{outcomes:?}: the batch, then the items one at a time");
        assert!(batched.0[0].starts_with("Ok("), "{outcomes:?}: {:?}", batched.0);
        let second =
            batched.0.iter().enumerate().filter(|(i, _)| outcomes[*i].0 == "a").nth(1).map(|(_, a)| a);
        assert!(second.is_some_and(|a| a.contains("LeaseLost")), "{outcomes:?}: {:?}", batched.0);
    }
}

#[test]
fn a_job_named_twice_in_a_batch_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let n = std::cell::Cell::new(0);
    a_job_named_twice_in_a_batch(&|| {
        n.set(n.get() + 1);
        Box::new(retryq::Queue::open(dir.path().join(format!("twice-{}.db", n.get()))).expect("open"))
    });
}

#[test]
fn a_job_named_twice_in_a_batch_on_postgres() {
    if retryq_pgtest::database("a job named twice in a batch").is_none() {
        return;
    }
    a_job_named_twice_in_a_batch(&|| {
        let url = retryq_pgtest::database("a job named twice in a batch").expect("a database");
        Box::new(retryq::PgQueue::connect(&url).expect("connect"))
    });
}
