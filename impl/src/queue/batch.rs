//! `claim_batch` and `complete_batch`: many claims, or many completions, in one transaction.
//!
//! A durable commit costs one fsync, and on a disk that is most of what an operation costs.
//! A batch pays it once for `k` jobs. It adds no semantics of its own: a batch does exactly
//! what the same `k` single calls would do one after another at the same instants, only
//! under one commit — the same reaping, the same order, the same attempts and leases, the
//! same refusals (`tests/batch.rs` runs random scenarios both ways and compares every job
//! and its whole history).

use super::claim::Claimed;
use super::claim::{batch_reap_limit, lease_picked, reap};
use super::complete::{self, Completed, Completion};
use super::store::Queue;
use crate::error::{ErrorKind, Result};
use crate::input;

impl Queue {
    /// Claims up to `k` due jobs for `worker` at `now` in one transaction: exactly what `k`
    /// calls of [`Queue::claim`] at `now` would do, in the same order (smallest
    /// `available_at` first, ties to the first enqueued), each with its own attempt and a
    /// lease until `now + lease_ms`, after the same reaping. Fewer than `k` when fewer are
    /// due; empty (and no transaction) when `k` is 0.
    ///
    /// ```
    /// use retryq::{NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// for id in ["a", "b", "c"] {
    ///     q.enqueue(&NewJob { id, payload: "{}", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() })?;
    /// }
    /// let batch = q.claim_batch("w1", 10, 2)?;
    /// let ids: Vec<&str> = batch.iter().map(|c| c.id()).collect();
    /// assert_eq!(ids, ["a", "b"]);
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn claim_batch(&mut self, worker: &str, now: u64, k: usize) -> Result<Vec<Claimed>> {
        self.claim_batch_from(worker, &[crate::DEFAULT_QUEUE], now, k)
    }

    /// [`claim_batch`](Queue::claim_batch) serving `queues`: exactly `k` calls of
    /// [`Queue::claim_from`] with them.
    pub fn claim_batch_from(
        &mut self,
        worker: &str,
        queues: &[&str],
        now: u64,
        k: usize,
    ) -> Result<Vec<Claimed>> {
        self.reap_and_claim_batch_from(worker, queues, now, k).map(|(_, claimed)| claimed)
    }

    /// [`claim_batch_from`](Queue::claim_batch_from), and how many jobs its reap ended, from
    /// the same transaction.
    pub fn reap_and_claim_batch_from(
        &mut self,
        worker: &str,
        queues: &[&str],
        now: u64,
        k: usize,
    ) -> Result<(u64, Vec<Claimed>)> {
        input::name("worker", worker)?;
        input::queues(queues)?;
        input::int("now", now)?;
        if k == 0 {
            return Ok((0, Vec::new()));
        }
        let lease_ms = self.settings.lease_ms;
        let limit = batch_reap_limit(self.settings.reap_limit, k);
        self.write(|tx| {
            // `k` single claims at this `now` reap up to `reap_limit` jobs each, in one order,
            // and what they lease is not due to end (a job just leased expires at
            // `now + lease_ms`, after `now`): one reap of `k` limits is all of theirs.
            let reaped = reap(tx, now, limit)?;
            Ok((reaped, lease_picked(tx, worker, queues, now, lease_ms, k)?))
        })
    }

    /// Records many completions in one transaction, each by exactly the rules of
    /// [`Queue::complete`], in order, and each with its own result: a refused completion
    /// (invalid input, not found, lease lost, clock went backwards) changes nothing and does
    /// not stop the others. A storage failure fails the whole batch, and then none is
    /// recorded.
    ///
    /// ```
    /// use retryq::{Completed, Completion, NewJob, Outcome, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// q.enqueue(&NewJob { id: "b", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// let claimed = q.claim_batch("w1", 10, 2)?;
    /// let completions: Vec<Completion<'_>> =
    ///     claimed.iter().map(|c| Completion::new(&c.lease, Outcome::Ok, 20, 0.5)).collect();
    /// let results = q.complete_batch(&completions)?;
    /// assert!(results.iter().all(|r| matches!(r, Ok(Completed::Done))));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn complete_batch(&mut self, completions: &[Completion<'_>]) -> Result<Vec<Result<Completed>>> {
        if completions.is_empty() {
            return Ok(Vec::new());
        }
        let settings = self.settings;
        self.write(|tx| {
            let mut results = Vec::with_capacity(completions.len());
            for c in completions {
                let result = complete::validate(c).and_then(|()| complete::record(tx, &settings, c));
                match result {
                    Err(e) if e.kind() == ErrorKind::Storage => return Err(e),
                    result => results.push(result),
                }
            }
            Ok(results)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::store::tests::queue;
    use super::*;
    use crate::{Completion, Lease, Outcome};
    use crate::{DeadReason, Error, NewJob, Status};

    fn enqueue(q: &mut Queue, id: &str, deadline: u64, now: u64) {
        q.enqueue(&NewJob { id, payload: "p", max_attempts: 2, deadline, now, ..NewJob::default() })
            .expect("enqueue");
    }

    #[test]
    fn a_batch_claims_in_order_and_stops_when_nothing_is_due() {
        let mut q = queue();
        enqueue(&mut q, "late", 10_000, 50);
        enqueue(&mut q, "b", 10_000, 10);
        enqueue(&mut q, "a", 10_000, 10);
        enqueue(&mut q, "future", 10_000, 500);
        let got = q.claim_batch("w", 100, 10).expect("batch");
        let ids: Vec<_> = got.iter().map(|c| (c.id(), c.attempt(), c.lease_until)).collect();
        assert_eq!(ids, [("b", 1, 1100), ("a", 1, 1100), ("late", 1, 1100)]);
        assert_eq!(q.claim_batch("w", 100, 10).expect("batch"), []);
        assert_eq!(q.claim_batch("w", 500, 0).expect("k = 0"), []);
        assert_eq!(q.get("future").expect("get").expect("job").status, Status::Pending);
    }

    #[test]
    fn a_batch_reaps_first_like_a_claim() {
        let mut q = queue();
        enqueue(&mut q, "old", 100, 0);
        enqueue(&mut q, "new", 10_000, 0);
        let got = q.claim_batch("w", 100, 2).expect("batch");
        assert_eq!(got.iter().map(|c| c.id()).collect::<Vec<_>>(), ["new"]);
        assert_eq!(q.get("old").expect("get").expect("job").dead_reason, Some(DeadReason::Deadline));
    }

    #[test]
    fn a_batch_completion_refuses_item_by_item() {
        let mut q = queue();
        enqueue(&mut q, "a", 10_000, 0);
        enqueue(&mut q, "b", 10_000, 0);
        let claimed = q.claim_batch("w", 5, 2).expect("batch");
        assert_eq!(claimed.len(), 2);
        let (a, b, missing) =
            (Lease::new("w", "a", 1), Lease::new("w", "b", 1), Lease::new("w", "missing", 1));
        let results = q
            .complete_batch(&[
                Completion::new(&a, Outcome::Ok, 6, 0.0),
                Completion::new(&a, Outcome::Ok, 6, 0.0),
                Completion::new(&missing, Outcome::Ok, 6, 0.0),
                Completion::new(&b, Outcome::Ok, 6, 1.5),
                Completion::new(&b, Outcome::Retryable, 4, 0.5),
                Completion::new(&b, Outcome::Retryable, 6, 0.5),
            ])
            .expect("batch");
        let kinds: Vec<_> = results.iter().map(|r| r.as_ref().map_err(Error::kind).copied()).collect();
        assert_eq!(
            kinds,
            [
                Ok(Completed::Done),
                Err(ErrorKind::LeaseLost),
                Err(ErrorKind::NotFound),
                Err(ErrorKind::InvalidInput),
                Err(ErrorKind::ClockWentBackwards),
                Ok(Completed::Retry { available_at: 56 }),
            ]
        );
        assert_eq!(q.get("a").expect("get").expect("job").status, Status::Done);
        assert_eq!(q.get("b").expect("get").expect("job").available_at, Some(56));
        assert!(q.complete_batch(&[]).expect("empty").is_empty());
    }

    #[test]
    fn bad_arguments_of_a_claim_batch_are_refused_by_name() {
        let mut q = queue();
        let err = q.claim_batch("", 0, 1).unwrap_err();
        assert!(err.to_string().contains("worker"), "{err}");
        let err = q.claim_batch("w", 1 << 53, 0).unwrap_err();
        assert!(err.to_string().contains("now"), "{err}");
    }
}
