//! Duration flags (`--ttl 1h`, `--lease 30s`, `--timeout 2m`): a number with a unit. A bare
//! number is refused, `0` alone excepted (it is 0 in every unit): `--ttl 5` read as 5 ms, as
//! it once was, expires a job before anyone can claim it when 5 s or 5 min was meant, and
//! nothing would say so. The refusal names the units to choose from.
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
    #[error("empty; write a number with a unit: 500ms, 30s, 2m, 1h30m, 2d")]
    Empty,
    /// A number without a unit (`5`, `1.5`, the `30` of `1h30`).
    #[error("{number} has no unit; write {number}ms, {number}s, {number}m, {number}h or {number}d")]
    NoUnit { number: String },
    #[error("negative; a duration is 0 or more")]
    Negative,
    #[error("not a whole number of milliseconds (the queue counts whole milliseconds)")]
    Fraction,
    #[error("too large; at most {} allowed", describe(*.max))]
    TooLarge { max: u64 },
    #[error("{ms} ms is too short; at least {} needed", describe(*.min))]
    TooSmall { ms: u64, min: u64 },
    #[error("not a duration ({reason}); write a number with a unit: 500ms, 30s, 2m, 1h30m, 2d")]
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

/// A duration in whole milliseconds, within 0 … 2^53−1, written with a unit (or `0`).
pub fn parse_ms(text: &str) -> Result<u64, DurationError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    if text.starts_with('-') {
        return Err(DurationError::Negative);
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return match text.bytes().all(|b| b == b'0') {
            true => Ok(0),
            false => Err(DurationError::NoUnit { number: text.to_owned() }),
        };
    }
    let too_large = DurationError::TooLarge { max: MAX_INT };
    // Whole milliseconds are read here: humantime counts in nanoseconds, and overflows on
    // milliseconds past about 584 years, well short of 2^53-1 ms.
    if let Some(digits) = text.strip_suffix("ms").map(str::trim_end)
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
    {
        return match digits.parse::<u64>() {
            Ok(ms) if ms <= MAX_INT => Ok(ms),
            _ => Err(too_large),
        };
    }
    let duration = humantime::parse_duration(text).map_err(|e| unreadable(text, e, &too_large))?;
    if duration.subsec_nanos() % 1_000_000 != 0 {
        return Err(DurationError::Fraction);
    }
    let ms = u64::try_from(duration.as_millis()).map_err(|_| too_large.clone())?;
    if ms > MAX_INT { Err(too_large) } else { Ok(ms) }
}

/// humantime's refusal of `text` in this command line's words (its own lists every unit it
/// knows, months and years included, which a queue's flags need not advertise).
fn unreadable(text: &str, error: humantime::DurationError, too_large: &DurationError) -> DurationError {
    use humantime::DurationError as H;
    let reason = match error {
        H::NumberOverflow => return too_large.clone(),
        H::Empty => return DurationError::Empty,
        H::UnknownUnit { start, unit, .. } if unit.is_empty() => {
            // The number is what runs up to where the unit should start: `1.5`, or the `30`
            // of `1h30`.
            let before = text.get(..start).unwrap_or(text);
            let from = before
                .char_indices()
                .rev()
                .take_while(|(_, c)| c.is_ascii_digit() || *c == '.')
                .last()
                .map_or(before.len(), |(at, _)| at);
            let number = before[from..].to_owned();
            return DurationError::NoUnit {
                number: if number.is_empty() { text.to_owned() } else { number },
            };
        }
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

/// A duration in units, for messages: `2h 30m`, `90ms`.
pub fn words(ms: u64) -> String {
    humantime::format_duration(Duration::from_millis(ms)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_convert_and_zero_needs_none() {
        let cases = [
            ("0", 0),
            ("000", 0),
            ("9007199254740991ms", MAX_INT),
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
            ("9007199254740992ms", DurationError::TooLarge { max: MAX_INT }),
            ("99999999999999999999999s", DurationError::TooLarge { max: MAX_INT }),
            ("300000y", DurationError::TooLarge { max: MAX_INT }),
        ];
        for (text, error) in cases {
            assert_eq!(parse_ms(text), Err(error), "{text}");
        }
        for text in ["10 parsecs", "soon", "+5"] {
            assert!(
                matches!(parse_ms(text), Err(DurationError::Unreadable { .. })),
                "{text}: {:?}",
                parse_ms(text)
            );
        }
    }

    #[test]
    fn a_bare_number_is_refused_naming_the_units() {
        let no_unit = |number: &str| DurationError::NoUnit { number: number.to_owned() };
        for (text, number) in [("5", "5"), ("250", "250"), ("1.5", "1.5"), ("1h30", "30"), ("1h 30", "30")] {
            assert_eq!(parse_ms(text), Err(no_unit(number)), "{text}");
        }
        assert_eq!(
            parse_ms("5").map_err(|e| e.to_string()),
            Err("5 has no unit; write 5ms, 5s, 5m, 5h or 5d".to_owned())
        );
        // Too many digits for any unit is still the same mistake.
        assert_eq!(parse_ms("99999999999999999999999"), Err(no_unit("99999999999999999999999")));
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
