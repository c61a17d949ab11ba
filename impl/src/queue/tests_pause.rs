//! Pause, resume and run_now on SQLite: the shared scenarios of `pause_tests` (SPEC 3.16-3.18).
//! A module of its own, so that `queue::pause`, which claims call, does not name `Backend`.

use super::store::tests::queue;
use crate::backend::Backend;
use crate::pause_tests as scenario;

#[test]
fn a_paused_queue_is_not_picked() {
    scenario::a_paused_queue_is_not_picked(&mut queue());
}

#[test]
fn pause_and_resume_are_idempotent_and_counted() {
    scenario::pause_and_resume_are_idempotent_and_counted(&mut queue());
}

#[test]
fn a_paused_queues_jobs_still_end() {
    scenario::a_paused_queues_jobs_still_end(&mut queue());
}

#[test]
fn a_resume_picks_the_jobs_as_they_stand() {
    scenario::a_resume_picks_the_jobs_as_they_stand(&mut queue());
}

#[test]
fn run_now_refuses_in_order() {
    scenario::run_now_refuses_in_order(&mut queue());
}

#[test]
fn run_now_makes_a_job_due_not_first() {
    scenario::run_now_makes_a_job_due_not_first(&mut queue());
}

#[test]
fn a_pause_is_durable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let reopen = || -> Box<dyn Backend> { Box::new(crate::Queue::open(&path).expect("open")) };
    scenario::a_pause_is_durable(&mut *reopen(), &reopen);
}

/// The audit reads pending → pending as a run_now, and flags one that did not bring the
/// reservation forward to its own time.
#[test]
fn the_audit_flags_a_run_now_that_made_a_job_later() {
    use crate::{Check, NewJob};
    let mut q = queue();
    let job = NewJob { id: "a", payload: "", max_attempts: 3, deadline: 9000, now: 0, ..NewJob::default() };
    q.enqueue(&NewJob { not_before: Some(500), ..job }).expect("enqueue");
    q.enqueue(&NewJob { id: "b", ..job }).expect("enqueue");
    q.run_now("a", 100).expect("run_now");
    assert!(q.audit().expect("audit").is_clean());
    q.conn
        .execute("UPDATE jobs SET available_at = 800, updated_at = 200 WHERE id = 'b'", [])
        .expect("tamper");
    let audit = q.audit().expect("audit");
    let found: Vec<_> = audit.violations.iter().map(|v| (v.check, v.job.as_str(), v.what.as_str())).collect();
    assert_eq!(
        found,
        [(Check::NoSilentDrop, "b", "run_now at 200 moved available_at Some(0) → Some(800), deadline 9000")]
    );
}

/// The claim's look at the paused queues is a lookup of the table's key, not a scan.
#[test]
fn the_pause_lookup_is_by_key() {
    let q = queue();
    let plan: Vec<String> = q
        .conn
        .prepare(&format!("EXPLAIN QUERY PLAN {}", super::pause::IS_PAUSED))
        .expect("explain")
        .query_map(["mail"], |row| row.get::<_, String>(3))
        .expect("plan")
        .collect::<Result<_, _>>()
        .expect("rows");
    let plan = plan.join("\n");
    assert!(plan.contains("USING PRIMARY KEY"), "{plan}");
    assert!(!plan.contains("SCAN"), "{plan}");
}
