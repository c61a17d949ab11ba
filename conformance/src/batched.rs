//! The batch calls against the single operations they stand for, on the model.
//!
//! `enqueue_many`, `claim_batch_from` and `complete_batch` are the worker's hot path: every
//! job it runs goes through them. The contract has no batch operations — a batch promises
//! exactly what its items would do one after another at the same instants — so the reading
//! to compare with is the model answering the items one at a time. A trace's runs of
//! consecutive enqueues, of consecutive claims by one worker at one instant serving the same
//! queues, and of consecutive completions each go to the store as one batch (a run of one
//! too); every other line goes as [`compare`](crate::compare) sends it. Every item's answer,
//! and after every batch every job's `get` and `stats`, must agree with the model's.
//!
//! A `prune` goes as the worker's retention sends it: `prune_at_most`, with a limit of 0, 1 or
//! 2 jobs. Its rule ([`Backend::prune_at_most`](retryq::Backend::prune_at_most)) is read here
//! a second time, on the model's jobs: the model prunes at the bound that rule names.

use proptest::prelude::*;
use retryq_model::reference::Store;
use retryq_model::{Op, Reply, Response, Status};

use crate::ReplayError;
use crate::compare::{Comparison, Divergence, note, probe};
use crate::generate::{Abstract, IDS, WORKERS, When, abstract_step, abstract_trace, burst_step};
use crate::parse::Line;
use crate::store::{self, Side};
use crate::trace::Trace;

/// How many items went to the store in batches of two or more, by kind: what a run of
/// [`compare_batched`] tested beyond batches of one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Batched {
    /// Enqueues, through `enqueue_many`.
    pub enqueues: usize,
    /// Claims, through `claim_batch_from`.
    pub claims: usize,
    /// Claims of those batches that found nothing due: the batch claimed fewer than asked.
    pub idle_claims: usize,
    /// Completions, through `complete_batch`.
    pub completions: usize,
    /// Prunes through `prune_at_most` that the limit cut before the jobs that ended at the
    /// first instant past it.
    pub cut_prunes: usize,
    /// Prunes through `prune_at_most` whose earliest instant alone outnumbered the limit.
    pub first_instant_prunes: usize,
    /// Claim batches whose reap ended more jobs than one claim's `reap_limit`: the batch's
    /// limit is its `k` claims' (SPEC 6.17, 6.37).
    pub reaps_past_one_limit: usize,
    /// Claim batches that left a job due to end: their reaps stopped at `k` × `reap_limit`.
    pub reaps_stopped: usize,
}

impl Batched {
    /// Adds another run's counts.
    pub fn add(&mut self, other: Batched) {
        self.enqueues += other.enqueues;
        self.claims += other.claims;
        self.idle_claims += other.idle_claims;
        self.completions += other.completions;
        self.cut_prunes += other.cut_prunes;
        self.first_instant_prunes += other.first_instant_prunes;
        self.reaps_past_one_limit += other.reaps_past_one_limit;
        self.reaps_stopped += other.reaps_stopped;
    }
}

/// What one call to the store covers: a line on its own, or a run of items sent as a batch.
#[derive(Debug)]
enum Group {
    /// Any other line, answered as the replay answers it: its operation, or the parser's
    /// refusal.
    One(Line),
    /// Consecutive `enqueue`s.
    Enqueues(Vec<Op>),
    /// Consecutive `claim`s with one worker, `now` and list of queues.
    Claims(Vec<Op>),
    /// Consecutive `complete`s.
    Completions(Vec<Op>),
    /// A `prune`, sent as `prune_at_most`.
    Prune(Op),
}

impl Group {
    fn len(&self) -> usize {
        match self {
            Group::One(_) | Group::Prune(_) => 1,
            Group::Enqueues(ops) | Group::Claims(ops) | Group::Completions(ops) => ops.len(),
        }
    }

    fn ops(&self) -> Vec<&Op> {
        match self {
            Group::One(Line::Op(op)) | Group::Prune(op) => vec![op],
            Group::One(_) => Vec::new(),
            Group::Enqueues(ops) | Group::Claims(ops) | Group::Completions(ops) => ops.iter().collect(),
        }
    }

    /// Whether `op` joins this run.
    fn takes(&self, op: &Op) -> bool {
        match (self, op) {
            (Group::Enqueues(_), Op::Enqueue { .. }) | (Group::Completions(_), Op::Complete { .. }) => true,
            (Group::Claims(ops), Op::Claim { worker, now, queues }) => {
                matches!(ops.first(), Some(Op::Claim { worker: w, now: n, queues: q }) if w == worker && n == now && q == queues)
            }
            _ => false,
        }
    }

    fn push(&mut self, op: Op) {
        if let Group::Enqueues(ops) | Group::Claims(ops) | Group::Completions(ops) = self {
            ops.push(op);
        }
    }
}

/// The trace's lines, each paired with its index, cut into runs; skipped lines are dropped.
fn groups(trace: &Trace) -> Vec<(usize, Group)> {
    let mut groups: Vec<(usize, Group)> = Vec::new();
    for (i, step) in trace.steps.iter().enumerate() {
        let line = step.line();
        let op = match line {
            Line::Skip => continue,
            Line::Invalid(_) => {
                groups.push((i, Group::One(line)));
                continue;
            }
            Line::Op(op) => op,
        };
        if let Some((_, last)) = groups.last_mut()
            && last.takes(&op)
        {
            last.push(op);
            continue;
        }
        let group = match op {
            Op::Enqueue { .. } => Group::Enqueues(vec![op]),
            Op::Claim { .. } => Group::Claims(vec![op]),
            Op::Complete { .. } => Group::Completions(vec![op]),
            Op::Prune { .. } => Group::Prune(op),
            op => Group::One(Line::Op(op)),
        };
        groups.push((i, group));
    }
    groups
}

/// The store's answers to `group`, one per item, by one call of the batch it stands for.
fn batch(side: &mut Side, group: &Group) -> Result<Vec<Response>, ReplayError> {
    match group {
        Group::One(Line::Op(op)) => Ok(vec![side.step(op)?]),
        Group::One(Line::Invalid(detail)) => Ok(vec![Response::invalid(detail.clone())]),
        Group::One(Line::Skip) => Ok(Vec::new()),
        Group::Prune(op) => {
            let Op::Prune { before, now } = *op else { return Ok(Vec::new()) };
            Ok(vec![store::pruned_response(side.backend().prune_at_most(before, now, limit(before)))?])
        }
        Group::Enqueues(ops) => {
            let jobs: Vec<_> = ops.iter().filter_map(store::new_job).collect();
            side.backend().enqueue_many(&jobs)?.into_iter().map(store::enqueue_response).collect()
        }
        Group::Claims(ops) => {
            let Some(Op::Claim { worker, now, queues }) = ops.first() else { return Ok(Vec::new()) };
            match side.backend().claim_batch_from(worker, &store::names(queues), *now, ops.len()) {
                Ok(claimed) => {
                    let mut answers: Vec<Response> =
                        claimed.into_iter().map(|c| Response::Ok(store::claimed(Some(c)))).collect();
                    // Fewer than asked: the rest found nothing due, as single claims would.
                    while answers.len() < ops.len() {
                        answers.push(Response::Ok(Reply::None));
                    }
                    Ok(answers)
                }
                Err(e) => {
                    let refusal = store::refusal_response(e)?;
                    Ok(vec![refusal; ops.len()])
                }
            }
        }
        Group::Completions(ops) => {
            // A line refused before the queue is called (its jitter) is answered on its own
            // and left out of the batch: it changes nothing, wherever it stands.
            let mut answers: Vec<Option<Response>> = Vec::with_capacity(ops.len());
            let mut finishes = Vec::with_capacity(ops.len());
            for op in ops {
                match store::completion_of(op) {
                    Some(Ok(finish)) => {
                        finishes.push(finish);
                        answers.push(None);
                    }
                    Some(Err(refused)) => answers.push(Some(refused?)),
                    None => answers.push(Some(side.step(op)?)),
                }
            }
            let completions: Vec<_> = finishes.iter().map(store::Finish::completion).collect();
            let mut results = side.backend().complete_batch(&completions)?.into_iter();
            answers
                .into_iter()
                .map(|answer| match answer {
                    Some(answer) => Ok(answer),
                    None => match results.next() {
                        Some(result) => store::complete_response(result),
                        None => Err(ReplayError::Unnamed("complete_batch answered fewer results".into())),
                    },
                })
                .collect()
        }
    }
}

/// Runs `trace` with its runs of enqueues, claims and completions sent as batches to `side`
/// (which should be fresh), and one item at a time to an empty model; what was batched.
pub fn compare_batched(trace: &Trace, side: &mut Side) -> Result<(Comparison, Batched), ReplayError> {
    let mut model = Store::new();
    let mut responses = Vec::with_capacity(trace.len());
    let mut ids: Vec<String> = Vec::new();
    let mut clock = 0;
    let mut batched = Batched::default();
    for (start, group) in groups(trace) {
        let ops = group.ops();
        for op in &ops {
            note(op, &mut ids, &mut clock);
        }
        let before = matches!(group, Group::Claims(_)).then(|| model.clone());
        let theirs: Vec<Response> = match &group {
            Group::One(Line::Invalid(detail)) => vec![Response::invalid(detail.clone())],
            Group::Prune(op) => vec![model.step(&bounded(&model, op, &mut batched))],
            _ => ops.iter().map(|op| model.step(op)).collect(),
        };
        let ours = match batch(side, &group) {
            Ok(ours) => ours,
            Err(ReplayError::Storage(e)) => {
                let model = theirs.first().map(Response::to_json_line).unwrap_or_default();
                let divergence =
                    diverge(side, trace, start, "the batch's call", format!("storage failure: {e}"), model);
                return Ok((Comparison::Diverge(divergence), batched));
            }
            Err(e) => return Err(e),
        };
        if ours.len() != theirs.len() {
            let store = format!("{} answers to {} items", ours.len(), theirs.len());
            let divergence = diverge(side, trace, start, "the batch's answers", store, String::new());
            return Ok((Comparison::Diverge(divergence), batched));
        }
        for (offset, (ours, theirs)) in ours.iter().zip(&theirs).enumerate() {
            if ours.observable() != theirs.observable() {
                let (store, model) = (ours.to_json_line(), theirs.to_json_line());
                let divergence = diverge(side, trace, start + offset, "the item's answer", store, model);
                return Ok((Comparison::Diverge(divergence), batched));
            }
        }
        count(&group, &ours, &mut batched);
        if let (Some(before), Group::Claims(ops)) = (&before, &group)
            && ops.len() >= 2
        {
            count_reaps(before, &model, ops, &theirs, &mut batched);
        }
        responses.extend(theirs);
        if let Some((probe, ours, theirs)) = probe(side, &mut model, &ids, clock)? {
            let last = start + group.len() - 1;
            let divergence = diverge(side, trace, last, &probe, ours.to_json_line(), theirs.to_json_line());
            return Ok((Comparison::Diverge(divergence), batched));
        }
    }
    Ok((Comparison::Agree(responses), batched))
}

/// The limit a `prune` with this `before` is sent with: 0, 1 or 2 jobs, so that it often
/// cuts. A function of the line alone, so that a shrunk trace keeps it.
fn limit(before: u64) -> u64 {
    before % 3
}

/// The `prune` the model answers for `prune_at_most(before, now, limit(before))`: at the
/// largest bound ≤ `before` whose ended jobs number at most the limit — or, when the jobs
/// that ended at the earliest instant alone outnumber it, at that instant. A prune the model
/// refuses is refused as it stands. Counts the prunes the limit cut.
fn bounded(model: &Store, op: &Op, batched: &mut Batched) -> Op {
    let Op::Prune { before, now } = *op else { return op.clone() };
    if matches!(model.clone().step(op), Response::Err(_)) {
        return op.clone();
    }
    let mut ends: Vec<u64> = model
        .jobs()
        .iter()
        .filter(|job| matches!(job.phase.status(), Status::Done | Status::Dead))
        .filter_map(|job| job.ended_at)
        .collect();
    ends.sort_unstable();
    let within = ends.iter().filter(|&&end| end <= before).count();
    let limit = usize::try_from(limit(before)).unwrap_or(usize::MAX);
    // All of them fit: the prune as it stands.
    let (true, Some(&past), Some(&first)) = (within > limit, ends.get(limit), ends.first()) else {
        return op.clone();
    };
    let bound = if first < past {
        batched.cut_prunes += 1;
        past - 1
    } else {
        batched.first_instant_prunes += 1;
        past
    };
    Op::Prune { before: bound, now }
}

/// Where the two readings first disagree: at the trace's line `step`.
fn diverge(side: &Side, trace: &Trace, step: usize, probe: &str, store: String, model: String) -> Divergence {
    Divergence {
        step,
        line: trace.steps.get(step).map(crate::trace::Step::to_line).unwrap_or_default(),
        probe: probe.to_owned(),
        kind: side.kind(),
        store,
        model,
    }
}

fn count(group: &Group, answers: &[Response], batched: &mut Batched) {
    let n = group.len();
    if n < 2 {
        return;
    }
    match group {
        Group::Enqueues(_) => batched.enqueues += n,
        Group::Claims(_) => {
            batched.claims += n;
            batched.idle_claims += answers.iter().filter(|a| **a == Response::Ok(Reply::None)).count();
        }
        Group::Completions(_) => batched.completions += n,
        Group::One(_) | Group::Prune(_) => {}
    }
}

/// What the reaps of a claim batch did on the model, which ran its claims one at a time from
/// `before` to `after`: whether they ended more than one `reap_limit` of jobs, and whether
/// they left a job due to end.
fn count_reaps(before: &Store, after: &Store, ops: &[Op], answers: &[Response], batched: &mut Batched) {
    let Some(&Op::Claim { now, .. }) = ops.first() else { return };
    let taken: Vec<&str> = answers.iter().filter_map(Response::taken_id).collect();
    let open = |status: Status| matches!(status, Status::Pending | Status::Leased);
    let ended = before
        .jobs()
        .iter()
        .filter(|b| open(b.phase.status()) && !taken.contains(&&*b.id))
        .filter(|b| after.job(&b.id).is_some_and(|a| !open(a.phase.status())))
        .count() as u64;
    if ended > before.config().reap_limit {
        batched.reaps_past_one_limit += 1;
    }
    if after.jobs().iter().any(|job| retryq_model::rules::due_to_end(job, now)) {
        batched.reaps_stopped += 1;
    }
}

/// Abstract traces in which enqueues, claims and completions come in runs of two to five —
/// the claims of a run by one worker at one instant from the same queues (now and then right
/// after a run of enqueues, so that jobs are due), the others each drawn on their own — among
/// single steps of every kind: what [`compare_batched`] sends as batches. Generated traces
/// rarely line up claims that way by chance, nor prunes after jobs ended: a run of
/// enqueues, `run_once`s and prunes gives them.
pub fn batched_trace(max_runs: usize) -> impl Strategy<Value = Vec<Abstract>> {
    let enqueues = || {
        let enqueue = abstract_step().prop_filter("an enqueue", |s| matches!(s, Abstract::Enqueue { .. }));
        proptest::collection::vec(enqueue, 2..6)
    };
    let complete = abstract_step().prop_filter("a completion", |s| matches!(s, Abstract::Complete { .. }));
    let claim = abstract_step().prop_filter("a claim", |s| matches!(s, Abstract::Claim { .. }));
    let claims = (claim, 1usize..5).prop_map(|(first, more)| {
        let mut run = vec![first.clone()];
        if let Abstract::Claim { worker, queues, .. } = first {
            run.extend(std::iter::repeat_n(Abstract::Claim { worker, now: When::Same, queues }, more));
        }
        run
    });
    // Enqueues and then, at the last one's time, claims: a claim batch with jobs due.
    let fed = (enqueues(), 0..WORKERS.len(), 2usize..6).prop_map(|(mut run, worker, k)| {
        run.extend(std::iter::repeat_n(Abstract::Claim { worker, now: When::Same, queues: None }, k));
        run
    });
    // Jobs enqueued, then ended by `run_once`s, then pruned: prunes with ended jobs to cut.
    let ran = abstract_step().prop_filter("a run_once", |s| matches!(s, Abstract::RunOnce { .. }));
    let prune = abstract_step().prop_filter("a prune", |s| matches!(s, Abstract::Prune { .. }));
    let retention =
        (enqueues(), proptest::collection::vec(ran, 2..6), proptest::collection::vec(prune, 1..3)).prop_map(
            |(mut run, ran, prunes)| {
                run.extend(ran);
                run.extend(prunes);
                run
            },
        );
    // A backlog: jobs enqueued together, then claims at one instant where some of them are
    // due to end, so that the batch's reap ends up to k × `reap_limit` (SPEC 6.17, 6.37).
    // A limit of 1 or 2 and two bursts, so that k claims often find more than k limits.
    let limit = prop_oneof![Just(1u64), Just(2)];
    let backlog = (limit, burst_step(), burst_step(), 1..IDS.len(), 0..WORKERS.len(), 1usize..4).prop_map(
        |(limit, first, second, rank, worker, more)| {
            let config =
                Abstract::Config { base_ms: None, cap_ms: None, lease_ms: None, reap_limit: Some(limit) };
            let mut run = vec![
                config,
                first,
                second,
                Abstract::Claim { worker, now: When::Backlog { rank }, queues: None },
            ];
            run.extend(std::iter::repeat_n(Abstract::Claim { worker, now: When::Same, queues: None }, more));
            run
        },
    );
    let run = prop_oneof![
        4 => abstract_step().prop_map(|step| vec![step]),
        2 => backlog,
        3 => retention,
        1 => enqueues(),
        2 => claims,
        2 => fed,
        2 => proptest::collection::vec(complete, 2..6),
    ];
    (abstract_trace(4), proptest::collection::vec(run, 1..=max_runs))
        .prop_map(|(opening, runs)| opening.into_iter().chain(runs.into_iter().flatten()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Step;

    fn claim(worker: &str, now: u64) -> Op {
        Op::Claim { worker: worker.into(), now, queues: None }
    }

    fn enqueue(id: &str) -> Op {
        Op::Enqueue {
            id: id.into(),
            payload: "p".into(),
            max_attempts: 2,
            deadline: 1000,
            now: 0,
            not_before: None,
            base_ms: None,
            cap_ms: None,
            queue: None,
            priority: None,
            kind: None,
        }
    }

    #[test]
    fn runs_are_cut_where_a_batch_could_not_hold_them() {
        let trace = Trace {
            steps: [
                enqueue("a"),
                enqueue("b"),
                claim("w1", 5),
                claim("w1", 5),
                claim("w2", 5),
                claim("w2", 6),
                Op::Reap { now: 6 },
                enqueue("c"),
            ]
            .into_iter()
            .map(Step::Op)
            .collect(),
        };
        let runs: Vec<(usize, usize)> = groups(&trace).iter().map(|(start, g)| (*start, g.len())).collect();
        assert_eq!(runs, [(0, 2), (2, 2), (4, 1), (5, 1), (6, 1), (7, 1)]);
    }

    #[test]
    fn a_claim_batch_asking_more_than_is_due_agrees_and_is_counted() {
        let trace = Trace {
            steps: [enqueue("a"), enqueue("b"), claim("w1", 5), claim("w1", 5), claim("w1", 5)]
                .into_iter()
                .map(Step::Op)
                .collect(),
        };
        let mut side = Side::in_memory().expect("memory store");
        let (comparison, batched) = compare_batched(&trace, &mut side).expect("run");
        let Comparison::Agree(responses) = comparison else { panic!("{comparison:?}") };
        assert_eq!(responses[4], Response::Ok(Reply::None));
        assert_eq!(batched, Batched { enqueues: 2, claims: 3, idle_claims: 1, ..Batched::default() });
    }
}
