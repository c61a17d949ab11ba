//! The store's statements on statistics taken while no job was open: the planner then
//! believes every index of open jobs empty, and each statement must still walk the index it
//! is written for, since that is the only one whose rows it implies (schema 8's marks,
//! `ddl.rs`).

use super::tests::pg_at;
use super::tests_stats::plan;

/// The indexes of `jobs` that `plan` reads, and whether it scans the table whole.
fn jobs_indexes(plan: &str) -> (Vec<String>, bool) {
    let mut used: Vec<String> = plan
        .lines()
        .filter_map(|line| {
            let at = line.find(" using ").map(|at| at + " using ".len()).or_else(|| {
                line.find("Bitmap Index Scan on ").map(|at| at + "Bitmap Index Scan on ".len())
            })?;
            let name = line[at..].split_whitespace().next()?;
            name.starts_with("jobs_").then(|| name.to_string())
        })
        .collect();
    used.sort();
    used.dedup();
    (used, plan.contains("Seq Scan on jobs"))
}

/// The store's statements that read open jobs by an index, each with arguments and the
/// indexes of `jobs` it is written to read.
const STATEMENTS: [(&str, &str, &str, &[&str]); 10] = [
    (
        "REAP_DUE",
        super::claim::REAP_DUE,
        "50000",
        &["jobs_cancelling", "jobs_last_lease", "jobs_open_deadline"],
    ),
    (
        "REAP",
        super::claim::REAP,
        "50000, 1000",
        &["jobs_cancelling", "jobs_last_lease", "jobs_open_deadline", "jobs_pkey"],
    ),
    ("PICK", super::claim::PICK, "50000, 16, '{q1,q2}'", &["jobs_due"]),
    (
        "LEASE_PICKED",
        super::claim::LEASE_PICKED,
        "50000, 'w2', 60000, '{q1,q2}', 16",
        &["jobs_due", "jobs_pkey"],
    ),
    ("NEXT_DUE", super::inspect::NEXT_DUE, "", &["jobs_due"]),
    ("NEXT_DUE_IN", super::inspect::NEXT_DUE_IN, "'{q1,q2}'", &["jobs_due"]),
    ("LEASES_AND_AGE", super::inspect::LEASES_AND_AGE, "50000, NULL", &["jobs_leases", "jobs_open_age"]),
    ("OWNERS", super::inspect::OWNERS, "50000", &["jobs_leases"]),
    ("LIST_OPEN", super::inspect::LIST_OPEN, "'leased', 100", &["jobs_due"]),
    ("LEASES", super::inspect::LEASES, "100", &["jobs_leases"]),
];

/// A store analyzed when every one of its 20,000 jobs had ended, then hit by a backlog its
/// statistics never saw — 20,000 expired leases, some asked to stop, some on their last
/// attempt, some past their deadline, over seven queues: what an outage leaves before
/// autovacuum analyzes again. Each statement of a claim, a reap, `stats`, the workers'
/// wait and the listings reads the index it is written for and no other, on a custom and
/// a generic plan. On schema 7 (no marks) a claim's check for jobs to reap and its pick
/// walked every open job in `jobs_open_age`.
#[test]
fn each_statement_walks_its_own_index_on_statistics_that_saw_no_open_job() {
    let test = "each_statement_walks_its_own_index_on_statistics_that_saw_no_open_job";
    let Some((_, q)) = pg_at(test) else { return };
    // The setup writes 40,000 rows a statement, each through the notes' triggers: on a loaded
    // machine longer than the store's statement timeout, which this test is not about.
    q.raw("SET statement_timeout = 0").expect("no timeout for the setup");
    let columns = "id, payload, status, attempts, max_attempts, available_at, deadline, redrives, \
                   enqueued_at, updated_at, not_before, queue, priority";
    q.raw_query(&format!(
        "INSERT INTO jobs ({columns})
         SELECT 'e-' || i, '', 'pending', 0, 3, i, 10000000, 0, 0, 0, 0, 'q' || (i % 7), i % 10
         FROM generate_series(1, 20000) AS i"
    ))
    .expect("jobs");
    q.raw_query("UPDATE jobs SET status = 'done', available_at = NULL, ended_at = 0").expect("end");
    q.raw_query("ANALYZE jobs").expect("analyze");
    q.raw_query(&format!(
        "INSERT INTO jobs ({columns})
         SELECT 'b-' || i, '', 'pending', 0, CASE WHEN i % 10 = 0 THEN 1 ELSE 3 END, i,
                CASE WHEN i % 10 = 1 THEN 40000 ELSE 10000000 END, 0, 0, 0, 0, 'q' || (i % 7), i % 10
         FROM generate_series(1, 20000) AS i"
    ))
    .expect("backlog");
    q.raw_query(
        "UPDATE jobs SET status = 'leased', attempts = 1, owner = 'w', claimed_at = 0,
                         available_at = 100 + seq % 1000, updated_at = 0
         WHERE id LIKE 'b-%'",
    )
    .expect("leases");
    q.raw_query(
        "UPDATE jobs SET cancel_requested = true, updated_at = 0 WHERE id LIKE 'b-%' AND seq % 10 = 2",
    )
    .expect("cancels");
    for mode in ["force_custom_plan", "force_generic_plan"] {
        q.raw(&format!("SET plan_cache_mode = {mode}")).expect("mode");
        for (name, sql, args, want) in STATEMENTS {
            let plan = plan(&q, sql, args);
            let (used, whole) = jobs_indexes(&plan);
            assert_eq!(used, want, "{mode} {name}:\n{plan}");
            assert!(!whole, "{mode} {name} scans the table:\n{plan}");
        }
    }
    q.raw("RESET plan_cache_mode").expect("reset");
}

/// A schema 7 database (contract 1.4's, its indexes of open jobs unmarked) holding open jobs
/// is upgraded in place by the first connect: schema 8's catalog exactly, every job where it
/// was, the claims in their order, the audit clean.
#[test]
fn a_schema_7_database_gets_its_marks_in_place() {
    let Some((url, fresh)) = pg_at("a_schema_7_database_gets_its_marks_in_place") else { return };
    let want = super::tests_1_2::catalog(&fresh);
    drop(fresh);
    let (seven, mut client) = super::tests::older_schema(&url, "seven", &super::ddl::schema_7(), 7);
    client
        .batch_execute(
            "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline, redrives,
                               enqueued_at, updated_at, not_before, queue, priority)
             VALUES ('late', 'p', 'pending', 0, 3, 5, 9000, 0, 0, 0, 5, 'default', 1),
                    ('first', 'p', 'pending', 0, 3, 0, 9000, 0, 0, 0, 0, 'default', 0),
                    ('held', 'p', 'pending', 0, 3, 0, 9000, 0, 0, 0, 0, 'default', 0);
             UPDATE jobs SET status = 'leased', attempts = 1, owner = 'w1', claimed_at = 10,
                             available_at = 1010, updated_at = 10 WHERE id = 'held';",
        )
        .expect("rows");
    let mut q = super::PgQueue::connect(&seven).expect("upgraded");
    assert_eq!(super::tests_1_2::catalog(&q), want, "an upgraded schema is a created one");
    let version: i64 = q.raw_query("SELECT schema_version FROM retryq_meta").expect("meta")[0].get(0);
    assert_eq!(version, crate::PG_SCHEMA_VERSION);
    assert!(q.audit().expect("audit").is_clean());
    assert_eq!(q.stats(100).expect("stats").leased, 1);
    let order: Vec<String> =
        (0..2).map(|_| q.claim("w2", 100).expect("claim").expect("due").id().to_string()).collect();
    assert_eq!(order, ["first", "late"], "priority 0 before 1");
    assert_eq!(q.claim("w2", 2000).expect("claim").expect("expired").id(), "held");
    assert!(q.audit().expect("audit").is_clean());
}

/// The partial indexes of `jobs`.
const PARTIAL: [&str; 7] = [
    "jobs_due",
    "jobs_open_age",
    "jobs_leases",
    "jobs_open_deadline",
    "jobs_cancelling",
    "jobs_last_lease",
    "jobs_ended",
];

/// Whatever the statistics: each partial index, left alone with scans of the table
/// disabled, is read by the statements written for it and by no other — so no statistics
/// can make the planner choose it for another (a partial index serves a statement only
/// when the statement implies its `WHERE`).
#[test]
fn no_statement_can_read_another_statements_index() {
    let Some((_, q)) = pg_at("no_statement_can_read_another_statements_index") else { return };
    for alone in PARTIAL {
        let others: Vec<&str> = PARTIAL.into_iter().filter(|i| *i != alone).collect();
        q.raw(&format!("BEGIN; DROP INDEX {}; SET LOCAL enable_seqscan = off", others.join(", ")))
            .expect("alone");
        for mode in ["force_custom_plan", "force_generic_plan"] {
            q.raw(&format!("SET LOCAL plan_cache_mode = {mode}")).expect("mode");
            for (name, sql, args, want) in STATEMENTS {
                let (used, _) = jobs_indexes(&plan(&q, sql, args));
                let reads = used.iter().any(|i| i == alone);
                assert_eq!(reads, want.contains(&alone), "{alone} alone, {mode} {name}: {used:?}");
            }
        }
        q.raw("ROLLBACK").expect("rollback");
    }
}
