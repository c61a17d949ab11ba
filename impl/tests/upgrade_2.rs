//! The upgrade of a schema 2 file (contract 1.1's) to the current schema, on a copy of
//! `tests/fixtures/schema-2.db`, which schema 2 code wrote (see `tests/fixtures/README.md`).

use std::path::{Path, PathBuf};

use retryq::rusqlite::Connection;
use retryq::{Enqueued, Lookup, NewJob, OpenOptions, Queue, SCHEMA_VERSION, Status};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/schema-2.db");

/// The fixture's jobs, in enqueue order, with the `ended_at` the upgrade must give each:
/// the `now` of the transition that ended it, `None` while open.
const JOBS: [(&str, Option<u64>); 6] = [
    ("done-1", Some(11)),
    ("cancelled-2", Some(12)),
    ("scheduled-3", None),
    ("leased-4", None),
    ("retried-5", None),
    ("deadline-6", Some(30)),
];

fn copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("schema-2.db");
    std::fs::copy(FIXTURE, &path).expect("copy the fixture");
    (dir, path)
}

fn user_version(path: &Path) -> i64 {
    // Read-only: a missing file is an error, not a new empty database.
    let flags = retryq::rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let conn = Connection::open_with_flags(path, flags).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    conn.pragma_query_value(None, "user_version", |row| row.get(0)).expect("user_version")
}

#[test]
fn the_fixture_is_schema_2() {
    assert_eq!(user_version(Path::new(FIXTURE)), 2);
}

#[test]
fn an_upgrade_keeps_every_job_and_entry_ends_the_ended_and_counts_them() {
    let (_dir, path) = copy();
    let before =
        Queue::open_with(&path, &OpenOptions { read_only: true, ..OpenOptions::default() }).expect("read");
    let jobs_before: Vec<_> = JOBS.iter().map(|(id, _)| before.get(id).expect("get").expect("job")).collect();
    let history_before: Vec<_> = JOBS.iter().map(|(id, _)| before.history(id).expect("history")).collect();
    let stats_before = before.stats(40).expect("stats");
    drop(before);
    assert_eq!(user_version(&path), 2, "a read-only open writes nothing");

    let mut q = Queue::open(&path).expect("upgrade");
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    for (((id, ended_at), old), history) in JOBS.iter().zip(&jobs_before).zip(&history_before) {
        let job = q.get(id).expect("get").expect("kept");
        assert_eq!(job.ended_at, *ended_at, "{id}");
        assert_eq!((job.queue.as_str(), job.priority, job.cancel_requested), ("default", 0, false), "{id}");
        assert_eq!(&job, old, "{id}: the read-only view showed what the upgrade stores");
        assert_eq!(&q.history(id).expect("history"), history, "{id}");
    }
    assert_eq!(q.stats(40).expect("stats"), stats_before);
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
    // Schema 4's notes, filled from the history: the two ended attempts' records (the live
    // lease's attempt has none yet), and the tallies of what the history holds.
    let records = |id: &str| -> Vec<(u64, u64, u64, String)> {
        q.attempts(id)
            .expect("attempts")
            .into_iter()
            .map(|r| (r.attempt, r.claimed_at, r.ended_at, r.outcome))
            .collect()
    };
    assert_eq!(records("done-1"), [(1, 10, 11, "ok".to_owned())]);
    assert_eq!(records("retried-5"), [(1, 14, 15, "retryable".to_owned())]);
    assert_eq!(records("leased-4"), []);
    let tallies = q.tallies().expect("tallies");
    let tally = |metric: &str, label: &str| -> u64 {
        let found = tallies.counters.iter().filter(|t| t.metric == metric);
        found.filter(|t| label.is_empty() || t.labels.iter().any(|(_, v)| v == label)).map(|t| t.value).sum()
    };
    assert_eq!(
        [
            tally("retryq_enqueued_total", ""),
            tally("retryq_claims_total", ""),
            tally("retryq_deaths_total", "cancelled"),
            tally("retryq_deaths_total", "deadline"),
            tally("retryq_reaped_total", "deadline"),
            tally("retryq_cancels_total", "pending"),
            tally("retryq_heartbeats_total", ""),
            tally("retryq_attempts_ended_total", ""),
        ],
        [6, 3, 1, 1, 1, 1, 1, 2]
    );

    // 1.2 works on the upgraded file: a prune leaves tombstones the counts see.
    assert_eq!(q.prune(30, 40).expect("prune"), 3);
    assert!(
        matches!(q.lookup("done-1").expect("lookup"), Some(Lookup::Pruned(t)) if t.status == Status::Done)
    );
    let again =
        NewJob { id: "done-1", payload: "a", max_attempts: 1, deadline: 99, now: 41, ..NewJob::default() };
    assert_eq!(q.enqueue(&again).expect("enqueue"), Enqueued::Existing);
    let stats = q.stats(41).expect("stats");
    assert_eq!((stats.done, stats.dead, stats.pruned_done, stats.pruned_dead), (0, 0, 1, 2));
    assert!(q.audit().expect("audit").is_clean());
}
