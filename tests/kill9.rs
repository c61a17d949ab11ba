//! Kill -9, for real: worker processes on one database file, killed with SIGKILL at random
//! while they work, and nothing is lost.
//!
//! 200 jobs (half enqueued up front, half by `retryq enqueue` processes while the workers
//! run); 3 `retryq work` processes; every 150–450 ms a random worker is killed with SIGKILL
//! and a new one started, until no job is pending or leased. Twice over: one attempt at a
//! time per worker (`--concurrency 1`, a random seed), and sixteen (`--concurrency 16`) on
//! twenty fixed seeds, with 120 jobs of 200 ms each so that the kills land among many
//! attempts in flight (two runs at a time: about 80 s in a debug build on two cores). Each job's payload is its plan:
//! the exit status of each attempt (0, 75 or 65, drawn from the seed); the command appends
//! "id attempt" to a log, waits a moment (so that kills land inside attempts), and exits as
//! planned (20 ms, or 200 ms with sixteen in flight). Then:
//!
//! - every job is done or dead, and no id is lost;
//! - `retryq audit` is clean (SPEC section 4, invariants 1–6, on rows and history);
//! - no (id, attempt) ran twice, and no logged attempt exceeds the job's stored attempts;
//! - a done job's last attempt planned 0, a dead(permanent) one's planned 65: outcomes were
//!   recorded for the attempt that produced them;
//! - no claim of a job while its lease was live, read straight from the history;
//! - no worker or enqueue failed, and no log mentions a busy or locked database;
//! - every outcome a worker logged is in the job's history, as that attempt's transition: a
//!   worker killed between its commit and its log line loses a line, never stores less than
//!   it said;
//! - kills happened, and some landed inside an attempt (a lease was recovered), in one of up
//!   to three runs: where a kill lands is the machine's timing, and a loaded machine can make
//!   every kill of a run miss.
//!
//! `RETRYQ_KILL9_SEED=N` repeats a run; the seed is printed either way.

mod common;
#[path = "harness/kill9.rs"]
mod kill9;

use std::thread;

use kill9::{ONE, SIXTEEN, Trouble, killed_with_sigkill, until_a_kill_lands};

/// The seed of `RETRYQ_KILL9_SEED`, if set.
fn seed_from_env() -> Option<u64> {
    std::env::var("RETRYQ_KILL9_SEED").ok().and_then(|s| s.parse().ok())
}

#[test]
fn workers_killed_with_sigkill_lose_nothing() {
    let seed = seed_from_env().unwrap_or_else(rand::random);
    eprintln!("kill9: seed {seed} (RETRYQ_KILL9_SEED={seed} repeats this run)");
    until_a_kill_lands(seed, |seed| killed_with_sigkill(seed, ONE, None, Trouble::Kills));
}

#[test]
fn workers_with_sixteen_attempts_in_flight_killed_with_sigkill_lose_nothing() {
    let seeds: Vec<u64> = match seed_from_env() {
        Some(seed) => vec![seed],
        None => (1..=20).collect(),
    };
    // Two runs at a time, each on its own database file: a run mostly waits (for commands,
    // leases, backoff). More at once on two cores and the commands overrun their timeouts.
    let chunks: Vec<&[u64]> = seeds.chunks(seeds.len().div_ceil(2)).collect();
    thread::scope(|scope| {
        for chunk in chunks {
            scope.spawn(move || {
                for &seed in chunk {
                    eprintln!("kill9: seed {seed}, 16 in flight (RETRYQ_KILL9_SEED={seed} repeats this run)");
                    until_a_kill_lands(seed, |seed| killed_with_sigkill(seed, SIXTEEN, None, Trouble::Kills));
                }
            });
        }
    });
}
