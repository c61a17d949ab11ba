//! gRPC's retry throttling (gRFC A6, "Throttling Retry Attempts and Hedged RPCs").
//!
//! A token count starts at `max_tokens` and stays in `[0, max_tokens]`; every failed attempt
//! takes one token, every success gives back `token_ratio`; while the count is at or below
//! `max_tokens / 2`, nothing is retried. With `token_ratio` 0.1 retries stop once failures
//! outnumber successes by about ten to one. As in gRPC's C core, tokens are counted in
//! thousandths (A6: "up to 3 decimal places are supported"), so the arithmetic is exact.

use super::limit::Budget;
use crate::error::{ConfigError, ratio_in};

/// One token, in thousandths.
const TOKEN: u64 = 1000;

/// gRPC's token bucket over successes and failures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryThrottle {
    max_milli: u64,
    ratio_milli: u64,
    milli_tokens: u64,
}

impl RetryThrottle {
    /// A throttle with `max_tokens` (above 0, at most 1000, as gRPC's service config allows)
    /// that gains `token_ratio` (above 0, at most 1000) a success; both to a thousandth.
    ///
    /// ```
    /// use retryq_control::{Budget, RetryThrottle};
    ///
    /// let mut throttle = RetryThrottle::new(10.0, 0.1)?;
    /// assert!(throttle.withdraw(0));
    /// // Each failure takes a token; at half of the maximum, retries stop.
    /// for _ in 0..5 {
    ///     throttle.record(0, false);
    /// }
    /// assert!(!throttle.withdraw(0));
    /// // Successes earn tokens back slowly (0.1 each): recovery is gradual, not a stampede.
    /// for _ in 0..10 {
    ///     throttle.record(0, true);
    /// }
    /// assert!(throttle.withdraw(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(max_tokens: f64, token_ratio: f64) -> Result<Self, ConfigError> {
        let max_milli = (ratio_in("max_tokens", max_tokens, 0.0, 1000.0)? * 1000.0).round() as u64;
        let ratio_milli = (ratio_in("token_ratio", token_ratio, 0.0, 1000.0)? * 1000.0).round() as u64;
        if max_milli == 0 {
            return Err(ConfigError::new("max_tokens", format!("{max_tokens} is below a thousandth")));
        }
        if ratio_milli == 0 {
            return Err(ConfigError::new("token_ratio", format!("{token_ratio} is below a thousandth")));
        }
        Ok(RetryThrottle { max_milli, ratio_milli, milli_tokens: max_milli })
    }

    /// The token count, in thousandths.
    pub fn milli_tokens(&self) -> u64 {
        self.milli_tokens
    }
}

impl Budget for RetryThrottle {
    fn deposit(&mut self, _now_ms: u64) {}

    fn record(&mut self, _now_ms: u64, success: bool) {
        self.milli_tokens = if success {
            self.milli_tokens.saturating_add(self.ratio_milli).min(self.max_milli)
        } else {
            self.milli_tokens.saturating_sub(TOKEN)
        };
    }

    /// Retry only above half of `max_tokens`. Withdrawing takes no token: the failure that
    /// led here already did.
    fn withdraw(&mut self, _now_ms: u64) -> bool {
        self.milli_tokens.saturating_mul(2) > self.max_milli
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_core_s_basic_scenario() {
        // Max 4 tokens, threshold 2, each success +1.6.
        let mut t = RetryThrottle::new(4.0, 1.6).unwrap();
        t.record(0, false);
        assert!(t.withdraw(0), "3 tokens");
        t.record(0, true);
        assert_eq!(t.milli_tokens(), 4000, "not above the maximum");
        t.record(0, false);
        assert!(t.withdraw(0), "3 tokens");
        t.record(0, false);
        assert!(!t.withdraw(0), "2 tokens: at the threshold");
        t.record(0, true);
        assert!(t.withdraw(0), "3.6 tokens");
    }

    #[test]
    fn tokens_never_go_below_zero() {
        let mut t = RetryThrottle::new(2.0, 0.5).unwrap();
        (0..10).for_each(|_| t.record(0, false));
        assert_eq!(t.milli_tokens(), 0);
        (0..3).for_each(|_| t.record(0, true));
        assert_eq!(t.milli_tokens(), 1500);
    }

    #[test]
    fn out_of_range_settings_are_refused() {
        assert_eq!(RetryThrottle::new(0.0, 0.1).unwrap_err().field, "max_tokens");
        assert_eq!(RetryThrottle::new(1001.0, 0.1).unwrap_err().field, "max_tokens");
        assert_eq!(RetryThrottle::new(10.0, 0.0).unwrap_err().field, "token_ratio");
        assert_eq!(RetryThrottle::new(10.0, f64::INFINITY).unwrap_err().field, "token_ratio");
    }
}
