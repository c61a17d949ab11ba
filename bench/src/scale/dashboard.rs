//! The dashboard and `/metrics` as an operator's browser and a Prometheus scrape see them:
//! `retryq serve` started as a child on a free loopback port, and each page requested over
//! HTTP, one request at a time. The time of a request is the whole round trip — the store's
//! reads, the page's rendering, the loopback — measured by the client.
//!
//! Each request goes on a connection of its own. On a kept-alive connection every response
//! of `retryq serve` waits about 40 ms more: the server writes a response in several pieces
//! without `TCP_NODELAY`, and the last piece waits for the client's delayed acknowledgement
//! of the one before (Nagle's algorithm). That wait is the same at every size and would
//! hide what the store costs, so it is kept out of these figures.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::BenchError;

/// A running `retryq serve`, stopped when dropped.
pub struct Served {
    child: Child,
    base: String,
    agent: ureq::Agent,
}

impl Served {
    /// Starts `program serve --db DB` on a free loopback port with one thread, and waits for
    /// its `{"listening": URL}` line.
    pub fn start(program: &std::path::Path, db: &str, timeout: Duration) -> Result<Served, BenchError> {
        let mut child = Command::new(program)
            .args(["serve", "--db", db, "--listen", "127.0.0.1:0", "--threads", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut line = String::new();
        if let Some(stdout) = child.stdout.take() {
            BufReader::new(stdout).read_line(&mut line)?;
        }
        let listening: serde_json::Value = serde_json::from_str(line.trim()).unwrap_or_default();
        let Some(url) = listening["listening"].as_str() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(BenchError::Setup(format!("retryq serve did not say where it listens: {line:?}")));
        };
        let base = url.trim_end_matches('/').to_owned();
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_idle_connections(0)
            .max_idle_connections_per_host(0)
            .build()
            .into();
        Ok(Served { child, base, agent })
    }

    /// One GET of `path`: microseconds to the last byte of the body, or why it failed (a
    /// status other than 200, a timeout).
    pub fn get(&self, path: &str) -> Result<f64, String> {
        let started = Instant::now();
        let mut response =
            self.agent.get(format!("{}{path}", self.base)).call().map_err(|e| e.to_string())?;
        let body = response.body_mut().read_to_vec().map_err(|e| e.to_string())?;
        let micros = started.elapsed().as_secs_f64() * 1e6;
        let status = response.status().as_u16();
        if status != 200 {
            return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body[..body.len().min(200)])));
        }
        Ok(micros)
    }

    /// `reps` timed GETs of `path` after one untimed; the first failure ends them.
    pub fn time(&self, path: &str, reps: usize) -> Result<Vec<f64>, String> {
        self.get(path)?;
        (0..reps).map(|_| self.get(path)).collect()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
