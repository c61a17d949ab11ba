//! `enqueue_bulk` on both stores: every job answered, stored and recorded exactly as single
//! enqueues of the same jobs in the same order would answer, store and record them; and after
//! a storage failure, the answers are exactly the jobs written.

use super::PgQueue;
use super::tests::pg_at;
use crate::backend::Backend;
use crate::queue::store::tests::queue;
use crate::{Completion, Enqueued, ErrorKind, NewJob, Outcome, Queue, Status};

/// How many jobs an import of the tests writes: enough for many transactions on either store.
const JOBS: usize = 3_000;

/// The same past on any store: `kept` pending (payload `k`), `done` done, and `pruned` and
/// `pruned2` pruned (their payloads `z`), each tombstone keeping its payload's digest.
fn past(q: &mut dyn Backend) {
    for (id, payload) in [("pruned", "z"), ("pruned2", "z"), ("done", "d"), ("kept", "k")] {
        let job = NewJob { id, payload, max_attempts: 3, deadline: 1_000_000, now: 0, ..NewJob::default() };
        assert_eq!(q.enqueue(&job).expect("enqueue"), Enqueued::New);
    }
    for (now, end) in [(1, 2), (3, 4), (50, 60)] {
        let claimed = q.claim("w", now).expect("claim").expect("due");
        q.complete(&Completion::new(&claimed.lease, Outcome::Ok, end, 0.0)).expect("ok");
    }
    assert_eq!(q.prune(10, 100).expect("prune"), 2);
}

/// The ids of an import: `j0`, `j1`, …, each with its own payload.
fn ids() -> Vec<(String, String)> {
    (0..JOBS).map(|n| (format!("j{n}"), format!("{{\"n\":{n}}}"))).collect()
}

/// An import of [`JOBS`] jobs over [`past`]: mostly new ids, in several queues and
/// priorities, some scheduled or with their own backoff, and among them every other answer —
/// an id stored already with its payload (`existing`) and with another (`conflict`), a pruned
/// id with its payload's digest and with another, an id given earlier in the import with the
/// same payload and with another, and jobs refused by their arguments.
fn import(ids: &[(String, String)]) -> Vec<NewJob<'_>> {
    ids.iter()
        .enumerate()
        .map(|(n, (id, payload))| {
            let job = NewJob {
                id,
                payload,
                max_attempts: 1 + n as u64 % 5,
                deadline: 1_000_000 + n as u64,
                now: 200 + n as u64 / 100,
                ..NewJob::default()
            };
            let earlier = &ids[n.saturating_sub(7)];
            match n % 101 {
                3 => NewJob { id: "kept", payload: "k", ..job },
                5 => NewJob { id: "kept", ..job },
                7 => NewJob { id: "pruned", payload: "z", ..job },
                11 => NewJob { id: "pruned2", payload: "y", ..job },
                13 => NewJob { id: &earlier.0, payload: &earlier.1, ..job },
                17 => NewJob { id: &earlier.0, ..job },
                19 => NewJob { max_attempts: 0, ..job },
                23 => NewJob { not_before: Some(job.deadline), ..job },
                29 => NewJob { id: "", ..job },
                _ => match n % 7 {
                    0 => NewJob { queue: Some("mail"), priority: Some(n as u64 % 10), ..job },
                    1 => NewJob { not_before: Some(job.now + 500), base_ms: Some(20), ..job },
                    2 => NewJob { cap_ms: Some(900), queue: Some("sms"), ..job },
                    _ => job,
                },
            }
        })
        .collect()
}

/// Everything an operator can read of `q` after the import, to compare two stores by.
fn everything(q: &dyn Backend, ids: &[(String, String)]) -> String {
    let mut seen = format!("{:?}\n{:?}\n{:?}\n", q.stats(10_000).expect("stats"), q.queues(), q.tallies());
    for id in ids.iter().map(|(id, _)| id.as_str()).chain(["kept", "pruned", "pruned2", "done"]) {
        seen += &format!("{:?}\n{:?}\n", q.lookup(id).expect("lookup"), q.history(id).expect("history"));
    }
    seen
}

/// Runs the import on `single`, one `enqueue` a job, and on `bulk` through `enqueue_bulk`,
/// both after [`past`]; the answers, every job, its history, the counts and the tallies must
/// be the same, each store must audit clean, and claims must take the jobs in the same order.
fn alike(single: &mut dyn Backend, bulk: &mut dyn Backend) {
    past(single);
    past(bulk);
    let ids = ids();
    let jobs = import(&ids);
    let one_by_one: Vec<_> = jobs.iter().map(|job| single.enqueue(job).map_err(|e| e.kind())).collect();
    let mut answers = Vec::new();
    bulk.enqueue_bulk(&jobs, &mut answers).expect("bulk");
    let answers: Vec<_> = answers.into_iter().map(|a| a.map_err(|e| e.kind())).collect();
    assert_eq!(answers, one_by_one);
    for kind in
        [Ok(Enqueued::New), Ok(Enqueued::Existing), Err(ErrorKind::Conflict), Err(ErrorKind::InvalidInput)]
    {
        assert!(answers.contains(&kind), "the import answers {kind:?} somewhere");
    }
    assert_eq!(everything(bulk, &ids), everything(single, &ids));
    for q in [&*single, &*bulk] {
        let audit = q.audit().expect("audit");
        assert!(audit.is_clean(), "{:?}", audit.violations);
    }
    let order = |q: &mut dyn Backend| -> Vec<String> {
        let claimed = q.claim_batch_from("w2", &["default", "mail", "sms"], 5_000, JOBS).expect("claim");
        claimed.iter().map(|c| c.id().to_owned()).collect()
    };
    let first = order(single);
    assert!(first.len() > JOBS / 2, "{} claimed", first.len());
    assert_eq!(order(bulk), first);
}

#[test]
fn a_bulk_import_answers_and_records_what_single_enqueues_would_on_sqlite() {
    alike(&mut queue(), &mut queue());
}

#[test]
fn a_bulk_import_answers_and_records_what_single_enqueues_would_on_postgres() {
    let test = "a_bulk_import_answers_and_records_what_single_enqueues_would_on_postgres";
    let (Some((_, mut single)), Some((_, mut bulk))) = (pg_at(&format!("{test}_single")), pg_at(test)) else {
        return;
    };
    alike(&mut single, &mut bulk);
}

/// After a storage failure part-way (the insert of `j2500` fails), `answers` names exactly the
/// jobs written: each of them is stored, and no job after them is; once the failure is gone
/// (`heal`), the same import answers `existing` for those and enqueues the rest.
fn the_answers_are_the_jobs_written<Q: Backend>(q: &mut Q, heal: impl FnOnce(&mut Q)) {
    let ids = ids();
    let jobs: Vec<NewJob<'_>> = ids
        .iter()
        .map(|(id, payload)| NewJob {
            id,
            payload,
            max_attempts: 3,
            deadline: 1_000_000,
            now: 0,
            ..NewJob::default()
        })
        .collect();
    let mut answers = Vec::new();
    let err = q.enqueue_bulk(&jobs, &mut answers).expect_err("the insert of j2500 fails");
    let written = answers.len();
    assert!(written <= 2500, "{written} answers: {err}");
    assert!(answers.iter().all(|a| matches!(a, Ok(Enqueued::New))));
    for (n, (id, _)) in ids.iter().enumerate() {
        let stored = q.get(id).expect("get").map(|job| job.status);
        assert_eq!(stored, (n < written).then_some(Status::Pending), "{id}, {written} answered");
    }
    heal(q);
    answers.clear();
    q.enqueue_bulk(&jobs, &mut answers).expect("run again");
    let again: Vec<_> = answers.iter().map(|a| a.as_ref().copied().map_err(|e| e.kind())).collect();
    assert!(again[..written].iter().all(|a| *a == Ok(Enqueued::Existing)));
    assert!(again[written..].iter().all(|a| *a == Ok(Enqueued::New)));
    assert!(q.audit().expect("audit").is_clean());
}

#[test]
fn after_a_storage_failure_the_answers_are_the_jobs_written_on_sqlite() {
    let mut q = queue();
    q.conn()
        .execute_batch(
            "CREATE TEMP TRIGGER fail BEFORE INSERT ON main.jobs WHEN NEW.id = 'j2500'
             BEGIN SELECT RAISE(ABORT, 'the disk is full'); END",
        )
        .expect("trigger");
    the_answers_are_the_jobs_written(&mut q, |q: &mut Queue| {
        q.conn().execute_batch("DROP TRIGGER temp.fail").expect("drop");
    });
}

#[test]
fn after_a_storage_failure_the_answers_are_the_jobs_written_on_postgres() {
    let Some((_, mut q)) = pg_at("after_a_storage_failure_the_answers_are_the_jobs_written_on_postgres")
    else {
        return;
    };
    q.raw(
        "CREATE FUNCTION fail() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN IF NEW.id = 'j2500' THEN RAISE EXCEPTION 'the disk is full'; END IF; RETURN NEW; END $$;
         CREATE TRIGGER fail BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION fail();",
    )
    .expect("trigger");
    the_answers_are_the_jobs_written(&mut q, |q: &mut PgQueue| {
        q.raw("DROP TRIGGER fail ON jobs").expect("drop")
    });
}

/// The jobs of an import of 20,000, each its own id and payload, due at once.
fn many(ids: &[(String, String)]) -> Vec<NewJob<'_>> {
    ids.iter()
        .map(|(id, payload)| NewJob {
            id,
            payload,
            max_attempts: 3,
            deadline: 1_000_000,
            now: 0,
            ..NewJob::default()
        })
        .collect()
}

/// An import of 20,000 jobs — some 100 ms of writes — commits in many transactions, where
/// `enqueue_many` would commit once.
#[test]
fn an_import_commits_piece_by_piece_on_sqlite() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let ids: Vec<(String, String)> = (0..20_000).map(|n| (format!("j{n}"), String::new())).collect();
    let mut q = queue();
    let commits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&commits);
    q.conn_mut()
        .commit_hook(Some(move || {
            counted.fetch_add(1, Ordering::Relaxed);
            false
        }))
        .expect("hook");
    let mut answers = Vec::new();
    q.enqueue_bulk(&many(&ids), &mut answers).expect("bulk");
    assert_eq!(answers.len(), 20_000);
    let commits = commits.load(Ordering::Relaxed);
    assert!(commits > 1, "{commits} commits");
}

/// On PostgreSQL, every row a transaction wrote carries its id (`xmin`): an import of 20,000
/// jobs is written by many transactions, none of more than `MAX_PIECE` jobs.
#[test]
fn an_import_commits_piece_by_piece_on_postgres() {
    let Some((_, mut q)) = pg_at("an_import_commits_piece_by_piece_on_postgres") else { return };
    let ids: Vec<(String, String)> = (0..20_000).map(|n| (format!("j{n}"), String::new())).collect();
    let mut answers = Vec::new();
    q.enqueue_bulk(&many(&ids), &mut answers).expect("bulk");
    assert_eq!(answers.len(), 20_000);
    let rows = q
        .raw_query("SELECT count(*)::int8 FROM jobs GROUP BY xmin::text ORDER BY 1 DESC")
        .expect("transactions");
    let sizes: Vec<i64> = rows.iter().map(|row| row.get(0)).collect();
    assert!(sizes.len() > 1, "{sizes:?}");
    assert!(sizes[0] <= super::bulk::MAX_PIECE as i64, "{sizes:?}");
    assert_eq!(sizes.iter().sum::<i64>(), 20_000);
}
