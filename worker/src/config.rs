//! How a worker is told to run ([`Config`]), and why a configuration is refused
//! ([`ConfigError`]): checked once, before any claim, by [`crate::work`] and the store thread.

use std::path::PathBuf;
use std::time::Duration;

use retryq::Settings;

use crate::periodic::Periodic;

/// The shortest lease a worker runs with: 300 ms, a heartbeat every 100 ms.
///
/// The store thread renews each lease every third of it, one small transaction per
/// heartbeat, and keeps a quarter of it for stopping an attempt and recording it once two
/// heartbeats in a row failed. A commit takes milliseconds on a local disk; below 300 ms
/// the heartbeats would come so close together that a commit delayed by a loaded machine,
/// or the lock held by another worker's group commit, would cut attempts that were fine,
/// and the store thread would spend its time renewing rather than claiming and recording.
pub const MIN_LEASE: Duration = Duration::from_millis(300);

/// The longest the watchdog waits between SIGTERM and SIGKILL ([`Config::kill_grace`]): a
/// command that cleans up on SIGTERM gets this long.
pub const KILL_GRACE: Duration = Duration::from_millis(500);

/// How a worker runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The name its leases are held under (1–256 bytes).
    pub worker: String,
    /// The queues it serves (SPEC 3.3): 1 to 64 names; every claim takes the most urgent
    /// due job of all of them together.
    pub queues: Vec<String>,
    /// Lease, backoff base and cap, as the queue takes them.
    pub settings: Settings,
    /// The longest an attempt may run. It may be longer than the lease: the store thread
    /// renews the lease every third of it while the attempt runs (SPEC 3.12).
    pub timeout: Duration,
    /// Return once no job of the queues served is pending or leased (jobs of other queues do
    /// not keep it running).
    pub until_idle: bool,
    /// The longest sleep when nothing is due: how soon a newly enqueued job is seen.
    pub max_sleep: Duration,
    /// The SQLite file the store was opened on, if any: checked before each claim, and the
    /// loop stops once the path no longer names the file it opened ([`crate::DbFile`]).
    /// `None` for a store with no file (PostgreSQL, a queue in memory).
    pub db_file: Option<PathBuf>,
    /// How long before the lease's end, as last renewed by a committed heartbeat, every
    /// attempt is stopped — by the worker, and by the watchdog beside each `--exec` command
    /// when the worker cannot (stalled, frozen, killed): `None` for the default, a quarter of
    /// the lease ([`Config::margin`]).
    pub margin: Option<Duration>,
    /// Retention (SPEC 3.14): prune the done and dead jobs that ended at least this long
    /// ago, as the worker goes, at most [`PRUNE_BATCH`] a transaction (so the write lock is
    /// never held long) and at most one transaction every [`PRUNE_EVERY`] unless a full batch
    /// says more is waiting. `None`: the worker prunes nothing.
    pub retain: Option<Duration>,
    /// With retention, forget (SPEC 3.15) the tombstones of jobs that ended at least this long
    /// ago, in the same rounds: ends idempotency for those ids, and keeps the store's size
    /// bounded under steady load. `None`: tombstones are kept for good.
    pub forget: Option<Duration>,
    /// The periodic jobs it enqueues, each once per period into its first queue
    /// ([`Periodic`]): at start the period under way, then each as it begins on the store's
    /// clock. Every worker given the same ones enqueues the same ids, and the store keeps one
    /// of each.
    pub periodic: Vec<Periodic>,
}

/// The most jobs a worker's prune removes in one transaction.
pub const PRUNE_BATCH: u64 = 1_000;
/// How often a worker with retention prunes when the last prune found less than a batch.
pub const PRUNE_EVERY: Duration = Duration::from_secs(1);

impl Config {
    /// The defaults for `worker`: SPEC section 5's lease (30 s) and backoff (100 ms doubling
    /// up to 1 s), a 20 s timeout, one-second sleeps.
    pub fn new(worker: impl Into<String>) -> Config {
        Config {
            worker: worker.into(),
            queues: vec![retryq::DEFAULT_QUEUE.to_owned()],
            settings: Settings::default(),
            timeout: Duration::from_secs(20),
            until_idle: false,
            max_sleep: Duration::from_secs(1),
            db_file: None,
            margin: None,
            retain: None,
            forget: None,
            periodic: Vec::new(),
        }
    }

    /// The margin: how long before the lease's end an attempt is stopped, on the holder's own
    /// clocks. Given, or a quarter of the lease (7.5 s of the 30 s default; 75 ms of the
    /// shortest lease).
    ///
    /// The watchdog sends SIGTERM to the command's process group at `lease_until − margin`
    /// and SIGKILL [`Config::kill_grace`] later, so the command is gone by
    /// `lease_until − (margin − kill_grace)`: another worker claims the job only when its
    /// clock reads `lease_until`, so no two executions of a job overlap as long as the
    /// holder's clock runs behind the store's by less than `margin − kill_grace` (the skew
    /// the margin tolerates: 7 s at the defaults). This is the model's rule (docs/model.md,
    /// "Execution": "at most one execution of a job is live at any moment", with
    /// margin ≥ skew + grace).
    pub fn margin(&self) -> Duration {
        self.margin.unwrap_or(Duration::from_millis(self.settings.lease_ms) / 4)
    }

    /// The watchdog's wait between SIGTERM and SIGKILL: [`KILL_GRACE`], or an eighth of the
    /// lease if that is shorter (so that the default margin, a quarter, always holds it
    /// twice).
    pub fn kill_grace(&self) -> Duration {
        KILL_GRACE.min(Duration::from_millis(self.settings.lease_ms) / 8)
    }

    /// How often the store thread renews the lease of each attempt in flight: every third
    /// of the lease, so that one failed heartbeat leaves two thirds of it to try again.
    pub fn heartbeat_every(&self) -> Duration {
        Duration::from_millis(self.settings.lease_ms) / 3
    }

    /// Refuses a configuration the loop cannot run safely, saying why: the lease must be at
    /// least [`MIN_LEASE`] (see [`crate::Window`] for the argument).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.settings.validate().map_err(ConfigError::Settings)?;
        if self.worker.is_empty() || self.worker.len() > retryq_core::MAX_ID_BYTES {
            return Err(ConfigError::Worker { bytes: self.worker.len() });
        }
        if self.timeout.is_zero() {
            return Err(ConfigError::ZeroTimeout);
        }
        if Duration::from_millis(self.settings.lease_ms) < MIN_LEASE {
            return Err(ConfigError::LeaseTooShort {
                lease_ms: self.settings.lease_ms,
                least_ms: MIN_LEASE.as_millis(),
            });
        }
        if self.max_sleep.is_zero() {
            return Err(ConfigError::ZeroSleep);
        }
        for (n, periodic) in self.periodic.iter().enumerate() {
            if self.periodic[..n].iter().any(|p| p.name() == periodic.name()) {
                return Err(ConfigError::PeriodicTwice { name: periodic.name().to_owned() });
            }
        }
        let (margin, grace) = (self.margin(), self.kill_grace());
        let lease = Duration::from_millis(self.settings.lease_ms);
        if margin <= grace {
            return Err(ConfigError::MarginTooShort {
                margin_ms: margin.as_millis(),
                grace_ms: grace.as_millis(),
            });
        }
        if margin > lease / 2 {
            return Err(ConfigError::MarginTooLong {
                margin_ms: margin.as_millis(),
                most_ms: (lease / 2).as_millis(),
            });
        }
        Ok(())
    }
}

/// A [`Config`] the loop refuses to start with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The queue refused the lease and backoff settings.
    #[error(transparent)]
    Settings(retryq::Error),
    /// The worker name is empty or too long for the queue.
    #[error("worker: the name must be 1 to 256 bytes, not {bytes}")]
    Worker {
        /// Its length in bytes.
        bytes: usize,
    },
    /// A zero timeout would kill every attempt before it starts.
    #[error("timeout: must be at least 1 ms")]
    ZeroTimeout,
    /// The lease is too short to be renewed every third of it with time for each renewal
    /// to commit ([`MIN_LEASE`]).
    #[error(
        "lease: {lease_ms} ms is shorter than {least_ms} ms: the worker renews each lease every \
         third of it, and each renewal needs time to commit"
    )]
    LeaseTooShort {
        /// The lease asked for.
        lease_ms: u64,
        /// The shortest lease the worker runs with.
        least_ms: u128,
    },
    /// The margin does not hold the watchdog's SIGTERM-to-SIGKILL grace: a command could
    /// outlive its lease by the difference.
    #[error(
        "margin: {margin_ms} ms does not exceed the watchdog's grace of {grace_ms} ms (SIGTERM, then SIGKILL \
         that long after): the command could still run when the lease ends; give a margin above it"
    )]
    MarginTooShort {
        /// The margin asked for.
        margin_ms: u128,
        /// The grace between SIGTERM and SIGKILL ([`Config::kill_grace`]).
        grace_ms: u128,
    },
    /// The margin leaves the heartbeats no room: the watchdog would end attempts before a
    /// renewal every third of the lease could reach it.
    #[error(
        "margin: {margin_ms} ms is more than half the lease ({most_ms} ms): the worker renews each lease \
         every third of it, and the watchdog must not stop an attempt before a renewal can reach it"
    )]
    MarginTooLong {
        /// The margin asked for.
        margin_ms: u128,
        /// The longest margin this lease allows.
        most_ms: u128,
    },
    /// Two periodic jobs of one name would enqueue the same ids.
    #[error("periodic: {name:?} is given twice; each name is one periodic job")]
    PeriodicTwice {
        /// The name.
        name: String,
    },
    /// A zero sleep would spin on an empty queue.
    #[error("max_sleep: must be at least 1 ms")]
    ZeroSleep,
    /// No transport was given: [`work_in_slots`](crate::work_in_slots) runs one attempt slot per transport.
    #[error("at least one attempt slot (one transport) is needed")]
    NoSlots,
    /// The name plus the per-process suffix would pass the store's 256 bytes.
    #[error(
        "worker: the name is {bytes} bytes; with the per-process suffix ({suffix} bytes) it must fit in \
         256, so at most {most} bytes"
    )]
    WorkerTooLong {
        /// The name's length.
        bytes: usize,
        /// The suffix's length.
        suffix: usize,
        /// The longest name that fits with this suffix.
        most: usize,
    },
}

impl ConfigError {
    /// For [`ConfigError::LeaseTooShort`]: the shortest lease that would do.
    pub fn lease_needed_ms(&self) -> Option<u128> {
        match self {
            ConfigError::LeaseTooShort { least_ms, .. } => Some(*least_ms),
            _ => None,
        }
    }
}
