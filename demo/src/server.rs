//! The warehouse on HTTP: tiny_http on 127.0.0.1, a fixed pool of threads serving requests.
//!
//! | request | answer |
//! |---|---|
//! | `POST` any path but the two below | an order: 201 accepted, 200 duplicate (dropped), 400 malformed, or the injected failure |
//! | `GET /stats` | [`Stats`] as JSON |
//! | `GET /inbox` | `{"orders":[{"key","payload","requests"}…]}`, in the order accepted |
//! | any other `GET` | 404; any other method on `/stats` or `/inbox`: 405 |

use std::io::{self, Read};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use tiny_http::{Header, Method, Request, Response};

use crate::{Config, ConfigError, IDEMPOTENCY_KEY, MAX_BODY_BYTES, Reply, Stats, Warehouse};

/// How often an idle serving thread looks at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// A running warehouse server. Stopping it (or dropping it) stops the serving threads from
/// taking new requests; a request being served finishes on its own thread, so that a stop
/// is not held up by a slow request (its count is in `requests` and `in_flight`).
pub struct Server {
    http: Arc<tiny_http::Server>,
    warehouse: Arc<Warehouse>,
    stop: Arc<AtomicBool>,
    addr: SocketAddr,
}

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot listen on 127.0.0.1:{port}: {reason}")]
    Listen { port: u16, reason: String },
    #[error("cannot start a serving thread: {0}")]
    Thread(io::Error),
}

impl Server {
    /// Listens on 127.0.0.1:`port` (0: any free port) and serves with `config.threads`
    /// threads.
    pub fn start(config: Config, port: u16) -> Result<Server, StartError> {
        let threads = config.threads;
        let warehouse = Arc::new(Warehouse::new(config)?);
        let listen = |reason: String| StartError::Listen { port, reason };
        let http = tiny_http::Server::http(("127.0.0.1", port)).map_err(|e| listen(e.to_string()))?;
        let addr = http.server_addr().to_ip().ok_or_else(|| listen("not an IP address".into()))?;
        let http = Arc::new(http);
        let stop = Arc::new(AtomicBool::new(false));
        let server = Server { http, warehouse, stop, addr };
        for n in 0..threads {
            let (http, warehouse, stop) =
                (server.http.clone(), server.warehouse.clone(), server.stop.clone());
            // On an error the server is dropped, which stops the threads already started.
            thread::Builder::new()
                .name(format!("warehouse-{n}"))
                .spawn(move || serve(&http, &warehouse, &stop))
                .map_err(StartError::Thread)?;
        }
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

    /// Stops taking requests and returns the counts at once (a request being served is
    /// counted in `requests` and `in_flight`; it finishes on its own).
    pub fn stop(self) -> Stats {
        self.warehouse.stats()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn serve(http: &tiny_http::Server, warehouse: &Warehouse, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        // Nothing came, or a connection that never made a request: go on.
        if let Ok(Some(request)) = http.recv_timeout(POLL) {
            handle(request, warehouse);
        }
    }
}

fn handle(mut request: Request, warehouse: &Warehouse) {
    let path = request.url().split('?').next().unwrap_or("").to_owned();
    let reply = match (request.method(), path.as_str()) {
        (Method::Get, "/stats") => ok(serde_json::to_string(&warehouse.stats())),
        (Method::Get, "/inbox") => {
            ok(serde_json::to_string(&serde_json::json!({ "orders": warehouse.inbox() })))
        }
        (_, "/stats" | "/inbox") => status(405, "use GET"),
        (Method::Post, _) => order(&mut request, warehouse),
        _ => status(404, "POST an order to any other path; GET /stats or /inbox"),
    };
    let mut response = Response::from_string(reply.body).with_status_code(reply.status);
    let json = Header::from_bytes("Content-Type", "application/json");
    let headers = reply.headers.iter().map(|(k, v)| Header::from_bytes(*k, v.as_str()));
    for header in std::iter::once(json).chain(headers).flatten() {
        response.add_header(header);
    }
    // The sender may have gone (it timed out): nothing to do about that here.
    let _ = request.respond(response);
}

fn order(request: &mut Request, warehouse: &Warehouse) -> Reply {
    let slow = warehouse.received();
    let key = request.headers().iter().find(|h| h.field.equiv(IDEMPOTENCY_KEY)).map(|h| h.value.to_string());
    let mut bytes = Vec::new();
    let read = request.as_reader().take(MAX_BODY_BYTES).read_to_end(&mut bytes);
    if !slow.is_zero() {
        thread::sleep(slow);
    }
    let body = match read {
        Ok(_) => String::from_utf8(bytes).ok(),
        Err(_) => None,
    };
    warehouse.order(key.as_deref(), body.as_deref())
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
