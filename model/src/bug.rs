//! Seeded bugs: known ways a retry queue goes wrong, each a one-line deviation from the SPEC
//! that the reference store can be told to make.
//!
//! They exist to prove that the properties have teeth: `retryq check --bug NAME` checks the
//! same properties against the store with one bug, and each bug must be reported as a
//! violation with a counterexample. The store makes no bug unless asked ([`crate::Store::with_bug`]).

use std::fmt;

/// One seeded bug. The doc of each variant says what the store then does instead of the SPEC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Bug {
    /// A `run_once` whose process dies after its claim gives the attempt back, as if the
    /// claim were only made durable together with the result.
    RollbackAttemptOnCrash,
    /// A `retryable` completion with time left moves the deadline back by the delay.
    ExtendDeadlineOnRetry,
    /// A retry whose `now + delay` lands exactly on the deadline stays pending (`>` where the
    /// SPEC says `>=`).
    RetryAtDeadline,
    /// Enqueueing an existing id with the same payload resets `attempts` to 0.
    ReenqueueResetsBudget,
    /// `complete` checks only that the job is leased, not the owner nor the fencing token.
    AcceptStaleCompletion,
    /// An expired lease on the last attempt goes back to pending instead of dead(exhausted).
    RetryPastMaxAttempts,
    /// Lease expiry loses the job: reaping deletes an expired lease instead of reclaiming or
    /// quarantining it.
    DropExpiredLease,
    /// An expired lease is never reclaimed nor reaped: the job stays leased forever.
    IgnoreExpiredLease,
    /// An error the transport did not classify is recorded as success.
    UnknownErrorAsSuccess,
    /// A retry increments `attempts` of every job, not only its own (an `UPDATE` missing its
    /// `WHERE id = ?`, as found in a published SQLite job queue).
    CountAttemptOnEveryJob,
    /// `claim` takes a leased job whether or not its lease has expired.
    StealLiveLease,
}

impl Bug {
    /// Every seeded bug, in the order `--list-bugs` shows them.
    pub const ALL: [Bug; 11] = [
        Bug::RollbackAttemptOnCrash,
        Bug::ExtendDeadlineOnRetry,
        Bug::RetryAtDeadline,
        Bug::ReenqueueResetsBudget,
        Bug::AcceptStaleCompletion,
        Bug::RetryPastMaxAttempts,
        Bug::DropExpiredLease,
        Bug::IgnoreExpiredLease,
        Bug::UnknownErrorAsSuccess,
        Bug::CountAttemptOnEveryJob,
        Bug::StealLiveLease,
    ];

    /// The name `--bug` takes.
    pub fn name(self) -> &'static str {
        match self {
            Bug::RollbackAttemptOnCrash => "rollback-attempt-on-crash",
            Bug::ExtendDeadlineOnRetry => "extend-deadline-on-retry",
            Bug::RetryAtDeadline => "retry-at-deadline",
            Bug::ReenqueueResetsBudget => "reenqueue-resets-budget",
            Bug::AcceptStaleCompletion => "accept-stale-completion",
            Bug::RetryPastMaxAttempts => "retry-past-max-attempts",
            Bug::DropExpiredLease => "drop-expired-lease",
            Bug::IgnoreExpiredLease => "ignore-expired-lease",
            Bug::UnknownErrorAsSuccess => "unknown-error-as-success",
            Bug::CountAttemptOnEveryJob => "count-attempt-on-every-job",
            Bug::StealLiveLease => "steal-live-lease",
        }
    }

    /// What the store does wrong, in one line.
    pub fn describe(self) -> &'static str {
        match self {
            Bug::RollbackAttemptOnCrash => "a process dying after its claim gives the attempt back",
            Bug::ExtendDeadlineOnRetry => "a retry moves the deadline back by its delay",
            Bug::RetryAtDeadline => "now + delay == deadline retries instead of dying (> for >=)",
            Bug::ReenqueueResetsBudget => "re-enqueueing the same payload resets attempts to 0",
            Bug::AcceptStaleCompletion => "complete ignores the owner and the fencing token",
            Bug::RetryPastMaxAttempts => "an expired lease on the last attempt goes back to pending",
            Bug::DropExpiredLease => "reaping deletes an expired lease: the job is lost",
            Bug::IgnoreExpiredLease => "an expired lease is never reclaimed nor reaped",
            Bug::UnknownErrorAsSuccess => "an unclassified transport error is recorded as done",
            Bug::CountAttemptOnEveryJob => "a retry increments attempts of every job",
            Bug::StealLiveLease => "claim takes leased jobs whose lease has not expired",
        }
    }

    /// The property that reports this bug (each is also checked by the tests).
    pub fn caught_by(self) -> &'static str {
        use crate::properties::names::*;
        match self {
            Bug::RollbackAttemptOnCrash => ATTEMPTS_COUNT_CLAIMS,
            Bug::ExtendDeadlineOnRetry => DEADLINE_ONLY_BY_REDRIVE,
            Bug::RetryAtDeadline => PENDING_BEFORE_DEADLINE,
            Bug::ReenqueueResetsBudget => ATTEMPTS_COUNT_CLAIMS,
            Bug::AcceptStaleCompletion => ONE_LIVE_HOLDER,
            Bug::RetryPastMaxAttempts => ATTEMPTS_COUNT_CLAIMS,
            Bug::DropExpiredLease => NO_SILENT_DROP,
            Bug::IgnoreExpiredLease => EVERY_JOB_ENDS,
            Bug::UnknownErrorAsSuccess => NO_SILENT_DROP,
            Bug::CountAttemptOnEveryJob => ATTEMPTS_COUNT_CLAIMS,
            Bug::StealLiveLease => ONE_LIVE_HOLDER,
        }
    }

    /// The bug called `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Bug> {
        Bug::ALL.into_iter().find(|bug| bug.name() == name)
    }
}

impl fmt::Display for Bug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for bug in Bug::ALL {
            assert_eq!(Bug::from_name(bug.name()), Some(bug));
        }
        assert_eq!(Bug::from_name("no-such-bug"), None);
    }
}
