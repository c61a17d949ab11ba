//! Every refusal of a heartbeat stops the attempt and records nothing (SPEC 3.12): not only
//! `lease_lost` (another holder claimed the job; `work.rs`'s own tests), but also
//! `deadline_passed` and `not_found`, which a worker meets when its clock and the store's
//! disagree or the job was removed under it. The store here is a real queue whose
//! heartbeats answer with the refusal under test, so each branch is reached on purpose.

use std::path::Path;
use std::time::Duration;

use retryq::{
    Audit, Backend, Claimed, Completed, Completion, DeadReason, Enqueued, Error, HistoryEntry, Job, JobPage,
    Lease, NewJob, Owner, Queue, Redrive, RedriveDead, Result, Settings, Stats, Status,
};
use retryq_worker::{Config, Exec, Stop, Summary, now_ms, work};

/// A queue whose heartbeats are all refused with `refusal`; everything else is the queue's.
struct Refusing {
    queue: Queue,
    refusal: fn(&Lease) -> Error,
    refused: u64,
}

impl retryq::ServerTime for Refusing {}

impl Backend for Refusing {
    fn heartbeat(&mut self, lease: &Lease, _now: u64) -> Result<u64> {
        self.refused += 1;
        Err((self.refusal)(lease))
    }
    fn kind(&self) -> &'static str {
        "sqlite"
    }
    fn settings(&self) -> Settings {
        self.queue.settings()
    }
    fn set_settings(&mut self, settings: Settings) -> Result<()> {
        self.queue.set_settings(settings)
    }
    fn enqueue(&mut self, job: &NewJob<'_>) -> Result<Enqueued> {
        self.queue.enqueue(job)
    }
    fn enqueue_many(&mut self, jobs: &[NewJob<'_>]) -> Result<Vec<Result<Enqueued>>> {
        self.queue.enqueue_many(jobs)
    }
    fn claim_from(&mut self, worker: &str, queues: &[&str], now: u64) -> Result<Option<Claimed>> {
        self.queue.claim_from(worker, queues, now)
    }
    fn claim_batch_from(
        &mut self,
        worker: &str,
        queues: &[&str],
        now: u64,
        k: usize,
    ) -> Result<Vec<Claimed>> {
        self.queue.claim_batch_from(worker, queues, now, k)
    }
    fn complete(&mut self, completion: &Completion<'_>) -> Result<Completed> {
        self.queue.complete(completion)
    }
    fn complete_batch(&mut self, completions: &[Completion<'_>]) -> Result<Vec<Result<Completed>>> {
        self.queue.complete_batch(completions)
    }
    fn record_error(&mut self, lease: &Lease, error: &str, node: Option<&str>) -> Result<()> {
        self.queue.record_error(lease, error, node)
    }
    fn cancel(&mut self, id: &str, now: u64) -> Result<retryq::Cancelled> {
        self.queue.cancel(id, now)
    }
    fn prune(&mut self, before: u64, now: u64) -> Result<u64> {
        self.queue.prune(before, now)
    }
    fn prune_at_most(&mut self, before: u64, now: u64, limit: u64) -> Result<u64> {
        self.queue.prune_at_most(before, now, limit)
    }
    fn forget(&mut self, before: u64, now: u64) -> Result<u64> {
        self.queue.forget(before, now)
    }
    fn pause(&mut self, queue: &str, now: u64) -> Result<()> {
        self.queue.pause(queue, now)
    }
    fn resume(&mut self, queue: &str, now: u64) -> Result<()> {
        self.queue.resume(queue, now)
    }
    fn run_now(&mut self, id: &str, now: u64) -> Result<u64> {
        self.queue.run_now(id, now)
    }
    fn paused(&self) -> Result<Vec<(String, u64)>> {
        self.queue.paused()
    }
    fn lookup(&self, id: &str) -> Result<Option<retryq::Lookup>> {
        self.queue.lookup(id)
    }
    fn redrive(&mut self, redrive: &Redrive<'_>) -> Result<()> {
        self.queue.redrive(redrive)
    }
    fn redrive_dead(&mut self, redrive: &RedriveDead) -> Result<Vec<(String, Result<()>)>> {
        self.queue.redrive_dead(redrive)
    }
    fn reap(&mut self, now: u64) -> Result<u64> {
        self.queue.reap(now)
    }
    fn get(&self, id: &str) -> Result<Option<Job>> {
        self.queue.get(id)
    }
    fn stats_of(&self, now: u64, queue: Option<&str>) -> Result<Stats> {
        self.queue.stats_of(now, queue)
    }
    fn owners(&self, now: u64) -> Result<Vec<Owner>> {
        self.queue.owners(now)
    }
    fn history(&self, id: &str) -> Result<Vec<HistoryEntry>> {
        self.queue.history(id)
    }
    fn dead_jobs(&self, reason: Option<DeadReason>) -> Result<Vec<Job>> {
        self.queue.dead_jobs(reason)
    }
    fn list(&self, status: Status, reason: Option<DeadReason>, limit: u32) -> Result<JobPage> {
        self.queue.list(status, reason, limit)
    }
    fn browse(&self, filter: &retryq::Browse<'_>) -> Result<retryq::BrowsePage> {
        self.queue.browse(filter)
    }
    fn queues(&self) -> Result<Vec<String>> {
        self.queue.queues()
    }
    fn attempts(&self, id: &str) -> Result<Vec<retryq::AttemptRecord>> {
        self.queue.attempts(id)
    }
    fn tallies(&self) -> Result<retryq::Tallies> {
        self.queue.tallies()
    }
    fn next_due(&self) -> Result<Option<u64>> {
        self.queue.next_due()
    }
    fn next_due_in(&self, queues: &[&str]) -> Result<Option<u64>> {
        self.queue.next_due_in(queues)
    }
    fn audit(&self) -> Result<Audit> {
        self.queue.audit()
    }
}

/// One job of one attempt under a 600 ms lease (a heartbeat every 200 ms), whose command
/// would write `marker` after 2 s; the heartbeats refused with `refusal`.
fn run(dir: &Path, refusal: fn(&Lease) -> Error) -> (Summary, Refusing) {
    let mut queue = Queue::open(dir.join("q.db")).expect("queue");
    let now = now_ms().expect("clock");
    let job =
        NewJob { id: "a", payload: "p", max_attempts: 1, deadline: now + 60_000, now, ..NewJob::default() };
    assert_eq!(queue.enqueue(&job).expect("enqueue"), Enqueued::New);
    let mut store = Refusing { queue, refusal, refused: 0 };
    let config = Config {
        settings: Settings { lease_ms: 600, base_ms: 0, cap_ms: 0, ..Settings::default() },
        timeout: Duration::from_secs(10),
        until_idle: true,
        max_sleep: Duration::from_millis(50),
        ..Config::new("w1")
    };
    let mut exec = Exec::new(format!("sleep 2; echo ran > {}", dir.join("marker").display()));
    let summary = work(&mut store, &config, &mut exec, &Stop::new()).expect("work");
    (summary, store)
}

/// The attempt was stopped at its first refused heartbeat and nothing of it was recorded:
/// the job went on to be reaped when its lease ran out, as after a crash.
fn stopped_and_unrecorded(dir: &Path, summary: &Summary, store: &Refusing) {
    assert_eq!(
        (summary.attempts, summary.abandoned, summary.done, summary.dead),
        (1, 1, 0, 0),
        "{summary:?}"
    );
    assert_eq!(store.refused, 1, "the first refusal stops the attempt: no heartbeat after it");
    let a = store.queue.get("a").expect("get").expect("a");
    assert_eq!((a.status, a.attempts, a.dead_reason), (Status::Dead, 1, Some(DeadReason::Exhausted)));
    assert_eq!(a.last_error, None, "no outcome of the attempt recorded");
    let moves: Vec<(Option<Status>, Status)> =
        store.queue.history("a").expect("history").iter().map(|h| (h.from, h.to)).collect();
    assert_eq!(
        moves,
        [
            (None, Status::Pending),
            (Some(Status::Pending), Status::Leased),
            (Some(Status::Leased), Status::Dead)
        ],
        "enqueue, claim, reap"
    );
    // The command was killed: it never reaches the line that would have written the marker.
    std::thread::sleep(Duration::from_millis(2_500));
    assert!(!dir.join("marker").exists(), "the command ran on after its heartbeat was refused");
}

#[test]
fn a_heartbeat_refused_for_the_deadline_stops_the_attempt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (summary, store) = run(dir.path(), |lease| Error::DeadlinePassed { id: lease.id.clone() });
    stopped_and_unrecorded(dir.path(), &summary, &store);
}

#[test]
fn a_heartbeat_refused_for_a_cancel_request_stops_the_attempt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (summary, store) = run(dir.path(), |lease| Error::Cancelled { id: lease.id.clone() });
    stopped_and_unrecorded(dir.path(), &summary, &store);
}

#[test]
fn a_heartbeat_refused_for_a_missing_job_stops_the_attempt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (summary, store) = run(dir.path(), |lease| Error::NotFound { id: lease.id.clone() });
    stopped_and_unrecorded(dir.path(), &summary, &store);
}
