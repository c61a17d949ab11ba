//! Writing to standard output and standard error without panicking.
//!
//! `println!` and `eprintln!` panic when the write fails: when the reader of a pipe went
//! away (`retryq dead | head -1`) or the output is a full disk (`2>/dev/full`). So every
//! command writes through here instead:
//!
//! - standard output ([`outln!`], [`out!`]) carries a command's result. A reader that went
//!   away ends the command quietly with [`CliError::OutputClosed`], exit 141 (128 + SIGPIPE,
//!   what a shell reports for a program the closed pipe stopped): not 0, which would tell a
//!   script that `retryq audit | head -1` found nothing wrong. Any other failure to write it
//!   is an error naming standard output.
//! - standard error ([`noteln!`]) carries notes for the operator: written if it can be.
//!   Whether a note reached a full disk must not decide whether a job is claimed or a
//!   result printed.

use std::fmt;
use std::io::{self, Write};

use crate::cmd::error::CliError;

/// Writes to standard output and flushes, so that a failure shows here and not at exit.
pub fn print(text: fmt::Arguments<'_>) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    out.write_fmt(text).and_then(|()| out.flush()).map_err(stdout_failed)
}

/// A failure to write standard output, as the command's error.
pub fn stdout_failed(error: io::Error) -> CliError {
    if error.kind() == io::ErrorKind::BrokenPipe { CliError::OutputClosed } else { CliError::Output(error) }
}

/// Writes to standard error if it can; a failure is dropped (there is nowhere to report it).
pub fn note(text: fmt::Arguments<'_>) {
    let _ = io::stderr().lock().write_fmt(text);
}

/// `println!` to standard output, returning `Result<(), CliError>`.
macro_rules! outln {
    () => {
        $crate::out::print(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` to standard output, returning `Result<(), CliError>`.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::print(format_args!($($arg)*))
    };
}

/// `eprintln!` that never fails: see [`note`].
macro_rules! noteln {
    ($($arg:tt)*) => {
        $crate::out::note(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {noteln, out, outln};
