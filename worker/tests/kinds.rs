//! One worker, many kinds (`Kinds`): each job runs with its kind's handler, a job without a
//! kind with the plain handler, and a kind no handler serves ends dead(permanent) naming it.

use retryq::{DeadReason, Enqueue, Enqueued, Queue, Status};
use retryq_worker::{Attempt, JobArgs, Kinds, Stop, Worker, job};

#[derive(serde::Serialize, serde::Deserialize)]
struct Mail {
    to: String,
}
impl JobArgs for Mail {
    const KIND: &'static str = "mail";
}

#[test]
fn each_kind_runs_its_handler_and_an_unserved_kind_dies_naming_it() {
    let mut queue = Queue::open_in_memory().expect("queue");
    let mail = job(&Mail { to: "ada@example.com".into() }).expect("job");
    assert_eq!(queue.enqueue(&mail).expect("mail"), Enqueued::New);
    assert_eq!(queue.enqueue(&mail).expect("again"), Enqueued::Existing, "the same job, once");
    queue.enqueue(&Enqueue::new("plain-1", "hello")).expect("plain");
    queue.enqueue(&Enqueue::new("sms-1", "{}").kind("sms")).expect("sms");
    queue.enqueue(&Enqueue::new("mail-bad", "[1]").kind("mail")).expect("bad arguments");
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = std::sync::Arc::clone(&sent);
    let kinds = Kinds::new()
        .handle(move |m: Mail, _: &Attempt| {
            into.lock().expect("lock").push(m.to);
            Ok(())
        })
        .plain(|a: &Attempt| match a.payload() {
            "hello" => Ok(()),
            other => Err(retryq_worker::JobError::permanent(format!("unexpected {other}"))),
        });
    let worker = Worker::new("w").expect("worker").until_idle();
    let summary = worker.run(&mut queue, &Stop::new(), |a| kinds.run(a)).expect("run");
    assert_eq!((summary.done, summary.dead), (2, 2), "{summary:?}");
    assert_eq!(*sent.lock().expect("lock"), ["ada@example.com"]);
    let get = |id: &str| queue.get(id).expect("get").expect("stored");
    assert_eq!(get(mail.id()).status, Status::Done);
    assert_eq!(get("plain-1").status, Status::Done);
    let sms = get("sms-1");
    assert_eq!((sms.status, sms.dead_reason, sms.attempts), (Status::Dead, Some(DeadReason::Permanent), 1));
    assert!(sms.last_error.as_deref().is_some_and(|e| e.contains("\"sms\"")), "{:?}", sms.last_error);
    let bad = get("mail-bad");
    assert_eq!((bad.status, bad.dead_reason), (Status::Dead, Some(DeadReason::Permanent)));
}

#[test]
fn another_kind_under_the_same_id_and_payload_is_a_conflict() {
    let mut queue = Queue::open_in_memory().expect("queue");
    queue.enqueue(&Enqueue::new("a", "p").kind("mail")).expect("enqueue");
    let err = queue.enqueue(&Enqueue::new("a", "p").kind("sms")).unwrap_err();
    assert!(matches!(err, retryq::Error::Conflict { .. }), "{err}");
    let err = queue.enqueue(&Enqueue::new("a", "p")).unwrap_err();
    assert!(matches!(err, retryq::Error::Conflict { .. }), "no kind is another kind: {err}");
    let long = "k".repeat(65);
    let err = queue.enqueue(&Enqueue::new("b", "p").kind(long.as_str())).unwrap_err();
    assert!(matches!(err, retryq::Error::InvalidInput { field: "kind", .. }), "{err}");
    assert_eq!(queue.get("b").expect("get"), None);
}

#[test]
fn async_kinds_run_each_kind_as_a_task_and_an_unserved_kind_dies_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kinds.db");
    let mut queue = Queue::open(&path).expect("queue");
    queue.enqueue(&job(&Mail { to: "ada@example.com".into() }).expect("job")).expect("mail");
    queue.enqueue(&Enqueue::new("plain-1", "hello")).expect("plain");
    queue.enqueue(&Enqueue::new("sms-1", "{}").kind("sms")).expect("sms");
    queue.enqueue(&Enqueue::new("mail-bad", "[1]").kind("mail")).expect("bad arguments");
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = std::sync::Arc::clone(&sent);
    let kinds = retryq_worker::AsyncKinds::new()
        .handle(move |m: Mail, _: Attempt| {
            let into = std::sync::Arc::clone(&into);
            async move {
                tokio::task::yield_now().await;
                into.lock().expect("lock").push(m.to);
                Ok(())
            }
        })
        .plain(|a: Attempt| async move {
            match a.payload() {
                "hello" => Ok(()),
                other => Err(retryq_worker::JobError::permanent(format!("unexpected {other}"))),
            }
        });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let worker = Worker::new("w").expect("worker").until_idle();
    let summary = runtime.block_on(worker.run_async(queue, Stop::new(), move |a| kinds.run(a))).expect("run");
    assert_eq!((summary.done, summary.dead), (2, 2), "{summary:?}");
    assert_eq!(*sent.lock().expect("lock"), ["ada@example.com"]);
    let queue = Queue::open(&path).expect("reopen");
    let get = |id: &str| queue.get(id).expect("get").expect("stored");
    assert_eq!(get("plain-1").status, Status::Done);
    let sms = get("sms-1");
    assert_eq!((sms.status, sms.dead_reason), (Status::Dead, Some(DeadReason::Permanent)));
    assert!(sms.last_error.as_deref().is_some_and(|e| e.contains("\"sms\"")), "{:?}", sms.last_error);
    let bad = get("mail-bad");
    assert_eq!((bad.status, bad.dead_reason), (Status::Dead, Some(DeadReason::Permanent)));
    assert!(bad.last_error.as_deref().is_some_and(|e| e.contains("mail job")), "{:?}", bad.last_error);
}
