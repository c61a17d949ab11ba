//! Budgets: how many retries a caller may send, whatever each call's own policy allows.
//!
//! # Why budgets rather than a maximum number of retries?
//!
//! "Retry at most 3 times" is the usual configuration, and it fails in two ways.
//!
//! **The number is a guess.** It must be high enough to ride out a blip and low enough not to
//! hurt when things are really broken, and one number cannot be both: the same 3 that hides
//! a lost packet quadruples the load on a server that is failing every request.
//!
//! **It multiplies.** A retry limit is per call, so it does nothing about how many calls are
//! failing at once. When a server slows down, every caller retries, the retries slow it down
//! further, and the failure feeds itself (a retry storm). Across layers it compounds: with r
//! attempts per hop, the last of m layers sees n·r^(m−1) calls for n requests (see
//! [`crate::amplification`]) — three layers retrying 3 times turn one outage into nine times
//! the traffic.
//!
//! A budget bounds retries by what is happening to the caller as a whole, not to one call:
//! retries may be a fraction of recent requests ([`TpsBudget`], after Finagle's `RetryBudget`
//! and tower's `TpsBudget`), stop when the recent success rate is low ([`SuccessRateGate`],
//! the source document's 单点重试限制), or stop when failures outweigh successes
//! ([`RetryThrottle`], gRPC's retry throttling). When everything is healthy a budget never
//! gets in the way; when everything fails, retries fall to a trickle instead of multiplying.
//! Keep a budget per target (the downstream service; [`PerTarget`] holds one per name), and
//! keep the per-call limit too — it bounds one call's latency, the budget bounds the load.
//!
//! # How the attempt loop uses a budget
//!
//! [`Budget::deposit`] when a call starts (its first attempt, not its retries),
//! [`Budget::record`] after each attempt that succeeded or failed in a way worth retrying,
//! and [`Budget::withdraw`] when a retry is about to be scheduled: `false` ends the call.

mod limit;
mod success_rate;
mod throttle;
mod tps;
mod window;

use std::collections::HashMap;

pub use limit::{Budget, Unlimited};
pub use success_rate::SuccessRateGate;
pub use throttle::RetryThrottle;
pub use tps::TpsBudget;

/// One budget per target, each a fresh copy of a template the first time its target is seen.
/// Targets are never forgotten: meant for a known set (the hosts of a list of URLs).
#[derive(Debug, Clone)]
pub struct PerTarget<B> {
    template: B,
    budgets: HashMap<String, B>,
}

impl<B: Budget + Clone> PerTarget<B> {
    /// Budgets that start as copies of `template`.
    pub fn new(template: B) -> Self {
        PerTarget { template, budgets: HashMap::new() }
    }

    /// The budget of `target`.
    ///
    /// ```
    /// use retryq_control::{Budget, PerTarget, TpsBudget};
    ///
    /// let mut budgets = PerTarget::new(TpsBudget::new(10_000, 0, 1.0)?);
    /// budgets.get("a.example:443").deposit(0);
    /// // One target's traffic earns nothing for another.
    /// assert!(!budgets.get("b.example:443").withdraw(0));
    /// assert!(budgets.get("a.example:443").withdraw(0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&mut self, target: &str) -> &mut B {
        self.budgets.entry(target.to_owned()).or_insert_with(|| self.template.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_always_allows() {
        let mut b = Unlimited;
        b.record(0, false);
        assert!((0..1000).all(|t| b.withdraw(t)));
    }

    #[test]
    fn targets_have_budgets_of_their_own() {
        let mut targets = PerTarget::new(RetryThrottle::new(2.0, 1.0).unwrap());
        // Two failures put "a" at 0 tokens, at or below half of 2: no retries there.
        targets.get("a").record(0, false);
        targets.get("a").record(0, false);
        assert!(!targets.get("a").withdraw(0));
        assert!(targets.get("b").withdraw(0));
    }
}
