//! PostgreSQL throughput: the queue's enqueue → claim → complete loop with 1, 2, 4 and 8
//! worker processes sharing one PostgreSQL database, against the server's own floor (the same
//! three writes as bare single-row transactions at the same `synchronous_commit = on`), and
//! beside the SQLite queue with as many processes sharing one file — where SQLite's single
//! writer cannot scale with processes and a server with row locks can.
//!
//! The server is the benchmark's own throwaway cluster (`retryq-pgtest`, fsync on, so that a
//! commit costs what it costs in production) unless a URL names one. Each measurement gets a
//! fresh database, dropped after it.

use std::path::Path;
use std::time::Duration;

use retryq::PgQueue;
use retryq_pgtest::{Cluster, Unavailable};

use crate::report::{PgRow, PgThroughput, ProcessRow};
pub use crate::server::Server;
use crate::throughput::{self, Launcher, Side};
use crate::{BenchError, median, pg_floor, pg_worker};

/// Worker process counts measured.
pub const PROCESSES: [usize; 4] = [1, 2, 4, 8];

/// Measures every row; a server that cannot be had is a section that says so, not a failed run.
pub fn measure(
    launcher: &Launcher,
    dir: &Path,
    server: &Server,
    rounds: usize,
    window: Duration,
    worker_jobs: usize,
    progress: &dyn Fn(&str),
) -> Result<PgThroughput, BenchError> {
    let (cluster, note) = match server {
        Server::At(url) => (Cluster::existing(url), "the server named by --pg-url".to_owned()),
        Server::Own => match Cluster::start(true) {
            Ok(cluster) => (cluster, "a throwaway local cluster, fsync on, synchronous_commit on".to_owned()),
            Err(why @ Unavailable::NotInstalled) => {
                return Ok(PgThroughput {
                    available: false,
                    note: format!("unavailable: {why}"),
                    by_processes: Vec::new(),
                    worker: Vec::new(),
                    rounds,
                    window_s: window.as_secs_f64(),
                });
            }
            Err(e) => return Err(BenchError::Setup(format!("PostgreSQL: {e}"))),
        },
    };
    let mut queue = vec![Vec::new(); PROCESSES.len()];
    let mut floor = vec![Vec::new(); PROCESSES.len()];
    let mut ratios = vec![Vec::new(); PROCESSES.len()];
    let mut sqlite = vec![Vec::new(); PROCESSES.len()];
    for round in 0..rounds {
        progress(&format!("round {}/{rounds}: PostgreSQL, 1 to 8 processes", round + 1));
        for (i, &processes) in PROCESSES.iter().enumerate() {
            let sides =
                if round % 2 == 0 { [Side::PgQueue, Side::PgFloor] } else { [Side::PgFloor, Side::PgQueue] };
            let mut pair = [0.0; 2];
            for side in sides {
                pair[usize::from(side == Side::PgFloor)] =
                    on_fresh_database(&cluster, launcher, side, processes, window)?;
            }
            queue[i].push(pair[0]);
            floor[i].push(pair[1]);
            ratios[i].push(pair[0] / pair[1]);
            sqlite[i].push(throughput::measure(launcher, dir, Side::Queue, processes, window, round)?);
        }
    }
    let by_processes = PROCESSES
        .iter()
        .enumerate()
        .map(|(i, &processes)| PgRow {
            postgres: ProcessRow::of_rounds(processes, &queue[i], &floor[i], &ratios[i]),
            sqlite_jobs_per_s: median(&mut sqlite[i]),
        })
        .collect();
    let worker = pg_worker::measure(&cluster, dir, rounds, worker_jobs, progress)?;
    Ok(PgThroughput { available: true, note, by_processes, worker, rounds, window_s: window.as_secs_f64() })
}

/// One measurement on a new database, with its schema made before the workers start.
fn on_fresh_database(
    cluster: &Cluster,
    launcher: &Launcher,
    side: Side,
    processes: usize,
    window: Duration,
) -> Result<f64, BenchError> {
    let url = cluster.create_database().map_err(BenchError::Setup)?;
    match side {
        Side::PgQueue => drop(PgQueue::connect(&url)?),
        _ => drop(pg_floor::open(&url)?),
    }
    let rate = throughput::measure_on(launcher, &url, side, processes, window);
    cluster.drop_database(&url).map_err(BenchError::Setup)?;
    rate
}

/// The section as table lines.
pub fn render(p: &PgThroughput) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if !p.available {
        let _ = writeln!(out, "\nPostgreSQL: {}", p.note);
        return out;
    }
    let _ = writeln!(out, "\nPostgreSQL ({}): medians of {} rounds of {:.1} s", p.note, p.rounds, p.window_s);
    let _ = writeln!(
        out,
        "{:<44} {:>14} {:>14} {:>8} {:>14}",
        "measure", "retryq", "reference", "ratio", "SQLite queue"
    );
    for PgRow { postgres: row, sqlite_jobs_per_s } in &p.by_processes {
        let _ = writeln!(
            out,
            "{:<44} {:>14} {:>14} {:>8} {:>14}",
            format!(
                "jobs/s on PostgreSQL, {} process{}",
                row.processes,
                if row.processes == 1 { "" } else { "es" }
            ),
            format!("{:.0}", row.queue_jobs_per_s),
            format!("floor {:.0}", row.floor_jobs_per_s),
            format!("{:.2}", row.ratio),
            format!("{sqlite_jobs_per_s:.0}"),
        );
    }
    for row in &p.worker {
        let _ = writeln!(
            out,
            "{:<44} {:>14} {:>14} {:>8} {:>14}",
            format!("worker jobs/s, {} × {} in flight", row.workers, row.slots),
            format!("{:.0}", row.jobs_per_s),
            format!("floor {:.0}", row.floor_jobs_per_s),
            format!("{:.2}", row.ratio),
            format!("{:.0}", row.sqlite_jobs_per_s),
        );
    }
    out
}
