//! The delay formula of SPEC section 2.
//!
//! ```text
//! window   = min(cap_ms, base_ms * 2^(attempt - 1))      -- exact integers, no overflow
//! delay_ms = floor(window * jitter)                       -- one IEEE-754 binary64 multiply, then floor
//! ```
//!
//! Layer: the SPEC's vocabulary, the bottom: pure arithmetic that uses nothing of the crate.
//! It may not reach up, so the store, the seeded bugs that bend it and the conformance
//! generator all compute one and the same formula.

/// The delay after failed attempt number `attempt`, for arguments already checked: `attempt`
/// ≥ 1, `jitter` in [0, 1], every integer at most 2^53 − 1.
pub fn retry_delay(attempt: u64, base_ms: u64, cap_ms: u64, jitter: f64) -> u64 {
    let window = window(attempt, base_ms, cap_ms);
    // `window` ≤ 2^53 − 1 converts to binary64 exactly, so this is the one multiply the
    // SPEC names; the product lies in [0, window], so the floor converts back exactly.
    (window as f64 * jitter).floor() as u64
}

/// `min(cap_ms, base_ms * 2^(attempt - 1))` computed exactly: the doubling saturates at the
/// cap instead of overflowing, so attempt 10^15 is as fine as attempt 1.
pub(crate) fn window(attempt: u64, base_ms: u64, cap_ms: u64) -> u64 {
    if base_ms == 0 {
        return 0;
    }
    let doublings = attempt.saturating_sub(1);
    if doublings >= 64 {
        // base_ms ≥ 1, so the doubled window is at least 2^64, above any cap.
        return cap_ms;
    }
    // base_ms < 2^64 and doublings < 64: the product fits in 128 bits.
    let doubled = u128::from(base_ms) << doublings;
    if doubled < u128::from(cap_ms) { base_ms << doublings } else { cap_ms }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_section_2_examples() {
        assert_eq!(retry_delay(3, 100, 250, 0.5), 125, "the cap applies before jitter");
        assert_eq!(retry_delay(1, 100, 1000, 0.5), 50);
        assert_eq!(retry_delay(2, 100, 1000, 0.5), 100);
        assert_eq!(retry_delay(1_000_000_000_000_000, 100, 1000, 1.0), 1000, "large attempts saturate");
        assert_eq!(retry_delay(7, 0, 1000, 1.0), 0, "base 0 gives 0");
        assert_eq!(retry_delay(1, 10, 1000, 0.7), 7, "one binary64 multiply: 10 * 0.7 = 7.000…");
    }

    #[test]
    fn edges() {
        assert_eq!(retry_delay(1, 100, 0, 1.0), 0, "cap 0");
        assert_eq!(retry_delay(1, 100, 50, 1.0), 50, "cap below base");
        assert_eq!(retry_delay(1, 100, 1000, 0.0), 0, "jitter 0");
        assert_eq!(retry_delay(64, 1, u64::MAX >> 11, 1.0), u64::MAX >> 11, "2^63 is above a 2^53 cap");
        assert_eq!(retry_delay(54, 1, (1 << 53) - 1, 1.0), (1 << 53) - 1);
        assert_eq!(retry_delay(53, 1, (1 << 53) - 1, 1.0), 1 << 52);
        assert_eq!(retry_delay(u64::MAX, (1 << 53) - 1, (1 << 53) - 1, 0.5), (1 << 52) - 1);
    }
}
