//! A concurrent run: N clients, each on its own connection to one store, recorded.

use std::sync::Barrier;
use std::thread;

use retryq::{Backend, Settings};
use retryq_model::{Op, Reply, Response};

use super::history::{Call, Clock, History};
use super::translate::{self, Unanswered};
use super::workload::{Board, Workload};
use crate::store;

/// Opens a new connection to the shared store: called once by the setup and once by every
/// client, from the client's own thread.
pub type Connect<'a> = dyn Fn() -> retryq::Result<Box<dyn Backend>> + Sync + 'a;

/// Why a run recorded no history.
#[derive(Debug, thiserror::Error)]
pub enum RunFailed {
    /// A connection could not be opened or set up.
    #[error("client {client} could not connect: {source}")]
    Connect {
        /// Which client (the setup is the last).
        client: usize,
        /// Why.
        #[source]
        source: retryq::Error,
    },
    /// A call got no answer the SPEC names.
    #[error("client {client}: {op}: {source}")]
    Call {
        /// Which client.
        client: usize,
        /// The operation, as a replay line.
        op: String,
        /// Why.
        #[source]
        source: Unanswered,
    },
    /// A client's thread panicked.
    #[error("client {client} panicked")]
    Panicked {
        /// Which client.
        client: usize,
    },
}

/// Runs `workload` on the store `connect` reaches, which must be empty: the setup's
/// enqueues one after another, then every client at once, each on its own connection and
/// thread. Every call is recorded with the shared clock read before and after it.
pub fn run(workload: &Workload, connect: &Connect<'_>) -> Result<History, RunFailed> {
    let clock = Clock::new();
    let board = Board::new();
    let setup_client = workload.clients;
    let mut calls = Vec::new();
    {
        let mut store = open(connect, workload, setup_client)?;
        for op in workload.setup() {
            calls.push(call(&clock, &mut *store, setup_client, op)?);
        }
    }
    let start = Barrier::new(workload.clients);
    let results: Vec<Result<Vec<Call>, RunFailed>> = thread::scope(|scope| {
        let handles: Vec<_> = (0..workload.clients)
            .map(|n| {
                let (clock, board, start) = (&clock, &board, &start);
                scope.spawn(move || {
                    // Every client waits at the barrier, even one that could not connect, so
                    // that the others are not left waiting for it.
                    let store = open(connect, workload, n);
                    start.wait();
                    let mut store = store?;
                    let mut client = workload.client(n);
                    let mut mine = Vec::with_capacity(workload.calls);
                    for _ in 0..workload.calls {
                        let op = client.next(board);
                        let made = match client.batch() {
                            1 => call(clock, &mut *store, n, op)?,
                            k => batch(clock, &mut *store, n, op, k)?,
                        };
                        client.saw(&made.op, &made.response, board);
                        for answer in &made.more {
                            client.saw(&made.op, answer, board);
                        }
                        mine.push(made);
                    }
                    Ok(mine)
                })
            })
            .collect();
        handles
            .into_iter()
            .enumerate()
            .map(|(client, h)| h.join().unwrap_or(Err(RunFailed::Panicked { client })))
            .collect()
    });
    for result in results {
        calls.extend(result?);
    }
    Ok(History { settings: workload.settings, calls })
}

/// A connection with the workload's settings.
fn open(connect: &Connect<'_>, workload: &Workload, client: usize) -> Result<Box<dyn Backend>, RunFailed> {
    let s = workload.settings;
    let mut store = connect().map_err(|source| RunFailed::Connect { client, source })?;
    store
        .set_settings(Settings {
            lease_ms: s.lease_ms,
            base_ms: s.base_ms,
            cap_ms: s.cap_ms,
            reap_limit: s.reap_limit,
        })
        .map_err(|source| RunFailed::Connect { client, source })?;
    Ok(store)
}

/// One recorded call.
fn call(clock: &Clock, store: &mut dyn Backend, client: usize, op: Op) -> Result<Call, RunFailed> {
    let (invoked, response, returned) = clock.time(|| translate::apply(store, &op));
    match response {
        Ok(response) => Ok(Call { client, op, response, more: Vec::new(), invoked, returned }),
        Err(source) => Err(RunFailed::Call { client, op: op.to_json_line(), source }),
    }
}

/// One recorded claim batch of `k`: `claim_batch_from` with the claim's worker, queues and
/// `now`, its answers as `k` single claims' (`none` past the jobs it leased).
fn batch(clock: &Clock, store: &mut dyn Backend, client: usize, op: Op, k: usize) -> Result<Call, RunFailed> {
    let Op::Claim { worker, now, queues } = &op else {
        return call(clock, store, client, op);
    };
    let names = store::names(queues);
    let (invoked, claimed, returned) = clock.time(|| store.claim_batch_from(worker, &names, *now, k));
    let answers = match claimed {
        Ok(claimed) => {
            let mut answers: Vec<Response> =
                claimed.into_iter().map(|c| Response::Ok(store::claimed(Some(c)))).collect();
            answers.resize(k, Response::Ok(Reply::None));
            answers
        }
        Err(e) => match store::refusal_response(e) {
            Ok(refusal) => vec![refusal; k],
            Err(e) => {
                return Err(RunFailed::Call {
                    client,
                    op: op.to_json_line(),
                    source: Unanswered::Storage(e),
                });
            }
        },
    };
    let mut answers = answers.into_iter();
    let response = answers.next().unwrap_or(Response::Ok(Reply::None));
    Ok(Call { client, op, response, more: answers.collect(), invoked, returned })
}
