//! The dashboard's HTML. maud escapes every value a template is given, so nothing from a
//! payload, an id, a queue's name or an error text is ever markup; the only script is
//! `/static/app.js`, and the content security policy (`http.rs`) runs no other.

use maud::{DOCTYPE, Markup, html};
use retryq::{AttemptRecord, BrowsePage, DeadReason, HistoryEntry, Job, Stats, Status, Tombstone};

use super::activity::{Slots, Window};
use super::bulk::{self, Action};
use super::chart;
use super::search;
use crate::cmd::duration::words;
use crate::cmd::view::utc;

/// The statuses, in a job's order of life.
pub const STATUSES: [Status; 4] = [Status::Pending, Status::Leased, Status::Done, Status::Dead];
/// The dead reasons.
pub const REASONS: [DeadReason; 4] =
    [DeadReason::Exhausted, DeadReason::Deadline, DeadReason::Permanent, DeadReason::Cancelled];

/// What every page's navigation needs beyond its links: where a token is required, the
/// CSRF token of the sign-out button.
#[derive(Clone, Copy, Debug, Default)]
pub struct Nav<'a> {
    /// The CSRF token, when there is a session to end.
    pub sign_out: Option<&'a str>,
}

/// A page: the title, the navigation and `body`.
pub fn layout(title: &str, nav: Nav<'_>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · retryq" }
                link rel="stylesheet" href="/static/style.css";
                script src="/static/app.js" defer {}
            }
            body {
                nav {
                    a href="/" { "Overview" }
                    a href="/jobs" { "Jobs" }
                    a href="/jobs?status=dead" { "Dead" }
                    a href="/workers" { "Workers" }
                    a href="/metrics" { "Metrics" }
                    form.find method="get" action="/job" {
                        input type="search" name="id" placeholder="Job id" aria-label="Job id";
                    }
                    @if let Some(csrf) = nav.sign_out {
                        form.sign-out method="post" action="/logout" {
                            input type="hidden" name="csrf" value=(csrf);
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main { h1 { (title) } (body) }
            }
        }
    }
}

/// The login form, for a dashboard that requires a token.
pub fn login(failed: bool) -> Markup {
    layout(
        "Sign in",
        Nav::default(),
        html! {
            @if failed { p.error { "That token is not this dashboard's." } }
            form method="post" action="/login" {
                label { "Token " input type="password" name="token" autocomplete="current-password"; }
                button type="submit" { "Sign in" }
            }
        },
    )
}

/// A count that the page's script refreshes: `key` names it in `/api/counts`.
fn count(key: &str, value: u64, href: &str) -> Markup {
    html! { a href=(href) { span data-count=(key) { (value) } } }
}

/// The overview's activity charts (`activity.rs`, `chart.rs`).
#[derive(Clone, Debug)]
pub struct Charts<'a> {
    /// The queue charted, or `None` for all.
    pub queue: Option<&'a str>,
    /// Since when the charts count.
    pub since: Option<u64>,
    /// The last hour, by minute.
    pub hour: Slots,
    /// The last day, by hour.
    pub day: Slots,
}

/// The charts, with links to chart each queue alone.
fn activity(charts: &Charts<'_>, queues: &[(String, Stats)]) -> Markup {
    html! {
        h2 #activity { "Activity" @if let Some(queue) = charts.queue { " of " (queue) } }
        p.chart-queues {
            @if charts.queue.is_none() { strong { "all queues" } } @else { a href="/#activity" { "all queues" } }
            @for (name, _) in queues {
                " · "
                @if charts.queue == Some(name.as_str()) { strong { (name) } } @else {
                    a href={ "/?queue=" (form_urlencoded::byte_serialize(name.as_bytes()).collect::<String>()) "#activity" } { (name) }
                }
            }
        }
        p.note {
            span.key.processed {} " processed: attempts ended · "
            span.key.retried {} " retried: attempts ended retryable or with their lease expired · "
            span.key.dead {} " dead: jobs that died. "
            @if let Some(since) = charts.since { "Counted by this dashboard since " (utc(since)) "; not before." }
        }
        h3 { "Per minute, the last hour" }
        (chart::svg(Window::Hour, &charts.hour))
        h3 { "Per hour, the last day" }
        (chart::svg(Window::Day, &charts.day))
    }
}

/// The overview: counts by status and reason, of the whole store and of each queue, the
/// activity charts, and the dead jobs' redrive by reason.
#[allow(clippy::too_many_arguments)]
pub fn overview(
    now: u64,
    total: &Stats,
    queues: &[(String, Stats)],
    paused: &[(String, u64)],
    charts: &Charts<'_>,
    csrf: &str,
    message: Option<&str>,
    nav: Nav<'_>,
) -> Markup {
    let oldest = total.oldest_open_age_ms.map_or_else(|| "none open".to_owned(), words);
    layout(
        "Overview",
        nav,
        html! {
            @if let Some(message) = message { p.message { (message) } }
            p.note { "Counts at " (utc(now)) ", refreshed every 2 s." }
            table #counts {
                thead { tr { th { "pending" } th { "leased" } th { "leases expired" } th { "done" } th { "dead" }
                    th { "pruned (done / dead)" } th { "oldest open job" } } }
                tbody { tr {
                    td { (count("pending", total.pending, "/jobs?status=pending")) }
                    td { (count("leased", total.leased, "/jobs?status=leased")) }
                    td { span data-count="leased_expired" { (total.leased_expired) } }
                    td { (count("done", total.done, "/jobs?status=done")) }
                    td { (count("dead", total.dead, "/jobs?status=dead")) }
                    td { span data-count="pruned_done" { (total.pruned_done) } " / " span data-count="pruned_dead" { (total.pruned_dead) } }
                    td { span data-count="oldest_open" { (oldest) } }
                } }
            }
            h2 { "Dead, by reason" }
            table #dead {
                thead { tr { th { "reason" } th { "jobs" } th { "redrive every one" } } }
                tbody {
                    @for reason in REASONS {
                        @let n = dead_of(total, reason);
                        tr {
                            td { (reason.as_str()) }
                            td { (count(&format!("dead_{}", reason.as_str()), n, &format!("/jobs?status=dead&reason={}", reason.as_str()))) }
                            td { @if n > 0 { (redrive_form(csrf, None, Some(reason))) } }
                        }
                    }
                }
            }
            @if !queues.is_empty() {
                h2 { "By queue" }
                table #queues {
                    thead { tr { th { "queue" } th { "pending" } th { "leased" } th { "done" } th { "dead" } th { "oldest open job" }
                        th { "paused" } th { "pause / resume" } } }
                    tbody {
                        @for (name, stats) in queues {
                            @let q = form_urlencoded::byte_serialize(name.as_bytes()).collect::<String>();
                            @let since = paused.iter().find(|(queue, _)| queue == name).map(|(_, at)| *at);
                            tr data-queue=(name) {
                                td { a href={ "/jobs?queue=" (q) } { (name) } }
                                td { (stats.pending) } td { (stats.leased) } td { (stats.done) } td { (stats.dead) }
                                td { (stats.oldest_open_age_ms.map_or_else(|| "none open".to_owned(), words)) }
                                td.paused { @if let Some(at) = since { "since " (utc(at)) } @else { "no" } }
                                td { (pause_form(csrf, name, since.is_none())) }
                            }
                        }
                    }
                }
            }
            (activity(charts, queues))
        },
    )
}

/// A queue's pause button, or its resume button when it is paused.
fn pause_form(csrf: &str, queue: &str, pause: bool) -> Markup {
    html! {
        form.pause method="post" action=(if pause { "/pause" } else { "/resume" }) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="queue" value=(queue);
            button type="submit" { @if pause { "Pause" } @else { "Resume" } }
        }
    }
}

/// How many jobs are dead for `reason`.
pub fn dead_of(stats: &Stats, reason: DeadReason) -> u64 {
    match reason {
        DeadReason::Exhausted => stats.dead_exhausted,
        DeadReason::Deadline => stats.dead_deadline,
        DeadReason::Permanent => stats.dead_permanent,
        DeadReason::Cancelled => stats.dead_cancelled,
        // A reason of a later contract: no count of this build's stats holds it.
        _ => 0,
    }
}

/// A redrive form: of one job (`id`) or of every job dead for `reason`.
fn redrive_form(csrf: &str, id: Option<&str>, reason: Option<DeadReason>) -> Markup {
    html! {
        form.redrive method="post" action="/redrive" {
            input type="hidden" name="csrf" value=(csrf);
            @if let Some(id) = id { input type="hidden" name="id" value=(id); }
            @if let Some(reason) = reason { input type="hidden" name="reason" value=(reason.as_str()); }
            label { "attempts " input type="number" name="add_attempts" value="1" min="1" size="3"; }
            label { " deadline in " input type="text" name="ttl" value="1h" size="5"; }
            " " button type="submit" { "Redrive" }
        }
    }
}

/// The filters of a job list, as given.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    pub status: Option<Status>,
    pub reason: Option<DeadReason>,
    pub queue: Option<String>,
    pub prefix: Option<String>,
    pub older_than: Option<String>,
    /// Text the last error holds (`search.rs`).
    pub error: Option<String>,
    /// Text the payload holds.
    pub payload: Option<String>,
    /// The jobs' kind, exactly.
    pub kind: Option<String>,
}

impl Filters {
    /// The query string that repeats these filters.
    pub fn query(&self) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        let mut add = |key: &str, value: Option<&str>| {
            if let Some(value) = value {
                query.append_pair(key, value);
            }
        };
        add("status", self.status.map(Status::as_str));
        add("reason", self.reason.map(DeadReason::as_str));
        add("queue", self.queue.as_deref());
        add("prefix", self.prefix.as_deref());
        add("older_than", self.older_than.as_deref());
        add("error", self.error.as_deref());
        add("payload", self.payload.as_deref());
        add("kind", self.kind.as_deref());
        query.finish()
    }
}

/// A page of jobs, with the filters' form and the next page's link.
/// `scanned`: how many jobs a text search read for this page (`search.rs`), if one ran.
pub fn jobs(
    filters: &Filters,
    queues: &[String],
    page: &BrowsePage,
    scanned: Option<usize>,
    csrf: &str,
    nav: Nav<'_>,
) -> Markup {
    let selected = |on: bool| if on { Some("selected") } else { None };
    layout(
        "Jobs",
        nav,
        html! {
            form #filters method="get" action="/jobs" {
                label { "status " select name="status" {
                    option value="" { "any" }
                    @for status in STATUSES { option value=(status.as_str()) selected=[selected(filters.status == Some(status))] { (status.as_str()) } }
                } }
                label { " reason " select name="reason" {
                    option value="" { "any" }
                    @for reason in REASONS { option value=(reason.as_str()) selected=[selected(filters.reason == Some(reason))] { (reason.as_str()) } }
                } }
                label { " queue " select name="queue" {
                    option value="" { "any" }
                    @for name in queues { option value=(name) selected=[selected(filters.queue.as_deref() == Some(name))] { (name) } }
                } }
                label { " id starts with " input type="text" name="prefix" value=[filters.prefix.as_deref()] size="12"; }
                label { " older than " input type="text" name="older_than" value=[filters.older_than.as_deref()] placeholder="1h" size="5"; }
                br;
                label { "error contains " input type="text" name="error" value=[filters.error.as_deref()] size="20"; }
                label { " payload contains " input type="text" name="payload" value=[filters.payload.as_deref()] size="20"; }
                label { " kind " input type="text" name="kind" value=[filters.kind.as_deref()] size="12"; }
                " " button type="submit" { "Filter" }
            }
            @if let Some(scanned) = scanned {
                p.note #scanned data-scanned=(scanned) {
                    "Text and kind are searched in at most " (search::SCAN) " jobs per page, the most recently enqueued first, "
                    "among those the other filters keep: this page read " (scanned) "."
                    @if page.next.is_some() { " Next page reads the next ones." }
                }
            }
            @if page.jobs.is_empty() {
                p.note { "No job matches." }
            } @else {
                form #bulk method="post" action="/bulk" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="back" value=(filters.query());
                table #jobs {
                    thead { tr { th { input #select-all type="checkbox" aria-label="select every job of this page"; } th { "id" } th { "queue" } th { "kind" } th { "priority" } th { "status" } th { "attempts" } th { "enqueued" } th { "last error" } } }
                    tbody {
                        @for job in &page.jobs {
                            tr {
                                td { input.select type="checkbox" name="id" value=(job.id) aria-label={ "select " (job.id) }; }
                                td { a.job href=(job_href(&job.id)) { (job.id) } }
                                td { (job.queue) } td.kind { (job.kind) } td { (job.priority) }
                                td { (status_word(job)) }
                                td { (job.attempts) " / " (job.max_attempts) }
                                td { (utc(job.enqueued_at)) }
                                td.error { (job.last_error.as_deref().map(short).unwrap_or_default()) }
                            }
                        }
                    }
                }
                p.bulk {
                    "With the selected jobs: "
                    button type="submit" name="action" value="run_now" { "Run now" }
                    " " button type="submit" name="action" value="cancel" { "Cancel" }
                    " " button type="submit" name="action" value="redrive" { "Redrive" }
                    label { " with attempts " input type="number" name="add_attempts" value="1" min="1" size="3"; }
                    label { " deadline in " input type="text" name="ttl" value="1h" size="5"; }
                }
                }
            }
            @if let Some(next) = page.next {
                @let query = filters.query();
                p { a #next href={ "/jobs?" (query) @if !query.is_empty() { "&" } "after=" (next) } { "Next page" } }
            }
        },
    )
}

/// What a bulk action did: how many it changed, and each refusal by reason with its ids.
/// `back`: the query of the list it came from, for the link back to it.
pub fn bulk(action: Action, outcome: &bulk::Outcome, back: &str, nav: Nav<'_>) -> Markup {
    let (verb, requested) = match action {
        Action::Redrive { .. } => ("Redrove", ""),
        Action::Cancel => {
            ("Cancelled", " asked to stop (leased: their holder is told at its next heartbeat)")
        }
        Action::RunNow => ("Made due now", ""),
    };
    let refused: usize = outcome.refused.values().map(Vec::len).sum();
    layout(
        &format!("Bulk {}", action.word()),
        nav,
        html! {
            p.message #bulk-result data-action=(action.word()) data-asked=(outcome.asked)
                data-changed=(outcome.changed) data-requested=(outcome.requested) data-refused=(refused) {
                (verb) " " (outcome.changed) " of " (outcome.asked) " selected job" @if outcome.asked != 1 { "s" } "."
                @if outcome.requested > 0 { " " (outcome.requested) (requested) "." }
                @if refused > 0 { " " (refused) " refused." }
            }
            @if let Some((why, rest)) = &outcome.stopped {
                p.error { "The store failed, and the " (rest.len()) " jobs from " (rest.first().map(String::as_str).unwrap_or_default()) " on were not tried: " (why) }
            }
            @if refused > 0 {
                table #refused {
                    thead { tr { th { "reason" } th { "jobs" } th { "ids" } } }
                    tbody {
                        @for (reason, ids) in &outcome.refused {
                            tr data-reason=(reason) {
                                td { (reason) } td.n { (ids.len()) }
                                td { @for (n, id) in ids.iter().enumerate() { @if n > 0 { ", " } a href=(job_href(id)) { (id) } } }
                            }
                        }
                    }
                }
            }
            p { a #back href={ "/jobs?" (back) } { "Back to the jobs" } }
        },
    )
}

/// A job's link.
pub fn job_href(id: &str) -> String {
    format!("/job?id={}", form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>())
}

fn status_word(job: &Job) -> String {
    match (job.status, job.dead_reason) {
        (Status::Dead, Some(reason)) => format!("dead ({})", reason.as_str()),
        (Status::Leased, _) if job.cancel_requested => "leased (cancelling)".into(),
        (status, _) => status.as_str().into(),
    }
}

/// An error text cut to a line of a table.
fn short(text: &str) -> String {
    const MOST: usize = 80;
    match text.char_indices().nth(MOST) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// A job's page: its fields, its whole history, and what an operator may do with it.
pub fn job(
    job: &Job,
    history: &[HistoryEntry],
    attempts: &[AttemptRecord],
    csrf: &str,
    message: Option<&str>,
    nav: Nav<'_>,
) -> Markup {
    let time = |ms: Option<u64>| ms.map(utc).unwrap_or_default();
    layout(
        &format!("Job {}", job.id),
        nav,
        html! {
            @if let Some(message) = message { p.message { (message) } }
            table.fields #job {
                tr { th { "id" } td #job-id { (job.id) } }
                tr { th { "status" } td #job-status { (status_word(job)) } }
                tr { th { "queue" } td { (job.queue) } }
                tr { th { "kind" } td #job-kind { (job.kind) } }
                tr { th { "priority" } td { (job.priority) } }
                tr { th { "attempts" } td { (job.attempts) " of " (job.max_attempts) } }
                tr { th { "deadline" } td { (utc(job.deadline)) } }
                tr { th { "enqueued" } td { (utc(job.enqueued_at)) } }
                tr { th { "due / lease until" } td { (time(job.available_at)) } }
                tr { th { "lease holder" } td { (job.owner.as_deref().unwrap_or_default()) } }
                tr { th { "ended" } td { (time(job.ended_at)) } }
                tr { th { "redrives" } td { (job.redrives) } }
                tr { th { "last error" } td.error { pre { (job.last_error.as_deref().unwrap_or_default()) } } }
                tr { th { "last node" } td { (job.last_node.as_deref().unwrap_or_default()) } }
                tr { th { "payload" } td { pre #payload { (job.payload) } } }
            }
            @match job.status {
                Status::Dead => { h2 { "Redrive" } (redrive_form(csrf, Some(&job.id), None)) }
                Status::Pending | Status::Leased if !job.cancel_requested => {
                    @if job.status == Status::Pending {
                        h2 { "Run now" }
                        form.run-now method="post" action="/run-now" {
                            input type="hidden" name="csrf" value=(csrf);
                            input type="hidden" name="id" value=(job.id);
                            button type="submit" { "Run this job now" }
                        }
                    }
                    h2 { "Cancel" }
                    form.cancel method="post" action="/cancel" {
                        input type="hidden" name="csrf" value=(csrf);
                        input type="hidden" name="id" value=(job.id);
                        button type="submit" {
                            @if job.status == Status::Pending { "Cancel this job" } @else { "Ask the running attempt to stop" }
                        }
                    }
                }
                _ => {}
            }
            h2 { "Attempts" }
            @if attempts.is_empty() { p.note { "No attempt has ended yet." } } @else { (attempts_table(attempts)) }
            h2 { "History" }
            (history_table(history))
        },
    )
}

/// Every ended attempt: who ran it, for how long, what it came to and what went wrong.
fn attempts_table(attempts: &[AttemptRecord]) -> Markup {
    html! {
        table #attempts {
            thead { tr { th { "attempt" } th { "claimed" } th { "took" } th { "outcome" } th { "worker" } th { "node" } th { "error" } } }
            tbody {
                @for a in attempts {
                    tr {
                        td { (a.attempt) }
                        td { (utc(a.claimed_at)) }
                        td { (words(a.ended_at.saturating_sub(a.claimed_at))) }
                        td.outcome { (a.outcome) }
                        td { (a.worker.as_deref().unwrap_or_default()) }
                        td { (a.node.as_deref().unwrap_or_default()) }
                        td.error { pre { (a.error.as_deref().unwrap_or_default()) } }
                    }
                }
            }
        }
    }
}

fn history_table(history: &[HistoryEntry]) -> Markup {
    html! {
        table #history {
            thead { tr { th { "at" } th { "from" } th { "to" } th { "attempt" } th { "deadline" } th { "due / lease until" } th { "worker" } } }
            tbody {
                @for entry in history {
                    tr {
                        td { (utc(entry.at)) }
                        td { (entry.from.map(Status::as_str).unwrap_or("—")) }
                        td { (entry.to.as_str()) @if let Some(reason) = entry.reason { " (" (reason.as_str()) ")" } }
                        td { (entry.attempt) " of " (entry.max_attempts) }
                        td { (utc(entry.deadline)) }
                        td { (entry.available_at.map(utc).unwrap_or_default()) }
                        td { (entry.worker.as_deref().unwrap_or_default()) }
                    }
                }
            }
        }
    }
}

/// A pruned job's page: what its tombstone keeps.
pub fn tombstone(t: &Tombstone, nav: Nav<'_>) -> Markup {
    layout(
        &format!("Job {} (pruned)", t.id),
        nav,
        html! {
            p.note { "This job ended and was pruned: its tombstone keeps the id taken, and what is below." }
            table.fields #job {
                tr { th { "id" } td #job-id { (t.id) } }
                tr { th { "status" } td #job-status { "pruned, " (t.status.as_str()) @if let Some(reason) = t.dead_reason { " (" (reason.as_str()) ")" } } }
                tr { th { "queue" } td { (t.queue) } }
                tr { th { "attempts" } td { (t.attempts) } }
                tr { th { "ended" } td { (utc(t.ended_at)) } }
                tr { th { "payload digest (SHA-256)" } td { code { (t.digest) } } }
            }
        },
    )
}

/// A page that says what went wrong.
pub fn problem(title: &str, text: &str, nav: Nav<'_>) -> Markup {
    layout(title, nav, html! { p.error { (text) } })
}
