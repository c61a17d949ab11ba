//! The operations that read the store's clock instead of taking `now`, on every store: the
//! SQLite [`Queue`], `PgQueue`, and any [`Backend`] behind `dyn`. Each reads the clock once
//! and calls the contract's operation of the same name with that reading; no rule is
//! restated here.

use std::sync::Arc;

use crate::backend::Backend;
use crate::clock::{Clock, Jitter, store_now};
use crate::error::Result;
use crate::queue::enqueue::Enqueued;
use crate::queue::enqueue::ToEnqueue;
use crate::queue::inspect::Stats;
use crate::queue::store::Queue;

/// The clock-reading operations of one store type, with its own clock and jitter.
macro_rules! clocked {
    ($store:ty, $name:literal) => {
        impl $store {
            /// The clock this store's clock-reading operations use (by default the store's
            /// own, [`ServerClock`](crate::ServerClock)).
            pub fn clock(&self) -> Arc<dyn Clock> {
                Arc::clone(&self.sources.clock)
            }

            /// Makes `clock` the one this store's clock-reading operations use: a
            /// [`ManualClock`](crate::ManualClock) in a test, say. The operations that take
            /// `now` never read it.
            pub fn set_clock(&mut self, clock: Arc<dyn Clock>) {
                self.sources.clock = clock;
            }

            /// The jitter source a worker runtime draws each retry's jitter from (by default
            /// [`UniformJitter`](crate::UniformJitter)).
            pub fn jitter(&self) -> Arc<dyn Jitter> {
                Arc::clone(&self.sources.jitter)
            }

            /// Makes `jitter` the source of every retry's jitter a worker runtime records on
            /// this store: `Arc::new(|| 0.5)` in a test, say.
            pub fn set_jitter(&mut self, jitter: Arc<dyn Jitter>) {
                self.sources.jitter = jitter;
            }

            /// The store's clock now: what a clock-reading operation would be stamped with.
            pub fn now(&self) -> Result<u64> {
                store_now(self, &*self.sources.clock)
            }

            #[doc = concat!("[`", $name, "::cancel`] at the store's clock.")]
            pub fn cancel_now(&mut self, id: &str) -> Result<crate::Cancelled> {
                let now = self.now()?;
                self.cancel(id, now)
            }

            #[doc = concat!("[`", $name, "::stats`] at the store's clock.")]
            pub fn stats_now(&self) -> Result<Stats> {
                self.stats(self.now()?)
            }
        }
    };
}

clocked!(Queue, "Queue");
#[cfg(feature = "postgres")]
clocked!(crate::pg::PgQueue, "PgQueue");

impl dyn Backend + '_ {
    /// The store's clock now ([`Backend::clock`]).
    pub fn now(&self) -> Result<u64> {
        let clock = self.clock();
        store_now(self, &*clock)
    }

    /// [`Backend::enqueue`] of an [`Enqueue`](crate::Enqueue) resolved against the store's
    /// clock (or of a [`NewJob`](crate::NewJob) as given). A concrete store's own `enqueue`
    /// takes either; behind `dyn` that name is the trait's, which takes a `NewJob` only.
    pub fn enqueue_now(&mut self, job: &(impl ToEnqueue + ?Sized)) -> Result<Enqueued> {
        let clock = self.clock();
        let job = job.new_job(&mut || store_now(&*self, &*clock))?;
        Backend::enqueue(self, &job)
    }

    /// [`Backend::cancel`] at the store's clock.
    pub fn cancel_now(&mut self, id: &str) -> Result<crate::Cancelled> {
        let now = self.now()?;
        self.cancel(id, now)
    }

    /// [`Backend::stats`] at the store's clock.
    pub fn stats_now(&self) -> Result<Stats> {
        self.stats(self.now()?)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{DeadReason, Enqueue, ErrorKind, ManualClock, Queue, Status};

    use super::*;

    #[test]
    fn a_store_reads_the_clock_it_was_given() {
        let mut q = Queue::open_in_memory().expect("queue");
        let clock = ManualClock::new(10_000);
        q.set_clock(Arc::new(clock.clone()));
        q.enqueue(&Enqueue::new("a", "p").start_in(Duration::from_secs(1))).expect("enqueue");
        let job = q.get("a").expect("get").expect("job");
        assert_eq!((job.enqueued_at, job.available_at, job.deadline), (10_000, Some(11_000), 3_610_000));
        assert_eq!(q.stats_now().expect("stats").pending, 1);
        clock.advance(Duration::from_millis(500));
        q.cancel_now("a").expect("cancel");
        let history = q.history("a").expect("history");
        assert_eq!(
            history.last().map(|h| (h.to, h.reason, h.at)),
            Some((Status::Dead, Some(DeadReason::Cancelled), 10_500))
        );
        assert_eq!(q.cancel_now("a").map_err(|e| e.kind()), Err(ErrorKind::NotCancellable));
    }

    #[test]
    fn behind_the_trait_the_same() {
        let mut q = Queue::open_in_memory().expect("queue");
        q.set_clock(Arc::new(ManualClock::new(77)));
        let mut store: Box<dyn Backend> = Box::new(q);
        store.enqueue_now(&Enqueue::new("a", "p")).expect("enqueue");
        assert_eq!(store.get("a").expect("get").expect("job").enqueued_at, 77);
        assert_eq!(store.now().expect("now"), 77);
        assert_eq!(store.stats_now().expect("stats").pending, 1);
        store.cancel_now("a").expect("cancel");
    }

    #[test]
    fn a_clock_out_of_range_is_said_to_be_the_clock() {
        let mut q = Queue::open_in_memory().expect("queue");
        q.set_clock(Arc::new(ManualClock::new(u64::MAX)));
        let err = q.enqueue(&Enqueue::new("a", "p")).unwrap_err();
        assert!(err.to_string().contains("clock"), "{err}");
        assert_eq!(q.get("a").expect("get"), None);
    }
}
