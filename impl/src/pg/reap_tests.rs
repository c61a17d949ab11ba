//! Tests of SPEC 1.3's bounded reap (3.3.1, 3.3.2, 6.37) on both stores — which jobs a reap
//! with a limit ends, in which order, what a claim passes over, what a batch reaps — and, on
//! PostgreSQL, a reap whose picked row another transaction changed before its write.

use std::thread;
use std::time::Duration;

use super::tests::{both, pg_at};
use super::tests_stats::plan;
use crate::backend::Backend;
use crate::{Completion, DeadReason, Lease, NewJob, Outcome, Settings, Status};

fn job(id: &str, max_attempts: u64, deadline: u64) -> NewJob<'_> {
    NewJob { id, payload: "", max_attempts, deadline, now: 0, ..NewJob::default() }
}

fn with_limit(q: &mut dyn Backend, reap_limit: u64) {
    q.set_settings(Settings { lease_ms: 10, reap_limit, ..q.settings() }).expect("settings");
}

fn ended(q: &dyn Backend, id: &str) -> Option<DeadReason> {
    let job = q.get(id).expect("get").expect("job");
    match job.status {
        Status::Dead => job.dead_reason,
        _ => None,
    }
}

/// Jobs due to end at 500 by each rule, with ties: `c1`, `c2` expired leases with a cancel
/// request (expiring at 11, 10); `x1`, `x2` expired leases on their last attempt (both at 10);
/// `d1`…`d3` pending past their deadlines (100, 50, 100); `live` pending with time left.
fn scene(q: &mut dyn Backend) {
    with_limit(q, 1000);
    for id in ["x2", "x1", "c2"] {
        q.enqueue(&job(id, 1, 10_000)).expect("enqueue");
    }
    for id in ["x2", "x1", "c2"] {
        assert_eq!(q.claim("w", 0).expect("claim").expect("claimed").id(), id);
    }
    q.enqueue(&job("c1", 3, 10_000)).expect("enqueue");
    assert_eq!(q.claim("w", 1).expect("claim").expect("claimed").id(), "c1");
    for id in ["c1", "c2"] {
        q.cancel(id, 5).expect("cancel");
    }
    q.enqueue(&job("d1", 3, 100)).expect("enqueue");
    q.enqueue(&job("d2", 3, 50)).expect("enqueue");
    q.enqueue(&job("d3", 3, 100)).expect("enqueue");
    q.enqueue(&job("live", 3, 10_000)).expect("enqueue");
}

#[test]
fn a_reap_ends_at_most_its_limit_in_the_contracts_order() {
    both("a_reap_ends_at_most_its_limit_in_the_contracts_order", |q| {
        scene(q);
        with_limit(q, 2);
        // Rule 1 by expiry (c2 at 10 before c1 at 11), rule 2 by expiry then first enqueue
        // (x2 before x1), rule 3 by deadline then first enqueue (d2, d1, d3).
        let order = [
            ("c2", DeadReason::Cancelled),
            ("c1", DeadReason::Cancelled),
            ("x2", DeadReason::Exhausted),
            ("x1", DeadReason::Exhausted),
            ("d2", DeadReason::Deadline),
            ("d1", DeadReason::Deadline),
            ("d3", DeadReason::Deadline),
        ];
        for (piece, counted) in [(0_usize, 2_usize), (2, 2), (4, 2), (6, 1), (7, 0)] {
            assert_eq!(q.reap(500).expect("reap"), counted as u64, "piece from {piece}");
            for (n, (id, reason)) in order.iter().enumerate() {
                let expected = (n < piece + counted).then_some(*reason);
                assert_eq!(ended(q, id), expected, "{id} after the piece from {piece}");
            }
        }
        assert_eq!(ended(q, "live"), None);
        let stats = q.stats(500).expect("stats");
        assert_eq!((stats.dead_cancelled, stats.dead_exhausted, stats.dead_deadline), (2, 2, 3));
        let audit = q.audit().expect("audit");
        assert!(audit.is_clean(), "{:?}", audit.violations);
    });
}

#[test]
fn a_claim_passes_over_jobs_due_to_end_that_its_reap_left() {
    both("a_claim_passes_over_jobs_due_to_end_that_its_reap_left", |q| {
        scene(q);
        with_limit(q, 1);
        // The claim's reap ends c2 alone; its pick passes over c1 and x1/x2 (leases: never
        // claimable with a cancel request or a spent budget) and d1…d3 (past their deadlines,
        // first in claim's order), and takes `live`.
        let claimed = q.claim("w2", 500).expect("claim").expect("claimed");
        assert_eq!((claimed.id(), claimed.attempt()), ("live", 1));
        assert_eq!(ended(q, "c2"), Some(DeadReason::Cancelled));
        for id in ["c1", "x1", "x2", "d1", "d2", "d3"] {
            assert_eq!(ended(q, id), None, "{id} is left for a later reap");
            let leased = id.starts_with('c') || id.starts_with('x');
            assert_eq!(q.get(id).expect("get").expect("job").attempts, u64::from(leased), "{id}");
        }
        // Nothing else is claimable: the rest are due to end.
        assert_eq!(q.claim("w2", 500).expect("claim"), None);
        assert_eq!(ended(q, "c1"), Some(DeadReason::Cancelled), "that claim's reap ended the next");
    });
}

#[test]
fn a_batch_of_claims_reaps_what_its_claims_would() {
    both("a_batch_of_claims_reaps_what_its_claims_would", |q| {
        scene(q);
        with_limit(q, 2);
        // Three claims would reap two each: six of the seven, in order; one is claimable.
        let batch = q.claim_batch("w2", 500, 3).expect("batch");
        assert_eq!(batch.iter().map(|c| c.id()).collect::<Vec<_>>(), ["live"]);
        assert_eq!(ended(q, "d1"), Some(DeadReason::Deadline));
        assert_eq!(ended(q, "d3"), None);
        assert_eq!(q.reap(500).expect("reap"), 1);
    });
}

#[test]
fn a_completion_of_a_job_due_to_end_is_judged_by_what_is_stored() {
    both("a_completion_of_a_job_due_to_end_is_judged_by_what_is_stored", |q| {
        scene(q);
        with_limit(q, 1);
        assert_eq!(q.reap(500).expect("reap"), 1);
        // x1's lease expired on its last attempt, but no reap has ended it: its holder's late
        // report is accepted (SPEC 3.4), and ends it by its outcome.
        let lease = Lease::new("w", "x1", 1);
        let report = Completion::new(&lease, Outcome::Ok, 500, 0.0);
        assert_eq!(q.complete(&report).expect("complete"), crate::Completed::Done);
    });
}

/// A reap whose picked row another transaction changes before the reap writes it: the
/// change is waited for, and the reap runs again on what is committed then. Here a heartbeat
/// renews `x2`'s expired lease (accepted: neither claimed again nor reaped, SPEC 6.24), so
/// `x2` is no longer due to end and the reap of one job takes the next, `x1`. A reap that
/// wrote the row as it changed would end a renewed lease; one that kept what it wrote would
/// end nothing while jobs are due to end.
#[test]
fn a_reap_picks_again_when_a_row_it_picked_changed() {
    let Some((url, mut q)) = pg_at("a_reap_picks_again_when_a_row_it_picked_changed") else { return };
    for id in ["x2", "x1"] {
        q.enqueue(&job(id, 1, 10_000)).expect("enqueue");
    }
    for id in ["x2", "x1"] {
        assert_eq!(q.claim("w", 0).expect("claim").expect("claimed").id(), id);
    }
    q.set_settings(Settings { reap_limit: 1, ..q.settings() }).expect("settings");
    let mut holder = postgres::Client::connect(&url, postgres::NoTls).expect("holder");
    let mut beat = holder.transaction().expect("begin");
    // The store's heartbeat of x2 at 2000 with a lease of 1000, held uncommitted.
    let renewed = beat
        .execute(
            "UPDATE jobs SET available_at = GREATEST(available_at, 3000), updated_at = 2000
             WHERE id = 'x2' AND status = 'leased' AND owner = 'w' AND attempts = 1",
            &[],
        )
        .expect("heartbeat");
    assert_eq!(renewed, 1);
    let reaping = thread::spawn(move || q.reap(2500).map(|n| (n, q)));
    let waiting = "SELECT count(*) FROM pg_stat_activity
                   WHERE datname = current_database() AND wait_event_type = 'Lock'
                     AND wait_event = 'transactionid'";
    while beat.query_one(waiting, &[]).expect("waiting").get::<_, i64>(0) == 0 {
        assert!(!reaping.is_finished(), "the reap did not wait for the row it picked");
        thread::sleep(Duration::from_millis(5));
    }
    beat.commit().expect("commit");
    let (reaped, q) = reaping.join().expect("the reap").expect("reap");
    assert_eq!(reaped, 1);
    assert_eq!(ended(&q, "x1"), Some(DeadReason::Exhausted));
    let x2 = q.get("x2").expect("get").expect("job");
    assert_eq!((x2.status, x2.available_at), (Status::Leased, Some(3000)));
}

/// 20,000 pending jobs `j-1`… over 7 queues and the 10 priorities, due at `i`, with deadline
/// `deadline` (an expression of `i`), analyzed: a table the planner knows to be large.
fn fill(q: &super::PgQueue, deadline: &str) {
    q.raw_query(&format!(
        "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline, redrives,
                           enqueued_at, updated_at, not_before, queue, priority)
         SELECT 'j-' || i, '', 'pending', 0, 3, i, {deadline}, 0, 0, 0, 0, 'q' || (i % 7), i % 10
         FROM generate_series(1, 20000) AS i"
    ))
    .expect("jobs");
    q.raw_query("ANALYZE jobs").expect("analyze");
}

/// Each rule's pick of [`REAP`](super::claim::REAP) walks its own index in SPEC 3.3.1's
/// order and stops at the limit — no sort, no scan of the table — and claim's pick reads
/// `jobs_due`, whose entries carry the deadline it filters on; so a reap costs what it ends,
/// whatever the store holds.
#[test]
fn each_reap_walks_its_index_in_the_contracts_order() {
    let Some((_, q)) = pg_at("each_reap_walks_its_index_in_the_contracts_order") else { return };
    fill(&q, "100000 + i");
    let explain = |sql: &str| -> String {
        let sql = sql.replace("$1", "50000").replace("$2", "1000").replace("$3", "'{q1,q2}'");
        let rows = q.raw_query(&format!("EXPLAIN (COSTS OFF) {sql}")).expect("explain");
        rows.iter().map(|row| row.get::<_, String>(0)).collect::<Vec<_>>().join("\n")
    };
    let reap = explain(super::claim::REAP);
    let due = explain(super::claim::REAP_DUE);
    for index in ["jobs_cancelling", "jobs_last_lease", "jobs_open_deadline"] {
        assert!(reap.contains(&format!("Index Scan using {index}")), "{index}:\n{reap}");
        assert!(due.contains(&format!("Scan using {index}")), "{index}:\n{due}");
    }
    assert!(!reap.contains("Sort") && !reap.contains("Seq Scan on jobs"), "{reap}");
    assert!(!due.contains("Seq Scan on jobs"), "{due}");
    // How the pick reads `jobs_due` (an ordered walk, or a bitmap of the few due entries) is
    // the planner's choice by the numbers; either way through the index, deadline included.
    let pick = explain(super::claim::PICK);
    assert!(pick.contains("Index Cond") && pick.contains("deadline > 50000"), "{pick}");
    assert!(pick.contains("jobs_due"), "{pick}");
    assert!(!pick.contains("Seq Scan on jobs"), "{pick}");
}

/// Whether every scan of `jobs` in `plan` is bounded by an index condition (the node's lines
/// up to its first child name one): the scans that name none, with their plan.
fn unbounded_scans_of_jobs(plan: &str) -> Vec<String> {
    let lines: Vec<&str> = plan.lines().collect();
    let mut unbounded = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let scans_jobs = line.contains("Scan") && line.contains(" on jobs ");
        if !scans_jobs {
            continue;
        }
        let details = lines[at + 1..].iter().take_while(|l| !l.contains("->"));
        let bounded = !line.contains("Seq Scan")
            && (line.contains("Bitmap Heap Scan") || details.into_iter().any(|l| l.contains("Index Cond:")));
        if !bounded {
            unbounded.push(line.trim().to_string());
        }
    }
    unbounded
}

/// The batch writes — [`REAP`](super::claim::REAP), a claim batch's
/// [`LEASE_PICKED`](super::claim::LEASE_PICKED) and a completion batch's
/// [`FINISH_ALL`](super::complete::FINISH_ALL) — and the fenced lookups of a completion, a
/// note and a heartbeat reach each row by key, on a custom plan and on the generic plan a
/// connection switches to after five runs of a prepared statement (the store prepares each
/// statement once per connection): no scan of `jobs` without an index condition, so each
/// costs its rows, whatever the store holds. The table is one the planner knows to be large,
/// with late jobs spread over it and no leases: there a generic plan merge-joined the late
/// jobs to the primary key from its start, and a fence naming `status = 'leased'` walked
/// every lease in `jobs_leases`, however many a backlog had left since.
#[test]
fn every_write_reaches_its_rows_by_key_on_any_plan() {
    let Some((_, q)) = pg_at("every_write_reaches_its_rows_by_key_on_any_plan") else { return };
    fill(&q, "CASE WHEN i % 100 = 0 THEN i + 1000 ELSE 10000000 + i END");
    let arrays = "ARRAY['j-1', 'j-2'], ARRAY['w', 'w'], ARRAY[1, 1]::bigint[], ARRAY[50, 50]::bigint[], \
                  ARRAY['done', 'dead'], ARRAY[NULL, 'permanent'], ARRAY[NULL, NULL]::bytea[], \
                  ARRAY[NULL, NULL]::bytea[]";
    let statements = [
        ("REAP", super::claim::REAP, "50000, 1000".to_string()),
        ("REAP_DUE", super::claim::REAP_DUE, "50000".to_string()),
        ("LEASE_PICKED", super::claim::LEASE_PICKED, "50000, 'w', 60000, '{q1,q2}', 16".to_string()),
        ("FINISH_ALL", super::complete::FINISH_ALL, arrays.to_string()),
        ("FINISH_EVERY", super::complete::FINISH_EVERY, arrays.to_string()),
        (
            "FINISH_FENCED",
            super::complete::FINISH_FENCED,
            "'j-1', 'w', 1, 50, 'done', NULL, NULL, NULL".into(),
        ),
        ("HELD_FENCED", super::complete::HELD_FENCED, "'j-1', 'w', 1, 50".into()),
        ("NOTE", super::complete::NOTE, "'j-1', 'w', 1, NULL, NULL".into()),
        ("EXTEND", super::heartbeat::EXTEND, "'j-1', 'w', 1, 50, 60".into()),
        ("CANCEL", super::cancel::CANCEL, "'j-1', 50".into()),
        ("REQUEST", super::cancel::REQUEST, "'j-1', 50".into()),
        ("RUN_NOW", super::pause::RUN_NOW, "'j-1', 50".into()),
        ("LOOKUP_DEAD", super::redrive::LOOKUP_DEAD, "'j-1'".into()),
    ];
    for store in ["open jobs, late ones spread over them, no lease", "every job ended"] {
        if store == "every job ended" {
            q.raw_query("UPDATE jobs SET status = 'done', available_at = NULL, ended_at = 0").expect("end");
            q.raw_query("ANALYZE jobs").expect("analyze");
        }
        for mode in ["force_custom_plan", "force_generic_plan"] {
            q.raw(&format!("SET plan_cache_mode = {mode}")).expect("mode");
            // With every job ended, the lookups of one job by its id.
            let by_id = |name: &&str| {
                store != "every job ended" || !name.starts_with("REAP") && *name != "LEASE_PICKED"
            };
            for (name, sql, args) in statements.iter().filter(|(name, _, _)| by_id(name)) {
                let plan = plan(&q, sql, args);
                assert!(plan.contains(" on jobs"), "{store}, {mode} {name}: no scan of jobs at all?\n{plan}");
                let unbounded = unbounded_scans_of_jobs(&plan);
                assert!(unbounded.is_empty(), "{store}, {mode} {name}: {unbounded:?}\n{plan}");
            }
        }
    }
    q.raw("RESET plan_cache_mode").expect("reset");
}

/// Whether [`REAP_DUE`](super::claim::REAP_DUE) at `at` finds anything due to end.
fn reap_due(q: &super::PgQueue, at: u64) -> bool {
    let sql = super::claim::REAP_DUE.replace("$1", &at.to_string());
    q.raw_query(&sql).expect("reap due")[0].get(0)
}

/// A claim runs its reap only when [`REAP_DUE`](super::claim::REAP_DUE) finds something due
/// to end, so the check must find each of the reap's three rules alone — and nothing where
/// the reap ends nothing: a lease not yet expired (on its last attempt, with a cancel request
/// or past its deadline), a pending job before its deadline.
#[test]
fn a_claims_check_finds_each_rule_of_the_reap_alone() {
    let Some((_, mut q)) = pg_at("a_claims_check_finds_each_rule_of_the_reap_alone") else { return };
    with_limit(&mut q, 1000);
    q.set_settings(Settings { lease_ms: 100, ..q.settings() }).expect("settings");
    assert!(!reap_due(&q, 500), "an empty store");
    // Leased at 0 until 100: on its last attempt (`x`), asked to cancel (`c`), past its
    // deadline of 50 (`d`), each alone on the store.
    for (id, max_attempts, deadline, cancel) in
        [("x", 1, 10_000, false), ("c", 3, 10_000, true), ("d", 3, 50, false)]
    {
        q.enqueue(&job(id, max_attempts, deadline)).expect("enqueue");
        assert_eq!(q.claim("w", 0).expect("claim").expect("claimed").id(), id);
        if cancel {
            q.cancel(id, 5).expect("cancel");
        }
        assert!(!reap_due(&q, 99), "{id}: its lease has not expired");
        assert!(reap_due(&q, 100), "{id}: its lease expired");
        assert_eq!(q.reap(100).expect("reap"), 1, "{id}");
        assert!(!reap_due(&q, 100), "{id}: ended");
    }
    q.enqueue(&job("late", 3, 600)).expect("enqueue");
    assert!(!reap_due(&q, 599), "pending before its deadline");
    assert!(reap_due(&q, 600), "pending at its deadline");
}

/// The claim's statements run on the generic plan the connection keeps, not on a plan made
/// for each run's parameters, which the server chose for every run of them (about half a
/// millisecond of planning in each claim, inside the claims' turn).
#[test]
fn the_claims_pick_is_planned_once_per_connection() {
    let Some((_, mut q)) = pg_at("the_claims_pick_is_planned_once_per_connection") else { return };
    for i in 0..40 {
        q.enqueue(&job(&format!("j{i}"), 3, 10_000)).expect("enqueue");
    }
    for round in 0..10 {
        assert_eq!(q.claim_batch("w", round, 2).expect("claim").len(), 2);
        assert!(q.claim("w", round).expect("claim").is_some());
    }
    let plans = |start: &str| -> (i64, i64) {
        let rows = q
            .raw_query("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
            .expect("plans");
        let row = rows.iter().find(|row| row.get::<_, String>(0).starts_with(start)).expect(start);
        (row.get(1), row.get(2))
    };
    for start in ["WITH picked AS MATERIALIZED", "WITH first AS"] {
        let (generic, custom) = plans(start);
        assert_eq!(custom, 0, "{start}: planned for its parameters {custom} times of {}", generic + custom);
        assert_eq!(generic, 10, "{start}");
    }
}
