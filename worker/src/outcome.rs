//! What a worker run ends with: its [`Summary`] counts, or the [`WorkError`] that stopped it.
//! Kept apart from the loop (`work.rs`) and the store thread (`store.rs`), which both report
//! through these types.

use retryq::Error;

use crate::clock::ClockError;
use crate::config::ConfigError;
use crate::dbfile::DbFileError;

/// Why the loop gave up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkError {
    /// The configuration was refused before the loop started.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store cannot be used (not a passing lock or a full disk, which the loop waits
    /// out): the job under way, if any, stays leased.
    #[error(transparent)]
    Queue(Error),
    /// The wall clock is out of the queue's range (before 1970, past 2^53 − 1 ms): the job
    /// under way, if any, was not recorded and stays leased.
    #[error(transparent)]
    Clock(#[from] ClockError),
    /// The database file was deleted, replaced or renamed away under the worker.
    #[error(transparent)]
    DbFile(#[from] DbFileError),
    /// A write went past the process's file size limit (`ulimit -f`) and failed.
    #[error("{why}: {source}")]
    FileTooLarge {
        /// Which write, and the limit it hit.
        why: String,
        /// The queue's error for the failed write.
        source: Error,
    },
    /// An attempt slot's thread could not be started.
    #[error("could not start an attempt thread: {0}")]
    Thread(std::io::Error),
    /// The transport cannot send any attempt ([`Transport::unusable`]): an `--exec` command
    /// that is not found or not executable. The attempts that showed it were recorded (as
    /// retryable, so their jobs wait for a worker that can run them); nothing more was claimed.
    ///
    /// [`Transport::unusable`]: crate::Transport::unusable
    #[error("{why}; claimed nothing more: every job would fail the same way")]
    Misconfigured {
        /// What the transport said, for the operator.
        why: String,
    },
}

/// What a loop did, when it returns.
///
/// For a run that starts on an empty queue and ends idle, the categories add up to what
/// `stats` shows: `done` is its done count, and `dead + reaped` its dead count (with several
/// workers, summed over them). Exact for one worker; with several, a job can also be
/// reaped inside another's claim, a transaction that says nothing of it, and then no summary
/// counts it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Attempts started (claims), whatever came of them.
    pub attempts: u64,
    /// Attempts whose outcome was `ok`.
    pub done: u64,
    /// Attempts recorded as retries.
    pub retried: u64,
    /// Jobs an attempt's outcome made dead (permanent, or out of budget or time).
    pub dead: u64,
    /// Jobs this worker's reaps made dead: a lease that expired on the job's last attempt
    /// (its worker died, or its error was unclassified), or a job that reached its deadline
    /// while pending or leased.
    pub reaped: u64,
    /// Attempts whose result was not recorded: unclassified, the clock went back, the lease
    /// was lost, or the store failed while recording.
    pub unrecorded: u64,
    /// Attempts stopped because a heartbeat was refused (the lease was lost, the deadline
    /// came, the job is gone): the command was killed or the request given up, and nothing
    /// was recorded. Not counted in `unrecorded`.
    pub abandoned: u64,
    /// Transactions that wrote: claims that leased a job, group commits of outcomes, reaps
    /// that reaped, notes of unclassified errors, accepted heartbeats. On a durable store
    /// each costs one fsync.
    pub writes: u64,
    /// Rounds of claiming: each a reap and a claim, and, when fewer jobs were due than slots
    /// free, a look at when the next is due. With nothing due in its queues a worker sleeps
    /// until then, at most [`Config::max_sleep`](crate::Config::max_sleep): a round a second
    /// by default, whatever other queues hold.
    pub rounds: u64,
    /// Jobs this worker's retention pruned (`Config::retain`), each leaving a tombstone.
    pub pruned: u64,
    /// Periodic jobs this worker enqueued (`Config::periodic`): new ids only, not those
    /// another worker, or this one before a restart, had enqueued already.
    pub enqueued: u64,
}
