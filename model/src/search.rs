//! The queue model searched by this crate's checker: every property of
//! [`crate::properties::all`] judged on every step, or the search stopped once a seeded bug's
//! own property is decided.
//!
//! Layer: the top, above the generic checker ([`crate::checker`]), the world
//! ([`crate::model`]), the properties, and which property catches which bug
//! ([`crate::catches`]). Running a search is what ties them together, so it lives above all of
//! them and none of them reaches it.

use std::borrow::Cow;

use crate::bug::Bug;
use crate::checker::{self, CheckReport, Options, Probed};
use crate::model::{Action, QueueModel, World};
use crate::probes::Set;
use crate::properties;
use crate::{choices, contract};

impl Probed for QueueModel {
    fn probe_sets(&self) -> usize {
        Set::ALL.len()
    }

    fn probe_class(&self, set: usize, world: &World) -> u64 {
        Set::ALL.get(set).map_or(0, |&set| QueueModel::probe_class(self, set, world))
    }

    fn probe_actions(&self, set: usize, world: &World, actions: &mut Vec<Action>) {
        if let Some(&set) = Set::ALL.get(set) {
            QueueModel::probe_actions(self, set, world, actions);
        }
    }

    fn cell_count(&self) -> usize {
        cell_count()
    }

    fn cells_of(&self, world: &World, reached: &mut dyn FnMut(usize)) {
        world.reached.positions().for_each(reached);
    }
}

/// How many cells the contract's tables hold: operation × status × answer, then operation ×
/// field × class of argument, then the relations of its choices ([`crate::choices`]).
pub fn cell_count() -> usize {
    static COUNT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *COUNT.get_or_init(|| contract::cells().len() + contract::arg_cells().len() + choices::choices().len())
}

impl QueueModel {
    /// Checks every property of [`properties::all`] on every reachable world, with `threads`
    /// threads, reducing by worker symmetry if `symmetry`.
    pub fn check(&self, threads: usize, symmetry: bool) -> CheckReport<World, Action> {
        self.check_with(threads, symmetry, &|_| {}, None)
    }

    /// Shows this model's seeded bug: searches until the property that names it
    /// ([`Bug::caught_by`]) is decided, leaving the rest unchecked. Without a bug, [`Self::check`].
    pub fn show_bug(&self, threads: usize) -> CheckReport<World, Action> {
        self.check_with(threads, true, &|_| {}, self.bug.map(Bug::caught_by))
    }

    /// [`Self::check`], calling `progress` after each level of the search, and stopping after
    /// the level where `until` is decided, if given.
    pub fn check_with(
        &self,
        threads: usize,
        symmetry: bool,
        progress: &(dyn Fn(&checker::Progress) + Sync),
        until: Option<&'static str>,
    ) -> CheckReport<World, Action> {
        let symmetry = if symmetry { Some(World::canonical as fn(&World) -> Cow<'_, World>) } else { None };
        checker::check(self, &properties::all(), &Options { threads, symmetry, progress, until })
    }
}
