//! The conformance evidence on PostgreSQL: the saved regressions, generated traces from both
//! generators and the model's paths, each compared step by step with the reference model; the
//! same generated traces on SQLite and on PostgreSQL, answer for answer; and bugs seeded into
//! the model noticed against PostgreSQL as they are against SQLite.
//!
//! Each test gets its server from `retryq_pgtest` (a throwaway cluster this process starts, or
//! `RETRYQ_PG_URL`); where PostgreSQL is not installed it says so loudly and returns.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use quickcheck::{Arbitrary, Gen};
use retryq::{DeadReason, Status};
use retryq_conformance::exhaustive::exhaustive;
use retryq_conformance::generate::{IDS, RandomTrace, abstract_trace, materialize};
use retryq_conformance::parse::{Line, parse_line};
use retryq_conformance::pg::{Databases, Fresh};
use retryq_conformance::run::{self, Setup, Storage};
use retryq_conformance::trace::Trace;
use retryq_conformance::{Side, regress};
use retryq_model::model::Bounds;
use retryq_model::reference::Store;
use retryq_model::{Bug, Op};

/// The databases of one test, or `None` (after the loud skip) without PostgreSQL.
fn server(test: &str, fresh: Fresh) -> Option<Arc<Databases>> {
    let url = retryq_pgtest::database(test)?;
    Some(Databases::new(&url, fresh).expect("the test database's server"))
}

fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/traces")
}

#[test]
fn every_regression_trace_prints_its_expected_output_on_postgres() {
    let Some(databases) = server("regressions on postgres", Fresh::Reset) else { return };
    let cases = regress::discover(&traces_dir()).expect("discover");
    assert!(cases.len() >= 10, "only {} cases", cases.len());
    for case in &cases {
        let mut side = Side::lent(databases.lend().expect("lend")).expect("connect");
        assert_eq!(side.kind(), "postgres");
        match regress::check_on(case, &mut side).expect("replay") {
            regress::Verdict::Pass { .. } => {}
            regress::Verdict::Mismatch { line, expected, actual } => {
                panic!("{}: line {line}\n expected {expected}\n actual   {actual}", case.name)
            }
        }
    }
    // And step by step against the model, as `retryq conform` runs them.
    let tally = run::regressions(&traces_dir(), &Setup::new(Storage::Postgres(databases))).expect("run");
    assert_eq!(tally.traces, cases.len() as u64);
    assert!(tally.mismatch.is_none(), "{:?}", tally.mismatch.map(|m| m.divergence.to_string()));
}

#[test]
fn generated_traces_and_the_models_paths_agree_on_postgres() {
    let Some(databases) = server("generated traces on postgres", Fresh::Reset) else { return };
    let setup = Setup::new(Storage::Postgres(databases));
    let tally = run::random(240, 20_261_129, 40, &setup, 4, &|| {}).expect("run");
    assert_eq!(tally.traces, 240);
    assert!(tally.mismatch.is_none(), "{:?}", tally.mismatch.map(|m| m.divergence.to_string()));
    assert!(tally.steps > 240 * 5, "traces this short test little: {}", tally.steps);

    let coverage = exhaustive(Bounds::default(), 3, &setup, 4, &|| {}).expect("run");
    assert!(
        coverage.tally.mismatch.is_none(),
        "{:?}",
        coverage.tally.mismatch.map(|m| m.divergence.to_string())
    );
    assert!(coverage.tally.traces > 20, "{}", coverage.tally.traces);
}

#[test]
fn bugs_seeded_into_the_model_diverge_from_postgres() {
    let Some(databases) = server("seeded bugs on postgres", Fresh::Reset) else { return };
    for bug in [Bug::RetryAtDeadline, Bug::StealLiveLease] {
        let setup =
            Setup { storage: Storage::Postgres(databases.clone()), model: Store::new().with_bug(Some(bug)) };
        let tally = run::random(400, 7, 40, &setup, 4, &|| {}).expect("run");
        let mismatch = tally
            .mismatch
            .unwrap_or_else(|| panic!("{} went unnoticed in {} traces", bug.name(), tally.traces));
        assert!(mismatch.trace.len() <= 12, "{}: not shrunk: {} steps", bug.name(), mismatch.trace.len());
        assert_eq!(mismatch.divergence.kind, "postgres");
    }
}

/// The generated traces of a seed: two thirds from proptest, one third from quickcheck, as
/// `run::random` makes them.
fn generated(cases: u32, seed: u64) -> Vec<Trace> {
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed.to_le_bytes().repeat(4)),
    );
    let strategy = abstract_trace(40);
    let mut traces: Vec<Trace> = (0..cases - cases / 3)
        .map(|_| materialize(&strategy.new_tree(&mut runner).expect("generate").current()))
        .collect();
    traces.extend(
        (0..u64::from(cases / 3))
            .map(|case| RandomTrace::arbitrary(&mut Gen::from_size_and_seed(40, seed + case)).0),
    );
    traces
}

/// Every answer of `trace` on `side`, then the final state: each id's `get` (the SPEC's view
/// and the whole stored job: payload, owner, times), its history, the `stats` at the trace's
/// latest time, a page of each status's listing, the lease holders, and whether the audit is
/// clean.
fn answers(trace: &Trace, side: &mut Side) -> Vec<String> {
    let mut out = Vec::new();
    let mut latest = 0;
    for step in &trace.steps {
        match parse_line(&step.to_line()) {
            Line::Op(op) => {
                latest = latest.max(time_of(&op));
                out.push(side.step(&op).expect("step").to_json_line());
            }
            Line::Invalid(detail) => out.push(format!("invalid: {detail}")),
            Line::Skip => {}
        }
    }
    for id in IDS {
        out.push(side.step(&Op::Get { id: id.into() }).expect("get").to_json_line());
        out.push(format!("{id}: {:?}", side.backend().get(id).expect("job")));
        out.push(format!("{id}: {:?}", side.backend().history(id).expect("history")));
    }
    out.push(side.step(&Op::Stats { queue: None, now: latest }).expect("stats").to_json_line());
    // The operator's listings, outside the SPEC's answers: a page of one and of four of each
    // status, the dead of each reason, and the lease holders.
    for status in [Status::Pending, Status::Leased, Status::Done, Status::Dead] {
        for limit in [1, 4] {
            out.push(format!("{status:?}: {:?}", side.backend().list(status, None, limit).expect("list")));
        }
    }
    for reason in [DeadReason::Exhausted, DeadReason::Deadline, DeadReason::Permanent, DeadReason::Cancelled]
    {
        out.push(format!(
            "{reason:?}: {:?}",
            side.backend().list(Status::Dead, Some(reason), 2).expect("list")
        ));
    }
    out.push(format!("owners: {:?}", side.backend().owners(latest).expect("owners")));
    out.push(format!("audit clean: {}", side.backend().audit().expect("audit").is_clean()));
    out
}

fn time_of(op: &Op) -> u64 {
    let now = match op {
        Op::RunOnce { now, after, .. } => after.unwrap_or(*now).max(*now),
        _ => op.now().unwrap_or(0),
    };
    now.min(retryq_model::MAX_INT)
}

#[test]
fn sqlite_and_postgres_give_the_same_answers_and_end_in_the_same_state() {
    let Some(databases) = server("sqlite against postgres", Fresh::Reset) else { return };
    let traces = generated(100, 99);
    let mut steps = 0;
    for (i, trace) in traces.iter().enumerate() {
        let on_sqlite = answers(trace, &mut Side::temporary().expect("sqlite"));
        let on_postgres = answers(trace, &mut Side::lent(databases.lend().expect("lend")).expect("postgres"));
        steps += trace.len();
        if let Some(at) = on_sqlite.iter().zip(&on_postgres).position(|(a, b)| a != b) {
            panic!(
                "trace {i}, answer {at}:\n  sqlite:   {}\n  postgres: {}\ntrace:\n{}",
                on_sqlite[at],
                on_postgres[at],
                trace.to_jsonl("")
            );
        }
        assert_eq!(on_sqlite.len(), on_postgres.len());
    }
    assert!(steps > 100 * 5, "{steps}");
}

#[test]
fn a_lent_database_is_empty_again_whichever_way_it_is_made() {
    for fresh in [Fresh::Reset, Fresh::Create] {
        let Some(databases) = server("fresh databases", fresh) else { return };
        let trace = Trace::from_jsonl(
            &std::fs::read_to_string(traces_dir().join("spec_worked_trace.jsonl")).expect("trace"),
        );
        for _ in 0..3 {
            let mut side = Side::lent(databases.lend().expect("lend")).expect("connect");
            // A database that kept anything of the last trace would answer `existing`, or
            // a claim of an attempt past the first.
            let lines = retryq_conformance::replay::replay_to_lines(trace.to_jsonl("").as_bytes(), &mut side)
                .expect("replay");
            assert_eq!(lines[1], r#"{"ok":"enqueued"}"#, "{fresh:?}");
        }
        databases.drop_all().expect("drop the run's databases");
    }
}

/// What an attempt noted of its failure (`record_error`: not a SPEC transition, so no trace
/// carries it), and what its completion reported, come back alike from both stores: on
/// `get`, and to the next claim, which avoids the node the last attempt reached.
fn an_attempts_error_and_node_come_back(q: &mut dyn retryq::Backend) {
    use retryq::{Completion, Lease, NewJob, Outcome, Report};
    let job =
        NewJob { id: "a", payload: "p", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() };
    q.enqueue(&job).expect("enqueue");
    let first = q.claim("w", 1).expect("claim").expect("a is due");
    assert_eq!(first.last_node, None, "no attempt has noted a node yet");
    let lease = Lease::new("w", "a", 1);
    q.record_error(&lease, "connection reset", Some("http://b.example/")).expect("record_error");
    let noted = q.get("a").expect("get").expect("a");
    assert_eq!(noted.last_error.as_deref(), Some("connection reset"));
    assert_eq!(noted.last_node.as_deref(), Some("http://b.example/"));
    // The completion's own notes replace them.
    let report = Report::with_error(Outcome::Retryable, "timed out").node("http://c.example/");
    q.complete(&Completion::new(&lease, report, 2, 0.0)).expect("complete");
    let retried = q.get("a").expect("get").expect("a");
    assert_eq!(retried.last_error.as_deref(), Some("timed out"));
    let second = q.claim("w", 60_000 - 1).expect("claim").expect("a is due again");
    assert_eq!(second.last_node.as_deref(), Some("http://c.example/"), "the next claim is told");
}

#[test]
fn an_attempts_error_and_node_come_back_alike_from_sqlite_and_postgres() {
    an_attempts_error_and_node_come_back(&mut retryq::Queue::open_in_memory().expect("memory store"));
    let Some(url) = retryq_pgtest::database("an attempt's error on postgres") else { return };
    an_attempts_error_and_node_come_back(&mut retryq::PgQueue::connect(&url).expect("connect"));
}

/// A job enqueued through the application's own transaction (the outbox): kept if and only
/// if that transaction commits, refused on a conflict without spoiling it, and stored as the
/// same job by both stores. `db` is a fresh store's `--db` text; answers `get` of the rolled
/// back job and of the committed one.
fn through_the_outbox(db: &str) -> [Option<retryq::Job>; 2] {
    use retryq::{Enqueue, Enqueued, ErrorKind, ManualClock, Outbox};
    let mut shop = Outbox::open(db).expect("the outbox installs the queue's schema");
    shop.set_clock(Arc::new(ManualClock::new(1_000)));
    shop.execute("CREATE TABLE orders (id BIGINT PRIMARY KEY)", &[]).expect("the application's table");
    let mut tx = shop.transaction().expect("begin");
    tx.execute("INSERT INTO orders (id) VALUES ($1)", &[&1_i64]).expect("order 1");
    assert_eq!(tx.enqueue(&Enqueue::new("a", "p")).expect("a"), Enqueued::New);
    drop(tx);
    let mut tx = shop.transaction().expect("begin");
    tx.execute("INSERT INTO orders (id) VALUES ($1)", &[&2_i64]).expect("order 2");
    assert_eq!(tx.enqueue(&Enqueue::new("b", "p").max_attempts(3)).expect("b"), Enqueued::New);
    let conflict = tx.enqueue(&Enqueue::new("b", "other")).expect_err("b is taken, with another payload");
    assert_eq!(conflict.kind(), ErrorKind::Conflict);
    tx.execute("INSERT INTO orders (id) VALUES ($1)", &[&3_i64]).expect("the transaction is still usable");
    tx.commit().expect("commit");
    let queue = retryq::open_backend(db).expect("the queue on the application's database");
    ["a", "b"].map(|id| queue.get(id).expect("get"))
}

#[test]
fn the_outbox_keeps_what_commits_alike_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("shop.db");
    let on_sqlite = through_the_outbox(file.to_str().expect("UTF-8"));
    let [rolled_back, committed] = &on_sqlite;
    assert_eq!(rolled_back, &None, "rolled back with its transaction");
    let committed = committed.as_ref().expect("b committed with its order");
    assert_eq!(
        (committed.max_attempts, committed.enqueued_at, committed.status),
        (3, 1_000, Status::Pending)
    );
    let Some(url) = retryq_pgtest::database("the outbox on postgres") else { return };
    assert_eq!(through_the_outbox(&url), on_sqlite);
}
