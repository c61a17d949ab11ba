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
        let tally = run::random(200, 7, 40, &setup, 4, &|| {}).expect("run");
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
/// latest time, and whether the audit is clean.
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
