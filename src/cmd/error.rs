//! How a command fails, and the exit status each failure gives. Its own module so that the
//! output helpers (`out.rs`) can name it without depending on the commands that use them.

use std::process::ExitCode;

/// `work`'s exit status when its transport cannot run any job: `EX_CONFIG` of sysexits.h, in
/// the family of the exec protocol's own 65 and 75, and none of the other statuses' (0, 1, 2,
/// 128 + N, 141), so that a supervisor can tell it from a failure worth restarting for.
pub const EXIT_MISCONFIGURED: u8 = 78;

/// The exit status of a failure that may pass by itself (a lock held too long, a server gone,
/// a transaction rolled back): `EX_TEMPFAIL` of sysexits.h, as the exec protocol's own 75.
/// Nothing was written (an import says what was), so a script may run the same command again.
pub const EXIT_TEMPFAIL: u8 = 75;

/// A failure that ends a command: printed as `retryq: error: …`.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A flag's value is wrong: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The database cannot be used, said in an operator's words.
    #[error("{0}")]
    Database(String),
    /// The store failed in a way that may pass by itself ([`retryq::Error::is_transient`]),
    /// said in an operator's words: exit [`EXIT_TEMPFAIL`].
    #[error("{0}")]
    TryLater(String),
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
    /// The process's exit status for this failure: the one place a failure is classed. A
    /// wrong flag is 2 (as clap has it); a failure that may pass is [`EXIT_TEMPFAIL`]; a
    /// refusal, a conflict or a failure that will not pass by itself is 1.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(self.status())
    }

    /// [`CliError::exit_code`] as a number.
    pub fn status(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Misconfigured(_) => EXIT_MISCONFIGURED,
            // 128 + SIGPIPE: what a shell reports for a program a closed pipe stopped.
            CliError::OutputClosed => 141,
            _ if self.may_pass() => EXIT_TEMPFAIL,
            _ => 1,
        }
    }

    /// Whether the failure may pass by itself, so that the same command may succeed later:
    /// a store's passing failure, whether explained in words or not.
    pub fn may_pass(&self) -> bool {
        match self {
            CliError::TryLater(_) => true,
            CliError::Queue(e) => e.is_transient(),
            _ => false,
        }
    }

    /// This failure with `more` said after it, its class kept (an import adds what it wrote).
    pub fn with_note(self, more: &str) -> CliError {
        let text = format!("{self}; {more}");
        if self.may_pass() { CliError::TryLater(text) } else { CliError::Database(text) }
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
