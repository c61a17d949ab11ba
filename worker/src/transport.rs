//! How an attempt is sent: the one thing the loop does not know.

use std::time::Duration;

use retryq::{Claimed, Report};

/// Sends one attempt of a claimed job and says what came of it.
///
/// The loop holds the lease and records the answer; the transport only sends. It must give
/// up after `timeout` (bounded by the job's deadline and shorter than the lease), so that
/// no attempt outlives its lease or starts past the deadline.
pub trait Transport {
    /// One attempt of `job`: an outcome with notes for the operator (a [`Report`]), or an
    /// error the transport could not classify — after which the job waits for its lease to
    /// expire, as if the process had died.
    fn attempt(&mut self, job: &Claimed, timeout: Duration) -> Result<Report, Unclassified>;
}

/// An attempt's result that is neither success, nor worth retrying, nor permanent: the
/// SPEC's `unknown`. Its text is logged and noted on the job.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unclassified(pub String);

/// A boxed transport, so that a command line can pick one at run time.
impl<T: Transport + ?Sized> Transport for Box<T> {
    fn attempt(&mut self, job: &Claimed, timeout: Duration) -> Result<Report, Unclassified> {
        (**self).attempt(job, timeout)
    }
}
