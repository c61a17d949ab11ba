//! retryq-core: the pieces of the SPEC that more than one side of retryq needs, and nothing
//! that needs a database.
//!
//! The queue (`retryq`) stores jobs in SQLite; the calling side (`retryq-control`) decides
//! retries in memory; the worker and the benchmarks read the wall clock. All of them must
//! agree on three things, so those three live here, once:
//!
//! - [`limits`]: the integer ranges of SPEC section 3 ([`MAX_INT`] = 2^53 − 1, …);
//! - [`delay`]: SPEC section 2's backoff delay, [`retry_delay`], and its jitter check;
//! - [`clock`]: the machine's wall clock as the queue's time, [`now_ms`], with one rule at
//!   its edges (a typed [`ClockError`] before 1970 and past 2^53 − 1 ms).
//!
//! ```
//! assert_eq!(retryq_core::retry_delay(3, 100, 250, 0.5)?, 125);
//! assert!(retryq_core::now_ms()? <= retryq_core::MAX_INT);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The model (`retryq-model`) does not use this crate: it is the SPEC's second, independent
//! reading, and sharing the formula would make the two readings agree by construction.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod clock;
pub mod delay;
pub mod limits;

pub use clock::{ClockError, millis_since_epoch, now_ms};
pub use delay::{DelayError, retry_delay, validate_jitter};
pub use limits::{MAX_ATTEMPTS, MAX_ID_BYTES, MAX_INT, MAX_PAYLOAD_BYTES};
