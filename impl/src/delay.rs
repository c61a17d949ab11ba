//! The backoff delay of SPEC section 2, as the queue reports it.
//!
//! The formula is `retryq-core`'s, shared with the calling side; here its refusal becomes the
//! queue's [`Error::InvalidInput`], so that a caller of the queue matches on one error type and
//! `invalid_input` reads exactly as it always has.

use crate::error::Result;

/// `floor(min(cap_ms, base_ms * 2^(attempt - 1)) * jitter)`: [`retryq_core::retry_delay`],
/// an out-of-range argument reported as [`Error::InvalidInput`](crate::Error::InvalidInput).
pub fn retry_delay(attempt: u64, base_ms: u64, cap_ms: u64, jitter: f64) -> Result<u64> {
    Ok(retryq_core::retry_delay(attempt, base_ms, cap_ms, jitter)?)
}

/// A jitter ratio must be a number in [0, 1] (so not NaN): [`retryq_core::validate_jitter`],
/// reported as [`Error::InvalidInput`](crate::Error::InvalidInput).
pub fn validate_jitter(jitter: f64) -> Result<f64> {
    Ok(retryq_core::validate_jitter(jitter)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::input::MAX_INT;

    #[test]
    fn the_formula_is_the_shared_one() {
        assert_eq!(retry_delay(3, 100, 250, 0.5).ok(), Some(125));
        assert_eq!(retry_delay(1, 10, 1000, 0.7).ok(), Some(7));
    }

    #[test]
    fn out_of_range_arguments_are_invalid_input_by_name() {
        for (args, field, text) in [
            ((0, 100, 1000, 0.5), "attempt", "invalid input: attempt: must be at least 1"),
            ((MAX_INT + 1, 1, 1, 0.5), "attempt", "invalid input: attempt: 9007199254740992 is above 2^53-1"),
            ((1, MAX_INT + 1, 1, 0.5), "base_ms", "invalid input: base_ms: 9007199254740992 is above 2^53-1"),
            (
                (1, 100, u64::MAX, 0.5),
                "cap_ms",
                "invalid input: cap_ms: 18446744073709551615 is above 2^53-1",
            ),
            ((1, 100, 1000, 1.5), "jitter", "invalid input: jitter: 1.5 is outside [0, 1]"),
            ((1, 100, 1000, f64::NAN), "jitter", "invalid input: jitter: NaN is outside [0, 1]"),
        ] {
            let err = retry_delay(args.0, args.1, args.2, args.3).unwrap_err();
            assert!(matches!(&err, Error::InvalidInput { field: f, .. } if *f == field), "{err}");
            assert_eq!(err.to_string(), text);
        }
        let err = validate_jitter(-0.1).unwrap_err();
        assert_eq!(err.to_string(), "invalid input: jitter: -0.1 is outside [0, 1]");
    }
}
