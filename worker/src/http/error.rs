//! Why a transport cannot be built: its own module so that the URL parser (`target`) and the
//! transport both name it without depending on each other.

/// A transport that cannot be built from what it was given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// No URL was given: there is nowhere to send.
    #[error("at least one URL is needed")]
    NoUrl,
    /// A URL cannot be used: not http or https, no host, a bad port.
    #[error("{url:?}: {reason}")]
    Url {
        /// The URL, its credentials shown as `***`.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The content type cannot be sent as a header value.
    #[error("{0:?} is not a valid header value")]
    ContentType(String),
}
