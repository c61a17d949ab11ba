//! How long to wait before the next attempt.
//!
//! Waiting a little before retrying a transient failure raises the odds that the retry
//! succeeds, and randomness spreads out the retries of many callers that failed together,
//! so that they do not all come back at the same instant (the source document's 退避策略).
//! The strategies and their names follow Marc Brooker's "Exponential Backoff And Jitter"
//! (AWS Architecture Blog, 2015) and its simulator:
//!
//! - [`Backoff::Fixed`], [`Backoff::Linear`], [`Backoff::Random`]: the seed's fixed, linear
//!   and random-in-a-range waits;
//! - [`Backoff::Exponential`]: SPEC section 2's formula, `floor(min(cap, base·2^(n−1)) ·
//!   jitter)`, computed by [`retryq_core::retry_delay`] itself, with the jitter ratio drawn as
//!   [`Jitter`] says (none, full, equal);
//! - [`Backoff::Decorrelated`]: AWS's `sleep = min(cap, random_between(base, sleep·3))`.
//!
//! Every function here is total: any `u64` inputs give a delay, sums saturate, and no delay
//! exceeds [`Backoff::cap_ms`]. Randomness comes from the caller's [`rand::Rng`], so a seeded
//! generator (`rand::rngs::ChaCha8Rng`) makes every delay reproducible.

use rand::{Rng, RngExt};

/// The largest time SPEC section 2's formula accepts, 2^53 − 1 ms (about 285,000 years).
const MAX_MS: u64 = retryq_core::MAX_INT;

/// A backoff strategy: which wait follows the `n`-th consecutive failure.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Backoff {
    /// The same wait every time (`0` retries at once).
    Fixed {
        /// The wait.
        delay_ms: u64,
    },
    /// `initial + step·(n − 1)`, at most `cap`.
    Linear {
        /// The wait after the first failure.
        initial_ms: u64,
        /// How much longer each further wait is.
        step_ms: u64,
        /// No wait is longer.
        cap_ms: u64,
    },
    /// Uniform in `[min, max]`, both included (the bounds may come in either order).
    Random {
        /// One bound.
        min_ms: u64,
        /// The other bound.
        max_ms: u64,
    },
    /// SPEC section 2: `floor(min(cap, base·2^(n−1)) · ratio)`, the ratio drawn per [`Jitter`].
    /// `base` and `cap` above 2^53 − 1 are read as 2^53 − 1, the formula's range.
    Exponential {
        /// The window after the first failure.
        base_ms: u64,
        /// The largest window.
        cap_ms: u64,
        /// How the ratio in `[0, 1]` is drawn.
        jitter: Jitter,
    },
    /// AWS's decorrelated jitter: `min(cap, random_between(base, previous·3))`, the first
    /// `previous` being `base`.
    Decorrelated {
        /// The shortest wait (unless `cap` is shorter).
        base_ms: u64,
        /// No wait is longer.
        cap_ms: u64,
    },
}

/// How [`Backoff::Exponential`] draws the ratio its window is multiplied by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Jitter {
    /// Ratio 1: the whole window, the same for every caller ("exponential, no jitter").
    None,
    /// Uniform in `[0, 1)`: AWS's "full jitter".
    Full,
    /// `0.5 +` uniform in `[0, 0.5)`: AWS's "equal jitter", at least half the window.
    Equal,
}

impl Backoff {
    /// The wait after the `failures`-th consecutive failure (1 for the first; 0 is read as 1).
    ///
    /// `previous_ms` is the wait this sequence used last time, `None` before the first; only
    /// [`Backoff::Decorrelated`] reads it. Never more than [`Backoff::cap_ms`].
    ///
    /// ```
    /// use rand::SeedableRng;
    /// use rand::rngs::ChaCha8Rng;
    /// use retryq_control::{Backoff, Jitter};
    ///
    /// let mut rng = ChaCha8Rng::seed_from_u64(1);
    /// // Without jitter: SPEC section 2's window, base · 2^(n−1) up to the cap.
    /// let plain = Backoff::Exponential { base_ms: 100, cap_ms: 1000, jitter: Jitter::None };
    /// let waits: Vec<u64> = (1..=5).map(|n| plain.delay(n, None, &mut rng)).collect();
    /// assert_eq!(waits, [100, 200, 400, 800, 1000]);
    /// // With full jitter, anywhere in the window: clients that failed together spread out.
    /// let jittered = Backoff::Exponential { base_ms: 100, cap_ms: 1000, jitter: Jitter::Full };
    /// assert!((0..100).all(|_| jittered.delay(3, None, &mut rng) < 400));
    /// ```
    pub fn delay<R: Rng + ?Sized>(&self, failures: u64, previous_ms: Option<u64>, rng: &mut R) -> u64 {
        let n = failures.max(1);
        match *self {
            Backoff::Fixed { delay_ms } => delay_ms,
            Backoff::Linear { initial_ms, step_ms, cap_ms } => {
                initial_ms.saturating_add(step_ms.saturating_mul(n - 1)).min(cap_ms)
            }
            Backoff::Random { min_ms, max_ms } => uniform(rng, min_ms, max_ms),
            Backoff::Exponential { base_ms, cap_ms, jitter } => {
                let (base, cap) = (base_ms.min(MAX_MS), cap_ms.min(MAX_MS));
                let ratio = match jitter {
                    Jitter::None => 1.0,
                    Jitter::Full => rng.random::<f64>(),
                    Jitter::Equal => 0.5 + rng.random::<f64>() / 2.0,
                };
                // The arguments are in the formula's range by construction (1 ≤ n, base and cap ≤
                // 2^53 − 1; ratio in [0, 1]), so the error arm is never taken; it keeps
                // the function total should that ever change.
                retryq_core::retry_delay(n.min(MAX_MS), base, cap, ratio).unwrap_or(0).min(cap)
            }
            Backoff::Decorrelated { base_ms, cap_ms } => {
                let previous = previous_ms.unwrap_or(base_ms);
                uniform(rng, base_ms, previous.saturating_mul(3)).min(cap_ms)
            }
        }
    }

    /// The longest wait this strategy can return.
    pub fn cap_ms(&self) -> u64 {
        match *self {
            Backoff::Fixed { delay_ms } => delay_ms,
            Backoff::Linear { cap_ms, .. } | Backoff::Decorrelated { cap_ms, .. } => cap_ms,
            Backoff::Random { min_ms, max_ms } => min_ms.max(max_ms),
            Backoff::Exponential { cap_ms, .. } => cap_ms.min(MAX_MS),
        }
    }
}

/// Uniform in `[min(a, b), max(a, b)]`, both ends included.
fn uniform<R: Rng + ?Sized>(rng: &mut R, a: u64, b: u64) -> u64 {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    rng.random_range(lo..=hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::ChaCha8Rng;

    fn rng() -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(7)
    }

    #[test]
    fn fixed_waits_the_same_every_time() {
        let b = Backoff::Fixed { delay_ms: 40 };
        assert_eq!([1, 2, 9].map(|n| b.delay(n, None, &mut rng())), [40, 40, 40]);
    }

    #[test]
    fn linear_grows_by_its_step_up_to_the_cap() {
        let b = Backoff::Linear { initial_ms: 100, step_ms: 50, cap_ms: 220 };
        assert_eq!([1, 2, 3, 4].map(|n| b.delay(n, None, &mut rng())), [100, 150, 200, 220]);
    }

    #[test]
    fn exponential_without_jitter_is_the_spec_window() {
        let b = Backoff::Exponential { base_ms: 100, cap_ms: 250, jitter: Jitter::None };
        assert_eq!([1, 2, 3, 40].map(|n| b.delay(n, None, &mut rng())), [100, 200, 250, 250]);
    }

    #[test]
    fn exponential_agrees_with_retry_delay_for_the_ratio_it_drew() {
        // Equal jitter draws 0.5 + u/2; full jitter draws u: replay the same generator.
        let b = Backoff::Exponential { base_ms: 100, cap_ms: 1000, jitter: Jitter::Full };
        let mut mirror = rng();
        let u: f64 = mirror.random();
        assert_eq!(
            b.delay(3, None, &mut rng()),
            retryq_core::retry_delay(3, 100, 1000, u).unwrap_or(u64::MAX)
        );
    }

    #[test]
    fn equal_jitter_keeps_at_least_half_the_window() {
        let b = Backoff::Exponential { base_ms: 1000, cap_ms: 1000, jitter: Jitter::Equal };
        let mut r = rng();
        for _ in 0..200 {
            let d = b.delay(1, None, &mut r);
            assert!((500..1000).contains(&d), "{d}");
        }
    }

    #[test]
    fn decorrelated_starts_between_base_and_three_base() {
        let b = Backoff::Decorrelated { base_ms: 10, cap_ms: 1000 };
        let mut r = rng();
        for _ in 0..200 {
            assert!((10..=30).contains(&b.delay(1, None, &mut r)));
        }
    }

    #[test]
    fn decorrelated_grows_from_the_previous_wait() {
        let b = Backoff::Decorrelated { base_ms: 10, cap_ms: 1_000_000 };
        let mut r = rng();
        for _ in 0..200 {
            assert!((10..=3000).contains(&b.delay(5, Some(1000), &mut r)));
        }
    }

    #[test]
    fn random_accepts_its_bounds_in_either_order() {
        let b = Backoff::Random { min_ms: 90, max_ms: 10 };
        let mut r = rng();
        for _ in 0..200 {
            assert!((10..=90).contains(&b.delay(1, None, &mut r)));
        }
        assert_eq!(b.cap_ms(), 90);
    }

    #[test]
    fn huge_inputs_saturate_instead_of_overflowing() {
        let b = Backoff::Linear { initial_ms: u64::MAX, step_ms: u64::MAX, cap_ms: u64::MAX };
        assert_eq!(b.delay(u64::MAX, None, &mut rng()), u64::MAX);
        let b = Backoff::Exponential { base_ms: u64::MAX, cap_ms: u64::MAX, jitter: Jitter::None };
        assert_eq!(b.delay(u64::MAX, None, &mut rng()), MAX_MS);
        let b = Backoff::Decorrelated { base_ms: u64::MAX, cap_ms: u64::MAX };
        assert_eq!(b.delay(1, Some(u64::MAX), &mut rng()), u64::MAX);
    }
}
