//! Who may use the dashboard, and which requests may change the store.
//!
//! - **The token.** On any address but loopback a token is required (the command refuses to
//!   start without one); given on loopback too, it is required there as well. A request
//!   carries it as `Authorization: Bearer TOKEN` (a Prometheus scrape, a script), or carries
//!   the session cookie that signing in with it sets (`sessions.rs`): the cookie is never the
//!   token. Tokens are compared by their SHA-256 digests, so the comparison's time tells
//!   nothing of the token.
//! - **The host.** Without a token, on loopback, a request must name a loopback host: a web
//!   page elsewhere that points a name of its own at 127.0.0.1 (DNS rebinding) is refused.
//! - **Changes.** Every change is a POST carrying this process's CSRF token, a random value
//!   only a page of the dashboard holds, and (when the browser sends one) an `Origin` of the
//!   dashboard's own host.

use rand::RngExt;
use sha2::{Digest, Sha256};

use super::http::{Request, SESSION_COOKIE};
use super::sessions::{LIFETIME, Sessions};

/// What a request is checked against.
pub struct Guard {
    token: Option<[u8; 32]>,
    csrf: String,
    sessions: Sessions,
}

/// Why a request was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No token, or a wrong one: 401, and the login form for a browser.
    Token,
    /// A host that is not loopback's, without a token: 403.
    Host,
    /// A change without this process's CSRF token, or from another origin: 403.
    Forgery,
}

impl Guard {
    /// A guard requiring `token`, if any, with a fresh CSRF token.
    pub fn new(token: Option<&str>) -> Guard {
        let mut bytes = [0u8; 32];
        rand::rng().fill(&mut bytes);
        let csrf = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Guard { token: token.map(digest), csrf, sessions: Sessions::new() }
    }

    /// The CSRF token the dashboard's forms carry.
    pub fn csrf(&self) -> &str {
        &self.csrf
    }

    /// Whether a token is required.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// Whether `token` is the one required.
    fn token_matches(&self, token: &str) -> bool {
        self.token.is_some_and(|expected| digest(token) == expected)
    }

    /// Signs in with `token`: the `Set-Cookie` value of a new session, or `None` for a token
    /// that is not this dashboard's. The cookie is `HttpOnly` (no script reads it),
    /// `SameSite=Strict` (no other site's page sends it), ends with the session, and is
    /// `Secure` when the request came through TLS (`https`).
    pub fn sign_in(&self, token: &str, https: bool) -> Option<String> {
        if !self.token_matches(token) {
            return None;
        }
        let session = self.sessions.open();
        Some(cookie(&session, LIFETIME.as_secs(), https))
    }

    /// Signs out: ends the request's session, if any; the `Set-Cookie` value that deletes the
    /// browser's cookie.
    pub fn sign_out(&self, request: &Request) -> String {
        if let Some(session) = &request.session {
            self.sessions.close(session);
        }
        cookie("", 0, request.https)
    }

    /// Whether the request may read: the token (as a bearer) or a live session where a token
    /// is required, else a loopback host.
    pub fn admit(&self, request: &Request) -> Result<(), Refusal> {
        match self.token {
            Some(_) => {
                let bearer = request.bearer.as_deref().is_some_and(|token| self.token_matches(token));
                let session = request.session.as_deref().is_some_and(|s| self.sessions.valid(s));
                if bearer || session { Ok(()) } else { Err(Refusal::Token) }
            }
            None if request.host.as_deref().is_some_and(loopback_host) => Ok(()),
            None => Err(Refusal::Host),
        }
    }

    /// Whether a POST may change the store: [`admit`](Guard::admit), this process's CSRF
    /// token in the form, and an `Origin`, when sent, naming the request's own host.
    pub fn admit_change(&self, request: &Request) -> Result<(), Refusal> {
        self.admit(request)?;
        if request.method != "POST"
            || request.form("csrf").is_none_or(|csrf| digest(csrf) != digest(&self.csrf))
        {
            return Err(Refusal::Forgery);
        }
        if let Some(origin) = &request.origin {
            let host = origin.split_once("://").map_or(origin.as_str(), |(_, host)| host);
            if request.host.as_deref() != Some(host) {
                return Err(Refusal::Forgery);
            }
        }
        Ok(())
    }
}

/// The session cookie with `value`, for `max_age` seconds (0: delete it).
fn cookie(value: &str, max_age: u64, https: bool) -> String {
    let secure = if https { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{secure}")
}

fn digest(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

/// `localhost`, `127.x.y.z` or `[::1]`, with or without a port.
pub fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or(rest, |(name, _)| name),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(host: &str) -> Request {
        Request { method: "GET".into(), host: Some(host.into()), ..Request::default() }
    }

    #[test]
    fn without_a_token_only_loopback_hosts_are_admitted() {
        let guard = Guard::new(None);
        for host in ["127.0.0.1:8080", "localhost:1", "[::1]:80", "127.0.0.2", "LOCALHOST"] {
            assert_eq!(guard.admit(&request(host)), Ok(()), "{host}");
        }
        for host in ["evil.example:8080", "10.0.0.1:8080", "localhost.evil.example", "[::2]:80"] {
            assert_eq!(guard.admit(&request(host)), Err(Refusal::Host), "{host}");
        }
        assert_eq!(guard.admit(&Request::default()), Err(Refusal::Host));
    }

    #[test]
    fn with_a_token_every_request_carries_it_or_a_session() {
        let guard = Guard::new(Some("s3cret"));
        assert_eq!(guard.admit(&request("127.0.0.1:1")), Err(Refusal::Token));
        let bearer = Request { bearer: Some("s3cret".into()), ..request("db.example") };
        assert_eq!(guard.admit(&bearer), Ok(()));
        let wrong = Request { bearer: Some("s3cre".into()), ..request("db.example") };
        assert_eq!(guard.admit(&wrong), Err(Refusal::Token));
        // The token is no session.
        let token_as_session = Request { session: Some("s3cret".into()), ..request("db.example") };
        assert_eq!(guard.admit(&token_as_session), Err(Refusal::Token));
        assert_eq!(guard.sign_in("s3cre", false), None);
        let set = guard.sign_in("s3cret", false).expect("signed in");
        let value =
            set.split(';').next().and_then(|pair| pair.strip_prefix("retryq_session=")).expect("value");
        assert!(!set.contains("s3cret"), "{set}");
        assert_eq!(
            set.strip_prefix("retryq_session=").map(|rest| &rest[value.len()..]),
            Some("; HttpOnly; SameSite=Strict; Path=/; Max-Age=43200")
        );
        let signed_in = Request { session: Some(value.into()), ..request("db.example") };
        assert_eq!(guard.admit(&signed_in), Ok(()));
        assert!(guard.sign_in("s3cret", true).expect("signed in").ends_with("; Max-Age=43200; Secure"));
        // Signed out, the session admits nothing, and the cookie is deleted.
        let deleted = guard.sign_out(&signed_in);
        assert_eq!(deleted, "retryq_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
        assert_eq!(guard.admit(&signed_in), Err(Refusal::Token));
    }

    #[test]
    fn a_change_needs_a_post_the_csrf_token_and_its_own_origin() {
        let guard = Guard::new(None);
        let csrf = guard.csrf().to_owned();
        let post = |form: Vec<(String, String)>, origin: Option<&str>| Request {
            method: "POST".into(),
            form,
            origin: origin.map(str::to_owned),
            ..request("127.0.0.1:8080")
        };
        let with = vec![("csrf".to_owned(), csrf.clone())];
        assert_eq!(guard.admit_change(&post(with.clone(), None)), Ok(()));
        assert_eq!(guard.admit_change(&post(with.clone(), Some("http://127.0.0.1:8080"))), Ok(()));
        assert_eq!(
            guard.admit_change(&post(with.clone(), Some("http://evil.example"))),
            Err(Refusal::Forgery)
        );
        assert_eq!(guard.admit_change(&post(vec![("csrf".into(), "0".into())], None)), Err(Refusal::Forgery));
        assert_eq!(guard.admit_change(&post(Vec::new(), None)), Err(Refusal::Forgery));
        let get = Request { form: with, ..request("127.0.0.1:8080") };
        assert_eq!(guard.admit_change(&get), Err(Refusal::Forgery));
        // Each process has its own.
        assert_ne!(Guard::new(None).csrf(), csrf);
    }
}
