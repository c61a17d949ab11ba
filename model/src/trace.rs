//! Paths of the model as SPEC section 5 traces, so that `retryq replay` can run a
//! counterexample against SQLite.
//!
//! Every action that touches the store already is one operation with an explicit `now`, so a
//! path maps line for line: a tick is a comment (the next line's `now` says the time), a crash
//! or an unclassified transport error is a `run_once` with outcome `crash` or `unknown`, a
//! completion (by the holder or by a stale worker) is a `complete` carrying the token the
//! worker was given. The trace starts with the model's `config` and ends with a `get` of every
//! job and an enqueue of its own payload (`existing`), so that its final state shows; a liveness counterexample first runs the reaps at the
//! horizon that should have ended every job (repeated while each ends `reap_limit`); a path that restarts or sends a config ends with
//! a claim, whose lease shows the settings, and one that enqueues a forgotten id anew with a
//! claim, whose tie shows the order of first enqueues. After each operation a comment gives the model's
//! response, so a replay's output can be compared with it line by line.
//!
//! Layer: above the world ([`crate::model`]) and the checker's [`Path`], below what prints a
//! search's findings. It may not reach up: a trace is what a path *is*, as operations, whoever
//! found the path and why.

use crate::checker::Path;
use crate::ids::{PAYLOAD, job_name};
use crate::model::{Action, QueueModel, World};
use crate::reference::Store;
use crate::{Op, Response};

/// The id and worker of the probe that shows a trace's settings at its end.
pub const SETTINGS_PROBE: &str = "settings-probe";

/// One line of a trace. A trace is a counterexample's few dozen lines, so an operation is kept
/// inline rather than boxed, however much larger than a comment it is.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Line {
    /// A `#` line, skipped by replay.
    Comment(String),
    /// An operation, and what the model answered.
    Op {
        /// The operation.
        op: Op,
        /// What the model answered.
        model: Response,
    },
}

/// The trace of `path`: its operations, then the probes that show its final state
/// (`reap_at_end`: the liveness probe first).
pub fn trace(model: &QueueModel, path: &Path<World, Action>, reap_at_end: bool) -> Vec<Line> {
    let mut lines = Vec::new();
    let Some(first) = path.states.first() else {
        return lines;
    };
    let config = QueueModel::config_op(first.config);
    let mut fresh = Store::new();
    let response = fresh.step(&config);
    lines.push(Line::Op { op: config, model: response });
    for (world, action) in path.states.iter().zip(&path.actions) {
        lines.push(step_line(model, world, action));
    }
    if let Some(last) = path.last_state() {
        let mut store = last.store.clone();
        if reap_at_end {
            for (op, response) in crate::model::reap_until_short(&mut store, last.now) {
                lines.push(Line::Op { op, model: response });
            }
        }
        let mut probe = |op: Op| {
            let response = store.step(&op);
            lines.push(Line::Op { op, model: response });
        };
        for i in 0..last.ghosts.len() {
            probe(Op::Get { id: job_name(i) });
            // The payload is seen only by another enqueue: the job's own is `existing`.
            probe(Op::Enqueue {
                priority: None,
                queue: None,
                id: job_name(i),
                payload: PAYLOAD.into(),
                max_attempts: 1,
                deadline: (last.now + 1).min(crate::MAX_INT),
                now: last.now,
                not_before: None,
                base_ms: None,
                cap_ms: None,
                kind: None,
            });
        }
        // The settings are seen only through what they do: a path that restarts or sends a
        // config ends with a claim, whose `lease_until` shows `lease_ms`.
        let touches_settings = path.actions.iter().any(|a| match a {
            Action::Configure { .. } => true,
            Action::Probe { op, .. } => matches!(op, Op::Restart | Op::Config { .. }),
            _ => false,
        });
        if touches_settings {
            probe(Op::Enqueue {
                priority: None,
                queue: None,
                id: SETTINGS_PROBE.into(),
                payload: PAYLOAD.into(),
                max_attempts: 1,
                deadline: last.now + 1,
                now: last.now,
                not_before: None,
                base_ms: None,
                cap_ms: None,
                kind: None,
            });
            probe(Op::Claim { queues: None, worker: SETTINGS_PROBE.into(), now: last.now });
        }
        // The paused queues are seen only through claims and `stats`: a path where the world
        // paused a queue ends with `stats` of each of its queues (SPEC 3.8, 3.16).
        if last.paused != 0 || !last.store.paused().is_empty() {
            for queue in [crate::reference::DEFAULT_QUEUE, crate::model::OTHER_QUEUE] {
                probe(Op::Stats { queue: Some(queue.into()), now: last.now });
            }
        }
        if !touches_settings && path.actions.iter().any(|a| matches!(a, Action::Reenqueue { .. })) {
            // The order of first enqueues is seen only through claim's ties: a path that
            // enqueues a forgotten id anew ends with a claim (SPEC 3.15, 6.1).
            probe(Op::Claim { queues: None, worker: SETTINGS_PROBE.into(), now: last.now });
        }
    }
    lines
}

/// The line of a trace for `action` taken in `world`: the operation it runs and what the model
/// answered, or a comment for a step that runs none (a tick, a crash).
pub fn step_line(model: &QueueModel, world: &World, action: &Action) -> Line {
    match model.step(world, action) {
        Some((_, Some((op, response)))) => Line::Op { op, model: response },
        Some((next, None)) if *action == Action::Tick => {
            Line::Comment(format!("time passes: now = {}", next.now))
        }
        None => Line::Comment(format!("{action} is not possible here")),
        Some((_, None)) => Line::Comment(format!("{action}: the worker dies, its lease stays in the store")),
    }
}

/// The trace as text: one JSON object per operation, each followed by the model's response
/// as a comment.
pub fn render(lines: &[Line]) -> String {
    let mut out = String::new();
    for line in lines {
        match line {
            Line::Comment(text) => {
                out.push_str("# ");
                out.push_str(text);
            }
            Line::Op { op, model } => {
                out.push_str(&op.to_json_line());
                out.push_str("\n#   model: ");
                out.push_str(&model.to_json_line());
            }
        }
        out.push('\n');
    }
    out
}

/// The operations of a trace alone, one JSON object per line.
pub fn ops(lines: &[Line]) -> Vec<Op> {
    lines
        .iter()
        .filter_map(|line| match line {
            Line::Op { op, .. } => Some(op.clone()),
            Line::Comment(_) => None,
        })
        .collect()
}
