//! Where a benchmark's PostgreSQL server comes from: its own throwaway cluster, or one a URL
//! names. A module of its own so that every measurement that needs a server (throughput,
//! latency) can name it without reaching into another's report.

/// Where the server comes from.
#[derive(Clone, Debug)]
pub enum Server {
    /// Start a throwaway cluster with fsync on.
    Own,
    /// A running server, by the URL of a database on it.
    At(String),
}
