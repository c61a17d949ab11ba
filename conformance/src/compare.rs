//! The comparison: one trace run against a real store (SQLite or PostgreSQL) and the
//! reference model side by side, checking after every step that both answered the same and that everything they
//! would show — every job's `get`, and `stats` — is the same.

use std::fmt;

use retryq_model::reference::Store;
use retryq_model::{Op, Response};

use crate::parse::Line;
use crate::trace::{Step, Trace};
use crate::{ReplayError, Side};

/// Where the two readings first disagree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The 0-based index of the step after which they disagree.
    pub step: usize,
    /// The step's line.
    pub line: String,
    /// What was compared: the step's own response, a `get`, or `stats`.
    pub probe: String,
    /// Which store answered `store`: `sqlite` or `postgres`.
    pub kind: &'static str,
    /// What the store answered, as a line.
    pub store: String,
    /// What the model answered, as a line.
    pub model: String,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "step {} {}\n  compared: {}\n  {:<9} {}\n  model:    {}",
            self.step + 1,
            self.line,
            self.probe,
            format!("{}:", self.kind),
            self.store,
            self.model
        )
    }
}

/// What running one trace found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// Every step and every probe agreed; the model's responses, one per step.
    Agree(Vec<Response>),
    /// The first step or probe where they disagree.
    Diverge(Divergence),
}

/// Runs `trace` on both readings. `side` should be fresh; the model starts empty.
pub fn compare(trace: &Trace, side: &mut Side) -> Result<Comparison, ReplayError> {
    compare_with(trace, side, Store::new())
}

/// [`compare`] against a given starting model.
pub fn compare_with(trace: &Trace, side: &mut Side, mut model: Store) -> Result<Comparison, ReplayError> {
    let mut responses = Vec::with_capacity(trace.len());
    let mut ids: Vec<String> = Vec::new();
    let mut clock = 0;
    for (i, step) in trace.steps.iter().enumerate() {
        let line = step.to_line();
        // What the parser refuses is refused by both, what it accepts is run by both.
        let (ours, theirs) = match step.line() {
            Line::Op(op) => {
                note(&op, &mut ids, &mut clock);
                let theirs = model.step(&op);
                match side.step(&op) {
                    Ok(ours) => (ours, theirs),
                    // A write the store refused (a CHECK constraint restating an invariant,
                    // say) is a divergence to shrink like any other, not a reason to stop.
                    Err(ReplayError::Storage(e)) => {
                        return Ok(Comparison::Diverge(Divergence {
                            step: i,
                            line,
                            probe: "the step's response".into(),
                            kind: side.kind(),
                            store: format!("storage failure: {e}"),
                            model: theirs.to_json_line(),
                        }));
                    }
                    Err(e) => return Err(e),
                }
            }
            Line::Invalid(detail) => (Response::invalid(detail.clone()), Response::invalid(detail)),
            Line::Skip => continue,
        };
        if ours.observable() != theirs.observable() {
            return Ok(Comparison::Diverge(divergence(side, i, step, "the step's response", &ours, &theirs)));
        }
        responses.push(theirs);
        if let Some((probe, ours, theirs)) = probe(side, &mut model, &ids, clock)? {
            return Ok(Comparison::Diverge(divergence(side, i, step, &probe, &ours, &theirs)));
        }
    }
    Ok(Comparison::Agree(responses))
}

/// Everything both readings would show after a step: every id's `get`, then `stats` at
/// `clock`. The first probe they answer differently, with both answers; `None` when all agree.
pub(crate) fn probe(
    side: &mut Side,
    model: &mut Store,
    ids: &[String],
    clock: u64,
) -> Result<Option<(String, Response, Response)>, ReplayError> {
    for id in ids {
        let probe = Op::Get { id: id.clone() };
        let (ours, theirs) = (side.step(&probe)?, model.step(&probe));
        // A probe of an id the trace named may itself be refused (an id too long, or
        // holding NUL): the two readings must agree it is, not on the detail's wording.
        if ours.observable() != theirs.observable() {
            return Ok(Some((probe.to_json_line(), ours, theirs)));
        }
    }
    let probe = Op::Stats { queue: None, now: clock };
    let (ours, theirs) = (side.step(&probe)?, model.step(&probe));
    Ok((ours != theirs).then(|| (probe.to_json_line(), ours, theirs)))
}

/// Remembers the ids a trace names (to probe them after every step) and its latest time.
pub(crate) fn note(op: &Op, ids: &mut Vec<String>, clock: &mut u64) {
    let now = match op {
        Op::RunOnce { now, after, .. } => Some(after.unwrap_or(*now).max(*now)),
        _ => op.now(),
    };
    if let Some(id) = op.id()
        && !id.is_empty()
        && id.len() <= retryq::MAX_ID_BYTES
        && !ids.iter().any(|known| known == id)
    {
        ids.push(id.to_owned());
    }
    if let Some(now) = now {
        *clock = now.min(retryq_model::MAX_INT);
    }
}

fn divergence(
    side: &Side,
    step: usize,
    at: &Step,
    probe: &str,
    ours: &Response,
    theirs: &Response,
) -> Divergence {
    Divergence {
        step,
        line: at.to_line(),
        probe: probe.to_owned(),
        kind: side.kind(),
        store: ours.to_json_line(),
        model: theirs.to_json_line(),
    }
}
