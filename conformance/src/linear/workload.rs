//! What the clients of a concurrent run ask for: few jobs, close times, and leases that are
//! passed around, so that calls collide.
//!
//! A history in which every call touches a different job, or in which all times are far
//! apart, is linearizable by any store that commits at all. The collisions worth checking are
//! claims racing for one due job, a completion racing the reap or the reclaim of its expired
//! lease, two completions of one attempt, a redrive racing a claim, enqueues of one new id.
//! So: three jobs enqueued before the clients start, one more id the clients race to
//! enqueue, a lease of 100 ms against times that advance 0–60 ms a call from a random start,
//! deadlines a few leases away, budgets of one to three attempts; and a board of every lease
//! any client was granted, from which a client sometimes completes or heartbeats another
//! client's attempt under that client's name (a worker that restarted with the same name
//! and an old token).
//!
//! Contract 1.2 adds its collisions: jobs in two queues and two priorities, claims serving
//! one queue or both, cancels of leased jobs racing their completions and heartbeats, and
//! prunes (`before` a little behind `now`) and forgets racing claims, completions,
//! redrives and enqueues of the ids they remove.
//!
//! Each client draws from its own seeded generator, but what it does next depends on what
//! the store answered (which leases it holds), so a run is not reproducible from its seed:
//! the history records what happened.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use retryq_model::{Config, Failure, Op, Outcome, Reply, Response, RunOutcome};

/// The shape of a run.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Concurrent clients, each on its own connection.
    pub clients: usize,
    /// Calls each client makes.
    pub calls: usize,
    /// Jobs enqueued before the clients start (`j0`, `j1`, …); the clients also race to
    /// enqueue one more.
    pub jobs: usize,
    /// Lease and backoff settings of every connection.
    pub settings: Config,
    /// Seeds the clients' generators (client `n` uses `seed + n`).
    pub seed: u64,
    /// Whose clock each call's `now` comes from.
    pub clocks: Clocks,
    /// The share of claims that ask for 2 or 3 jobs in one transaction
    /// (`claim_batch_from`), from 0 to 1.
    pub batches: f64,
}

/// Where the clients' `now` values come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clocks {
    /// Each client keeps its own clock, from a random start, advancing 0–60 ms a call: the
    /// clients disagree by up to a few hundred milliseconds, which SPEC 3.1 allows (no
    /// operation requires the times of others to be ordered).
    Own,
    /// One clock for all, advanced 0–8 ms by each call as it is made: times follow the
    /// order in which calls begin, as clocks that agree would give them (SPEC 1.3's one
    /// common base, read at the start of each call).
    Shared,
}

impl Default for Workload {
    /// 8 clients × 8 calls on 3 jobs, leases of 100 ms, retries 20–80 ms apart, reaps of at
    /// most 2 jobs (so that a claim's reap stops at its limit now and then: SPEC 6.37), two
    /// claims in five a batch.
    fn default() -> Self {
        Workload {
            clients: 8,
            calls: 8,
            jobs: 3,
            settings: Config { base_ms: 20, cap_ms: 80, lease_ms: 100, reap_limit: 2 },
            seed: 0,
            clocks: Clocks::Own,
            batches: 0.4,
        }
    }
}

impl Workload {
    /// The enqueues that run, one after another, before the clients start.
    pub fn setup(&self) -> Vec<Op> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ 0x5e7u64);
        (0..self.jobs)
            .map(|n| Op::Enqueue {
                priority: None,
                queue: None,
                id: job(n),
                payload: "p".into(),
                max_attempts: rng.random_range(1..=3),
                deadline: rng.random_range(200..=700),
                now: 0,
                not_before: rng.random_bool(0.3).then(|| rng.random_range(0..=100)),
                base_ms: None,
                cap_ms: None,
                kind: None,
            })
            .collect()
    }

    /// Client `n`.
    pub fn client(&self, n: usize) -> Client {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed.wrapping_add(n as u64));
        let clock = rng.random_range(0..=150);
        Client {
            worker: format!("w{n}"),
            rng,
            clock,
            clocks: self.clocks,
            ids: self.jobs + 1,
            held: Vec::new(),
            batch: 1,
            batches: self.batches.clamp(0.0, 1.0),
        }
    }
}

/// The queue beside the default one that some jobs go to.
const OTHER_QUEUE: &str = "q1";

/// The name of job `n`.
fn job(n: usize) -> String {
    format!("j{n}")
}

/// A lease somebody was granted: who, which job, which attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Granted {
    /// The worker it was granted to.
    pub worker: String,
    /// The job.
    pub id: String,
    /// The attempt: the fencing token.
    pub attempt: u64,
}

/// What the clients of a run share: every lease any of them was granted, and the clock
/// of [`Clocks::Shared`].
#[derive(Debug, Default)]
pub struct Board {
    leases: Mutex<Vec<Granted>>,
    now: AtomicU64,
}

impl Board {
    /// An empty board.
    pub fn new() -> Board {
        Board::default()
    }

    fn post(&self, lease: Granted) {
        // A poisoned board only means another client panicked; the leases are still good.
        self.leases.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(lease);
    }

    fn pick(&self, rng: &mut ChaCha8Rng) -> Option<Granted> {
        let leases = self.leases.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if leases.is_empty() { None } else { Some(leases[rng.random_range(0..leases.len())].clone()) }
    }

    /// Advances the shared clock by `step`: the new time.
    fn advance(&self, step: u64) -> u64 {
        self.now.fetch_add(step, Ordering::SeqCst) + step
    }
}

/// One client: its worker name, its clock, its generator and the leases it holds.
#[derive(Debug)]
pub struct Client {
    worker: String,
    rng: ChaCha8Rng,
    /// The `now` of its next call, under [`Clocks::Own`]; it never goes back.
    clock: u64,
    clocks: Clocks,
    /// How many ids it may name: the jobs of the setup and one more.
    ids: usize,
    /// Leases it was granted and has not yet completed or lost.
    held: Vec<Granted>,
    /// How many jobs its next claim asks for: 1, or 2-3 for a batch (a worker with free
    /// slots claims for all of them in one transaction).
    batch: usize,
    /// [`Workload::batches`].
    batches: f64,
}

impl Client {
    /// The next call to make.
    pub fn next(&mut self, board: &Board) -> Op {
        let now = match self.clocks {
            Clocks::Own => {
                self.clock += self.rng.random_range(0..=60);
                self.clock
            }
            Clocks::Shared => board.advance(self.rng.random_range(0..=8)),
        };
        let worker = self.worker.clone();
        match self.rng.random_range(0..106u32) {
            0..22 => {
                self.batch =
                    if self.rng.random_bool(self.batches) { self.rng.random_range(2..=3) } else { 1 };
                Op::Claim { queues: self.queues(), worker, now }
            }
            22..40 => {
                let lease = self.lease(board);
                let outcome = match self.rng.random_range(0..10u32) {
                    0..4 => Outcome::Ok,
                    4..8 => Outcome::Retryable,
                    _ => Outcome::Permanent,
                };
                Op::Complete {
                    worker: lease.worker,
                    id: lease.id,
                    attempt: lease.attempt,
                    outcome,
                    now,
                    jitter: Some(self.jitter()),
                }
            }
            40..52 => {
                let outcome = match self.rng.random_range(0..20u32) {
                    0..7 => RunOutcome::Ok,
                    7..14 => RunOutcome::Retryable,
                    14..16 => RunOutcome::Permanent,
                    16..18 => RunOutcome::Unknown,
                    _ => RunOutcome::Crash,
                };
                let after = now + self.rng.random_range(0..=30);
                Op::RunOnce {
                    queues: self.queues(),
                    worker,
                    now,
                    after: Some(after),
                    outcome,
                    jitter: Some(self.jitter()),
                }
            }
            52..62 => {
                let lease = self.lease(board);
                Op::Heartbeat { worker: lease.worker, id: lease.id, attempt: lease.attempt, now }
            }
            62..70 => Op::Reap { now },
            70..78 => Op::Redrive {
                id: self.id(),
                now,
                add_attempts: self.rng.random_range(1..=2),
                deadline: now + self.rng.random_range(100..=400),
            },
            78..84 => Op::Cancel { id: self.id(), now },
            84..92 => Op::Enqueue {
                priority: self.rng.random_bool(0.3).then(|| self.rng.random_range(0..=1)),
                queue: self.rng.random_bool(0.3).then(|| OTHER_QUEUE.to_owned()),
                id: self.id(),
                payload: if self.rng.random_bool(0.9) { "p".into() } else { "q".into() },
                max_attempts: self.rng.random_range(1..=3),
                deadline: now + self.rng.random_range(100..=500),
                now,
                not_before: None,
                base_ms: None,
                cap_ms: None,
                kind: None,
            },
            92..95 => Op::Get { id: self.id() },
            95..98 => Op::Prune { before: now.saturating_sub(self.rng.random_range(0..=60)), now },
            98 => Op::Forget { before: now.saturating_sub(self.rng.random_range(0..=200)), now },
            99 => Op::Stats { queue: self.rng.random_bool(0.5).then(|| OTHER_QUEUE.to_owned()), now },
            // An operator's pause and resume of either queue, and run_now of any job (SPEC
            // 3.16-3.18), between the workers' claims.
            100..102 => Op::Pause { queue: self.some_queue(), now },
            102..104 => Op::Resume { queue: self.some_queue(), now },
            _ => Op::RunNow { id: self.id(), now },
        }
    }

    /// How many jobs the claim [`Client::next`] just gave asks for: more than one is a batch,
    /// `claim_batch_from` in one transaction. Read once; 1 afterwards.
    pub fn batch(&mut self) -> usize {
        std::mem::replace(&mut self.batch, 1)
    }

    /// The default queue or the other one, evenly.
    fn some_queue(&mut self) -> String {
        if self.rng.random_bool(0.5) { OTHER_QUEUE.to_owned() } else { "default".to_owned() }
    }

    /// Learns from an answer which leases it now holds, and posts new ones on the board.
    pub fn saw(&mut self, op: &Op, response: &Response, board: &Board) {
        let granted = match response {
            Response::Ok(Reply::Claimed { id, attempt, .. } | Reply::Crashed { id, attempt })
            | Response::Err(Failure::UnknownError { id, attempt }) => {
                Some(Granted { worker: self.worker.clone(), id: id.clone(), attempt: *attempt })
            }
            _ => None,
        };
        if let Some(lease) = granted {
            board.post(lease.clone());
            self.held.push(lease);
        }
        let ended = match (op, response) {
            (
                Op::Complete { worker, id, attempt, .. },
                Response::Ok(_) | Response::Err(Failure::LeaseLost),
            ) => Some((worker, id, *attempt)),
            (Op::Heartbeat { worker, id, attempt, .. }, Response::Err(Failure::LeaseLost)) => {
                Some((worker, id, *attempt))
            }
            _ => None,
        };
        if let Some((worker, id, attempt)) = ended {
            self.held.retain(|l| !(l.worker == *worker && l.id == *id && l.attempt == attempt));
        }
    }

    /// A lease to complete or heartbeat: mostly one it holds, sometimes one off the board
    /// (often another client's, or stale), else a made-up one.
    fn lease(&mut self, board: &Board) -> Granted {
        if !self.held.is_empty() && self.rng.random_bool(0.75) {
            return self.held[self.rng.random_range(0..self.held.len())].clone();
        }
        if let Some(lease) = board.pick(&mut self.rng) {
            return lease;
        }
        Granted { worker: self.worker.clone(), id: self.id(), attempt: self.rng.random_range(1..=2) }
    }

    /// The queues a claim serves: the default one alone (the replay's default), the other
    /// one alone, or both.
    fn queues(&mut self) -> Option<Vec<String>> {
        match self.rng.random_range(0..4u32) {
            0 => Some(vec![OTHER_QUEUE.to_owned()]),
            1 => Some(vec![OTHER_QUEUE.to_owned(), retryq_model::reference::DEFAULT_QUEUE.to_owned()]),
            _ => None,
        }
    }

    fn id(&mut self) -> String {
        job(self.rng.random_range(0..self.ids))
    }

    fn jitter(&mut self) -> f64 {
        [0.0, 0.5, 1.0][self.rng.random_range(0..3)]
    }
}
