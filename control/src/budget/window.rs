//! The sliding window both windowed budgets count in: a ring of slots, each covering
//! `slot_ms` of time, as tower's `TpsBucket` and Finagle's `WindowedAdder` keep them.
//!
//! Time is the caller's `now`, not a clock read here. A slot is cleared when time moves past
//! it by the whole ring; a `now` earlier than the newest slot seen counts in the newest slot
//! (a clock that steps back neither clears nor resurrects anything).

/// How many slots a window is cut into (tower and Finagle use 10).
pub(crate) const SLOTS: u64 = 10;

#[derive(Debug, Clone)]
pub(crate) struct Window<T> {
    slot_ms: u64,
    slots: Vec<T>,
    /// The index (`now / slot_ms`) of the newest slot.
    newest: u64,
}

impl<T: Copy + Default> Window<T> {
    /// A window of `SLOTS` slots of `slot_ms` (at least 1) each.
    pub(crate) fn new(slot_ms: u64) -> Self {
        Window { slot_ms: slot_ms.max(1), slots: vec![T::default(); SLOTS as usize], newest: 0 }
    }

    /// Move to `now_ms`, clearing every slot that has left the window, and return the slot
    /// `now_ms` counts in.
    pub(crate) fn at(&mut self, now_ms: u64) -> &mut T {
        let index = now_ms / self.slot_ms;
        if index > self.newest {
            let cleared = (index - self.newest).min(SLOTS);
            for k in 1..=cleared {
                let slot = self.newest.wrapping_add(k) % SLOTS;
                self.slots[slot as usize] = T::default();
            }
            self.newest = index;
        }
        &mut self.slots[(self.newest % SLOTS) as usize]
    }

    /// Every slot still in the window (after [`Window::at`] has moved it).
    pub(crate) fn slots(&self) -> impl Iterator<Item = &T> {
        self.slots.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_leaves_after_the_whole_ring_has_passed() {
        let mut w: Window<u32> = Window::new(100);
        *w.at(50) += 1;
        *w.at(999) += 0;
        assert_eq!(w.slots().sum::<u32>(), 1);
        *w.at(1000) += 0;
        assert_eq!(w.slots().sum::<u32>(), 0);
    }

    #[test]
    fn an_earlier_now_counts_in_the_newest_slot() {
        let mut w: Window<u32> = Window::new(100);
        *w.at(500) += 1;
        *w.at(20) += 1;
        *w.at(1499) += 0;
        assert_eq!(w.slots().sum::<u32>(), 2);
        *w.at(1500) += 0;
        assert_eq!(w.slots().sum::<u32>(), 0);
    }
}
