//! Time flags (`--deadline`, `--not-before`): an instant, as RFC 3339
//! (`2026-12-31T00:00:00Z`, `2026-12-31T01:00:00.250+01:00`) or as Unix milliseconds
//! (`1798675200000`).
//!
//! Both forms, because both are what an operator has at hand: a script computes milliseconds
//! the way SPEC and the JSON outputs count them, a person copies a time from a log or a
//! calendar. The queue counts whole milliseconds from 0 to 2^53−1, so a fraction finer than a
//! millisecond (`…00.0005Z`) is refused rather than rounded — rounding would move a deadline
//! by a hair nobody asked for — and so is a time before 1970. RFC 3339 is parsed by the
//! `time` crate (humantime, which the durations use, reads only `Z` and `+00:00` offsets).
//!
//! A leap second (`2027-06-30T23:59:60Z`, RFC 3339's `time-second` of 60) reads as the last
//! millisecond of its minute, `23:59:59.999Z`: Unix time, which the queue counts in, has no
//! 61st second, and the instant just before the next minute is the one that keeps its order
//! with every time around it (a deadline of `…:60Z` is after one of `…:59Z` and before one of
//! the next minute's `…:00Z`). Its fraction, if any, is still held to whole milliseconds.
//!
//! A time in a message is shown in both forms, `1764633600000 (2025-12-02T00:00:00.000Z)`,
//! whichever form was typed.

use retryq::MAX_INT;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::view;

/// Why a time flag's value was refused. The value itself is shown beside it by clap.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    #[error("empty; {FORMS}")]
    Empty,
    #[error("before 1970; the queue counts Unix milliseconds from 0")]
    BeforeEpoch,
    #[error("finer than a millisecond; the queue counts whole milliseconds (…:00.123Z at most)")]
    Fraction,
    #[error("too large; at most 2^53-1 Unix milliseconds allowed")]
    TooLarge,
    #[error("{ms} is too early; at least {min} needed")]
    TooEarly { ms: u64, min: u64 },
    #[error("not a time ({reason}); {FORMS}")]
    Unreadable { reason: String },
}

/// The forms a time flag takes, for its refusals.
const FORMS: &str =
    "write RFC 3339 (2026-12-31T00:00:00Z, 2026-12-31T01:00:00.250+01:00) or Unix milliseconds";

/// A time in Unix milliseconds, within 0 … 2^53−1: RFC 3339 with an offset, or a whole
/// number of milliseconds.
pub fn parse_ms(text: &str) -> Result<u64, TimeError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(TimeError::Empty);
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return match text.parse::<u64>() {
            Ok(ms) if ms <= MAX_INT => Ok(ms),
            _ => Err(TimeError::TooLarge),
        };
    }
    if text.starts_with('-') && text[1..].bytes().all(|b| b.is_ascii_digit()) {
        return Err(TimeError::BeforeEpoch);
    }
    let at = OffsetDateTime::parse(text, &Rfc3339).map_err(|e| TimeError::Unreadable {
        reason: if leap_second(text) {
            "second 60 (a leap second) ends only the last minute of a month, in UTC".to_owned()
        } else {
            e.to_string()
        },
    })?;
    // The parser keeps nanoseconds and drops digits past the ninth: the text says whether
    // anything finer than a millisecond was written. It reads a leap second, whatever its
    // fraction, as `:59.999999999`: the last millisecond of the minute once cut to
    // milliseconds (see the module's doc), and no fraction of the text's.
    if (at.nanosecond() % 1_000_000 != 0 && !leap_second(text)) || sub_millisecond_digits(text) {
        return Err(TimeError::Fraction);
    }
    let ms = at.unix_timestamp_nanos() / 1_000_000;
    if ms < 0 {
        return Err(TimeError::BeforeEpoch);
    }
    match u64::try_from(ms) {
        Ok(ms) if ms <= MAX_INT => Ok(ms),
        _ => Err(TimeError::TooLarge),
    }
}

/// Whether an RFC 3339 `text` (already read as a time) names second 60 of its minute: its
/// `time-second` is the two digits after the `T`'s second colon.
fn leap_second(text: &str) -> bool {
    let Some(at) = text.find(['T', 't']) else { return false };
    text.get(at + 1..).and_then(|time| time.split(':').nth(2)).is_some_and(|second| second.starts_with("60"))
}

/// Whether the seconds' fraction of an RFC 3339 `text` has a non-zero digit past the third.
fn sub_millisecond_digits(text: &str) -> bool {
    let Some((_, after_point)) = text.split_once('.') else { return false };
    after_point.bytes().take_while(u8::is_ascii_digit).skip(3).any(|b| b != b'0')
}

/// A clap value parser for a time flag at or after `min` Unix milliseconds.
pub fn at_least(min: u64) -> impl Fn(&str) -> Result<u64, TimeError> + Clone + Send + Sync + 'static {
    move |text| match parse_ms(text)? {
        ms if ms < min => Err(TimeError::TooEarly { ms, min }),
        ms => Ok(ms),
    }
}

/// A time as messages show it: the milliseconds and the same instant in UTC,
/// `1764633600000 (2025-12-02T00:00:00.000Z)`.
pub fn show(ms: u64) -> String {
    view::stamp(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_3339_and_milliseconds_name_the_same_instant() {
        let cases = [
            ("1798675200000", 1_798_675_200_000),
            ("0", 0),
            ("9007199254740991", MAX_INT),
            ("2026-12-31T00:00:00Z", 1_798_675_200_000),
            ("2026-12-31T01:00:00+01:00", 1_798_675_200_000),
            ("2026-12-30T19:00:00-05:00", 1_798_675_200_000),
            ("2026-12-31T00:00:00.250Z", 1_798_675_200_250),
            ("2026-12-31T00:00:00.5Z", 1_798_675_200_500),
            ("2026-12-31T00:00:00.250000000Z", 1_798_675_200_250),
            ("2026-12-31t00:00:00z", 1_798_675_200_000),
            (" 2026-12-31T00:00:00Z ", 1_798_675_200_000),
            ("1970-01-01T00:00:00Z", 0),
            // A leap second is the last millisecond of its minute, in any offset.
            ("2027-06-30T23:59:60Z", 1_814_399_999_999),
            ("2027-06-30T23:59:60.000Z", 1_814_399_999_999),
            ("2027-07-01T01:59:60+02:00", 1_814_399_999_999),
            ("2027-06-30T23:59:59.999Z", 1_814_399_999_999),
            ("2027-07-01T00:00:00Z", 1_814_400_000_000),
        ];
        for (text, ms) in cases {
            assert_eq!(parse_ms(text), Ok(ms), "{text}");
        }
    }

    #[test]
    fn what_the_queue_cannot_hold_is_refused_not_rounded() {
        let cases = [
            ("", TimeError::Empty),
            ("2026-12-31T00:00:00.0005Z", TimeError::Fraction),
            ("2026-12-31T00:00:00.1234Z", TimeError::Fraction),
            ("2026-12-31T00:00:00.0000000001Z", TimeError::Fraction),
            ("2027-06-30T23:59:60.0001Z", TimeError::Fraction),
            ("1969-12-31T23:59:59.999Z", TimeError::BeforeEpoch),
            ("-5", TimeError::BeforeEpoch),
            ("9007199254740992", TimeError::TooLarge),
            ("99999999999999999999999", TimeError::TooLarge),
        ];
        for (text, error) in cases {
            assert_eq!(parse_ms(text), Err(error), "{text}");
        }
        for text in ["tomorrow", "2026-12-31", "2026-12-31T00:00:00", "2026-13-01T00:00:00Z", "1.5", "1h"] {
            assert!(
                matches!(parse_ms(text), Err(TimeError::Unreadable { .. })),
                "{text}: {:?}",
                parse_ms(text)
            );
        }
        // Second 60 anywhere but at the end of a month's last minute in UTC is no leap second.
        let Err(TimeError::Unreadable { reason }) = parse_ms("2027-06-15T10:20:60Z") else { panic!() };
        assert!(reason.contains("leap second"), "{reason}");
        assert!(
            TimeError::Unreadable { reason: "x".into() }.to_string().ends_with("or Unix milliseconds"),
            "the refusal names both forms"
        );
        assert_eq!(at_least(1)("0"), Err(TimeError::TooEarly { ms: 0, min: 1 }));
        assert_eq!(at_least(1)("1970-01-01T00:00:00.001Z"), Ok(1));
    }

    #[test]
    fn a_time_is_shown_both_ways() {
        assert_eq!(show(1_764_633_600_000), "1764633600000 (2025-12-02T00:00:00.000Z)");
    }
}
