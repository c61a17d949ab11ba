//! The backoff delay of SPEC section 2: an exponential window with a cap, scaled by jitter.
//!
//! The window is computed on exact integers and saturates at the cap, so attempt 10^15 is as
//! fine as attempt 3; only the final scaling is floating point, one binary64 multiply and a
//! floor, exactly as the reference formula does it (window 10, jitter 0.7 gives 7, not 6).

use std::fmt;

use crate::limits::MAX_INT;

/// An argument of [`retry_delay`] or [`validate_jitter`] out of the range SPEC section 3 gives
/// it. Typed, so that each side can report it its own way; [`DelayError::field`] and
/// [`DelayError::reason`] are the two halves the queue's `invalid_input` prints.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum DelayError {
    /// `attempt` was 0: the formula is about an attempt that failed, and the first is 1.
    AttemptZero,
    /// An integer argument was above 2^53 − 1.
    AboveMaxInt {
        /// The argument: `attempt`, `base_ms` or `cap_ms`.
        field: &'static str,
        /// The value given.
        value: u64,
    },
    /// The jitter ratio was not a number in [0, 1] (NaN included).
    JitterOutOfRange {
        /// The value given.
        jitter: f64,
    },
}

impl DelayError {
    /// The argument that was out of range, as SPEC names it.
    pub fn field(&self) -> &'static str {
        match self {
            DelayError::AttemptZero => "attempt",
            DelayError::AboveMaxInt { field, .. } => field,
            DelayError::JitterOutOfRange { .. } => "jitter",
        }
    }

    /// What was wrong with it, in the words the queue has always used (the replay traces and
    /// the command line print them).
    pub fn reason(&self) -> String {
        match self {
            DelayError::AttemptZero => "must be at least 1".to_owned(),
            DelayError::AboveMaxInt { value, .. } => format!("{value} is above 2^53-1"),
            DelayError::JitterOutOfRange { jitter } => format!("{jitter} is outside [0, 1]"),
        }
    }
}

impl fmt::Display for DelayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field(), self.reason())
    }
}

impl std::error::Error for DelayError {}

/// `floor(min(cap_ms, base_ms * 2^(attempt - 1)) * jitter)`.
///
/// `attempt` (≥ 1) is the attempt that just failed; `jitter` is a ratio in [0, 1] the caller
/// chooses (uniformly random in production, fixed in tests). `cap_ms` may be below `base_ms`
/// and either may be 0. Defined for every input: an out-of-range argument is a
/// [`DelayError`], never an overflow or a panic.
///
/// ```
/// use retryq_core::{DelayError, retry_delay};
///
/// // The third attempt failed: its window is min(1000, 100 · 2^2) = 400 ms; half of it with 0.5.
/// assert_eq!(retry_delay(3, 100, 1000, 0.5), Ok(200));
/// // Past the cap the window stops growing.
/// assert_eq!(retry_delay(10, 100, 1000, 1.0), Ok(1000));
/// assert_eq!(retry_delay(0, 100, 1000, 0.5), Err(DelayError::AttemptZero));
/// ```
pub fn retry_delay(attempt: u64, base_ms: u64, cap_ms: u64, jitter: f64) -> Result<u64, DelayError> {
    if attempt == 0 {
        return Err(DelayError::AttemptZero);
    }
    int("attempt", attempt)?;
    int("base_ms", base_ms)?;
    int("cap_ms", cap_ms)?;
    let jitter = validate_jitter(jitter)?;
    let window = window(attempt, base_ms, cap_ms);
    // window ≤ 2^53 − 1 is exact in binary64, and window * jitter ≤ window, so the floor
    // fits back into u64 without saturating.
    Ok((window as f64 * jitter).floor() as u64)
}

/// A jitter ratio must be a number in [0, 1] (so not NaN). Checked on its own too, because the
/// queue refuses a bad jitter even when the outcome would not use it.
pub fn validate_jitter(jitter: f64) -> Result<f64, DelayError> {
    if !(0.0..=1.0).contains(&jitter) {
        return Err(DelayError::JitterOutOfRange { jitter });
    }
    Ok(jitter)
}

/// An integer argument in 0 … 2^53 − 1.
fn int(field: &'static str, value: u64) -> Result<u64, DelayError> {
    if value > MAX_INT {
        return Err(DelayError::AboveMaxInt { field, value });
    }
    Ok(value)
}

/// `min(cap_ms, base_ms * 2^(attempt - 1))` on exact integers.
fn window(attempt: u64, base_ms: u64, cap_ms: u64) -> u64 {
    let doublings = attempt - 1;
    if base_ms == 0 {
        return 0;
    }
    // base_ms ≥ 1, so from 64 doublings on the product exceeds every u64 cap.
    if doublings >= 64 {
        return cap_ms;
    }
    let grown = u128::from(base_ms) << doublings;
    match u64::try_from(grown) {
        Ok(grown) => grown.min(cap_ms),
        Err(_) => cap_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delay(attempt: u64, base: u64, cap: u64, jitter: f64) -> u64 {
        retry_delay(attempt, base, cap, jitter).expect("valid arguments")
    }

    #[test]
    fn spec_examples() {
        assert_eq!(delay(1, 100, 1000, 0.5), 50);
        assert_eq!(delay(2, 100, 1000, 0.5), 100);
        // The cap applies before jitter: 400 capped to 250, then halved.
        assert_eq!(delay(3, 100, 250, 0.5), 125);
        // One binary64 multiply: 10 * 0.7 = 7.000000000000001, floored to 7.
        assert_eq!(delay(1, 10, 1000, 0.7), 7);
        assert_eq!(delay(5, 0, 1000, 1.0), 0);
    }

    #[test]
    fn jitter_edges_and_fractions() {
        assert_eq!(delay(4, 100, 10_000, 0.0), 0);
        assert_eq!(delay(4, 100, 10_000, 1.0), 800);
        assert_eq!(delay(4, 100, 10_000, 0.25), 200);
        assert_eq!(delay(1, 3, 1000, 1.0 / 3.0), 1);
        assert_eq!(delay(1, 100, 1000, 0.999), 99);
    }

    #[test]
    fn large_attempts_saturate_at_the_cap() {
        assert_eq!(delay(1_000_000_000_000_000, 100, 1000, 1.0), 1000);
        assert_eq!(delay(MAX_INT, MAX_INT, MAX_INT, 1.0), MAX_INT);
        assert_eq!(delay(64, 1, MAX_INT, 1.0), MAX_INT);
        assert_eq!(delay(65, 1, MAX_INT, 1.0), MAX_INT);
        assert_eq!(delay(54, 1, MAX_INT, 1.0), MAX_INT);
        assert_eq!(delay(53, 1, MAX_INT, 1.0), 1 << 52);
        assert_eq!(delay(MAX_INT, 0, MAX_INT, 1.0), 0);
    }

    #[test]
    fn cap_below_base_and_zero_cap() {
        assert_eq!(delay(1, 500, 100, 1.0), 100);
        assert_eq!(delay(1, 500, 0, 1.0), 0);
    }

    #[test]
    fn the_result_never_exceeds_the_window() {
        let jitters = [0.0, 1e-300, 0.1, 0.5, 0.7, 0.9999999999999999, 1.0];
        for attempt in [1, 2, 3, 10, 52, 53, 54, 63, 64, 65, 1 << 40, MAX_INT] {
            for (base, cap) in [(1, MAX_INT), (MAX_INT, MAX_INT), (100, 250), (7, 3), (0, 9)] {
                for jitter in jitters {
                    let d = delay(attempt, base, cap, jitter);
                    assert!(d <= window(attempt, base, cap), "{attempt} {base} {cap} {jitter}");
                    assert!(d <= cap);
                }
            }
        }
    }

    #[test]
    fn out_of_range_arguments_are_refused_by_name() {
        for (args, field) in [
            ((0, 100, 1000, 0.5), "attempt"),
            ((MAX_INT + 1, 100, 1000, 0.5), "attempt"),
            ((1, MAX_INT + 1, 1000, 0.5), "base_ms"),
            ((1, 100, u64::MAX, 0.5), "cap_ms"),
            ((1, 100, 1000, 1.5), "jitter"),
            ((1, 100, 1000, -0.1), "jitter"),
            ((1, 100, 1000, f64::NAN), "jitter"),
            ((1, 100, 1000, f64::INFINITY), "jitter"),
        ] {
            let err = retry_delay(args.0, args.1, args.2, args.3).unwrap_err();
            assert_eq!(err.field(), field, "{err}");
        }
    }

    #[test]
    fn refusals_keep_the_queue_s_wording() {
        let text = |r: Result<u64, DelayError>| r.map_err(|e| e.to_string()).unwrap_err();
        assert_eq!(text(retry_delay(0, 1, 1, 0.5)), "attempt: must be at least 1");
        assert_eq!(text(retry_delay(1, MAX_INT + 1, 1, 0.5)), "base_ms: 9007199254740992 is above 2^53-1");
        assert_eq!(text(retry_delay(1, 1, 1, 1.5)), "jitter: 1.5 is outside [0, 1]");
        assert_eq!(text(retry_delay(1, 1, 1, f64::NAN)), "jitter: NaN is outside [0, 1]");
    }

    #[test]
    fn negative_zero_jitter_is_zero() {
        assert_eq!(delay(3, 100, 1000, -0.0), 0);
    }
}
