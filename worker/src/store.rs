//! The store thread: the one owner of the store (a [`Backend`]) in a worker process.
//!
//! It claims for the free slots in batches (one transaction claims up to all of them,
//! exactly as that many single claims would), hands each job to a slot, and records what the
//! slots answer: every outcome that is waiting when it looks is committed in one transaction
//! — one fsync for all of them — and only then logged and counted. There is no artificial
//! delay: an outcome that arrives alone is committed alone, at once; outcomes that arrive
//! while a commit is under way wait for it and share the next one. When nothing is due it
//! sleeps until the earliest reservation or lease expiry of the queues it serves
//! ([`Queue::next_due_in`]), at most
//! [`Config::max_sleep`], never less than a millisecond, and wakes early for an outcome.
//!
//! A store that gives a second connection ([`Backend::another`]: PostgreSQL) has the group
//! commits run on it by the committer (`committer.rs`), one at a time, so that the next claim
//! is made while they commit; which outcomes are sent, when, and what each answer means is
//! still decided here alone.
//!
//! Everything else the process does to the store happens here, in one place and one order,
//! heartbeats included: every third of the lease ([`Config::heartbeat_every`]) each attempt
//! in flight has its lease renewed ([`Queue::heartbeat`], SPEC 3.12), so that an attempt may
//! run longer than its lease and a crash is still recovered one lease after it. The
//! heartbeats due together share one reading of the clock, each in its own transaction. A
//! heartbeat refused (`lease_lost`, `deadline_passed`, `not_found`: the lease is not this
//! worker's any more) abandons the attempt: its window closes (`held.rs`), the transport
//! stops, and whatever it answers is not recorded. A heartbeat that fails for a passing
//! reason (a busy or full database, the clock behind the claim) is logged and tried again at
//! the next one: two thirds of the lease are still left.
//!
//! A store that goes away (a busy or full SQLite file; a PostgreSQL server that dropped
//! the connection, restarts, or cannot be reached) is waited out (`outage.rs`): one line is
//! logged, every operation is tried again after a capped exponential backoff, and the
//! attempts under way run on, their leases renewed once the store answers again. An
//! outcome whose group commit failed is kept and sent again, with the same `now` and jitter,
//! until the store answers; the fence (worker, attempt) makes the resend idempotent. A
//! commit that failed may still have committed (the connection dropped during `COMMIT`):
//! then the resend answers `lease_lost`, and the job's history tells whether this worker's
//! earlier try recorded the outcome (then it is logged and counted as recorded, once) or
//! the lease went to someone else (then it is not recorded). Either way nothing is recorded
//! twice, and nothing is logged as recorded before it committed.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use retryq::{
    Backend, Claimed, Completed, DeadReason, Enqueued, Error, ErrorKind, HistoryEntry, Lease, Report,
    Settings, Status,
};
use tracing::{debug, error, info, warn};

use crate::clock::CLOCK_WATCH;
use crate::clock::{Clock, ClockError};
use crate::committer::{self, Sent};
use crate::config::{Config, PRUNE_BATCH, PRUNE_EVERY};
use crate::dbfile::DbFile;
use crate::fsize::{describe_limit, file_size_limit_hit};
use crate::held::Held;
use crate::outage::Outage;
use crate::outcome::{Summary, WorkError};
use crate::slot::{Answer, Assignment, Event, Finished};
use crate::stop::Stop;
use crate::transport::Unclassified;

/// One attempt slot as the store thread sees it.
pub(crate) struct Slot {
    /// Where its next job goes.
    pub(crate) jobs: Sender<Assignment>,
    /// The attempt it runs now, if any.
    pub(crate) holds: Option<Holding>,
}

/// The attempt a slot runs, as the store thread keeps it.
pub(crate) struct Holding {
    pub(crate) lease: Lease,
    /// Shared with the attempt's window: renewed by each accepted heartbeat, marked
    /// abandoned by a refused one.
    pub(crate) held: Arc<Held>,
    /// When its next heartbeat is due.
    pub(crate) beat_at: Instant,
}

/// What a round of claiming came to.
#[derive(PartialEq, Eq)]
enum Claim {
    /// Go on.
    Again,
    /// Until idle, and nothing is pending or leased by anyone: the loop ends.
    Idle,
}

pub(crate) struct Store<'a> {
    pub(crate) queue: &'a mut dyn Backend,
    pub(crate) config: &'a Config,
    pub(crate) stop: &'a Stop,
    pub(crate) clock: &'a dyn Clock,
    pub(crate) file: Option<DbFile>,
    pub(crate) slots: Vec<Slot>,
    pub(crate) done: Receiver<Event>,
    pub(crate) summary: Summary,
    /// Where each retry's jitter comes from: the store's source ([`retryq::Backend::jitter`]).
    pub(crate) jitter: std::sync::Arc<dyn retryq::Jitter>,
    /// When to claim next: now after a claim that filled every free slot or a commit that
    /// freed some, later when nothing was due.
    pub(crate) claim_at: Instant,
    /// The store failing for a passing reason, if it is.
    pub(crate) outage: Outage,
    /// Outcomes not committed yet: their group commit failed for a passing reason (and may
    /// have committed after all), or could not be stamped with the store's clock, or waits
    /// for the one under way on the committer.
    pub(crate) waiting: Vec<Outcome>,
    /// Where group commits are sent to run beside the claims (`committer.rs`), when the store
    /// gave a second connection; `None` commits them here.
    pub(crate) committer: Option<Sender<Vec<Sent>>>,
    /// The outcomes of the group commit under way on the committer: at most one at a time,
    /// so that each outcome is sent again only after its last try answered.
    pub(crate) committing: Vec<Outcome>,
    /// When the store's clock was last read ([`CLOCK_WATCH`]).
    pub(crate) clock_read_at: Instant,
    /// When to prune next, with retention ([`Config::retain`]).
    pub(crate) prune_at: Instant,
    /// Why the transport cannot send any attempt, once an attempt showed it
    /// ([`Transport::unusable`](crate::Transport::unusable)): nothing more is claimed, and the
    /// loop ends with [`WorkError::Misconfigured`] once the attempts in flight are recorded.
    pub(crate) unusable: Option<String>,
    /// Per periodic job ([`Config::periodic`]), the start of the last period whose enqueue
    /// was answered: none at start, so that the period under way is enqueued first.
    pub(crate) periods: Vec<Option<u64>>,
    /// When to look at the periods next: at the earliest next start, and at least every
    /// [`Config::max_sleep`], so that a step of the clock is seen.
    pub(crate) periodic_at: Instant,
}

/// An outcome on its way into the store.
pub(crate) struct Outcome {
    lease: Lease,
    report: Report,
    /// The completion's `now`: the store's clock at its first commit, or the wall clock
    /// once the transport returned. Kept for every resend, so that each sends the same
    /// completion.
    now: Option<u64>,
    /// The wall clock once the transport returned.
    after: u64,
    /// The clock the claim was made at.
    claimed_at: u64,
    jitter: f64,
    said: String,
    /// A commit of it was sent and failed: it may have committed.
    in_doubt: bool,
}

impl Store<'_> {
    /// Runs until a stop (once the attempts in flight are recorded), or until idle, or until
    /// the store, the file or the clock fails.
    pub(crate) fn run(&mut self) -> Result<(), WorkError> {
        let mut arrived: Vec<Finished> = Vec::new();
        loop {
            if self.stop.leaving() {
                // Abandoned: what is still running is neither waited for nor recorded.
                return Ok(());
            }
            let events: Vec<Event> = self.done.try_iter().collect();
            for event in events {
                self.arrive(event, &mut arrived)?;
            }
            if !arrived.is_empty() || !self.waiting.is_empty() {
                self.record(std::mem::take(&mut arrived))?;
            }
            self.beat()?;
            self.watch_clock();
            self.prune()?;
            self.periodic()?;
            let stopping = self.stop.requested() || self.unusable.is_some();
            if !stopping && self.free() > 0 && Instant::now() >= self.claim_at && self.claim()? == Claim::Idle
            {
                return Ok(());
            }
            // With a commit under way, its answer is waited for below, as an attempt's is.
            if self.busy() == 0 && self.committing.is_empty() {
                if self.waiting.is_empty()
                    && let Some(why) = self.unusable.take()
                {
                    return Err(WorkError::Misconfigured { why });
                }
                if self.stop.requested() && self.waiting.is_empty() {
                    return Ok(());
                }
                if self.waiting.is_empty() {
                    let at = self.periodic_at().map_or(self.claim_at, |at| at.min(self.claim_at));
                    self.stop.sleep_or_nudged(at.saturating_duration_since(Instant::now()));
                }
                continue;
            }
            let wait = self.wake_at(stopping).saturating_duration_since(Instant::now());
            match self.done.recv_timeout(wait) {
                Ok(event) => self.arrive(event, &mut arrived)?,
                Err(RecvTimeoutError::Timeout) => {}
                // Every slot holds a sender until the store thread is done: not while it runs.
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
        }
    }

    /// An ended attempt joins those to record; a wake-up brings the next claim to now; the
    /// committer's answer settles the commit under way.
    fn arrive(&mut self, event: Event, arrived: &mut Vec<Finished>) -> Result<(), WorkError> {
        match event {
            Event::Finished(finished) => arrived.push(*finished),
            Event::Wake => self.claim_at = Instant::now(),
            Event::Committed(answer) => {
                let outcomes = std::mem::take(&mut self.committing);
                // A retry it committed may be due now.
                self.claim_at = Instant::now();
                return self.settle(outcomes, *answer);
            }
            Event::CommitterPanicked(what) => {
                // Its batch goes back in front, in doubt (the panic may have come after the
                // commit), and every commit from now on runs here.
                let outcomes = std::mem::take(&mut self.committing);
                error!(
                    outcomes = outcomes.len(), panic = %what,
                    "the committer panicked during a group commit; committing on the store thread from now on"
                );
                self.send_again(outcomes);
                self.committer = None;
                self.claim_at = Instant::now();
            }
        }
        Ok(())
    }

    /// With attempts in flight, when the loop must look up even if no outcome arrives: the
    /// next heartbeat, the next claim if a slot is free and no stop was asked, and at the
    /// latest after [`Config::max_sleep`].
    fn wake_at(&self, stopping: bool) -> Instant {
        let mut at = (Instant::now() + self.config.max_sleep).min(self.clock_read_at + CLOCK_WATCH);
        if !stopping && self.free() > 0 {
            at = at.min(self.claim_at);
        }
        if let Some(periodic) = self.periodic_at() {
            at = at.min(periodic);
        }
        self.next_beat().map_or(at, |beat| at.min(beat))
    }

    /// When the periodic jobs want a look, if there are any and no stop was asked.
    fn periodic_at(&self) -> Option<Instant> {
        (!self.config.periodic.is_empty() && !self.stop.requested()).then_some(self.periodic_at)
    }

    /// Enqueues the job of each periodic job's period under way on the store's clock, unless
    /// this process had its answer already: at start, and then as each period begins. Each
    /// enqueue is its own transaction, and the store keeps the first of each id: `existing`
    /// is another worker's, or this one's before a restart. A `conflict` (the id holds
    /// another payload: workers configured differently) is logged as an error, once a period;
    /// a store away is waited out and the enqueue tried again.
    fn periodic(&mut self) -> Result<(), WorkError> {
        if self.periodic_at().is_none_or(|at| Instant::now() < at) {
            return Ok(());
        }
        let config = self.config;
        let Some(now) = self.now("enqueue")? else {
            return Ok(());
        };
        let queue = config.queues.first().map_or(retryq::DEFAULT_QUEUE, String::as_str);
        let mut next = now.saturating_add(u64::try_from(config.max_sleep.as_millis()).unwrap_or(u64::MAX));
        for (n, periodic) in config.periodic.iter().enumerate() {
            let period = match periodic.period_at(now) {
                Ok(period) => period,
                Err(e) => {
                    error!(periodic = periodic.name(), error = %e, "no period to enqueue");
                    continue;
                }
            };
            next = next.min(period.end);
            if self.periods[n] == Some(period.start) {
                continue;
            }
            let (id, every) = (period.id.as_str(), periodic.every());
            match self.queue.enqueue(&periodic.job(&period, now, queue)) {
                Ok(enqueued) => {
                    self.outage.answered();
                    if enqueued == Enqueued::New {
                        self.summary.enqueued += 1;
                        self.summary.writes += 1;
                        // Claimed at the next look, not after the sleep the last claim set.
                        self.claim_at = Instant::now();
                        info!(job = id, every = %every, queue, deadline = period.end, "enqueued a periodic job");
                    } else {
                        debug!(job = id, every = %every, "the periodic job was enqueued already");
                    }
                }
                Err(Error::Conflict { .. }) => {
                    self.outage.answered();
                    error!(
                        job = id, every = %every, outcome = "conflict",
                        "periodic job not enqueued: its id holds another payload, so the workers that enqueue {} \
                         are given different payloads (--every-payload): give them all the same",
                        periodic.name()
                    );
                }
                Err(e) if e.is_transient() => {
                    // Tried again at the next look, after the outage's pause.
                    self.periodic_at = Instant::now();
                    return self.pause_or_fail("enqueue", e);
                }
                Err(e) if e.kind() == ErrorKind::Storage => return fail(e),
                Err(e) => error!(job = id, every = %every, error = %e, "periodic job refused"),
            }
            self.periods[n] = Some(period.start);
        }
        let wait = Duration::from_millis(next.saturating_sub(now)).max(Duration::from_millis(1));
        self.periodic_at = Instant::now() + wait;
        Ok(())
    }

    /// The store's clock, read now for an operation (or to watch it); `None` for a clock
    /// that does not live in the store.
    fn store_clock(&mut self) -> retryq::Result<Option<u64>> {
        self.clock_read_at = Instant::now();
        self.clock.store_now(&*self.queue)
    }

    /// With attempts in flight, reads the store's clock if no operation did for
    /// [`CLOCK_WATCH`]: the reading moves the offset the attempts' windows read, and an
    /// attempt whose lease the store's clock says is over (less the margin) is cut at its
    /// window's next look. A failure is left to the next operation, which will meet it too.
    fn watch_clock(&mut self) {
        if self.busy() == 0 || self.clock_read_at.elapsed() < CLOCK_WATCH {
            return;
        }
        match self.store_clock() {
            Ok(Some(now)) => debug!(now, "the store's clock, watched while attempts are in flight"),
            Ok(None) => {}
            Err(e) => {
                debug!(error = %e, "the store's clock could not be read; the next operation tries again")
            }
        }
    }

    /// With retention, prunes one batch of the jobs that ended `retain` ago or earlier, once
    /// [`PRUNE_EVERY`] (at once again after a full batch: more is waiting). A passing
    /// failure is noted and left to the next round.
    fn prune(&mut self) -> Result<(), WorkError> {
        let Some(retain) = self.config.retain else { return Ok(()) };
        if Instant::now() < self.prune_at {
            return Ok(());
        }
        self.prune_at = Instant::now() + PRUNE_EVERY;
        let Some(now) = self.now("prune")? else { return Ok(()) };
        let retain_ms = u64::try_from(retain.as_millis()).unwrap_or(u64::MAX);
        let before = now.saturating_sub(retain_ms);
        match self.queue.prune_at_most(before, now, PRUNE_BATCH) {
            Ok(0) => {}
            Ok(pruned) => {
                self.outage.answered();
                self.summary.pruned += pruned;
                self.summary.writes += 1;
                debug!(pruned, before, "pruned ended jobs, leaving tombstones");
                if pruned >= PRUNE_BATCH {
                    self.prune_at = Instant::now();
                }
            }
            Err(e) => self.pause_or_fail("prune", e)?,
        }
        if let Some(forget) = self.config.forget {
            let forget_ms = u64::try_from(forget.as_millis()).unwrap_or(u64::MAX);
            match self.queue.forget(now.saturating_sub(forget_ms), now) {
                Ok(0) => {}
                Ok(forgotten) => {
                    self.summary.writes += 1;
                    debug!(forgotten, "forgot tombstones: their ids may be enqueued anew");
                }
                Err(e) => self.pause_or_fail("forget", e)?,
            }
        }
        Ok(())
    }

    /// When the next heartbeat is due: the earliest over the attempts in flight that were
    /// not abandoned.
    fn next_beat(&self) -> Option<Instant> {
        self.slots
            .iter()
            .filter_map(|s| s.holds.as_ref())
            .filter(|h| !h.held.abandoned())
            .map(|h| h.beat_at)
            .min()
    }

    /// The `now` of a store operation: the store's clock where the worker's [`Clock`] reads
    /// it (the server's, on PostgreSQL), else the wall clock. `Ok(None)`: the store could
    /// not be reached to read it; the failure was noted, and the operation waits.
    fn now(&mut self, what: &str) -> Result<Option<u64>, WorkError> {
        match self.store_clock() {
            Ok(Some(now)) => Ok(Some(now)),
            Ok(None) => self.clock.now_ms().map(Some).map_err(|e| {
                error!(error = %e, "the clock is out of range; stopping");
                WorkError::Clock(e)
            }),
            Err(e) => {
                self.pause_or_fail(what, e)?;
                Ok(None)
            }
        }
    }

    /// Renews the lease of every attempt in flight whose heartbeat is due, at one reading of
    /// the clock, each in its own transaction; the next is due a third of a lease later
    /// whatever came of this one. A refusal abandons the attempt (counted, and logged once);
    /// a passing failure (the store away) is noted and left to the next heartbeat, without a
    /// pause; any other storage failure ends the loop, as it would at a claim.
    fn beat(&mut self) -> Result<(), WorkError> {
        let due = Instant::now();
        if self.next_beat().is_none_or(|at| at > due) {
            return Ok(());
        }
        let lease = Duration::from_millis(self.config.settings.lease_ms);
        let every = self.config.heartbeat_every();
        let next = due.checked_add(every).unwrap_or(due + self.config.max_sleep);
        // `due` was taken before this reading: each renewed lease's monotonic end is never late.
        let now = match self.store_clock() {
            Ok(Some(now)) => Some(now),
            Ok(None) => Some(self.clock.now_ms().inspect_err(|e| {
                error!(error = %e, "the clock is out of range; stopping");
            })?),
            Err(e) if e.is_transient() => {
                self.waited("heartbeat", &e);
                self.outage.failed("heartbeat", &e);
                None
            }
            Err(e) => return self.pause_or_fail("heartbeat", e),
        };
        for holding in self.slots.iter_mut().filter_map(|s| s.holds.as_mut()) {
            if holding.beat_at > due || holding.held.abandoned() {
                continue;
            }
            holding.beat_at = next;
            let Some(now) = now else { continue };
            let (id, attempt) = (&holding.lease.id, holding.lease.attempt);
            match self.queue.heartbeat(&holding.lease, now) {
                Ok(until) => {
                    self.outage.answered();
                    holding.held.renew(due, lease, until);
                    self.summary.writes += 1;
                    debug!(job = %id, attempt, lease_until = until, "heartbeat");
                }
                // A cancel request (SPEC 3.13) is told to the holder here: the attempt is
                // stopped like one whose lease is gone, and the job ends dead(cancelled) at the
                // lease's expiry.
                Err(
                    e @ (Error::LeaseLost { .. }
                    | Error::DeadlinePassed { .. }
                    | Error::NotFound { .. }
                    | Error::Cancelled { .. }),
                ) => {
                    holding.held.abandon();
                    self.summary.abandoned += 1;
                    warn!(
                        job = %id, attempt, outcome = "abandoned", reason = e.kind().code(), error = %e,
                        "attempt abandoned: its heartbeat was refused, so the lease is no longer this \
                         worker's; the attempt is stopped and its outcome will not be recorded"
                    );
                }
                Err(e) if e.is_transient() => {
                    if e.is_timeout() {
                        let holders = self.queue.lock_holders().unwrap_or_default();
                        warn!(
                            during = "heartbeat", job = %id, attempt, sqlstate = e.sqlstate().unwrap_or_default(),
                            error = %e, holders = holders.join(", "),
                            "waited longer than its timeout; trying again at the next heartbeat"
                        );
                    }
                    self.outage.failed("heartbeat", &e);
                    debug!(job = %id, attempt, error = %e, "heartbeat failed; trying again at the next one");
                }
                Err(e) if e.kind() == ErrorKind::Storage => {
                    return fail(e);
                }
                Err(e) => {
                    warn!(
                        job = %id, attempt, error = %e, next_in_ms = every.as_millis() as u64,
                        "heartbeat failed; trying again at the next one"
                    );
                }
            }
        }
        Ok(())
    }

    fn free(&self) -> usize {
        self.slots.iter().filter(|s| s.holds.is_none()).count()
    }

    fn busy(&self) -> usize {
        self.slots.len() - self.free()
    }

    /// Up to `free` claims in one transaction whose reap ends at most about the worker's
    /// `reap_limit` jobs, not `free` times that: each of the batch's claims reaps
    /// `reap_limit / free` (at least one), a setting of this process like any other (SPEC
    /// 6.15, 6.17), so that a wide worker's batch during a backlog is no longer a transaction
    /// than one claim's, and the backlog is ended a limit at a time. How many jobs the reap
    /// ended, whether it ended its whole limit (more may be due to end), and the jobs.
    fn claim_batch(
        &mut self,
        queues: &[&str],
        now: u64,
        free: usize,
    ) -> retryq::Result<(u64, bool, Vec<Claimed>)> {
        let settings = self.queue.settings();
        let k = u64::try_from(free.max(1)).unwrap_or(u64::MAX);
        let share = (settings.reap_limit / k).max(1);
        self.queue.set_settings(Settings { reap_limit: share, ..settings })?;
        let claimed = self.queue.reap_and_claim_batch_from(self.config.worker.as_str(), queues, now, free);
        self.queue.set_settings(settings)?;
        let (reaped, claimed) = claimed?;
        Ok((reaped, reaped >= share.saturating_mul(k), claimed))
    }

    /// Reaps, claims up to the free slots in one transaction, and hands the jobs out. When
    /// fewer were due than asked for, sets the next claim to the next due time.
    fn claim(&mut self) -> Result<Claim, WorkError> {
        if let Some(file) = &self.file
            && let Err(e) = file.check()
        {
            error!(error = %e, "the database file is not the one the worker opened; stopping");
            return Err(WorkError::DbFile(e));
        }
        let free = self.free();
        self.summary.rounds += 1;
        // Before the claim reads the clock: each lease's monotonic end is never late.
        let turn = Instant::now();
        let Some(now) = self.now("claim")? else {
            return Ok(Claim::Again);
        };
        // The claim's transaction reaps first, in the claim's turn. A reap that ends its whole
        // limit may have left more due to end (SPEC 6.37): the worker comes back at once, so
        // that a backlog is ended a bounded transaction at a time, with claims in between.
        let queues: Vec<&str> = self.config.queues.iter().map(String::as_str).collect();
        let (reaped, backlog, claimed) = match self.claim_batch(&queues, now, free) {
            Ok(answer) => answer,
            Err(e) => {
                self.pause_or_fail("claim", e)?;
                return Ok(Claim::Again);
            }
        };
        if reaped > 0 {
            self.summary.reaped += reaped;
            info!(
                reaped,
                "reaped: jobs whose lease expired on their last attempt, or that reached their \
                 deadline, are dead"
            );
        }
        self.outage.answered();
        let got = claimed.len();
        if got > 0 || reaped > 0 {
            self.summary.writes += 1;
        }
        let lease = Duration::from_millis(self.config.settings.lease_ms);
        let first_beat =
            turn.checked_add(self.config.heartbeat_every()).unwrap_or(turn + self.config.max_sleep);
        let mut idle = self.slots.iter_mut().enumerate().filter(|(_, s)| s.holds.is_none());
        for job in claimed {
            self.summary.attempts += 1;
            let Some((n, slot)) = idle.next() else {
                // claim_batch returns at most `free` jobs.
                warn!(job = %job.id(), attempt = job.attempt(), "claimed with no free slot; it waits for its lease");
                continue;
            };
            debug!(job = %job.id(), attempt = job.attempt(), slot = n, lease_until = job.lease_until, "claimed");
            let held = Arc::new(Held::new(turn, lease, job.lease_until));
            let holding = Holding { lease: job.lease.clone(), held: Arc::clone(&held), beat_at: first_beat };
            slot.holds = Some(holding);
            if let Err(back) = slot.jobs.send(Assignment { job, claimed_at: now, held }) {
                // The slot's thread is gone (it cannot be, while the store runs): the job
                // waits for its lease, as after a crash.
                slot.holds = None;
                let job = back.0.job;
                warn!(job = %job.id(), attempt = job.attempt(), slot = n, "slot gone; the job waits for its lease");
            }
        }
        if got == free || backlog {
            // Every free slot got a job, or the reap ended its whole limit: more may be due.
            self.claim_at = Instant::now();
            return Ok(Claim::Again);
        }
        // Only the queues this worker serves: a due job of another queue would have it claim
        // at once and find nothing, again and again. Their jobs end by the reaps of its claims
        // at least every `max_sleep` (SPEC 6.27).
        let next = match self.queue.next_due_in(&queues) {
            Ok(next) => next,
            Err(e) => {
                self.pause_or_fail("claim", e)?;
                return Ok(Claim::Again);
            }
        };
        if next.is_none()
            && self.config.until_idle
            && self.busy() == 0
            && self.waiting.is_empty()
            && self.committing.is_empty()
        {
            info!("idle: no job of the queues served is pending or leased");
            return Ok(Claim::Idle);
        }
        // Counted from `turn`, when `now` was read, not from the end of the reap, the claim
        // and this lookup: a scheduled job is claimed at its time, not that long after it.
        // (`now` is whole milliseconds, read at or after `turn`: the look may come a fraction
        // of a millisecond early, and then it finds nothing and comes again.) Never sooner
        // than 1 ms from now, so that a due time the claim cannot act on is not a spin.
        let wait = next.map_or(self.config.max_sleep, |at| Duration::from_millis(at.saturating_sub(now)));
        let at = turn + wait.clamp(Duration::from_millis(1), self.config.max_sleep);
        self.claim_at = at.max(Instant::now() + Duration::from_millis(1));
        Ok(Claim::Again)
    }

    /// Commits every outcome in `finished`, with those still waiting, in one transaction,
    /// then logs and counts each; notes each unclassified error on its lease. Frees the
    /// slots.
    fn record(&mut self, finished: Vec<Finished>) -> Result<(), WorkError> {
        if self.stop.leaving() {
            // The process exits on a second signal and killed these commands itself: their
            // jobs stay leased, as after a crash, and nothing of them is written or logged.
            debug!(attempts = finished.len(), "exiting: the attempts killed on the way out are not recorded");
            return Ok(());
        }
        let mut unclassified = Vec::new();
        let mut clock_failed: Option<ClockError> = None;
        let mut unusable = None;
        if !finished.is_empty() {
            self.claim_at = Instant::now();
        }
        for f in finished {
            if let Some(slot) = self.slots.get_mut(f.slot) {
                slot.holds = None;
            }
            let Finished { assignment, answer, after, said, unusable: why, .. } = f;
            if let Some(why) = why {
                unusable.get_or_insert(why);
            }
            let job = assignment.job;
            let (id, attempt) = (job.id(), job.attempt());
            if assignment.held.abandoned() {
                // Counted and logged when its heartbeat was refused.
                debug!(job = %id, attempt, error = said, "the abandoned attempt ended; nothing is recorded");
                continue;
            }
            match (answer, after) {
                (_, Err(e)) => {
                    self.summary.unrecorded += 1;
                    error!(
                        job = %id, attempt, error = %e, next_at = job.lease_until,
                        "the clock is out of range: the attempt was not recorded, and its job waits \
                         for its lease"
                    );
                    clock_failed = Some(e);
                }
                (Err(Unclassified(error)), Ok(_)) => unclassified.push((job, error)),
                (Ok(report), Ok(after)) => {
                    let jitter = self.jitter.jitter();
                    self.waiting.push(Outcome {
                        lease: job.lease,
                        report,
                        now: None,
                        after,
                        claimed_at: assignment.claimed_at,
                        jitter,
                        said,
                        in_doubt: false,
                    });
                }
            }
        }
        self.commit()?;
        for (job, error) in unclassified {
            self.note(&job.lease, job.lease_until, &error)?;
        }
        if let Some(why) = unusable
            && self.unusable.is_none()
        {
            error!(
                error = %why, in_flight = self.busy(),
                "the worker cannot run any job: its transport is misconfigured, and every job would fail the \
                 same way and spend its attempts; claiming nothing more, and stopping once the attempts in \
                 flight are recorded. Fix the command and start the worker again"
            );
            self.unusable = Some(why);
        }
        match clock_failed {
            Some(e) => Err(WorkError::Clock(e)),
            None => Ok(()),
        }
    }

    /// Gives each waiting outcome its `now`, once: the store's clock read now for all of
    /// them, or the wall clock its transport returned at. One whose `now` is before its claim
    /// is not recorded (the clock went back). False when the store's clock could not be read.
    fn stamp(&mut self) -> Result<bool, WorkError> {
        if self.waiting.iter().all(|o| o.now.is_some()) {
            return Ok(true);
        }
        let store_now = match self.store_clock() {
            Ok(now) => now,
            Err(e) => {
                self.pause_or_fail("commit", e)?;
                return Ok(false);
            }
        };
        let mut kept = Vec::with_capacity(self.waiting.len());
        for mut o in std::mem::take(&mut self.waiting) {
            let now = *o.now.get_or_insert(store_now.unwrap_or(o.after));
            if now < o.claimed_at {
                self.summary.unrecorded += 1;
                warn!(
                    job = %o.lease.id, attempt = o.lease.attempt, outcome = "clock_went_backwards",
                    before = o.claimed_at, after = now,
                    "attempt not recorded: the clock went back during it"
                );
                continue;
            }
            kept.push(o);
        }
        self.waiting = kept;
        Ok(true)
    }

    /// The group commit: one transaction for every waiting outcome, sent to the committer
    /// when there is one (and none is under way there), else run here; each is logged only
    /// once it is committed, with what the store made of it ([`Store::settle`]).
    fn commit(&mut self) -> Result<(), WorkError> {
        if !self.committing.is_empty() || self.waiting.is_empty() || !self.stamp()? || self.waiting.is_empty()
        {
            return Ok(());
        }
        let batch: Vec<Sent> = self
            .waiting
            .iter()
            .map(|o| Sent {
                lease: o.lease.clone(),
                report: o.report.clone(),
                now: o.now.unwrap_or(o.after),
                jitter: o.jitter,
            })
            .collect();
        let batch = match &self.committer {
            Some(to) => match to.send(batch) {
                Ok(()) => {
                    self.committing = std::mem::take(&mut self.waiting);
                    return Ok(());
                }
                // The committer is gone (it is not, while the store runs): commit here from
                // now on.
                Err(back) => {
                    self.committer = None;
                    back.0
                }
            },
            None => batch,
        };
        let answer = committer::commit(&mut *self.queue, &batch);
        let outcomes = std::mem::take(&mut self.waiting);
        self.settle(outcomes, answer)
    }

    /// Puts `outcomes` back in front of the waiting ones, in doubt: their commit may have
    /// happened, and the next one's answer (or the history) will say.
    fn send_again(&mut self, mut outcomes: Vec<Outcome>) {
        for o in &mut outcomes {
            o.in_doubt = true;
        }
        outcomes.append(&mut self.waiting);
        self.waiting = outcomes;
    }

    /// What the store answered to the group commit of `outcomes`: each committed one is
    /// logged and counted. A passing failure puts them all back in front of the waiting
    /// ones, in doubt, for the next try; any other failure records none of them.
    fn settle(&mut self, outcomes: Vec<Outcome>, answer: Answer) -> Result<(), WorkError> {
        let results = match answer {
            Ok(results) => results,
            Err(e) if e.is_transient() => {
                // It may have committed: the resend, or the history, will say.
                for o in &outcomes {
                    debug!(job = %o.lease.id, attempt = o.lease.attempt, error = %e, "commit failed; the outcome waits to be sent again");
                }
                self.send_again(outcomes);
                return self.pause_or_fail("commit", e);
            }
            Err(e) => {
                // Nothing of this try is stored: none of it is reported as recorded.
                for o in &outcomes {
                    self.summary.unrecorded += 1;
                    warn!(
                        job = %o.lease.id, attempt = o.lease.attempt, outcome = "not_recorded", error = %e,
                        earlier_try_may_have = o.in_doubt,
                        "attempt not recorded: the store failed; the job waits for its lease"
                    );
                }
                return self.pause_or_fail("commit", e);
            }
        };
        self.outage.answered();
        self.summary.writes += 1;
        debug!(outcomes = outcomes.len(), "committed");
        for (o, result) in outcomes.into_iter().zip(results) {
            let result = match result {
                Err(Error::LeaseLost { .. }) if o.in_doubt => match self.queue.history(&o.lease.id) {
                    Ok(history) => match earlier_commit(&history, &o) {
                        Some(completed) => {
                            info!(job = %o.lease.id, attempt = o.lease.attempt, "the commit that failed had recorded the outcome");
                            Ok(completed)
                        }
                        None => Err(retryq::Error::LeaseLost {
                            id: o.lease.id.clone(),
                            worker: o.lease.worker.clone(),
                            attempt: o.lease.attempt,
                        }),
                    },
                    Err(e) => {
                        // Still in doubt: sent again (and asked again) at the next commit.
                        self.waiting.push(o);
                        self.pause_or_fail("commit", e)?;
                        continue;
                    }
                },
                result => result,
            };
            self.report(&o, result);
        }
        Ok(())
    }

    /// Logs and counts what the store made of one committed outcome.
    fn report(&mut self, o: &Outcome, result: retryq::Result<Completed>) {
        let (id, attempt, said) = (&o.lease.id, o.lease.attempt, o.said.as_str());
        match result {
            Ok(Completed::Done) => {
                self.summary.done += 1;
                info!(job = %id, attempt, outcome = "done", "attempt");
            }
            Ok(Completed::Retry { available_at }) => {
                self.summary.retried += 1;
                info!(job = %id, attempt, outcome = "retry", next_at = available_at, error = said, "attempt");
            }
            Ok(Completed::Dead { reason }) => {
                self.summary.dead += 1;
                warn!(job = %id, attempt, outcome = "dead", reason = %reason, error = said, "attempt");
            }
            Ok(other) => {
                warn!(job = %id, attempt, completed = ?other, error = said, "attempt recorded, with a result this worker does not name")
            }
            Err(Error::LeaseLost { .. }) => {
                self.summary.unrecorded += 1;
                warn!(
                    job = %id, attempt, outcome = "lease_lost",
                    "attempt not recorded: the lease expired and the job was claimed again or reaped"
                );
            }
            Err(e @ Error::ClockWentBackwards { .. }) => {
                self.summary.unrecorded += 1;
                warn!(job = %id, attempt, error = %e, outcome = "clock_went_backwards", "attempt not recorded");
            }
            Err(e) => {
                self.summary.unrecorded += 1;
                warn!(job = %id, attempt, error = %e, "attempt not recorded, for a reason this worker does not name");
            }
        }
    }

    /// An unclassified error: nothing is recorded (the job waits for its lease to expire),
    /// but the text is noted on the lease for the operator.
    fn note(&mut self, lease: &Lease, lease_until: u64, error: &str) -> Result<(), WorkError> {
        self.summary.unrecorded += 1;
        let noted = self.queue.record_error(lease, error, None);
        warn!(
            job = %lease.id, attempt = lease.attempt, outcome = "unclassified", next_at = lease_until, error,
            "attempt; the job waits for its lease to expire"
        );
        match noted {
            Ok(()) => {
                self.summary.writes += 1;
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::Storage => self.pause_or_fail("note", e),
            Err(e) => {
                debug!(job = %lease.id, attempt = lease.attempt, error = %e, "error not noted");
                Ok(())
            }
        }
    }

    /// A passing failure of `what` is noted and waited out (the outage's backoff, which a
    /// stop does not cut short: outcomes may still be waiting to be committed); any other
    /// ends the loop.
    fn pause_or_fail(&mut self, what: &str, e: Error) -> Result<(), WorkError> {
        if !e.is_transient() {
            return fail(e);
        }
        self.waited(what, &e);
        let wait = self.outage.failed(what, &e);
        if self.busy() == 0 && self.waiting.is_empty() {
            // Nothing to see through: a stop ends the wait.
            self.stop.sleep(wait);
        } else {
            thread::sleep(wait);
        }
        Ok(())
    }

    /// A lock or statement timeout (or a session ended for idling in a transaction): logged
    /// every time, with the server's SQLSTATE and message and whom the store says holds the
    /// locks, since a worker stalled while it holds the claims' turn holds up every other.
    /// A passing failure all the same: the operation is tried again.
    fn waited(&self, what: &str, e: &Error) {
        if !e.is_timeout() {
            return;
        }
        let holders = match self.queue.lock_holders() {
            Ok(holders) if holders.is_empty() => "none now".to_owned(),
            Ok(holders) => holders.join(", "),
            Err(e) => format!("unknown ({e})"),
        };
        warn!(
            during = what, sqlstate = e.sqlstate().unwrap_or_default(), error = %e, holders,
            "waited longer than its timeout; trying again"
        );
    }
}

/// What this worker's earlier, failed commit of `o` recorded, if it did: the transition
/// out of its lease (from `leased`, by its worker, on its attempt) in the job's history.
/// Only a completion moves a lease to `done`, to `pending` or to dead(permanent); a lease
/// moved to dead(exhausted or deadline) may also be a reap by another worker once the lease
/// expired, so that is taken as this worker's only at this outcome's own `now`.
fn earlier_commit(history: &[HistoryEntry], o: &Outcome) -> Option<Completed> {
    let entry = history.iter().find(|e| {
        e.from == Some(Status::Leased)
            && e.to != Status::Leased
            && e.attempt == o.lease.attempt
            && e.worker.as_deref() == Some(o.lease.worker.as_str())
    })?;
    match (entry.to, entry.reason) {
        (Status::Done, _) => Some(Completed::Done),
        (Status::Pending, _) => entry.available_at.map(|available_at| Completed::Retry { available_at }),
        (Status::Dead, Some(reason @ DeadReason::Permanent)) => Some(Completed::Dead { reason }),
        (Status::Dead, Some(reason)) if Some(entry.at) == o.now => Some(Completed::Dead { reason }),
        _ => None,
    }
}

/// A storage failure that does not pass ends the loop, named as the file size limit when
/// that is what failed the write.
fn fail(e: Error) -> Result<(), WorkError> {
    if file_size_limit_hit() {
        let why = describe_limit();
        error!(error = %e, "{why}; stopping");
        return Err(WorkError::FileTooLarge { why, source: e });
    }
    error!(error = %e, "the store failed; stopping");
    Err(WorkError::Queue(e))
}

/// The database file to watch; none for a queue in memory or a store without a file.
pub(crate) fn watch(path: Option<&Path>) -> Result<Option<DbFile>, WorkError> {
    match path {
        Some(path) if path != Path::new(":memory:") => Ok(Some(DbFile::watch(path)?)),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(now: u64) -> Outcome {
        Outcome {
            lease: Lease { worker: "w1".into(), id: "a".into(), attempt: 2 },
            report: Report::from(retryq::Outcome::Retryable),
            now: Some(now),
            after: now,
            claimed_at: now - 5,
            jitter: 0.5,
            said: String::new(),
            in_doubt: true,
        }
    }

    fn entry(to: Status, attempt: u64, worker: &str, reason: Option<DeadReason>, at: u64) -> HistoryEntry {
        HistoryEntry {
            from: Some(Status::Leased),
            to,
            attempt,
            max_attempts: 2,
            deadline: 1_000_000,
            available_at: (to == Status::Pending).then_some(at + 100),
            redrives: 0,
            reason,
            worker: Some(worker.into()),
            at,
        }
    }

    /// A resend answered `lease_lost` is told apart by the history: this worker's own move
    /// out of the lease is a commit that went through; a reap by someone else, or the lease
    /// taken by another claim, is not.
    #[test]
    fn an_unknown_commit_is_read_from_the_history() {
        let o = outcome(500);
        let ours = [entry(Status::Pending, 2, "w1", None, 500)];
        assert_eq!(earlier_commit(&ours, &o), Some(Completed::Retry { available_at: 600 }));
        let done = [entry(Status::Done, 2, "w1", None, 500)];
        assert_eq!(earlier_commit(&done, &o), Some(Completed::Done));
        let exhausted = [entry(Status::Dead, 2, "w1", Some(DeadReason::Exhausted), 500)];
        assert_eq!(earlier_commit(&exhausted, &o), Some(Completed::Dead { reason: DeadReason::Exhausted }));
        // A reap of the expired lease, at another worker's now.
        let reaped = [entry(Status::Dead, 2, "w1", Some(DeadReason::Exhausted), 2_000)];
        assert_eq!(earlier_commit(&reaped, &o), None);
        // Claimed again by another worker: leased → leased on the next attempt.
        let taken = [entry(Status::Leased, 3, "w2", None, 2_000)];
        assert_eq!(earlier_commit(&taken, &o), None);
        // Another attempt's outcome, or another worker's.
        let other = [entry(Status::Done, 3, "w1", None, 500), entry(Status::Done, 2, "w9", None, 500)];
        assert_eq!(earlier_commit(&other, &o), None);
    }
}
