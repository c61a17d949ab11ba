//! The turn: one transaction-scoped advisory lock that claims and reaps take alone and every
//! write that can make a job due takes shared, so that no such write commits while a claim or
//! a reap decides.
//!
//! # Why claims and reaps take it alone
//!
//! SPEC 3.3.2 says a claim takes the claimable job with the smallest `available_at` (ties to
//! the first enqueued), and SPEC 3.10 that concurrent operations are linearizable: one order,
//! consistent with real time, explains every answer. A claim that stepped over rows other
//! transactions hold (`FOR UPDATE SKIP LOCKED`, what most PostgreSQL queues do) answers
//! before those transactions commit, and the order that would explain it — the holders
//! first — can contradict real time: a claim answers `none`, returns, and a read that starts
//! afterwards still sees the jobs it stepped over pending (the linearizability check finds
//! this in a fifth of its runs; `docs/linearizability.md`). So claims and reaps take turns.
//!
//! # Why a write that can make a job due takes it shared
//!
//! Under READ COMMITTED a claim or a reap decides on its statement's snapshot and commits a
//! round trip later. Say a write to another row commits in between. The claim did not see
//! it, and a read that begins after the write returned and before the claim commits sees the
//! write and not the claim: the write comes before that read, which comes before the claim.
//! That order explains the claim's answer only if the claim would have answered the same
//! after the write. It would not when the write made a job due, or due sooner, or past its
//! deadline while pending — an enqueue, a retry, a redrive: the job might have been the one
//! to claim, or to reap. No order explains the answers then (the linearizability check found
//! it: a reap that did not see a redrive committed while it ran, and a cancel begun after the
//! redrive returned that saw the reaped job still leased; about one history in 3,100). So
//! those writes hold the turn shared from before they touch a row until they commit: they
//! run side by side with each other and never commit between a claim's snapshot and its
//! commit.
//!
//! # Why the other writes do not take it
//!
//! A write that can only take a job out of what is due, or make it due later — an `ok` or
//! `permanent` completion, a heartbeat, a note, a cancel of a pending job — leaves a claim's
//! answer as it was
//! unless the claim wanted that very job, and then the claim locks the row and waits for it
//! (`claim.rs`; a reap's `UPDATE` does the same). So a claim that did not see such a write
//! answers as it would after it, and the write can be ordered first; these writes run beside
//! claims, which keeps completions, heartbeats and claims overlapping.
//!
//! # Why prune and forget take a turn of their own
//!
//! A prune decides which jobs have ended on its statement's snapshot and commits later. A
//! write that ends a job (a completion, a cancel, a reap) or takes one out of its end (a
//! redrive) and commits in between is not seen by it, and a read that begins after that
//! write returned and before the prune commits sees the write and not the prune: the same
//! shape as above, with a job's end in place of its being due. The linearizability check
//! found it with a forget between them: a cancel ended a job, a forget begun after the cancel
//! returned did not see the tombstone of another job the prune was writing, and the prune,
//! whose snapshot predated the cancel, left the cancelled job standing — no order explains
//! the three answers (one history in fifty on PostgreSQL). So there is a second key, the
//! retention's: prune and forget take it alone, and every write that can end a job or take
//! one out of its end takes it shared, after the claims' turn and before its first row. What
//! a prune decides is then what is committed when it commits, and a forget never runs beside
//! a prune. Enqueues, heartbeats and notes end no job and take no part.
//!
//! # Why it never deadlocks
//!
//! Locks are always taken turn first, rows after: a transaction that waits for the turn holds
//! no row, so a wait for the turn closes no cycle. The retention's key comes after the
//! claims' turn and before any row; a prune or a forget takes no claims' turn, and once it
//! holds its key no one else holds a row it wants (every row of an ended job is locked only
//! by a write that holds the key shared). A claim waiting for the turn is served
//! before writes that ask after it (PostgreSQL queues a request behind a conflicting waiter),
//! so a stream of enqueues cannot starve claims.

/// The turn's key: the creation lock's (`APPLICATION_ID`) plus one, so that the two never
/// meet, written out so that the single-statement writes can name it in their SQL (a test
/// pins it to `APPLICATION_ID + 1`).
macro_rules! key {
    () => {
        "1381257810"
    };
}
pub(super) use key;

/// The retention's key: the turn's plus one (a test pins it to `APPLICATION_ID + 2`).
macro_rules! retention_key {
    () => {
        "1381257811"
    };
}
pub(super) use retention_key;

/// A claim's or a reap's turn, alone, and the retention's shared (a reap ends jobs); held to
/// the end of the transaction.
pub(super) const ALONE: &str = concat!(
    "SELECT pg_advisory_xact_lock(",
    key!(),
    "), pg_advisory_xact_lock_shared(",
    retention_key!(),
    ")"
);

/// The turn of a write that can make a job due, shared with the others, and the
/// retention's shared (a retry may end its job, a redrive takes one out of its end); held to
/// the end of the transaction.
pub(super) const SHARED: &str = concat!(
    "SELECT pg_advisory_xact_lock_shared(",
    key!(),
    "), pg_advisory_xact_lock_shared(",
    retention_key!(),
    ")"
);

/// A write that ends a job beside claims (an `ok` or `permanent` completion): the
/// retention's key, shared.
pub(super) const ENDING: &str = concat!("SELECT pg_advisory_xact_lock_shared(", retention_key!(), ")");

/// Prune and forget: the retention's key, alone.
pub(super) const RETAIN: &str = concat!("SELECT pg_advisory_xact_lock(", retention_key!(), ")");

/// Which turn a write transaction takes before its first row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Turn {
    /// Claims and reaps: no write that can make a job due commits while they decide.
    Alone,
    /// Writes that can make a job due, or due sooner (enqueue, a retryable completion,
    /// redrive), or change what a reap does to it (a cancel, whose request makes an expired
    /// lease end `cancelled` rather than be claimed again): side by side with each other,
    /// never inside a claim's turn.
    Shared,
    /// Writes that can only take a job out of what is due or make it due later, and end it:
    /// an `ok` or `permanent` completion. Beside claims, in no prune.
    Ending,
    /// Writes that change no job's end and make none due (heartbeat, note): no turn.
    Beside,
    /// Prune and forget, which touch only ended jobs and tombstones but must decide on what
    /// is committed when they commit: beside claims, alone with every write that ends a job.
    Retention,
}

impl Turn {
    /// The statement that waits for this turn; it is held until the transaction ends. `None`
    /// for [`Turn::Beside`].
    pub(super) fn statement(self) -> Option<&'static str> {
        match self {
            Turn::Alone => Some(ALONE),
            Turn::Shared => Some(SHARED),
            Turn::Ending => Some(ENDING),
            Turn::Beside => None,
            Turn::Retention => Some(RETAIN),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_turn_is_the_creation_lock_plus_one() {
        assert_eq!(key!().parse::<i64>(), Ok(crate::ddl::APPLICATION_ID + 1));
        assert_eq!(retention_key!().parse::<i64>(), Ok(crate::ddl::APPLICATION_ID + 2));
    }
}
