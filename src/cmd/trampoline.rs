//! How `retryq work --exec` starts each command: beside a watchdog that kills the command's
//! process group when the worker dies (even by SIGKILL) or stalls past the lease (see
//! `retryq_worker::Trampoline`). It stays the command's parent until the command is gone, and
//! exits as the command did.
//!
//! The watchdog is `retryq-watchdog`, installed beside this binary, where it is there and
//! speaks this build's protocol; else this very binary's hidden `exec-trampoline`
//! subcommand, handled before the command line is parsed: its arguments belong to the shell,
//! and nothing of the usual flag handling may stand between the worker and the command.

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::sync::OnceLock;

use retryq_worker::{Trampoline, WATCHDOG_PROTOCOL};

/// The subcommand's name, as the worker passes it.
pub const NAME: &str = "exec-trampoline";

/// The watchdog's own binary, beside `retryq`.
const WATCHDOG: &str = "retryq-watchdog";

/// The watchdog for this process's commands: `retryq-watchdog` beside this binary if it
/// speaks this build's protocol, else this binary. Either is run from what was there when
/// the worker started, even if the file was replaced or deleted since: on Linux this binary
/// as `/proc/self/exe`, the watchdog through a descriptor held open (`/proc/self/fd/N`);
/// elsewhere the path the binary was run from.
pub fn this_binary() -> std::io::Result<Trampoline> {
    if let Some(watchdog) = beside() {
        return Ok(Trampoline::new(format!("/proc/self/fd/{}", watchdog.as_raw_fd()), [NAME]));
    }
    let program = if cfg!(target_os = "linux") { "/proc/self/exe".into() } else { std::env::current_exe()? };
    Ok(Trampoline::new(program, [NAME]))
}

/// `retryq-watchdog` beside this binary, opened once and kept open for the process's life,
/// if it answers `--protocol` with this build's; `None` elsewhere than on Linux.
fn beside() -> Option<&'static File> {
    static HELD: OnceLock<Option<File>> = OnceLock::new();
    HELD.get_or_init(|| {
        if !cfg!(target_os = "linux") {
            return None;
        }
        let file = File::open(std::env::current_exe().ok()?.with_file_name(WATCHDOG)).ok()?;
        let held = format!("/proc/self/fd/{}", file.as_raw_fd());
        if speaks(Path::new(&held)) {
            Some(file)
        } else {
            tracing::warn!(
                "{WATCHDOG} beside this binary does not speak {WATCHDOG_PROTOCOL:?}: commands start beside `retryq {NAME}`"
            );
            None
        }
    })
    .as_ref()
}

/// Whether `program --protocol` prints [`WATCHDOG_PROTOCOL`].
fn speaks(program: &Path) -> bool {
    Command::new(program)
        .arg("--protocol")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|out| out.status.success() && out.stdout.trim_ascii() == WATCHDOG_PROTOCOL.as_bytes())
}

/// Runs the trampoline on the arguments after [`NAME`] ([`retryq_worker::run_watchdog`]).
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    retryq_worker::run_watchdog(std::iter::once(OsString::from(NAME)).chain(args))
}
