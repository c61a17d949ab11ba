//! Jobs as types (feature `serde`): a [`JobArgs`] type names its kind, carries its arguments
//! as JSON and says how its jobs are enqueued; one [`Kinds`] registry runs each claimed job
//! with the handler of its kind, so that one [`Worker`](crate::Worker) serves every kind of an
//! application, as river's workers and Oban's worker modules do.
//!
//! A job whose kind no handler serves ends `dead(permanent)`, its error naming the kind: the
//! registry is the application's code, so a kind it lacks is a deploy that is missing a
//! handler, and no later attempt of the same worker would find one (docs/library.md).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use retryq::Enqueue;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::handler::{Attempt, JobError};

/// How a kind's jobs are enqueued unless a call says otherwise: [`Enqueue`]'s settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The queue (SPEC 1.6); `None` is the default queue.
    pub queue: Option<&'static str>,
    /// 0 … 9, lower first.
    pub priority: u64,
    /// The attempt budget.
    pub max_attempts: u64,
    /// The time budget: the deadline is this long after the enqueue.
    pub ttl: Duration,
    /// The job's own retry windows (base, cap); `None` uses the queue's.
    pub backoff: Option<(Duration, Duration)>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            queue: None,
            priority: 0,
            max_attempts: Enqueue::DEFAULT_MAX_ATTEMPTS,
            ttl: Enqueue::DEFAULT_TTL,
            backoff: None,
        }
    }
}

/// A job's arguments as a type: its kind, its arguments (the payload, as JSON), its default
/// options and its id.
///
/// ```
/// use retryq_worker::{JobArgs, Options};
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Receipt { order: u64 }
///
/// impl JobArgs for Receipt {
///     const KIND: &'static str = "receipt";
///     fn options() -> Options { Options { max_attempts: 10, ..Options::default() } }
/// }
///
/// let job = retryq_worker::job(&Receipt { order: 7 })?;
/// assert_eq!(job.kind_name(), "receipt");
/// assert_eq!(job.payload(), r#"{"order":7}"#);
/// // The same arguments are the same job: enqueued twice, stored once.
/// assert_eq!(job.id(), retryq_worker::job(&Receipt { order: 7 })?.id());
/// # Ok::<(), retryq::Error>(())
/// ```
pub trait JobArgs: Serialize + DeserializeOwned {
    /// The kind's name: at most 64 bytes, no NUL (SPEC 1.1).
    const KIND: &'static str;

    /// How this kind's jobs are enqueued.
    fn options() -> Options {
        Options::default()
    }

    /// The job's id. By default derived from the kind and the arguments' canonical JSON
    /// ([`derived_id`]), so that the same job enqueued twice is one job; return `Some` to
    /// name it yourself (a business id).
    fn id(&self) -> Option<String> {
        None
    }
}

/// The [`Enqueue`] of `args`: its kind, its JSON, its kind's options and its id.
pub fn job<A: JobArgs>(args: &A) -> retryq::Result<Enqueue<'static>> {
    let value = serde_json::to_value(args).map_err(|e| retryq::Error::InvalidInput {
        field: "payload",
        reason: format!("cannot be written as JSON: {e}"),
    })?;
    let payload = canonical(&value);
    let id = match args.id() {
        Some(id) => id,
        None => derived_id(A::KIND, &payload),
    };
    let options = A::options();
    let mut job = Enqueue::new(id, payload)
        .kind(A::KIND)
        .priority(options.priority)
        .max_attempts(options.max_attempts)
        .ttl(options.ttl);
    if let Some(queue) = options.queue {
        job = job.queue(queue);
    }
    if let Some((base, cap)) = options.backoff {
        job = job.backoff(base, cap);
    }
    Ok(job)
}

/// The id of a job of `kind` whose arguments' canonical JSON is `payload`: the kind, `:`, and
/// the SHA-256 of kind and payload (as a tombstone digests them, SPEC 6.29) — at most 129
/// bytes, and the same for the same arguments however their fields were ordered.
pub fn derived_id(kind: &str, payload: &str) -> String {
    format!("{kind}:{}", retryq::job_digest(kind, payload))
}

/// `value` as JSON with every object's keys in byte order, at every depth: one text for one
/// value, whatever order a serializer wrote the fields in (serde_json keeps insertion order
/// when any crate in the build turns on its `preserve_order`).
fn canonical(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// One kind's handler, its arguments decoded.
type Handler = Arc<dyn Fn(&Attempt) -> Result<(), JobError> + Send + Sync>;

/// The handlers of an application's kinds: [`Kinds::run`] is the handler a
/// [`Worker`](crate::Worker) runs, and picks the kind's own.
///
/// ```
/// # use retryq_worker::{Attempt, JobArgs, JobError, Kinds, Stop, Worker};
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Mail { to: String }
/// impl JobArgs for Mail { const KIND: &'static str = "mail"; }
///
/// let mut queue = retryq::Queue::open_in_memory()?;
/// queue.enqueue(&retryq_worker::job(&Mail { to: "ada@example.com".into() })?)?;
/// let kinds = Kinds::new().handle(|mail: Mail, _: &Attempt| {
///     assert_eq!(mail.to, "ada@example.com");
///     Ok(())
/// });
/// let summary = Worker::new("mailer")?.until_idle().run(&mut queue, &Stop::new(), |a| kinds.run(a))?;
/// assert_eq!(summary.done, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct Kinds {
    handlers: HashMap<&'static str, Handler>,
    plain: Option<Handler>,
}

impl Kinds {
    /// No handler yet: every job would end `dead(permanent)`.
    pub fn new() -> Kinds {
        Kinds::default()
    }

    /// `A`'s jobs run `handler` with their arguments decoded; arguments that do not decode
    /// as `A` are a permanent error (no later attempt would decode them either). A second
    /// handler for the same kind replaces the first.
    pub fn handle<A, F>(mut self, handler: F) -> Kinds
    where
        A: JobArgs + 'static,
        F: Fn(A, &Attempt) -> Result<(), JobError> + Send + Sync + 'static,
    {
        let run = move |attempt: &Attempt| handler(decode::<A>(attempt)?, attempt);
        self.handlers.insert(A::KIND, Arc::new(run));
        self
    }

    /// Jobs without a kind (enqueued by [`Enqueue::new`] alone) run `handler` with the plain
    /// payload, as a single-handler worker runs them.
    pub fn plain<F>(mut self, handler: F) -> Kinds
    where
        F: Fn(&Attempt) -> Result<(), JobError> + Send + Sync + 'static,
    {
        self.plain = Some(Arc::new(handler));
        self
    }

    /// Runs `attempt` with its kind's handler; a kind no handler serves is a permanent
    /// error naming the kind.
    pub fn run(&self, attempt: &Attempt) -> Result<(), JobError> {
        let handler = match attempt.kind() {
            "" => self.plain.as_ref(),
            kind => self.handlers.get(kind),
        };
        match handler {
            Some(handler) => handler(attempt),
            None => Err(unserved(attempt)),
        }
    }
}

/// `attempt`'s arguments as `A`'s; arguments that do not decode are a permanent error (no
/// later attempt would decode them either).
fn decode<A: JobArgs>(attempt: &Attempt) -> Result<A, JobError> {
    retryq::json::from_str(attempt.payload())
        .map_err(|e| JobError::permanent(format!("the arguments are not a {} job's: {e}", A::KIND)))
}

/// The error of a job whose kind no handler serves.
fn unserved(attempt: &Attempt) -> JobError {
    JobError::permanent(format!("no handler serves kind {:?}", attempt.kind()))
}

#[cfg(feature = "tokio")]
pub use self::asynch::AsyncKinds;

/// [`Kinds`] for [`Worker::run_async`](crate::Worker::run_async): each kind's handler an
/// async fn.
#[cfg(feature = "tokio")]
mod asynch {
    use std::collections::HashMap;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;

    use super::{JobArgs, decode, unserved};
    use crate::handler::{Attempt, JobError};

    /// What an async handler gives back: its attempt's end, to be awaited.
    pub type Ran = Pin<Box<dyn Future<Output = Result<(), JobError>> + Send>>;
    type Handler = Arc<dyn Fn(Attempt) -> Ran + Send + Sync>;

    /// The async handlers of an application's kinds: [`AsyncKinds::run`] is the handler
    /// [`Worker::run_async`](crate::Worker::run_async) runs, and picks the kind's own. The
    /// same rules as [`Kinds`](super::Kinds): arguments that do not decode, and a kind no
    /// handler serves, are permanent errors naming the kind.
    #[derive(Clone, Default)]
    pub struct AsyncKinds {
        handlers: HashMap<&'static str, Handler>,
        plain: Option<Handler>,
    }

    impl AsyncKinds {
        /// No handler yet: every job would end `dead(permanent)`.
        pub fn new() -> AsyncKinds {
            AsyncKinds::default()
        }

        /// `A`'s jobs run `handler` with their arguments decoded. A second handler for the
        /// same kind replaces the first.
        pub fn handle<A, F, Fut>(mut self, handler: F) -> AsyncKinds
        where
            A: JobArgs + 'static,
            F: Fn(A, Attempt) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<(), JobError>> + Send + 'static,
        {
            let run = move |attempt: Attempt| -> Ran {
                match decode::<A>(&attempt) {
                    Ok(args) => Box::pin(handler(args, attempt)),
                    Err(e) => Box::pin(std::future::ready(Err(e))),
                }
            };
            self.handlers.insert(A::KIND, Arc::new(run));
            self
        }

        /// Jobs without a kind run `handler` with the plain payload.
        pub fn plain<F, Fut>(mut self, handler: F) -> AsyncKinds
        where
            F: Fn(Attempt) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<(), JobError>> + Send + 'static,
        {
            self.plain = Some(Arc::new(move |attempt: Attempt| -> Ran { Box::pin(handler(attempt)) }));
            self
        }

        /// Runs `attempt` with its kind's handler; a kind no handler serves is a permanent
        /// error naming the kind.
        pub fn run(&self, attempt: Attempt) -> Ran {
            let handler = match attempt.kind() {
                "" => self.plain.as_ref(),
                kind => self.handlers.get(kind),
            };
            match handler {
                Some(handler) => handler(attempt),
                None => Box::pin(std::future::ready(Err(unserved(&attempt)))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, serde::Deserialize)]
    struct Pair {
        b: u32,
        a: Vec<u32>,
    }
    impl JobArgs for Pair {
        const KIND: &'static str = "pair";
    }

    #[test]
    fn the_derived_id_is_the_kinds_and_the_canonical_arguments() {
        let job = job(&Pair { b: 2, a: vec![1] }).expect("job");
        assert_eq!(job.payload(), r#"{"a":[1],"b":2}"#, "keys in byte order");
        assert_eq!(job.id(), derived_id("pair", r#"{"a":[1],"b":2}"#));
        assert!(job.id().starts_with("pair:") && job.id().len() == 5 + 64);
        assert_ne!(job.id(), super::job(&Pair { b: 3, a: vec![1] }).expect("job").id());
        assert_ne!(derived_id("pair", "{}"), derived_id("pai", "r{}"));
    }
}
