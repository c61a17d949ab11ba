//! The claims of retry control, as properties over random scripts: the attempt loop on a
//! simulated clock, the budgets, the node selector, the backoff bounds, the amplification
//! formula. Each property names the claim it checks.

use std::cell::RefCell;

use proptest::prelude::*;
use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use retryq_control::amplification;
use retryq_control::{
    Backoff, Budget, Failure, FaultTable, Jitter, ManualClock, NodeSelector, Observed, Policy, Pushback,
    Retrier, RetryThrottle, Stop, SuccessRateGate, TpsBudget, Unlimited,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Listed,
    Unlisted,
}

/// What one scripted attempt does: how long it takes and how it ends.
#[derive(Debug, Clone, Copy)]
struct Step {
    /// Milliseconds it takes (capped at its timeout when the operation respects timeouts).
    takes_ms: u64,
    ending: Ending,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Ending {
    Ok,
    Fail(Kind, Pushback),
}

fn ending() -> impl Strategy<Value = Ending> {
    let pushback = prop_oneof![
        6 => Just(Pushback::None),
        1 => Just(Pushback::DontRetry),
        1 => (0u64..3000).prop_map(Pushback::RetryAfter),
    ];
    prop_oneof![
        1 => Just(Ending::Ok),
        5 => pushback.clone().prop_map(|p| Ending::Fail(Kind::Listed, p)),
        1 => pushback.prop_map(|p| Ending::Fail(Kind::Unlisted, p)),
    ]
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (0u64..2500, ending()).prop_map(|(takes_ms, ending)| Step { takes_ms, ending }),
        1..12,
    )
}

fn backoff() -> impl Strategy<Value = Backoff> {
    prop_oneof![
        (0u64..500).prop_map(|delay_ms| Backoff::Fixed { delay_ms }),
        (0u64..300, 0u64..300, 0u64..2000).prop_map(|(initial_ms, step_ms, cap_ms)| Backoff::Linear {
            initial_ms,
            step_ms,
            cap_ms
        }),
        (0u64..800, 0u64..800).prop_map(|(min_ms, max_ms)| Backoff::Random { min_ms, max_ms }),
        (0u64..300, 0u64..3000, prop_oneof![Just(Jitter::None), Just(Jitter::Full), Just(Jitter::Equal)])
            .prop_map(|(base_ms, cap_ms, jitter)| Backoff::Exponential { base_ms, cap_ms, jitter }),
        (0u64..300, 0u64..3000).prop_map(|(base_ms, cap_ms)| Backoff::Decorrelated { base_ms, cap_ms }),
    ]
}

/// Everything one scripted call showed.
#[derive(Debug)]
struct Trace {
    /// (start, timeout, node, ending) of every attempt made.
    attempts: Vec<(u64, u64, usize, Ending)>,
    result: Result<u32, (Stop, u32)>,
    end_ms: u64,
}

/// A retrier's settings for one scripted call.
#[derive(Debug, Clone, Copy)]
struct Script {
    max_attempts: u32,
    timeout_ms: u64,
    backoff: Backoff,
    nodes: usize,
    start_ms: u64,
    deadline_ms: u64,
    /// Whether the operation keeps to its attempt's timeout.
    respect_timeouts: bool,
}

impl Script {
    fn new(max_attempts: u32, backoff: Backoff) -> Self {
        Script {
            max_attempts,
            timeout_ms: 1000,
            backoff,
            nodes: 1,
            start_ms: 0,
            deadline_ms: u64::MAX,
            respect_timeouts: true,
        }
    }

    /// Run `steps` (the last one repeats if the loop asks for more) on a simulated clock.
    fn run(&self, steps: &[Step], seed: u64) -> Trace {
        let policy = Policy::new(self.max_attempts, self.timeout_ms, self.backoff, [Kind::Listed]).unwrap();
        let selector = NodeSelector::new(self.nodes, FaultTable::rocketmq()).unwrap();
        let mut retrier = Retrier::new(policy, Unlimited, selector, ChaCha8Rng::seed_from_u64(seed));
        let clock = ManualClock::new(self.start_ms);
        let attempts = RefCell::new(Vec::new());
        let result = retrier.call(&clock, self.deadline_ms, |a| {
            let step = steps[attempts.borrow().len().min(steps.len() - 1)];
            attempts.borrow_mut().push((clock.now(), a.timeout_ms, a.node, step.ending));
            clock.advance(if self.respect_timeouts {
                step.takes_ms.min(a.timeout_ms)
            } else {
                step.takes_ms
            });
            match step.ending {
                Ending::Ok => Ok(()),
                Ending::Fail(kind, pushback) => Err(Failure::new(kind, ()).with_pushback(pushback)),
            }
        });
        Trace {
            attempts: attempts.into_inner(),
            result: result.map(|d| d.attempts).map_err(|e| (e.stop, e.attempts)),
            end_ms: clock.now(),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Attempts never exceed the policy's maximum, and the count reported is the count made.
    #[test]
    fn attempts_never_exceed_the_maximum(
        max_attempts in 1u32..8, backoff in backoff(), steps in steps(), seed: u64,
    ) {
        let t = Script::new(max_attempts, backoff).run(&steps, seed);
        prop_assert!(t.attempts.len() <= max_attempts as usize);
        let reported = match t.result { Ok(n) => n, Err((_, n)) => n };
        prop_assert_eq!(reported as usize, t.attempts.len());
    }

    /// Never past the deadline: no attempt starts at or after it, none is given time beyond it,
    /// and an operation that keeps to its timeouts finishes the call by the deadline.
    #[test]
    fn never_past_the_deadline(
        max_attempts in 1u32..10, timeout_ms in 1u64..3000, backoff in backoff(),
        start_ms in 0u64..1000, budget_ms in 0u64..8000, steps in steps(), seed: u64,
    ) {
        let deadline = start_ms + budget_ms;
        let script = Script { timeout_ms, start_ms, deadline_ms: deadline, ..Script::new(max_attempts, backoff) };
        let t = script.run(&steps, seed);
        for &(start, timeout, _, _) in &t.attempts {
            prop_assert!(start < deadline, "attempt at {start}, deadline {deadline}");
            prop_assert!(start + timeout <= deadline);
            prop_assert!(timeout <= timeout_ms);
        }
        prop_assert!(t.end_ms <= deadline, "ended at {}, deadline {deadline}", t.end_ms);
        if t.attempts.is_empty() {
            prop_assert_eq!(t.result, Err((Stop::DeadlinePassed, 0)));
        }
    }

    /// On a coarse grid of times, where a wait often ends exactly at the deadline: the loop
    /// never sleeps into the deadline, so nothing happens after the last attempt ends.
    #[test]
    fn no_wait_ends_at_or_after_the_deadline(
        delay in 0u64..6, step in 0u64..4, deadline in 0u64..40,
        takes in prop::collection::vec(0u64..5, 1..12), seed: u64,
    ) {
        let backoff = Backoff::Linear { initial_ms: delay * 10, step_ms: step * 10, cap_ms: 1000 };
        let steps: Vec<Step> = takes
            .iter()
            .map(|t| Step { takes_ms: t * 10, ending: Ending::Fail(Kind::Listed, Pushback::None) })
            .collect();
        let script = Script { timeout_ms: 1000, deadline_ms: deadline * 10, ..Script::new(50, backoff) };
        let t = script.run(&steps, seed);
        if let Some(&(start, timeout, _, _)) = t.attempts.last() {
            let k = t.attempts.len() - 1;
            prop_assert_eq!(t.end_ms, start + steps[k.min(steps.len() - 1)].takes_ms.min(timeout));
            prop_assert!(t.result.is_err_and(|(stop, _)| stop.is_timeout() || stop == Stop::Exhausted));
        }
    }

    /// Even when the operation overruns its timeouts, no attempt starts at or after the
    /// deadline and the loop never sleeps past it: the clock ends at most one overrun late.
    #[test]
    fn no_attempt_starts_late_even_with_overruns(
        timeout_ms in 1u64..3000, backoff in backoff(), budget_ms in 0u64..8000, steps in steps(), seed: u64,
    ) {
        let script = Script { timeout_ms, deadline_ms: budget_ms, respect_timeouts: false, ..Script::new(20, backoff) };
        let t = script.run(&steps, seed);
        for &(start, _, _, _) in &t.attempts {
            prop_assert!(start < budget_ms);
        }
        if let Some(&(start, _, _, _)) = t.attempts.last() {
            let k = t.attempts.len() - 1;
            prop_assert_eq!(t.end_ms, start + steps[k.min(steps.len() - 1)].takes_ms);
        }
    }

    /// No retry of an unlisted error, and no retry after "don't retry": every attempt but the
    /// last failed with a listed kind and no refusal.
    #[test]
    fn only_listed_unrefused_failures_are_retried(
        max_attempts in 1u32..10, backoff in backoff(), steps in steps(), seed: u64,
    ) {
        let t = Script::new(max_attempts, backoff).run(&steps, seed);
        let (last, before) = t.attempts.split_last().expect("at least one attempt without a deadline");
        for &(_, _, _, ending) in before {
            match ending {
                Ending::Fail(Kind::Listed, p) => prop_assert_ne!(p, Pushback::DontRetry),
                other => prop_assert!(false, "retried after {other:?}"),
            }
        }
        match (last.3, t.result) {
            (Ending::Ok, r) => prop_assert!(r.is_ok()),
            (Ending::Fail(Kind::Unlisted, _), r) => prop_assert_eq!(r, Err((Stop::NotRetryable, t.attempts.len() as u32))),
            (Ending::Fail(Kind::Listed, Pushback::DontRetry), r) => {
                prop_assert_eq!(r, Err((Stop::PushedBack, t.attempts.len() as u32)))
            }
            (Ending::Fail(Kind::Listed, _), r) => prop_assert_eq!(r, Err((Stop::Exhausted, max_attempts))),
        }
    }

    /// A retry avoids the node that just failed when another node exists.
    #[test]
    fn a_retry_avoids_the_node_that_just_failed(
        nodes in 2usize..6, steps in steps(), seed: u64,
    ) {
        let t = Script { nodes, ..Script::new(12, Backoff::Fixed { delay_ms: 5 }) }.run(&steps, seed);
        for pair in t.attempts.windows(2) {
            prop_assert_ne!(pair[0].2, pair[1].2, "{:?}", t.attempts);
        }
    }

    /// The selector alone, after any history: `pick` never returns the avoided node when there
    /// is another, always returns a node that exists, and prefers an available one.
    #[test]
    fn the_selector_avoids_the_failed_node_after_any_history(
        count in 1usize..7,
        history in prop::collection::vec((0usize..7, 0u64..700_000, prop::option::of(0u64..20_000)), 0..30),
        now in 0u64..1_400_000, avoid in 0usize..7,
    ) {
        let mut nodes = NodeSelector::new(count, FaultTable::rocketmq()).unwrap();
        for (node, at, latency) in history {
            let observed = latency.map_or(Observed::Failed, Observed::Latency);
            prop_assert_eq!(nodes.record(node, at, observed).is_ok(), node < count);
        }
        let avoid = avoid % count;
        let picked = nodes.pick(now, Some(avoid));
        prop_assert!(picked < count);
        if count > 1 {
            prop_assert_ne!(picked, avoid);
        }
        let any_available = (0..count).any(|i| (count == 1 || i != avoid) && nodes.is_available(i, now));
        prop_assert_eq!(nodes.is_available(picked, now), any_available);
    }

    /// The fault table agrees with a direct reading of RocketMQ's rule for every latency: the
    /// duration of the highest band whose bound the latency reaches, 0 below every band.
    #[test]
    fn the_fault_table_is_rocketmq_s_lookup(latency: u64) {
        let bounds = [50u64, 100, 550, 1000, 2000, 3000, 15000];
        let durations = [0u64, 0, 30000, 60000, 120000, 180000, 600000];
        let expected = bounds.iter().rposition(|b| latency >= *b).map_or(0, |i| durations[i]);
        prop_assert_eq!(FaultTable::rocketmq().not_available_ms(Observed::Latency(latency)), expected);
    }

    /// A slower node is never penalised less than a faster one, in any valid table.
    #[test]
    fn a_valid_table_never_penalises_speed(
        mut bounds in prop::collection::btree_set(0u64..100_000, 1..8),
        raw in prop::collection::vec(0u64..1_000_000, 8),
        a: u64, b: u64,
    ) {
        let bounds: Vec<u64> = std::mem::take(&mut bounds).into_iter().collect();
        let mut durations: Vec<u64> = raw[..bounds.len()].to_vec();
        durations.sort_unstable();
        let table = FaultTable::new(bounds, durations.clone()).unwrap();
        let (fast, slow) = (a.min(b), a.max(b));
        prop_assert!(table.not_available_ms(Observed::Latency(fast)) <= table.not_available_ms(Observed::Latency(slow)));
        prop_assert_eq!(table.not_available_ms(Observed::Failed), *durations.last().unwrap());
    }

    /// Every backoff is total and never exceeds its cap, for any inputs at all.
    #[test]
    fn backoff_never_exceeds_its_cap(
        kind in 0u8..5, a: u64, b: u64, c: u64, failures: u64, previous: Option<u64>, seed: u64,
    ) {
        let backoff = match kind {
            0 => Backoff::Fixed { delay_ms: a },
            1 => Backoff::Linear { initial_ms: a, step_ms: b, cap_ms: c },
            2 => Backoff::Random { min_ms: a, max_ms: b },
            3 => Backoff::Exponential { base_ms: a, cap_ms: c, jitter: [Jitter::None, Jitter::Full, Jitter::Equal][(b % 3) as usize] },
            _ => Backoff::Decorrelated { base_ms: a, cap_ms: c },
        };
        let delay = backoff.delay(failures, previous, &mut ChaCha8Rng::seed_from_u64(seed));
        prop_assert!(delay <= backoff.cap_ms(), "{backoff:?}: {delay}");
    }

    /// Without jitter, exponential backoff is SPEC section 2's window exactly.
    #[test]
    fn unjittered_exponential_is_the_spec_window(
        base in 0u64..1_000_000, cap in 0u64..100_000_000, failures in 1u64..200,
    ) {
        let backoff = Backoff::Exponential { base_ms: base, cap_ms: cap, jitter: Jitter::None };
        let window = (u128::from(base) << (failures.min(100) - 1)).min(u128::from(cap)) as u64;
        prop_assert_eq!(backoff.delay(failures, None, &mut ChaCha8Rng::seed_from_u64(0)), window);
    }

    /// The budget bounds the retry ratio: over any stretch shorter than 0.9·ttl, the retries a
    /// TpsBudget grants are at most `retry_ratio` times the requests deposited from one ttl
    /// before the stretch to its end, plus the floor of `min_per_sec · ttl`.
    #[test]
    fn the_tps_budget_bounds_retries_in_every_stretch(
        ttl_s in 1u64..=10, min_per_sec in 0u32..4, ratio_milli in 0u64..=2000,
        events in prop::collection::vec((0u64..400, any::<bool>()), 1..200),
    ) {
        let ttl_ms = ttl_s * 1000;
        let mut budget = TpsBudget::new(ttl_ms, min_per_sec, ratio_milli as f64 / 1000.0).unwrap();
        let mut now = 0u64;
        let (mut deposits, mut granted) = (Vec::new(), Vec::new());
        for (gap, is_request) in events {
            now += gap;
            if is_request {
                budget.deposit(now);
                deposits.push(now);
            } else if budget.withdraw(now) {
                granted.push(now);
            }
        }
        let reserve = u64::from(min_per_sec) * ttl_ms; // in thousandths of a retry
        // Both lists are in time order: count by binary search.
        let upto = |list: &[u64], t: u64| list.partition_point(|&x| x <= t) as u64;
        for (i, &a) in granted.iter().enumerate() {
            for &b in granted[i..].iter().take_while(|&&b| (b - a) * 10 < ttl_ms * 9) {
                let retries = upto(&granted, b) - i as u64;
                let requests = upto(&deposits, b) - deposits.partition_point(|&t| t + ttl_ms <= a) as u64;
                prop_assert!(
                    retries * 1000 <= ratio_milli * requests + reserve,
                    "{} retries in [{}, {}] against {} requests", retries, a, b, requests
                );
            }
        }
    }

    /// The same bound seen from the attempt loop: calls that all fail within one window send at
    /// most `retry_ratio` retries per call, plus the floor.
    #[test]
    fn the_budget_bounds_the_retry_ratio_of_failing_calls(
        calls in 1u32..200, max_attempts in 1u32..6, ratio_milli in 0u64..=1000, min_per_sec in 0u32..3,
    ) {
        let budget = TpsBudget::new(1000, min_per_sec, ratio_milli as f64 / 1000.0).unwrap();
        let policy = Policy::new(max_attempts, 10, Backoff::Fixed { delay_ms: 0 }, [Kind::Listed]).unwrap();
        let nodes = NodeSelector::new(1, FaultTable::rocketmq()).unwrap();
        let mut retrier = Retrier::new(policy, budget, nodes, ChaCha8Rng::seed_from_u64(0));
        let clock = ManualClock::new(0);
        let mut attempts = 0u64;
        for _ in 0..calls {
            let err = retrier.call(&clock, 1000, |_| Err::<(), _>(Failure::new(Kind::Listed, ()))).unwrap_err();
            attempts += u64::from(err.attempts);
        }
        let retries = attempts - u64::from(calls);
        prop_assert!(retries * 1000 <= ratio_milli * u64::from(calls) + u64::from(min_per_sec) * 1000);
    }

    /// gRPC's throttle: a retry is allowed exactly while the tokens are above half the maximum,
    /// the tokens moving −1 per failure and +ratio per success within [0, max].
    #[test]
    fn the_throttle_allows_retries_only_above_half(
        max_milli in 1u64..=20_000, ratio_milli in 1u64..=3000, outcomes in prop::collection::vec(any::<bool>(), 0..100),
    ) {
        let mut throttle = RetryThrottle::new(max_milli as f64 / 1000.0, ratio_milli as f64 / 1000.0).unwrap();
        let mut tokens = max_milli as i64;
        for success in outcomes {
            throttle.record(0, success);
            tokens = if success { (tokens + ratio_milli as i64).min(max_milli as i64) } else { (tokens - 1000).max(0) };
            prop_assert_eq!(throttle.withdraw(0), 2 * tokens > max_milli as i64);
        }
    }

    /// The success-rate gate, within one window: closed exactly when it holds enough samples
    /// and their success rate is below the threshold.
    #[test]
    fn the_gate_closes_below_the_threshold(
        threshold_pct in 0u64..=100, min_samples in 0u64..10, outcomes in prop::collection::vec(any::<bool>(), 0..60),
    ) {
        let mut gate = SuccessRateGate::new(10_000, threshold_pct as f64 / 100.0, min_samples).unwrap();
        let (mut ok, mut all) = (0u64, 0u64);
        for success in outcomes {
            gate.record(5, success);
            ok += u64::from(success);
            all += 1;
            let open = all < min_samples || ok * 100 >= threshold_pct * all;
            prop_assert_eq!(gate.withdraw(5), open);
        }
    }

    /// n·r^(m−1), exactly where it fits in 64 bits, saturated where it does not.
    #[test]
    fn amplification_is_exact_or_saturated(n in 0u64..1_000_000, r in 0u64..50, m in 0u32..20) {
        let exact = (0..m.saturating_sub(1)).try_fold(u128::from(n), |acc, _| acc.checked_mul(u128::from(r)));
        let expected = exact.and_then(|v| u64::try_from(v).ok()).unwrap_or(u64::MAX);
        prop_assert_eq!(amplification::worst_case_calls(n, r, m), expected);
    }
}

/// The budgets are interchangeable behind the trait the loop uses.
#[test]
fn every_budget_is_a_budget() {
    let budgets: Vec<Box<dyn Budget>> = vec![
        Box::new(Unlimited),
        Box::new(TpsBudget::default()),
        Box::new(SuccessRateGate::new(1000, 0.5, 1).unwrap()),
        Box::new(RetryThrottle::new(10.0, 0.1).unwrap()),
    ];
    for mut b in budgets {
        b.deposit(0);
        b.record(0, true);
        assert!(b.withdraw(0));
    }
}
