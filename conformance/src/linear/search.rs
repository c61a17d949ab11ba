//! The Wing–Gong search for a linearization, with memoisation.
//!
//! A state of the search is the set of calls already placed (and, for a `run_once` placed
//! halfway, the attempt its claim took) together with the reference store those steps left.
//! From a state, a call may take its next step if it is not done and no call still undone
//! returned before it was invoked (real-time order); the step must make the model answer
//! what the store answered. Two paths that place the same calls and leave the same store
//! lead to the same futures, so each state is explored once (Lowe's memoisation of the
//! Wing–Gong algorithm): reads, refusals and operations on different jobs commute, and the
//! interleavings of a window of concurrent calls collapse to the few stores they can leave.
//!
//! The search is depth first, trying the earliest-invoked call first, and records the
//! deepest state it reached: when no order exists, that is where the explanation starts.

use std::collections::HashSet;

use retryq_model::{Op, Response, Store};

use super::history::{Call, History};
use super::steps::{self, Advance, Held, Part};

/// At most this many calls per history: the set of placed calls is one 128-bit word.
pub const MAX_CALLS: usize = 128;

/// One step of an order: a call, or half of a `run_once`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    /// The call, by its index in the history.
    pub call: usize,
    /// Which part of it.
    pub part: Part,
}

/// A witness: an order of the history's steps, consistent with real time, in which the
/// reference store answers every call as the store did.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearOrder {
    /// The steps, first to last.
    pub steps: Vec<Step>,
    /// How many search states were visited to find it.
    pub states: u64,
}

/// The search and its limit.
#[derive(Clone, Copy, Debug)]
pub struct Checker {
    /// The most states one search may visit before it gives up undecided; each is a clone
    /// of the reference store, kept until the search ends.
    pub budget: u64,
    /// The mode of the proposed claims that step over (`docs/postgres.md`, "A proposed
    /// contract: claims that step over"), not the contract's: a claim or a reap may pass
    /// over the jobs that the calls overlapping it in real time name or took, and those due
    /// to end at the `now` of an overlapping claim or reap, as if they were not there. Off
    /// by default: SPEC 3.10's linearizability, exactly.
    pub step_over: bool,
}

impl Default for Checker {
    /// Two million states: far more than a history of 8 clients × 10 calls needs (a few
    /// thousand), and about a gigabyte of stores at worst.
    fn default() -> Self {
        Checker { budget: 2_000_000, step_over: false }
    }
}

/// A step the model answered otherwise than the store.
#[derive(Clone, Debug, PartialEq)]
pub struct Miss {
    /// The call, by index in the history searched.
    pub call: usize,
    /// Which part of it.
    pub part: Part,
    /// The model's answer (for a `run_once` whose claim went otherwise, the claim's answer).
    pub model: Response,
}

/// How one search ended.
pub(crate) enum Outcome {
    /// An order exists.
    Linear(LinearOrder),
    /// No order exists; the deepest state the search reached.
    Impossible(Box<Deepest>),
    /// The budget ran out first.
    Undecided {
        /// States visited.
        states: u64,
    },
}

/// The deepest state a failed search reached: the longest order that explained every step
/// in it, and why nothing could follow.
#[derive(Clone, Debug)]
pub(crate) struct Deepest {
    /// The order.
    pub steps: Vec<Step>,
    /// The model after it.
    pub store: Store,
    /// Every step that could have come next, and what the model answered to it.
    pub misses: Vec<Miss>,
    /// States visited by the whole search.
    pub states: u64,
}

impl Checker {
    /// One search from `start`; the history has at most [`MAX_CALLS`] calls.
    pub(crate) fn search(&self, history: &History, start: &Store) -> Outcome {
        let calls = &history.calls;
        let mut by_invoked: Vec<usize> = (0..calls.len()).collect();
        by_invoked.sort_by_key(|&i| calls[i].invoked);
        let all = if calls.len() == MAX_CALLS { u128::MAX } else { (1u128 << calls.len()) - 1 };
        let mut search = Search {
            calls,
            all,
            by_invoked,
            visited: HashSet::new(),
            path: Vec::with_capacity(2 * calls.len()),
            deepest: None,
            states: 0,
            budget: self.budget,
            over: if self.step_over { overlapping_jobs(calls) } else { vec![Vec::new(); calls.len()] },
            reapers: if self.step_over { overlapping_reapers(calls) } else { vec![Vec::new(); calls.len()] },
        };
        match search.visit(start, 0, &mut Vec::new()) {
            Ok(true) => Outcome::Linear(LinearOrder { steps: search.path, states: search.states }),
            Ok(false) => {
                let states = search.states;
                let deepest = search.deepest.unwrap_or(Deepest {
                    steps: Vec::new(),
                    store: start.clone(),
                    misses: Vec::new(),
                    states,
                });
                Outcome::Impossible(Box::new(Deepest { states, ..deepest }))
            }
            Err(OutOfBudget) => Outcome::Undecided { states: search.states },
        }
    }
}

/// The reference store before any call: empty, with the history's settings; the model's
/// refusal of those settings, as a line, if it refuses them.
pub(crate) fn initial(history: &History) -> Result<Store, String> {
    let mut store = Store::new();
    let s = history.settings;
    let config = Op::Config {
        base_ms: Some(s.base_ms),
        cap_ms: Some(s.cap_ms),
        lease_ms: Some(s.lease_ms),
        reap_limit: Some(s.reap_limit),
    };
    match store.step(&config) {
        Response::Ok(_) => Ok(store),
        refused => Err(refused.to_json_line()),
    }
}

/// Per call, the jobs that the calls overlapping it in real time write (the one each names,
/// a read's aside) or took: what a claim or a reap that steps over may pass over.
fn overlapping_jobs(calls: &[Call]) -> Vec<Vec<&str>> {
    let touched: Vec<Vec<&str>> = calls.iter().map(touched).collect();
    (0..calls.len())
        .map(|i| {
            let mut over: Vec<&str> =
                overlapping(calls, i).flat_map(|j| touched[j].iter().copied()).collect();
            over.sort_unstable();
            over.dedup();
            over
        })
        .collect()
}

/// Per call, the `now` of each call overlapping it in real time that reaps.
fn overlapping_reapers(calls: &[Call]) -> Vec<Vec<u64>> {
    (0..calls.len())
        .map(|i| {
            overlapping(calls, i)
                .filter_map(|j| match calls[j].op {
                    Op::Claim { now, .. } | Op::RunOnce { now, .. } | Op::Reap { now } => Some(now),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// The other calls that overlap call `i` in real time, by index.
fn overlapping(calls: &[Call], i: usize) -> impl Iterator<Item = usize> + '_ {
    (0..calls.len()).filter(move |&j| j != i && calls[i].overlaps(&calls[j]))
}

/// The jobs `call` writes (the one it names, unless it only reads it) or took.
fn touched(call: &Call) -> Vec<&str> {
    let named = call.op.id().filter(|_| !matches!(call.op, Op::Get { .. }));
    let took = std::iter::once(&call.response).chain(&call.more).filter_map(Response::taken_id);
    named.into_iter().chain(took).collect()
}

/// The search ran out of states.
struct OutOfBudget;

/// What the search has explored so far.
struct Search<'a> {
    calls: &'a [Call],
    /// The set of every call: the search is over when `done` is this.
    all: u128,
    /// Call indices by invocation: the candidates of a state are a prefix of this.
    by_invoked: Vec<usize>,
    /// States already explored, all of which led nowhere (the search stops at the first
    /// success).
    visited: HashSet<(u128, Vec<Held>, Store)>,
    /// The steps from the start to the state being explored.
    path: Vec<Step>,
    deepest: Option<Deepest>,
    states: u64,
    budget: u64,
    /// Per call, the jobs its claims may pass over ([`Checker::step_over`]; empty without).
    over: Vec<Vec<&'a str>>,
    /// Per call, the `now` of each call overlapping it that reaps (a claim, a `run_once`, a
    /// reap), whose due-to-end jobs it may pass over too ([`Checker::step_over`]).
    reapers: Vec<Vec<u64>>,
}

impl Search<'_> {
    /// Whether the calls not in `done` can all be placed after `path`, leaving `store`.
    /// `held` lists the `run_once`s placed halfway, sorted.
    fn visit(&mut self, store: &Store, done: u128, held: &mut Vec<Held>) -> Result<bool, OutOfBudget> {
        if done == self.all {
            return Ok(true);
        }
        if !self.visited.insert((done, held.clone(), store.clone())) {
            return Ok(false);
        }
        self.states += 1;
        if self.states > self.budget {
            return Err(OutOfBudget);
        }
        // Real time: a call invoked after an undone call returned must wait for it, so only
        // calls invoked before the earliest return among the undone may step now.
        let horizon = (0..self.calls.len())
            .filter(|&i| done & (1 << i) == 0)
            .map(|i| self.calls[i].returned)
            .min()
            .unwrap_or(u64::MAX);
        let mut misses = Vec::new();
        for n in 0..self.by_invoked.len() {
            let i = self.by_invoked[n];
            let call = &self.calls[i];
            if call.invoked >= horizon {
                break;
            }
            if done & (1 << i) != 0 {
                continue;
            }
            if let Some(at) = held.iter().position(|h| h.call == i) {
                let mut next = store.clone();
                let h = held.remove(at);
                let advance = steps::finish(&mut next, call, &h.id, h.attempt);
                let step = Step { call: i, part: Part::Finish };
                let found = self.follow(advance, step, &next, done, held, &mut misses)?;
                held.insert(at, h);
                if found {
                    return Ok(true);
                }
            } else {
                let part = if matches!(call.op, Op::RunOnce { .. }) { Part::Claim } else { Part::Whole };
                // What the reaps beside it may hold: the jobs due to end at their `now`.
                let mut over = self.over[i].clone();
                if !self.reapers[i].is_empty() && steps::may_pass_over(&call.op) {
                    over.extend(self.reapers[i].iter().flat_map(|&now| store.due_to_end_at(now)));
                    over.sort_unstable();
                    over.dedup();
                }
                for (next, advance) in steps::begin_each(store, call, &over) {
                    if self.follow(advance, Step { call: i, part }, &next, done, held, &mut misses)? {
                        return Ok(true);
                    }
                }
            }
        }
        if self.deepest.as_ref().is_none_or(|d| self.path.len() > d.steps.len()) {
            self.deepest =
                Some(Deepest { steps: self.path.clone(), store: store.clone(), misses, states: self.states });
        }
        Ok(false)
    }

    /// Takes one step that the model answered with `advance`, and explores on from there.
    fn follow(
        &mut self,
        advance: Advance,
        step: Step,
        next: &Store,
        done: u128,
        held: &mut Vec<Held>,
        misses: &mut Vec<Miss>,
    ) -> Result<bool, OutOfBudget> {
        let bit = 1u128 << step.call;
        match advance {
            Advance::Done => {
                self.path.push(Step {
                    part: if step.part == Part::Claim { Part::Whole } else { step.part },
                    ..step
                });
                if self.visit(next, done | bit, held)? {
                    return Ok(true);
                }
                self.path.pop();
            }
            Advance::Claimed { id, attempt } => {
                let h = Held { call: step.call, id, attempt };
                let at = held.binary_search(&h).unwrap_or_else(|at| at);
                held.insert(at, h);
                self.path.push(step);
                let found = self.visit(next, done, held)?;
                held.remove(at);
                if found {
                    return Ok(true);
                }
                self.path.pop();
            }
            Advance::Wrong(model) => misses.push(Miss { call: step.call, part: step.part, model }),
        }
        Ok(false)
    }
}
