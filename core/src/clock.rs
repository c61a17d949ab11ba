//! The wall clock in the queue's unit: integer milliseconds since the Unix epoch, within
//! 0 … 2^53 − 1.
//!
//! One rule at the edges, for every reader: a reading the queue cannot store is a
//! [`ClockError`], never a clamped number. Why not clamp: a time is stored and compared by
//! other processes. A worker whose clock read 0 (clamped from before 1970) would write leases
//! that every other worker sees as long expired, and one clamped to 2^53 − 1 would make every
//! deadline look passed; either way jobs would be sent twice or given up, silently. An error
//! makes the caller decide — the worker stops, the attempt loop stops the call, a benchmark
//! fails — and says why.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::limits::MAX_INT;

/// The wall clock cannot be used as the queue's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClockError {
    /// The system clock reads a time before 1970-01-01T00:00:00Z.
    #[error("the system clock is before 1970")]
    BeforeEpoch,
    /// The system clock reads more than 2^53 − 1 ms after 1970: not an integer the queue
    /// stores.
    #[error("the system clock is past 2^53-1 ms after 1970")]
    TooLate,
}

/// The system clock's Unix time in milliseconds, within 0 … 2^53 − 1.
pub fn now_ms() -> Result<u64, ClockError> {
    millis_since_epoch(SystemTime::now())
}

/// `time` as Unix milliseconds (rounded down), if the queue can store it.
pub fn millis_since_epoch(time: SystemTime) -> Result<u64, ClockError> {
    let since = time.duration_since(UNIX_EPOCH).map_err(|_| ClockError::BeforeEpoch)?;
    match u64::try_from(since.as_millis()) {
        Ok(ms) if ms <= MAX_INT => Ok(ms),
        _ => Err(ClockError::TooLate),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_clock_reads_unix_milliseconds() {
        let now = now_ms().expect("clock");
        // 2020-01-01 and 2100-01-01: a reading in seconds or microseconds would miss.
        assert!((1_577_836_800_000..4_102_444_800_000).contains(&now), "{now}");
        assert!(now_ms().is_ok_and(|later| later >= now));
    }

    #[test]
    fn the_epoch_and_the_last_storable_millisecond_are_in_range() {
        assert_eq!(millis_since_epoch(UNIX_EPOCH), Ok(0));
        assert_eq!(millis_since_epoch(UNIX_EPOCH + Duration::from_micros(1999)), Ok(1));
        let last = UNIX_EPOCH + Duration::from_millis(MAX_INT);
        assert_eq!(millis_since_epoch(last), Ok(MAX_INT));
        // Within the last millisecond still reads as it, rounded down.
        assert_eq!(millis_since_epoch(last + Duration::from_micros(999)), Ok(MAX_INT));
    }

    #[test]
    fn before_1970_is_an_error_not_zero() {
        let before = UNIX_EPOCH.checked_sub(Duration::from_millis(1)).expect("1969 is representable");
        assert_eq!(millis_since_epoch(before), Err(ClockError::BeforeEpoch));
    }

    #[test]
    fn past_2_pow_53_is_an_error_not_the_maximum() {
        let past = UNIX_EPOCH.checked_add(Duration::from_millis(MAX_INT + 1)).expect("representable");
        assert_eq!(millis_since_epoch(past), Err(ClockError::TooLate));
    }
}
