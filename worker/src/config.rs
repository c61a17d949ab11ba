//! How a worker is told to run ([`Config`]), and why a configuration is refused
//! ([`ConfigError`]): checked once, before any claim, by [`crate::work`] and the store thread.

use std::time::Duration;

use retryq::Settings;

use crate::window::MARGIN;

/// How a worker runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The name its leases are held under (1–256 bytes).
    pub worker: String,
    /// Lease, backoff base and cap, as the queue takes them.
    pub settings: Settings,
    /// The longest an attempt may run. The lease must hold it, the transport's grace and
    /// the [`MARGIN`], so that the lease outlives every attempt, with time to stop the
    /// command and record the outcome.
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

    /// Refuses a configuration the loop cannot run safely with a transport whose
    /// [`Transport::grace`](crate::Transport::grace) is `grace`, saying why: the lease must hold the timeout, the
    /// grace and the [`MARGIN`] (see [`crate::Window`] for the argument).
    pub fn validate(&self, grace: Duration) -> Result<(), ConfigError> {
        self.settings.validate().map_err(ConfigError::Settings)?;
        if self.worker.is_empty() || self.worker.len() > retryq_core::MAX_ID_BYTES {
            return Err(ConfigError::Worker { bytes: self.worker.len() });
        }
        if self.timeout.is_zero() {
            return Err(ConfigError::ZeroTimeout);
        }
        let needed = self.timeout.saturating_add(grace).saturating_add(MARGIN);
        if Duration::from_millis(self.settings.lease_ms) < needed {
            return Err(ConfigError::LeaseTooShort {
                lease_ms: self.settings.lease_ms,
                timeout_ms: self.timeout.as_millis(),
                grace_ms: grace.as_millis(),
                margin_ms: MARGIN.as_millis(),
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
    /// The lease would run out while the attempt may still run, letting another worker claim
    /// the job meanwhile.
    #[error(
        "lease: {lease_ms} ms cannot hold the timeout ({timeout_ms} ms), what the worker may wait \
         past it ({grace_ms} ms) and the margin to record the outcome ({margin_ms} ms); another \
         worker could claim the job while this one still runs or records it"
    )]
    LeaseTooShort {
        /// The lease asked for.
        lease_ms: u64,
        /// The attempt's timeout.
        timeout_ms: u128,
        /// How long the worker waits after the timeout for the attempt to stop.
        grace_ms: u128,
        /// The time kept to record the outcome.
        margin_ms: u128,
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
            ConfigError::LeaseTooShort { timeout_ms, grace_ms, margin_ms, .. } => {
                Some(timeout_ms + grace_ms + margin_ms)
            }
            _ => None,
        }
    }
}
