//! The backoff strategies the simulation compares, each with the AWS simulator's parameters.
//! Apart from the simulation so that the plot can colour a strategy without depending on it.

use crate::backoff::{Backoff, Jitter};

/// The backoff strategies compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Strategy {
    /// Retry as soon as the failure arrives.
    Immediate,
    /// Exponential backoff, no jitter: everyone who failed together comes back together.
    Exponential,
    /// Exponential backoff with full jitter.
    FullJitter,
    /// Decorrelated jitter.
    Decorrelated,
}

impl Strategy {
    /// Every strategy, in table order.
    pub const ALL: [Strategy; 4] =
        [Strategy::Immediate, Strategy::Exponential, Strategy::FullJitter, Strategy::Decorrelated];

    /// The name used in the table and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Immediate => "immediate",
            Strategy::Exponential => "exponential",
            Strategy::FullJitter => "full-jitter",
            Strategy::Decorrelated => "decorrelated",
        }
    }

    /// The backoff, with the AWS simulator's parameters (base 5 ms, cap 2000 ms).
    pub fn backoff(self) -> Backoff {
        match self {
            Strategy::Immediate => Backoff::Fixed { delay_ms: 0 },
            Strategy::Exponential => Backoff::Exponential { base_ms: 10, cap_ms: 2000, jitter: Jitter::None },
            Strategy::FullJitter => Backoff::Exponential { base_ms: 10, cap_ms: 2000, jitter: Jitter::Full },
            Strategy::Decorrelated => Backoff::Decorrelated { base_ms: 5, cap_ms: 2000 },
        }
    }
}
