//! A job as the store keeps it, and the words its columns hold.

use std::fmt;
use std::str::FromStr;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

/// Where a job is in its life. `Done` and `Dead` are terminal; only a redrive leaves `Dead`.
///
/// Its words (`Display`, `FromStr`) are the SPEC's: `pending`, `leased`, `done`, `dead`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Status {
    /// Waiting until `available_at`.
    Pending,
    /// Claimed by a worker until `available_at`, the lease expiry.
    Leased,
    /// Succeeded.
    Done,
    /// Quarantined, with a [`DeadReason`].
    Dead,
}

/// Why a job was quarantined.
///
/// Its words (`Display`, `FromStr`) are the SPEC's: `exhausted`, `deadline`, `permanent`,
/// `cancelled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DeadReason {
    /// Every attempt of the budget was spent.
    Exhausted,
    /// No time was left to start another attempt before the deadline.
    Deadline,
    /// The transport said a person has to change the content.
    Permanent,
    /// An operator cancelled it while it was pending ([`crate::Queue::cancel`]); no attempt
    /// was cut short. A redrive brings it back like any dead job.
    Cancelled,
}

/// What the transport made of an attempt. An error it could not classify is not an outcome:
/// it is returned to the caller, and the job waits for its lease to expire.
///
/// Its words (`Display`, `FromStr`) are the SPEC's: `ok`, `retryable`, `permanent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// The receiver accepted the job.
    Ok,
    /// Safe and useful to try again.
    Retryable,
    /// A person has to change the content.
    Permanent,
}

/// What a transport reports of one attempt: its [`Outcome`], and notes an operator reads
/// when the job ends up `dead` (`retryq dead`).
///
/// The notes are not state: they change no rule. A recorded attempt replaces both notes of
/// its job with its own, `None` included, so `last_error` is always the last recorded
/// attempt's. Each is kept to its first [`MAX_NOTE_BYTES`] bytes.
///
/// `retry_after_ms` is the receiver's pushback (an HTTP `Retry-After`, a gRPC
/// `grpc-retry-pushback-ms`): the least time it asks to be left alone. It is a floor under
/// the SPEC's retry delay and matters only for a `retryable` outcome (see
/// [`crate::Queue::complete`]); `None` leaves every rule exactly as the SPEC has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// What the attempt came to.
    pub outcome: Outcome,
    /// What went wrong, in words: an exit status, the tail of an error stream.
    pub error: Option<String>,
    /// Which receiver the attempt reached, for a transport that picks among several.
    pub node: Option<String>,
    /// The least delay before the next attempt, as the receiver asked, in milliseconds
    /// counted from the recording of this attempt.
    pub retry_after_ms: Option<u64>,
}

/// The most of an error text or a node name a job keeps (longer ones are cut at a character
/// boundary).
pub const MAX_NOTE_BYTES: usize = 4096;

impl From<Outcome> for Report {
    fn from(outcome: Outcome) -> Self {
        Report { outcome, error: None, node: None, retry_after_ms: None }
    }
}

impl Report {
    /// A report of `outcome` with an error text.
    pub fn with_error(outcome: Outcome, error: impl Into<String>) -> Report {
        Report { outcome, error: Some(error.into()), node: None, retry_after_ms: None }
    }

    /// This report, naming the receiver the attempt reached.
    pub fn node(mut self, node: impl Into<String>) -> Report {
        self.node = Some(node.into());
        self
    }

    /// This report, with the receiver's pushback: no retry sooner than `ms` from now.
    pub fn retry_after(mut self, ms: u64) -> Report {
        self.retry_after_ms = Some(ms);
        self
    }
}

/// `text` cut to at most [`MAX_NOTE_BYTES`] bytes, at a character boundary.
pub(crate) fn note(text: Option<&str>) -> Option<&str> {
    let text = text?;
    if text.len() <= MAX_NOTE_BYTES {
        return Some(text);
    }
    let mut end = MAX_NOTE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(&text[..end])
}

/// A job as `get` returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// The job's name, unique in the queue.
    pub id: String,
    /// What the transport sends.
    pub payload: String,
    /// Where the job is in its life.
    pub status: Status,
    /// Successful claims so far; never decreases.
    pub attempts: u64,
    /// The attempt budget: no claim past it.
    pub max_attempts: u64,
    /// When a pending job may be claimed, or when a lease expires; `None` once done or dead.
    pub available_at: Option<u64>,
    /// The time budget: no claim at or after it.
    pub deadline: u64,
    /// Why the job is dead; `None` unless dead.
    pub dead_reason: Option<DeadReason>,
    /// How many times an operator redrove the job.
    pub redrives: u64,
    /// When the job was first enqueued (a redrive keeps it).
    pub enqueued_at: u64,
    /// The worker holding (or last holding) the lease, while leased.
    pub owner: Option<String>,
    /// When the current lease was claimed, while leased.
    pub claimed_at: Option<u64>,
    /// The error text of the last recorded attempt (see [`Report`]).
    pub last_error: Option<String>,
    /// The receiver the last recorded attempt reached (see [`Report`]).
    pub last_node: Option<String>,
    /// The job's first `available_at`: the `not_before` it was enqueued with, or its enqueue's
    /// `now`. A redrive does not change it (it is the schedule the job was given).
    pub not_before: u64,
    /// The job's own first retry window, if it was enqueued with one; `None` means the
    /// queue's setting at each retry, never a copy taken at enqueue (SPEC 6.23).
    pub base_ms: Option<u64>,
    /// The job's own largest retry window, if it was enqueued with one; `None` as for
    /// `base_ms`.
    pub cap_ms: Option<u64>,
    /// The queue it was first enqueued to (SPEC 1.6): only claims naming it take the job.
    pub queue: String,
    /// 0 … 9, lower first (SPEC 1.6): claims take a smaller priority before a larger one.
    pub priority: u8,
    /// The `now` of the transition that made it `done` or `dead`; `None` while open. What a
    /// prune's `before` is compared with (SPEC 3.14).
    pub ended_at: Option<u64>,
    /// Whether an operator asked the attempt in flight to stop (SPEC 3.13): only ever true
    /// while leased.
    pub cancel_requested: bool,
    /// What kind of job it is (SPEC 1.1): a label of 0 … 64 bytes given at its first enqueue,
    /// `""` for none. The store compares it, with the payload, on a re-enqueue; a worker
    /// picks the handler by it.
    pub kind: String,
}

/// The queue a job goes to when its enqueue names none, and the one a claim that names none
/// serves (SPEC 1.6, 5.3).
pub const DEFAULT_QUEUE: &str = "default";

/// What a prune leaves of a `done` or `dead` job (SPEC 1.7): enough to keep its id from
/// running again and to tell an operator how it ended. It never changes; only a forget
/// removes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tombstone {
    /// The pruned job's id: taken until a forget removes the tombstone.
    pub id: String,
    /// The queue the job was in.
    pub queue: String,
    /// The SHA-256 digest of the payload's UTF-8 bytes, 64 lowercase hex digits (SPEC 6.29):
    /// an enqueue of the id is `existing` with a payload of this digest, `conflict` otherwise.
    pub digest: String,
    /// How the job ended: `Done` or `Dead`.
    pub status: Status,
    /// Why it died; `None` unless `status` is `Dead`.
    pub dead_reason: Option<DeadReason>,
    /// Its claims, all told.
    pub attempts: u64,
    /// When it ended.
    pub ended_at: u64,
}

/// What an id names (SPEC 3.9): a job in the store, or the tombstone a prune left of one.
///
/// A `Job` is larger than a `Tombstone`, and is not boxed: a lookup answers one `get` and is
/// never held in bulk, and matching on `Lookup::Job(job)` stays as simple as it was.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum Lookup {
    /// A job, open or ended.
    Job(Job),
    /// A pruned job's tombstone.
    Pruned(Tombstone),
}

/// The SHA-256 digest of `payload`'s UTF-8 bytes as a tombstone keeps it: 64 lowercase hex
/// digits (SPEC 6.29). The digest of a job without a kind; [`job_digest`] is any job's.
pub fn payload_digest(payload: &str) -> String {
    job_digest("", payload)
}

/// The digest a tombstone keeps of a job of `kind` carrying `payload` (SPEC 6.29): the SHA-256
/// of the payload's UTF-8 bytes when the kind is `""`, else of the kind's, a NUL byte and the
/// payload's — so that a tombstone written before kinds existed keeps answering as it did,
/// and a kind (which holds no NUL) never runs into its payload. 64 lowercase hex digits.
pub fn job_digest(kind: &str, payload: &str) -> String {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    if !kind.is_empty() {
        hasher.update(kind.as_bytes());
        hasher.update([0u8]);
    }
    hasher.update(payload.as_bytes());
    hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A word that names none of a vocabulary's values: what [`Status`], [`DeadReason`] and
/// [`Outcome`]'s `FromStr` return.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {word:?}: expected one of {}", expected.join(", "))]
pub struct UnknownWord {
    /// What the word was meant to name (`status`, `dead reason`, `outcome`).
    pub what: &'static str,
    /// The word as given.
    pub word: String,
    /// Every word accepted, in the SPEC's order.
    pub expected: &'static [&'static str],
}

/// One closed vocabulary of the SPEC: each value and its word, in the SPEC's order.
trait Words: Sized + Copy + 'static {
    /// What a value of the vocabulary names, for [`UnknownWord`].
    const WHAT: &'static str;
    const ALL: &'static [Self];
    const WORDS: &'static [&'static str];

    fn parse_word(word: &str) -> Result<Self, UnknownWord> {
        match Self::WORDS.iter().position(|w| *w == word) {
            Some(i) => Ok(Self::ALL[i]),
            None => Err(UnknownWord { what: Self::WHAT, word: word.to_owned(), expected: Self::WORDS }),
        }
    }
}

impl Words for Status {
    const WHAT: &'static str = "status";
    const ALL: &'static [Status] = &[Status::Pending, Status::Leased, Status::Done, Status::Dead];
    const WORDS: &'static [&'static str] = &["pending", "leased", "done", "dead"];
}

impl Words for DeadReason {
    const WHAT: &'static str = "dead reason";
    const ALL: &'static [DeadReason] =
        &[DeadReason::Exhausted, DeadReason::Deadline, DeadReason::Permanent, DeadReason::Cancelled];
    const WORDS: &'static [&'static str] = &["exhausted", "deadline", "permanent", "cancelled"];
}

impl Words for Outcome {
    const WHAT: &'static str = "outcome";
    const ALL: &'static [Outcome] = &[Outcome::Ok, Outcome::Retryable, Outcome::Permanent];
    const WORDS: &'static [&'static str] = &["ok", "retryable", "permanent"];
}

impl Status {
    /// The word stored in the `status` column and printed by SPEC section 5.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Leased => "leased",
            Status::Done => "done",
            Status::Dead => "dead",
        }
    }
}

impl DeadReason {
    /// The word stored in the `dead_reason` column and printed by SPEC section 5.
    pub fn as_str(self) -> &'static str {
        match self {
            DeadReason::Exhausted => "exhausted",
            DeadReason::Deadline => "deadline",
            DeadReason::Permanent => "permanent",
            DeadReason::Cancelled => "cancelled",
        }
    }
}

impl Outcome {
    /// The word SPEC section 5 uses for this outcome.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Retryable => "retryable",
            Outcome::Permanent => "permanent",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for DeadReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = UnknownWord;

    fn from_str(word: &str) -> Result<Self, UnknownWord> {
        Status::parse_word(word)
    }
}

impl FromStr for DeadReason {
    type Err = UnknownWord;

    fn from_str(word: &str) -> Result<Self, UnknownWord> {
        DeadReason::parse_word(word)
    }
}

impl FromStr for Outcome {
    type Err = UnknownWord;

    fn from_str(word: &str) -> Result<Self, UnknownWord> {
        Outcome::parse_word(word)
    }
}

fn word_from_sql<T: Words>(value: ValueRef<'_>) -> FromSqlResult<T> {
    T::parse_word(value.as_str()?).map_err(|e| FromSqlError::Other(Box::new(e)))
}

impl FromSql for Status {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        word_from_sql(value)
    }
}

impl ToSql for Status {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for DeadReason {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        word_from_sql(value)
    }
}

impl ToSql for DeadReason {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        for s in Status::ALL {
            assert_eq!(s.to_string().parse::<Status>(), Ok(*s));
        }
        for r in DeadReason::ALL {
            assert_eq!(r.to_string().parse::<DeadReason>(), Ok(*r));
        }
        for o in Outcome::ALL {
            assert_eq!(o.to_string().parse::<Outcome>(), Ok(*o));
        }
        assert!("Pending".parse::<Status>().is_err());
        assert!("".parse::<DeadReason>().is_err());
    }

    #[test]
    fn an_unknown_word_is_named_with_the_words_accepted() {
        let err = "exhausted ".parse::<DeadReason>().unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"unknown dead reason "exhausted ": expected one of exhausted, deadline, permanent, cancelled"#
        );
        let err = "OK".parse::<Outcome>().unwrap_err();
        assert_eq!((err.what, err.word.as_str(), err.expected), ("outcome", "OK", Outcome::WORDS));
        let err = "gone".parse::<Status>().unwrap_err();
        assert!(err.to_string().contains("pending, leased, done, dead"), "{err}");
    }

    #[test]
    fn notes_are_cut_at_a_character_boundary() {
        assert_eq!(note(None), None);
        assert_eq!(note(Some("exit 3")), Some("exit 3"));
        let long = format!("a{}", "é".repeat(MAX_NOTE_BYTES));
        let cut = note(Some(&long)).expect("some");
        assert_eq!(cut.len(), MAX_NOTE_BYTES - 1, "the last 2-byte character does not fit");
        assert!(long.starts_with(cut));
    }

    #[test]
    fn a_digest_is_sha256_in_lowercase_hex() {
        // FIPS 180-2's examples.
        assert_eq!(payload_digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(payload_digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        // No kind: the payload's digest, as every tombstone before kinds has it.
        assert_eq!(job_digest("", "abc"), payload_digest("abc"));
        // A kind: SHA-256 of "mail", NUL, "abc" (`printf 'mail\0abc' | sha256sum`).
        assert_eq!(
            job_digest("mail", "abc"),
            "b683b6cccbf811e002aebaa991f5c7c741476b252efbd53e7ff172545ad2e14c"
        );
        assert_ne!(job_digest("mail", "abc"), job_digest("mai", "labc"));
    }
}
