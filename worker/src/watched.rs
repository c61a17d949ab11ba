//! The worker's side of a command's watchdog ([`Trampoline`](crate::Trampoline)): the socket
//! that carries the payload and the lease's renewals to it, shut to stop the command now, and
//! what the watchdog says back — the command's cgroup and process group, and `gone` once
//! nothing of the command is left.
//!
//! A watchdog that exits without saying `gone` was killed (`kill -9`, the OOM killer) with
//! its command still running, maybe. The worker then does the watchdog's last job itself:
//! it kills the cgroup and the process group it was told of, and keeps the attempt — and so
//! the lease, which its heartbeats renew while the attempt runs — until no live process is
//! left in them (the cgroup, where there is one: it holds the group too) or the lease is
//! about to end. Only then does the job become another attempt's.

use std::io::{self, BufRead, BufReader, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};

use crate::cgroup::Cgroup;
use crate::descendants;
use crate::trampoline::{self, Told};
use crate::window::{LeaseEnds, Window};

/// How long the worker waits, once the command has exited or been killed, for it to be
/// gone and for its standard error to close. A process that left the group (`setsid`) and
/// kept the stream open would otherwise hold the attempt, and so its lease, for as long as
/// it lives; what it wrote before the grace ran out is kept. Counted against the lease
/// ([`Transport::grace`]).
pub const GRACE: Duration = Duration::from_millis(500);

/// How often the worker kills again what a dead watchdog left, until it is gone.
const AGAIN: Duration = Duration::from_millis(5);

/// What the watchdog said.
#[derive(Debug, Default)]
struct Heard {
    cgroup: Option<Cgroup>,
    group: Option<Pid>,
    gone: bool,
}

/// The socket to one command's watchdog.
pub(crate) struct Watched {
    /// For the shutdown that stops the command.
    socket: UnixStream,
    /// The socket for renewals, once the header and the payload are written; `None` before.
    writer: Option<UnixStream>,
    /// Where the thread writing the header and the payload hands the socket back.
    returned: Option<mpsc::Receiver<UnixStream>>,
    /// The lease's ends as the watchdog last heard them.
    sent: Option<LeaseEnds>,
    killed: bool,
    heard: Arc<Mutex<Heard>>,
    /// Disconnected once the watchdog's side of the socket has closed: it exited.
    closed: mpsc::Receiver<()>,
}

impl Watched {
    /// Writes the header and the payload on a thread of their own (the watchdog reads the
    /// whole payload before it starts the command, so until they are written nothing runs),
    /// and reads what the watchdog says on another.
    pub(crate) fn start(socket: UnixStream, payload: &str, lease: Option<LeaseEnds>) -> io::Result<Watched> {
        let (tx, returned) = mpsc::channel();
        let header = trampoline::header(payload.len(), lease.as_ref());
        let payload = payload.to_owned();
        let mut writer = socket.try_clone()?;
        let reader = BufReader::new(socket.try_clone()?);
        thread::Builder::new().name("retryq-exec-stdin".into()).spawn(move || {
            if writer.write_all(header.as_bytes()).and_then(|()| writer.write_all(payload.as_bytes())).is_ok()
            {
                let _ = tx.send(writer);
            }
        })?;
        let heard = Arc::new(Mutex::new(Heard::default()));
        let (close, closed) = mpsc::channel::<()>();
        let keep = Arc::clone(&heard);
        thread::Builder::new().name("retryq-exec-watchdog".into()).spawn(move || {
            for line in reader.lines() {
                let Ok(line) = line else { break };
                let mut heard = keep.lock().unwrap_or_else(PoisonError::into_inner);
                match Told::read(&line) {
                    Some(Told::Cgroup(cgroup)) => heard.cgroup = Some(cgroup),
                    Some(Told::Group(group)) => heard.group = Some(group),
                    Some(Told::Gone) => heard.gone = true,
                    None => {}
                }
            }
            drop(close);
        })?;
        Ok(Watched {
            socket,
            writer: None,
            returned: Some(returned),
            sent: lease,
            killed: false,
            heard,
            closed,
        })
    }

    /// The socket, if the writing thread has handed it back.
    fn take_back(&mut self) {
        let Some(returned) = &self.returned else { return };
        match returned.try_recv() {
            Ok(writer) => {
                self.writer = Some(writer);
                self.returned = None;
            }
            Err(mpsc::TryRecvError::Disconnected) => self.returned = None,
            Err(mpsc::TryRecvError::Empty) => {}
        }
    }

    /// Tells the watchdog the lease's new ends, if they moved: only an accepted heartbeat
    /// moves them (a refused one leaves none, and the window closes).
    pub(crate) fn renew(&mut self, lease: Option<LeaseEnds>) {
        if self.killed || lease.is_none() || lease == self.sent {
            return;
        }
        self.take_back();
        let Some(writer) = &mut self.writer else { return };
        if writer.write_all(trampoline::renewal(lease.as_ref()).as_bytes()).is_ok() {
            self.sent = lease;
        }
    }

    /// Stops the command now: the watchdog reads the end of its input and kills the command
    /// with SIGKILL at once (one still taking in the payload starts nothing, and exits).
    pub(crate) fn kill(&mut self) {
        if !self.killed {
            self.killed = true;
            let _ = self.socket.shutdown(Shutdown::Write);
        }
    }

    /// Once the watchdog has exited: `None` if it said nothing of the command is left.
    /// Otherwise it died, and what it left is killed here, again and again until gone or
    /// until the lease is about to end; what happened, in words, for the attempt's error.
    pub(crate) fn after_exit(&self, window: &Window<'_>) -> Option<String> {
        // Its side closed with its exit: what it said is all read at once.
        let _ = self.closed.recv_timeout(GRACE);
        let (cgroup, group) = {
            let heard = self.heard.lock().unwrap_or_else(PoisonError::into_inner);
            if heard.gone {
                return None;
            }
            (heard.cgroup.clone(), heard.group)
        };
        if cgroup.is_none() && group.is_none() {
            return Some("the watchdog died before it started the command".into());
        }
        loop {
            if let Some(cgroup) = &cgroup {
                let _ = cgroup.kill();
            }
            // Only while a live process is in it: then its id is still the group's.
            if let Some(group) = group.filter(|&group| descendants::group_alive(group)) {
                let _ = kill_process_group(group, Signal::KILL);
            }
            // In its cgroup is every process of the command, its group's included. A zombie
            // is no process of the command running: the group's shell, orphaned by the
            // watchdog's death, stays one until init reaps it (seconds later on some hosts).
            let left = match &cgroup {
                Some(cgroup) => cgroup.populated(),
                None => group.is_some_and(descendants::group_alive),
            };
            if !left || window.lease_left().0.is_zero() {
                // Removed once empty; a cgroup still populated stays (removing it fails).
                if let Some(cgroup) = &cgroup {
                    let _ = cgroup.remove();
                }
                return Some(if left {
                    format!(
                        "the watchdog died, and what it left of the command was still there when the lease \
                         ended (in its {})",
                        if cgroup.is_some() { "cgroup" } else { "process group" }
                    )
                } else {
                    "the watchdog died; the worker killed what it left of the command".into()
                });
            }
            thread::sleep(AGAIN);
        }
    }
}
