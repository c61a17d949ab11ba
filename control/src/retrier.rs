//! The attempt loop: run an operation until it succeeds or a [`Stop`] says enough.
//!
//! The mechanism, apart from the policy (tower's `retry/` split): a [`Retrier`] holds what all
//! calls to one target share — the [`Policy`], a [`Budget`], a [`NodeSelector`] over the
//! target's nodes, a random source for jitter — and [`Retrier::call`] runs one call against a
//! [`Clock`]. Each attempt is told its node and its timeout in an [`Attempt`]; the operation
//! answers with a value or a [`Failure`] (its kind, for the whitelist; the error itself; the
//! response's [`Pushback`]). The decisions are [`Call`]'s; this file only wires them to the
//! clock, the node selector and the operation.
//!
//! Node outcomes are recorded as RocketMQ records them: a success with its latency, a failure
//! of a retryable kind as a failure (the top band); a failure the whitelist does not list — the
//! node answered, the request was wrong — with its latency.

use rand::Rng;

use crate::budget::Budget;
use crate::call::{Call, Next, Stop};
use crate::clock::{Clock, ClockError};
use crate::nodes::{NodeSelector, Observed};
use crate::policy::Policy;
use crate::pushback::Pushback;

/// What one attempt may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    /// 1 for the first attempt.
    pub number: u32,
    /// The node to send it to (an index into the caller's list).
    pub node: usize,
    /// How long it may take: the operation should give up after this.
    pub timeout_ms: u64,
    /// The call's deadline, on the clock's base.
    pub deadline_ms: u64,
}

/// A failed attempt, as the operation reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure<K, E> {
    /// The kind the policy's whitelist is checked against.
    pub kind: K,
    /// The error itself, handed back if the call gives up.
    pub error: E,
    /// What the response said about retrying.
    pub pushback: Pushback,
}

impl<K, E> Failure<K, E> {
    /// A failure whose response said nothing about retrying.
    pub fn new(kind: K, error: E) -> Self {
        Failure { kind, error, pushback: Pushback::None }
    }

    /// The same failure, with the response's pushback.
    pub fn with_pushback(self, pushback: Pushback) -> Self {
        Failure { pushback, ..self }
    }
}

/// A call that succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done<T> {
    /// The operation's value.
    pub value: T,
    /// How many attempts it took.
    pub attempts: u32,
    /// The node that answered.
    pub node: usize,
}

/// A call that gave up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("gave up after {attempts} attempt(s): {stop}")]
pub struct RetryError<K, E> {
    /// Why.
    pub stop: Stop,
    /// How many attempts were made.
    pub attempts: u32,
    /// The last attempt's failure; `None` if no attempt was made (the deadline had passed).
    pub last: Option<Failure<K, E>>,
}

impl<K, E> RetryError<K, E> {
    /// Whether the call timed out rather than failed: see [`Stop::is_timeout`].
    pub fn is_timeout(&self) -> bool {
        self.stop.is_timeout()
    }
}

/// Everything the calls to one target share.
#[derive(Debug, Clone)]
pub struct Retrier<K, B, R> {
    policy: Policy<K>,
    budget: B,
    nodes: NodeSelector,
    rng: R,
}

impl<K: PartialEq, B: Budget, R: Rng> Retrier<K, B, R> {
    /// A retrier for one target.
    pub fn new(policy: Policy<K>, budget: B, nodes: NodeSelector, rng: R) -> Self {
        Retrier { policy, budget, nodes, rng }
    }

    /// Run `op` until it succeeds or the call stops, by `deadline_ms` on `clock`.
    ///
    /// Never starts an attempt at or after the deadline, never gives an attempt more than the
    /// time left, never sleeps into the deadline. The operation is trusted to keep to its
    /// attempt's `timeout_ms`; if it overruns, the loop notices afterwards.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// use rand::rngs::ChaCha8Rng;
    /// use retryq_control::{Backoff, Failure, FaultTable, ManualClock, NodeSelector, Policy, Retrier, Stop, Unlimited};
    ///
    /// #[derive(Debug, PartialEq)]
    /// enum Kind { Unavailable, BadRequest }
    ///
    /// let policy = Policy::new(5, 1000, Backoff::Fixed { delay_ms: 100 }, [Kind::Unavailable])?;
    /// let nodes = NodeSelector::new(1, FaultTable::rocketmq())?;
    /// let mut retrier = Retrier::new(policy, Unlimited, nodes, ChaCha8Rng::seed_from_u64(7));
    /// let clock = ManualClock::new(0);
    /// // An error the policy does not list is not retried, however many attempts are left.
    /// let err = retrier
    ///     .call(&clock, 10_000, |_| Err::<(), _>(Failure::new(Kind::BadRequest, "malformed")))
    ///     .expect_err("not retryable");
    /// assert_eq!((err.stop, err.attempts), (Stop::NotRetryable, 1));
    /// // A listed one is, until the attempts run out: four waits of 100 ms between five attempts.
    /// let err = retrier
    ///     .call(&clock, 10_000, |_| Err::<(), _>(Failure::new(Kind::Unavailable, "503")))
    ///     .expect_err("always failing");
    /// assert_eq!((err.stop, err.attempts), (Stop::Exhausted, 5));
    /// assert_eq!(clock.slept_ms(), 400);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn call<T, E, C: Clock + ?Sized>(
        &mut self,
        clock: &C,
        deadline_ms: u64,
        mut op: impl FnMut(&Attempt) -> Result<T, Failure<K, E>>,
    ) -> Result<Done<T>, RetryError<K, E>> {
        let mut call = Call::new(deadline_ms);
        let mut last: Option<Failure<K, E>> = None;
        // The node the previous attempt failed on: the next one goes elsewhere if it can.
        let mut avoid: Option<usize> = None;
        loop {
            let started = match clock.now_ms() {
                Ok(now) => now,
                Err(e) => {
                    return Err(RetryError {
                        stop: Stop::ClockUnreadable(e),
                        attempts: call.attempts(),
                        last,
                    });
                }
            };
            let plan = match call.start(&self.policy, &mut self.budget, started) {
                Ok(plan) => plan,
                Err(stop) => return Err(RetryError { stop, attempts: call.attempts(), last }),
            };
            let node = self.nodes.pick(started, avoid);
            let attempt = Attempt { number: plan.attempt, node, timeout_ms: plan.timeout_ms, deadline_ms };
            let result = op(&attempt);
            let ended = match clock.now_ms() {
                Ok(now) => now,
                Err(e) => return self.undated(&mut call, node, started, result, e),
            };
            let latency = Observed::Latency(ended.saturating_sub(started));
            match result {
                Ok(value) => {
                    self.record(node, ended, latency);
                    call.succeeded(&mut self.budget, ended);
                    return Ok(Done { value, attempts: call.attempts(), node });
                }
                Err(failure) => {
                    let observed =
                        if self.policy.is_retryable(&failure.kind) { Observed::Failed } else { latency };
                    self.record(node, ended, observed);
                    let next = call.failed(
                        &self.policy,
                        &mut self.budget,
                        &mut self.rng,
                        ended,
                        &failure.kind,
                        failure.pushback,
                    );
                    match next {
                        Next::Retry { after_ms } => {
                            avoid = Some(node);
                            last = Some(failure);
                            clock.sleep_ms(after_ms);
                        }
                        Next::Stop(stop) => {
                            return Err(RetryError { stop, attempts: call.attempts(), last: Some(failure) });
                        }
                    }
                }
            }
        }
    }

    /// The policy.
    pub fn policy(&self) -> &Policy<K> {
        &self.policy
    }

    /// The budget, to inspect or to share with calls made outside this loop.
    pub fn budget_mut(&mut self) -> &mut B {
        &mut self.budget
    }

    /// The node selector, to inspect or to feed outcomes observed elsewhere.
    pub fn nodes_mut(&mut self) -> &mut NodeSelector {
        &mut self.nodes
    }

    /// An attempt whose end the clock cannot date. Its value is still the caller's: a success
    /// is returned (counted in the budget at its start; no latency is recorded, none was
    /// measured). A failure stops the call, since no retry can be timed against the deadline.
    fn undated<T, E>(
        &mut self,
        call: &mut Call,
        node: usize,
        started: u64,
        result: Result<T, Failure<K, E>>,
        error: ClockError,
    ) -> Result<Done<T>, RetryError<K, E>> {
        match result {
            Ok(value) => {
                call.succeeded(&mut self.budget, started);
                Ok(Done { value, attempts: call.attempts(), node })
            }
            Err(failure) => Err(RetryError {
                stop: Stop::ClockUnreadable(error),
                attempts: call.attempts(),
                last: Some(failure),
            }),
        }
    }

    fn record(&mut self, node: usize, now_ms: u64, observed: Observed) {
        // `node` came from `pick`, which only returns indices of the selector's nodes.
        let _known = self.nodes.record(node, now_ms, observed).is_ok();
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::backoff::Backoff;
    use crate::budget::{TpsBudget, Unlimited};
    use crate::clock::ManualClock;
    use crate::nodes::FaultTable;
    use rand::SeedableRng;
    use rand::rngs::ChaCha8Rng;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Kind {
        Unavailable,
        BadRequest,
    }

    type Outcome = Result<&'static str, Failure<Kind, &'static str>>;

    fn unavailable() -> Outcome {
        Err(Failure::new(Kind::Unavailable, "503"))
    }

    fn retrier(max_attempts: u32, nodes: usize) -> Retrier<Kind, Unlimited, ChaCha8Rng> {
        let policy =
            Policy::new(max_attempts, 1000, Backoff::Fixed { delay_ms: 100 }, [Kind::Unavailable]).unwrap();
        let nodes = NodeSelector::new(nodes, FaultTable::rocketmq()).unwrap();
        Retrier::new(policy, Unlimited, nodes, ChaCha8Rng::seed_from_u64(3))
    }

    #[test]
    fn retry_errors() {
        let clock = ManualClock::new(0);
        let tries = Cell::new(0);
        let done = retrier(3, 1).call(&clock, 10_000, |_| {
            tries.set(tries.get() + 1);
            if tries.get() < 3 { unavailable() } else { Ok("ok") }
        });
        assert_eq!(done, Ok(Done { value: "ok", attempts: 3, node: 0 }));
        assert_eq!(clock.slept_ms(), 200);
    }

    #[test]
    fn retry_limit() {
        let clock = ManualClock::new(0);
        let err = retrier(2, 1).call(&clock, 10_000, |_| unavailable()).unwrap_err();
        assert_eq!((err.stop, err.attempts), (Stop::Exhausted, 2));
        assert_eq!(err.last.map(|f| f.error), Some("503"));
    }

    #[test]
    fn retry_error_inspection() {
        let clock = ManualClock::new(0);
        let err =
            retrier(5, 1).call(&clock, 10_000, |_| -> Outcome { Err(Failure::new(Kind::BadRequest, "400")) });
        let err = err.unwrap_err();
        assert_eq!((err.stop, err.attempts), (Stop::NotRetryable, 1));
    }

    #[test]
    fn dont_retry_pushback_ends_the_call() {
        let clock = ManualClock::new(0);
        let err = retrier(5, 1)
            .call(&clock, 10_000, |_| -> Outcome {
                Err(Failure::new(Kind::Unavailable, "503").with_pushback(Pushback::DontRetry))
            })
            .unwrap_err();
        assert_eq!((err.stop, err.attempts), (Stop::PushedBack, 1));
    }

    #[test]
    fn retry_after_pushback_sets_the_wait() {
        let clock = ManualClock::new(0);
        let tries = Cell::new(0);
        let done = retrier(5, 1).call(&clock, 10_000, |_| {
            tries.set(tries.get() + 1);
            if tries.get() == 1 {
                Err(Failure::new(Kind::Unavailable, "503").with_pushback(Pushback::RetryAfter(2500)))
            } else {
                Ok("ok")
            }
        });
        assert!(done.is_ok());
        assert_eq!(clock.slept_ms(), 2500);
    }

    /// A clock that reads 0 for its first `good` readings, then fails.
    struct FailsAfter {
        good: Cell<u32>,
    }

    impl Clock for FailsAfter {
        fn now_ms(&self) -> Result<u64, ClockError> {
            let left = self.good.get();
            self.good.set(left.saturating_sub(1));
            if left == 0 { Err(ClockError::BeforeEpoch) } else { Ok(0) }
        }

        fn sleep_ms(&self, _ms: u64) {}
    }

    #[test]
    fn an_unreadable_clock_makes_no_attempt() {
        let clock = FailsAfter { good: Cell::new(0) };
        let err = retrier(3, 1).call(&clock, 10_000, |_| -> Outcome { Ok("never") }).unwrap_err();
        assert!(!err.is_timeout());
        assert_eq!(
            (err.stop, err.attempts, err.last),
            (Stop::ClockUnreadable(ClockError::BeforeEpoch), 0, None)
        );
    }

    #[test]
    fn a_clock_that_fails_mid_call_stops_the_retries_but_keeps_a_success() {
        // Readings: start of attempt 1, its end, start of attempt 2 (fails).
        let clock = FailsAfter { good: Cell::new(2) };
        let err = retrier(5, 1).call(&clock, 10_000, |_| unavailable()).unwrap_err();
        assert_eq!((err.stop, err.attempts), (Stop::ClockUnreadable(ClockError::BeforeEpoch), 1));
        assert_eq!(err.last.map(|f| f.error), Some("503"));
        // The end of the attempt cannot be read: a failure is not retried blind…
        let clock = FailsAfter { good: Cell::new(1) };
        let err = retrier(5, 1).call(&clock, 10_000, |_| unavailable()).unwrap_err();
        assert_eq!((err.stop, err.attempts), (Stop::ClockUnreadable(ClockError::BeforeEpoch), 1));
        // …and a success is still the caller's.
        let clock = FailsAfter { good: Cell::new(1) };
        let done = retrier(5, 1).call(&clock, 10_000, |_| -> Outcome { Ok("ok") });
        assert_eq!(done, Ok(Done { value: "ok", attempts: 1, node: 0 }));
    }

    #[test]
    fn a_deadline_already_passed_makes_no_attempt() {
        let clock = ManualClock::new(500);
        let err = retrier(3, 1).call(&clock, 500, |_| -> Outcome { Ok("never") }).unwrap_err();
        assert!(err.is_timeout());
        assert_eq!((err.stop, err.attempts, err.last), (Stop::DeadlinePassed, 0, None));
    }

    #[test]
    fn the_last_attempt_gets_only_the_time_left() {
        let clock = ManualClock::new(0);
        let timeouts = std::cell::RefCell::new(Vec::new());
        let err = retrier(5, 1)
            .call(&clock, 1500, |a| {
                timeouts.borrow_mut().push(a.timeout_ms);
                clock.advance(a.timeout_ms);
                unavailable()
            })
            .unwrap_err();
        // 0: 1000 ms, fails at 1000, waits 100; 1100: 400 ms left; fails at 1500: timeout.
        assert_eq!(*timeouts.borrow(), [1000, 400]);
        assert_eq!(err.stop, Stop::DeadlinePassed);
        assert_eq!(clock.now_ms(), Ok(1500));
    }

    #[test]
    fn no_sleep_into_the_deadline() {
        let clock = ManualClock::new(0);
        let err = retrier(5, 1)
            .call(&clock, 150, |_| {
                clock.advance(60);
                unavailable()
            })
            .unwrap_err();
        // Fails at 60; a 100 ms wait would end at 160 ≥ 150: stop without sleeping.
        assert_eq!((err.stop, err.attempts, clock.slept_ms()), (Stop::NoTimeToWait, 1, 0));
    }

    #[test]
    fn a_retry_goes_to_another_node() {
        let clock = ManualClock::new(0);
        let nodes = std::cell::RefCell::new(Vec::new());
        let done = retrier(3, 3).call(&clock, 10_000, |a| {
            nodes.borrow_mut().push(a.node);
            if a.number < 3 { unavailable() } else { Ok("ok") }
        });
        assert!(done.is_ok());
        let nodes = nodes.into_inner();
        assert_eq!(nodes.len(), 3);
        assert!(nodes.windows(2).all(|w| w[0] != w[1]), "{nodes:?}");
    }

    #[test]
    fn the_budget_stops_retries_across_calls() {
        let policy = Policy::new(3, 1000, Backoff::Fixed { delay_ms: 0 }, [Kind::Unavailable]).unwrap();
        let nodes = NodeSelector::new(1, FaultTable::rocketmq()).unwrap();
        let budget = TpsBudget::new(1000, 2, 0.0).unwrap();
        let mut r = Retrier::new(policy, budget, nodes, ChaCha8Rng::seed_from_u64(3));
        let clock = ManualClock::new(0);
        // The floor is two retries a second over a one-second window: the first call spends both.
        assert_eq!(r.call(&clock, 10_000, |_| unavailable()).unwrap_err().attempts, 3);
        let err = r.call(&clock, 10_000, |_| unavailable()).unwrap_err();
        assert_eq!((err.stop, err.attempts), (Stop::BudgetSpent, 1));
    }

    #[test]
    fn a_budget_kept_per_target_can_be_lent_to_a_retrier() {
        let mut targets = crate::budget::PerTarget::new(TpsBudget::new(1000, 0, 0.0).unwrap());
        let policy = Policy::new(3, 1000, Backoff::Fixed { delay_ms: 0 }, [Kind::Unavailable]).unwrap();
        let nodes = NodeSelector::new(1, FaultTable::rocketmq()).unwrap();
        let clock = ManualClock::new(0);
        let mut r = Retrier::new(policy, targets.get("orders.example"), nodes, ChaCha8Rng::seed_from_u64(3));
        // No floor and no ratio: the borrowed budget refuses the first retry.
        let err = r.call(&clock, 10_000, |_| unavailable()).unwrap_err();
        assert_eq!((err.stop, err.attempts), (Stop::BudgetSpent, 1));
    }
}
