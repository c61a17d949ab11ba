//! Operators' notes kept by the store itself (schema 4, SPEC 6.36): every attempt's record,
//! and the tallies a `/metrics` endpoint reads.
//!
//! Neither is state (SPEC 6.19): no operation reads them, none answers differently for them,
//! and the model knows nothing of them. The database's triggers write both, in the same
//! transaction as the transition they note (`ddl.rs`, `pg/ddl.rs`); the stores read them
//! (`queue/notes.rs`, `pg/notes.rs`) and hand the rows to [`assemble`], so that both stores
//! name and shape every tally the same way.
//!
//! The stored names are short (`claims`, `claim_wait`); the ones handed out are Prometheus's
//! (`retryq_claims_total`, `retryq_claim_wait_milliseconds`), with the queue as the first
//! label, the job's `kind` next on every tally about jobs (SPEC 6.44: `""` for a job without
//! one, and for what was counted before schema 7 kept kinds), and, for some, a third one
//! (`reason`, `outcome`, `type`, `status`). A prune's and a forget's tallies have no `kind`:
//! a tombstone keeps none, so a forget could not tell it.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// One ended attempt's record: who held it, from when until when, and what ended it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptRecord {
    /// The attempt's number: the job's `attempts` after the claim that began it.
    pub attempt: u64,
    /// The `now` of that claim.
    pub claimed_at: u64,
    /// The `now` of the operation that ended it: a completion, a reap, or the claim that took
    /// its expired lease.
    pub ended_at: u64,
    /// What ended it: `ok`, `retryable` or `permanent` (the holder's report), `lease expired`
    /// (no report came: a reap, or another claim, took the expired lease), or
    /// `expired or retryable` (an attempt that ended before schema 4 kept records, in a way
    /// schema 3's history does not tell apart).
    pub outcome: String,
    /// The error text of the attempt's report, or of a note on its live lease (cut to
    /// [`MAX_NOTE_BYTES`](crate::MAX_NOTE_BYTES)).
    pub error: Option<String>,
    /// Which receiver the attempt reached, as its report or note said.
    pub node: Option<String>,
    /// The lease holder.
    pub worker: Option<String>,
}

/// Every tally of the store, read in one snapshot: counters that only grow and histograms,
/// each kept by the store in the transaction of the transition it counts, so that they
/// survive restarts and read the same from every process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tallies {
    /// The counters, by metric and labels.
    pub counters: Vec<Tally>,
    /// The histograms, by metric and labels.
    pub histograms: Vec<Histogram>,
}

/// One counter: how many times something happened since the store began counting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tally {
    /// The metric's name, as Prometheus writes it: `retryq_claims_total`.
    pub metric: String,
    /// Its labels: `queue` first, then the metric's own, if it has one.
    pub labels: Vec<(String, String)>,
    /// The count.
    pub value: u64,
}

/// One histogram of durations in milliseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    /// The metric's name, as Prometheus writes it: `retryq_claim_wait_milliseconds`.
    pub metric: String,
    /// Its labels: `queue` first, then the metric's own, if it has one.
    pub labels: Vec<(String, String)>,
    /// Every bucket, in order: its upper bound in ms ([`u64::MAX`] for `+Inf`) and how many
    /// observations were at most that (cumulative, as Prometheus's `le`).
    pub buckets: Vec<(u64, u64)>,
    /// The sum of the observations in ms (it stops at [`u64::MAX`] rather than wrap).
    pub sum_ms: u64,
    /// How many observations: the `+Inf` bucket's count.
    pub count: u64,
}

/// The histograms' bucket bounds in ms; a last bucket, `+Inf`, holds the rest.
pub(crate) const BUCKETS_MS: [u64; 16] =
    [5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000];

/// The `+Inf` bucket's bound as the stores keep it: the largest integer both hold.
pub(crate) const INF_LE: i64 = i64::MAX;

/// An SQL expression giving the bound of the bucket that `value` (an expression, written as
/// many times as there are bounds) falls in; the same text on both stores.
pub(crate) fn bucket_of(value: &str) -> String {
    let mut sql = String::from("CASE");
    for bound in BUCKETS_MS {
        sql.push_str(&format!(" WHEN {value} <= {bound} THEN {bound}"));
    }
    sql.push_str(&format!(" ELSE {INF_LE} END"));
    sql
}

/// Whether a stored tally is labelled by its jobs' kind.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ByKind {
    /// About jobs: the kind is a label, `""` for none.
    Yes,
    /// About tombstones (a prune, a forget): always stored under kind `''`, not a label.
    No,
}

/// The stored counters: their short name, the name handed out, whether the kind labels them,
/// and their last label.
const COUNTERS: &[(&str, &str, ByKind, Option<&str>)] = &[
    ("enqueued", "retryq_enqueued_total", ByKind::Yes, None),
    ("claims", "retryq_claims_total", ByKind::Yes, None),
    ("deaths", "retryq_deaths_total", ByKind::Yes, Some("reason")),
    ("reaped", "retryq_reaped_total", ByKind::Yes, Some("reason")),
    ("redrives", "retryq_redrives_total", ByKind::Yes, None),
    ("cancels", "retryq_cancels_total", ByKind::Yes, Some("type")),
    ("heartbeats", "retryq_heartbeats_total", ByKind::Yes, None),
    ("pruned", "retryq_pruned_total", ByKind::No, Some("status")),
    ("forgotten", "retryq_forgotten_total", ByKind::No, None),
];

/// The stored histograms, likewise.
const HISTOGRAMS: &[(&str, &str, ByKind, Option<&str>)] = &[
    ("claim_wait", "retryq_claim_wait_milliseconds", ByKind::Yes, None),
    ("attempt_duration", "retryq_attempt_duration_milliseconds", ByKind::Yes, Some("outcome")),
];

/// The counter read off `attempt_duration`'s counts: every ended attempt, by outcome.
const ATTEMPTS_ENDED: &str = "retryq_attempts_ended_total";

/// One stored counter row: metric, queue, kind (`''` for none), last label (`''` for none),
/// count.
pub(crate) type CounterRow = (String, String, String, String, u64);
/// One stored bucket row: metric, queue, kind, last label, bound (`INF_LE` for `+Inf`),
/// count, sum in ms.
pub(crate) type BucketRow = (String, String, String, String, i64, u64, u64);

/// A tally's labels: `queue`, then `kind` for a tally about jobs, then its own, if any. A
/// tally not about jobs stored under a kind is not one this build wrote.
fn labels(
    metric: &str,
    queue: String,
    by_kind: ByKind,
    kind: String,
    last: Option<&str>,
    label: String,
) -> Result<Vec<(String, String)>> {
    let mut labels = vec![("queue".to_owned(), queue)];
    match by_kind {
        ByKind::Yes => labels.push(("kind".to_owned(), kind)),
        ByKind::No if kind.is_empty() => {}
        ByKind::No => {
            return Err(Error::Corrupt(format!("a stored {metric:?} under kind {kind:?}, which it has not")));
        }
    }
    if let Some(name) = last {
        labels.push((name.to_owned(), label));
    }
    Ok(labels)
}

fn unknown(what: &str, metric: &str) -> Error {
    Error::Corrupt(format!("a stored {what} named {metric:?}, which this build does not keep"))
}

/// The tallies the rows of a store's `tallies` and `tally_buckets` make (summed over the
/// shards first, on PostgreSQL): each counter named and labelled, each histogram's buckets
/// made cumulative over every bound, and `retryq_attempts_ended_total` read off the attempt
/// durations' counts. Sorted by name and labels.
pub(crate) fn assemble(counters: Vec<CounterRow>, buckets: Vec<BucketRow>) -> Result<Tallies> {
    let mut tallies = Tallies::default();
    for (metric, queue, kind, label, value) in counters {
        let (_, name, by_kind, last) = COUNTERS
            .iter()
            .find(|(stored, ..)| *stored == metric)
            .ok_or_else(|| unknown("counter", &metric))?;
        tallies.counters.push(Tally {
            metric: (*name).to_owned(),
            labels: labels(&metric, queue, *by_kind, kind, *last, label)?,
            value,
        });
    }
    // Per histogram and labels (metric, queue, kind, label): the count and sum of each bound.
    type Series = (String, String, String, String);
    let mut grouped: BTreeMap<Series, BTreeMap<i64, (u64, u64)>> = BTreeMap::new();
    for (metric, queue, kind, label, le, n, sum) in buckets {
        if !(le == INF_LE || BUCKETS_MS.iter().any(|&b| b as i64 == le)) {
            return Err(Error::Corrupt(format!(
                "a bucket of {metric:?} bounded at {le} ms, no bound of this build"
            )));
        }
        let bucket = grouped.entry((metric, queue, kind, label)).or_default().entry(le).or_default();
        bucket.0 = bucket.0.saturating_add(n);
        bucket.1 = bucket.1.saturating_add(sum);
    }
    for ((metric, queue, kind, label), by_bound) in grouped {
        let (stored, name, by_kind, last) = HISTOGRAMS
            .iter()
            .find(|(stored, ..)| *stored == metric)
            .ok_or_else(|| unknown("histogram", &metric))?;
        let (mut count, mut sum_ms) = (0u64, 0u64);
        let mut buckets = Vec::with_capacity(BUCKETS_MS.len() + 1);
        for bound in BUCKETS_MS.iter().map(|&b| b as i64).chain([INF_LE]) {
            let (n, sum) = by_bound.get(&bound).copied().unwrap_or_default();
            count = count.saturating_add(n);
            sum_ms = sum_ms.saturating_add(sum);
            buckets.push((if bound == INF_LE { u64::MAX } else { bound as u64 }, count));
        }
        let labels = labels(&metric, queue, *by_kind, kind, *last, label)?;
        if *stored == "attempt_duration" {
            tallies.counters.push(Tally {
                metric: ATTEMPTS_ENDED.to_owned(),
                labels: labels.clone(),
                value: count,
            });
        }
        tallies.histograms.push(Histogram { metric: (*name).to_owned(), labels, buckets, sum_ms, count });
    }
    tallies.counters.sort_by(|a, b| (&a.metric, &a.labels).cmp(&(&b.metric, &b.labels)));
    tallies.histograms.sort_by(|a, b| (&a.metric, &a.labels).cmp(&(&b.metric, &b.labels)));
    Ok(tallies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_named_counters_and_cumulative_histograms() {
        let counters = vec![
            ("deaths".into(), "mail".into(), "receipt".into(), "permanent".into(), 2),
            ("claims".into(), "default".into(), "".into(), "".into(), 5),
        ];
        let buckets = vec![
            ("attempt_duration".into(), "default".into(), "".into(), "ok".into(), 10, 2, 13),
            ("attempt_duration".into(), "default".into(), "".into(), "ok".into(), INF_LE, 1, u64::MAX),
            ("attempt_duration".into(), "default".into(), "".into(), "ok".into(), 5, 3, 6),
        ];
        let t = assemble(counters, buckets).expect("assemble");
        let names: Vec<&str> = t.counters.iter().map(|c| c.metric.as_str()).collect();
        assert_eq!(names, ["retryq_attempts_ended_total", "retryq_claims_total", "retryq_deaths_total"]);
        assert_eq!(t.counters[0].value, 6);
        assert_eq!(
            t.counters[0].labels,
            [("queue".into(), "default".into()), ("kind".into(), "".into()), ("outcome".into(), "ok".into())]
        );
        assert_eq!(
            t.counters[2].labels,
            [
                ("queue".into(), "mail".into()),
                ("kind".into(), "receipt".into()),
                ("reason".into(), "permanent".into())
            ]
        );
        let h = &t.histograms[0];
        assert_eq!(h.metric, "retryq_attempt_duration_milliseconds");
        assert_eq!(h.buckets.len(), BUCKETS_MS.len() + 1);
        assert_eq!(&h.buckets[..3], [(5, 3), (10, 5), (25, 5)]);
        assert_eq!(h.buckets.last(), Some(&(u64::MAX, 6)));
        assert_eq!((h.count, h.sum_ms), (6, u64::MAX), "the sum stops at the largest u64");
    }

    #[test]
    fn a_name_or_a_bound_this_build_does_not_keep_is_corrupt() {
        let err = assemble(vec![("spins".into(), "q".into(), "".into(), "".into(), 1)], vec![]).unwrap_err();
        assert!(err.to_string().contains("spins"), "{err}");
        let err = assemble(vec![], vec![("claim_wait".into(), "q".into(), "".into(), "".into(), 7, 1, 7)])
            .unwrap_err();
        assert!(err.to_string().contains("7 ms"), "{err}");
        let err = assemble(vec![("forgotten".into(), "q".into(), "mail".into(), "".into(), 1)], vec![])
            .unwrap_err();
        assert!(err.to_string().contains("under kind \"mail\""), "{err}");
    }

    #[test]
    fn buckets_are_bounded_by_the_first_bound_at_or_above() {
        let sql = bucket_of("v");
        assert!(sql.starts_with("CASE WHEN v <= 5 THEN 5 WHEN v <= 10 THEN 10"), "{sql}");
        assert!(sql.ends_with(&format!("WHEN v <= 3600000 THEN 3600000 ELSE {INF_LE} END")), "{sql}");
    }
}
