//! Checkpoints that let the write-ahead log start over while writers take turns.
//!
//! SQLite's own checkpoint (`wal_autocheckpoint`: a passive one after each commit once the log
//! holds 1000 frames) copies the log into the database, but the log only starts over from its
//! beginning when a writer begins at a moment when every frame has been copied. Two worker
//! processes sharing a file hand the write lock to each other at every commit: the waiting one
//! begins before the other's checkpoint has run, so that moment never comes. The log then grew
//! by every frame written (some 30 MB a second with two workers, `docs/benchmarks.md`), and
//! each commit past the 1000th frame ran a checkpoint of its own, with two more fsyncs.
//!
//! So a queue's connection runs its own: once a commit leaves [`FRAMES`] frames or more in the
//! log, a *restart* checkpoint, which holds new writers back for the moment it takes, copies
//! everything, and waits for readers of older snapshots to finish, so that the next writer
//! starts the log over. It waits at most [`WAIT`] for the other writer and those readers; a
//! reader that takes longer (a long `audit`) is not waited for again before the log has grown
//! by another [`FRAMES`], and meanwhile the checkpoint copies what it can, as SQLite's would.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use rusqlite::Connection;
use rusqlite::wal::CheckpointMode;

use super::busy;

/// The log's size, in frames, at which a checkpoint runs: SQLite's own default.
pub(super) const FRAMES: i32 = 1000;

/// The longest a checkpoint waits for the other writer's transaction and for readers of an
/// older snapshot: many commits' worth, so a lock handed back and forth is met in time.
pub(super) const WAIT: Duration = Duration::from_millis(100);

/// One connection's log: how many frames its last commit left in it (told by SQLite's
/// write-ahead-log hook, which replaces the automatic checkpoint), and the size at which the
/// next checkpoint runs.
#[derive(Debug)]
pub(super) struct Log {
    frames: Arc<AtomicI32>,
    next_at: i32,
}

impl Log {
    /// Installs the hook on `conn`: from now on this connection checkpoints only through
    /// [`Log::after_commit`].
    pub(super) fn watch(conn: &mut Connection) -> rusqlite::Result<Log> {
        let frames = Arc::new(AtomicI32::new(0));
        let told = Arc::clone(&frames);
        conn.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages: i32| {
            told.store(pages, Ordering::Relaxed);
            Ok(())
        }))?;
        Ok(Log { frames, next_at: FRAMES })
    }

    /// Runs a checkpoint if the commit just made left the log at its size for one. The commit
    /// stands whatever happens here: a checkpoint that fails or cannot finish only leaves the
    /// log longer, as SQLite's own would, so nothing is returned. `busy_timeout` is the
    /// connection's own wait, put back afterwards.
    pub(super) fn after_commit(&mut self, conn: &mut Connection, busy_timeout: Duration) {
        let frames = self.frames.load(Ordering::Relaxed);
        if frames < self.next_at {
            if frames < FRAMES {
                self.next_at = FRAMES;
            }
            return;
        }
        let restarted = busy::wait_for_locks(conn, WAIT)
            .and_then(|()| conn.wal_checkpoint_v2(None::<&str>, CheckpointMode::RESTART));
        // The connection's own wait back before anything else runs. SQLite's call that sets a
        // busy handler cannot fail; were it to, the shorter wait would stay, and nothing else.
        let _ = busy::wait_for_locks(conn, busy_timeout);
        self.next_at = match restarted {
            Ok((log, copied)) if log == copied => FRAMES,
            _ => frames.saturating_add(FRAMES),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Completion, NewJob, Outcome, Queue};

    fn enqueue(q: &mut Queue, id: &str) {
        q.enqueue(&NewJob {
            id,
            payload: "{}",
            max_attempts: 3,
            deadline: 1 << 40,
            now: 0,
            ..NewJob::default()
        })
        .expect("enqueue");
    }

    fn frames(q: &Queue) -> i32 {
        q.log.as_ref().expect("a file's queue watches its log").frames.load(Ordering::Relaxed)
    }

    /// Two writers on two connections, each taking jobs through as fast as it can: the lock
    /// goes back and forth at every commit. With SQLite's own checkpoint the log never
    /// started over: it grew by every frame written (hundreds of MB here).
    #[test]
    fn two_writers_taking_turns_keep_the_log_short() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("turns.db");
        drop(Queue::open(&path).expect("create"));
        // Open through the end, so that the last writer's close leaves the log for a look.
        let keeper = Connection::open(&path).expect("keeper");
        keeper.query_row("SELECT count(*) FROM jobs", [], |_| Ok(())).expect("read");
        let workers: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|name| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut q = Queue::open(&path).expect("open");
                    for i in 0..600 {
                        enqueue(&mut q, &format!("{name}-{i}"));
                        if let Some(job) = q.claim(name, 1).expect("claim") {
                            q.complete(&Completion::new(&job.lease, Outcome::Ok, 1, 0.0)).expect("complete");
                        }
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().expect("worker");
        }
        let wal = std::fs::metadata(path.with_extension("db-wal")).expect("the log").len();
        // 3,600 commits of about 10 frames of 4 KiB each: about 150 MB if the log never
        // started over; a log that starts over once it holds 1,000 frames stays near 4 MB.
        assert!(wal < 16 << 20, "the log grew to {wal} bytes");
    }

    /// A reader of an older snapshot keeps the log from starting over: the checkpoint waits
    /// for it at most once per 1,000 frames written, and once it is gone the log starts over.
    #[test]
    fn a_reader_of_an_old_snapshot_defers_the_next_try_and_its_end_lets_the_log_start_over() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("reader.db");
        let mut q = Queue::open(&path).expect("open");
        enqueue(&mut q, "first");
        let reader = Connection::open(&path).expect("reader");
        reader.execute_batch("BEGIN; SELECT count(*) FROM jobs;").expect("snapshot");
        let mut i = 0;
        while frames(&q) < FRAMES {
            enqueue(&mut q, &format!("held-{i}"));
            i += 1;
        }
        let tried_at = frames(&q);
        let next_at = q.log.as_ref().expect("log").next_at;
        assert!(
            next_at >= tried_at + FRAMES,
            "the next try waits for the log to grow: {next_at} after {tried_at}"
        );
        reader.execute_batch("COMMIT").expect("reader done");
        let mut restarted = false;
        for j in 0..400 {
            enqueue(&mut q, &format!("free-{j}"));
            if frames(&q) < tried_at {
                restarted = true;
                break;
            }
        }
        assert!(restarted, "the log started over once the reader was gone");
    }

    /// The checkpoint's own short wait is the connection's only for the checkpoint: a write
    /// after it still waits the full busy timeout for another process's lock.
    #[test]
    fn after_a_checkpoint_a_write_waits_the_connections_own_busy_timeout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("wait.db");
        let mut q = Queue::open(&path).expect("open");
        let mut i = 0;
        let mut last = 0;
        loop {
            enqueue(&mut q, &format!("j-{i}"));
            i += 1;
            let now = frames(&q);
            if now < last {
                break; // a checkpoint ran and the log started over
            }
            last = now;
        }
        let holder = Connection::open(&path).expect("holder");
        holder.execute_batch("BEGIN IMMEDIATE").expect("hold the lock");
        let release = std::thread::spawn(move || {
            std::thread::sleep(WAIT * 4);
            holder.execute_batch("COMMIT").expect("release");
        });
        enqueue(&mut q, "after");
        release.join().expect("holder");
    }
}
