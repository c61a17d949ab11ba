//! How the model names its jobs and workers, and the payloads it enqueues.
//!
//! Layer: the model's own vocabulary, above the SPEC's ([`crate::op`]) and below the world
//! ([`crate::model`]) and its bad arguments ([`crate::invalid`]), which both name jobs and
//! workers this way. It uses nothing of the crate: a name is only a string, and keeping the
//! naming apart is what lets the world and its bad arguments each use it without using each
//! other.

/// The payload every job is enqueued with; a re-enqueue with [`OTHER_PAYLOAD`] conflicts.
pub const PAYLOAD: &str = "p";
/// The payload of a re-enqueue that must conflict: any text other than [`PAYLOAD`].
pub const OTHER_PAYLOAD: &str = "q";

/// The id of the `index`-th job enqueued (0-based): `job-z`, `job-y`, … — named in the
/// *descending* byte order of their first enqueue, so that a store ordering its jobs by id
/// rather than by first enqueue (SPEC 6.1) takes the wrong one on a tie. Up to 26 jobs.
pub fn job_name(index: usize) -> String {
    let letter = b'z'.saturating_sub(index.min(25) as u8);
    format!("job-{}", letter as char)
}

/// The index of a job named by [`job_name`]; `None` for any other name (a probe's odd id).
pub fn job_index(name: &str) -> Option<usize> {
    match name.as_bytes() {
        [b'j', b'o', b'b', b'-', letter @ b'a'..=b'z'] => Some(usize::from(b'z' - letter)),
        _ => None,
    }
}

/// The name of worker `index` (0-based): `w1`, `w2`, …
pub fn worker_name(index: usize) -> String {
    format!("w{}", index + 1)
}

/// The index of a worker named by [`worker_name`].
pub fn worker_index(name: &str) -> Option<usize> {
    name.strip_prefix('w')?.parse::<usize>().ok()?.checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for i in 0..12 {
            assert_eq!(job_index(&job_name(i)), Some(i));
            assert_eq!(worker_index(&worker_name(i)), Some(i));
        }
        assert!(job_name(0) > job_name(1), "ids sort against their first enqueue");
        assert_eq!(job_index("job-1"), None);
        assert_eq!(job_index("job-zz"), None);
        assert_eq!(worker_index("x1"), None);
    }
}
