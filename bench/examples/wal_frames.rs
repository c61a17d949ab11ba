//! The pages each SQLite commit writes: WAL frames per operation (enqueue, claim, complete) of
//! the queue and of the floor (`floor.rs`), each frame counted under the table or index whose
//! page it is. A durable commit's cost grows with its frames (each is 4 KiB appended to the
//! WAL before the fsync, and copied again by the checkpoint), so this is where the queue's
//! throughput against the floor goes, counted rather than timed: the same on a quiet machine
//! and a loaded one.
//!
//! `cargo run --release -p retryq-bench --example wal_frames [JOBS]` (default 300). A reader
//! holds a transaction open across each measured phase so that the WAL is never restarted
//! under it; each frame's page number is read from its header and named by `dbstat`.
//!
//! With `--without-notes`, schema 4's notes triggers (the attempt records and tallies, SPEC
//! 6.36) are dropped first: what the notes cost, beside what the rest costs.

use std::collections::{BTreeMap, HashMap};
use std::error::Error;
use std::path::Path;

use retryq::{Completion, NewJob, Outcome, Queue};
use retryq_bench::floor;
use rusqlite::Connection;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const PAYLOAD: &str = r#"{"order":"order-7","sku":"snack","qty":3}"#;

/// A WAL frame's header, before its page (SQLite's file format, 4.1).
const FRAME_HEADER: usize = 24;

/// The triggers that write schema 4's notes on SQLite (`impl/src/ddl.rs`).
const NOTES_TRIGGERS: [&str; 7] = [
    "jobs_tally_enqueued",
    "jobs_tally_moved",
    "jobs_tally_cancel_requested",
    "jobs_tally_heartbeat",
    "attempts_tally_ended",
    "jobs_attempt_claimed",
    "jobs_attempt_reported",
];

/// Frames per operation, each under the b-tree its page belongs to.
struct Frames {
    total: f64,
    by_tree: Vec<(String, f64)>,
}

/// Runs `op` `n` times with a reader holding the WAL, and counts the frames it appended.
fn frames(db: &Path, n: u64, op: &mut dyn FnMut(u64) -> Result<()>) -> Result<Frames> {
    let wal = db.with_extension("db-wal");
    let reader = Connection::open(db)?;
    reader.execute_batch("BEGIN")?;
    let _: i64 = reader.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))?;
    let page: usize = reader.query_row("PRAGMA page_size", [], |row| row.get(0))?;
    let start = std::fs::metadata(&wal)?.len() as usize;
    for i in 0..n {
        op(i)?;
    }
    let bytes = std::fs::read(&wal)?;
    reader.execute_batch("COMMIT")?;
    let names: HashMap<u32, String> = {
        let mut statement = reader.prepare("SELECT pageno, name FROM dbstat")?;
        let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut by_tree: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0u64;
    let mut at = start;
    while at + FRAME_HEADER + page <= bytes.len() {
        let number = u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let name = names.get(&number).cloned().unwrap_or_else(|| "(free or header)".to_owned());
        *by_tree.entry(name).or_default() += 1;
        total += 1;
        at += FRAME_HEADER + page;
    }
    let per = |k: u64| k as f64 / n as f64;
    let mut by_tree: Vec<(String, f64)> = by_tree.into_iter().map(|(name, k)| (name, per(k))).collect();
    by_tree.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(Frames { total: per(total), by_tree })
}

fn print(side: &str, op: &str, frames: &Frames) {
    let trees: Vec<String> = frames.by_tree.iter().map(|(name, k)| format!("{name} {k:.2}")).collect();
    println!("{side:6} {op:9} {:6.2}  {}", frames.total, trees.join(", "));
}

fn main() -> Result<()> {
    let mut n = 300;
    let mut without_notes = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--without-notes" => without_notes = true,
            jobs => n = jobs.parse().map_err(|_| format!("JOBS must be a number, not {jobs:?}"))?,
        }
    }
    let dir = tempfile::tempdir()?;

    let db = dir.path().join("queue.db");
    let mut q = Queue::open(&db)?;
    if without_notes {
        let conn = Connection::open(&db)?;
        for trigger in NOTES_TRIGGERS {
            conn.execute_batch(&format!("DROP TRIGGER {trigger}"))?;
        }
    }
    let now = retryq::now_ms()?;
    let id = |i: u64| format!("job-{i:09}");
    let mut leases = Vec::new();
    let enqueue = frames(&db, n, &mut |i| {
        let job = NewJob {
            id: &id(i),
            payload: PAYLOAD,
            max_attempts: 5,
            deadline: now + 3_600_000,
            now,
            ..NewJob::default()
        };
        q.enqueue(&job)?;
        Ok(())
    })?;
    let claim = frames(&db, n, &mut |_| {
        leases.push(q.claim("w", now)?.ok_or("nothing to claim")?.lease);
        Ok(())
    })?;
    let mut leases = leases.into_iter();
    let complete = frames(&db, n, &mut |_| {
        let lease = leases.next().ok_or("no lease left")?;
        q.complete(&Completion::new(&lease, Outcome::Ok, now, 0.0))?;
        Ok(())
    })?;
    println!(
        "WAL frames per operation ({n} jobs{}), and under which table or index:",
        if without_notes { ", notes' triggers dropped" } else { "" }
    );
    print("queue", "enqueue", &enqueue);
    print("queue", "claim", &claim);
    print("queue", "complete", &complete);
    println!("queue  per job   {:6.2}", enqueue.total + claim.total + complete.total);

    let db = dir.path().join("floor.db");
    let conn = floor::open(&db)?;
    let mut floor = floor::Floor::new(&conn)?;
    let cycle = frames(&db, n, &mut |i| {
        floor.cycle(&id(i), PAYLOAD, "w", now)?;
        Ok(())
    })?;
    print("floor", "per job", &cycle);
    Ok(())
}
