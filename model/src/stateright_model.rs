//! The queue model as a stateright [`Model`], for stateright's own checkers (the tests compare
//! counts with them) and for its Explorer (`retryq explore`).
//!
//! Layer: the top, above the world ([`crate::model`]), the properties ([`crate::properties`])
//! and traces ([`crate::trace`]). stateright's trait asks one type for both the steps and the
//! properties, so the trait is implemented here, where both are known, rather than in the
//! world, which must not know what is asked of it. Every method hands over to the world's own
//! ([`QueueModel::possible_actions`], [`QueueModel::next_world`], …).
//!
//! Actions and steps are shown as `retryq check`'s traces show them: workers and jobs by name
//! (`w1`, `job-1`), and a step as the operation it runs with the model's answer.

use stateright::{Model, Property};

use crate::checker::Kind;
use crate::ids::{job_name, worker_name};
use crate::model::{Action, QueueModel, World};
use crate::properties;
use crate::trace;

impl Model for QueueModel {
    type State = World;
    type Action = Action;

    fn init_states(&self) -> Vec<World> {
        self.initial_worlds()
    }

    fn actions(&self, world: &World, actions: &mut Vec<Action>) {
        self.possible_actions(world, actions);
    }

    fn next_state(&self, world: &World, action: Action) -> Option<World> {
        self.next_world(world, &action)
    }

    fn within_boundary(&self, world: &World) -> bool {
        self.within_bounds(world)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties::all()
            .into_iter()
            .map(|p| match p.kind {
                Kind::Always | Kind::Liveness => Property::always(p.name, p.holds),
                Kind::Sometimes => Property::sometimes(p.name, p.holds),
            })
            .collect()
    }

    fn format_action(&self, action: &Action) -> String {
        action.to_string()
    }

    /// The step's trace line (the operation and the model's answer), what each worker holds
    /// afterwards, then the whole world. When the model steps to representatives and the
    /// world reached had its workers renumbered, both holdings are shown: the step's, and the
    /// representative's, which is the state shown and explored further.
    fn format_step(&self, world: &World, action: Action) -> Option<String> {
        let line = trace::step_line(self, world, &action);
        let (reached, _) = self.step(world, &action)?;
        let next = self.next_world(world, &action)?;
        let mut text = trace::render(&[line]);
        text.push_str(&holdings(&reached));
        if next.workers != reached.workers {
            text.push_str("# as its representative, with workers renumbered:\n");
            text.push_str(&holdings(&next));
        }
        text.push_str(&format!("\n{next:#?}"));
        Some(text)
    }
}

/// What each worker holds in `world`, one comment line each, by name.
fn holdings(world: &World) -> String {
    let mut text = String::new();
    for (worker, held) in world.workers.iter().enumerate() {
        let holds = match held {
            Some(held) => format!(
                "holds {} (attempt {}, lease until {})",
                job_name(held.job),
                held.attempt,
                held.lease_until
            ),
            None => "holds nothing".into(),
        };
        text.push_str(&format!("# {} {holds}\n", worker_name(worker)));
    }
    text
}
