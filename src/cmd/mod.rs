//! One module per subcommand. Each exposes `Args` (its clap flags) and
//! `run(Args) -> Result<ExitCode, CliError>`.

pub mod bench;
pub mod replay;
pub mod verify;

/// A failure that ends a command: printed as `retryq: error: …`, exit status 1.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Queue(#[from] retryq::Error),
    #[error(transparent)]
    Bench(#[from] retryq_bench::BenchError),
    #[error(transparent)]
    Replay(#[from] retryq_conformance::ReplayError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Other(String),
}
