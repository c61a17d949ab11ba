//! Exhaustive conformance: every state the model checker reaches within `depth` actions,
//! turned into the trace of the path that reached it and replayed against SQLite — test
//! generation from the model, rather than from a random generator.
//!
//! The search is the checker's (breadth first from the initial world over the model's own
//! actions, one path per state up to worker symmetry). Since the comparison checks after
//! every step, replaying the path to each *frontier* state — at the depth limit, or with no
//! unseen successor — covers every path to every state on the way, so only those are run.

use std::collections::HashSet;
use std::time::Instant;

use retryq_model::Op;
use retryq_model::model::{Bounds, QueueModel, World};
use stateright::Model;

use crate::ReplayError;
use crate::run::{Mismatch, Setup, Tally, run_parallel};
use crate::trace::{Step, Trace};

/// What the search covered, besides the tally of traces run.
#[derive(Clone, Debug, Default)]
pub struct Coverage {
    /// Distinct states (up to worker symmetry) reached within the depth.
    pub states: u64,
    /// The traces run, and any mismatch.
    pub tally: Tally,
}

/// Replays the path to every frontier state within `depth` actions of `bounds`, on
/// `threads` threads.
pub fn exhaustive(
    bounds: Bounds,
    depth: usize,
    setup: &Setup,
    threads: usize,
    progress: &dyn Fn(),
) -> Result<Coverage, ReplayError> {
    let start = Instant::now();
    let (states, traces) = frontier_traces(&QueueModel::new(bounds, None), depth);
    let (mut tally, found) = run_parallel(&traces, setup, threads, progress)?;
    if let Some((i, divergence)) = found {
        tally.mismatch = Some(Mismatch { source: "exhaustive".into(), trace: traces[i].clone(), divergence });
    }
    tally.seconds = start.elapsed().as_secs_f64();
    Ok(Coverage { states, tally })
}

/// The breadth-first search: the number of distinct states within `depth` actions, and the
/// trace of the path to each frontier state.
fn frontier_traces(model: &QueueModel, depth: usize) -> (u64, Vec<Trace>) {
    let mut seen: HashSet<World> = HashSet::new();
    let mut level: Vec<(World, Vec<Op>)> = Vec::new();
    for world in model.init_states() {
        if seen.insert(world.canonical().into_owned()) {
            // Each path starts with its initial world's settings.
            let config = QueueModel::config_op(world.config);
            level.push((world, vec![config]));
        }
    }
    let mut traces = Vec::new();
    let mut ran: HashSet<String> = HashSet::new();
    let mut actions = Vec::new();
    for at in 0..=depth {
        let mut next = Vec::new();
        for (world, ops) in &level {
            let mut grew = false;
            if at < depth {
                actions.clear();
                model.actions(world, &mut actions);
                for action in &actions {
                    let Some((after, op)) = model.step(world, action) else { continue };
                    if seen.insert(after.canonical().into_owned()) {
                        grew = true;
                        let mut path = ops.clone();
                        path.extend(op.map(|(op, _)| op));
                        next.push((after, path));
                    }
                }
            }
            // Paths that differ only in actions without an operation (a tick, a worker dying
            // while it holds a claim) are one trace: it is run once.
            if !grew && ran.insert(ops.iter().map(Op::to_json_line).collect::<Vec<_>>().join("\n")) {
                let steps = ops.iter().cloned().map(Step::Op).collect();
                traces.push(Trace { steps });
            }
        }
        level = next;
        if level.is_empty() {
            break;
        }
    }
    (seen.len() as u64, traces)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frontier_covers_every_state_once() {
        let model = QueueModel::new(Bounds::small(), None);
        let (states, traces) = frontier_traces(&model, 3);
        assert!(states > 10, "{states}");
        // Every trace starts with the model's config, and no two frontier paths are equal.
        assert!(traces.iter().all(|t| matches!(t.steps.first(), Some(Step::Op(Op::Config { .. })))));
        let distinct: HashSet<String> = traces.iter().map(|t| t.to_jsonl("")).collect();
        assert_eq!(distinct.len(), traces.len());
    }
}
