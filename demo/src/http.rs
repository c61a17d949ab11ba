//! The part of HTTP/1.1 the warehouse speaks, on a blocking [`TcpStream`] with one deadline
//! per request.
//!
//! Why not a server crate: tiny_http (0.12, its latest release, which the warehouse used)
//! sets no socket timeout, reads a request head of any size, hands over a body that ended
//! early as if it were whole, and reads each connection on a thread of a pool that grows
//! without bound; the maintained servers that do bound all this (hyper and what is built on
//! it) bring an async runtime. The warehouse needs little: one request per connection
//! (`Connection: close`, so that an idle connection never holds a thread), a head parsed by
//! `httparse` (hyper's parser), a body of exactly `Content-Length` bytes, and a deadline
//! for the lot.

use std::fmt::Write as _;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use crate::{IDEMPOTENCY_KEY, MAX_HEAD_BYTES, MAX_HEADERS, Reply};

/// How long, at most, the rest of an unread body is drained after the answer: closing a
/// socket with unread data resets the connection, and the client may then lose the answer
/// (a 413 most of all) before reading it.
const LINGER: Duration = Duration::from_secs(1);
/// How many bytes, at most, are drained.
const LINGER_BYTES: usize = 4 << 20;

/// What a request head says, as far as the warehouse cares.
#[derive(Debug)]
pub(crate) struct Head {
    pub method: String,
    /// The request target: a path, maybe followed by `?query`.
    pub target: String,
    pub content_length: Length,
    /// A `Transfer-Encoding` header was sent (the warehouse takes no chunked body).
    pub transfer_encoding: bool,
    /// The first `Idempotency-Key`, as sent.
    pub key: Option<Vec<u8>>,
    /// The `Expect` header, if any.
    pub expect: Option<Vec<u8>>,
}

/// A head's `Content-Length`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Length {
    Absent,
    /// Saturated: a number too large for a `u64` is `u64::MAX`, past any limit.
    Bytes(u64),
    /// Not a number, or two different ones: why.
    Invalid(String),
}

impl Head {
    /// Whether a body may follow the head.
    fn has_body(&self) -> bool {
        self.transfer_encoding || !matches!(self.content_length, Length::Absent | Length::Bytes(0))
    }
}

/// Why no request head was read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HeadError {
    #[error("the connection closed after {got} bytes, before a whole request head")]
    Closed { got: usize },
    #[error("no whole request head within {ms} ms")]
    Timeout { ms: u128 },
    #[error("the request head is over {MAX_HEAD_BYTES} bytes or {MAX_HEADERS} header fields")]
    TooLarge,
    #[error("a malformed request head: {0}")]
    Malformed(httparse::Error),
    #[error("the connection failed: {0}")]
    Io(#[source] io::Error),
}

impl HeadError {
    /// The status to answer with, or `None` when nobody is there to read an answer.
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            HeadError::Closed { got: 0 } | HeadError::Io(_) => None,
            HeadError::Closed { .. } | HeadError::Malformed(_) => Some(400),
            HeadError::Timeout { .. } => Some(408),
            HeadError::TooLarge => Some(431),
        }
    }
}

/// Why a body was not read whole. Each one stores nothing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    #[error(
        "the body ended after {got} of the {declared} bytes its Content-Length declares; nothing was stored"
    )]
    Short { got: usize, declared: usize },
    #[error("the body did not arrive within {ms} ms ({got} of {declared} bytes); nothing was stored")]
    Timeout { ms: u128, got: usize, declared: usize },
    #[error(
        "the connection failed after {got} of {declared} bytes of the body ({source}); nothing was stored"
    )]
    Io { got: usize, declared: usize, source: io::Error },
}

impl BodyError {
    /// The status to answer with.
    pub(crate) fn status(&self) -> u16 {
        match self {
            BodyError::Short { .. } | BodyError::Io { .. } => 400,
            BodyError::Timeout { .. } => 408,
        }
    }
}

/// One connection, carrying one request.
pub(crate) struct Connection {
    stream: TcpStream,
    /// How long the client has for the whole request, and the answer for being written.
    timeout: Duration,
    /// When the request must have arrived, head and body.
    deadline: Instant,
    /// Bytes read past the head: the start of the body.
    extra: Vec<u8>,
    /// A body was announced and not read whole, and the client may still be sending it.
    unread: bool,
}

impl Connection {
    /// A connection taken now: the client has `timeout` to send its request.
    pub(crate) fn new(stream: TcpStream, timeout: Duration) -> Connection {
        // Answers go out as written: no wait for an acknowledgement between head and body.
        let _ = stream.set_nodelay(true);
        Connection { stream, timeout, deadline: Instant::now() + timeout, extra: Vec::new(), unread: false }
    }

    /// Reads the request head: at most [`MAX_HEAD_BYTES`], before the deadline.
    pub(crate) fn read_head(&mut self) -> Result<Head, HeadError> {
        let mut buf = vec![0; MAX_HEAD_BYTES];
        let mut len = 0;
        loop {
            let read = buf.get(..len).unwrap_or_default();
            match parse(read) {
                Ok(Some((end, head))) => {
                    self.extra = read.get(end..).unwrap_or_default().to_vec();
                    self.unread = head.has_body();
                    return Ok(head);
                }
                Ok(None) => {}
                Err(e) => {
                    // The client may still be sending what was refused.
                    self.unread = true;
                    return Err(e);
                }
            }
            let Some(free) = buf.get_mut(len..).filter(|free| !free.is_empty()) else {
                self.unread = true;
                return Err(HeadError::TooLarge);
            };
            match read_before(&mut self.stream, self.deadline, free) {
                Ok(Some(0)) => return Err(HeadError::Closed { got: len }),
                Ok(Some(n)) => len += n,
                Ok(None) => return Err(HeadError::Timeout { ms: self.timeout.as_millis() }),
                Err(e) => return Err(HeadError::Io(e)),
            }
        }
    }

    /// Answers `Expect: 100-continue`: the client may send its body.
    pub(crate) fn continue_(&mut self) -> io::Result<()> {
        write_before(&mut self.stream, self.deadline, b"HTTP/1.1 100 Continue\r\n\r\n")
    }

    /// Reads exactly `declared` bytes of body, before the deadline. Fewer — the client closed,
    /// or went quiet, or the connection broke — is an error: a short body is not an order.
    pub(crate) fn read_body(&mut self, declared: usize) -> Result<Vec<u8>, BodyError> {
        let mut body = std::mem::take(&mut self.extra);
        // With one request per connection, anything past the body is ignored.
        body.truncate(declared);
        let mut got = body.len();
        body.resize(declared, 0);
        while let Some(free) = body.get_mut(got..).filter(|free| !free.is_empty()) {
            match read_before(&mut self.stream, self.deadline, free) {
                Ok(Some(0)) => return Err(BodyError::Short { got, declared }),
                Ok(Some(n)) => got += n,
                Ok(None) => {
                    // A client that stopped sending is not drained either.
                    self.unread = false;
                    return Err(BodyError::Timeout { ms: self.timeout.as_millis(), got, declared });
                }
                Err(source) => return Err(BodyError::Io { got, declared, source }),
            }
        }
        self.unread = false;
        Ok(body)
    }

    /// Writes `reply` (within the timeout) and closes the connection, draining what is left
    /// of an unread body first (for at most [`LINGER`]).
    pub(crate) fn respond(mut self, reply: &Reply) {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
            reply.status,
            reason(reply.status),
            reply.body.len()
        );
        // The values are the warehouse's own (numbers); a line break would end the head.
        for (name, value) in reply.headers.iter().filter(|(_, v)| !v.contains(['\r', '\n'])) {
            let _ = write!(head, "{name}: {value}\r\n");
        }
        head.push_str("\r\n");
        let deadline = Instant::now() + self.timeout;
        // The client may have gone (it timed out): nothing to do about that here.
        let sent = write_before(&mut self.stream, deadline, head.as_bytes())
            .and_then(|()| write_before(&mut self.stream, deadline, reply.body.as_bytes()));
        if sent.is_ok() && self.unread {
            self.linger();
        }
    }

    fn linger(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
        let until = Instant::now() + LINGER;
        let mut sink = vec![0; 64 << 10];
        let mut drained = 0;
        while drained < LINGER_BYTES {
            match read_before(&mut self.stream, until, &mut sink) {
                Ok(Some(n)) if n > 0 => drained += n,
                _ => break,
            }
        }
    }
}

/// Parses a request head at the start of `buf`: its length and what it says, or `None` when
/// `buf` holds only the start of one.
fn parse(buf: &[u8]) -> Result<Option<(usize, Head)>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let end = match request.parse(buf) {
        Ok(httparse::Status::Complete(end)) => end,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooLarge),
        Err(e) => return Err(HeadError::Malformed(e)),
    };
    let (Some(method), Some(target)) = (request.method, request.path) else {
        return Err(HeadError::Malformed(httparse::Error::Token));
    };
    let mut head = Head {
        method: method.to_owned(),
        target: target.to_owned(),
        content_length: Length::Absent,
        transfer_encoding: false,
        key: None,
        expect: None,
    };
    let mut lengths = Vec::new();
    for header in request.headers.iter() {
        let name = header.name;
        if name.eq_ignore_ascii_case("Content-Length") {
            lengths.push(header.value);
        } else if name.eq_ignore_ascii_case("Transfer-Encoding") {
            head.transfer_encoding = true;
        } else if name.eq_ignore_ascii_case(IDEMPOTENCY_KEY) {
            head.key.get_or_insert_with(|| header.value.to_vec());
        } else if name.eq_ignore_ascii_case("Expect") {
            head.expect = Some(header.value.to_vec());
        }
    }
    head.content_length = content_length(&lengths);
    Ok(Some((end, head)))
}

/// The `Content-Length` of a head that sent these values: digits only, and the same number
/// if sent more than once (two different lengths are how requests get smuggled).
fn content_length(values: &[&[u8]]) -> Length {
    let mut found = None;
    for value in values {
        let value = value.trim_ascii();
        if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
            let shown = String::from_utf8_lossy(value);
            return Length::Invalid(format!("Content-Length {shown:?} is not a number of bytes"));
        }
        let n = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok()).unwrap_or(u64::MAX);
        match found {
            Some(m) if m != n => return Length::Invalid(format!("two Content-Length values: {m} and {n}")),
            _ => found = Some(n),
        }
    }
    found.map_or(Length::Absent, Length::Bytes)
}

/// Reads into `buf` before `deadline`: `Ok(None)` when it passed first, `Ok(Some(0))` at the
/// end of the stream. The socket's timeout is what is left, so a client sending a byte at a
/// time cannot stretch it.
fn read_before(stream: &mut TcpStream, deadline: Instant, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(buf) {
            Ok(n) => return Ok(Some(n)),
            // Timed out (the loop sees the deadline passed) or interrupted: again.
            Err(e) if again(&e) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Writes all of `bytes` before `deadline`, or fails.
fn write_before(stream: &mut TcpStream, deadline: Instant, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        stream.set_write_timeout(Some(left))?;
        match stream.write(bytes) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => bytes = bytes.get(n..).unwrap_or_default(),
            Err(e) if again(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A socket error that only means "not yet": a timeout the caller's deadline decides about,
/// or an interrupted call.
fn again(e: &io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted)
}

/// The reason phrase of a status the warehouse may answer with (any 4xx or 5xx can be
/// `--fail-status`); empty for an unregistered one, as HTTP allows.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        510 => "Not Extended",
        511 => "Network Authentication Required",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_length_is_digits_and_one_number() {
        assert_eq!(content_length(&[]), Length::Absent);
        assert_eq!(content_length(&[b" 12 "]), Length::Bytes(12));
        assert_eq!(content_length(&[b"12", b"12"]), Length::Bytes(12));
        assert_eq!(content_length(&[b"99999999999999999999999"]), Length::Bytes(u64::MAX));
        for bad in [&[&b"+1"[..]][..], &[b"-1"], &[b""], &[b"1 2"], &[b"0x10"], &[b"1", b"2"]] {
            assert!(matches!(content_length(bad), Length::Invalid(_)), "{bad:?}");
        }
    }

    #[test]
    fn a_head_is_parsed_once_whole() {
        assert!(parse(b"POST /orders HTTP/1.1\r\nContent-Le").expect("partial").is_none());
        let request =
            b"POST /o?x HTTP/1.1\r\nidempotency-key: a\r\nIdempotency-Key: b\r\ncontent-length: 2\r\n\r\nab";
        let (end, head) = parse(request).expect("head").expect("whole");
        assert_eq!(end, request.len() - 2, "the body is not the head's");
        assert_eq!((head.method.as_str(), head.target.as_str()), ("POST", "/o?x"));
        assert_eq!((head.key.as_deref(), head.content_length), (Some(&b"a"[..]), Length::Bytes(2)));
        assert!(matches!(parse(b"POST\x01 / HTTP/1.1\r\n\r\n"), Err(HeadError::Malformed(_))));
        let many = format!("GET / HTTP/1.1\r\n{}\r\n", "A: b\r\n".repeat(MAX_HEADERS + 1));
        assert!(matches!(parse(many.as_bytes()), Err(HeadError::TooLarge)));
    }
}
