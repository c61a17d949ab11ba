//! The time an attempt may take: its timeout, and what is left of the lease it runs under,
//! read on both clocks.
//!
//! The lease argument (docs/operating.md, "The worker's lease argument"). A claim at wall
//! time `t` leases the job until `lease_until = t + lease`, and any worker whose wall clock
//! reads `lease_until` may claim it again. While the attempt runs, the store thread renews
//! the lease every third of it (a heartbeat, SPEC 3.12), so a lease need not outlast the
//! attempt; but the attempt must be over by the lease's end as last renewed, less the
//! *margin* ([`Config::margin`](crate::Config::margin)): the same end the watchdog beside an
//! `--exec` command keeps when the worker cannot (`trampoline.rs`). The attempt is held to
//! the earliest of four ends:
//!
//! - its timeout (cut to the job's deadline), on the monotonic clock;
//! - the lease's end less the margin, on the monotonic clock, counted from an instant
//!   taken *before* the claim (or the last heartbeat) read the wall clock: time spent
//!   waiting for the database's lock is charged, and no step of the wall clock can
//!   lengthen it;
//! - `lease_until` less the margin on the wall clock, re-read every [`POLL`]: a forward
//!   step of the wall clock shortens the lease for every other worker at once, so the
//!   holder must see it too;
//! - a refused heartbeat: the lease is not this worker's any more ([`Cut::Abandoned`]).
//!
//! With heartbeats accepted, only the timeout ends an attempt: the lease ends come into play
//! when heartbeats keep failing (a database locked by another process for longer than the
//! busy timeout) or when the wall clock misbehaves.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::held::Held;

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
    /// The queue refused to renew the lease (SPEC 3.12: `lease_lost`, `deadline_passed`,
    /// `not_found`): the attempt is abandoned, and its outcome is not recorded.
    Abandoned,
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cut::Timeout => "its timeout",
            Cut::LeaseMonotonic => "the end of its lease by the monotonic clock",
            Cut::LeaseWall => "the end of its lease by the wall clock, which jumped ahead",
            Cut::Abandoned => "a refused heartbeat (the lease is no longer this worker's)",
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

/// The lease an attempt runs under, as the store thread keeps it, less the margin.
struct Lease<'c> {
    held: Arc<Held>,
    /// How long before the lease's end the attempt stops ([`Config::margin`](crate::Config::margin)).
    margin: Duration,
    /// The watchdog's wait between SIGTERM and SIGKILL.
    kill_grace: Duration,
    clock: &'c dyn Clock,
}

/// Where the lease an attempt runs under ends, as last renewed by a heartbeat the store
/// accepted, and how the watchdog is to keep it: what the exec transport hands its
/// trampoline, and hands again after every accepted renewal ([`Window::lease`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseEnds {
    /// The end on the monotonic clock, counted from before the claim or heartbeat read the
    /// clock; `None` when it lies too far ahead for an [`Instant`].
    pub monotonic: Option<Instant>,
    /// `lease_until` as the store granted it, on the worker's [`Clock`].
    pub wall_ms: u64,
    /// The worker's clock less this host's ([`Clock::local_offset_ms`]); `None` when the two
    /// are not related, and then the wall end is not for a watchdog to keep.
    pub local_offset_ms: Option<i64>,
    /// How long before either end the attempt is to stop.
    pub margin: Duration,
    /// The wait between SIGTERM and SIGKILL when the watchdog stops it.
    pub kill_grace: Duration,
}

impl Window<'static> {
    /// `timeout` from now, under no lease: for a transport used on its own.
    pub fn new(timeout: Duration) -> Window<'static> {
        Window { start: Instant::now(), timeout, lease: None }
    }
}

impl<'c> Window<'c> {
    /// `timeout` from now, under the lease `held` (renewed by the store thread, read on
    /// `clock` and the monotonic clock), stopping `margin` before its end.
    pub(crate) fn leased(
        timeout: Duration,
        held: Arc<Held>,
        margin: Duration,
        kill_grace: Duration,
        clock: &'c dyn Clock,
    ) -> Window<'c> {
        let lease = Lease { held, margin, kill_grace, clock };
        Window { start: Instant::now(), timeout, lease: Some(lease) }
    }

    /// The lease this attempt runs under, as last renewed (only a heartbeat the store
    /// accepted renews it), for a watchdog outside the worker; `None` for a window under no
    /// lease, or once a heartbeat was refused (then the attempt is to stop now).
    pub fn lease(&self) -> Option<LeaseEnds> {
        let lease = self.lease.as_ref()?;
        let ends = lease.held.ends();
        if ends.abandoned {
            return None;
        }
        Some(LeaseEnds {
            monotonic: ends.anchor.checked_add(ends.span),
            wall_ms: ends.wall,
            local_offset_ms: lease.clock.local_offset_ms(),
            margin: lease.margin,
            kill_grace: lease.kill_grace,
        })
    }

    /// The lease the store thread renews and the margin kept before its end, for a view
    /// of the window that outlives it (a handler's [`Attempt`](crate::Attempt)).
    pub(crate) fn held(&self) -> Option<(Arc<Held>, Duration)> {
        self.lease.as_ref().map(|lease| (Arc::clone(&lease.held), lease.margin))
    }

    /// The attempt's own limit, as given: its timeout, cut to the job's deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// What is left of the attempt's own limit, whatever the lease: what a transport that
    /// cannot be polled (an HTTP request's timeout) is given, while it watches
    /// [`Window::left`] for the lease.
    pub fn timeout_left(&self) -> Duration {
        self.timeout.saturating_sub(self.start.elapsed())
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
        self.within_lease((self.timeout_left(), Cut::Timeout))
    }

    /// How long the lease the attempt runs under still holds, less the margin, whatever its
    /// timeout: how long a transport may go on making sure nothing of an attempt is left
    /// before the job can be claimed again. Under no lease, [`Window::left`].
    pub(crate) fn lease_left(&self) -> (Duration, Cut) {
        match self.lease {
            Some(_) => self.within_lease((Duration::MAX, Cut::Timeout)),
            None => self.left(),
        }
    }

    /// `left`, or what is left of the lease if that ends first.
    fn within_lease(&self, mut left: (Duration, Cut)) -> (Duration, Cut) {
        let Some(lease) = &self.lease else { return left };
        let ends = lease.held.ends();
        if ends.abandoned {
            return (Duration::ZERO, Cut::Abandoned);
        }
        let monotonic = ends.span.saturating_sub(lease.margin).saturating_sub(ends.anchor.elapsed());
        if monotonic < left.0 {
            left = (monotonic, Cut::LeaseMonotonic);
        }
        if let Ok(now) = lease.clock.now_ms() {
            let margin_ms = u64::try_from(lease.margin.as_millis()).unwrap_or(u64::MAX);
            let wall = Duration::from_millis(ends.wall.saturating_sub(margin_ms).saturating_sub(now));
            if wall < left.0 {
                left = (wall, Cut::LeaseWall);
            }
        }
        left
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::clock::ClockError;

    struct Fixed(Mutex<Result<u64, ClockError>>);

    impl Fixed {
        fn set(&self, reading: Result<u64, ClockError>) {
            *self.0.lock().expect("clock") = reading;
        }
    }

    impl Clock for Fixed {
        fn now_ms(&self) -> Result<u64, ClockError> {
            *self.0.lock().expect("clock")
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
        let clock = Fixed(Mutex::new(Ok(1_000_000)));
        let turn = Instant::now();
        // Lease 10 s until 1_010_000, 1 s kept: 9 s left on both clocks, more than the timeout.
        let held = Arc::new(Held::new(turn, 10 * S, 1_010_000));
        let w = Window::leased(5 * S, Arc::clone(&held), S, S / 2, &clock);
        assert_eq!(w.left().1, Cut::Timeout);
        // The wall clock jumps 15 s ahead: nothing is left by it.
        clock.set(Ok(1_015_000));
        assert_eq!(w.left(), (Duration::ZERO, Cut::LeaseWall));
        // It jumps back: the timeout binds again; unreadable: the monotonic ends hold.
        clock.set(Ok(900_000));
        assert_eq!(w.left().1, Cut::Timeout);
        clock.set(Err(ClockError::TooLate));
        assert_eq!(w.left().1, Cut::Timeout);
        // A claim that took 7 s of a 10 s lease (1 s kept) leaves 2 s, below the timeout.
        let late = turn.checked_sub(7 * S).expect("an instant 7 s ago");
        let w = Window::leased(5 * S, Arc::new(Held::new(late, 10 * S, 1_010_000)), S, S / 2, &clock);
        let (left, cut) = w.left();
        assert_eq!(cut, Cut::LeaseMonotonic);
        assert!(left <= 2 * S && left > S, "{left:?}");
    }

    #[test]
    fn a_heartbeat_keeps_the_window_open_and_a_refusal_closes_it() {
        let clock = Fixed(Mutex::new(Ok(1_000_000)));
        // A 2 s lease claimed 1.8 s ago, a quarter kept: by the monotonic clock it is over.
        let claim = Instant::now().checked_sub(Duration::from_millis(1800)).expect("an instant");
        let held = Arc::new(Held::new(claim, 2 * S, 1_000_200));
        let w = Window::leased(10 * S, Arc::clone(&held), S / 2, S / 4, &clock);
        assert_eq!(w.left(), (Duration::ZERO, Cut::LeaseMonotonic));
        // Renewed now, for 2 s from now: 1.5 s left on both clocks.
        held.renew(Instant::now(), 2 * S, 1_002_000);
        let (left, cut) = w.left();
        assert!(matches!(cut, Cut::LeaseMonotonic | Cut::LeaseWall), "{cut:?}");
        assert!(left <= Duration::from_millis(1500) && left > S, "{left:?}");
        // A refused heartbeat closes it at once, whatever is left.
        held.abandon();
        assert_eq!(w.left(), (Duration::ZERO, Cut::Abandoned));
        // The attempt's own limit is still what it was.
        assert!(w.timeout_left() > 9 * S);
    }

    #[test]
    fn the_lease_is_handed_out_until_a_heartbeat_is_refused() {
        let clock = Fixed(Mutex::new(Ok(1_000_000)));
        let claim = Instant::now();
        let held = Arc::new(Held::new(claim, 2 * S, 1_002_000));
        let w = Window::leased(10 * S, Arc::clone(&held), S / 2, S / 4, &clock);
        let ends = w.lease().expect("leased");
        assert_eq!((ends.monotonic, ends.wall_ms, ends.margin), (Some(claim + 2 * S), 1_002_000, S / 2));
        // A test clock is not this host's: the watchdog keeps the monotonic end only.
        assert_eq!(ends.local_offset_ms, None);
        held.renew(claim + S, 2 * S, 1_003_000);
        assert_eq!(w.lease().expect("leased").monotonic, Some(claim + 3 * S));
        held.abandon();
        assert_eq!(w.lease(), None);
        assert_eq!(Window::new(S).lease(), None);
    }
}
