//! How long a bulk import leaves SQLite's write lock free between two of its transactions
//! (`bulk.rs`), so that the other connections to the file get it.
//!
//! SQLite keeps no queue of writers. One that finds the write lock taken sleeps in its busy
//! handler — 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50 ms, then 100 ms at a time — and tries
//! again; it gets the lock only if a try falls while the lock is free. A writer that commits
//! and begins again at once leaves it free for microseconds, and a waiter's tries almost never
//! fall there: a worker's heartbeat waits out its lease (an import of 300,000 lines in one
//! transaction cost a healthy attempt its lease). So after each of its transactions an import
//! sleeps for a gap drawn at random (so that a waiter's tries do not fall into step with the
//! import's transactions) in proportion to how long the transaction held the lock:
//!
//! - while other connections write (one committed within [`CONTENDED_FOR`]), as long as the
//!   transaction on average: each try of a waiter falls in a gap with even odds, so a worker's
//!   heartbeat, with some 17 tries in the 833 ms its 2 s lease leaves it, fails all of them
//!   about once in 130,000;
//! - otherwise a quarter of it: an import alone runs at four fifths of its speed, and a writer
//!   that comes along still gets in within a few tries, after which the gaps are long again.
//!
//! A commit by another connection is seen by `PRAGMA data_version`, which changes when one
//! did; and since no other connection can commit while the import holds the lock, every such
//! commit fell in one of its gaps and is seen at the next transaction.

use std::time::{Duration, Instant};

/// How long after another connection's last commit an import keeps its long gaps: longer
/// than the time between a worker's heartbeats (a third of its lease) for any lease a worker
/// is likely to run with beside an import, so that its heartbeats, which are themselves
/// commits, keep the gaps long for as long as it runs.
pub(crate) const CONTENDED_FOR: Duration = Duration::from_secs(10);

/// The import's knowledge of the other writers, kept by the queue across imports.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Pace {
    /// `PRAGMA data_version` when last read.
    version: Option<i64>,
    /// Until when the gaps stay long: [`CONTENDED_FOR`] after the last commit seen of another
    /// connection.
    contended_until: Option<Instant>,
}

impl Pace {
    /// Notes `PRAGMA data_version` read at `now`, before a transaction: another connection
    /// committed since the last reading if it changed.
    pub(crate) fn read(&mut self, version: i64, now: Instant) {
        if self.version.is_some_and(|last| last != version) {
            self.contended_until = now.checked_add(CONTENDED_FOR);
        }
        self.version = Some(version);
    }

    /// Whether other connections have written lately (at `now`).
    pub(crate) fn contended(&self, now: Instant) -> bool {
        self.contended_until.is_some_and(|until| now < until)
    }

    /// The gap after a transaction that held the lock for `held`, at `now`, for a draw in
    /// `[0, 1)`: `held` times 0.5 … 1.5 while contended, times 0.125 … 0.375 otherwise.
    pub(crate) fn gap(&self, held: Duration, now: Instant, draw: f64) -> Duration {
        let draw = draw.clamp(0.0, 1.0);
        let share = if self.contended(now) { 0.5 + draw } else { 0.125 + draw / 4.0 };
        held.mul_f64(share)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_connections_commit_makes_the_gaps_long_for_a_while() {
        let start = Instant::now();
        let held = Duration::from_millis(8);
        let mut pace = Pace::default();
        pace.read(5, start);
        assert!(!pace.contended(start), "the first reading has nothing to compare with");
        assert_eq!(pace.gap(held, start, 0.0), Duration::from_millis(1));
        assert_eq!(pace.gap(held, start, 1.0), Duration::from_millis(3));
        pace.read(5, start + Duration::from_secs(1));
        assert!(!pace.contended(start + Duration::from_secs(1)), "no one else committed");
        let seen = start + Duration::from_secs(2);
        pace.read(6, seen);
        assert!(pace.contended(seen));
        assert_eq!(pace.gap(held, seen, 0.0), Duration::from_millis(4));
        assert_eq!(pace.gap(held, seen, 0.5), held);
        assert_eq!(pace.gap(held, seen, 1.0), Duration::from_millis(12));
        let later = seen + CONTENDED_FOR - Duration::from_millis(1);
        pace.read(6, later);
        assert!(pace.contended(later), "still within CONTENDED_FOR of the commit seen");
        assert!(!pace.contended(seen + CONTENDED_FOR), "and over after it");
    }
}
