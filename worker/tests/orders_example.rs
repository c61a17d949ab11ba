//! The `orders` example (`worker/examples/orders.rs`) run whole, on a SQLite file and on a
//! PostgreSQL database: the same code, only the URL differs.

#[allow(dead_code)]
#[path = "../examples/orders.rs"]
mod orders;

use retryq::Status;

fn expected() -> Vec<(String, Status)> {
    vec![
        ("deliver-o-1".into(), Status::Done),
        ("deliver-o-2".into(), Status::Done),
        ("deliver-o-3".into(), Status::Done),
        ("deliver-o-4".into(), Status::Dead),
    ]
}

#[test]
fn the_orders_example_delivers_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("shop.db").display().to_string();
    assert_eq!(orders::run(&db).expect("run"), expected());
    let store = retryq::open_backend(&db).expect("open");
    // o-1 outlived its 600 ms lease and was renewed, o-3 was retried once, o-4 cancelled.
    let history = |id: &str| store.history(id).expect("history");
    assert!(history("deliver-o-3").iter().any(|h| h.to == Status::Pending && h.attempt == 1));
    assert_eq!(store.get("deliver-o-1").expect("get").map(|j| j.attempts), Some(1));
    assert!(store.audit().expect("audit").violations.is_empty());
}

#[test]
fn the_orders_example_delivers_on_postgres() {
    let Some(db) = retryq_pgtest::database("the_orders_example_delivers_on_postgres") else { return };
    assert_eq!(orders::run(&db).expect("run"), expected());
    let store = retryq::open_backend(&db).expect("open");
    assert!(store.audit().expect("audit").violations.is_empty());
}
