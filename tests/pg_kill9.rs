//! Kill -9 and a server restart on PostgreSQL: `retryq work --db postgres://…` processes,
//! killed with SIGKILL at random while they work (three at a time, then eight), and a
//! server stopped as a crash would stop it (`pg_ctl stop -m immediate`) under running
//! workers and started again a few seconds later. Each run goes on until no job is pending
//! or leased, then: every job done or dead and none lost, `retryq audit` clean, no
//! (id, attempt) run twice, every logged outcome stored (see `tests/kill9.rs` for the whole
//! list). In the restart, no worker is killed and none may exit with an error: each logs
//! the outage once, waits it out, and carries on.
//!
//! Each run gets a database of its own on the tests' throwaway cluster (the restart, a
//! cluster of its own); without PostgreSQL installed they skip loudly (and fail under CI).
//! `RETRYQ_KILL9_SEED=N` repeats a run.

mod common;
#[path = "harness/kill9.rs"]
mod kill9;

use std::thread;
use std::time::Duration;

use kill9::{ONE, Shape, Trouble, killed_with_sigkill, until_a_kill_lands};
use retryq_pgtest::{Cluster, Unavailable};

/// One attempt at a time per worker, as `tests/kill9.rs`'s first run, but attempts of
/// 100 ms: a claim on PostgreSQL takes a fraction of SQLite's time, and with 20 ms attempts
/// a worker spends so little of its time inside one that the kills may all miss.
const ONE_SLOWER: Shape = Shape { sleep: "0.1", ..ONE };

fn seed() -> u64 {
    let seed =
        std::env::var("RETRYQ_KILL9_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    eprintln!("pg_kill9: seed {seed} (RETRYQ_KILL9_SEED={seed} repeats this run)");
    seed
}

#[test]
fn three_workers_on_postgres_killed_with_sigkill_lose_nothing() {
    let name = "three_workers_on_postgres_killed_with_sigkill_lose_nothing";
    if retryq_pgtest::database(name).is_none() {
        return;
    }
    until_a_kill_lands(seed(), |seed| {
        let url = retryq_pgtest::database(name).expect("a database of its own");
        killed_with_sigkill(seed, ONE_SLOWER, Some(&url), Trouble::Kills)
    });
}

#[test]
fn eight_workers_on_postgres_killed_with_sigkill_lose_nothing() {
    let name = "eight_workers_on_postgres_killed_with_sigkill_lose_nothing";
    if retryq_pgtest::database(name).is_none() {
        return;
    }
    let eight = Shape { workers: 8, ..ONE_SLOWER };
    until_a_kill_lands(seed(), |seed| {
        let url = retryq_pgtest::database(name).expect("a database of its own");
        killed_with_sigkill(seed, eight, Some(&url), Trouble::Kills)
    });
}

/// The server crashes (`-m immediate`) under three running workers, stays down three
/// seconds, and comes back; the workers carry on and the run ends as any other.
#[test]
fn workers_carry_on_through_a_server_restart() {
    let cluster = match Cluster::start(false) {
        Ok(cluster) => cluster,
        Err(Unavailable::NotInstalled) => {
            // The same loud skip (a failure under CI) as every PostgreSQL test.
            assert!(retryq_pgtest::database("workers_carry_on_through_a_server_restart").is_none());
            return;
        }
        Err(Unavailable::Failed(why)) => panic!("PostgreSQL did not start: {why}"),
    };
    let url = cluster.create_database().expect("database");
    let restart = || {
        cluster.stop_immediate().expect("stop");
        thread::sleep(Duration::from_secs(3));
        cluster.restart().expect("restart");
    };
    // Attempts of 200 ms, four in flight per worker: the crash lands inside several of them.
    let shape = Shape { workers: 3, concurrency: 4, jobs: 150, up_front: 80, per_round: 10, sleep: "0.2" };
    killed_with_sigkill(seed(), shape, Some(&url), Trouble::ServerRestart(&restart));
}
