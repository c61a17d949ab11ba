//! One `--url`: parsed with the HTTP client's own parser (`http::Uri`, so that what is
//! checked is what is connected to), refused unless it says exactly where to go, and
//! stripped of its credentials before anything is stored or printed.
//!
//! - The scheme is `http` or `https`; there is a host; a port, if written, is 1 to 65535 in
//!   digits. (`http::Uri` reads `:99999` as "no port", which the client then takes for 80:
//!   a POST to a port nobody named.)
//! - Credentials (`http://user:password@host/…`) are sent as `Authorization: Basic`, as
//!   curl and browsers send them; everything stored (`last_node`, `last_error`) and printed
//!   (logs, errors) shows the URL as `http://***@host/…`. The URL posted to has no userinfo,
//!   so no error of the client can repeat it either.

use std::borrow::Cow;

use base64::Engine as _;
use percent_encoding::percent_decode_str;
use ureq::http::HeaderValue;
use ureq::http::Uri;

use super::error::HttpError;

/// One URL and the target its budget is kept under.
#[derive(Clone, Debug)]
pub(super) struct Target {
    /// What is posted to: the URL without its userinfo.
    pub url: String,
    /// What is stored and printed: the URL with its userinfo, if any, as `***`.
    pub shown: String,
    /// `host:port`, the port written out.
    pub host: String,
    /// `Basic …` from the URL's userinfo; marked sensitive, so that no debug output shows it.
    pub authorization: Option<HeaderValue>,
}

/// Parses and checks `url`; errors show it redacted.
pub(super) fn target(url: &str) -> Result<Target, HttpError> {
    let bad = |reason: &str| HttpError::Url { url: redact(url).into_owned(), reason: reason.to_owned() };
    let uri: Uri = url
        .parse()
        .map_err(|e: ureq::http::uri::InvalidUri| bad(&format!("not an http:// or https:// URL ({e})")))?;
    let default_port = match uri.scheme_str() {
        Some("http") => 80,
        Some("https") => 443,
        Some(_) => return Err(bad("the scheme must be http or https")),
        None => return Err(bad("needs a scheme: http:// or https://")),
    };
    let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((userinfo, host_port)) => (Some(userinfo), host_port),
        None => (None, authority),
    };
    let host = uri.host().filter(|h| !h.is_empty()).ok_or_else(|| bad("needs a host"))?;
    let port = match written_port(host_port) {
        None => default_port,
        Some(text) => port(text).map_err(|why| bad(&why))?,
    };
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let scheme = uri.scheme_str().unwrap_or_default();
    let plain = format!("{scheme}://{host_port}{path}");
    let (shown, authorization) = match userinfo {
        Some(userinfo) => {
            (format!("{scheme}://***@{host_port}{path}"), Some(basic(userinfo).map_err(|why| bad(&why))?))
        }
        None => (url.to_owned(), None),
    };
    let url = if userinfo.is_some() { plain } else { url.to_owned() };
    Ok(Target { url, shown, host: format!("{}:{port}", host.to_ascii_lowercase()), authorization })
}

/// The port as written after the host (`host:PORT`, `[v6]:PORT`), if any.
fn written_port(host_port: &str) -> Option<&str> {
    let after_host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or("", |(_, rest)| rest),
        None => host_port.find(':').map_or("", |i| &host_port[i..]),
    };
    after_host.strip_prefix(':')
}

fn port(text: &str) -> Result<u16, String> {
    if text.is_empty() {
        return Err("the port after ':' is empty".into());
    }
    match text.parse::<u16>() {
        Ok(0) => Err("port 0 is not a port to connect to".into()),
        Ok(port) if text.bytes().all(|b| b.is_ascii_digit()) => Ok(port),
        _ => Err(format!("the port {text:?} is not a number from 1 to 65535")),
    }
}

/// `Authorization: Basic` for `user:password` as written in a URL (percent-encoded).
fn basic(userinfo: &str) -> Result<HeaderValue, String> {
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let mut credentials: Vec<u8> = percent_decode_str(user).collect();
    credentials.push(b':');
    credentials.extend(percent_decode_str(password));
    let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
    let mut value = HeaderValue::from_str(&format!("Basic {encoded}"))
        .map_err(|_| "the credentials cannot be sent as a header".to_owned())?;
    value.set_sensitive(true);
    Ok(value)
}

/// `text` with the userinfo of a URL in it, if any, replaced by `***`: for showing a URL
/// that may not even parse. The authority runs from after `scheme://` (or the start) to the
/// first `/`, `?` or `#`; its userinfo ends at its last `@`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let start = text.find("://").map_or(0, |i| i + 3);
    let rest = &text[start..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    match authority.rfind('@') {
        Some(at) => Cow::Owned(format!("{}***{}", &text[..start], &rest[at..])),
        None => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_host_and_port() {
        let t = |url: &str| target(url).expect("url").host;
        assert_eq!(t("http://Example.com/a"), "example.com:80");
        assert_eq!(t("https://example.com/a"), "example.com:443");
        assert_eq!(t("http://127.0.0.1:8080/a"), "127.0.0.1:8080");
        assert_eq!(t("http://[::1]:8080/a"), "[::1]:8080");
        assert_eq!(t("http://[::1]/a"), "[::1]:80");
        assert_eq!(t("http://h:65535/"), "h:65535");
        assert_eq!(t("http://u:p@h:0081/"), "h:81");
    }

    #[test]
    fn a_port_must_be_1_to_65535_in_digits() {
        for (url, why) in [
            ("http://127.0.0.1:99999/orders", "\"99999\" is not a number from 1 to 65535"),
            ("http://127.0.0.1:65536/", "65536"),
            ("http://h:0/", "port 0"),
            ("http://h:/", "empty"),
            ("http://h:+80/", "+80"),
            ("http://[::1]:70000/", "70000"),
            ("http://alice:s3cr3t@h:99999/", "99999"),
        ] {
            let err = target(url).expect_err("refused");
            assert!(err.to_string().contains(why), "{url}: {err}");
            assert!(!err.to_string().contains("s3cr3t"), "{err}");
        }
    }

    #[test]
    fn credentials_become_basic_auth_and_never_show() {
        let t = target("http://alice:s3%3Acr3t@Host:8080/orders?x=1").expect("url");
        assert_eq!(t.url, "http://Host:8080/orders?x=1");
        assert_eq!(t.shown, "http://***@Host:8080/orders?x=1");
        assert_eq!(t.host, "host:8080");
        let auth = t.authorization.expect("auth");
        assert!(auth.is_sensitive());
        // alice:s3:cr3t
        assert_eq!(auth.to_str().expect("ascii"), "Basic YWxpY2U6czM6Y3IzdA==");
        assert!(!format!("{:?}", t.url).contains("s3"));
        let plain = target("http://host/x").expect("url");
        assert_eq!((plain.url.as_str(), plain.shown.as_str()), ("http://host/x", "http://host/x"));
        assert!(plain.authorization.is_none());
        assert_eq!(target("http://bob@host").expect("url").shown, "http://***@host/");
    }

    #[test]
    fn redact_takes_userinfo_out_of_any_text() {
        assert_eq!(redact("http://a:b@h/p@q"), "http://***@h/p@q");
        assert_eq!(redact("http://a:b@c@h:1?x@y"), "http://***@h:1?x@y");
        assert_eq!(redact("a:b@h/x"), "***@h/x");
        assert_eq!(redact("http://h/a@b"), "http://h/a@b");
        assert_eq!(redact("http://h"), "http://h");
    }
}
