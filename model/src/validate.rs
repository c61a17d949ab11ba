//! The argument checks of SPEC sections 3 and 5 that survive parsing.
//!
//! A parsed [`crate::Op`] carries any `u64` and any `f64`, so the executor decides ranges: every
//! integer at most 2^53 − 1, names of 1–256 bytes, payloads of at most 1 MiB, budgets in
//! 1 … 2^31 − 1, deadlines after `now`, a jitter in [0, 1]. Each failure is `invalid_input`
//! with a detail naming the field; the wording is not part of the contract.
//!
//! Layer: the SPEC's vocabulary, the bottom, using only [`crate::response`]'s failures. It may
//! not reach up: the argument checks are the contract's, shared by whoever executes an
//! operation, not the store's own.

use crate::{Failure, MAX_INT};

/// The largest `max_attempts` and `add_attempts`: 2^31 − 1.
pub const MAX_ATTEMPTS: u64 = (1 << 31) - 1;
/// The longest `id` or `worker`, in bytes of UTF-8.
pub const MAX_NAME_BYTES: usize = 256;
/// The longest `payload`, in bytes of UTF-8: 1 MiB.
pub const MAX_PAYLOAD_BYTES: usize = 1 << 20;

fn invalid(field: &str, why: impl std::fmt::Display) -> Failure {
    Failure::InvalidInput { detail: format!("{field}: {why}") }
}

/// Any integer field: 0 … 2^53 − 1.
pub fn int(field: &str, value: u64) -> Result<u64, Failure> {
    if value > MAX_INT { Err(invalid(field, format!("{value} is above 2^53-1"))) } else { Ok(value) }
}

/// An `id` or a `worker`: 1–256 bytes, no NUL (SPEC 6.21).
pub fn name(field: &str, value: &str) -> Result<(), Failure> {
    match value.len() {
        0 => Err(invalid(field, "must not be empty")),
        _ if value.contains('\0') => Err(invalid(field, "must not contain NUL")),
        n if n > MAX_NAME_BYTES => Err(invalid(field, format!("is {n} bytes, above {MAX_NAME_BYTES}"))),
        _ => Ok(()),
    }
}

/// A `payload`: at most 1 MiB.
pub fn payload(value: &str) -> Result<(), Failure> {
    match value.len() {
        n if n > MAX_PAYLOAD_BYTES => Err(invalid("payload", format!("is {n} bytes, above 1 MiB"))),
        _ => Ok(()),
    }
}

/// `max_attempts` or `add_attempts`: 1 … 2^31 − 1.
pub fn budget(field: &str, value: u64) -> Result<u64, Failure> {
    if (1..=MAX_ATTEMPTS).contains(&value) {
        Ok(value)
    } else {
        Err(invalid(field, format!("{value} is outside 1 … 2^31-1")))
    }
}

/// A new `deadline`: in range and strictly after `now`.
pub fn deadline(value: u64, now: u64) -> Result<u64, Failure> {
    int("deadline", value)?;
    if value > now { Ok(value) } else { Err(invalid("deadline", format!("{value} is not after now {now}"))) }
}

/// An enqueue's `not_before`: in range and within `now` … `deadline − 1` (SPEC 3.2, 5.2), so
/// that a scheduled job is due before its deadline (SPEC 4.6). Checked with the other
/// arguments, also for an id that exists (SPEC 6.22).
pub fn not_before(value: u64, now: u64, deadline: u64) -> Result<u64, Failure> {
    int("not_before", value)?;
    if value < now {
        Err(invalid("not_before", format!("{value} is before now {now}")))
    } else if value >= deadline {
        Err(invalid("not_before", format!("{value} is not before the deadline {deadline}")))
    } else {
        Ok(value)
    }
}

/// A job's own `base_ms` or `cap_ms` in `enqueue`, if given: 0 … 2^53 − 1 (SPEC 3.2).
pub fn own_setting(field: &str, value: Option<u64>) -> Result<Option<u64>, Failure> {
    value.map(|v| int(field, v)).transpose()
}

/// An `attempt`: 1 … 2^53 − 1.
pub fn attempt(value: u64) -> Result<u64, Failure> {
    int("attempt", value)?;
    if value >= 1 { Ok(value) } else { Err(invalid("attempt", "must be at least 1")) }
}

/// `lease_ms`: 1 … 2^53 − 1.
pub fn lease_ms(value: u64) -> Result<u64, Failure> {
    int("lease_ms", value)?;
    if value >= 1 { Ok(value) } else { Err(invalid("lease_ms", "must be at least 1")) }
}

/// `config`'s `reap_limit`: 1 … 2^53 − 1 (SPEC 3.11).
pub fn reap_limit(value: u64) -> Result<u64, Failure> {
    int("reap_limit", value)?;
    if value >= 1 { Ok(value) } else { Err(invalid("reap_limit", "must be at least 1")) }
}

/// The longest queue name, in bytes of UTF-8 (SPEC 1.6).
pub const MAX_QUEUE_BYTES: usize = 64;
/// The most queues one claim serves (SPEC 3.3).
pub const MAX_QUEUES: usize = 64;
/// The largest `priority` (SPEC 1.6): 0 is the most urgent.
pub const MAX_PRIORITY: u64 = 9;

/// A queue name: 1–64 bytes, no NUL (SPEC 1.6, 6.21).
pub fn queue(field: &str, value: &str) -> Result<(), Failure> {
    match value.len() {
        0 => Err(invalid(field, "a queue name must not be empty")),
        _ if value.contains('\0') => Err(invalid(field, "a queue name must not contain NUL")),
        n if n > MAX_QUEUE_BYTES => Err(invalid(field, format!("a queue name of {n} bytes is above 64"))),
        _ => Ok(()),
    }
}

/// The longest job kind (SPEC 1.1).
pub const MAX_KIND_BYTES: usize = 64;

/// An enqueue's `kind`: 0 … 64 bytes, no NUL (SPEC 1.1, 6.44).
pub fn kind(value: &str) -> Result<(), Failure> {
    match value.len() {
        _ if value.contains('\0') => Err(invalid("kind", "must not contain NUL")),
        n if n > MAX_KIND_BYTES => Err(invalid("kind", format!("is {n} bytes, above 64"))),
        _ => Ok(()),
    }
}

/// A claim's `queues`: 1–64 valid names, none twice (SPEC 3.3, 5.2).
pub fn queues(value: &[String]) -> Result<(), Failure> {
    if value.is_empty() || value.len() > MAX_QUEUES {
        return Err(invalid("queues", format!("{} names, not 1 … 64", value.len())));
    }
    for (i, name) in value.iter().enumerate() {
        queue("queues", name)?;
        if value[..i].contains(name) {
            return Err(invalid("queues", format!("{name:?} is named twice")));
        }
    }
    Ok(())
}

/// An enqueue's `priority`: 0 … 9 (SPEC 1.6).
pub fn priority(value: u64) -> Result<u64, Failure> {
    if value <= MAX_PRIORITY {
        Ok(value)
    } else {
        Err(invalid("priority", format!("{value} is outside 0 … 9")))
    }
}

/// `before` of `prune` and `forget`: in range and at most `now` (SPEC 3.14, 3.15).
pub fn before(value: u64, now: u64) -> Result<u64, Failure> {
    int("before", value)?;
    if value <= now { Ok(value) } else { Err(invalid("before", format!("{value} is after now {now}"))) }
}

/// A `jitter` ratio in [0, 1] (NaN is outside).
pub fn ratio(value: f64) -> Result<f64, Failure> {
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(invalid("jitter", format!("{value} is outside [0, 1]")))
    }
}

/// The `jitter` of `complete` and `run_once`: checked whenever present, required only when the
/// outcome is `retryable`. An absent jitter is never used, so any ratio stands in for it.
pub fn jitter(value: Option<f64>, retryable: bool) -> Result<f64, Failure> {
    match value {
        Some(j) => ratio(j),
        None if retryable => Err(invalid("jitter", "is required for outcome retryable")),
        None => Ok(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    trait Detail {
        fn unwrap_err_detail(self) -> String;
    }

    impl<T: std::fmt::Debug> Detail for Result<T, Failure> {
        fn unwrap_err_detail(self) -> String {
            match self {
                Err(Failure::InvalidInput { detail }) => detail,
                other => panic!("expected invalid_input, got {other:?}"),
            }
        }
    }

    #[test]
    fn ranges() {
        assert!(int("now", MAX_INT).is_ok());
        assert!(int("now", MAX_INT + 1).is_err());
        assert!(name("id", "").is_err());
        assert!(name("id", "a\0").is_err());
        assert!(name("id", &"x".repeat(256)).is_ok());
        assert!(name("id", &"x".repeat(257)).is_err());
        assert!(name("id", &"é".repeat(129)).is_err(), "bytes, not characters");
        assert!(payload(&"x".repeat(1 << 20)).is_ok());
        assert!(payload(&"x".repeat((1 << 20) + 1)).is_err());
        assert!(budget("max_attempts", 0).is_err());
        assert!(budget("max_attempts", MAX_ATTEMPTS).is_ok());
        assert!(budget("max_attempts", MAX_ATTEMPTS + 1).is_err());
        assert!(deadline(5, 5).is_err());
        assert!(deadline(6, 5).is_ok());
        assert!(attempt(0).is_err());
        assert!(not_before(5, 5, 6).is_ok(), "now itself");
        assert!(not_before(4, 5, 9).unwrap_err_detail().starts_with("not_before:"));
        assert!(not_before(9, 5, 9).unwrap_err_detail().starts_with("not_before:"), "the deadline itself");
        assert!(not_before(MAX_INT + 1, 5, MAX_INT).unwrap_err_detail().starts_with("not_before:"));
        assert_eq!(own_setting("cap_ms", None), Ok(None));
        assert_eq!(own_setting("cap_ms", Some(0)), Ok(Some(0)));
        assert!(own_setting("cap_ms", Some(MAX_INT + 1)).unwrap_err_detail().starts_with("cap_ms:"));
        assert!(lease_ms(0).is_err());
        assert!(ratio(f64::NAN).is_err());
        assert!(ratio(-0.0).is_ok());
        assert!(ratio(1.0000001).is_err());
        assert!(jitter(None, true).is_err());
        assert!(jitter(None, false).is_ok());
        assert!(jitter(Some(2.0), false).is_err(), "checked whenever present");
    }
}
