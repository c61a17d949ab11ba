//! An application's code for one attempt, as a transport: the [`Attempt`] a handler reads,
//! and the [`JobError`] it answers with.
//!
//! An error means "retry": whatever a handler's `?` passes up becomes a `retryable`
//! outcome, with its text (and the texts of its sources) noted on the job, as river and Oban
//! do. Only the handler can say more: [`JobError::permanent`] ends the job `dead(permanent)`
//! ("don't retry"), and [`JobError::after`] asks the next attempt to wait at least so long.
//! A panic is caught and recorded as that attempt's `retryable` error; it never takes the
//! worker down, nor leaves the job to wait out its lease.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use retryq::{Claimed, Outcome, Report};

use crate::held::Held;
use crate::window::Window;

/// One attempt of a claimed job, as a handler sees it.
#[derive(Clone)]
pub struct Attempt {
    id: String,
    kind: String,
    payload: String,
    number: u64,
    deadline_ms: u64,
    last_node: Option<String>,
    start: Instant,
    timeout: Duration,
    /// The lease the store thread renews, and how long before its end the attempt stops.
    lease: Option<(Arc<Held>, Duration)>,
}

impl Attempt {
    /// The attempt of `job` that runs within `window`.
    pub(crate) fn new(job: &Claimed, window: &Window<'_>) -> Attempt {
        Attempt {
            id: job.id().to_owned(),
            kind: job.kind.clone(),
            payload: job.payload.clone(),
            number: job.attempt(),
            deadline_ms: job.deadline,
            last_node: job.last_node.clone(),
            start: Instant::now(),
            timeout: window.timeout_left(),
            lease: window.held(),
        }
    }

    /// The job's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The job's kind (SPEC 1.1), `""` for none: what [`Kinds`](crate::Kinds) picks the
    /// handler by.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The job's payload, as enqueued.
    pub fn payload(&self) -> &str {
        &self.payload
    }

    /// The payload read as JSON into `T`. A payload that does not read is a permanent
    /// error: no later attempt would read it either.
    #[cfg(feature = "serde")]
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, JobError> {
        retryq::json::from_str(&self.payload)
            .map_err(|e| JobError::permanent(format!("the payload is not the JSON expected: {e}")))
    }

    /// This attempt's number: 1 for the first claim of the job, and never rolled back.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The job's deadline, in Unix milliseconds: no attempt starts after it.
    pub fn deadline_ms(&self) -> u64 {
        self.deadline_ms
    }

    /// The receiver the job's last recorded attempt reached, if its transport noted one.
    pub fn last_node(&self) -> Option<&str> {
        self.last_node.as_deref()
    }

    /// How long this attempt may still run: its timeout (cut to the job's deadline) and its
    /// lease less the margin, as last renewed, on the monotonic clock. Zero once a renewal
    /// was refused: the job may be another worker's now. A handler that runs long should
    /// look, and give up with an error, when it reaches zero; an async handler is dropped
    /// there by the worker.
    pub fn time_left(&self) -> Duration {
        let timeout = self.timeout.saturating_sub(self.start.elapsed());
        let Some((held, margin)) = &self.lease else { return timeout };
        let ends = held.ends();
        if ends.abandoned {
            return Duration::ZERO;
        }
        timeout.min(ends.span.saturating_sub(*margin).saturating_sub(ends.anchor.elapsed()))
    }
}

impl fmt::Debug for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attempt")
            .field("id", &self.id)
            .field("number", &self.number)
            .field("deadline_ms", &self.deadline_ms)
            .field("time_left", &self.time_left())
            .finish_non_exhaustive()
    }
}

/// Why an attempt failed, and what that means for the job: retry (the default, and what
/// any error passed up by `?` becomes), retry no sooner than some delay, or never retry.
///
/// Not itself a [`std::error::Error`], so that every error converts into it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobError {
    permanent: bool,
    message: String,
    after: Option<Duration>,
}

impl JobError {
    /// Retry the job (while its budget and deadline allow), with `message` noted on it.
    pub fn retry(message: impl fmt::Display) -> JobError {
        JobError { permanent: false, message: message.to_string(), after: None }
    }

    /// Don't retry: the job ends `dead(permanent)` at once, with `message` noted on it.
    pub fn permanent(message: impl fmt::Display) -> JobError {
        JobError { permanent: true, message: message.to_string(), after: None }
    }

    /// The next attempt waits at least `delay` after this one is recorded (a floor under
    /// the queue's own backoff, as a receiver's `Retry-After` is). Ignored by a permanent
    /// error.
    pub fn after(self, delay: Duration) -> JobError {
        JobError { after: Some(delay), ..self }
    }

    /// Whether the job is not to be retried.
    pub fn is_permanent(&self) -> bool {
        self.permanent
    }

    /// The outcome the worker records.
    pub(crate) fn into_report(self) -> Report {
        let outcome = if self.permanent { Outcome::Permanent } else { Outcome::Retryable };
        let report = Report::with_error(outcome, self.message);
        match self.after {
            Some(delay) if !self.permanent => {
                report.retry_after(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX))
            }
            _ => report,
        }
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Any error is a reason to retry: its text, then each of its sources' after a colon.
impl<E: std::error::Error + Send + Sync + 'static> From<E> for JobError {
    fn from(error: E) -> JobError {
        let mut message = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        JobError::retry(message)
    }
}

/// The report of an attempt whose handler panicked: `retryable`, with the panic's message.
pub(crate) fn panicked(payload: &(dyn Any + Send)) -> Report {
    Report::with_error(Outcome::Retryable, format!("the handler panicked: {}", panic_text(payload)))
}

/// What a panic said, as text.
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a value that is not text".to_owned())
}

/// What the worker records for a handler's answer.
pub(crate) fn report(answer: Result<(), JobError>) -> Report {
    match answer {
        Ok(()) => Report::from(Outcome::Ok),
        Err(error) => error.into_report(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("connection refused")]
    struct Refused;

    #[derive(Debug, thiserror::Error)]
    #[error("could not deliver")]
    struct Delivery(#[source] Refused);

    fn deliver() -> Result<(), Delivery> {
        Err(Delivery(Refused))
    }

    fn handler() -> Result<(), JobError> {
        deliver()?;
        Ok(())
    }

    #[test]
    fn an_error_passed_up_means_retry_with_its_sources_noted() {
        let report = report(handler());
        assert_eq!(report.outcome, Outcome::Retryable);
        assert_eq!(report.error.as_deref(), Some("could not deliver: connection refused"));
        assert_eq!(report.retry_after_ms, None);
    }

    #[test]
    fn permanent_and_after_say_what_the_handler_wants() {
        let report = JobError::permanent("422 unprocessable").after(Duration::from_secs(5)).into_report();
        assert_eq!((report.outcome, report.retry_after_ms), (Outcome::Permanent, None));
        let report = JobError::retry("busy").after(Duration::from_millis(1500)).into_report();
        assert_eq!((report.outcome, report.retry_after_ms), (Outcome::Retryable, Some(1500)));
        assert!(JobError::permanent("x").is_permanent() && !JobError::retry("x").is_permanent());
    }

    #[test]
    fn a_panic_is_a_retryable_error_with_its_message() {
        let caught = std::panic::catch_unwind(|| panic!("index {} out of range", 7)).expect_err("panics");
        let report = panicked(&*caught);
        assert_eq!(report.outcome, Outcome::Retryable);
        assert_eq!(report.error.as_deref(), Some("the handler panicked: index 7 out of range"));
        let caught = std::panic::catch_unwind(|| std::panic::panic_any(3u8)).expect_err("panics");
        assert_eq!(
            panicked(&*caught).error.as_deref(),
            Some("the handler panicked: a value that is not text")
        );
    }
}
