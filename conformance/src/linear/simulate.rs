//! Histories made by the reference store itself, with random overlaps: the checker's own
//! test.
//!
//! Clients take turns at random through three phases per call: invoked (the call is chosen
//! and its interval opens), applied (the reference store runs it: its linearization point)
//! and returned (the interval closes and the client learns the answer). Every history made
//! this way has an order — the order of the application points — so the checker must accept
//! each one, however the intervals overlap; and since the points are known, the checker is
//! tested on exactly the reorderings a real store produces.

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use retryq_model::{Op, Response, Store};

use super::history::{Call, History};
use super::workload::{Board, Client, Workload};

/// Where one client is in its current call.
enum Phase {
    /// Between calls.
    Idle,
    /// Invoked at this instant, not yet applied.
    Invoked(Op, u64),
    /// Applied, not yet returned.
    Applied(Op, u64, Response),
}

/// A history of `workload` on the reference store, scheduled by `seed`. The setup runs
/// first, one call after another, as in a real run.
pub fn simulate(workload: &Workload, seed: u64) -> History {
    let mut store = Store::new();
    let s = workload.settings;
    store.step(&Op::Config {
        base_ms: Some(s.base_ms),
        cap_ms: Some(s.cap_ms),
        lease_ms: Some(s.lease_ms),
        reap_limit: Some(s.reap_limit),
    });
    let mut tick = 0u64;
    let mut calls = Vec::new();
    for op in workload.setup() {
        let response = store.step(&op);
        calls.push(Call {
            client: workload.clients,
            op,
            response,
            more: Vec::new(),
            invoked: tick,
            returned: tick + 1,
        });
        tick += 2;
    }
    let board = Board::new();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut clients: Vec<(Client, Phase, usize)> =
        (0..workload.clients).map(|n| (workload.client(n), Phase::Idle, 0)).collect();
    loop {
        let busy: Vec<usize> = (0..clients.len())
            .filter(|&n| clients[n].2 < workload.calls || !matches!(clients[n].1, Phase::Idle))
            .collect();
        if busy.is_empty() {
            break;
        }
        let n = busy[rng.random_range(0..busy.len())];
        let (client, phase, made) = &mut clients[n];
        *phase = match std::mem::replace(phase, Phase::Idle) {
            Phase::Idle => {
                *made += 1;
                Phase::Invoked(client.next(&board), tick)
            }
            Phase::Invoked(op, invoked) => {
                let response = store.step(&op);
                Phase::Applied(op, invoked, response)
            }
            Phase::Applied(op, invoked, response) => {
                client.saw(&op, &response, &board);
                calls.push(Call { client: n, op, response, more: Vec::new(), invoked, returned: tick });
                Phase::Idle
            }
        };
        tick += 1;
    }
    History { settings: workload.settings, calls }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linear::check;

    /// Every simulated history has an order, and the checker finds one: 300 histories of 8
    /// clients × 8 calls, and 50 of 8 × 15 (123 calls, near the limit).
    #[test]
    fn every_simulated_history_is_accepted() {
        for (calls, runs) in [(8, 300), (15, 50)] {
            let (mut overlap, mut states, mut most) = (0.0, 0, 0);
            for seed in 0..runs {
                let workload = Workload { seed, calls, ..Workload::default() };
                let history = simulate(&workload, seed);
                overlap += history.overlap();
                match check(&history) {
                    Ok(order) => {
                        states += order.states;
                        most = most.max(order.states);
                    }
                    Err(why) => panic!("seed {seed}: {why}"),
                }
            }
            eprintln!(
                "{runs} simulated histories of 8 × {calls} calls: each call overlaps {:.1} others; \
                 {} states searched on average, {most} at most",
                overlap / runs as f64,
                states / runs
            );
        }
    }

    /// Changing one answer of a simulated history (a claim's attempt, to one no order can
    /// give) is caught.
    #[test]
    fn a_changed_answer_is_rejected() {
        let mut changed = 0;
        for seed in 0..50 {
            let mut history = simulate(&Workload { seed, ..Workload::default() }, seed);
            let Some(call) = history
                .calls
                .iter_mut()
                .find(|c| matches!(c.response, Response::Ok(retryq_model::Reply::Claimed { .. })))
            else {
                continue;
            };
            if let Response::Ok(retryq_model::Reply::Claimed { attempt, .. }) = &mut call.response {
                *attempt += 1000;
            }
            changed += 1;
            assert!(check(&history).is_err(), "seed {seed}: a claim of attempt 1000+ was accepted");
        }
        assert!(changed > 40, "most simulated histories claim something ({changed} of 50)");
    }
}
