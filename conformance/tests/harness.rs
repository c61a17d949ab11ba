//! The conformance harness itself: the two readings agree on generated traces, and the
//! harness notices when they do not — every bug seeded into the reference model shows up as
//! a shrunk divergence, saved as a regression case that fails until the bug is gone.

use retryq_conformance::exhaustive::exhaustive;
use retryq_conformance::regress::{self, Verdict};
use retryq_conformance::run::{self, Setup, Storage};
use retryq_model::Bug;
use retryq_model::model::Bounds;
use retryq_model::reference::Store;

#[test]
fn generated_traces_agree_in_memory_and_on_files() {
    for (storage, cases) in [(Storage::Memory, 300), (Storage::File, 60)] {
        let tally = run::random(cases, 20_261_129, 40, &Setup::new(storage.clone()), 2, &|| {}).expect("run");
        assert_eq!(tally.traces, u64::from(cases), "{storage:?}");
        assert!(
            tally.mismatch.is_none(),
            "{storage:?}: {:?}",
            tally.mismatch.map(|m| m.divergence.to_string())
        );
        assert!(tally.steps > u64::from(cases) * 5, "traces this short test little: {}", tally.steps);
    }
}

#[test]
fn every_model_path_of_depth_four_agrees() {
    let coverage = exhaustive(Bounds::default(), 4, &Setup::new(Storage::Memory), 2, &|| {}).expect("run");
    assert!(
        coverage.tally.mismatch.is_none(),
        "{:?}",
        coverage.tally.mismatch.map(|m| m.divergence.to_string())
    );
    assert!(coverage.states > 500, "{}", coverage.states);
    assert!(coverage.tally.traces > 300, "{}", coverage.tally.traces);
}

#[test]
fn every_bug_seeded_into_the_model_is_a_divergence() {
    let mut unnoticed = Vec::new();
    // A watchdog's bug is in the model's world, not its store: no replay shows it.
    for bug in Bug::ALL.into_iter().filter(|bug| !bug.in_the_watchdog()) {
        let setup = Setup { storage: Storage::Memory, model: Store::new().with_bug(Some(bug)) };
        let tally = run::random(600, 7, 40, &setup, 2, &|| {}).expect("run");
        let Some(mismatch) = tally.mismatch else {
            unnoticed.push(bug.name());
            continue;
        };
        // Shrunk: a handful of steps, not the forty a trace may have.
        assert!(
            mismatch.trace.len() <= 12,
            "{}: {} steps\n{}",
            bug.name(),
            mismatch.trace.len(),
            mismatch.trace.to_jsonl("")
        );
    }
    // The random generators' known gaps: a heartbeat dated before the last one, which must not
    // shorten the lease (found by these 600 traces until the choices below changed what they
    // draw; a heartbeat under a lease_ms switched since the claim, missed before, is found
    // again), a heartbeat's expiry past 2^53 − 1, a name of exactly 256 bytes, a bad worker
    // name, a delay whose product is exactly halfway between two binary64 values. The model
    // check reaches each (its scenes and probes: docs/model.md) and catches each by its
    // property (model/tests/contract.rs). Every 1.2 bug is found: the generators reach the
    // second queue, priorities, cancel requests and their holders, prunes, tombstones and
    // forgets on purpose; and the claims' choices of `retryq_model::choices` that the other
    // steps meet only by luck (`Abstract::Choice`: priority across queues and a far wait, a
    // forgotten id enqueued anew beside a new one, a tie across queues, a retry of a priority
    // 1, a queue equal to the second but for its bytes), without which these 600 traces
    // missed queue-name-folded, priority-ages and forgotten-takes-old-place.
    //
    // claim-tie-by-enqueued-at is no longer a gap, but not for its tie: the seeded bug's
    // pick (model/src/reference.rs) orders by `(available_at, enqueued_at)` and so leaves out
    // 1.2's priority, which two jobs of priorities 0 and 1 show. A tie between jobs whose
    // `enqueued_at` order is not their first enqueue's is still left to the model check; if
    // the seeded bug keeps the priority, it is a gap again.
    //
    // Contract 1.3's pause, resume and run_now are found, every one of their seeded bugs. The
    // steps they add to the draw made these 600 traces miss a heartbeat under a lease_ms
    // switched since the claim (heartbeat-lease-at-claim), until a choice put it there.
    //
    // Contract 1.4's kind-ignored is found because the quickcheck generator draws a payload
    // now and then under a kind (without that draw these 600 traces miss it).
    let gaps = [
        "heartbeat-shrinks-lease",
        "heartbeat-expiry-capped",
        "long-name-refused",
        "worker-refusal-names-id",
        "delay-ties-up",
    ];
    assert_eq!(unnoticed, gaps, "the bugs 600 generated traces leave to the model check");
}

#[test]
fn a_saved_divergence_fails_as_a_regression_case() {
    let setup = Setup { storage: Storage::Memory, model: Store::new().with_bug(Some(Bug::RetryAtDeadline)) };
    let tally = run::random(600, 11, 40, &setup, 2, &|| {}).expect("run");
    let mismatch = tally.mismatch.expect("the bug shows");
    let dir = tempfile::tempdir().expect("tempdir");
    run::save_regression(&mismatch, dir.path(), "found", &setup).expect("save");
    let cases = regress::discover(dir.path()).expect("discover");
    assert_eq!(cases.len(), 1);
    // The expected file holds the (buggy) model's answers, so SQLite's differ on the line
    // that diverged — and only the saved, shrunk steps (plus the probe that showed it) are in.
    let verdict = regress::check(&cases[0]).expect("check");
    assert!(matches!(verdict, Verdict::Mismatch { .. }), "{verdict:?}");
    // Against the correct model the same case agrees step by step.
    let correct = run::regressions(dir.path(), &Setup::new(Storage::Memory)).expect("regressions");
    assert!(correct.mismatch.is_some(), "the expected file disagrees with the correct model too");
    let text = std::fs::read_to_string(&cases[0].trace).expect("trace");
    let trace = retryq_conformance::trace::Trace::from_jsonl(&text);
    assert!(run::check_trace(&trace, &Setup::new(Storage::Memory)).expect("check").is_none());
}

#[test]
fn the_generators_are_deterministic_for_a_seed() {
    let setup = Setup::new(Storage::Memory);
    let a = run::random(90, 5, 30, &setup, 2, &|| {}).expect("run");
    let b = run::random(90, 5, 30, &setup, 1, &|| {}).expect("run");
    assert_eq!((a.traces, a.steps), (b.traces, b.steps));
}
