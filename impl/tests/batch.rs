//! `claim_batch` and `complete_batch` against the single calls they stand for: the same
//! random scenario runs on two in-memory queues, one calling `claim` and `complete` k times,
//! the other calling the batch once, and after every step every job and its whole history
//! must be the same on both, as must every answer.

use proptest::prelude::*;
use retryq::{Claimed, Completed, Completion, Lease, NewJob, Outcome, Queue, Redrive, Settings};

const IDS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
const WORKERS: [&str; 2] = ["w1", "w2"];

#[derive(Clone, Debug)]
enum Step {
    Enqueue { id: usize, other_payload: bool, max_attempts: u64, ttl: u64 },
    Claim { worker: usize, k: usize },
    Complete(Vec<Finish>),
    Advance(u64),
    Reap,
    Redrive { id: usize, add: u64, ttl: u64 },
}

/// A completion, resolved against the leases handed out so far.
#[derive(Clone, Debug)]
struct Finish {
    lease: usize,
    other_worker: bool,
    stale: bool,
    outcome: Outcome,
    /// Hundredths; above 100 is an invalid jitter.
    jitter: u8,
    /// How far before the scenario's clock the completion says it is.
    back: u64,
}

fn step() -> impl Strategy<Value = Step> {
    let outcome = prop_oneof![Just(Outcome::Ok), Just(Outcome::Retryable), Just(Outcome::Permanent)];
    let finish = (
        any::<usize>(),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
        outcome,
        0u8..=105,
        prop_oneof![
            8 => Just(0u64),
            1 => 0u64..2000
        ],
    )
        .prop_map(|(lease, other_worker, stale, outcome, jitter, back)| Finish {
            lease,
            other_worker,
            stale,
            outcome,
            jitter,
            back,
        });
    prop_oneof![
        3 => (0..IDS.len(), prop::bool::weighted(0.1), 1u64..4, 1u64..5000).prop_map(
            |(id, other_payload, max_attempts, ttl)| Step::Enqueue { id, other_payload, max_attempts, ttl }
        ),
        3 => (0..WORKERS.len(), 0usize..5).prop_map(|(worker, k)| Step::Claim { worker, k }),
        3 => prop::collection::vec(finish, 0..5).prop_map(Step::Complete),
        2 => prop_oneof![Just(0u64), 1u64..400, 400u64..2500].prop_map(Step::Advance),
        1 => Just(Step::Reap),
        1 => (0..IDS.len(), 1u64..3, 1u64..5000).prop_map(|(id, add, ttl)| Step::Redrive { id, add, ttl }),
    ]
}

/// An answer reduced to what must match: the value, or the error's kind and message.
fn answer<T: std::fmt::Debug>(result: &retryq::Result<T>) -> String {
    match result {
        Ok(value) => format!("{value:?}"),
        Err(e) => format!("{:?}: {e}", e.kind()),
    }
}

fn queue() -> Queue {
    let mut q = Queue::open_in_memory().expect("memory queue");
    q.set_settings(Settings { lease_ms: 1000, base_ms: 100, cap_ms: 250, ..Settings::default() })
        .expect("settings");
    q
}

fn same_store(single: &mut Queue, batch: &mut Queue) -> Result<(), TestCaseError> {
    for id in IDS {
        prop_assert_eq!(single.get(id).expect("get"), batch.get(id).expect("get"), "job {}", id);
        prop_assert_eq!(
            single.history(id).expect("history"),
            batch.history(id).expect("history"),
            "history {}",
            id
        );
    }
    Ok(())
}

fn run(steps: &[Step]) -> Result<Queue, TestCaseError> {
    let (mut single, mut batch) = (queue(), queue());
    let mut now = 0u64;
    let mut leases: Vec<(&str, Claimed)> = Vec::new();
    for step in steps {
        match step {
            Step::Enqueue { id, other_payload, max_attempts, ttl } => {
                let payload = if *other_payload { "other" } else { "p" };
                let job = NewJob {
                    id: IDS[*id],
                    payload,
                    max_attempts: *max_attempts,
                    deadline: now + ttl,
                    now,
                    ..NewJob::default()
                };
                prop_assert_eq!(answer(&single.enqueue(&job)), answer(&batch.enqueue(&job)));
            }
            Step::Claim { worker, k } => {
                let worker = WORKERS[*worker];
                let mut one_by_one = Vec::new();
                let mut idle = false;
                for _ in 0..*k {
                    match single.claim(worker, now).expect("claim") {
                        Some(c) => {
                            prop_assert!(!idle, "a claim after an idle one at the same instant");
                            one_by_one.push(c);
                        }
                        None => idle = true,
                    }
                }
                let batched = batch.claim_batch(worker, now, *k).expect("claim_batch");
                prop_assert_eq!(&one_by_one, &batched);
                leases.extend(batched.into_iter().map(|c| (worker, c)));
            }
            Step::Complete(finishes) => {
                let named: Vec<Lease> = finishes
                    .iter()
                    .map(|f| {
                        let (worker, id, attempt) = match leases.get(f.lease % leases.len().max(1)) {
                            Some((worker, c)) => (*worker, c.id(), c.attempt()),
                            None => ("w1", "a", 1),
                        };
                        let worker =
                            if f.other_worker { if worker == "w1" { "w2" } else { "w1" } } else { worker };
                        Lease::new(worker, id, attempt + u64::from(f.stale))
                    })
                    .collect();
                let completions: Vec<Completion<'_>> = finishes
                    .iter()
                    .zip(&named)
                    .map(|(f, lease)| {
                        Completion::new(
                            lease,
                            f.outcome,
                            now.saturating_sub(f.back),
                            f64::from(f.jitter) / 100.0,
                        )
                    })
                    .collect();
                let one_by_one: Vec<retryq::Result<Completed>> =
                    completions.iter().map(|c| single.complete(c)).collect();
                let batched = batch.complete_batch(&completions).expect("complete_batch");
                let one_by_one: Vec<String> = one_by_one.iter().map(answer).collect();
                let batched: Vec<String> = batched.iter().map(answer).collect();
                prop_assert_eq!(one_by_one, batched);
            }
            Step::Advance(dt) => now += dt,
            Step::Reap => prop_assert_eq!(answer(&single.reap(now)), answer(&batch.reap(now))),
            Step::Redrive { id, add, ttl } => {
                let (id, deadline) = (IDS[*id], now + ttl);
                prop_assert_eq!(
                    answer(&single.redrive(&Redrive { id, add_attempts: *add, deadline, now })),
                    answer(&batch.redrive(&Redrive { id, add_attempts: *add, deadline, now }))
                );
            }
        }
        same_store(&mut single, &mut batch)?;
    }
    Ok(single)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn batches_do_what_the_single_calls_do(steps in prop::collection::vec(step(), 1..60)) {
        run(&steps)?;
    }
}

#[test]
fn a_scenario_with_every_kind_of_step() {
    let finish = |lease, outcome, jitter| Finish {
        lease,
        other_worker: false,
        stale: false,
        outcome,
        jitter,
        back: 0,
    };
    let steps = [
        Step::Enqueue { id: 0, other_payload: false, max_attempts: 2, ttl: 3000 },
        Step::Enqueue { id: 1, other_payload: false, max_attempts: 1, ttl: 3000 },
        Step::Enqueue { id: 2, other_payload: false, max_attempts: 3, ttl: 500 },
        Step::Claim { worker: 0, k: 2 },
        Step::Complete(vec![finish(0, Outcome::Retryable, 50), finish(1, Outcome::Retryable, 0)]),
        Step::Advance(600),
        Step::Claim { worker: 1, k: 4 },
        Step::Complete(vec![finish(2, Outcome::Ok, 0), finish(2, Outcome::Ok, 0)]),
        Step::Redrive { id: 2, add: 1, ttl: 100 },
        Step::Claim { worker: 0, k: 1 },
        Step::Advance(2000),
        Step::Reap,
    ];
    let q = run(&steps).expect("equivalent");
    // The scenario is not vacuous: it claimed, retried, finished, reaped and redrove.
    let stats = q.stats(0).expect("stats");
    assert_eq!((stats.done, stats.dead, stats.pending + stats.leased), (1, 2, 0), "{stats:?}");
    let a = q.history("a").expect("history");
    assert!(a.iter().any(|h| h.to == retryq::Status::Pending && h.attempt == 1), "a retried: {a:?}");
    assert!(q.history("c").expect("history").iter().any(|h| h.redrives == 1), "c redriven");
}
