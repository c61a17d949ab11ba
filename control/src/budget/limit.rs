//! What a budget is: the trait every limit implements, and the limit that is none. Apart
//! from `mod.rs` so that each budget can implement the trait without depending on the module
//! that gathers them.

/// A limit on retries shared by every call to one target. `now_ms` is the caller's clock.
pub trait Budget {
    /// A call starts: its first attempt is about to be sent (not a retry).
    fn deposit(&mut self, now_ms: u64);

    /// An attempt ended: `success`, or a failure of a kind worth retrying (a failure the
    /// policy would never retry, like a malformed request, is not recorded: it says nothing
    /// about the target's health, as gRPC's throttling rules put it).
    fn record(&mut self, now_ms: u64, success: bool);

    /// May one more retry be sent? `true` spends it.
    fn withdraw(&mut self, now_ms: u64) -> bool;
}

/// No budget: every retry the policy allows is sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unlimited;

impl Budget for Unlimited {
    fn deposit(&mut self, _now_ms: u64) {}

    fn record(&mut self, _now_ms: u64, _success: bool) {}

    fn withdraw(&mut self, _now_ms: u64) -> bool {
        true
    }
}

impl<B: Budget + ?Sized> Budget for &mut B {
    fn deposit(&mut self, now_ms: u64) {
        (**self).deposit(now_ms)
    }

    fn record(&mut self, now_ms: u64, success: bool) {
        (**self).record(now_ms, success)
    }

    fn withdraw(&mut self, now_ms: u64) -> bool {
        (**self).withdraw(now_ms)
    }
}
