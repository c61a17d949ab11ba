//! How an attempt is sent: the one thing the loop does not know.

use std::time::Duration;

use retryq::{Claimed, Report};

use crate::window::Window;

/// Sends one attempt of a claimed job and says what came of it.
///
/// The loop holds the lease (renewing it while the attempt runs) and records the answer;
/// the transport only sends. It must give up when its [`Window`] closes (the timeout, the
/// job's deadline, the lease's end less the margin by either clock, or a refused renewal),
/// looking at it at least every [`POLL`](crate::POLL), and return within
/// [`Transport::grace`] after that, so that no attempt outlives its lease or starts past the
/// deadline.
///
/// That bound holds only while the worker runs: a transport's work lives in the worker's
/// process (the HTTP transport's request is given up with it), so a worker that is killed
/// ends it, but a worker that is stopped or frozen cannot stop it. Whatever a transport
/// starts outside the worker's process — a child process, a remote job — must be bounded by
/// something that does not depend on the worker: [`Exec`](crate::Exec) runs each command
/// beside a watchdog ([`Trampoline`](crate::Trampoline)) that keeps the lease from
/// [`Window::lease`]; a transport of your own must do the like (kill its children when the
/// window closes, hand a remote side the lease's end as a deadline), or its receiver must
/// drop duplicates by the job's id.
///
/// ```
/// use std::collections::HashSet;
///
/// use retryq::{Claimed, NewJob, Outcome, Queue, Report};
/// use retryq_worker::{Config, Stop, Transport, Unclassified, Window, now_ms, work};
///
/// /// Hands each payload to an in-process handler; the first attempt at each job fails, to show
/// /// the queue's retry doing its work.
/// struct Flaky {
///     seen: HashSet<String>,
///     delivered: Vec<String>,
/// }
///
/// impl Transport for Flaky {
///     fn attempt(&mut self, job: &Claimed, window: &Window<'_>) -> Result<Report, Unclassified> {
///         // Whatever the transport waits on must give up when the window closes: the lease
///         // has to outlive the attempt.
///         if window.left().0.is_zero() {
///             return Err(Unclassified("out of time".into()));
///         }
///         if self.seen.insert(job.id().to_owned()) {
///             return Ok(Report::with_error(Outcome::Retryable, "first try always fails"));
///         }
///         self.delivered.push(job.payload.clone());
///         Ok(Outcome::Ok.into())
///     }
/// }
///
/// let mut queue = Queue::open_in_memory()?;
/// let now = now_ms()?;
/// for id in ["a", "b"] {
///     queue.enqueue(&NewJob { id, payload: id, max_attempts: 3, deadline: now + 60_000, now, ..NewJob::default() })?;
/// }
/// let mut transport = Flaky { seen: HashSet::new(), delivered: Vec::new() };
/// let config = Config { until_idle: true, ..Config::new("w1") };
/// let summary = work(&mut queue, &config, &mut transport, &Stop::new())?;
/// assert_eq!((summary.attempts, summary.retried, summary.done), (4, 2, 2));
/// transport.delivered.sort();
/// assert_eq!(transport.delivered, ["a", "b"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Transport {
    /// One attempt of `job` within `window`: an outcome with notes for the operator (a
    /// [`Report`]), or an error the transport could not classify — after which the job waits
    /// for its lease to expire, as if the process had died.
    fn attempt(&mut self, job: &Claimed, window: &Window<'_>) -> Result<Report, Unclassified>;

    /// The longest the transport may take to return once its window has closed (to see its
    /// command gone and its output read). The worker counts it against the lease: when the
    /// lease is not renewed, it stops each attempt early enough to leave this and its margin
    /// (up to a quarter of the lease).
    fn grace(&self) -> Duration {
        Duration::ZERO
    }

    /// Why this transport cannot send any attempt at all, if its last attempt showed it: a
    /// fault of the worker's configuration, not of the job or the receiver (an `--exec`
    /// command that does not exist or cannot be executed), which every later attempt of every
    /// job would meet the same way, each spending an attempt of its budget for nothing.
    ///
    /// Asked by the slot after each attempt. The worker records that attempt's answer as
    /// usual, logs the reason as an error, claims nothing more, and once the attempts in
    /// flight are recorded ends with [`WorkError::Misconfigured`](crate::WorkError::Misconfigured).
    /// By default a transport is never unusable.
    fn unusable(&self) -> Option<String> {
        None
    }
}

/// An attempt's result that is neither success, nor worth retrying, nor permanent: the
/// SPEC's `unknown`. Its text is logged and noted on the job.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unclassified(pub String);

/// A boxed transport, so that a command line can pick one at run time.
impl<T: Transport + ?Sized> Transport for Box<T> {
    fn attempt(&mut self, job: &Claimed, window: &Window<'_>) -> Result<Report, Unclassified> {
        (**self).attempt(job, window)
    }

    fn grace(&self) -> Duration {
        (**self).grace()
    }

    fn unusable(&self) -> Option<String> {
        (**self).unusable()
    }
}
