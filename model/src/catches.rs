//! Which property catches which seeded bug.
//!
//! Layer: the top, above both the seeded bugs ([`crate::bug`]) and the properties
//! ([`crate::properties`]). The mapping needs both, so it lives in neither: a bug stays a plain
//! name the reference store can consult, and a property stays a statement about worlds, each
//! without knowing of the other.

use crate::bug::Bug;
use crate::properties::names::*;

impl Bug {
    /// The property that reports this bug (each is also checked by the tests).
    pub fn caught_by(self) -> &'static str {
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
            Bug::ClaimTieToNewest => PROGRESS,
            Bug::ClaimFirstEnqueued => PROGRESS,
            Bug::ClaimOnlyFirstJob => PROGRESS,
            Bug::RoundDelay => DELAY_RULE,
            Bug::ExactProductDelay => DELAY_RULE,
            Bug::JitterBeforeCap => DELAY_RULE,
            Bug::ShortLease => CLAIM_RULE,
            Bug::CompleteSkipsClockCheck => COMPLETE_RULE,
            Bug::FenceIgnoresOwner => ONE_LIVE_HOLDER,
            Bug::RestartForgetsConfig => RESTART_KEEPS_ALL,
            Bug::RestartReleasesLeases => RESTART_KEEPS_ALL,
            Bug::RedriveLiveJob => REDRIVE_RULE,
            Bug::LookupBeforeValidation => ARGUMENTS_FIRST,
            Bug::ReapLiveLease => REAP_RULE,
            Bug::ReapDeadlineFirst => REAP_RULE,
            Bug::RunOnceIgnoresBackwardsClock => RUN_ONCE_RULE,
            Bug::StatsStrictExpiry => READS_RULE,
            Bug::DeadlineAtNowAccepted => ARGUMENTS_FIRST,
            Bug::HeartbeatPastDeadline => LEASE_BOUND,
            Bug::HeartbeatIgnoresAttempt => ONE_LIVE_HOLDER,
            Bug::HeartbeatShrinksLease => HEARTBEAT_RULE,
            Bug::ScheduledClaimableEarly => SCHEDULE_WAITS,
            Bug::RetryIgnoresOwnBackoff => DELAY_RULE,
            Bug::CancelLeasedJob => ANSWER_IN_TABLE,
            Bug::ConfigOmittedResets => CONFIG_RULE,
            Bug::HeartbeatLeaseAtClaim => HEARTBEAT_RULE,
            Bug::OwnBackoffAllOrNothing => DELAY_RULE,
            Bug::ClaimTieById => PROGRESS,
            Bug::ClaimTieByEnqueuedAt => PROGRESS,
            Bug::RestartSortsById => RESTART_KEEPS_ALL,
            Bug::CancelFreshOnly => CANCEL_RULE,
            Bug::CancelResetsAttempts => ATTEMPTS_COUNT_CLAIMS,
            Bug::RunOnceCompletesAtFirstReading => RUN_ONCE_RULE,
            Bug::HeartbeatExpiryCapped => HEARTBEAT_RULE,
            Bug::NotBeforeNowRefused => ARGUMENTS_FIRST,
            Bug::LongNameRefused => ARGUMENTS_FIRST,
            Bug::StatsOldestByFirstJob => READS_RULE,
            Bug::HeartbeatRefusesExpired => HEARTBEAT_RULE,
            Bug::ExistingReschedules => ENQUEUE_RULE,
            Bug::RedriveMovesNotBefore => REDRIVE_RULE,
            Bug::ConflictOverwritesPayload => REFUSALS_CHANGE_NOTHING,
            Bug::ClaimReapsOnlyExhausted => CLAIMS_IN_TIME,
            Bug::NoWatchdog => EXECUTIONS_APART,
            Bug::MarginBelowSkew => EXECUTIONS_APART,
            Bug::WatchdogNotRenewed => WATCHDOG_NOT_EARLY,
            Bug::WorkerRefusalNamesId => ARGUMENTS_FIRST,
            Bug::ReapAMillisecondEarly => NO_SILENT_DROP,
            Bug::RedriveRefusesLargestBudget => ARGUMENTS_FIRST,
            Bug::ExistingTakesNewBudget => ENQUEUE_RULE,
            Bug::DelayTiesUp => DELAY_RULE,
            Bug::JitterCheckedOnlyOnRetry => ARGUMENTS_FIRST,
            Bug::ClaimIgnoresQueues => PROGRESS,
            Bug::PriorityInverted => PROGRESS,
            Bug::PruneOpenPastDeadline => NO_SILENT_DROP,
            Bug::PruneIgnoresBefore => RETENTION_RULE,
            Bug::PruneWithoutTombstone => NO_SILENT_DROP,
            Bug::TombstoneOtherDigest => RETENTION_RULE,
            Bug::ForgetIgnoresBefore => RETENTION_RULE,
            Bug::StatsForgetsPruned => READS_RULE,
            Bug::StoppedAttemptDone => COMPLETE_RULE,
        }
    }
}
