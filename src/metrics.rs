//! The metrics, named and rendered in one place for `GET /metrics` and `retryq stats
//! --prometheus`: the same families, names and labels, in the OpenMetrics text format the
//! Prometheus project's client (`prometheus-client`) writes. Every value is read from the
//! store when asked, none is kept in this process: two dashboards, or one restarted, show the
//! same numbers.
//!
//! Every series is a queue's (`queue` label): no series of the whole store shares a name with
//! them, so `sum(retryq_jobs)` is the number of jobs and the whole store is always a `sum`.
//! The tallies about jobs carry the jobs' `kind` too (SPEC 6.44, `kind=""` for none), so
//! `sum by (queue)` is a queue's; the gauges stay per queue (`stats` counts by queue and
//! status, and a count by kind would be a scan of the jobs). Every counter of every queue is
//! present from the start, at 0 — and of every kind the queue has tallied, from its first
//! enqueue — so that `increase()` sees the first event. The age an alert watches is the oldest *due* job's wait, counted from the
//! time it became due (`available_at`), so a redrive, which makes a job due now, starts it at
//! 0 rather than at its first enqueue (SPEC 3.8's `oldest_open_age_ms`, in `stats --json`,
//! counts from the enqueue, as the contract has it).

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabelValue, LabelValueEncoder, MetricEncoder, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use retryq::{Backend, Stats, Tallies, Tally};

/// The media type of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A label value, escaped as the text format requires (`\`, `"` and line feeds): the client
/// writes label values as they are given, and a queue's name is anybody's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Escaped(pub String);

impl EncodeLabelValue for Escaped {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), fmt::Error> {
        use fmt::Write;
        for c in self.0.chars() {
            match c {
                '\\' => encoder.write_str("\\\\")?,
                '"' => encoder.write_str("\\\"")?,
                '\n' => encoder.write_str("\\n")?,
                c => encoder.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// One sample's labels.
pub type Labels = Vec<(String, Escaped)>;

/// One metric and its samples, ready to encode.
#[derive(Clone, Debug)]
pub struct Family {
    /// The name, without the `_total` a counter's samples get.
    pub name: String,
    /// What it counts, in words.
    pub help: String,
    /// The samples.
    pub samples: Samples,
}

/// The samples of one family, of one kind.
#[derive(Clone, Debug)]
pub enum Samples {
    /// Values that go up and down.
    Gauge(Vec<(Labels, Number)>),
    /// Values that only grow.
    Counter(Vec<(Labels, u64)>),
    /// Observations by bucket.
    Histogram(Vec<Observed>),
}

/// One histogram's labels, sum, count, and each bucket's own count (not cumulative) by its
/// upper bound (`f64::MAX` for +Inf).
pub type Observed = (Labels, f64, u64, Vec<(f64, u64)>);

/// A gauge's value: a count, or a measure with a fraction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// A count.
    Count(u64),
    /// A measure: seconds.
    Measure(f64),
}

/// What one scrape encodes.
#[derive(Debug, Default)]
struct Snapshot(Vec<Family>);

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), fmt::Error> {
        for family in &self.0 {
            let kind = match family.samples {
                Samples::Gauge(_) => MetricType::Gauge,
                Samples::Counter(_) => MetricType::Counter,
                Samples::Histogram(_) => MetricType::Histogram,
            };
            let mut metric = encoder.encode_descriptor(&family.name, &family.help, None, kind)?;
            match &family.samples {
                Samples::Gauge(samples) => {
                    for (labels, value) in samples {
                        labelled(&mut metric, labels, |m| match value {
                            Number::Count(n) => m.encode_gauge(n),
                            Number::Measure(x) => m.encode_gauge(x),
                        })?;
                    }
                }
                Samples::Counter(samples) => {
                    for (labels, value) in samples {
                        labelled(&mut metric, labels, |m| {
                            m.encode_counter::<NoLabelSet, _, u64>(value, None)
                        })?;
                    }
                }
                Samples::Histogram(samples) => {
                    for (labels, sum, count, buckets) in samples {
                        labelled(&mut metric, labels, |m| {
                            m.encode_histogram::<NoLabelSet>(*sum, *count, buckets, None)
                        })?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Encodes one sample with its labels; one without labels has no `{}`.
fn labelled(
    metric: &mut MetricEncoder<'_>,
    labels: &Labels,
    encode: impl FnOnce(&mut MetricEncoder<'_>) -> Result<(), fmt::Error>,
) -> Result<(), fmt::Error> {
    if labels.is_empty() { encode(metric) } else { encode(&mut metric.encode_family(labels)?) }
}

/// The exposition of `families`.
pub fn encode(families: Vec<Family>) -> Result<String, fmt::Error> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Snapshot(families)));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)?;
    Ok(text)
}

/// The queue every store has a series for, even before its first job: the default name.
const DEFAULT_QUEUE: &str = "default";

/// Every family of `queues` (each with its counts at `now`), then the store's tallies with
/// every counter of those queues present from 0, ready to [`encode`]. `queue` keeps one
/// queue's series only.
pub fn read(store: &dyn Backend, now: u64, queue: Option<&str>) -> Result<Vec<Family>, retryq::Error> {
    let mut names = match queue {
        Some(name) => vec![name.to_owned()],
        None => store.queues()?,
    };
    if queue.is_none() && !names.iter().any(|n| n == DEFAULT_QUEUE) {
        names.push(DEFAULT_QUEUE.to_owned());
        names.sort();
    }
    let mut queues = Vec::with_capacity(names.len());
    for name in names {
        let stats = store.stats_of(now, Some(&name))?;
        let due = store.next_due_in(&[&name])?;
        queues.push(QueueCounts { wait_ms: due.map_or(0, |at| now.saturating_sub(at)), name, stats });
    }
    let mut tallies = store.tallies()?;
    if let Some(name) = queue {
        let ours = |labels: &[(String, String)]| labels.iter().any(|(k, v)| k == "queue" && v == name);
        tallies.counters.retain(|t| ours(&t.labels));
        tallies.histograms.retain(|h| ours(&h.labels));
    }
    let mut families = gauges(&queues);
    families.extend(counters(&tallies, &queues));
    Ok(families)
}

/// One queue's counts at `now` and its oldest due job's wait.
#[derive(Clone, Debug)]
pub struct QueueCounts {
    /// The queue.
    pub name: String,
    /// Its counts (SPEC 3.8).
    pub stats: Stats,
    /// `now − min(available_at)` over its pending and leased jobs, 0 when that is in the
    /// future or none is open: how long its longest-waiting due job has waited since it
    /// became due. A leased job is due once its lease has expired (SPEC 1.4).
    pub wait_ms: u64,
}

/// The gauges of each queue: jobs by status (and dead reason), tombstones by status, expired
/// leases, and the oldest due job's wait.
pub fn gauges(queues: &[QueueCounts]) -> Vec<Family> {
    let label = |name: &str, value: &str| (name.to_owned(), Escaped(value.to_owned()));
    let each = |f: &dyn Fn(&QueueCounts) -> Vec<(Labels, Number)>| -> Vec<(Labels, Number)> {
        queues
            .iter()
            .flat_map(|q| {
                f(q).into_iter().map(|(mut labels, value)| {
                    labels.insert(0, label("queue", &q.name));
                    (labels, value)
                })
            })
            .collect()
    };
    let jobs = each(&|q| {
        let s = &q.stats;
        vec![
            (vec![label("status", "pending")], Number::Count(s.pending)),
            (vec![label("status", "leased")], Number::Count(s.leased)),
            (vec![label("status", "done")], Number::Count(s.done)),
            (vec![label("status", "dead"), label("reason", "exhausted")], Number::Count(s.dead_exhausted)),
            (vec![label("status", "dead"), label("reason", "deadline")], Number::Count(s.dead_deadline)),
            (vec![label("status", "dead"), label("reason", "permanent")], Number::Count(s.dead_permanent)),
            (vec![label("status", "dead"), label("reason", "cancelled")], Number::Count(s.dead_cancelled)),
        ]
    });
    let tombstones = each(&|q| {
        vec![
            (vec![label("status", "done")], Number::Count(q.stats.pruned_done)),
            (vec![label("status", "dead")], Number::Count(q.stats.pruned_dead)),
        ]
    });
    let expired = each(&|q| vec![(Vec::new(), Number::Count(q.stats.leased_expired))]);
    let wait = each(&|q| vec![(Vec::new(), Number::Measure(q.wait_ms as f64 / 1000.0))]);
    let paused = each(&|q| vec![(Vec::new(), Number::Count(q.stats.paused_queues))]);
    vec![
        Family {
            name: JOBS.into(),
            help: "Jobs by queue and status (and dead reason), now; sum() is the store's.".into(),
            samples: Samples::Gauge(jobs),
        },
        Family {
            name: TOMBSTONES.into(),
            help: "Pruned jobs kept as tombstones, by queue and the status they ended in.".into(),
            samples: Samples::Gauge(tombstones),
        },
        Family {
            name: LEASES_EXPIRED.into(),
            help: "Leased jobs whose lease has expired: their workers may have died.".into(),
            samples: Samples::Gauge(expired),
        },
        Family {
            name: OLDEST_DUE_WAIT.into(),
            help: "How long the queue's longest-waiting due job has waited since it became due \
                   (its available_at; a redrive makes a job due now); 0 when none is due."
                .into(),
            samples: Samples::Gauge(wait),
        },
        Family {
            name: PAUSED.into(),
            help: "1 while the queue is paused (SPEC 3.16): its due jobs wait on purpose.".into(),
            samples: Samples::Gauge(paused),
        },
    ]
}

/// `retryq_jobs`.
pub const JOBS: &str = "retryq_jobs";
/// `retryq_tombstones`.
pub const TOMBSTONES: &str = "retryq_tombstones";
/// `retryq_leases_expired`.
pub const LEASES_EXPIRED: &str = "retryq_leases_expired";
/// `retryq_oldest_due_wait_seconds`.
pub const OLDEST_DUE_WAIT: &str = "retryq_oldest_due_wait_seconds";
/// `retryq_queue_paused`.
pub const PAUSED: &str = "retryq_queue_paused";

/// A counter's label besides `queue` and `kind`, and its values.
type LastLabel = (&'static str, &'static [&'static str]);

/// Whether a counter is labelled by the jobs' kind: those about jobs are, a prune's and a
/// forget's are not (a tombstone keeps no kind).
const BY_KIND: bool = true;

/// Every counter the store keeps, whether the kind labels it, its last label and that
/// label's values: the series present (at 0 until their first event) for every queue (and
/// kind).
const COUNTERS: &[(&str, bool, Option<LastLabel>)] = &[
    ("retryq_enqueued_total", BY_KIND, None),
    ("retryq_claims_total", BY_KIND, None),
    ("retryq_redrives_total", BY_KIND, None),
    ("retryq_heartbeats_total", BY_KIND, None),
    ("retryq_forgotten_total", !BY_KIND, None),
    (
        "retryq_attempts_ended_total",
        BY_KIND,
        Some(("outcome", &["ok", "retryable", "permanent", "lease expired"])),
    ),
    ("retryq_deaths_total", BY_KIND, Some(("reason", &["exhausted", "deadline", "permanent", "cancelled"]))),
    ("retryq_reaped_total", BY_KIND, Some(("reason", &["exhausted", "deadline", "cancelled"]))),
    ("retryq_cancels_total", BY_KIND, Some(("type", &["pending", "request"]))),
    ("retryq_pruned_total", !BY_KIND, Some(("status", &["done", "dead"]))),
];

/// The kinds `stored` has tallied in `queue`, and `""` (no kind), which every queue has.
fn kinds_of(stored: &Tallies, queue: &str) -> std::collections::BTreeSet<String> {
    let mut kinds = std::collections::BTreeSet::from([String::new()]);
    for labels in stored.counters.iter().map(|t| &t.labels).chain(stored.histograms.iter().map(|h| &h.labels))
    {
        if labels.iter().any(|(k, v)| k == "queue" && v == queue) {
            kinds.extend(labels.iter().filter(|(k, _)| k == "kind").map(|(_, v)| v.clone()));
        }
    }
    kinds
}

/// The tallies' families, every counter of every queue in `queues` — and of every kind the
/// queue has tallied — present (0 until its first event) beside those the store has counted.
fn counters(stored: &Tallies, queues: &[QueueCounts]) -> Vec<Family> {
    let mut all = stored.clone();
    for q in queues {
        let kinds = kinds_of(stored, &q.name);
        for (metric, by_kind, label) in COUNTERS {
            let mut heads: Vec<Vec<(String, String)>> = Vec::new();
            for kind in kinds.iter().filter(|kind| *by_kind || kind.is_empty()) {
                let mut head = vec![("queue".to_owned(), q.name.clone())];
                if *by_kind {
                    head.push(("kind".to_owned(), kind.clone()));
                }
                heads.push(head);
            }
            let sets: Vec<Vec<(String, String)>> = match label {
                None => heads,
                Some((key, values)) => heads
                    .iter()
                    .flat_map(|head| {
                        values.iter().map(move |v| {
                            let mut labels = head.clone();
                            labels.push(((*key).to_owned(), (*v).to_owned()));
                            labels
                        })
                    })
                    .collect(),
            };
            for labels in sets {
                if !all.counters.iter().any(|t| t.metric == *metric && t.labels == labels) {
                    all.counters.push(Tally { metric: (*metric).to_owned(), labels, value: 0 });
                }
            }
        }
    }
    all.counters.sort_by(|a, b| (&a.metric, &a.labels).cmp(&(&b.metric, &b.labels)));
    tallies(&all)
}

/// The store's tallies (what only grows: claims, attempts ended by outcome, deaths by reason,
/// redrives, cancels, reaps, …) as counters, and its histograms (an attempt's duration, the
/// wait from due to claimed) in seconds, as Prometheus names its units.
fn tallies(tallies: &Tallies) -> Vec<Family> {
    let mut families: Vec<Family> = Vec::new();
    for tally in &tallies.counters {
        let name = tally.metric.strip_suffix("_total").unwrap_or(&tally.metric);
        let labels = tally.labels.iter().map(|(k, v)| (k.clone(), Escaped(v.clone()))).collect();
        match families.iter_mut().find(|f| f.name == name) {
            Some(Family { samples: Samples::Counter(samples), .. }) => samples.push((labels, tally.value)),
            _ => families.push(Family {
                name: name.to_owned(),
                help: format!(
                    "{name}: counted by the store in the transaction of each transition; never decreases."
                ),
                samples: Samples::Counter(vec![(labels, tally.value)]),
            }),
        }
    }
    for histogram in &tallies.histograms {
        let base = histogram.metric.strip_suffix("_milliseconds").unwrap_or(&histogram.metric);
        let name = format!("{base}_seconds");
        let labels = histogram.labels.iter().map(|(k, v)| (k.clone(), Escaped(v.clone()))).collect();
        let mut below = 0;
        let buckets = histogram
            .buckets
            .iter()
            .map(|&(upper, cumulative)| {
                let own = cumulative.saturating_sub(below);
                below = cumulative;
                (if upper == u64::MAX { f64::MAX } else { upper as f64 / 1000.0 }, own)
            })
            .collect();
        let sample = (labels, histogram.sum_ms as f64 / 1000.0, histogram.count, buckets);
        match families.iter_mut().find(|f| f.name == name) {
            Some(Family { samples: Samples::Histogram(samples), .. }) => samples.push(sample),
            _ => families.push(Family {
                help: format!("{name}: observed by the store in the transaction of each transition."),
                name,
                samples: Samples::Histogram(vec![sample]),
            }),
        }
    }
    families
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(name: &str, stats: Stats) -> Vec<QueueCounts> {
        vec![QueueCounts { name: name.to_owned(), stats, wait_ms: 1500 }]
    }

    #[test]
    fn a_queue_name_cannot_forge_a_sample() {
        let stats = Stats { pending: 1, ..Stats::default() };
        let text = encode(gauges(&one("a\"} 9\nretryq_jobs{status=\"done\\", stats))).expect("encode");
        assert!(
            text.contains(r#"retryq_jobs{queue="a\"} 9\nretryq_jobs{status=\"done\\",status="pending"} 1"#),
            "{text}"
        );
        // Every line is a comment or a sample of a family declared here.
        for line in text.lines().filter(|line| !line.starts_with('#')) {
            assert!(line.starts_with("retryq_"), "a forged line: {line}");
        }
    }

    #[test]
    fn every_count_has_its_sample() {
        let stats = Stats {
            pending: 1,
            leased: 2,
            done: 3,
            dead: 10,
            dead_exhausted: 4,
            dead_deadline: 3,
            dead_permanent: 2,
            dead_cancelled: 1,
            leased_expired: 5,
            oldest_open_age_ms: Some(9000),
            pruned_done: 7,
            pruned_dead: 8,
            paused_queues: 1,
        };
        let text = encode(gauges(&one("q", stats))).expect("encode");
        for sample in [
            "retryq_jobs{queue=\"q\",status=\"pending\"} 1",
            "retryq_jobs{queue=\"q\",status=\"leased\"} 2",
            "retryq_jobs{queue=\"q\",status=\"done\"} 3",
            "retryq_jobs{queue=\"q\",status=\"dead\",reason=\"exhausted\"} 4",
            "retryq_jobs{queue=\"q\",status=\"dead\",reason=\"deadline\"} 3",
            "retryq_jobs{queue=\"q\",status=\"dead\",reason=\"permanent\"} 2",
            "retryq_jobs{queue=\"q\",status=\"dead\",reason=\"cancelled\"} 1",
            "retryq_tombstones{queue=\"q\",status=\"done\"} 7",
            "retryq_tombstones{queue=\"q\",status=\"dead\"} 8",
            "retryq_leases_expired{queue=\"q\"} 5",
            "retryq_queue_paused{queue=\"q\"} 1",
            "retryq_oldest_due_wait_seconds{queue=\"q\"} 1.5",
        ] {
            assert!(text.lines().any(|line| line == sample), "no {sample:?} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn every_counter_is_present_at_zero_beside_the_counted() {
        let stored = Tallies {
            counters: vec![Tally {
                metric: "retryq_claims_total".into(),
                labels: vec![("queue".into(), "q".into()), ("kind".into(), "mail".into())],
                value: 4,
            }],
            histograms: Vec::new(),
        };
        let text = encode(counters(&stored, &one("q", Stats::default()))).expect("encode");
        assert!(text.lines().any(|l| l == "retryq_claims_total{queue=\"q\",kind=\"mail\"} 4"), "{text}");
        for (metric, by_kind, label) in COUNTERS {
            let kinds: &[&str] = if *by_kind { &["", "mail"] } else { &[""] };
            for kind in kinds {
                let head =
                    if *by_kind { format!("queue=\"q\",kind=\"{kind}\"") } else { "queue=\"q\"".into() };
                let zero = match label {
                    None => format!("{metric}{{{head}}} 0"),
                    Some((key, values)) => format!("{metric}{{{head},{key}=\"{}\"}} 0", values[0]),
                };
                if !(*metric == "retryq_claims_total" && *kind == "mail") {
                    assert!(text.lines().any(|l| l == zero), "no {zero:?} in\n{text}");
                }
            }
        }
        assert!(!text.contains("retryq_pruned_total{queue=\"q\",kind"), "a prune is not by kind:\n{text}");
    }
}
