//! SPEC 3.16 to 3.18 and 4.15 on the PostgreSQL store: the scenarios of `pause_tests.rs`,
//! which `queue/pause.rs` runs on SQLite, here on a database of their own each; and the
//! pause's part of the claim's plan.

use super::PgQueue;
use super::tests::pg_at;
use crate::backend::Backend;
use crate::pause_tests as scenario;

/// Each scenario on a fresh database; skipped (loudly, by `pg_at`) without PostgreSQL.
fn on_pg(test: &str, run: impl FnOnce(&mut dyn Backend)) {
    if let Some((_, mut q)) = pg_at(test) {
        run(&mut q);
    }
}

#[test]
fn a_paused_queue_is_not_picked() {
    on_pg("pause_not_picked", scenario::a_paused_queue_is_not_picked);
}

#[test]
fn pause_and_resume_are_idempotent_and_counted() {
    on_pg("pause_idempotent", scenario::pause_and_resume_are_idempotent_and_counted);
}

#[test]
fn a_paused_queues_jobs_still_end() {
    on_pg("pause_jobs_still_end", scenario::a_paused_queues_jobs_still_end);
}

#[test]
fn a_resume_picks_the_jobs_as_they_stand() {
    on_pg("pause_resume_as_they_stand", scenario::a_resume_picks_the_jobs_as_they_stand);
}

#[test]
fn run_now_refuses_in_order() {
    on_pg("run_now_refusals", scenario::run_now_refuses_in_order);
}

#[test]
fn run_now_makes_a_job_due_not_first() {
    on_pg("run_now_due_not_first", scenario::run_now_makes_a_job_due_not_first);
}

#[test]
fn a_pause_is_durable() {
    let Some((url, mut q)) = pg_at("pause_durable") else { return };
    let reopen = || -> Box<dyn Backend> { Box::new(PgQueue::connect(&url).expect("connect")) };
    scenario::a_pause_is_durable(&mut q, &reopen);
}

/// A resume wakes the workers listening on the schema's channel, at its commit, with the
/// queue's name, and a run_now as an enqueue does; a resume of a queue that was not paused
/// wakes nobody.
#[test]
fn a_resume_and_a_run_now_wake_the_listening_workers() {
    use std::sync::Arc;
    use std::sync::mpsc::{RecvTimeoutError, channel};
    use std::time::Duration;
    let Some((_, mut q)) = pg_at("pause_resume_wakes") else { return };
    q.enqueue(&crate::NewJob { not_before: Some(5000), ..scenario::job("later", "sms", 0) })
        .expect("enqueue");
    q.pause("mail", 0).expect("pause");
    let (tx, rx) = channel::<Option<String>>();
    let wake: crate::Wake = Arc::new(move |queue: Option<&str>| {
        let _ = tx.send(queue.map(str::to_owned));
    });
    let listener = q.listen(wake).expect("listen");
    let heard = || rx.recv_timeout(Duration::from_secs(10));
    q.resume("other", 1).expect("resume of a queue not paused");
    assert_eq!(rx.recv_timeout(Duration::from_millis(500)), Err(RecvTimeoutError::Timeout));
    q.resume("mail", 2).expect("resume");
    assert_eq!(heard(), Ok(Some("mail".to_owned())));
    q.run_now("later", 3).expect("run_now");
    assert_eq!(heard(), Ok(Some("sms".to_owned())));
    drop(listener);
}
