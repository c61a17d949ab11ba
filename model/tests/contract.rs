//! `retryq check` as one test, at bounds small enough to run once per mutant: the SPEC's store
//! keeps every property, the small worlds between them show every example and reach every
//! cell of the contract's table, and every seeded bug is caught by the property that names
//! it. This is the test cargo-mutants runs against each mutant of the reference store, of the
//! second reading and of the world (`.cargo/mutants-model.toml`): a mutant of the store that
//! survives it is a change the model check cannot see; a mutant of the rules or the world
//! that survives it is a check that catches no bug.

use std::hash::{BuildHasher, RandomState};

use retryq_model::checker::{Kind, Status};
use retryq_model::choices;
use retryq_model::contract::{self, Class, Field};
use retryq_model::model::{Bounds, QueueModel, Scene, World};
use retryq_model::rules::{self, Broken};
use retryq_model::trace::{self, Line};
use retryq_model::{Bug, Op, Outcome, Store};
use stateright::Model;

/// The small worlds: one job and two workers up to 5 (every dimension of one job), two jobs
/// and one worker up to 5 with an enqueue dated back (claim's choice between them), the
/// range's edges, the lanes, retention, the backlog of jobs due to end, pauses, and `run_now`
/// of a scheduled job.
fn small_worlds() -> [Bounds; 8] {
    [
        Bounds::small(),
        Bounds::backdating(),
        Bounds { scenes: vec![Scene::edges()], ..Bounds::default() },
        Bounds { scenes: vec![Scene::choices()], ..Bounds::default() },
        Bounds { scenes: vec![Scene::retention()], ..Bounds::default() },
        Bounds { scenes: vec![Scene::backlog()], ..Bounds::default() },
        Bounds { scenes: vec![Scene::pauses()], ..Bounds::default() },
        Bounds { scenes: vec![Scene::run_now()], ..Bounds::default() },
    ]
}

/// The length of a shortest path to each example in the small worlds: where each situation
/// first happens. An example whose recogniser is weakened (or broken) is found at another
/// depth, or not at all.
const EXAMPLE_STEPS: &[(&str, usize)] = &[
    ("a retry landing exactly on the deadline dies by deadline", 2),
    ("a crash on the last attempt ends dead(exhausted)", 4),
    ("a stale completion is rejected after a reclaim", 5),
    ("a late completion after lease expiry is accepted", 3),
    ("a redriven job ends done", 4),
    ("a job dead by its deadline is redriven", 4),
    ("a job is redriven twice", 5),
    ("a completion dated before its claim is refused", 3),
    ("run_once reports a clock that went back", 2),
    ("the current token from the wrong worker is refused", 3),
    ("a crashed holder's job is claimed again after its lease", 4),
    ("a restart with a lease held", 3),
    ("a bad argument for a missing job is invalid_input", 1),
    ("a retry where binary64 floors above exact arithmetic", 3),
    ("a retry under a cap below the base", 2),
    ("a claim breaks a tie by first enqueue", 3),
    ("a claim takes a later-enqueued job due earlier", 3),
    ("a heartbeat is accepted at deadline - 1", 4),
    ("a heartbeat at the deadline is refused", 3),
    ("a heartbeat with a stale token is refused", 3),
    ("a scheduled job is first claimed at exactly not_before", 3),
    ("a retry under the job's own backoff, not the queue's", 2),
    ("a cancelled job is redriven and ends done", 4),
    ("a stalled holder's attempt is cut by its watchdog, then reclaimed", 4),
    ("a claim breaks a tie by first enqueue, not enqueued_at", 4),
    ("a retry uses the settings in effect, switched since the enqueue", 4),
    ("a lease ends past 2^53 - 1", 2),
    ("a low-priority job waits while a higher one goes first", 3),
    ("a claim takes a job, passing over a queue it does not serve", 3),
    ("a running job is cancelled and ends", 4),
    ("a pruned id is enqueued again: existing, not run", 4),
    ("a forgotten id is enqueued anew", 5),
    ("a reap stops at its limit, leaving a job due to end", 3),
    ("a claim passes over a job due to end that its reap left", 6),
    ("a forgotten id lives again: enqueued anew, redriven, pruned again", 9),
    ("a job made due by run_now is claimed before its not_before", 3),
];

/// How many cells of both tables and relations of the choices the small worlds first reach at each depth (0 to 6, then 7 or
/// more).
const CELLS_AT_DEPTH: [usize; 8] = [0, 290, 90, 104, 179, 27, 6, 9];

#[test]
fn the_model_check_passes_and_reaches_everything() {
    let mut found = Vec::new();
    // The tables' sizes, as docs/model.md quotes them.
    assert_eq!((contract::cells().len(), contract::arg_cells().len()), (291, 255));
    // Each cell's shortest depth over the small worlds, as the examples' are pinned.
    let mut cells: Vec<Option<usize>> =
        vec![None; contract::cells().len() + contract::arg_cells().len() + choices::choices().len()];
    for bounds in small_worlds() {
        let report = QueueModel::new(bounds.clone(), None).check(2, true);
        assert_eq!(report.outside_boundary, 0, "{bounds}: the claim bound cut the SPEC's store");
        for finding in &report.findings {
            match finding.kind {
                Kind::Sometimes if finding.status == Status::Found => {
                    // An example is a step the world takes, never the world before any.
                    let steps = finding.path.as_ref().map_or(0, |p| p.len());
                    assert!(steps > 0, "{}", finding.name);
                    found.push((finding.name, steps));
                }
                Kind::Sometimes => {}
                Kind::Always | Kind::Liveness => {
                    assert_eq!(finding.status, Status::Holds, "{bounds}: {}", finding.name)
                }
            }
        }
        for (depth, path) in cells.iter_mut().zip(&report.cells) {
            if let Some(path) = path {
                *depth = Some(depth.map_or(path.len(), |d| d.min(path.len())));
            }
        }
    }
    let report = QueueModel::new(Bounds::small(), None).check(2, true);
    let mut moved = Vec::new();
    for finding in report.findings.iter().filter(|f| f.kind == Kind::Sometimes) {
        let shortest = found.iter().filter(|(name, _)| *name == finding.name).map(|(_, steps)| *steps).min();
        assert!(shortest.is_some(), "no small world shows: {}", finding.name);
        // A recogniser made easier to satisfy finds its example sooner, or a harder one later.
        let pinned = EXAMPLE_STEPS.iter().find(|(name, _)| *name == finding.name).map(|(_, steps)| *steps);
        if shortest != pinned {
            moved.push(format!("    ({:?}, {}),", finding.name, shortest.unwrap_or(0)));
        }
    }
    assert!(moved.is_empty(), "examples found at other depths than pinned:\n{}", moved.join("\n"));
    let depths = cells.clone();
    let cells: Vec<bool> = cells.iter().map(Option::is_some).collect();
    let (table, rest) = cells.split_at(contract::cells().len());
    let (args, relations) = rest.split_at(contract::arg_cells().len());
    for (cell, &reached) in contract::cells().into_iter().zip(table) {
        assert!(reached || contract::DEEP_ONLY.contains(&cell), "no small world reaches {cell:?}");
    }
    // Every class of every field of every operation was put to the store: a probe whose value
    // missed its class (`contract::class_of` reads the class independently) leaves it unreached.
    let missed: Vec<_> =
        contract::arg_cells().into_iter().zip(args).filter(|(_, r)| !**r).map(|(c, _)| c).collect();
    assert!(missed.is_empty(), "no small world puts these to the store: {missed:?}");
    // Every relation each rule of the contract compares (`choices::choices`, derived from the
    // rules' orders) was put in front of the store: a world that stops making a choice — a
    // scene narrowed, a lane or a probe dropped — leaves its relation unreached here.
    let unmade: Vec<String> =
        choices::choices().into_iter().zip(relations).filter(|(_, r)| !**r).map(|(c, _)| c.name()).collect();
    assert!(unmade.is_empty(), "no small world makes these choices: {unmade:#?}");
    // A recogniser of cells made easier finds some cell sooner, a harder one later: how many
    // cells of both tables and relations are first reached at each depth.
    let mut at_depth = vec![0; 8];
    for depth in depths.iter().flatten() {
        at_depth[(*depth).min(7)] += 1;
    }
    assert_eq!(at_depth, CELLS_AT_DEPTH, "cells first reached at each depth 0, 1, …, 7 or more");
}

/// Every seeded bug is caught by the property that names it, and with a counterexample that
/// shows it: the trace the buggy store answers as the model says, and the SPEC's store answers
/// some step of it otherwise. A watchdog's bug is in the world's executions, not in the store:
/// its trace runs the same on the SPEC's store (model/tests/check.rs,
/// `watchdog_bugs_end_in_two_executions_or_an_early_cut`, shows those).
#[test]
fn every_seeded_bug_is_caught_by_its_property() {
    for bug in Bug::ALL {
        let model = QueueModel::new(Bounds::small_for(bug), Some(bug));
        let report = model.show_bug(2);
        let finding = report.finding(bug.caught_by()).expect("known property");
        assert_eq!(finding.status, Status::Violated, "{bug} is not caught by {}", bug.caught_by());
        if bug.in_the_watchdog() {
            continue;
        }
        let path = finding.path.as_ref().expect("a counterexample");
        let lines = trace::trace(&model, path, finding.kind == Kind::Liveness);
        let mut buggy = Store::new().with_bug(Some(bug));
        let mut spec = Store::new();
        let mut differs = false;
        for line in &lines {
            if let Line::Op { op, model: expected } = line {
                assert_eq!(&buggy.step(op), expected, "{bug}: {}", op.to_json_line());
                differs |= spec.step(op) != *expected;
            }
        }
        assert!(differs, "{bug}: the SPEC's store answers this trace just like the buggy one");
        assert!(trace::render(&lines).lines().all(|l| l.starts_with('#') || l.starts_with("{\"op\":")));
    }
}

/// Every property that must always hold is the one some seeded bug is caught by: a property
/// no bug breaks is a check never seen to fail (mutation testing found `3.16 pause and 3.17
/// resume` so: with its rule's flag made zero, nothing failed).
#[test]
fn every_always_property_catches_a_seeded_bug() {
    let catching: Vec<&str> = Bug::ALL.into_iter().map(Bug::caught_by).collect();
    let idle: Vec<&str> = retryq_model::properties::all()
        .into_iter()
        .filter(|check| check.kind == Kind::Always && !catching.contains(&check.name))
        .map(|check| check.name)
        .collect();
    assert!(idle.is_empty(), "no seeded bug is caught by {idle:?}");
}

/// The checker tells worlds apart by their hash; `World`'s equality must say the same of every
/// pair, or a state would be merged with one it differs from (or kept twice). Compared over
/// every pair of the worlds within three steps of each scene's start.
#[test]
fn worlds_are_equal_exactly_when_their_hashes_are() {
    let hasher = RandomState::new();
    for bounds in small_worlds() {
        let model = QueueModel::new(bounds.clone(), None);
        let mut worlds: Vec<World> = model.init_states();
        let mut frontier = worlds.clone();
        for _ in 0..3 {
            let mut next = Vec::new();
            for world in &frontier {
                let mut actions = Vec::new();
                model.actions(world, &mut actions);
                next.extend(actions.into_iter().filter_map(|action| model.next_state(world, action)));
            }
            next.truncate(150);
            worlds.extend(next.iter().cloned());
            frontier = next;
        }
        let hashes: Vec<u64> = worlds.iter().map(|w| hasher.hash_one(w)).collect();
        let mut distinct = 0;
        for (i, a) in worlds.iter().enumerate() {
            assert!(a == a, "{bounds}: a world differs from itself");
            for (j, b) in worlds.iter().enumerate().skip(i + 1) {
                assert_eq!(
                    a == b,
                    hashes[i] == hashes[j],
                    "{bounds}: equality and hash disagree:\n{a:?}\n{b:?}"
                );
                distinct += usize::from(a != b);
            }
        }
        assert!(distinct > 0, "{bounds}: no two different worlds were compared");
    }
}

/// `contract::class_of` puts each value at the edge the SPEC draws, and a value between the
/// edges in no class: the cells of arguments count only what was put to the store, so a class
/// read too widely would be reached by ordinary values and show nothing.
#[test]
fn argument_classes_are_the_specs_edges() {
    let names = |n: usize| Some((0..n).map(|i| format!("q{i}")).collect::<Vec<_>>());
    let claim = |queues| Op::Claim { worker: "w".into(), now: 10, queues };
    let cases = [
        (claim(None), Some(Class::Absent)),
        (claim(names(0)), Some(Class::Below)),
        (claim(names(1)), Some(Class::Least)),
        (claim(names(2)), None),
        (claim(names(63)), None),
        (claim(names(64)), Some(Class::Most)),
        (claim(names(65)), Some(Class::Above)),
        (claim(Some(vec!["a".into(), "b".into(), "a".into()])), Some(Class::Forbidden)),
    ];
    for (op, class) in cases {
        assert_eq!(contract::class_of(&op, Field::Queues), class, "{}", op.to_json_line());
    }
    let enqueue = |priority| Op::Enqueue {
        id: "j".into(),
        payload: String::new(),
        max_attempts: 1,
        deadline: 100,
        now: 10,
        not_before: None,
        base_ms: None,
        cap_ms: None,
        queue: None,
        priority,
        kind: None,
    };
    let priorities =
        [(None, Some(Class::Absent)), (Some(0), Some(Class::Least)), (Some(1), None), (Some(8), None)];
    let priorities =
        priorities.into_iter().chain([(Some(9), Some(Class::Most)), (Some(10), Some(Class::Above))]);
    for (priority, class) in priorities {
        assert_eq!(contract::class_of(&enqueue(priority), Field::Priority), class, "priority {priority:?}");
    }
    let max = retryq_model::MAX_INT;
    let befores = [
        (0, 10, Some(Class::Least)),
        (1, 10, None),
        (9, 10, None),
        (10, 10, Some(Class::Most)),
        (11, 10, Some(Class::Above)),
        (max, max, Some(Class::Most)),
        (max + 1, max + 1, Some(Class::Above)),
    ];
    for (before, now, class) in befores {
        for op in [Op::Prune { before, now }, Op::Forget { before, now }] {
            assert_eq!(contract::class_of(&op, Field::Before), class, "{}", op.to_json_line());
        }
    }
}

/// 4.3's coarse reading (the LIFECYCLE rule) judges a prune by itself, whatever the finer rules
/// also find: a prune that drops an open job, a job that ended after its `before`, or a job
/// without leaving its tombstone breaks it; the SPEC's own prune of the same store does not.
#[test]
fn a_prune_that_drops_what_it_must_not_breaks_the_lifecycle() {
    let enqueue = |id: &str, deadline, now| Op::Enqueue {
        id: id.into(),
        payload: "p".into(),
        max_attempts: 1,
        deadline,
        now,
        not_before: None,
        base_ms: None,
        cap_ms: None,
        queue: None,
        priority: None,
        kind: None,
    };
    let setup = [
        enqueue("a", 100, 0),
        Op::Claim { worker: "w".into(), now: 0, queues: None },
        Op::Complete {
            worker: "w".into(),
            id: "a".into(),
            attempt: 1,
            outcome: Outcome::Ok,
            now: 10,
            jitter: None,
        },
        enqueue("b", 50, 20),
    ];
    let first_enqueue = |id: &str| ["a", "b"].iter().position(|known| *known == id);
    let judged = |store: &mut Store, before: u64| {
        for op in &setup {
            store.step(op);
        }
        let prune = Op::Prune { before, now: 60 };
        let was = store.clone();
        let response = store.step(&prune);
        rules::judge(&was, &prune, &response, store, &first_enqueue)
    };
    for (bug, before) in
        [(Bug::PruneOpenPastDeadline, 60), (Bug::PruneIgnoresBefore, 5), (Bug::PruneWithoutTombstone, 60)]
    {
        let broken = judged(&mut Store::new().with_bug(Some(bug)), before);
        assert!(broken.contains(Broken::LIFECYCLE), "{bug}: {broken}");
        let kept = judged(&mut Store::new(), before);
        assert!(!kept.contains(Broken::LIFECYCLE), "the SPEC's prune before {before}: {kept}");
    }
}
