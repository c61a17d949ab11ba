//! The model checked: pinned state counts, every example found, every seeded bug caught with
//! a shortest counterexample (whose trace shows the bug: model/tests/contract.rs).

use std::collections::HashSet;

use retryq_model::Bug;
use retryq_model::checker::{CheckReport, Kind, Status};
use retryq_model::model::{Action, Bounds, QueueModel, World};
use retryq_model::probes::Set;
use retryq_model::properties;
use stateright::{Checker, Model};

fn check(bounds: Bounds, bug: Option<Bug>, symmetry: bool) -> CheckReport<World, Action> {
    QueueModel::new(bounds, bug).check(2, symmetry)
}

fn sized(jobs: usize, workers: usize, horizon: u64) -> Bounds {
    Bounds::sized(jobs, workers, horizon)
}

/// Regression anchors: a change to the model that changes its state space shows here.
#[test]
fn pinned_state_counts() {
    let mut moved = Vec::new();
    for (bounds, symmetry, unique) in [
        (sized(1, 1, 4), true, 66_058),
        (sized(1, 2, 5), true, 336_508),
        (sized(1, 2, 5), false, 582_078),
        (sized(2, 1, 4), true, 131_199),
        (sized(2, 2, 4), true, 168_180),
        (sized(2, 2, 4), false, 284_732),
    ] {
        let report = check(bounds.clone(), None, symmetry);
        if report.unique_states != unique {
            moved.push(format!(
                "{bounds} symmetry {symmetry}: {} states, pinned {unique}",
                report.unique_states
            ));
        }
        assert!(report.findings.iter().all(|f| f.status != Status::Violated), "{bounds}");
        assert_eq!(report.outside_boundary, 0, "the claim bound never cuts the SPEC's store");
    }
    assert!(moved.is_empty(), "state counts other than pinned:\n{}", moved.join("\n"));
}

/// The examples only two jobs can show.
const TWO_JOB_EXAMPLES: [&str; 4] = [
    properties::names::TIE_BROKEN,
    properties::names::EARLIER_DUE_FIRST,
    properties::names::BACKDATED_TIE,
    properties::names::REAP_STOPPED_AT_LIMIT,
];

/// The example only three jobs show: two due to end and a reap limit of 1, so that a claim's
/// reap leaves one, and a third job its pick takes ([`Scene::backlog`]).
///
/// [`Scene::backlog`]: retryq_model::model::Scene::backlog
const BACKLOG_EXAMPLES: [&str; 1] = [properties::names::PICK_PASSED_DUE];

/// The examples only the range's edges show.
const EDGE_EXAMPLES: [&str; 1] = [properties::names::LEASE_PAST_MAX_INT];

/// The examples only contract 1.2's scenes show: priorities ([`Scene::choices`]; a queue passed
/// over shows with one job, by a probe), and cancels of running jobs, prunes and forgets, and a
/// forgotten id's second life ([`Scene::retention`]).
///
/// [`Scene::choices`]: retryq_model::model::Scene::choices
/// [`Scene::retention`]: retryq_model::model::Scene::retention
const LANE_EXAMPLES: [&str; 2] = [properties::names::PRIORITY_FIRST, properties::names::QUEUE_PASSED_OVER];
const RETENTION_EXAMPLES: [&str; 4] = [
    properties::names::RUNNING_CANCELLED,
    properties::names::PRUNED_REENQUEUED,
    properties::names::FORGOTTEN_ENQUEUED,
    properties::names::LIVED_AGAIN,
];

/// The example only `run_now` of a scheduled job shows ([`Scene::run_now`]).
///
/// [`Scene::run_now`]: retryq_model::model::Scene::run_now
const RUN_NOW_EXAMPLES: [&str; 1] = [properties::names::RUN_NOW_CLAIMED];

/// The examples only one job shows: what the two-job scene leaves to it (switched settings,
/// its own backoff).
const ONE_JOB_EXAMPLES: [&str; 2] =
    [properties::names::OWN_BACKOFF_RETRY, properties::names::SWITCHED_SETTINGS_RETRY];

/// Two jobs, one worker, a clock up to 5, one enqueue dated back: where the examples about
/// two jobs are found.
fn two_jobs() -> Bounds {
    Bounds::backdating()
}

#[test]
fn the_spec_store_keeps_every_property_and_shows_every_example() {
    let scene = |scene| Bounds { scenes: vec![scene], ..Bounds::default() };
    let edges = scene(retryq_model::model::Scene::edges());
    let lanes = scene(retryq_model::model::Scene::choices());
    let retention = scene(retryq_model::model::Scene::retention());
    let backlog = scene(retryq_model::model::Scene::backlog());
    let run_now = scene(retryq_model::model::Scene::run_now());
    let pauses = scene(retryq_model::model::Scene::pauses());
    for (bounds, examples) in [
        (Bounds::small(), None),
        (two_jobs(), Some(&TWO_JOB_EXAMPLES[..])),
        (edges, Some(&EDGE_EXAMPLES[..])),
        (lanes, Some(&LANE_EXAMPLES[..])),
        (retention, Some(&RETENTION_EXAMPLES[..])),
        (backlog, Some(&BACKLOG_EXAMPLES[..])),
        (run_now, Some(&RUN_NOW_EXAMPLES[..])),
        (pauses, Some(&[][..])),
    ] {
        let report = check(bounds.clone(), None, true);
        let model = QueueModel::new(bounds, None);
        for finding in &report.findings {
            if finding.kind != Kind::Sometimes {
                assert_eq!(finding.status, Status::Holds, "{}", finding.name);
                continue;
            }
            let elsewhere = [
                &TWO_JOB_EXAMPLES[..],
                &EDGE_EXAMPLES,
                &LANE_EXAMPLES,
                &RETENTION_EXAMPLES,
                &BACKLOG_EXAMPLES,
                &RUN_NOW_EXAMPLES,
            ]
            .iter()
            .any(|names| names.contains(&finding.name));
            if examples.is_some_and(|names| !names.contains(&finding.name)) {
                continue;
            }
            if examples.is_none() && elsewhere {
                assert_eq!(finding.status, Status::NotFound, "one job cannot show {}", finding.name);
                continue;
            }
            assert_eq!(finding.status, Status::Found, "{}", finding.name);
            // The example replays and is one.
            let path = finding.path.as_ref().expect("an example has a path");
            let world = replayed(&model, path);
            let property = properties::by_name(finding.name).expect("known property");
            assert!((property.holds)(&model, &world), "{}", finding.name);
        }
    }
    // And the default scenes each show what they are for.
    let main =
        check(Bounds { scenes: vec![retryq_model::model::Scene::main()], ..Bounds::default() }, None, true);
    for name in ONE_JOB_EXAMPLES {
        let finding = main.finding(name).expect("known property");
        assert_eq!(finding.status, Status::NotFound, "the two-job scene leaves {name} to the one-job scene");
    }
}

/// The world a path ends in, its actions replayed from its first state (probes included).
fn replayed(model: &QueueModel, path: &retryq_model::checker::Path<World, Action>) -> World {
    let mut world = path.states[0].clone();
    for action in &path.actions {
        world = model.next_state(&world, action.clone()).expect("the action applies");
    }
    world
}

/// The checker's counts agree with stateright's own checkers on the same model: its BFS
/// without symmetry, its DFS with the same representative.
#[test]
fn counts_agree_with_stateright() {
    let ours = check(Bounds::small(), None, false);
    let theirs = QueueModel::new(Bounds::small(), None).checker().spawn_bfs().join();
    assert_eq!(ours.unique_states, theirs.unique_state_count());
    let ours = check(Bounds::small(), None, true);
    let theirs = QueueModel::new(Bounds::small(), None).checker().symmetry().spawn_dfs().join();
    assert_eq!(ours.unique_states, theirs.unique_state_count());
}

/// Symmetry reduction is sound here: the same verdicts and the same shortest lengths.
#[test]
fn symmetry_changes_no_verdict_and_no_length() {
    for bug in [None, Some(Bug::AcceptStaleCompletion), Some(Bug::StealLiveLease)] {
        let reduced = check(Bounds::small(), bug, true);
        let full = check(Bounds::small(), bug, false);
        assert!(reduced.unique_states < full.unique_states);
        for (r, f) in reduced.findings.iter().zip(&full.findings) {
            assert_eq!(r.status, f.status, "{bug:?} {}", r.name);
            assert_eq!(
                r.path.as_ref().map(|p| p.len()),
                f.path.as_ref().map(|p| p.len()),
                "{bug:?} {}",
                r.name
            );
        }
    }
}

/// The depth of the first step failing `property`, by a plain breadth-first search over
/// whole states that judges every step it takes, and each set of probes on the first state of
/// each class it meets: no symmetry, no pruning, nothing shared with the checker but the model.
fn shortest_by_plain_bfs(model: &QueueModel, property: &str) -> Option<usize> {
    let property = properties::by_name(property)?;
    let mut level: Vec<World> = model.init_states();
    if level.iter().any(|w| !(property.holds)(model, w)) {
        return Some(0);
    }
    let mut seen: HashSet<World> = level.iter().cloned().collect();
    let mut classes: HashSet<(usize, u64)> = HashSet::new();
    for depth in 1.. {
        let mut next = Vec::new();
        for world in &level {
            let mut probes = Vec::new();
            for (i, set) in Set::ALL.into_iter().enumerate() {
                if classes.insert((i, model.probe_class(set, world))) {
                    model.probe_actions(set, world, &mut probes);
                }
            }
            for action in probes {
                let Some(successor) = model.next_state(world, action) else { continue };
                if model.within_boundary(&successor) && !(property.holds)(model, &successor) {
                    return Some(depth);
                }
            }
            for (_, successor) in model.next_steps(world) {
                if !model.within_boundary(&successor) {
                    continue;
                }
                if !(property.holds)(model, &successor) {
                    return Some(depth);
                }
                if seen.insert(successor.clone()) {
                    next.push(successor);
                }
            }
        }
        if next.is_empty() {
            return None;
        }
        level = next;
    }
    None
}

#[test]
fn counterexamples_are_shortest_and_replay() {
    for bug in Bug::ALL {
        let model = QueueModel::new(Bounds::small_for(bug), Some(bug));
        let report = model.show_bug(2);
        let finding = report.finding(bug.caught_by()).expect("known property");
        let path = finding.path.as_ref().expect("a counterexample");
        assert_eq!(Some(path.len()), shortest_by_plain_bfs(&model, finding.name), "{bug}");
        // The actions replay from the initial state to a state that fails the property.
        let world = replayed(&model, path);
        let property = properties::by_name(finding.name).expect("known property");
        assert!(!(property.holds)(&model, &world), "{bug}");
    }
}

#[test]
fn the_path_does_not_depend_on_the_number_of_threads() {
    let model =
        QueueModel::new(Bounds::small_for(Bug::AcceptStaleCompletion), Some(Bug::AcceptStaleCompletion));
    let one = model.check(1, true);
    let four = model.check(4, true);
    for (a, b) in one.findings.iter().zip(&four.findings) {
        assert_eq!(a.path.as_ref().map(|p| &p.actions), b.path.as_ref().map(|p| &p.actions), "{}", a.name);
    }
}

/// A counterexample's trace, replayed on the store with the bug, gives the responses the
/// model printed; on the SPEC's store some response differs: the trace shows the bug.
#[test]
fn liveness_is_not_vacuous_at_the_horizon() {
    // The SPEC's store at the horizon: every job over after its reaps, in every state.
    let report = check(sized(1, 1, 4), None, true);
    assert_eq!(report.finding(properties::names::EVERY_JOB_ENDS).map(|f| f.status), Some(Status::Holds));
    // A store that never reaps an expired lease fails it on a finite path, at the horizon.
    let report = check(sized(1, 1, 4), Some(Bug::IgnoreExpiredLease), true);
    let finding = report.finding(properties::names::EVERY_JOB_ENDS).expect("known property");
    assert_eq!(finding.status, Status::Violated);
    assert_eq!(finding.path.as_ref().and_then(|p| p.last_state()).map(|w| w.now), Some(4));
}

/// Why the checker is our own: stateright 0.31's BFS records a discovery again each time a
/// state shows it, so a later, deeper state overwrites the first (shortest) path; and it
/// judges only states it has not seen, so a property of the step into a state it has seen
/// (a refusal that changed nothing it hashes, a wrong answer) is never judged on that step.
/// On these models its paths are often longer than the shortest, and some bugs it misses;
/// ours are never longer and it misses none.
#[test]
fn stateright_bfs_paths_are_longer_than_ours() {
    let (mut longer, mut missed) = (0, 0);
    // The first eleven bugs, each searched by stateright to a few steps past our path: its BFS
    // runs on until every property is decided, which the whole space takes.
    for bug in Bug::ALL.into_iter().take(11) {
        let ours = QueueModel::new(Bounds::small_for(bug), Some(bug)).show_bug(2);
        let ours = ours.finding(bug.caught_by()).and_then(|f| f.path.as_ref()).map(|p| p.len());
        let depth = ours.map_or(8, |n| n + 4);
        let theirs = QueueModel::new(Bounds::small_for(bug), Some(bug))
            .checker()
            .target_max_depth(depth)
            .spawn_bfs()
            .join();
        let theirs = theirs.discovery(bug.caught_by()).map(|p| p.into_actions().len());
        let Some(ours) = ours else { panic!("{bug}: ours finds it") };
        match theirs {
            Some(theirs) => {
                assert!(ours <= theirs, "{bug}: ours {ours}, stateright {theirs}");
                longer += usize::from(ours < theirs);
            }
            None => missed += 1,
        }
    }
    assert!(
        longer + missed > 0,
        "stateright found shortest paths for every bug: this test's premise is gone"
    );
}

/// A watchdog's seeded bug ends its counterexample with two attempts of one job running at
/// once (no watchdog, a margin below the skew), or an attempt cut while its renewed lease had
/// more than the margin left (heartbeats not renewing the watchdog).
#[test]
fn watchdog_bugs_end_in_two_executions_or_an_early_cut() {
    for bug in Bug::ALL.into_iter().filter(|bug| bug.in_the_watchdog()) {
        let model = QueueModel::new(Bounds::small_for(bug), Some(bug));
        let report = model.show_bug(2);
        let finding = report.finding(bug.caught_by()).expect("known property");
        let world = replayed(&model, finding.path.as_ref().expect("a counterexample"));
        let running = |job: usize| {
            world.workers.iter().flatten().filter(|h| h.job == job && h.running(world.now)).count()
        };
        match bug {
            Bug::WatchdogNotRenewed => assert!(
                world.workers.iter().flatten().any(|h| !h.running(world.now) && h.lease_until > h.runs_until),
                "{bug}: an attempt cut before its renewed lease"
            ),
            _ => assert_eq!(running(0), 2, "{bug}: two attempts of the job run at once"),
        }
        // With the watchdog the model's, the same path is no counterexample.
        let spec = QueueModel::new(Bounds::small_for(bug), None);
        let world = replayed(&spec, finding.path.as_ref().expect("a counterexample"));
        let property = properties::by_name(finding.name).expect("known property");
        assert!((property.holds)(&spec, &world), "{bug}: the path holds with the model's watchdog");
    }
}
