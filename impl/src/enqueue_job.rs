//! [`Enqueue`]: a job to enqueue with its times relative to the store's clock, and a default
//! for every field but its id.
//!
//! The contract's `enqueue` takes absolute times and the caller's `now` ([`NewJob`]): that is
//! what replay and the conformance harness call, and it stays. An application says "five
//! attempts within the hour, not before ten minutes from now" instead, and the store it is
//! given to reads its own clock ([`crate::Clock`]) to turn that into a [`NewJob`] — the same
//! checks and the same insert as any enqueue.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};
use crate::queue::enqueue::{NewJob, ToEnqueue};

/// A job to enqueue on the store's clock: `Enqueue::new(id, payload)`, then any of the
/// settings below. Given to `enqueue` ([`Queue::enqueue`](crate::Queue::enqueue),
/// [`crate::enqueue_in`], `PgQueue`, `AsyncQueue`, `Outbox`), it is resolved against the
/// store's clock at that moment.
///
/// | setting | default |
/// |---|---|
/// | [`max_attempts`](Enqueue::max_attempts) | [`Enqueue::DEFAULT_MAX_ATTEMPTS`] (5) |
/// | [`ttl`](Enqueue::ttl): the deadline, from now | [`Enqueue::DEFAULT_TTL`] (one hour) |
/// | [`not_before`](Enqueue::not_before) or [`start_in`](Enqueue::start_in): a scheduled start | none: due at once |
/// | [`backoff`](Enqueue::backoff): the job's own retry windows | none: the queue's at each retry |
///
/// ```
/// use std::time::Duration;
/// use retryq::{Enqueue, Enqueued, Queue};
///
/// let mut queue = Queue::open_in_memory()?;
/// let job = Enqueue::new("invoice-17", r#"{"amount":42}"#)
///     .max_attempts(8)
///     .ttl(Duration::from_secs(24 * 3600))
///     .start_in(Duration::from_secs(60))
///     .backoff(Duration::from_secs(1), Duration::from_secs(60));
/// assert_eq!(queue.enqueue(&job)?, Enqueued::New);
/// let stored = queue.get("invoice-17")?.expect("stored");
/// assert_eq!(stored.max_attempts, 8);
/// assert_eq!(stored.deadline - stored.enqueued_at, 24 * 3600 * 1000);
/// assert_eq!(stored.not_before - stored.enqueued_at, 60_000);
/// assert_eq!((stored.base_ms, stored.cap_ms), (Some(1_000), Some(60_000)));
/// # Ok::<(), retryq::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enqueue<'a> {
    id: Cow<'a, str>,
    payload: Cow<'a, str>,
    max_attempts: u64,
    ttl: Duration,
    start: Option<Start>,
    base: Option<Duration>,
    cap: Option<Duration>,
    queue: Option<Cow<'a, str>>,
    priority: Option<u64>,
    kind: Cow<'a, str>,
}

/// A scheduled start, as given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    At(SystemTime),
    In(Duration),
}

impl<'a> Enqueue<'a> {
    /// The attempt budget when none is given.
    pub const DEFAULT_MAX_ATTEMPTS: u64 = 5;
    /// The time budget when none is given: the deadline is this long after the enqueue.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);

    /// A job named `id` (its business id: 1 … 256 bytes, receivers drop duplicates by it)
    /// carrying `payload` (at most 1 MiB of text), with every other setting at its default.
    pub fn new(id: impl Into<Cow<'a, str>>, payload: impl Into<Cow<'a, str>>) -> Enqueue<'a> {
        Enqueue {
            id: id.into(),
            payload: payload.into(),
            max_attempts: Self::DEFAULT_MAX_ATTEMPTS,
            ttl: Self::DEFAULT_TTL,
            start: None,
            base: None,
            cap: None,
            queue: None,
            priority: None,
            kind: Cow::Borrowed(""),
        }
    }

    /// A job whose payload is `value` as JSON (feature `serde`); read it back with
    /// [`Claimed::json`](crate::Claimed::json). The stored payload is the JSON text.
    ///
    /// ```
    /// #[derive(serde::Serialize)]
    /// struct Delivery { order: u64, address: String }
    ///
    /// let job = retryq::Enqueue::json("deliver-7", &Delivery { order: 7, address: "Rue 1".into() })?;
    /// assert_eq!(job.payload(), r#"{"order":7,"address":"Rue 1"}"#);
    /// # Ok::<(), retryq::Error>(())
    /// ```
    #[cfg(feature = "serde")]
    pub fn json<T: serde::Serialize + ?Sized>(id: impl Into<Cow<'a, str>>, value: &T) -> Result<Enqueue<'a>> {
        let payload = serde_json::to_string(value)
            .map_err(|e| Error::invalid("payload", format!("cannot be written as JSON: {e}")))?;
        Ok(Enqueue::new(id, payload))
    }

    /// The attempt budget: 1 … 2^31 − 1.
    pub fn max_attempts(mut self, max_attempts: u64) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// The time budget: no attempt starts `ttl` or more after the enqueue (whole
    /// milliseconds; at least 1 ms).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// A scheduled start at a point in time: no claim takes the job before it. It must lie
    /// between the enqueue and the deadline.
    pub fn not_before(mut self, at: SystemTime) -> Self {
        self.start = Some(Start::At(at));
        self
    }

    /// A scheduled start this long after the enqueue.
    pub fn start_in(mut self, delay: Duration) -> Self {
        self.start = Some(Start::In(delay));
        self
    }

    /// The job's own retry windows, in place of the queue's settings: the first retry's
    /// window `base`, doubling up to `cap` (SPEC section 2).
    pub fn backoff(mut self, base: Duration, cap: Duration) -> Self {
        self.base = Some(base);
        self.cap = Some(cap);
        self
    }

    /// The queue the job goes to (SPEC 1.6); without one, [`DEFAULT_QUEUE`](crate::DEFAULT_QUEUE).
    pub fn queue(mut self, queue: impl Into<Cow<'a, str>>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// Its priority, 0 … 9, lower first (SPEC 1.6); without one, 0: the most urgent.
    pub fn priority(mut self, priority: u64) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Its kind (SPEC 1.1): a label of at most 64 bytes that a worker picks its handler by;
    /// without one, `""`: no kind. A re-enqueue of the id with another kind is a conflict.
    pub fn kind(mut self, kind: impl Into<Cow<'a, str>>) -> Self {
        self.kind = kind.into();
        self
    }

    /// The job's kind, `""` for none.
    pub fn kind_name(&self) -> &str {
        &self.kind
    }

    /// The job's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The job's payload.
    pub fn payload(&self) -> &str {
        &self.payload
    }

    /// The contract's enqueue of this job at `now` (the store's clock): its deadline `now +
    /// ttl`, its scheduled start, its backoff in milliseconds. Refused
    /// ([`Error::InvalidInput`]) when a time cannot be held in whole milliseconds up to
    /// 2^53 − 1; every other check is the enqueue's own.
    pub fn at(&self, now: u64) -> Result<NewJob<'_>> {
        let ms = |field: &'static str, d: Duration| {
            u64::try_from(d.as_millis()).map_err(|_| Error::invalid(field, "is too large"))
        };
        let after = |field: &'static str, d: Duration| {
            now.checked_add(ms(field, d)?).ok_or_else(|| Error::invalid(field, "is too large"))
        };
        let not_before = match self.start {
            None => None,
            Some(Start::In(delay)) => Some(after("not_before", delay)?),
            Some(Start::At(at)) => Some(
                retryq_core::millis_since_epoch(at)
                    .map_err(|e| Error::invalid("not_before", e.to_string()))?,
            ),
        };
        Ok(NewJob {
            id: &self.id,
            payload: &self.payload,
            max_attempts: self.max_attempts,
            deadline: after("ttl", self.ttl)?,
            now,
            not_before,
            base_ms: self.base.map(|d| ms("base_ms", d)).transpose()?,
            cap_ms: self.cap.map(|d| ms("cap_ms", d)).transpose()?,
            queue: self.queue.as_deref(),
            priority: self.priority,
            kind: &self.kind,
        })
    }
}

#[cfg(feature = "serde")]
impl crate::Claimed {
    /// The payload read as JSON into `T` (feature `serde`): what [`Enqueue::json`] wrote.
    /// A payload that is not a `T` is [`Error::InvalidInput`] naming `payload`.
    ///
    /// ```
    /// # use retryq::{Enqueue, Queue};
    /// #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    /// struct Delivery { order: u64 }
    ///
    /// let mut queue = Queue::open_in_memory()?;
    /// queue.enqueue(&Enqueue::json("deliver-7", &Delivery { order: 7 })?)?;
    /// let claimed = queue.claim("w1", queue.now()?)?.expect("due");
    /// assert_eq!(claimed.json::<Delivery>()?, Delivery { order: 7 });
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        crate::json::from_str(&self.payload)
            .map_err(|e| Error::invalid("payload", format!("is not the JSON expected: {e}")))
    }
}

impl ToEnqueue for Enqueue<'_> {
    fn new_job(&self, now: &mut dyn FnMut() -> Result<u64>) -> Result<NewJob<'_>> {
        self.at(now()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_five_attempts_within_the_hour_due_at_once() {
        let job = Enqueue::new("a", "p");
        let new = job.at(1_000).expect("resolved");
        assert_eq!(
            (new.id, new.payload, new.max_attempts, new.deadline, new.now),
            ("a", "p", 5, 1_000 + 3_600_000, 1_000)
        );
        assert_eq!((new.not_before, new.base_ms, new.cap_ms), (None, None, None));
    }

    #[test]
    fn relative_times_are_resolved_at_the_stores_now() {
        let job = Enqueue::new(String::from("a"), "p")
            .max_attempts(3)
            .ttl(Duration::from_secs(10))
            .start_in(Duration::from_millis(250))
            .backoff(Duration::from_millis(20), Duration::from_secs(2));
        let new = job.at(5_000).expect("resolved");
        assert_eq!((new.max_attempts, new.deadline, new.not_before), (3, 15_000, Some(5_250)));
        assert_eq!((new.base_ms, new.cap_ms), (Some(20), Some(2_000)));
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(7_000);
        assert_eq!(Enqueue::new("a", "p").not_before(at).at(5_000).expect("at").not_before, Some(7_000));
    }

    #[test]
    fn a_time_past_the_range_is_refused_by_name() {
        let huge = Enqueue::new("a", "p").ttl(Duration::MAX);
        assert!(matches!(huge.at(0), Err(Error::InvalidInput { field: "ttl", .. })));
        let late = Enqueue::new("a", "p").start_in(Duration::from_millis(u64::MAX));
        assert!(matches!(late.at(1), Err(Error::InvalidInput { field: "not_before", .. })));
        let early = Enqueue::new("a", "p").not_before(SystemTime::UNIX_EPOCH - Duration::from_secs(1));
        assert!(matches!(early.at(1), Err(Error::InvalidInput { field: "not_before", .. })));
    }

    #[test]
    fn a_new_job_never_reads_the_clock() {
        let job = NewJob { id: "a", payload: "p", max_attempts: 1, deadline: 9, now: 3, ..NewJob::default() };
        let mut read = || -> Result<u64> { panic!("the clock was read") };
        assert_eq!(job.new_job(&mut read).expect("as given").deadline, 9);
    }
}
