//! The status table: which HTTP statuses are `ok`, `retryable`, `permanent`, or none of them.
//!
//! The table is the HTTP transport's whitelist of retryable errors (the control crate's
//! [`retryq_control::Policy`] idea, for status codes): a status is retried only when it is
//! listed. The defaults follow the issue and common practice (gRFC A6's
//! `retryableStatusCodes`, the AWS and Google client libraries):
//!
//! | status | outcome |
//! |---|---|
//! | 2xx | `ok` (always; a 2xx cannot be listed) |
//! | 408, 429, 500, 502, 503, 504 | `retryable` |
//! | every other 4xx | `permanent` |
//! | anything else: 1xx, 3xx, 501, 505–599 | unclassified |
//!
//! Unclassified is the SPEC's `unknown`: the job is neither retried nor quarantined; it
//! waits for its lease to expire, as if the worker had died, and the status is noted for the
//! operator. A 3xx means the URL is wrong (redirects are not followed: a POST must not be
//! replayed at an address nobody configured), and a 501 or 505 means the receiver does not
//! speak this protocol; neither is the content's fault nor cured by an immediate retry.

use std::collections::BTreeSet;
use std::fmt;

use crate::code_list;

/// What a status means for the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Class {
    /// The job is done (every 2xx).
    Ok,
    /// Worth another attempt: the receiver may recover (408, 429, 5xx by default).
    Retryable,
    /// No attempt can succeed: the job ends `dead(permanent)`.
    Permanent,
    /// Neither listed nor 2xx: the attempt's result is left unrecorded, so an unexpected answer
    /// is neither retried early nor taken for failure.
    Unclassified,
}

/// Statuses listed as retryable and as permanent; 2xx is always `ok`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusTable {
    retryable: BTreeSet<u16>,
    permanent: BTreeSet<u16>,
}

/// The default retryable statuses.
pub const DEFAULT_RETRYABLE: [u16; 6] = [408, 429, 500, 502, 503, 504];

/// A status list or table that cannot be used. `list` names the list at fault:
/// `"retryable"` or `"permanent"`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct StatusError {
    /// `"retryable"` or `"permanent"`.
    pub list: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

impl Default for StatusTable {
    fn default() -> Self {
        let retryable: BTreeSet<u16> = DEFAULT_RETRYABLE.into_iter().collect();
        let permanent = (400..=499).filter(|s| !retryable.contains(s)).collect();
        StatusTable { retryable, permanent }
    }
}

impl StatusTable {
    /// A table retrying `retryable` and quarantining `permanent` — by default (`None`) every
    /// 4xx not listed as retryable. Statuses are 100 to 599, never 2xx, and no status is in
    /// both lists.
    pub fn new(
        retryable: impl IntoIterator<Item = u16>,
        permanent: Option<Vec<u16>>,
    ) -> Result<StatusTable, StatusError> {
        let retryable: BTreeSet<u16> = retryable.into_iter().collect();
        check("retryable", &retryable)?;
        let permanent: BTreeSet<u16> = match permanent {
            Some(list) => {
                let permanent: BTreeSet<u16> = list.into_iter().collect();
                check("permanent", &permanent)?;
                if let Some(both) = permanent.intersection(&retryable).next() {
                    return Err(StatusError {
                        list: "permanent",
                        reason: format!("{both} is also listed as retryable"),
                    });
                }
                permanent
            }
            None => (400..=499).filter(|s| !retryable.contains(s)).collect(),
        };
        Ok(StatusTable { retryable, permanent })
    }

    /// What `status` means.
    pub fn classify(&self, status: u16) -> Class {
        if (200..=299).contains(&status) {
            Class::Ok
        } else if self.retryable.contains(&status) {
            Class::Retryable
        } else if self.permanent.contains(&status) {
            Class::Permanent
        } else {
            Class::Unclassified
        }
    }

    /// Parses a list such as `408,429,500-504` (codes and inclusive ranges, commas between,
    /// white space allowed), or `none` for no status at all — the word the table's display
    /// uses. An empty text is refused like an empty item: a flag given as `""` is more
    /// likely an unset variable than a wish to list nothing.
    pub fn parse_list(text: &str) -> Result<Vec<u16>, String> {
        code_list::parse(text, "statuses", code)
    }
}

fn code(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(c) if (100..=599).contains(&c) => Ok(c),
        _ => Err(format!("{text:?} is not an HTTP status (100 to 599)")),
    }
}

fn check(list: &'static str, codes: &BTreeSet<u16>) -> Result<(), StatusError> {
    if let Some(bad) = codes.iter().find(|c| !(100..=599).contains(*c)) {
        return Err(StatusError { list, reason: format!("{bad} is not an HTTP status (100 to 599)") });
    }
    if let Some(ok) = codes.iter().find(|c| (200..=299).contains(*c)) {
        return Err(StatusError { list, reason: format!("{ok} is a success: every 2xx is ok") });
    }
    Ok(())
}

impl fmt::Display for StatusTable {
    /// `retryable 408,429,500,502-504; permanent 400-407,409-428,430-499`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "retryable {}; permanent {}",
            code_list::ranges(self.retryable.iter().copied()),
            code_list::ranges(self.permanent.iter().copied())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_table() {
        let t = StatusTable::default();
        for s in [200, 201, 204, 299] {
            assert_eq!(t.classify(s), Class::Ok, "{s}");
        }
        for s in DEFAULT_RETRYABLE {
            assert_eq!(t.classify(s), Class::Retryable, "{s}");
        }
        for s in [400, 401, 403, 404, 409, 422, 499] {
            assert_eq!(t.classify(s), Class::Permanent, "{s}");
        }
        for s in [100, 101, 301, 302, 304, 307, 501, 505, 599] {
            assert_eq!(t.classify(s), Class::Unclassified, "{s}");
        }
        assert_eq!(t.to_string(), "retryable 408,429,500,502-504; permanent 400-407,409-428,430-499");
    }

    #[test]
    fn lists_parse_codes_and_ranges() {
        assert_eq!(StatusTable::parse_list("408, 429,500-502"), Ok(vec![408, 429, 500, 501, 502]));
        assert_eq!(StatusTable::parse_list(" none "), Ok(vec![]));
        for bad in ["99", "600", "5xx", "504-500", "500,,502", "-", "500-", "", " ", ",", "none,500"] {
            assert!(StatusTable::parse_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_retry_list_alone_makes_the_rest_of_4xx_permanent() {
        let t = StatusTable::new([503], None).expect("table");
        assert_eq!(
            (t.classify(503), t.classify(429), t.classify(500)),
            (Class::Retryable, Class::Permanent, Class::Unclassified)
        );
    }

    #[test]
    fn explicit_lists_replace_the_defaults() {
        let t = StatusTable::new([503, 409], Some(vec![400, 501])).expect("table");
        assert_eq!(
            [409, 503, 400, 501, 404].map(|s| t.classify(s)),
            [Class::Retryable, Class::Retryable, Class::Permanent, Class::Permanent, Class::Unclassified]
        );
    }

    #[test]
    fn overlaps_and_successes_are_refused_naming_the_list() {
        let err = StatusTable::new([503], Some(vec![503])).unwrap_err();
        assert_eq!((err.list, err.reason.as_str()), ("permanent", "503 is also listed as retryable"));
        let err = StatusTable::new([200], None).unwrap_err();
        assert_eq!(err.list, "retryable");
        assert!(err.reason.contains("every 2xx is ok"), "{err}");
        let err = StatusTable::new([], Some(vec![204])).unwrap_err();
        assert_eq!(err.list, "permanent");
        let err = StatusTable::new([700], None).unwrap_err();
        assert_eq!(err.list, "retryable");
    }
}
