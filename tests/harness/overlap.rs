//! The overlap run of `retryq_conformance::overlap` (see its doc for what it does and
//! checks), with this build's workers and a 12 s spell of trouble; a failed check fails the
//! test.
//!
//! `RETRYQ_OVERLAP_BIN=PATH` runs the workers of another build (the test's own binary
//! otherwise), to check that the run fails where commands outlive their workers: a build
//! without `--margin` is run without it.

#![allow(dead_code)]

use std::time::Duration;

pub use retryq_conformance::overlap::{Seen, Store};

use crate::common::BIN;

/// How long the trouble lasts.
const TROUBLE: Duration = Duration::from_secs(12);

/// The whole run on `store` (for PostgreSQL, the empty database `url`), then every check.
/// Returns what the log showed.
pub fn overlap_run(seed: u64, store: Store, url: Option<&str>) -> Seen {
    let workers = std::env::var("RETRYQ_OVERLAP_BIN").unwrap_or_else(|_| BIN.to_owned());
    eprintln!("overlap: seed {seed} on {store:?}, workers of {workers}");
    let run = retryq_conformance::overlap::Overlap {
        seed,
        store,
        url: url.map(str::to_owned),
        workers: workers.into(),
        audit: BIN.into(),
        trouble: TROUBLE,
    };
    match run.run(&|| {}) {
        Ok(seen) => {
            eprintln!("overlap: seed {seed} on {store:?}: {}", seen.summary());
            seen
        }
        Err(why) => panic!("{why}"),
    }
}
