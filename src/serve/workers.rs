//! The workers page: who holds leases, how many of them have run out (a holder that stopped
//! heartbeating may have died), and the leases themselves — which job, since when, until
//! when. A heartbeat moves a lease's end on, so "lease until" is when the holder last
//! promised to report by.
//!
//! Cost: the workers are `Backend::owners`, one row per holder, read over the leased jobs
//! only (an index of leases on both stores); the leases listed are the first [`LEASES`] along
//! that index (`Backend::leases`), queue by queue, the soonest lease end first. Neither reads
//! a pending or finished job, so the page costs the same in a store of ten million.

use maud::{Markup, html};
use retryq::{Backend, Job, Owner};

use super::page::{Nav, job_href, layout};
use crate::cmd::duration::words;
use crate::cmd::view::utc;

/// The most leases the page lists.
pub const LEASES: u32 = 100;

/// What the page shows, read at `now`.
pub struct Workers {
    /// When it was read.
    pub now: u64,
    /// Every holder of leases.
    pub owners: Vec<Owner>,
    /// The first leased jobs along the leases index, at most [`LEASES`].
    pub leases: Vec<Job>,
    /// Whether more leases exist than are listed.
    pub more: bool,
}

/// Reads the page's rows.
pub fn read(store: &dyn Backend, now: u64) -> retryq::Result<Workers> {
    let owners = store.owners(now)?;
    if owners.iter().all(|owner| owner.leased == 0) {
        return Ok(Workers { now, owners, leases: Vec::new(), more: false });
    }
    let leases = store.leases(LEASES)?;
    let held: u64 = owners.iter().map(|owner| owner.leased).sum();
    let more = held > leases.len() as u64;
    Ok(Workers { now, owners, leases, more })
}

/// How far `at` is from `now`, in whole seconds and words: "in 30s" or "2m 5s ago".
fn from_now(at: u64, now: u64) -> String {
    let seconds = |ms: u64| words(ms / 1000 * 1000);
    if at > now { format!("in {}", seconds(at - now)) } else { format!("{} ago", seconds(now - at)) }
}

/// The page.
pub fn page(workers: &Workers, nav: Nav<'_>) -> Markup {
    let now = workers.now;
    layout(
        "Workers",
        nav,
        html! {
            p.note { "Read at " (utc(now)) ". A worker is listed while it holds a lease; a lease past its end belongs to a holder that stopped heartbeating, and is taken by the next claim or reap." }
            @if workers.owners.is_empty() {
                p.note #no-workers { "No worker holds a lease." }
            } @else {
                table #workers {
                    thead { tr { th { "worker" } th { "leases" } th { "of which run out" } } }
                    tbody {
                        @for owner in &workers.owners {
                            tr data-worker=(owner.worker) {
                                td { (owner.worker) }
                                td.leased { (owner.leased) }
                                td.expired { (owner.expired) }
                            }
                        }
                    }
                }
                h2 { "Leases" }
                table #leases {
                    thead { tr { th { "job" } th { "queue" } th { "worker" } th { "attempt" } th { "since" } th { "lease until" } } }
                    tbody {
                        @for job in &workers.leases {
                            @let until = job.available_at.unwrap_or(0);
                            tr data-job=(job.id) .expired[until <= now] {
                                td { a href=(job_href(&job.id)) { (job.id) } @if job.cancel_requested { " (cancelling)" } }
                                td { (job.queue) }
                                td.worker { (job.owner.as_deref().unwrap_or_default()) }
                                td { (job.attempts) " of " (job.max_attempts) }
                                td { @if let Some(at) = job.claimed_at { (utc(at)) " (" (from_now(at, now)) ")" } }
                                td.until { (utc(until)) " (" @if until <= now { "run out " } (from_now(until, now)) ")" }
                            }
                        }
                    }
                }
                @if workers.more {
                    p.note #more-leases { "The first " (LEASES) " leases (queue by queue, the soonest lease end first) are listed; "
                        a href="/jobs?status=leased" { "all of them" } " page by page." }
                }
            }
        },
    )
}
