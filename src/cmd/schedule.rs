//! When a job may run: its deadline and its first start, resolved against the enqueue's
//! `now` from a point in time or a duration from now. Shared by `enqueue`'s and `redrive`'s
//! flags and by the lines of `enqueue --file`, which name the same things differently
//! (`--not-before`, `not_before`): each caller puts its own name before the reason.
//!
//! The rules are SPEC 3.2's, checked here first so that the reason can show each time in both
//! forms (`instant::show`) and each duration in units, not as the library's raw numbers.

use retryq::MAX_INT;

use super::duration::words;
use super::instant;

/// A time as given: a point, or a duration from now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Unix milliseconds.
    At(u64),
    /// Milliseconds from now.
    After(u64),
}

/// The deadline `when` names as of `now`: after `now`, within 2^53−1; or why not.
pub fn deadline(when: When, now: u64) -> Result<u64, String> {
    match when {
        When::At(deadline) if deadline <= now => {
            Err(format!("{} is not after now, {}", instant::show(deadline), instant::show(now)))
        }
        When::At(deadline) => Ok(deadline),
        When::After(ttl) => match now.checked_add(ttl) {
            Some(deadline) if deadline <= MAX_INT => Ok(deadline),
            _ => Err(format!("{} from now passes 2^53-1 ms", words(ttl))),
        },
    }
}

/// The first start `when` names as of `now`: in `now` … `deadline` − 1 (a start at or past the
/// deadline could never happen); or why not.
pub fn start(when: When, now: u64, deadline: u64) -> Result<u64, String> {
    match when {
        When::At(at) if at < now => {
            Err(format!("{} is before now, {}", instant::show(at), instant::show(now)))
        }
        When::At(at) if at >= deadline => {
            Err(format!("{} is not before the deadline, {}", instant::show(at), instant::show(deadline)))
        }
        When::At(at) => Ok(at),
        When::After(after) => match now.checked_add(after) {
            Some(at) if at < deadline => Ok(at),
            Some(at) if at <= MAX_INT => Err(format!(
                "{} from now, {}, is not before the deadline, {}",
                words(after),
                instant::show(at),
                instant::show(deadline)
            )),
            _ => Err(format!("{} from now passes 2^53-1 ms", words(after))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_lies_between_now_and_the_deadline() {
        assert_eq!(deadline(When::After(1_000), 5_000), Ok(6_000));
        assert_eq!(start(When::After(0), 5_000, 6_000), Ok(5_000));
        assert_eq!(start(When::At(5_999), 5_000, 6_000), Ok(5_999));
        assert!(
            start(When::At(6_000), 5_000, 6_000).is_err_and(|why| why.contains("not before the deadline"))
        );
        assert!(start(When::At(4_999), 5_000, 6_000).is_err_and(|why| why.contains("is before now")));
        assert!(
            start(When::After(7_200_000), 0, 3_600_000)
                .is_err_and(|why| why.starts_with("2h from now, 7200000 ("))
        );
        assert!(deadline(When::At(5_000), 5_000).is_err_and(|why| why.contains("is not after now")));
        assert!(deadline(When::After(MAX_INT), 1).is_err_and(|why| why.contains("passes 2^53-1 ms")));
    }
}
