//! `retryq check` as one test: the SPEC's store keeps every property and shows every example,
//! at bounds small enough to run once per mutant. This is the test cargo-mutants runs against
//! each mutant of the reference store and of the model's delay (`.cargo/mutants-model.toml`):
//! a mutant that survives it is a change to the store the model check cannot see.

use retryq_model::checker::{Kind, Status};
use retryq_model::model::{Bounds, QueueModel};
use retryq_model::properties::names;

/// One job, two workers, a clock up to 5, both settings, the hostile world; then two jobs and
/// one worker up to 4, for what only two jobs show (claim's choice between them).
#[test]
fn the_model_check_passes() {
    let two_job_examples = [names::TIE_BROKEN, names::EARLIER_DUE_FIRST];
    let two_jobs = Bounds { jobs: 2, workers: 1, horizon: 4, ..Bounds::default() };
    for bounds in [Bounds::small(), two_jobs] {
        let report = QueueModel::new(bounds.clone(), None).check(2, true);
        assert_eq!(report.outside_boundary, 0, "{bounds}: the claim bound cut the SPEC's store");
        for finding in &report.findings {
            let two_job_example = two_job_examples.contains(&finding.name);
            let expected = match finding.kind {
                // One job cannot show these; one worker cannot show a stale or wrong-owner
                // completion: each bound is asked only for what it can show.
                Kind::Sometimes if bounds.jobs == 1 && two_job_example => continue,
                Kind::Sometimes if bounds.jobs == 2 && !two_job_example => continue,
                Kind::Sometimes => Status::Found,
                Kind::Always | Kind::Liveness => Status::Holds,
            };
            assert_eq!(finding.status, expected, "{bounds}: {}", finding.name);
        }
    }
}
