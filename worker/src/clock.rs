//! The wall clock, in the queue's unit: integer milliseconds since the Unix epoch.
//!
//! The clocks are the library's ([`retryq::Clock`]): a store is opened with one, and a
//! worker reads the store's. The loop takes its wall clock as a [`Clock`], so that tests can step it (forward past a
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
use std::time::Duration;

pub use retryq::{Clock, ServerClock, SystemClock};
pub use retryq_core::{ClockError, now_ms};

/// How often, at least, the store thread reads the store's clock while attempts are in
/// flight: on PostgreSQL with `--clock server`, a forward step of the server's clock (an NTP
/// step on the database host) ends every lease at once for the other workers, and the
/// attempts' windows learn of it only through a new reading of the offset. So a holder cuts
/// an attempt whose lease the server says is over within this, plus a look at its window
/// ([`POLL`](crate::POLL)) and the kill: one query a second per worker process, not per
/// attempt. Claims, heartbeat rounds and group commits read it too, and count.
pub(crate) const CLOCK_WATCH: Duration = Duration::from_secs(1);

/// The environment variable that names a [`SteppedClock`]'s file: set, `retryq work` on a
/// local clock and the trampolines of its commands read the wall clock as this host's plus
/// the milliseconds the file holds. For tests that step the wall clock without touching the
/// machine's.
pub const STEP_FILE_VAR: &str = "RETRYQ_TEST_CLOCK_STEP_FILE";

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

#[cfg(test)]
mod tests {
    use super::*;

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
