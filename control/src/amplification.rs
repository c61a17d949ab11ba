//! How retries multiply down a call chain: n·r^(m−1).
//!
//! The source document (重试危害): with normal traffic n, a chain of m layers and r retries
//! at each layer, the last layer receives the most, n·r^(m−1). Its assumptions, made
//! explicit here:
//!
//! - layer 1 is where the n requests come from (the callers); layers 2 … m are services, each
//!   called by the layer above it, so there are m − 1 hops;
//! - every hop retries, and `r` counts the **attempts** a hop makes per request it handles,
//!   the first included (so "retry twice" is r = 3);
//! - the worst case: every attempt fails, so every hop spends all r attempts.
//!
//! Then layer k receives n·r^(k−1) calls, and the last layer n·r^(m−1). The functions
//! saturate at `u64::MAX` rather than overflow; `retryq simulate` measures how close real
//! contention gets to this bound.

/// The factor r^(m−1) by which the last of `layers` layers sees more calls than the first
/// sends, when each hop makes `attempts_per_hop` attempts. `layers` 0 reads as 1.
///
/// ```
/// // Three layers, each trying 3 times: one failing request becomes 3^2 = 9 calls at the bottom.
/// assert_eq!(retryq_control::amplification::factor(3, 3), 9);
/// assert_eq!(retryq_control::amplification::worst_case_calls(100, 3, 3), 900);
/// ```
pub fn factor(attempts_per_hop: u64, layers: u32) -> u64 {
    attempts_per_hop.checked_pow(layers.saturating_sub(1)).unwrap_or(u64::MAX)
}

/// n·r^(m−1): the calls reaching layer `layers` when `requests` enter layer 1.
pub fn worst_case_calls(requests: u64, attempts_per_hop: u64, layers: u32) -> u64 {
    requests.saturating_mul(factor(attempts_per_hop, layers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_layers_retrying_three_times_see_nine_times_the_traffic() {
        assert_eq!(worst_case_calls(100, 3, 3), 900);
    }

    #[test]
    fn one_layer_has_no_hop_to_amplify() {
        assert_eq!(factor(5, 1), 1);
        assert_eq!(factor(5, 0), 1);
    }

    #[test]
    fn no_retries_no_amplification() {
        assert_eq!(worst_case_calls(1000, 1, 10), 1000);
    }

    #[test]
    fn huge_chains_saturate() {
        assert_eq!(factor(3, 100), u64::MAX);
        assert_eq!(worst_case_calls(2, u64::MAX, 2), u64::MAX);
    }
}
