//! The loop: `run_once` forever, with the system clock and a fresh random jitter each time.
//!
//! Each turn claims the next due job, sends it through the transport with a timeout of
//! `min(timeout, deadline − now)`, and records the outcome — then goes straight on, since
//! more may be due. When nothing is due it sleeps until the earliest reservation or lease
//! expiry ([`Queue::next_due`]), at most [`Config::max_sleep`] so that new jobs are seen,
//! and never less than a millisecond, so that it never spins.

use std::time::Duration;

use rand::RngExt;
use retryq::{Claimed, Error, ErrorKind, Queue, Ran, RunError, Settings};
use tracing::{debug, error, info, warn};

use crate::clock::now_ms;
use crate::stop::Stop;
use crate::transport::{Transport, Unclassified};

/// How a worker runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The name its leases are held under (1–256 bytes).
    pub worker: String,
    /// Lease, backoff base and cap, as the queue takes them.
    pub settings: Settings,
    /// The longest an attempt may run. Shorter than the lease, so that the lease outlives
    /// every attempt, with time to kill the command and record the outcome.
    pub timeout: Duration,
    /// Return once no job is pending or leased.
    pub until_idle: bool,
    /// The longest sleep when nothing is due: how soon a newly enqueued job is seen.
    pub max_sleep: Duration,
}

impl Config {
    /// The defaults for `worker`: SPEC section 5's lease (30 s) and backoff (100 ms doubling
    /// up to 1 s), a 20 s timeout, one-second sleeps.
    pub fn new(worker: impl Into<String>) -> Config {
        Config {
            worker: worker.into(),
            settings: Settings::default(),
            timeout: Duration::from_secs(20),
            until_idle: false,
            max_sleep: Duration::from_secs(1),
        }
    }

    /// Refuses a configuration the loop cannot run safely, saying why.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.settings.validate().map_err(ConfigError::Settings)?;
        if self.worker.is_empty() || self.worker.len() > retryq::MAX_ID_BYTES {
            return Err(ConfigError::Worker { bytes: self.worker.len() });
        }
        if self.timeout.is_zero() {
            return Err(ConfigError::ZeroTimeout);
        }
        let lease = Duration::from_millis(self.settings.lease_ms);
        if lease <= self.timeout {
            return Err(ConfigError::LeaseNotLonger {
                lease_ms: self.settings.lease_ms,
                timeout_ms: self.timeout.as_millis(),
            });
        }
        if self.max_sleep.is_zero() {
            return Err(ConfigError::ZeroSleep);
        }
        Ok(())
    }
}

/// A [`Config`] the loop refuses to start with.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Settings(retryq::Error),
    #[error("worker: the name must be 1 to 256 bytes, not {bytes}")]
    Worker { bytes: usize },
    #[error("timeout: must be at least 1 ms")]
    ZeroTimeout,
    #[error(
        "lease: {lease_ms} ms is not longer than the timeout of {timeout_ms} ms; an attempt could \
         outlive its lease, and another worker would claim the job while the command still runs"
    )]
    LeaseNotLonger { lease_ms: u64, timeout_ms: u128 },
    #[error("max_sleep: must be at least 1 ms")]
    ZeroSleep,
}

/// Why the loop gave up.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store cannot be used (not a passing lock or a full disk, which the loop waits
    /// out): the job under way, if any, stays leased.
    #[error(transparent)]
    Queue(Error),
    #[error(transparent)]
    Clock(#[from] crate::clock::ClockError),
}

/// What a loop did, when it returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Attempts started (claims), whatever came of them.
    pub attempts: u64,
    pub done: u64,
    pub retried: u64,
    pub dead: u64,
    /// Attempts whose result was not recorded: unclassified, the clock went back, the lease
    /// was lost, or the store failed while recording.
    pub unrecorded: u64,
}

/// Runs `queue` with `transport` until `stop` is requested (the attempt under way is
/// finished and recorded first) or, with [`Config::until_idle`], until no job is pending or
/// leased.
///
/// Refusals the SPEC defines for one attempt (a lost lease, the clock going back, an
/// unclassified error) are logged and the loop goes on; so does a busy or full database,
/// after a pause. Any other storage failure ends the loop with [`WorkError::Queue`].
pub fn work(
    queue: &mut Queue,
    config: &Config,
    transport: &mut impl Transport,
    stop: &Stop,
) -> Result<Summary, WorkError> {
    config.validate()?;
    queue.set_settings(config.settings).map_err(|e| WorkError::Config(ConfigError::Settings(e)))?;
    now_ms()?;
    let worker = config.worker.as_str();
    let mut rng = rand::rng();
    let mut summary = Summary::default();
    info!(
        worker,
        db = %queue.path().display(),
        lease_ms = config.settings.lease_ms,
        timeout_ms = config.timeout.as_millis() as u64,
        "worker started"
    );
    while !stop.requested() {
        let jitter: f64 = rng.random();
        // Filled in by the transport: what the log line needs of the attempt.
        let mut claimed: Option<u64> = None;
        let mut said = String::new();
        let send = |job: &Claimed| {
            claimed = Some(job.lease_until);
            let left = job.deadline.saturating_sub(clock());
            let timeout = config.timeout.min(Duration::from_millis(left));
            debug!(job = %job.id, attempt = job.attempt, timeout_ms = timeout.as_millis() as u64, "sending");
            let answer = transport.attempt(job, timeout);
            if let Ok(report) = &answer {
                said = report.error.clone().unwrap_or_default();
            }
            answer
        };
        let ran = queue.run_once_with(worker, clock, send, jitter);
        if claimed.is_some() {
            summary.attempts += 1;
        }
        match ran {
            Ok(Ran::Idle) => {
                if idle(queue, config, stop)? {
                    break;
                }
            }
            Ok(Ran::Done { id, attempt }) => {
                summary.done += 1;
                info!(job = %id, attempt, outcome = "done", "attempt");
            }
            Ok(Ran::Retry { id, attempt, available_at }) => {
                summary.retried += 1;
                info!(job = %id, attempt, outcome = "retry", next_at = available_at, error = said, "attempt");
            }
            Ok(Ran::Dead { id, attempt, reason }) => {
                summary.dead += 1;
                warn!(job = %id, attempt, outcome = "dead", reason = %reason, error = said, "attempt");
            }
            Err(RunError::Unclassified { id, attempt, error: Unclassified(error) }) => {
                summary.unrecorded += 1;
                warn!(
                    job = %id, attempt, outcome = "unclassified", next_at = claimed, error,
                    "attempt; the job waits for its lease to expire"
                );
                match queue.record_error(worker, &id, attempt, &error, None) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::Storage => pause_or_fail(e, stop, config)?,
                    Err(e) => debug!(job = %id, attempt, error = %e, "error not noted"),
                }
            }
            Err(RunError::ClockWentBackwards { id, attempt, before, after }) => {
                summary.unrecorded += 1;
                warn!(
                    job = %id, attempt, outcome = "clock_went_backwards", before, after,
                    next_at = claimed,
                    "attempt not recorded: the system clock went back during it"
                );
            }
            Err(RunError::Queue(e)) => {
                if claimed.is_some() {
                    summary.unrecorded += 1;
                }
                match &e {
                    Error::LeaseLost { id, attempt, .. } => warn!(
                        job = %id, attempt, outcome = "lease_lost",
                        "attempt not recorded: the lease expired and the job was claimed again or reaped"
                    ),
                    Error::ClockWentBackwards { .. } => {
                        warn!(error = %e, outcome = "clock_went_backwards", "attempt not recorded")
                    }
                    _ => pause_or_fail(e, stop, config)?,
                }
            }
        }
    }
    info!(
        worker,
        attempts = summary.attempts,
        done = summary.done,
        retried = summary.retried,
        dead = summary.dead,
        unrecorded = summary.unrecorded,
        "worker stopped"
    );
    Ok(summary)
}

/// The system clock as the queue reads it. A clock the queue cannot use (before 1970, or
/// past 2^53 − 1) reads as a value the queue refuses, so nothing is claimed by it.
fn clock() -> u64 {
    now_ms().unwrap_or(u64::MAX)
}

/// Nothing was due: returns true to end the loop (until idle, and nothing open), otherwise
/// sleeps until the next job is due.
fn idle(queue: &mut Queue, config: &Config, stop: &Stop) -> Result<bool, WorkError> {
    let next = match queue.next_due() {
        Ok(next) => next,
        Err(e) => {
            pause_or_fail(e, stop, config)?;
            return Ok(false);
        }
    };
    if next.is_none() && config.until_idle {
        info!("idle: no job is pending or leased");
        return Ok(true);
    }
    let now = now_ms()?;
    let wait = next.map_or(config.max_sleep, |at| Duration::from_millis(at.saturating_sub(now)));
    stop.sleep(wait.clamp(Duration::from_millis(1), config.max_sleep));
    Ok(false)
}

/// A busy or full database is waited out (and logged); any other storage failure ends the
/// loop.
fn pause_or_fail(e: Error, stop: &Stop, config: &Config) -> Result<(), WorkError> {
    if !e.is_transient() {
        error!(error = %e, "the store failed; stopping");
        return Err(WorkError::Queue(e));
    }
    error!(error = %e, "the store is busy or full; trying again shortly");
    stop.sleep(config.max_sleep);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::time::Instant;

    use retryq::{NewJob, Outcome, Report, Status};

    use super::*;

    /// A transport that answers from a script and remembers what it was asked.
    struct Scripted {
        answers: VecDeque<Result<Report, Unclassified>>,
        asked: Vec<(String, u64, Duration)>,
    }

    impl Transport for Scripted {
        fn attempt(&mut self, job: &Claimed, timeout: Duration) -> Result<Report, Unclassified> {
            self.asked.push((job.id.clone(), job.attempt, timeout));
            self.answers.pop_front().unwrap_or(Ok(Report::from(Outcome::Ok)))
        }
    }

    fn scripted(answers: Vec<Result<Report, Unclassified>>) -> Scripted {
        Scripted { answers: answers.into(), asked: Vec::new() }
    }

    fn config() -> Config {
        Config {
            settings: Settings { lease_ms: 60_000, base_ms: 0, cap_ms: 0 },
            timeout: Duration::from_secs(10),
            until_idle: true,
            max_sleep: Duration::from_millis(50),
            ..Config::new("w1")
        }
    }

    fn enqueue(q: &mut Queue, id: &str, max_attempts: u64, ttl_ms: u64) {
        let now = now_ms().expect("clock");
        q.enqueue(&NewJob { id, payload: "p", max_attempts, deadline: now + ttl_ms, now }).expect("enqueue");
    }

    #[test]
    fn the_lease_must_outlive_the_timeout() {
        let c = Config { timeout: Duration::from_millis(60_000), ..config() };
        let err = c.validate().unwrap_err();
        assert!(matches!(err, ConfigError::LeaseNotLonger { lease_ms: 60_000, timeout_ms: 60_000 }), "{err}");
        assert!(err.to_string().contains("not longer than the timeout"), "{err}");
        assert!(Config { timeout: Duration::from_millis(59_999), ..config() }.validate().is_ok());
        assert!(matches!(
            Config { worker: String::new(), ..config() }.validate(),
            Err(ConfigError::Worker { .. })
        ));
        let mut q = Queue::open_in_memory().expect("queue");
        let err = work(&mut q, &c, &mut scripted(vec![]), &Stop::new()).unwrap_err();
        assert!(matches!(err, WorkError::Config(ConfigError::LeaseNotLonger { .. })), "{err}");
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
        assert_eq!(summary, Summary { attempts: 3, done: 1, retried: 1, dead: 1, unrecorded: 0 });
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
        assert_eq!(summary, Summary { attempts: 1, unrecorded: 1, ..Summary::default() });
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

    #[test]
    fn nothing_due_sleeps_until_the_retry_then_runs_it() {
        let mut q = Queue::open_in_memory().expect("queue");
        enqueue(&mut q, "a", 3, 60_000);
        let c = Config { settings: Settings { lease_ms: 60_000, base_ms: 400, cap_ms: 400 }, ..config() };
        let mut t = scripted(vec![Ok(Report::from(Outcome::Retryable))]);
        let start = Instant::now();
        let summary = work(&mut q, &c, &mut t, &Stop::new()).expect("work");
        assert_eq!((summary.retried, summary.done), (1, 1));
        // The jitter is random: the retry came after 0 to 400 ms, and was not missed.
        assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    }
}
