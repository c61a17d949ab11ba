//! retryq-control: retry control for the calling side of an RPC.
//!
//! The queue (`retryq`) makes retries durable; this crate makes them safe to send. Its
//! source is the project's second seed document on retries in an RPC client: retry within
//! the caller's time (a deadline across attempts, each attempt's timeout cut to what is
//! left), away from the node that failed (RocketMQ's latency fault tolerance), only errors the
//! caller lists, with backoff between attempts, and never so many that retries take a
//! struggling service down — retries multiply down a call chain as n·r^(m−1).
//!
//! The parts, each in its own module:
//!
//! - [`backoff`]: fixed, linear, random, exponential (SPEC section 2's formula) and
//!   decorrelated-jitter waits, from a seedable random source;
//! - [`Policy`]: the caller's whitelist of retryable error kinds, attempt limit, attempt
//!   timeout and backoff;
//! - [`Call`]: the decisions of the attempt loop against an overall deadline, as a state
//!   machine that neither sleeps nor reads a clock;
//! - [`Retrier`]: the blocking attempt loop over an injected [`Clock`];
//! - [`nodes`]: RocketMQ's latency bands and not-available durations, and a node selector that
//!   sends a retry elsewhere;
//! - [`budget`]: why budgets rather than retry limits, and three of them — a ratio of recent
//!   requests (Finagle, tower), a success-rate gate (the seed), a token bucket (gRPC);
//! - [`Pushback`]: a response's "don't retry" or "retry after N ms";
//! - [`amplification`]: n·r^(m−1) and its assumptions;
//! - [`simulate`]: a seeded discrete-event simulation of many clients retrying against a
//!   contended server over several layers, the model behind `retryq simulate`.
//!
//! ```
//! use rand::SeedableRng;
//! use rand::rngs::ChaCha8Rng;
//! use retryq_control::{
//!     Backoff, Failure, FaultTable, Jitter, ManualClock, NodeSelector, Policy, Retrier, TpsBudget,
//! };
//!
//! #[derive(Debug, PartialEq)]
//! enum Kind { Unavailable, BadRequest }
//!
//! let backoff = Backoff::Exponential { base_ms: 100, cap_ms: 1000, jitter: Jitter::Full };
//! let policy = Policy::new(4, 2000, backoff, [Kind::Unavailable])?;
//! let nodes = NodeSelector::new(2, FaultTable::rocketmq())?;
//! let mut retrier = Retrier::new(policy, TpsBudget::default(), nodes, ChaCha8Rng::seed_from_u64(7));
//!
//! let clock = ManualClock::new(0);
//! let done = retrier.call(&clock, 5000, |attempt| {
//!     if attempt.number == 1 { Err(Failure::new(Kind::Unavailable, "node 0 said 503")) } else { Ok(attempt.node) }
//! });
//! let done = done.map_err(|e| e.to_string())?;
//! assert_eq!((done.attempts, done.value), (2, 1)); // the retry went to the other node
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
pub mod amplification;
pub mod backoff;
pub mod budget;
mod call;
mod clock;
mod error;
pub mod nodes;
mod policy;
mod pushback;
mod retrier;
pub mod simulate;

pub use backoff::{Backoff, Jitter};
pub use budget::{Budget, PerTarget, RetryThrottle, SuccessRateGate, TpsBudget, Unlimited};
pub use call::{Call, Next, Plan, Stop};
pub use clock::{Clock, ClockError, ManualClock, SystemClock};
pub use error::ConfigError;
pub use nodes::{FaultTable, NodeSelector, Observed, UnknownNode};
pub use policy::Policy;
pub use pushback::Pushback;
pub use retrier::{Attempt, Done, Failure, Retrier, RetryError};
