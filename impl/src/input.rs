//! The ranges SPEC section 3 gives every argument, checked before anything is looked up.

use crate::error::{Error, Result};

/// The numbers are `retryq-core`'s, shared with the calling side, the worker and the
/// benchmarks; the checks below, which refuse with the queue's own error, stay here.
pub use retryq_core::{MAX_ATTEMPTS, MAX_ID_BYTES, MAX_INT, MAX_PAYLOAD_BYTES};

/// An integer field in 0 … 2^53 − 1.
pub(crate) fn int(field: &'static str, value: u64) -> Result<u64> {
    if value > MAX_INT {
        return Err(Error::invalid(field, format!("{value} is above 2^53-1")));
    }
    Ok(value)
}

/// An id or a worker name: 1 … 256 bytes, no NUL (SPEC 5.2, 6.21: a NUL cannot travel in a
/// command line or an environment variable, so such a job could never be named by an operator
/// nor run by `--exec`).
pub(crate) fn name<'a>(field: &'static str, value: &'a str) -> Result<&'a str> {
    match value.len() {
        0 => Err(Error::invalid(field, "must not be empty")),
        _ if value.contains('\0') => Err(Error::invalid(field, "must not contain NUL (U+0000)")),
        n if n > MAX_ID_BYTES => {
            Err(Error::invalid(field, format!("is {n} bytes, at most {MAX_ID_BYTES} allowed")))
        }
        _ => Ok(value),
    }
}

/// The longest queue name (SPEC 1.6).
pub const MAX_QUEUE_BYTES: usize = 64;
/// The most queues one claim serves (SPEC 3.3).
pub const MAX_QUEUES: usize = 64;
/// The largest priority: 0 is the most urgent (SPEC 1.6).
pub const MAX_PRIORITY: u64 = 9;

/// A queue name: 1 … 64 bytes, no NUL (SPEC 1.6, 6.21).
pub(crate) fn queue<'a>(field: &'static str, value: &'a str) -> Result<&'a str> {
    match value.len() {
        0 => Err(Error::invalid(field, "a queue name must not be empty")),
        _ if value.contains('\0') => Err(Error::invalid(field, "a queue name must not contain NUL (U+0000)")),
        n if n > MAX_QUEUE_BYTES => Err(Error::invalid(
            field,
            format!("a queue name is {n} bytes, at most {MAX_QUEUE_BYTES} allowed"),
        )),
        _ => Ok(value),
    }
}

/// The queues a claim serves: 1 … 64 names, each a queue name, none twice (SPEC 3.3).
pub(crate) fn queues<'a, 'b>(value: &'b [&'a str]) -> Result<&'b [&'a str]> {
    if value.is_empty() {
        return Err(Error::invalid("queues", "must name at least one queue"));
    }
    if value.len() > MAX_QUEUES {
        return Err(Error::invalid(
            "queues",
            format!("names {} queues, at most {MAX_QUEUES} allowed", value.len()),
        ));
    }
    for (i, name) in value.iter().enumerate() {
        queue("queues", name)?;
        if value[..i].contains(name) {
            return Err(Error::invalid("queues", format!("names {name:?} twice")));
        }
    }
    Ok(value)
}

/// A priority: 0 … 9 (SPEC 1.6).
pub(crate) fn priority(value: u64) -> Result<u8> {
    match u8::try_from(value) {
        Ok(p) if value <= MAX_PRIORITY => Ok(p),
        _ => Err(Error::invalid("priority", format!("{value} is outside 0 … {MAX_PRIORITY}"))),
    }
}

/// A prune's or a forget's bound: `before` ≤ `now` (SPEC 3.14, 3.15).
pub(crate) fn before(before: u64, now: u64) -> Result<u64> {
    int("before", before)?;
    int("now", now)?;
    if before > now {
        return Err(Error::invalid("before", format!("{before} is after now ({now})")));
    }
    Ok(before)
}

/// A payload: at most 1 MiB.
pub(crate) fn payload(value: &str) -> Result<&str> {
    if value.len() > MAX_PAYLOAD_BYTES {
        return Err(Error::invalid(
            "payload",
            format!("is {} bytes, at most {MAX_PAYLOAD_BYTES} allowed", value.len()),
        ));
    }
    Ok(value)
}

/// The longest job kind (SPEC 1.1, 6.44).
pub const MAX_KIND_BYTES: usize = 64;

/// A job's kind: 0 … 64 bytes, no NUL (SPEC 1.1, 6.44); `""` is no kind.
pub(crate) fn kind(value: &str) -> Result<&str> {
    match value.len() {
        _ if value.contains('\0') => Err(Error::invalid("kind", "must not contain NUL (U+0000)")),
        n if n > MAX_KIND_BYTES => {
            Err(Error::invalid("kind", format!("is {n} bytes, at most {MAX_KIND_BYTES} allowed")))
        }
        _ => Ok(value),
    }
}

/// A number of attempts: 1 … 2^31 − 1.
pub(crate) fn attempts(field: &'static str, value: u64) -> Result<u64> {
    if !(1..=MAX_ATTEMPTS).contains(&value) {
        return Err(Error::invalid(field, format!("{value} is outside 1 … 2^31-1")));
    }
    Ok(value)
}

/// A deadline: an integer strictly after `now`.
pub(crate) fn deadline(value: u64, now: u64) -> Result<u64> {
    int("deadline", value)?;
    if value <= now {
        return Err(Error::invalid("deadline", format!("{value} is not after now ({now})")));
    }
    Ok(value)
}

/// A scheduled start: `now` ≤ `not_before` < `deadline` (SPEC 3.2), so a scheduled job is
/// due before its deadline like any pending job (invariant 6).
pub(crate) fn not_before(value: u64, now: u64, deadline: u64) -> Result<u64> {
    int("not_before", value)?;
    if value < now {
        return Err(Error::invalid("not_before", format!("{value} is before now ({now})")));
    }
    if value >= deadline {
        return Err(Error::invalid("not_before", format!("{value} is not before the deadline ({deadline})")));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive() {
        assert!(int("now", MAX_INT).is_ok());
        assert!(int("now", MAX_INT + 1).is_err());
        assert!(queue("queue", &"q".repeat(64)).is_ok());
        assert!(queue("queue", &"q".repeat(65)).is_err());
        assert!(queue("queue", "").is_err());
        assert!(queue("queue", "a\0").is_err());
        assert!(queues(&["a", "b"]).is_ok());
        assert!(queues(&[]).is_err());
        assert!(queues(&["a", "a"]).is_err());
        assert_eq!(priority(9).ok(), Some(9));
        assert!(priority(10).is_err());
        assert!(priority(256).is_err());
        assert!(before(5, 5).is_ok());
        assert!(before(6, 5).is_err());
        assert!(name("id", &"x".repeat(256)).is_ok());
        assert!(name("id", &"x".repeat(257)).is_err());
        assert!(name("id", "").is_err());
        assert!(name("id", "a\0b").is_err());
        assert!(name("worker", "\0").is_err());
        // Bytes, not characters: 128 two-byte characters are 256 bytes.
        assert!(name("id", &"é".repeat(128)).is_ok());
        assert!(name("id", &"é".repeat(129)).is_err());
        assert!(payload(&"x".repeat(MAX_PAYLOAD_BYTES)).is_ok());
        assert!(payload(&"x".repeat(MAX_PAYLOAD_BYTES + 1)).is_err());
        assert!(attempts("max_attempts", 1).is_ok());
        assert!(attempts("max_attempts", 0).is_err());
        assert!(attempts("max_attempts", MAX_ATTEMPTS).is_ok());
        assert!(attempts("max_attempts", MAX_ATTEMPTS + 1).is_err());
        assert!(deadline(1, 0).is_ok());
        assert!(deadline(0, 0).is_err());
        assert!(deadline(MAX_INT + 1, 0).is_err());
        assert!(not_before(5, 5, 10).is_ok());
        assert!(not_before(9, 5, 10).is_ok());
        assert!(not_before(4, 5, 10).is_err());
        assert!(not_before(10, 5, 10).is_err());
    }

    #[test]
    fn errors_name_their_field() {
        let err = attempts("add_attempts", 0).unwrap_err();
        assert!(err.to_string().contains("add_attempts"), "{err}");
        let err = name("worker", "").unwrap_err();
        assert!(err.to_string().contains("worker"), "{err}");
    }
}
