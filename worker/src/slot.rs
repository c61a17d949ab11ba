//! One attempt slot: a thread that sends the jobs the store thread hands it, one at a time,
//! each within its own [`Window`], and hands back what came of each.
//!
//! A slot never touches the store and never logs an outcome: what it answers is only a
//! candidate until the store thread has committed it (`store.rs`). So a crash between the
//! transport's answer and the commit loses the outcome, never reports one that is not stored.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender};
use std::time::Duration;

use retryq::{Claimed, Report};
use tracing::debug;

use crate::clock::{Clock, ClockError};
use crate::held::Held;
use crate::transport::{Transport, Unclassified};
use crate::window::Window;

/// A claimed job, handed to a free slot.
pub(crate) struct Assignment {
    pub(crate) job: Claimed,
    /// The wall-clock reading the claim was made at.
    pub(crate) claimed_at: u64,
    /// Its lease, as the store thread renews it: the attempt's window reads it, and closes
    /// when a heartbeat is refused.
    pub(crate) held: Arc<Held>,
}

/// What reaches the store thread between its looks.
pub(crate) enum Event {
    /// An attempt ended.
    Finished(Box<Finished>),
    /// The store says a job of a queue this worker serves may have become due: claim now.
    Wake,
}

/// What one attempt came to, for the store thread to record.
pub(crate) struct Finished {
    pub(crate) slot: usize,
    pub(crate) assignment: Assignment,
    /// What the transport said.
    pub(crate) answer: Result<Report, Unclassified>,
    /// The wall clock once the transport returned: the outcome's `now`.
    pub(crate) after: Result<u64, ClockError>,
    /// The transport's error text, for the log line.
    pub(crate) said: String,
    /// Why the transport cannot send any attempt, if this one showed it
    /// ([`Transport::unusable`]).
    pub(crate) unusable: Option<String>,
}

/// What every slot needs to open a window: the same for all of them.
pub(crate) struct Limits<'c> {
    pub(crate) timeout: Duration,
    /// How long before its lease's end an attempt stops (`Config::margin`).
    pub(crate) margin: Duration,
    /// The watchdog's wait between SIGTERM and SIGKILL (`Config::kill_grace`).
    pub(crate) kill_grace: Duration,
    pub(crate) clock: &'c dyn Clock,
}

/// Runs slot `slot` until its channel closes: each job is sent through `transport` and the
/// result goes back on `done`. A closed `done` (the store thread gave up) ends the slot too.
pub(crate) fn run(
    slot: usize,
    transport: &mut (impl Transport + ?Sized),
    jobs: Receiver<Assignment>,
    done: Sender<Event>,
    limits: &Limits<'_>,
) {
    for assignment in jobs {
        let finished = attempt(slot, transport, assignment, limits);
        if done.send(Event::Finished(Box::new(finished))).is_err() {
            return;
        }
    }
}

/// One attempt: its window is `min(timeout, deadline − now)`, never past its lease (as last
/// renewed) less the margin on either clock, and closed by a refused heartbeat (see
/// `window.rs`).
fn attempt(
    slot: usize,
    transport: &mut (impl Transport + ?Sized),
    assignment: Assignment,
    limits: &Limits<'_>,
) -> Finished {
    let job = &assignment.job;
    // A clock the queue cannot use leaves no time before the deadline: nothing is sent, and
    // the store thread stops on the reading after.
    let now = limits.clock.now_ms().unwrap_or(u64::MAX);
    let left = Duration::from_millis(job.deadline.saturating_sub(now));
    let timeout = limits.timeout.min(left);
    let window =
        Window::leased(timeout, Arc::clone(&assignment.held), limits.margin, limits.kill_grace, limits.clock);
    let (given, cut) = window.left();
    debug!(
        job = %job.id(), attempt = job.attempt(), slot, timeout_ms = given.as_millis() as u64,
        until = %cut, "sending"
    );
    // A transport that panics must not take its slot with it: the store thread would wait
    // for that attempt for ever. It counts as unclassified, as a crash would.
    let answer = panic::catch_unwind(AssertUnwindSafe(|| transport.attempt(job, &window)))
        .unwrap_or_else(|_| Err(Unclassified("the transport panicked during the attempt".into())));
    let after = limits.clock.now_ms();
    let said = match &answer {
        Ok(report) => report.error.clone().unwrap_or_default(),
        Err(Unclassified(error)) => error.clone(),
    };
    let unusable = transport.unusable();
    Finished { slot, assignment, answer, after, said, unusable }
}
