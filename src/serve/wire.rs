//! A request head as it arrives: where it ends, and what it says, parsed by `httparse`
//! (hyper's parser). What the dashboard takes of HTTP/1.x is small: a method, a target, a
//! few header fields, and a form body of at most [`MAX_BODY_BYTES`] bytes announced by its
//! `Content-Length` (no chunked body: no browser sends its forms so).

use super::http::MAX_BODY_BYTES;

/// The longest request head taken, request line included: a browser's is under 2 KiB with
/// its cookies; a longer one is answered 431.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most header fields taken (431 beyond).
pub const MAX_HEADERS: usize = 64;

/// A request head, parsed.
#[derive(Debug, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    /// The request target: a path, maybe followed by `?query`.
    pub target: String,
    /// Each header field, its name and its value's bytes.
    pub headers: Vec<(String, Vec<u8>)>,
    /// How many bytes of body follow.
    pub body: usize,
    /// The client waits for `100 Continue` before it sends the body.
    pub expects_continue: bool,
}

impl Head {
    /// The header fields as [`Request::new`](super::http::Request::new) takes them.
    pub fn fields(&self) -> Vec<(&str, &[u8])> {
        self.headers.iter().map(|(name, value)| (name.as_str(), value.as_slice())).collect()
    }
}

/// Why a request is refused before any route sees it: each is answered with its status
/// ([`Refused::status`]) and the connection closed.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("a malformed request head: {0}")]
    Malformed(String),
    #[error("the request head is over {MAX_HEAD_BYTES} bytes or {MAX_HEADERS} header fields")]
    HeadTooLarge,
    #[error("a body of {0} bytes: a form here is at most {MAX_BODY_BYTES} bytes")]
    BodyTooLarge(u64),
    #[error("a body needs a Content-Length (no chunked body is taken)")]
    LengthRequired,
    #[error("the request did not arrive whole within {0} ms")]
    Timeout(u128),
    #[error("the connection closed before the whole request arrived")]
    Closed,
}

impl Refused {
    /// The status it is answered with.
    pub fn status(&self) -> u16 {
        match self {
            Refused::Malformed(_) | Refused::Closed => 400,
            Refused::HeadTooLarge => 431,
            Refused::BodyTooLarge(_) => 413,
            Refused::LengthRequired => 411,
            Refused::Timeout(_) => 408,
        }
    }
}

/// Whether `buf` holds the end of a head (an empty line) starting no earlier than `from`
/// bytes in: a search of what arrived since the last one, so that a head sent a byte at a
/// time costs its length once, not its length squared.
pub fn ends_head(buf: &[u8], from: usize) -> bool {
    let start = from.saturating_sub(3);
    let tail = buf.get(start..).unwrap_or_default();
    tail.windows(4).any(|w| w == b"\r\n\r\n") || tail.windows(2).any(|w| w == b"\n\n")
}

/// The head at the start of `buf`: its length and what it says, or `None` when `buf` holds
/// only the start of one.
pub fn parse(buf: &[u8]) -> Result<Option<(usize, Head)>, Refused> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let end = match request.parse(buf) {
        Ok(httparse::Status::Complete(end)) => end,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(Refused::HeadTooLarge),
        Err(e) => return Err(Refused::Malformed(e.to_string())),
    };
    let (Some(method), Some(target)) = (request.method, request.path) else {
        return Err(Refused::Malformed("no method or target".into()));
    };
    let mut lengths = Vec::new();
    let mut expects_continue = false;
    for header in request.headers.iter() {
        if header.name.eq_ignore_ascii_case("Transfer-Encoding") {
            return Err(Refused::LengthRequired);
        } else if header.name.eq_ignore_ascii_case("Content-Length") {
            lengths.push(header.value);
        } else if header.name.eq_ignore_ascii_case("Expect") {
            expects_continue = header.value.eq_ignore_ascii_case(b"100-continue");
        }
    }
    let body = content_length(&lengths)?;
    let body =
        usize::try_from(body).ok().filter(|&n| n <= MAX_BODY_BYTES).ok_or(Refused::BodyTooLarge(body))?;
    let head = Head {
        method: method.to_owned(),
        target: target.to_owned(),
        headers: request.headers.iter().map(|h| (h.name.to_owned(), h.value.to_vec())).collect(),
        body,
        expects_continue,
    };
    Ok(Some((end, head)))
}

/// The body's length by the `Content-Length` values sent (none: no body): digits only, and
/// the same number if sent more than once (two different lengths are how requests get
/// smuggled). A number too large for a `u64` is `u64::MAX`, past any limit.
fn content_length(values: &[&[u8]]) -> Result<u64, Refused> {
    let mut found = None;
    for value in values {
        let value = value.trim_ascii();
        if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
            let shown = String::from_utf8_lossy(value);
            return Err(Refused::Malformed(format!("Content-Length {shown:?} is not a number of bytes")));
        }
        let n = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok()).unwrap_or(u64::MAX);
        match found {
            Some(m) if m != n => {
                return Err(Refused::Malformed(format!("two Content-Length values: {m} and {n}")));
            }
            _ => found = Some(n),
        }
    }
    Ok(found.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_is_parsed_once_whole_with_its_body_length() {
        assert_eq!(parse(b"POST /login HTTP/1.1\r\nContent-Le"), Ok(None));
        let request = b"POST /l?x HTTP/1.1\r\nHost: a\r\ncontent-length: 2\r\nExpect: 100-continue\r\n\r\nab";
        let (end, head) = parse(request).expect("head").expect("whole");
        assert_eq!(end, request.len() - 2, "the body is not the head's");
        assert_eq!((head.method.as_str(), head.target.as_str(), head.body), ("POST", "/l?x", 2));
        assert!(head.expects_continue);
        assert_eq!(head.fields()[0], ("Host", &b"a"[..]));
        let (_, get) = parse(b"GET / HTTP/1.0\r\n\r\n").expect("head").expect("whole");
        assert_eq!((get.body, get.expects_continue), (0, false));
    }

    #[test]
    fn what_is_not_taken_is_refused_with_its_status() {
        let refused = |head: &[u8]| parse(head).expect_err("refused").status();
        assert_eq!(refused(b"POST\x01 / HTTP/1.1\r\n\r\n"), 400);
        let many = format!("GET / HTTP/1.1\r\n{}\r\n", "A: b\r\n".repeat(MAX_HEADERS + 1));
        assert_eq!(refused(many.as_bytes()), 431);
        let large = format!("POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n", MAX_BODY_BYTES + 1);
        assert_eq!(refused(large.as_bytes()), 413);
        assert_eq!(refused(b"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n"), 413);
        assert_eq!(refused(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), 411);
        assert_eq!(refused(b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), 400);
        assert_eq!(refused(b"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n"), 400);
        let (_, same) = parse(b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n")
            .expect("one length, twice")
            .expect("whole");
        assert_eq!(same.body, 3);
    }

    #[test]
    fn the_end_of_a_head_is_found_across_reads() {
        let head = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        assert!(ends_head(head, 0));
        // Found by a search from the last read on, however the blank line was split.
        for from in 0..head.len() {
            assert!(ends_head(head, from), "from {from}");
        }
        assert!(!ends_head(b"GET / HTTP/1.1\r\nHost: a\r\n", 0));
        assert!(ends_head(b"GET / HTTP/1.0\n\n", 15));
    }
}
