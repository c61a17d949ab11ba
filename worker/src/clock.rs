//! The system clock, in the queue's unit: integer milliseconds since the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

/// The system clock cannot be used as the queue's time.
#[derive(Debug, thiserror::Error)]
pub enum ClockError {
    #[error("the system clock is before 1970")]
    BeforeEpoch,
    #[error("the system clock is past 2^53-1 ms after 1970")]
    TooLate,
}

/// The system clock's Unix time in milliseconds.
pub fn now_ms() -> Result<u64, ClockError> {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).map_err(|_| ClockError::BeforeEpoch)?;
    match u64::try_from(since.as_millis()) {
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
    }
}
