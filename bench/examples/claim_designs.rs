//! What a claim design can buy on PostgreSQL, measured at its skeleton: the floor's table and
//! statements (`pg_floor.rs`: no history, no tallies, no reap), the floor's loop — enqueue,
//! claim, done, three commits per job — in 1, 2, 4 and 8 connections, under each way of
//! making claims linearizable. What each design costs here is its locking alone; the queue's
//! own work per claim comes on top.
//!
//! `cargo run --release -p retryq-bench --example claim_designs -- ROUNDS SECONDS [URL]`
//! (without a URL, a throwaway local cluster with fsync on). Prints each round's jobs/s per
//! design, then per connection count the medians and their ratios to the floor's, with the
//! deadlocks the server broke (each retried).
//!
//! The designs:
//!
//! - `floor`: the pick steps over rows others hold (`FOR UPDATE SKIP LOCKED`) and answers at
//!   once; nothing keeps enqueues out. Not linearizable (`docs/linearizability.md`).
//! - `turns`: SPEC 6.26. A claim takes the turn alone (an advisory lock held to its commit) and
//!   waits for a row it wants rather than stepping over it; an enqueue takes the turn shared.
//! - `step-over`: claims run side by side. A claim steps over rows others hold, then waits for
//!   every row before its pick (`FOR KEY SHARE`, which an `ok` completion does not wait for)
//!   and takes the first one still due, if a holder rolled back — so it answers only once
//!   those holders have committed. Enqueues still may not commit inside a claim: claims hold
//!   a lock on a table in `SHARE` mode, enqueues in `ROW EXCLUSIVE` (each mode shares with
//!   itself and excludes the other).
//! - `step-over-no-wait`: the same without the wait — the broken build a linearizability
//!   check must catch (a claim answers before the rows it stepped over commit).
//! - `step-over-unfenced`: the wait without keeping enqueues out.

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use postgres::error::SqlState;
use postgres::{Client, NoTls, Transaction};
use retryq_pgtest::Cluster;

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

const DESIGNS: [&str; 5] = ["floor", "turns", "step-over", "step-over-no-wait", "step-over-unfenced"];
const CONNECTIONS: [usize; 4] = [1, 2, 4, 8];

const DDL: &str = "
DROP TABLE IF EXISTS jobs; DROP TABLE IF EXISTS claims_turn;
CREATE TABLE claims_turn ();
CREATE TABLE jobs (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id text NOT NULL UNIQUE,
    status text NOT NULL, attempts bigint NOT NULL, available_at bigint, owner text);
CREATE INDEX jobs_due ON jobs (available_at, seq) WHERE status = 'pending';";

const INSERT: &str = "INSERT INTO jobs (id, status, attempts, available_at) VALUES ($1, 'pending', 0, $2)";
/// The floor's claim, one statement (`pg_floor.rs`).
const FLOOR_CLAIM: &str = "
    UPDATE jobs SET status = 'leased', attempts = attempts + 1, owner = $2, available_at = $3
    WHERE seq = (SELECT seq FROM jobs WHERE status = 'pending' AND available_at <= $1
                 ORDER BY available_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id";
const PICK_WAITING: &str =
    "SELECT seq, available_at FROM jobs WHERE status = 'pending' AND available_at <= $1
    ORDER BY available_at, seq LIMIT 1 FOR UPDATE";
const PICK_SKIPPING: &str =
    "SELECT seq, available_at FROM jobs WHERE status = 'pending' AND available_at <= $1
    ORDER BY available_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED";
/// The rows before the pick (all due rows when the pick found none), waited for.
const BEFORE: &str = "SELECT seq FROM jobs WHERE status = 'pending' AND available_at <= $1
    AND (available_at, seq) < ($2, $3) ORDER BY available_at, seq LIMIT 64 FOR KEY SHARE";
const LEASE: &str =
    "UPDATE jobs SET status = 'leased', attempts = attempts + 1, owner = $2, available_at = $3
    WHERE seq = $1 AND status = 'pending' RETURNING id";
const DONE: &str = "UPDATE jobs SET status = 'done', available_at = NULL, owner = NULL WHERE id = $1";

/// What a run of one design counted.
#[derive(Default)]
struct Counted {
    jobs: AtomicU64,
    deadlocks: AtomicU64,
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: claim_designs ROUNDS SECONDS [URL]";
    let rounds: usize = args.next().ok_or(usage)?.parse().map_err(|_| usage)?;
    let seconds: u64 = args.next().ok_or(usage)?.parse().map_err(|_| usage)?;
    let (_cluster, url) = match args.next() {
        Some(url) => (None, url),
        None => {
            let cluster = Cluster::start(true).map_err(|e| format!("a local cluster: {e:?}"))?;
            let url = cluster.create_database()?;
            (Some(cluster), url)
        }
    };
    let window = Duration::from_secs(seconds);
    // [connections][design] → (jobs/s, deadlocks) per round
    let mut seen = vec![vec![Vec::new(); DESIGNS.len()]; CONNECTIONS.len()];
    for round in 0..rounds {
        for (c, &connections) in CONNECTIONS.iter().enumerate() {
            let mut order: Vec<usize> = (0..DESIGNS.len()).collect();
            order.rotate_left(round % DESIGNS.len());
            for d in order {
                let (rate, deadlocks) = run(&url, DESIGNS[d], connections, window)?;
                println!(
                    "round {round} {connections} × {:<19} {rate:7.0} jobs/s  deadlocks {deadlocks}",
                    DESIGNS[d]
                );
                seen[c][d].push((rate, deadlocks));
            }
        }
    }
    println!("\nmedians of {rounds} rounds of {seconds} s: jobs/s (ratio to the floor) [deadlocks in all]");
    for (c, &connections) in CONNECTIONS.iter().enumerate() {
        let floor = median(seen[c][0].iter().map(|s| s.0).collect());
        let cells: Vec<String> = DESIGNS
            .iter()
            .zip(&seen[c])
            .map(|(design, runs)| {
                let rate = median(runs.iter().map(|s| s.0).collect());
                let deadlocks: u64 = runs.iter().map(|s| s.1).sum();
                format!("{design} {rate:.0} ({:.2}) [{deadlocks}]", rate / floor)
            })
            .collect();
        println!("{connections}: {}", cells.join(" | "));
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Jobs per second of `design` through `connections` connections over `window`, and the
/// deadlocks the server broke meanwhile.
fn run(url: &str, design: &'static str, connections: usize, window: Duration) -> Result<(f64, u64)> {
    Client::connect(url, NoTls)?.batch_execute(DDL)?;
    let stop = Arc::new(AtomicBool::new(false));
    let counted = Arc::new(Counted::default());
    let start = Instant::now();
    let loops: Vec<_> = (0..connections)
        .map(|n| {
            let (url, stop, counted) = (url.to_owned(), Arc::clone(&stop), Arc::clone(&counted));
            thread::spawn(move || cycle(&url, design, n, &stop, &counted))
        })
        .collect();
    thread::sleep(window);
    stop.store(true, Ordering::Relaxed);
    for each in loops {
        each.join().map_err(|_| "a connection's loop panicked")??;
    }
    let jobs = counted.jobs.load(Ordering::Relaxed) as f64;
    Ok((jobs / start.elapsed().as_secs_f64(), counted.deadlocks.load(Ordering::Relaxed)))
}

/// One connection's loop until `stop`: enqueue, claim, done.
fn cycle(url: &str, design: &str, n: usize, stop: &AtomicBool, counted: &Counted) -> Result<()> {
    let mut client = Client::connect(url, NoTls)?;
    client.batch_execute("SET synchronous_commit = on")?;
    let worker = format!("w{n}");
    let mut made = 0u64;
    while !stop.load(Ordering::Relaxed) {
        made += 1;
        let now = i64::try_from(retryq_core::now_ms()?)?;
        let id = format!("{n}-{made}");
        match design {
            "floor" | "step-over-unfenced" => {
                client.execute(INSERT, &[&id, &now])?;
            }
            _ => {
                let mut tx = client.transaction()?;
                if design == "turns" {
                    tx.execute("SELECT pg_advisory_xact_lock_shared(7)", &[])?;
                } else {
                    tx.batch_execute("LOCK TABLE claims_turn IN ROW EXCLUSIVE MODE")?;
                }
                tx.execute(INSERT, &[&id, &now])?;
                tx.commit()?;
            }
        }
        let leased = loop {
            match claim(&mut client, design, &worker, now) {
                Ok(leased) => break leased,
                Err(e) if e.code() == Some(&SqlState::T_R_DEADLOCK_DETECTED) => {
                    counted.deadlocks.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => return Err(e.into()),
            }
        };
        if let Some(id) = leased {
            client.execute(DONE, &[&id])?;
            counted.jobs.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// One claim under `design`: the id it leased, if any.
fn claim(
    client: &mut Client,
    design: &str,
    worker: &str,
    now: i64,
) -> std::result::Result<Option<String>, postgres::Error> {
    let until = now + 30_000;
    if design == "floor" {
        return client.query_opt(FLOOR_CLAIM, &[&now, &worker, &until]).map(|row| row.map(|r| r.get(0)));
    }
    let mut tx = client.transaction()?;
    let chosen = if design == "turns" {
        tx.execute("SELECT pg_advisory_xact_lock(7)", &[])?;
        tx.query_opt(PICK_WAITING, &[&now])?.map(|row| row.get::<_, i64>(0))
    } else {
        if design != "step-over-unfenced" {
            tx.batch_execute("LOCK TABLE claims_turn IN SHARE MODE")?;
        }
        step_over(&mut tx, design != "step-over-no-wait", now)?
    };
    let leased = match chosen {
        Some(seq) => tx.query_opt(LEASE, &[&seq, &worker, &until])?.map(|row| row.get(0)),
        None => None,
    };
    tx.commit()?;
    Ok(leased)
}

/// The pick that steps over rows others hold; with `wait`, then waits for the rows before it
/// and takes the first one still due.
fn step_over(
    tx: &mut Transaction<'_>,
    wait: bool,
    now: i64,
) -> std::result::Result<Option<i64>, postgres::Error> {
    let picked =
        tx.query_opt(PICK_SKIPPING, &[&now])?.map(|row| (row.get::<_, i64>(0), row.get::<_, i64>(1)));
    if !wait {
        return Ok(picked.map(|(seq, _)| seq));
    }
    let (seq, at) = picked.unwrap_or((i64::MAX, i64::MAX));
    let before = tx.query(BEFORE, &[&now, &at, &seq])?;
    Ok(before.first().map(|row| row.get(0)).or(picked.map(|(seq, _)| seq)))
}
