//! Waiting out a store that is away: a busy or full SQLite file, or a PostgreSQL server
//! that dropped the connection, is restarting, or cannot be reached.
//!
//! Every store operation that fails for a passing reason ([`retryq::Error::is_transient`])
//! is reported here. The first failure of an outage is logged once, as one clear line; the
//! ones after it only at debug level; the first success after it logs how long the outage
//! lasted. Between failures the store thread waits a capped exponential backoff, with
//! jitter so that many workers that lost one server do not all come back in the same
//! instant: 50 ms, doubling, at most 2 s, each wait drawn between half and all of it.

use std::time::{Duration, Instant};

use rand::RngExt;
use retryq::Error;
use tracing::{debug, info, warn};

/// The first wait after a failure.
pub(crate) const FIRST: Duration = Duration::from_millis(50);
/// The longest wait between two tries: how late a worker may notice that its server is back.
pub(crate) const CAP: Duration = Duration::from_secs(2);

/// The outage under way, if any.
#[derive(Debug, Default)]
pub(crate) struct Outage {
    /// When the first failure of this outage happened; `None` while the store answers.
    since: Option<Instant>,
    /// Failures in a row.
    failures: u32,
}

impl Outage {
    /// Notes a passing failure of `what` (a claim, a commit, …): how long to wait before
    /// the next try. Logs the first failure of an outage.
    pub(crate) fn failed(&mut self, what: &str, e: &Error) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let wait = self.wait();
        match self.since {
            None => {
                self.since = Some(Instant::now());
                warn!(
                    during = what, error = %e,
                    "the store cannot be used for now; the worker keeps trying (backoff up to {} ms), \
                     the attempts under way run on and stay leased",
                    CAP.as_millis()
                );
            }
            Some(_) => {
                debug!(during = what, error = %e, failures = self.failures, wait_ms = wait.as_millis() as u64, "store still failing")
            }
        }
        wait
    }

    /// Notes that the store answered: ends the outage, if any, with one line.
    pub(crate) fn answered(&mut self) {
        if let Some(since) = self.since.take() {
            info!(
                failures = self.failures,
                lasted_ms = since.elapsed().as_millis() as u64,
                "the store answers again"
            );
        }
        self.failures = 0;
    }

    /// `FIRST · 2^(failures − 1)`, at most [`CAP`], drawn between half and all of it.
    fn wait(&self) -> Duration {
        let doublings = self.failures.saturating_sub(1).min(16);
        let full = FIRST.saturating_mul(1 << doublings).min(CAP);
        let half = full / 2;
        half + full.saturating_sub(half).mul_f64(rand::rng().random::<f64>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transient() -> Error {
        Error::Storage(rusqlite_busy())
    }

    fn rusqlite_busy() -> retryq::rusqlite::Error {
        retryq::rusqlite::Error::SqliteFailure(
            retryq::rusqlite::ffi::Error::new(retryq::rusqlite::ffi::SQLITE_BUSY),
            None,
        )
    }

    #[test]
    fn the_wait_doubles_up_to_the_cap_and_an_answer_ends_the_outage() {
        let mut outage = Outage::default();
        let e = transient();
        assert!(e.is_transient(), "{e}");
        let mut last_full = Duration::ZERO;
        for n in 1..=12u32 {
            let wait = outage.failed("claim", &e);
            let full = FIRST.saturating_mul(1 << (n - 1).min(16)).min(CAP);
            assert!(wait >= full / 2 && wait <= full, "failure {n}: {wait:?} for {full:?}");
            assert!(full >= last_full);
            last_full = full;
        }
        assert_eq!(last_full, CAP);
        assert!(outage.since.is_some());
        outage.answered();
        assert!(outage.since.is_none());
        assert!(outage.failed("claim", &e) <= FIRST);
    }
}
