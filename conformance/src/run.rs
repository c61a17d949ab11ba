//! Running many traces: the saved regressions first, then generated ones from both
//! generators, stopping at the first divergence with its minimal trace.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use quickcheck::{Arbitrary, Gen};
use retryq_model::reference::Store;

use crate::compare::{Comparison, Divergence, compare_with};
use crate::generate::{Abstract, RandomTrace, abstract_trace, materialize};
use crate::pg::Databases;
use crate::regress::{self, Verdict};
use crate::trace::{Step, Trace};
use crate::{ReplayError, Side};

/// Where each trace's database lives.
#[derive(Clone, Debug)]
pub enum Storage {
    /// A fresh temporary SQLite file per trace, with real restarts: what production runs.
    File,
    /// A fresh in-memory SQLite database per trace: faster; `restart` keeps the connection.
    Memory,
    /// An empty PostgreSQL database per trace on one server, with real restarts (a new
    /// connection).
    Postgres(Arc<Databases>),
}

impl Storage {
    /// A fresh database of this kind for one trace.
    pub fn open(&self) -> Result<Side, ReplayError> {
        match self {
            Storage::File => Side::temporary(),
            Storage::Memory => Side::in_memory(),
            Storage::Postgres(databases) => Side::lent(databases.lend()?),
        }
    }

    /// How it is named in a report: `file`, `in-memory` or `postgres`.
    pub fn name(&self) -> &'static str {
        match self {
            Storage::File => "file",
            Storage::Memory => "in-memory",
            Storage::Postgres(_) => "postgres",
        }
    }
}

/// A divergence with the (shrunk) trace that shows it.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// Which generator found it: `proptest`, `quickcheck`, `regression`, `exhaustive`.
    pub source: String,
    /// The trace, shrunk as far as the generator could.
    pub trace: Trace,
    /// Where the readings first disagree on it.
    pub divergence: Divergence,
}

/// What a run went through.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Traces run.
    pub traces: u64,
    /// Steps run, over all traces.
    pub steps: u64,
    /// The first divergence found, if any: a run stops at it.
    pub mismatch: Option<Mismatch>,
    /// Seconds spent.
    pub seconds: f64,
}

impl Tally {
    /// Throughput of the harness: both readings, every probe.
    pub fn traces_per_second(&self) -> f64 {
        if self.seconds > 0.0 { self.traces as f64 / self.seconds } else { 0.0 }
    }

    fn absorb(&mut self, other: Tally) {
        self.traces += other.traces;
        self.steps += other.steps;
        self.seconds += other.seconds;
        if self.mismatch.is_none() {
            self.mismatch = other.mismatch;
        }
    }
}

/// The two readings a run compares: where the store keeps each trace's database, and the
/// reference model each trace starts from (a fresh [`Store`], unless a test seeds a bug into
/// it to show that the harness notices).
#[derive(Clone, Debug)]
pub struct Setup {
    /// Where the store keeps each trace's database.
    pub storage: Storage,
    /// The model store each trace starts from.
    pub model: Store,
}

impl Setup {
    /// The store of `storage` against a fresh reference store.
    pub fn new(storage: Storage) -> Setup {
        Setup { storage, model: Store::new() }
    }
}

/// Runs one trace on a fresh database; `Some` if the readings diverge.
pub fn check_trace(trace: &Trace, setup: &Setup) -> Result<Option<Divergence>, ReplayError> {
    Ok(match compare_with(trace, &mut setup.storage.open()?, setup.model.clone())? {
        Comparison::Agree(_) => None,
        Comparison::Diverge(d) => Some(d),
    })
}

/// Every saved case in `dir`, against both readings (and against its expected output).
pub fn regressions(dir: &Path, setup: &Setup) -> Result<Tally, ReplayError> {
    let start = Instant::now();
    let mut tally = Tally::default();
    let cases = regress::discover(dir)
        .map_err(|e| std::io::Error::new(e.kind(), format!("regressions in {}: {e}", dir.display())))?;
    for case in cases {
        let text = std::fs::read_to_string(&case.trace)?;
        let trace = Trace::from_jsonl(&text);
        let mut side = setup.storage.open()?;
        tally.traces += 1;
        tally.steps += trace.len() as u64;
        let found = match check_trace(&trace, setup)? {
            Some(divergence) => Some(divergence),
            None => match regress::check_on(&case, &mut side)? {
                Verdict::Pass { .. } => None,
                Verdict::Mismatch { line, expected, actual } => Some(Divergence {
                    step: line.saturating_sub(1),
                    line: format!("(output line {line} of {})", case.name),
                    probe: format!("{}.expected.jsonl", case.name),
                    kind: side.kind(),
                    store: actual,
                    model: expected,
                }),
            },
        };
        if let Some(divergence) = found {
            tally.mismatch =
                Some(Mismatch { source: format!("regression {}", case.name), trace, divergence });
            break;
        }
    }
    tally.seconds = start.elapsed().as_secs_f64();
    Ok(tally)
}

/// Runs `traces` on `threads` threads and returns the divergence of the lowest-numbered
/// trace that diverges, if any, with the tally of the traces up to it. Deterministic
/// whatever the scheduling: every trace below the first divergence is checked.
pub(crate) fn run_parallel(
    traces: &[Trace],
    setup: &Setup,
    threads: usize,
    progress: &dyn Fn(),
) -> Result<(Tally, Option<(usize, Divergence)>), ReplayError> {
    let next = AtomicUsize::new(0);
    let first: Mutex<Option<(usize, Divergence)>> = Mutex::new(None);
    let fatal: Mutex<Option<ReplayError>> = Mutex::new(None);
    let done = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let beyond =
                        first.lock().map(|f| f.as_ref().is_some_and(|(at, _)| *at < i)).unwrap_or(true);
                    if i >= traces.len() || beyond || fatal.lock().map(|f| f.is_some()).unwrap_or(true) {
                        return;
                    }
                    match check_trace(&traces[i], setup) {
                        Ok(None) => {}
                        Ok(Some(divergence)) => {
                            if let Ok(mut first) = first.lock()
                                && first.as_ref().is_none_or(|(at, _)| i < *at)
                            {
                                *first = Some((i, divergence));
                            }
                        }
                        Err(e) => {
                            if let Ok(mut fatal) = fatal.lock() {
                                fatal.get_or_insert(e);
                            }
                        }
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        // Progress is reported from this thread, which owns `progress`.
        let mut reported = 0;
        while next.load(Ordering::Relaxed) < traces.len() + threads.max(1) && reported < traces.len() {
            let now = done.load(Ordering::Relaxed);
            for _ in reported..now {
                progress();
            }
            reported = now;
            if first.lock().map(|f| f.is_some()).unwrap_or(true)
                || fatal.lock().map(|f| f.is_some()).unwrap_or(true)
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    });
    if let Some(e) = fatal.into_inner().ok().flatten() {
        return Err(e);
    }
    let found = first.into_inner().ok().flatten();
    let checked = found.as_ref().map_or(traces.len(), |(i, _)| i + 1);
    let tally = Tally {
        traces: checked as u64,
        steps: traces[..checked].iter().map(|t| t.len() as u64).sum(),
        ..Tally::default()
    };
    Ok((tally, found))
}

/// How many traces to run at once: a file database spends its time waiting on fsync, and a
/// PostgreSQL client on the server's answers, so more threads than cores pay off there.
pub fn default_threads(storage: impl std::borrow::Borrow<Storage>) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    match storage.borrow() {
        Storage::File => cores * 4,
        Storage::Memory => cores,
        Storage::Postgres(_) => cores * 2,
    }
}

/// `cases` traces from the proptest generator, seeded; a divergence is shrunk to a minimal
/// trace. `progress` is called after each trace.
pub fn proptest_traces(
    cases: u32,
    seed: u64,
    max_len: usize,
    setup: &Setup,
    threads: usize,
    progress: &dyn Fn(),
) -> Result<Tally, ReplayError> {
    let start = Instant::now();
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(seed)),
    );
    let strategy = abstract_trace(max_len);
    let mut trees = Vec::with_capacity(cases as usize);
    for _ in 0..cases {
        trees.push(
            strategy
                .new_tree(&mut runner)
                .map_err(|why| ReplayError::Io(std::io::Error::other(format!("generator: {why}"))))?,
        );
    }
    let traces: Vec<Trace> = trees.iter().map(|tree| materialize(&tree.current())).collect();
    let (mut tally, found) = run_parallel(&traces, setup, threads, progress)?;
    if let Some((i, divergence)) = found {
        let (trace, divergence) = shrink_proptest(&mut trees[i], divergence, setup)?;
        // Then concrete steps: what the abstract shrink kept only because removing an
        // abstract step moved the times of the steps after it.
        let (trace, divergence) = shrink_quickcheck(trace, divergence, setup)?;
        tally.mismatch = Some(Mismatch { source: "proptest".into(), trace, divergence });
    }
    tally.seconds = start.elapsed().as_secs_f64();
    Ok(tally)
}

/// proptest's shrinking loop: simplify while the trace still diverges, complicate back when
/// a simplification made it pass, until neither moves.
fn shrink_proptest(
    tree: &mut impl ValueTree<Value = Vec<Abstract>>,
    divergence: Divergence,
    setup: &Setup,
) -> Result<(Trace, Divergence), ReplayError> {
    let mut best = (materialize(&tree.current()), divergence);
    if !tree.simplify() {
        return Ok(best);
    }
    for _ in 0..4096 {
        let trace = materialize(&tree.current());
        let moved = match check_trace(&trace, setup)? {
            Some(divergence) => {
                best = (trace, divergence);
                tree.simplify()
            }
            None => tree.complicate(),
        };
        if !moved {
            break;
        }
    }
    Ok(best)
}

/// `cases` traces from the quickcheck generator, seeded; a divergence is shrunk greedily.
pub fn quickcheck_traces(
    cases: u64,
    seed: u64,
    size: usize,
    setup: &Setup,
    threads: usize,
    progress: &dyn Fn(),
) -> Result<Tally, ReplayError> {
    let start = Instant::now();
    let traces: Vec<Trace> = (0..cases)
        .map(|case| RandomTrace::arbitrary(&mut Gen::from_size_and_seed(size, seed.wrapping_add(case))).0)
        .collect();
    let (mut tally, found) = run_parallel(&traces, setup, threads, progress)?;
    if let Some((i, divergence)) = found {
        let (trace, divergence) = shrink_quickcheck(traces[i].clone(), divergence, setup)?;
        tally.mismatch = Some(Mismatch { source: "quickcheck".into(), trace, divergence });
    }
    tally.seconds = start.elapsed().as_secs_f64();
    Ok(tally)
}

/// Greedy shrinking, as quickcheck does it: take the first smaller trace that still
/// diverges, until none does.
fn shrink_quickcheck(
    trace: Trace,
    divergence: Divergence,
    setup: &Setup,
) -> Result<(Trace, Divergence), ReplayError> {
    let (mut trace, mut divergence) = (trace, divergence);
    'outer: loop {
        for smaller in RandomTrace(trace.clone()).shrink() {
            if let Some(d) = check_trace(&smaller.0, setup)? {
                trace = smaller.0;
                divergence = d;
                continue 'outer;
            }
        }
        return Ok((trace, divergence));
    }
}

/// Saves a mismatch as a regression case under `dir`: the trace up to the divergent step,
/// plus the probe that showed the difference as an explicit step, and the model's output
/// as the expected file. Returns the trace file's path.
pub fn save_regression(
    mismatch: &Mismatch,
    dir: &Path,
    name: &str,
    setup: &Setup,
) -> std::io::Result<PathBuf> {
    let mut steps: Vec<Step> =
        mismatch.trace.steps.iter().take(mismatch.divergence.step + 1).cloned().collect();
    if let crate::parse::Line::Op(probe) = crate::parse::parse_line(&mismatch.divergence.probe) {
        steps.push(Step::Op(probe));
    }
    let trace = Trace { steps };
    let mut model = setup.model.clone();
    let mut expected = String::new();
    for step in &trace.steps {
        let response = match crate::parse::parse_line(&step.to_line()) {
            crate::parse::Line::Op(op) => model.step(&op),
            crate::parse::Line::Invalid(detail) => retryq_model::Response::invalid(detail),
            crate::parse::Line::Skip => continue,
        };
        expected.push_str(&regress::expected_line(&response));
        expected.push('\n');
    }
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{name}.jsonl"));
    let header = format!(
        "Found by {} and shrunk; the expected output is the reference model's.\n{}",
        mismatch.source, mismatch.divergence
    );
    std::fs::write(&path, trace.to_jsonl(&header))?;
    std::fs::write(dir.join(format!("{name}.expected.jsonl")), expected)?;
    Ok(path)
}

/// Runs the whole random suite: proptest then quickcheck, stopping at the first mismatch.
pub fn random(
    cases: u32,
    seed: u64,
    max_len: usize,
    setup: &Setup,
    threads: usize,
    progress: &dyn Fn(),
) -> Result<Tally, ReplayError> {
    let quick = u64::from(cases / 3);
    let mut tally = proptest_traces(cases - cases / 3, seed, max_len, setup, threads, progress)?;
    if tally.mismatch.is_none() {
        tally.absorb(quickcheck_traces(quick, seed, max_len, setup, threads, progress)?);
    }
    Ok(tally)
}

fn seed_bytes(seed: u64) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&seed.wrapping_add(i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes());
    }
    bytes
}
