//! How a connection waits for another process's write lock.
//!
//! SQLite's own busy handler (`busy_timeout`) sleeps 1, 2, 5, 10, 15, 20, 25 ms… between
//! tries. A worker woken by another process's commit (`listen.rs`: inotify fires at the log's
//! write, before that commit's fsync ends) meets the writer's lock and, with those steps,
//! claims some 8 ms after the commit that woke it, where the lock was free after one or two.
//! This handler tries again every [`FINE`] for the first [`FINE_TRIES`] tries (the length of a
//! commit's fsync), then at coarser steps, and gives up at the same limit `busy_timeout` had.

use std::time::{Duration, Instant};

use rusqlite::Connection;

/// The pause between the first tries: a failed try is one `fcntl`, so tries this close cost
/// little, and a lock released mid-pause is taken at most this late.
const FINE: Duration = Duration::from_micros(250);
/// How many fine tries before the pauses grow: 40 × 250 µs = 10 ms, longer than a commit's
/// fsync on the disks measured.
const FINE_TRIES: i32 = 40;
/// The pause after [`FINE_TRIES`] and before [`COARSE_TRIES`].
const MEDIUM: Duration = Duration::from_millis(1);
const COARSE_TRIES: i32 = 80;
/// The longest pause: a lock held this long is a long transaction, not a commit.
const COARSE: Duration = Duration::from_millis(5);

/// The pause before try `count + 1` (SQLite counts from 0).
fn pause(count: i32) -> Duration {
    if count < FINE_TRIES {
        FINE
    } else if count < COARSE_TRIES {
        MEDIUM
    } else {
        COARSE
    }
}

/// Installs the handler on `conn`: it waits for a lock up to `limit` in all, then lets the
/// statement fail with `SQLITE_BUSY`.
pub(crate) fn wait_for_locks(conn: &mut Connection, limit: Duration) -> rusqlite::Result<()> {
    let mut since = Instant::now();
    conn.busy_handler(Some(move |count: i32| {
        let now = Instant::now();
        if count == 0 {
            since = now;
        }
        let waited = now.saturating_duration_since(since);
        let Some(left) = limit.checked_sub(waited).filter(|left| !left.is_zero()) else { return false };
        std::thread::sleep(pause(count).min(left));
        true
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_pair() -> (tempfile::TempDir, Connection, Connection) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("busy.db");
        let holder = Connection::open(&path).expect("open");
        holder.pragma_update(None, "journal_mode", "wal").expect("wal");
        holder.execute_batch("CREATE TABLE t (x INTEGER)").expect("table");
        let waiter = Connection::open(&path).expect("open");
        (dir, holder, waiter)
    }

    #[test]
    fn pauses_start_fine_and_grow_to_a_cap() {
        assert_eq!(pause(0), FINE);
        assert_eq!(pause(FINE_TRIES - 1), FINE);
        assert_eq!(pause(FINE_TRIES), MEDIUM);
        assert_eq!(pause(COARSE_TRIES), COARSE);
        assert_eq!(pause(i32::MAX), COARSE);
    }

    #[test]
    fn a_lock_held_past_the_limit_fails_busy_and_not_before_the_limit() {
        let (_dir, holder, mut waiter) = file_pair();
        holder.execute_batch("BEGIN IMMEDIATE").expect("hold");
        let limit = Duration::from_millis(60);
        wait_for_locks(&mut waiter, limit).expect("handler");
        let start = Instant::now();
        let err = waiter.execute_batch("BEGIN IMMEDIATE").expect_err("the lock is held");
        assert_eq!(err.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy), "{err}");
        assert!(start.elapsed() >= limit, "gave up after {:?}, before {limit:?}", start.elapsed());
    }

    #[test]
    fn a_lock_released_while_waiting_is_taken() {
        let (_dir, holder, mut waiter) = file_pair();
        holder.execute_batch("BEGIN IMMEDIATE").expect("hold");
        wait_for_locks(&mut waiter, Duration::from_secs(10)).expect("handler");
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            holder.execute_batch("COMMIT").expect("release");
        });
        waiter
            .execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (1); COMMIT")
            .expect("waited for the lock");
        release.join().expect("holder");
    }

    #[test]
    fn each_wait_has_its_own_limit() {
        let (_dir, holder, mut waiter) = file_pair();
        let limit = Duration::from_millis(40);
        wait_for_locks(&mut waiter, limit).expect("handler");
        holder.execute_batch("BEGIN IMMEDIATE").expect("hold");
        assert!(waiter.execute_batch("BEGIN IMMEDIATE").is_err(), "the first wait gives up");
        holder.execute_batch("COMMIT").expect("release");
        std::thread::sleep(limit * 2);
        holder.execute_batch("BEGIN IMMEDIATE").expect("hold again");
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            holder.execute_batch("COMMIT").expect("release");
        });
        waiter.execute_batch("BEGIN IMMEDIATE; COMMIT").expect("a second wait starts its own clock");
        release.join().expect("holder");
    }
}
