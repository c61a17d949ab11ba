//! The snack warehouse: the receiving end of retryq's HTTP demo (`retryq serve-demo`).
//!
//! A sender that retries will sometimes deliver an order twice: an answer is lost, an
//! attempt times out after the warehouse accepted it, a worker dies between the send and the
//! record. The warehouse shows the two problems a receiver has, and that they are different:
//!
//! - **duplicates**: its [`Warehouse`] keeps an inbox keyed by the `Idempotency-Key` header
//!   (the job's id) and accepts each order once — a repeat is answered `200` and dropped, so
//!   the sender stops retrying it but nothing is shipped twice;
//! - **load**: requests cost it time (`slow`, for a `slow_rate` share of them) and some fail
//!   on purpose (`fail_rate`,
//!   answered with `fail_status`, by default 503, optionally with `Retry-After` and
//!   `Retry-Pushback-Ms`). Deduplication does nothing about load: a duplicate costs as much
//!   to receive as a new order. Only the sender's backoff, budgets and pushback do.
//!
//! It counts both: `requests` received against distinct `orders` accepted ([`Stats`]).
//!
//! [`Server`] puts the warehouse on HTTP (on 127.0.0.1 only): `POST` to any path is an
//! order, `GET /stats` the counts as JSON, `GET /inbox?after=N&limit=M` a page of the
//! accepted orders.
//!
//! A receiver that teaches idempotency must not itself store a wrong order or fall over, so
//! everything a client controls is bounded (see the constants and [`Config`]): only a body
//! of exactly its `Content-Length` is an order, at most [`MAX_BODY_BYTES`]; a key is at most
//! [`MAX_KEY_BYTES`]; a client has [`Config::read_timeout`] to send its request; the inbox
//! keeps at most [`Config::inbox_max_orders`] orders and [`Config::inbox_max_bytes`] bytes
//! and refuses new orders past that (507) instead of forgetting old ones; and `GET /inbox`
//! copies one page, never the whole inbox.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod http;
mod server;

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;

pub use server::{Server, StartError};

/// The header that names an order.
pub const IDEMPOTENCY_KEY: &str = "Idempotency-Key";
/// The demo's "do not retry" / "retry after N ms" header (see the worker's HTTP transport).
pub const RETRY_PUSHBACK_MS: &str = "Retry-Pushback-Ms";
/// The largest order body taken: a `Content-Length` above it is answered 413 without the
/// body being read. Twice retryq's largest payload (1 MiB), so that any job fits.
pub const MAX_BODY_BYTES: u64 = 2 << 20;
/// The longest `Idempotency-Key` taken, in bytes; a longer one is answered 431. retryq's ids
/// are at most 256 bytes and the worker percent-encodes at most three bytes for one, so any
/// job's key (at most 768 bytes) fits.
pub const MAX_KEY_BYTES: usize = 1024;
/// The largest request head (request line and headers) read; a larger one is answered 431.
pub const MAX_HEAD_BYTES: usize = 16 << 10;
/// The most header fields read in a request head; more are answered 431.
pub const MAX_HEADERS: usize = 64;
/// How many accepted connections may wait for a serving thread; one more is answered 503
/// (with `Retry-After: 1`) at once. A waiting connection costs a socket and no buffer; as
/// many as the kernel's usual listen backlog, so that a burst of senders waits rather than
/// being refused.
pub const MAX_WAITING: usize = 128;
/// `GET /inbox`'s page size when no `limit` is given.
pub const INBOX_PAGE: usize = 100;
/// The largest `limit` of `GET /inbox`; a larger one is answered 400.
pub const INBOX_PAGE_MAX: usize = 1000;
/// A page of `GET /inbox` stops before its keys and payloads pass this many bytes (but holds
/// at least one order), so that a GET copies a bounded amount however large the orders are.
pub const INBOX_PAGE_MAX_BYTES: usize = 4 << 20;
/// [`Config::read_timeout`]'s default.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// [`Config::inbox_max_orders`]'s default.
pub const DEFAULT_INBOX_MAX_ORDERS: usize = 10_000;
/// [`Config::inbox_max_bytes`]'s default: 64 MiB, 31 orders of the largest body with their
/// keys.
pub const DEFAULT_INBOX_MAX_BYTES: u64 = 64 << 20;

/// How the warehouse behaves.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// How long a slow order request takes before it is decided and answered.
    pub slow: Duration,
    /// The share of order requests that are slow, in [0, 1].
    pub slow_rate: f64,
    /// The share of order requests that fail on purpose, in [0, 1].
    pub fail_rate: f64,
    /// The status a failure is answered with (400 to 599).
    pub fail_status: u16,
    /// `Retry-After` on a failure, in seconds.
    pub retry_after_s: Option<u64>,
    /// `Retry-Pushback-Ms` on a failure: a delay, or negative for "do not retry".
    pub pushback_ms: Option<i64>,
    /// The seed of the failure draws.
    pub seed: u64,
    /// How many connections are served at once: one thread each, each connection carrying
    /// one request. [`MAX_WAITING`] more may wait for a thread; past that a connection is
    /// answered 503 at once, so that the threads, the waiting connections and the bodies
    /// being read are all bounded.
    pub threads: usize,
    /// How long a client has to send its whole request, head and body, from when a thread
    /// takes its connection (and how long writing the answer may take). A slower client is
    /// answered 408 and closed: without a deadline `threads` stalled connections would stop
    /// the warehouse, and a per-read timeout alone would let a client that sends one byte at
    /// a time hold a thread for ever.
    pub read_timeout: Duration,
    /// The most orders the inbox keeps. The inbox never forgets an order (forgetting one
    /// would let its retry in as new: the duplicate the warehouse exists to catch), so a new
    /// order past the cap is refused with 507; a duplicate of a kept order is still 200.
    pub inbox_max_orders: usize,
    /// The most bytes of keys and payloads the inbox keeps; a new order that would pass it is
    /// refused with 507, like one past `inbox_max_orders`.
    pub inbox_max_bytes: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            slow: Duration::ZERO,
            slow_rate: 1.0,
            fail_rate: 0.0,
            fail_status: 503,
            retry_after_s: None,
            pushback_ms: None,
            seed: 0,
            threads: 16,
            read_timeout: DEFAULT_READ_TIMEOUT,
            inbox_max_orders: DEFAULT_INBOX_MAX_ORDERS,
            inbox_max_bytes: DEFAULT_INBOX_MAX_BYTES,
        }
    }
}

/// A configuration value out of range; `field` names it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ConfigError {
    /// The setting at fault.
    pub field: &'static str,
    /// What is wrong with its value.
    pub reason: String,
}

impl Config {
    /// Refuses values the warehouse cannot use, naming the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field, reason: String| Err(ConfigError { field, reason });
        for (field, rate) in [("fail_rate", self.fail_rate), ("slow_rate", self.slow_rate)] {
            if !(rate.is_finite() && (0.0..=1.0).contains(&rate)) {
                return bad(field, format!("{rate} is outside [0, 1]"));
            }
        }
        if !(400..=599).contains(&self.fail_status) {
            return bad("fail_status", format!("{} is not a 4xx or 5xx status", self.fail_status));
        }
        if !(1..=1024).contains(&self.threads) {
            return bad("threads", format!("{} is outside 1..=1024", self.threads));
        }
        let timeout = self.read_timeout;
        if !(Duration::from_millis(1)..=Duration::from_secs(3600)).contains(&timeout) {
            return bad("read_timeout", format!("{timeout:?} is outside 1 ms..=1 h"));
        }
        if !(1..=100_000_000).contains(&self.inbox_max_orders) {
            return bad("inbox_max_orders", format!("{} is outside 1..=100000000", self.inbox_max_orders));
        }
        if !(1..=1 << 40).contains(&self.inbox_max_bytes) {
            return bad("inbox_max_bytes", format!("{} is outside 1..=2^40", self.inbox_max_bytes));
        }
        Ok(())
    }
}

/// What the warehouse has seen. `requests` ≥ `orders`: the difference is what retries and
/// duplicates cost it. `requests` = `orders` + `duplicates` + `failed` + `rejected` + `full`
/// + `in_flight`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Order requests received (every `POST` whose head could be read), whatever came of
    /// them.
    pub requests: u64,
    /// Distinct orders accepted: the inbox's size.
    pub orders: u64,
    /// Requests for an order already in the inbox: answered 200 and dropped.
    pub duplicates: u64,
    /// Requests failed on purpose (`fail_status`).
    pub failed: u64,
    /// Requests refused as malformed, with nothing stored: 400 (no `Idempotency-Key`, an
    /// empty or non-UTF-8 body, a body shorter than its `Content-Length`), 408 (the body came
    /// too slowly), 411 (no `Content-Length`), 413 (a body over [`MAX_BODY_BYTES`]), 431 (a key
    /// over [`MAX_KEY_BYTES`]).
    pub rejected: u64,
    /// New orders refused with 507: the inbox was at one of its caps.
    pub full: u64,
    /// Requests being decided now (read, and waiting out their slowness).
    pub in_flight: u64,
    /// Bytes of keys and payloads in the inbox (at most [`Config::inbox_max_bytes`]).
    pub inbox_bytes: u64,
    /// Connections answered without an order request being counted: no thread was free and
    /// no place to wait (503), or the request head was malformed (400), too large (431) or
    /// too slow (408).
    pub refused_connections: u64,
}

/// An accepted order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Order {
    /// Its place in the inbox, from 1: `GET /inbox?after=SEQ` starts after it.
    pub seq: u64,
    /// The order's idempotency key: one order per key, however often it is sent.
    pub key: String,
    /// What was posted.
    pub payload: String,
    /// Requests received with this key so far, the accepted one and any before or after it
    /// (failed ones before it are missed while [`Config::inbox_max_orders`] other keys wait
    /// to be accepted: that tally is bounded too).
    pub requests: u64,
}

/// A page of the inbox: `GET /inbox`'s answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Page {
    /// In the order accepted.
    pub orders: Vec<Order>,
    /// The `after` that fetches the next page, or `None` when this page reaches the end.
    pub next: Option<u64>,
}

/// The answer to one order request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The pushback headers to send (`Retry-After`, `Retry-Pushback-Ms`), if any.
    pub headers: Vec<(&'static str, String)>,
    /// A JSON object.
    pub body: String,
}

/// The inbox and the counts, behind one lock.
pub struct Warehouse {
    config: Config,
    state: Mutex<State>,
}

struct State {
    rng: ChaCha8Rng,
    stats: Stats,
    /// The accepted orders: `inbox[i].seq == i + 1`.
    inbox: Vec<Order>,
    /// The place in `inbox` of each accepted key.
    accepted: HashMap<String, usize>,
    /// Requests received per key not (yet) accepted, for at most `inbox_max_orders` keys: a
    /// sender whose every request fails must not grow it without end.
    pending: HashMap<String, u64>,
}

impl Warehouse {
    /// An empty warehouse.
    pub fn new(config: Config) -> Result<Warehouse, ConfigError> {
        config.validate()?;
        let state = State {
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            stats: Stats::default(),
            inbox: Vec::new(),
            accepted: HashMap::new(),
            pending: HashMap::new(),
        };
        Ok(Warehouse { config, state: Mutex::new(state) })
    }

    /// How it behaves.
    pub fn config(&self) -> &Config {
        &self.config
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An order request arrives: counted, and in flight until [`Warehouse::order`]. Returns
    /// how long it must take (the caller waits that long, holding no lock, then calls
    /// [`Warehouse::order`]).
    pub fn received(&self) -> Duration {
        let mut state = self.state();
        state.stats.requests += 1;
        state.stats.in_flight += 1;
        if self.config.slow.is_zero() {
            return Duration::ZERO;
        }
        let draw: f64 = state.rng.random();
        if draw < self.config.slow_rate { self.config.slow } else { Duration::ZERO }
    }

    /// Decides an order request that [`Warehouse::received`] counted (after its slowness):
    /// malformed → 400 (431 for a key over [`MAX_KEY_BYTES`]); a failure drawn →
    /// `fail_status`; a key already in the inbox → 200, dropped; a new order past the
    /// inbox's caps → 507; else accepted into the inbox → 201. `body` is `None` when it was
    /// not UTF-8; it is the whole body (the HTTP side refuses a short one before this).
    pub fn order(&self, key: Option<&str>, body: Option<String>) -> Reply {
        let mut state = self.state();
        state.stats.in_flight = state.stats.in_flight.saturating_sub(1);
        let (key, body) = match (key.map(str::trim).filter(|k| !k.is_empty()), body) {
            (None, _) => return state.reject(400, format!("missing {IDEMPOTENCY_KEY}")),
            (Some(key), _) if key.len() > MAX_KEY_BYTES => {
                return state.reject(431, key_too_long(key.len()));
            }
            (Some(_), None) => return state.reject(400, "the order is not UTF-8 text".into()),
            (Some(_), Some(body)) if body.is_empty() => return state.reject(400, "empty order".into()),
            (Some(key), Some(body)) => (key, body),
        };
        let accepted = state.accepted.get(key).copied();
        let requests = match accepted.and_then(|at| state.inbox.get_mut(at)) {
            Some(order) => {
                order.requests += 1;
                order.requests
            }
            None => state.count_pending(key, self.config.inbox_max_orders),
        };
        // One draw per well-formed request (and one per request for slowness, when slow is
        // set), in arrival order: the seed fixes the sequence.
        let draw: f64 = state.rng.random();
        if draw < self.config.fail_rate {
            state.stats.failed += 1;
            let mut headers = Vec::new();
            if let Some(s) = self.config.retry_after_s {
                headers.push(("Retry-After", s.to_string()));
            }
            if let Some(ms) = self.config.pushback_ms {
                headers.push((RETRY_PUSHBACK_MS, ms.to_string()));
            }
            return Reply {
                status: self.config.fail_status,
                headers,
                body: json(&[("error", "injected failure")]),
            };
        }
        if accepted.is_some() {
            state.stats.duplicates += 1;
            return Reply { status: 200, headers: Vec::new(), body: json(&[("duplicate", key)]) };
        }
        let size = u64::try_from(key.len() + body.len()).unwrap_or(u64::MAX);
        let (orders, bytes) = (state.inbox.len(), state.stats.inbox_bytes);
        if orders >= self.config.inbox_max_orders || bytes.saturating_add(size) > self.config.inbox_max_bytes
        {
            state.stats.full += 1;
            let why = format!(
                "the inbox is full: {orders} orders of {bytes} bytes kept, this one is {size} bytes; \
                 it keeps at most {} orders and {} bytes",
                self.config.inbox_max_orders, self.config.inbox_max_bytes
            );
            return Reply { status: 507, headers: Vec::new(), body: json(&[("error", &why)]) };
        }
        let at = state.inbox.len();
        let seq = u64::try_from(at).map_or(u64::MAX, |at| at + 1);
        state.pending.remove(key);
        state.accepted.insert(key.to_owned(), at);
        state.inbox.push(Order { seq, key: key.to_owned(), payload: body, requests });
        state.stats.inbox_bytes += size;
        state.stats.orders += 1;
        Reply { status: 201, headers: Vec::new(), body: json(&[("accepted", key)]) }
    }

    /// An order request refused before it could be decided — its head asked for something
    /// the warehouse does not take, or its body did not arrive whole — answered `status`
    /// with `why`. Counted in `requests` and `rejected`; nothing is drawn or stored.
    pub fn refuse(&self, status: u16, why: &str) -> Reply {
        let mut state = self.state();
        state.stats.requests += 1;
        state.reject(status, why.to_owned())
    }

    /// A connection answered before any order request on it was counted (see
    /// [`Stats::refused_connections`]).
    pub fn refused_connection(&self) {
        self.state().stats.refused_connections += 1;
    }

    /// The counts now.
    pub fn stats(&self) -> Stats {
        self.state().stats
    }

    /// At most `limit` (1 to [`INBOX_PAGE_MAX`]) accepted orders after the `after`th, in the
    /// order they were accepted, stopping before [`INBOX_PAGE_MAX_BYTES`] (but with at least
    /// one order): a copy of one page, never of the whole inbox.
    pub fn inbox(&self, after: u64, limit: usize) -> Page {
        let state = self.state();
        let limit = limit.clamp(1, INBOX_PAGE_MAX);
        let start = usize::try_from(after).unwrap_or(usize::MAX).min(state.inbox.len());
        let mut orders: Vec<Order> = Vec::new();
        let mut bytes = 0;
        for order in state.inbox.get(start..).unwrap_or_default() {
            let size = order.key.len() + order.payload.len();
            if orders.len() == limit || (!orders.is_empty() && bytes + size > INBOX_PAGE_MAX_BYTES) {
                break;
            }
            bytes += size;
            orders.push(order.clone());
        }
        let end = start + orders.len();
        let next = (end < state.inbox.len()).then(|| u64::try_from(end).unwrap_or(u64::MAX));
        Page { orders, next }
    }
}

/// Why a key is refused.
pub(crate) fn key_too_long(len: usize) -> String {
    format!("{IDEMPOTENCY_KEY} is {len} bytes, at most {MAX_KEY_BYTES} taken")
}

impl State {
    fn reject(&mut self, status: u16, why: String) -> Reply {
        self.stats.rejected += 1;
        Reply { status, headers: Vec::new(), body: json(&[("error", &why)]) }
    }

    /// Counts a request for a key not in the inbox; the requests seen with it so far. A key
    /// is tallied only while fewer than `cap` keys are.
    fn count_pending(&mut self, key: &str, cap: usize) -> u64 {
        if let Some(seen) = self.pending.get_mut(key) {
            *seen += 1;
            return *seen;
        }
        if self.pending.len() < cap {
            self.pending.insert(key.to_owned(), 1);
        }
        1
    }
}

/// A flat JSON object of strings.
fn json(fields: &[(&str, &str)]) -> String {
    let map: serde_json::Map<String, serde_json::Value> =
        fields.iter().map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v))).collect();
    serde_json::Value::Object(map).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warehouse(config: Config) -> Warehouse {
        Warehouse::new(config).expect("config")
    }

    fn send(w: &Warehouse, key: Option<&str>, body: &str) -> Reply {
        w.received();
        w.order(key, Some(body.to_owned()))
    }

    #[test]
    fn each_order_is_accepted_once_and_repeats_are_dropped() {
        let w = warehouse(Config::default());
        assert_eq!(send(&w, Some("a"), "crisps").status, 201);
        assert_eq!(send(&w, Some("b"), "nuts").status, 201);
        let again = send(&w, Some("a"), "crisps");
        assert_eq!((again.status, again.body.as_str()), (200, r#"{"duplicate":"a"}"#));
        assert_eq!(
            w.stats(),
            Stats { requests: 3, orders: 2, duplicates: 1, inbox_bytes: 12, ..Stats::default() }
        );
        let inbox = w.inbox(0, INBOX_PAGE);
        assert_eq!(
            inbox.orders.iter().map(|o| (o.seq, o.key.as_str(), o.requests)).collect::<Vec<_>>(),
            [(1, "a", 2), (2, "b", 1)]
        );
        assert_eq!(inbox.next, None);
    }

    #[test]
    fn malformed_requests_are_rejected_and_counted() {
        let w = warehouse(Config::default());
        assert_eq!(send(&w, None, "crisps").status, 400);
        assert_eq!(send(&w, Some("  "), "crisps").status, 400);
        assert_eq!(send(&w, Some("a"), "").status, 400);
        assert_eq!(send(&w, Some(&"k".repeat(MAX_KEY_BYTES + 1)), "crisps").status, 431);
        assert_eq!(send(&w, Some(&"k".repeat(MAX_KEY_BYTES)), "crisps").status, 201);
        w.received();
        assert_eq!(w.order(Some("a"), None).status, 400);
        let s = w.stats();
        assert_eq!((s.requests, s.rejected, s.orders), (6, 5, 1));
    }

    #[test]
    fn failures_are_drawn_at_the_rate_from_the_seed() {
        let config = Config { fail_rate: 0.3, seed: 7, retry_after_s: Some(2), ..Config::default() };
        let run = || {
            let w = warehouse(config.clone());
            let statuses: Vec<u16> = (0..1000).map(|i| send(&w, Some(&i.to_string()), "x").status).collect();
            (statuses, w.stats())
        };
        let (first, stats) = run();
        assert_eq!(first, run().0, "the same seed, the same failures");
        assert!((230..=370).contains(&stats.failed), "{stats:?}");
        assert_eq!(stats.orders + stats.failed, 1000);
        let w = warehouse(Config { fail_rate: 1.0, ..config });
        let r = send(&w, Some("a"), "x");
        assert_eq!((r.status, r.headers), (503, vec![("Retry-After", "2".to_owned())]));
    }

    #[test]
    fn a_share_of_requests_is_slow() {
        let slow = Duration::from_millis(250);
        let w = warehouse(Config { slow, slow_rate: 0.5, seed: 3, ..Config::default() });
        let slow_ones = (0..1000).filter(|_| w.received() == slow).count();
        assert!((400..=600).contains(&slow_ones), "{slow_ones}");
        assert_eq!(warehouse(Config { slow, ..Config::default() }).received(), slow, "all, by default");
        assert_eq!(warehouse(Config::default()).received(), Duration::ZERO);
    }

    #[test]
    fn a_failed_order_can_be_accepted_later() {
        let w = warehouse(Config {
            fail_rate: 1.0,
            pushback_ms: Some(-1),
            fail_status: 429,
            ..Config::default()
        });
        let r = send(&w, Some("a"), "x");
        assert_eq!((r.status, r.headers), (429, vec![(RETRY_PUSHBACK_MS, "-1".to_owned())]));
        // Not in the inbox: a failure is not an acceptance.
        assert!(w.inbox(0, INBOX_PAGE).orders.is_empty());
        assert_eq!(w.stats().orders, 0);
    }

    #[test]
    fn bad_configurations_are_named() {
        let field = |c: Config| c.validate().unwrap_err().field;
        assert_eq!(field(Config { fail_rate: 1.5, ..Config::default() }), "fail_rate");
        assert_eq!(field(Config { fail_rate: f64::NAN, ..Config::default() }), "fail_rate");
        assert_eq!(field(Config { fail_status: 200, ..Config::default() }), "fail_status");
        assert_eq!(field(Config { threads: 0, ..Config::default() }), "threads");
        assert_eq!(field(Config { slow_rate: -0.1, ..Config::default() }), "slow_rate");
        assert_eq!(field(Config { read_timeout: Duration::ZERO, ..Config::default() }), "read_timeout");
        assert_eq!(field(Config { inbox_max_orders: 0, ..Config::default() }), "inbox_max_orders");
        assert_eq!(field(Config { inbox_max_bytes: 0, ..Config::default() }), "inbox_max_bytes");
    }

    #[test]
    fn a_full_inbox_refuses_new_orders_and_still_drops_duplicates() {
        let w = warehouse(Config { inbox_max_orders: 2, inbox_max_bytes: 50, ..Config::default() });
        assert_eq!(send(&w, Some("a"), "crisps").status, 201);
        assert_eq!(send(&w, Some("b"), &"n".repeat(90)).status, 507, "past the bytes");
        assert_eq!(send(&w, Some("b"), "nuts").status, 201);
        assert_eq!(send(&w, Some("c"), "x").status, 507, "past the count");
        assert_eq!(send(&w, Some("a"), "crisps").status, 200, "a duplicate is still known");
        let s = w.stats();
        assert_eq!((s.orders, s.full, s.duplicates, s.inbox_bytes), (2, 2, 1, 12));
        // The refused "b" counted: two requests with that key.
        assert_eq!(w.inbox(0, INBOX_PAGE).orders[1].requests, 2);
    }

    #[test]
    fn keys_that_never_get_in_are_tallied_up_to_the_cap() {
        let w = warehouse(Config { fail_rate: 1.0, inbox_max_orders: 3, ..Config::default() });
        for i in 0..100 {
            send(&w, Some(&i.to_string()), "x");
        }
        assert_eq!(w.state().pending.len(), 3);
    }

    #[test]
    fn the_inbox_is_read_a_page_at_a_time() {
        let w = warehouse(Config::default());
        for i in 1..=5 {
            send(&w, Some(&i.to_string()), "x");
        }
        let keys = |p: &Page| p.orders.iter().map(|o| o.key.clone()).collect::<Vec<_>>();
        let first = w.inbox(0, 2);
        assert_eq!((keys(&first), first.next), (vec!["1".to_owned(), "2".to_owned()], Some(2)));
        let last = w.inbox(4, 2);
        assert_eq!((keys(&last), last.next), (vec!["5".to_owned()], None));
        assert!(w.inbox(9, 2).orders.is_empty());
        // Large orders: a page stops at its byte budget, but holds one order at least.
        let w = warehouse(Config::default());
        let big = "x".repeat(INBOX_PAGE_MAX_BYTES / 2);
        for i in 1..=3 {
            send(&w, Some(&i.to_string()), &big);
        }
        let page = w.inbox(0, INBOX_PAGE_MAX);
        assert_eq!((page.orders.len(), page.next), (1, Some(1)));
    }
}
