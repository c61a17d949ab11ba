//! Model checking's speed: `retryq check --json` (the default bound) and `retryq check --deep
//! --json`, each run as a child process of the `retryq` binary, so that its peak memory is
//! its own and not the benchmark's. Unique states per second is the checker's own count over
//! its own time; peak memory is the child's high-water mark (`VmHWM` in /proc), read every
//! 20 ms while it runs.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Serialize;

/// One model-checking run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CheckerRun {
    /// Distinct states reached; `null` when the run could not be made.
    pub unique_states: Option<u64>,
    /// States generated, duplicates included (what stateright's own rate counts).
    pub states: Option<u64>,
    /// Wall-clock seconds of the run.
    pub seconds: Option<f64>,
    /// Distinct states per second: the figure comparable across bounds.
    pub unique_states_per_s: Option<f64>,
    /// The child's peak resident memory, as the kernel counted it.
    pub peak_memory_bytes: Option<u64>,
}

/// Runs `program check --json` (with `--deep` if asked) and measures it.
pub fn run(program: &Path, deep: bool) -> Result<CheckerRun, String> {
    let mut command = Command::new(program);
    command.arg("check").arg("--json");
    if deep {
        command.arg("--deep");
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {} check: {e}", program.display()))?;
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let status = loop {
        if let Some(kib) = high_water_kib(&status_file) {
            peak_kib = peak_kib.max(kib);
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for the checker: {e}")),
        }
    };
    let mut stdout = String::new();
    if let Some(mut out) = child.stdout.take() {
        use std::io::Read as _;
        out.read_to_string(&mut stdout).map_err(|e| format!("reading the checker's report: {e}"))?;
    }
    if !status.success() {
        return Err(format!("retryq check{} exited with {status}", if deep { " --deep" } else { "" }));
    }
    let report: serde_json::Value =
        serde_json::from_str(stdout.trim()).map_err(|e| format!("unreadable checker report: {e}"))?;
    let unique = report["unique_states"].as_u64().ok_or("no unique_states in the checker's report")?;
    let seconds =
        report["seconds"].as_f64().filter(|s| *s > 0.0).ok_or("no seconds in the checker's report")?;
    Ok(CheckerRun {
        unique_states: Some(unique),
        states: report["states"].as_u64(),
        seconds: Some(seconds),
        unique_states_per_s: Some(unique as f64 / seconds),
        peak_memory_bytes: (peak_kib > 0).then_some(peak_kib * 1024),
    })
}

/// `VmHWM` of a running process, in KiB, if it can be read.
fn high_water_kib(status_file: &str) -> Option<u64> {
    let status = std::fs::read_to_string(status_file).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
