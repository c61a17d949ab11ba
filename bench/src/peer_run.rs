//! Driving a peer's script as processes: its setup, its bulk load, its workers until every
//! job is done, and pickup by an idle worker while another process enqueues one job at a
//! time. What the processes print is read by [`crate::peer_line`].

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use crate::peer_line::{self, Line, Tally};

/// How to start one of a peer's scripts.
#[derive(Clone, Debug)]
pub struct Script {
    /// The interpreter.
    pub program: PathBuf,
    /// The script's path.
    pub script: PathBuf,
    /// Environment the script needs (`NODE_PATH`).
    pub env: Vec<(String, PathBuf)>,
}

/// A running script: its lines arrive on `lines`; it is killed when dropped.
struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    /// The next line, or why there is none within `within`.
    fn next(&self, within: Duration) -> Result<Line, String> {
        match self.lines.recv_timeout(within) {
            Ok(Line::Unavailable(why)) => Err(why),
            Ok(line) => Ok(line),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(format!("no answer within {within:?}")),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err("the process ended without answering".into()),
        }
    }
}

impl Script {
    fn start(&self, mode: &[&str], target: &str, stdin: bool) -> Result<Running, String> {
        let mut command = Command::new(&self.program);
        command
            .arg(&self.script)
            .args(mode)
            .arg(target)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .stdin(if stdin { Stdio::piped() } else { Stdio::null() });
        for (name, value) in &self.env {
            command.env(name, value);
        }
        let mut child =
            command.spawn().map_err(|e| format!("cannot start {}: {e}", self.program.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(parsed) = peer_line::parse(&line)
                    && tx.send(parsed).is_err()
                {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Ok(Running { child, stdin, lines })
    }

    /// Runs the script's setup on `target` (schema, durability check): its version.
    pub fn install(&self, target: &str) -> Result<String, String> {
        let running = self.start(&["install"], target, false)?;
        match running.next(Duration::from_secs(120))? {
            Line::Ready { version } => Ok(version),
            other => Err(format!("unexpected answer to install: {other:?}")),
        }
    }

    /// The peer's bulk load of `jobs` no-op jobs: its seconds, as the script timed them.
    pub fn load(&self, target: &str, jobs: usize) -> Result<f64, String> {
        let running = self.start(&["load", &jobs.to_string()], target, false)?;
        let within = Duration::from_secs(60 + jobs as u64 / 20);
        match running.next(within)? {
            Line::Loaded { jobs: loaded, seconds } if loaded == jobs as u64 => Ok(seconds),
            other => Err(format!("unexpected answer to load: {other:?}")),
        }
    }

    /// `processes` workers until `jobs` are done: jobs per second from the first job handled
    /// to the last, over every process.
    pub fn work(&self, target: &str, processes: usize, jobs: usize) -> Result<f64, String> {
        let running: Vec<Running> =
            (0..processes).map(|_| self.start(&["work"], target, false)).collect::<Result<_, _>>()?;
        let mut tallies = vec![None::<Tally>; processes];
        let deadline = Instant::now() + Duration::from_secs(60 + jobs as u64 / 20);
        loop {
            let done: u64 = tallies.iter().flatten().map(|t| t.jobs).sum();
            if done >= jobs as u64 {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!("{done} of {jobs} jobs done before the deadline"));
            }
            for (i, process) in running.iter().enumerate() {
                while let Ok(line) = process.lines.try_recv() {
                    match line {
                        Line::Tally(tally) => tallies[i] = Some(tally),
                        Line::Unavailable(why) => return Err(why),
                        _ => {}
                    }
                }
            }
            thread::sleep(Duration::from_millis(20));
        }
        let tallies: Vec<Tally> = tallies.into_iter().flatten().collect();
        peer_line::throughput(&tallies).ok_or_else(|| "no span to measure".to_owned())
    }

    /// Pickup: an idle worker, and `jobs` jobs enqueued one at a time by another process,
    /// each after a pause of 5 to 25 ms; each one's wait in milliseconds from its enqueue's
    /// return to its handler's start.
    pub fn pickup(&self, target: &str, jobs: usize) -> Result<Vec<f64>, String> {
        let worker = self.start(&["pickup"], target, false)?;
        match worker.next(Duration::from_secs(60))? {
            Line::Ready { .. } => {}
            other => return Err(format!("unexpected answer from the worker: {other:?}")),
        }
        // The worker says it is ready before its listener or first poll has run.
        thread::sleep(Duration::from_secs(1));
        let mut enqueuer = self.start(&["enqueue"], target, true)?;
        let mut waits = Vec::with_capacity(jobs);
        for n in 0..jobs {
            thread::sleep(crate::latency::pause(n));
            let id = format!("pickup-{n:04}");
            let stdin = enqueuer.stdin.as_mut().ok_or("no stdin")?;
            writeln!(stdin, "{id}").and_then(|()| stdin.flush()).map_err(|e| e.to_string())?;
            let committed = match enqueuer.next(Duration::from_secs(30))? {
                Line::Committed { id: got, at_ms } if got == id => at_ms,
                other => return Err(format!("unexpected answer from the enqueuer: {other:?}")),
            };
            // Longer than persist-queue's 10 s re-read, so that its waits are measured.
            let started = match worker.next(Duration::from_secs(15)) {
                Ok(Line::Started { id: got, at_ms }) if got == id => at_ms,
                Ok(other) => return Err(format!("unexpected answer from the worker: {other:?}")),
                Err(why) => return Err(format!("{id} was not started: {why}")),
            };
            waits.push((started - committed).max(0.0));
        }
        Ok(waits)
    }
}
