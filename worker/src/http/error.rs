//! Why a transport cannot be built: its own module so that the URL parser (`target`) and the
//! transport both name it without depending on each other.

/// A transport that cannot be built from what it was given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    #[error("at least one URL is needed")]
    NoUrl,
    #[error("{url:?}: {reason}")]
    Url { url: String, reason: String },
    #[error("{0:?} is not a valid header value")]
    ContentType(String),
}
