//! `GET /metrics`: the store's counts as Prometheus gauges, in the OpenMetrics text format
//! the Prometheus project's client (`prometheus-client`) writes. Every value is read from the
//! store at the scrape, none is kept in this process: two dashboards, or one restarted, show
//! the same numbers.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabelValue, LabelValueEncoder, MetricEncoder, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use retryq::{Stats, Tallies};

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

/// The gauges of the counts: jobs by status and dead reason, tombstones by status, expired
/// leases and the oldest open job's age — each of the whole store (no `queue` label) and of
/// every queue (`queue` label) in `queues`.
pub fn gauges(total: &Stats, queues: &[(String, Stats)]) -> Vec<Family> {
    let scopes: Vec<(Labels, &Stats)> = std::iter::once((Vec::new(), total))
        .chain(queues.iter().map(|(name, stats)| (vec![("queue".to_owned(), Escaped(name.clone()))], stats)))
        .collect();
    let each = |f: &dyn Fn(&Stats) -> Vec<(Labels, Number)>| -> Vec<(Labels, Number)> {
        scopes
            .iter()
            .flat_map(|(scope, stats)| {
                f(stats).into_iter().map(|(mut labels, value)| {
                    labels.extend(scope.iter().cloned());
                    (labels, value)
                })
            })
            .collect()
    };
    let label = |name: &str, value: &str| (name.to_owned(), Escaped(value.to_owned()));
    let jobs = each(&|s: &Stats| {
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
    let pruned = each(&|s: &Stats| {
        vec![
            (vec![label("status", "done")], Number::Count(s.pruned_done)),
            (vec![label("status", "dead")], Number::Count(s.pruned_dead)),
        ]
    });
    let expired = each(&|s: &Stats| vec![(Vec::new(), Number::Count(s.leased_expired))]);
    let oldest = each(&|s: &Stats| {
        s.oldest_open_age_ms.map(|ms| (Vec::new(), Number::Measure(ms as f64 / 1000.0))).into_iter().collect()
    });
    vec![
        Family {
            name: "retryq_jobs".into(),
            help: "Jobs by status (and dead reason), now.".into(),
            samples: Samples::Gauge(jobs),
        },
        Family {
            name: "retryq_tombstones".into(),
            help: "Pruned jobs kept as tombstones, by the status they ended in.".into(),
            samples: Samples::Gauge(pruned),
        },
        Family {
            name: "retryq_leases_expired".into(),
            help: "Leased jobs whose lease has expired: their workers may have died.".into(),
            samples: Samples::Gauge(expired),
        },
        Family {
            name: "retryq_oldest_open_age_seconds".into(),
            help:
                "How long the oldest pending or leased job has been in the queue (absent when none is open)."
                    .into(),
            samples: Samples::Gauge(oldest),
        },
    ]
}

/// The store's tallies (what only grows: claims, attempts ended by outcome, deaths by reason,
/// redrives, cancels, reaps, …) as counters, and its histograms (an attempt's duration, the
/// wait from due to claimed) in seconds, as Prometheus names its units.
pub fn tallies(tallies: &Tallies) -> Vec<Family> {
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

    #[test]
    fn a_queue_name_cannot_forge_a_sample() {
        let stats = Stats { pending: 1, ..Stats::default() };
        let queues = vec![("a\"} 9\nretryq_jobs{status=\"done\\".to_owned(), stats.clone())];
        let text = encode(gauges(&stats, &queues)).expect("encode");
        assert!(
            text.contains(r#"retryq_jobs{status="pending",queue="a\"} 9\nretryq_jobs{status=\"done\\"} 1"#),
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
            oldest_open_age_ms: Some(1500),
            pruned_done: 7,
            pruned_dead: 8,
            paused_queues: 0,
        };
        let text = encode(gauges(&stats, &[])).expect("encode");
        for sample in [
            "retryq_jobs{status=\"pending\"} 1",
            "retryq_jobs{status=\"leased\"} 2",
            "retryq_jobs{status=\"done\"} 3",
            "retryq_jobs{status=\"dead\",reason=\"exhausted\"} 4",
            "retryq_jobs{status=\"dead\",reason=\"deadline\"} 3",
            "retryq_jobs{status=\"dead\",reason=\"permanent\"} 2",
            "retryq_jobs{status=\"dead\",reason=\"cancelled\"} 1",
            "retryq_tombstones{status=\"done\"} 7",
            "retryq_tombstones{status=\"dead\"} 8",
            "retryq_leases_expired 5",
            "retryq_oldest_open_age_seconds 1.5",
        ] {
            assert!(text.lines().any(|line| line == sample), "no {sample:?} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
