//! A job as the store keeps it, and the words its columns hold.

use std::fmt;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

/// Where a job is in its life. `Done` and `Dead` are terminal; only a redrive leaves `Dead`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Waiting until `available_at`.
    Pending,
    /// Claimed by a worker until `available_at`, the lease expiry.
    Leased,
    /// Succeeded.
    Done,
    /// Quarantined, with a [`DeadReason`].
    Dead,
}

/// Why a job was quarantined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeadReason {
    /// Every attempt of the budget was spent.
    Exhausted,
    /// No time was left to start another attempt before the deadline.
    Deadline,
    /// The transport said a person has to change the content.
    Permanent,
}

/// What the transport made of an attempt. An error it could not classify is not an outcome:
/// it is returned to the caller, and the job waits for its lease to expire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The receiver accepted the job.
    Ok,
    /// Safe and useful to try again.
    Retryable,
    /// A person has to change the content.
    Permanent,
}

/// A job as `get` returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    pub id: String,
    pub payload: String,
    pub status: Status,
    /// Successful claims so far; never decreases.
    pub attempts: u64,
    pub max_attempts: u64,
    /// When a pending job may be claimed, or when a lease expires; `None` once done or dead.
    pub available_at: Option<u64>,
    pub deadline: u64,
    pub dead_reason: Option<DeadReason>,
    /// How many times an operator redrove the job.
    pub redrives: u64,
    /// When the job was first enqueued (a redrive keeps it).
    pub enqueued_at: u64,
    /// The worker holding (or last holding) the lease, while leased.
    pub owner: Option<String>,
    /// When the current lease was claimed, while leased.
    pub claimed_at: Option<u64>,
}

impl Status {
    /// The word stored in the `status` column and printed by SPEC section 5.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Leased => "leased",
            Status::Done => "done",
            Status::Dead => "dead",
        }
    }

    fn parse(word: &str) -> Option<Status> {
        Some(match word {
            "pending" => Status::Pending,
            "leased" => Status::Leased,
            "done" => Status::Done,
            "dead" => Status::Dead,
            _ => return None,
        })
    }
}

impl DeadReason {
    /// The word stored in the `dead_reason` column and printed by SPEC section 5.
    pub fn as_str(self) -> &'static str {
        match self {
            DeadReason::Exhausted => "exhausted",
            DeadReason::Deadline => "deadline",
            DeadReason::Permanent => "permanent",
        }
    }

    fn parse(word: &str) -> Option<DeadReason> {
        Some(match word {
            "exhausted" => DeadReason::Exhausted,
            "deadline" => DeadReason::Deadline,
            "permanent" => DeadReason::Permanent,
            _ => return None,
        })
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for DeadReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn word_from_sql<T>(value: ValueRef<'_>, parse: fn(&str) -> Option<T>) -> FromSqlResult<T> {
    let word = value.as_str()?;
    parse(word).ok_or_else(|| FromSqlError::Other(format!("unknown word {word:?}").into()))
}

impl FromSql for Status {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        word_from_sql(value, Status::parse)
    }
}

impl ToSql for Status {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for DeadReason {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        word_from_sql(value, DeadReason::parse)
    }
}

impl ToSql for DeadReason {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        for s in [Status::Pending, Status::Leased, Status::Done, Status::Dead] {
            assert_eq!(Status::parse(s.as_str()), Some(s));
        }
        for r in [DeadReason::Exhausted, DeadReason::Deadline, DeadReason::Permanent] {
            assert_eq!(DeadReason::parse(r.as_str()), Some(r));
        }
        assert_eq!(Status::parse("Pending"), None);
        assert_eq!(DeadReason::parse(""), None);
    }
}
