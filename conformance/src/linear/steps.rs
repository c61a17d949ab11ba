//! How one recorded call moves the reference store, and whether the store agrees with it.
//!
//! Every operation is one transaction (SPEC 3.1) and so one step of the order — except
//! `run_once`, which is two (3.5): its claim commits before anything is sent, and its
//! completion is a second transaction. Another client may act in between: claim the lease
//! once it has expired, or reap it, and the completion then answers `lease_lost`. So a
//! `run_once` takes two steps, [`Part::Claim`] and [`Part::Finish`], each placed anywhere
//! inside the call's interval; one whose claim finds nothing, or whose attempt ends without
//! a completion (a crash, an unclassified error, a clock that went backwards), is done after
//! its claim.

use retryq_model::reference::Text;
use retryq_model::{Failure, Op, Reply, Response, RunOutcome, Store};

use super::history::Call;

/// Which part of a call one step of an order is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// The whole call: every operation but a `run_once` that completed.
    Whole,
    /// A `run_once`'s claim, with its completion still to come.
    Claim,
    /// A `run_once`'s completion of the attempt its claim took.
    Finish,
}

/// A `run_once` between its two steps: the attempt its claim took on the model.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Held {
    /// The call, by index.
    pub call: usize,
    /// The job claimed.
    pub id: Text,
    /// The attempt claimed: what the completion presents.
    pub attempt: u64,
}

/// What one step did to the model.
#[derive(Debug)]
pub(crate) enum Advance {
    /// The call is over, and the model answered what the store did.
    Done,
    /// A `run_once`'s claim took this attempt on the model; the completion is still to come.
    Claimed {
        /// The job.
        id: Text,
        /// The attempt.
        attempt: u64,
    },
    /// The model answered otherwise: this step cannot go here.
    Wrong(Response),
}

/// Every way the first (often only) step of `call` can go on `store`, each with the store it
/// leaves: one, but in the check's mode for claims that step over, where a claim or a reap
/// may pass over any of the jobs in `over` (those the calls overlapping it touch) and each
/// set of them passed over that gives the recorded answer is a way (at most
/// 2^[`MAX_OVER`]). When none does, one way: what the model answered instead.
pub(crate) fn begin_each(store: &Store, call: &Call, over: &[&str]) -> Vec<(Store, Advance)> {
    let over = &over[..over.len().min(MAX_OVER)];
    if over.is_empty() || !may_pass_over(&call.op) {
        let mut next = store.clone();
        let advance = begin(&mut next, call, &[]);
        return vec![(next, advance)];
    }
    let mut ways: Vec<(Store, Advance)> = Vec::new();
    let mut wrong = None;
    for set in 0..1u32 << over.len() {
        let passed: Vec<&str> =
            over.iter().enumerate().filter(|&(bit, _)| set & (1 << bit) != 0).map(|(_, &id)| id).collect();
        let mut next = store.clone();
        match begin(&mut next, call, &passed) {
            Advance::Wrong(model) => {
                wrong.get_or_insert((next, Advance::Wrong(model)));
            }
            advance => {
                if !ways.iter().any(|(way, _)| *way == next) {
                    ways.push((next, advance));
                }
            }
        }
    }
    if ways.is_empty() { wrong.into_iter().collect() } else { ways }
}

/// Whether `op` claims or reaps: what may pass over jobs in the mode for claims that step
/// over.
pub(crate) fn may_pass_over(op: &Op) -> bool {
    matches!(op, Op::Claim { .. } | Op::RunOnce { .. } | Op::Reap { .. })
}

/// The most jobs a claim or a reap that steps over is tried passing over, each set of them in
/// turn (2^8 tries at most): beyond them the check is stricter than the mode, never looser.
pub const MAX_OVER: usize = 8;

/// The first (often only) step of `call` on `store`, its claims and reaps passing over the
/// jobs `passed` ([`Store::step_passing_over`]; none but in the mode for claims that step
/// over).
fn begin(store: &mut Store, call: &Call, passed: &[&str]) -> Advance {
    if !call.more.is_empty() {
        return batch(store, call, passed);
    }
    let Op::RunOnce { worker, now, after, outcome, queues, .. } = &call.op else {
        return judge(store.step_passing_over(&call.op, passed), &call.response);
    };
    if matches!(call.response, Response::Err(Failure::InvalidInput { .. })) {
        // Refused before its claim: one step, which the model checks whole.
        return judge(store.step(&call.op), &call.response);
    }
    // The run's claim serves the run's queues.
    let claim = Op::Claim { queues: queues.clone(), worker: worker.clone(), now: *now };
    let claimed = store.step_passing_over(&claim, passed);
    let (id, attempt) = match &claimed {
        Response::Ok(Reply::Claimed { id, attempt, .. }) => (id.clone(), *attempt),
        // `none` (or a refusal): the run ends with its claim, answering as the claim did.
        _ => return judge(claimed, &call.response),
    };
    let ended = if after.unwrap_or(*now) < *now {
        Some(Failure::RanClockWentBackwards { id: id.clone(), attempt }.into())
    } else {
        match outcome {
            RunOutcome::Crash => Some(Reply::Crashed { id: id.clone(), attempt }.into()),
            RunOutcome::Unknown => Some(Failure::UnknownError { id: id.clone(), attempt }.into()),
            RunOutcome::Ok | RunOutcome::Retryable | RunOutcome::Permanent => None,
        }
    };
    match ended {
        Some(answer) => judge(answer, &call.response),
        None if answers_for(&call.response, &id, attempt) => Advance::Claimed { id: id.into(), attempt },
        // The model's claim took another attempt than the one the run reports.
        None => Advance::Wrong(claimed),
    }
}

/// A claim batch, one step: its claims one after another on the model, each answering what
/// the batch answered for it (SPEC 3.3: a batch answers as that many single claims at its
/// `now`).
fn batch(store: &mut Store, call: &Call, passed: &[&str]) -> Advance {
    for recorded in std::iter::once(&call.response).chain(&call.more) {
        if let Advance::Wrong(model) = judge(store.step_passing_over(&call.op, passed), recorded) {
            return Advance::Wrong(model);
        }
    }
    Advance::Done
}

/// A `run_once`'s second step: the completion of the attempt its claim took.
pub(crate) fn finish(store: &mut Store, call: &Call, id: &str, attempt: u64) -> Advance {
    let Op::RunOnce { queues: _, worker, now, after, outcome, jitter } = &call.op else {
        return Advance::Wrong(Response::invalid("only a run_once has a second step"));
    };
    let Some(outcome) = outcome.classified() else {
        return Advance::Wrong(Response::invalid("an unclassified run_once has no completion"));
    };
    let complete = Op::Complete {
        worker: worker.clone(),
        id: id.to_owned(),
        attempt,
        outcome,
        now: after.unwrap_or(*now),
        jitter: *jitter,
    };
    let id = id.to_owned();
    let answer = match store.step(&complete) {
        Response::Ok(Reply::Done) => Reply::RanDone { id, attempt }.into(),
        Response::Ok(Reply::Retry { available_at }) => Reply::RanRetry { id, attempt, available_at }.into(),
        Response::Ok(Reply::Dead { reason }) => Reply::RanDead { id, attempt, reason }.into(),
        other => other,
    };
    judge(answer, &call.response)
}

/// Whether a call changes nothing in the model whatever order it takes, judging by its
/// recorded answer: a read, a refusal (SPEC 4.9), an `existing` enqueue, a reap of nothing.
/// Such a call can be left out of a history without making an order possible that was not:
/// any order of the whole history, less this call, is an order of the rest.
pub fn changes_nothing(call: &Call) -> bool {
    if call.more.iter().any(|answer| !matches!(answer, Response::Err(_))) {
        return false;
    }
    match (&call.op, &call.response) {
        (Op::Get { .. } | Op::Stats { .. } | Op::RetryDelay { .. }, _) => true,
        (Op::Reap { .. }, Response::Ok(Reply::Reaped { count: 0 })) => true,
        (Op::Prune { .. }, Response::Ok(Reply::Pruned { count: 0 })) => true,
        (Op::Forget { .. }, Response::Ok(Reply::Forgotten { count: 0 })) => true,
        (Op::Enqueue { .. }, Response::Ok(Reply::Existing)) => true,
        // A run_once's claim applied even when its run reports an error (SPEC 6.7).
        (Op::RunOnce { .. }, Response::Err(Failure::InvalidInput { .. })) => true,
        (Op::RunOnce { .. }, _) => false,
        (_, Response::Err(_)) => true,
        _ => false,
    }
}

/// Whether a `run_once`'s recorded answer can be the end of the attempt `id`/`attempt`: one
/// that names it, or `lease_lost` (the store's error does not say which attempt it lost).
fn answers_for(response: &Response, id: &str, attempt: u64) -> bool {
    match response {
        Response::Ok(
            Reply::RanDone { id: i, attempt: a }
            | Reply::RanRetry { id: i, attempt: a, .. }
            | Reply::RanDead { id: i, attempt: a, .. },
        ) => i == id && *a == attempt,
        Response::Err(Failure::LeaseLost) => true,
        _ => false,
    }
}

/// `Done` when the model's answer is the recorded one (an `invalid_input`'s wording aside).
fn judge(model: Response, recorded: &Response) -> Advance {
    if model.observable() == recorded.observable() { Advance::Done } else { Advance::Wrong(model) }
}
