//! The wall clock, in the queue's unit: integer milliseconds since the Unix epoch.
//!
//! The loop takes its wall clock as a [`Clock`], so that tests can step it (forward past a
//! lease, past 2^53 − 1) without touching the machine's; a running process uses
//! [`SystemClock`].

use std::time::{SystemTime, UNIX_EPOCH};

/// The wall clock cannot be used as the queue's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    #[error("the system clock is before 1970")]
    BeforeEpoch,
    #[error("the system clock is past 2^53-1 ms after 1970")]
    TooLate,
}

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

/// The system clock's Unix time in milliseconds.
pub fn now_ms() -> Result<u64, ClockError> {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).map_err(|_| ClockError::BeforeEpoch)?;
    in_range(since.as_millis())
}

/// A reading in milliseconds, if the queue can store it.
pub fn in_range(ms: u128) -> Result<u64, ClockError> {
    match u64::try_from(ms) {
        Ok(ms) if ms <= retryq::MAX_INT => Ok(ms),
        _ => Err(ClockError::TooLate),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_reads_unix_milliseconds() {
        let now = now_ms().expect("clock");
        // 2020-01-01 and 2100-01-01: a reading in seconds or microseconds would miss.
        assert!((1_577_836_800_000..4_102_444_800_000).contains(&now), "{now}");
        assert!(SystemClock.now_ms().is_ok_and(|later| later >= now));
    }

    #[test]
    fn past_2_pow_53_is_out_of_range() {
        assert_eq!(in_range(u128::from(retryq::MAX_INT)), Ok(retryq::MAX_INT));
        assert_eq!(in_range(u128::from(retryq::MAX_INT) + 1), Err(ClockError::TooLate));
        assert_eq!(in_range(u128::MAX), Err(ClockError::TooLate));
    }
}
