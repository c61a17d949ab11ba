//! The operations a concurrent run issues, called on any [`Backend`] and answered in the
//! SPEC's words — by the replay side's own translation ([`store::answer`]), so that a
//! concurrent history and a replayed trace mean one thing by every answer.
//!
//! Only the operations the clients issue are here (no `config`, `restart` or
//! `retry_delay`: settings are fixed before the run, and a restart is not a concurrent
//! event). A refusal is an answer like any other; only a storage failure, or an answer the
//! SPEC has no word for, stops the run.

use retryq::Backend;
use retryq_model::{Op, Response};

use crate::{ReplayError, store};

/// Why a call gave no answer the history can record.
#[derive(Debug, thiserror::Error)]
pub enum Unanswered {
    /// The store failed (a connection lost, a lock not had in time, a corrupt row).
    #[error("storage failed: {0}")]
    Storage(#[source] ReplayError),
    /// The store answered with a value the SPEC does not name.
    #[error("the store answered {0}, which the SPEC does not name")]
    Unnamed(String),
    /// The operation is not one a concurrent client issues.
    #[error("{0} is not an operation of a concurrent run")]
    NotConcurrent(String),
}

/// Runs `op` on `store`.
pub fn apply(store: &mut dyn Backend, op: &Op) -> Result<Response, Unanswered> {
    if matches!(op, Op::Config { .. } | Op::Restart | Op::RetryDelay { .. }) {
        return Err(Unanswered::NotConcurrent(op.to_json_line()));
    }
    store::answer(store, op).map_err(|e| match e {
        ReplayError::Unnamed(answer) => Unanswered::Unnamed(answer),
        other => Unanswered::Storage(other),
    })
}
