//! The bulk-import drill, on both stores: `retryq enqueue --file` of many lines beside a
//! running worker. The worker holds 2 s leases on attempts of 2.5 s, so it lives on its
//! heartbeats, and claims between them; the import must cost it no lease (every attempt it
//! began ends `ok`, on the job's first attempt, and no record says `lease expired`), and its
//! claims must go on while the import is under way — seen by a reader that finds the import
//! partly written before and after claims it did not see before. An import in one
//! transaction fails both: on SQLite its write lock outlasts the heartbeats' lease, and on
//! PostgreSQL its turn, held shared (SPEC 6.26), keeps every claim waiting to its end, and
//! no reader ever sees it partly written.
//!
//! The full size (1,000,000 lines) is the benchmark's: `retryq bench --scale`.

mod common;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use common::{BIN, kill, now_ms, wait, wait_until};
use retryq::{Backend, Enqueued, NewJob, Status};

/// The worker's jobs: every tenth runs past its lease (`long`), the rest at once.
const DRILL_JOBS: usize = 2_000;
/// The command of an attempt: 2.5 s for a `long` job, under a 2 s lease.
const EXEC: &str = r#"if [ "$(cat)" = long ]; then sleep 2.5; fi"#;

/// An import of `lines` jobs into the default queue, about 300 bytes a line.
fn import_file(path: &Path, lines: usize) {
    let mut file = std::io::BufWriter::new(fs::File::create(path).expect("create"));
    let pad = "x".repeat(180);
    for n in 0..lines {
        let payload = format!("{{\"n\":{n},\"pad\":\"{pad}\"}}");
        let line = serde_json::json!({"id": format!("import-{n}"), "payload": payload, "max_attempts": 5, "ttl": "1h"});
        writeln!(file, "{line}").expect("write");
    }
    file.flush().expect("flush");
}

/// The drill jobs, in the `drill` queue.
fn drill_jobs(store: &mut dyn Backend) {
    let ids: Vec<String> = (0..DRILL_JOBS).map(|n| format!("drill-{n}")).collect();
    let now = now_ms();
    let jobs: Vec<NewJob<'_>> = ids
        .iter()
        .enumerate()
        .map(|(n, id)| NewJob {
            id,
            payload: if n % 10 == 0 { "long" } else { "short" },
            max_attempts: 3,
            deadline: now + 3_600_000,
            now,
            queue: Some("drill"),
            ..NewJob::default()
        })
        .collect();
    let mut answers = Vec::new();
    store.enqueue_bulk(&jobs, &mut answers).expect("enqueue");
    assert!(answers.iter().all(|a| matches!(a, Ok(Enqueued::New))));
}

/// What a reader saw while the import ran: the imported jobs, then the drill jobs claimed so
/// far, then the imported jobs again.
#[derive(Clone, Copy, Debug)]
struct Seen {
    imported_before: u64,
    claimed: u64,
    imported_after: u64,
}

/// Reads `db` until `stop`, as fast as it answers.
fn watch(db: String, stop: Arc<AtomicBool>) -> thread::JoinHandle<Vec<Seen>> {
    thread::spawn(move || {
        let store = retryq::open_backend(&db).expect("open");
        let of = |queue: &str| store.stats_of(now_ms(), Some(queue)).expect("stats");
        let mut seen = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            let imported_before = of("default").pending;
            let drill = of("drill");
            let imported_after = of("default").pending;
            seen.push(Seen {
                imported_before,
                claimed: drill.leased + drill.done + drill.dead,
                imported_after,
            });
            thread::sleep(Duration::from_millis(5));
        }
        seen
    })
}

/// The worker, serving the `drill` queue with 2 s leases, its log in `log`.
fn worker(db: &str, log: &Path) -> Child {
    Command::new(BIN)
        .args(["work", "--db", db, "--worker", "drill", "--queue", "drill", "--concurrency", "4"])
        .args(["--lease", "2s", "--timeout", "10s", "--exec", EXEC])
        .env_remove("RETRYQ_DB")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(log).expect("log"))
        .spawn()
        .expect("spawn worker")
}

/// The drill on the store `db` names, with an import of `lines` lines.
fn drill(db: &str, dir: &Path, lines: usize) {
    let mut store = retryq::open_backend(db).expect("open");
    drill_jobs(&mut *store);
    let file = dir.join("import.jsonl");
    import_file(&file, lines);
    let log = dir.join("worker.log");
    let mut worker = worker(db, &log);
    let leased = || store.stats_of(now_ms(), Some("drill")).expect("stats").leased > 0;
    wait_until("the worker claims", Duration::from_secs(30), leased);
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch(db.to_owned(), Arc::clone(&stop));
    let began = now_ms();
    let import = Command::new(BIN)
        .args(["enqueue", "--db", db, "--file"])
        .arg(&file)
        .env_remove("RETRYQ_DB")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("import");
    let ended = now_ms();
    stop.store(true, Ordering::SeqCst);
    let seen = watcher.join().expect("watcher");
    kill(worker.id(), "TERM");
    let status = wait(&mut worker, Duration::from_secs(30));
    let log = fs::read_to_string(&log).expect("log");
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stderr));
    assert!(status.success(), "{status}: {log}");
    assert_eq!(store.stats_of(now_ms(), Some("default")).expect("stats").pending, lines as u64);

    // No lease lost: every job the worker claimed is done, on its first attempt, recorded `ok`.
    let mut long_across = 0;
    for n in 0..DRILL_JOBS {
        let id = format!("drill-{n}");
        let job = store.get(&id).expect("get").expect("kept");
        if job.attempts == 0 {
            continue;
        }
        let records = store.attempts(&id).expect("records");
        let outcomes: Vec<&str> = records.iter().map(|r| r.outcome.as_str()).collect();
        assert!(
            job.status == Status::Done && job.attempts == 1 && outcomes == ["ok"],
            "{id} lost its lease: {:?}, {} attempts, {outcomes:?}\n{log}",
            job.status,
            job.attempts
        );
        if n % 10 == 0 && records[0].claimed_at < ended && records[0].ended_at > began {
            long_across += 1;
        }
    }
    assert!(long_across > 0, "a long attempt ran while the import did");
    let audit = store.audit().expect("audit");
    assert!(audit.is_clean(), "{:?}", audit.violations);

    // Claims went on while the import was under way: between a reading that found it begun
    // and one that found it unfinished, the worker's claims went up.
    let total = lines as u64;
    let first = seen.iter().find(|s| s.imported_before > 0);
    let last = seen.iter().rev().find(|s| s.imported_after < total);
    let (Some(first), Some(last)) = (first, last) else {
        panic!("the import was never seen under way: {} readings, first {:?}", seen.len(), seen.first());
    };
    assert!(
        last.claimed > first.claimed,
        "no claim while the import was under way: {first:?} … {last:?} of {} readings",
        seen.len()
    );
}

#[test]
fn an_import_of_100000_lines_on_sqlite_costs_a_running_worker_no_lease() {
    let dir = tempfile::Builder::new().prefix("retryq-import-drill-").tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    drill(db.to_str().expect("a UTF-8 path"), dir.path(), 100_000);
}

#[test]
fn an_import_of_20000_lines_on_postgres_costs_a_running_worker_no_lease() {
    let Some(url) = retryq_pgtest::database("an_import_on_postgres_costs_a_running_worker_no_lease") else {
        return;
    };
    let dir = tempfile::Builder::new().prefix("retryq-import-drill-").tempdir().expect("tempdir");
    drill(&url, dir.path(), 20_000);
}
