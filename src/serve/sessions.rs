//! Who signed in: a session per sign-in, so that the browser's cookie is never the token.
//!
//! Signing in with the token makes a session: 32 random bytes, the cookie's value. The
//! token itself stays with the operator and the Prometheus scrape (`Authorization: Bearer`):
//! a cookie is sent by the browser to every port of its host name, so whatever server runs
//! on another port of the same host learns the cookie — with a session it learns something
//! that expires ([`LIFETIME`]), that sign-out ends, and that a restart of the dashboard
//! forgets, never the token that opens `/metrics` and every dashboard of the fleet.
//!
//! Sessions live in this process's memory only, at most [`MOST`] of them (the next sign-in
//! beyond ends the one closest to its end), and are kept by the SHA-256 digest of their value.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rand::RngExt;
use sha2::{Digest, Sha256};

/// How long a session lasts from its sign-in: a working day, then the sign-in page again.
pub const LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// The most sessions kept at once.
pub const MOST: usize = 1024;

/// The sessions of one dashboard process.
#[derive(Debug, Default)]
pub struct Sessions {
    /// Each session's digest and when it ends.
    live: Mutex<HashMap<[u8; 32], Instant>>,
}

impl Sessions {
    /// No session yet.
    pub fn new() -> Sessions {
        Sessions::default()
    }

    /// A new session, ending [`LIFETIME`] from now: its value, for the cookie.
    pub fn open(&self) -> String {
        let mut bytes = [0u8; 32];
        rand::rng().fill(&mut bytes);
        let value: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let now = Instant::now();
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.retain(|_, ends| *ends > now);
        if live.len() >= MOST
            && let Some(first) = live.iter().min_by_key(|(_, ends)| **ends).map(|(key, _)| *key)
        {
            live.remove(&first);
        }
        live.insert(digest(&value), now + LIFETIME);
        value
    }

    /// Whether `value` is a session that has not ended.
    pub fn valid(&self, value: &str) -> bool {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.get(&digest(value)).is_some_and(|ends| *ends > Instant::now())
    }

    /// Ends the session `value`, if it is one (sign-out).
    pub fn close(&self, value: &str) {
        self.live.lock().unwrap_or_else(PoisonError::into_inner).remove(&digest(value));
    }

    /// How many sessions are kept (ended ones included until the next sign-in sweeps them).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.live.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

fn digest(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_valid_until_it_is_closed_and_each_is_new() {
        let sessions = Sessions::new();
        let one = sessions.open();
        let two = sessions.open();
        assert_ne!(one, two);
        assert_eq!(one.len(), 64);
        assert!(sessions.valid(&one) && sessions.valid(&two));
        assert!(!sessions.valid("") && !sessions.valid(&one[1..]));
        sessions.close(&one);
        assert!(!sessions.valid(&one) && sessions.valid(&two));
    }

    #[test]
    fn an_ended_session_is_not_valid_and_the_count_is_bounded() {
        let sessions = Sessions::new();
        let old = sessions.open();
        // Its end, moved to the past.
        for ends in sessions.live.lock().expect("lock").values_mut() {
            *ends = Instant::now() - Duration::from_secs(1);
        }
        assert!(!sessions.valid(&old));
        let first = sessions.open();
        assert_eq!(sessions.len(), 1, "the ended one is swept at the next sign-in");
        for _ in 0..MOST + 10 {
            sessions.open();
        }
        assert_eq!(sessions.len(), MOST);
        assert!(!sessions.valid(&first), "the session closest to its end made room");
    }
}
