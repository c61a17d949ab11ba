//! The warehouse on HTTP/1.1, on 127.0.0.1: one thread accepts connections, a fixed pool of
//! `threads` threads serves them, one request per connection (see [`crate::http`] for why
//! not tiny_http).
//!
//! | request | answer |
//! |---|---|
//! | `POST` any path but the two below | an order: 201 accepted, 200 duplicate (dropped), 400 malformed or short, 408 too slow, 411 no `Content-Length`, 413 too large, 431 key or head too large, 507 inbox full, or the injected failure |
//! | `GET /stats` | [`Stats`] as JSON |
//! | `GET /inbox?after=N&limit=M` | [`Page`](crate::Page): `{"orders":[{"seq","key","payload","requests"}…],"next"}`, in the order accepted |
//! | any other `GET` | 404; any other method on `/stats` or `/inbox`: 405 |
//!
//! What bounds what: at most `threads` connections are served and [`MAX_WAITING`] more wait;
//! any more is answered 503 at once by the accepting thread, which never reads from a client.
//! A served connection has [`Config::read_timeout`] to send its whole request, so a stalled
//! client holds a thread for that long at most, and only `threads` request bodies (each at
//! most [`MAX_BODY_BYTES`](crate::MAX_BODY_BYTES)) are in memory at once.

use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use crate::http::{Connection, Head, Length};
use crate::{
    Config, ConfigError, INBOX_PAGE, INBOX_PAGE_MAX, MAX_BODY_BYTES, MAX_KEY_BYTES, MAX_WAITING, Reply,
    Stats, Warehouse,
};

/// How long the accepting thread waits after a failed accept (out of file descriptors, say)
/// before the next, rather than spinning.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// A running warehouse server. Stopping it (or dropping it) stops it from accepting
/// connections and from serving those waiting; a connection being served finishes on its
/// own thread, so that a stop is not held up by a slow request (its count is in `requests`
/// and `in_flight`).
pub struct Server {
    warehouse: Arc<Warehouse>,
    stop: Arc<AtomicBool>,
    addr: SocketAddr,
}

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A setting is out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The port could not be bound.
    #[error("cannot listen on 127.0.0.1:{port}: {reason}")]
    Listen {
        /// The port asked for.
        port: u16,
        /// What the system said.
        reason: String,
    },
    /// A serving thread could not be spawned.
    #[error("cannot start a serving thread: {0}")]
    Thread(io::Error),
}

impl Server {
    /// Listens on 127.0.0.1:`port` (0: any free port) and serves with `config.threads`
    /// threads.
    pub fn start(config: Config, port: u16) -> Result<Server, StartError> {
        let threads = config.threads;
        let warehouse = Arc::new(Warehouse::new(config)?);
        let listen = |e: io::Error| StartError::Listen { port, reason: e.to_string() };
        let listener = TcpListener::bind(("127.0.0.1", port)).map_err(listen)?;
        let addr = listener.local_addr().map_err(listen)?;
        let stop = Arc::new(AtomicBool::new(false));
        let server = Server { warehouse, stop, addr };
        let (waiting, taken) = mpsc::sync_channel::<TcpStream>(MAX_WAITING);
        let taken = Arc::new(Mutex::new(taken));
        for n in 0..threads {
            let (taken, warehouse, stop) = (taken.clone(), server.warehouse.clone(), server.stop.clone());
            // On an error `waiting` is dropped, which ends the threads already started.
            thread::Builder::new()
                .name(format!("warehouse-{n}"))
                .spawn(move || serve(&taken, &warehouse, &stop))
                .map_err(StartError::Thread)?;
        }
        let (warehouse, stop) = (server.warehouse.clone(), server.stop.clone());
        thread::Builder::new()
            .name("warehouse-accept".into())
            .spawn(move || accept(&listener, &waiting, &warehouse, &stop))
            .map_err(StartError::Thread)?;
        Ok(server)
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL to give a worker: `http://127.0.0.1:PORT/orders`.
    pub fn url(&self) -> String {
        format!("http://{}/orders", self.addr)
    }

    /// The counts now.
    pub fn stats(&self) -> Stats {
        self.warehouse.stats()
    }

    /// The warehouse itself.
    pub fn warehouse(&self) -> &Warehouse {
        &self.warehouse
    }

    /// Stops accepting connections and returns the counts at once (a request being served is
    /// counted in `requests` and `in_flight`; it finishes on its own).
    pub fn stop(self) -> Stats {
        self.warehouse.stats()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, blocked in accept, to see the flag; it then drops the
        // queue, which ends the serving threads once they are idle.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

/// Accepts connections and queues them for the serving threads; a connection that finds
/// the queue full is answered 503 here, without reading from it, so that this thread never
/// waits on a client.
fn accept(listener: &TcpListener, waiting: &SyncSender<TcpStream>, warehouse: &Warehouse, stop: &AtomicBool) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else {
            thread::sleep(ACCEPT_BACKOFF);
            continue;
        };
        match waiting.try_send(stream) {
            Ok(()) => {}
            Err(TrySendError::Full(stream)) => {
                warehouse.refused_connection();
                busy(stream, warehouse.config().threads);
            }
            Err(TrySendError::Disconnected(_)) => return,
        }
    }
}

/// Answers 503 on a connection nobody can serve now, without blocking: the answer is small
/// enough for the empty send buffer of a new connection.
fn busy(mut stream: TcpStream, threads: usize) {
    let reply =
        status(503, &format!("busy: {threads} connections are being served and {MAX_WAITING} are waiting"));
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Retry-After: 1\r\nConnection: close\r\n\r\n{}",
        reply.body.len(),
        reply.body
    );
    if stream.set_nonblocking(true).is_ok() {
        let _ = stream.write_all(answer.as_bytes());
    }
}

/// A serving thread: takes connections until the server is stopped (those still waiting
/// are then closed unanswered) and the accepting thread is gone.
fn serve(taken: &Mutex<Receiver<TcpStream>>, warehouse: &Warehouse, stop: &AtomicBool) {
    loop {
        let next = taken.lock().unwrap_or_else(PoisonError::into_inner).recv();
        match next {
            Ok(_) if stop.load(Ordering::SeqCst) => {}
            Ok(stream) => handle(Connection::new(stream, warehouse.config().read_timeout), warehouse),
            Err(mpsc::RecvError) => return,
        }
    }
}

fn handle(mut connection: Connection, warehouse: &Warehouse) {
    let head = match connection.read_head() {
        Ok(head) => head,
        Err(e) => {
            if let Some(code) = e.status() {
                warehouse.refused_connection();
                connection.respond(&status(code, &e.to_string()));
            }
            return;
        }
    };
    let (path, query) = head.target.split_once('?').unwrap_or((head.target.as_str(), ""));
    let reply = match (head.method.as_str(), path) {
        ("GET", "/stats") => ok(serde_json::to_string(&warehouse.stats())),
        ("GET", "/inbox") => inbox(query, warehouse),
        (_, "/stats" | "/inbox") => status(405, "use GET"),
        ("POST", _) => order(&mut connection, &head, warehouse),
        _ => status(404, "POST an order to any other path; GET /stats or /inbox"),
    };
    connection.respond(&reply);
}

/// An order request: its body is read only when the head allows it to be an order, and
/// decided only when it arrived whole.
fn order(connection: &mut Connection, head: &Head, warehouse: &Warehouse) -> Reply {
    let refuse = |code: u16, why: &str| warehouse.refuse(code, why);
    if head.transfer_encoding {
        return refuse(411, "Content-Length is required: a body in chunks (Transfer-Encoding) is not taken");
    }
    let declared = match &head.content_length {
        Length::Absent => return refuse(411, "Content-Length is required"),
        Length::Invalid(why) => return refuse(400, why),
        Length::Bytes(n) => *n,
    };
    let declared = match usize::try_from(declared) {
        Ok(n) if declared <= MAX_BODY_BYTES => n,
        _ => return refuse(413, &format!("the body is {declared} bytes, at most {MAX_BODY_BYTES} taken")),
    };
    let key = match head.key.as_deref().map(std::str::from_utf8) {
        None => None,
        Some(Ok(key)) if key.len() > MAX_KEY_BYTES => return refuse(431, &crate::key_too_long(key.len())),
        Some(Ok(key)) => Some(key),
        Some(Err(_)) => return refuse(400, &format!("{} is not UTF-8", crate::IDEMPOTENCY_KEY)),
    };
    if let Some(expect) = &head.expect {
        if !expect.trim_ascii().eq_ignore_ascii_case(b"100-continue") {
            return refuse(417, "the only expectation met is 100-continue");
        }
        if let Err(e) = connection.continue_() {
            return refuse(400, &format!("the connection failed: {e}"));
        }
    }
    let body = match connection.read_body(declared) {
        Ok(body) => body,
        Err(e) => return refuse(e.status(), &e.to_string()),
    };
    let slow = warehouse.received();
    if !slow.is_zero() {
        thread::sleep(slow);
    }
    warehouse.order(key, String::from_utf8(body).ok())
}

/// `GET /inbox?after=N&limit=M`: a page (other parameters are ignored).
fn inbox(query: &str, warehouse: &Warehouse) -> Reply {
    let (mut after, mut limit) = (0, INBOX_PAGE);
    for (name, value) in query.split('&').filter_map(|pair| pair.split_once('=')) {
        match name {
            "after" => match value.parse() {
                Ok(n) => after = n,
                Err(_) => return status(400, &format!("after={value}: not a whole number of orders")),
            },
            "limit" => match value.parse() {
                Ok(n) if (1..=INBOX_PAGE_MAX).contains(&n) => limit = n,
                _ => {
                    return status(
                        400,
                        &format!("limit={value}: not a whole number from 1 to {INBOX_PAGE_MAX}"),
                    );
                }
            },
            _ => {}
        }
    }
    ok(serde_json::to_string(&warehouse.inbox(after, limit)))
}

fn ok(body: serde_json::Result<String>) -> Reply {
    match body {
        Ok(body) => Reply { status: 200, headers: Vec::new(), body },
        Err(e) => status(500, &e.to_string()),
    }
}

fn status(status: u16, why: &str) -> Reply {
    Reply { status, headers: Vec::new(), body: serde_json::json!({ "error": why }).to_string() }
}
