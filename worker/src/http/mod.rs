//! The HTTP transport: one POST per attempt, to one of several URLs, classified by a status
//! table, with the receiver's pushback carried into the job's stored state.
//!
//! The protocol (docs/retry-control.md has it for operators and receivers):
//!
//! - each attempt is exactly one `POST` of the job's payload — the queue is the retry loop,
//!   and a second loop inside an attempt would multiply the calls (n·r^(m−1), see
//!   [`retryq_control::amplification`]);
//! - headers: [`IDEMPOTENCY_KEY`] is the job's id (percent-encoded where a header could not
//!   carry it, see [`idempotency_key`]) so that the receiver can drop duplicates;
//!   [`RETRY_ATTEMPT`] is the attempt number (1, 2, …), the one the queue fences completions
//!   with; `Content-Type` as configured;
//! - the status is classified by a [`StatusTable`]; a connection error or a timeout is
//!   `retryable`; an unreadable response (not HTTP, a TLS failure) is unclassified;
//! - pushback: `Retry-After` (seconds or an HTTP date) and [`RETRY_PUSHBACK_MS`] (gRPC's
//!   `grpc-retry-pushback-ms`, in milliseconds: negative or not a number means "do not
//!   retry"; too large to count is the longest delay) on a non-2xx answer. "Do not retry"
//!   makes the attempt `permanent`, with the reason in `last_error`; a delay becomes the
//!   report's `retry_after_ms`, a floor under the queue's stored retry delay
//!   (`available_at`), so a delay past the deadline ends the job `dead(deadline)` at once;
//! - the URL is picked by the control crate's [`NodeSelector`] (RocketMQ's latency fault
//!   tolerance), away from the URL the job's last attempt reached (`Claimed::last_node`)
//!   when there is another, and recorded as the job's `last_node` (its credentials, if
//!   any, shown as `***`: they are sent as `Authorization: Basic` and nowhere else);
//! - every target (host and port) has a retry budget ([`TpsBudget`]): a job's first attempt
//!   deposits, each later attempt withdraws; a refused retry is not sent and counts as
//!   `retryable` with the budget's wait as its floor.

mod error;
mod status;
mod target;

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Read;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, mpsc};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use retryq::{Claimed, Outcome, Report};
use retryq_control::{Budget, FaultTable, NodeSelector, Observed, PerTarget, Pushback, TpsBudget};
use tracing::debug;
use ureq::http::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};

pub use error::HttpError;
pub use status::{Class, DEFAULT_RETRYABLE, StatusError, StatusTable};
pub use target::redact;
use target::{Target, target};

use crate::transport::{Transport, Unclassified};
use crate::window::{Cut, POLL, Window};

/// The header that names the job: receivers drop duplicates by it.
pub const IDEMPOTENCY_KEY: &str = "Idempotency-Key";
/// The header that numbers the attempt: 1, 2, …; never repeated for a job.
pub const RETRY_ATTEMPT: &str = "Retry-Attempt";
/// The receiver's pushback in milliseconds, as gRPC's `grpc-retry-pushback-ms`: a
/// non-negative integer is the least delay before the next attempt (one too large to count
/// saturates: a delay past any deadline); anything else (`-1`, `never`) means do not retry.
pub const RETRY_PUSHBACK_MS: &str = "Retry-Pushback-Ms";
/// How much of an error response's body is kept for `last_error`.
pub const BODY_BYTES: u64 = 512;

/// How the transport classifies, picks and budgets.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Which statuses are retryable and which permanent.
    pub statuses: StatusTable,
    /// Latency bands and how long a slow or failed URL is left out.
    pub faults: FaultTable,
    /// The retry budget each target (host and port) starts with.
    pub budget: TpsBudget,
    /// The least wait of a retry the budget refused.
    pub budget_wait: Duration,
    /// The `Content-Type` of every POST.
    pub content_type: String,
}

impl Default for HttpOptions {
    /// The default status table, RocketMQ's fault table, Finagle's budget (10 s, 10 retries a
    /// second, 20 % of requests) with a 1 s wait, and `text/plain; charset=utf-8`.
    fn default() -> Self {
        HttpOptions {
            statuses: StatusTable::default(),
            faults: FaultTable::rocketmq(),
            budget: TpsBudget::default(),
            budget_wait: Duration::from_secs(1),
            content_type: "text/plain; charset=utf-8".into(),
        }
    }
}

/// POSTs each attempt to one of its URLs.
///
/// A clone is another slot's transport in the same process: it shares the connection pool,
/// the node selector and the retry budgets, so that attempts in flight together see one
/// picture of the receivers and draw on one budget per target, as a single loop would.
#[derive(Clone)]
pub struct Http {
    agent: ureq::Agent,
    targets: Vec<Target>,
    nodes: Arc<Mutex<NodeSelector>>,
    budgets: Arc<Mutex<PerTarget<TpsBudget>>>,
    statuses: StatusTable,
    budget_wait: Duration,
    content_type: HeaderValue,
    /// The origin of the selector's and the budgets' clock: monotonic, since neither is
    /// stored, so a step of the wall clock does not release or isolate a node.
    epoch: Instant,
}

impl Http {
    /// A transport over `urls` (http or https, at least one).
    pub fn new(urls: &[String], options: HttpOptions) -> Result<Http, HttpError> {
        if urls.is_empty() {
            return Err(HttpError::NoUrl);
        }
        let targets = urls.iter().map(|url| target(url)).collect::<Result<Vec<_>, _>>()?;
        let content_type = HeaderValue::from_str(&options.content_type)
            .map_err(|_| HttpError::ContentType(options.content_type.clone()))?;
        let nodes = NodeSelector::new(targets.len(), options.faults).map_err(|e| HttpError::Url {
            url: targets.iter().map(|t| t.shown.as_str()).collect::<Vec<_>>().join(" "),
            reason: e.to_string(),
        })?;
        let agent = ureq::Agent::config_builder()
            // Statuses are classified here, not turned into errors.
            .http_status_as_error(false)
            // A POST is never replayed at an address nobody configured: a 3xx is an answer.
            .max_redirects(0)
            .user_agent(concat!("retryq/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        Ok(Http {
            agent,
            targets,
            nodes: Arc::new(Mutex::new(nodes)),
            budgets: Arc::new(Mutex::new(PerTarget::new(options.budget))),
            statuses: options.statuses,
            budget_wait: options.budget_wait,
            content_type,
            epoch: Instant::now(),
        })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The URLs as they are stored and logged: credentials shown as `***`.
    pub fn urls(&self) -> Vec<&str> {
        self.targets.iter().map(|t| t.shown.as_str()).collect()
    }

    /// Sends one POST and reads what came back.
    fn post(&self, target: &Target, job: &Claimed, timeout: Duration) -> Answer {
        let started = Instant::now();
        let mut request = self
            .agent
            .post(&target.url)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .header(IDEMPOTENCY_KEY, idempotency_key(job.id()).as_ref())
            .header(RETRY_ATTEMPT, job.attempt().to_string())
            .header(CONTENT_TYPE, self.content_type.clone());
        if let Some(authorization) = &target.authorization {
            request = request.header(AUTHORIZATION, authorization.clone());
        }
        let sent = request.send(job.payload.as_str());
        let ms = started.elapsed().as_millis();
        let url = &target.shown;
        let mut response = match sent {
            Ok(response) => response,
            Err(ureq::Error::Timeout(_)) => {
                // The limit is what was left of the window, microseconds after it opened.
                let limit = timeout.as_micros().div_ceil(1000);
                let why = format!("timed out after {ms} ms (limit {limit} ms) at {url}");
                return Answer::failed(Ok(Report::with_error(Outcome::Retryable, why)));
            }
            Err(e @ (ureq::Error::Io(_) | ureq::Error::ConnectionFailed | ureq::Error::HostNotFound)) => {
                let why = format!("could not reach {url} after {ms} ms: {e}");
                return Answer::failed(Ok(Report::with_error(Outcome::Retryable, why)));
            }
            Err(e) => {
                let why = format!("no readable answer from {url} after {ms} ms (unclassified): {e}");
                return Answer::failed(Err(Unclassified(why)));
            }
        };
        let status = response.status();
        let class = self.statuses.classify(status.as_u16());
        let head = format!(
            "HTTP {}{} from {url} after {ms} ms",
            status.as_u16(),
            status.canonical_reason().map(|r| format!(" {r}")).unwrap_or_default()
        );
        if class == Class::Ok {
            return Answer {
                observed: Observed::Latency(ms_u64(ms)),
                health: Some(true),
                result: Ok(Report::from(Outcome::Ok)),
            };
        }
        let pushback = pushback(response.headers(), SystemTime::now());
        let body = snippet(response.body_mut().as_reader());
        let with_body = |text: String| if body.is_empty() { text } else { format!("{text}: {body}") };
        // The node's health is the status's: a 503 is an overloaded node whatever it asks.
        let observed =
            if class == Class::Retryable { Observed::Failed } else { Observed::Latency(ms_u64(ms)) };
        if let Pushback::DontRetry = pushback.pushback {
            let why = format!("{head}; {}: the receiver asked not to be retried", pushback.said);
            return Answer {
                observed,
                health: Some(false),
                result: Ok(Report::with_error(Outcome::Permanent, with_body(why))),
            };
        }
        match class {
            Class::Retryable => {
                let mut report =
                    Report::with_error(Outcome::Retryable, with_body(format!("{head}{}", pushback.note())));
                report.retry_after_ms = pushback.floor_ms();
                Answer { observed, health: Some(false), result: Ok(report) }
            }
            Class::Permanent => Answer {
                observed,
                health: None,
                result: Ok(Report::with_error(Outcome::Permanent, with_body(head))),
            },
            Class::Ok | Class::Unclassified => {
                let why =
                    format!("{head} (unclassified: neither ok, retryable nor permanent in the status table)");
                Answer { observed, health: None, result: Err(Unclassified(with_body(why))) }
            }
        }
    }
}

impl Transport for Http {
    /// The POST is given what is left of the attempt's own limit (its timeout, cut to the
    /// deadline) for the whole exchange, and runs on a thread of its own while the slot
    /// watches the window: when the lease ends first (heartbeats failing, or the wall clock
    /// jumping past it) or a heartbeat is refused, the slot stops waiting and the request is
    /// dropped — the worker no longer holds the job, and another may send it (its
    /// `Idempotency-Key` is what guards against the second one).
    fn attempt(&mut self, job: &Claimed, window: &Window<'_>) -> Result<Report, Unclassified> {
        let (left, cut) = window.left();
        if left.is_zero() {
            let note = match cut {
                Cut::Timeout => "not sent: no time left before the deadline".to_owned(),
                lease => format!("not sent: no time left before {lease}"),
            };
            return Ok(Report::with_error(Outcome::Retryable, note));
        }
        let now = self.now();
        let avoid =
            job.last_node.as_deref().and_then(|last| self.targets.iter().position(|t| t.shown == last));
        let node = lock(&self.nodes).pick(now, avoid);
        let Some(target) = self.targets.get(node).cloned() else {
            return Err(Unclassified(format!("no URL number {node} among {}", self.targets.len())));
        };
        let allowed = {
            let mut budgets = lock(&self.budgets);
            let budget = budgets.get(&target.host);
            if job.attempt() <= 1 {
                budget.deposit(now);
                true
            } else {
                budget.withdraw(now)
            }
        };
        if !allowed {
            let wait = self.budget_wait.as_millis();
            let why = format!(
                "not sent: the retry budget for {} is spent (retries are held to a share of recent \
                 requests); no retry sooner than {wait} ms",
                target.host
            );
            return Ok(Report::with_error(Outcome::Retryable, why).retry_after(ms_u64(wait)));
        }
        debug!(job = %job.id(), attempt = job.attempt(), url = %target.shown, "posting");
        let answer = match self.post_within(&target, job, window) {
            Ok(answer) => answer,
            Err(given_up) => return given_up,
        };
        let after = self.now();
        if let Err(e) = lock(&self.nodes).record(node, after, answer.observed) {
            debug!(error = %e, "node not recorded");
        }
        if let Some(success) = answer.health {
            lock(&self.budgets).get(&target.host).record(after, success);
        }
        answer.result.map(|report| report.node(target.shown))
    }
}

impl Http {
    /// Sends the POST on a thread of its own, limited to what is left of the window's own
    /// timeout, and waits for its answer while the window stays open — looking at it every
    /// [`POLL`], as the exec transport does. A window closed by the lease or a refused
    /// heartbeat gives the request up (`Err`, with the attempt's result): its thread ends
    /// when the exchange does, and its answer goes nowhere. A window closed by the timeout
    /// waits for the request's own timeout, which says what happened; [`BACKSTOP`] past it
    /// the request is given up all the same.
    fn post_within(
        &self,
        target: &Target,
        job: &Claimed,
        window: &Window<'_>,
    ) -> Result<Answer, Result<Report, Unclassified>> {
        let (tx, rx) = mpsc::channel();
        let (http, target_owned, job_owned) = (self.clone(), target.clone(), job.clone());
        let timeout = window.timeout_left();
        thread::Builder::new()
            .name("retryq-http-post".into())
            .spawn(move || {
                let _ = tx.send(http.post(&target_owned, &job_owned, timeout));
            })
            .map_err(|e| Err(Unclassified(format!("could not start the request's thread: {e}"))))?;
        let url = &target.shown;
        loop {
            let (left, cut) = window.left();
            let overdue = window.elapsed() >= window.timeout().saturating_add(BACKSTOP);
            if left.is_zero() && (cut != Cut::Timeout || overdue) {
                let ms = window.elapsed().as_millis();
                let why = format!("gave up after {ms} ms at {cut}: no answer awaited from {url}");
                return Err(Ok(Report::with_error(Outcome::Retryable, why)));
            }
            let wait = if left.is_zero() { POLL } else { left.min(POLL) };
            match rx.recv_timeout(wait) {
                Ok(answer) => return Ok(answer),
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Err(Unclassified(format!("the request to {url} ended without an answer"))));
                }
            }
        }
    }
}

/// How long past the attempt's timeout the slot still waits for the HTTP client's own
/// timeout to answer, before giving the request up. The client's timeout covers the whole
/// exchange and normally answers first; this only bounds a client that would not.
pub const BACKSTOP: Duration = Duration::from_secs(1);

/// What one POST came to, for the job, the selector and the budget.
struct Answer {
    observed: Observed,
    /// A success, a failure worth retrying, or (None) nothing about the target's health.
    health: Option<bool>,
    result: Result<Report, Unclassified>,
}

impl Answer {
    /// No answer from the node: it counts as failed.
    fn failed(result: Result<Report, Unclassified>) -> Answer {
        Answer { observed: Observed::Failed, health: Some(false), result }
    }
}

/// The shared state of the clones, held only between two calls that do not block: a clone
/// that panicked while holding it left nothing half-written that matters more than a lost
/// observation.
fn lock<T>(shared: &Mutex<T>) -> MutexGuard<'_, T> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

fn ms_u64(ms: u128) -> u64 {
    u64::try_from(ms).unwrap_or(u64::MAX)
}

/// The job's id as an `Idempotency-Key` value: unchanged when it is visible ASCII without
/// `%`; otherwise every byte outside visible ASCII, and every `%`, is written `%XX` (RFC 3986
/// percent-encoding of the UTF-8 bytes), so that any id is a valid header value and each id
/// has exactly one key.
pub fn idempotency_key(id: &str) -> Cow<'_, str> {
    let plain = |b: u8| (0x21..=0x7e).contains(&b) && b != b'%';
    if id.bytes().all(plain) {
        return Cow::Borrowed(id);
    }
    let mut key = String::with_capacity(id.len() * 3);
    for b in id.bytes() {
        if plain(b) {
            key.push(char::from(b));
        } else {
            let _ = write!(key, "%{b:02X}");
        }
    }
    Cow::Owned(key)
}

/// What a response said about retrying it.
#[derive(Debug, PartialEq, Eq)]
struct Said {
    pushback: Pushback,
    /// `Retry-After`, in milliseconds from now, if given and readable.
    retry_after_ms: Option<u64>,
    /// The headers as received, for the error text.
    said: String,
}

impl Said {
    /// The least delay asked for: the larger of the two headers.
    fn floor_ms(&self) -> Option<u64> {
        let pushed = match self.pushback {
            Pushback::RetryAfter(ms) => Some(ms),
            Pushback::None | Pushback::DontRetry => None,
        };
        pushed.max(self.retry_after_ms)
    }

    fn note(&self) -> String {
        match self.floor_ms() {
            Some(ms) => format!("; {} (no retry sooner than {ms} ms)", self.said),
            None if !self.said.is_empty() => format!("; {}", self.said),
            None => String::new(),
        }
    }
}

/// Reads `Retry-After` and [`RETRY_PUSHBACK_MS`] (the first of each).
fn pushback(headers: &HeaderMap, now: SystemTime) -> Said {
    let text = |v: &HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    let mut said = Vec::new();
    let mut retry_after_ms = None;
    if let Some(value) = headers.get(RETRY_AFTER).map(text) {
        retry_after_ms = retry_after(&value, now);
        said.push(match retry_after_ms {
            Some(_) => format!("Retry-After: {value}"),
            None => format!("Retry-After: {value} (ignored: neither seconds nor an HTTP date)"),
        });
    }
    let pushback = match headers.get(RETRY_PUSHBACK_MS).map(text) {
        Some(value) => {
            said.push(format!("{RETRY_PUSHBACK_MS}: {value}"));
            Pushback::from_grpc_header(&value)
        }
        None => Pushback::None,
    };
    Said { pushback, retry_after_ms, said: said.join("; ") }
}

/// A `Retry-After` value in milliseconds from `now`: delay-seconds, or an HTTP date (one in
/// the past is 0). `None` if it is neither.
pub fn retry_after(value: &str, now: SystemTime) -> Option<u64> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Too many digits for a u64 is a delay past any deadline.
        return Some(value.parse::<u64>().map_or(u64::MAX, |s| s.saturating_mul(1000)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).map_or(0, |d| ms_u64(d.as_millis())))
}

/// The first [`BODY_BYTES`] of a body, as trimmed text on one line.
fn snippet(body: impl Read) -> String {
    let mut bytes = Vec::new();
    let _ = body.take(BODY_BYTES).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests;
