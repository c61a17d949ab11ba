//! The `kinds` example (`worker/examples/kinds.rs`) run whole, on a SQLite file and on a
//! PostgreSQL database: three kinds, enqueued in the application's transaction, one worker.

#[allow(dead_code)]
#[path = "../examples/kinds.rs"]
mod kinds;

use retryq::Status;

/// Every job done, each with its kind: the charge and the receipt at once, the shipment on
/// its second attempt (its handler's first answer is a retry).
fn check(db: &str) {
    assert_eq!(kinds::run(db).expect("run"), 3, "three attempts succeeded");
    let store = retryq::open_backend(db).expect("open");
    let mut seen = Vec::new();
    for job in store.list(Status::Done, None, 10).expect("list").jobs {
        seen.push((job.kind.clone(), job.attempts));
        assert!(job.id.starts_with(&format!("{}:", job.kind)), "a derived id: {}", job.id);
    }
    seen.sort();
    assert_eq!(seen, [("charge".into(), 1), ("receipt".into(), 1), ("ship".into(), 2)]);
    assert!(store.audit().expect("audit").violations.is_empty());
    // The same order placed again is the same three jobs: nothing new runs.
    assert_eq!(kinds::run(db).expect("again"), 0);
}

#[test]
fn the_kinds_example_runs_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    check(&dir.path().join("shop.db").display().to_string());
}

#[test]
fn the_kinds_example_runs_on_postgres() {
    let Some(db) = retryq_pgtest::database("the_kinds_example_runs_on_postgres") else { return };
    check(&db);
}
