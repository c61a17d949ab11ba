//! Concurrent histories of real stores are linearizable against the reference store, and a
//! store that claims in two transactions is caught.

use std::path::Path;
use std::time::{Duration, Instant};

use retryq::rusqlite::{self, OptionalExtension, params};
use retryq::{
    Audit, Backend, Claimed, Completed, Completion, DeadReason, Enqueued, HistoryEntry, Job, JobPage, Lease,
    NewJob, OpenOptions, Owner, Queue, Redrive, RedriveDead, Settings, Stats, Status, Synchronous,
};
use retryq_conformance::linear::{self, Call, Checker, Clocks, History, Part, Violation, Workload};
use retryq_model::{Config, Failure, Op, Outcome, Reply, Response, RunOutcome};

// ---- hand-written histories -------------------------------------------------------------

fn enqueue(id: &str, max_attempts: u64, deadline: u64) -> Op {
    Op::Enqueue {
        priority: None,
        queue: None,
        id: id.into(),
        payload: "p".into(),
        max_attempts,
        deadline,
        now: 0,
        not_before: None,
        base_ms: None,
        cap_ms: None,
        kind: None,
    }
}

fn claim(worker: &str, now: u64) -> Op {
    Op::Claim { queues: None, worker: worker.into(), now }
}

fn claimed(id: &str, attempt: u64, lease_until: u64) -> Response {
    Reply::Claimed { id: id.into(), attempt, lease_until }.into()
}

fn call(client: usize, invoked: u64, returned: u64, op: Op, response: Response) -> Call {
    Call { client, op, response, more: Vec::new(), invoked, returned }
}

const SETTINGS: Config = Config { base_ms: 20, cap_ms: 80, lease_ms: 100, reap_limit: 1000 };

/// Two claims overlap; the one invoked second must have gone first to explain the answers,
/// and the checker finds that order.
#[test]
fn overlapping_claims_in_either_order_are_accepted() {
    let history = History {
        settings: SETTINGS,
        calls: vec![
            call(9, 0, 1, enqueue("a", 3, 1000), Reply::Enqueued.into()),
            call(9, 2, 3, enqueue("b", 3, 1000), Reply::Enqueued.into()),
            // Invoked first but answered `b`: the other claim took `a` before it.
            call(0, 4, 9, claim("w0", 10), claimed("b", 1, 110)),
            call(1, 5, 8, claim("w1", 10), claimed("a", 1, 110)),
            call(2, 10, 11, claim("w2", 20), Reply::None.into()),
        ],
    };
    let order = linear::check(&history).expect("linearizable");
    let calls: Vec<usize> = order.steps.iter().map(|s| s.call).collect();
    assert_eq!(calls, vec![0, 1, 3, 2, 4]);
}

/// Two clients both hold attempt 1 of one job: no order gives both, whatever the overlap.
#[test]
fn two_holders_of_one_attempt_are_rejected() {
    let history = History {
        settings: SETTINGS,
        calls: vec![
            call(9, 0, 1, enqueue("a", 3, 1000), Reply::Enqueued.into()),
            call(0, 2, 9, claim("w0", 10), claimed("a", 1, 110)),
            call(1, 3, 8, claim("w1", 10), claimed("a", 1, 110)),
            call(2, 4, 7, Op::Get { id: "a".into() }, Response::Err(Failure::NotFound)),
        ],
    };
    let Err(Violation::NotLinearizable(why)) = linear::check(&history) else {
        panic!("two holders of attempt 1 were accepted");
    };
    let text = why.to_string();
    assert_eq!(why.recorded, 4);
    assert_eq!(why.history.calls.len(), 3, "the refused get changes nothing and is left out:\n{text}");
    assert_eq!(why.prefix.len(), 2, "enqueue and one claim explain themselves:\n{text}");
    assert_eq!(why.misses.len(), 1, "only the other claim can come next:\n{text}");
    assert_eq!(why.misses[0].model, Reply::None.into(), "the model has no second attempt 1:\n{text}");
    assert!(text.contains("\"status\":\"leased\""), "the model's job is shown:\n{text}");
}

/// A claim may not go before a call that returned before it was invoked: a claim of a job
/// enqueued only after it answered is not explained by reordering.
#[test]
fn real_time_order_is_kept() {
    let history = History {
        settings: SETTINGS,
        calls: vec![
            call(0, 0, 1, claim("w0", 10), claimed("a", 1, 110)),
            call(9, 2, 3, enqueue("a", 3, 1000), Reply::Enqueued.into()),
        ],
    };
    assert!(matches!(linear::check(&history), Err(Violation::NotLinearizable(_))));
    let overlapping = History {
        settings: SETTINGS,
        calls: vec![
            call(0, 0, 3, claim("w0", 10), claimed("a", 1, 110)),
            call(9, 1, 2, enqueue("a", 3, 1000), Reply::Enqueued.into()),
        ],
    };
    assert!(linear::check(&overlapping).is_ok(), "overlapping, the enqueue may go first");
}

/// `run_once` is two transactions: a claim at a later `now` can take its expired lease
/// between its claim and its completion, which then loses the lease. One atomic step could
/// not explain that answer; two steps do.
#[test]
fn run_once_is_checked_as_two_steps() {
    let run = Op::RunOnce {
        queues: None,
        worker: "w0".into(),
        now: 0,
        after: Some(150),
        outcome: RunOutcome::Ok,
        jitter: Some(0.5),
    };
    let history = History {
        settings: SETTINGS,
        calls: vec![
            call(9, 0, 1, enqueue("a", 3, 1000), Reply::Enqueued.into()),
            call(0, 2, 9, run, Response::Err(Failure::LeaseLost)),
            call(1, 3, 5, claim("w1", 120), claimed("a", 2, 220)),
        ],
    };
    let order = linear::check(&history).expect("linearizable");
    let parts: Vec<(usize, Part)> = order.steps.iter().map(|s| (s.call, s.part)).collect();
    assert_eq!(parts, vec![(0, Part::Whole), (1, Part::Claim), (2, Part::Whole), (1, Part::Finish)]);
}

/// A completion and the reap of its expired last attempt race: whichever went first, the
/// other's answer must agree with it.
#[test]
fn a_completion_racing_a_reap_must_agree_with_it() {
    let complete = Op::Complete {
        worker: "w0".into(),
        id: "a".into(),
        attempt: 1,
        outcome: Outcome::Ok,
        now: 150,
        jitter: None,
    };
    let history = |done: Response, reaped: u64| History {
        settings: SETTINGS,
        calls: vec![
            call(9, 0, 1, enqueue("a", 1, 1000), Reply::Enqueued.into()),
            call(0, 2, 3, claim("w0", 0), claimed("a", 1, 100)),
            call(0, 4, 9, complete.clone(), done),
            call(1, 5, 8, Op::Reap { now: 200 }, Reply::Reaped { count: reaped }.into()),
        ],
    };
    assert!(linear::check(&history(Reply::Done.into(), 0)).is_ok(), "completion first");
    assert!(linear::check(&history(Response::Err(Failure::LeaseLost), 1)).is_ok(), "reap first");
    assert!(linear::check(&history(Reply::Done.into(), 1)).is_err(), "both cannot have applied");
    assert!(linear::check(&history(Response::Err(Failure::LeaseLost), 0)).is_err(), "nor neither");
}

/// The proposed claims that step over (`Checker::step_over`, docs/postgres.md): a claim
/// answers `none` while a claim beside it holds the only due job, and a read after the first
/// claim returned still sees that job pending. No order of SPEC 3.10 explains it; the
/// proposal's does, since the job passed over is one a call overlapping the claim took. A
/// claim that passes over a due job no overlapping call touches is caught by both.
#[test]
fn a_claim_passes_over_only_what_an_overlapping_call_touches() {
    let mut model = retryq_model::Store::new();
    model.step(&Op::Config {
        base_ms: Some(SETTINGS.base_ms),
        cap_ms: Some(SETTINGS.cap_ms),
        lease_ms: Some(SETTINGS.lease_ms),
        reap_limit: Some(SETTINGS.reap_limit),
    });
    model.step(&enqueue("a", 3, 1000));
    model.step(&enqueue("b", 3, 1000));
    let pending = model.step(&Op::Get { id: "a".into() });
    let history = |holder: Option<&str>| History {
        settings: SETTINGS,
        calls: [
            Some(call(9, 0, 1, enqueue("a", 3, 1000), Reply::Enqueued.into())),
            Some(call(9, 2, 3, enqueue("b", 3, 1000), Reply::Enqueued.into())),
            holder.map(|id| call(1, 5, 40, claim("w1", 10), claimed(id, 1, 110))),
            Some(call(0, 10, 20, claim("w0", 10), claimed("b", 1, 110))),
            Some(call(2, 25, 30, Op::Get { id: "a".into() }, pending.clone())),
        ]
        .into_iter()
        .flatten()
        .collect(),
    };
    let stepping_over = Checker { step_over: true, ..Checker::default() };
    // `w0` took `b` although `a` came first, and `a` was still pending after it returned.
    let held = history(Some("a"));
    assert!(linear::check(&held).is_err(), "SPEC 3.10 has no order for a claim that passed over `a`");
    let order = stepping_over.check(&held).expect("`a` was taken by a claim overlapping w0's");
    let calls: Vec<usize> = order.steps.iter().map(|s| s.call).collect();
    assert_eq!(
        calls,
        vec![0, 1, 3, 4, 2],
        "w0's claim passes over `a`, the read sees it pending, w1 takes it"
    );
    // Nobody touched `a` while w0 claimed: passing over it is a bug in either mode.
    assert!(linear::check(&history(None)).is_err());
    assert!(stepping_over.check(&history(None)).is_err(), "a claim passed over a job nobody touched");
}

// ---- real stores -------------------------------------------------------------------------

/// What many checked runs came to.
#[derive(Default)]
struct Figures {
    histories: usize,
    calls: usize,
    overlap: f64,
    states: u64,
    most_states: u64,
    /// Answers by their code (`claimed`, `none`, `lease_lost`, …), over all histories.
    answers: std::collections::BTreeMap<String, usize>,
    /// Claim batches, and the jobs they leased beyond each batch's first.
    batches: usize,
    batch_more_leased: usize,
    search: Duration,
    slowest: Duration,
    run: Duration,
}

impl Figures {
    fn add(&mut self, history: &History, states: u64, search: Duration, run: Duration) {
        self.histories += 1;
        self.calls += history.calls.len();
        self.overlap += history.overlap();
        for call in history.calls.iter().filter(|call| !call.more.is_empty()) {
            self.batches += 1;
            self.batch_more_leased += call.more.iter().filter(|a| a.taken_id().is_some()).count();
        }
        for call in &history.calls {
            let line = call.response.to_json_line();
            let code = line.split('"').nth(3).unwrap_or("?").to_owned();
            *self.answers.entry(code).or_default() += 1;
        }
        self.states += states;
        self.most_states = self.most_states.max(states);
        self.search += search;
        self.slowest = self.slowest.max(search);
        self.run += run;
    }

    fn report(&self, store: &str) {
        let n = self.histories.max(1) as u32;
        eprintln!(
            "{store}: {} histories, {} calls each on average, each overlapping {:.1} others, run {:?} \
             each; search: {} states each on average ({} at most), {:?} each on average ({:?} at most); \
             answers: {:?}; {} claim batches, leasing {} jobs past their first",
            self.histories,
            self.calls / self.histories.max(1),
            self.overlap / f64::from(n),
            self.run / n,
            self.states / u64::from(n),
            self.most_states,
            self.search / n,
            self.slowest,
            self.answers,
            self.batches,
            self.batch_more_leased,
        );
    }
}

/// Runs `runs` workloads shaped like `shape`, each on a fresh store from `fresh`, checks
/// every history, and fails with how many had no order and the first explanation when any
/// had none.
fn every_history_is_linearizable<F>(store: &str, runs: u64, shape: &Workload, mut fresh: F)
where
    F: FnMut(u64) -> Box<dyn Fn() -> retryq::Result<Box<dyn Backend>> + Sync>,
{
    let mut figures = Figures::default();
    let mut failed = Vec::new();
    let checker = checker();
    let mut strictly_rejected = 0;
    for seed in 0..runs {
        let workload = Workload { seed: seed * 1000, ..shape.clone() };
        let connect = fresh(seed);
        let started = Instant::now();
        let history = linear::run(&workload, &*connect).unwrap_or_else(|e| panic!("run {seed}: {e}"));
        let ran = started.elapsed();
        let started = Instant::now();
        match checker.check(&history) {
            Ok(order) => figures.add(&history, order.states, started.elapsed(), ran),
            Err(why) => failed.push((seed, why)),
        }
        if checker.step_over {
            strictly_rejected += u64::from(linear::check(&history).is_err());
        }
    }
    figures.report(store);
    if checker.step_over {
        eprintln!("{store}: {strictly_rejected} of {runs} histories have no order under SPEC 3.10");
    }
    if let Some((seed, why)) = failed.first() {
        panic!("{store}: {} of {runs} histories have no order; the first, run {seed}: {why}", failed.len());
    }
}

/// The check the stores' histories pass: SPEC 3.10's, or with `RETRYQ_LINEAR_STEP_OVER=1`
/// the mode of the proposed claims that step over (`Checker::step_over`; docs/postgres.md,
/// "A proposed contract: claims that step over"), for a build that makes them.
fn checker() -> Checker {
    Checker { step_over: std::env::var_os("RETRYQ_LINEAR_STEP_OVER").is_some(), ..Checker::default() }
}

/// How many histories a store's check runs: `default`, or `RETRYQ_LINEAR_RUNS` for a longer
/// soak (`docs/linearizability.md`).
fn runs(default: u64) -> u64 {
    match std::env::var("RETRYQ_LINEAR_RUNS") {
        Ok(text) => {
            text.parse().unwrap_or_else(|_| panic!("RETRYQ_LINEAR_RUNS={text:?} is not a count of runs"))
        }
        Err(_) => default,
    }
}

fn sqlite_options() -> OpenOptions {
    // Durability is not what is checked here: fsync per commit would only slow the runs.
    OpenOptions { synchronous: Synchronous::Normal, ..OpenOptions::default() }
}

/// 50 runs of 8 clients × 8 calls, each client on its own SQLite connection to one file.
#[test]
fn sqlite_histories_are_linearizable() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let root = dir.path().to_path_buf();
    every_history_is_linearizable("sqlite", runs(50), &Workload::default(), move |seed| {
        let path = root.join(format!("run-{seed}.db"));
        Box::new(move || Ok(Box::new(Queue::open_with(&path, &sqlite_options())?) as Box<dyn Backend>))
    });
}

/// 20 runs as above, with clocks that agree: every call's `now` from one clock, in the
/// order the calls begin.
#[test]
fn sqlite_histories_with_agreeing_clocks_are_linearizable() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let root = dir.path().to_path_buf();
    let shape = Workload { clocks: Clocks::Shared, ..Workload::default() };
    every_history_is_linearizable("sqlite, agreeing clocks", runs(20), &shape, move |seed| {
        let path = root.join(format!("run-{seed}.db"));
        Box::new(move || Ok(Box::new(Queue::open_with(&path, &sqlite_options())?) as Box<dyn Backend>))
    });
}

/// Runs the workload shaped like `shape` 50 times on PostgreSQL, each client on its own
/// connection to one database (a fresh one per run, on the throwaway cluster of
/// `retryq-pgtest`).
fn postgres_runs(name: &str, shape: &Workload) {
    if retryq_pgtest::database("linear-probe").is_none() {
        return;
    }
    every_history_is_linearizable(name, runs(50), shape, |seed| {
        let url =
            retryq_pgtest::database(&format!("linear-{seed}")).expect("a database on the running cluster");
        Box::new(move || Ok(Box::new(retryq::PgQueue::connect(&url)?) as Box<dyn Backend>))
    });
}

/// 50 runs of 8 clients × 8 calls on PostgreSQL, each client with its own clock.
#[test]
fn postgres_histories_are_linearizable() {
    postgres_runs("postgres", &Workload::default());
}

/// 50 runs of 8 clients × 8 calls on PostgreSQL, with clocks that agree.
#[test]
fn postgres_histories_with_agreeing_clocks_are_linearizable() {
    postgres_runs("postgres, agreeing clocks", &Workload { clocks: Clocks::Shared, ..Workload::default() });
}

// ---- seeded concurrency bugs ------------------------------------------------------------

/// The due job with the smallest `available_at`, read on its own (autocommit, no lock).
const PICK: &str = "
    SELECT id, attempts, payload, deadline FROM jobs
    WHERE status IN ('pending', 'leased') AND available_at <= ?1 AND queue = 'default'
      AND NOT EXISTS (SELECT 1 FROM paused_queues p WHERE p.queue = jobs.queue)
    ORDER BY priority, available_at, seq LIMIT 1";

/// Leases the picked job, if it is still open, with the attempt count read before, in a
/// transaction of its own: a claim made in between is overwritten.
const LEASE: &str = "
    UPDATE jobs SET status = 'leased', attempts = ?2, owner = ?3, claimed_at = ?1, available_at = ?4,
                    updated_at = ?1
    WHERE id = ?5 AND ?2 <= max_attempts AND status IN ('pending', 'leased')";

/// Marks a job done, in a transaction of its own, trusting a fence checked before.
const DONE: &str = "
    UPDATE jobs SET status = 'done', dead_reason = NULL, available_at = NULL, owner = NULL,
                    claimed_at = NULL, updated_at = ?2, ended_at = ?2, cancel_requested = 0
    WHERE id = ?1";

/// Which operation a [`Broken`] store splits into several transactions.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Split {
    /// `claim` reaps, picks and leases in three transactions instead of one: two concurrent
    /// claims can pick the same job and both lease attempt 1 of it.
    Claim,
    /// `complete` with `ok` checks the lease in one transaction and marks the job done in
    /// another: a reclaim, a reap or a second completion of the same attempt in between is
    /// overwritten, and both completions answer `done`.
    Complete,
    /// On PostgreSQL, `claim` in one transaction as most queues on it do: reap, then lease
    /// the first due row no other transaction holds (`FOR UPDATE SKIP LOCKED`), without
    /// taking the claims' turn. A claim then answers before the rows it stepped over are
    /// committed: `none` while jobs are due, as a later read shows.
    SkipLockedClaim,
    /// On PostgreSQL, a claim batch that does the same for each of its jobs, in one
    /// transaction: single claims are the store's own, only the worker's batch path is
    /// broken.
    SkipLockedBatch,
}

/// [`Split::SkipLockedClaim`]'s claim: both reaps and the pick in one statement each, in one
/// transaction, as `PgQueue` would claim without its turn lock.
const SKIP_LOCKED_CLAIM: &str = "
    WITH exhausted AS (
        UPDATE jobs SET status = 'dead', dead_reason = 'exhausted', available_at = NULL,
                        owner = NULL, claimed_at = NULL, updated_at = $1, ended_at = $1,
                        cancel_requested = false
        WHERE status = 'leased' AND attempts >= max_attempts AND available_at <= $1
        RETURNING 1)
    SELECT count(*) FROM exhausted";
const SKIP_LOCKED_REAP_DEADLINE: &str = "
    UPDATE jobs SET status = 'dead', dead_reason = 'deadline', available_at = NULL,
                    owner = NULL, claimed_at = NULL, updated_at = $1, ended_at = $1,
                    cancel_requested = false
    WHERE status IN ('pending', 'leased') AND deadline <= $1
      AND (status = 'pending' OR available_at <= $1)";
const SKIP_LOCKED_PICK: &str = "
    UPDATE jobs SET status = 'leased', attempts = attempts + 1, owner = $2, claimed_at = $1,
                    available_at = $3, updated_at = $1
    WHERE seq = (SELECT seq FROM jobs
                 WHERE status IN ('pending', 'leased') AND available_at <= $1
                   AND deadline > $1 AND attempts < max_attempts
                   AND NOT EXISTS (SELECT 1 FROM paused_queues p WHERE p.queue = jobs.queue)
                 ORDER BY available_at, seq LIMIT 1
                 FOR UPDATE SKIP LOCKED)
    RETURNING id, attempts, payload, deadline";

/// The second connection a [`Broken`] store runs its split operation on.
enum Side {
    Sqlite(rusqlite::Connection),
    Postgres(postgres::Client),
}

/// A SQLite queue with one operation split into several transactions, on a second
/// connection to the same file. Run alone it answers exactly as the real queue (see
/// `split_stores_are_correct_one_call_at_a_time`): only concurrency can tell.
struct Broken {
    queue: Box<dyn Backend>,
    side: Side,
    split: Split,
}

impl Broken {
    fn open(path: &Path, split: Split) -> retryq::Result<Broken> {
        let queue = Box::new(Queue::open_with(path, &sqlite_options())?);
        let side = rusqlite::Connection::open(path)?;
        side.busy_timeout(Duration::from_secs(10))?;
        Ok(Broken { queue, side: Side::Sqlite(side), split })
    }

    /// A PostgreSQL queue with `split`, on a second connection to the database at `url`.
    fn postgres(url: &str, split: Split) -> retryq::Result<Broken> {
        let queue = Box::new(retryq::PgQueue::connect(url)?);
        let side = postgres::Client::connect(url, postgres::NoTls)?;
        Ok(Broken { queue, side: Side::Postgres(side), split })
    }

    fn sqlite(&self) -> &rusqlite::Connection {
        match &self.side {
            Side::Sqlite(conn) => conn,
            Side::Postgres(_) => panic!("{:?} splits a SQLite operation", self.split),
        }
    }

    /// Up to `k` claims in one transaction without the claims' turn, each stepping over
    /// the rows other transactions hold.
    fn skip_locked(&mut self, worker: &str, now: u64, k: usize) -> retryq::Result<Vec<Claimed>> {
        let lease_until = now + self.queue.settings().lease_ms;
        let Side::Postgres(client) = &mut self.side else {
            panic!("{:?} splits a PostgreSQL operation", self.split);
        };
        let (at, until) = (now as i64, lease_until as i64);
        let mut tx = client.transaction()?;
        tx.query_one(SKIP_LOCKED_CLAIM, &[&at])?;
        tx.execute(SKIP_LOCKED_REAP_DEADLINE, &[&at])?;
        let mut rows = Vec::new();
        while rows.len() < k {
            // A job just leased expires after `now`: the next pick takes the next one.
            match tx.query_opt(SKIP_LOCKED_PICK, &[&at, &worker, &until])? {
                Some(row) => rows.push(row),
                None => break,
            }
        }
        tx.commit()?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let payload: Vec<u8> = row.get(2);
                Claimed {
                    lease: Lease {
                        worker: worker.to_owned(),
                        id: row.get(0),
                        attempt: row.get::<_, i64>(1) as u64,
                    },
                    lease_until,
                    payload: String::from_utf8_lossy(&payload).into_owned(),
                    deadline: row.get::<_, i64>(3) as u64,
                    last_node: None,
                    kind: String::new(),
                }
            })
            .collect())
    }

    fn skip_locked_claim(&mut self, worker: &str, now: u64) -> retryq::Result<Option<Claimed>> {
        Ok(self.skip_locked(worker, now, 1)?.into_iter().next())
    }

    /// The window in which another client acts on what this one read.
    fn window() {
        std::thread::sleep(Duration::from_millis(2));
    }

    fn split_claim(&mut self, worker: &str, now: u64) -> retryq::Result<Option<Claimed>> {
        self.queue.reap(now)?;
        let picked = self
            .sqlite()
            .query_row(PICK, params![now], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, u64>(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()?;
        let Some((id, attempts, payload, deadline)) = picked else {
            return Ok(None);
        };
        Broken::window();
        let lease_until = now + self.queue.settings().lease_ms;
        let attempt = attempts + 1;
        if self.sqlite().execute(LEASE, params![now, attempt, worker, lease_until, id])? == 0 {
            return Ok(None);
        }
        let lease = Lease { worker: worker.to_owned(), id, attempt };
        Ok(Some(Claimed { lease, lease_until, payload, deadline, last_node: None, kind: String::new() }))
    }

    fn split_complete(&mut self, c: &Completion<'_>) -> retryq::Result<Completed> {
        let lease = c.lease;
        let held = self.queue.get(&lease.id)?.is_some_and(|job| {
            job.status == Status::Leased
                && job.owner.as_deref() == Some(lease.worker.as_str())
                && job.attempts == lease.attempt
                && job.claimed_at.is_some_and(|at| at <= c.now)
        });
        if c.report.outcome != retryq::Outcome::Ok || !held {
            // Whatever is refused, or not `ok`, the real completion answers.
            return self.queue.complete(c);
        }
        Broken::window();
        self.sqlite().execute(DONE, params![lease.id, c.now])?;
        Ok(Completed::Done)
    }
}

impl retryq::ServerTime for Broken {}

impl Backend for Broken {
    fn claim_from(&mut self, worker: &str, queues: &[&str], now: u64) -> retryq::Result<Option<Claimed>> {
        if queues != [retryq::DEFAULT_QUEUE] {
            return self.queue.claim_from(worker, queues, now);
        }
        match self.split {
            Split::Claim => self.split_claim(worker, now),
            Split::SkipLockedClaim => self.skip_locked_claim(worker, now),
            Split::Complete | Split::SkipLockedBatch => self.queue.claim(worker, now),
        }
    }
    fn complete(&mut self, completion: &Completion<'_>) -> retryq::Result<Completed> {
        match self.split {
            Split::Claim | Split::SkipLockedClaim | Split::SkipLockedBatch => self.queue.complete(completion),
            Split::Complete => self.split_complete(completion),
        }
    }

    fn kind(&self) -> &'static str {
        match self.side {
            Side::Sqlite(_) => "sqlite with one operation split into several transactions",
            Side::Postgres(_) => "postgres with claims that step over locked rows",
        }
    }
    fn settings(&self) -> Settings {
        self.queue.settings()
    }
    fn set_settings(&mut self, settings: Settings) -> retryq::Result<()> {
        self.queue.set_settings(settings)
    }
    fn enqueue(&mut self, job: &NewJob<'_>) -> retryq::Result<Enqueued> {
        self.queue.enqueue(job)
    }
    fn enqueue_many(&mut self, jobs: &[NewJob<'_>]) -> retryq::Result<Vec<retryq::Result<Enqueued>>> {
        self.queue.enqueue_many(jobs)
    }
    fn claim_batch_from(
        &mut self,
        worker: &str,
        queues: &[&str],
        now: u64,
        k: usize,
    ) -> retryq::Result<Vec<Claimed>> {
        if self.split == Split::SkipLockedBatch && queues == [retryq::DEFAULT_QUEUE] {
            return self.skip_locked(worker, now, k);
        }
        self.queue.claim_batch_from(worker, queues, now, k)
    }
    fn complete_batch(
        &mut self,
        completions: &[Completion<'_>],
    ) -> retryq::Result<Vec<retryq::Result<Completed>>> {
        self.queue.complete_batch(completions)
    }
    fn record_error(&mut self, lease: &Lease, error: &str, node: Option<&str>) -> retryq::Result<()> {
        self.queue.record_error(lease, error, node)
    }
    fn heartbeat(&mut self, lease: &Lease, now: u64) -> retryq::Result<u64> {
        self.queue.heartbeat(lease, now)
    }
    fn cancel(&mut self, id: &str, now: u64) -> retryq::Result<retryq::Cancelled> {
        self.queue.cancel(id, now)
    }
    fn prune(&mut self, before: u64, now: u64) -> retryq::Result<u64> {
        self.queue.prune(before, now)
    }
    fn prune_at_most(&mut self, before: u64, now: u64, limit: u64) -> retryq::Result<u64> {
        self.queue.prune_at_most(before, now, limit)
    }
    fn forget(&mut self, before: u64, now: u64) -> retryq::Result<u64> {
        self.queue.forget(before, now)
    }
    fn pause(&mut self, queue: &str, now: u64) -> retryq::Result<()> {
        self.queue.pause(queue, now)
    }
    fn resume(&mut self, queue: &str, now: u64) -> retryq::Result<()> {
        self.queue.resume(queue, now)
    }
    fn run_now(&mut self, id: &str, now: u64) -> retryq::Result<u64> {
        self.queue.run_now(id, now)
    }
    fn paused(&self) -> retryq::Result<Vec<(String, u64)>> {
        self.queue.paused()
    }
    fn lookup(&self, id: &str) -> retryq::Result<Option<retryq::Lookup>> {
        self.queue.lookup(id)
    }
    fn redrive(&mut self, redrive: &Redrive<'_>) -> retryq::Result<()> {
        self.queue.redrive(redrive)
    }
    fn redrive_dead(&mut self, redrive: &RedriveDead) -> retryq::Result<Vec<(String, retryq::Result<()>)>> {
        self.queue.redrive_dead(redrive)
    }
    fn reap(&mut self, now: u64) -> retryq::Result<u64> {
        self.queue.reap(now)
    }
    fn get(&self, id: &str) -> retryq::Result<Option<Job>> {
        self.queue.get(id)
    }
    fn stats_of(&self, now: u64, queue: Option<&str>) -> retryq::Result<Stats> {
        self.queue.stats_of(now, queue)
    }
    fn owners(&self, now: u64) -> retryq::Result<Vec<Owner>> {
        self.queue.owners(now)
    }
    fn history(&self, id: &str) -> retryq::Result<Vec<HistoryEntry>> {
        self.queue.history(id)
    }
    fn dead_jobs(&self, reason: Option<DeadReason>) -> retryq::Result<Vec<Job>> {
        self.queue.dead_jobs(reason)
    }
    fn list(&self, status: Status, reason: Option<DeadReason>, limit: u32) -> retryq::Result<JobPage> {
        self.queue.list(status, reason, limit)
    }
    fn browse(&self, filter: &retryq::Browse<'_>) -> retryq::Result<retryq::BrowsePage> {
        self.queue.browse(filter)
    }
    fn queues(&self) -> retryq::Result<Vec<String>> {
        self.queue.queues()
    }
    fn attempts(&self, id: &str) -> retryq::Result<Vec<retryq::AttemptRecord>> {
        self.queue.attempts(id)
    }
    fn tallies(&self) -> retryq::Result<retryq::Tallies> {
        self.queue.tallies()
    }
    fn next_due(&self) -> retryq::Result<Option<u64>> {
        self.queue.next_due()
    }
    fn next_due_in(&self, queues: &[&str]) -> retryq::Result<Option<u64>> {
        self.queue.next_due_in(queues)
    }
    fn audit(&self) -> retryq::Result<Audit> {
        self.queue.audit()
    }
}

/// Run alone, each split store answers as the real one: a sequential trace cannot tell them
/// apart, so whatever the concurrent check finds is a concurrency bug.
#[test]
fn split_stores_are_correct_one_call_at_a_time() {
    let dir = tempfile::tempdir().expect("temporary directory");
    for split in [Split::Claim, Split::Complete] {
        for seed in 0..5u64 {
            let path = dir.path().join(format!("{split:?}-{seed}.db"));
            let workload = Workload { clients: 1, calls: 60, seed, ..Workload::default() };
            let connect = || Ok(Box::new(Broken::open(&path, split)?) as Box<dyn Backend>);
            let history = linear::run(&workload, &connect).expect("run");
            if let Err(why) = linear::check(&history) {
                panic!("{split:?}, one client alone, seed {seed}: {why}");
            }
        }
    }
}

/// Runs 8 clients on a store split by `split` until a history has no order, at most `tries`
/// times. Returns the run that caught it. Where the explanation ends is not checked: the
/// first call to disagree is whichever next reads what the split left — a claim or a get of
/// the job, a completion, a redrive of a job reaped in the gap, the counts of a stats or a
/// prune — which can be any kind of call the workload makes, and under load each of these
/// was seen. [`split_stores_are_correct_one_call_at_a_time`] shows each split store correct
/// alone, so what is caught is the split.
fn caught(split: Split, tries: u64) -> u64 {
    // Single claims and completions are what these splits break: their runs make no batch,
    // whose real claims would race the split ones into a storage failure, not an answer.
    caught_in(split, tries, &Workload { batches: 0.0, ..Workload::default() })
}

/// [`caught`], with runs shaped like `shape`.
fn caught_in(split: Split, tries: u64, shape: &Workload) -> u64 {
    let dir = tempfile::tempdir().expect("temporary directory");
    let checker = checker();
    for seed in 0..tries {
        let path = dir.path().join(format!("{split:?}-{seed}.db"));
        let url = matches!(split, Split::SkipLockedClaim | Split::SkipLockedBatch).then(|| {
            retryq_pgtest::database(&format!("linear-{split:?}-{seed}").to_lowercase())
                .expect("a database on the running cluster")
        });
        let workload = Workload { seed: seed * 1000, ..shape.clone() };
        let connect = || {
            Ok(Box::new(match &url {
                Some(url) => Broken::postgres(url, split)?,
                None => Broken::open(&path, split)?,
            }) as Box<dyn Backend>)
        };
        let history = linear::run(&workload, &connect).expect("run");
        let started = Instant::now();
        match checker.check(&history) {
            Ok(_) => continue,
            Err(Violation::NotLinearizable(why)) => {
                eprintln!(
                    "{split:?} caught in run {} after {:?} of search:\n{why}",
                    seed + 1,
                    started.elapsed()
                );
                return seed + 1;
            }
            Err(other) => panic!("{split:?}, run {seed}: {other}"),
        }
    }
    panic!("{tries} runs of 8 clients on a store with a split {split:?} were all accepted");
}

/// Two claims of one job are caught.
#[test]
fn a_claim_split_in_three_transactions_is_caught() {
    caught(Split::Claim, 20);
}

/// A completion that overwrote what happened after its check is caught.
#[test]
fn a_completion_split_in_two_transactions_is_caught() {
    caught(Split::Complete, 50);
}

// ---- client processes --------------------------------------------------------------------

/// Set in a child: it is client `RETRYQ_LINEAR_CLIENT` of a process run, not the test.
const CHILD: &str = "RETRYQ_LINEAR_CLIENT";

/// The instant on CLOCK_MONOTONIC, which every process on the machine reads alike: what
/// orders the calls of different processes in real time.
fn monotonic() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    // A monotonic clock counts from boot: never negative, and u64 nanoseconds last 584 years.
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

fn env_u64(name: &str) -> u64 {
    env(name).parse().unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// 10 runs of 8 client processes, each its own SQLite connection in its own process (this
/// test binary again, as a child). Several processes share a file through SQLite's file
/// locks and shared memory, not the in-process lock table several connections of one
/// process use: SPEC 3.10's "several processes may share one database file", as written.
#[test]
fn histories_of_client_processes_are_linearizable() {
    if std::env::var_os(CHILD).is_some() {
        return client_process();
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let program = std::env::current_exe().expect("the test binary");
    let mut figures = Figures::default();
    for seed in 0..10u64 {
        let workload = Workload { seed: seed * 1000 + 17, ..Workload::default() };
        let path = dir.path().join(format!("processes-{seed}.db"));
        let started = Instant::now();
        let mut calls = setup(&workload, &path);
        // Every child waits for the same instant, so that their calls overlap.
        let start = monotonic() + 300_000_000;
        let children: Vec<_> = (0..workload.clients)
            .map(|n| {
                std::process::Command::new(&program)
                    .args(["histories_of_client_processes_are_linearizable", "--exact", "--nocapture"])
                    .args(["--test-threads=1", "--quiet"])
                    .env(CHILD, n.to_string())
                    .env("RETRYQ_LINEAR_DB", &path)
                    .env("RETRYQ_LINEAR_SEED", workload.seed.to_string())
                    .env("RETRYQ_LINEAR_START", start.to_string())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .expect("a client process")
            })
            .collect();
        for (n, child) in children.into_iter().enumerate() {
            let out = child.wait_with_output().expect("the client's output");
            assert!(out.status.success(), "client {n} failed: {}", out.status);
            let text = String::from_utf8(out.stdout).expect("UTF-8 output");
            let mine: Vec<Call> = text
                .lines()
                .filter_map(|line| line.strip_prefix("CALL\t"))
                .map(|l| parse_call(n, l))
                .collect();
            assert_eq!(mine.len(), workload.calls, "client {n} reported every call:\n{text}");
            calls.extend(mine);
        }
        let history = History { settings: workload.settings, calls };
        let ran = started.elapsed();
        let started = Instant::now();
        match linear::check(&history) {
            Ok(order) => figures.add(&history, order.states, started.elapsed(), ran),
            Err(why) => panic!("client processes, run {seed}: {why}"),
        }
    }
    figures.report("sqlite, client processes");
}

/// The setup's enqueues, made by the test process before the clients start.
fn setup(workload: &Workload, path: &Path) -> Vec<Call> {
    let s = workload.settings;
    let mut queue = Queue::open_with(path, &sqlite_options()).expect("database");
    Backend::set_settings(
        &mut queue,
        Settings { lease_ms: s.lease_ms, base_ms: s.base_ms, cap_ms: s.cap_ms, reap_limit: s.reap_limit },
    )
    .expect("settings");
    let client = workload.clients;
    workload
        .setup()
        .into_iter()
        .map(|op| {
            let invoked = monotonic();
            let response = linear::translate::apply(&mut queue, &op).expect("setup");
            Call { client, op, response, more: Vec::new(), invoked, returned: monotonic() }
        })
        .collect()
}

/// A child: one client of the run on its own connection, every call printed on a `CALL` line.
fn client_process() {
    let n: usize = env(CHILD).parse().expect("client number");
    let workload = Workload { seed: env_u64("RETRYQ_LINEAR_SEED"), ..Workload::default() };
    let s = workload.settings;
    let mut queue = Queue::open_with(env("RETRYQ_LINEAR_DB"), &sqlite_options()).expect("database");
    Backend::set_settings(
        &mut queue,
        Settings { lease_ms: s.lease_ms, base_ms: s.base_ms, cap_ms: s.cap_ms, reap_limit: s.reap_limit },
    )
    .expect("settings");
    let start = env_u64("RETRYQ_LINEAR_START");
    while monotonic() < start {
        std::thread::sleep(Duration::from_micros(200));
    }
    // The board is this process's own: a client completes only leases it saw granted.
    let board = linear::workload::Board::new();
    let mut client = workload.client(n);
    for _ in 0..workload.calls {
        let op = client.next(&board);
        let invoked = monotonic();
        let response = linear::translate::apply(&mut queue, &op).expect("an answer");
        let returned = monotonic();
        client.saw(&op, &response, &board);
        println!("CALL\t{invoked}\t{returned}\t{}\t{}", op.to_json_line(), response.to_json_line());
    }
}

/// One `CALL` line of client `n`: the two instants, the operation, the answer.
fn parse_call(n: usize, line: &str) -> Call {
    let fields: Vec<&str> = line.split('\t').collect();
    let [invoked, returned, op, response] = fields[..] else {
        panic!("not a call: {line}");
    };
    let op = match retryq_conformance::parse_line(op) {
        retryq_conformance::Line::Op(op) => op,
        other => panic!("not an operation: {op}: {other:?}"),
    };
    let response = response_of(response).unwrap_or_else(|| panic!("not an answer: {response}"));
    let instant = |s: &str| s.parse::<u64>().unwrap_or_else(|e| panic!("{s}: {e}"));
    Call { client: n, op, response, more: Vec::new(), invoked: instant(invoked), returned: instant(returned) }
}

/// An answer line read back into the SPEC's result (the replies of a concurrent run).
fn response_of(line: &str) -> Option<Response> {
    use retryq_model::{DeadReason, JobView, StatsView};
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let text = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_owned);
    let int = |k: &str| v.get(k).and_then(serde_json::Value::as_u64);
    let maybe = |k: &str| -> Option<Option<u64>> {
        match v.get(k)? {
            serde_json::Value::Null => Some(None),
            x => x.as_u64().map(Some),
        }
    };
    let reason = |k: &str| -> Option<Option<DeadReason>> {
        Some(match v.get(k)?.as_str() {
            None => None,
            Some("exhausted") => Some(DeadReason::Exhausted),
            Some("deadline") => Some(DeadReason::Deadline),
            Some("permanent") => Some(DeadReason::Permanent),
            Some("cancelled") => Some(DeadReason::Cancelled),
            Some(_) => return None,
        })
    };
    let ran = v.get("attempt").is_some();
    if let Some(code) = text("error") {
        return Some(Response::Err(match code.as_str() {
            "invalid_input" => Failure::InvalidInput { detail: text("detail")? },
            "conflict" => Failure::Conflict,
            "not_found" => Failure::NotFound,
            "lease_lost" => Failure::LeaseLost,
            "not_dead" => Failure::NotDead,
            "clock_went_backwards" if ran => {
                Failure::RanClockWentBackwards { id: text("id")?, attempt: int("attempt")? }
            }
            "clock_went_backwards" => Failure::ClockWentBackwards,
            "deadline_passed" => Failure::DeadlinePassed,
            "cancelled" => Failure::Cancelled,
            "pruned" => Failure::Pruned,
            "not_cancellable" => Failure::NotCancellable,
            "not_pending" => Failure::NotPending,
            "unknown_error" => Failure::UnknownError { id: text("id")?, attempt: int("attempt")? },
            _ => return None,
        }));
    }
    Some(Response::Ok(match text("ok")?.as_str() {
        "enqueued" => Reply::Enqueued,
        "existing" => Reply::Existing,
        "claimed" => {
            Reply::Claimed { id: text("id")?, attempt: int("attempt")?, lease_until: int("lease_until")? }
        }
        "none" => Reply::None,
        "done" if ran => Reply::RanDone { id: text("id")?, attempt: int("attempt")? },
        "done" => Reply::Done,
        "retry" if ran => {
            Reply::RanRetry { id: text("id")?, attempt: int("attempt")?, available_at: int("available_at")? }
        }
        "retry" => Reply::Retry { available_at: int("available_at")? },
        "dead" if ran => {
            Reply::RanDead { id: text("id")?, attempt: int("attempt")?, reason: reason("reason")?? }
        }
        "dead" => Reply::Dead { reason: reason("reason")?? },
        "crashed" => Reply::Crashed { id: text("id")?, attempt: int("attempt")? },
        "extended" => Reply::Extended { lease_until: int("lease_until")? },
        "redriven" => Reply::Redriven,
        "cancelled" => Reply::Cancelled,
        "cancelling" => Reply::Cancelling,
        "forgotten" => Reply::Forgotten { count: int("count")? },
        "pruned" if v.get("count").is_some() => Reply::Pruned { count: int("count")? },
        "pruned" => Reply::Tombstone(retryq_model::TombstoneView {
            id: text("id")?,
            queue: text("queue")?,
            status: match text("status")?.as_str() {
                "done" => retryq_model::Status::Done,
                "dead" => retryq_model::Status::Dead,
                _ => return None,
            },
            dead_reason: reason("dead_reason")?,
            attempts: int("attempts")?,
            ended_at: int("ended_at")?,
        }),
        "reaped" => Reply::Reaped { count: int("count")? },
        "paused" => Reply::Paused,
        "resumed" => Reply::Resumed,
        "due" => Reply::Due { available_at: int("available_at")? },
        "job" => Reply::Job(JobView {
            id: text("id")?,
            status: match text("status")?.as_str() {
                "pending" => retryq_model::Status::Pending,
                "leased" => retryq_model::Status::Leased,
                "done" => retryq_model::Status::Done,
                "dead" => retryq_model::Status::Dead,
                _ => return None,
            },
            attempts: int("attempts")?,
            max_attempts: int("max_attempts")?,
            available_at: maybe("available_at")?,
            deadline: int("deadline")?,
            dead_reason: reason("dead_reason")?,
            redrives: int("redrives")?,
            not_before: int("not_before")?,
            base_ms: maybe("base_ms")?,
            cap_ms: maybe("cap_ms")?,
            queue: text("queue")?,
            priority: int("priority")?,
            ended_at: maybe("ended_at")?,
            cancel_requested: v.get("cancel_requested")?.as_bool()?,
            kind: v.get("kind").and_then(|k| k.as_str()).unwrap_or_default().to_owned(),
        }),
        "stats" => Reply::Stats(StatsView {
            pending: int("pending")?,
            leased: int("leased")?,
            done: int("done")?,
            dead: int("dead")?,
            dead_exhausted: int("dead_exhausted")?,
            dead_deadline: int("dead_deadline")?,
            dead_permanent: int("dead_permanent")?,
            dead_cancelled: int("dead_cancelled")?,
            leased_expired: int("leased_expired")?,
            oldest_open_age_ms: maybe("oldest_open_age_ms")?,
            pruned_done: int("pruned_done")?,
            pruned_dead: int("pruned_dead")?,
            paused_queues: int("paused_queues")?,
        }),
        _ => return None,
    }))
}

/// On PostgreSQL, a claim that steps over rows other transactions hold (`SKIP LOCKED`,
/// without the claims' turn) answers before those rows are committed: caught, where
/// `PgQueue`'s own claims pass every run (`postgres_histories_are_linearizable`).
#[test]
fn a_claim_that_skips_locked_rows_is_caught_on_postgres() {
    if retryq_pgtest::database("linear-skip-locked-probe").is_none() {
        return;
    }
    // What shows the step-over is whatever call later sees the skipped rows as they were
    // (a read, a completion, a reap, a redrive…), not the claim itself.
    caught(Split::SkipLockedClaim, 50);
}

/// The same for the worker's path: a claim batch that steps over rows others hold, single
/// claims as the store makes them, in runs whose every claim is a batch of 2 or 3.
#[test]
fn a_claim_batch_that_skips_locked_rows_is_caught_on_postgres() {
    if retryq_pgtest::database("linear-skip-locked-batch-probe").is_none() {
        return;
    }
    caught_in(Split::SkipLockedBatch, 50, &Workload { batches: 1.0, ..Workload::default() });
}
