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

/// The id of the `index`-th job enqueued (0-based): `jöb-z`, `jöb-y`, … — named in the
/// *descending* byte order of their first enqueue, so that a store ordering its jobs by id
/// rather than by first enqueue (SPEC 6.1) takes the wrong one on a tie. Up to 26 jobs. The
/// `ö` has a decomposed form, so that an id equal to it but for its bytes exists in every class
/// of names ([`crate::choices::NameClass`]).
pub fn job_name(index: usize) -> String {
    let letter = b'z'.saturating_sub(index.min(25) as u8);
    format!("jöb-{}", letter as char)
}

/// The index of a job named by [`job_name`]; `None` for any other name (a probe's odd id).
pub fn job_index(name: &str) -> Option<usize> {
    match name.strip_prefix("jöb-")?.as_bytes() {
        [letter @ b'a'..=b'z'] => Some(usize::from(b'z' - letter)),
        _ => None,
    }
}

/// The name of worker `index` (0-based): `wé1`, `wé2`, … (the `é` as in [`job_name`]).
pub fn worker_name(index: usize) -> String {
    format!("wé{}", index + 1)
}

/// The index of a worker named by [`worker_name`].
pub fn worker_index(name: &str) -> Option<usize> {
    let digits = name.strip_prefix("wé")?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<usize>().ok()?.checked_sub(1)
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
        assert_eq!(job_index("jöb-1"), None);
        assert_eq!(job_index("jöb-zz"), None);
        assert_eq!(job_index("job-z"), None);
        assert_eq!(worker_index("x1"), None);
        assert_eq!(worker_index("wé+1"), None, "a name the world does not give");
    }
}
