//! Time and sleeping, injected.
//!
//! SPEC section 1: "every operation takes its `now` from a clock the caller injects; nothing
//! reads time behind the caller's back". The attempt loop needs two things from time — the
//! current instant and a way to wait — so it takes both from a [`Clock`]. Two exist: the
//! [`SystemClock`] (Unix-epoch milliseconds, the SPEC's shared base, and a real sleep) and
//! the [`ManualClock`] of tests and simulations, where sleeping moves time forward at once.
//!
//! A reading can fail: the system clock is `retryq-core`'s, which refuses a time before 1970
//! or past 2^53 − 1 ms rather than clamping it (see [`retryq_core::clock`] for why), and the
//! attempt loop stops the call on such a reading ([`crate::Stop::ClockUnreadable`]).

use std::cell::Cell;
use std::time::Duration;

pub use retryq_core::ClockError;

/// Where the attempt loop reads the time and waits.
pub trait Clock {
    /// Milliseconds on the caller's time base, or why the clock cannot say.
    fn now_ms(&self) -> Result<u64, ClockError>;
    /// Wait `ms` milliseconds.
    fn sleep_ms(&self, ms: u64);
}

/// Unix-epoch milliseconds ([`retryq_core::now_ms`]) and a real [`std::thread::sleep`]. A
/// system clock set before 1970 or past 2^53 − 1 ms is a [`ClockError`]; a wall clock may step
/// backwards, and the loop copes (it only ever compares `now` with the deadline).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> Result<u64, ClockError> {
        retryq_core::now_ms()
    }

    fn sleep_ms(&self, ms: u64) {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// A clock that moves only when told: [`ManualClock::advance`], or a sleep, which returns at
/// once with the time moved on. Shared by reference between the loop and the operation it
/// runs, so an operation can spend simulated time.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: Cell<u64>,
    slept: Cell<u64>,
}

impl ManualClock {
    /// A clock reading `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        ManualClock { now: Cell::new(now_ms), slept: Cell::new(0) }
    }

    /// The time it reads, without the [`Clock`] trait's `Result`: a manual clock cannot fail.
    pub fn now(&self) -> u64 {
        self.now.get()
    }

    /// Move time forward by `ms` (saturating).
    pub fn advance(&self, ms: u64) {
        self.now.set(self.now.get().saturating_add(ms));
    }

    /// The total of every sleep so far.
    pub fn slept_ms(&self) -> u64 {
        self.slept.get()
    }
}

impl Clock for ManualClock {
    /// Never fails: a manual clock holds any `u64` the caller gives it.
    fn now_ms(&self) -> Result<u64, ClockError> {
        Ok(self.now.get())
    }

    fn sleep_ms(&self, ms: u64) {
        self.slept.set(self.slept.get().saturating_add(ms));
        self.advance(ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_sleep_moves_time_and_is_counted() {
        let clock = ManualClock::new(100);
        clock.sleep_ms(50);
        clock.advance(5);
        assert_eq!((clock.now_ms(), clock.slept_ms()), (Ok(155), 50));
    }

    #[test]
    fn the_system_clock_reads_the_unix_epoch() {
        // 2020-01-01 in Unix milliseconds: any machine running this is later.
        assert!(SystemClock.now_ms().is_ok_and(|now| now > 1_577_836_800_000));
    }
}
