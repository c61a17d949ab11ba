//! A breadth-first model checker that reports *shortest* counterexamples.
//!
//! Layer: generic, beside the SPEC's vocabulary rather than above it: it knows stateright's
//! `Model` trait and nothing of the queue. It may not reach up to the queue's world or
//! properties, so that what it reports (a path, a verdict) cannot depend on what it checks;
//! [`crate::search`] runs it on the queue model with [`crate::properties`].
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
//! Properties are judged on every *step*, not only on every new state: each successor the
//! search generates is judged as it is generated, repeats included, before it is recognised as
//! seen. So a property of a transition (what the step into a state did, which a model may keep
//! in fields its `Hash` leaves out) is judged on every transition the model has, while states
//! that differ only in what the step into them did are one state to the search. A
//! counterexample or example found on a step is the path to the step's parent plus the step.
//!
//! A successor that fails an `always` or liveness property is a counterexample and is not
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

/// How a property is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Must hold in every reachable state; a state where it fails is a counterexample.
    Always,
    /// Must hold somewhere: a state where it holds is an example; none is a vacuity warning.
    Sometimes,
    /// Must hold in every reachable state, like `Always`, but stands for a liveness property
    /// made checkable as an invariant (SPEC 4.7: see [`crate::properties`]); a liveness
    /// counterexample's trace runs one more reap at its end ([`crate::trace`]).
    Liveness,
}

impl Kind {
    /// The kind as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Always => "always",
            Kind::Sometimes => "sometimes",
            Kind::Liveness => "liveness",
        }
    }
}

/// A named predicate the checker judges on every state of a model `M` whose states are `S`.
/// It names no trait of `M`, so a list of properties is plain data about a model, needing
/// nothing of how that model is searched.
pub struct Property<M, S> {
    /// What reports call it: a SPEC section number and a few words.
    pub name: &'static str,
    /// How it is judged.
    pub kind: Kind,
    /// For `Always` and `Liveness`: the state is fine. For `Sometimes`: the state is an example.
    pub holds: fn(&M, &S) -> bool,
}

/// What a model offers this checker beyond stateright's `Model`: probes, and cells.
///
/// *Probes* are actions judged on the first state of each class the search meets rather than
/// on every state, and never expanded: a model whose reads, refusals and argument checks
/// depend only on part of a state (its store, say) has each judged once per distinct part,
/// instead of once per state that holds it. Every probe's step is judged on every property,
/// like any step; its state is not explored further.
///
/// *Cells* are places the model's steps can reach (a table's cells, for the queue): each is
/// found like a `sometimes` property, with a shortest path to the first step that reaches it.
pub trait Probed: Model {
    /// How many sets of probes there are (each has its own classes of states).
    fn probe_sets(&self) -> usize {
        0
    }

    /// The class of `state` for probe set `set`: the set's probes are judged on the first
    /// state of each class, in the search's (deterministic) order.
    fn probe_class(&self, _set: usize, _state: &Self::State) -> u64 {
        0
    }

    /// Appends the probes of set `set` at `state`.
    fn probe_actions(&self, _set: usize, _state: &Self::State, _actions: &mut Vec<Self::Action>) {}

    /// How many cells there are.
    fn cell_count(&self) -> usize {
        0
    }

    /// Calls `reached` with every cell the step into `state` reached.
    fn cells_of(&self, _state: &Self::State, _reached: &mut dyn FnMut(usize)) {}
}

/// An action index that names a probe: the top bit set, the set in the next seven bits, the
/// probe's position in its set below.
const PROBE: u32 = 1 << 31;

fn probe_index(set: usize, k: usize) -> u32 {
    PROBE | ((set as u32 & 0x7f) << 24) | (k as u32 & 0x00ff_ffff)
}

/// The actions of `state` a step index can name: its `Model::actions`, or one set of probes.
fn actions_for<M: Probed>(model: &M, state: &M::State, index: u32, actions: &mut Vec<M::Action>) -> usize {
    actions.clear();
    if index & PROBE == 0 {
        model.actions(state, actions);
        index as usize
    } else {
        model.probe_actions(((index >> 24) & 0x7f) as usize, state, actions);
        (index & 0x00ff_ffff) as usize
    }
}

/// How to check.
pub struct Options<'a, S: Clone> {
    /// Worker threads (at least one is used).
    pub threads: usize,
    /// The representative of a state's symmetry class (borrowed when the state is its own),
    /// if states are to be reduced by symmetry.
    pub symmetry: Option<fn(&S) -> Cow<'_, S>>,
    /// Called after each level of the search, for a progress line.
    pub progress: &'a (dyn Fn(&Progress) + Sync),
    /// Stop after the level where this property is decided, leaving the others that are not
    /// yet decided [`Status::Unchecked`]: how a seeded bug is shown quickly.
    pub until: Option<&'static str>,
}

/// How far a check has got: after each level.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// The level just finished: every state at this distance has been judged.
    pub depth: usize,
    /// Distinct states judged so far.
    pub unique_states: usize,
    /// Every successor generated so far, repeats included.
    pub states: usize,
    /// Seconds since the search started.
    pub seconds: f64,
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
    /// Not decided when the search stopped early ([`Options::until`]).
    Unchecked,
}

impl Status {
    /// The status as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Holds => "holds",
            Status::Violated => "violated",
            Status::Found => "found",
            Status::NotFound => "not_found",
            Status::Unchecked => "unchecked",
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
    /// The states visited, the initial one first.
    pub states: Vec<S>,
    /// The steps between them: one fewer than the states.
    pub actions: Vec<A>,
}

impl<S, A> Path<S, A> {
    /// The number of steps.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether the path has no step (the initial state itself is the finding).
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// The state the path ends in: the counterexample or the example.
    pub fn last_state(&self) -> Option<&S> {
        self.states.last()
    }
}

/// One property's verdict, with a shortest path to the counterexample or example.
#[derive(Clone, Debug)]
pub struct Finding<S, A> {
    /// The property's name.
    pub name: &'static str,
    /// How it was judged.
    pub kind: Kind,
    /// The verdict.
    pub status: Status,
    /// A shortest path to the state that decided it; `None` when no state did (it held, or no
    /// example exists).
    pub path: Option<Path<S, A>>,
}

/// The result of a check.
#[derive(Clone, Debug)]
pub struct CheckReport<S, A> {
    /// Distinct states reached: the search's size, and what pinned counts compare.
    pub unique_states: usize,
    /// Every successor generated, repeats included, probes included.
    pub states: usize,
    /// The probes judged ([`Probed`]): steps judged and never expanded.
    pub probes: usize,
    /// Successors outside the model's boundary, neither counted nor explored.
    pub outside_boundary: usize,
    /// The largest distance (in steps) of any reachable state from the initial state.
    pub max_depth: usize,
    /// Seconds the search took.
    pub seconds: f64,
    /// One verdict per property, in the order the properties were given.
    pub findings: Vec<Finding<S, A>>,
    /// Per cell ([`Probed::cell_count`]): a shortest path to a step that reached it, if any
    /// did (`None` too for every cell when the search stopped early).
    pub cells: Vec<Option<Path<S, A>>>,
}

impl<S, A> CheckReport<S, A> {
    /// Distinct states per second: the checker's speed.
    pub fn states_per_second(&self) -> f64 {
        if self.seconds > 0.0 { self.states as f64 / self.seconds } else { 0.0 }
    }

    /// Any property violated, or any example not found.
    pub fn failed(&self) -> bool {
        self.findings.iter().any(|f| f.status.is_failure())
    }

    /// The finding of the property called `name`, if it was checked.
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

/// Where a property was decided: on an initial state, or on the step `action` from the node
/// `parent` (an index into its `Model::actions`, or a probe: [`probe_index`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Hit {
    Initial(u32),
    Step { parent: u32, action: u32 },
}

/// A state to expand: its node, the state, and the probe sets to judge on it (a bit each).
type Entry<S> = (u32, S, u64);

/// What one thread made of its share of a level.
struct Share<S> {
    /// Per property, then per cell: the first step in this share (by parent node id, then
    /// action) that decided it.
    hits: Vec<Option<Hit>>,
    /// Successors not seen at an earlier level: parent, action index, fingerprint, state.
    successors: Vec<(u32, u32, u64, S)>,
    generated: usize,
    probes: usize,
    outside: usize,
}

/// Checks every property on every state reachable in `model`.
pub fn check<M>(
    model: &M,
    properties: &[Property<M, M::State>],
    options: &Options<'_, M::State>,
) -> CheckReport<M::State, M::Action>
where
    M: Probed + Sync,
    M::State: Hash + Clone + Send + Sync,
    M::Action: Clone,
{
    let start = Instant::now();
    let id_of = |state: &M::State| match options.symmetry {
        Some(representative) => fingerprint(&*representative(state)),
        None => fingerprint(state),
    };
    let mut seen = Seen::default();
    let mut probed: Vec<Seen> = (0..model.probe_sets()).map(|_| Seen::default()).collect();
    let mut nodes: Vec<Node> = Vec::new();
    let mut frontier: Vec<Entry<M::State>> = Vec::new();
    let mut states = 0;
    let mut probes = 0;
    let mut outside_boundary = 0;
    let slots = properties.len() + model.cell_count();
    let mut decided: Vec<Option<Hit>> = vec![None; slots];
    for (i, state) in model.init_states().into_iter().enumerate() {
        if !model.within_boundary(&state) {
            outside_boundary += 1;
            continue;
        }
        states += 1;
        let id = nodes.len() as u32;
        let mut hits = vec![None; slots];
        let broken = judge(model, properties, &state, &decided, &mut hits, Hit::Initial(id));
        for (slot, hit) in decided.iter_mut().zip(hits) {
            if slot.is_none() {
                *slot = hit;
            }
        }
        nodes.push(Node { parent: ROOT, action: i as u32 });
        if !broken && seen.insert(id_of(&state)) {
            let marks = probe_marks(model, &state, &mut probed);
            frontier.push((id, state, marks));
        }
    }
    let mut depth = 0;
    let mut stopped_early = false;
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
            probes += share.probes;
            outside_boundary += share.outside;
            for (parent, action, fp, state) in share.successors {
                if seen.insert(fp) {
                    let marks = probe_marks(model, &state, &mut probed);
                    next.push((nodes.len() as u32, state, marks));
                    nodes.push(Node { parent, action });
                }
            }
        }
        (options.progress)(&Progress {
            depth,
            unique_states: seen.len(),
            states,
            seconds: start.elapsed().as_secs_f64(),
        });
        let stop = options.until.is_some_and(|name| {
            properties.iter().zip(&decided).any(|(p, hit)| p.name == name && hit.is_some())
        });
        let properties_decided = decided.iter().take(properties.len()).all(Option::is_some);
        if next.is_empty() || (properties_decided && decided.iter().all(Option::is_some)) {
            break;
        }
        if stop {
            stopped_early = true;
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
                (_, None) if stopped_early => Status::Unchecked,
                (Kind::Sometimes, None) => Status::NotFound,
                (_, Some(_)) => Status::Violated,
                (_, None) => Status::Holds,
            };
            Finding {
                name: p.name,
                kind: p.kind,
                status,
                path: hit.and_then(|hit| replay(model, &nodes, hit)),
            }
        })
        .collect();
    let cells = decided[properties.len()..]
        .iter()
        .map(|hit| hit.and_then(|hit| replay(model, &nodes, hit)))
        .collect();
    CheckReport {
        unique_states: seen.len(),
        states,
        probes,
        outside_boundary,
        max_depth: depth,
        seconds: start.elapsed().as_secs_f64(),
        findings,
        cells,
    }
}

/// The probe sets to judge on a state new to the search: those whose class it is the first
/// of. Called in the search's sequential merge order, so the choice does not depend on the
/// number of threads.
fn probe_marks<M: Probed>(model: &M, state: &M::State, probed: &mut [Seen]) -> u64 {
    let mut marks = 0;
    for (set, seen) in probed.iter_mut().enumerate().take(64) {
        if seen.insert(model.probe_class(set, state)) {
            marks |= 1 << set;
        }
    }
    marks
}

/// Judges and expands one level, its states shared out among `threads` in chunks. Shares come
/// back in frontier order.
fn expand_level<M>(
    model: &M,
    properties: &[Property<M, M::State>],
    frontier: &[Entry<M::State>],
    decided: &[Option<Hit>],
    seen: &Seen,
    threads: usize,
    id_of: &(impl Fn(&M::State) -> u64 + Sync),
) -> Vec<Share<M::State>>
where
    M: Probed + Sync,
    M::State: Hash + Clone + Send + Sync,
{
    let chunk = frontier.len().div_ceil(threads * 8).max(64);
    let chunks: Vec<&[Entry<M::State>]> = frontier.chunks(chunk).collect();
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
    properties: &[Property<M, M::State>],
    chunk: &[Entry<M::State>],
    decided: &[Option<Hit>],
    seen: &Seen,
    id_of: &impl Fn(&M::State) -> u64,
) -> Share<M::State>
where
    M: Probed,
    M::State: Hash + Clone,
{
    let mut share = Share {
        hits: vec![None; decided.len()],
        successors: Vec::new(),
        generated: 0,
        probes: 0,
        outside: 0,
    };
    let mut local = Seen::default();
    let mut actions = Vec::new();
    for (id, state, marks) in chunk {
        model.actions(state, &mut actions);
        for (a, action) in actions.drain(..).enumerate() {
            let Some(next) = model.next_state(state, action) else { continue };
            if !model.within_boundary(&next) {
                share.outside += 1;
                continue;
            }
            share.generated += 1;
            let step = Hit::Step { parent: *id, action: a as u32 };
            if judge(model, properties, &next, decided, &mut share.hits, step) {
                // A counterexample ends here: what follows the first thing to go wrong is not
                // checked (and, with a seeded bug, would only multiply states).
                continue;
            }
            let fp = id_of(&next);
            if !seen.contains(&fp) && local.insert(fp) {
                share.successors.push((*id, a as u32, fp, next));
            }
        }
        for set in (0..model.probe_sets().min(64)).filter(|set| marks & (1 << set) != 0) {
            model.probe_actions(set, state, &mut actions);
            for (k, action) in actions.drain(..).enumerate() {
                let Some(next) = model.next_state(state, action) else { continue };
                if !model.within_boundary(&next) {
                    share.outside += 1;
                    continue;
                }
                share.generated += 1;
                share.probes += 1;
                let step = Hit::Step { parent: *id, action: probe_index(set, k) };
                judge(model, properties, &next, decided, &mut share.hits, step);
            }
        }
    }
    share
}

/// Judges `state`, reached by `hit`, on every property not yet decided (and every `always`
/// one, to know whether to expand it), and on the cells it reaches; records `hit` for each
/// property or cell it decides first. Returns whether it fails an `always` or liveness
/// property.
fn judge<M: Probed>(
    model: &M,
    properties: &[Property<M, M::State>],
    state: &M::State,
    decided: &[Option<Hit>],
    hits: &mut [Option<Hit>],
    hit: Hit,
) -> bool {
    let mut broken = false;
    for (i, p) in properties.iter().enumerate() {
        let judged = decided[i].is_some() || hits[i].is_some();
        if judged && (p.kind == Kind::Sometimes || broken) {
            continue;
        }
        let holds = (p.holds)(model, state);
        broken |= p.kind != Kind::Sometimes && !holds;
        let decides = if p.kind == Kind::Sometimes { holds } else { !holds };
        if decides && !judged {
            hits[i] = Some(hit);
        }
    }
    let first_cell = properties.len();
    model.cells_of(state, &mut |cell| {
        let slot = first_cell + cell;
        if slot < hits.len() && decided[slot].is_none() && hits[slot].is_none() {
            hits[slot] = Some(hit);
        }
    });
    broken
}

/// The path to a hit: to its node, rebuilt by replaying actions from the initial state, then
/// the hit's own step.
fn replay<M>(model: &M, nodes: &[Node], hit: Hit) -> Option<Path<M::State, M::Action>>
where
    M: Probed,
    M::State: Clone,
    M::Action: Clone,
{
    let (mut at, last) = match hit {
        Hit::Initial(id) => (id, None),
        Hit::Step { parent, action } => (parent, Some(action)),
    };
    let mut indices: Vec<u32> = last.into_iter().collect();
    loop {
        let node = nodes.get(at as usize)?;
        indices.push(node.action);
        if node.parent == ROOT {
            break;
        }
        at = node.parent;
    }
    indices.reverse();
    let (&init, steps) = indices.split_first()?;
    let mut state = model.init_states().into_iter().nth(init as usize)?;
    let mut path = Path { states: vec![state.clone()], actions: Vec::new() };
    let mut actions = Vec::new();
    for &a in steps {
        let k = actions_for(model, &state, a, &mut actions);
        let action = actions.get(k)?.clone();
        state = model.next_state(&state, action.clone())?;
        path.states.push(state.clone());
        path.actions.push(action);
    }
    Some(path)
}
