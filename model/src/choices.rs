//! The contract's choices as data: every rule of SPEC sections 1 and 3 that chooses among
//! candidates or compares two values, with the relations its candidates can stand in.
//!
//! A cell of [`crate::contract`]'s table is reached by one state; a *choice* needs its
//! candidates in every relation the rule compares. So for each such rule this module lists the
//! keys the rule compares and the relations a candidate can stand in on each key (less, equal,
//! greater), and derives from the rule's own order which combinations a correct store can show:
//! the relations of a claim's other claimable jobs to the one it took (by priority,
//! `available_at` and first enqueue, in the same queue, a queue named before or after, or a
//! queue it does not serve), of the jobs a reap at its limit left to those it ended, of the
//! conditions a reap, a heartbeat or a completion weighs at once, of `before` to each `ended_at`,
//! of `stats`' queue to each job's and tombstone's, and of a name to a stored one equal but for
//! its bytes. Each derived relation is a `sometimes` cell of the check (`retryq check
//! --coverage` prints them after the two tables); a step that shows a relation the rule's order
//! does not allow is outside the table.
//!
//! Layer: the SPEC's vocabulary, beside [`crate::contract`]. It says what the contract allows,
//! whoever takes the step; which relation a step showed is the world's to read
//! ([`crate::coverage`]).

use unicode_normalization::UnicodeNormalization;

use crate::contract::{Answer, Field, OpKind, fields};

/// How a candidate compares with the one the rule chose (or with the bound it is held to), on
/// one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cmp {
    /// Smaller.
    Less,
    /// Equal.
    Equal,
    /// Larger.
    Greater,
}

impl Cmp {
    /// Every relation.
    pub const ALL: [Cmp; 3] = [Cmp::Less, Cmp::Equal, Cmp::Greater];
    /// A rank: never equal for two jobs (SPEC 6.1).
    pub const RANKS: [Cmp; 2] = [Cmp::Less, Cmp::Greater];

    /// `a` against `b`.
    pub fn of<T: Ord>(a: T, b: T) -> Cmp {
        match a.cmp(&b) {
            std::cmp::Ordering::Less => Cmp::Less,
            std::cmp::Ordering::Equal => Cmp::Equal,
            std::cmp::Ordering::Greater => Cmp::Greater,
        }
    }

    fn sign(self) -> &'static str {
        match self {
            Cmp::Less => "<",
            Cmp::Equal => "=",
            Cmp::Greater => ">",
        }
    }
}

/// Lexicographic order of key relations: the first that is not equal decides.
fn lexicographic(keys: &[Cmp]) -> Cmp {
    keys.iter().copied().find(|&c| c != Cmp::Equal).unwrap_or(Cmp::Equal)
}

/// Where another claimable job's queue stands for a claim that took a job (SPEC 3.3.2, 6.32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lane {
    /// The taken job's queue.
    Same,
    /// Another queue the claim serves, named before the taken job's in `queues`.
    NamedBefore,
    /// Another queue the claim serves, named after it.
    NamedAfter,
    /// A queue the claim does not serve.
    NotServed,
}

impl Lane {
    /// Every lane.
    pub const ALL: [Lane; 4] = [Lane::Same, Lane::NamedBefore, Lane::NamedAfter, Lane::NotServed];

    fn name(self) -> &'static str {
        match self {
            Lane::Same => "same queue",
            Lane::NamedBefore => "a queue named before",
            Lane::NamedAfter => "a queue named after",
            Lane::NotServed => "a queue not served",
        }
    }
}

/// Which of `stats`' scopes an item fell in (SPEC 3.8): every queue, or the queue named, the
/// item's own or another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// `stats` named no queue.
    All,
    /// It named the item's queue.
    Same,
    /// It named another queue.
    Other,
}

impl Scope {
    /// Every scope.
    pub const ALL: [Scope; 3] = [Scope::All, Scope::Same, Scope::Other];
}

/// How a name differs from a stored one it equals but for its bytes (SPEC 1.6, 5.2: names
/// compare byte for byte). A store that folds any of these treats two names as one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NameClass {
    /// Another case: `JöB-Z` for `jöb-z` (equal under ASCII and Unicode case folding).
    Case,
    /// Another canonical form: `o` + U+0308 for `ö` (equal under NFC).
    Decomposed,
    /// A compatibility form: a fullwidth letter for an ASCII one (equal under NFKC).
    Compatible,
    /// A trailing space.
    TrailingSpace,
}

impl NameClass {
    /// Every class.
    pub const ALL: [NameClass; 4] =
        [NameClass::Case, NameClass::Decomposed, NameClass::Compatible, NameClass::TrailingSpace];

    /// How a report names it.
    pub fn name(self) -> &'static str {
        match self {
            NameClass::Case => "another case",
            NameClass::Decomposed => "decomposed (NFD)",
            NameClass::Compatible => "a compatibility form (NFKC)",
            NameClass::TrailingSpace => "a trailing space",
        }
    }

    /// `name` made of this class: equal to it but for its bytes, or `None` where the class has
    /// no such form of it (an ASCII name has no decomposed form).
    pub fn of(self, name: &str) -> Option<String> {
        let made = match self {
            NameClass::Case => {
                let upper = name.to_ascii_uppercase();
                if upper == name { name.to_ascii_lowercase() } else { upper }
            }
            NameClass::Decomposed => name.nfd().collect(),
            NameClass::Compatible => {
                let at = name.char_indices().find(|(_, c)| c.is_ascii_alphanumeric())?.0;
                let mut made = String::with_capacity(name.len() + 2);
                made.push_str(&name[..at]);
                let c = name[at..].chars().next()?;
                // U+FF01 … U+FF5E are the fullwidth forms of U+0021 … U+007E.
                made.push(char::from_u32(u32::from(c) - 0x21 + 0xFF01)?);
                made.push_str(&name[at + 1..]);
                made
            }
            NameClass::TrailingSpace => format!("{name} "),
        };
        (made != name).then_some(made)
    }

    /// Whether `a` and `b`, two different names, are equal but for this class's difference.
    pub fn folds(self, a: &str, b: &str) -> bool {
        a != b
            && match self {
                NameClass::Case => a.to_lowercase() == b.to_lowercase(),
                NameClass::Decomposed => a.nfc().eq(b.nfc()),
                NameClass::Compatible => !a.nfc().eq(b.nfc()) && a.nfkc().eq(b.nfkc()),
                NameClass::TrailingSpace => a.trim_end() == b.trim_end(),
            }
    }
}

/// Which conditions a reap weighs for a job due to end (SPEC 3.3.1): its status, a cancel
/// request, a spent budget, a passed deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Due {
    /// An expired lease (otherwise pending).
    pub leased: bool,
    /// A cancel request stands.
    pub cancelling: bool,
    /// `attempts` ≥ `max_attempts`.
    pub exhausted: bool,
    /// `deadline` ≤ `now`.
    pub past: bool,
}

impl Due {
    /// The answer a reap gives the job, by 3.3.1's rules in their order: the request, the
    /// budget, the deadline; `None` when none applies (the job is not due to end).
    pub fn answer(self) -> Option<Answer> {
        match self {
            Due { leased: true, cancelling: true, .. } => Some(Answer::ReapedCancelled),
            Due { leased: true, exhausted: true, .. } => Some(Answer::ReapedExhausted),
            Due { past: true, .. } => Some(Answer::ReapedDeadline),
            _ => None,
        }
    }
}

/// Which conditions a heartbeat or a completion weighs at once (SPEC 3.4, 3.12, 6.34), for a
/// job that is stored: its fence, the clock, a cancel request, the deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fence {
    /// The job is not leased, or not to this worker, or not at this attempt.
    pub lost: bool,
    /// `now` before the claim.
    pub backwards: bool,
    /// A cancel request stands (weighed by a heartbeat only).
    pub cancelling: bool,
    /// `now` ≥ `deadline` (weighed by a heartbeat only).
    pub past: bool,
}

impl Fence {
    /// What a heartbeat answers, by 3.12's order of refusals.
    pub fn heartbeat(self) -> Answer {
        match self {
            Fence { lost: true, .. } => Answer::LeaseLost,
            Fence { backwards: true, .. } => Answer::ClockWentBackwards,
            Fence { cancelling: true, .. } => Answer::CancelledError,
            Fence { past: true, .. } => Answer::DeadlinePassed,
            _ => Answer::Extended,
        }
    }

    /// What a completion answers, by 3.4's order (`None`: applied, whatever the outcome).
    pub fn complete(self) -> Option<Answer> {
        match self {
            Fence { lost: true, .. } => Some(Answer::LeaseLost),
            Fence { backwards: true, .. } => Some(Answer::ClockWentBackwards),
            _ => None,
        }
    }

    /// Whether a stored job can show these conditions at once: a claim starts before the
    /// deadline (4.4), so no time before the claim is at or past it; and a job that is not
    /// leased shows nothing else.
    fn possible(self) -> bool {
        !(self.backwards && self.past)
    }
}

/// A relation a step showed between the candidates of a rule that chooses or compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Choice {
    /// SPEC 3.3.2, 4.8: a claim (or `run_once`) took a job, and another was claimable: where
    /// that one's queue stands, and its priority, `available_at` and first enqueue against the
    /// taken job's.
    Claim {
        /// Its queue.
        lane: Lane,
        /// Its priority against the taken job's.
        priority: Cmp,
        /// Its `available_at` against the taken job's.
        available_at: Cmp,
        /// Its first enqueue against the taken job's.
        first: Cmp,
    },
    /// A claim answered `none` while a job of a queue it does not serve was claimable.
    NoneServed,
    /// SPEC 3.3.1, 6.37: a reap at its limit ended one job and left another due to end: the
    /// left one's rule against the ended one's, its time (the rule's own key — lease expiry,
    /// deadline — when the rules are equal, the deadline when they differ) and first enqueue.
    ReapOrder {
        /// The left job's rule against the ended job's.
        rule: Cmp,
        /// Its time against the ended job's.
        at: Cmp,
        /// Its first enqueue against the ended job's.
        first: Cmp,
    },
    /// SPEC 3.3.1: a reap ended a job that met these conditions.
    ReapRule(Due),
    /// SPEC 3.14: a prune met a job: `None` an open one, else its `ended_at` against `before`.
    Prune(Option<Cmp>),
    /// SPEC 3.15: a forget met a tombstone: its `ended_at` against `before`.
    Forget(Cmp),
    /// SPEC 3.8: `stats` met a job (or, `true`, a tombstone) in this scope.
    Stats(Scope, bool),
    /// SPEC 3.12, 6.34: a heartbeat met a stored job with these conditions.
    Heartbeat(Fence),
    /// SPEC 3.4: a completion met a stored job with these conditions.
    Complete(Fence),
    /// SPEC 1.6, 5.2: an operation's name field held a name equal to a stored one but for its
    /// bytes, which must be another name.
    Name(OpKind, Field, NameClass),
    /// SPEC 3.3.2, 3.16: a claim serving a paused queue, one of whose jobs was claimable but
    /// for the pause and sorted first: it took another queue's job (`true`), or none.
    PausedPassed(bool),
    /// SPEC 3.3.1, 6.39: a reap ended a job of a paused queue: an expired lease (`true`) or a
    /// pending job.
    PausedReaped(bool),
    /// SPEC 3.17: a resume of a paused queue met one of its jobs pending and due: in time
    /// (`false`), or at or past its deadline, due to end (`true`).
    Resumed(bool),
    /// SPEC 3.18, 6.41: a `run_now` met a stored job pending (or leased), at or past its
    /// deadline or not, with its `available_at` (a lease's expiry) against the `run_now`'s
    /// `now`.
    RunNow {
        /// Leased (otherwise pending).
        leased: bool,
        /// `deadline` ≤ `now`.
        past: bool,
        /// `available_at` against `now`.
        schedule: Cmp,
    },
}

/// Whether `op`'s `field` is a name the store compares with the names it holds: ids with its
/// jobs' and tombstones', a completion's or heartbeat's worker with the holder, a queue or a
/// claim's queues with its jobs'. (A claim's worker is recorded, not compared.)
pub fn compares_name(op: OpKind, field: Field) -> bool {
    match field {
        Field::Id => true,
        Field::Worker => matches!(op, OpKind::Complete | OpKind::Heartbeat),
        Field::Queue | Field::Queues => true,
        _ => false,
    }
}

/// Every relation the contract allows, derived from each rule's order: in report order.
pub fn choices() -> Vec<Choice> {
    let mut all = Vec::new();
    // 3.3.2: a claimable job the claim passed over sorts after the taken one by (priority,
    // available_at, first enqueue) if its queue is served; one of a queue not served matters
    // where it sorts before (serving it would change the answer).
    for lane in Lane::ALL {
        for priority in Cmp::ALL {
            for available_at in Cmp::ALL {
                for first in Cmp::RANKS {
                    let order = lexicographic(&[priority, available_at, first]);
                    let shown = if lane == Lane::NotServed { Cmp::Less } else { Cmp::Greater };
                    if order == shown {
                        all.push(Choice::Claim { lane, priority, available_at, first });
                    }
                }
            }
        }
    }
    all.push(Choice::NoneServed);
    // 3.3.1: the jobs past the limit come after those ended, rule by rule, then by the rule's
    // time, then by first enqueue.
    for rule in Cmp::ALL {
        for at in Cmp::ALL {
            for first in Cmp::RANKS {
                let order = if rule == Cmp::Equal { lexicographic(&[at, first]) } else { rule };
                if order == Cmp::Greater {
                    all.push(Choice::ReapOrder { rule, at, first });
                }
            }
        }
    }
    for leased in [true, false] {
        for cancelling in [false, true] {
            for exhausted in [false, true] {
                for past in [false, true] {
                    let due = Due { leased, cancelling, exhausted, past };
                    // A pending job has budget and no request (3.3.1): only its deadline.
                    if due.answer().is_some() && (leased || !(cancelling || exhausted)) {
                        all.push(Choice::ReapRule(due));
                    }
                }
            }
        }
    }
    all.push(Choice::Prune(None));
    all.extend(Cmp::ALL.map(|c| Choice::Prune(Some(c))));
    all.extend(Cmp::ALL.map(Choice::Forget));
    for scope in Scope::ALL {
        for tombstone in [false, true] {
            all.push(Choice::Stats(scope, tombstone));
        }
    }
    for heartbeat in [true, false] {
        for lost in [false, true] {
            for backwards in [false, true] {
                for (cancelling, past) in [(false, false), (true, false), (false, true), (true, true)] {
                    let fence = Fence { lost, backwards, cancelling, past };
                    match heartbeat {
                        true if fence.possible() => all.push(Choice::Heartbeat(fence)),
                        false if !cancelling && !past => all.push(Choice::Complete(fence)),
                        _ => {}
                    }
                }
            }
        }
    }
    all.extend([true, false].map(Choice::PausedPassed));
    all.extend([false, true].map(Choice::PausedReaped));
    all.extend([false, true].map(Choice::Resumed));
    for leased in [false, true] {
        for past in [false, true] {
            for schedule in Cmp::ALL {
                // A pending job is due before its deadline (4.6): past it, it has been due.
                if leased || !past || schedule == Cmp::Less {
                    all.push(Choice::RunNow { leased, past, schedule });
                }
            }
        }
    }
    for op in OpKind::ALL {
        for &field in fields(op).iter().filter(|&&f| compares_name(op, f)) {
            for class in NameClass::ALL {
                all.push(Choice::Name(op, field, class));
            }
        }
    }
    all
}

impl Choice {
    /// The relation in words, as `--coverage` prints it.
    pub fn name(self) -> String {
        let rank = |c: Cmp| if c == Cmp::Less { "before" } else { "after" };
        match self {
            Choice::Claim { lane, priority, available_at, first } => format!(
                "claim: another job of {}, priority {}, available_at {}, first enqueued {}",
                lane.name(),
                priority.sign(),
                available_at.sign(),
                rank(first)
            ),
            Choice::NoneServed => "claim: none, a job of a queue not served claimable".into(),
            Choice::ReapOrder { rule, at, first } => format!(
                "reap at its limit: a job left with rule {}, {} {}, first enqueued {}",
                rule.sign(),
                if rule == Cmp::Equal { "time" } else { "deadline" },
                at.sign(),
                rank(first)
            ),
            Choice::ReapRule(d) => format!(
                "reap ends a {} job{}{}{}",
                if d.leased { "leased, expired" } else { "pending" },
                if d.cancelling { ", cancel requested" } else { "" },
                if d.exhausted { ", budget spent" } else { "" },
                if d.past { ", past its deadline" } else { "" },
            ),
            Choice::Prune(None) => "prune meets an open job".into(),
            Choice::Prune(Some(c)) => format!("prune meets a job ended {} before", c.sign()),
            Choice::Forget(c) => format!("forget meets a tombstone ended {} before", c.sign()),
            Choice::Stats(scope, tombstone) => format!(
                "stats of {} meets a {}",
                match scope {
                    Scope::All => "every queue",
                    Scope::Same => "its queue",
                    Scope::Other => "another queue",
                },
                if tombstone { "tombstone" } else { "job" }
            ),
            Choice::Heartbeat(f) | Choice::Complete(f) => {
                let mut held: Vec<&str> = Vec::new();
                for (on, what) in [
                    (f.lost, "lease lost"),
                    (f.backwards, "before the claim"),
                    (f.cancelling, "cancel requested"),
                    (f.past, "at the deadline"),
                ] {
                    if on {
                        held.push(what);
                    }
                }
                let op = if matches!(self, Choice::Heartbeat(_)) { "heartbeat" } else { "complete" };
                let held = if held.is_empty() { "nothing in the way".to_owned() } else { held.join(", ") };
                format!("{op}: {held}")
            }
            Choice::Name(op, field, class) => format!("{} with {} {}", op.name(), field.name(), class.name()),
            Choice::PausedPassed(took) => format!(
                "claim: a paused queue's job sorts first, {}",
                if took { "another queue's taken" } else { "none taken" }
            ),
            Choice::PausedReaped(leased) => format!(
                "reap ends a paused queue's {} job",
                if leased { "leased, expired" } else { "pending" }
            ),
            Choice::Resumed(past) => {
                format!("resume meets a job {}", if past { "due to end" } else { "due, in time" })
            }
            Choice::RunNow { leased, past, schedule } => format!(
                "run_now of a {} job{}, {} {} now",
                if leased { "leased" } else { "pending" },
                if past { " past its deadline" } else { "" },
                if leased { "lease expiry" } else { "available_at" },
                schedule.sign()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_relations_are_the_rules_orders() {
        let all = choices();
        let count = |f: &dyn Fn(&Choice) -> bool| all.iter().filter(|c| f(c)).count();
        // Nine orders a passed-over job can sort after the taken one, in three lanes; nine
        // before it in a queue not served.
        assert_eq!(count(&|c| matches!(c, Choice::Claim { .. })), 36);
        assert!(!all.contains(&Choice::Claim {
            lane: Lane::Same,
            priority: Cmp::Less,
            available_at: Cmp::Greater,
            first: Cmp::Greater
        }));
        assert!(all.contains(&Choice::Claim {
            lane: Lane::NotServed,
            priority: Cmp::Less,
            available_at: Cmp::Greater,
            first: Cmp::Greater
        }));
        assert_eq!(count(&|c| matches!(c, Choice::ReapOrder { .. })), 9);
        assert!(!all.contains(&Choice::ReapOrder { rule: Cmp::Less, at: Cmp::Greater, first: Cmp::Greater }));
        // Seven ways an expired lease is due to end, one a pending job is.
        assert_eq!(count(&|c| matches!(c, Choice::ReapRule(_))), 8);
        // No time is both before the claim and at the deadline.
        assert_eq!(count(&|c| matches!(c, Choice::Heartbeat(_))), 12);
        assert_eq!(count(&|c| matches!(c, Choice::Complete(_))), 4);
        // Ids of seven operations, two workers, four queues and two lists, four classes each.
        assert_eq!(count(&|c| matches!(c, Choice::Name(..))), 60);
        // 1.3: run_now of a pending job in time (three schedules) or past its deadline (due
        // since before it), of a leased one in any of the six; pauses passed over, reaped and
        // resumed, two each.
        assert_eq!(count(&|c| matches!(c, Choice::RunNow { .. })), 10);
        assert!(!all.contains(&Choice::RunNow { leased: false, past: true, schedule: Cmp::Equal }));
        assert_eq!(
            count(&|c| matches!(c, Choice::PausedPassed(_) | Choice::PausedReaped(_) | Choice::Resumed(_))),
            6
        );
        let mut sorted = all.clone();
        sorted.dedup();
        assert_eq!(sorted.len(), all.len(), "no relation twice");
    }

    #[test]
    fn each_class_makes_a_name_equal_but_for_its_bytes_and_only_its_own() {
        for name in ["jöb-z", "wé1", "qé", "default"] {
            for class in NameClass::ALL {
                let Some(made) = class.of(name) else {
                    assert_eq!((class, name), (NameClass::Decomposed, "default"), "only ASCII has no NFD");
                    continue;
                };
                assert_ne!(made, name);
                for other in NameClass::ALL {
                    assert_eq!(other.folds(&made, name), other == class, "{class:?} of {name} by {other:?}");
                }
            }
        }
        assert!(!NameClass::Case.folds("a", "b"));
    }

    #[test]
    fn the_refusals_come_in_the_specs_order() {
        let f = |lost, backwards, cancelling, past| Fence { lost, backwards, cancelling, past };
        assert_eq!(f(true, true, true, false).heartbeat(), Answer::LeaseLost);
        assert_eq!(f(false, true, true, false).heartbeat(), Answer::ClockWentBackwards);
        assert_eq!(f(false, false, true, true).heartbeat(), Answer::CancelledError);
        assert_eq!(f(false, false, false, true).heartbeat(), Answer::DeadlinePassed);
        assert_eq!(f(false, false, false, false).heartbeat(), Answer::Extended);
        assert_eq!(f(false, true, false, false).complete(), Some(Answer::ClockWentBackwards));
        let d = |leased, cancelling, exhausted, past| Due { leased, cancelling, exhausted, past };
        assert_eq!(d(true, true, true, true).answer(), Some(Answer::ReapedCancelled));
        assert_eq!(d(true, false, true, true).answer(), Some(Answer::ReapedExhausted));
        assert_eq!(d(false, false, false, true).answer(), Some(Answer::ReapedDeadline));
        assert_eq!(d(true, false, false, false).answer(), None);
    }
}
