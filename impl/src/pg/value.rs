//! Between the queue's values and PostgreSQL's columns.
//!
//! Times and counts are `u64` in the queue and `bigint` in the schema: every value the queue
//! writes is below 2^54 (a lease's expiry may pass 2^53 − 1, SPEC 6.10), so it fits, and a
//! negative one read back is a row no retryq wrote ([`Error::Corrupt`]). Payloads and notes
//! are `bytea` holding UTF-8: PostgreSQL's `text` cannot hold U+0000, which a payload may
//! contain (only ids and worker names refuse it, SPEC 6.21), and bytes compare byte for
//! byte, as SPEC 3.2 compares payloads. Words (statuses, reasons) are parsed, never assumed.
//!
//! Every read goes through `try_get`: a column of another type is an error, not a panic.

use std::str::FromStr;

use postgres::Row;

use crate::error::{Error, Result};

/// `value` as the `bigint` it is stored as. Checked arguments are below 2^53 and a lease's
/// expiry below 2^54, so this refuses nothing a checked call passes.
pub(super) fn big(field: &'static str, value: u64) -> Result<i64> {
    i64::try_from(value).map_err(|_| Error::invalid(field, format!("{value} does not fit a bigint")))
}

/// An optional `big`.
pub(super) fn opt_big(field: &'static str, value: Option<u64>) -> Result<Option<i64>> {
    value.map(|v| big(field, v)).transpose()
}

/// The name of column `i`, for a finding.
fn name(row: &Row, i: usize) -> &str {
    row.columns().get(i).map_or("?", |c| c.name())
}

fn corrupt(row: &Row, i: usize, what: impl std::fmt::Display) -> Error {
    Error::Corrupt(format!("column {}: {what}", name(row, i)))
}

/// A `bigint` column that holds a time or a count.
pub(super) fn uint(row: &Row, i: usize) -> Result<u64> {
    let value: i64 = row.try_get(i)?;
    u64::try_from(value).map_err(|_| corrupt(row, i, format!("{value} is negative")))
}

/// A nullable `bigint` column that holds a time or a count.
pub(super) fn opt_uint(row: &Row, i: usize) -> Result<Option<u64>> {
    let value: Option<i64> = row.try_get(i)?;
    value.map(|v| u64::try_from(v).map_err(|_| corrupt(row, i, format!("{v} is negative")))).transpose()
}

/// A `bytea` column that holds UTF-8 text (a payload, a note).
pub(super) fn utf8(row: &Row, i: usize) -> Result<String> {
    let bytes: Vec<u8> = row.try_get(i)?;
    String::from_utf8(bytes).map_err(|e| corrupt(row, i, e))
}

/// A nullable `bytea` column that holds UTF-8 text.
pub(super) fn opt_utf8(row: &Row, i: usize) -> Result<Option<String>> {
    let bytes: Option<Vec<u8>> = row.try_get(i)?;
    bytes.map(|b| String::from_utf8(b).map_err(|e| corrupt(row, i, e))).transpose()
}

/// A `text` column that holds one of a vocabulary's words (a status, a reason).
pub(super) fn word<T: FromStr<Err: std::fmt::Display>>(row: &Row, i: usize) -> Result<T> {
    let text: &str = row.try_get(i)?;
    text.parse().map_err(|e| corrupt(row, i, e))
}

/// A nullable `text` column that holds one of a vocabulary's words.
pub(super) fn opt_word<T: FromStr<Err: std::fmt::Display>>(row: &Row, i: usize) -> Result<Option<T>> {
    let text: Option<&str> = row.try_get(i)?;
    text.map(|t| t.parse().map_err(|e| corrupt(row, i, e))).transpose()
}
