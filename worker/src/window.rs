//! The time an attempt may take: its timeout, and what is left of the lease it runs under,
//! read on both clocks.
//!
//! The lease argument (docs/operating.md, "The worker's lease argument"). A claim at wall
//! time `t` leases the job until `lease_until = t + lease`, and any worker whose wall clock
//! reads `lease_until` may claim it again. Everything this worker does for the attempt must
//! therefore be over by then: running it (the timeout), waiting for what the transport
//! waits for once it stops (its [`grace`](crate::Transport::grace): the command's exit and
//! the end of its standard error), and reading the clock and committing the outcome (the
//! [`MARGIN`]). The attempt is held to the earliest of three ends:
//!
//! - its timeout (cut to the job's deadline), on the monotonic clock;
//! - `lease − grace − margin` after an instant taken *before* the claim read the wall clock,
//!   on the monotonic clock: time the claim spent waiting for the database's lock is
//!   charged, and no step of the wall clock can lengthen it;
//! - `lease_until − grace − margin` on the wall clock, re-read every [`POLL`]: a forward
//!   step of the wall clock shortens the lease for every other worker at once, so the
//!   holder must see it too.
//!
//! The worker refuses a configuration where `timeout + grace + margin` exceeds the lease
//! (`Config::validate`), so that only a misbehaving clock or a slow claim ends an attempt
//! before its timeout.

use std::fmt;
use std::time::{Duration, Instant};

use crate::clock::Clock;

/// What the worker keeps of every lease for itself after the transport returns: reading
/// the clock, taking the database's lock and committing the outcome, while a busy machine
/// schedules it late. Another worker can claim the job only once the lease is over, so an
/// outcome committed inside it is never overtaken by a second run.
pub const MARGIN: Duration = Duration::from_millis(500);

/// How often a running attempt re-reads the wall clock: after a forward step past the
/// lease's end, the longest another worker's claim can overlap the attempt (plus the time a
/// SIGKILL takes).
pub const POLL: Duration = Duration::from_millis(50);

/// What ends an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cut {
    /// Its timeout, or the job's deadline.
    Timeout,
    /// The lease, less what the worker keeps for afterwards, by the monotonic clock.
    LeaseMonotonic,
    /// The same by the wall clock: it was stepped forward (or ran ahead of the monotonic
    /// clock, as after a suspend).
    LeaseWall,
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cut::Timeout => "its timeout",
            Cut::LeaseMonotonic => "the end of its lease by the monotonic clock",
            Cut::LeaseWall => "the end of its lease by the wall clock, which jumped ahead",
        })
    }
}

/// The time one attempt has, as a transport reads it: ask [`Window::left`] before starting
/// and then at least every [`POLL`] while waiting.
pub struct Window<'c> {
    start: Instant,
    /// The attempt's own limit: the timeout, cut to the job's deadline.
    timeout: Duration,
    lease: Option<Lease<'c>>,
}

/// The lease an attempt runs under, less the worker's grace and margin.
struct Lease<'c> {
    /// Taken before the claim read the wall clock, so that it is never later than the claim.
    turn: Instant,
    /// `lease − grace − margin`, counted from `turn`.
    budget: Duration,
    /// `lease_until − grace − margin`, in wall-clock milliseconds.
    wall_end: u64,
    clock: &'c dyn Clock,
}

impl Window<'static> {
    /// `timeout` from now, under no lease: for a transport used on its own.
    pub fn new(timeout: Duration) -> Window<'static> {
        Window { start: Instant::now(), timeout, lease: None }
    }
}

impl<'c> Window<'c> {
    /// `timeout` from now, under a lease claimed at `turn` (an instant taken before the claim
    /// read `clock`) for `lease`, which ends at `lease_until` on `clock`; `reserve` of it is
    /// kept for after the transport returns.
    pub(crate) fn leased(
        timeout: Duration,
        turn: Instant,
        lease: Duration,
        lease_until: u64,
        reserve: Duration,
        clock: &'c dyn Clock,
    ) -> Window<'c> {
        let reserve_ms = u64::try_from(reserve.as_millis()).unwrap_or(u64::MAX);
        let lease = Lease {
            turn,
            budget: lease.saturating_sub(reserve),
            wall_end: lease_until.saturating_sub(reserve_ms),
            clock,
        };
        Window { start: Instant::now(), timeout, lease: Some(lease) }
    }

    /// The attempt's own limit, as given: its timeout, cut to the job's deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Time since the window opened.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// How long the attempt may still run, and what will end it. Zero: stop now.
    ///
    /// A wall clock that cannot be read (before 1970, past 2^53 − 1) leaves the monotonic
    /// ends alone: no other worker can claim with such a clock either.
    pub fn left(&self) -> (Duration, Cut) {
        let mut left = (self.timeout.saturating_sub(self.start.elapsed()), Cut::Timeout);
        let Some(lease) = &self.lease else { return left };
        let monotonic = lease.budget.saturating_sub(lease.turn.elapsed());
        if monotonic < left.0 {
            left = (monotonic, Cut::LeaseMonotonic);
        }
        if let Ok(now) = lease.clock.now_ms() {
            let wall = Duration::from_millis(lease.wall_end.saturating_sub(now));
            if wall < left.0 {
                left = (wall, Cut::LeaseWall);
            }
        }
        left
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::clock::ClockError;

    struct Fixed(Cell<Result<u64, ClockError>>);

    impl Clock for Fixed {
        fn now_ms(&self) -> Result<u64, ClockError> {
            self.0.get()
        }
    }

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn alone_a_window_is_its_timeout() {
        let w = Window::new(10 * S);
        let (left, cut) = w.left();
        assert_eq!(cut, Cut::Timeout);
        assert!(left <= 10 * S && left > 9 * S, "{left:?}");
        assert_eq!(Window::new(Duration::ZERO).left(), (Duration::ZERO, Cut::Timeout));
        // A timeout of 2^53 - 1 ms is not an instant in the future to overflow.
        assert_eq!(Window::new(Duration::from_millis(retryq_core::MAX_INT)).left().1, Cut::Timeout);
    }

    #[test]
    fn the_earliest_end_wins() {
        let clock = Fixed(Cell::new(Ok(1_000_000)));
        let turn = Instant::now();
        // Lease 10 s until 1_010_000, 1 s kept: 9 s left on both clocks, more than the timeout.
        let w = Window::leased(5 * S, turn, 10 * S, 1_010_000, S, &clock);
        assert_eq!(w.left().1, Cut::Timeout);
        // The wall clock jumps 15 s ahead: nothing is left by it.
        clock.0.set(Ok(1_015_000));
        assert_eq!(w.left(), (Duration::ZERO, Cut::LeaseWall));
        // It jumps back: the timeout binds again; unreadable: the monotonic ends hold.
        clock.0.set(Ok(900_000));
        assert_eq!(w.left().1, Cut::Timeout);
        clock.0.set(Err(ClockError::TooLate));
        assert_eq!(w.left().1, Cut::Timeout);
        // A claim that took 7 s of a 10 s lease (1 s kept) leaves 2 s, below the timeout.
        let late = turn.checked_sub(7 * S).expect("an instant 7 s ago");
        let w = Window::leased(5 * S, late, 10 * S, 1_010_000, S, &clock);
        let (left, cut) = w.left();
        assert_eq!(cut, Cut::LeaseMonotonic);
        assert!(left <= 2 * S && left > S, "{left:?}");
    }
}
