//! `PgQueue` as a [`Backend`]: each method is the store's own method of the same name (the
//! inherent method wins over the trait's, so these calls do not recurse).

use super::store::PgQueue;
use crate::audit::Audit;
use crate::backend::Backend;
use crate::error::Result;
use crate::job::{DeadReason, Job, Status};
use crate::notes::{AttemptRecord, Tallies};
use crate::queue::browse::{Browse, BrowsePage};
use crate::queue::claim::Claimed;
use crate::queue::complete::{Completed, Completion};
use crate::queue::enqueue::{Enqueued, NewJob};
use crate::queue::inspect::{HistoryEntry, JobPage, Owner, Stats};
use crate::queue::lease::Lease;
use crate::queue::redrive::{Redrive, RedriveDead};
use crate::queue::store::Settings;

/// The server's clock: one for every host that shares the database.
impl crate::clock::ServerTime for PgQueue {
    fn server_now(&self) -> Result<Option<u64>> {
        PgQueue::server_now(self).map(Some)
    }
}

impl Backend for PgQueue {
    fn kind(&self) -> &'static str {
        "postgres"
    }
    fn set_identity(&mut self, identity: &str) -> Result<()> {
        PgQueue::set_identity(self, identity)
    }
    fn lock_holders(&self) -> Result<Vec<String>> {
        PgQueue::lock_holders(self)
    }
    fn interrupter(&self) -> Option<std::sync::Arc<dyn crate::interrupt::Interrupt>> {
        Some(PgQueue::interrupter(self))
    }
    fn listen(&self, wake: crate::Wake) -> std::io::Result<Option<crate::Listener>> {
        PgQueue::listen(self, wake).map(Some)
    }
    fn another(&self) -> Result<Option<Box<dyn Backend>>> {
        Ok(Some(Box::new(PgQueue::another(self)?)))
    }
    fn settings(&self) -> Settings {
        PgQueue::settings(self)
    }
    fn set_settings(&mut self, settings: Settings) -> Result<()> {
        PgQueue::set_settings(self, settings)
    }
    fn enqueue(&mut self, job: &NewJob<'_>) -> Result<Enqueued> {
        PgQueue::enqueue(self, job)
    }
    fn enqueue_many(&mut self, jobs: &[NewJob<'_>]) -> Result<Vec<Result<Enqueued>>> {
        PgQueue::enqueue_many(self, jobs)
    }
    fn enqueue_bulk(&mut self, jobs: &[NewJob<'_>], answers: &mut Vec<Result<Enqueued>>) -> Result<()> {
        PgQueue::enqueue_bulk(self, jobs, answers)
    }
    fn claim_from(&mut self, worker: &str, queues: &[&str], now: u64) -> Result<Option<Claimed>> {
        PgQueue::claim_from(self, worker, queues, now)
    }
    fn claim(&mut self, worker: &str, now: u64) -> Result<Option<Claimed>> {
        PgQueue::claim(self, worker, now)
    }
    fn claim_batch_from(
        &mut self,
        worker: &str,
        queues: &[&str],
        now: u64,
        k: usize,
    ) -> Result<Vec<Claimed>> {
        PgQueue::claim_batch_from(self, worker, queues, now, k)
    }
    fn reap_and_claim_batch_from(
        &mut self,
        worker: &str,
        queues: &[&str],
        now: u64,
        k: usize,
    ) -> Result<(u64, Vec<Claimed>)> {
        PgQueue::reap_and_claim_batch_from(self, worker, queues, now, k)
    }
    fn complete(&mut self, completion: &Completion<'_>) -> Result<Completed> {
        PgQueue::complete(self, completion)
    }
    fn complete_batch(&mut self, completions: &[Completion<'_>]) -> Result<Vec<Result<Completed>>> {
        PgQueue::complete_batch(self, completions)
    }
    fn record_error(&mut self, lease: &Lease, error: &str, node: Option<&str>) -> Result<()> {
        PgQueue::record_error(self, lease, error, node)
    }
    fn heartbeat(&mut self, lease: &Lease, now: u64) -> Result<u64> {
        PgQueue::heartbeat(self, lease, now)
    }
    fn cancel(&mut self, id: &str, now: u64) -> Result<crate::Cancelled> {
        PgQueue::cancel(self, id, now)
    }
    fn prune(&mut self, before: u64, now: u64) -> Result<u64> {
        PgQueue::prune(self, before, now)
    }
    fn prune_at_most(&mut self, before: u64, now: u64, limit: u64) -> Result<u64> {
        PgQueue::prune_at_most(self, before, now, limit)
    }
    fn forget(&mut self, before: u64, now: u64) -> Result<u64> {
        PgQueue::forget(self, before, now)
    }
    fn lookup(&self, id: &str) -> Result<Option<crate::Lookup>> {
        PgQueue::lookup(self, id)
    }
    fn pause(&mut self, queue: &str, now: u64) -> Result<()> {
        PgQueue::pause(self, queue, now)
    }
    fn resume(&mut self, queue: &str, now: u64) -> Result<()> {
        PgQueue::resume(self, queue, now)
    }
    fn run_now(&mut self, id: &str, now: u64) -> Result<u64> {
        PgQueue::run_now(self, id, now)
    }
    fn paused(&self) -> Result<Vec<(String, u64)>> {
        PgQueue::paused(self)
    }
    fn redrive(&mut self, redrive: &Redrive<'_>) -> Result<()> {
        PgQueue::redrive(self, redrive)
    }
    fn redrive_dead(&mut self, redrive: &RedriveDead) -> Result<Vec<(String, Result<()>)>> {
        PgQueue::redrive_dead(self, redrive)
    }
    fn reap(&mut self, now: u64) -> Result<u64> {
        PgQueue::reap(self, now)
    }
    fn get(&self, id: &str) -> Result<Option<Job>> {
        PgQueue::get(self, id)
    }
    fn stats(&self, now: u64) -> Result<Stats> {
        PgQueue::stats(self, now)
    }
    fn stats_of(&self, now: u64, queue: Option<&str>) -> Result<Stats> {
        PgQueue::stats_of(self, now, queue)
    }
    fn owners(&self, now: u64) -> Result<Vec<Owner>> {
        PgQueue::owners(self, now)
    }
    fn history(&self, id: &str) -> Result<Vec<HistoryEntry>> {
        PgQueue::history(self, id)
    }
    fn dead_jobs(&self, reason: Option<DeadReason>) -> Result<Vec<Job>> {
        PgQueue::dead_jobs(self, reason)
    }
    fn list(&self, status: Status, reason: Option<DeadReason>, limit: u32) -> Result<JobPage> {
        PgQueue::list(self, status, reason, limit)
    }
    fn leases(&self, limit: u32) -> Result<Vec<Job>> {
        PgQueue::leases(self, limit)
    }
    fn browse(&self, filter: &Browse<'_>) -> Result<BrowsePage> {
        PgQueue::browse(self, filter)
    }
    fn queues(&self) -> Result<Vec<String>> {
        PgQueue::queues(self)
    }
    fn attempts(&self, id: &str) -> Result<Vec<AttemptRecord>> {
        PgQueue::attempts(self, id)
    }
    fn tallies(&self) -> Result<Tallies> {
        PgQueue::tallies(self)
    }
    fn next_due(&self) -> Result<Option<u64>> {
        PgQueue::next_due(self)
    }
    fn next_due_in(&self, queues: &[&str]) -> Result<Option<u64>> {
        PgQueue::next_due_in(self, queues)
    }
    fn audit(&self) -> Result<Audit> {
        PgQueue::audit(self)
    }
    fn clock(&self) -> std::sync::Arc<dyn crate::clock::Clock> {
        PgQueue::clock(self)
    }
    fn jitter(&self) -> std::sync::Arc<dyn crate::clock::Jitter> {
        PgQueue::jitter(self)
    }
}
