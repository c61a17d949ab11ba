//! `prune` and `forget`: retention that keeps every promise (SPEC 3.14, 3.15).

use super::store::Queue;
use crate::error::Result;
use crate::input;

impl Queue {
    /// SPEC 3.14.
    pub fn prune(&mut self, before: u64, now: u64) -> Result<u64> {
        input::before(before, now)?;
        todo!("prune")
    }

    /// See [`Backend::prune_at_most`](crate::Backend::prune_at_most).
    pub fn prune_at_most(&mut self, before: u64, now: u64, limit: u64) -> Result<u64> {
        input::before(before, now)?;
        let _ = limit;
        todo!("prune_at_most")
    }

    /// SPEC 3.15.
    pub fn forget(&mut self, before: u64, now: u64) -> Result<u64> {
        input::before(before, now)?;
        todo!("forget")
    }
}
