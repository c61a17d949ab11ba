//! One row of the simulation's table: what a scenario averaged to. Apart from the simulation
//! so that the plot can draw rows without depending on the code that computes them.

use super::strategy::Strategy;

/// The averaged outcome of a scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// The strategy.
    pub strategy: Strategy,
    /// Whether hops had a budget.
    pub budget: bool,
    /// Clients.
    pub clients: u32,
    /// Layers.
    pub layers: u32,
    /// Writes reaching the server, per run.
    pub calls: f64,
    /// `calls / clients`.
    pub amplification: f64,
    /// When the last client got its final answer, in ms, per run.
    pub completion_ms: f64,
    /// The share of clients whose request succeeded.
    pub success_rate: f64,
}
