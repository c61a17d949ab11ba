//! Wake-ups: a worker with nothing due sleeps until its next due time (`next_due_in`), and a
//! job enqueued meanwhile would wait for its next look — up to a second. A store that can
//! tell when a job may have become due calls a [`Wake`] from a thread of its own, so that an
//! idle worker claims within milliseconds; the worker's own schedule stays the fallback, so a
//! lost wake-up costs latency, never a job.
//!
//! - PostgreSQL: the statements that make a job pending (an enqueue, a retry, a redrive)
//!   notify the schema's channel with the job's queue, by trigger, at their commit (schema 5,
//!   `pg/ddl.rs`); the listener holds a connection of its own that `LISTEN`s there, and
//!   connects again after a failure (waking the worker then, since something may have been
//!   missed).
//! - SQLite (Linux): every commit of any process appends to the database's write-ahead log;
//!   the listener watches the file's directory with inotify and wakes on each write of the
//!   log (or, in rollback mode, of the file). It cannot tell the queue, nor a commit that made
//!   a job due from any other: a worker looks, and finds nothing, at most once per burst of
//!   commits. Elsewhere there is no listener.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Called when a job may have become due: with its queue where the store can tell, else
/// `None`. From the listener's thread; it must not block.
pub type Wake = Arc<dyn Fn(Option<&str>) + Send + Sync>;

/// How often a listener's thread looks whether it was dropped.
pub(crate) const LOOK: Duration = Duration::from_millis(200);

/// A listener's thread: stopped when this is dropped. The drop does not wait for the thread,
/// which may be in the middle of a look of up to [`LOOK`] (a worker would return that much
/// later); no wake is called once the drop returned, and the thread ends, closing what it
/// holds, at its next look.
pub struct Listener {
    stopped: Arc<Mutex<bool>>,
}

/// What a listener's thread is given: whether its listener was dropped, and its wake, called
/// only while it was not.
pub(crate) struct Lookout {
    stopped: Arc<Mutex<bool>>,
    wake: Wake,
}

impl Lookout {
    pub(crate) fn stopped(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Calls the wake unless the listener was dropped; a drop waits for a wake under way.
    pub(crate) fn wake(&self, queue: Option<&str>) {
        let stopped = self.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        if !*stopped {
            (self.wake)(queue);
        }
    }
}

impl Listener {
    /// Runs `watch` on a thread named `name` until the listener is dropped; `watch` returns
    /// once its lookout says so (looking at least every [`LOOK`]), and wakes through it.
    pub(crate) fn spawn(
        name: &str,
        wake: Wake,
        watch: impl FnOnce(Lookout) + Send + 'static,
    ) -> std::io::Result<Listener> {
        let stopped = Arc::new(Mutex::new(false));
        let lookout = Lookout { stopped: Arc::clone(&stopped), wake };
        std::thread::Builder::new().name(name.into()).spawn(move || watch(lookout))?;
        Ok(Listener { stopped })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
    }
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener").finish_non_exhaustive()
    }
}

/// The SQLite listener: inotify on `path`'s directory, waking on every write of `path` or of
/// its write-ahead log.
#[cfg(target_os = "linux")]
pub(crate) fn sqlite(path: &std::path::Path, wake: Wake) -> std::io::Result<Option<Listener>> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::fs::inotify;

    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return Ok(None) };
    let dir = if dir.as_os_str().is_empty() { std::path::Path::new(".") } else { dir };
    let file = name.as_encoded_bytes().to_vec();
    let mut log = file.clone();
    log.extend_from_slice(b"-wal");
    let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)?;
    inotify::add_watch(&fd, dir, inotify::WatchFlags::MODIFY)?;
    let listener = Listener::spawn("retryq-listen", wake, move |lookout| {
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
        let look = Timespec { tv_sec: 0, tv_nsec: i64::from(LOOK.subsec_nanos()) };
        while !lookout.stopped() {
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            if poll(&mut fds, Some(&look)).is_err() {
                return;
            }
            let mut written = false;
            let mut events = inotify::Reader::new(&fd, &mut buf);
            while let Ok(event) = events.next() {
                let named = event.file_name().map(std::ffi::CStr::to_bytes);
                written |= named.is_some_and(|n| n == log.as_slice() || n == file.as_slice());
            }
            if written {
                lookout.wake(None);
            }
        }
    })?;
    Ok(Some(listener))
}

/// No listener where inotify is missing: the worker's schedule alone.
#[cfg(not(target_os = "linux"))]
pub(crate) fn sqlite(_path: &std::path::Path, _wake: Wake) -> std::io::Result<Option<Listener>> {
    Ok(None)
}
