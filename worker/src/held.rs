//! The lease of one attempt in flight, shared by the store thread, which renews it with
//! heartbeats (SPEC 3.12), and the attempt's [`Window`](crate::Window), which reads it at
//! every look.
//!
//! This is the whole cancellation signal from the store thread to a slot: the store thread
//! is the only writer, and a transport never sees a [`Held`] directly. An accepted heartbeat
//! moves the lease's ends, so the window stays open; a refused one marks the attempt
//! abandoned, and the window closes at the transport's next look (at most every
//! [`POLL`](crate::POLL)) with [`Cut::Abandoned`](crate::Cut::Abandoned) — the exec transport
//! then kills the command's process group exactly as at a timeout, the HTTP transport stops
//! waiting for its answer. A mutex rather than atomics: the two ends and the mark change
//! together, and are read a few times a second.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// One attempt's lease, as far as its worker knows it.
pub(crate) struct Held {
    state: Mutex<Ends>,
}

/// Where a lease ends, on both clocks, and whether the attempt was given up.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ends {
    /// The expiry the store granted last (`lease_until`), in wall-clock milliseconds.
    pub(crate) wall: u64,
    /// The same end on the monotonic clock: `span` after `anchor`. Kept as a pair rather
    /// than an instant, so that a lease of up to 2^53 − 1 ms never overflows an [`Instant`].
    pub(crate) anchor: Instant,
    /// See `anchor`.
    pub(crate) span: Duration,
    /// A heartbeat was refused: the lease is not this worker's any more.
    pub(crate) abandoned: bool,
}

impl Held {
    /// The lease a claim granted: `lease` on the monotonic clock from `turn`, an instant
    /// taken before the claim read the wall clock; until `lease_until` on the wall clock.
    pub(crate) fn new(turn: Instant, lease: Duration, lease_until: u64) -> Held {
        Held { state: Mutex::new(Ends { wall: lease_until, anchor: turn, span: lease, abandoned: false }) }
    }

    /// Where the lease ends now.
    pub(crate) fn ends(&self) -> Ends {
        *self.lock()
    }

    /// An accepted heartbeat, begun at `turn` (before it read the wall clock), set the
    /// expiry to `until` with a setting of `lease`.
    ///
    /// The wall-clock end becomes `until`. The monotonic end moves by exactly as much as the
    /// store moved the expiry, and never past `lease` after `turn`: a heartbeat under a wall
    /// clock that stands still or went back moves the stored expiry by nothing (it never
    /// shrinks), and must not lengthen the lease the monotonic clock keeps either.
    pub(crate) fn renew(&self, turn: Instant, lease: Duration, until: u64) {
        let mut ends = self.lock();
        let moved = Duration::from_millis(until.saturating_sub(ends.wall));
        let gone = turn.saturating_duration_since(ends.anchor);
        // Both ends counted from `turn`.
        let before = ends.span.saturating_sub(gone);
        let after = ends.span.saturating_add(moved).saturating_sub(gone).min(lease);
        ends.wall = ends.wall.max(until);
        ends.anchor = turn;
        ends.span = before.max(after);
    }

    /// A heartbeat was refused: the attempt is to stop, and its outcome is not recorded.
    pub(crate) fn abandon(&self) {
        self.lock().abandoned = true;
    }

    /// Whether a heartbeat was refused.
    pub(crate) fn abandoned(&self) -> bool {
        self.lock().abandoned
    }

    /// Nothing done under the lock can leave it half-written: a poisoned one is still good.
    fn lock(&self) -> MutexGuard<'_, Ends> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    /// The monotonic end, as a duration from `from`.
    fn left(held: &Held, from: Instant) -> Duration {
        let ends = held.ends();
        ends.span.saturating_sub(from.saturating_duration_since(ends.anchor))
    }

    #[test]
    fn a_heartbeat_moves_both_ends_by_what_the_store_granted() {
        let claim = Instant::now();
        let held = Held::new(claim, 3 * S, 10_000);
        // One second later by both clocks: the store moves the expiry by a second.
        let beat = claim + S;
        held.renew(beat, 3 * S, 11_000);
        assert_eq!(held.ends().wall, 11_000);
        assert_eq!(left(&held, beat), 3 * S);
    }

    #[test]
    fn a_wall_clock_standing_still_lengthens_nothing() {
        let claim = Instant::now();
        let held = Held::new(claim, 3 * S, 10_000);
        // A second later by the monotonic clock, none by the wall clock: the store kept its
        // expiry, and the monotonic end stays two seconds away.
        let beat = claim + S;
        held.renew(beat, 3 * S, 10_000);
        assert_eq!(left(&held, beat), 2 * S);
        assert_eq!(held.ends().wall, 10_000);
    }

    #[test]
    fn a_wall_clock_running_ahead_lengthens_by_one_lease_at_most() {
        let claim = Instant::now();
        let held = Held::new(claim, 3 * S, 10_000);
        let beat = claim + S;
        // The wall clock says 5 s went by: the store moved the expiry by 5 s. By the
        // monotonic clock the lease still ends no later than one lease after the heartbeat.
        held.renew(beat, 3 * S, 15_000);
        assert_eq!(left(&held, beat), 3 * S);
        assert_eq!(held.ends().wall, 15_000);
    }

    #[test]
    fn an_abandoned_lease_says_so() {
        let held = Held::new(Instant::now(), S, 1_000);
        assert!(!held.abandoned());
        held.abandon();
        assert!(held.abandoned() && held.ends().abandoned);
    }
}
