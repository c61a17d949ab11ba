//! `retryq bench`'s durable throughput pairs alone — the queue's worker processes against the
//! floor's, one and two processes sharing a file — for one or several `retryq` binaries,
//! alternated round by round so that each sees the machine in the same states: the way to
//! compare two builds' SQLite throughput on a shared machine.
//!
//! `cargo run --release -p retryq-bench --example throughput_pairs -- ROUNDS BINARY…`
//! (each binary runs its own hidden `bench-worker`; the floor is the same in all). Prints each
//! pair, then per binary and process count the medians of the queue's and the floor's jobs/s
//! and of the paired ratios.

use std::error::Error;
use std::path::PathBuf;

use retryq_bench::throughput::{self, Launcher, Side};

/// `retryq bench`'s own window (not `--quick`).
const WINDOW: std::time::Duration = std::time::Duration::from_secs(3);

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: throughput_pairs ROUNDS BINARY…";
    let rounds: usize = args.next().ok_or(usage)?.parse().map_err(|_| usage)?;
    let binaries: Vec<PathBuf> = args.map(PathBuf::from).collect();
    if binaries.is_empty() {
        return Err(usage.into());
    }
    let dir = tempfile::tempdir_in("/var/tmp")?;
    // (binary, processes) → [(queue, floor, ratio)]
    let mut pairs = vec![vec![Vec::new(); 2]; binaries.len()];
    for round in 0..rounds {
        for (b, program) in binaries.iter().enumerate() {
            let launcher = Launcher { program: program.clone(), args: vec!["bench-worker".into()] };
            for (p, processes) in [1usize, 2].into_iter().enumerate() {
                let sides =
                    if round % 2 == 0 { [Side::Queue, Side::Floor] } else { [Side::Floor, Side::Queue] };
                let mut pair = [0.0; 2];
                for side in sides {
                    pair[usize::from(side == Side::Floor)] =
                        throughput::measure(&launcher, dir.path(), side, processes, WINDOW, round)?;
                }
                let ratio = pair[0] / pair[1];
                println!(
                    "round {round} {} × {processes}: queue {:.0} floor {:.0} ratio {ratio:.2}",
                    program.display(),
                    pair[0],
                    pair[1]
                );
                pairs[b][p].push((pair[0], pair[1], ratio));
            }
        }
    }
    for (b, program) in binaries.iter().enumerate() {
        for (p, processes) in [1, 2].into_iter().enumerate() {
            let of = |pick: fn(&(f64, f64, f64)) -> f64| {
                retryq_bench::median(&mut pairs[b][p].iter().map(pick).collect::<Vec<f64>>())
            };
            println!(
                "median {} × {processes}: queue {:.0} floor {:.0} ratio {:.2}",
                program.display(),
                of(|x| x.0),
                of(|x| x.1),
                of(|x| x.2)
            );
        }
    }
    Ok(())
}
