//! The ranges SPEC section 3 gives every argument. The checks that refuse a value out of range
//! belong to whoever reports the refusal (the queue's `invalid_input`); the numbers are here so
//! that every side reads the same ones.

/// Every integer argument lies in 0 … 2^53 − 1: the largest range a JSON number (a binary64)
/// holds exactly, so a time or a count survives a trip through any JSON reader.
pub const MAX_INT: u64 = (1 << 53) - 1;

/// `max_attempts` and `add_attempts` lie in 1 … 2^31 − 1, and so does a redriven budget: an
/// attempt count fits a signed 32-bit integer in any language that reads the database.
pub const MAX_ATTEMPTS: u64 = (1 << 31) - 1;

/// Ids and worker names are 1 … 256 bytes of UTF-8: enough for any key a caller derives, small
/// enough to go on a command line and in a log line.
pub const MAX_ID_BYTES: usize = 256;

/// A payload is at most 1 MiB: a job describes work, it does not carry bulk data.
pub const MAX_PAYLOAD_BYTES: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limits_are_the_spec_numbers() {
        assert_eq!(MAX_INT, 9_007_199_254_740_991);
        // 2^53 − 1 is the last integer a binary64 holds exactly with its successor.
        assert_eq!(MAX_INT as f64 as u64, MAX_INT);
        assert_eq!(MAX_ATTEMPTS, i32::MAX as u64);
        assert_eq!(MAX_ID_BYTES, 256);
        assert_eq!(MAX_PAYLOAD_BYTES, 1_048_576);
    }
}
