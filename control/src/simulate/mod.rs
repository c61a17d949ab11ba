//! A seeded discrete-event simulation of retry storms: N clients against a contended server,
//! over m layers, for each backoff strategy with and without a retry budget.
//!
//! It exists to check this crate against what is published, not to predict a real system:
//!
//! - Marc Brooker's "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015) and its
//!   simulator (`aws-samples/aws-arch-backoff-simulator`), whose model is followed exactly at
//!   two layers: every client wants to update one row once; an attempt reads the row's
//!   version, then writes with it (optimistic concurrency), and the write fails if another
//!   write got in between; each message takes |Normal(10 ms, 2 ms)| on the network; a failed
//!   client sleeps its backoff and reads again. Backoff base 5 ms, cap 2000 ms, the n-th wait
//!   of exponential backoff `min(cap, base·2^n)` — SPEC section 2's window with a base of
//!   10 ms — and decorrelated jitter from base 5 ms. "Calls" are writes, as there.
//! - The source document's n·r^(m−1): with more layers, every layer above the server is a
//!   relay that performs its callers' requests with its own retries; "layers" counts the
//!   clients as layer 1 and the server as layer m, so m − 1 hops retry (see
//!   [`crate::amplification`]). With [`Server::Failing`], every write fails and immediate
//!   retries reach exactly n·r^(m−1) calls.
//!
//! Each hop's decisions are the library's own [`Call`] — the same code as the attempt loop —
//! with its [`Backoff`](crate::Backoff); "with a budget" gives each hop a tower/Finagle [`TpsBudget`] with
//! their defaults (20 % of requests, 10 retries a second, 10 s), shared by all the callers in
//! that layer (one budget per caller process, one process per layer). No deadlines or attempt
//! timeouts are modelled (the AWS model has none); answers always arrive.
//!
//! Everything is a pure function of the settings and the seed: a run's random stream is
//! ChaCha8 seeded from (seed, strategy, budget, clients, layers, attempts, server, run), so a
//! row does not depend on which other rows are computed.

#[cfg(feature = "plot")]
mod plot;
mod row;
mod strategy;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use crate::budget::{Budget, TpsBudget, Unlimited};
use crate::call::{Call, Next};
use crate::error::ConfigError;
use crate::policy::Policy;
use crate::pushback::Pushback;

#[cfg(feature = "plot")]
pub use plot::{PlotError, svg};
pub use row::Row;
pub use strategy::Strategy;

/// What the server at the bottom does with a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Server {
    /// One row under optimistic concurrency: a write succeeds if nothing was written since
    /// its read (the AWS model).
    Contended,
    /// Every write fails: the worst case n·r^(m−1) assumes.
    Failing,
}

/// One simulated configuration (one row of the table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    /// Clients, each making one request (1 … 100000).
    pub clients: u32,
    /// Layers, the clients being layer 1 and the server layer m (2 … 8).
    pub layers: u32,
    /// Attempts per request at every hop, the first included; `None` for no limit (the AWS
    /// model: a client retries until it succeeds).
    pub attempts: Option<u32>,
    /// The server's behaviour.
    pub server: Server,
    /// The backoff every hop uses.
    pub strategy: Strategy,
    /// Whether every hop has a retry budget.
    pub budget: bool,
    /// Independent runs averaged (1 … 10000).
    pub runs: u32,
    /// The seed.
    pub seed: u64,
}

/// Why a simulation could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// A setting out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A run went on past [`MAX_EVENTS`]: too many clients retrying without limit.
    #[error("{} {} a budget at {clients} clients: a run did not finish within {MAX_EVENTS} events",
            strategy.name(), if *budget { "with" } else { "without" })]
    TooLong {
        /// The scenario's strategy.
        strategy: Strategy,
        /// Whether it had a budget.
        budget: bool,
        /// Its clients.
        clients: u32,
    },
}

/// The most events one run may take.
pub const MAX_EVENTS: u64 = 50_000_000;

/// Mean network delay of one message, in microseconds (AWS: 10 ms) …
const NET_MEAN_US: f64 = 10_000.0;
/// … and its standard deviation (AWS: 2 ms).
const NET_SD_US: f64 = 2_000.0;

impl Scenario {
    fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=100_000).contains(&self.clients) {
            return Err(ConfigError::new("clients", format!("{} is outside [1, 100000]", self.clients)));
        }
        if !(2..=8).contains(&self.layers) {
            return Err(ConfigError::new("layers", format!("{} is outside [2, 8]", self.layers)));
        }
        if !(1..=10_000).contains(&self.runs) {
            return Err(ConfigError::new("runs", format!("{} is outside [1, 10000]", self.runs)));
        }
        match self.attempts {
            Some(0) => Err(ConfigError::new("attempts", "must be at least 1")),
            None if self.server == Server::Failing => Err(ConfigError::new(
                "attempts",
                "a failing server needs an attempt limit, or no run would end",
            )),
            _ => Ok(()),
        }
    }

    fn rng(&self, run: u32) -> ChaCha8Rng {
        let strategy = Strategy::ALL.iter().position(|s| *s == self.strategy).unwrap_or(0) as u8;
        let mut seed = [0u8; 32];
        seed[0..8].copy_from_slice(&self.seed.to_le_bytes());
        seed[8..12].copy_from_slice(&self.clients.to_le_bytes());
        seed[12..16].copy_from_slice(&self.layers.to_le_bytes());
        seed[16..20].copy_from_slice(&self.attempts.unwrap_or(0).to_le_bytes());
        seed[20..24].copy_from_slice(&run.to_le_bytes());
        seed[24] = strategy;
        seed[25] = u8::from(self.budget);
        seed[26] = u8::from(self.server == Server::Failing);
        ChaCha8Rng::from_seed(seed)
    }
}

/// Simulate one scenario: `runs` seeded runs, averaged.
pub fn run(scenario: &Scenario) -> Result<Row, SimError> {
    scenario.validate()?;
    let (mut calls, mut completion, mut successes) = (0u64, 0u64, 0u64);
    for run in 0..scenario.runs {
        let outcome = Run::new(scenario, scenario.rng(run))?.finish()?;
        calls += outcome.calls;
        completion += outcome.completion_us;
        successes += outcome.successes;
    }
    let runs = f64::from(scenario.runs);
    let clients = f64::from(scenario.clients);
    let calls = calls as f64 / runs;
    Ok(Row {
        strategy: scenario.strategy,
        budget: scenario.budget,
        clients: scenario.clients,
        layers: scenario.layers,
        calls,
        amplification: calls / clients,
        completion_ms: completion as f64 / runs / 1000.0,
        success_rate: successes as f64 / runs / clients,
    })
}

/// Every strategy, without and with a budget, for each client count: the table of
/// `retryq simulate`, strategies outermost.
pub fn table(
    clients: &[u32],
    layers: u32,
    attempts: Option<u32>,
    server: Server,
    runs: u32,
    seed: u64,
) -> Result<Vec<Row>, SimError> {
    let mut rows = Vec::new();
    for strategy in Strategy::ALL {
        for budget in [false, true] {
            for &clients in clients {
                rows.push(run(&Scenario {
                    clients,
                    layers,
                    attempts,
                    server,
                    strategy,
                    budget,
                    runs,
                    seed,
                })?);
            }
        }
    }
    Ok(rows)
}

/// The one error kind a hop sees: the layer below failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Failed;

type CallId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A call starts its next attempt.
    Start(CallId),
    /// The attempt reaches the layer below.
    Arrive(CallId),
    /// At the server: the write that follows a read of `version`.
    Write { call: CallId, version: u64 },
    /// The answer reaches the caller.
    Reply { call: CallId, ok: bool },
}

/// One call in flight: made by a caller in layer `layer` to layer `layer + 1`.
struct SimCall {
    layer: u32,
    parent: Option<CallId>,
    call: Call,
}

struct Outcome {
    calls: u64,
    completion_us: u64,
    successes: u64,
}

struct Run<'a> {
    scenario: &'a Scenario,
    policy: Policy<Failed>,
    /// One budget per calling layer, index `layer − 1`.
    budgets: Vec<Box<dyn Budget>>,
    rng: ChaCha8Rng,
    net: Normal<f64>,
    queue: BinaryHeap<Reverse<(u64, u64, Event)>>,
    sequence: u64,
    calls_made: Vec<SimCall>,
    version: u64,
    outcome: Outcome,
}

impl<'a> Run<'a> {
    fn new(scenario: &'a Scenario, rng: ChaCha8Rng) -> Result<Self, SimError> {
        let attempts = scenario.attempts.unwrap_or(u32::MAX);
        let policy = Policy::new(attempts, u64::MAX, scenario.strategy.backoff(), [Failed])?;
        let net = Normal::new(NET_MEAN_US, NET_SD_US)
            .map_err(|e| ConfigError::new("network", format!("bad delay distribution: {e}")))?;
        let budgets = (1..scenario.layers)
            .map(|_| -> Box<dyn Budget> {
                if scenario.budget { Box::new(TpsBudget::default()) } else { Box::new(Unlimited) }
            })
            .collect();
        let mut run = Run {
            scenario,
            policy,
            budgets,
            rng,
            net,
            queue: BinaryHeap::new(),
            sequence: 0,
            calls_made: Vec::new(),
            version: 0,
            outcome: Outcome { calls: 0, completion_us: 0, successes: 0 },
        };
        for _ in 0..scenario.clients {
            let id = run.new_call(1, None);
            run.push(0, Event::Start(id));
        }
        Ok(run)
    }

    fn finish(mut self) -> Result<Outcome, SimError> {
        let mut events = 0u64;
        while let Some(Reverse((now, _, event))) = self.queue.pop() {
            events += 1;
            if events > MAX_EVENTS {
                let s = self.scenario;
                return Err(SimError::TooLong { strategy: s.strategy, budget: s.budget, clients: s.clients });
            }
            self.handle(now, event);
        }
        Ok(self.outcome)
    }

    fn new_call(&mut self, layer: u32, parent: Option<CallId>) -> CallId {
        self.calls_made.push(SimCall { layer, parent, call: Call::new(u64::MAX) });
        self.calls_made.len() - 1
    }

    fn push(&mut self, at_us: u64, event: Event) {
        self.sequence += 1;
        self.queue.push(Reverse((at_us, self.sequence, event)));
    }

    /// One message's trip across the network, in microseconds.
    fn net_delay(&mut self) -> u64 {
        self.net.sample(&mut self.rng).abs().round() as u64
    }

    fn handle(&mut self, now: u64, event: Event) {
        let now_ms = now / 1000;
        match event {
            Event::Start(id) => {
                let SimCall { layer, call, .. } = &mut self.calls_made[id];
                let budget = self.budgets[(*layer - 1) as usize].as_mut();
                match call.start(&self.policy, budget, now_ms) {
                    Ok(_) => {
                        let at = now + self.net_delay();
                        self.push(at, Event::Arrive(id));
                    }
                    Err(_) => self.end(now, id, false),
                }
            }
            Event::Arrive(id) => {
                let below = self.calls_made[id].layer + 1;
                if below == self.scenario.layers {
                    // Read the version; the answer goes back and the write comes over.
                    let at = now + self.net_delay() + self.net_delay();
                    self.push(at, Event::Write { call: id, version: self.version });
                } else {
                    let child = self.new_call(below, Some(id));
                    self.handle(now, Event::Start(child));
                }
            }
            Event::Write { call, version } => {
                self.outcome.calls += 1;
                let ok = self.scenario.server == Server::Contended && version == self.version;
                if ok {
                    self.version += 1;
                }
                let at = now + self.net_delay();
                self.push(at, Event::Reply { call, ok });
            }
            Event::Reply { call: id, ok } => {
                let SimCall { layer, call, .. } = &mut self.calls_made[id];
                let budget = self.budgets[(*layer - 1) as usize].as_mut();
                if ok {
                    call.succeeded(budget, now_ms);
                    self.end(now, id, true);
                    return;
                }
                match call.failed(&self.policy, budget, &mut self.rng, now_ms, &Failed, Pushback::None) {
                    Next::Retry { after_ms } => {
                        self.push(now + after_ms.saturating_mul(1000), Event::Start(id))
                    }
                    Next::Stop(_) => self.end(now, id, false),
                }
            }
        }
    }

    /// Call `id` is over at `now`: its answer travels up, or its client is done.
    fn end(&mut self, now: u64, id: CallId, ok: bool) {
        match self.calls_made[id].parent {
            Some(parent) => {
                let at = now + self.net_delay();
                self.push(at, Event::Reply { call: parent, ok });
            }
            None => {
                self.outcome.completion_us = self.outcome.completion_us.max(now);
                self.outcome.successes += u64::from(ok);
            }
        }
    }
}
