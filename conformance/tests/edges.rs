//! The edges of every range, on both readings: ids and worker names of 256 and 257 bytes,
//! payloads of exactly 1 MiB and one byte more, times at 2^53 − 1 and past it (values no
//! replay line can carry past the parser, which each reading must still refuse on its own),
//! and a lease that runs past 2^53 − 1. Then the files `--db` may be pointed at.

use retryq_conformance::Side;
use retryq_conformance::compare::{Comparison, compare};
use retryq_conformance::trace::{Step, Trace};
use retryq_model::{MAX_INT, Op, Outcome, RunOutcome};

const BUDGET: u64 = (1 << 31) - 1;
const MIB: usize = 1 << 20;

/// Runs `ops` on SQLite in memory and on a file, each against the model, and returns the
/// agreed answers (with `invalid_input` details blanked).
fn agree(ops: Vec<Op>) -> Vec<String> {
    let trace = Trace { steps: ops.into_iter().map(Step::Op).collect() };
    let mut answers = Vec::new();
    for mut side in [Side::in_memory().expect("memory"), Side::temporary().expect("file")] {
        match compare(&trace, &mut side).expect("compare") {
            Comparison::Agree(responses) => {
                answers.push(responses.iter().map(|r| r.observable().to_json_line()).collect::<Vec<_>>());
            }
            Comparison::Diverge(d) => panic!("{d}"),
        }
    }
    assert_eq!(answers[0], answers[1], "memory and file answered differently");
    answers.swap_remove(0)
}

fn enqueue(id: &str, payload: &str, max_attempts: u64, deadline: u64, now: u64) -> Op {
    Op::Enqueue {
        priority: None,
        queue: None,
        id: id.into(),
        payload: payload.into(),
        max_attempts,
        deadline,
        now,
        not_before: None,
        base_ms: None,
        cap_ms: None,
        kind: None,
    }
}

#[test]
fn names_and_payloads_at_their_limits() {
    let (id256, id257) = ("i".repeat(256), "i".repeat(257));
    let (w256, w257) = ("w".repeat(256), "w".repeat(257));
    let (mib, mib_and_one) = ("p".repeat(MIB), "p".repeat(MIB + 1));
    let out = agree(vec![
        enqueue(&id256, &mib, 3, 1000, 0),
        enqueue(&id257, "", 3, 1000, 0),
        enqueue("", "", 3, 1000, 0),
        enqueue("big", &mib_and_one, 3, 1000, 0),
        enqueue(&id256, &mib, 3, 1000, 0),
        Op::Claim { queues: None, worker: w257.clone(), now: 1 },
        Op::Claim { queues: None, worker: String::new(), now: 1 },
        Op::Claim { queues: None, worker: w256.clone(), now: 1 },
        Op::Complete {
            worker: w256.clone(),
            id: id257.clone(),
            attempt: 1,
            outcome: Outcome::Ok,
            now: 2,
            jitter: None,
        },
        Op::Complete {
            worker: w257,
            id: id256.clone(),
            attempt: 1,
            outcome: Outcome::Ok,
            now: 2,
            jitter: None,
        },
        Op::Complete {
            worker: w256,
            id: id256.clone(),
            attempt: 1,
            outcome: Outcome::Ok,
            now: 2,
            jitter: None,
        },
        Op::Get { id: id257 },
        Op::Get { id: id256 },
    ]);
    let invalid = r#"{"error":"invalid_input","detail":""}"#;
    assert_eq!(out[0], r#"{"ok":"enqueued"}"#);
    assert_eq!(&out[1..4], [invalid, invalid, invalid]);
    assert_eq!(out[4], r#"{"ok":"existing"}"#);
    assert_eq!(&out[5..7], [invalid, invalid]);
    assert!(out[7].starts_with(r#"{"ok":"claimed""#), "{}", out[7]);
    assert_eq!(&out[8..10], [invalid, invalid]);
    assert_eq!(out[10], r#"{"ok":"done"}"#);
}

#[test]
fn times_and_budgets_at_their_limits() {
    let past = MAX_INT + 1;
    let out = agree(vec![
        Op::Config {
            base_ms: Some(MAX_INT),
            cap_ms: Some(MAX_INT),
            lease_ms: Some(MAX_INT),
            reap_limit: Some(MAX_INT),
        },
        Op::Config { base_ms: None, cap_ms: None, lease_ms: Some(past), reap_limit: None },
        Op::Config { base_ms: Some(past), cap_ms: None, lease_ms: None, reap_limit: None },
        enqueue("a", "", BUDGET, MAX_INT, MAX_INT - 1),
        enqueue("b", "", BUDGET + 1, MAX_INT, 0),
        enqueue("b", "", 1, past, 0),
        enqueue("b", "", 1, MAX_INT, MAX_INT),
        // The lease runs to (2^53 − 2) + (2^53 − 1): past 2^53 − 1, which is fine.
        Op::Claim { queues: None, worker: "w".into(), now: MAX_INT - 1 },
        Op::Reap { now: MAX_INT },
        Op::Reap { now: past },
        Op::Stats { queue: None, now: MAX_INT },
        Op::Stats { queue: None, now: u64::MAX },
        Op::Claim { queues: None, worker: "w".into(), now: past },
        Op::Complete {
            worker: "w".into(),
            id: "a".into(),
            attempt: 1,
            outcome: Outcome::Ok,
            now: past,
            jitter: None,
        },
        Op::Complete {
            worker: "w".into(),
            id: "a".into(),
            attempt: 1,
            outcome: Outcome::Retryable,
            now: MAX_INT - 1,
            jitter: Some(1.0),
        },
        Op::Get { id: "a".into() },
        Op::Redrive { id: "a".into(), now: past, add_attempts: 1, deadline: past + 1 },
        Op::Redrive { id: "a".into(), now: MAX_INT - 1, add_attempts: BUDGET, deadline: MAX_INT },
        Op::Redrive { id: "a".into(), now: MAX_INT - 1, add_attempts: BUDGET - 1, deadline: MAX_INT },
        Op::Get { id: "a".into() },
        Op::RunOnce {
            queues: None,
            worker: "w".into(),
            now: MAX_INT - 1,
            after: Some(past),
            outcome: RunOutcome::Ok,
            jitter: None,
        },
        Op::RunOnce {
            queues: None,
            worker: "w".into(),
            now: MAX_INT - 1,
            after: Some(MAX_INT),
            outcome: RunOutcome::Ok,
            jitter: None,
        },
        Op::RetryDelay { attempt: MAX_INT, base_ms: MAX_INT, cap_ms: MAX_INT, jitter: 1.0 },
        Op::RetryDelay { attempt: past, base_ms: 1, cap_ms: 1, jitter: 1.0 },
        Op::RetryDelay { attempt: 1, base_ms: 1, cap_ms: past, jitter: 1.0 },
        // `reap_limit` past 2^53 − 1, and 0 (SPEC 3.11: at least 1).
        Op::Config { base_ms: None, cap_ms: None, lease_ms: None, reap_limit: Some(past) },
        Op::Config { base_ms: None, cap_ms: None, lease_ms: None, reap_limit: Some(0) },
    ]);
    let invalid = r#"{"error":"invalid_input","detail":""}"#;
    assert_eq!(out[0], r#"{"ok":"config"}"#);
    assert_eq!(&out[1..3], [invalid, invalid]);
    assert_eq!(out[3], r#"{"ok":"enqueued"}"#);
    assert_eq!(&out[4..7], [invalid, invalid, invalid]);
    assert!(out[7].contains(r#""lease_until":18014398509481981"#), "{}", out[7]);
    assert_eq!(out[8], r#"{"ok":"reaped","count":0}"#);
    assert_eq!(out[9], invalid);
    assert_eq!(&out[11..14], [invalid, invalid, invalid]);
    // The largest delay, (2^53 − 2) + (2^53 − 1), passes the deadline: no overflow, dead.
    assert_eq!(out[14], r#"{"ok":"dead","reason":"deadline"}"#);
    assert_eq!(&out[16..18], [invalid, invalid]);
    assert_eq!(out[18], r#"{"ok":"redriven"}"#);
    assert!(out[19].contains(r#""max_attempts":2147483647"#), "{}", out[19]);
    assert_eq!(out[20], invalid);
    assert!(out[21].starts_with(r#"{"ok":"done""#), "{}", out[21]);
    assert_eq!(out[22], r#"{"ok":"delay","delay_ms":9007199254740991}"#);
    assert_eq!(&out[23..27], [invalid, invalid, invalid, invalid]);
    assert_eq!(out.len(), 27);
}

mod files {
    //! What `retryq replay --db PATH` does with a file that is not a fresh or retryq
    //! database: refuses it, saying so, and leaves it byte for byte as it was.

    use retryq_conformance::{ReplayError, Side};

    fn refused(prepare: impl FnOnce(&std::path::Path)) -> String {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("given.db");
        prepare(&path);
        let before = std::fs::read(&path).expect("read");
        let err = match Side::file(&path) {
            Err(ReplayError::Storage(e)) => e.to_string(),
            Err(e) => panic!("not a storage refusal: {e}"),
            Ok(_) => panic!("opened"),
        };
        assert_eq!(std::fs::read(&path).expect("read"), before, "the file changed");
        err
    }

    fn sqlite(path: &std::path::Path, sql: &str) {
        rusqlite::Connection::open(path).expect("sqlite").execute_batch(sql).expect("sql");
    }

    #[test]
    fn a_text_file_is_not_a_database() {
        let err = refused(|p| std::fs::write(p, "orders\n".repeat(300)).expect("write"));
        assert!(err.contains("not a retryq database") && err.contains("not a SQLite database"), "{err}");
    }

    #[test]
    fn another_programs_database_is_not_ours() {
        let err = refused(|p| sqlite(p, "CREATE TABLE t (x); PRAGMA user_version = 5;"));
        assert!(err.contains("not a retryq database"), "{err}");
        let err = refused(|p| sqlite(p, "PRAGMA application_id = 7; CREATE TABLE t (x);"));
        assert!(err.contains("application_id 0x7"), "{err}");
    }

    #[test]
    fn a_retryq_id_without_a_schema_version_is_refused_not_initialised() {
        let err = refused(|p| sqlite(p, &format!("PRAGMA application_id = {};", retryq::APPLICATION_ID)));
        assert!(err.contains("schema version 0"), "{err}");
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let err = refused(|p| {
            drop(Side::file(p).expect("create"));
            sqlite(
                p,
                &format!(
                    "PRAGMA user_version = {}; PRAGMA wal_checkpoint(TRUNCATE);",
                    retryq::SCHEMA_VERSION + 1
                ),
            );
        });
        assert!(err.contains("newer"), "{err}");
    }

    #[test]
    fn an_empty_file_becomes_a_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("empty.db");
        std::fs::write(&path, b"").expect("write");
        let mut side = Side::file(&path).expect("an empty file is a new database");
        let r = side.step(&retryq_model::Op::Stats { queue: None, now: 0 }).expect("stats");
        assert!(r.to_json_line().starts_with(r#"{"ok":"stats""#));
    }
}

mod durability {
    //! The replay harness runs the queue as production does: in write-ahead-log mode with
    //! full fsync, on every file it opens — also one whose journal mode was changed.

    use retryq_conformance::Side;
    use retryq_model::Op;

    fn journal_mode(path: &std::path::Path) -> String {
        let conn = rusqlite::Connection::open(path).expect("sqlite");
        conn.pragma_query_value(None, "journal_mode", |row| row.get(0)).expect("pragma")
    }

    #[test]
    fn every_file_is_in_wal_mode() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("q.db");
        let mut side = Side::file(&path).expect("create");
        side.step(&Op::Enqueue {
            priority: None,
            queue: None,
            id: "a".into(),
            payload: String::new(),
            max_attempts: 1,
            deadline: 9,
            now: 0,
            not_before: None,
            base_ms: None,
            cap_ms: None,
            kind: None,
        })
        .expect("enqueue");
        drop(side);
        assert_eq!(journal_mode(&path), "wal");
        // Someone turns WAL off behind the queue's back: the next open turns it on again.
        let conn = rusqlite::Connection::open(&path).expect("sqlite");
        let mode: String =
            conn.pragma_update_and_check(None, "journal_mode", "DELETE", |r| r.get(0)).expect("pragma");
        assert_eq!(mode, "delete");
        drop(conn);
        let mut side = Side::file(&path).expect("reopen");
        side.step(&Op::Get { id: "a".into() }).expect("get");
        drop(side);
        assert_eq!(journal_mode(&path), "wal");
    }
}
