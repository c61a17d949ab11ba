//! The trampoline: the watchdog beside every [`Exec`](crate::Exec) command, so that no
//! command outlives its lease, however its worker fares — killed with SIGKILL, stopped with
//! SIGSTOP, frozen in a VM pause or a swap storm — with nothing but safe Rust in the worker.
//!
//! The worker starts a small program — the trampoline — instead of `/bin/sh -c COMMAND`; the
//! trampoline starts the shell as its own child, in a process group of its own and, where
//! the host lets it, in a cgroup v2 of its own (`cgroup.rs`), and stays its parent until it
//! is gone. It kills the whole command:
//!
//! - **at once (SIGKILL) when the worker dies**, however it dies: its standard input is a
//!   socket from the worker, which reaches end of file when the worker's process ends (or
//!   when the worker shuts it to stop the command); Linux's parent-death signal
//!   (`PR_SET_PDEATHSIG`, SIGHUP here, caught) says the same, and a parent that is no longer
//!   the worker is checked every [`POLL`];
//! - **when the lease's end, less the margin, passes on this host's clocks** without a
//!   renewal from the worker (SIGTERM, then SIGKILL [`Config::kill_grace`] later). The
//!   worker writes the lease's end down the socket when the attempt starts, and again after
//!   every heartbeat the store *accepted* — never when it only sent one; a refused
//!   heartbeat renews nothing. The end is kept on the monotonic clock (`CLOCK_MONOTONIC`,
//!   which a stalled worker cannot hold back) and, where the worker's clock is this host's
//!   or a measured offset from it, on the wall clock too (a forward step of the wall clock
//!   shortens every lease at once);
//! - when the command exits: what it left behind is killed with it.
//!
//! This is the model's rule (docs/model.md, "Execution", "at most one execution of a job is
//! live at any moment"): an execution ends by its completion, by the holder's death (at
//! once), or by the watchdog at `lease_until − margin` on the holder's own clock, renewed only
//! by committed heartbeats; with `margin ≥ skew + grace` no two executions of a job overlap.
//!
//! **What a kill reaches.** In its cgroup, every process of the command, however it forked
//! or whichever session it left: one write to `cgroup.kill`, forks under way included, then
//! a wait until the cgroup is empty. Without one, the command's process group and, through
//! `/proc`, every process descended from the trampoline — it is their child subreaper
//! (`PR_SET_CHILD_SUBREAPER`), so processes that left the group or the session and orphans of
//! a parent that exited are still its descendants — walked and killed again and again until
//! the trampoline has no child left (`descendants.rs`). Either way the trampoline reaps the
//! zombies it inherits as they appear (on SIGCHLD), so that a command backgrounding processes
//! from subshells does not fill the host's process table. Out of reach are processes handed to another service
//! (`systemd-run`, `at`, a remote host). The trampoline forwards SIGTERM and SIGINT to the
//! command and takes SIGHUP as its worker's death. Elsewhere than on Linux the group alone is
//! killed.
//!
//! **When the trampoline itself dies** (`kill -9`, the OOM killer), the worker learns it
//! from the socket: it was told the command's cgroup and process group when the command
//! started, and was not told `gone`. It then kills them itself and does not end the attempt
//! (nor let its lease lapse) until no live process is left in them (`watched.rs`).
//!
//! The protocol on the socket. From the worker, one line each but the payload: first
//! `retryq-watchdog 2 PAYLOAD_BYTES MARGIN_MS GRACE_MS MONOTONIC_NS WALL_MS`, then the
//! payload's bytes (the command's standard input, then end of file), then
//! `renew MONOTONIC_NS WALL_MS` per renewal; `-` for an end that is not kept. End of file:
//! kill now. From the trampoline: `cgroup PATH` (if it made one), `group PID` once the command
//! started, and `gone` once nothing of it is left.
//!
//! Any program that calls [`bounce`] with the arguments it was given is a trampoline
//! ([`run`] is such a program's `main`): `retryq-watchdog`, a small binary started once per
//! attempt, and the `retryq` binary's hidden `exec-trampoline` subcommand. Without a trampoline a
//! command is still killed with its whole process group whenever the worker ends it (its
//! timeout, its lease, a second stop signal), but nothing watches it when the worker cannot.
//!
//! [`Config::kill_grace`]: crate::Config::kill_grace

use std::ffi::OsString;
use std::io::{self, BufRead, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, kill_process_group, waitid};
use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::cgroup::{Cgroup, HOME_VAR, Home};
use crate::clock::local_ms;
use crate::descendants;
use crate::window::{LeaseEnds, POLL};

/// The exit status of a trampoline that could not start the command: unclassified (it is
/// none of 0, [`EXIT_RETRYABLE`](crate::EXIT_RETRYABLE), [`EXIT_PERMANENT`](crate::EXIT_PERMANENT)).
/// 125, as `env`, `nohup` and `timeout` exit when they themselves fail, so that the shell's
/// own 126 and 127 ([`EXIT_NOT_EXECUTABLE`](crate::EXIT_NOT_EXECUTABLE),
/// [`EXIT_NOT_FOUND`](crate::EXIT_NOT_FOUND): the command could not be run, which stops the
/// worker) are never the trampoline's: a trampoline that failed, or was stopped before it
/// started the command, says nothing about the command.
pub const EXIT_NOT_STARTED: i32 = 125;

/// The first words of the socket's first line: the protocol and its version. A watchdog
/// binary answers `--protocol` with it ([`run`]), so that a worker starts only a watchdog
/// that speaks its protocol.
pub const PROTOCOL: &str = "retryq-watchdog 2";

/// A program that starts each command beside a watchdog: it is run as
/// `PROGRAM ARGS… WORKER_PID SHELL -c COMMAND` and must call [`bounce`] with what follows
/// `ARGS…`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trampoline {
    program: PathBuf,
    args: Vec<OsString>,
    /// The cgroup its watchdogs are started in, found once ([`Trampoline::found_home`]).
    home: Option<Home>,
}

impl Trampoline {
    /// The trampoline `program args…`.
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Trampoline {
        Trampoline { program: program.into(), args: args.into_iter().map(Into::into).collect(), home: None }
    }

    /// The same, with this process's cgroup found for its watchdogs (and the cgroups dead
    /// watchdogs left there removed): found once here, where each watchdog would otherwise
    /// look for it.
    pub(crate) fn found_home(mut self) -> Trampoline {
        self.home = Home::find();
        self
    }

    /// The command that runs `shell` through this trampoline, for a worker whose process id
    /// is `worker`; the caller adds the shell's own arguments.
    pub(crate) fn command(&self, worker: Pid, shell: &str) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args).arg(worker.as_raw_nonzero().to_string()).arg(shell);
        if let Some(home) = &self.home {
            command.env(HOME_VAR, home.var());
        }
        command
    }
}

/// The socket's first line, for a payload of `payload` bytes under `lease` (none: nothing to
/// watch but the worker's death).
pub(crate) fn header(payload: usize, lease: Option<&LeaseEnds>) -> String {
    let (margin, grace) = lease.map_or((0, 0), |l| (l.margin.as_millis(), l.kill_grace.as_millis()));
    format!("{PROTOCOL} {payload} {margin} {grace} {}\n", ends(lease))
}

/// A renewal's line: the lease's new ends.
pub(crate) fn renewal(lease: Option<&LeaseEnds>) -> String {
    format!("renew {}\n", ends(lease))
}

/// `MONOTONIC_NS WALL_MS` for `lease`: the monotonic end as `CLOCK_MONOTONIC` nanoseconds,
/// the wall end on this host's wall clock.
fn ends(lease: Option<&LeaseEnds>) -> String {
    let monotonic = lease.and_then(|l| l.monotonic).and_then(raw_monotonic);
    let wall = lease.and_then(|l| l.local_offset_ms.map(|off| i128::from(l.wall_ms) - i128::from(off)));
    let word = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    format!("{} {}", word(monotonic.map(|n| n.to_string())), word(wall.map(|n| n.to_string())))
}

/// `CLOCK_MONOTONIC` now, in nanoseconds: the clock [`Instant`] reads on Linux, and the
/// same in every process of this host.
fn monotonic_ns() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let secs = u64::try_from(now.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(now.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// `at` as `CLOCK_MONOTONIC` nanoseconds, to the microsecond or so the two readings differ.
fn raw_monotonic(at: Instant) -> Option<u64> {
    let (now, raw) = (Instant::now(), monotonic_ns());
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).ok();
    if at >= now { raw.checked_add(nanos(at - now)?) } else { Some(raw.saturating_sub(nanos(now - at)?)) }
}

/// What the watchdog keeps: the ends, less the margin, and the wait between SIGTERM and
/// SIGKILL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Watch {
    margin_ms: u64,
    grace: Duration,
    /// The lease's end as `CLOCK_MONOTONIC` nanoseconds.
    monotonic: Option<u64>,
    /// The lease's end on this host's wall clock, in milliseconds.
    wall: Option<i128>,
}

impl Watch {
    /// Parses `MONOTONIC_NS WALL_MS`.
    fn ends(&mut self, words: &[&str]) -> Result<(), String> {
        let [monotonic, wall] = words else { return Err(format!("two ends expected, not {words:?}")) };
        self.monotonic = match *monotonic {
            "-" => None,
            n => Some(n.parse().map_err(|e| format!("monotonic end {n:?}: {e}"))?),
        };
        self.wall = match *wall {
            "-" => None,
            n => Some(n.parse().map_err(|e| format!("wall end {n:?}: {e}"))?),
        };
        Ok(())
    }

    /// Which end, less the margin, has passed, if one has; else how long until the
    /// monotonic one does.
    fn due(&self) -> Result<&'static str, Duration> {
        let margin_ns = self.margin_ms.saturating_mul(1_000_000);
        let mut wait = Duration::MAX;
        if let Some(end) = self.monotonic {
            let deadline = end.saturating_sub(margin_ns);
            let now = monotonic_ns();
            if now >= deadline {
                return Ok("on the monotonic clock");
            }
            wait = Duration::from_nanos(deadline - now);
        }
        if let (Some(end), Ok(now)) = (self.wall, local_ms())
            && i128::from(now) >= end - i128::from(self.margin_ms)
        {
            return Ok("on the wall clock");
        }
        Err(wait)
    }
}

/// What the trampoline tells the worker about its command, a line each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Told {
    /// The command's cgroup, made before it started.
    Cgroup(Cgroup),
    /// The command's process group (its shell's process id), once started.
    Group(Pid),
    /// Nothing of the command is left: the trampoline is about to exit.
    Gone,
}

impl Told {
    /// The line that says it.
    fn line(&self) -> String {
        match self {
            Told::Cgroup(cgroup) => format!("cgroup {}\n", cgroup.path().display()),
            Told::Group(group) => format!("group {}\n", group.as_raw_nonzero()),
            Told::Gone => "gone\n".into(),
        }
    }

    /// What `line` tells; `None` for a line this build does not know.
    pub(crate) fn read(line: &str) -> Option<Told> {
        match line.trim_end().split_once(' ') {
            Some(("cgroup", path)) => Cgroup::at(path).map(Told::Cgroup),
            Some(("group", pid)) => pid.parse().ok().and_then(Pid::from_raw).map(Told::Group),
            None if line.trim_end() == "gone" => Some(Told::Gone),
            _ => None,
        }
    }
}

/// The command as the watchdog kills it: its process group, its cgroup if it has one, and
/// every descendant of the watchdog.
struct Contained {
    group: Pid,
    cgroup: Option<Cgroup>,
}

impl Contained {
    /// Sends `signal` to every process of the command: its group, its cgroup, and the
    /// watchdog's descendants found in one walk of `/proc`.
    fn signal(&self, signal: Signal) {
        let _ = kill_process_group(self.group, signal);
        if let Some(cgroup) = &self.cgroup {
            descendants::signal_each(&cgroup.procs(), signal);
        }
        descendants::signal_each(&descendants::live(), signal);
    }

    /// Whether a live process of the command is left.
    fn alive(&self) -> bool {
        self.cgroup.as_ref().is_some_and(Cgroup::populated) || !descendants::live().is_empty()
    }

    /// SIGKILL to every process of the command until none is left; the shell's exit status.
    ///
    /// The group and the shell are killed first, while the shell is an unreaped zombie (its
    /// id, so its group's, cannot be reused), then the shell is reaped. From then on the
    /// watchdog — every orphan's child subreaper — counts its children as the kernel does:
    /// any live process of the command has a live ancestor that is a child of the watchdog
    /// (a zombie has no children: they are handed on when it exits). So the kill is over
    /// when `waitid` answers that no child is left, and a command that left nothing behind
    /// costs no walk of `/proc`. While a child is left, each round kills the cgroup at once,
    /// or walks `/proc` and kills what it finds. No walk decides the kill is over: a walk can
    /// miss a command that forks faster than it (an id read in the walk's list may have
    /// forked and exited before its `stat` is read), and the next round walks again.
    fn kill_all(&self, shell: &mut Child) -> io::Result<ExitStatus> {
        if let Some(cgroup) = &self.cgroup {
            let _ = cgroup.kill();
        }
        let _ = kill_process_group(self.group, Signal::KILL);
        // A shell that moved to another group (`setpgid`) is the watchdog's to kill too.
        let _ = shell.kill();
        let status = shell.wait()?;
        let mut pause = Duration::from_micros(200);
        while reap_children() || self.cgroup.as_ref().is_some_and(Cgroup::populated) {
            if let Some(cgroup) = &self.cgroup {
                let _ = cgroup.kill();
            }
            descendants::signal_each(&descendants::live(), Signal::KILL);
            thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
        Ok(status)
    }
}

/// What the watchdog hears.
enum Event {
    /// The worker renewed the lease.
    Renew(Watch),
    /// The worker is gone, or asked for the command to be stopped now.
    WorkerGone,
    /// SIGTERM or SIGINT reached the trampoline: passed on to the command.
    Forward(i32),
    /// The command exited (not reaped yet: its group id cannot be reused).
    Exited,
}

/// The trampoline's side, given `WORKER_PID SHELL SHELL_ARGS…` and the socket on standard
/// input: starts `SHELL SHELL_ARGS…` in a process group (and a cgroup, where it can) of its
/// own and watches it until it is gone (see the module's doc). Returns the exit status to
/// exit with — the command's; for a command killed by a signal the trampoline first tries to
/// die of the same signal — or, before the command started, why it could not (the caller
/// then exits with [`EXIT_NOT_STARTED`]).
pub fn bounce(args: impl IntoIterator<Item = OsString>) -> io::Result<i32> {
    let mut args = args.into_iter();
    let worker = args.next().and_then(|pid| pid.to_str()?.parse::<i32>().ok()).and_then(Pid::from_raw);
    let Some(worker) = worker else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the first argument must be the worker's process id",
        ));
    };
    let Some(shell) = args.next() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no shell to run"));
    };
    let (events_tx, events) = mpsc::channel();
    // Registered before anything else: the parent-death signal must be caught (SIGHUP's
    // default would end the trampoline and leave the command unwatched), and no exit of the
    // command's may go unheard. One thread hears them all, once the command has started.
    let signals = Signals::new([SIGHUP, SIGTERM, SIGINT, SIGCHLD])?;
    watch_parent(worker)?;
    // Stdin's buffer is shared: what the header's read took in beyond its line is still
    // there for the payload's, and the payload's beyond it for the renewals'.
    let input = io::stdin();
    // What the trampoline tells goes back on the same socket; a worker that gave a pipe
    // (another build's) hears nothing, and writing to it fails harmlessly.
    let mut told = UnixStream::from(input.as_fd().try_clone_to_owned()?);
    let mut first = String::new();
    input.lock().read_line(&mut first)?;
    let invalid =
        |why: String| io::Error::new(io::ErrorKind::InvalidData, format!("the worker's socket: {why}"));
    let words: Vec<&str> = first.split_whitespace().collect();
    let (payload_len, watch) = match words.as_slice() {
        [] => return Err(io::Error::other("the worker closed the socket before the command started")),
        [magic, version, payload, margin, grace, ends @ ..] if format!("{magic} {version}") == PROTOCOL => {
            let number =
                |what: &str, n: &str| n.parse::<u64>().map_err(|e| invalid(format!("{what} {n:?}: {e}")));
            let mut watch = Watch {
                margin_ms: number("margin", margin)?,
                grace: Duration::from_millis(number("grace", grace)?),
                monotonic: None,
                wall: None,
            };
            watch.ends(ends).map_err(invalid)?;
            let payload = usize::try_from(number("payload length", payload)?)
                .ok()
                .filter(|&n| n <= retryq_core::MAX_PAYLOAD_BYTES)
                .ok_or_else(|| {
                    invalid(format!(
                        "payload length {payload}: more than a job's payload may be ({} bytes)",
                        retryq_core::MAX_PAYLOAD_BYTES
                    ))
                })?;
            (payload, watch)
        }
        _ => return Err(invalid(format!("not a watchdog header: {first:?}"))),
    };
    let mut payload = vec![0; payload_len];
    input.lock().read_exact(&mut payload)?;
    // The command is born in its cgroup: the trampoline enters it, starts the command and
    // leaves it.
    let entered = Cgroup::enter()?;
    if let Some(entered) = &entered {
        let _ = told.write_all(Told::Cgroup(entered.cgroup.clone()).line().as_bytes());
    }
    let spawned = Command::new(shell)
        .args(args)
        .env_remove(HOME_VAR)
        .stdin(Stdio::piped())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn();
    let left = entered.as_ref().map(|entered| entered.leave());
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            if let Some(entered) = &entered {
                let _ = entered.cgroup.remove();
            }
            return Err(e);
        }
    };
    let group = Pid::from_child(&child);
    if let Some(Err(e)) = left {
        // Still inside the command's cgroup, the trampoline could not kill it without
        // killing itself: the command does not run.
        let _ = child.kill();
        let _ = child.wait();
        return Err(io::Error::other(format!("could not leave the command's cgroup: {e}")));
    }
    let contained = Contained { group, cgroup: entered.map(|entered| entered.cgroup) };
    let _ = told.write_all(Told::Group(group).line().as_bytes());
    hear_signals(signals, group, events_tx.clone())?;
    // An empty payload is end of file at once: no thread to write it.
    if let Some(mut stdin) = child.stdin.take().filter(|_| !payload.is_empty()) {
        // A command that does not read its input must not block the watchdog.
        let _ = thread::Builder::new().name("payload".into()).spawn(move || {
            let _ = stdin.write_all(&payload);
        });
    }
    let renewals = events_tx.clone();
    thread::Builder::new()
        .name("socket".into())
        .spawn(move || read_renewals(input.lock(), watch, &renewals))?;
    drop(events_tx);
    let status = watchdog(&mut child, &contained, worker, watch, &events)?;
    // The shell is reaped and no child is left.
    if let Some(cgroup) = &contained.cgroup {
        let _ = cgroup.remove();
    }
    let _ = told.write_all(Told::Gone.line().as_bytes());
    Ok(relay(status))
}

/// A watchdog program's `main`, given its arguments after the program's name: `--protocol`
/// prints [`PROTOCOL`]; `exec-trampoline WORKER_PID SHELL SHELL_ARGS…` runs [`bounce`] and
/// exits as the command did, or, when the command could not be started, with
/// [`EXIT_NOT_STARTED`] after saying why on standard error (the worker keeps its tail).
pub fn run(args: impl IntoIterator<Item = OsString>) -> std::process::ExitCode {
    use std::process::ExitCode;
    let mut args = args.into_iter();
    match args.next() {
        Some(first) if first == "--protocol" => {
            let _ = writeln!(io::stdout(), "{PROTOCOL}");
            ExitCode::SUCCESS
        }
        Some(first) if first == "exec-trampoline" => {
            // Its name in `ps` and `top`: started as `/proc/self/fd/N`, it would be `N`.
            let _ = rustix::thread::set_name(c"retryq-watchdog");
            match bounce(args) {
                Ok(code) => ExitCode::from(u8::try_from(code & 0xff).unwrap_or(u8::MAX)),
                Err(error) => {
                    say(format_args!("{error}"));
                    ExitCode::from(EXIT_NOT_STARTED as u8)
                }
            }
        }
        _ => {
            say(format_args!("started by `retryq work --exec`, as `exec-trampoline WORKER_PID SHELL ARGS…`"));
            ExitCode::from(EXIT_NOT_STARTED as u8)
        }
    }
}

/// Hears the trampoline's signals on a thread of its own (registered before the command
/// started, so none is missed): SIGHUP is the worker's death (its parent-death signal),
/// SIGTERM and SIGINT are passed on to the command, and SIGCHLD either says the command's
/// shell exited — [`Event::Exited`], the shell left unreaped: its group's id cannot be reused
/// — or reaps the zombies the trampoline inherited while the command runs, so that a command
/// backgrounding processes from subshells does not fill the host's process table. Once the
/// shell has exited the kill and [`reap_children`] take over, and a SIGCHLD costs no walk of
/// `/proc`.
fn hear_signals(mut signals: Signals, shell: Pid, events: Sender<Event>) -> io::Result<()> {
    thread::Builder::new().name("signals".into()).spawn(move || {
        let mut exited = false;
        for signal in signals.forever() {
            let event = match signal {
                SIGHUP => Some(Event::WorkerGone),
                SIGTERM | SIGINT => Some(Event::Forward(signal)),
                _ if exited => None,
                _ if exited_unreaped(shell) => {
                    exited = true;
                    Some(Event::Exited)
                }
                _ => {
                    descendants::reap_zombies(shell);
                    None
                }
            };
            if let Some(event) = event
                && events.send(event).is_err()
            {
                return;
            }
        }
    })?;
    Ok(())
}

/// Whether process `pid`, a child of this one, has exited; it is left unreaped (`WNOWAIT`).
fn exited_unreaped(pid: Pid) -> bool {
    matches!(
        waitid(WaitId::Pid(pid), WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT),
        Ok(Some(_)) | Err(rustix::io::Errno::CHILD)
    )
}

/// Reaps every child that has exited, without walking `/proc`; whether a live child is left.
/// Once the shell is reaped, none is kept.
fn reap_children() -> bool {
    loop {
        match waitid(WaitId::All, WaitIdOptions::EXITED | WaitIdOptions::NOHANG) {
            Ok(Some(_)) | Err(rustix::io::Errno::INTR) => {}
            Ok(None) => return true,
            Err(_) => return false,
        }
    }
}

/// Reads the renewals off the worker's socket until it closes.
fn read_renewals(input: impl BufRead, mut watch: Watch, events: &Sender<Event>) {
    for line in input.lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        // A line this trampoline does not know (a worker of another build) is skipped: the
        // worker still kills by closing the socket.
        if let Some((&"renew", ends)) = words.split_first()
            && watch.ends(ends).is_ok()
            && events.send(Event::Renew(watch)).is_err()
        {
            return;
        }
    }
    // The worker ended, or shut the socket to stop the attempt.
    let _ = events.send(Event::WorkerGone);
}

/// Watches the command until it is gone; its exit status.
fn watchdog(
    child: &mut Child,
    command: &Contained,
    worker: Pid,
    mut watch: Watch,
    events: &Receiver<Event>,
) -> io::Result<ExitStatus> {
    loop {
        let wait = match watch.due() {
            Ok(clock) => {
                let grace = watch.grace;
                say(format_args!(
                    "the lease's end less its margin ({} ms) passed {clock} with no renewal from the worker: \
                     the command's processes get SIGTERM, and SIGKILL {} ms later",
                    watch.margin_ms,
                    grace.as_millis()
                ));
                command.signal(Signal::TERM);
                // The grace is for every process of the command, not only its shell: wait
                // until none is left, the grace is over, or the worker dies (then at once).
                let until = Instant::now() + grace;
                while command.alive() {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    match events.recv_timeout(left.min(Duration::from_millis(10))) {
                        Ok(Event::WorkerGone) | Err(RecvTimeoutError::Disconnected) => break,
                        Ok(Event::Exited | Event::Forward(_) | Event::Renew(_))
                        | Err(RecvTimeoutError::Timeout) => {}
                    }
                }
                return command.kill_all(child);
            }
            Err(wait) => wait.min(POLL),
        };
        match events.recv_timeout(wait) {
            Ok(Event::Renew(renewed)) => watch = renewed,
            Ok(Event::Forward(signal)) => {
                if let Some(signal) = Signal::from_named_raw(signal) {
                    command.signal(signal);
                }
            }
            // Nothing is said: the worker that would read it is gone, or stopped the attempt.
            // Whatever the command left behind goes with it when it exits.
            Ok(Event::WorkerGone | Event::Exited) | Err(RecvTimeoutError::Disconnected) => {
                return command.kill_all(child);
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        if parent_gone(worker) {
            return command.kill_all(child);
        }
    }
}

/// Waits for process `pid` to exit without reaping it (`WNOWAIT`): while it is an unreaped
/// zombie its process id, and so its group's id, cannot be reused, so a kill of the group
/// after the exit cannot reach a stranger.
pub(crate) fn wait_no_reap(pid: Pid) -> io::Result<()> {
    loop {
        match waitid(WaitId::Pid(pid), WaitIdOptions::EXITED | WaitIdOptions::NOWAIT) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A line on standard error (the worker keeps its tail as the job's `last_error`), if it can
/// be written: a worker that is gone reads nothing.
fn say(what: std::fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr(), "retryq exec-trampoline: {what}");
}

/// The command's exit status as the trampoline's own: its exit code, or death by its signal.
fn relay(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return code;
    }
    match status.signal() {
        Some(signal) => {
            let _ = signal_hook::low_level::emulate_default_handler(signal);
            // Still here: a signal whose default is not to end a process.
            128 + signal
        }
        None => EXIT_NOT_STARTED,
    }
}

/// Whether the worker is no longer this process's parent.
fn parent_gone(worker: Pid) -> bool {
    rustix::process::getppid() != Some(worker)
}

/// Asks for SIGHUP when the parent dies (caught by [`hear_signals`]: the command's group is
/// then killed), makes this process its descendants' subreaper, then checks the parent is
/// still `worker`.
#[cfg(target_os = "linux")]
fn watch_parent(worker: Pid) -> io::Result<()> {
    rustix::process::set_parent_process_death_signal(Some(Signal::HUP))?;
    // Orphans of the command's processes come here rather than to init, so that the kill
    // finds them (`descendants`).
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
    if parent_gone(worker) {
        return Err(io::Error::other("the worker exited before the command started"));
    }
    Ok(())
}

/// Elsewhere there is no parent-death signal: the pipe and the parent's id say it.
#[cfg(not(target_os = "linux"))]
fn watch_parent(worker: Pid) -> io::Result<()> {
    if parent_gone(worker) {
        return Err(io::Error::other("the worker exited before the command started"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_names_the_worker_then_the_shell() {
        let t = Trampoline::new("/bin/retryq", ["exec-trampoline"]);
        let worker = Pid::from_raw(4242).expect("pid");
        let command = t.command(worker, "sh");
        assert_eq!(command.get_program(), "/bin/retryq");
        let args: Vec<_> = command.get_args().collect();
        assert_eq!(args, ["exec-trampoline", "4242", "sh"]);
    }

    #[test]
    fn a_malformed_call_is_refused_before_anything_runs() {
        let err = bounce([OsString::from("not-a-pid"), "sh".into()]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        let err = bounce([OsString::from("0"), "sh".into()]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "pid 0 is no process: {err}");
        let err = bounce([OsString::from("1")]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    }

    #[test]
    fn the_header_and_renewals_carry_both_ends_less_nothing() {
        let now = Instant::now();
        let lease = LeaseEnds {
            monotonic: Some(now + Duration::from_secs(10)),
            wall_ms: 1_000_000,
            local_offset_ms: Some(250),
            margin: Duration::from_millis(2500),
            kill_grace: Duration::from_millis(500),
        };
        let line = header(7, Some(&lease));
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(&words[..5], ["retryq-watchdog", "2", "7", "2500", "500"], "{line}");
        let mut watch = Watch { margin_ms: 2500, grace: Duration::ZERO, monotonic: None, wall: None };
        watch.ends(&words[5..]).expect("ends");
        // The wall end on this host's clock: the worker's clock reads 250 ms ahead of it.
        assert_eq!(watch.wall, Some(999_750));
        let left = Duration::from_nanos(watch.monotonic.expect("monotonic") - monotonic_ns());
        assert!(left <= Duration::from_secs(10) && left > Duration::from_secs(9), "{left:?}");
        assert_eq!(renewal(None), "renew - -\n");
        assert_eq!(header(0, None), "retryq-watchdog 2 0 0 0 - -\n");
    }

    #[test]
    fn what_the_trampoline_tells_reads_back() {
        let cgroup = Cgroup::at("/sys/fs/cgroup/retryq-exec-7").expect("a command's cgroup");
        let group = Pid::from_raw(4242).expect("pid");
        for told in [Told::Cgroup(cgroup), Told::Group(group), Told::Gone] {
            assert_eq!(Told::read(&told.line()), Some(told.clone()), "{told:?}");
        }
        for unknown in ["", "group", "group x", "cgroup /etc", "gone now", "renew 1 2"] {
            assert_eq!(Told::read(unknown), None, "{unknown:?}");
        }
    }

    #[test]
    fn the_watch_is_due_at_the_end_less_the_margin_on_either_clock() {
        let in_ms = |ms: u64| monotonic_ns() + ms * 1_000_000;
        let far = Watch { margin_ms: 1000, grace: Duration::ZERO, monotonic: Some(in_ms(5000)), wall: None };
        let wait = far.due().expect_err("not due");
        assert!(wait <= Duration::from_secs(4) && wait > Duration::from_secs(3), "{wait:?}");
        let near = Watch { monotonic: Some(in_ms(900)), ..far };
        assert_eq!(near.due(), Ok("on the monotonic clock"));
        let now = i128::from(local_ms().expect("clock"));
        let stepped = Watch { wall: Some(now + 500), ..far };
        assert_eq!(stepped.due(), Ok("on the wall clock"));
        let unwatched = Watch { monotonic: None, wall: None, ..far };
        assert_eq!(unwatched.due(), Err(Duration::MAX));
    }
}
