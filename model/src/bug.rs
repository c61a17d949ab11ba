//! Seeded bugs: known ways a retry queue goes wrong, each a one-line deviation from the SPEC
//! that the reference store can be told to make.
//!
//! They exist to prove that the properties have teeth: `retryq check --bug NAME` checks the
//! same properties against the store with one bug, and each bug must be reported as a
//! violation with a counterexample. The store makes no bug unless asked ([`crate::Store::with_bug`]).
//!
//! Layer: beside the SPEC's vocabulary, below the reference store that consults it. A bug is a
//! plain name here, knowing nothing of properties or of the checker: the store must be
//! buildable, and its bugs nameable, without the model that hunts them. Which property catches
//! which bug is said above both, in [`crate::catches`].

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
    /// Claim's tie-break goes to the job enqueued last (`ORDER BY available_at, seq DESC`).
    ClaimTieToNewest,
    /// Claim takes the first enqueued claimable job, whatever its `available_at` (an
    /// `ORDER BY seq` without `available_at`).
    ClaimFirstEnqueued,
    /// Claim only ever looks at the first job enqueued: every other job waits until reaped.
    ClaimOnlyFirstJob,
    /// The delay rounds to nearest where SPEC section 2 floors.
    RoundDelay,
    /// The delay floors the exact product of window and jitter instead of the binary64 one
    /// (window 3, jitter 0.6666666666666666: 1 instead of 2).
    ExactProductDelay,
    /// The cap applies after jitter: `min(cap, floor(base * 2^(attempt-1) * jitter))`.
    JitterBeforeCap,
    /// A claim's lease is one millisecond short of `lease_ms`.
    ShortLease,
    /// `complete` skips its clock check: a completion dated before its claim is applied.
    CompleteSkipsClockCheck,
    /// The fence checks the attempt token but not the owner: another worker presenting the
    /// current token completes the job.
    FenceIgnoresOwner,
    /// A restart forgets the settings of `config` and goes back to the defaults.
    RestartForgetsConfig,
    /// A restart releases every lease: leased jobs come back pending at their lease expiry,
    /// as if leases were kept in memory.
    RestartReleasesLeases,
    /// `redrive` accepts a job that is not dead.
    RedriveLiveJob,
    /// `complete` looks its job up before checking its own arguments, so a bad argument for a
    /// missing job answers `not_found`.
    LookupBeforeValidation,
    /// A reap moves a job past its deadline to dead even while its lease is live.
    ReapLiveLease,
    /// A reap of an expired lease out of budget and past its deadline says `deadline` where
    /// the SPEC says `exhausted`.
    ReapDeadlineFirst,
    /// `run_once` records the outcome although the clock read after sending went backwards.
    RunOnceIgnoresBackwardsClock,
    /// `stats` counts a lease as expired only once `available_at` < `now` (`<` for `<=`).
    StatsStrictExpiry,
    /// `enqueue` accepts a deadline equal to `now` (`>=` for `>`).
    DeadlineAtNowAccepted,
    /// `heartbeat` skips its deadline check: a heartbeat at or after the deadline extends the
    /// lease past `deadline − 1 + lease_ms`.
    HeartbeatPastDeadline,
    /// `heartbeat` checks the owner but not the attempt: a stale attempt of the same worker
    /// extends the current lease.
    HeartbeatIgnoresAttempt,
    /// `heartbeat` sets the expiry to `now + lease_ms` without the `max`: a heartbeat dated
    /// earlier than the last one shortens the lease.
    HeartbeatShrinksLease,
    /// A job enqueued with a `not_before` is claimable at once, before its schedule.
    ScheduledClaimableEarly,
    /// A retry's delay uses the queue's settings, ignoring the job's own `base_ms`/`cap_ms`.
    RetryIgnoresOwnBackoff,
    /// `cancel` of a leased job kills it, cutting the attempt in flight short.
    CancelLeasedJob,
    /// `config` puts every setting it omits back to its default instead of keeping it.
    ConfigOmittedResets,
    /// A heartbeat extends the lease by the length it was granted at the claim
    /// (`available_at − claimed_at`), not by the `lease_ms` in effect (6.24).
    HeartbeatLeaseAtClaim,
    /// A job's own backoff applies only when it has both settings: one alone is ignored.
    OwnBackoffAllOrNothing,
    /// Claim's tie-break goes to the smaller id (`ORDER BY available_at, id`), not the first
    /// enqueue.
    ClaimTieById,
    /// Claim's tie-break goes to the earlier `enqueued_at` (`ORDER BY available_at,
    /// enqueued_at`), not the first enqueue: wrong when the clock went back between enqueues.
    ClaimTieByEnqueuedAt,
    /// A restart reloads the jobs ordered by id, losing the order of first enqueues.
    RestartSortsById,
    /// `cancel` refuses a pending job that has had an attempt (`not_cancellable`): only jobs
    /// never claimed are cancelled.
    CancelFreshOnly,
    /// `cancel` gives the attempts back: a cancelled job, redriven, starts again from 0.
    CancelResetsAttempts,
    /// `run_once` records its completion at the first clock reading, not the second.
    RunOnceCompletesAtFirstReading,
    /// A heartbeat's expiry is capped at 2^53 − 1 (SPEC 6.10 allows up to 2^54 − 2).
    HeartbeatExpiryCapped,
    /// `enqueue` refuses a `not_before` equal to `now` (`<=` for `<`).
    NotBeforeNowRefused,
    /// A name of 256 bytes is refused (`>=` for `>`).
    LongNameRefused,
    /// `stats`' oldest open age counts from the first enqueued open job, not the smallest
    /// `enqueued_at`.
    StatsOldestByFirstJob,
    /// A heartbeat of a lease that expired, neither claimed again nor reaped, is refused
    /// `lease_lost` (3.12 accepts it).
    HeartbeatRefusesExpired,
    /// Re-enqueueing an existing id with a `not_before` reschedules it (6.22: nothing changes).
    ExistingReschedules,
    /// A redrive moves the job's `not_before` to its own `now` (3.6: it stays the job's).
    RedriveMovesNotBefore,
    /// An `enqueue` refused `conflict` stores its payload all the same (an upsert).
    ConflictOverwritesPayload,
    /// The reap inside `claim` ends only expired leases out of budget: a job past its deadline
    /// stays claimable, and is claimed.
    ClaimReapsOnlyExhausted,
    /// The worker has no watchdog: a stalled holder's attempt runs until it ends by itself.
    NoWatchdog,
    /// The watchdog's margin is one millisecond below the holders' clock skew.
    MarginBelowSkew,
    /// Heartbeats do not renew the watchdog: it ends the attempt at the claim's lease end.
    WatchdogNotRenewed,
    /// A bad `worker` is refused with a detail that names `id` (the name check called with
    /// the wrong field): SPEC 6.13 wants the field to blame.
    WorkerRefusalNamesId,
    /// A reap ends a job by its deadline one millisecond early (`now + 1 >= deadline`).
    ReapAMillisecondEarly,
    /// A redrive that brings the budget to exactly 2^31 − 1 is refused (`>=` where SPEC 3.6
    /// and 6.5 say `>`): the largest budget the contract allows is out of the operator's reach.
    RedriveRefusesLargestBudget,
    /// Enqueueing an existing id with the same payload stores the new `max_attempts` (an
    /// upsert that updates the row where SPEC 6.22 says nothing changes).
    ExistingTakesNewBudget,
    /// The product of window and jitter rounds a halfway case up, not to the even neighbour
    /// (a multiply in decimal, or rounding half up by hand): at (2^53 − 2) × 0.75 the delay is
    /// one more than binary64's.
    DelayTiesUp,
    /// A jitter is checked only for outcome `retryable`, which uses it: an `ok` or `permanent`
    /// completion (or `run_once`) with a jitter outside [0, 1], or NaN, is applied where SPEC
    /// 6.6 refuses it (`if outcome == retryable { check(jitter) }`).
    JitterCheckedOnlyOnRetry,
    /// A claim takes the first due job of any queue, whatever queues it names (a `WHERE`
    /// missing its `queue IN (…)`).
    ClaimIgnoresQueues,
    /// A claim takes the largest `priority` first (`ORDER BY priority DESC`).
    PriorityInverted,
    /// A claim serving several queues walks them in the order it names them and takes the
    /// best due job of the first that has one, not the best of them all (one index walk per
    /// queue, stopped at the first hit).
    ClaimQueuesInTurn,
    /// A claim serving several queues takes each queue's best due job, then the one of those
    /// due first: priority is compared within a queue, never across queues (one index walk
    /// per queue, merged by `available_at`).
    ClaimHeadsByDueTime,
    /// A claim breaks a tie of priority and `available_at` by the order its `queues` list
    /// names the jobs' queues, not by first enqueue (SPEC 6.32: the order plays no part).
    ClaimTieByQueueOrder,
    /// A claim matches queue names without regard to case (a `COLLATE NOCASE` or `lower()`
    /// on both sides): `Qé` serves `qé` (SPEC 1.6: names compare byte for byte).
    QueueNameFolded,
    /// A claim ages priority: a job's priority falls by one for each 2^30 ms it has been
    /// due, so a low-priority job due long enough goes before a higher one (SPEC 4.8: nothing
    /// ages).
    PriorityAges,
    /// A retry (a `retryable` report with budget and time left) stores the job at the
    /// default priority 0: the priority is lost on the way back to pending.
    RetryDropsPriority,
    /// A forgotten id enqueued anew takes its old place in the order of first enqueues (an
    /// ids table whose sequence number a forget keeps), not a place after every id enqueued
    /// before it (SPEC 3.15).
    ForgottenTakesOldPlace,
    /// A prune's tombstone records the default queue, not the job's (SPEC 1.7).
    TombstoneDefaultQueue,
    /// A prune removes an open job whose deadline is at or before `before`, as if it had
    /// ended there, though no reap has ended it: the job is gone without a status.
    PruneOpenPastDeadline,
    /// A prune removes every ended job, whenever it ended: `before` is ignored.
    PruneIgnoresBefore,
    /// A prune deletes ended jobs and leaves no tombstone: the id is free again at once.
    PruneWithoutTombstone,
    /// A tombstone keeps the digest of another payload (the empty one): a re-enqueue with the
    /// job's own payload is refused `conflict`.
    TombstoneOtherDigest,
    /// A forget removes every tombstone, whenever its job ended: `before` is ignored.
    ForgetIgnoresBefore,
    /// An enqueue of an existing id compares the payload alone, ignoring the kind: the same
    /// payload under another kind is `existing`, not `conflict` (SPEC 3.2, contract 1.4).
    KindIgnored,
    /// `stats` counts no tombstones (`pruned_done` and `pruned_dead` stay 0).
    StatsForgetsPruned,
    /// A `retryable` report of an attempt asked to stop ends the job `done`, as if the
    /// holder's stop had succeeded.
    StoppedAttemptDone,
    /// An expired lease with a cancel request is claimed again like any expired lease: the
    /// request is forgotten.
    ReclaimCancelling,
    /// A `retryable` report of an attempt asked to stop schedules a retry like any other: the
    /// request is forgotten and the job runs again.
    CancelledRetried,
    /// An enqueue of a pruned id looks only at the jobs: the id is stored as a new job beside
    /// its tombstone, and runs again.
    EnqueueRevivesPruned,
    /// A reap ends every job due to end, however many: `reap_limit` is ignored (SPEC 6.37).
    ReapIgnoresLimit,
    /// A reap ends at most `reap_limit − 1` jobs (`<` for `<=` on the count): with a limit of
    /// 1 it ends none, and jobs due to end stay open for good.
    ReapLimitOffByOne,
    /// A reap takes the jobs due to end in the order of first enqueues, not rule by rule by
    /// lease expiry and deadline (SPEC 3.3.1: one `ORDER BY seq`).
    ReapInEnqueueOrder,
    /// A reap takes the jobs due to end by deadline alone, whatever rule ends them: an
    /// exhausted lease waits behind a job past an earlier deadline (SPEC 3.3.1: rule 2 first).
    ReapByDeadlineAlone,
    /// A pick takes a job due to end that the reap left past its limit (SPEC 3.3.2): its
    /// `WHERE` trusts the reap to have ended them all.
    PickTakesDueToEnd,
    /// A reap that ended fewer than `reap_limit` jobs, but some, answers `reap_limit` as its
    /// count: a caller reaps again for nothing.
    ReapCountSaysLimit,
    /// A claim picks among a paused queue's jobs too: the pause is recorded and never read.
    ClaimIgnoresPause,
    /// A reap (a claim's or `reap`'s) leaves a paused queue's jobs alone, as if a pause stopped time.
    ReapSkipsPaused,
    /// `run_now` sets `available_at` to its `now` where the SPEC takes `min(available_at, now)`.
    RunNowMakesLater,
    /// `run_now` keeps the job's window: the deadline moves by as much as `available_at` does.
    RunNowMovesDeadline,
    /// `run_now` grants one more attempt, as if an operator's try were free.
    RunNowGivesAttempt,
    /// `run_now` of a leased job whose lease has expired makes it pending at `now`, where the SPEC refuses `not_pending`.
    RunNowTakesLeased,
    /// `run_now` of a pending job at or past its deadline answers `due`, where the SPEC refuses `deadline_passed`.
    RunNowPastDeadline,
    /// Pauses live in the process, not the store: a restart forgets them.
    PauseLostOnRestart,
    /// `stats`' `paused_queues` counts only paused names some job carries.
    StatsPausedCountsJobs,
    /// `resume` of one queue resumes every paused queue.
    ResumeResumesAll,
}

impl Bug {
    /// Every seeded bug, in the order `--list-bugs` shows them.
    pub const ALL: [Bug; 99] = [
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
        Bug::ClaimTieToNewest,
        Bug::ClaimFirstEnqueued,
        Bug::ClaimOnlyFirstJob,
        Bug::RoundDelay,
        Bug::ExactProductDelay,
        Bug::JitterBeforeCap,
        Bug::ShortLease,
        Bug::CompleteSkipsClockCheck,
        Bug::FenceIgnoresOwner,
        Bug::RestartForgetsConfig,
        Bug::RestartReleasesLeases,
        Bug::RedriveLiveJob,
        Bug::LookupBeforeValidation,
        Bug::ReapLiveLease,
        Bug::ReapDeadlineFirst,
        Bug::RunOnceIgnoresBackwardsClock,
        Bug::StatsStrictExpiry,
        Bug::DeadlineAtNowAccepted,
        Bug::HeartbeatPastDeadline,
        Bug::HeartbeatIgnoresAttempt,
        Bug::HeartbeatShrinksLease,
        Bug::ScheduledClaimableEarly,
        Bug::RetryIgnoresOwnBackoff,
        Bug::CancelLeasedJob,
        Bug::ConfigOmittedResets,
        Bug::HeartbeatLeaseAtClaim,
        Bug::OwnBackoffAllOrNothing,
        Bug::ClaimTieById,
        Bug::ClaimTieByEnqueuedAt,
        Bug::RestartSortsById,
        Bug::CancelFreshOnly,
        Bug::CancelResetsAttempts,
        Bug::RunOnceCompletesAtFirstReading,
        Bug::HeartbeatExpiryCapped,
        Bug::NotBeforeNowRefused,
        Bug::LongNameRefused,
        Bug::StatsOldestByFirstJob,
        Bug::HeartbeatRefusesExpired,
        Bug::ExistingReschedules,
        Bug::RedriveMovesNotBefore,
        Bug::ConflictOverwritesPayload,
        Bug::KindIgnored,
        Bug::ClaimReapsOnlyExhausted,
        Bug::NoWatchdog,
        Bug::MarginBelowSkew,
        Bug::WatchdogNotRenewed,
        Bug::WorkerRefusalNamesId,
        Bug::ReapAMillisecondEarly,
        Bug::RedriveRefusesLargestBudget,
        Bug::ExistingTakesNewBudget,
        Bug::DelayTiesUp,
        Bug::JitterCheckedOnlyOnRetry,
        Bug::ClaimIgnoresQueues,
        Bug::PriorityInverted,
        Bug::ClaimQueuesInTurn,
        Bug::ClaimHeadsByDueTime,
        Bug::ClaimTieByQueueOrder,
        Bug::QueueNameFolded,
        Bug::PriorityAges,
        Bug::RetryDropsPriority,
        Bug::ForgottenTakesOldPlace,
        Bug::TombstoneDefaultQueue,
        Bug::PruneOpenPastDeadline,
        Bug::PruneIgnoresBefore,
        Bug::PruneWithoutTombstone,
        Bug::TombstoneOtherDigest,
        Bug::ForgetIgnoresBefore,
        Bug::StatsForgetsPruned,
        Bug::StoppedAttemptDone,
        Bug::ReclaimCancelling,
        Bug::CancelledRetried,
        Bug::EnqueueRevivesPruned,
        Bug::ReapIgnoresLimit,
        Bug::ReapLimitOffByOne,
        Bug::ReapInEnqueueOrder,
        Bug::ReapByDeadlineAlone,
        Bug::PickTakesDueToEnd,
        Bug::ReapCountSaysLimit,
        Bug::ClaimIgnoresPause,
        Bug::ReapSkipsPaused,
        Bug::RunNowMakesLater,
        Bug::RunNowMovesDeadline,
        Bug::RunNowGivesAttempt,
        Bug::RunNowTakesLeased,
        Bug::RunNowPastDeadline,
        Bug::PauseLostOnRestart,
        Bug::StatsPausedCountsJobs,
        Bug::ResumeResumesAll,
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
            Bug::ClaimTieToNewest => "claim-tie-to-newest",
            Bug::ClaimFirstEnqueued => "claim-first-enqueued",
            Bug::ClaimOnlyFirstJob => "claim-only-first-job",
            Bug::RoundDelay => "round-delay",
            Bug::ExactProductDelay => "exact-product-delay",
            Bug::JitterBeforeCap => "jitter-before-cap",
            Bug::ShortLease => "short-lease",
            Bug::CompleteSkipsClockCheck => "complete-skips-clock-check",
            Bug::FenceIgnoresOwner => "fence-ignores-owner",
            Bug::RestartForgetsConfig => "restart-forgets-config",
            Bug::RestartReleasesLeases => "restart-releases-leases",
            Bug::RedriveLiveJob => "redrive-live-job",
            Bug::LookupBeforeValidation => "lookup-before-validation",
            Bug::ReapLiveLease => "reap-live-lease",
            Bug::ReapDeadlineFirst => "reap-deadline-first",
            Bug::RunOnceIgnoresBackwardsClock => "run-once-ignores-backwards-clock",
            Bug::StatsStrictExpiry => "stats-strict-expiry",
            Bug::DeadlineAtNowAccepted => "deadline-at-now-accepted",
            Bug::HeartbeatPastDeadline => "heartbeat-past-deadline",
            Bug::HeartbeatIgnoresAttempt => "heartbeat-ignores-attempt",
            Bug::HeartbeatShrinksLease => "heartbeat-shrinks-lease",
            Bug::ScheduledClaimableEarly => "scheduled-claimable-early",
            Bug::RetryIgnoresOwnBackoff => "retry-ignores-own-backoff",
            Bug::CancelLeasedJob => "cancel-leased-job",
            Bug::ConfigOmittedResets => "config-omitted-resets",
            Bug::HeartbeatLeaseAtClaim => "heartbeat-lease-at-claim",
            Bug::OwnBackoffAllOrNothing => "own-backoff-all-or-nothing",
            Bug::ClaimTieById => "claim-tie-by-id",
            Bug::ClaimTieByEnqueuedAt => "claim-tie-by-enqueued-at",
            Bug::RestartSortsById => "restart-sorts-by-id",
            Bug::CancelFreshOnly => "cancel-fresh-only",
            Bug::CancelResetsAttempts => "cancel-resets-attempts",
            Bug::RunOnceCompletesAtFirstReading => "run-once-completes-at-first-reading",
            Bug::HeartbeatExpiryCapped => "heartbeat-expiry-capped",
            Bug::NotBeforeNowRefused => "not-before-now-refused",
            Bug::LongNameRefused => "long-name-refused",
            Bug::StatsOldestByFirstJob => "stats-oldest-by-first-job",
            Bug::HeartbeatRefusesExpired => "heartbeat-refuses-expired",
            Bug::ExistingReschedules => "existing-reschedules",
            Bug::RedriveMovesNotBefore => "redrive-moves-not-before",
            Bug::ConflictOverwritesPayload => "conflict-overwrites-payload",
            Bug::KindIgnored => "kind-ignored",
            Bug::ClaimReapsOnlyExhausted => "claim-reaps-only-exhausted",
            Bug::NoWatchdog => "no-watchdog",
            Bug::MarginBelowSkew => "margin-below-skew",
            Bug::WatchdogNotRenewed => "watchdog-not-renewed",
            Bug::WorkerRefusalNamesId => "worker-refusal-names-id",
            Bug::ReapAMillisecondEarly => "reap-a-millisecond-early",
            Bug::RedriveRefusesLargestBudget => "redrive-refuses-largest-budget",
            Bug::ExistingTakesNewBudget => "existing-takes-new-budget",
            Bug::DelayTiesUp => "delay-ties-up",
            Bug::JitterCheckedOnlyOnRetry => "jitter-checked-only-on-retry",
            Bug::ClaimIgnoresQueues => "claim-ignores-queues",
            Bug::PriorityInverted => "priority-inverted",
            Bug::ClaimQueuesInTurn => "claim-queues-in-turn",
            Bug::ClaimHeadsByDueTime => "claim-heads-by-due-time",
            Bug::ClaimTieByQueueOrder => "claim-tie-by-queue-order",
            Bug::QueueNameFolded => "queue-name-folded",
            Bug::PriorityAges => "priority-ages",
            Bug::RetryDropsPriority => "retry-drops-priority",
            Bug::ForgottenTakesOldPlace => "forgotten-takes-old-place",
            Bug::TombstoneDefaultQueue => "tombstone-default-queue",
            Bug::PruneOpenPastDeadline => "prune-open-past-deadline",
            Bug::PruneIgnoresBefore => "prune-ignores-before",
            Bug::PruneWithoutTombstone => "prune-without-tombstone",
            Bug::TombstoneOtherDigest => "tombstone-other-digest",
            Bug::ForgetIgnoresBefore => "forget-ignores-before",
            Bug::StatsForgetsPruned => "stats-forgets-pruned",
            Bug::StoppedAttemptDone => "stopped-attempt-done",
            Bug::ReclaimCancelling => "reclaim-cancelling",
            Bug::CancelledRetried => "cancelled-retried",
            Bug::EnqueueRevivesPruned => "enqueue-revives-pruned",
            Bug::ReapIgnoresLimit => "reap-ignores-limit",
            Bug::ReapLimitOffByOne => "reap-limit-off-by-one",
            Bug::ReapInEnqueueOrder => "reap-in-enqueue-order",
            Bug::ReapByDeadlineAlone => "reap-by-deadline-alone",
            Bug::PickTakesDueToEnd => "pick-takes-due-to-end",
            Bug::ReapCountSaysLimit => "reap-count-says-limit",
            Bug::ClaimIgnoresPause => "claim-ignores-pause",
            Bug::ReapSkipsPaused => "reap-skips-paused",
            Bug::RunNowMakesLater => "run-now-makes-later",
            Bug::RunNowMovesDeadline => "run-now-moves-deadline",
            Bug::RunNowGivesAttempt => "run-now-gives-attempt",
            Bug::RunNowTakesLeased => "run-now-takes-leased",
            Bug::RunNowPastDeadline => "run-now-past-deadline",
            Bug::PauseLostOnRestart => "pause-lost-on-restart",
            Bug::StatsPausedCountsJobs => "stats-paused-counts-jobs",
            Bug::ResumeResumesAll => "resume-resumes-all",
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
            Bug::ClaimTieToNewest => "claim's tie-break goes to the newest job, not the first enqueued",
            Bug::ClaimFirstEnqueued => "claim takes the first enqueued claimable job, ignoring available_at",
            Bug::ClaimOnlyFirstJob => "claim only ever looks at the first job: the others starve",
            Bug::RoundDelay => "the delay rounds to nearest instead of flooring",
            Bug::ExactProductDelay => "the delay floors the exact product, not the binary64 one",
            Bug::JitterBeforeCap => "the cap applies after jitter instead of before",
            Bug::ShortLease => "a claim's lease is one millisecond short",
            Bug::CompleteSkipsClockCheck => "complete applies a completion dated before its claim",
            Bug::FenceIgnoresOwner => "the fence checks the attempt but not the owner",
            Bug::RestartForgetsConfig => "a restart forgets config and goes back to the defaults",
            Bug::RestartReleasesLeases => "a restart turns every lease back into a pending job",
            Bug::RedriveLiveJob => "redrive accepts a job that is not dead",
            Bug::LookupBeforeValidation => "complete answers not_found before checking its arguments",
            Bug::ReapLiveLease => "a reap kills a live lease past its deadline",
            Bug::ReapDeadlineFirst => "a reap says deadline where an exhausted lease is exhausted",
            Bug::RunOnceIgnoresBackwardsClock => "run_once records the outcome though the clock went back",
            Bug::StatsStrictExpiry => "stats counts a lease expired only after available_at (< for <=)",
            Bug::DeadlineAtNowAccepted => "enqueue accepts deadline == now (>= for >)",
            Bug::HeartbeatPastDeadline => "heartbeat extends a lease at or after the deadline",
            Bug::HeartbeatIgnoresAttempt => "heartbeat accepts a stale attempt of the same worker",
            Bug::HeartbeatShrinksLease => "heartbeat sets now + lease_ms without max: a lease can shrink",
            Bug::ScheduledClaimableEarly => "a scheduled job is claimable before its not_before",
            Bug::RetryIgnoresOwnBackoff => "a retry ignores the job's own base_ms and cap_ms",
            Bug::CancelLeasedJob => "cancel kills a leased job, cutting its attempt short",
            Bug::ConfigOmittedResets => "config resets the settings it omits to their defaults",
            Bug::HeartbeatLeaseAtClaim => {
                "heartbeat extends by the lease granted at the claim, not lease_ms now"
            }
            Bug::OwnBackoffAllOrNothing => "a job's own backoff applies only when it has both settings",
            Bug::ClaimTieById => "claim's tie-break goes to the smaller id",
            Bug::ClaimTieByEnqueuedAt => "claim's tie-break goes to the earlier enqueued_at",
            Bug::RestartSortsById => "a restart reloads jobs ordered by id, losing first-enqueue order",
            Bug::CancelFreshOnly => "cancel refuses a pending job that has had an attempt",
            Bug::CancelResetsAttempts => "cancel gives the spent attempts back",
            Bug::RunOnceCompletesAtFirstReading => {
                "run_once completes at its first clock reading, not its second"
            }
            Bug::HeartbeatExpiryCapped => "a heartbeat's expiry is capped at 2^53-1",
            Bug::NotBeforeNowRefused => "enqueue refuses not_before == now (<= for <)",
            Bug::LongNameRefused => "a name of 256 bytes is refused (>= for >)",
            Bug::StatsOldestByFirstJob => "stats' oldest age counts from the first enqueued open job",
            Bug::HeartbeatRefusesExpired => "a heartbeat of an expired, unreclaimed lease is refused",
            Bug::ExistingReschedules => "re-enqueueing an existing id with not_before reschedules it",
            Bug::RedriveMovesNotBefore => "a redrive moves not_before to its own now",
            Bug::ConflictOverwritesPayload => "an enqueue refused conflict stores its payload all the same",
            Bug::KindIgnored => "a re-enqueue compares the payload alone: another kind is existing",
            Bug::ClaimReapsOnlyExhausted => {
                "claim's reap skips deadline deaths: a job past its deadline is claimed"
            }
            Bug::NoWatchdog => "no watchdog: a stalled holder's attempt runs past its lease",
            Bug::MarginBelowSkew => "the watchdog's margin is below the holders' clock skew",
            Bug::WatchdogNotRenewed => "heartbeats do not renew the watchdog",
            Bug::WorkerRefusalNamesId => "a bad worker is refused with a detail naming id",
            Bug::ReapAMillisecondEarly => {
                "a reap ends a job by its deadline 1 ms early (now + 1 >= deadline)"
            }
            Bug::RedriveRefusesLargestBudget => {
                "a redrive to a budget of exactly 2^31 - 1 is refused (>= for >)"
            }
            Bug::ExistingTakesNewBudget => "re-enqueueing the same payload stores the new max_attempts",
            Bug::DelayTiesUp => "the delay's product rounds halfway cases up, not to even",
            Bug::JitterCheckedOnlyOnRetry => "a jitter outside [0, 1] is refused only for outcome retryable",
            Bug::ClaimIgnoresQueues => "a claim takes the first due job of any queue, not only its own",
            Bug::PriorityInverted => "a claim takes the largest priority first: 9 before 0",
            Bug::ClaimQueuesInTurn => "a claim takes from the first queue it names that has a due job",
            Bug::ClaimHeadsByDueTime => {
                "a claim takes each queue's best job, then the one due first: priority only within a queue"
            }
            Bug::ClaimTieByQueueOrder => "a claim breaks a tie by the order its queues list names them",
            Bug::QueueNameFolded => "a claim matches queue names without regard to case",
            Bug::PriorityAges => "a claim ages priority by one for each 2^30 ms a job has been due",
            Bug::RetryDropsPriority => "a retry stores the job at priority 0",
            Bug::ForgottenTakesOldPlace => "a forgotten id enqueued anew takes its old place in the order",
            Bug::TombstoneDefaultQueue => "a prune's tombstone records the default queue, not the job's",
            Bug::PruneOpenPastDeadline => {
                "a prune removes an open job past its deadline that no reap has ended"
            }
            Bug::PruneIgnoresBefore => "a prune removes every ended job, whenever it ended",
            Bug::PruneWithoutTombstone => "a prune leaves no tombstone: the id can be enqueued and run again",
            Bug::TombstoneOtherDigest => {
                "a tombstone keeps the digest of another payload: its own is refused conflict"
            }
            Bug::ForgetIgnoresBefore => "a forget removes every tombstone, whenever its job ended",
            Bug::StatsForgetsPruned => "stats counts no tombstones: pruned ids are accounted nowhere",
            Bug::StoppedAttemptDone => "a retryable report under a cancel request ends the job done",
            Bug::ReclaimCancelling => "an expired lease with a cancel request is claimed again",
            Bug::CancelledRetried => "a retryable report under a cancel request schedules a retry",
            Bug::EnqueueRevivesPruned => "an enqueue of a pruned id stores it as a new job: it runs again",
            Bug::ReapIgnoresLimit => "a reap ends every job due to end, past reap_limit",
            Bug::ReapLimitOffByOne => "a reap ends at most reap_limit - 1 jobs (< for <=)",
            Bug::ReapInEnqueueOrder => "a reap ends the jobs due to end in first-enqueue order",
            Bug::ReapByDeadlineAlone => "a reap orders the jobs due to end by deadline, not rule by rule",
            Bug::PickTakesDueToEnd => "a claim takes a job due to end that its reap left past the limit",
            Bug::ReapCountSaysLimit => "a reap that ended fewer than reap_limit answers reap_limit",
            Bug::ClaimIgnoresPause => "a claim takes a paused queue's jobs as any other",
            Bug::ReapSkipsPaused => "a reap passes over a paused queue's jobs: they outlive their deadline",
            Bug::RunNowMakesLater => "run_now sets available_at to now, making a job due earlier wait",
            Bug::RunNowMovesDeadline => {
                "run_now moves the deadline earlier by as much as it brings the job forward"
            }
            Bug::RunNowGivesAttempt => "run_now raises max_attempts by one, a fresh try",
            Bug::RunNowTakesLeased => "run_now makes an expired lease pending at now",
            Bug::RunNowPastDeadline => "run_now makes a pending job at or past its deadline due",
            Bug::PauseLostOnRestart => "a pause is kept in memory only: a restart resumes every queue",
            Bug::StatsPausedCountsJobs => "stats counts only the paused queues some job carries",
            Bug::ResumeResumesAll => "a resume of one queue resumes every paused queue",
        }
    }

    /// The bugs in SPEC 1.1's operations and fields: only a trace that uses them shows one.
    pub fn added_in_1_1(self) -> bool {
        matches!(
            self,
            Bug::HeartbeatPastDeadline
                | Bug::HeartbeatIgnoresAttempt
                | Bug::HeartbeatShrinksLease
                | Bug::ScheduledClaimableEarly
                | Bug::RetryIgnoresOwnBackoff
                | Bug::CancelLeasedJob
        )
    }

    /// The bugs of the watchdog beside an execution, not of the store: the store is the
    /// SPEC's, and the world's executions are wrong.
    pub fn in_the_watchdog(self) -> bool {
        matches!(self, Bug::NoWatchdog | Bug::MarginBelowSkew | Bug::WatchdogNotRenewed)
    }

    /// The bugs that only a second job shows: spilling over to it, passing it over, ordering
    /// the two.
    pub fn needs_two_jobs(self) -> bool {
        matches!(
            self,
            Bug::CountAttemptOnEveryJob
                | Bug::ClaimTieToNewest
                | Bug::ClaimFirstEnqueued
                | Bug::ClaimOnlyFirstJob
                | Bug::ClaimTieById
                | Bug::ClaimTieByEnqueuedAt
                | Bug::RestartSortsById
                | Bug::StatsOldestByFirstJob
        )
    }

    /// The bugs that only a backlog of jobs due to end shows: more of them than the reap's
    /// limit, of different rules and deadlines, and a job beside them in time (the backlog
    /// scene).
    pub fn needs_backlog(self) -> bool {
        matches!(
            self,
            Bug::ReapIgnoresLimit
                | Bug::ReapInEnqueueOrder
                | Bug::ReapByDeadlineAlone
                | Bug::PickTakesDueToEnd
        )
    }

    /// The bugs that only an enqueue dated back shows: a second job with an earlier
    /// `enqueued_at` than the first.
    pub fn needs_backdating(self) -> bool {
        matches!(self, Bug::ClaimTieByEnqueuedAt | Bug::StatsOldestByFirstJob)
    }

    /// The bugs that only jobs of two queues or two priorities show (the lanes scene).
    pub fn needs_lanes(self) -> bool {
        matches!(
            self,
            Bug::ClaimIgnoresQueues
                | Bug::PriorityInverted
                | Bug::ClaimQueuesInTurn
                | Bug::ClaimHeadsByDueTime
                | Bug::ClaimTieByQueueOrder
                | Bug::QueueNameFolded
                | Bug::PriorityAges
        )
    }

    /// The bugs that only prunes, forgets and cancels of running jobs show (the retention
    /// scene).
    pub fn needs_retention(self) -> bool {
        matches!(
            self,
            Bug::PruneOpenPastDeadline
                | Bug::PruneIgnoresBefore
                | Bug::PruneWithoutTombstone
                | Bug::TombstoneOtherDigest
                | Bug::ForgetIgnoresBefore
                | Bug::StatsForgetsPruned
                | Bug::StoppedAttemptDone
                | Bug::ReclaimCancelling
                | Bug::CancelledRetried
                | Bug::EnqueueRevivesPruned
                | Bug::RetryDropsPriority
                | Bug::TombstoneDefaultQueue
        )
    }

    /// The bugs that only a forgotten id enqueued anew after another job shows (the revival
    /// scene).
    pub fn needs_revival(self) -> bool {
        matches!(self, Bug::ForgottenTakesOldPlace)
    }

    /// The bugs that only the far end of the integer range shows.
    pub fn needs_range_edges(self) -> bool {
        matches!(self, Bug::HeartbeatExpiryCapped)
    }

    /// The bugs that only pauses and resumes of two queues show (the pauses scene).
    pub fn needs_pauses(self) -> bool {
        matches!(
            self,
            Bug::ClaimIgnoresPause
                | Bug::ReapSkipsPaused
                | Bug::PauseLostOnRestart
                | Bug::StatsPausedCountsJobs
                | Bug::ResumeResumesAll
        )
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
