//! Jobs processed, retried and dead per minute over the last hour and per hour over the last
//! day, of every queue: the overview's charts.
//!
//! The store keeps no time series: its tallies (`Backend::tallies`, SPEC 6.36) are counters
//! that only grow, keyed by metric, queue and label — their buckets are a histogram's
//! durations, not times. So the dashboard does what a Prometheus server does with them: it
//! reads the counters now and then ([`SAMPLE_EVERY`], and at every overview) and files each
//! counter's growth since its highest reading so far under the minute and the hour of the reading.
//! What happened while no dashboard ran is not in the charts (they say since when they
//! count); what happened between two readings lands in the minute of the later one.
//!
//! Bounded cost: a reading is one `tallies()` snapshot, whose rows are metrics × queues ×
//! labels — never the jobs. What is kept is at most [`MINUTES`] + [`HOURS`] slots of three
//! counts for each queue the tallies name, whatever the store's size or age.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use retryq::Tallies;

/// How often `retryq serve` reads the tallies between overviews.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(15);
/// The slots of the last hour's chart, a minute each.
pub const MINUTES: u64 = 60;
/// The slots of the last day's chart, an hour each.
pub const HOURS: u64 = 24;

const MINUTE_MS: u64 = 60_000;
const HOUR_MS: u64 = 3_600_000;

/// The outcomes of an attempt that leave its job to try again, unless that was its last.
const RETRIED: [&str; 3] = ["retryable", "lease expired", "expired or retryable"];

/// One slot's (or one reading's) counts of a queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Attempts that ended, whatever their outcome (`retryq_attempts_ended_total`).
    pub processed: u64,
    /// Attempts that ended `retryable` or with their lease expired: the job tries again
    /// unless that was its last attempt or its deadline is past.
    pub retried: u64,
    /// Jobs that died, for any reason (`retryq_deaths_total`).
    pub dead: u64,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.processed = self.processed.saturating_add(other.processed);
        self.retried = self.retried.saturating_add(other.retried);
        self.dead = self.dead.saturating_add(other.dead);
    }

    /// What grew from `before` to `self`; a counter lower than before counts as not grown.
    fn since(self, before: Counts) -> Counts {
        Counts {
            processed: self.processed.saturating_sub(before.processed),
            retried: self.retried.saturating_sub(before.retried),
            dead: self.dead.saturating_sub(before.dead),
        }
    }

    /// The larger of each count.
    fn max(self, other: Counts) -> Counts {
        Counts {
            processed: self.processed.max(other.processed),
            retried: self.retried.max(other.retried),
            dead: self.dead.max(other.dead),
        }
    }
}

/// The counts of each queue, read off one snapshot of the tallies.
pub fn read(tallies: &Tallies) -> BTreeMap<String, Counts> {
    let mut by_queue: BTreeMap<String, Counts> = BTreeMap::new();
    for tally in &tallies.counters {
        let label = |name: &str| tally.labels.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let Some(queue) = label("queue") else { continue };
        let counts = by_queue.entry(queue.to_owned()).or_default();
        match tally.metric.as_str() {
            "retryq_attempts_ended_total" => {
                counts.processed = counts.processed.saturating_add(tally.value);
                if label("outcome").is_some_and(|outcome| RETRIED.contains(&outcome)) {
                    counts.retried = counts.retried.saturating_add(tally.value);
                }
            }
            "retryq_deaths_total" => counts.dead = counts.dead.saturating_add(tally.value),
            _ => {}
        }
    }
    by_queue
}

/// Which chart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// The last hour, by minute.
    Hour,
    /// The last day, by hour.
    Day,
}

impl Window {
    /// A slot's length in ms and how many slots the chart shows.
    pub fn slots(self) -> (u64, u64) {
        match self {
            Window::Hour => (MINUTE_MS, MINUTES),
            Window::Day => (HOUR_MS, HOURS),
        }
    }
}

#[derive(Debug, Default)]
struct Kept {
    /// The first reading's time: the charts count from it.
    since: Option<u64>,
    /// The last reading, by queue.
    last: BTreeMap<String, Counts>,
    /// Growth by minute (its start in ms), by queue: the last [`MINUTES`] only.
    minutes: BTreeMap<u64, BTreeMap<String, Counts>>,
    /// Growth by hour, likewise: the last [`HOURS`] only.
    hours: BTreeMap<u64, BTreeMap<String, Counts>>,
}

/// The readings so far, shared by the server's threads.
#[derive(Debug, Default)]
pub struct Activity(Mutex<Kept>);

/// One chart's slots: each slot's start (ms) and counts, oldest first.
pub type Slots = Vec<(u64, Counts)>;

impl Activity {
    /// Files the growth of every queue's counters since the highest reading so far under the
    /// minute and hour of `now`; the first reading only sets where counting starts.
    ///
    /// Readings are taken on several threads (the sampler's, each overview's), so one may
    /// arrive after a newer one: the counters only grow, so a lower count is such a stale
    /// reading and files nothing, and what is kept is each counter's highest — nothing is
    /// counted twice.
    pub fn sample(&self, tallies: &Tallies, now: u64) {
        let read = read(tallies);
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.since.is_none() {
            kept.since = Some(now);
            kept.last = read;
            return;
        }
        let (minute, hour) = (now - now % MINUTE_MS, now - now % HOUR_MS);
        for (queue, counts) in read {
            let before = kept.last.get(&queue).copied().unwrap_or_default();
            let grown = counts.since(before);
            if grown != Counts::default() {
                kept.minutes.entry(minute).or_default().entry(queue.clone()).or_default().add(grown);
                kept.hours.entry(hour).or_default().entry(queue.clone()).or_default().add(grown);
            }
            kept.last.insert(queue, counts.max(before));
        }
        // Only the slots a chart can show are kept.
        let newest_minute = kept.minutes.keys().next_back().copied().unwrap_or(minute);
        kept.minutes.retain(|&at, _| at + MINUTES * MINUTE_MS > newest_minute);
        let newest_hour = kept.hours.keys().next_back().copied().unwrap_or(hour);
        kept.hours.retain(|&at, _| at + HOURS * HOUR_MS > newest_hour);
    }

    /// Since when the charts count, if they have begun.
    pub fn since(&self) -> Option<u64> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).since
    }

    /// The chart of `window` ending with the slot of `now`, of one queue or (`None`) of all:
    /// every slot, empty ones as zeros.
    pub fn chart(&self, window: Window, now: u64, queue: Option<&str>) -> Slots {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (length, count) = window.slots();
        let slots = match window {
            Window::Hour => &kept.minutes,
            Window::Day => &kept.hours,
        };
        let last = now - now % length;
        (0..count)
            .rev()
            .filter_map(|back| last.checked_sub(back * length))
            .map(|at| {
                let mut counts = Counts::default();
                for (name, grown) in slots.get(&at).into_iter().flatten() {
                    if queue.is_none_or(|q| q == name) {
                        counts.add(*grown);
                    }
                }
                (at, counts)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use retryq::Tally;

    fn tally(metric: &str, queue: &str, label: Option<(&str, &str)>, value: u64) -> Tally {
        let mut labels = vec![("queue".to_owned(), queue.to_owned())];
        labels.extend(label.map(|(k, v)| (k.to_owned(), v.to_owned())));
        Tally { metric: metric.to_owned(), labels, value }
    }

    /// `ok` ok attempts, `failed` retryable ones and `dead` deaths in queue `a`, and one ok
    /// attempt per call in queue `b`.
    fn tallies(ok: u64, failed: u64, dead: u64, b: u64) -> Tallies {
        Tallies {
            counters: vec![
                tally("retryq_attempts_ended_total", "a", Some(("outcome", "ok")), ok),
                tally("retryq_attempts_ended_total", "a", Some(("outcome", "retryable")), failed),
                tally("retryq_deaths_total", "a", Some(("reason", "exhausted")), dead),
                tally("retryq_claims_total", "a", None, 1_000),
                tally("retryq_attempts_ended_total", "b", Some(("outcome", "ok")), b),
            ],
            histograms: Vec::new(),
        }
    }

    const T0: u64 = 1_000 * HOUR_MS;

    #[test]
    fn growth_is_filed_under_the_reading_s_minute_and_hour() {
        let activity = Activity::default();
        // The first reading is where counting starts: what came before is in no slot.
        activity.sample(&tallies(5, 5, 5, 5), T0 + 10);
        assert_eq!(activity.since(), Some(T0 + 10));
        activity.sample(&tallies(7, 6, 5, 5), T0 + 30_000);
        activity.sample(&tallies(8, 6, 6, 6), T0 + 61_000);
        let hour = activity.chart(Window::Hour, T0 + 61_000, Some("a"));
        assert_eq!(hour.len(), 60);
        assert_eq!(hour[59], (T0 + MINUTE_MS, Counts { processed: 1, retried: 0, dead: 1 }));
        assert_eq!(hour[58], (T0, Counts { processed: 3, retried: 1, dead: 0 }));
        assert!(hour[..58].iter().all(|(_, c)| *c == Counts::default()));
        let all = activity.chart(Window::Hour, T0 + 61_000, None);
        assert_eq!(all[59].1, Counts { processed: 2, retried: 0, dead: 1 });
        let day = activity.chart(Window::Day, T0 + 61_000, None);
        assert_eq!(day.len(), 24);
        assert_eq!(day[23], (T0, Counts { processed: 5, retried: 1, dead: 1 }));
        assert_eq!(activity.chart(Window::Day, T0, Some("b"))[23].1.processed, 1);
    }

    #[test]
    fn only_the_slots_a_chart_shows_are_kept() {
        let activity = Activity::default();
        activity.sample(&tallies(0, 0, 0, 0), T0);
        for minute in 1..=200 {
            activity.sample(&tallies(minute, 0, 0, 0), T0 + minute * MINUTE_MS);
        }
        let kept = activity.0.lock().expect("lock");
        assert_eq!((kept.minutes.len() as u64, kept.hours.len()), (MINUTES, 4));
        drop(kept);
        let hour = activity.chart(Window::Hour, T0 + 200 * MINUTE_MS, None);
        assert!(hour.iter().all(|(_, c)| c.processed == 1), "{hour:?}");
        // A day later, the day's chart has forgotten them.
        activity.sample(&tallies(201, 0, 0, 0), T0 + 30 * HOUR_MS);
        assert_eq!(activity.0.lock().expect("lock").hours.len(), 1);
    }

    #[test]
    fn a_stale_reading_counts_nothing_twice() {
        let activity = Activity::default();
        activity.sample(&tallies(5, 0, 0, 0), T0);
        activity.sample(&tallies(9, 0, 0, 0), T0 + 1);
        // Read before the one above, filed after it.
        activity.sample(&tallies(7, 0, 0, 0), T0 + 2);
        activity.sample(&tallies(10, 0, 0, 0), T0 + 3);
        assert_eq!(activity.chart(Window::Hour, T0, Some("a"))[59].1.processed, 5, "10 − 5");
    }
}
