//! Tests of `stats` on PostgreSQL (SPEC 3.8): the sharded counts (`ddl.rs`) read without a
//! scan of the jobs, checked by the audit, written by concurrent transactions without
//! waiting for each other, and never a deadlock under a fleet of workers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use super::PgQueue;
use super::tests::{deadlocks, pg_at};
use crate::{Check, Completion, NewJob, Outcome, Report};

fn job<'a>(id: &'a str, queue: &'a str, now: u64) -> NewJob<'a> {
    NewJob {
        id,
        payload: id,
        max_attempts: 3,
        deadline: 1_000_000,
        now,
        queue: Some(queue),
        ..NewJob::default()
    }
}

/// The plan of `sql` run with `args` (a prepared statement, so on the plan the session's
/// `plan_cache_mode` picks), one line a node.
pub(super) fn plan(q: &PgQueue, sql: &str, args: &str) -> String {
    q.raw(&format!("PREPARE probe AS {sql}")).expect("prepare");
    let lines: Vec<String> = q
        .raw_query(&match args {
            "" => "EXPLAIN EXECUTE probe".to_string(),
            _ => format!("EXPLAIN EXECUTE probe({args})"),
        })
        .expect("explain")
        .iter()
        .map(|row| row.get(0))
        .collect();
    q.raw("DEALLOCATE probe").expect("deallocate");
    lines.join("\n")
}

/// `stats` reads the counts, the leases' index and the open jobs' index: no plan of it scans
/// the jobs, for one queue or all, custom or generic (the store's statements are prepared
/// once and run many times), on a table the planner knows to be large beside its leases.
#[test]
fn stats_reads_the_counts_and_the_indexes_never_the_jobs() {
    let Some((_, mut q)) = pg_at("stats_reads_the_counts_and_the_indexes") else { return };
    let ids: Vec<String> = (0..4000).map(|i| format!("j{i}")).collect();
    let jobs: Vec<NewJob<'_>> =
        ids.iter().zip(0..).map(|(id, i)| job(id, if i % 2 == 0 { "a" } else { "b" }, 0)).collect();
    for chunk in jobs.chunks(500) {
        q.enqueue_many(chunk).expect("enqueue");
    }
    for c in q.claim_batch_from("w", &["a", "b"], 10, 300).expect("claim") {
        if c.id().ends_with('0') {
            q.complete(&Completion::new(&c.lease, Report::from(Outcome::Ok), 20, 0.0)).expect("done");
        }
    }
    q.raw("ANALYZE jobs; ANALYZE counts").expect("analyze");
    for mode in ["force_custom_plan", "force_generic_plan"] {
        q.raw(&format!("SET plan_cache_mode = {mode}")).expect("mode");
        for queue in ["NULL", "'a'"] {
            let counts = plan(&q, super::inspect::COUNTS, queue);
            assert!(!counts.contains(" on jobs"), "{mode} {queue}:\n{counts}");
            assert!(counts.contains(" on counts"), "{mode} {queue}:\n{counts}");
            // `list`'s count of a full page reads the counts too.
            for args in ["'done', NULL", "'dead', 'cancelled'", "'pending', NULL"] {
                let count = plan(&q, super::inspect::COUNT, args);
                assert!(
                    !count.contains(" on jobs") && count.contains(" on counts"),
                    "{mode} {args}:\n{count}"
                );
            }
            let rest = plan(&q, super::inspect::LEASES_AND_AGE, &format!("1000, {queue}"));
            assert!(!rest.contains("Seq Scan on jobs"), "{mode} {queue}:\n{rest}");
            // The jobs are reached through the two indexes alone (a bitmap heap scan of
            // `jobs_leases`' entries visits the leases' rows, no others).
            let used: Vec<&str> = rest
                .split_whitespace()
                .filter_map(|word| word.strip_prefix("jobs_").map(|rest| (word, rest)))
                .filter(|(_, rest)| !rest.bytes().all(|b| b.is_ascii_digit())) // an alias
                .map(|(word, _)| word)
                .collect();
            assert!(used.contains(&"jobs_leases"), "{mode} {queue}:\n{rest}");
            assert!(used.contains(&"jobs_open_age"), "{mode} {queue}:\n{rest}");
            assert!(
                used.iter().all(|i| ["jobs_leases", "jobs_open_age"].contains(i)),
                "{mode} {queue}:\n{rest}"
            );
        }
    }
    q.raw("RESET plan_cache_mode").expect("reset");
    let stats = q.stats(1000).expect("stats");
    assert_eq!(
        (stats.pending, stats.leased, stats.done, stats.leased_expired),
        (3700, 270, 30, 0),
        "{stats:?}"
    );
    assert_eq!(stats.oldest_open_age_ms, Some(1000));
    // Every lease expired by 2000 is counted once, in its own queue.
    assert_eq!(q.stats(2000).expect("stats").leased_expired, 270);
    let a = q.stats_of(2000, Some("a")).expect("stats of a");
    assert_eq!((a.pending + a.leased + a.done, a.leased_expired), (2000, a.leased), "{a:?}");
    assert!(q.audit().expect("audit").is_clean());
}

/// A count changed by hand, or a count of nothing, is the audit's finding, reported as the
/// SQLite store reports it; the sum over the shards is what it checks, not one shard.
#[test]
fn the_audit_checks_the_counts_against_the_rows() {
    let Some((_, mut q)) = pg_at("the_audit_checks_the_counts_against_the_rows") else { return };
    for id in ["x", "y", "z"] {
        q.enqueue(&job(id, "a", 0)).expect("enqueue");
    }
    q.cancel("z", 1).expect("cancel");
    q.prune(5, 10).expect("prune");
    assert!(q.audit().expect("audit").is_clean());
    // Moving a count between shards keeps every sum: still clean.
    q.raw(
        "INSERT INTO counts (queue, status, reason, shard, n) VALUES ('a', 'pending', '', 15, 5)
             ON CONFLICT (queue, status, reason, shard) DO UPDATE SET n = counts.n + 5;
         INSERT INTO counts (queue, status, reason, shard, n) VALUES ('a', 'pending', '', 14, -5)
             ON CONFLICT (queue, status, reason, shard) DO UPDATE SET n = counts.n - 5;",
    )
    .expect("shuffle");
    assert!(q.audit().expect("audit").is_clean(), "{:#?}", q.audit().expect("audit").violations);
    q.raw(
        "UPDATE counts SET n = n + 1 WHERE ctid = (SELECT ctid FROM counts
                                                  WHERE queue = 'a' AND status = 'pending' LIMIT 1);
         DELETE FROM counts WHERE status = 'pruned_dead';
         INSERT INTO counts (queue, status, reason, shard, n) VALUES ('ghost', 'done', '', 3, 7);",
    )
    .expect("tamper");
    let audit = q.audit().expect("audit");
    let found = |job: &str, what: &str| {
        audit.violations.iter().any(|v| v.check == Check::CountsMatchRows && v.job == job && v.what == what)
    };
    assert!(found("a", "queue \"a\" counts 3 pending but holds 2"), "{:#?}", audit.violations);
    assert!(found("a", "queue \"a\" counts 0 pruned_dead but holds 1"), "{:#?}", audit.violations);
    assert!(found("ghost", "queue \"ghost\" counts 7 done but holds 0"), "{:#?}", audit.violations);
    assert_eq!(audit.violations.len(), 3, "{:#?}", audit.violations);
    assert_eq!(q.stats_of(10, Some("a")).expect("stats").pending, 3, "stats reads the counts");
}

/// Two transactions that move jobs of one queue between the same statuses at once each write
/// a shard of their own: the second waits for no counter of the first (a wait would run into
/// the lock timeout), and the sums count both once both commit.
#[test]
fn concurrent_transitions_write_shards_of_their_own() {
    let Some((url, mut q)) = pg_at("concurrent_transitions_write_shards_of_their_own") else { return };
    for id in ["x", "y"] {
        q.enqueue(&job(id, "a", 0)).expect("enqueue");
    }
    let mut holder = postgres::Client::connect(&url, postgres::NoTls).expect("holder");
    let mut open = holder.transaction().expect("begin");
    open.batch_execute(
        "UPDATE jobs SET status = 'dead', dead_reason = 'cancelled', available_at = NULL, ended_at = 1,
                         updated_at = 1 WHERE id = 'x'",
    )
    .expect("an end under way");
    assert_eq!(q.cancel("y", 1).expect("cancel"), crate::Cancelled::Ended, "did not wait");
    open.commit().expect("commit");
    let stats = q.stats_of(1, Some("a")).expect("stats");
    assert_eq!((stats.pending, stats.dead_cancelled), (0, 2), "{stats:?}");
    let shards: i64 =
        q.raw_query("SELECT count(DISTINCT shard) FROM counts WHERE status = 'dead'").expect("shards")[0]
            .get(0);
    assert_eq!(shards, 2);
    assert!(q.audit().expect("audit").is_clean());
}

/// Sixteen connections — as many as there are shards — enqueueing, claiming and completing in
/// batches over two queues, cancelling, reaping and pruning at once: no deadlock, the counts
/// match the rows (the audit) and `stats` adds up to every job.
#[test]
fn a_fleet_of_batch_workers_never_deadlocks_on_the_counts() {
    let Some((url, q)) = pg_at("a_fleet_of_batch_workers_never_deadlocks") else { return };
    const WORKERS: u64 = 16;
    const ROUNDS: u64 = 25;
    const BATCH: u64 = 6;
    let clock = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(WORKERS as usize));
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (url, start, clock) = (url.clone(), Arc::clone(&start), Arc::clone(&clock));
            std::thread::spawn(move || {
                let mut q = PgQueue::connect(&url).expect("connect");
                q.set_settings(crate::Settings {
                    lease_ms: 200,
                    base_ms: 10,
                    cap_ms: 50,
                    ..crate::Settings::default()
                })
                .expect("settings");
                let worker = format!("w{w}");
                let tick = || clock.fetch_add(1, Ordering::SeqCst);
                start.wait();
                for round in 0..ROUNDS {
                    let ids: Vec<String> = (0..BATCH).map(|i| format!("{w}-{round}-{i}")).collect();
                    let jobs: Vec<NewJob<'_>> = ids
                        .iter()
                        .zip(0..)
                        .map(|(id, i)| job(id, if (w + i) % 2 == 0 { "a" } else { "b" }, tick()))
                        .collect();
                    q.enqueue_many(&jobs).expect("enqueue");
                    let queues: &[&str] = if w % 3 == 0 { &["b", "a"] } else { &["a", "b"] };
                    let claims = q.claim_batch_from(&worker, queues, tick(), BATCH as usize).expect("claim");
                    let now = tick();
                    let completions: Vec<Completion<'_>> = claims
                        .iter()
                        .zip(0..)
                        .filter(|(_, i)| (i + round) % 7 != 0) // the worker drops one now and then
                        .map(|(c, i)| {
                            let outcome =
                                [Outcome::Ok, Outcome::Retryable, Outcome::Permanent][(i + w) as usize % 3];
                            Completion::new(&c.lease, Report::from(outcome), now, 0.5)
                        })
                        .collect();
                    for result in q.complete_batch(&completions).expect("complete") {
                        if let Err(e) = result {
                            assert_ne!(e.kind(), crate::ErrorKind::Storage, "{e}");
                        }
                    }
                    if round % 5 == w % 5
                        && let Err(e) = q.cancel(&format!("{}-{round}-0", (w + 1) % WORKERS), tick())
                    {
                        assert_ne!(e.kind(), crate::ErrorKind::Storage, "{e}");
                    }
                    if round % 4 == 0 {
                        q.reap(tick()).expect("reap");
                    }
                    if round % 8 == w % 8 {
                        let now = tick();
                        q.prune(now.saturating_sub(50), now).expect("prune");
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker");
    }
    let all = WORKERS * ROUNDS * BATCH;
    let stats = q.stats(clock.load(Ordering::SeqCst)).expect("stats");
    assert_eq!(
        stats.pending + stats.leased + stats.done + stats.dead + stats.pruned_done + stats.pruned_dead,
        all,
        "{stats:?}"
    );
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
    assert_eq!(deadlocks(&q), 0, "the server detected a deadlock");
}

/// [`deadlocks`] sees one: two sessions that each lock a job the other then wants.
#[test]
fn the_deadlock_count_sees_a_deadlock() {
    let Some((url, mut q)) = pg_at("the_deadlock_count_sees_a_deadlock") else { return };
    for id in ["x", "y"] {
        q.enqueue(&job(id, "a", 0)).expect("enqueue");
    }
    let lock = |first: &'static str, second: &'static str, barrier: Arc<Barrier>| {
        let url = url.clone();
        std::thread::spawn(move || {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("client");
            let mut tx = client.transaction().expect("begin");
            tx.execute("SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE", &[&first]).expect("first");
            barrier.wait();
            let second = tx.execute("SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE", &[&second]);
            second.err().and_then(|e| e.code().map(|c| c.code().to_owned()))
        })
    };
    let barrier = Arc::new(Barrier::new(2));
    let (a, b) = (lock("x", "y", Arc::clone(&barrier)), lock("y", "x", barrier));
    let codes = [a.join().expect("a"), b.join().expect("b")];
    assert!(codes.contains(&Some("40P01".to_owned())), "{codes:?}");
    assert_eq!(deadlocks(&q), 1);
}
