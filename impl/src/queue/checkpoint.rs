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
    pub(super) frames: Arc<AtomicI32>,
    pub(super) next_at: i32,
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
