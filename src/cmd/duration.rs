//! Duration flags (`--ttl 1h`, `--lease 30s`, `--timeout 2m`): a number with a unit, or a
//! bare number, which stays milliseconds so that every command line written before units
//! keeps its meaning.
//!
//! The queue counts time in whole milliseconds from 0 to 2^53−1 (SPEC's integers), so a
//! value finer than a millisecond (`1.5ms`), negative (`-1s`), past that bound or not a
//! duration at all (`10 parsecs`) is refused rather than rounded or wrapped: clap prints the
//! reason after the flag's name and the command exits 2 having changed nothing.

use std::time::Duration;

use retryq::MAX_INT;

/// Why a duration flag's value was refused. The value itself is shown beside it (by clap,
/// or by the list parser that names the item).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("empty; write 500ms, 30s, 2m, 1h30m, 2d, or a bare number of milliseconds")]
    Empty,
    #[error("negative; a duration is 0 or more")]
    Negative,
    #[error("not a whole number of milliseconds (the queue counts whole milliseconds)")]
    Fraction,
    #[error("too large; at most {} allowed", describe(*.max))]
    TooLarge { max: u64 },
    #[error("{ms} ms is too short; at least {} needed", describe(*.min))]
    TooSmall { ms: u64, min: u64 },
    #[error("not a duration ({reason}); write 500ms, 30s, 2m, 1h30m, 2d, or a bare number of milliseconds")]
    Unreadable { reason: String },
}

/// A bound in words: `2^53-1 ms` for the queue's largest integer, else milliseconds and,
/// when that reads better, the same in units (`3600000 ms (1h)`).
fn describe(ms: u64) -> String {
    if ms == MAX_INT {
        return "2^53-1 ms (the queue's largest integer)".to_owned();
    }
    if ms < 1000 {
        return format!("{ms} ms");
    }
    format!("{ms} ms ({})", humantime::format_duration(Duration::from_millis(ms)))
}

/// A duration in whole milliseconds, within 0 … 2^53−1.
pub fn parse_ms(text: &str) -> Result<u64, DurationError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    if text.starts_with('-') {
        return Err(DurationError::Negative);
    }
    let too_large = DurationError::TooLarge { max: MAX_INT };
    let ms = if text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<u64>().map_err(|_| too_large.clone())?
    } else {
        let duration = humantime::parse_duration(text).map_err(|e| unreadable(e, &too_large))?;
        if duration.subsec_nanos() % 1_000_000 != 0 {
            return Err(DurationError::Fraction);
        }
        u64::try_from(duration.as_millis()).map_err(|_| too_large.clone())?
    };
    if ms > MAX_INT { Err(too_large) } else { Ok(ms) }
}

/// humantime's refusal in this command line's words (its own lists every unit it knows,
/// months and years included, which a queue's flags need not advertise).
fn unreadable(error: humantime::DurationError, too_large: &DurationError) -> DurationError {
    use humantime::DurationError as H;
    let reason = match error {
        H::NumberOverflow => return too_large.clone(),
        H::Empty => return DurationError::Empty,
        H::UnknownUnit { unit, value, .. } if unit.is_empty() => format!("{value} has no unit"),
        H::UnknownUnit { unit, .. } => format!("unknown unit {unit:?}"),
        H::InvalidCharacter(at) => format!("unexpected character at byte {at}"),
        H::NumberExpected(at) => format!("expected a number at byte {at}"),
    };
    DurationError::Unreadable { reason }
}

/// A clap value parser for a duration flag whose milliseconds must lie in `min ..= max`
/// (`max` at most 2^53−1).
pub fn millis(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<u64, DurationError> + Clone + Send + Sync + 'static {
    move |text| match parse_ms(text)? {
        ms if ms < min => Err(DurationError::TooSmall { ms, min }),
        ms if ms > max => Err(DurationError::TooLarge { max }),
        ms => Ok(ms),
    }
}

/// A duration of at least 1 ms, up to 2^53−1 ms.
pub fn positive(text: &str) -> Result<u64, DurationError> {
    millis(1, MAX_INT)(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_numbers_stay_milliseconds_and_units_convert() {
        let cases = [
            ("0", 0),
            ("250", 250),
            ("9007199254740991", MAX_INT),
            ("500ms", 500),
            ("30s", 30_000),
            ("2m", 120_000),
            ("1h", 3_600_000),
            ("1h30m", 5_400_000),
            ("1h 30m", 5_400_000),
            ("1.5s", 1_500),
            ("2d", 172_800_000),
            (" 5s ", 5_000),
            ("1000us", 1),
        ];
        for (text, ms) in cases {
            assert_eq!(parse_ms(text), Ok(ms), "{text}");
        }
    }

    #[test]
    fn what_the_queue_cannot_hold_is_refused_with_the_reason() {
        let cases = [
            ("", DurationError::Empty),
            ("1.5ms", DurationError::Fraction),
            ("1us", DurationError::Fraction),
            ("-1s", DurationError::Negative),
            ("-5", DurationError::Negative),
            ("9007199254740992", DurationError::TooLarge { max: MAX_INT }),
            ("99999999999999999999999", DurationError::TooLarge { max: MAX_INT }),
            ("300000y", DurationError::TooLarge { max: MAX_INT }),
        ];
        for (text, error) in cases {
            assert_eq!(parse_ms(text), Err(error), "{text}");
        }
        for text in ["10 parsecs", "1.5", "soon", "1h30", "+5"] {
            assert!(
                matches!(parse_ms(text), Err(DurationError::Unreadable { .. })),
                "{text}: {:?}",
                parse_ms(text)
            );
        }
    }

    #[test]
    fn bounds_are_checked_and_said_in_units() {
        let lease = millis(1, MAX_INT);
        assert_eq!(lease("0"), Err(DurationError::TooSmall { ms: 0, min: 1 }));
        assert_eq!(lease("1ms"), Ok(1));
        let hour = millis(0, 3_600_000);
        assert_eq!(hour("1h"), Ok(3_600_000));
        assert_eq!(hour("61m"), Err(DurationError::TooLarge { max: 3_600_000 }));
        assert_eq!(
            DurationError::TooLarge { max: 3_600_000 }.to_string(),
            "too large; at most 3600000 ms (1h) allowed"
        );
    }
}
