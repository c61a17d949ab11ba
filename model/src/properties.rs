//! The properties: SPEC section 4, each invariant its own named property; the transition
//! rules of sections 2 and 3, each its own property; and the examples that show none of them
//! holds vacuously.
//!
//! Layer: above the world ([`crate::model`]) and the checker's vocabulary ([`Kind`],
//! [`Property`]), which it uses; below the search that judges them ([`crate::search`]) and the
//! mapping from seeded bugs to the property that catches each ([`crate::catches`]). It may not
//! reach up: a property says what must hold of a world, whoever searches for it and whichever
//! bug is seeded.
//!
//! Each property is a predicate on one [`World`]. Invariants about transitions (attempts move
//! only with a claim, deadlines only with a redrive, claims only in time, completions by
//! anyone but the holder change nothing) read the world's ghost fields and the events of the
//! step into the state (see [`crate::model`]), which the model fills in from what each
//! operation answered, never from the store's own fields. The rule properties read
//! [`World::broken`]: the verdict of [`crate::rules`], the contract's second reading, on the
//! step into the state.
//!
//! # Progress (SPEC 4.8)
//!
//! Termination alone (4.7, below) holds for a store that never claims a job at all and lets
//! the reap end it by its deadline. Progress is what rules that out, and it is a property of
//! each claim, so it is checked like a safety property, on every step: a claim takes the
//! claimable job with the smallest `available_at`, ties to the first enqueue, and answers
//! `none` only when, after its reap, no job is claimable ([`PROGRESS`](names::PROGRESS), judged
//! by [`crate::rules`] with the first-enqueue order the world knows, not the store's).
//!
//! Why that is enough for "a due job with budget and time left is claimed": every claim takes
//! a job and spends one of its attempts, and the attempts a store can grant are finite (each
//! job's budget, plus what each redrive adds). While a job J is due and has budget and time, a
//! claim that does not take J takes a job due no later than J (or as early and enqueued
//! first), spending its budget. So only finitely many claims can pass J over; the next claim
//! after them takes J, unless J's deadline comes first, and then J ends dead(deadline) (4.7).
//! No job waits behind later-due jobs, and none waits forever.
//!
//! # Liveness (SPEC 4.7), made sound for a bounded model
//!
//! "With time advancing and a worker claiming, every job ends done or dead." Stateright's
//! `eventually` judges a path only where it ends in a state with no successors; a path that
//! reaches an already-visited state (a cycle, or just a join of two paths) or the depth limit
//! is not judged at all, so counterexamples are silently missed — and in this model every
//! state has successors (restart, reap) and most are joins. It is not used.
//!
//! Instead, the bounds make liveness a boundary invariant. Every deadline the model sets
//! (enqueue or redrive) leaves a whole lease before the horizon, and a claim only starts before
//! the deadline, so at the horizon every lease has expired and every deadline has passed. The
//! SPEC then leaves nothing open: reaps (claim's first step), repeated while each ends
//! `reap_limit` jobs (SPEC 3.7, 6.37), must move every pending or leased job to `dead`. So
//! [`EVERY_JOB_ENDS`](names::EVERY_JOB_ENDS) is checked on every reachable state whose clock is
//! at the horizon: run those reaps at the horizon on a copy of its store and require every job
//! `done` or `dead`. Ticks change nothing but the clock and are always
//! possible before the horizon, so every reachable state has such a successor: a store that
//! can keep a job open forever (the `ignore-expired-lease` bug) is caught on a finite path,
//! found by the same breadth-first search as every invariant, with nothing depending on how
//! paths end.

use crate::checker::{Kind, Property};
use crate::model::{Events, Ghost, HolderReport, QueueModel, World, job_index};
use crate::reference::{Job, Phase};
use crate::rules::Broken;
use crate::{DeadReason, Outcome};

/// A property of the queue model.
pub type Check = Property<QueueModel, World>;

/// The property names, as reports print them.
pub mod names {
    /// SPEC section 4.1, an invariant: checked in every reachable state.
    pub const ATTEMPTS_COUNT_CLAIMS: &str = "4.1 attempts count claims, never fall, never pass max_attempts";
    /// SPEC section 4.2, an invariant: checked in every reachable state.
    pub const DEADLINE_ONLY_BY_REDRIVE: &str = "4.2 a deadline changes only in a redrive";
    /// SPEC section 4.3, an invariant: checked in every reachable state.
    pub const NO_SILENT_DROP: &str = "4.3 no silent drop: every job stays, ends only by the rules";
    /// SPEC section 4.4, an invariant: checked in every reachable state.
    pub const CLAIMS_IN_TIME: &str = "4.4 claims only before the deadline and within budget";
    /// SPEC section 4.5, an invariant: checked in every reachable state.
    pub const ONE_LIVE_HOLDER: &str =
        "4.5 one unexpired lease holder; no one else's completion changes anything";
    /// SPEC section 4.6, an invariant: checked in every reachable state.
    pub const PENDING_BEFORE_DEADLINE: &str = "4.6 a pending job is due before its deadline";
    /// SPEC section 4.8, an invariant: checked in every reachable state.
    pub const PROGRESS: &str = "4.8 progress: a claim passes no claimable job over";
    /// SPEC section 4.9, an invariant: checked in every reachable state.
    pub const REFUSALS_CHANGE_NOTHING: &str = "4.9 a refused operation changes nothing";
    /// SPEC section 4.10, an invariant: checked in every reachable state.
    pub const RESTART_KEEPS_ALL: &str = "4.10 a restart changes nothing";
    /// SPEC 4.11: a heartbeat cannot hold a job past its deadline plus one lease.
    pub const LEASE_BOUND: &str = "4.11 a lease ends by its deadline - 1 + the longest lease_ms used";
    /// SPEC 4.12: a scheduled job waits for its `not_before`.
    pub const SCHEDULE_WAITS: &str = "4.12 no claim before not_before until a redrive or run_now";
    /// SPEC 4.15: a paused queue starts nothing until it is resumed.
    pub const PAUSED_STARTS_NOTHING: &str = "4.15 no claim takes a job of a paused queue";
    /// SPEC section 2, an invariant: every stored retry time is the formula's, to the bit.
    pub const DELAY_RULE: &str = "2 a retry waits exactly the formula's delay, in binary64";
    /// SPEC section 3.1, an invariant: every step that applies the operation
    /// answers and changes exactly what the rule says.
    pub const ARGUMENTS_FIRST: &str = "3.1 bad arguments are invalid_input, before any lookup";
    /// SPEC section 3.2, an invariant: every step that applies the operation
    /// answers and changes exactly what the rule says.
    pub const ENQUEUE_RULE: &str = "3.2 enqueue follows its rule";
    /// SPEC section 3.3, an invariant: every step that applies the operation
    /// answers and changes exactly what the rule says.
    pub const CLAIM_RULE: &str = "3.3 claim reaps, then leases for exactly lease_ms";
    /// SPEC section 3.4, an invariant: every step that applies the operation
    /// answers and changes exactly what the rule says.
    pub const COMPLETE_RULE: &str = "3.4 complete fences, checks the clock, then applies the outcome";
    /// SPEC section 3.5, an invariant: every step that applies the operation
    /// answers and changes exactly what the rule says.
    pub const RUN_ONCE_RULE: &str = "3.5 run_once is a claim, a clock check, then complete";
    /// SPEC section 3.6, an invariant: every step that applies the operation
    /// answers and changes exactly what the rule says.
    pub const REDRIVE_RULE: &str = "3.6 redrive follows its rule";
    /// SPEC section 3.12, an invariant: every heartbeat answers and changes exactly what
    /// the rule says.
    pub const HEARTBEAT_RULE: &str = "3.12 heartbeat fences, checks clock and deadline, never shrinks";
    /// SPEC section 3.13, an invariant: every cancel answers and changes exactly what the
    /// rule says.
    pub const CANCEL_RULE: &str = "3.13 cancel takes only pending jobs";
    /// SPEC section 3.7, an invariant: every step that applies the operation
    /// answers and changes exactly what the rule says.
    pub const REAP_RULE: &str = "3.7 reap ends exactly the due jobs out of budget or time";
    /// SPEC section 3.8, an invariant: every step that applies the operation
    /// answers and changes exactly what the rule says.
    pub const READS_RULE: &str = "3.8 stats and 3.9 get answer what is stored";
    /// SPEC section 3.11, an invariant: every step that applies the operation
    /// answers and changes exactly what the rule says.
    pub const CONFIG_RULE: &str = "3.11 config follows its rule";
    /// SPEC section 4.13, an invariant: a job with a cancel request is never claimed again nor
    /// pending again, and its attempts and deadline stay.
    pub const CANCEL_STOPS: &str = "4.13 a cancel request stops the job: never claimed again";
    /// SPEC section 4.14, an invariant: a tombstone's id names no job until a forget.
    pub const PRUNED_STAYS: &str = "4.14 a pruned id never runs again";
    /// SPEC 3.14 and 3.15, read by [`crate::rules`].
    pub const RETENTION_RULE: &str = "3.14 prune and 3.15 forget follow their rules";
    /// SPEC 3.16 and 3.17, an invariant: a pause or resume changes the paused queues alone.
    pub const PAUSE_RULE: &str = "3.16 pause and 3.17 resume change the paused queues alone";
    /// SPEC 3.18, an invariant: every run_now answers and changes exactly what the rule says.
    pub const RUN_NOW_RULE: &str = "3.18 run_now makes a pending job due, never later, nothing else";
    /// A `sometimes` property: a job made due by `run_now` is claimed before its
    /// `not_before` (SPEC 4.12's exception).
    pub const RUN_NOW_CLAIMED: &str = "a job made due by run_now is claimed before its not_before";
    /// SPEC section 4.7, a liveness property checked as an invariant at the horizon: there,
    /// one reap leaves no job pending or leased.
    pub const EVERY_JOB_ENDS: &str = "4.7 every job ends done or dead";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const EXACT_DEADLINE_DEATH: &str = "a retry landing exactly on the deadline dies by deadline";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const CRASH_ON_LAST_ATTEMPT: &str = "a crash on the last attempt ends dead(exhausted)";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const STALE_REJECTED: &str = "a stale completion is rejected after a reclaim";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const LATE_ACCEPTED: &str = "a late completion after lease expiry is accepted";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const REDRIVEN_DONE: &str = "a redriven job ends done";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const REDRIVE_AFTER_DEADLINE: &str = "a job dead by its deadline is redriven";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const TWO_REDRIVES: &str = "a job is redriven twice";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const CLOCK_BACK_REFUSED: &str = "a completion dated before its claim is refused";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const RUN_ONCE_CLOCK_BACK: &str = "run_once reports a clock that went back";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const WRONG_OWNER_REFUSED: &str = "the current token from the wrong worker is refused";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const CRASHED_RECLAIMED: &str = "a crashed holder's job is claimed again after its lease";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const RESTART_WITH_LEASE: &str = "a restart with a lease held";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const INVALID_BEFORE_LOOKUP: &str = "a bad argument for a missing job is invalid_input";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const BINARY64_EDGE: &str = "a retry where binary64 floors above exact arithmetic";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const CAP_BELOW_BASE_RETRY: &str = "a retry under a cap below the base";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const TIE_BROKEN: &str = "a claim breaks a tie by first enqueue";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const EARLIER_DUE_FIRST: &str = "a claim takes a later-enqueued job due earlier";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const HEARTBEAT_LAST_INSTANT: &str = "a heartbeat is accepted at deadline - 1";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const HEARTBEAT_AT_DEADLINE_REFUSED: &str = "a heartbeat at the deadline is refused";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const STALE_HEARTBEAT_REFUSED: &str = "a heartbeat with a stale token is refused";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const SCHEDULED_ON_TIME: &str = "a scheduled job is first claimed at exactly not_before";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const OWN_BACKOFF_RETRY: &str = "a retry under the job's own backoff, not the queue's";
    /// A `sometimes` property: a state where this happened must be reachable, or the bounds
    /// are too small to test the rule behind it (the report warns of vacuity).
    pub const CANCELLED_REDRIVEN_DONE: &str = "a cancelled job is redriven and ends done";
    /// SPEC 5.3 as a table ([`crate::contract`]): every step's operation, the status of each job
    /// it met and its answer form a cell the contract allows.
    pub const ANSWER_IN_TABLE: &str = "5.3 every answer is one the table allows for the job's status";
    /// The execution of attempts (docs/model.md, "Execution"): the watchdog beside each attempt
    /// ends it by the lease's end, so no two attempts of a job ever run at once.
    pub const EXECUTIONS_APART: &str = "at most one execution of a job is live at any moment";
    /// The watchdog follows the lease as heartbeats renew it: it never ends an attempt whose
    /// lease, on the holder's clock, has more than the margin left.
    pub const WATCHDOG_NOT_EARLY: &str = "the watchdog never cuts an attempt with more than the margin left";
    /// A `sometimes` property: a stalled holder's attempt ended by its watchdog, the job
    /// claimed again.
    pub const WATCHDOG_CUT_RECLAIMED: &str =
        "a stalled holder's attempt is cut by its watchdog, then reclaimed";
    /// A `sometimes` property: a tie broken where `enqueued_at` and first enqueue disagree.
    pub const BACKDATED_TIE: &str = "a claim breaks a tie by first enqueue, not enqueued_at";
    /// A `sometimes` property: a retry under settings switched since the enqueue.
    pub const SWITCHED_SETTINGS_RETRY: &str =
        "a retry uses the settings in effect, switched since the enqueue";
    /// A `sometimes` property: a lease whose expiry passes 2^53 - 1 (SPEC 6.10).
    pub const LEASE_PAST_MAX_INT: &str = "a lease ends past 2^53 - 1";
    /// A `sometimes` property: a low-priority job waits while a higher one due no later goes
    /// first (SPEC 3.3.2, 4.8).
    pub const PRIORITY_FIRST: &str = "a low-priority job waits while a higher one goes first";
    /// A `sometimes` property: a claim passes over a job of a queue it does not serve.
    pub const QUEUE_PASSED_OVER: &str = "a claim takes a job, passing over a queue it does not serve";
    /// A `sometimes` property: a running job is cancelled and ends by its holder's report or
    /// its lease (SPEC 3.13).
    pub const RUNNING_CANCELLED: &str = "a running job is cancelled and ends";
    /// A `sometimes` property: a pruned id is enqueued again and answered from its tombstone.
    pub const PRUNED_REENQUEUED: &str = "a pruned id is enqueued again: existing, not run";
    /// A `sometimes` property: a forgotten id is enqueued anew, as a new job (SPEC 3.15).
    pub const FORGOTTEN_ENQUEUED: &str = "a forgotten id is enqueued anew";
    /// SPEC 6.37 and 6.27, an invariant: a reap (a claim's, `run_once`'s or `reap`'s) ends at
    /// most `reap_limit` jobs, and when it ends fewer it leaves none due to end: after a claim
    /// whose reap did not reach the limit, `stats` shows open no job time has ended.
    pub const REAP_BOUNDED: &str =
        "6.37 a reap ends at most reap_limit jobs, and all that are due when fewer";
    /// A `sometimes` property: a reap ends `reap_limit` jobs and leaves one due to end.
    pub const REAP_STOPPED_AT_LIMIT: &str = "a reap stops at its limit, leaving a job due to end";
    /// A `sometimes` property: a claim takes a job, passing over one of its queues due to end
    /// that its reap left (SPEC 3.3.2).
    pub const PICK_PASSED_DUE: &str = "a claim passes over a job due to end that its reap left";
    /// A `sometimes` property: a job whose id was forgotten lives again — enqueued anew,
    /// redriven — and is pruned again (SPEC 3.14, 3.15).
    pub const LIVED_AGAIN: &str = "a forgotten id lives again: enqueued anew, redriven, pruned again";
}

/// Every property, in report order.
pub fn all() -> Vec<Check> {
    use Kind::*;
    use names::*;
    vec![
        Check { name: ATTEMPTS_COUNT_CLAIMS, kind: Always, holds: attempts_count_claims },
        Check { name: DEADLINE_ONLY_BY_REDRIVE, kind: Always, holds: deadline_only_by_redrive },
        Check { name: NO_SILENT_DROP, kind: Always, holds: no_silent_drop },
        Check { name: CLAIMS_IN_TIME, kind: Always, holds: claims_in_time },
        Check { name: ONE_LIVE_HOLDER, kind: Always, holds: one_live_holder },
        Check { name: PENDING_BEFORE_DEADLINE, kind: Always, holds: pending_before_deadline },
        Check { name: PROGRESS, kind: Always, holds: |_, w| !w.broken.contains(Broken::PROGRESS) },
        Check { name: REFUSALS_CHANGE_NOTHING, kind: Always, holds: refusals_change_nothing },
        Check { name: RESTART_KEEPS_ALL, kind: Always, holds: |_, w| !w.broken.contains(Broken::RESTART) },
        Check { name: LEASE_BOUND, kind: Always, holds: lease_bound },
        Check { name: SCHEDULE_WAITS, kind: Always, holds: |_, w| !w.events.contains(Events::EARLY_CLAIM) },
        Check { name: CANCEL_STOPS, kind: Always, holds: |_, w| !w.events.contains(Events::CANCEL_IGNORED) },
        Check {
            name: PRUNED_STAYS,
            kind: Always,
            holds: |_, w| !w.events.contains(Events::TOMBSTONE_REVIVED),
        },
        Check { name: DELAY_RULE, kind: Always, holds: |_, w| !w.broken.contains(Broken::DELAY) },
        Check { name: ARGUMENTS_FIRST, kind: Always, holds: |_, w| !w.broken.contains(Broken::ARGUMENTS) },
        Check { name: ENQUEUE_RULE, kind: Always, holds: |_, w| !w.broken.contains(Broken::ENQUEUE) },
        Check { name: CLAIM_RULE, kind: Always, holds: |_, w| !w.broken.contains(Broken::CLAIM) },
        Check { name: COMPLETE_RULE, kind: Always, holds: |_, w| !w.broken.contains(Broken::COMPLETE) },
        Check { name: RUN_ONCE_RULE, kind: Always, holds: |_, w| !w.broken.contains(Broken::RUN_ONCE) },
        Check { name: REDRIVE_RULE, kind: Always, holds: |_, w| !w.broken.contains(Broken::REDRIVE) },
        Check { name: HEARTBEAT_RULE, kind: Always, holds: |_, w| !w.broken.contains(Broken::HEARTBEAT) },
        Check { name: CANCEL_RULE, kind: Always, holds: |_, w| !w.broken.contains(Broken::CANCEL) },
        Check { name: REAP_RULE, kind: Always, holds: |_, w| !w.broken.contains(Broken::REAP) },
        Check { name: READS_RULE, kind: Always, holds: |_, w| !w.broken.contains(Broken::READS) },
        Check { name: CONFIG_RULE, kind: Always, holds: |_, w| !w.broken.contains(Broken::CONFIG) },
        Check { name: RETENTION_RULE, kind: Always, holds: |_, w| !w.broken.contains(Broken::RETENTION) },
        Check { name: PAUSE_RULE, kind: Always, holds: |_, w| !w.broken.contains(Broken::PAUSE) },
        Check { name: RUN_NOW_RULE, kind: Always, holds: |_, w| !w.broken.contains(Broken::RUN_NOW) },
        Check {
            name: PAUSED_STARTS_NOTHING,
            kind: Always,
            holds: |_, w| !w.events.contains(Events::PAUSED_CLAIMED),
        },
        Check { name: REAP_BOUNDED, kind: Always, holds: |_, w| !w.events.contains(Events::REAP_UNBOUNDED) },
        Check { name: ANSWER_IN_TABLE, kind: Always, holds: |_, w| !w.reached.outside },
        Check { name: EXECUTIONS_APART, kind: Always, holds: executions_apart },
        Check { name: WATCHDOG_NOT_EARLY, kind: Always, holds: watchdog_not_early },
        Check { name: EVERY_JOB_ENDS, kind: Liveness, holds: every_job_ends },
        Check {
            name: EXACT_DEADLINE_DEATH,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::EXACT_DEADLINE_DEATH),
        },
        Check { name: CRASH_ON_LAST_ATTEMPT, kind: Sometimes, holds: crash_on_last_attempt },
        Check {
            name: STALE_REJECTED,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::STALE_REJECTED),
        },
        Check {
            name: LATE_ACCEPTED,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::LATE_ACCEPTED),
        },
        Check { name: REDRIVEN_DONE, kind: Sometimes, holds: redriven_done },
        Check {
            name: REDRIVE_AFTER_DEADLINE,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::REDRIVE_AFTER_DEADLINE),
        },
        Check {
            name: TWO_REDRIVES,
            kind: Sometimes,
            holds: |_, w| w.store.jobs().iter().any(|j| j.redrives >= 2),
        },
        Check {
            name: CLOCK_BACK_REFUSED,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::CLOCK_BACK_REFUSED),
        },
        Check {
            name: RUN_ONCE_CLOCK_BACK,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::RUN_ONCE_CLOCK_BACK),
        },
        Check {
            name: WRONG_OWNER_REFUSED,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::WRONG_OWNER_REFUSED),
        },
        Check {
            name: CRASHED_RECLAIMED,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::CRASHED_RECLAIMED),
        },
        Check {
            name: RESTART_WITH_LEASE,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::RESTART_WITH_LEASE),
        },
        Check {
            name: INVALID_BEFORE_LOOKUP,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::INVALID_BEFORE_LOOKUP),
        },
        Check {
            name: BINARY64_EDGE,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::BINARY64_EDGE),
        },
        Check {
            name: CAP_BELOW_BASE_RETRY,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::CAP_BELOW_BASE_RETRY),
        },
        Check { name: TIE_BROKEN, kind: Sometimes, holds: |_, w| w.events.contains(Events::TIE_BROKEN) },
        Check {
            name: EARLIER_DUE_FIRST,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::EARLIER_DUE_FIRST),
        },
        Check {
            name: HEARTBEAT_LAST_INSTANT,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::HEARTBEAT_LAST_INSTANT),
        },
        Check {
            name: HEARTBEAT_AT_DEADLINE_REFUSED,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::HEARTBEAT_AT_DEADLINE_REFUSED),
        },
        Check {
            name: STALE_HEARTBEAT_REFUSED,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::STALE_HEARTBEAT_REFUSED),
        },
        Check {
            name: SCHEDULED_ON_TIME,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::SCHEDULED_ON_TIME),
        },
        Check {
            name: OWN_BACKOFF_RETRY,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::OWN_BACKOFF_RETRY),
        },
        Check { name: CANCELLED_REDRIVEN_DONE, kind: Sometimes, holds: cancelled_redriven_done },
        Check {
            name: WATCHDOG_CUT_RECLAIMED,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::WATCHDOG_CUT_RECLAIMED),
        },
        Check {
            name: BACKDATED_TIE,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::BACKDATED_TIE),
        },
        Check {
            name: SWITCHED_SETTINGS_RETRY,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::SWITCHED_SETTINGS_RETRY),
        },
        Check {
            name: LEASE_PAST_MAX_INT,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::LEASE_PAST_MAX_INT),
        },
        Check {
            name: PRIORITY_FIRST,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::PRIORITY_FIRST),
        },
        Check {
            name: QUEUE_PASSED_OVER,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::QUEUE_PASSED_OVER),
        },
        Check {
            name: RUNNING_CANCELLED,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::RUNNING_CANCELLED),
        },
        Check {
            name: PRUNED_REENQUEUED,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::PRUNED_REENQUEUED),
        },
        Check {
            name: FORGOTTEN_ENQUEUED,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::FORGOTTEN_ENQUEUED),
        },
        Check {
            name: REAP_STOPPED_AT_LIMIT,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::REAP_STOPPED_AT_LIMIT),
        },
        Check {
            name: PICK_PASSED_DUE,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::PICK_PASSED_DUE),
        },
        Check { name: LIVED_AGAIN, kind: Sometimes, holds: |_, w| w.events.contains(Events::LIVED_AGAIN) },
        Check {
            name: RUN_NOW_CLAIMED,
            kind: Sometimes,
            holds: |_, w| w.events.contains(Events::RUN_NOW_CLAIMED),
        },
    ]
}

/// The property called `name`.
pub fn by_name(name: &str) -> Option<Check> {
    all().into_iter().find(|p| p.name == name)
}

/// Each stored job with its ghost fields (a job the store lost has none to pair with).
fn jobs_with_ghosts(world: &World) -> impl Iterator<Item = (&Job, &Ghost)> {
    world
        .store
        .jobs()
        .iter()
        .filter_map(|job| job_index(&job.id).and_then(|i| world.ghosts.get(i)).map(|ghost| (job, ghost)))
}

/// SPEC 4.1: `attempts` equals the number of claims of that job the store answered. The
/// claim count only ever grows, so this also says attempts never decrease and never move
/// without a claim of that very job; and never exceed `max_attempts`.
fn attempts_count_claims(_: &QueueModel, world: &World) -> bool {
    jobs_with_ghosts(world)
        .all(|(job, ghost)| job.attempts == ghost.claims && job.attempts <= job.max_attempts)
}

/// SPEC 4.2: the deadline is the one its caller last set, at the enqueue or at a redrive the
/// store accepted (and counted).
fn deadline_only_by_redrive(_: &QueueModel, world: &World) -> bool {
    jobs_with_ghosts(world)
        .all(|(job, ghost)| job.deadline == ghost.deadline && job.redrives == ghost.redrives)
}

/// SPEC 4.3: every enqueued id is in the store exactly once (one status, and a dead job's
/// reason, are what [`Phase`] can express); a job is `done` only after its holder reported
/// `ok`, dead(permanent) only after `permanent`, dead(exhausted) only out of budget; and the
/// step into this world moved no job between statuses by anything but the SPEC's mechanisms
/// ([`Broken::LIFECYCLE`]: dead(deadline) only when due at the deadline or when `now + delay`
/// reaches it, out of `dead` only by a redrive, out of an expired lease only by a reclaim, a
/// completion or a reap).
fn no_silent_drop(_: &QueueModel, world: &World) -> bool {
    if world.broken.contains(Broken::LIFECYCLE) {
        return false;
    }
    // Every enqueued id is a job, or a tombstone, once (SPEC 4.3); or forgotten by a forget
    // (and then absent, or a new job).
    let ids = world.store.jobs().iter().map(|j| &j.id).chain(world.store.tombstones().iter().map(|t| &t.id));
    let mut seen = vec![false; world.ghosts.len()];
    for id in ids {
        match job_index(id) {
            Some(i) if i < seen.len() && !seen[i] => seen[i] = true,
            // A probe's job outside the world's naming: no ghost follows it.
            None => {}
            _ => return false,
        }
    }
    seen.iter().zip(&world.ghosts).all(|(&s, ghost)| s || ghost.forgotten)
        && jobs_with_ghosts(world).all(|(job, ghost)| match job.phase {
            Phase::Done => ghost.report == HolderReport::Completed(Outcome::Ok),
            Phase::Dead(DeadReason::Permanent) => ghost.report == HolderReport::Completed(Outcome::Permanent),
            Phase::Dead(DeadReason::Exhausted) => job.attempts >= job.max_attempts,
            _ => true,
        })
}

/// SPEC 4.4: the step into this world claimed nothing at or after the caller's deadline, nor
/// with `attempts` ≥ `max_attempts`.
fn claims_in_time(_: &QueueModel, world: &World) -> bool {
    !world.events.contains(Events::LATE_CLAIM)
}

/// SPEC 4.5: at most one worker holds an unexpired lease on a job; the step into this world
/// claimed no job whose latest lease was live (its holder crashed or not); and it was not a
/// completion by anyone but the holder (a stale token, or the current token from another
/// worker) that changed the store.
fn one_live_holder(_: &QueueModel, world: &World) -> bool {
    if world.events.contains(Events::LEASE_STOLEN) {
        return false;
    }
    let live = |job: usize| {
        world.workers.iter().flatten().filter(|held| held.job == job && held.lease_until > world.now).count()
    };
    (0..world.ghosts.len()).all(|job| live(job) <= 1) && !world.events.contains(Events::STALE_CHANGED)
}

/// SPEC 4.6: a pending job has `available_at` < `deadline`.
fn pending_before_deadline(_: &QueueModel, world: &World) -> bool {
    world.store.jobs().iter().all(|job| match job.phase {
        Phase::Pending { available_at } => available_at < job.deadline,
        _ => true,
    })
}

/// SPEC 4.11: a leased job's expiry is at most `deadline − 1 + L`, `L` the longest `lease_ms`
/// in effect at its claim or an accepted heartbeat, with the deadline its caller set. Claims
/// and heartbeats happen strictly before the deadline, so no lease outlives it by more than
/// one lease, however often its holder heartbeats.
fn lease_bound(_: &QueueModel, world: &World) -> bool {
    jobs_with_ghosts(world).all(|(job, ghost)| match job.phase {
        Phase::Leased { until, .. } => until < ghost.deadline + ghost.longest_lease,
        _ => true,
    })
}

/// SPEC section 3: every operation either fully applies or changes nothing.
fn refusals_change_nothing(_: &QueueModel, world: &World) -> bool {
    !world.events.contains(Events::REFUSAL_CHANGED)
}

/// SPEC 4.7 as a boundary invariant (see the module doc): at the horizon, reaps repeated until
/// one ends fewer than `reap_limit` (SPEC 3.7, 6.37) leave no job pending or leased.
fn every_job_ends(model: &QueueModel, world: &World) -> bool {
    let scene = model.scene(world);
    if !scene.liveness || world.now < scene.end() {
        return true;
    }
    // Every deadline has passed and every lease has expired by `at`: the horizon, unless a
    // probe set a deadline beyond it (a probe's world is judged, not explored further).
    let at = world
        .store
        .jobs()
        .iter()
        .fold(world.now, |at, job| at.max(job.deadline).max(job.phase.available_at().unwrap_or(0)));
    let mut store = world.store.clone();
    crate::model::reap_until_short(&mut store, at.min(crate::MAX_INT));
    store.jobs().iter().all(|job| matches!(job.phase, Phase::Done | Phase::Dead(_)))
}

/// The execution of attempts: for each job, at most one worker's attempt is running (its
/// watchdog has not ended it, it has not completed, its holder has not died).
fn executions_apart(_: &QueueModel, world: &World) -> bool {
    (0..world.ghosts.len()).all(|job| {
        world.workers.iter().flatten().filter(|held| held.job == job && held.running(world.now)).count() <= 1
    })
}

/// A watchdog that ended an attempt did so with at most `margin` of the lease left on the
/// holder's clock (which lags the store's by up to `skew`): `lease_until − (fired − skew) ≤
/// margin`, the lease as its last accepted heartbeat left it.
fn watchdog_not_early(model: &QueueModel, world: &World) -> bool {
    let watchdog = model.bounds.watchdog;
    world
        .workers
        .iter()
        .flatten()
        // An execution its holder stopped at a `cancelled` heartbeat is no watchdog's cut.
        .filter(|held| !held.running(world.now) && !held.stopped)
        .all(|held| held.lease_until + watchdog.skew <= held.runs_until.saturating_add(watchdog.margin))
}

fn crash_on_last_attempt(_: &QueueModel, world: &World) -> bool {
    jobs_with_ghosts(world).any(|(job, ghost)| {
        job.phase == Phase::Dead(DeadReason::Exhausted) && ghost.report == HolderReport::Crashed
    })
}

fn cancelled_redriven_done(_: &QueueModel, world: &World) -> bool {
    jobs_with_ghosts(world).any(|(job, ghost)| job.phase == Phase::Done && ghost.cancelled)
}

fn redriven_done(_: &QueueModel, world: &World) -> bool {
    world.store.jobs().iter().any(|job| job.phase == Phase::Done && job.redrives >= 1)
}
