//! The trampoline: how an [`Exec`](crate::Exec) command comes to die with its worker, even a
//! worker killed with SIGKILL, with nothing but safe Rust in the worker.
//!
//! Linux's parent-death signal (`PR_SET_PDEATHSIG`) kills a process when its parent dies,
//! but only the child can ask for it, after the fork and before the command runs; doing
//! that inside the worker's own `fork` takes a `pre_exec` hook, which safe Rust cannot
//! write (the crate forbids it). So the worker starts a small program instead — the
//! trampoline — that asks for the signal in a process of its own, checks that the worker
//! is still its parent, and then replaces itself
//! (`execve`, same process, same process group) with `sh -c COMMAND`. The signal survives
//! the `execve`, and the command is what the worker waits for, exactly as without one.
//!
//! Any program that calls [`bounce`] with the arguments it was given is a trampoline; the
//! `retryq` binary is one (its hidden `exec-trampoline` subcommand). Without a trampoline a
//! command is still killed with its whole process group whenever the worker ends it (its
//! timeout, its lease, a second stop signal), but a worker that is killed outright leaves
//! its command running until it ends by itself.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use rustix::process::Pid;

/// The exit status of a trampoline that could not start the command: unclassified (it is
/// none of 0, [`EXIT_RETRYABLE`](crate::EXIT_RETRYABLE), [`EXIT_PERMANENT`](crate::EXIT_PERMANENT)),
/// as the shell's own "command not found" is.
pub const EXIT_NOT_STARTED: i32 = 127;

/// A program that starts each command so that it dies with its worker: it is run as
/// `PROGRAM ARGS… WORKER_PID SHELL -c COMMAND` and must call [`bounce`] with what follows
/// `ARGS…`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trampoline {
    program: PathBuf,
    args: Vec<OsString>,
}

impl Trampoline {
    /// The trampoline `program args…`.
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Trampoline {
        Trampoline { program: program.into(), args: args.into_iter().map(Into::into).collect() }
    }

    /// The command that runs `shell` through this trampoline, for a worker whose process id
    /// is `worker`; the caller adds the shell's own arguments.
    pub(crate) fn command(&self, worker: Pid, shell: &str) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args).arg(worker.as_raw_nonzero().to_string()).arg(shell);
        command
    }
}

/// The trampoline's side, given `WORKER_PID SHELL SHELL_ARGS…`: asks to be killed when the
/// worker dies, checks the worker is still the parent (it may have died before the asking),
/// and replaces this process with `SHELL SHELL_ARGS…`. Returns only if that failed, with
/// why; the caller then exits with [`EXIT_NOT_STARTED`].
pub fn bounce(args: impl IntoIterator<Item = OsString>) -> io::Error {
    let mut args = args.into_iter();
    let worker = args.next().and_then(|pid| pid.to_str()?.parse::<i32>().ok()).and_then(Pid::from_raw);
    let Some(worker) = worker else {
        return io::Error::new(
            io::ErrorKind::InvalidInput,
            "the first argument must be the worker's process id",
        );
    };
    let Some(shell) = args.next() else {
        return io::Error::new(io::ErrorKind::InvalidInput, "no shell to run");
    };
    if let Err(e) = die_with(worker) {
        return e;
    }
    Command::new(shell).args(args).exec()
}

/// Asks for SIGKILL when the parent dies, then checks the parent is still `worker`.
#[cfg(target_os = "linux")]
fn die_with(worker: Pid) -> io::Result<()> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
    if rustix::process::getppid() != Some(worker) {
        return Err(io::Error::other("the worker exited before the command started"));
    }
    Ok(())
}

/// Elsewhere there is no parent-death signal: the command runs as it would without a
/// trampoline.
#[cfg(not(target_os = "linux"))]
fn die_with(_worker: Pid) -> io::Result<()> {
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
        let err = bounce([OsString::from("not-a-pid"), "sh".into()]);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        let err = bounce([OsString::from("0"), "sh".into()]);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "pid 0 is no process: {err}");
        let err = bounce([OsString::from("1")]);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    }
}
