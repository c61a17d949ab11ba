//! One attempt slot: a thread that sends the jobs the store thread hands it, one at a time,
//! each within its own [`Window`], and hands back what came of each.
//!
//! A slot never touches the store and never logs an outcome: what it answers is only a
//! candidate until the store thread has committed it (`store.rs`). So a crash between the
//! transport's answer and the commit loses the outcome, never reports one that is not stored.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender};
use std::thread;
use std::time::{Duration, Instant};

use retryq::{Claimed, Report};
use tracing::debug;

use crate::clock::{CLOCK_WATCH, Clock, ClockError};
use crate::held::Held;
use crate::transport::{Transport, Unclassified};
use crate::window::{POLL, Window};

/// How long after the store's clock jumped ahead (or was first read) a worker holds an
/// attempt that may take over another's lease — any attempt but a job's first — before
/// starting it. A step of a clock shared by many hosts (PostgreSQL's, `--clock server`) ends
/// every lease at once for whoever reads it next; each holder reads it at least every
/// [`CLOCK_WATCH`] while its attempts run and cuts them at its window's next look ([`POLL`]),
/// so the attempt that takes over waits that long, and 450 ms more for the kill and for a
/// holder's thread woken late on a busy host, rather than start beside the one it replaces
/// (docs/postgres.md).
pub(crate) const TAKEOVER_HOLD: Duration =
    CLOCK_WATCH.saturating_add(POLL).saturating_add(Duration::from_millis(450));

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
    /// The committer's answer to the group commit under way (`committer.rs`).
    Committed(Box<Answer>),
    /// The group commit under way panicked on the committer, which is gone: what the panic
    /// said.
    CommitterPanicked(String),
}

/// The store's answer to one group commit: one result per outcome, in the order sent.
pub(crate) type Answer = retryq::Result<Vec<retryq::Result<retryq::Completed>>>;

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
    hold_takeover(job, limits.clock, &assignment.held);
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

/// Waits, before an attempt that may take over another's lease, until [`TAKEOVER_HOLD`] has
/// passed since the store's clock jumped ahead or was first read; no longer than its lease
/// holds, and not at all for a job's first attempt (no earlier one can run) or on a clock
/// that cannot jump unseen ([`Clock::jumped_at`]).
fn hold_takeover(job: &Claimed, clock: &dyn Clock, held: &Held) {
    let Some(jumped) = clock.jumped_at().filter(|_| job.attempt() > 1) else { return };
    let until = jumped + TAKEOVER_HOLD;
    let started = Instant::now();
    loop {
        let ends = held.ends();
        let lease_left = ends.span.saturating_sub(ends.anchor.elapsed());
        let wait = until.saturating_duration_since(Instant::now()).min(lease_left);
        if wait.is_zero() || ends.abandoned {
            break;
        }
        thread::sleep(wait.min(POLL));
    }
    let held_ms = started.elapsed().as_millis() as u64;
    if held_ms > 0 {
        debug!(job = %job.id(), attempt = job.attempt(), held_ms, "held: the store's clock jumped or was first read lately");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use retryq::Lease;

    /// A clock that jumped at a given instant.
    struct Jumped(Instant);

    impl Clock for Jumped {
        fn now_ms(&self) -> Result<u64, ClockError> {
            crate::now_ms()
        }

        fn jumped_at(&self) -> Option<Instant> {
            Some(self.0)
        }
    }

    fn claimed(attempt: u64) -> Claimed {
        Claimed {
            lease: Lease::new("w", "a", attempt),
            lease_until: 0,
            payload: String::new(),
            deadline: 0,
            last_node: None,
            kind: String::new(),
        }
    }

    #[test]
    fn a_takeover_waits_out_the_hold_after_a_jump_and_nothing_else_waits() {
        let lease = Held::new(Instant::now(), Duration::from_secs(30), 0);
        let jumped = Jumped(Instant::now());
        let start = Instant::now();
        hold_takeover(&claimed(1), &jumped, &lease);
        assert!(start.elapsed() < Duration::from_millis(100), "a first attempt takes over nothing");
        hold_takeover(&claimed(2), &crate::SystemClock, &lease);
        assert!(
            start.elapsed() < Duration::from_millis(100),
            "this host's clock jumps for every worker alike"
        );
        hold_takeover(&claimed(2), &jumped, &lease);
        let held = start.elapsed();
        assert!(held >= TAKEOVER_HOLD && held < TAKEOVER_HOLD + Duration::from_millis(500), "{held:?}");
        // Never past the lease.
        let short = Held::new(Instant::now(), Duration::from_millis(200), 0);
        let start = Instant::now();
        hold_takeover(&claimed(2), &Jumped(Instant::now()), &short);
        assert!(start.elapsed() < Duration::from_millis(600), "{:?}", start.elapsed());
    }
}
