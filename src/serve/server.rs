//! The dashboard's HTTP server: everything a client can make it hold before it signs in is
//! bounded.
//!
//! - **Connections.** At most [`Limits::connections`] are open at once, each a task on one
//!   thread (tokio's current-thread runtime), not a thread of its own. When all are taken, a
//!   new connection takes the place of the one that has waited longest without sending its
//!   whole request (it is answered 503 and closed); if every connection has sent its request,
//!   the new one is answered 503 with `Retry-After` and closed. So clients that open
//!   connections and send nothing, or a byte now and then, cannot keep a signed-in request
//!   out.
//! - **Time.** A connection has [`Limits::request_timeout`] from its acceptance to send its
//!   whole request, head and body (408 after it, or just a close if it sent nothing), and as
//!   long again to take the answer. One request per connection (`Connection: close`): no idle
//!   connection is kept between requests.
//! - **Size.** A head of at most [`MAX_HEAD_BYTES`](super::wire::MAX_HEAD_BYTES) bytes and
//!   [`MAX_HEADERS`](super::wire::MAX_HEADERS) fields (431 beyond), read into a buffer that
//!   grows with what arrives; a body of at most
//!   [`MAX_BODY_BYTES`](super::http::MAX_BODY_BYTES) (413 beyond, from its `Content-Length`,
//!   before any of it is read; 411 for a chunked one).
//! - **The store.** The guard runs here ([`Routes::answer`]): only an admitted request is
//!   handed to one of the `--threads` threads that own the store's connections.
//!
//! Memory is then at most about `connections × (head + body)` on top of the process's own,
//! and the threads are this one, the store's, the signal watcher and the charts' sampler
//! (`activity.rs`), none per client. Why not hyper, already
//! in the tree: it closes a connection whose head is too slow without a status, and cannot
//! give a connection's place to another; the rest is `httparse`, which hyper uses too.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use retryq::Backend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio::time::{Instant, timeout, timeout_at};

use super::http::{Request, Response};
use super::routes::{Answer, Routes};
use super::wire::{self, MAX_HEAD_BYTES, Refused};
use crate::out::noteln;

/// What a client may hold.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections open at once.
    pub connections: usize,
    /// From acceptance to the whole request; and again for the answer to be taken.
    pub request_timeout: Duration,
}

/// How long a new connection waits for the place of the one it pushed out.
const TAKE_PLACE: Duration = Duration::from_secs(1);
/// How long, at most, the rest of a refused request is read and dropped after the answer:
/// closing a socket with unread data resets the connection, and the client may then lose
/// the answer (a 413, a 431) before reading it.
const LINGER: Duration = Duration::from_secs(1);
/// How many bytes of it, at most.
const LINGER_BYTES: usize = 1 << 20;
/// The wait after a failed accept (out of file descriptors, say) before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// A request handed to a store thread, and where its answer goes.
struct Job {
    request: Request,
    answer: oneshot::Sender<Response>,
}

/// What every connection shares.
struct Shared {
    routes: Arc<Routes>,
    limits: Limits,
    places: Arc<Semaphore>,
    /// The connections still reading their request (or the rest of a refused one), by order
    /// of acceptance: who gives up its place when all are taken.
    reading: Mutex<BTreeMap<u64, oneshot::Sender<()>>>,
    store: mpsc::Sender<Job>,
}

impl Shared {
    /// Asks the connection that has waited longest for its request to give up its place;
    /// whether there was one.
    fn push_out_oldest(&self) -> bool {
        let mut reading = self.reading.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some((_, leave)) = reading.pop_first() {
            if leave.send(()).is_ok() {
                return true;
            }
        }
        false
    }

    fn done_reading(&self, seq: u64) {
        self.reading.lock().unwrap_or_else(PoisonError::into_inner).remove(&seq);
    }
}

/// Serves `listener` until `stop` completes: each admitted request on one of `stores`, each
/// on a thread of its own. Returns once the store threads have finished what they were
/// given.
pub fn serve(
    listener: std::net::TcpListener,
    routes: Arc<Routes>,
    stores: Vec<Box<dyn Backend>>,
    limits: Limits,
    stop: impl Future<Output = ()>,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()?;
    let (store, jobs) = mpsc::channel::<Job>(limits.connections.max(1));
    let jobs = Arc::new(Mutex::new(jobs));
    let mut threads = Vec::new();
    for (n, mut backend) in stores.into_iter().enumerate() {
        let (jobs, routes) = (Arc::clone(&jobs), Arc::clone(&routes));
        threads.push(std::thread::Builder::new().name(format!("retryq-serve-{n}")).spawn(move || {
            loop {
                // One thread waits on the channel at a time; the others on the lock.
                let job = jobs.lock().unwrap_or_else(PoisonError::into_inner).blocking_recv();
                let Some(job) = job else { return };
                let response = routes.with_store(&mut *backend, &job.request);
                // The client may have gone: its connection was dropped.
                let _ = job.answer.send(response);
            }
        })?);
    }
    let shared = Arc::new(Shared {
        routes,
        limits,
        places: Arc::new(Semaphore::new(limits.connections)),
        reading: Mutex::new(BTreeMap::new()),
        store,
    });
    let served = runtime.block_on(async move {
        let listener = TcpListener::from_std(listener)?;
        tokio::pin!(stop);
        let mut seq = 0u64;
        loop {
            let accepted = tokio::select! {
                () = &mut stop => return Ok::<(), io::Error>(()),
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, _)) = accepted else {
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            };
            let Some(place) = take_place(&shared).await else {
                busy(&stream, shared.limits.connections);
                continue;
            };
            seq += 1;
            let (leave, told) = oneshot::channel();
            shared.reading.lock().unwrap_or_else(PoisonError::into_inner).insert(seq, leave);
            tokio::spawn(connection(stream, Arc::clone(&shared), seq, told, place));
        }
    });
    // The runtime goes, and with it every connection and the sender the store threads wait
    // on: they end once idle.
    drop(runtime);
    for thread in threads {
        let _ = thread.join();
    }
    served
}

/// A place for a new connection: a free one, or the one a connection still reading its
/// request gives up; `None` when every connection has sent its request.
async fn take_place(shared: &Shared) -> Option<OwnedSemaphorePermit> {
    if let Ok(place) = Arc::clone(&shared.places).try_acquire_owned() {
        return Some(place);
    }
    if !shared.push_out_oldest() {
        return None;
    }
    timeout(TAKE_PLACE, Arc::clone(&shared.places).acquire_owned()).await.ok()?.ok()
}

/// Answers 503 without waiting: the answer fits the empty send buffer of a new connection.
fn busy(stream: &TcpStream, connections: usize) {
    let response = Response {
        retry_after: Some("1".into()),
        ..Response::text(503, format!("busy: all {connections} connections are taken; try again"))
    };
    let _ = stream.try_write(&response.to_bytes());
}

/// One connection: its request, read within the limits, then its answer; the place is
/// given back when it ends.
async fn connection(
    mut stream: TcpStream,
    shared: Arc<Shared>,
    seq: u64,
    pushed_out: oneshot::Receiver<()>,
    _place: OwnedSemaphorePermit,
) {
    let _ = stream.set_nodelay(true);
    let deadline = Instant::now() + shared.limits.request_timeout;
    let mut pushed_out = pushed_out;
    let read = tokio::select! {
        read = timeout_at(deadline, read_request(&mut stream, deadline)) => read,
        Ok(()) = &mut pushed_out => {
            busy(&stream, shared.limits.connections);
            return;
        }
    };
    let answer_by = Instant::now() + shared.limits.request_timeout;
    let refused = match read {
        Ok(Ok(request)) => Ok(request),
        Ok(Err(refused)) => Err(refused),
        Err(_) => Err(Some(Refused::Timeout(shared.limits.request_timeout.as_millis()))),
    };
    let request = match refused {
        Ok(request) => request,
        // Nothing arrived, or the connection failed: nobody to answer.
        Err(None) => return,
        // A refusal holds its place while the rest of the request is read and dropped, but
        // gives it up to a newer connection as one still reading would.
        Err(Some(refused)) => {
            tokio::select! {
                () = refuse(stream, &refused, answer_by) => {}
                Ok(()) = pushed_out => {}
            }
            return shared.done_reading(seq);
        }
    };
    shared.done_reading(seq);
    let response = match shared.routes.answer(&request) {
        Answer::Now(response) => response,
        Answer::Store => {
            let (answer, answered) = oneshot::channel();
            if shared.store.send(Job { request: request.clone(), answer }).await.is_err() {
                return;
            }
            match answered.await {
                Ok(response) => response,
                Err(_) => return,
            }
        }
    };
    if response.status >= 400 && response.status != 404 {
        noteln!(
            "retryq serve: {} {} → {} {}",
            request.method,
            crate::printable::printable(&request.path),
            response.status,
            crate::printable::printable(&String::from_utf8_lossy(
                &response.body[..response.body.len().min(200)]
            ))
        );
    }
    let _ = timeout_at(answer_by, stream.write_all(&response.to_bytes())).await;
}

/// Answers a refused request with its status and closes, reading and dropping what the
/// client may still send for a moment first.
async fn refuse(mut stream: TcpStream, refused: &Refused, answer_by: Instant) {
    let response = Response::text(refused.status(), refused.to_string());
    if timeout_at(answer_by, stream.write_all(&response.to_bytes())).await.is_ok_and(|sent| sent.is_ok()) {
        let _ = stream.shutdown().await;
        let mut sink = vec![0; 16 * 1024];
        let mut drained = 0;
        let until = Instant::now() + LINGER;
        while drained < LINGER_BYTES {
            match timeout_at(until, stream.read(&mut sink)).await {
                Ok(Ok(n)) if n > 0 => drained += n,
                _ => break,
            }
        }
    }
}

/// Reads one request, head and body. `Err(None)`: the client went away before sending
/// anything (or the connection failed), and no answer is owed.
async fn read_request(stream: &mut TcpStream, deadline: Instant) -> Result<Request, Option<Refused>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let (end, head) = loop {
        let room = MAX_HEAD_BYTES.saturating_sub(buf.len());
        if room == 0 {
            return Err(Some(Refused::HeadTooLarge));
        }
        let n = match stream.read(&mut chunk[..room.min(4096)]).await {
            Ok(0) if buf.is_empty() => return Err(None),
            Ok(0) => return Err(Some(Refused::Closed)),
            Ok(n) => n,
            Err(_) => return Err(None),
        };
        let from = buf.len();
        buf.extend_from_slice(&chunk[..n]);
        if !wire::ends_head(&buf, from) {
            continue;
        }
        match wire::parse(&buf) {
            Ok(Some(parsed)) => break parsed,
            // An empty line the parser does not take as the end (inside a field): read on.
            Ok(None) => continue,
            Err(refused) => return Err(Some(refused)),
        }
    };
    let mut body = buf.split_off(end);
    // One request per connection: anything past its body is not read.
    body.truncate(head.body);
    if body.len() < head.body && head.expects_continue {
        let _ = timeout_at(deadline, stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")).await;
    }
    while body.len() < head.body {
        let want = (head.body - body.len()).min(chunk.len());
        match stream.read(&mut chunk[..want]).await {
            Ok(0) => return Err(Some(Refused::Closed)),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(_) => return Err(None),
        }
    }
    Ok(Request::new(&head.method, &head.target, &head.fields(), &body))
}
