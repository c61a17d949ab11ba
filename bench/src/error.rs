//! Why a benchmark could not run: one error for every part of the run, in its own module so
//! that each benchmark can return it without depending on the crate root that runs them all.

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The queue refused or failed.
    #[error(transparent)]
    Queue(#[from] retryq::Error),
    /// A bare statement of the floor or of the scaling comparison failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A bare statement of the PostgreSQL floor, or the benchmark's own server, failed.
    #[error("postgres: {0}")]
    Postgres(#[from] postgres::Error),
    /// A file or a child process could not be used.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A worker's report could not be read or written.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    /// The wall clock could not be read.
    #[error("clock: {0}")]
    Clock(#[from] retryq_core::ClockError),
    /// A worker process failed or reported nonsense.
    #[error("worker process: {0}")]
    Worker(String),
    /// The run could not be set up (a directory, a database, a program).
    #[error("setup: {0}")]
    Setup(String),
}
