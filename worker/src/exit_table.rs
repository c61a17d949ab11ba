//! The exit table: what an `--exec` command's exit status means for its job (SPEC 6.42).
//!
//! | exit status | outcome |
//! |---|---|
//! | 0 | `ok` (always) |
//! | 126, 127 | the shell could not run the command: `retryable`, and the worker stops (always) |
//! | listed as retryable (default 75, `EX_TEMPFAIL`) | `retryable` |
//! | listed as permanent (default 65, `EX_DATAERR`) | `permanent` |
//! | listed as unknown (default none) | unclassified: nothing recorded, the job waits for its lease |
//! | any other | `other`'s outcome (default `retryable`) |
//!
//! Most programs exit 1 on any error, so an unlisted failure is `retryable` by default: it is
//! recorded at once with its standard error, and the job is retried after its backoff rather
//! than after its whole lease. A command whose side effect may have happened when it fails
//! lists those statuses as unknown (or makes `other` unknown): the job then waits for its
//! lease, as after a crash, and its deadline and budget still bound it.

use std::collections::BTreeSet;
use std::fmt;

use crate::code_list;

/// The exit status that asks for a retry: `EX_TEMPFAIL` of sysexits.h.
pub const EXIT_RETRYABLE: i32 = 75;
/// The exit status that quarantines the job: `EX_DATAERR` of sysexits.h.
pub const EXIT_PERMANENT: i32 = 65;
/// The shell's exit status for a command it found but could not execute (POSIX).
pub const EXIT_NOT_EXECUTABLE: i32 = 126;
/// The shell's exit status for a command it could not find (POSIX).
pub const EXIT_NOT_FOUND: i32 = 127;

/// What an exit status means for the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitClass {
    /// Retried after the backoff, unless the budget or the deadline is spent.
    Retryable,
    /// Dead at once, for a person to look at.
    Permanent,
    /// Nothing is recorded: the job waits for its lease to expire.
    Unknown,
}

impl ExitClass {
    /// The word for it, as `--exit-other` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ExitClass::Retryable => "retryable",
            ExitClass::Permanent => "permanent",
            ExitClass::Unknown => "unknown",
        }
    }
}

/// Statuses listed as retryable, permanent and unknown, and the class of every other nonzero
/// status. 0, 126 and 127 are never listed: their meaning is fixed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitTable {
    retryable: BTreeSet<u8>,
    permanent: BTreeSet<u8>,
    unknown: BTreeSet<u8>,
    other: ExitClass,
}

/// A list or table that cannot be used; `list` names the list at fault (`"retry"`,
/// `"permanent"`, `"unknown"`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct ExitError {
    /// The list at fault.
    pub list: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

impl Default for ExitTable {
    fn default() -> Self {
        ExitTable {
            retryable: BTreeSet::from([EXIT_RETRYABLE as u8]),
            permanent: BTreeSet::from([EXIT_PERMANENT as u8]),
            unknown: BTreeSet::new(),
            other: ExitClass::Retryable,
        }
    }
}

impl ExitTable {
    /// A table from its three lists (`None`: the default list) and the class of the rest.
    /// No status is in two lists; 0, 126 and 127 are in none.
    pub fn new(
        retryable: Option<Vec<u8>>,
        permanent: Option<Vec<u8>>,
        unknown: Option<Vec<u8>>,
        other: ExitClass,
    ) -> Result<ExitTable, ExitError> {
        let default = ExitTable::default();
        let lists = [
            ("retry", retryable.map_or(default.retryable, |l| l.into_iter().collect())),
            ("permanent", permanent.map_or(default.permanent, |l| l.into_iter().collect())),
            ("unknown", unknown.map_or(default.unknown, |l| l.into_iter().collect())),
        ];
        for (i, (list, codes)) in lists.iter().enumerate() {
            if let Some((code, why)) = codes.iter().find_map(|&c| fixed(c).map(|why| (c, why))) {
                return Err(ExitError { list, reason: format!("{code} cannot be listed: {why}") });
            }
            for (other_list, other_codes) in &lists[..i] {
                if let Some(both) = codes.intersection(other_codes).next() {
                    return Err(ExitError {
                        list,
                        reason: format!("{both} is also listed in --exit-{other_list}"),
                    });
                }
            }
        }
        let [(_, retryable), (_, permanent), (_, unknown)] = lists;
        Ok(ExitTable { retryable, permanent, unknown, other })
    }

    /// What exit status `code` (1 to 255, neither 126 nor 127) means.
    pub fn classify(&self, code: u8) -> ExitClass {
        if self.retryable.contains(&code) {
            ExitClass::Retryable
        } else if self.permanent.contains(&code) {
            ExitClass::Permanent
        } else if self.unknown.contains(&code) {
            ExitClass::Unknown
        } else {
            self.other
        }
    }

    /// Parses a list such as `1,2,64-78` (statuses and inclusive ranges, commas between), or
    /// `none`.
    pub fn parse_list(text: &str) -> Result<Vec<u8>, String> {
        let codes = code_list::parse(text, "exit statuses", |t| status(t).map(u16::from))?;
        Ok(codes.into_iter().filter_map(|c| u8::try_from(c).ok()).collect())
    }
}

/// Why a status has a fixed meaning, if it has one.
fn fixed(code: u8) -> Option<&'static str> {
    match i32::from(code) {
        0 => Some("exit 0 is always ok"),
        EXIT_NOT_EXECUTABLE | EXIT_NOT_FOUND => {
            Some("126 and 127 are the shell's own (not executable, not found) and stop the worker")
        }
        _ => None,
    }
}

fn status(text: &str) -> Result<u8, String> {
    match text.parse::<u8>() {
        Ok(c) if c > 0 => Ok(c),
        _ => Err(format!("{text:?} is not a failing exit status (1 to 255)")),
    }
}

impl fmt::Display for ExitTable {
    /// `retryable 75; permanent 65; unknown none; other retryable`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "retryable {}; permanent {}; unknown {}; other {}",
            code_list::ranges(self.retryable.iter().copied().map(u16::from)),
            code_list::ranges(self.permanent.iter().copied().map(u16::from)),
            code_list::ranges(self.unknown.iter().copied().map(u16::from)),
            self.other.as_str()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_retries_an_ordinary_failure_and_keeps_75_and_65() {
        let t = ExitTable::default();
        assert_eq!(t.classify(1), ExitClass::Retryable);
        assert_eq!(t.classify(2), ExitClass::Retryable);
        assert_eq!(t.classify(75), ExitClass::Retryable);
        assert_eq!(t.classify(65), ExitClass::Permanent);
        assert_eq!(t.to_string(), "retryable 75; permanent 65; unknown none; other retryable");
    }

    #[test]
    fn lists_and_other_decide_and_refuse_overlaps_and_fixed_statuses() {
        let list = |t: &str| ExitTable::parse_list(t).expect(t);
        let t = ExitTable::new(None, Some(list("64-78")), Some(list("3")), ExitClass::Unknown)
            .expect_err("75 is retryable by default and listed as permanent");
        assert_eq!((t.list, t.reason.as_str()), ("permanent", "75 is also listed in --exit-retry"));
        let t = ExitTable::new(Some(list("1,2")), Some(list("64-78")), Some(list("3")), ExitClass::Unknown)
            .expect("table");
        assert_eq!(t.classify(1), ExitClass::Retryable);
        assert_eq!(t.classify(75), ExitClass::Permanent);
        assert_eq!(t.classify(3), ExitClass::Unknown);
        assert_eq!(t.classify(9), ExitClass::Unknown, "other");
        assert_eq!(t.to_string(), "retryable 1-2; permanent 64-78; unknown 3; other unknown");
        for bad in ["120-130", "127"] {
            let e = ExitTable::new(None, None, Some(list(bad)), ExitClass::Retryable).expect_err(bad);
            assert!(e.reason.starts_with("126") || e.reason.starts_with("127"), "{bad}: {}", e.reason);
        }
        assert!(ExitTable::parse_list("0").is_err());
        assert!(ExitTable::parse_list("256").is_err());
        assert!(ExitTable::parse_list("").is_err());
        assert!(ExitTable::parse_list("5-3").is_err());
        assert_eq!(ExitTable::parse_list("none"), Ok(vec![]));
    }
}
