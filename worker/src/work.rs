//! The loop: claim, send, record, forever — the unit of work of `run_once`, with the wall
//! clock, a fresh random jitter per attempt, and up to one attempt in flight per slot.
//!
//! The store thread (`store.rs`) checks that the database file is still the one opened,
//! claims due jobs for the free slots, and records outcomes as they come back; each slot
//! (`slot.rs`) sends its job through its transport within a [`Window`] — `min(timeout,
//! deadline − now)`, and never past the lease less what the worker keeps for afterwards, on
//! either clock. When nothing is due the store thread sleeps until the earliest reservation
//! or lease expiry of its queues ([`Backend::next_due_in`]), at most [`Config::max_sleep`] so that new jobs are
//! seen, and never less than a millisecond, so that it never spins.

use std::sync::mpsc;
use std::thread;
use std::time::Instant;

use retryq::Backend;
use tracing::{info, warn};

use crate::clock::{Clock, SystemClock};
use crate::committer;
use crate::config::{Config, ConfigError};
use crate::outage::Outage;
use crate::outcome::{Summary, WorkError};
use crate::slot::{self, Event, Limits};
use crate::stop::Stop;
use crate::store::{Slot, Store, watch};
use crate::transport::Transport;
#[cfg(doc)]
use crate::window::Window;

/// Runs `queue` (any store: a SQLite [`Queue`](retryq::Queue), a PostgreSQL
/// `PgQueue`) with `transport`, one attempt at a time, until `stop` is requested (the
/// attempt under way is finished and recorded first) or, with [`Config::until_idle`], until
/// no job is pending or leased, on the system clock. The attempt's lease is renewed every
/// third of it while it runs ([`Config::heartbeat_every`]); a refused renewal stops the
/// attempt, and its outcome is not recorded ([`Summary::abandoned`]).
///
/// Refusals the SPEC defines for one attempt (a lost lease, the clock going back, an
/// unclassified error) are logged and the loop goes on; so does a store that is away for
/// a while (a busy or full database, a PostgreSQL server that dropped the connection or is
/// restarting), after a capped exponential backoff, its outcomes kept until they are
/// committed. Any other storage failure ends the loop with [`WorkError::Queue`]; a
/// database file ([`Config::db_file`]) deleted or replaced under it with
/// [`WorkError::DbFile`]; a clock out of range with [`WorkError::Clock`].
///
/// ```
/// use retryq::{Claimed, DeadReason, NewJob, Outcome, Queue, Report, Settings};
/// use retryq_worker::{Config, Stop, Transport, Unclassified, Window, now_ms, work};
///
/// /// A receiver that refuses everything for good.
/// struct Refuse;
///
/// impl Transport for Refuse {
///     fn attempt(&mut self, _: &Claimed, _: &Window<'_>) -> Result<Report, Unclassified> {
///         Ok(Report::with_error(Outcome::Permanent, "422 unprocessable"))
///     }
/// }
///
/// let mut queue = Queue::open_in_memory()?;
/// let now = now_ms()?;
/// queue.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 5, deadline: now + 60_000, now, ..NewJob::default() })?;
///
/// // A lease is renewed every third of itself while its attempt runs: 100 ms is too short
/// // for each renewal to have time to commit.
/// let short = Config { settings: Settings { lease_ms: 100, ..Settings::default() }, ..Config::new("w1") };
/// let err = work(&mut queue, &short, &mut Refuse, &Stop::new()).expect_err("refused");
/// assert!(err.to_string().contains("lease"), "{err}");
///
/// let config = Config { until_idle: true, ..Config::new("w1") };
/// let summary = work(&mut queue, &config, &mut Refuse, &Stop::new())?;
/// // A permanent failure spends one attempt, not five.
/// assert_eq!((summary.attempts, summary.dead), (1, 1));
/// let job = queue.get("a")?.expect("kept");
/// assert_eq!(job.dead_reason, Some(DeadReason::Permanent));
/// assert_eq!(job.last_error.as_deref(), Some("422 unprocessable"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn work(
    queue: &mut dyn Backend,
    config: &Config,
    transport: &mut (impl Transport + Send),
    stop: &Stop,
) -> Result<Summary, WorkError> {
    work_with_clock(queue, config, transport, stop, &SystemClock)
}

/// [`work`] on the wall clock `clock`: leases, reservations and deadlines are read on it;
/// the lease is also kept on the monotonic clock, whatever `clock` does.
pub fn work_with_clock(
    queue: &mut dyn Backend,
    config: &Config,
    transport: &mut (impl Transport + Send),
    stop: &Stop,
    clock: &dyn Clock,
) -> Result<Summary, WorkError> {
    work_in_slots(queue, config, std::slice::from_mut(transport), stop, clock)
}

/// [`work_with_clock`] with one attempt slot per transport: up to `transports.len()`
/// attempts in flight at once, each on a thread of its own with its own transport.
///
/// One thread, this one, owns the queue (`store.rs`): it claims for all free slots in one
/// transaction, and commits the outcomes that arrive together in one transaction, logging
/// each only once it is committed — on a second connection of the store's, beside the
/// claims, where it gives one ([`Backend::another`]). Each attempt is still one claim,
/// fenced by (worker, attempt), with its own [`Window`]; a crash loses at most the outcomes
/// not yet committed, and their jobs wait for their leases with the attempt spent. A stop
/// claims nothing more and returns once the attempts in flight are recorded. On a failure that ends the loop,
/// the commands still running are killed (their outcomes could not be recorded) and the
/// other attempts in flight are left to end within their windows before it returns.
pub fn work_in_slots<T: Transport + Send>(
    queue: &mut dyn Backend,
    config: &Config,
    transports: &mut [T],
    stop: &Stop,
    clock: &dyn Clock,
) -> Result<Summary, WorkError> {
    if transports.is_empty() {
        return Err(WorkError::Config(ConfigError::NoSlots));
    }
    config.validate()?;
    queue.set_settings(config.settings).map_err(|e| WorkError::Config(ConfigError::Settings(e)))?;
    clock.now_ms()?;
    // The first reading of a store's clock sets what the attempts' windows read; a store
    // that is away now is waited out at the first claim.
    if let Err(e) = clock.store_now(&*queue)
        && !e.is_transient()
    {
        return Err(WorkError::Queue(e));
    }
    // Named after the worker where the store shows its sessions (PostgreSQL's
    // `application_name`), so that a lock held too long names its holder.
    if let Err(e) = queue.set_identity(&config.worker)
        && !e.is_transient()
    {
        return Err(WorkError::Queue(e));
    }
    let file = watch(config.db_file.as_deref())?;
    let limits =
        Limits { timeout: config.timeout, margin: config.margin(), kill_grace: config.kill_grace(), clock };
    info!(
        worker = config.worker.as_str(),
        store = queue.kind(),
        concurrency = transports.len(),
        lease_ms = config.settings.lease_ms,
        heartbeat_ms = config.heartbeat_every().as_millis() as u64,
        margin_ms = config.margin().as_millis() as u64,
        timeout_ms = config.timeout.as_millis() as u64,
        "worker started"
    );
    for periodic in &config.periodic {
        info!(
            periodic = periodic.name(),
            every = %periodic.every(),
            queue = config.queues.first().map_or(retryq::DEFAULT_QUEUE, String::as_str),
            max_attempts = periodic.max_attempts(),
            payload_bytes = periodic.payload().len(),
            "enqueues a job each period"
        );
    }
    // Made once the settings and the session's name are set: it has them too.
    let another = match queue.another() {
        Ok(another) => another,
        Err(e) => {
            warn!(error = %e, "cannot open a second connection: outcomes are committed between the claims");
            None
        }
    };
    stop.interrupt_with(queue.interrupter());
    let (done_tx, done_rx) = mpsc::channel();
    let listener = listen(&*queue, config, stop, done_tx.clone());
    let ran = thread::scope(|scope| {
        let mut slots = Vec::with_capacity(transports.len());
        for (n, transport) in transports.iter_mut().enumerate() {
            let (jobs_tx, jobs_rx) = mpsc::channel();
            let done = done_tx.clone();
            let limits = &limits;
            thread::Builder::new()
                .name(format!("retryq-slot-{n}"))
                .spawn_scoped(scope, move || slot::run(n, transport, jobs_rx, done, limits))
                .map_err(WorkError::Thread)?;
            slots.push(Slot { jobs: jobs_tx, holds: None });
        }
        // Ends once the store thread drops its end, after its last commit's answer.
        let committer = match another {
            Some(mut another) => {
                let (batches_tx, batches_rx) = mpsc::channel();
                let answers = done_tx.clone();
                thread::Builder::new()
                    .name("retryq-commit".into())
                    .spawn_scoped(scope, move || committer::run(&mut *another, &batches_rx, &answers))
                    .map_err(WorkError::Thread)?;
                Some(batches_tx)
            }
            None => None,
        };
        drop(done_tx);
        let jitter = queue.jitter();
        let mut store = Store {
            queue: &mut *queue,
            config,
            stop,
            clock,
            file,
            slots,
            done: done_rx,
            summary: Summary::default(),
            jitter,
            claim_at: Instant::now(),
            outage: Outage::default(),
            waiting: Vec::new(),
            committer,
            committing: Vec::new(),
            clock_read_at: Instant::now(),
            prune_at: Instant::now(),
            unusable: None,
            periods: vec![None; config.periodic.len()],
            periodic_at: Instant::now(),
        };
        let ran = store.run();
        if ran.is_err() && store.slots.iter().any(|s| s.holds.is_some()) {
            stop.kill_running();
        }
        // Closing the slots' channels ends their threads once their attempts are over.
        ran.map(|()| store.summary)
    });
    drop(listener);
    stop.interrupt_with(None);
    let summary = ran?;
    info!(
        worker = config.worker.as_str(),
        attempts = summary.attempts,
        done = summary.done,
        retried = summary.retried,
        dead = summary.dead,
        reaped = summary.reaped,
        unrecorded = summary.unrecorded,
        abandoned = summary.abandoned,
        writes = summary.writes,
        rounds = summary.rounds,
        pruned = summary.pruned,
        enqueued = summary.enqueued,
        "worker stopped"
    );
    Ok(summary)
}

/// The store's wake-ups ([`Backend::listen`]) for the queues `config` serves: each wakes the
/// store thread to claim at once, where it would otherwise look at its next due time (at
/// most [`Config::max_sleep`] away). A store that cannot listen, or fails to, leaves the
/// schedule alone: a wake-up lost costs latency, never a job.
fn listen(
    queue: &dyn Backend,
    config: &Config,
    stop: &Stop,
    events: mpsc::Sender<Event>,
) -> Option<retryq::Listener> {
    let served = config.queues.clone();
    let stop = stop.clone();
    let wake: retryq::Wake = std::sync::Arc::new(move |queue: Option<&str>| {
        if queue.is_none_or(|queue| served.iter().any(|s| s == queue)) {
            let _ = events.send(Event::Wake);
            stop.nudge();
        }
    });
    match queue.listen(wake) {
        Ok(listener) => listener,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for new jobs: looking for them by schedule alone");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::path::Path;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::thread;
    use std::time::Duration;

    use std::sync::atomic::AtomicU64 as Counter;

    use retryq::{Claimed, Completion, Lease, NewJob, Outcome, Queue, Report, Status};

    use super::*;
    use crate::clock::ClockError;
    use crate::clock::now_ms;
    use crate::exec::Exec;
    use crate::transport::Unclassified;
    use crate::window::Window;
    use retryq::Settings;

    /// A transport that answers from a script and remembers what it was asked.
    struct Scripted {
        answers: VecDeque<Result<Report, Unclassified>>,
        asked: Vec<(String, u64, Duration)>,
    }

    impl Transport for Scripted {
        fn attempt(&mut self, job: &Claimed, window: &Window<'_>) -> Result<Report, Unclassified> {
            self.asked.push((job.id().to_owned(), job.attempt(), window.left().0));
            self.answers.pop_front().unwrap_or(Ok(Report::from(Outcome::Ok)))
        }
    }

    fn scripted(answers: Vec<Result<Report, Unclassified>>) -> Scripted {
        Scripted { answers: answers.into(), asked: Vec::new() }
    }

    fn config() -> Config {
        Config {
            settings: Settings { lease_ms: 60_000, base_ms: 0, cap_ms: 0, ..Settings::default() },
            timeout: Duration::from_secs(10),
            until_idle: true,
            max_sleep: Duration::from_millis(50),
            ..Config::new("w1")
        }
    }

    fn enqueue(q: &mut Queue, id: &str, max_attempts: u64, ttl_ms: u64) {
        let now = now_ms().expect("clock");
        q.enqueue(&NewJob {
            id,
            payload: "p",
            max_attempts,
            deadline: now + ttl_ms,
            now,
            ..NewJob::default()
        })
        .expect("enqueue");
    }

    #[test]
    fn a_lease_need_not_hold_the_timeout_but_must_be_long_enough_to_renew() {
        // Heartbeats renew the lease while the attempt runs: a timeout past it is fine.
        let c = Config { timeout: Duration::from_secs(600), ..config() };
        assert!(c.validate().is_ok());
        let short = Config { settings: Settings { lease_ms: 299, ..config().settings }, ..config() };
        let err = short.validate().unwrap_err();
        assert!(matches!(err, ConfigError::LeaseTooShort { lease_ms: 299, least_ms: 300 }), "{err}");
        assert_eq!(err.lease_needed_ms(), Some(300));
        assert!(err.to_string().contains("every third"), "{err}");
        let least = Config { settings: Settings { lease_ms: 300, ..config().settings }, ..config() };
        assert!(least.validate().is_ok());
        assert_eq!(least.heartbeat_every(), Duration::from_millis(100));
        assert!(matches!(
            Config { worker: String::new(), ..config() }.validate(),
            Err(ConfigError::Worker { .. })
        ));
        let mut q = Queue::open_in_memory().expect("queue");
        let err = work(&mut q, &short, &mut scripted(vec![]), &Stop::new()).unwrap_err();
        assert!(matches!(err, WorkError::Config(ConfigError::LeaseTooShort { .. })), "{err}");
    }

    #[test]
    fn retention_prunes_what_ended_long_enough_ago_and_keeps_the_rest() {
        let mut q = Queue::open_in_memory().expect("queue");
        let now = now_ms().expect("clock");
        let ago = now - 600_000;
        let old = NewJob {
            id: "old",
            payload: "p",
            max_attempts: 1,
            deadline: now + 60_000,
            now: ago,
            ..NewJob::default()
        };
        q.enqueue(&old).expect("enqueue");
        let claimed = q.claim("w0", ago).expect("claim").expect("old");
        q.complete(&retryq::Completion::new(&claimed.lease, Outcome::Ok, ago, 0.0))
            .expect("done ten minutes ago");
        enqueue(&mut q, "new", 1, 60_000);
        let retain = Config { retain: Some(Duration::from_secs(60)), ..config() };
        let summary = work(&mut q, &retain, &mut scripted(vec![]), &Stop::new()).expect("work");
        assert_eq!((summary.done, summary.pruned), (1, 1));
        assert!(matches!(q.lookup("old").expect("lookup"), Some(retryq::Lookup::Pruned(_))));
        assert_eq!(q.get("new").expect("get").expect("new").status, Status::Done, "ended just now: kept");
        let stats = q.stats(now_ms().expect("clock")).expect("stats");
        assert_eq!((stats.done, stats.pruned_done), (1, 1));
        // Without retention nothing is pruned.
        let mut q = Queue::open_in_memory().expect("queue");
        q.enqueue(&old).expect("enqueue");
        let claimed = q.claim("w0", ago).expect("claim").expect("old");
        q.complete(&retryq::Completion::new(&claimed.lease, Outcome::Ok, ago, 0.0)).expect("done");
        enqueue(&mut q, "new", 1, 60_000);
        let summary = work(&mut q, &config(), &mut scripted(vec![]), &Stop::new()).expect("work");
        assert_eq!(summary.pruned, 0);
        assert_eq!(q.get("old").expect("get").expect("kept").status, Status::Done);
    }

    #[test]
    fn runs_until_idle_through_retries_and_outcomes() {
        let mut q = Queue::open_in_memory().expect("queue");
        // b first: a's retry (no backoff) can then only come after b, even within one ms.
        enqueue(&mut q, "b", 3, 60_000);
        enqueue(&mut q, "a", 3, 60_000);
        let mut t = scripted(vec![
            Ok(Report::with_error(Outcome::Permanent, "exit 65")), // b#1
            Ok(Report::with_error(Outcome::Retryable, "exit 75")), // a#1
            Ok(Report::from(Outcome::Ok)),                         // a#2
        ]);
        let summary = work(&mut q, &config(), &mut t, &Stop::new()).expect("work");
        assert_eq!(
            counts(&summary),
            Summary { attempts: 3, done: 1, retried: 1, dead: 1, ..Summary::default() }
        );
        assert_eq!(summary.writes, 6, "three claims and three commits, one attempt at a time");
        let asked: Vec<(&str, u64)> = t.asked.iter().map(|(id, n, _)| (id.as_str(), *n)).collect();
        assert_eq!(asked, [("b", 1), ("a", 1), ("a", 2)]);
        let b = q.get("b").expect("get").expect("b");
        assert_eq!((b.status, b.last_error.as_deref()), (Status::Dead, Some("exit 65")));
        assert_eq!(q.get("a").expect("get").expect("a").status, Status::Done);
    }

    #[test]
    fn the_timeout_is_cut_to_the_deadline() {
        let mut q = Queue::open_in_memory().expect("queue");
        enqueue(&mut q, "soon", 3, 2_000);
        let mut t = scripted(vec![]);
        work(&mut q, &config(), &mut t, &Stop::new()).expect("work");
        let timeout = t.asked[0].2;
        assert!(
            timeout <= Duration::from_millis(2_000) && timeout > Duration::from_millis(1_000),
            "{timeout:?}"
        );
    }

    #[test]
    fn an_unclassified_error_leaves_the_job_leased_with_a_note() {
        let mut q = Queue::open_in_memory().expect("queue");
        enqueue(&mut q, "a", 3, 60_000);
        let mut t = scripted(vec![Err(Unclassified("exit 3 (unclassified): boom".into()))]);
        let stop = Stop::new();
        let stopper = stop.clone();
        let handle = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            stopper.request();
        });
        // Until idle would wait for the lease (60 s): the stop ends it instead.
        let start = Instant::now();
        let summary = work(&mut q, &config(), &mut t, &stop).expect("work");
        handle.join().expect("stopper");
        assert!(start.elapsed() < Duration::from_secs(10));
        assert_eq!(counts(&summary), Summary { attempts: 1, unrecorded: 1, ..Summary::default() });
        let a = q.get("a").expect("get").expect("a");
        assert_eq!((a.status, a.attempts), (Status::Leased, 1));
        assert_eq!(a.last_error.as_deref(), Some("exit 3 (unclassified): boom"));
        assert_eq!(t.asked.len(), 1, "the leased job was not claimed again while its lease ran");
    }

    #[test]
    fn a_stop_requested_before_the_start_claims_nothing() {
        let mut q = Queue::open_in_memory().expect("queue");
        enqueue(&mut q, "a", 3, 60_000);
        let stop = Stop::new();
        stop.request();
        let summary = work(&mut q, &config(), &mut scripted(vec![]), &stop).expect("work");
        assert_eq!(summary, Summary::default());
        assert_eq!(q.get("a").expect("get").expect("a").attempts, 0);
    }

    /// The system clock, `offset` ms ahead once a test steps it.
    struct Stepped(Arc<AtomicU64>);

    impl Clock for Stepped {
        fn now_ms(&self) -> Result<u64, ClockError> {
            Ok(now_ms()? + self.0.load(Ordering::SeqCst))
        }
    }

    /// A clock whose n-th reading (from 1) is `f(n)`.
    struct ScriptedClock<F>(Counter, F);

    impl<F: Fn(u64) -> Result<u64, ClockError> + Send + Sync> Clock for ScriptedClock<F> {
        fn now_ms(&self) -> Result<u64, ClockError> {
            let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
            (self.1)(n)
        }
    }

    fn scripted_clock<F: Fn(u64) -> Result<u64, ClockError> + Sync>(f: F) -> ScriptedClock<F> {
        ScriptedClock(Counter::new(0), f)
    }

    /// A summary without its count of writes, which depends on how outcomes fell into
    /// commits.
    fn counts(summary: &Summary) -> Summary {
        Summary { writes: 0, rounds: 0, ..summary.clone() }
    }

    /// Waits (at most 10 s) until `path` holds a line starting with `prefix`; its last word.
    fn wait_for_line(path: &Path, prefix: &str) -> String {
        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            if let Some(line) = text.lines().find(|l| l.starts_with(prefix)) {
                return line.split_whitespace().last().unwrap_or_default().to_owned();
            }
            assert!(start.elapsed() < Duration::from_secs(10), "no {prefix:?} in {text:?}");
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Whether process `pid` runs (a zombie does not).
    fn running(pid: &str) -> bool {
        std::fs::read_to_string(Path::new("/proc").join(pid).join("stat"))
            .is_ok_and(|stat| !stat.split(") ").nth(1).is_some_and(|rest| rest.starts_with('Z')))
    }

    /// A command that logs its start (with its pid), sleeps 3 s, and logs its end.
    fn three_seconds(log: &Path) -> Exec {
        let log = log.display();
        Exec::new(format!(
            "echo start $RETRYQ_ATTEMPT $$ >> {log}; sleep 3; echo end $RETRYQ_ATTEMPT $$ >> {log}"
        ))
    }

    /// Lease 10 s, timeout 5 s, no backoff.
    fn ten_second_lease() -> Config {
        Config {
            settings: Settings { lease_ms: 10_000, base_ms: 0, cap_ms: 0, ..Settings::default() },
            timeout: Duration::from_secs(5),
            ..config()
        }
    }

    #[test]
    fn a_forward_step_past_the_lease_kills_the_attempt_at_once() {
        // The issue's case: lease 10 s, a 3 s command, the wall clock stepped 15 s forward
        // one second in. Another worker may claim at once; the first one's command must
        // go at its next look at the clock, not run on for 2 s beside the second attempt.
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("q.db");
        let log = dir.path().join("log");
        let mut other = Queue::open(&db).expect("queue");
        enqueue(&mut other, "a", 3, 600_000);
        let offset = Arc::new(AtomicU64::new(0));
        let w1 = {
            let (db, log, offset) = (db.clone(), log.clone(), Arc::clone(&offset));
            thread::spawn(move || {
                let mut q = Queue::open(&db).expect("queue");
                work_with_clock(
                    &mut q,
                    &ten_second_lease(),
                    &mut three_seconds(&log),
                    &Stop::new(),
                    &Stepped(offset),
                )
            })
        };
        let pid = wait_for_line(&log, "start 1 ");
        thread::sleep(Duration::from_secs(1));
        offset.store(15_000, Ordering::SeqCst);
        let stepped = || now_ms().expect("clock") + offset.load(Ordering::SeqCst);
        let claimed =
            other.claim("w2", stepped()).expect("claim").expect("the lease is over by the stepped clock");
        assert_eq!(claimed.attempt(), 2);
        let since = Instant::now();
        while running(&pid) {
            assert!(since.elapsed() < Duration::from_millis(500), "attempt 1 ran on beside attempt 2");
            thread::sleep(Duration::from_millis(5));
        }
        other
            .complete(&Completion::new(&Lease::new("w2", "a", 2), Outcome::Ok, stepped(), 0.0))
            .expect("complete");
        let summary = w1.join().expect("w1").expect("work");
        assert_eq!(
            counts(&summary),
            Summary { attempts: 1, unrecorded: 1, ..Summary::default() },
            "lease lost"
        );
        let log = std::fs::read_to_string(&log).expect("log");
        assert!(!log.contains("end 1"), "{log}");
        assert_eq!(other.get("a").expect("get").expect("a").status, Status::Done);
    }

    #[test]
    fn a_forward_step_short_of_the_lease_ends_the_attempt_before_anyone_may_claim() {
        // Stepped 8.5 s forward one second into a 10 s lease: the lease ends, for everyone,
        // half a second later. The attempt is stopped and recorded before then, so no other
        // claim can ever overlap it.
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("q.db");
        let log = dir.path().join("log");
        let mut q = Queue::open(&db).expect("queue");
        enqueue(&mut q, "a", 1, 600_000);
        let offset = Arc::new(AtomicU64::new(0));
        let stepper = {
            let (log, offset) = (log.clone(), Arc::clone(&offset));
            thread::spawn(move || {
                wait_for_line(&log, "start 1 ");
                thread::sleep(Duration::from_secs(1));
                offset.store(8_500, Ordering::SeqCst);
            })
        };
        let clock = Stepped(Arc::clone(&offset));
        let summary =
            work_with_clock(&mut q, &ten_second_lease(), &mut three_seconds(&log), &Stop::new(), &clock)
                .expect("work");
        stepper.join().expect("stepper");
        assert_eq!(
            counts(&summary),
            Summary { attempts: 1, dead: 1, ..Summary::default() },
            "recorded in its lease"
        );
        let a = q.get("a").expect("get").expect("a");
        assert_eq!((a.status, a.dead_reason), (Status::Dead, Some(retryq::DeadReason::Exhausted)));
        let error = a.last_error.expect("an error");
        assert!(error.contains("stopped after") && error.contains("wall clock"), "{error}");
        let history = q.history("a").expect("history");
        let lease_until = history[1].available_at.expect("the claim's lease");
        assert!(history[2].at < lease_until, "recorded at {} for a lease until {lease_until}", history[2].at);
        assert!(!std::fs::read_to_string(&log).expect("log").contains("end 1"));
    }

    #[test]
    fn the_lease_is_kept_on_the_monotonic_clock_whatever_the_wall_clock_says() {
        // The claim's reading of the wall clock comes 1.5 s before the claim (as when it
        // waits for the database's lock), and the wall clock then stands still: by it, the
        // whole 4 s lease is left. By the monotonic clock 1.5 s are gone, and the margin (a
        // quarter, 1 s) is kept: the attempt gets 1.5 s, not its 3 s timeout.
        let start = now_ms().expect("clock");
        let clock = scripted_clock(|n| {
            if n == 2 {
                thread::sleep(Duration::from_millis(1500));
            }
            Ok(start)
        });
        let mut q = Queue::open_in_memory().expect("queue");
        q.enqueue(&NewJob {
            id: "a",
            payload: "p",
            max_attempts: 1,
            deadline: start + 60_000,
            now: start - 1,
            ..NewJob::default()
        })
        .expect("enqueue");
        let c = Config {
            settings: Settings { lease_ms: 4_000, base_ms: 0, cap_ms: 0, ..Settings::default() },
            timeout: Duration::from_secs(3),
            ..config()
        };
        let mut t = scripted(vec![]);
        let summary = work_with_clock(&mut q, &c, &mut t, &Stop::new(), &clock).expect("work");
        assert_eq!(summary.done, 1);
        let given = t.asked[0].2;
        assert!(
            given <= Duration::from_millis(1500) && given > Duration::from_millis(1000),
            "the attempt was given {given:?}"
        );
    }

    #[test]
    fn a_clock_out_of_range_mid_attempt_is_said_to_be_the_clock() {
        // Past 2^53 - 1 ms after the claim: the outcome cannot be recorded. The loop stops
        // saying so, not that the store failed.
        let start = now_ms().expect("clock");
        let clock = scripted_clock(|n| if n <= 2 { Ok(start) } else { Err(ClockError::TooLate) });
        let mut q = Queue::open_in_memory().expect("queue");
        q.enqueue(&NewJob {
            id: "a",
            payload: "p",
            max_attempts: 3,
            deadline: start + 60_000,
            now: start - 1,
            ..NewJob::default()
        })
        .expect("enqueue");
        let err =
            work_with_clock(&mut q, &config(), &mut scripted(vec![]), &Stop::new(), &clock).unwrap_err();
        assert!(matches!(err, WorkError::Clock(ClockError::TooLate)), "{err:?}");
        assert!(err.to_string().contains("2^53-1"), "{err}");
        // The attempt is spent and the job waits for its lease, as after a crash.
        let a = q.get("a").expect("get").expect("a");
        assert_eq!((a.status, a.attempts), (Status::Leased, 1));
    }

    /// Lease 600 ms (a heartbeat every 200 ms), timeout 10 s, no backoff.
    fn short_lease() -> Config {
        Config {
            settings: Settings { lease_ms: 600, base_ms: 0, cap_ms: 0, ..Settings::default() },
            timeout: Duration::from_secs(10),
            ..config()
        }
    }

    #[test]
    fn an_attempt_longer_than_its_lease_keeps_it_by_heartbeats() {
        // 1.5 s of command under a 600 ms lease: renewed every 200 ms, never lost, and the
        // outcome recorded as the claim's attempt.
        let dir = tempfile::tempdir().expect("tempdir");
        let mut q = Queue::open(dir.path().join("q.db")).expect("queue");
        enqueue(&mut q, "a", 1, 600_000);
        let summary = work(&mut q, &short_lease(), &mut Exec::new("sleep 1.5"), &Stop::new()).expect("work");
        assert_eq!(counts(&summary), Summary { attempts: 1, done: 1, ..Summary::default() });
        let history = q.history("a").expect("history");
        let claim = history.iter().find(|h| h.to == Status::Leased).expect("claim");
        let renewals: Vec<u64> = history
            .iter()
            .filter(|h| h.from == Some(Status::Leased) && h.to == Status::Leased)
            .map(|h| h.available_at.expect("an expiry"))
            .collect();
        assert!(renewals.len() >= 3, "{renewals:?}");
        assert!(renewals.windows(2).all(|w| w[0] < w[1]), "each heartbeat moves the lease: {renewals:?}");
        let recorded = history.last().expect("entries");
        assert_eq!((recorded.to, recorded.attempt), (Status::Done, 1));
        let first_lease = claim.available_at.expect("the claim's expiry");
        assert!(
            recorded.at > first_lease,
            "recorded at {} within the first lease {first_lease}",
            recorded.at
        );
        assert!(summary.writes >= 2 + 3, "the claim, the heartbeats and the commit: {}", summary.writes);
    }

    #[test]
    fn a_refused_heartbeat_stops_the_command_and_records_nothing() {
        // Another worker whose clock is 6 s ahead sees the lease over and claims attempt 2.
        // The first worker's next heartbeat is refused (lease_lost): its command is killed
        // within a heartbeat and a look at the window, and its outcome is not recorded.
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("q.db");
        let log = dir.path().join("log");
        let mut other = Queue::open(&db).expect("queue");
        enqueue(&mut other, "a", 3, 600_000);
        let w1 = {
            let (db, log) = (db.clone(), log.clone());
            thread::spawn(move || {
                let mut q = Queue::open(&db).expect("queue");
                work(&mut q, &short_lease(), &mut three_seconds(&log), &Stop::new())
            })
        };
        let pid = wait_for_line(&log, "start 1 ");
        let ahead = || now_ms().expect("clock") + 6_000;
        let claimed = other.claim("w2", ahead()).expect("claim").expect("the lease is over 6 s ahead");
        assert_eq!(claimed.attempt(), 2);
        let since = Instant::now();
        while running(&pid) {
            assert!(
                since.elapsed() < Duration::from_secs(1),
                "attempt 1 ran on after its heartbeat was refused"
            );
            thread::sleep(Duration::from_millis(5));
        }
        let history = other.history("a").expect("history").len();
        other
            .complete(&Completion::new(&Lease::new("w2", "a", 2), Outcome::Ok, ahead(), 0.0))
            .expect("complete");
        let summary = w1.join().expect("w1").expect("work");
        assert_eq!(counts(&summary), Summary { attempts: 1, abandoned: 1, ..Summary::default() });
        assert!(!std::fs::read_to_string(&log).expect("log").contains("end 1"));
        let entries = other.history("a").expect("history");
        assert_eq!(entries.len(), history + 1, "nothing of attempt 1 after w2's claim: {entries:?}");
        assert_eq!(other.get("a").expect("get").expect("a").status, Status::Done);
    }

    #[test]
    fn nothing_due_sleeps_until_the_retry_then_runs_it() {
        let mut q = Queue::open_in_memory().expect("queue");
        enqueue(&mut q, "a", 3, 60_000);
        let c = Config {
            settings: Settings { lease_ms: 60_000, base_ms: 400, cap_ms: 400, ..Settings::default() },
            ..config()
        };
        let mut t = scripted(vec![Ok(Report::from(Outcome::Retryable))]);
        let start = Instant::now();
        let summary = work(&mut q, &c, &mut t, &Stop::new()).expect("work");
        assert_eq!((summary.retried, summary.done), (1, 1));
        // The jitter is random: the retry came after 0 to 400 ms, and was not missed.
        assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    }

    /// `tick`, every hour.
    fn hourly() -> crate::Periodic {
        crate::Periodic::new("tick", crate::Every::interval(Duration::from_secs(3600)).expect("1h"))
            .expect("periodic")
    }

    #[test]
    fn a_periodic_job_is_enqueued_once_for_the_period_under_way_at_each_start() {
        // The worker's clock 10 s into an hour; each run (until idle) is a restart.
        const HOUR: u64 = 3_600_000;
        let real = now_ms().expect("clock");
        let first = (real / HOUR + 1) * HOUR;
        let offset = Arc::new(AtomicU64::new(first + 10_000 - real));
        let clock = Stepped(Arc::clone(&offset));
        let id = |start: u64| crate::Periodic::period_at(&hourly(), start).expect("period").id;
        let mut q = Queue::open_in_memory().expect("queue");
        let c = Config {
            periodic: vec![hourly().with_max_attempts(2).expect("attempts")],
            queues: vec!["cron".into(), "default".into()],
            ..config()
        };
        let run = |q: &mut Queue| work_with_clock(q, &c, &mut scripted(vec![]), &Stop::new(), &clock);
        let summary = run(&mut q).expect("work");
        assert_eq!((summary.enqueued, summary.done), (1, 1));
        let job = q.get(&id(first)).expect("get").expect("the period under way at start");
        assert_eq!((job.status, job.max_attempts, job.deadline), (Status::Done, 2, first + HOUR));
        assert_eq!((job.queue.as_str(), job.not_before), ("cron", job.enqueued_at), "due at once");
        // Started again in the same period: its job is there already, and is not run again.
        let summary = run(&mut q).expect("work");
        assert_eq!((summary.enqueued, summary.attempts), (0, 0));
        // Stopped during one period, started during the next: that one is enqueued.
        offset.fetch_add(HOUR, Ordering::SeqCst);
        assert_eq!(run(&mut q).expect("work").enqueued, 1);
        assert_eq!(q.get(&id(first + HOUR)).expect("get").map(|j| j.status), Some(Status::Done));
        // Down for three periods: the one under way at start is enqueued, the two that began
        // and ended while no worker ran are not (no backlog).
        offset.fetch_add(3 * HOUR, Ordering::SeqCst);
        assert_eq!(run(&mut q).expect("work").enqueued, 1);
        assert!(q.get(&id(first + 4 * HOUR)).expect("get").is_some());
        for missed in [2, 3] {
            assert_eq!(q.get(&id(first + missed * HOUR)).expect("get"), None, "period {missed}");
        }
        // Another payload under the next period's id (a worker configured differently): the
        // conflict is logged, and neither stops the worker nor changes the job.
        let next = id(first + 5 * HOUR);
        q.enqueue(&NewJob {
            id: &next,
            payload: "other",
            max_attempts: 1,
            deadline: first + 6 * HOUR,
            now: first + 5 * HOUR - 1_000,
            ..NewJob::default()
        })
        .expect("enqueue");
        offset.fetch_add(HOUR, Ordering::SeqCst);
        let summary = run(&mut q).expect("work");
        assert_eq!(summary.enqueued, 0);
        let job = q.get(&next).expect("get").expect("kept");
        assert_eq!((job.payload.as_str(), job.max_attempts, job.queue.as_str()), ("other", 1, "default"));
    }

    #[test]
    fn each_period_that_begins_while_the_worker_runs_is_enqueued() {
        let tick = crate::Periodic::new("tick", crate::Every::interval(Duration::from_secs(1)).expect("1s"))
            .expect("periodic");
        let c = Config { periodic: vec![tick.clone()], until_idle: false, ..config() };
        let mut q = Queue::open_in_memory().expect("queue");
        let stop = Stop::new();
        let (start, summary) = thread::scope(|scope| {
            let stopper = scope.spawn(|| {
                thread::sleep(Duration::from_millis(3_500));
                stop.request();
            });
            let start = now_ms().expect("clock");
            let summary = work(&mut q, &c, &mut scripted(vec![]), &stop).expect("work");
            stopper.join().expect("stopper");
            (start, summary)
        });
        let end = now_ms().expect("clock");
        // Every second of the run has its job, whatever the machine's load did to the loop.
        let expected: Vec<String> =
            (start / 1000..=end / 1000).map(|s| tick.period_at(s * 1000).expect("period").id).collect();
        let got: Vec<usize> =
            (0..expected.len()).filter(|&n| q.get(&expected[n]).expect("get").is_some()).collect();
        // The first and the last second may have begun before the worker's first look or as
        // the stop was asked for; none between them is missing.
        assert!(got.windows(2).all(|w| w[1] == w[0] + 1), "{got:?} of {expected:?}");
        assert!(got.len() + 2 >= expected.len() && got.len() >= 3, "{got:?} of {expected:?}");
        assert_eq!(summary.enqueued, got.len() as u64);
    }
}
