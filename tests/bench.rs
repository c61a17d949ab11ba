//! `retryq bench`'s worker processes through the real binary: the throughput benchmark's
//! ready/go protocol with one and two processes on a shared file, for the queue and for the
//! floor, and a worker refusing a spec it cannot read. (The full `retryq bench` runs for
//! minutes and times things; it is not a test. Speed is measured, never asserted.)

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::BIN;

use retryq_bench::Launcher;
use retryq_bench::throughput::{Side, measure, measure_on};

fn launcher() -> Launcher {
    Launcher { program: PathBuf::from(BIN), args: vec!["bench-worker".into()] }
}

#[test]
fn workers_take_jobs_through_for_the_queue_and_the_floor() {
    let dir = tempfile::tempdir().expect("tempdir");
    for side in [Side::Queue, Side::Floor] {
        for processes in [1, 2] {
            let rate = measure(&launcher(), dir.path(), side, processes, Duration::from_millis(300), 0)
                .unwrap_or_else(|e| panic!("{side:?} with {processes} processes: {e}"));
            assert!(rate > 0.0, "{side:?} with {processes} processes took no job through");
        }
    }
    // Each measurement removes its database when done.
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("read_dir").collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_worker_refuses_a_spec_it_cannot_read() {
    let out = Command::new(BIN).args(["bench-worker", "{\"side\":\"sideways\"}"]).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("json"), "{stderr}");
}

#[test]
fn workers_take_jobs_through_on_postgres_for_the_queue_and_the_floor() {
    for side in [Side::PgQueue, Side::PgFloor] {
        for processes in [1, 3] {
            let Some(url) = retryq_pgtest::database("bench on postgres") else { return };
            match side {
                Side::PgQueue => drop(retryq::PgQueue::connect(&url).expect("schema")),
                _ => drop(retryq_bench::pg_floor::open(&url).expect("floor table")),
            }
            let rate = measure_on(&launcher(), &url, side, processes, Duration::from_millis(300))
                .unwrap_or_else(|e| panic!("{side:?} with {processes} processes: {e}"));
            assert!(rate > 0.0, "{side:?} with {processes} processes took no job through");
            let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
            let done: i64 = client
                .query_one("SELECT count(*) FROM jobs WHERE status = 'done' AND attempts = 1", &[])
                .expect("count")
                .get(0);
            assert!(done > 0, "{side:?}: jobs went through the database");
        }
    }
}

/// The worker's PostgreSQL rows: every job done on both stores (the measure fails otherwise),
/// and the claims and completions batched — fewer commits per job than the two a job takes
/// one at a time.
#[test]
fn the_worker_on_postgres_runs_every_job_in_batches() {
    let Some(url) = retryq_pgtest::database("bench worker on postgres") else { return };
    let cluster = retryq_pgtest::Cluster::existing(&url);
    let dir = tempfile::tempdir().expect("tempdir");
    let rows = retryq_bench::pg_worker::measure(&cluster, dir.path(), 1, 400, &|_| {}).expect("measure");
    let workers: Vec<usize> = rows.iter().map(|r| r.workers).collect();
    assert_eq!(workers, retryq_bench::pg_worker::WORKERS);
    for row in &rows {
        assert!(row.jobs_per_s > 0.0 && row.floor_jobs_per_s > 0.0 && row.sqlite_jobs_per_s > 0.0, "{row:?}");
        assert!(row.commits_per_job < 2.0, "{row:?}");
    }
}

/// Every operation `retryq bench --scale` measures, in the order it measures them; the
/// schema 3 rows are SQLite's alone.
const SCALE_OPS: [&str; 26] = [
    "stats",
    "list --status pending",
    "list --status done",
    "list --reason cancelled",
    "GET / (overview)",
    "GET /metrics",
    "GET /jobs",
    "GET /jobs?status=pending",
    "GET /jobs?queue=email",
    "GET /jobs?status=dead&reason=cancelled",
    "GET /jobs?prefix=<one job's id>",
    "GET /job?id=<a done job>",
    "GET /job?id=<a pruned job>",
    "audit",
    "claim",
    "complete",
    "enqueue",
    "reap of 10 overdue",
    "reap of 1% overdue",
    "prune of 1%",
    "prune_at_most of 100",
    "upgrade from schema 4",
    "import: enqueue_bulk of 1000 jobs",
    "import: enqueue --file of 500 lines",
    "audit, schema 3, before its upgrade",
    "upgrade from schema 3",
];

/// `retryq bench --scale --quick --json` on both stores: every size of every store filled as
/// its mix says, and every operation measured there — a positive median over at least one
/// run, no failure, no step stopped — so that a step that breaks (a page that answers 404, an
/// audit that finds the fill inconsistent, a reap that misses its cohort) fails here and not
/// in the first full run. The figures themselves are not judged: speed is measured, never
/// asserted.
#[test]
fn the_scale_benchmark_fills_every_field_on_both_stores() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(BIN)
        .args(["bench", "--scale", "--quick", "--json", "--dir"])
        .arg(dir.path())
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let scale = &json["scale"];
    let sizes: Vec<u64> =
        scale["sizes"].as_array().expect("sizes").iter().filter_map(|n| n.as_u64()).collect();
    assert_eq!(sizes, retryq_bench::scale::QUICK_SIZES);
    let stores = scale["stores"].as_array().expect("stores");
    let names: Vec<&str> = stores.iter().filter_map(|s| s["store"].as_str()).collect();
    assert_eq!(names, ["sqlite", "postgres"]);
    for store in stores {
        let name = store["store"].as_str().unwrap_or_default();
        if store["available"] == false {
            // As the PostgreSQL tests do: a machine without it skips, CI does not.
            assert!(std::env::var_os("CI").is_none(), "{name}: {}", store["note"]);
            eprintln!("SKIPPED the scale benchmark on {name}: {}", store["note"]);
            continue;
        }
        let at = store["at"].as_array().expect("at");
        assert_eq!(at.len(), sizes.len(), "{name}");
        for (size, &n) in at.iter().zip(&sizes) {
            let here = format!("{name} at {n}");
            assert_eq!(size["jobs"], n, "{here}");
            let stored = &size["stored"];
            let counted: u64 =
                ["pending", "leased", "done", "dead_exhausted", "dead_deadline", "dead_permanent"]
                    .iter()
                    .chain(&["dead_cancelled", "pruned_done", "pruned_dead"])
                    .map(|field| stored[field].as_u64().expect(field))
                    .sum();
            assert_eq!(counted, n, "{here}: {stored}");
            assert!(size["fill"]["seconds"].as_f64().is_some_and(|s| s > 0.0), "{here}");
            assert!(size["bytes"].as_u64().is_some_and(|b| b > 0), "{here}");
            let ops = size["ops"].as_array().expect("ops");
            let measured: Vec<&str> = ops.iter().filter_map(|op| op["name"].as_str()).collect();
            let upgrade: &[&str] = if name == "sqlite" { &["audit, after the upgrade"] } else { &[] };
            let expected: Vec<&str> = SCALE_OPS
                .iter()
                .chain(upgrade)
                .copied()
                .filter(|op| name == "sqlite" || !op.contains("schema 3"))
                .collect();
            assert_eq!(measured, expected, "{here}");
            for op in ops {
                let what = format!("{here}: {}", op["name"]);
                assert!(op["failure"].is_null(), "{what}: {}", op["failure"]);
                assert!(
                    op["median_us"].as_f64().is_some_and(|us| us > 0.0 && us.is_finite()),
                    "{what}: {op}"
                );
                assert!(op["runs"].as_u64().is_some_and(|r| r >= 1), "{what}: {op}");
                if op["per"] == "job" {
                    assert!(op["touched"].as_u64().is_some_and(|t| t > 0), "{what}: {op}");
                }
                // A reap's pieces are reported: at least one, each timed.
                let reap = op["name"].as_str().is_some_and(|n| n.starts_with("reap"));
                assert_eq!(op["pieces"].is_null(), !reap, "{what}: {op}");
                if reap {
                    assert!(op["pieces"]["count"].as_u64().is_some_and(|c| c >= 1), "{what}: {op}");
                    assert!(op["pieces"]["longest_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{what}: {op}");
                }
            }
        }
        let table = store["table"].as_array().expect("table");
        assert_eq!(table.len(), 1 + ops_of(name), "{name}: a row per operation and the size's");
        for row in table {
            assert!(row["ratio"].as_f64().is_some_and(|r| r > 0.0), "{name}: {row}");
        }
    }
}

/// How many operations a store's rows hold.
fn ops_of(store: &str) -> usize {
    if store == "sqlite" { SCALE_OPS.len() + 1 } else { SCALE_OPS.len() - 2 }
}

/// `retryq bench --latency` at its smallest: every figure is there, for SQLite and, where a
/// server can be had, PostgreSQL. (How many milliseconds they are is the benchmark's to say.)
#[test]
fn bench_latency_prints_pickup_percentiles_for_both_stores() {
    let url = retryq_pgtest::database("bench latency");
    let mut command = Command::new(BIN);
    command.args(["bench", "--latency", "--quick", "--json"]);
    if let Some(url) = &url {
        command.args(["--pg-url", url]);
    }
    let out = command.output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let latency = &json["latency"];
    assert_eq!(latency["jobs"], 20, "{latency}");
    let mut stores = vec!["sqlite"];
    if url.is_some() {
        stores.push("postgres");
    } else {
        assert!(latency["postgres"].is_null(), "{latency}");
    }
    for store in stores {
        for field in [
            "now_p50_ms",
            "now_p99_ms",
            "scheduled_p50_ms",
            "scheduled_p99_ms",
            "now_max_ms",
            "scheduled_max_ms",
            "commit_p50_ms",
        ] {
            let ms = latency[store][field].as_f64().unwrap_or_else(|| panic!("{store}.{field}: {latency}"));
            assert!(ms.is_finite() && ms >= 0.0, "{store}.{field} = {ms}");
        }
        // A percentile is one of the waits: p50 ≤ p99 ≤ the largest.
        let get = |f: &str| latency[store][f].as_f64().expect("a figure");
        assert!(
            get("now_p50_ms") <= get("now_p99_ms") && get("now_p99_ms") <= get("now_max_ms"),
            "{latency}"
        );
        assert!(get("scheduled_p50_ms") <= get("scheduled_p99_ms"), "{latency}");
        // The floor was measured: a commit takes time.
        assert!(get("commit_p50_ms") > 0.0, "{latency}");
    }
    let mut command = Command::new(BIN);
    command.args(["bench", "--latency", "--quick"]);
    if let Some(url) = &url {
        command.args(["--pg-url", url]);
    }
    let table = command.output().expect("run");
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("SQLite, due now, from the enqueue's commit"), "{text}");
    assert!(text.contains("SQLite, floor: one durable commit"), "{text}");
}
