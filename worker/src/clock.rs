//! The wall clock, in the queue's unit: integer milliseconds since the Unix epoch.
//!
//! The loop takes its wall clock as a [`Clock`], so that tests can step it (forward past a
//! lease, past 2^53 − 1) without touching the machine's; a running process uses
//! [`SystemClock`], which is `retryq-core`'s clock: a time the queue cannot store (before 1970,
//! past 2^53 − 1 ms) is a [`ClockError`], and the loop stops on it rather than store a
//! clamped time other workers would misread.
//!
//! Workers on several hosts that share one PostgreSQL database must agree on every lease and
//! deadline, whatever their own clocks say: [`ServerClock`] stamps each store operation with
//! the server's clock, read by the store thread (the one that owns the connection), and gives
//! the attempts in flight, which cannot reach the server, this host's clock corrected by the
//! offset between the two measured at the last reading.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};

use retryq::Backend;
pub use retryq_core::{ClockError, now_ms};

/// The environment variable that names a [`SteppedClock`]'s file: set, `retryq work` on a
/// local clock and the trampolines of its commands read the wall clock as this host's plus
/// the milliseconds the file holds. For tests that step the wall clock without touching the
/// machine's.
pub const STEP_FILE_VAR: &str = "RETRYQ_TEST_CLOCK_STEP_FILE";

/// A wall clock: the time leases, reservations and deadlines are stored in. `Sync`: the
/// attempts in flight read it from their own threads.
pub trait Clock: Sync {
    /// Unix time in milliseconds, within 0 … 2^53 − 1.
    fn now_ms(&self) -> Result<u64, ClockError>;

    /// The `now` of an operation on `store`, for a clock that lives in the store: read by
    /// the store thread right before the operation (one reading for a batch). `None`, the
    /// default, means "use [`Clock::now_ms`]"; an error is the store's, and is handled as the
    /// operation's own failure would be (a lost connection is waited out).
    fn store_now(&self, store: &dyn Backend) -> retryq::Result<Option<u64>> {
        let _ = store;
        Ok(None)
    }

    /// How far this clock reads from this host's wall clock ([`local_ms`]), in milliseconds,
    /// as last measured: what a watchdog outside the worker, which reads only this host's
    /// clocks, subtracts from a lease's end to watch it. `None`, the default, for a clock
    /// with no such relation (a test's fixed clock): the watchdog then keeps the lease on the
    /// monotonic clock alone.
    fn local_offset_ms(&self) -> Option<i64> {
        None
    }
}

/// This host's wall clock as the worker and its watchdogs read it: the system clock, plus a
/// [`SteppedClock`]'s step when [`STEP_FILE_VAR`] is set.
pub fn local_ms() -> Result<u64, ClockError> {
    match SteppedClock::from_env() {
        Some(clock) => clock.now_ms(),
        None => now_ms(),
    }
}

/// The system clock stepped by the number of milliseconds (signed, in decimal) a file holds,
/// read at every reading: a test writes `40000` to the file and every process that reads
/// the clock through it — the worker, its trampolines — sees the wall clock jump 40 s ahead
/// at once, as a step of the machine's clock would look to them. A missing or empty file is
/// no step; a file that does not hold a number is no step either (a test hook must not stop
/// a worker).
#[derive(Clone, Debug)]
pub struct SteppedClock {
    file: PathBuf,
}

impl SteppedClock {
    /// The clock stepped by what `file` holds.
    pub fn new(file: impl Into<PathBuf>) -> SteppedClock {
        SteppedClock { file: file.into() }
    }

    /// The clock [`STEP_FILE_VAR`] names, if it is set.
    pub fn from_env() -> Option<SteppedClock> {
        std::env::var_os(STEP_FILE_VAR).filter(|v| !v.is_empty()).map(SteppedClock::new)
    }

    /// The step now, in milliseconds.
    pub fn step_ms(&self) -> i64 {
        std::fs::read_to_string(&self.file).ok().and_then(|text| text.trim().parse().ok()).unwrap_or(0)
    }
}

impl Clock for SteppedClock {
    fn now_ms(&self) -> Result<u64, ClockError> {
        let stepped = i128::from(now_ms()?) + i128::from(self.step_ms());
        if stepped < 0 {
            return Err(ClockError::BeforeEpoch);
        }
        u64::try_from(stepped).ok().filter(|&now| now <= retryq_core::MAX_INT).ok_or(ClockError::TooLate)
    }

    fn local_offset_ms(&self) -> Option<i64> {
        Some(0)
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
///
/// The store thread reads the server's clock before each claim, each round of heartbeats and
/// each group commit, and stamps the operation with it. Every reading also notes how far the
/// server's clock is from this host's; [`Clock::now_ms`] (what a running attempt's window and
/// the end of its attempt read, off the store thread) is this host's clock plus that offset.
/// An outcome is stamped with the server's clock when it is committed, so an offset that
/// moved between two readings never makes an attempt end before it was claimed.
#[derive(Debug, Default)]
pub struct ServerClock {
    /// The server's clock less this host's, in milliseconds, at the last reading.
    offset_ms: AtomicI64,
}

impl ServerClock {
    /// A clock that has not read the server yet (its offset is zero until the first
    /// reading, which the worker takes before its first claim).
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

    fn store_now(&self, store: &dyn Backend) -> retryq::Result<Option<u64>> {
        let Some(server) = store.server_now()? else { return Ok(None) };
        // Read after the answer: the offset errs by at most the round trip, towards the
        // server being behind, which only makes an attempt's window end earlier.
        if let Ok(local) = now_ms() {
            let offset = i128::from(server) - i128::from(local);
            let offset = i64::try_from(offset).unwrap_or(if offset < 0 { i64::MIN } else { i64::MAX });
            self.offset_ms.store(offset, Ordering::Relaxed);
        }
        Ok(Some(server))
    }

    fn local_offset_ms(&self) -> Option<i64> {
        Some(self.offset_ms())
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
    fn the_server_clock_on_a_store_without_a_server_is_this_hosts() {
        let queue = retryq::Queue::open_in_memory().expect("queue");
        let clock = ServerClock::new();
        assert_eq!(clock.store_now(&queue).expect("read"), None);
        assert_eq!(clock.offset_ms(), 0);
        let (before, read) = (now_ms().expect("clock"), clock.now_ms().expect("clock"));
        assert!(read >= before && read < before + 60_000, "{read} vs {before}");
    }
}
