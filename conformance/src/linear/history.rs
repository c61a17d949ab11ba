//! A concurrent history: every call the clients made, what it answered, and when.
//!
//! Time here is not the `now` the operations carry (each client picks those freely, and
//! SPEC 3.1 asks for no global clock) but the order in which things really happened: one
//! shared counter, read just before a call is invoked and just after its answer is back.
//! If call A's `returned` is below call B's `invoked`, A finished before B began, and every
//! explanation of the history must put A first. Calls whose intervals overlap may go in
//! either order.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use retryq_model::{Config, Op, Response};

/// One call of one client.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// Which client made it (the setup, which runs before the clients, is one more client).
    pub client: usize,
    /// The operation, with the `now` the client chose.
    pub op: Op,
    /// What the store answered.
    pub response: Response,
    /// A claim batch's answers after the first: what each further claim at the same `now`
    /// answered (`none` past the jobs the batch leased; the same refusal as the first). A
    /// batch is one transaction, so one step of the order; empty for every other call.
    pub more: Vec<Response>,
    /// The clock read just before the call.
    pub invoked: u64,
    /// The clock read just after the answer; always above `invoked`.
    pub returned: u64,
}

impl Call {
    /// Whether this call returned before `other` was invoked: real time orders them.
    pub fn precedes(&self, other: &Call) -> bool {
        self.returned < other.invoked
    }

    /// Whether this call and `other` overlap in real time: neither returned before the other
    /// was invoked.
    pub fn overlaps(&self, other: &Call) -> bool {
        !self.precedes(other) && !other.precedes(self)
    }
}

/// Every call of one run, and the settings every client's connection used.
#[derive(Clone, Debug, PartialEq)]
pub struct History {
    /// The lease and backoff settings in effect for every call (a `config` on the model, the
    /// same `set_settings` on each connection, before any call).
    pub settings: Config,
    /// The calls, in any order; the checker orders them by their timestamps.
    pub calls: Vec<Call>,
}

impl History {
    /// The same history without the calls `drop` names (by index).
    pub fn without(&self, drop: impl Fn(usize) -> bool) -> History {
        let calls =
            self.calls.iter().enumerate().filter(|(i, _)| !drop(*i)).map(|(_, c)| c.clone()).collect();
        History { settings: self.settings, calls }
    }

    /// On average, how many other calls each call overlaps in real time: how much room a
    /// history leaves for reordering (0 for calls made one after another).
    pub fn overlap(&self) -> f64 {
        let n = self.calls.len();
        if n < 2 {
            return 0.0;
        }
        let pairs = (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .filter(|&(i, j)| self.calls[i].overlaps(&self.calls[j]))
            .count();
        2.0 * pairs as f64 / n as f64
    }

    /// How many clients took part (the largest client number plus one).
    pub fn clients(&self) -> usize {
        self.calls.iter().map(|c| c.client + 1).max().unwrap_or(0)
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "client {} [{}..{}] {} -> {}",
            self.client,
            self.invoked,
            self.returned,
            self.op.to_json_line(),
            self.response.to_json_line()
        )?;
        if !self.more.is_empty() {
            write!(f, " (a batch of {}; then", self.more.len() + 1)?;
            for answer in &self.more {
                write!(f, " {}", answer.to_json_line())?;
            }
            write!(f, ")")?;
        }
        Ok(())
    }
}

impl fmt::Display for History {
    /// One call a line, numbered, ordered by invocation: the form a failing test prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.settings;
        writeln!(
            f,
            "settings: lease_ms {} base_ms {} cap_ms {} reap_limit {}",
            s.lease_ms, s.base_ms, s.cap_ms, s.reap_limit
        )?;
        let mut order: Vec<usize> = (0..self.calls.len()).collect();
        order.sort_by_key(|&i| self.calls[i].invoked);
        for i in order {
            writeln!(f, "#{i:<3} {}", self.calls[i])?;
        }
        Ok(())
    }
}

/// The shared logical clock of one run: each read is a new, larger value, and a read made
/// after another in real time (on any thread) is larger. Sequentially consistent, so two
/// threads cannot disagree on which of two reads came first.
#[derive(Debug, Default)]
pub struct Clock(AtomicU64);

impl Clock {
    /// A clock at zero.
    pub fn new() -> Clock {
        Clock::default()
    }

    /// The next instant.
    pub fn tick(&self) -> u64 {
        self.0.fetch_add(1, Ordering::SeqCst)
    }

    /// Runs `call`, recording the instants before and after it.
    pub fn time<T>(&self, call: impl FnOnce() -> T) -> (u64, T, u64) {
        let invoked = self.tick();
        let value = call();
        let returned = self.tick();
        (invoked, value, returned)
    }
}
