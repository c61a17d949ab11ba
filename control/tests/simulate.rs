//! The simulation's claims: it is a function of its seed, and it reproduces what is
//! published — AWS's "Exponential Backoff And Jitter" ratio at 100 contending clients, and
//! the source document's n·r^(m−1) for a failing chain. Counts, never timings.

use retryq_control::amplification;
use retryq_control::simulate::{self, Row, Scenario, Server, SimError, Strategy};

fn scenario(strategy: Strategy, clients: u32) -> Scenario {
    Scenario {
        clients,
        layers: 2,
        attempts: None,
        server: Server::Contended,
        strategy,
        budget: false,
        runs: 100,
        seed: 1,
    }
}

fn calls(s: Scenario) -> f64 {
    simulate::run(&s).unwrap().calls
}

#[test]
fn the_same_seed_gives_the_same_rows() {
    let a = simulate::table(&[10, 40], 3, Some(3), Server::Contended, 5, 42).unwrap();
    let b = simulate::table(&[10, 40], 3, Some(3), Server::Contended, 5, 42).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.len(), 4 * 2 * 2);
}

#[test]
fn another_seed_gives_other_rows() {
    let s = Scenario { runs: 3, ..scenario(Strategy::FullJitter, 50) };
    let (a, b) = (simulate::run(&s).unwrap(), simulate::run(&Scenario { seed: 2, ..s }).unwrap());
    assert_ne!((a.calls, a.completion_ms), (b.calls, b.completion_ms));
}

#[test]
fn a_row_does_not_depend_on_the_other_rows() {
    let table = simulate::table(&[10, 100], 2, None, Server::Contended, 3, 9).unwrap();
    let alone: Row =
        simulate::run(&Scenario { runs: 3, seed: 9, ..scenario(Strategy::Decorrelated, 100) }).unwrap();
    assert!(table.contains(&alone));
}

/// AWS: exponential backoff without jitter makes about twice the calls of full jitter at 100
/// contending clients. Their own simulator, run on the same model, gives 1860 / 795 = 2.34;
/// this simulation gives 2.33 at seed 1. The band allows for other seeds, not for another model.
#[test]
fn exponential_without_jitter_makes_about_twice_the_calls_of_full_jitter() {
    let exponential = calls(scenario(Strategy::Exponential, 100));
    let full = calls(scenario(Strategy::FullJitter, 100));
    let ratio = exponential / full;
    assert!((2.0..=2.7).contains(&ratio), "{exponential} / {full} = {ratio}");
}

/// The ordering of AWS's figure at 100 clients: no backoff worst, then exponential, then
/// decorrelated, full jitter least.
#[test]
fn jitter_makes_the_fewest_calls_and_no_backoff_the_most() {
    let c = |s| calls(scenario(s, 100));
    let (immediate, exponential, full, decorrelated) = (
        c(Strategy::Immediate),
        c(Strategy::Exponential),
        c(Strategy::FullJitter),
        c(Strategy::Decorrelated),
    );
    assert!(
        immediate > exponential && exponential > decorrelated && decorrelated > full,
        "{immediate} {exponential} {decorrelated} {full}"
    );
}

/// AWS's published simulator at 100 clients, run here: calls per client in the same bands.
#[test]
fn calls_agree_with_aws_s_simulator_at_100_clients() {
    // (strategy, calls from aws-arch-backoff-simulator, 100 runs)
    let published = [
        (Strategy::Immediate, 2423.0),
        (Strategy::Exponential, 1860.0),
        (Strategy::FullJitter, 795.0),
        (Strategy::Decorrelated, 1002.0),
    ];
    for (strategy, theirs) in published {
        let ours = calls(scenario(strategy, 100));
        assert!((ours / theirs - 1.0).abs() < 0.05, "{}: {ours} here, {theirs} there", strategy.name());
    }
}

/// n·r^(m−1) exactly: a failing server, 3 attempts at each of the m − 1 hops, no budget.
#[test]
fn a_failing_chain_reaches_exactly_n_r_to_the_m_minus_1() {
    for layers in 2..=4 {
        for strategy in Strategy::ALL {
            let s = Scenario {
                layers,
                attempts: Some(3),
                server: Server::Failing,
                runs: 2,
                ..scenario(strategy, 20)
            };
            let row = simulate::run(&s).unwrap();
            assert_eq!(
                row.calls,
                amplification::worst_case_calls(20, 3, layers) as f64,
                "{} {layers}",
                strategy.name()
            );
            assert_eq!(row.success_rate, 0.0);
        }
    }
}

/// A budget per hop holds every layer's retries to 20 % of its requests plus tower's floor of
/// 100, however many retries the policy would allow.
#[test]
fn a_budget_caps_the_amplification_of_a_failing_chain() {
    let s = Scenario {
        layers: 3,
        attempts: Some(3),
        server: Server::Failing,
        budget: true,
        runs: 2,
        ..scenario(Strategy::Immediate, 1000)
    };
    let row = simulate::run(&s).unwrap();
    // Layer 1: 1000 requests, at most 200 + 100 retries; layer 2: at most 1300 requests,
    // 260 + 100 retries.
    let relay_requests = 1000.0 + 300.0;
    assert!(row.calls <= relay_requests + 0.2 * relay_requests + 100.0, "{}", row.calls);
    assert!(row.calls < amplification::worst_case_calls(1000, 3, 3) as f64 / 4.0);
}

#[test]
fn a_budget_caps_calls_under_contention() {
    for strategy in Strategy::ALL {
        let row = simulate::run(&Scenario { budget: true, runs: 10, ..scenario(strategy, 100) }).unwrap();
        assert!(row.calls <= 100.0 + 20.0 + 100.0, "{}: {}", strategy.name(), row.calls);
    }
}

#[test]
fn a_failing_server_without_an_attempt_limit_is_refused() {
    let s = Scenario { server: Server::Failing, ..scenario(Strategy::Immediate, 10) };
    assert!(matches!(simulate::run(&s), Err(SimError::Config(e)) if e.field == "attempts"));
}

#[test]
fn out_of_range_settings_name_their_field() {
    let field = |s: Scenario| match simulate::run(&s) {
        Err(SimError::Config(e)) => e.field,
        other => panic!("{other:?}"),
    };
    let s = scenario(Strategy::Immediate, 10);
    assert_eq!(field(Scenario { clients: 0, ..s }), "clients");
    assert_eq!(field(Scenario { layers: 1, ..s }), "layers");
    assert_eq!(field(Scenario { runs: 0, ..s }), "runs");
    assert_eq!(field(Scenario { attempts: Some(0), ..s }), "attempts");
}
