//! How an attempt is sent: the one thing the loop does not know.

use std::time::Duration;

use retryq::{Claimed, Report};

use crate::window::Window;

/// Sends one attempt of a claimed job and says what came of it.
///
/// The loop holds the lease and records the answer; the transport only sends. It must give
/// up when its [`Window`] closes (the timeout, the job's deadline, or the lease running out
/// by either clock), and return within [`Transport::grace`] after that, so that no attempt
/// outlives its lease or starts past the deadline.
pub trait Transport {
    /// One attempt of `job` within `window`: an outcome with notes for the operator (a
    /// [`Report`]), or an error the transport could not classify — after which the job waits
    /// for its lease to expire, as if the process had died.
    fn attempt(&mut self, job: &Claimed, window: &Window<'_>) -> Result<Report, Unclassified>;

    /// The longest the transport may take to return once its window has closed (to see its
    /// command gone and its output read). The worker counts it against the lease: it refuses
    /// a lease that cannot hold the timeout, this and its margin, and stops each attempt
    /// early enough to leave it.
    fn grace(&self) -> Duration {
        Duration::ZERO
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
}
