//! A breadth-first model checker that reports *shortest* counterexamples.
//!
//! Stateright 0.31's BFS records a discovery each time a state shows it, so a later, deeper
//! state overwrites the first path found (on this model, even single-threaded, it reports 13
//! steps for a 2-step counterexample: see the tests); its threads share one queue; and its
//! BFS ignores symmetry reduction. A counterexample is meant to be read and replayed, so this
//! checker explores level by level: every state at distance `d` from the initial state is
//! judged before any state at `d + 1` is generated, so the first level where a property
//! fails gives a shortest path to a failure.
//! Within a level the lowest-numbered state wins, and numbering follows the (sequential) merge
//! order, so the reported path does not depend on the number of threads.
//!
//! A state that fails an `always` or liveness property is a counterexample and is not
//! expanded: every reported violation is the first thing to go wrong on its path, and a
//! seeded bug's state space stays the size of the SPEC's. With no violation (the SPEC's store),
//! the search is exhaustive.
//!
//! Threads share the work of one level (judge each state, generate its successors, drop those
//! already seen at an earlier level); one thread then merges their results in order.
//!
//! With symmetry reduction, states are recognised by the fingerprint of their representative,
//! but the states kept and expanded are the ones actually reached, so every path replays
//! action by action from the initial state. Distances are the same for every member of a
//! symmetry class, so paths stay shortest.

use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use stateright::Model;

use crate::properties::Kind;

/// A named predicate the checker judges on every state.
pub struct Property<M: Model> {
    pub name: &'static str,
    pub kind: Kind,
    /// For `Always` and `Liveness`: the state is fine. For `Sometimes`: the state is an example.
    pub holds: fn(&M, &M::State) -> bool,
}

/// How to check.
pub struct Options<S: Clone> {
    /// Worker threads (at least one is used).
    pub threads: usize,
    /// The representative of a state's symmetry class (borrowed when the state is its own),
    /// if states are to be reduced by symmetry.
    pub symmetry: Option<fn(&S) -> Cow<'_, S>>,
}

/// What became of one property.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// No reachable state fails it.
    Holds,
    /// Some reachable state fails it.
    Violated,
    /// Some reachable state is an example.
    Found,
    /// No reachable state is an example.
    NotFound,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Holds => "holds",
            Status::Violated => "violated",
            Status::Found => "found",
            Status::NotFound => "not_found",
        }
    }

    /// A violation, or a missing example: the check failed.
    pub fn is_failure(self) -> bool {
        matches!(self, Status::Violated | Status::NotFound)
    }
}

/// A path from the initial state: `states[0]` is initial, `actions[i]` leads from `states[i]`
/// to `states[i + 1]`.
#[derive(Clone, Debug)]
pub struct Path<S, A> {
    pub states: Vec<S>,
    pub actions: Vec<A>,
}

impl<S, A> Path<S, A> {
    /// The number of steps.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    pub fn last_state(&self) -> Option<&S> {
        self.states.last()
    }
}

/// One property's verdict, with a shortest path to the counterexample or example.
#[derive(Clone, Debug)]
pub struct Finding<S, A> {
    pub name: &'static str,
    pub kind: Kind,
    pub status: Status,
    pub path: Option<Path<S, A>>,
}

/// The result of a check.
#[derive(Clone, Debug)]
pub struct Report<S, A> {
    pub unique_states: usize,
    /// Every successor generated, repeats included.
    pub states: usize,
    /// Successors outside the model's boundary, neither counted nor explored.
    pub outside_boundary: usize,
    /// The largest distance (in steps) of any reachable state from the initial state.
    pub max_depth: usize,
    pub seconds: f64,
    pub findings: Vec<Finding<S, A>>,
}

impl<S, A> Report<S, A> {
    pub fn states_per_second(&self) -> f64 {
        if self.seconds > 0.0 { self.states as f64 / self.seconds } else { 0.0 }
    }

    /// Any property violated, or any example not found.
    pub fn failed(&self) -> bool {
        self.findings.iter().any(|f| f.status.is_failure())
    }

    pub fn finding(&self, name: &str) -> Option<&Finding<S, A>> {
        self.findings.iter().find(|f| f.name == name)
    }
}

/// A 64-bit fingerprint of a state: aHash with fixed keys (as stateright uses), so the same
/// on every run of one build.
fn fingerprint<T: Hash>(value: &T) -> u64 {
    const KEYS: [u64; 4] =
        [0x5265_7472_7971_2d31, 0x9e37_79b9_7f4a_7c15, 0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344];
    ahash::RandomState::with_seeds(KEYS[0], KEYS[1], KEYS[2], KEYS[3]).hash_one(value)
}

/// Fingerprints are already hashes: the set need not hash them again.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Seen = HashSet<u64, BuildHasherDefault<Identity>>;

/// How each visited state was first reached.
#[derive(Clone, Copy)]
struct Node {
    parent: u32,
    /// The index of the action in `Model::actions` of the parent (of the initial state for a root).
    action: u32,
}

const ROOT: u32 = u32::MAX;

/// What one thread made of its share of a level.
struct Share<S> {
    /// Per property: the first state in this share (by node id) that decided it.
    hits: Vec<Option<u32>>,
    /// Successors not seen at an earlier level: parent, action index, fingerprint, state.
    successors: Vec<(u32, u32, u64, S)>,
    generated: usize,
    outside: usize,
}

/// Checks every property on every state reachable in `model`.
pub fn check<M>(
    model: &M,
    properties: &[Property<M>],
    options: &Options<M::State>,
) -> Report<M::State, M::Action>
where
    M: Model + Sync,
    M::State: Hash + Clone + Send + Sync,
    M::Action: Clone,
{
    let start = Instant::now();
    let id_of = |state: &M::State| match options.symmetry {
        Some(representative) => fingerprint(&*representative(state)),
        None => fingerprint(state),
    };
    let mut seen = Seen::default();
    let mut nodes: Vec<Node> = Vec::new();
    let mut frontier: Vec<(u32, M::State)> = Vec::new();
    let mut states = 0;
    let mut outside_boundary = 0;
    for (i, state) in model.init_states().into_iter().enumerate() {
        if !model.within_boundary(&state) {
            outside_boundary += 1;
            continue;
        }
        states += 1;
        if seen.insert(id_of(&state)) {
            frontier.push((nodes.len() as u32, state));
            nodes.push(Node { parent: ROOT, action: i as u32 });
        }
    }
    let mut decided: Vec<Option<u32>> = vec![None; properties.len()];
    let mut depth = 0;
    let threads = options.threads.max(1);
    loop {
        let shares = expand_level(model, properties, &frontier, &decided, &seen, threads, &id_of);
        for share in &shares {
            for (slot, hit) in decided.iter_mut().zip(&share.hits) {
                if slot.is_none() {
                    *slot = *hit;
                }
            }
        }
        let mut next = Vec::new();
        for share in shares {
            states += share.generated;
            outside_boundary += share.outside;
            for (parent, action, fp, state) in share.successors {
                if seen.insert(fp) {
                    next.push((nodes.len() as u32, state));
                    nodes.push(Node { parent, action });
                }
            }
        }
        if next.is_empty() || decided.iter().all(Option::is_some) {
            break;
        }
        frontier = next;
        depth += 1;
    }
    let findings = properties
        .iter()
        .zip(&decided)
        .map(|(p, hit)| {
            let status = match (p.kind, hit) {
                (Kind::Sometimes, Some(_)) => Status::Found,
                (Kind::Sometimes, None) => Status::NotFound,
                (_, Some(_)) => Status::Violated,
                (_, None) => Status::Holds,
            };
            Finding { name: p.name, kind: p.kind, status, path: hit.and_then(|id| replay(model, &nodes, id)) }
        })
        .collect();
    Report {
        unique_states: seen.len(),
        states,
        outside_boundary,
        max_depth: depth,
        seconds: start.elapsed().as_secs_f64(),
        findings,
    }
}

/// Judges and expands one level, its states shared out among `threads` in chunks. Shares come
/// back in frontier order.
fn expand_level<M>(
    model: &M,
    properties: &[Property<M>],
    frontier: &[(u32, M::State)],
    decided: &[Option<u32>],
    seen: &Seen,
    threads: usize,
    id_of: &(impl Fn(&M::State) -> u64 + Sync),
) -> Vec<Share<M::State>>
where
    M: Model + Sync,
    M::State: Hash + Clone + Send + Sync,
{
    let chunk = frontier.len().div_ceil(threads * 8).max(64);
    let chunks: Vec<&[(u32, M::State)]> = frontier.chunks(chunk).collect();
    let results: Vec<Mutex<Option<Share<M::State>>>> = chunks.iter().map(|_| Mutex::new(None)).collect();
    let next_chunk = AtomicUsize::new(0);
    let work = || {
        loop {
            let i = next_chunk.fetch_add(1, Ordering::Relaxed);
            let Some(chunk) = chunks.get(i) else { return };
            let share = expand_chunk(model, properties, chunk, decided, seen, id_of);
            if let Ok(mut slot) = results[i].lock() {
                *slot = Some(share);
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads.min(chunks.len()) {
            scope.spawn(work);
        }
        work();
    });
    results.into_iter().filter_map(|slot| slot.into_inner().ok().flatten()).collect()
}

fn expand_chunk<M>(
    model: &M,
    properties: &[Property<M>],
    chunk: &[(u32, M::State)],
    decided: &[Option<u32>],
    seen: &Seen,
    id_of: &impl Fn(&M::State) -> u64,
) -> Share<M::State>
where
    M: Model,
    M::State: Hash + Clone,
{
    let mut share =
        Share { hits: vec![None; properties.len()], successors: Vec::new(), generated: 0, outside: 0 };
    let mut local = Seen::default();
    let mut actions = Vec::new();
    for (id, state) in chunk {
        let mut broken = false;
        for (i, p) in properties.iter().enumerate() {
            let judged = decided[i].is_some() || share.hits[i].is_some();
            if judged && (p.kind == Kind::Sometimes || broken) {
                continue;
            }
            let holds = (p.holds)(model, state);
            broken |= p.kind != Kind::Sometimes && !holds;
            let decides = if p.kind == Kind::Sometimes { holds } else { !holds };
            if decides && !judged {
                share.hits[i] = Some(*id);
            }
        }
        if broken {
            // A counterexample ends here: what follows the first thing to go wrong is not
            // checked (and, with a seeded bug, would only multiply states).
            continue;
        }
        model.actions(state, &mut actions);
        for (a, action) in actions.drain(..).enumerate() {
            let Some(next) = model.next_state(state, action) else { continue };
            if !model.within_boundary(&next) {
                share.outside += 1;
                continue;
            }
            share.generated += 1;
            let fp = id_of(&next);
            if !seen.contains(&fp) && local.insert(fp) {
                share.successors.push((*id, a as u32, fp, next));
            }
        }
    }
    share
}

/// The path to node `id`, rebuilt by replaying its actions from the initial state.
fn replay<M>(model: &M, nodes: &[Node], id: u32) -> Option<Path<M::State, M::Action>>
where
    M: Model,
    M::State: Clone,
    M::Action: Clone,
{
    let mut indices = Vec::new();
    let mut at = id;
    loop {
        let node = nodes.get(at as usize)?;
        indices.push(node.action as usize);
        if node.parent == ROOT {
            break;
        }
        at = node.parent;
    }
    indices.reverse();
    let (&init, steps) = indices.split_first()?;
    let mut state = model.init_states().into_iter().nth(init)?;
    let mut path = Path { states: vec![state.clone()], actions: Vec::new() };
    let mut actions = Vec::new();
    for &a in steps {
        actions.clear();
        model.actions(&state, &mut actions);
        let action = actions.get(a)?.clone();
        state = model.next_state(&state, action.clone())?;
        path.states.push(state.clone());
        path.actions.push(action);
    }
    Some(path)
}
