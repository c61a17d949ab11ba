//! Filling a store with a [`Mix`] through the library's own bulk calls — `enqueue_many`,
//! `claim_batch_from`, `complete_batch`, `reap`, `cancel`, `prune_at_most` — so that every row,
//! history entry, attempt record, count and tally is what the store itself writes for the
//! same life, and `retryq audit` passes on the result. A chunk of jobs is enqueued in one
//! transaction and lived through in a few more (see `mix.rs` for the timeline); nothing is
//! written behind the store's back, so the fill follows the schema wherever it goes.
//!
//! One job's life at a time through the public calls would take hours at ten million jobs;
//! chunks of up to 10,000 take minutes on SQLite (the fill's time is measured and reported).

use std::time::Instant;

use retryq::{Backend, Completion, NewJob, Outcome, Report, Settings};

use super::mix::{COHORTS, Fate, LEASE_MS, Mix, QUEUES};
use crate::BenchError;

/// The worker name the fill's claims hold leases under.
pub const FILLER: &str = "filler";

/// Jobs pruned per transaction at the end of the fill.
const PRUNE_PIECE: u64 = 100_000;

/// How the fill went.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Filled {
    /// Seconds the whole fill took.
    pub seconds: f64,
    /// Jobs per second.
    pub jobs_per_s: f64,
}

/// Fills `store` (empty) with `mix`, reporting progress every tenth.
pub fn fill(store: &mut dyn Backend, mix: &Mix, progress: &dyn Fn(&str)) -> Result<Filled, BenchError> {
    let started = Instant::now();
    let queues: Vec<&str> = QUEUES.iter().map(|(name, _)| *name).collect();
    let settings = store.settings();
    // A chunk's leases outlast its window: no attempt of the fill expires.
    store.set_settings(Settings { lease_ms: mix.window(), ..settings })?;
    let chunks = mix.chunks();
    let mut told = 0;
    for c in 0..chunks {
        chunk(store, mix, c, &queues)?;
        let tenth = (c + 1) * 10 / chunks;
        if tenth > told {
            told = tenth;
            progress(&format!(
                "  filled {} of {} jobs ({:.0} s)",
                mix.chunk(c).end,
                mix.n,
                started.elapsed().as_secs_f64()
            ));
        }
    }
    store.set_settings(settings)?;
    lease(store, mix, &queues)?;
    prune(store, mix)?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(Filled { seconds, jobs_per_s: mix.n as f64 / seconds })
}

/// One chunk: enqueued, then its ended jobs lived through in its window.
fn chunk(store: &mut dyn Backend, mix: &Mix, c: u64, queues: &[&str]) -> Result<(), BenchError> {
    let range = mix.chunk(c);
    let planned: Vec<_> = range.clone().map(|i| mix.job(i)).collect();
    let ids: Vec<String> = range.clone().map(Mix::id).collect();
    let payloads: Vec<String> = range.clone().map(Mix::payload).collect();
    let jobs: Vec<NewJob<'_>> = planned
        .iter()
        .zip(ids.iter().zip(&payloads))
        .map(|(p, (id, payload))| NewJob {
            id,
            payload,
            max_attempts: p.max_attempts,
            deadline: p.deadline,
            now: p.enqueued_at,
            not_before: Some(p.not_before),
            queue: Some(p.queue),
            priority: Some(p.priority),
            ..NewJob::default()
        })
        .collect();
    for result in store.enqueue_many(&jobs)? {
        result?;
    }
    let Some(first) = planned.first() else { return Ok(()) };
    let count = |keep: fn(Fate) -> bool| planned.iter().filter(|p| keep(p.fate)).count();
    // First attempts, each reported at its own instant; the retried ones claimed again and
    // reported the same way.
    let report_first = |fate: Fate| match fate {
        Fate::Done => Report::from(Outcome::Ok),
        Fate::Permanent => Report::with_error(Outcome::Permanent, PERMANENT),
        _ => Report::with_error(Outcome::Retryable, RETRYABLE),
    };
    let report_second = |fate: Fate| match fate {
        Fate::DoneAfterRetry => Report::from(Outcome::Ok),
        _ => Report::with_error(Outcome::Retryable, RETRYABLE),
    };
    let first_claim = mix.first_claim(first.i);
    attempt(
        store,
        mix,
        queues,
        first_claim,
        count(Fate::claimed_first),
        |i| mix.first_report(i),
        report_first,
    )?;
    let second_claim = mix.second_claim(first.i);
    attempt(store, mix, queues, second_claim, count(Fate::retried), |i| mix.second_report(i), report_second)?;
    let cancels = mix.cancels(first.i);
    for (rank, p) in planned.iter().filter(|p| p.fate == Fate::Cancelled).enumerate() {
        let now = cancels + 1 + rank as u64;
        if now >= mix.enqueued_at(range.end.min(mix.n - 1)) && range.end < mix.n {
            return Err(BenchError::Setup(format!("chunk {c} has more cancels than its window holds")));
        }
        store.cancel(&Mix::id(p.i), now)?;
    }
    Ok(())
}

/// What a failed attempt's report says.
pub(super) const RETRYABLE: &str = "HTTP 503: try later";
/// See [`RETRYABLE`].
pub(super) const PERMANENT: &str = "HTTP 422: unknown sku";

/// Claims the `expected` due jobs at `now` and reports each at its own `report_at`, as
/// `report` says for its fate.
fn attempt(
    store: &mut dyn Backend,
    mix: &Mix,
    queues: &[&str],
    now: u64,
    expected: usize,
    report_at: impl Fn(u64) -> u64,
    report: impl Fn(Fate) -> Report,
) -> Result<(), BenchError> {
    if expected == 0 {
        return Ok(());
    }
    let claimed = store.claim_batch_from(FILLER, queues, now, expected)?;
    expect("claim", expected as u64, claimed.len() as u64)?;
    let mut completions = Vec::with_capacity(claimed.len());
    for c in &claimed {
        let i = Mix::number(c.id()).ok_or_else(|| {
            BenchError::Setup(format!("the fill claimed a job it did not enqueue: {}", c.id()))
        })?;
        completions.push(Completion::new(&c.lease, report(mix.fate(i)), report_at(i), 0.0));
    }
    for result in store.complete_batch(&completions)? {
        result?;
    }
    Ok(())
}

/// The leased jobs: claimed when the fill ends, under leases that outlast the measuring.
fn lease(store: &mut dyn Backend, mix: &Mix, queues: &[&str]) -> Result<(), BenchError> {
    let expected = mix.expected().leased;
    let settings = store.settings();
    store.set_settings(Settings { lease_ms: LEASE_MS, ..settings })?;
    let mut leased = 0;
    while leased < expected {
        let k = (expected - leased).min(mix.chunk_size()) as usize;
        let claimed = store.claim_batch_from(FILLER, queues, mix.fill_end(), k)?;
        if claimed.is_empty() {
            break;
        }
        leased += claimed.len() as u64;
    }
    store.set_settings(settings)?;
    expect("lease", expected, leased)
}

/// The oldest tenth's tombstones, a bounded prune at a time.
fn prune(store: &mut dyn Backend, mix: &Mix) -> Result<(), BenchError> {
    let expected = mix.expected();
    let mut pruned = 0;
    loop {
        let n = store.prune_at_most(mix.pruned_before(), mix.fill_end(), PRUNE_PIECE)?;
        if n == 0 {
            break;
        }
        pruned += n;
    }
    expect("prune", expected.pruned_done + expected.pruned_dead, pruned)
}

fn expect(what: &str, expected: u64, got: u64) -> Result<(), BenchError> {
    if expected == got {
        Ok(())
    } else {
        Err(BenchError::Setup(format!("the fill's {what} moved {got} jobs where the mix has {expected}")))
    }
}

/// Checks the filled store against the mix: what `stats` counts is what the mix says.
pub fn check(store: &dyn Backend, mix: &Mix) -> Result<(), BenchError> {
    let s = store.stats(mix.fill_end())?;
    let e = mix.expected();
    let got = [
        s.pending,
        s.leased,
        s.done,
        s.dead_exhausted,
        s.dead_deadline,
        s.dead_permanent,
        s.dead_cancelled,
        s.pruned_done,
        s.pruned_dead,
    ];
    let want = [
        e.pending,
        e.leased,
        e.done,
        e.dead_exhausted,
        e.dead_deadline,
        e.dead_permanent,
        e.dead_cancelled,
        e.pruned_done,
        e.pruned_dead,
    ];
    if got != want {
        return Err(BenchError::Setup(format!(
            "the filled store counts {s:?}, the mix {e:?} (pending, leased, done, dead by reason, pruned)"
        )));
    }
    debug_assert_eq!(usize::from(COHORTS), e.cohorts.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const W0: u64 = 1_800_000_000_000;

    #[test]
    fn a_filled_store_holds_the_mix_and_passes_its_audit() {
        for n in [1_000, 30_000] {
            let mix = Mix::new(n, W0);
            let mut store = retryq::Queue::open_in_memory().expect("queue");
            fill(&mut store, &mix, &|_| {}).expect("fill");
            check(&store, &mix).expect("counts");
            let audit = Backend::audit(&store).expect("audit");
            assert!(audit.is_clean(), "{n}: {:?}", &audit.violations[..audit.violations.len().min(5)]);
            assert_eq!(audit.jobs, n - mix.expected().pruned_done - mix.expected().pruned_dead);
            // The stragglers, then the cohorts, are overdue only at their deadlines, one
            // group after the other.
            let e = mix.expected();
            assert_eq!(store.reap(mix.straggler_deadline(0) - 1).expect("reap"), 0);
            assert_eq!(store.reap(mix.straggler_deadline(0)).expect("reap"), e.stragglers[0]);
            assert_eq!(
                store.reap(mix.straggler_deadline(2)).expect("reap"),
                e.stragglers[1] + e.stragglers[2]
            );
            assert_eq!(store.reap(mix.cohort_deadline(0) - 1).expect("reap"), 0);
            assert_eq!(store.reap(mix.cohort_deadline(0)).expect("reap"), e.cohorts[0]);
            assert_eq!(store.reap(mix.cohort_deadline(1)).expect("reap"), e.cohorts[1]);
        }
    }
}
