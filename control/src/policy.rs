//! What a caller allows for one call: which errors may be retried, how many attempts, how
//! long each may take, and how long to wait between them.
//!
//! Policy apart from mechanism, as tower's `retry/` has it: this file holds only settings and
//! one question ([`Policy::is_retryable`]); [`crate::Call`] and [`crate::Retrier`] apply them.
//! The source document asks for a caller-supplied whitelist of retryable errors (可重试异常的
//! 白名单): an error whose kind is not listed is never retried, however transient it looks —
//! only the caller knows which failures leave the operation safe to repeat (gRFC A6 says the
//! same of `retryableStatusCodes`).

use crate::backoff::Backoff;
use crate::error::ConfigError;

/// One call's retry settings. `K` is the caller's error kind: an HTTP status class, a gRPC
/// code, an enum of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy<K> {
    max_attempts: u32,
    attempt_timeout_ms: u64,
    backoff: Backoff,
    retryable: Vec<K>,
}

impl<K: PartialEq> Policy<K> {
    /// At most `max_attempts` attempts (at least 1; the first included), each given at most
    /// `attempt_timeout_ms` (at least 1) and never more than the time left before the call's
    /// deadline, waiting `backoff` between them, retrying only errors whose kind is in
    /// `retryable`.
    pub fn new(
        max_attempts: u32,
        attempt_timeout_ms: u64,
        backoff: Backoff,
        retryable: impl IntoIterator<Item = K>,
    ) -> Result<Self, ConfigError> {
        if max_attempts == 0 {
            return Err(ConfigError::new("max_attempts", "must be at least 1"));
        }
        if attempt_timeout_ms == 0 {
            return Err(ConfigError::new("attempt_timeout_ms", "must be at least 1"));
        }
        Ok(Policy { max_attempts, attempt_timeout_ms, backoff, retryable: retryable.into_iter().collect() })
    }

    /// Whether an error of this kind may be retried.
    pub fn is_retryable(&self, kind: &K) -> bool {
        self.retryable.contains(kind)
    }

    /// The attempt limit, the first attempt included.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The longest any one attempt is given.
    pub fn attempt_timeout_ms(&self) -> u64 {
        self.attempt_timeout_ms
    }

    /// The wait between attempts.
    pub fn backoff(&self) -> &Backoff {
        &self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_kinds_are_retryable() {
        let p = Policy::new(3, 100, Backoff::Fixed { delay_ms: 0 }, [503u16, 429]).unwrap();
        assert!(p.is_retryable(&503));
        assert!(!p.is_retryable(&500));
    }

    #[test]
    fn zero_attempts_or_a_zero_timeout_are_refused() {
        let none: [u16; 0] = [];
        assert_eq!(
            Policy::new(0, 100, Backoff::Fixed { delay_ms: 0 }, none).unwrap_err().field,
            "max_attempts"
        );
        assert_eq!(
            Policy::new(1, 0, Backoff::Fixed { delay_ms: 0 }, none).unwrap_err().field,
            "attempt_timeout_ms"
        );
    }
}
