//! Periodic jobs ([`Config::periodic`](crate::Config::periodic), `retryq work --every`): a
//! worker enqueues the job `NAME@<period start>` once per period, so that a job runs every
//! interval or at the times of a cron pattern.
//!
//! Nothing is coordinated between workers: each computes the same periods from the store's
//! clock and enqueues the same id with the same payload, and the store's idempotent enqueue
//! (SPEC 3.2) keeps the first and answers `existing` to the rest. So the periods are pure
//! functions of the time, the same on every host:
//!
//! - an interval's periods are aligned to the Unix epoch (`1h` starts on the hour, UTC; `1d`
//!   at midnight UTC), and an interval is a whole number of seconds, at least one;
//! - a cron pattern's periods run from one of its times to the next, in UTC;
//! - the id is the name, `@`, and the period's start in RFC 3339 UTC to the second:
//!   `report@2026-12-02T03:00:00Z`;
//! - the job's deadline is the period's end (the next period's start): a period's job runs
//!   within its period or not at all, and the runs of one name never pile up.
//!
//! The payload must be the same on every worker and across restarts: a worker whose
//! payload differs is answered `conflict`, which it logs as an error every period.

use std::cmp::Ordering;
use std::fmt;
use std::time::Duration;

use croner::errors::CronError;
use croner::parser::{CronParser, Seconds, Year};
use croner::{CivilDate, CivilDateTime, CivilTime, Cron, CronDateTime, Resolution, Weekday};
use retryq::{MAX_ATTEMPTS, MAX_ID_BYTES, MAX_INT, MAX_PAYLOAD_BYTES, NewJob};
use time::OffsetDateTime;

/// The bytes an id spends on `@` and the start (`@2026-12-02T03:00:00Z`).
const STAMP_BYTES: usize = 21;

/// The longest name of a periodic job: its id (the name, `@` and the start) must fit in the
/// store's 256 bytes.
pub const MAX_NAME_BYTES: usize = MAX_ID_BYTES - STAMP_BYTES;

/// The attempts a periodic job has unless told otherwise
/// ([`Periodic::with_max_attempts`]).
pub const DEFAULT_MAX_ATTEMPTS: u64 = 5;

/// One job enqueued once per period: a name, when its periods start ([`Every`]), its
/// payload and its attempts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Periodic {
    name: String,
    every: Every,
    payload: String,
    max_attempts: u64,
}

/// When a periodic job's periods start: every fixed interval from the Unix epoch, or at the
/// times of a cron pattern, in UTC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Every(Kind);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// In whole seconds, at least one.
    Interval(u64),
    /// The pattern as given, and as parsed.
    Cron(String, Box<Cron>),
}

/// One period of a periodic job: its id, and when it starts and ends, in Unix
/// milliseconds (`start` ≤ the time it was asked for < `end`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Period {
    /// `NAME@<start in RFC 3339 UTC>`.
    pub id: String,
    /// When the period starts.
    pub start: u64,
    /// When it ends, and the next starts: its job's deadline.
    pub end: u64,
}

/// Why a periodic job was refused, or has no period at a time.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PeriodicError {
    /// The name cannot stand before the `@` of an id.
    #[error("the name {name:?} {why}")]
    Name {
        /// The name given.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// The interval is not a whole number of seconds, at least one.
    #[error("an interval of {ms} ms: {why}")]
    Interval {
        /// The interval given, in milliseconds.
        ms: u128,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The cron pattern cannot be read.
    #[error("the cron pattern {pattern:?} cannot be read: {why}")]
    Cron {
        /// The pattern given.
        pattern: String,
        /// The parser's reason.
        why: String,
    },
    /// No period contains this time: the pattern has no time before or after it (it never
    /// fires, as `0 0 30 2 *`), or the period's start cannot be written in RFC 3339 (past
    /// the year 9999).
    #[error("{every} has no period at {}: {why}", rfc3339(*.at).unwrap_or_else(|| format!("{at} ms")))]
    NoPeriod {
        /// The schedule.
        every: String,
        /// The time asked for.
        at: u64,
        /// Why.
        why: String,
    },
    /// The payload is larger than a job's.
    #[error("the payload is {bytes} bytes; at most 1 MiB allowed")]
    Payload {
        /// Its size.
        bytes: usize,
    },
    /// The attempts are not in 1 … 2^31 − 1.
    #[error("max_attempts must be 1 to 2^31-1, not {0}")]
    MaxAttempts(u64),
}

impl Every {
    /// Periods of `interval`, aligned to the Unix epoch: a whole number of seconds, at
    /// least one (an id names its period's start to the second), at most 2^53 − 1 ms.
    pub fn interval(interval: Duration) -> Result<Every, PeriodicError> {
        let ms = interval.as_millis();
        let refuse = |why| Err(PeriodicError::Interval { ms, why });
        if interval < Duration::from_secs(1) {
            return refuse("at least 1s is needed: an id names its period's start to the second");
        }
        if interval.subsec_nanos() != 0 {
            return refuse("not a whole number of seconds: an id names its period's start to the second");
        }
        if ms > u128::from(MAX_INT) {
            return refuse("at most 2^53-1 ms allowed");
        }
        Ok(Every(Kind::Interval(interval.as_secs())))
    }

    /// Periods from one time of a cron `pattern` to the next, in UTC: five fields as in
    /// crontab(5) (minute, hour, day of month, month, day of week), or six with seconds
    /// first; `@daily` and the like are read too.
    pub fn cron(pattern: &str) -> Result<Every, PeriodicError> {
        let parser = CronParser::builder().seconds(Seconds::Optional).year(Year::Disallowed).build();
        let refuse = |why: String| PeriodicError::Cron { pattern: pattern.to_owned(), why };
        if pattern.contains(char::is_control) {
            return Err(refuse("it holds a control character".to_owned()));
        }
        let cron = parser.parse(pattern).map_err(|e| refuse(e.to_string()))?;
        Ok(Every(Kind::Cron(pattern.trim().to_owned(), Box::new(cron))))
    }

    /// The period that holds `at` (Unix milliseconds): its start (at or before `at`) and its
    /// end (after it), without an id.
    pub fn bounds(&self, at: u64) -> Result<(u64, u64), PeriodicError> {
        let no_period = |why: String| PeriodicError::NoPeriod { every: self.to_string(), at, why };
        match &self.0 {
            Kind::Interval(seconds) => {
                let ms = seconds * 1000;
                let start = at - at % ms;
                Ok((start, start.saturating_add(ms).min(MAX_INT)))
            }
            Kind::Cron(_, cron) => {
                let now = Utc::at_ms(at).ok_or_else(|| no_period("past the year 9999".to_owned()))?;
                let start = cron.find_previous_occurrence(&now, true).map_err(|e| no_period(cron_why(e)))?;
                let end = cron.find_next_occurrence(&now, false).map_err(|e| no_period(cron_why(e)))?;
                Ok((start.ms(), end.ms()))
            }
        }
    }
}

/// A search's failure, in an operator's words.
fn cron_why(e: CronError) -> String {
    match e {
        CronError::TimeSearchLimitExceeded => "the pattern matches no date (as February 30th)".to_owned(),
        other => other.to_string(),
    }
}

impl fmt::Display for Every {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::Interval(seconds) => {
                let (n, unit) = [(86_400, "d"), (3_600, "h"), (60, "m")]
                    .into_iter()
                    .find(|(unit, _)| seconds % unit == 0)
                    .map_or((*seconds, "s"), |(unit, name)| (seconds / unit, name));
                write!(f, "{n}{unit}")
            }
            Kind::Cron(pattern, _) => write!(f, "cron:{pattern}"),
        }
    }
}

impl Periodic {
    /// The job `name` once per period of `every`, with an empty payload and
    /// [`DEFAULT_MAX_ATTEMPTS`]. The name is 1 to [`MAX_NAME_BYTES`] bytes without `@` (it
    /// ends where the start begins) or control characters.
    pub fn new(name: impl Into<String>, every: Every) -> Result<Periodic, PeriodicError> {
        let name = name.into();
        let why = if name.is_empty() {
            Some("is empty".to_owned())
        } else if name.contains('@') {
            Some("holds '@', which separates the name from the period's start in its ids".to_owned())
        } else if name.contains(char::is_control) {
            Some("holds a control character (NUL, a newline…)".to_owned())
        } else if name.len() > MAX_NAME_BYTES {
            Some(format!(
                "is {} bytes; at most {MAX_NAME_BYTES}, so that NAME@<start> fits in an id's 256",
                name.len()
            ))
        } else {
            None
        };
        match why {
            Some(why) => Err(PeriodicError::Name { name, why }),
            None => Ok(Periodic { name, every, payload: String::new(), max_attempts: DEFAULT_MAX_ATTEMPTS }),
        }
    }

    /// The payload of every period's job (at most 1 MiB). Every worker must give the same.
    pub fn with_payload(self, payload: impl Into<String>) -> Result<Periodic, PeriodicError> {
        let payload = payload.into();
        if payload.len() > MAX_PAYLOAD_BYTES {
            return Err(PeriodicError::Payload { bytes: payload.len() });
        }
        Ok(Periodic { payload, ..self })
    }

    /// The attempts of every period's job: 1 … 2^31 − 1.
    pub fn with_max_attempts(self, max_attempts: u64) -> Result<Periodic, PeriodicError> {
        if !(1..=MAX_ATTEMPTS).contains(&max_attempts) {
            return Err(PeriodicError::MaxAttempts(max_attempts));
        }
        Ok(Periodic { max_attempts, ..self })
    }

    /// The name, before the `@` of each id.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// When its periods start.
    pub fn every(&self) -> &Every {
        &self.every
    }

    /// The payload of each period's job.
    pub fn payload(&self) -> &str {
        &self.payload
    }

    /// The attempts of each period's job.
    pub fn max_attempts(&self) -> u64 {
        self.max_attempts
    }

    /// The period that holds `at` (Unix milliseconds), with its job's id.
    pub fn period_at(&self, at: u64) -> Result<Period, PeriodicError> {
        let (start, end) = self.every.bounds(at)?;
        let stamp = rfc3339(start).ok_or_else(|| PeriodicError::NoPeriod {
            every: self.every.to_string(),
            at,
            why: "its start is past the year 9999".to_owned(),
        })?;
        Ok(Period { id: format!("{}@{stamp}", self.name), start, end })
    }

    /// The enqueue of `period`'s job at `now` into `queue`: due at once (a period's job is
    /// enqueued once its period has begun, and SPEC 3.2 takes no `not_before` before `now`),
    /// with the period's end as its deadline.
    pub(crate) fn job<'a>(&'a self, period: &'a Period, now: u64, queue: &'a str) -> NewJob<'a> {
        NewJob {
            id: &period.id,
            payload: &self.payload,
            max_attempts: self.max_attempts,
            deadline: period.end,
            now,
            queue: Some(queue),
            ..NewJob::default()
        }
    }
}

/// `ms` (whole seconds of it) in RFC 3339 UTC, `2026-12-02T03:00:00Z`; `None` past the year
/// 9999, which RFC 3339 cannot write.
fn rfc3339(ms: u64) -> Option<String> {
    let t = Utc::at_ms(ms)?.0;
    (t.year() <= 9999).then(|| {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        )
    })
}

/// A time in UTC, to the second, as croner searches it: no time zone, so no gap and no
/// repeated hour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Utc(OffsetDateTime);

impl Utc {
    /// `ms` since the Unix epoch, cut to its second; `None` past what `time` holds.
    fn at_ms(ms: u64) -> Option<Utc> {
        let seconds = i64::try_from(ms / 1000).ok()?;
        OffsetDateTime::from_unix_timestamp(seconds).ok().map(Utc)
    }

    /// Milliseconds since the Unix epoch (croner's answers are never before 1970 here: it
    /// searches from a time after it, and back no further than a start that is).
    fn ms(self) -> u64 {
        u64::try_from(self.0.unix_timestamp()).unwrap_or(0).saturating_mul(1000)
    }
}

impl CronDateTime for Utc {
    fn to_civil(&self) -> CivilDateTime {
        let t = self.0;
        // `time` keeps every part in range.
        CivilDateTime::new(
            CivilDate::from_parts_unchecked(t.year(), u32::from(u8::from(t.month())), u32::from(t.day())),
            CivilTime::from_parts_unchecked(
                u32::from(t.hour()),
                u32::from(t.minute()),
                u32::from(t.second()),
            ),
        )
    }

    fn civil_weekday(&self) -> Weekday {
        Weekday::from_days_from_sunday(u32::from(self.0.weekday().number_days_from_sunday()))
    }

    fn resolve_civil(&self, civil: CivilDateTime) -> Result<Resolution<Self>, CronError> {
        let month = u8::try_from(civil.month())
            .ok()
            .and_then(|m| time::Month::try_from(m).ok())
            .ok_or(CronError::InvalidDate)?;
        let day = u8::try_from(civil.day()).map_err(|_| CronError::InvalidDate)?;
        let date =
            time::Date::from_calendar_date(civil.year(), month, day).map_err(|_| CronError::InvalidDate)?;
        let time = civil.time();
        let (h, m, s) = (time.hour(), time.minute(), time.second());
        let hms = |part: u32| u8::try_from(part).map_err(|_| CronError::InvalidTime);
        let at = date.with_hms(hms(h)?, hms(m)?, hms(s)?).map_err(|_| CronError::InvalidTime)?;
        Ok(Resolution::Single(Utc(at.assume_utc())))
    }

    fn checked_add_seconds(&self, seconds: i64) -> Option<Self> {
        self.0.checked_add(time::Duration::seconds(seconds)).map(Utc)
    }

    fn cmp_instant(&self, other: &Self) -> Ordering {
        self.0.cmp(&other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `2026-12-02T03:00:00Z` and the like, in Unix milliseconds.
    fn ms(rfc3339: &str) -> u64 {
        let t =
            OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339).expect(rfc3339);
        u64::try_from(t.unix_timestamp_nanos() / 1_000_000).expect("after 1970")
    }

    fn every(seconds: u64) -> Every {
        Every::interval(Duration::from_secs(seconds)).expect("interval")
    }

    fn periodic(name: &str, every: Every) -> Periodic {
        Periodic::new(name, every).expect("periodic")
    }

    #[test]
    fn an_interval_period_is_aligned_to_the_epoch() {
        let hourly = every(3600);
        let at = ms("2026-12-02T03:17:45.250Z");
        assert_eq!(hourly.bounds(at), Ok((ms("2026-12-02T03:00:00Z"), ms("2026-12-02T04:00:00Z"))));
        // A start is in its own period; the millisecond before it is in the one before.
        let start = ms("2026-12-02T03:00:00Z");
        assert_eq!(hourly.bounds(start), Ok((start, start + 3_600_000)));
        assert_eq!(hourly.bounds(start - 1), Ok((start - 3_600_000, start)));
        // Seconds.
        assert_eq!(every(1).bounds(1_500), Ok((1_000, 2_000)));
        assert_eq!(every(1).bounds(0), Ok((0, 1_000)));
        // Seven minutes count from the epoch, not from the hour.
        let seven = every(420);
        assert_eq!(seven.bounds(ms("2026-12-02T04:00:00Z")).map(|b| b.0), Ok(ms("2026-12-02T03:56:00Z")));
        // A day starts at midnight UTC; a week on a Thursday, as 1970-01-01 was.
        assert_eq!(every(86_400).bounds(at).map(|b| b.0), Ok(ms("2026-12-02T00:00:00Z")));
        assert_eq!(every(7 * 86_400).bounds(at).map(|b| b.0), Ok(ms("2026-11-26T00:00:00Z")));
    }

    #[test]
    fn each_next_period_starts_where_the_last_ended() {
        for every in [every(1), every(60), every(420), Every::cron("*/5 * * * *").expect("cron")] {
            let mut at = ms("2026-12-31T23:00:00Z");
            let mut starts = Vec::new();
            for _ in 0..20 {
                let (start, end) = every.bounds(at).expect("bounds");
                assert!(start <= at && at < end, "{every}: {start} ≤ {at} < {end}");
                if let Some(&last) = starts.last() {
                    assert!(start > last, "{every}");
                }
                starts.push(start);
                assert_eq!(every.bounds(end).map(|b| b.0), Ok(end), "{every}: the next starts at the end");
                at = end;
            }
        }
    }

    #[test]
    fn a_cron_period_runs_from_one_time_of_the_pattern_to_the_next_in_utc() {
        let nightly = Every::cron("0 3 * * *").expect("cron");
        let today = ms("2026-12-02T03:00:00Z");
        let tomorrow = ms("2026-12-03T03:00:00Z");
        assert_eq!(nightly.bounds(ms("2026-12-02T10:00:00Z")), Ok((today, tomorrow)));
        assert_eq!(nightly.bounds(today), Ok((today, tomorrow)), "its own time starts a period");
        assert_eq!(nightly.bounds(today + 999), Ok((today, tomorrow)), "within the second");
        assert_eq!(nightly.bounds(today - 1), Ok((ms("2026-12-01T03:00:00Z"), today)));
        // 0 and 7 are Sunday; 2026-12-06 is one.
        let sunday = ms("2026-12-06T00:00:00Z");
        for pattern in ["0 0 * * 0", "0 0 * * 7", "0 0 * * SUN", "@weekly"] {
            let cron = Every::cron(pattern).expect(pattern);
            assert_eq!(
                cron.bounds(ms("2026-12-09T12:00:00Z")),
                Ok((sunday, ms("2026-12-13T00:00:00Z"))),
                "{pattern}"
            );
        }
        // A day of the month and a day of the week both given: either matches (crontab(5)).
        let either = Every::cron("0 0 1 * MON").expect("cron");
        assert_eq!(
            either.bounds(ms("2026-12-02T12:00:00Z")),
            Ok((ms("2026-12-01T00:00:00Z"), ms("2026-12-07T00:00:00Z")))
        );
        // Seconds first, when six fields are given.
        let ticks = Every::cron("*/10 * * * * *").expect("cron");
        assert_eq!(
            ticks.bounds(ms("2026-12-02T03:00:25.500Z")),
            Ok((ms("2026-12-02T03:00:20Z"), ms("2026-12-02T03:00:30Z")))
        );
        // Leap days.
        let leap = Every::cron("0 0 29 2 *").expect("cron");
        assert_eq!(
            leap.bounds(ms("2026-12-02T00:00:00Z")),
            Ok((ms("2024-02-29T00:00:00Z"), ms("2028-02-29T00:00:00Z")))
        );
    }

    #[test]
    fn the_id_is_the_name_and_the_start_in_rfc3339_utc() {
        let p = periodic("report", Every::cron("0 3 * * *").expect("cron"));
        let period = p.period_at(ms("2026-12-02T10:11:12.131Z")).expect("period");
        assert_eq!(period.id, "report@2026-12-02T03:00:00Z");
        let tick = periodic("tick", every(1));
        assert_eq!(tick.period_at(1_999).expect("period").id, "tick@1970-01-01T00:00:01Z");
        assert_eq!(
            tick.period_at(ms("2024-02-29T23:59:59.999Z")).expect("period").id,
            "tick@2024-02-29T23:59:59Z"
        );
        let last = ms("9999-12-31T23:59:59Z");
        assert_eq!(tick.period_at(last).expect("period").id, "tick@9999-12-31T23:59:59Z");
        assert!(matches!(tick.period_at(last + 1_000), Err(PeriodicError::NoPeriod { .. })));
        assert!(matches!(tick.period_at(MAX_INT), Err(PeriodicError::NoPeriod { .. })));
        // The longest name fits in an id.
        let long = periodic(&"n".repeat(MAX_NAME_BYTES), every(1));
        assert_eq!(long.period_at(0).expect("period").id.len(), MAX_ID_BYTES);
    }

    #[test]
    fn the_same_time_gives_the_same_job_on_every_worker() {
        let a = periodic("tick", every(5)).with_payload("{}").expect("payload");
        let b = a.clone();
        let (pa, pb) = (a.period_at(12_345).expect("a"), b.period_at(14_999).expect("b"));
        assert_eq!(pa, pb);
        let (ja, jb) = (a.job(&pa, 12_345, "default"), b.job(&pb, 14_999, "default"));
        assert_eq!(
            (ja.id, ja.payload, ja.deadline, ja.max_attempts),
            (jb.id, jb.payload, jb.deadline, jb.max_attempts)
        );
        assert_eq!((ja.deadline, ja.not_before, ja.queue), (15_000, None, Some("default")));
        assert_eq!(ja.max_attempts, DEFAULT_MAX_ATTEMPTS);
    }

    #[test]
    fn a_name_must_fit_before_the_at_of_an_id() {
        for (name, says) in [
            ("", "is empty"),
            ("a@b", "'@'"),
            ("a\0b", "control"),
            ("a\nb", "control"),
            (&"n".repeat(MAX_NAME_BYTES + 1), "236 bytes"),
        ] {
            let e = Periodic::new(name, every(1)).expect_err(name);
            assert!(matches!(e, PeriodicError::Name { .. }) && e.to_string().contains(says), "{name:?}: {e}");
        }
        assert!(Periodic::new("nightly report (eu)", every(1)).is_ok());
    }

    #[test]
    fn an_interval_is_whole_seconds_and_a_pattern_must_read() {
        for bad in [Duration::ZERO, Duration::from_millis(999), Duration::from_millis(1_500)] {
            assert!(matches!(Every::interval(bad), Err(PeriodicError::Interval { .. })), "{bad:?}");
        }
        assert!(Every::interval(Duration::from_millis(MAX_INT + 1)).is_err());
        for (seconds, says) in [(90, "90s"), (120, "2m"), (5_400, "90m"), (7_200, "2h")] {
            assert_eq!(Every::interval(Duration::from_secs(seconds)).expect("interval").to_string(), says);
        }
        assert_eq!(every(86_400).to_string(), "1d");
        for bad in ["", "* * *", "61 * * * *", "0 3 * * * * *", "0 0 * * 8", "x", "0 3 *\n* *"] {
            assert!(matches!(Every::cron(bad), Err(PeriodicError::Cron { .. })), "{bad:?}");
        }
        // Read, but never due: no period holds any time.
        let never = Every::cron("0 0 30 2 *").expect("read");
        let e = never.bounds(ms("2026-12-02T00:00:00Z")).expect_err("February 30th");
        assert_eq!(
            e.to_string(),
            "cron:0 0 30 2 * has no period at 2026-12-02T00:00:00Z: the pattern matches no date (as February 30th)"
        );
        assert_eq!(Every::cron(" 0 3 * * * ").expect("cron").to_string(), "cron:0 3 * * *");
    }

    #[test]
    fn payload_and_attempts_are_bounded_as_an_enqueue_bounds_them() {
        let p = periodic("a", every(1));
        assert!(p.clone().with_payload("x".repeat(MAX_PAYLOAD_BYTES)).is_ok());
        assert_eq!(
            p.clone().with_payload("x".repeat(MAX_PAYLOAD_BYTES + 1)),
            Err(PeriodicError::Payload { bytes: MAX_PAYLOAD_BYTES + 1 })
        );
        assert_eq!(p.clone().with_max_attempts(0), Err(PeriodicError::MaxAttempts(0)));
        assert!(p.clone().with_max_attempts(MAX_ATTEMPTS + 1).is_err());
        assert_eq!(p.with_max_attempts(MAX_ATTEMPTS).map(|p| p.max_attempts()), Ok(MAX_ATTEMPTS));
    }
}
