//! `Lease`: the name of one held attempt, which every call acting on it presents.

/// The fencing token of one attempt: `worker` holds job `id` on attempt `attempt`.
///
/// [`Queue::claim`](crate::Queue::claim) hands one out inside [`Claimed`](crate::Claimed);
/// [`Queue::complete`](crate::Queue::complete) and
/// [`Queue::record_error`](crate::Queue::record_error) present it back. Holding a `Lease`
/// proves nothing: the store checks, on every call, that the job is leased to `worker` on
/// exactly this attempt, and refuses with [`Error::LeaseLost`](crate::Error::LeaseLost)
/// otherwise. That is why anyone may build one with [`Lease::new`] — a replayed trace or a
/// test presents a stale or forged lease on purpose, and the store, not the type, decides.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Lease {
    /// The worker the job was leased to.
    pub worker: String,
    /// The job's id.
    pub id: String,
    /// The attempt's number: the job's `attempts` right after the claim.
    pub attempt: u64,
}

impl Lease {
    /// A lease naming `worker`, job `id` and `attempt`, whether or not it is held.
    pub fn new(worker: impl Into<String>, id: impl Into<String>, attempt: u64) -> Lease {
        Lease { worker: worker.into(), id: id.into(), attempt }
    }
}
