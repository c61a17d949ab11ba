//! The exec transport: one shell command per attempt, the outcome read from its exit status.
//!
//! The protocol (docs/operating.md has it for operators):
//!
//! - the command is run as `/bin/sh -c COMMAND`, in a process group of its own. `/bin/sh` by
//!   its path, not the first `sh` on the worker's `PATH`, so that which shell runs a command
//!   can be said: the system's POSIX shell, which is dash on Debian and Ubuntu (no `$RANDOM`,
//!   no arrays, no `[[ ]]`) and bash elsewhere. A command that needs bash says so:
//!   `bash -c '…'`, or a script with its own `#!` line;
//! - its standard input is the job's payload, then end of file; standard output is the
//!   worker's; standard error is kept (its last [`TAIL_BYTES`]) for the job's `last_error`;
//! - its environment is the worker's plus `RETRYQ_JOB_ID` and `RETRYQ_ATTEMPT`;
//! - exit 0 is `ok`; every other exit status is classed by the [`ExitTable`]: by default
//!   [`EXIT_PERMANENT`] (65, `EX_DATAERR`) is `permanent` and every other one (75,
//!   `EX_TEMPFAIL`, and an ordinary `exit 1`) is `retryable`, recorded at once;
//! - [`EXIT_NOT_EXECUTABLE`] (126) and [`EXIT_NOT_FOUND`] (127) are the shell's own: it could
//!   not run the command (POSIX, "Command Search and Execution"). That is the worker's
//!   configuration, not the job: the attempt is `retryable` at once, with `command not found
//!   (exit 127)` or `command not executable (exit 126)` as its error, and the transport says
//!   it is [unusable](Transport::unusable), so that the worker stops claiming rather than
//!   spend every job's budget on the same failure;
//! - past its timeout the whole process group is killed (SIGKILL) and the attempt is
//!   `retryable`: the receiver may simply have been slow. So it is, earlier, when the lease
//!   would otherwise run out by either clock (see [`Window`]); and so it is when a heartbeat
//!   is refused (the lease is no longer this worker's), though that outcome is not recorded;
//! - once the command has ended or been killed, the worker waits at most [`GRACE`] for it to
//!   be gone and for its standard error to close, then records what it has;
//! - an exit status the table lists as unknown, or death by a signal, is unclassified: the
//!   job waits for its lease to expire.
//!
//! When the command ends, whatever it left running in its process group is killed too: an
//! attempt is over when its command is, and nothing of it may run on into the next attempt.
//! Started through a [`Trampoline`] ([`Exec::with_trampoline`]), the command runs beside a
//! watchdog that kills it when the worker dies (at once) or when the lease's end less the
//! margin passes without a renewal the store accepted (SIGTERM, then SIGKILL), so that a
//! killed or stalled worker cannot keep it running past its lease; without one, nothing
//! watches the command when the worker cannot.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use retryq::{Claimed, Outcome, Report};
use rustix::process::{Pid, Signal, kill_process_group};

pub use crate::exit_table::{EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_PERMANENT, EXIT_RETRYABLE};
use crate::exit_table::{ExitClass, ExitTable};
use crate::stop::Stop;
use crate::trampoline::{Trampoline, wait_no_reap};
use crate::transport::{Transport, Unclassified};
use crate::watched::Watched;
use crate::window::{Cut, POLL, Window};

/// The shell every command is run with, as `SHELL -c COMMAND`: the system's POSIX shell,
/// dash on Debian and Ubuntu.
pub const SHELL: &str = "/bin/sh";
/// How much of the end of the command's standard error is kept.
pub const TAIL_BYTES: usize = 2048;
pub use crate::watched::GRACE;

/// Runs a shell command per attempt. A clone is another slot's transport: the same command
/// and stop, its own child.
#[derive(Clone)]
pub struct Exec {
    command: String,
    shell: String,
    stop: Option<Stop>,
    trampoline: Option<Trampoline>,
    /// Why the shell could not run the command at the last attempt, if it could not.
    unusable: Option<String>,
    /// What each exit status means.
    exits: ExitTable,
}

impl Exec {
    /// A transport that runs `command` with `/bin/sh -c` ([`SHELL`]).
    pub fn new(command: impl Into<String>) -> Exec {
        Exec {
            command: command.into(),
            shell: SHELL.into(),
            stop: None,
            trampoline: None,
            unusable: None,
            exits: ExitTable::default(),
        }
    }

    /// Classes exit statuses by `exits` instead of [`ExitTable::default`].
    pub fn with_exits(mut self, exits: ExitTable) -> Exec {
        self.exits = exits;
        self
    }

    /// Starts each command through `trampoline`, beside a watchdog that ends it with its
    /// lease however the worker fares (see [`Trampoline`]). The `retryq` binary passes
    /// itself.
    pub fn with_trampoline(mut self, trampoline: Trampoline) -> Exec {
        self.trampoline = Some(trampoline.found_home());
        self
    }

    /// Lets `stop` kill the running command if the process is told to exit at once.
    pub fn with_stop(mut self, stop: &Stop) -> Exec {
        self.stop = Some(stop.clone());
        self
    }

    /// The command, started; through a trampoline, with the worker's end of the socket to
    /// it (the trampoline's standard input).
    fn spawn(&self, job: &Claimed) -> io::Result<(Child, Option<UnixStream>)> {
        let (mut command, socket) = match &self.trampoline {
            Some(trampoline) => {
                let (ours, theirs) = UnixStream::pair()?;
                let mut command = trampoline.command(rustix::process::getpid(), &self.shell);
                command.stdin(Stdio::from(OwnedFd::from(theirs)));
                (command, Some(ours))
            }
            None => {
                let mut command = Command::new(&self.shell);
                command.stdin(Stdio::piped());
                (command, None)
            }
        };
        command
            .arg("-c")
            .arg(&self.command)
            .env("RETRYQ_JOB_ID", job.id())
            .env("RETRYQ_ATTEMPT", job.attempt().to_string())
            .stdout(Stdio::inherit())
            .stderr(Stdio::piped())
            // A group of its own: a terminal's Ctrl-C reaches only the worker. Through a
            // trampoline this is the trampoline's group, and the command has another.
            .process_group(0);
        Ok((command.spawn()?, socket))
    }
}

impl Transport for Exec {
    fn attempt(&mut self, job: &Claimed, window: &Window<'_>) -> Result<Report, Unclassified> {
        self.unusable = None;
        let (left, cut) = window.left();
        if left.is_zero() {
            let note = match cut {
                Cut::Timeout => "not started: no time left before the deadline".to_owned(),
                lease => format!("not started: no time left before {lease}"),
            };
            return Ok(Report::with_error(Outcome::Retryable, note));
        }
        let (child, socket) =
            self.spawn(job).map_err(|e| Unclassified(format!("could not start {SHELL} -c: {e}")))?;
        let group = Pid::from_child(&child);
        // Through a trampoline the command is stopped by shutting its socket, never by
        // killing the trampoline: that would leave the command without its watchdog.
        let watched = socket.as_ref().map(|_| Arc::new(AtomicBool::new(false)));
        if let Some(stop) = &self.stop {
            stop.running(group, watched.clone());
        }
        let ran = run(child, socket, group, job, window, watched.as_deref());
        if let Some(stop) = &self.stop {
            stop.idle(group);
        }
        let ran = ran?;
        if ran.cut.is_none()
            && let Some(code) = ran.status.and_then(|s| s.code())
            && let Some(what) = not_runnable(code)
        {
            let tail = if ran.tail.is_empty() { String::new() } else { format!(": {}", ran.tail) };
            self.unusable = Some(format!("the command {:?}: {what} (exit {code}){tail}", self.command));
        }
        classify(&ran, window.timeout(), &self.exits)
    }

    fn grace(&self) -> Duration {
        GRACE
    }

    fn unusable(&self) -> Option<String> {
        self.unusable.clone()
    }
}

/// What the shell's own exit status says, when it could not run the command at all.
fn not_runnable(code: i32) -> Option<&'static str> {
    match code {
        EXIT_NOT_EXECUTABLE => Some("command not executable"),
        EXIT_NOT_FOUND => Some("command not found"),
        _ => None,
    }
}

/// What became of one command.
struct Ran {
    /// Its exit status; `None` if it was killed and still not gone within the grace.
    status: Option<ExitStatus>,
    /// What stopped it, if it did not end by itself.
    cut: Option<Cut>,
    elapsed: Duration,
    tail: String,
    /// What the worker did when the watchdog died under the command, if it did.
    watchdog_died: Option<String>,
}

/// Feeds the payload, waits for the command (killing its group when the window closes), and
/// collects the tail of its standard error — waiting at most [`GRACE`] once the command has
/// ended or been killed.
///
/// Through a trampoline (`watched`: set by [`Stop`] to stop the command now) the command's
/// standard input and its lease go down the trampoline's pipe, and the command is stopped by
/// closing it; without one the worker kills the process group itself.
fn run(
    mut child: Child,
    socket: Option<UnixStream>,
    group: Pid,
    job: &Claimed,
    window: &Window<'_>,
    watched: Option<&AtomicBool>,
) -> Result<Ran, Unclassified> {
    let mut control = None;
    if let Some(socket) = socket {
        match Watched::start(socket, &job.payload, window.lease()) {
            Ok(started) => control = Some(started),
            Err(e) => {
                // Nothing started: its socket closed, the trampoline exits without a command.
                let _ = kill_process_group(group, Signal::KILL);
                reap_later(child);
                return Err(Unclassified(format!("could not start the command's watchdog: {e}")));
            }
        }
    } else if let Some(mut stdin) = child.stdin.take() {
        let payload = job.payload.clone();
        // A command that does not read its input must not block the worker: the payload
        // is written from a thread, which ends when the pipe closes with the command.
        let _ = thread::Builder::new().name("retryq-exec-stdin".into()).spawn(move || {
            let _ = stdin.write_all(payload.as_bytes());
        });
    }
    let tail = Tail::read(child.stderr.take());
    // Wait for the exit without reaping (WNOWAIT): while the command is an unreaped zombie
    // its process id, and so its group's id, cannot be reused, so killing the group after it
    // exited cannot reach a stranger.
    let (exit_tx, exit_rx) = mpsc::channel();
    let _ = thread::Builder::new().name("retryq-exec-wait".into()).spawn(move || {
        let _ = exit_tx.send(wait_no_reap(group));
    });
    let gone = || Err(io::Error::other("the waiting thread is gone"));
    let mut cut = None;
    let exited = loop {
        let (left, why) = window.left();
        if left.is_zero() {
            cut = Some(why);
            break None;
        }
        if let Some(control) = &mut control {
            if watched.is_some_and(|stop| stop.load(Ordering::SeqCst)) {
                control.kill();
            }
            control.renew(window.lease());
        }
        // Never longer than POLL: the window re-reads the wall clock.
        match exit_rx.recv_timeout(left.min(POLL)) {
            Ok(exited) => break Some(exited),
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break Some(gone()),
        }
    };
    let elapsed = window.elapsed();
    match &mut control {
        // At a cut, the trampoline kills the command; after an exit, it already killed what
        // the command left behind.
        Some(control) => {
            if exited.is_none() {
                control.kill();
            } else if cut.is_none() {
                // The watchdog may have stopped it: at the end of the lease the worker keeps
                // too, so the window says so as well.
                let (left, why) = window.left();
                if left.is_zero() && why != Cut::Timeout {
                    cut = Some(why);
                }
            }
        }
        // At a cut: the whole group. After an exit: whatever the command left behind in it.
        None => {
            let _ = kill_process_group(group, Signal::KILL);
        }
    }
    let grace_end = Instant::now() + GRACE;
    let exited = match exited {
        Some(exited) => Some(exited),
        None => match exit_rx.recv_timeout(GRACE) {
            Ok(exited) => Some(exited),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => Some(gone()),
        },
    };
    let status = match exited {
        // Exited, not yet reaped: reaping a zombie does not block.
        Some(Ok(())) => {
            Some(child.wait().map_err(|e| Unclassified(format!("could not reap the command: {e}")))?)
        }
        Some(Err(e)) => {
            // Cannot wait without reaping: kill, leave the reaping to a thread, and say so.
            let _ = kill_process_group(group, Signal::KILL);
            reap_later(child);
            return Err(Unclassified(format!("could not wait for the command: {e}")));
        }
        // Killed, and not gone within the grace (stuck in the kernel, or a watchdog still
        // hunting what the command forked): left to a thread.
        None => {
            reap_later(child);
            None
        }
    };
    // A watchdog that exited without saying its command is gone died under it: the worker
    // kills what it left before the attempt ends.
    let watchdog_died = match (&control, &status) {
        (Some(control), Some(_)) => control.after_exit(window),
        _ => None,
    };
    Ok(Ran { status, cut, elapsed, tail: tail.take(grace_end), watchdog_died })
}

/// Reaps `child` on a thread of its own, whenever it goes: the worker does not wait for it.
fn reap_later(mut child: Child) {
    let _ = thread::Builder::new().name("retryq-exec-reap".into()).spawn(move || {
        let _ = child.wait();
    });
}

/// The end of a command's standard error, read on a thread of its own into a buffer the
/// attempt can take at any time: a stream held open past the grace keeps what came first.
struct Tail {
    kept: Arc<Mutex<Vec<u8>>>,
    /// Disconnected once the stream has closed (or could not be read).
    done: mpsc::Receiver<()>,
}

impl Tail {
    fn read(stream: Option<impl Read + Send + 'static>) -> Tail {
        let kept = Arc::new(Mutex::new(Vec::new()));
        let (closed, done) = mpsc::channel::<()>();
        if let Some(stream) = stream {
            let buffer = Arc::clone(&kept);
            let _ = thread::Builder::new().name("retryq-exec-stderr".into()).spawn(move || {
                keep_tail(stream, &buffer);
                drop(closed);
            });
        }
        Tail { kept, done }
    }

    /// The tail as text, once the stream has closed or at `until`, whichever comes first.
    fn take(self, until: Instant) -> String {
        let _ = self.done.recv_timeout(until.saturating_duration_since(Instant::now()));
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        text(&kept)
    }
}

/// Reads `stream` to its end, keeping its last [`TAIL_BYTES`] (or a little more) in `kept`.
fn keep_tail(mut stream: impl Read, kept: &Mutex<Vec<u8>>) {
    let mut buffer = [0u8; 8192];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
                kept.extend_from_slice(&buffer[..n]);
                if kept.len() > 2 * TAIL_BYTES {
                    let cut = kept.len() - TAIL_BYTES;
                    kept.drain(..cut);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
}

/// The last [`TAIL_BYTES`] of `bytes`, as trimmed text.
fn text(bytes: &[u8]) -> String {
    let bytes = &bytes[bytes.len().saturating_sub(TAIL_BYTES)..];
    let text = String::from_utf8_lossy(bytes);
    // A cut through a character shows as a replacement character at the start: drop it.
    text.trim_start_matches('\u{FFFD}').trim().to_owned()
}

/// The exit status in the protocol's words.
fn classify(ran: &Ran, timeout: Duration, exits: &ExitTable) -> Result<Report, Unclassified> {
    let tail = ran.tail.as_str();
    let with_tail = |what: String| if tail.is_empty() { what } else { format!("{what}: {tail}") };
    let ms = ran.elapsed.as_millis();
    if let Some(note) = &ran.watchdog_died {
        let how = ran.status.map_or_else(String::new, |status| format!(" ({status})"));
        return Err(Unclassified(with_tail(format!("{note}{how} after {ms} ms"))));
    }
    if let Some(cut) = ran.cut {
        let mut what = match cut {
            Cut::Timeout => format!("timed out after {} ms; process group killed", timeout.as_millis()),
            lease => format!("stopped after {ms} ms at {lease}; process group killed"),
        };
        if ran.status.is_none() {
            let _ = write!(what, ", still not gone {} ms later", GRACE.as_millis());
        }
        return Ok(Report::with_error(Outcome::Retryable, with_tail(what)));
    }
    let Some(status) = ran.status else {
        return Err(Unclassified(with_tail(format!("the command's end could not be read after {ms} ms"))));
    };
    match (status.code(), status.signal()) {
        (Some(0), _) => Ok(Report::from(Outcome::Ok)),
        // Retryable, not permanent: the job is not at fault, and another worker (or this one,
        // its command fixed) can run it.
        (Some(code @ (EXIT_NOT_EXECUTABLE | EXIT_NOT_FOUND)), _) => Ok(Report::with_error(
            Outcome::Retryable,
            with_tail(format!("{} (exit {code}) after {ms} ms", not_runnable(code).unwrap_or("exit"))),
        )),
        (Some(code), _) => {
            let class = u8::try_from(code).map_or(ExitClass::Unknown, |code| exits.classify(code));
            match class {
                ExitClass::Retryable => Ok(Report::with_error(
                    Outcome::Retryable,
                    with_tail(format!("exit {code} (retryable) after {ms} ms")),
                )),
                ExitClass::Permanent => Ok(Report::with_error(
                    Outcome::Permanent,
                    with_tail(format!("exit {code} (permanent) after {ms} ms")),
                )),
                ExitClass::Unknown => {
                    Err(Unclassified(with_tail(format!("exit {code} (unclassified) after {ms} ms"))))
                }
            }
        }
        (None, Some(signal)) => {
            Err(Unclassified(with_tail(format!("killed by signal {signal} after {ms} ms"))))
        }
        (None, None) => Err(Unclassified(with_tail(format!("ended with {status} after {ms} ms")))),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::*;
    use retryq::Lease;

    fn job(id: &str, attempt: u64, payload: &str) -> Claimed {
        Claimed {
            lease: Lease::new("w", id, attempt),
            lease_until: 0,
            payload: payload.into(),
            deadline: 0,
            last_node: None,
            kind: String::new(),
        }
    }

    fn attempt(command: &str, timeout_ms: u64) -> Result<Report, Unclassified> {
        Exec::new(command)
            .attempt(&job("order-7", 3, "the payload"), &Window::new(Duration::from_millis(timeout_ms)))
    }

    #[test]
    fn exit_statuses_map_to_outcomes() {
        assert_eq!(attempt("exit 0", 5000), Ok(Report::from(Outcome::Ok)));
        let r = attempt("echo 'busy, try later' >&2; exit 75", 5000).expect("retryable");
        assert_eq!(r.outcome, Outcome::Retryable);
        let error = r.error.expect("an error text");
        assert!(error.starts_with("exit 75 (retryable)") && error.ends_with(": busy, try later"), "{error}");
        let r = attempt("exit 65", 5000).expect("permanent");
        assert_eq!(r.outcome, Outcome::Permanent);
        assert!(r.error.expect("an error text").starts_with("exit 65 (permanent)"));
        // An ordinary failure is retryable at once, with its standard error.
        let r = attempt("echo oops >&2; exit 1", 5000).expect("retryable");
        assert_eq!(r.outcome, Outcome::Retryable);
        let error = r.error.expect("an error text");
        assert!(error.starts_with("exit 1 (retryable)") && error.ends_with(": oops"), "{error}");
        // Unknown where the table says so: nothing recorded.
        let unknown = ExitTable::new(None, None, Some(vec![3]), ExitClass::Retryable).expect("table");
        let window = Window::new(Duration::from_millis(5000));
        let mut exec = Exec::new("echo oops >&2; exit 3").with_exits(unknown);
        let Unclassified(text) = exec.attempt(&job("order-7", 3, ""), &window).unwrap_err();
        assert!(text.starts_with("exit 3 (unclassified)") && text.ends_with(": oops"), "{text}");
        let permanent = ExitTable::new(None, Some(vec![1]), None, ExitClass::Unknown).expect("table");
        let mut exec = Exec::new("exit 1").with_exits(permanent.clone());
        assert_eq!(exec.attempt(&job("order-7", 3, ""), &window).map(|r| r.outcome), Ok(Outcome::Permanent));
        let mut exec = Exec::new("exit 2").with_exits(permanent);
        assert!(exec.attempt(&job("order-7", 3, ""), &window).is_err(), "other: unknown");
        let Unclassified(text) = attempt("kill -TERM $$", 5000).unwrap_err();
        assert!(text.starts_with("killed by signal 15"), "{text}");
    }

    #[test]
    fn a_command_the_shell_cannot_run_is_retryable_and_makes_the_transport_unusable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let script = dir.path().join("not-executable.sh");
        fs::write(&script, "exit 0\n").expect("script");
        for (command, said) in [
            ("no-such-command-anywhere".to_owned(), "command not found (exit 127)"),
            (script.display().to_string(), "command not executable (exit 126)"),
        ] {
            let mut exec = Exec::new(command.as_str());
            let r = exec
                .attempt(&job("order-7", 1, ""), &Window::new(Duration::from_millis(5000)))
                .expect("a report, at once");
            assert_eq!(r.outcome, Outcome::Retryable);
            let error = r.error.expect("an error text");
            assert!(error.starts_with(said), "{error}");
            let why = exec.unusable().expect("unusable");
            assert!(why.contains(said) && why.contains(&command), "{why}");
            // A command that runs makes it usable again.
            // (`exit 3` is an ordinary failure: retryable, reported at once: SPEC 6.42.)
            exec.command = "exit 3".into();
            let r =
                exec.attempt(&job("order-7", 2, ""), &Window::new(Duration::from_secs(5))).expect("a report");
            assert_eq!(r.outcome, Outcome::Retryable);
            assert_eq!(exec.unusable(), None);
        }
        // An exit of 126 or 127 by the command itself reads the same: the shell's statuses are
        // the shell's, and a command should not use them.
        let mut exec = Exec::new("exit 127");
        assert!(exec.attempt(&job("a", 1, ""), &Window::new(Duration::from_secs(5))).is_ok());
        assert!(exec.unusable().is_some());
    }

    #[test]
    fn the_payload_is_on_stdin_and_the_job_in_the_environment() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("out");
        let command = format!(
            "printf '%s %s ' \"$RETRYQ_JOB_ID\" \"$RETRYQ_ATTEMPT\" > {out}; cat >> {out}",
            out = out.display()
        );
        assert_eq!(attempt(&command, 5000), Ok(Report::from(Outcome::Ok)));
        assert_eq!(fs::read_to_string(&out).expect("output"), "order-7 3 the payload");
    }

    #[test]
    fn a_command_that_ignores_a_large_payload_does_not_block() {
        let payload = "x".repeat(retryq_core::MAX_PAYLOAD_BYTES);
        let r = Exec::new("exit 0").attempt(&job("a", 1, &payload), &Window::new(Duration::from_secs(5)));
        assert_eq!(r, Ok(Report::from(Outcome::Ok)));
    }

    /// Whether process `pid` still runs two seconds on (SIGKILL is delivered asynchronously).
    /// A zombie is dead for this purpose.
    fn alive(pid: &str) -> bool {
        let running = || match fs::read_to_string(Path::new("/proc").join(pid).join("stat")) {
            Ok(stat) => !stat.split(") ").nth(1).is_some_and(|rest| rest.starts_with('Z')),
            Err(_) => false,
        };
        let start = Instant::now();
        while running() {
            if start.elapsed() > Duration::from_secs(2) {
                return true;
            }
            thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn a_timeout_kills_the_whole_process_group_and_is_retryable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pids = dir.path().join("pids");
        // A child in the background and one in the foreground, both outliving the timeout.
        let command = format!(
            "sleep 30 & echo $! > {p}; echo $$ >> {p}; echo working >&2; sleep 30",
            p = pids.display()
        );
        let start = Instant::now();
        let r = attempt(&command, 300).expect("retryable");
        assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
        assert_eq!(r.outcome, Outcome::Retryable);
        let error = r.error.expect("an error text");
        assert!(error.starts_with("timed out after 300 ms") && error.ends_with(": working"), "{error}");
        let pids = fs::read_to_string(&pids).expect("pids");
        let pids: Vec<&str> = pids.split_whitespace().collect();
        assert_eq!(pids.len(), 2, "{pids:?}");
        for pid in pids {
            assert!(!alive(pid), "process {pid} outlived the timeout");
        }
    }

    #[test]
    fn what_a_command_leaves_behind_is_killed_with_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pid = dir.path().join("pid");
        let command = format!("sleep 30 > /dev/null 2>&1 & echo $! > {}; exit 0", pid.display());
        assert_eq!(attempt(&command, 5000), Ok(Report::from(Outcome::Ok)));
        let pid = fs::read_to_string(&pid).expect("pid");
        assert!(!alive(pid.trim()), "the background sleep outlived its attempt");
    }

    #[test]
    fn a_process_holding_stderr_open_costs_at_most_the_grace() {
        // `setsid` takes the sleep out of the group, out of reach of the kill; it keeps the
        // standard error open for 3 s. The attempt ends GRACE after the command, with what
        // was written before.
        let dir = tempfile::tempdir().expect("tempdir");
        let held = dir.path().join("held");
        // The command exits only once the sleep is out of the group (a new session).
        let command = format!(
            "setsid sh -c 'echo $$ > {held}; exec sleep 3' & while [ ! -s {held} ]; do sleep 0.01; done; \
             echo before >&2; exit 75",
            held = held.display()
        );
        let start = Instant::now();
        let r = attempt(&command, 5000).expect("retryable");
        let took = start.elapsed();
        assert!(took >= GRACE && took < GRACE + Duration::from_millis(400), "{took:?}");
        let error = r.error.expect("an error text");
        assert!(error.starts_with("exit 75 (retryable)") && error.ends_with(": before"), "{error}");
    }

    #[test]
    fn a_closed_window_kills_the_group_and_says_why() {
        struct Ahead;
        impl crate::Clock for Ahead {
            fn now_ms(&self) -> Result<u64, crate::ClockError> {
                Ok(u64::MAX / 2)
            }
        }
        // A lease until 1_000_000 on a clock far past it: nothing is started.
        let held =
            std::sync::Arc::new(crate::held::Held::new(Instant::now(), Duration::from_secs(10), 1_000_000));
        let window = Window::leased(5 * Duration::from_secs(1), held, GRACE, GRACE / 2, &Ahead);
        let r = Exec::new("exit 0").attempt(&job("a", 1, ""), &window).expect("retryable");
        assert_eq!(r.outcome, Outcome::Retryable);
        assert!(
            r.error
                .expect("a note")
                .contains("not started: no time left before the end of its lease by the wall clock")
        );
    }

    #[test]
    fn no_time_left_starts_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let marker = dir.path().join("ran");
        let r = attempt(&format!("touch {}", marker.display()), 0).expect("retryable");
        assert_eq!(r.outcome, Outcome::Retryable);
        assert!(!marker.exists(), "the command ran with no time left");
    }

    #[test]
    fn only_the_tail_of_stderr_is_kept() {
        let r = attempt("head -c 100000 /dev/zero | tr '\\0' a >&2; echo END >&2; exit 75", 5000)
            .expect("retryable");
        let error = r.error.expect("an error text");
        assert!(error.ends_with("aaaaEND"), "{}", &error[error.len() - 20..]);
        assert!(error.len() <= TAIL_BYTES + 100, "{}", error.len());
    }
}
