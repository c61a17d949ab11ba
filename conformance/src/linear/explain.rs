//! Why a history has no linearization, said as briefly as the checker can.
//!
//! A failed search proves a negative: no order works. What a reader needs is where it goes
//! wrong. Two things shorten the story. First, calls that change nothing whatever their place
//! (reads, refusals, `existing` enqueues, reaps of nothing: [`changes_nothing`]) are left
//! out, one at a time, as long as the rest still has no order — sound, because any order of
//! the whole history, less such a call, would be an order of the rest; so the shorter
//! history failing proves the whole one fails. Second, the deepest state of the search on
//! what remains is shown: the longest order that explained every answer in it, the model's
//! jobs after it, and what the model answered to each call that could have come next.
//!
//! [`changes_nothing`]: super::steps::changes_nothing

use std::fmt;

use retryq_model::{Reply, Response, Store};

use super::history::History;
use super::search::{Checker, Deepest, LinearOrder, MAX_CALLS, Miss, Outcome, Step, initial};
use super::steps::{Part, changes_nothing};

/// Why a history was not shown linearizable.
#[derive(Debug, thiserror::Error)]
pub enum Violation {
    /// No order exists: the store answered in a way no sequence of its operations explains.
    #[error("{0}")]
    NotLinearizable(Box<Explanation>),
    /// The search visited its whole budget of states without deciding.
    #[error("undecided: the search stopped after {states} states, with no order found yet")]
    Undecided {
        /// States visited.
        states: u64,
    },
    /// The history is longer than the search handles.
    #[error("{calls} calls: the search handles at most {max}", max = super::search::MAX_CALLS)]
    TooLong {
        /// Calls in the history.
        calls: usize,
    },
    /// The model refused the history's settings, so no call could be judged.
    #[error("the reference store refused the settings: {answer}")]
    Settings {
        /// The model's answer to them.
        answer: String,
    },
}

/// A history with no order, made as short as the checker could, and where its search got
/// stuck.
#[derive(Clone, Debug)]
pub struct Explanation {
    /// The calls that still have no order (numbered afresh, by their place in this vector).
    pub history: History,
    /// How many calls the recorded history had.
    pub recorded: usize,
    /// The longest order found that explains every answer in it.
    pub prefix: Vec<Step>,
    /// The model after that order.
    pub store: Store,
    /// Every step that could have come next, and what the model answered instead.
    pub misses: Vec<Miss>,
    /// States visited by the search of the shortened history.
    pub states: u64,
}

/// [`Checker::check`] with the default budget.
pub fn check(history: &History) -> Result<LinearOrder, Violation> {
    Checker::default().check(history)
}

impl Checker {
    /// An order of `history` consistent with real time in which the reference store gives
    /// every recorded answer, or why there is none.
    pub fn check(&self, history: &History) -> Result<LinearOrder, Violation> {
        if history.calls.len() > MAX_CALLS {
            return Err(Violation::TooLong { calls: history.calls.len() });
        }
        let start = initial(history).map_err(|answer| Violation::Settings { answer })?;
        match self.search(history, &start) {
            Outcome::Linear(order) => Ok(order),
            Outcome::Impossible(deepest) => Err(explain(self, history, &start, *deepest)),
            Outcome::Undecided { states } => Err(Violation::Undecided { states }),
        }
    }
}

/// Shortens `history` (whose search from `start` failed with `deepest`) and explains it.
pub(crate) fn explain(checker: &Checker, history: &History, start: &Store, deepest: Deepest) -> Violation {
    let mut current = history.clone();
    let mut found = deepest;
    // All such calls at once first: usually the rest still fails, and one search settles it.
    let idle = |h: &History, i: usize| changes_nothing(&h.calls[i]);
    let all_idle = current.without(|i| idle(&current, i));
    if all_idle.calls.len() < current.calls.len()
        && let Outcome::Impossible(d) = checker.search(&all_idle, start)
    {
        current = all_idle;
        found = *d;
    }
    // Then one at a time, latest first, keeping each removal after which there is still no
    // order.
    let mut i = current.calls.len();
    while i > 0 {
        i -= 1;
        if !idle(&current, i) {
            continue;
        }
        let shorter = current.without(|j| j == i);
        if let Outcome::Impossible(d) = checker.search(&shorter, start) {
            current = shorter;
            found = *d;
        }
    }
    Violation::NotLinearizable(Box::new(Explanation {
        history: current,
        recorded: history.calls.len(),
        prefix: found.steps,
        store: found.store,
        misses: found.misses,
        states: found.states,
    }))
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let calls = &self.history.calls;
        writeln!(
            f,
            "not linearizable: no order of these {} calls (of {} recorded; the others change nothing \
             and were left out) gives the answers the store gave",
            calls.len(),
            self.recorded
        )?;
        write!(f, "{}", self.history)?;
        write!(f, "the longest order that explains its answers ({} steps):", self.prefix.len())?;
        for step in &self.prefix {
            write!(f, " #{}{}", step.call, part_name(step.part))?;
        }
        writeln!(f)?;
        writeln!(f, "after it the reference store holds:")?;
        for job in self.store.jobs() {
            writeln!(f, "    {}", Response::Ok(Reply::Job(job.view())).to_json_line())?;
        }
        writeln!(f, "and no call can come next ({} states searched):", self.states)?;
        for miss in &self.misses {
            let call = &calls[miss.call];
            writeln!(
                f,
                "    #{}{} {}: the store answered {}, the model {}",
                miss.call,
                part_name(miss.part),
                call.op.to_json_line(),
                call.response.to_json_line(),
                miss.model.to_json_line()
            )?;
        }
        if self.misses.is_empty() {
            writeln!(
                f,
                "    (every call that could come next is waiting for one that returned before it began)"
            )?;
        }
        Ok(())
    }
}

fn part_name(part: Part) -> &'static str {
    match part {
        Part::Whole => "",
        Part::Claim => " (claim)",
        Part::Finish => " (completion)",
    }
}
