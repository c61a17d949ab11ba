//! The dashboard's requests and responses, apart from the server that carries them: the
//! routes are plain functions from a [`Request`] to a [`Response`], tested without a socket.

use std::io::Read;

/// The most a form body may hold: the dashboard's forms carry a few short fields.
pub const MAX_BODY_BYTES: u64 = 16 * 1024;

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
    /// The `retryq_token` cookie.
    pub cookie_token: Option<String>,
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

    /// The request tiny_http received, read into a [`Request`]. A form body over
    /// [`MAX_BODY_BYTES`] is cut there (and will fail its checks).
    pub fn read(request: &mut tiny_http::Request) -> Request {
        let url = request.url().to_owned();
        let (path, query) = url.split_once('?').unwrap_or((url.as_str(), ""));
        let header = |name: &str| {
            request
                .headers()
                .iter()
                .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))
                .map(|h| h.value.as_str().to_owned())
        };
        let host = header("host");
        let origin = header("origin");
        let bearer = header("authorization")
            .and_then(|value| value.strip_prefix("Bearer ").map(|token| token.trim().to_owned()));
        let cookie_token = header("cookie").and_then(|cookies| {
            cookies.split(';').find_map(|c| c.trim().strip_prefix("retryq_token=").map(str::to_owned))
        });
        let method = request.method().as_str().to_owned();
        let mut body = Vec::new();
        if method == "POST" {
            // A body that cannot be read is an empty form, which every POST route refuses.
            let _ = request.as_reader().take(MAX_BODY_BYTES).read_to_end(&mut body);
        }
        Request {
            method,
            path: percent_decoded(path),
            query: pairs(query.as_bytes()),
            form: pairs(&body),
            host,
            origin,
            bearer,
            cookie_token,
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
}

/// HTML's media type.
pub const HTML: &str = "text/html; charset=utf-8";
/// Plain text's.
pub const TEXT: &str = "text/plain; charset=utf-8";

impl Response {
    /// A 200 with a body of this type.
    pub fn ok(content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response { status: 200, content_type, body: body.into(), location: None, cookie: None }
    }

    /// A plain-text answer with this status: an error, in words.
    pub fn text(status: u16, body: impl Into<String>) -> Response {
        Response { status, content_type: TEXT, body: body.into().into_bytes(), location: None, cookie: None }
    }

    /// A 303 to `location`: where a form's POST sends the browser next.
    pub fn see_other(location: impl Into<String>) -> Response {
        Response {
            status: 303,
            content_type: TEXT,
            body: Vec::new(),
            location: Some(location.into()),
            cookie: None,
        }
    }

    /// The tiny_http response, with the headers every answer carries: no caching, no
    /// sniffing, no framing, no referrer to other sites (a browser then sends an `Origin` of
    /// `null` with the dashboard's own forms under `no-referrer`), and a content security policy that runs only the
    /// dashboard's own script and styles — a second wall behind the templates' escaping.
    pub fn into_tiny(self) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
        let mut response = tiny_http::Response::from_data(self.body).with_status_code(self.status);
        let mut add = |name: &str, value: &str| {
            if let Ok(header) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
                response.add_header(header);
            }
        };
        add("Content-Type", self.content_type);
        add("Cache-Control", "no-store");
        add("X-Content-Type-Options", "nosniff");
        add("Referrer-Policy", "same-origin");
        add("X-Frame-Options", "DENY");
        add(
            "Content-Security-Policy",
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        );
        if let Some(location) = &self.location {
            add("Location", location);
        }
        if let Some(cookie) = &self.cookie {
            add("Set-Cookie", cookie);
        }
        response
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
}
