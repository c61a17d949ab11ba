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
//! order, `GET /stats` the counts as JSON, `GET /inbox` the accepted orders.

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
/// The largest order body read (retryq's payloads are at most 1 MiB).
pub const MAX_BODY_BYTES: u64 = 2 << 20;

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
    /// How many requests are served at once.
    pub threads: usize,
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
        }
    }
}

/// A configuration value out of range; `field` names it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ConfigError {
    pub field: &'static str,
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
        Ok(())
    }
}

/// What the warehouse has seen. `requests` ≥ `orders`: the difference is what retries and
/// duplicates cost it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Order requests received (every `POST`), whatever came of them.
    pub requests: u64,
    /// Distinct orders accepted: the inbox's size.
    pub orders: u64,
    /// Requests for an order already in the inbox: answered 200 and dropped.
    pub duplicates: u64,
    /// Requests failed on purpose (`fail_status`).
    pub failed: u64,
    /// Requests refused as malformed (400: no `Idempotency-Key`, an empty or non-UTF-8 body).
    pub rejected: u64,
    /// Requests being served now.
    pub in_flight: u64,
}

/// An accepted order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Order {
    pub key: String,
    pub payload: String,
    /// Requests received with this key so far, the accepted one and any before or after it.
    pub requests: u64,
}

/// The answer to one order request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
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
    inbox: Vec<Order>,
    /// Per key: requests received, and the order's place in the inbox once accepted.
    keys: HashMap<String, (u64, Option<usize>)>,
}

impl Warehouse {
    /// An empty warehouse.
    pub fn new(config: Config) -> Result<Warehouse, ConfigError> {
        config.validate()?;
        let state = State {
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            stats: Stats::default(),
            inbox: Vec::new(),
            keys: HashMap::new(),
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
    /// malformed → 400; a failure drawn → `fail_status`; a key already in the inbox → 200,
    /// dropped; else accepted into the inbox → 201. `body` is `None` when it was not UTF-8.
    pub fn order(&self, key: Option<&str>, body: Option<&str>) -> Reply {
        let mut state = self.state();
        state.stats.in_flight = state.stats.in_flight.saturating_sub(1);
        let (key, body) = match (key.map(str::trim).filter(|k| !k.is_empty()), body) {
            (None, _) => return state.reject(format!("missing {IDEMPOTENCY_KEY}")),
            (Some(_), None) => return state.reject("the order is not UTF-8 text".into()),
            (Some(_), Some("")) => return state.reject("empty order".into()),
            (Some(key), Some(body)) => (key, body),
        };
        let seen = state.keys.entry(key.to_owned()).or_insert((0, None));
        seen.0 += 1;
        let (requests, accepted) = *seen;
        if let Some(at) = accepted
            && let Some(order) = state.inbox.get_mut(at)
        {
            order.requests = requests;
        }
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
        let at = state.inbox.len();
        state.inbox.push(Order { key: key.to_owned(), payload: body.to_owned(), requests });
        if let Some(seen) = state.keys.get_mut(key) {
            seen.1 = Some(at);
        }
        state.stats.orders += 1;
        Reply { status: 201, headers: Vec::new(), body: json(&[("accepted", key)]) }
    }

    /// The counts now.
    pub fn stats(&self) -> Stats {
        self.state().stats
    }

    /// The accepted orders, in the order they were accepted.
    pub fn inbox(&self) -> Vec<Order> {
        self.state().inbox.clone()
    }
}

impl State {
    fn reject(&mut self, why: String) -> Reply {
        self.stats.rejected += 1;
        Reply { status: 400, headers: Vec::new(), body: json(&[("error", &why)]) }
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
        w.order(key, Some(body))
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
            Stats { requests: 3, orders: 2, duplicates: 1, failed: 0, rejected: 0, in_flight: 0 }
        );
        let inbox = w.inbox();
        assert_eq!(
            inbox.iter().map(|o| (o.key.as_str(), o.requests)).collect::<Vec<_>>(),
            [("a", 2), ("b", 1)]
        );
    }

    #[test]
    fn malformed_requests_are_rejected_and_counted() {
        let w = warehouse(Config::default());
        assert_eq!(send(&w, None, "crisps").status, 400);
        assert_eq!(send(&w, Some("  "), "crisps").status, 400);
        assert_eq!(send(&w, Some("a"), "").status, 400);
        w.received();
        assert_eq!(w.order(Some("a"), None).status, 400);
        let s = w.stats();
        assert_eq!((s.requests, s.rejected, s.orders), (4, 4, 0));
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
        assert!(w.inbox().is_empty());
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
    }
}
