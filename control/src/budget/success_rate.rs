//! The source document's gate on one resource (单点重试限制): count the attempts to the target
//! in a sliding window, and allow no retries while their success rate is below a threshold.
//!
//! A low success rate means the target is failing for everyone; retrying then only adds load
//! to it. Until the window holds `min_samples` attempts the rate is not trusted and retries are
//! allowed (a caller that has sent one request which failed has not learnt that the target is
//! down). The comparison is exact: `successes · 10^6 ≥ threshold_ppm · attempts`, the
//! threshold counted in millionths.

use super::limit::Budget;
use super::window::{SLOTS, Window};
use crate::error::{ConfigError, ratio_in};

/// Successes and attempts in one slot.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    successes: u64,
    attempts: u64,
}

/// No retries while the recent success rate is below a threshold.
#[derive(Debug, Clone)]
pub struct SuccessRateGate {
    window: Window<Tally>,
    threshold_ppm: u64,
    min_samples: u64,
}

impl SuccessRateGate {
    /// A gate over `window_ms` (at least 10 ms) that allows retries while at least `threshold`
    /// (0 to 1) of the window's attempts succeeded, or while it holds fewer than
    /// `min_samples` attempts.
    ///
    /// ```
    /// use retryq_control::{Budget, SuccessRateGate};
    ///
    /// // Retries only while at least half of the last second's attempts succeeded.
    /// let mut gate = SuccessRateGate::new(1000, 0.5, 4)?;
    /// gate.record(0, false);
    /// gate.record(0, false);
    /// assert!(gate.withdraw(0), "too few samples to judge");
    /// gate.record(0, false);
    /// gate.record(0, true);
    /// assert!(!gate.withdraw(0), "1 success in 4 attempts");
    /// assert_eq!(gate.counts(0), (1, 4));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(window_ms: u64, threshold: f64, min_samples: u64) -> Result<Self, ConfigError> {
        if window_ms < SLOTS {
            return Err(ConfigError::new("window_ms", format!("{window_ms} is below {SLOTS}")));
        }
        let threshold = ratio_in("threshold", threshold, 0.0, 1.0)?;
        let threshold_ppm = (threshold * 1e6).round() as u64;
        Ok(SuccessRateGate { window: Window::new(window_ms / SLOTS), threshold_ppm, min_samples })
    }

    /// `(successes, attempts)` in the window at `now_ms`.
    pub fn counts(&mut self, now_ms: u64) -> (u64, u64) {
        self.window.at(now_ms);
        self.window
            .slots()
            .fold((0, 0), |(s, a), t| (s.saturating_add(t.successes), a.saturating_add(t.attempts)))
    }
}

impl Budget for SuccessRateGate {
    fn deposit(&mut self, _now_ms: u64) {}

    fn record(&mut self, now_ms: u64, success: bool) {
        let tally = self.window.at(now_ms);
        tally.attempts = tally.attempts.saturating_add(1);
        if success {
            tally.successes = tally.successes.saturating_add(1);
        }
    }

    fn withdraw(&mut self, now_ms: u64) -> bool {
        let (successes, attempts) = self.counts(now_ms);
        if attempts < self.min_samples {
            return true;
        }
        u128::from(successes) * 1_000_000 >= u128::from(self.threshold_ppm) * u128::from(attempts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> SuccessRateGate {
        SuccessRateGate::new(10_000, 0.5, 4).unwrap()
    }

    #[test]
    fn too_few_samples_never_close_the_gate() {
        let mut g = gate();
        (0..3).for_each(|t| g.record(t, false));
        assert!(g.withdraw(3));
    }

    #[test]
    fn a_rate_below_the_threshold_closes_the_gate() {
        let mut g = gate();
        g.record(0, true);
        (1..4).for_each(|t| g.record(t, false));
        assert!(!g.withdraw(4));
    }

    #[test]
    fn a_rate_at_the_threshold_keeps_it_open() {
        let mut g = gate();
        (0..2).for_each(|t| g.record(t, true));
        (2..4).for_each(|t| g.record(t, false));
        assert!(g.withdraw(4));
    }

    #[test]
    fn old_failures_leave_the_window() {
        let mut g = gate();
        (0..10).for_each(|t| g.record(t, false));
        assert!(!g.withdraw(10));
        assert!(g.withdraw(10_000));
    }

    #[test]
    fn out_of_range_settings_are_refused() {
        assert_eq!(SuccessRateGate::new(9, 0.5, 1).unwrap_err().field, "window_ms");
        assert_eq!(SuccessRateGate::new(1000, 1.5, 1).unwrap_err().field, "threshold");
    }
}
