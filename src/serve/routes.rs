//! Which request gets which answer: every route, from a [`Request`] and the store to a
//! [`Response`]. A change is one operation of the contract (`redrive`, `redrive_dead`,
//! `cancel`, `pause`, `resume`, `run_now`), as the command line runs it; a bulk action is
//! one per selected job (`bulk.rs`).
//!
//! [`Routes::answer`] decides everything that needs no store — the static files, signing in
//! and out, and every refusal — so that the server (`server.rs`) answers a request that is
//! not admitted without taking one of the store's connections; only an admitted request
//! reaches [`Routes::with_store`].

use maud::Markup;
use retryq::{
    Backend, Browse, Cancelled, DeadReason, Error, Lookup, MAX_ATTEMPTS, Redrive, RedriveDead, Stats, Status,
};

use super::activity::{Activity, Window};
use super::bulk::{self, Action};
use super::guard::{Guard, Refusal};
use super::http::{HTML, Request, Response};
use super::page;
use super::search;
use super::workers;
use crate::cmd::duration;
use crate::metrics;

/// The dashboard's own script and styles.
const APP_JS: &str = include_str!("app.js");
const STYLE_CSS: &str = include_str!("style.css");

/// How many jobs a list page shows.
pub const PAGE: u32 = 50;

/// How a route reads `now` from a store: the server's clock on PostgreSQL, unless told
/// otherwise, else this host's.
pub type Now = Box<dyn Fn(&dyn Backend) -> Result<u64, String> + Send + Sync>;

/// What every route shares: the guard, and how to read `now`.
pub struct Routes {
    /// Who may read and change.
    pub guard: Guard,
    /// The operation's `now` from the store (the server's clock on PostgreSQL, unless told
    /// otherwise), else this host's.
    pub now: Now,
    /// The tallies' growth over time, for the overview's charts.
    pub activity: Activity,
}

/// What a request needs, once [`Routes::answer`] has looked at it.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// Answered without the store.
    Now(Response),
    /// Admitted, and answered by [`Routes::with_store`].
    Store,
}

/// A route's failure, as an answer.
struct Failed(Response);

impl From<Error> for Failed {
    fn from(error: Error) -> Failed {
        use retryq::ErrorKind::*;
        let status = match error.kind() {
            InvalidInput => 400,
            NotFound => 404,
            Storage => 500,
            // A refusal of the contract's (not dead, pruned, …): the job is not as the page
            // showed it, by now.
            _ => 409,
        };
        Failed(Response::text(status, error.to_string()))
    }
}

fn bad(field: &str, why: impl std::fmt::Display) -> Failed {
    Failed(Response::text(400, format!("{field}: {why}")))
}

fn html(markup: Markup) -> Response {
    Response::ok(HTML, markup.into_string())
}

impl Routes {
    /// The answer that needs no store: the static files, the sign-in form, signing in and
    /// out, a refusal by the guard, a path or method no route takes; [`Answer::Store`] for
    /// an admitted request that reads or changes the store.
    pub fn answer(&self, request: &Request) -> Answer {
        let method = request.method.as_str();
        match (method, request.path.as_str()) {
            ("GET", "/static/app.js") => {
                return Answer::Now(Response::ok("text/javascript; charset=utf-8", APP_JS));
            }
            ("GET", "/static/style.css") => {
                return Answer::Now(Response::ok("text/css; charset=utf-8", STYLE_CSS));
            }
            ("GET", "/login") => return Answer::Now(html(page::login(false))),
            ("POST", "/login") => return Answer::Now(self.login(request)),
            _ => {}
        }
        let change = method == "POST";
        let admitted = if change { self.guard.admit_change(request) } else { self.guard.admit(request) };
        let refused = match admitted {
            Ok(()) => None,
            Err(Refusal::Token) if request.path == "/metrics" || request.path.starts_with("/api/") => {
                Some(Response::text(401, "a token is required: Authorization: Bearer TOKEN"))
            }
            Err(Refusal::Token) => Some(Response { status: 401, ..html(page::login(false)) }),
            Err(Refusal::Host) => Some(Response::text(
                403,
                "this dashboard answers only to a loopback host name without a token",
            )),
            Err(Refusal::Forgery) => Some(Response::text(
                403,
                "a change needs a form of this dashboard (its CSRF token and origin)",
            )),
        };
        if let Some(refused) = refused {
            return Answer::Now(refused);
        }
        match (method, request.path.as_str()) {
            ("GET", "/" | "/api/counts" | "/jobs" | "/job" | "/workers" | "/metrics")
            | ("POST", "/redrive" | "/cancel" | "/pause" | "/resume" | "/run-now" | "/bulk") => Answer::Store,
            ("POST", "/logout") => Answer::Now(self.logout(request)),
            (
                _,
                "/" | "/api/counts" | "/jobs" | "/job" | "/workers" | "/metrics" | "/redrive" | "/cancel"
                | "/pause" | "/resume" | "/run-now" | "/bulk" | "/logout",
            ) => Answer::Now(Response::text(405, format!("{method} is not allowed here"))),
            _ => Answer::Now(Response {
                status: 404,
                ..html(page::problem("Not found", "No such page.", self.nav()))
            }),
        }
    }

    /// The answer to an admitted request that [`answer`](Routes::answer) sent to the store.
    pub fn with_store(&self, store: &mut dyn Backend, request: &Request) -> Response {
        let answered = match (request.method.as_str(), request.path.as_str()) {
            ("GET", "/") => self.overview(store, request),
            ("GET", "/api/counts") => self.counts(store),
            ("GET", "/jobs") => self.jobs(store, request),
            ("GET", "/job") => self.job(store, request),
            ("GET", "/workers") => self
                .now(store)
                .and_then(|now| Ok(html(workers::page(&workers::read(store, now)?, self.nav())))),
            ("GET", "/metrics") => self.metrics(store),
            ("POST", "/redrive") => self.redrive(store, request),
            ("POST", "/cancel") => self.cancel(store, request),
            ("POST", "/pause") => self.pause(store, request, true),
            ("POST", "/resume") => self.pause(store, request, false),
            ("POST", "/run-now") => self.run_now(store, request),
            ("POST", "/bulk") => self.bulk(store, request),
            // `answer` sends no other here.
            (method, _) => Ok(Response::text(405, format!("{method} is not allowed here"))),
        };
        match answered {
            Ok(response) | Err(Failed(response)) => response,
        }
    }

    /// The navigation's sign-out button, where there is a session to end.
    fn nav(&self) -> page::Nav<'_> {
        page::Nav { sign_out: self.guard.has_token().then(|| self.guard.csrf()) }
    }

    fn now(&self, store: &dyn Backend) -> Result<u64, Failed> {
        (self.now)(store).map_err(|why| Failed(Response::text(500, why)))
    }

    /// A page of jobs, ages counted by the store's clock, as every other route's.
    fn jobs(&self, store: &dyn Backend, request: &Request) -> Result<Response, Failed> {
        let now = self.now(store)?;
        jobs_at(store, request, now, self.guard.csrf(), self.nav())
    }

    /// Signing in: the token given in the form opens a session (`guard.rs`).
    fn login(&self, request: &Request) -> Response {
        if !self.guard.has_token() {
            return Response::see_other("/");
        }
        match request.form("token").and_then(|token| self.guard.sign_in(token, request.https)) {
            Some(cookie) => Response { cookie: Some(cookie), ..Response::see_other("/") },
            None => Response { status: 401, ..html(page::login(true)) },
        }
    }

    /// Signing out: the session ends and the browser's cookie is deleted.
    fn logout(&self, request: &Request) -> Response {
        if !self.guard.has_token() {
            return Response::see_other("/");
        }
        Response { cookie: Some(self.guard.sign_out(request)), ..Response::see_other("/login") }
    }

    /// Reads the tallies into the charts' slots (`activity.rs`): at every overview, and every
    /// [`SAMPLE_EVERY`](super::activity::SAMPLE_EVERY) from `retryq serve`'s own thread.
    pub fn sample(&self, store: &dyn Backend) -> Result<(), String> {
        let now = (self.now)(store)?;
        let tallies = store.tallies().map_err(|e| e.to_string())?;
        self.activity.sample(&tallies, now);
        Ok(())
    }

    fn overview(&self, store: &mut dyn Backend, request: &Request) -> Result<Response, Failed> {
        self.sample(store).map_err(|why| Failed(Response::text(500, why)))?;
        let now = self.now(store)?;
        let total = store.stats(now)?;
        let queues = by_queue(store, now)?;
        let paused = store.paused()?;
        // Only a number of ours, or one of our words, is shown: never the query's text.
        let redrove = request.query("redrove").and_then(|n| n.parse::<u64>().ok());
        let message = match redrove {
            Some(n) => Some(format!("Redrove {n} dead job{}.", if n == 1 { "" } else { "s" })),
            None => request.query("said").and_then(said).map(str::to_owned),
        };
        // The charts of one queue, if a known one is asked for, else of all.
        let queue = request.query("queue").filter(|q| queues.iter().any(|(name, _)| name == q));
        let charts = page::Charts {
            queue,
            since: self.activity.since(),
            hour: self.activity.chart(Window::Hour, now, queue),
            day: self.activity.chart(Window::Day, now, queue),
        };
        Ok(html(page::overview(
            now,
            &total,
            &queues,
            &paused,
            &charts,
            self.guard.csrf(),
            message.as_deref(),
            self.nav(),
        )))
    }

    /// The counts the overview's script refreshes, by the keys of its `data-count`s.
    fn counts(&self, store: &mut dyn Backend) -> Result<Response, Failed> {
        let now = self.now(store)?;
        let s = store.stats(now)?;
        let oldest = s.oldest_open_age_ms.map_or_else(|| "none open".to_owned(), duration::words);
        let mut counts = serde_json::json!({
            "pending": s.pending, "leased": s.leased, "leased_expired": s.leased_expired, "done": s.done,
            "dead": s.dead, "pruned_done": s.pruned_done, "pruned_dead": s.pruned_dead, "oldest_open": oldest,
        });
        for reason in page::REASONS {
            counts[format!("dead_{}", reason.as_str())] = page::dead_of(&s, reason).into();
        }
        Ok(Response::ok("application/json", counts.to_string()))
    }

    fn job(&self, store: &mut dyn Backend, request: &Request) -> Result<Response, Failed> {
        let Some(id) = request.query("id") else {
            return Ok(Response::see_other("/jobs"));
        };
        let message = request.query("said").and_then(said);
        match store.lookup(id)? {
            Some(Lookup::Job(job)) => {
                let history = store.history(id)?;
                let attempts = store.attempts(id)?;
                Ok(html(page::job(&job, &history, &attempts, self.guard.csrf(), message, self.nav())))
            }
            Some(Lookup::Pruned(tombstone)) => Ok(html(page::tombstone(&tombstone, self.nav()))),
            None => Ok(Response {
                status: 404,
                ..html(page::problem("No such job", &format!("No job has the id {id:?}."), self.nav()))
            }),
        }
    }

    fn metrics(&self, store: &mut dyn Backend) -> Result<Response, Failed> {
        let now = self.now(store)?;
        let families = metrics::read(store, now, None)?;
        let text =
            metrics::encode(families).map_err(|_| Failed(Response::text(500, "the exposition failed")))?;
        Ok(Response::ok(metrics::CONTENT_TYPE, text))
    }

    fn redrive(&self, store: &mut dyn Backend, request: &Request) -> Result<Response, Failed> {
        let now = self.now(store)?;
        let (add_attempts, deadline) = budget(request, now)?;
        if let Some(id) = request.form("id") {
            store.redrive(&Redrive { id, add_attempts, deadline, now })?;
            return Ok(Response::see_other(format!("{}&said=redriven", page::job_href(id))));
        }
        let reason = match request.form("reason").map(str::parse::<DeadReason>) {
            Some(Ok(reason)) => Some(reason),
            Some(Err(e)) => return Err(bad("reason", e)),
            None => None,
        };
        let results = store.redrive_dead(&RedriveDead { reason, add_attempts, deadline, now })?;
        let refused = results.iter().filter(|(_, result)| result.is_err()).count();
        if refused > 0 {
            return Err(Failed(Response::text(
                409,
                format!(
                    "redrove {} of {} dead jobs; the others changed meanwhile",
                    results.len() - refused,
                    results.len()
                ),
            )));
        }
        Ok(Response::see_other(format!("/?redrove={}", results.len())))
    }

    fn cancel(&self, store: &mut dyn Backend, request: &Request) -> Result<Response, Failed> {
        let id = request.form("id").ok_or_else(|| bad("id", "which job to cancel"))?;
        let now = self.now(store)?;
        let said = match store.cancel(id, now) {
            Ok(Cancelled::Ended) => "cancelled",
            Ok(_) => "cancelling",
            Err(Error::NotCancellable { .. }) => "not_cancellable",
            Err(e) => return Err(e.into()),
        };
        Ok(Response::see_other(format!("{}&said={said}", page::job_href(id))))
    }
}

impl Routes {
    /// Pausing (`pause`) or resuming a queue (SPEC 3.16, 3.17): both are idempotent, so the
    /// only refusal is bad input.
    fn pause(&self, store: &mut dyn Backend, request: &Request, pause: bool) -> Result<Response, Failed> {
        let queue = request.form("queue").ok_or_else(|| bad("queue", "which queue to pause or resume"))?;
        let now = self.now(store)?;
        if pause {
            store.pause(queue, now)?;
        } else {
            store.resume(queue, now)?;
        }
        Ok(Response::see_other(if pause { "/?said=paused" } else { "/?said=resumed" }))
    }

    /// Running a pending job now (SPEC 3.18): the page it leads to says what was done, or
    /// the contract's reason for refusing.
    fn run_now(&self, store: &mut dyn Backend, request: &Request) -> Result<Response, Failed> {
        let id = request.form("id").ok_or_else(|| bad("id", "which job to run now"))?;
        let now = self.now(store)?;
        let said = match store.run_now(id, now) {
            Ok(_) => "run_now",
            Err(Error::NotPending { .. }) => "not_pending",
            Err(Error::DeadlinePassed { .. }) => "deadline_passed",
            Err(e) => return Err(e.into()),
        };
        Ok(Response::see_other(format!("{}&said={said}", page::job_href(id))))
    }
}

impl Routes {
    /// A bulk action on the selected rows (`bulk.rs`): its page says how many it changed and
    /// lists the refusals by reason. Bad input (no action, no id, too many, a bad budget) is
    /// refused with 400 before any job is touched.
    fn bulk(&self, store: &mut dyn Backend, request: &Request) -> Result<Response, Failed> {
        let ids = bulk::ids(request.form.iter().filter(|(k, _)| k == "id").map(|(_, v)| v.as_str()))
            .map_err(|e| Failed(Response::text(400, e.to_string())))?;
        let now = self.now(store)?;
        let action = match request.form("action") {
            Some("redrive") => {
                let (add_attempts, deadline) = budget(request, now)?;
                Action::Redrive { add_attempts, deadline }
            }
            Some("cancel") => Action::Cancel,
            Some("run_now") => Action::RunNow,
            _ => return Err(bad("action", "redrive, cancel or run_now")),
        };
        let outcome = bulk::run(store, action, &ids, now);
        let status = if outcome.stopped.is_some() { 500 } else { 200 };
        // The list's filters, as its form sent them: the link back keeps them (a path of this
        // dashboard's whatever they hold, and escaped as every value is).
        let back = request.form("back").unwrap_or_default();
        Ok(Response { status, ..html(page::bulk(action, &outcome, back, self.nav())) })
    }
}

/// A redrive's new budget from its form: `add_attempts` more attempts, and a deadline `ttl`
/// from `now`.
fn budget(request: &Request, now: u64) -> Result<(u64, u64), Failed> {
    let add_attempts = match request.form("add_attempts").map(str::parse::<u64>) {
        Some(Ok(n)) if (1..=MAX_ATTEMPTS).contains(&n) => n,
        _ => return Err(bad("add_attempts", format!("a whole number from 1 to {MAX_ATTEMPTS}"))),
    };
    let ttl =
        request.form("ttl").ok_or_else(|| bad("ttl", "the new deadline, as a duration from now: 1h"))?;
    let ttl = duration::positive(ttl).map_err(|e| bad("ttl", e))?;
    let deadline = now.checked_add(ttl).ok_or_else(|| bad("ttl", "too far in the future"))?;
    Ok((add_attempts, deadline))
}

/// What a change said, for the page it leads to: only these words, never the query's text.
fn said(word: &str) -> Option<&'static str> {
    match word {
        "redriven" => Some("Redriven: the job is pending again, with its new budget."),
        "cancelled" => Some("Cancelled: the job is dead (cancelled)."),
        "cancelling" => Some("Cancel requested: the running attempt is told at its next heartbeat."),
        "not_cancellable" => Some("Not cancelled: the job had already ended."),
        "paused" => Some("Paused: no job of the queue is claimed until it is resumed."),
        "resumed" => Some("Resumed: the queue's jobs are claimed again."),
        "run_now" => Some("Run now: the job is due at once."),
        "not_pending" => Some("Not run now (not_pending): the job is not pending."),
        "deadline_passed" => Some("Not run now (deadline_passed): the job's deadline has passed."),
        _ => None,
    }
}

/// Each queue's counts.
fn by_queue(store: &dyn Backend, now: u64) -> Result<Vec<(String, Stats)>, Failed> {
    let mut names = store.queues()?;
    // A paused name no job carries is listed too, so that a pause is never out of sight
    // (SPEC 6.40).
    let known: std::collections::BTreeSet<String> = names.iter().cloned().collect();
    names.extend(store.paused()?.into_iter().map(|(name, _)| name).filter(|name| !known.contains(name)));
    names.sort();
    let mut queues = Vec::new();
    for name in names {
        let stats = store.stats_of(now, Some(&name))?;
        queues.push((name, stats));
    }
    Ok(queues)
}

/// A page of jobs; `now` dates `older_than`.
fn jobs_at(
    store: &dyn Backend,
    request: &Request,
    now: u64,
    csrf: &str,
    nav: page::Nav<'_>,
) -> Result<Response, Failed> {
    let status =
        request.query("status").map(str::parse::<Status>).transpose().map_err(|e| bad("status", e))?;
    let reason =
        request.query("reason").map(str::parse::<DeadReason>).transpose().map_err(|e| bad("reason", e))?;
    let after = request.query("after").map(str::parse::<u64>).transpose().map_err(|e| bad("after", e))?;
    let older_than = request.query("older_than");
    let enqueued_by = match older_than {
        Some(text) => {
            let age = duration::parse_ms(text).map_err(|e| bad("older_than", e))?;
            Some(now.saturating_sub(age))
        }
        None => None,
    };
    let filters = page::Filters {
        status,
        reason,
        queue: request.query("queue").map(str::to_owned),
        prefix: request.query("prefix").map(str::to_owned),
        older_than: older_than.map(str::to_owned),
        error: request.query("error").map(str::to_owned),
        payload: request.query("payload").map(str::to_owned),
        kind: request.query("kind").filter(|kind| !kind.is_empty()).map(str::to_owned),
    };
    let browse = Browse {
        status,
        reason,
        queue: filters.queue.as_deref(),
        id_prefix: filters.prefix.as_deref(),
        enqueued_by,
        after,
        limit: PAGE,
    };
    let texts = search::Texts {
        error: filters.error.as_deref(),
        payload: filters.payload.as_deref(),
        kind: filters.kind.as_deref(),
    };
    let (page, scanned) = if texts.any() {
        let found = search::search(store, &browse, texts, PAGE as usize)?;
        (found.page, Some(found.scanned))
    } else {
        (store.browse(&browse)?, None)
    };
    let queues = store.queues()?;
    Ok(html(page::jobs(&filters, &queues, &page, scanned, csrf, nav)))
}
