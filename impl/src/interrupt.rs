//! `Interrupt`: cancelling a store's running statement from another thread. Kept apart from
//! `backend.rs`, which names the stores, so that a store may implement it without an import
//! cycle.

/// Cancels, from any thread, the statement a store is running now, if any: the operation
/// fails with a passing error (PostgreSQL's 57014, `query_canceled`), which its caller may
/// try again. See [`Backend::interrupter`](crate::Backend::interrupter).
pub trait Interrupt: Send + Sync {
    /// Cancels the running statement; nothing if none runs.
    fn interrupt(&self);
}
