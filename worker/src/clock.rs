//! The wall clock, in the queue's unit: integer milliseconds since the Unix epoch.
//!
//! The loop takes its wall clock as a [`Clock`], so that tests can step it (forward past a
//! lease, past 2^53 − 1) without touching the machine's; a running process uses
//! [`SystemClock`], which is `retryq-core`'s clock: a time the queue cannot store (before 1970,
//! past 2^53 − 1 ms) is a [`ClockError`], and the loop stops on it rather than store a
//! clamped time other workers would misread.

pub use retryq_core::{ClockError, now_ms};

/// A wall clock: the time leases, reservations and deadlines are stored in.
pub trait Clock {
    /// Unix time in milliseconds, within 0 … 2^53 − 1.
    fn now_ms(&self) -> Result<u64, ClockError>;
}

/// The machine's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> Result<u64, ClockError> {
        now_ms()
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
}
