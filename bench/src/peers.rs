//! Peers, measured in the same run on the same disk.
//!
//! - persist-queue (Python, `SQLiteAckQueue`): put, get and ack, three commits a job, WAL and
//!   `synchronous = FULL` (set and read back). It counts no attempts, has no deadline,
//!   backoff or history, and its get (a select, then an update) is not safe across
//!   processes, so it runs in one. When Python or the package is missing it is reported as
//!   unavailable; the run goes on.
//! - effectum (Rust): not built here, for three reasons that a fair setup has to get past.
//!   Its 0.7.0 asks for WAL with `PRAGMA journal = wal`, which SQLite ignores (the pragma is
//!   `journal_mode`), and forces `synchronous = NORMAL` on its writer: as shipped it does
//!   not fsync each commit, so it would be measured at a weaker durability than retryq's.
//!   It links its own SQLite through rusqlite 0.31, which cannot share one build with this
//!   workspace's rusqlite (two crates may not link `sqlite3`); it needs a separate crate
//!   outside the workspace, driven as a process. And it is async-only (tokio).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde::Serialize;

/// The persist-queue script, run with `python3 -c`.
const PERSIST_QUEUE: &str = include_str!("../peers/persist_queue.py");

/// One run of a peer.
#[derive(Debug)]
pub enum PeerRun {
    /// The peer ran: its throughput over the window.
    JobsPerSecond(f64),
    /// The peer could not run here, and why (not installed, failed).
    Unavailable(String),
}

/// A peer's line in the report.
#[derive(Clone, Debug, Serialize)]
pub struct Peer {
    /// The peer's name as the report shows it.
    pub name: &'static str,
    /// Whether it could run on this machine.
    pub available: bool,
    /// Median jobs per second, one process (null when unavailable).
    pub jobs_per_s: Option<f64>,
    /// Its median over the queue's median at one process, runs paired by round.
    pub ratio_to_queue: Option<f64>,
    /// Why it is unavailable, or how it was run.
    pub note: String,
}

/// One window of persist-queue in a fresh directory under `dir`.
pub fn persist_queue(python: &str, dir: &Path, window: Duration, round: usize) -> PeerRun {
    let path = dir.join(format!("persist-queue-{round}"));
    let output = Command::new(python)
        .arg("-c")
        .arg(PERSIST_QUEUE)
        .arg(&path)
        .arg(format!("{}", window.as_secs_f64()))
        .output();
    let _ = std::fs::remove_dir_all(&path);
    let output = match output {
        Ok(output) => output,
        Err(e) => return PeerRun::Unavailable(format!("cannot run {python}: {e}")),
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().last().unwrap_or("no message");
        return PeerRun::Unavailable(format!("{python} failed ({}): {last}", output.status));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let parsed: serde_json::Value = match serde_json::from_str(stdout.trim()) {
        Ok(value) => value,
        Err(e) => return PeerRun::Unavailable(format!("unreadable output {stdout:?}: {e}")),
    };
    if parsed["available"] != serde_json::Value::Bool(true) {
        let why = parsed["why"].as_str().unwrap_or("unavailable");
        return PeerRun::Unavailable(why.to_owned());
    }
    if parsed["synchronous"] != serde_json::json!([2]) || parsed["journal_mode"] != serde_json::json!(["wal"])
    {
        return PeerRun::Unavailable(format!("could not be set to WAL and synchronous=FULL: {parsed}"));
    }
    match (parsed["jobs"].as_f64(), parsed["seconds"].as_f64()) {
        (Some(jobs), Some(seconds)) if seconds > 0.0 => PeerRun::JobsPerSecond(jobs / seconds),
        _ => PeerRun::Unavailable(format!("no jobs/seconds in {parsed}")),
    }
}

/// The note on persist-queue in the report.
pub const PERSIST_QUEUE_NOTE: &str = "SQLiteAckQueue put/get/ack, 3 commits a job, WAL + synchronous=FULL; \
     counts no attempts, no deadline, backoff or history; get is not safe across processes, so 1 process";

/// effectum's line: not measured in this build, and why.
pub fn effectum() -> Peer {
    Peer {
        name: "effectum",
        available: false,
        jobs_per_s: None,
        ratio_to_queue: None,
        note: "not measured in this build: 0.7.0's WAL pragma is a no-op (`journal = wal`) and it forces \
               synchronous=NORMAL, so as shipped it is less durable than retryq; it links its own SQLite \
               (rusqlite 0.31), which needs a build outside this workspace; async-only (tokio)"
            .into(),
    }
}
