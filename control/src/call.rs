//! The attempt loop's decisions, without the loop: one call's state, asked before each
//! attempt and after each failure.
//!
//! The source document's simple scheme (重试简易实现方案) is the contract: before each retry,
//! check whether the request has already timed out, and if so return a timeout rather than
//! try again; otherwise reset the attempt's timeout so that retries never make the call as a
//! whole outlast the time the caller allowed. Concretely, with `now` from the caller's clock:
//!
//! - [`Call::start`]: no attempt starts at or after the deadline ([`Stop::DeadlinePassed`]);
//!   an attempt is given `min(attempt timeout, deadline − now)`;
//! - [`Call::failed`], in this order: an error kind outside the whitelist is not retried
//!   ([`Stop::NotRetryable`]); a response that says "don't retry" is obeyed
//!   ([`Stop::PushedBack`]); the attempt limit holds ([`Stop::Exhausted`]); a deadline
//!   already passed ends the call ([`Stop::DeadlinePassed`]); the next wait is the response's
//!   retry-after if it gave one (the backoff then starts over, as gRFC A6 says), else the
//!   backoff's; a wait that would end at or after the deadline is not started
//!   ([`Stop::NoTimeToWait`]) — there would be no time left to attempt anything; and last the
//!   budget is asked ([`Stop::BudgetSpent`]), so that a retry is only charged when it is sent.
//!
//! Nothing here sleeps or reads a clock, so the same decisions drive the blocking
//! [`crate::Retrier`], an event-driven caller, and the discrete-event simulation.

use rand::Rng;

use crate::budget::Budget;
use crate::clock::ClockError;
use crate::policy::Policy;
use crate::pushback::Pushback;

/// Why a call stopped without success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Stop {
    /// The error's kind is not in the policy's retryable list.
    #[error("the error is not retryable")]
    NotRetryable,
    /// The response asked not to be retried.
    #[error("the response asked not to be retried")]
    PushedBack,
    /// Every attempt the policy allows was made.
    #[error("every allowed attempt was made")]
    Exhausted,
    /// The deadline had passed when the next attempt was due: a timeout.
    #[error("the deadline passed")]
    DeadlinePassed,
    /// The wait before the next attempt would have ended at or after the deadline: a timeout,
    /// declared without sleeping through it.
    #[error("no time is left to wait for another attempt before the deadline")]
    NoTimeToWait,
    /// The retry budget refused.
    #[error("the retry budget is spent")]
    BudgetSpent,
    /// The clock could not be read (before 1970, past 2^53 − 1 ms): with no time to compare
    /// with the deadline, no further attempt is started.
    #[error("the clock cannot be read: {0}")]
    ClockUnreadable(ClockError),
}

impl Stop {
    /// Whether this stop is a timeout: the deadline, not the error, ended the call.
    pub fn is_timeout(self) -> bool {
        matches!(self, Stop::DeadlinePassed | Stop::NoTimeToWait)
    }
}

/// What the next attempt may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Its number, 1 for the first.
    pub attempt: u32,
    /// How long it may take: `min(attempt timeout, deadline − now)`, at least 1.
    pub timeout_ms: u64,
}

/// What to do after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Wait this long, then [`Call::start`] the next attempt.
    Retry {
        /// The wait.
        after_ms: u64,
    },
    /// Give up.
    Stop(Stop),
}

/// One call's retry state: its deadline, its attempts, where its backoff stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    deadline_ms: u64,
    attempts: u32,
    /// The backoff's `n`: failures since the start or since the last pushback.
    backoff_step: u64,
    /// The backoff's previous wait, for decorrelated jitter.
    previous_wait_ms: Option<u64>,
}

impl Call {
    /// A call that must be over by `deadline_ms` (on the caller's clock; `u64::MAX` for none).
    pub fn new(deadline_ms: u64) -> Self {
        Call { deadline_ms, attempts: 0, backoff_step: 0, previous_wait_ms: None }
    }

    /// The deadline.
    pub fn deadline_ms(&self) -> u64 {
        self.deadline_ms
    }

    /// Attempts started so far.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Start an attempt at `now_ms`, or say why not. The first attempt deposits in the budget.
    pub fn start<K: PartialEq, B: Budget + ?Sized>(
        &mut self,
        policy: &Policy<K>,
        budget: &mut B,
        now_ms: u64,
    ) -> Result<Plan, Stop> {
        if now_ms >= self.deadline_ms {
            return Err(Stop::DeadlinePassed);
        }
        if self.attempts >= policy.max_attempts() {
            return Err(Stop::Exhausted);
        }
        self.attempts += 1;
        if self.attempts == 1 {
            budget.deposit(now_ms);
        }
        let timeout_ms = policy.attempt_timeout_ms().min(self.deadline_ms - now_ms);
        Ok(Plan { attempt: self.attempts, timeout_ms })
    }

    /// The attempt succeeded at `now_ms`.
    pub fn succeeded<B: Budget + ?Sized>(&mut self, budget: &mut B, now_ms: u64) {
        budget.record(now_ms, true);
    }

    /// The attempt failed at `now_ms` with an error of `kind`, the response saying `pushback`:
    /// retry after a wait, or stop.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// use rand::rngs::ChaCha8Rng;
    /// use retryq_control::{Backoff, Call, Next, Policy, Pushback, Stop, Unlimited};
    ///
    /// let policy = Policy::new(3, 1000, Backoff::Fixed { delay_ms: 100 }, ["unavailable"])?;
    /// let (mut budget, mut rng) = (Unlimited, ChaCha8Rng::seed_from_u64(1));
    /// let mut call = Call::new(1_000);
    /// let plan = call.start(&policy, &mut budget, 0)?;
    /// assert_eq!((plan.attempt, plan.timeout_ms), (1, 1000));
    /// let next = call.failed(&policy, &mut budget, &mut rng, 50, &"unavailable", Pushback::None);
    /// assert_eq!(next, Next::Retry { after_ms: 100 });
    /// // The callee asks for 2 s, past the deadline: the call ends now instead of sleeping into it.
    /// call.start(&policy, &mut budget, 150)?;
    /// let next = call.failed(&policy, &mut budget, &mut rng, 200, &"unavailable", Pushback::RetryAfter(2000));
    /// assert_eq!(next, Next::Stop(Stop::NoTimeToWait));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn failed<K: PartialEq, B: Budget + ?Sized, R: Rng + ?Sized>(
        &mut self,
        policy: &Policy<K>,
        budget: &mut B,
        rng: &mut R,
        now_ms: u64,
        kind: &K,
        pushback: Pushback,
    ) -> Next {
        let retryable = policy.is_retryable(kind);
        // gRPC's accounting: retryable failures and explicit refusals say something about the
        // target's health; a malformed request does not.
        if retryable || pushback == Pushback::DontRetry {
            budget.record(now_ms, false);
        }
        if !retryable {
            return Next::Stop(Stop::NotRetryable);
        }
        if pushback == Pushback::DontRetry {
            return Next::Stop(Stop::PushedBack);
        }
        if self.attempts >= policy.max_attempts() {
            return Next::Stop(Stop::Exhausted);
        }
        if now_ms >= self.deadline_ms {
            return Next::Stop(Stop::DeadlinePassed);
        }
        let wait = match pushback {
            Pushback::RetryAfter(ms) => ms,
            Pushback::None | Pushback::DontRetry => {
                policy.backoff().delay(self.backoff_step.saturating_add(1), self.previous_wait_ms, rng)
            }
        };
        if now_ms.saturating_add(wait) >= self.deadline_ms {
            return Next::Stop(Stop::NoTimeToWait);
        }
        if !budget.withdraw(now_ms) {
            return Next::Stop(Stop::BudgetSpent);
        }
        if let Pushback::RetryAfter(_) = pushback {
            self.backoff_step = 0;
            self.previous_wait_ms = None;
        } else {
            self.backoff_step = self.backoff_step.saturating_add(1);
            self.previous_wait_ms = Some(wait);
        }
        Next::Retry { after_ms: wait }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backoff::{Backoff, Jitter};
    use crate::budget::{TpsBudget, Unlimited};
    use rand::SeedableRng;
    use rand::rngs::ChaCha8Rng;

    #[derive(Debug, PartialEq)]
    enum Kind {
        Unavailable,
        BadRequest,
    }

    fn policy(max_attempts: u32) -> Policy<Kind> {
        let backoff = Backoff::Exponential { base_ms: 100, cap_ms: 1000, jitter: Jitter::None };
        Policy::new(max_attempts, 500, backoff, [Kind::Unavailable]).unwrap()
    }

    fn rng() -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(1)
    }

    #[test]
    fn an_attempt_gets_the_smaller_of_its_timeout_and_the_time_left() {
        let mut call = Call::new(1200);
        assert_eq!(call.start(&policy(3), &mut Unlimited, 0), Ok(Plan { attempt: 1, timeout_ms: 500 }));
        assert_eq!(call.start(&policy(3), &mut Unlimited, 900), Ok(Plan { attempt: 2, timeout_ms: 300 }));
    }

    #[test]
    fn no_attempt_starts_at_the_deadline() {
        let mut call = Call::new(1000);
        assert_eq!(call.start(&policy(3), &mut Unlimited, 1000), Err(Stop::DeadlinePassed));
        assert_eq!(call.attempts(), 0);
    }

    #[test]
    fn a_retryable_failure_waits_the_backoff() {
        let mut call = Call::new(10_000);
        call.start(&policy(3), &mut Unlimited, 0).unwrap();
        let next =
            call.failed(&policy(3), &mut Unlimited, &mut rng(), 10, &Kind::Unavailable, Pushback::None);
        assert_eq!(next, Next::Retry { after_ms: 100 });
        call.start(&policy(3), &mut Unlimited, 110).unwrap();
        let next =
            call.failed(&policy(3), &mut Unlimited, &mut rng(), 120, &Kind::Unavailable, Pushback::None);
        assert_eq!(next, Next::Retry { after_ms: 200 });
    }

    #[test]
    fn an_unlisted_error_is_not_retried() {
        let mut call = Call::new(10_000);
        call.start(&policy(3), &mut Unlimited, 0).unwrap();
        let next = call.failed(&policy(3), &mut Unlimited, &mut rng(), 10, &Kind::BadRequest, Pushback::None);
        assert_eq!(next, Next::Stop(Stop::NotRetryable));
    }

    #[test]
    fn the_last_attempt_is_not_retried() {
        let mut call = Call::new(10_000);
        call.start(&policy(1), &mut Unlimited, 0).unwrap();
        let next =
            call.failed(&policy(1), &mut Unlimited, &mut rng(), 10, &Kind::Unavailable, Pushback::None);
        assert_eq!(next, Next::Stop(Stop::Exhausted));
    }

    #[test]
    fn dont_retry_is_obeyed() {
        let mut call = Call::new(10_000);
        call.start(&policy(3), &mut Unlimited, 0).unwrap();
        let next =
            call.failed(&policy(3), &mut Unlimited, &mut rng(), 10, &Kind::Unavailable, Pushback::DontRetry);
        assert_eq!(next, Next::Stop(Stop::PushedBack));
    }

    #[test]
    fn retry_after_replaces_the_backoff_which_then_starts_over() {
        let p = policy(5);
        let mut call = Call::new(10_000);
        call.start(&p, &mut Unlimited, 0).unwrap();
        assert_eq!(
            call.failed(&p, &mut Unlimited, &mut rng(), 0, &Kind::Unavailable, Pushback::None),
            Next::Retry { after_ms: 100 }
        );
        call.start(&p, &mut Unlimited, 100).unwrap();
        let pushed =
            call.failed(&p, &mut Unlimited, &mut rng(), 100, &Kind::Unavailable, Pushback::RetryAfter(700));
        assert_eq!(pushed, Next::Retry { after_ms: 700 });
        call.start(&p, &mut Unlimited, 800).unwrap();
        // Back to the initial backoff, not 200 or 400.
        assert_eq!(
            call.failed(&p, &mut Unlimited, &mut rng(), 800, &Kind::Unavailable, Pushback::None),
            Next::Retry { after_ms: 100 }
        );
    }

    #[test]
    fn a_retry_after_past_the_deadline_stops_now() {
        let mut call = Call::new(1000);
        call.start(&policy(3), &mut Unlimited, 0).unwrap();
        let next = call.failed(
            &policy(3),
            &mut Unlimited,
            &mut rng(),
            10,
            &Kind::Unavailable,
            Pushback::RetryAfter(990),
        );
        assert_eq!(next, Next::Stop(Stop::NoTimeToWait));
    }

    #[test]
    fn a_backoff_ending_exactly_at_the_deadline_is_not_slept() {
        let mut call = Call::new(110);
        call.start(&policy(3), &mut Unlimited, 0).unwrap();
        let next =
            call.failed(&policy(3), &mut Unlimited, &mut rng(), 10, &Kind::Unavailable, Pushback::None);
        assert_eq!(next, Next::Stop(Stop::NoTimeToWait));
        assert!(Stop::NoTimeToWait.is_timeout());
    }

    #[test]
    fn a_failure_after_the_deadline_is_a_timeout() {
        let mut call = Call::new(1000);
        call.start(&policy(3), &mut Unlimited, 0).unwrap();
        let next =
            call.failed(&policy(3), &mut Unlimited, &mut rng(), 1000, &Kind::Unavailable, Pushback::None);
        assert_eq!(next, Next::Stop(Stop::DeadlinePassed));
    }

    #[test]
    fn an_empty_budget_stops_the_retry() {
        let mut budget = TpsBudget::new(1000, 0, 0.0).unwrap();
        let mut call = Call::new(10_000);
        call.start(&policy(3), &mut budget, 0).unwrap();
        let next = call.failed(&policy(3), &mut budget, &mut rng(), 10, &Kind::Unavailable, Pushback::None);
        assert_eq!(next, Next::Stop(Stop::BudgetSpent));
    }
}
