//! How a command fails, and the exit status each failure gives. Its own module so that the
//! output helpers (`out.rs`) can name it without depending on the commands that use them.

use std::process::ExitCode;

/// `work`'s exit status when its transport cannot run any job: `EX_CONFIG` of sysexits.h, in
/// the family of the exec protocol's own 65 and 75, and none of the other statuses' (0, 1, 2,
/// 128 + N, 141), so that a supervisor can tell it from a failure worth restarting for.
pub const EXIT_MISCONFIGURED: u8 = 78;

/// A failure that ends a command: printed as `retryq: error: …`.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A flag's value is wrong: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The database cannot be used, said in an operator's words.
    #[error("{0}")]
    Database(String),
    /// `work`'s transport cannot run any job (an `--exec` command not found or not
    /// executable): exit [`EXIT_MISCONFIGURED`].
    #[error("{0}")]
    Misconfigured(String),
    #[error(transparent)]
    Queue(#[from] retryq::Error),
    #[error(transparent)]
    Bench(#[from] retryq_bench::BenchError),
    #[error(transparent)]
    Replay(#[from] retryq_conformance::ReplayError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Standard output's reader went away (`| head`): the command ends quietly.
    #[error("standard output was closed")]
    OutputClosed,
    /// Standard output cannot be written (a full disk, an I/O error).
    #[error("cannot write standard output: {0}")]
    Output(std::io::Error),
    #[error("{0}")]
    Other(String),
}

impl CliError {
    /// The process's exit status for this failure.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Usage(_) => ExitCode::from(2),
            CliError::Misconfigured(_) => ExitCode::from(EXIT_MISCONFIGURED),
            // 128 + SIGPIPE: what a shell reports for a program a closed pipe stopped.
            CliError::OutputClosed => ExitCode::from(141),
            _ => ExitCode::FAILURE,
        }
    }

    /// Whether the failure goes without saying (nothing is printed for it).
    pub fn is_quiet(&self) -> bool {
        matches!(self, CliError::OutputClosed)
    }

    /// A usage error naming `flag`.
    pub fn flag(flag: &str, why: impl std::fmt::Display) -> CliError {
        CliError::Usage(format!("{flag}: {why}"))
    }
}
