//! A retry budget as a ratio of recent requests, with a floor: Finagle's `RetryBudget` and
//! tower's `TpsBudget`.
//!
//! Each call deposits `retry_ratio` of a retry; each retry withdraws a whole one; deposits and
//! withdrawals count for `ttl` (a sliding window of 10 slots), and on top of them there is a
//! reserve of `min_per_sec · ttl` retries that is never used up, so that a caller sending few
//! requests may still retry now and then. Over any stretch shorter than 0.9·ttl, the retries
//! granted are at most `retry_ratio` times the requests made from one ttl before the stretch
//! to its end, plus the reserve (the property `the_tps_budget_bounds_retries_in_every_stretch`).
//!
//! The arithmetic is on integers: a retry is 1000 units and a deposit `round(1000 ·
//! retry_ratio)` units (the ratio counts to a thousandth), where tower rounds `1/ratio` down
//! to an integer number of deposits per retry.

use super::limit::Budget;
use super::window::{SLOTS, Window};
use crate::error::{ConfigError, ratio_in};

/// The units one retry withdraws.
const RETRY_UNITS: i64 = 1000;

/// Retries as a share of recent requests, plus a floor per second.
#[derive(Debug, Clone)]
pub struct TpsBudget {
    window: Window<i64>,
    deposit_units: i64,
    reserve_units: i64,
}

impl Default for TpsBudget {
    /// tower's and Finagle's defaults: 10 s, 10 retries a second, 20 % of requests.
    fn default() -> Self {
        TpsBudget { window: Window::new(1000), deposit_units: 200, reserve_units: 10 * 10_000 }
    }
}

impl TpsBudget {
    /// A budget over `ttl_ms` (1 to 60 seconds, Finagle's bounds) that lets `retry_ratio` (0 to
    /// 1000) retries through per request deposited, plus `min_per_sec` retries a second.
    ///
    /// ```
    /// use retryq_control::{Budget, TpsBudget};
    ///
    /// // 20 % of requests, no floor, over 10 s.
    /// let mut budget = TpsBudget::new(10_000, 0, 0.2)?;
    /// for _ in 0..10 {
    ///     budget.deposit(0);
    /// }
    /// // Ten requests earn two retries; the third is refused however badly it is needed.
    /// assert_eq!([budget.withdraw(0), budget.withdraw(0), budget.withdraw(0)], [true, true, false]);
    /// // Five more requests earn one more.
    /// for _ in 0..5 {
    ///     budget.deposit(100);
    /// }
    /// assert!(budget.withdraw(100));
    /// // Deposits age out with the window: an idle target starts again from nothing.
    /// assert!(!budget.withdraw(30_000));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(ttl_ms: u64, min_per_sec: u32, retry_ratio: f64) -> Result<Self, ConfigError> {
        if !(1000..=60_000).contains(&ttl_ms) {
            return Err(ConfigError::new("ttl_ms", format!("{ttl_ms} is outside [1000, 60000]")));
        }
        let ratio = ratio_in("retry_ratio", retry_ratio, 0.0, 1000.0)?;
        let slot_ms = ttl_ms / SLOTS;
        // ratio ≤ 1000, so the rounded product is at most 10^6; min_per_sec ≤ 2^32 and the
        // window ≤ 60000 ms, so the reserve stays below 2^48.
        let deposit_units = (ratio * RETRY_UNITS as f64).round() as i64;
        let reserve_units = i64::from(min_per_sec) * (slot_ms * SLOTS) as i64;
        Ok(TpsBudget { window: Window::new(slot_ms), deposit_units, reserve_units })
    }

    /// Retries that could be withdrawn at `now_ms` (whole ones).
    pub fn balance(&mut self, now_ms: u64) -> i64 {
        self.window.at(now_ms);
        self.units() / RETRY_UNITS
    }

    fn units(&self) -> i64 {
        self.window.slots().fold(self.reserve_units, |sum, s| sum.saturating_add(*s))
    }
}

impl Budget for TpsBudget {
    fn deposit(&mut self, now_ms: u64) {
        let slot = self.window.at(now_ms);
        *slot = slot.saturating_add(self.deposit_units);
    }

    fn record(&mut self, _now_ms: u64, _success: bool) {}

    fn withdraw(&mut self, now_ms: u64) -> bool {
        self.window.at(now_ms);
        if self.units() < RETRY_UNITS {
            return false;
        }
        let slot = self.window.at(now_ms);
        *slot = slot.saturating_sub(RETRY_UNITS);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_budget_refuses() {
        let mut b = TpsBudget::new(1000, 0, 1.0).unwrap();
        assert!(!b.withdraw(0));
    }

    #[test]
    fn the_floor_allows_min_per_sec_times_ttl() {
        let mut b = TpsBudget::new(1000, 5, 1.0).unwrap();
        assert_eq!((0..10).filter(|_| b.withdraw(0)).count(), 5);
    }

    #[test]
    fn a_fifth_of_the_requests_may_be_retried() {
        let mut b = TpsBudget::new(10_000, 0, 0.2).unwrap();
        (0..50).for_each(|t| b.deposit(t));
        assert_eq!((0..50).filter(|&t| b.withdraw(50 + t)).count(), 10);
    }

    #[test]
    fn deposits_leak_out_after_the_ttl() {
        let mut b = TpsBudget::new(1000, 0, 1.0).unwrap();
        b.deposit(0);
        assert!(!b.withdraw(3000));
    }

    #[test]
    fn a_deposit_counts_for_at_least_nine_tenths_of_the_ttl() {
        // tower's `tps_slots` scenario, in milliseconds.
        let mut b = TpsBudget::new(1000, 0, 0.5).unwrap();
        b.deposit(0);
        b.deposit(0);
        assert!(b.withdraw(901));
        b.deposit(2902);
        b.deposit(3203);
        b.deposit(4004);
        // The first of these has left the window; the other two make one retry.
        assert!(b.withdraw(4004));
        assert!(!b.withdraw(4004));
    }

    #[test]
    fn out_of_range_settings_are_refused() {
        assert_eq!(TpsBudget::new(999, 1, 0.2).unwrap_err().field, "ttl_ms");
        assert_eq!(TpsBudget::new(60_001, 1, 0.2).unwrap_err().field, "ttl_ms");
        assert_eq!(TpsBudget::new(1000, 1, -0.1).unwrap_err().field, "retry_ratio");
        assert_eq!(TpsBudget::new(1000, 1, f64::NAN).unwrap_err().field, "retry_ratio");
        assert_eq!(TpsBudget::new(1000, 1, 1000.5).unwrap_err().field, "retry_ratio");
    }

    #[test]
    fn the_default_is_tower_s() {
        let mut b = TpsBudget::default();
        assert_eq!(b.balance(0), 100);
        b.deposit(0);
        assert_eq!(b.units(), 100_200);
    }
}
