//! Where a store's `now` and jitter come from when the caller does not give them.
//!
//! The contract is stated in operations that take `now` (and, for a completion, a jitter)
//! from the caller: replay, the conformance harness and the model call those, and nothing
//! here changes them. An application should not have to: every store is opened with a
//! [`Clock`] and a [`Jitter`] source, and its clock-reading operations
//! ([`Queue::enqueue`](crate::Queue::enqueue) of an [`Enqueue`](crate::Enqueue),
//! [`Queue::cancel_now`](crate::Queue::cancel_now), [`Queue::stats_now`](crate::Queue::stats_now),
//! the worker runtime's claims, heartbeats and completions) read them.
//!
//! The default clock is [`ServerClock`]: the store's own clock — PostgreSQL's, one clock for
//! every host that shares the database; on SQLite, whose every process runs on one host, this
//! host's. The default jitter is [`UniformJitter`], a fresh uniform draw from `[0, 1)` for
//! every retry, so that many workers' retries spread over their backoff window. Tests inject a
//! [`ManualClock`] and a fixed jitter (any `Fn() -> f64`).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use crate::error::{Error, Result};
pub use retryq_core::{ClockError, now_ms};

/// A store that may keep a clock of its own, as a [`Clock`] reads it: PostgreSQL's server, one
/// clock for every host that shares the database. Every [`Backend`](crate::Backend) is one.
pub trait ServerTime {
    /// The store's own clock in Unix milliseconds; `None` (the default) for a store with no
    /// server (SQLite), whose callers use their host's clock.
    fn server_now(&self) -> Result<Option<u64>> {
        Ok(None)
    }
}

/// A wall clock: the time leases, reservations and deadlines are stored in, in Unix
/// milliseconds. `Send + Sync`: a store holds one, and a worker's attempts read it from their
/// own threads.
pub trait Clock: Send + Sync {
    /// Unix time in milliseconds, within 0 … 2^53 − 1.
    fn now_ms(&self) -> Result<u64, ClockError>;

    /// The `now` of an operation on `store`, for a clock that lives in the store: read right
    /// before the operation (one reading for a batch). `None`, the default, means "use
    /// [`Clock::now_ms`]"; an error is the store's, and is handled as the operation's own
    /// failure would be.
    fn store_now(&self, store: &dyn ServerTime) -> Result<Option<u64>> {
        let _ = store;
        Ok(None)
    }

    /// How far this clock reads from this host's wall clock, in milliseconds, as last
    /// measured: what a watchdog outside the worker, which reads only this host's clocks,
    /// subtracts from a lease's end to watch it. `None`, the default, for a clock with no such
    /// relation (a test's manual clock): a watchdog then keeps the lease on the monotonic
    /// clock alone.
    fn local_offset_ms(&self) -> Option<i64> {
        None
    }

    /// When this clock last jumped ahead of this host's by more than [`JUMP_MS`], or was
    /// first read, where it lives in a store that other hosts read too: the moment after
    /// which another holder of a lease may not have seen the jump yet. A worker holds an
    /// attempt that takes over an earlier one's lease for a while after it (the worker's
    /// takeover hold). `None`, the default, for a clock that cannot jump unseen by the other
    /// workers.
    fn jumped_at(&self) -> Option<Instant> {
        None
    }
}

/// How far ahead the store's clock must move against this host's between two readings to be
/// a jump ([`Clock::jumped_at`]) rather than the error of a reading (at most its round
/// trip).
pub const JUMP_MS: i64 = 250;

/// A source of jitter: where in its backoff window each retry falls, a number in `[0, 1)`
/// (SPEC section 2). Any `Fn() -> f64` is one, so a test passes `|| 0.5`.
pub trait Jitter: Send + Sync {
    /// The next draw, in `[0, 1]`.
    fn jitter(&self) -> f64;
}

impl<F: Fn() -> f64 + Send + Sync> Jitter for F {
    fn jitter(&self) -> f64 {
        self()
    }
}

/// A fresh uniform draw from `[0, 1)` for every retry, from the thread's random generator.
#[derive(Clone, Copy, Debug, Default)]
pub struct UniformJitter;

impl Jitter for UniformJitter {
    fn jitter(&self) -> f64 {
        use rand::RngExt;
        rand::rng().random::<f64>()
    }
}

/// The machine's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> Result<u64, ClockError> {
        now_ms()
    }

    fn local_offset_ms(&self) -> Option<i64> {
        Some(0)
    }
}

/// The store's clock ([`Backend::server_now`]): on PostgreSQL the server's, one clock for
/// every host that shares the database; on a store without a server (SQLite), this host's.
/// The clock every store is opened with.
///
/// Each operation that reads it asks the server first (one query) and is stamped with the
/// answer. Every reading also notes how far the server's clock is from this host's;
/// [`Clock::now_ms`] — what a worker's running attempt reads, off the thread that owns the
/// connection — is this host's clock plus that offset.
#[derive(Debug, Default)]
pub struct ServerClock {
    /// The server's clock less this host's, in milliseconds, at the last reading.
    offset_ms: AtomicI64,
    /// Whether the server has been read.
    read: AtomicBool,
    /// When the offset last jumped forward, or the server was first read.
    jumped_at: Mutex<Option<Instant>>,
}

impl ServerClock {
    /// A clock that has not read the server yet (its offset is zero until the first
    /// reading).
    pub fn new() -> ServerClock {
        ServerClock::default()
    }

    /// The offset in milliseconds (the server's clock less this host's) at the last reading.
    pub fn offset_ms(&self) -> i64 {
        self.offset_ms.load(Ordering::Relaxed)
    }
}

impl Clock for ServerClock {
    fn now_ms(&self) -> Result<u64, ClockError> {
        let local = now_ms()?;
        let corrected = i128::from(local) + i128::from(self.offset_ms());
        if corrected < 0 {
            return Err(ClockError::BeforeEpoch);
        }
        u64::try_from(corrected).ok().filter(|&now| now <= retryq_core::MAX_INT).ok_or(ClockError::TooLate)
    }

    fn store_now(&self, store: &dyn ServerTime) -> Result<Option<u64>> {
        let Some(server) = store.server_now()? else { return Ok(None) };
        // Read after the answer: the offset errs by at most the round trip, towards the
        // server being behind, which only makes an attempt's window end earlier.
        if let Ok(local) = now_ms() {
            let offset = i128::from(server) - i128::from(local);
            let offset = i64::try_from(offset).unwrap_or(if offset < 0 { i64::MIN } else { i64::MAX });
            let before = self.offset_ms.swap(offset, Ordering::Relaxed);
            let first = !self.read.swap(true, Ordering::Relaxed);
            if first || offset.saturating_sub(before) > JUMP_MS {
                *self.jumped_at.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
            }
        }
        Ok(Some(server))
    }

    fn local_offset_ms(&self) -> Option<i64> {
        Some(self.offset_ms())
    }

    fn jumped_at(&self) -> Option<Instant> {
        *self.jumped_at.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A clock that moves only when told: for tests of code that reads a store's clock.
/// Clones share one reading.
///
/// ```
/// use std::time::Duration;
/// use retryq::{Clock, ManualClock};
///
/// let clock = ManualClock::new(1_000);
/// clock.advance(Duration::from_secs(2));
/// assert_eq!(clock.now_ms()?, 3_000);
/// # Ok::<(), retryq::ClockError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock that reads `now_ms` until set or advanced.
    pub fn new(now_ms: u64) -> ManualClock {
        ManualClock { now: Arc::new(AtomicU64::new(now_ms)) }
    }

    /// Sets the reading.
    pub fn set(&self, now_ms: u64) {
        self.now.store(now_ms, Ordering::SeqCst);
    }

    /// Moves the reading forward by `by` (whole milliseconds).
    pub fn advance(&self, by: std::time::Duration) {
        let by = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        let _ = self.now.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| Some(now.saturating_add(by)));
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> Result<u64, ClockError> {
        let now = self.now.load(Ordering::SeqCst);
        if now > retryq_core::MAX_INT {
            return Err(ClockError::TooLate);
        }
        Ok(now)
    }
}

/// The `now` of an operation on `store` by its clock: the store's own reading where the
/// clock lives in the store, else the clock's.
pub(crate) fn store_now(store: &dyn ServerTime, clock: &dyn Clock) -> Result<u64> {
    match clock.store_now(store)? {
        Some(now) => Ok(now),
        None => clock.now_ms().map_err(Error::Clock),
    }
}

/// The clock and the jitter a store is opened with.
#[derive(Clone)]
pub(crate) struct Sources {
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) jitter: Arc<dyn Jitter>,
}

impl Default for Sources {
    fn default() -> Self {
        Sources { clock: Arc::new(ServerClock::new()), jitter: Arc::new(UniformJitter) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_clock_is_the_shared_one() {
        let now = now_ms().expect("clock");
        // 2020-01-01 and 2100-01-01: a reading in seconds or microseconds would miss.
        assert!((1_577_836_800_000..4_102_444_800_000).contains(&now), "{now}");
        assert!(SystemClock.now_ms().is_ok_and(|later| later >= now));
    }

    #[test]
    fn uniform_jitter_stays_in_its_window_and_a_closure_is_a_jitter() {
        for _ in 0..1000 {
            let j = UniformJitter.jitter();
            assert!((0.0..1.0).contains(&j), "{j}");
        }
        let fixed = || 0.25;
        assert_eq!(fixed.jitter(), 0.25);
    }

    /// A store whose clock reads `at` from this host's, as set.
    struct Ahead(std::sync::atomic::AtomicI64);

    impl ServerTime for Ahead {
        fn server_now(&self) -> Result<Option<u64>> {
            let local = now_ms().map_err(Error::Clock)?;
            Ok(u64::try_from(i128::from(local) + i128::from(self.0.load(Ordering::SeqCst))).ok())
        }
    }

    #[test]
    fn a_server_clock_marks_its_first_reading_and_each_forward_jump() {
        let clock = ServerClock::new();
        assert_eq!(clock.jumped_at(), None, "not read yet");
        let server = Ahead(AtomicI64::new(5_000));
        clock.store_now(&server).expect("read");
        let first = clock.jumped_at().expect("the first reading");
        // Small moves either way, and a jump back, are no jump.
        for offset in [5_100, 4_000, -60_000, -59_800] {
            server.0.store(offset, Ordering::SeqCst);
            clock.store_now(&server).expect("read");
            assert_eq!(clock.jumped_at(), Some(first), "{offset}");
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
        server.0.store(-19_800, Ordering::SeqCst);
        clock.store_now(&server).expect("read");
        assert!(clock.jumped_at().is_some_and(|at| at > first), "40 s ahead is a jump");
        assert!((clock.offset_ms() + 19_800).abs() < 100, "{}", clock.offset_ms());
    }

    #[test]
    fn a_manual_clock_is_shared_by_its_clones_and_refuses_past_the_range() {
        let clock = ManualClock::new(5);
        let other = clock.clone();
        other.advance(std::time::Duration::from_millis(10));
        assert_eq!(clock.now_ms(), Ok(15));
        clock.set(retryq_core::MAX_INT + 1);
        assert_eq!(other.now_ms(), Err(ClockError::TooLate));
    }
}
