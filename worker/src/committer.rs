//! The committer: a thread with a second connection of its own ([`Backend::another`]) on
//! which the store thread's group commits run, so that a worker's next claim is made while
//! its last outcomes commit.
//!
//! On PostgreSQL one connection is one server process: with claims and commits on one
//! connection, a worker keeps one core of the server busy at a time, and its jobs wait for
//! two commits a round where the server could run both at once. The store thread still
//! decides everything — what to send, when, and what each answer means (`store.rs`); the
//! committer only runs [`Backend::complete_batch`] on what it is sent, one batch at a time,
//! and sends the store's answer back as an [`Event::Committed`]. A store that has no second
//! connection to give (SQLite: one writer at a time) commits on the store thread, as before.
//!
//! A commit that panics (a bug in the store's code) ends the committer, never silently: the
//! store thread would otherwise wait for that batch's answer for ever, its slots idle and its
//! leases lapsing. It hears [`Event::CommitterPanicked`] instead, and commits on its own
//! connection from then on, the batch first, in doubt (the panic may have come after the
//! commit).

use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{Receiver, Sender};

use retryq::{Backend, Completion, Lease, Report};

use crate::slot::{Answer, Event};

/// One outcome of a group commit, as the committer sends it: what [`Completion`] borrows.
pub(crate) struct Sent {
    pub(crate) lease: Lease,
    pub(crate) report: Report,
    pub(crate) now: u64,
    pub(crate) jitter: f64,
}

/// Runs each batch `batches` brings on `store`, one after another, and sends each answer to
/// the store thread; returns once the store thread drops its end (or can hear no answer), or
/// after a commit panicked, once it has said so.
pub(crate) fn run(store: &mut dyn Backend, batches: &Receiver<Vec<Sent>>, answers: &Sender<Event>) {
    for batch in batches {
        let event = match panic::catch_unwind(AssertUnwindSafe(|| commit(store, &batch))) {
            Ok(answer) => Event::Committed(Box::new(answer)),
            Err(payload) => {
                let _ = answers.send(Event::CommitterPanicked(crate::handler::panic_text(&*payload)));
                return;
            }
        };
        if answers.send(event).is_err() {
            return;
        }
    }
}

/// One group commit of `batch` on `store`: the committer's, or the store thread's own when
/// there is no committer.
pub(crate) fn commit(store: &mut dyn Backend, batch: &[Sent]) -> Answer {
    let completions: Vec<Completion<'_>> = batch
        .iter()
        .map(|s| Completion { lease: &s.lease, report: s.report.clone(), now: s.now, jitter: s.jitter })
        .collect();
    store.complete_batch(&completions)
}
