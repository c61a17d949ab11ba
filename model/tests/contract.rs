//! `retryq check` as one test, at bounds small enough to run once per mutant: the SPEC's store
//! keeps every property, the small worlds between them show every example and reach every
//! cell of the contract's table, and every seeded bug is caught by the property that names
//! it. This is the test cargo-mutants runs against each mutant of the reference store, of the
//! second reading and of the world (`.cargo/mutants-model.toml`): a mutant of the store that
//! survives it is a change the model check cannot see; a mutant of the rules or the world
//! that survives it is a check that catches no bug.

use retryq_model::Bug;
use retryq_model::checker::{Kind, Status};
use retryq_model::contract;
use retryq_model::model::{Bounds, QueueModel, Scene};

/// The small worlds: one job and two workers up to 5 (every dimension of one job), two jobs
/// and one worker up to 5 with an enqueue dated back (claim's choice between them), and the
/// range's edges.
fn small_worlds() -> [Bounds; 3] {
    [Bounds::small(), Bounds::backdating(), Bounds { scenes: vec![Scene::edges()], ..Bounds::default() }]
}

#[test]
fn the_model_check_passes_and_reaches_everything() {
    let mut found = Vec::new();
    let mut cells = vec![false; contract::cells().len()];
    for bounds in small_worlds() {
        let report = QueueModel::new(bounds.clone(), None).check(2, true);
        assert_eq!(report.outside_boundary, 0, "{bounds}: the claim bound cut the SPEC's store");
        for finding in &report.findings {
            match finding.kind {
                Kind::Sometimes if finding.status == Status::Found => {
                    // An example is a step the world takes, never the world before any.
                    assert!(finding.path.as_ref().is_some_and(|p| !p.is_empty()), "{}", finding.name);
                    found.push(finding.name);
                }
                Kind::Sometimes => {}
                Kind::Always | Kind::Liveness => {
                    assert_eq!(finding.status, Status::Holds, "{bounds}: {}", finding.name)
                }
            }
        }
        for (reached, path) in cells.iter_mut().zip(&report.cells) {
            *reached |= path.is_some();
        }
    }
    let report = QueueModel::new(Bounds::small(), None).check(2, true);
    for finding in report.findings.iter().filter(|f| f.kind == Kind::Sometimes) {
        assert!(found.contains(&finding.name), "no small world shows: {}", finding.name);
    }
    for (cell, reached) in contract::cells().into_iter().zip(cells) {
        assert!(reached || contract::DEEP_ONLY.contains(&cell), "no small world reaches {cell:?}");
    }
}

#[test]
fn every_seeded_bug_is_caught_by_its_property() {
    for bug in Bug::ALL {
        let report = QueueModel::new(Bounds::small_for(bug), Some(bug)).show_bug(2);
        let finding = report.finding(bug.caught_by()).expect("known property");
        assert_eq!(finding.status, Status::Violated, "{bug} is not caught by {}", bug.caught_by());
    }
}
