//! Why a benchmark could not run: one error for every part of the run, in its own module so
//! that each benchmark can return it without depending on the crate root that runs them all.

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Queue(#[from] retryq::Error),
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("clock: {0}")]
    Clock(#[from] retryq_core::ClockError),
    #[error("worker process: {0}")]
    Worker(String),
    #[error("setup: {0}")]
    Setup(String),
}
