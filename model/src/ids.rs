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

/// The id of the `index`-th job enqueued (0-based): `job-1`, `job-2`, …
pub fn job_name(index: usize) -> String {
    format!("job-{}", index + 1)
}

/// The index of a job named by [`job_name`].
pub fn job_index(name: &str) -> Option<usize> {
    name.strip_prefix("job-")?.parse::<usize>().ok()?.checked_sub(1)
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
        assert_eq!(job_index("job-0"), None);
        assert_eq!(worker_index("x1"), None);
    }
}
