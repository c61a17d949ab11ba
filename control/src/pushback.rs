//! What a response says about retrying it: chain-level suppression.
//!
//! Retries multiply across layers (see [`crate::amplification`]): if every hop of an
//! m-layer chain retries, the last layer sees n·r^(m−1) calls. The cure the source document
//! names (限制链路重试) is to let the callee tell its caller — in a `retry_flag` in the
//! response, or in a business code — that retrying is pointless, typically because the
//! callee has retried already or is overloaded. gRPC standardised the same idea as server
//! pushback (gRFC A6): the trailer `grpc-retry-pushback-ms` carries a delay in milliseconds
//! before the next attempt, and a negative or unparseable value means "do not retry".
//!
//! The attempt loop obeys a [`Pushback`] as gRPC does: [`Pushback::DontRetry`] ends the call;
//! [`Pushback::RetryAfter`] replaces the backoff for the next wait (still within the
//! deadline, the attempt limit and the budget), and the backoff sequence starts over after it.

/// A response's instruction about retrying it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pushback {
    /// The response says nothing: the policy decides.
    #[default]
    None,
    /// Do not retry this call (a `retry_flag` of false; a negative pushback).
    DontRetry,
    /// Retry, but not before this many milliseconds.
    RetryAfter(u64),
}

impl Pushback {
    /// gRPC's reading of a `grpc-retry-pushback-ms` value: a non-negative integer is a delay,
    /// anything else — negative, empty, not a number — means do not retry.
    ///
    /// gRFC A6 asks for a signed 32-bit decimal without needless leading zeros; this accepts
    /// any decimal integer (surrounding white space allowed) rather than turning a sloppy but
    /// clear delay into a refusal. One too large for a `u64` is still a delay, the longest
    /// there is, as `Retry-After` reads too many digits: a receiver asking for more time than
    /// can be counted has not asked never to be retried.
    ///
    /// ```
    /// use retryq_control::Pushback;
    ///
    /// assert_eq!(Pushback::from_grpc_header("250"), Pushback::RetryAfter(250));
    /// assert_eq!(Pushback::from_grpc_header("-1"), Pushback::DontRetry);
    /// assert_eq!(Pushback::from_grpc_header("soon"), Pushback::DontRetry);
    /// ```
    pub fn from_grpc_header(value: &str) -> Pushback {
        let value = value.trim();
        let digits = value.strip_prefix('+').unwrap_or(value);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            return Pushback::RetryAfter(digits.parse::<u64>().unwrap_or(u64::MAX));
        }
        match value.parse::<i64>() {
            Ok(ms) => Pushback::from_grpc_ms(ms),
            Err(_) => Pushback::DontRetry,
        }
    }

    /// A pushback in milliseconds, gRPC's way: negative means do not retry.
    pub fn from_grpc_ms(ms: i64) -> Pushback {
        match u64::try_from(ms) {
            Ok(ms) => Pushback::RetryAfter(ms),
            Err(_) => Pushback::DontRetry,
        }
    }

    /// The source document's `retry_flag`: `false` means the callee asks not to be retried.
    pub fn from_retry_flag(retry: bool) -> Pushback {
        if retry { Pushback::None } else { Pushback::DontRetry }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_negative_header_is_a_delay() {
        assert_eq!(Pushback::from_grpc_header("250"), Pushback::RetryAfter(250));
        assert_eq!(Pushback::from_grpc_header(" 0 "), Pushback::RetryAfter(0));
        assert_eq!(Pushback::from_grpc_header("+7"), Pushback::RetryAfter(7));
        assert_eq!(Pushback::from_grpc_header("18446744073709551615"), Pushback::RetryAfter(u64::MAX));
        // Past i64, within u64: still the delay it says.
        assert_eq!(
            Pushback::from_grpc_header("9223372036854775808"),
            Pushback::RetryAfter(9_223_372_036_854_775_808)
        );
    }

    #[test]
    fn a_delay_too_large_to_count_saturates() {
        for value in ["99999999999999999999", "18446744073709551616", " 99999999999999999999999 "] {
            assert_eq!(Pushback::from_grpc_header(value), Pushback::RetryAfter(u64::MAX), "{value:?}");
        }
    }

    #[test]
    fn a_negative_or_unparseable_header_means_do_not_retry() {
        for value in ["-1", "", "soon", "1.5", "+", "-99999999999999999999", "1 2"] {
            assert_eq!(Pushback::from_grpc_header(value), Pushback::DontRetry, "{value:?}");
        }
    }

    #[test]
    fn a_false_retry_flag_means_do_not_retry() {
        assert_eq!(Pushback::from_retry_flag(false), Pushback::DontRetry);
        assert_eq!(Pushback::from_retry_flag(true), Pushback::None);
    }
}
