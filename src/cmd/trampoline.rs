//! `retryq exec-trampoline WORKER_PID SHELL -c COMMAND` (hidden): how `retryq work --exec`
//! starts each command, beside a watchdog that kills the command's process group when the
//! worker dies (even by SIGKILL) or stalls past the lease (see `retryq_worker::Trampoline`).
//! It stays the command's parent until the command is gone, and exits as the command did.
//!
//! It is handled before the command line is parsed: its arguments belong to the shell, and
//! nothing of the usual flag handling may stand between the worker and the command.

use std::ffi::OsString;
use std::process::ExitCode;

use retryq_worker::{EXIT_NOT_STARTED, Trampoline, bounce};

/// The subcommand's name, as the worker passes it.
pub const NAME: &str = "exec-trampoline";

/// The trampoline that is this very binary. On Linux `/proc/self/exe`, read in the new
/// process before it runs anything, is the worker's own binary even if the file was
/// replaced or deleted since the worker started; elsewhere the path the binary was run from.
pub fn this_binary() -> std::io::Result<Trampoline> {
    let program = if cfg!(target_os = "linux") { "/proc/self/exe".into() } else { std::env::current_exe()? };
    Ok(Trampoline::new(program, [NAME]))
}

/// Runs the trampoline on the arguments after [`NAME`]: exits as the command did, or, when
/// the command could not be started, with [`EXIT_NOT_STARTED`] after saying why on standard
/// error (the worker keeps its tail).
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    match bounce(args) {
        Ok(code) => ExitCode::from(u8::try_from(code & 0xff).unwrap_or(u8::MAX)),
        Err(error) => {
            crate::out::noteln!("retryq {NAME}: {error}");
            ExitCode::from(EXIT_NOT_STARTED as u8)
        }
    }
}
