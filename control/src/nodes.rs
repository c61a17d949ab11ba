//! Which node the next attempt goes to: away from the ones that just failed or were slow.
//!
//! Retrying on the node that just failed repeats the failure; the source document asks for
//! the load balancer to leave that node out (去掉重试之前出现过问题的那个节点) and points to
//! RocketMQ's latency fault tolerance (`MQFaultStrategy` with `LatencyFaultToleranceImpl`),
//! which this module follows:
//!
//! - every attempt's outcome is recorded against its node: its latency, or a failure, which
//!   counts as the top latency band (RocketMQ's `isolation`);
//! - the latency is looked up in a [`FaultTable`], scanning from the top band down: the first
//!   band whose bound the latency reaches gives how long the node is not available (RocketMQ:
//!   {50, 100, 550, 1000, 2000, 3000, 15000} ms → {0, 0, 30000, 60000, 120000, 180000,
//!   600000} ms);
//! - a node is available when `now ≥` its start time (the time of the outcome plus that
//!   duration); a node never recorded is available;
//! - [`NodeSelector::pick`] walks the nodes round-robin from a moving index and takes the
//!   first available one; when none is, it sorts the nodes — available first, then lower
//!   latency, then earlier start time — and takes one of the better half in turn
//!   (`pickOneAtLeast`).
//!
//! One decision is this project's, where RocketMQ's fault-tolerant path does not do it: a
//! retry never goes back to the node that just failed when there is another node, even one
//! that is not available — the seed's rule comes first, availability second.

use crate::error::ConfigError;

/// RocketMQ's `latencyMax`.
pub const ROCKETMQ_LATENCY_MAX_MS: [u64; 7] = [50, 100, 550, 1000, 2000, 3000, 15000];
/// RocketMQ's `notAvailableDuration`.
pub const ROCKETMQ_NOT_AVAILABLE_MS: [u64; 7] = [0, 0, 30000, 60000, 120000, 180000, 600000];

/// What an attempt on a node showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Observed {
    /// An answer that took this many milliseconds.
    Latency(u64),
    /// A failure (connection error, timeout, retryable status): the top band.
    Failed,
}

/// Latency bands and the not-available duration of each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultTable {
    latency_max_ms: Vec<u64>,
    not_available_ms: Vec<u64>,
}

impl Default for FaultTable {
    fn default() -> Self {
        FaultTable::rocketmq()
    }
}

impl FaultTable {
    /// RocketMQ's table.
    pub fn rocketmq() -> Self {
        FaultTable {
            latency_max_ms: ROCKETMQ_LATENCY_MAX_MS.to_vec(),
            not_available_ms: ROCKETMQ_NOT_AVAILABLE_MS.to_vec(),
        }
    }

    /// A table of one's own: both lists the same, non-zero length, the latency bounds strictly
    /// ascending and the durations never decreasing (a slower node is never penalised less).
    pub fn new(latency_max_ms: Vec<u64>, not_available_ms: Vec<u64>) -> Result<Self, ConfigError> {
        if latency_max_ms.is_empty() {
            return Err(ConfigError::new("latency_max_ms", "needs at least one band"));
        }
        if latency_max_ms.len() != not_available_ms.len() {
            return Err(ConfigError::new(
                "not_available_ms",
                format!(
                    "has {} entries, latency_max_ms has {}",
                    not_available_ms.len(),
                    latency_max_ms.len()
                ),
            ));
        }
        if let Some(w) = latency_max_ms.windows(2).find(|w| w[0] >= w[1]) {
            return Err(ConfigError::new(
                "latency_max_ms",
                format!("must be strictly ascending, but {} is followed by {}", w[0], w[1]),
            ));
        }
        if let Some(w) = not_available_ms.windows(2).find(|w| w[0] > w[1]) {
            return Err(ConfigError::new(
                "not_available_ms",
                format!("must be ascending, but {} is followed by {}", w[0], w[1]),
            ));
        }
        Ok(FaultTable { latency_max_ms, not_available_ms })
    }

    /// How long a node that showed `observed` is not available, in milliseconds
    /// (`computeNotAvailableDuration`: scan from the top band; below every band, 0).
    pub fn not_available_ms(&self, observed: Observed) -> u64 {
        match observed {
            Observed::Failed => self.not_available_ms.last().copied().unwrap_or(0),
            Observed::Latency(ms) => {
                let mut bands = self.latency_max_ms.iter().zip(&self.not_available_ms).rev();
                bands.find(|(max, _)| ms >= **max).map_or(0, |(_, duration)| *duration)
            }
        }
    }
}

/// A node index that is not one of the selector's nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("node {node} is not one of the {count} nodes")]
pub struct UnknownNode {
    /// The index given.
    pub node: usize,
    /// How many nodes there are.
    pub count: usize,
}

/// RocketMQ's `FaultItem`: the last latency and when the node is available again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct NodeState {
    latency_ms: u64,
    start_ms: u64,
}

/// Picks nodes, by index, for attempts, avoiding the ones that failed or were slow.
#[derive(Debug, Clone)]
pub struct NodeSelector {
    table: FaultTable,
    nodes: Vec<NodeState>,
    /// RocketMQ's `sendWhichQueue`: where the round-robin walk starts next time.
    next: usize,
    /// RocketMQ's `whichItemWorst`: which of the better half the fallback takes next time.
    worst_turn: usize,
}

impl NodeSelector {
    /// A selector over `count` nodes (at least one), numbered `0..count`, none recorded yet.
    pub fn new(count: usize, table: FaultTable) -> Result<Self, ConfigError> {
        if count == 0 {
            return Err(ConfigError::new("nodes", "needs at least one node"));
        }
        Ok(NodeSelector { table, nodes: vec![NodeState::default(); count], next: 0, worst_turn: 0 })
    }

    /// How many nodes there are.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Always false: a selector has at least one node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Record what an attempt that ended at `now_ms` showed on `node`
    /// (`updateFaultItem`): its start time becomes `now_ms` plus the table's duration.
    pub fn record(&mut self, node: usize, now_ms: u64, observed: Observed) -> Result<(), UnknownNode> {
        let count = self.nodes.len();
        let duration = self.table.not_available_ms(observed);
        let state = self.nodes.get_mut(node).ok_or(UnknownNode { node, count })?;
        state.latency_ms = match observed {
            Observed::Latency(ms) => ms,
            Observed::Failed => u64::MAX,
        };
        state.start_ms = now_ms.saturating_add(duration);
        Ok(())
    }

    /// Whether `node` may be used at `now_ms` (`FaultItem.isAvailable`: `now ≥ start`).
    /// An unknown node is not available.
    pub fn is_available(&self, node: usize, now_ms: u64) -> bool {
        self.nodes.get(node).is_some_and(|s| now_ms >= s.start_ms)
    }

    /// The node for the next attempt at `now_ms`. `avoid` is the node the previous attempt
    /// failed on, if any: it is chosen only when it is the sole node.
    ///
    /// ```
    /// use retryq_control::{FaultTable, NodeSelector, Observed};
    ///
    /// let mut nodes = NodeSelector::new(3, FaultTable::rocketmq())?;
    /// let first = nodes.pick(0, None);
    /// nodes.record(first, 10, Observed::Failed)?;
    /// // The retry goes elsewhere, and the failed node sits out the table's penalty.
    /// let retry = nodes.pick(10, Some(first));
    /// assert_ne!(retry, first);
    /// assert!(!nodes.is_available(first, 10));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pick(&mut self, now_ms: u64, avoid: Option<usize>) -> usize {
        let count = self.nodes.len();
        let allowed = |i: usize| count == 1 || Some(i) != avoid;
        let start = self.next % count.max(1);
        self.next = self.next.wrapping_add(1);
        if let Some(i) =
            (0..count).map(|k| (start + k) % count).find(|&i| allowed(i) && self.is_available(i, now_ms))
        {
            return i;
        }
        // None available: the better half (pickOneAtLeast), available first, then lower
        // latency, then earlier start time; the index breaks the remaining ties.
        let mut candidates: Vec<usize> = (0..count).filter(|&i| allowed(i)).collect();
        candidates.sort_by_key(|&i| {
            let s = self.nodes[i];
            (!self.is_available(i, now_ms), s.latency_ms, s.start_ms, i)
        });
        let half = candidates.len() / 2;
        let turn = if half == 0 { 0 } else { self.worst_turn % half };
        self.worst_turn = self.worst_turn.wrapping_add(1);
        candidates.get(turn).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_band_edge_of_the_rocketmq_table() {
        let table = FaultTable::rocketmq();
        let cases = [
            (0, 0),
            (49, 0),
            (50, 0),
            (51, 0),
            (99, 0),
            (100, 0),
            (101, 0),
            (549, 0),
            (550, 30000),
            (551, 30000),
            (999, 30000),
            (1000, 60000),
            (1001, 60000),
            (1999, 60000),
            (2000, 120000),
            (2001, 120000),
            (2999, 120000),
            (3000, 180000),
            (3001, 180000),
            (14999, 180000),
            (15000, 600000),
            (15001, 600000),
            (u64::MAX, 600000),
        ];
        for (latency, expected) in cases {
            assert_eq!(table.not_available_ms(Observed::Latency(latency)), expected, "latency {latency}");
        }
    }

    #[test]
    fn a_failure_counts_as_the_top_band() {
        assert_eq!(FaultTable::rocketmq().not_available_ms(Observed::Failed), 600000);
    }

    #[test]
    fn tables_of_different_lengths_are_refused() {
        let err = FaultTable::new(vec![10, 20], vec![0]).unwrap_err();
        assert_eq!(err.field, "not_available_ms");
    }

    #[test]
    fn bounds_that_do_not_ascend_are_refused() {
        assert_eq!(FaultTable::new(vec![10, 10], vec![0, 5]).unwrap_err().field, "latency_max_ms");
        assert_eq!(FaultTable::new(vec![10, 20], vec![5, 0]).unwrap_err().field, "not_available_ms");
        assert_eq!(FaultTable::new(vec![], vec![]).unwrap_err().field, "latency_max_ms");
    }

    #[test]
    fn a_node_is_available_again_at_its_start_time() {
        let mut nodes = NodeSelector::new(2, FaultTable::rocketmq()).unwrap();
        nodes.record(0, 1000, Observed::Latency(600)).unwrap();
        assert!(!nodes.is_available(0, 30999));
        assert!(nodes.is_available(0, 31000));
        assert!(nodes.is_available(1, 0));
    }

    #[test]
    fn round_robin_over_healthy_nodes() {
        let mut nodes = NodeSelector::new(3, FaultTable::rocketmq()).unwrap();
        let picks: Vec<usize> = (0..4).map(|_| nodes.pick(0, None)).collect();
        assert_eq!(picks, [0, 1, 2, 0]);
    }

    #[test]
    fn an_unavailable_node_is_skipped() {
        let mut nodes = NodeSelector::new(3, FaultTable::rocketmq()).unwrap();
        nodes.record(1, 0, Observed::Failed).unwrap();
        let picks: Vec<usize> = (0..4).map(|_| nodes.pick(10, None)).collect();
        assert_eq!(picks, [0, 2, 2, 0]);
    }

    #[test]
    fn a_retry_avoids_the_node_that_just_failed_even_if_it_looks_healthy() {
        // A fast failure on node 0 that the table would not penalise, node 1 penalised:
        // the retry still goes to node 1.
        let table = FaultTable::new(vec![1000], vec![5000]).unwrap();
        let mut nodes = NodeSelector::new(2, table).unwrap();
        nodes.record(1, 0, Observed::Failed).unwrap();
        assert_eq!(nodes.pick(10, Some(0)), 1);
    }

    #[test]
    fn the_only_node_is_retried() {
        let mut nodes = NodeSelector::new(1, FaultTable::rocketmq()).unwrap();
        nodes.record(0, 0, Observed::Failed).unwrap();
        assert_eq!(nodes.pick(10, Some(0)), 0);
    }

    #[test]
    fn with_none_available_the_better_half_takes_turns() {
        // Four nodes all penalised; by latency 0 < 1 < 2 < 3, the better half is {0, 1}.
        let mut nodes = NodeSelector::new(4, FaultTable::rocketmq()).unwrap();
        for (node, latency) in [(0, 600), (1, 1500), (2, 2500), (3, 20000)] {
            nodes.record(node, 0, Observed::Latency(latency)).unwrap();
        }
        let picks: Vec<usize> = (0..4).map(|_| nodes.pick(10, None)).collect();
        assert_eq!(picks, [0, 1, 0, 1]);
    }

    #[test]
    fn equal_latency_prefers_the_node_available_sooner() {
        let mut nodes = NodeSelector::new(3, FaultTable::rocketmq()).unwrap();
        nodes.record(0, 500, Observed::Failed).unwrap();
        nodes.record(1, 100, Observed::Failed).unwrap();
        nodes.record(2, 900, Observed::Failed).unwrap();
        assert_eq!(nodes.pick(1000, None), 1);
    }

    #[test]
    fn recording_an_unknown_node_is_an_error() {
        let mut nodes = NodeSelector::new(2, FaultTable::rocketmq()).unwrap();
        assert_eq!(nodes.record(2, 0, Observed::Failed), Err(UnknownNode { node: 2, count: 2 }));
    }
}
