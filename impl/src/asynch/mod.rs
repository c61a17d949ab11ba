//! `AsyncQueue`: the queue driven from async code, on a thread of its own.
//!
//! Every queue operation is a transaction that may wait for the disk (a durable commit is an
//! fsync), for another process's write lock (SQLite's busy timeout) or for the server
//! (PostgreSQL's). Run on a runtime's thread, that wait would stall every task scheduled
//! there. So the store — a SQLite `Queue` or a `PgQueue`, both synchronous — lives on one
//! dedicated thread and the handles send it requests over a channel, each answered on a
//! oneshot: a task awaits its answer and the runtime's threads never block. One thread and
//! one connection serve every clone of a handle, in the order the requests arrive — SQLite
//! takes one writer at a time anyway; on PostgreSQL, open one handle per connection wanted.

mod ops;
mod run_once;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::queue::store::{OpenOptions, Queue};

/// One operation for the queue's thread: a closure over its store that sends its own answer.
type Request = Box<dyn FnOnce(&mut dyn Backend) + Send>;

/// What a handle sends the queue's thread.
enum Message {
    Run(Request),
    /// Close the queue once the requests ahead of this one are answered, then say so.
    Close(oneshot::Sender<()>),
}

/// How many requests may wait for the queue's thread before a sender waits for room: enough
/// that the thread always has the next one at hand, few enough that a burst of tasks is
/// held back instead of buffered without bound.
const WAITING: usize = 64;

/// A handle on a store — a SQLite [`Queue`] or a `PgQueue` — that lives on a thread of its
/// own, for async code (feature `tokio`).
///
/// Each method sends its operation to the queue's thread and awaits the answer, so neither
/// an fsync nor a lock wait ever blocks a runtime thread. The operations, their arguments,
/// results, refusals and transactions are exactly the store's ([`Backend`]); borrowed arguments
/// are copied, because the thread must own what it works on even if the caller stops
/// waiting.
///
/// The handle is cheap to clone and `Send + Sync`: every clone talks to the same thread and
/// the same connection, which serve requests one at a time in the order they arrive. The
/// thread ends, closing the database, when the last clone is dropped, or at [`close`].
/// Afterwards — and if the thread stopped on a panic — every call is [`Error::Closed`].
///
/// Dropping a call's future does not take the operation back: once sent, it runs and
/// commits, and only its answer is lost. A dropped claim has spent its attempt and leaves
/// its job leased until the lease expires, exactly like a worker that crashed.
///
/// [`close`]: AsyncQueue::close
#[derive(Clone, Debug)]
pub struct AsyncQueue {
    requests: mpsc::Sender<Message>,
    /// The SQLite file, if the store is one.
    path: Option<Arc<PathBuf>>,
}

impl AsyncQueue {
    /// Opens (or creates) the database at `path` with the default durability, as
    /// [`Queue::open`] does, on the queue's new thread.
    pub async fn open(path: impl AsRef<Path>) -> Result<AsyncQueue> {
        AsyncQueue::open_with(path, &OpenOptions::default()).await
    }

    /// Opens the database at `path` with `options`, as [`Queue::open_with`] does (and with
    /// its refusals), on the queue's new thread.
    pub async fn open_with(path: impl AsRef<Path>, options: &OpenOptions) -> Result<AsyncQueue> {
        let path = path.as_ref().to_path_buf();
        let options = options.clone();
        AsyncQueue::start(move || Ok(Box::new(Queue::open_with(&path, &options)?))).await
    }

    /// Opens the store `db` names, as [`open_backend`](crate::open_backend) does: a
    /// `postgres://` URL (feature `postgres`; TLS by its `sslmode`) or a SQLite file's path
    /// (created if missing), on the queue's new thread.
    pub async fn connect(db: &str) -> Result<AsyncQueue> {
        let db = db.to_owned();
        AsyncQueue::start(move || crate::backend::open_backend(&db)).await
    }

    /// A fresh queue in memory, as [`Queue::open_in_memory`]: nothing survives its thread.
    pub async fn open_in_memory() -> Result<AsyncQueue> {
        AsyncQueue::start(|| Ok(Box::new(Queue::open_in_memory()?))).await
    }

    /// Moves a store opened (and set up) synchronously — a [`Queue`], a `PgQueue` or a
    /// `Box<dyn Backend>` — to a thread of its own.
    ///
    /// [`Error::Closed`] if the thread cannot be started; the store is then dropped.
    pub fn from_queue(store: impl Into<Box<dyn Backend>>) -> Result<AsyncQueue> {
        let store = store.into();
        let path = store.path().map(|p| Arc::new(p.to_path_buf()));
        let (requests, incoming) = mpsc::channel(WAITING);
        spawn(move || serve(store, incoming))?;
        Ok(AsyncQueue { requests, path })
    }

    /// Starts the queue's thread and opens the store there with `open`.
    async fn start(open: impl FnOnce() -> Result<Box<dyn Backend>> + Send + 'static) -> Result<AsyncQueue> {
        let (opened, answer) = oneshot::channel();
        let (requests, incoming) = mpsc::channel(WAITING);
        spawn(move || match open() {
            Ok(queue) => {
                // The opener may have stopped waiting: then nobody holds a handle, and the
                // loop ends at once.
                let _ = opened.send(Ok(queue.path().map(Path::to_path_buf)));
                serve(queue, incoming);
            }
            Err(e) => {
                let _ = opened.send(Err(e));
            }
        })?;
        let path = answer.await.map_err(|_| Error::Closed)??;
        Ok(AsyncQueue { requests, path: path.map(Arc::new) })
    }

    /// The SQLite file this queue is on (`:memory:` for an in-memory one); `None` on
    /// PostgreSQL.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref().map(PathBuf::as_path)
    }

    /// Runs `f` on the queue's thread with the store itself, and returns what it returns: the
    /// way to any [`Backend`] method this handle does not wrap (`audit`, `dead_jobs`,
    /// `redrive_dead`, …), or to several operations in a row with no other request between
    /// them (each is still its own transaction).
    ///
    /// `f` holds up every other request while it runs: it should do queue work only. If it
    /// panics, the thread stops and every later call is [`Error::Closed`].
    pub async fn call<T, F>(&self, f: F) -> Result<T>
    where
        F: FnOnce(&mut dyn Backend) -> T + Send + 'static,
        T: Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let request: Request = Box::new(move |queue| {
            // The caller may have stopped waiting; the work is done either way.
            let _ = answer.send(f(queue));
        });
        self.requests.send(Message::Run(request)).await.map_err(|_| Error::Closed)?;
        answered.await.map_err(|_| Error::Closed)
    }

    /// [`AsyncQueue::call`] for an operation that has its own refusals.
    async fn run<T, F>(&self, f: F) -> Result<T>
    where
        F: FnOnce(&mut dyn Backend) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        self.call(f).await?
    }

    /// Closes the queue for every clone of this handle: the requests sent before this one
    /// are answered, the database is closed, and then this returns. Every later call, on any
    /// clone, is [`Error::Closed`] — closing twice too. Dropping every clone closes the
    /// queue as well; this is for a caller that must know the file is closed.
    pub async fn close(&self) -> Result<()> {
        let (done, closed) = oneshot::channel();
        self.requests.send(Message::Close(done)).await.map_err(|_| Error::Closed)?;
        closed.await.map_err(|_| Error::Closed)
    }
}

/// Starts the queue's thread.
fn spawn(work: impl FnOnce() + Send + 'static) -> Result<()> {
    std::thread::Builder::new().name("retryq".into()).spawn(work).map(drop).map_err(|_| Error::Closed)
}

/// The queue's thread: answers requests in order until every handle is gone or one closes
/// the queue. Blocking here is the point: this thread belongs to no runtime.
fn serve(mut store: Box<dyn Backend>, mut incoming: mpsc::Receiver<Message>) {
    while let Some(message) = incoming.blocking_recv() {
        match message {
            Message::Run(request) => request(&mut *store),
            Message::Close(done) => {
                // Refuse new requests first; those already waiting are dropped unanswered
                // with the receiver, and their callers see `Closed`.
                incoming.close();
                drop(store);
                let _ = done.send(());
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_is_send_sync_and_clone() {
        fn check<T: Send + Sync + Clone + 'static>() {}
        check::<AsyncQueue>();
    }
}
