//! Contract 1.3's operators' commands through the binary: `pause`, `resume` and `run-now`,
//! their answers and exit statuses, the paused queues in `stats`, and a worker that leaves a
//! paused queue's jobs alone.

mod common;

use std::path::Path;

use common::{Ran, command, fresh, ran, read_only};

fn retryq(db: &Path, args: &[&str]) -> Ran {
    ran(command(db, args).output().expect("run retryq"))
}

fn enqueue(db: &Path, id: &str, extra: &[&str]) {
    let mut args = vec!["enqueue", "--id", id, "--payload", "p", "--max-attempts", "3", "--ttl", "1h"];
    args.extend_from_slice(extra);
    let r = retryq(db, &args);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

#[test]
fn pause_and_resume_answer_are_idempotent_and_show_in_stats() {
    let (_dir, db) = fresh("retryq-clipause-");
    enqueue(&db, "m", &["--queue", "mail"]);
    let r = retryq(&db, &["pause", "mail"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "{\"ok\":\"paused\"}\n"), "{}", r.stderr);
    assert!(r.stderr.contains("retryq resume"), "{}", r.stderr);
    let first = read_only(&db).paused().expect("paused");
    let r = retryq(&db, &["pause", "mail"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "{\"ok\":\"paused\"}\n"), "{}", r.stderr);
    assert_eq!(read_only(&db).paused().expect("paused"), first, "a second pause keeps the first time");
    // A name no job carries may be paused ahead of its first job.
    let r = retryq(&db, &["pause", "sms"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);

    let r = retryq(&db, &["stats", "--json"]);
    assert!(r.stdout.ends_with(",\"pruned_dead\":0,\"paused_queues\":2}\n"), "{}", r.stdout);
    let r = retryq(&db, &["stats", "--json", "--queue", "mail"]);
    assert!(r.stdout.ends_with(",\"paused_queues\":1}\n"), "{}", r.stdout);
    let r = retryq(&db, &["stats"]);
    assert!(r.stdout.contains("paused queues   2 (mail, sms)\n"), "{}", r.stdout);

    // A worker serving the paused queue leaves its job alone.
    let r = retryq(&db, &["work", "--worker", "w", "--queue", "mail", "--exec", "true", "--until-idle"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(read_only(&db).get("m").expect("get").expect("m").attempts, 0);

    let r = retryq(&db, &["resume", "mail"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "{\"ok\":\"resumed\"}\n"), "{}", r.stderr);
    let r = retryq(&db, &["resume", "mail"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "{\"ok\":\"resumed\"}\n"), "{}", r.stderr);
    let r = retryq(&db, &["stats"]);
    assert!(r.stdout.contains("paused queues   1 (sms)\n"), "{}", r.stdout);
    let r = retryq(&db, &["work", "--worker", "w", "--queue", "mail", "--exec", "true", "--until-idle"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(read_only(&db).get("m").expect("get").expect("m").status, retryq::Status::Done);

    // A bad name is refused by its argument, exit 2, nothing changed.
    for bad in ["", &"q".repeat(65)] {
        let r = retryq(&db, &["pause", bad]);
        assert_eq!(r.code, Some(2), "{}", r.stderr);
    }
    assert_eq!(read_only(&db).paused().expect("paused").len(), 1);
}

#[test]
fn run_now_answers_for_each_status() {
    let (_dir, db) = fresh("retryq-clirunnow-");
    enqueue(&db, "later", &["--start-in", "30m"]);
    enqueue(&db, "held", &[]);
    let r = retryq(&db, &["run-now", "later"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let job = read_only(&db).get("later").expect("get").expect("later");
    assert_eq!(
        r.stdout,
        format!("{{\"ok\":\"due\",\"available_at\":{}}}\n", job.available_at.expect("pending"))
    );
    assert!(job.available_at < Some(job.not_before), "due before its schedule");
    assert_eq!(job.attempts, 0);

    let now = retryq_worker::now_ms().expect("clock");
    retryq::Queue::open(&db).expect("open").claim("w1", now).expect("claim").expect("a job is due");
    let leased = ["later", "held"]
        .into_iter()
        .find(|id| read_only(&db).get(id).expect("get").expect("job").status == retryq::Status::Leased)
        .expect("one is leased");
    let r = retryq(&db, &["run-now", leased]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (Some(1), "{\"error\":\"not_pending\",\"status\":\"leased\"}\n"),
        "{}",
        r.stderr
    );
    let r = retryq(&db, &["run-now", "nobody"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(1), "{\"error\":\"not_found\"}\n"));
    let r = retryq(&db, &["run-now", ""]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
}
