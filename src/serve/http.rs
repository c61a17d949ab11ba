//! The dashboard's requests and responses, apart from the server that carries them: the
//! routes are plain functions from a [`Request`] to a [`Response`], tested without a socket.

/// The most a form body may hold: the dashboard's forms carry a few short fields, but a bulk
/// action's carries up to [`MAX_IDS`](super::bulk::MAX_IDS) ids (500 ids of 100 bytes, say). A
/// longer `Content-Length` is answered 413 before anything of the body is read (`server.rs`).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The name of the cookie that carries a session (`sessions.rs`).
pub const SESSION_COOKIE: &str = "retryq_session";

/// What the routes need of a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, …, as sent.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string's fields, decoded, in order.
    pub query: Vec<(String, String)>,
    /// A form body's fields (`application/x-www-form-urlencoded`), decoded, in order.
    pub form: Vec<(String, String)>,
    /// The `Host` header.
    pub host: Option<String>,
    /// The `Origin` header, sent by browsers with every POST.
    pub origin: Option<String>,
    /// The token of an `Authorization: Bearer` header.
    pub bearer: Option<String>,
    /// The session cookie ([`SESSION_COOKIE`]).
    pub session: Option<String>,
    /// Whether a proxy in front says the browser reached it over TLS
    /// (`X-Forwarded-Proto: https`): the session cookie is then `Secure`.
    pub https: bool,
}

impl Request {
    /// The first value of a query field, if present and not empty.
    pub fn query(&self, name: &str) -> Option<&str> {
        field(&self.query, name)
    }

    /// The first value of a form field, if present and not empty.
    pub fn form(&self, name: &str) -> Option<&str> {
        field(&self.form, name)
    }

    /// A request from its method, its target (`/path?query`), its header fields (names in
    /// any case; the first of each counts) and its body, read as a form.
    pub fn new(method: &str, target: &str, headers: &[(&str, &[u8])], body: &[u8]) -> Request {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let header = |name: &str| {
            headers
                .iter()
                .find(|(field, _)| field.eq_ignore_ascii_case(name))
                .map(|(_, value)| String::from_utf8_lossy(value).trim().to_owned())
        };
        let bearer = header("authorization")
            .and_then(|value| value.strip_prefix("Bearer ").map(|token| token.trim().to_owned()));
        let prefix = format!("{SESSION_COOKIE}=");
        let session = header("cookie").and_then(|cookies| {
            cookies.split(';').find_map(|c| c.trim().strip_prefix(prefix.as_str()).map(str::to_owned))
        });
        let https = header("x-forwarded-proto").is_some_and(|proto| proto.eq_ignore_ascii_case("https"));
        Request {
            method: method.to_owned(),
            path: percent_decoded(path),
            query: pairs(query.as_bytes()),
            form: if method == "POST" { pairs(body) } else { Vec::new() },
            host: header("host"),
            origin: header("origin"),
            bearer,
            session,
            https,
        }
    }
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str()).filter(|v| !v.is_empty())
}

fn pairs(bytes: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(bytes).into_owned().collect()
}

fn percent_decoded(path: &str) -> String {
    form_urlencoded::parse(format!("p={}", path.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

/// A response: a status, a body and the few headers the routes set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status.
    pub status: u16,
    /// The body's media type.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
    /// Where a redirect (303) goes.
    pub location: Option<String>,
    /// A `Set-Cookie` header's value.
    pub cookie: Option<String>,
    /// A `Retry-After` header's value, in seconds: when a refused client may try again.
    pub retry_after: Option<String>,
}

/// HTML's media type.
pub const HTML: &str = "text/html; charset=utf-8";
/// Plain text's.
pub const TEXT: &str = "text/plain; charset=utf-8";

impl Response {
    /// A 200 with a body of this type.
    pub fn ok(content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status: 200,
            content_type,
            body: body.into(),
            location: None,
            cookie: None,
            retry_after: None,
        }
    }

    /// A plain-text answer with this status: an error, in words.
    pub fn text(status: u16, body: impl Into<String>) -> Response {
        Response {
            status,
            content_type: TEXT,
            body: body.into().into_bytes(),
            location: None,
            cookie: None,
            retry_after: None,
        }
    }

    /// A 303 to `location`: where a form's POST sends the browser next.
    pub fn see_other(location: impl Into<String>) -> Response {
        Response {
            status: 303,
            content_type: TEXT,
            body: Vec::new(),
            location: Some(location.into()),
            cookie: None,
            retry_after: None,
        }
    }

    /// The whole answer as sent, with the headers every answer carries: no caching, no
    /// sniffing, no framing, no referrer to other sites (a browser then sends an `Origin` of
    /// `null` with the dashboard's own forms under `no-referrer`), a content security policy
    /// that runs only the dashboard's own script and styles — a second wall behind the
    /// templates' escaping — and `Connection: close`: one request per connection, so that no
    /// idle connection is kept (`server.rs`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\
             Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: same-origin\r\n\
             X-Frame-Options: DENY\r\nContent-Security-Policy: default-src 'none'; script-src 'self'; \
             style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
             base-uri 'none'\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        // A value holding a line break would end the head early: such a header is left out
        // (a location is percent-encoded and a cookie is this process's own, so none does).
        let headers =
            [("Location", &self.location), ("Set-Cookie", &self.cookie), ("Retry-After", &self.retry_after)];
        for (name, value) in headers {
            if let Some(value) = value.as_deref().filter(|v| !v.contains(['\r', '\n'])) {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }
}

/// The reason phrase of a status the dashboard answers with; empty for another, as HTTP
/// allows.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_decoded_and_empty_ones_are_absent() {
        let request = Request { query: pairs(b"id=a%20b%3Cx%3E&status=&queue=q+1"), ..Request::default() };
        assert_eq!(request.query("id"), Some("a b<x>"));
        assert_eq!(request.query("status"), None);
        assert_eq!(request.query("queue"), Some("q 1"));
        assert_eq!(percent_decoded("/job%2Fx+y"), "/job/x+y");
    }

    #[test]
    fn a_request_reads_its_header_fields_and_a_posts_form() {
        let headers: [(&str, &[u8]); 5] = [
            ("HOST", b"db.example"),
            ("Authorization", b"Bearer  t0k "),
            ("Cookie", b"a=1; retryq_session=abc; retryq_token=t0k"),
            ("X-Forwarded-Proto", b"HTTPS"),
            ("Host", b"second.example"),
        ];
        let request = Request::new("POST", "/job?id=a%20b", &headers, b"csrf=x&id=y");
        assert_eq!((request.path.as_str(), request.query("id")), ("/job", Some("a b")));
        assert_eq!(request.host.as_deref(), Some("db.example"), "the first Host counts");
        assert_eq!((request.bearer.as_deref(), request.session.as_deref()), (Some("t0k"), Some("abc")));
        assert!(request.https);
        assert_eq!((request.form("csrf"), request.form("id")), (Some("x"), Some("y")));
        let get = Request::new("GET", "/", &[], b"csrf=x");
        assert!(get.form.is_empty() && !get.https && get.session.is_none());
    }

    #[test]
    fn an_answer_is_a_head_of_its_own_lines_and_its_body() {
        let response = Response {
            cookie: Some("retryq_session=v; HttpOnly".into()),
            location: Some("/x\r\nSet-Cookie: evil=1".into()),
            ..Response::see_other("/")
        };
        let text = String::from_utf8(response.to_bytes()).expect("text");
        let (head, body) = text.split_once("\r\n\r\n").expect("a head");
        assert!(head.starts_with("HTTP/1.1 303 See Other\r\n"), "{head}");
        assert!(head.contains("\r\nContent-Length: 0\r\n") && head.contains("\r\nConnection: close\r\n"));
        assert!(head.contains("\r\nSet-Cookie: retryq_session=v; HttpOnly"), "{head}");
        assert!(
            !head.contains("evil") && !head.contains("Location"),
            "a value with a line break is left out"
        );
        assert_eq!(body, "");
        let ok = String::from_utf8(Response::ok(TEXT, "hi").to_bytes()).expect("text");
        assert!(ok.contains("\r\nContent-Length: 2\r\n") && ok.ends_with("\r\n\r\nhi"), "{ok}");
    }
}
