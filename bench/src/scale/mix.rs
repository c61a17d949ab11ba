//! What a store of `n` jobs holds in the scale benchmark, job by job: a store that has been
//! working for weeks, not a queue of `n` fresh jobs. Most jobs ended long ago (done, or dead
//! for each of the four reasons), the oldest tenth are pruned to tombstones, the newest tenth
//! are open (pending and due, scheduled for later, leased to a live worker), and three
//! cohorts of 1% each wait, scheduled, for deadlines that pass one hour apart after the
//! measuring starts: the backlogs the reaps are timed on. Five queues of unequal size and
//! ten priorities (most jobs at 0).
//!
//! Everything is a function of the job's number `i` and the size, so that the fill, the
//! measuring steps and the tests agree on what each job is without storing it: a job's
//! queue, priority and fate come from a hash of `i` (so neighbours differ), its region from
//! where `i` falls, and its times from the timeline below.
//!
//! **The timeline** (milliseconds since the Unix epoch, anchored at `w0`, the wall clock when
//! the fill starts, so that a command reading the real clock — `retryq serve` — sees the
//! store as a worker would): 30 days ending ten days before `w0` are cut into one window per
//! chunk ([`Mix::chunk_size`] jobs, each chunk a few transactions of the fill). In its window
//! a chunk's jobs are enqueued [`Mix::spacing`] apart, then claimed at one instant (`A`) and
//! reported one by one, each at its own instant, again [`Mix::spacing`] apart; the retried
//! ones are claimed again (`B`) and reported the same way; the cancelled ones are cancelled
//! at the window's end, each at its own instant. So no two jobs end at the same millisecond,
//! as in a store that worked through those weeks, and a bounded prune takes what it is
//! asked for. The open jobs fall due after the fill and before `w0` (pending), or 20 to 30
//! days after it (scheduled); the leases run 70 days; no open job's deadline comes within 90
//! days. The measuring steps run at the wall clock, but for the reaps, which run at the
//! stragglers' and the cohorts' deadlines, and the prunes after them.

/// A day and an hour, in milliseconds.
pub const DAY: u64 = 86_400_000;
/// See [`DAY`].
pub const HOUR: u64 = 3_600_000;

/// The queues, and out of 20 jobs how many each gets.
pub const QUEUES: [(&str, u64); 5] =
    [("default", 10), ("email", 4), ("webhooks", 3), ("sms", 2), ("reports", 1)];

/// The most jobs enqueued (and lived through) per transaction of the fill; a small store's
/// chunks are a hundredth of it, so that its oldest tenth is pruned as a large one's is.
pub const CHUNK: u64 = 10_000;

/// The backlog cohorts: each 1% of the store, overdue one hour after the one before.
pub const COHORTS: u8 = 3;

/// Where the regions end, in thousandths of the store: ended jobs below [`ENDED`], then the
/// cohorts (10 each), then the open jobs. Of the ended jobs, those below [`PRUNED`] are pruned.
pub const ENDED: u64 = 870;
/// See [`ENDED`].
pub const PRUNED: u64 = 100;
/// See [`ENDED`].
pub const OPEN: u64 = ENDED + 10 * COHORTS as u64;

/// The open region's first jobs, in [`COHORTS`] groups: a few overdue jobs whatever the
/// store's size, for a reap whose cost must not grow with the store.
pub const STRAGGLERS: u64 = 10;

/// How long the leases of the leased jobs run: past every cohort's deadline.
pub const LEASE_MS: u64 = 70 * DAY;

/// What becomes of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fate {
    /// `ok` on its first attempt.
    Done,
    /// `retryable`, then `ok` on its second attempt.
    DoneAfterRetry,
    /// `permanent` on its first attempt: dead(permanent).
    Permanent,
    /// Two attempts of two, both `retryable`: dead(exhausted).
    Exhausted,
    /// `retryable` on its first attempt, reported at its deadline: dead(deadline).
    Deadline,
    /// Scheduled, then cancelled by an operator: dead(cancelled).
    Cancelled,
    /// Open and due when the measuring starts.
    Pending,
    /// Open, due 20 to 30 days after the measuring starts.
    Scheduled,
    /// Leased to a live worker (a 70-day lease).
    Leased,
    /// Open, scheduled, in backlog cohort `k`: overdue at [`Mix::cohort_deadline`]`(k)`.
    Backlog(u8),
    /// Open, scheduled, one of the [`STRAGGLERS`] of group `k`: overdue at
    /// [`Mix::straggler_deadline`]`(k)`, before every cohort.
    Straggler(u8),
}

impl Fate {
    /// Whether the fill's first claim of the job's chunk takes it.
    pub fn claimed_first(self) -> bool {
        matches!(self, Fate::Done | Fate::DoneAfterRetry | Fate::Permanent | Fate::Exhausted | Fate::Deadline)
    }

    /// Whether the first attempt ends `retryable`, so the second claim takes it again.
    pub fn retried(self) -> bool {
        matches!(self, Fate::DoneAfterRetry | Fate::Exhausted)
    }

    /// Whether the job ends done or dead during the fill.
    pub fn ends(self) -> bool {
        self.claimed_first() || self == Fate::Cancelled
    }
}

/// One job as the fill enqueues it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// Its number, 0 … n − 1.
    pub i: u64,
    /// What becomes of it.
    pub fate: Fate,
    /// Its queue.
    pub queue: &'static str,
    /// Its priority, 0 for four jobs in five.
    pub priority: u64,
    /// When it is enqueued.
    pub enqueued_at: u64,
    /// When it is first due.
    pub not_before: u64,
    /// Its deadline.
    pub deadline: u64,
    /// Its attempt budget.
    pub max_attempts: u64,
}

/// The store of `n` jobs anchored at `w0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mix {
    /// Jobs in all, tombstones included.
    pub n: u64,
    /// The wall clock when the fill started.
    pub w0: u64,
}

impl Mix {
    /// The mix of `n` jobs (at least 1) whose fill starts at `w0`.
    pub fn new(n: u64, w0: u64) -> Mix {
        Mix { n: n.max(1), w0 }
    }

    /// When the first job is enqueued: 40 days before `w0`.
    pub fn first(&self) -> u64 {
        self.w0 - 40 * DAY
    }

    /// Jobs per chunk: a hundredth of the store, at most [`CHUNK`].
    pub fn chunk_size(&self) -> u64 {
        (self.n / 100).clamp(1, CHUNK)
    }

    /// How many chunks.
    pub fn chunks(&self) -> u64 {
        self.n.div_ceil(self.chunk_size())
    }

    /// The jobs of chunk `c`.
    pub fn chunk(&self, c: u64) -> std::ops::Range<u64> {
        let size = self.chunk_size();
        c * size..((c + 1) * size).min(self.n)
    }

    /// Each chunk's window: the 30 days shared out.
    pub fn window(&self) -> u64 {
        30 * DAY / self.chunks()
    }

    /// Milliseconds between two enqueues, or two reports, of a chunk: three rounds of the
    /// chunk's jobs fit its window, with 100 ms to spare for the cancels.
    pub fn spacing(&self) -> u64 {
        ((self.window() - 100) / (3 * self.chunk_size())).max(1)
    }

    /// Where the chunk of job `i` starts, and `i`'s place in it.
    fn place(&self, i: u64) -> (u64, u64) {
        let size = self.chunk_size();
        (self.first() + (i / size) * self.window(), i % size)
    }

    /// When job `i` is enqueued.
    pub fn enqueued_at(&self, i: u64) -> u64 {
        let (start, j) = self.place(i);
        start + j * self.spacing()
    }

    /// `A`, when the chunk of job `i` claims its first attempts: after its last enqueue.
    pub fn first_claim(&self, i: u64) -> u64 {
        self.place(i).0 + self.chunk_size() * self.spacing()
    }

    /// When job `i`'s first attempt is reported.
    pub fn first_report(&self, i: u64) -> u64 {
        self.first_claim(i) + 1 + self.place(i).1 * self.spacing()
    }

    /// `B`, when the chunk of job `i` claims its second attempts: after its last first report.
    pub fn second_claim(&self, i: u64) -> u64 {
        self.first_claim(i) + 1 + self.chunk_size() * self.spacing()
    }

    /// When job `i`'s second attempt is reported.
    pub fn second_report(&self, i: u64) -> u64 {
        self.second_claim(i) + 1 + self.place(i).1 * self.spacing()
    }

    /// When the chunk of job `i` starts its cancels (the `k`-th at one more millisecond
    /// each): after its last second report, before the next chunk's first enqueue.
    pub fn cancels(&self, i: u64) -> u64 {
        self.second_claim(i) + 1 + self.chunk_size() * self.spacing()
    }

    /// When the fill ends: the leases are taken then, and the prune runs then.
    pub fn fill_end(&self) -> u64 {
        self.first() + self.chunks() * self.window() + 1_000
    }

    /// Whether job `i` is pruned by the fill: an ended job of the oldest [`PRUNED`]
    /// thousandths of the chunks.
    pub fn pruned(&self, i: u64) -> bool {
        self.fate(i).ends() && i / self.chunk_size() < self.pruned_chunks()
    }

    fn pruned_chunks(&self) -> u64 {
        self.chunks() * PRUNED / 1000
    }

    /// Every job that ended before this is pruned in the fill: the start of the first chunk
    /// not pruned.
    pub fn pruned_before(&self) -> u64 {
        self.first() + self.pruned_chunks() * self.window()
    }

    /// The prune slices the measuring times: slice `k` (0, 1, 2) prunes what ended before
    /// this, 1% of the store each (whole chunks), the oldest that are left.
    pub fn prune_slice_before(&self, k: u64) -> u64 {
        self.pruned_before() + (k + 1) * (self.chunks() / 100).max(1) * self.window()
    }

    /// When backlog cohort `k` is overdue: its deadline.
    pub fn cohort_deadline(&self, k: u8) -> u64 {
        self.w0 + 30 * DAY + (u64::from(k) + 1) * HOUR
    }

    /// The first job of the open region.
    pub fn open_start(&self) -> u64 {
        (self.n * OPEN).div_ceil(1000)
    }

    /// When straggler group `k` is overdue: its deadline, before the first cohort's.
    pub fn straggler_deadline(&self, k: u8) -> u64 {
        self.w0 + 30 * DAY - (u64::from(COHORTS) - u64::from(k)) * HOUR / 4
    }

    /// When the measuring runs its prunes: after every reap.
    pub fn prune_now(&self) -> u64 {
        self.cohort_deadline(COHORTS) + HOUR
    }

    /// The fate of job `i`: its region, and within the ended region its hash.
    pub fn fate(&self, i: u64) -> Fate {
        let per_mille = i * 1000 / self.n;
        let r = hash(i);
        if per_mille < ENDED {
            match r % 1000 {
                0..850 => Fate::Done,
                850..900 => Fate::DoneAfterRetry,
                900..940 => Fate::Permanent,
                940..970 => Fate::Exhausted,
                970..998 => Fate::Deadline,
                _ => Fate::Cancelled,
            }
        } else if per_mille < OPEN {
            Fate::Backlog(((per_mille - ENDED) / 10) as u8)
        } else if i < self.open_start() + STRAGGLERS * u64::from(COHORTS) {
            Fate::Straggler(((i - self.open_start()) / STRAGGLERS) as u8)
        } else {
            match r % 10 {
                0..5 => Fate::Pending,
                5..9 => Fate::Scheduled,
                _ => Fate::Leased,
            }
        }
    }

    /// Job `i` in full.
    pub fn job(&self, i: u64) -> Planned {
        let r = hash(i);
        let fate = self.fate(i);
        let enqueued_at = self.enqueued_at(i);
        let open_deadline = self.w0 + 90 * DAY;
        let since_first = enqueued_at - self.first();
        let ended_deadline = self.place(i).0 + 7 * DAY;
        let (not_before, deadline) = match fate {
            Fate::Done | Fate::DoneAfterRetry | Fate::Permanent | Fate::Exhausted => {
                (enqueued_at, ended_deadline)
            }
            // Its first report comes at its deadline: the retry has no time left.
            Fate::Deadline => (enqueued_at, self.first_report(i)),
            Fate::Cancelled => (self.place(i).0 + DAY, ended_deadline),
            Fate::Pending => (self.fill_end() + 1 + since_first / 4, open_deadline),
            Fate::Scheduled => (self.w0 + 20 * DAY + since_first / 3, open_deadline),
            Fate::Leased => (self.fill_end() - 1, open_deadline),
            Fate::Backlog(k) => (self.w0 + 30 * DAY, self.cohort_deadline(k)),
            Fate::Straggler(k) => (self.w0 + 29 * DAY, self.straggler_deadline(k)),
        };
        Planned {
            i,
            fate,
            queue: queue_of(r >> 20),
            priority: priority_of(r >> 40),
            enqueued_at,
            not_before,
            deadline,
            max_attempts: if fate == Fate::Exhausted { 2 } else { 3 },
        }
    }

    /// How many jobs of each fate, and how many are pruned, counted job by job.
    pub fn expected(&self) -> Expected {
        let mut e = Expected::default();
        for i in 0..self.n {
            let fate = self.fate(i);
            let pruned = self.pruned(i);
            let slot = match fate {
                Fate::Done | Fate::DoneAfterRetry => &mut e.done,
                Fate::Permanent => &mut e.dead_permanent,
                Fate::Exhausted => &mut e.dead_exhausted,
                Fate::Deadline => &mut e.dead_deadline,
                Fate::Cancelled => &mut e.dead_cancelled,
                Fate::Pending | Fate::Backlog(_) | Fate::Straggler(_) | Fate::Scheduled => &mut e.pending,
                Fate::Leased => &mut e.leased,
            };
            if pruned {
                if matches!(fate, Fate::Done | Fate::DoneAfterRetry) {
                    e.pruned_done += 1;
                } else {
                    e.pruned_dead += 1;
                }
            } else {
                *slot += 1;
            }
            match fate {
                Fate::Backlog(k) => e.cohorts[usize::from(k)] += 1,
                Fate::Straggler(k) => e.stragglers[usize::from(k)] += 1,
                _ => {}
            }
        }
        e
    }

    /// The id of job `i`.
    pub fn id(i: u64) -> String {
        format!("job-{i:010}")
    }

    /// The number of the job an id names, if it is one of [`Mix::id`]'s.
    pub fn number(id: &str) -> Option<u64> {
        id.strip_prefix("job-")?.parse().ok()
    }

    /// What job `i` carries: an order of a few hundred bytes, as a webhook's would be.
    pub fn payload(i: u64) -> String {
        format!(
            r#"{{"order":"job-{i:010}","customer":{},"items":[{{"sku":"A-{}","qty":{}}}],"callback":"https://shop.example/hooks/orders","note":"scale benchmark"}}"#,
            hash(i) % 1_000_000,
            i % 997,
            1 + i % 5
        )
    }
}

/// What a store filled with a [`Mix`] holds, as `stats` counts it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Expected {
    /// Pending: due, scheduled and the cohorts.
    pub pending: u64,
    /// Leased, live.
    pub leased: u64,
    /// Done, not pruned.
    pub done: u64,
    /// Dead(exhausted), not pruned.
    pub dead_exhausted: u64,
    /// Dead(deadline), not pruned.
    pub dead_deadline: u64,
    /// Dead(permanent), not pruned.
    pub dead_permanent: u64,
    /// Dead(cancelled), not pruned.
    pub dead_cancelled: u64,
    /// Tombstones of done jobs.
    pub pruned_done: u64,
    /// Tombstones of dead jobs.
    pub pruned_dead: u64,
    /// Jobs in each backlog cohort (pending, among `pending`).
    pub cohorts: [u64; COHORTS as usize],
    /// Jobs in each group of stragglers (pending, among `pending`).
    pub stragglers: [u64; COHORTS as usize],
}

/// A queue by weight, from 20 bits of hash.
fn queue_of(r: u64) -> &'static str {
    let total: u64 = QUEUES.iter().map(|(_, w)| w).sum();
    let mut x = r % total;
    for (name, weight) in QUEUES {
        if x < weight {
            return name;
        }
        x -= weight;
    }
    QUEUES[0].0
}

/// Priority 0 for 80% of jobs, 1 to 9 for the rest.
fn priority_of(r: u64) -> u64 {
    let x = r % 100;
    if x < 80 { 0 } else { 1 + (x - 80) % 9 }
}

/// splitmix64: neighbouring numbers get unrelated bits.
fn hash(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    const W0: u64 = 1_800_000_000_000;

    #[test]
    fn the_regions_and_fates_have_their_shares() {
        let mix = Mix::new(100_000, W0);
        let e = mix.expected();
        assert_eq!(e.stragglers, [STRAGGLERS; 3]);
        let total = e.pending
            + e.leased
            + e.done
            + e.dead_exhausted
            + e.dead_deadline
            + e.dead_permanent
            + e.dead_cancelled
            + e.pruned_done
            + e.pruned_dead;
        assert_eq!(total, 100_000);
        assert_eq!(e.cohorts, [1_000; 3]);
        // About a tenth pruned, a tenth open beside the cohorts, a share of each dead reason.
        assert_eq!(e.pruned_done + e.pruned_dead, 10_000, "{e:?}");
        assert!((900..1_100).contains(&e.leased), "{e:?}");
        // 5% due, 4% scheduled, 3% in the cohorts.
        assert!((11_500..12_500).contains(&e.pending), "{e:?}");
        for dead in [e.dead_exhausted, e.dead_deadline, e.dead_permanent, e.dead_cancelled] {
            assert!(dead > 0, "{e:?}");
        }
    }

    #[test]
    fn every_job_keeps_its_times_in_order() {
        for n in [1_000, 25_000, 10_000_000] {
            let mix = Mix::new(n, W0);
            let last_of_chunk = |i: u64| (i / mix.chunk_size() + 1) * mix.chunk_size() - 1;
            // A chunk's life, cancels included, ends before the next chunk's first enqueue.
            assert!(mix.spacing() >= 1);
            assert!(mix.cancels(0) + mix.chunk_size() < mix.enqueued_at(mix.chunk_size()), "{n}");
            assert!(mix.fill_end() < W0);
            assert!(mix.cohort_deadline(COHORTS - 1) < mix.fill_end() + LEASE_MS);
            assert!(mix.straggler_deadline(COHORTS - 1) < mix.cohort_deadline(0));
            assert!(mix.straggler_deadline(0) > W0 + 29 * DAY);
            let sample: Vec<u64> = if n > 100_000 { (0..n).step_by(997).collect() } else { (0..n).collect() };
            for i in sample {
                let job = mix.job(i);
                assert!(job.enqueued_at <= job.not_before && job.not_before < job.deadline, "{job:?}");
                if job.fate.claimed_first() {
                    // Claimed after the chunk's last enqueue and before its deadline; the
                    // second claim after every first report.
                    assert!(mix.enqueued_at(last_of_chunk(i).min(n - 1)) < mix.first_claim(i), "{job:?}");
                    assert!(mix.first_claim(i) < job.deadline, "{job:?}");
                    assert!(mix.first_report(last_of_chunk(i)) < mix.second_claim(i), "{job:?}");
                    assert!(mix.second_report(i) < job.deadline || job.fate == Fate::Deadline, "{job:?}");
                }
                if !job.fate.ends() {
                    // Open jobs wait for the fill to end; pending ones are due before w0.
                    assert!(job.not_before >= mix.fill_end() - 1, "{job:?}");
                }
                if job.fate == Fate::Pending {
                    assert!(job.not_before <= W0, "{job:?}");
                }
                if job.fate == Fate::Cancelled {
                    assert!(job.not_before > mix.cancels(i) + mix.chunk_size(), "{job:?}");
                }
            }
        }
    }

    #[test]
    fn the_prune_slices_are_a_hundredth_each() {
        for n in [1_000, 100_000, 10_000_000] {
            let mix = Mix::new(n, W0);
            let chunk_of = |before: u64| (before - mix.first()) / mix.window();
            assert_eq!(chunk_of(mix.pruned_before()) * mix.chunk_size(), n / 10);
            for k in 0..3 {
                let slice = chunk_of(mix.prune_slice_before(k)) * mix.chunk_size();
                assert_eq!(slice, n / 10 + (k + 1) * n / 100, "{n}");
            }
        }
    }

    #[test]
    fn ids_name_their_numbers() {
        assert_eq!(Mix::id(42), "job-0000000042");
        assert_eq!(Mix::number(&Mix::id(9_999_999)), Some(9_999_999));
        assert_eq!(Mix::number("other-1"), None);
    }

    #[test]
    fn queues_and_priorities_are_spread() {
        let mix = Mix::new(20_000, W0);
        let mut by_queue = std::collections::BTreeMap::new();
        let mut zero = 0;
        for i in 0..20_000 {
            let job = mix.job(i);
            *by_queue.entry(job.queue).or_insert(0u64) += 1;
            zero += u64::from(job.priority == 0);
        }
        assert_eq!(by_queue.len(), QUEUES.len());
        assert!((9_000..11_000).contains(&by_queue["default"]), "{by_queue:?}");
        assert!((15_000..17_000).contains(&zero), "{zero}");
    }
}
