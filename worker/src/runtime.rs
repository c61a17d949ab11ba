//! The worker runtime an application calls: a [`Worker`] runs a handler — a closure, or an
//! async fn on the application's tokio runtime — over a store, with the same engine as the
//! `retryq work` binary ([`work_in_slots`]): claims in batches, attempts in parallel, each
//! bounded by its [`Window`](crate::Window), leases renewed while a handler runs, outcomes
//! committed in groups, and a graceful stop on a [`Stop`] the application holds.
//!
//! The handler is a transport like the binary's exec and HTTP ones: what it answers is
//! recorded exactly as theirs is ([`crate::handler`] says how errors and panics read).

use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use retryq::{BackendMut, Claimed, Outcome, Report, Settings};
use tracing::field::Empty;

use crate::config::{Config, ConfigError};
use crate::handler::{self, Attempt, JobError};
use crate::identity::process_name;
use crate::outcome::{Summary, WorkError};
use crate::stop::Stop;
use crate::transport::{Transport, Unclassified};
use crate::window::Window;
use crate::work::work_in_slots;

/// How an application runs its jobs: a name, how many attempts at once, and the lease,
/// backoff and timeout every attempt runs with; then [`Worker::run`] with a handler.
///
/// The defaults are the binary's: one attempt at a time, SPEC section 5's lease (30 s,
/// renewed every 10 s while a handler runs) and backoff (100 ms doubling up to 1 s), a
/// 20 s timeout per attempt, and the store's clock and jitter ([`retryq::Backend::clock`]: by default
/// PostgreSQL's clock on PostgreSQL, this host's on SQLite, and a uniform jitter). A handler's
/// error means "retry" ([`JobError`]).
///
/// ```
/// use retryq::{Enqueue, Queue};
/// use retryq_worker::{Attempt, JobError, Stop, Worker};
///
/// let mut queue = Queue::open_in_memory()?;
/// queue.enqueue(&Enqueue::new("order-1", "42").max_attempts(3))?;
/// let worker = Worker::new("mailer")?.concurrency(4).until_idle();
/// let summary = worker.run(&mut queue, &Stop::new(), |attempt: &Attempt| {
///     let total: u32 = attempt.payload().parse()?; // a bad payload: retried, then dead
///     assert_eq!(total, 42);
///     Ok(())
/// })?;
/// assert_eq!(summary.done, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Worker {
    config: Config,
    concurrency: usize,
}

impl Worker {
    /// A worker whose leases are held under `name` made unique to this process
    /// ([`process_name`]), with the defaults above.
    pub fn new(name: &str) -> Result<Worker, ConfigError> {
        Ok(Worker { config: Config::new(process_name(name)?), concurrency: 1 })
    }

    /// A worker that runs as `config` says (its `worker` name as given), or why it cannot
    /// ([`Config::validate`]), as [`Worker::new`] answers for a bad name.
    pub fn with_config(config: Config) -> Result<Worker, ConfigError> {
        config.validate()?;
        Ok(Worker { config, concurrency: 1 })
    }

    /// How many attempts run at once (each on a thread of its own; at least 1).
    pub fn concurrency(self, attempts: usize) -> Worker {
        Worker { concurrency: attempts, ..self }
    }

    /// The lease every claim takes (at least [`MIN_LEASE`](crate::MIN_LEASE)), renewed
    /// every third of it while a handler runs.
    pub fn lease(mut self, lease: Duration) -> Worker {
        self.config.settings.lease_ms = millis(lease);
        self
    }

    /// The queue's backoff: the first retry's window and the largest (SPEC section 2).
    pub fn backoff(mut self, base: Duration, cap: Duration) -> Worker {
        self.config.settings =
            Settings { base_ms: millis(base), cap_ms: millis(cap), ..self.config.settings };
        self
    }

    /// The longest one attempt may run (cut to the job's deadline).
    pub fn timeout(mut self, timeout: Duration) -> Worker {
        self.config.timeout = timeout;
        self
    }

    /// Return once no job of the queues it serves is pending or leased, instead of waiting
    /// for more; jobs of other queues do not keep it running.
    pub fn until_idle(mut self) -> Worker {
        self.config.until_idle = true;
        self
    }

    /// What the worker runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Runs `handler` on every job `store` hands out, until `stop` is requested (or, with
    /// [`Worker::until_idle`], the queue is idle).
    ///
    /// A first [`Stop::request`] claims nothing more, lets the handlers running finish and
    /// records what they answer, then returns. A second returns as soon as the running
    /// handlers return, recording nothing of them: their jobs wait out their leases, as
    /// after a crash. A handler that may run long should watch [`Attempt::time_left`].
    ///
    /// `store` is any store, the `Box<dyn Backend>` [`retryq::open_backend`] returns, or a
    /// `&mut dyn Backend` ([`BackendMut`]).
    pub fn run<S, F>(&self, store: &mut S, stop: &Stop, handler: F) -> Result<Summary, WorkError>
    where
        S: BackendMut + ?Sized,
        F: Fn(&Attempt) -> Result<(), JobError> + Sync,
    {
        let store = store.backend_mut();
        let mut slots: Vec<Handled<'_, F>> = (0..self.concurrency)
            .map(|_| Handled { handler: &handler, worker: &self.config.worker })
            .collect();
        let clock = store.clock();
        work_in_slots(store, &self.config, &mut slots, stop, &*clock)
    }

    /// [`Worker::run`] for an async handler, on the tokio runtime this is awaited on: each
    /// attempt is a task of its own, dropped when its window closes (its timeout, the job's
    /// deadline, its lease less the margin, a refused renewal) or on a second stop. The
    /// store and its transactions stay on threads of their own, off the runtime.
    #[cfg(feature = "tokio")]
    pub async fn run_async<F, Fut>(
        self,
        store: impl Into<Box<dyn retryq::Backend>>,
        stop: Stop,
        handler: F,
    ) -> Result<Summary, WorkError>
    where
        F: Fn(Attempt) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<(), JobError>> + Send + 'static,
    {
        let mut store = store.into();
        let handle = tokio::runtime::Handle::current();
        let handler = std::sync::Arc::new(handler);
        let ran = tokio::task::spawn_blocking(move || {
            let mut slots: Vec<_> = (0..self.concurrency)
                .map(|_| asynch::Tasks {
                    handle: handle.clone(),
                    handler: std::sync::Arc::clone(&handler),
                    worker: self.config.worker.clone(),
                    stop: stop.clone(),
                })
                .collect();
            let clock = store.clock();
            work_in_slots(&mut *store, &self.config, &mut slots, &stop, &*clock)
        });
        ran.await.map_err(|e| WorkError::Thread(std::io::Error::other(e)))?
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A synchronous handler as a transport: one per slot, each borrowing the one handler.
struct Handled<'h, F> {
    handler: &'h F,
    worker: &'h str,
}

impl<F> Transport for Handled<'_, F>
where
    F: Fn(&Attempt) -> Result<(), JobError> + Sync,
{
    fn attempt(&mut self, job: &Claimed, window: &Window<'_>) -> Result<Report, Unclassified> {
        if let Some(late) = not_started(window) {
            return Ok(late);
        }
        let attempt = Attempt::new(job, window);
        let span = span(&attempt, self.worker);
        let _entered = span.enter();
        let started = Instant::now();
        let report = match panic::catch_unwind(AssertUnwindSafe(|| (self.handler)(&attempt))) {
            Ok(answer) => handler::report(answer),
            Err(payload) => handler::panicked(&*payload),
        };
        Ok(finish(&span, report, started))
    }
}

/// The report of an attempt that had no time left to start.
fn not_started(window: &Window<'_>) -> Option<Report> {
    let (left, cut) = window.left();
    left.is_zero()
        .then(|| Report::with_error(Outcome::Retryable, format!("not started: no time left ({cut})")))
}

/// The attempt's span: what an application's subscriber (an OpenTelemetry one included) sees
/// of it. `outcome` and `duration_ms` are filled in when the handler has answered.
fn span(attempt: &Attempt, worker: &str) -> tracing::Span {
    tracing::info_span!(
        "attempt",
        job = attempt.id(),
        attempt = attempt.number(),
        worker,
        outcome = Empty,
        error = Empty,
        duration_ms = Empty,
    )
}

/// Fills in the span's outcome and duration, and logs the handler's answer inside it.
fn finish(span: &tracing::Span, report: Report, started: Instant) -> Report {
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    span.record("outcome", report.outcome.as_str());
    span.record("duration_ms", duration_ms);
    if let Some(error) = &report.error {
        span.record("error", error.as_str());
    }
    tracing::debug!(parent: span, outcome = report.outcome.as_str(), duration_ms, "handler answered");
    report
}

#[cfg(feature = "tokio")]
/// The report of an attempt cut at `cut` after `ms` milliseconds: retried, as the exec
/// transport's is (a refused renewal is not recorded at all: the engine drops it).
fn cut_short(cut: crate::window::Cut, ms: u128) -> Report {
    Report::with_error(Outcome::Retryable, format!("stopped after {ms} ms at {cut}; the handler was dropped"))
}

#[cfg(feature = "tokio")]
mod asynch {
    use std::sync::Arc;
    use std::time::Instant;

    use retryq::{Claimed, Report};
    use tracing::Instrument;

    use super::{
        Attempt, JobError, Stop, Transport, Unclassified, Window, cut_short, finish, handler, not_started,
        span,
    };
    use crate::window::POLL;

    /// An async handler as a transport: each attempt a task on the application's runtime,
    /// watched from the slot's thread.
    pub(super) struct Tasks<F> {
        pub(super) handle: tokio::runtime::Handle,
        pub(super) handler: Arc<F>,
        pub(super) worker: String,
        pub(super) stop: Stop,
    }

    impl<F, Fut> Transport for Tasks<F>
    where
        F: Fn(Attempt) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<(), JobError>> + Send + 'static,
    {
        fn attempt(&mut self, job: &Claimed, window: &Window<'_>) -> Result<Report, Unclassified> {
            if let Some(late) = not_started(window) {
                return Ok(late);
            }
            let attempt = Attempt::new(job, window);
            let span = span(&attempt, &self.worker);
            let started = Instant::now();
            let mut task = self.handle.spawn((self.handler)(attempt).instrument(span.clone()));
            let report = self.handle.block_on(async {
                loop {
                    let (left, cut) = window.left();
                    if left.is_zero() || self.stop.leaving() {
                        task.abort();
                        return cut_short(cut, started.elapsed().as_millis());
                    }
                    tokio::select! {
                        joined = &mut task => return match joined {
                            Ok(answer) => handler::report(answer),
                            Err(e) => match e.try_into_panic() {
                                Ok(payload) => handler::panicked(&*payload),
                                Err(e) => Report::with_error(retryq::Outcome::Retryable, format!("the handler's task ended: {e}")),
                            },
                        },
                        () = tokio::time::sleep(left.min(POLL)) => {}
                    }
                }
            });
            Ok(finish(&span, report, started))
        }
    }
}
