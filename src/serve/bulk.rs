//! The jobs list's bulk actions: redrive, cancel or run now the rows an operator selected.
//!
//! Each id is one operation of the contract (`redrive`, `cancel`, `run_now`), each its own
//! transaction, exactly as the one-job buttons run it: a bulk action is a loop over them, not
//! an operation of its own, so it needs no contract text and a refusal of one job (it changed
//! meanwhile) leaves the others' changes standing. What it answers is how many it changed and
//! every refusal by the contract's reason, with the ids refused.
//!
//! A request names at most [`MAX_IDS`] distinct ids: more is refused before any is tried, so
//! one request's work (and the time it holds a store connection) is bounded.

use std::collections::BTreeMap;

use retryq::{Backend, Cancelled, Error, Redrive};

/// The most ids one bulk request may name. A page of the list shows 50; this leaves room
/// for a script, and bounds a request to 500 short transactions.
pub const MAX_IDS: usize = 500;

/// What a bulk request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// A new budget for each dead job: `add_attempts` more attempts and this deadline.
    Redrive { add_attempts: u64, deadline: u64 },
    /// Each pending job dead (cancelled); each leased one asked to stop.
    Cancel,
    /// Each pending job due now.
    RunNow,
}

impl Action {
    /// The action's word, as the form names it.
    pub fn word(self) -> &'static str {
        match self {
            Action::Redrive { .. } => "redrive",
            Action::Cancel => "cancel",
            Action::RunNow => "run_now",
        }
    }
}

/// What a bulk action did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// How many distinct ids were asked for.
    pub asked: usize,
    /// How many jobs it changed: redriven, cancelled (pending → dead), made due.
    pub changed: usize,
    /// How many leased jobs were asked to stop (cancel only): changed at their holder's next
    /// heartbeat, not now.
    pub requested: usize,
    /// The refusals, by the contract's code (`not_dead`, `not_pending`, …), each with its ids
    /// in the order asked.
    pub refused: BTreeMap<&'static str, Vec<String>>,
    /// A failure of the store that stopped the loop (nothing after it was tried), with the ids
    /// not tried.
    pub stopped: Option<(String, Vec<String>)>,
}

/// Why a bulk request was refused before any job was touched.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("id: select at least one job")]
    NoIds,
    #[error("id: {0} jobs selected; a bulk action takes at most {MAX_IDS} (nothing was changed)")]
    TooMany(usize),
}

/// The distinct ids of a request, in the order given; refused when there are none or more
/// than [`MAX_IDS`].
pub fn ids<'a>(given: impl Iterator<Item = &'a str>) -> Result<Vec<&'a str>, Invalid> {
    let mut seen = std::collections::HashSet::new();
    let ids: Vec<&str> = given.filter(|id| !id.is_empty() && seen.insert(*id)).collect();
    match ids.len() {
        0 => Err(Invalid::NoIds),
        n if n > MAX_IDS => Err(Invalid::TooMany(n)),
        _ => Ok(ids),
    }
}

/// Runs `action` on each of `ids` at `now`, one operation of the contract each.
pub fn run(store: &mut dyn Backend, action: Action, ids: &[&str], now: u64) -> Outcome {
    let mut outcome = Outcome { asked: ids.len(), ..Outcome::default() };
    for (at, id) in ids.iter().enumerate() {
        let done = match action {
            Action::Redrive { add_attempts, deadline } => {
                store.redrive(&Redrive { id, add_attempts, deadline, now }).map(|()| true)
            }
            Action::Cancel => store.cancel(id, now).map(|c| c == Cancelled::Ended),
            Action::RunNow => store.run_now(id, now).map(|_| true),
        };
        match done {
            Ok(true) => outcome.changed += 1,
            Ok(false) => outcome.requested += 1,
            Err(e) if e.kind() == retryq::ErrorKind::Storage => {
                let rest = ids[at..].iter().map(|id| (*id).to_owned()).collect();
                outcome.stopped = Some((stopped(&e), rest));
                break;
            }
            Err(e) => outcome.refused.entry(e.kind().code()).or_default().push((*id).to_owned()),
        }
    }
    outcome
}

/// A store's failure, in words.
fn stopped(error: &Error) -> String {
    if error.is_transient() {
        format!("{error} (it may pass: try the rest again)")
    } else {
        error.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use retryq::{Completion, Lease, NewJob, Outcome as Reported, Queue, Report};

    fn store() -> Box<dyn Backend> {
        Box::new(Queue::open_in_memory().expect("open"))
    }

    fn job(id: &str) -> NewJob<'_> {
        NewJob { id, payload: "{}", max_attempts: 1, deadline: 1 << 40, now: 1_000, ..NewJob::default() }
    }

    #[test]
    fn ids_are_distinct_and_bounded() {
        assert_eq!(ids(["a", "b", "a", ""].into_iter()), Ok(vec!["a", "b"]));
        assert_eq!(ids([""].into_iter()), Err(Invalid::NoIds));
        let many: Vec<String> = (0..=MAX_IDS).map(|n| format!("j{n}")).collect();
        assert_eq!(ids(many.iter().map(String::as_str)), Err(Invalid::TooMany(MAX_IDS + 1)));
        assert_eq!(ids(many[..MAX_IDS].iter().map(String::as_str)).map(|ids| ids.len()), Ok(MAX_IDS));
    }

    #[test]
    fn each_job_is_its_own_operation_and_refusals_are_listed_by_reason() {
        let mut store = store();
        // l1 leased; d1 claimed and reported dead (its one attempt spent); p1 pending, p2 pending
        // and scheduled far ahead.
        store.enqueue(&job("l1")).expect("enqueue");
        assert_eq!(store.claim("w", 1_000).expect("claim").map(|c| c.id().to_owned()).as_deref(), Some("l1"));
        store.enqueue(&job("d1")).expect("enqueue");
        assert_eq!(store.claim("w", 1_000).expect("claim").map(|c| c.id().to_owned()).as_deref(), Some("d1"));
        let report = Report::with_error(Reported::Retryable, "boom");
        store.complete(&Completion::new(&Lease::new("w", "d1", 1), report, 1_000, 0.0)).expect("dead");
        store.enqueue(&job("p1")).expect("enqueue");
        store.enqueue(&NewJob { not_before: Some(1 << 30), ..job("p2") }).expect("enqueue");
        let all = ["p1", "p2", "l1", "d1"];
        let (dead, leased, pending) = ("d1", ["l1"], ["p1", "p2"]);

        let redrive = Action::Redrive { add_attempts: 1, deadline: 1 << 41 };
        let out = run(&mut *store, redrive, &all, 2_000);
        assert_eq!((out.asked, out.changed, out.requested), (4, 1, 0), "{out:?}");
        assert_eq!(out.refused.get("not_dead").map(Vec::len), Some(3), "{out:?}");
        assert_eq!(store.get(dead).expect("get").expect("job").status.as_str(), "pending");

        let out = run(&mut *store, Action::Cancel, &[pending[0], leased[0], "nope"], 3_000);
        assert_eq!((out.changed, out.requested), (1, 1), "{out:?}");
        assert_eq!(out.refused.get("not_found"), Some(&vec!["nope".to_owned()]), "{out:?}");
        assert!(store.get(leased[0]).expect("get").expect("job").cancel_requested);

        let out = run(&mut *store, Action::RunNow, &[pending[1], pending[0]], 4_000);
        assert_eq!(out.changed, 1, "{out:?}");
        assert_eq!(out.refused.get("not_pending"), Some(&vec![pending[0].to_owned()]), "{out:?}");
        assert_eq!(store.get(pending[1]).expect("get").expect("job").available_at, Some(4_000));
    }
}
