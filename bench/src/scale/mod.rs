//! Every operation at every size (`retryq bench --scale`): a store filled with 10^3, 10^5,
//! 10^6 and 10^7 jobs of a working store's mix (`mix.rs`), on SQLite (a durable file: WAL,
//! `synchronous = FULL`) and on PostgreSQL (the benchmark's throwaway cluster with fsync on,
//! or `--pg-url`), and each operation's cost measured at each size: claim, complete,
//! enqueue, a bulk import, a reap of a backlog of 1% of the store, `stats`, `list`, the
//! dashboard's pages and `/metrics` over HTTP, prune, audit, the upgrade from schema 4 (the
//! store itself, its indexes put back as schema 4 had them), and on SQLite a schema 3 file's
//! audit, its upgrade and the audit after it. The goal each row is held to: the largest
//! size's cost within twice the smallest's — per operation, or per job touched for the calls
//! that touch many (reap, prune, audit, upgrade, import), which makes them linear in what
//! they touch.
//!
//! Each size is a fresh store, filled (`fill.rs` on SQLite, `pg_fill.rs` on PostgreSQL),
//! measured step by step — each step in a child process with a time and a memory limit
//! (`step.rs`), the dashboard through `retryq serve` (`dashboard.rs`) — and removed before the
//! next. The steps that read come first, at the wall clock; then the writes at the wall clock;
//! then the reaps at the cohorts' deadlines (weeks ahead: the store's `now` is the caller's),
//! then the prunes after them, the upgrade from schema 4, and last the imports, which add
//! more jobs than a small store holds.

pub mod dashboard;
pub mod fill;
pub mod mix;
pub mod old;
pub mod pg_fill;
pub mod report;
pub mod step;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use retryq::{DeadReason, Queue, Status};
use retryq_pgtest::{Cluster, Unavailable};

pub use report::{AtSize, Op, Per, Pieces, Row, ScaleReport, StoreScale, render};

use crate::throughput::{Launcher, now_ms};
use crate::{BenchError, Config, median};
use mix::{COHORTS, Fate, Mix, QUEUES};
use step::{Limits, StepOp, StepOutput, StepSpec};

/// The sizes of a full run.
pub const SIZES: [u64; 4] = [1_000, 100_000, 1_000_000, 10_000_000];
/// The sizes of a `--quick` run: seconds, not hours (CI runs it).
pub const QUICK_SIZES: [u64; 2] = [1_000, 2_000];

/// A store the scale benchmark measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// A SQLite file.
    Sqlite,
    /// A PostgreSQL database.
    Postgres,
}

/// What `--scale` is told beside [`Config`].
#[derive(Clone, Debug)]
pub struct Options {
    /// The sizes, in jobs; `None`: [`SIZES`] ([`QUICK_SIZES`] with `--quick`).
    pub sizes: Option<Vec<u64>>,
    /// The stores, in order.
    pub stores: Vec<Store>,
    /// How to start a step's child: the `retryq` binary and its hidden subcommand.
    pub step: Launcher,
    /// The `retryq` binary, for `serve` and `enqueue --file`.
    pub program: PathBuf,
    /// A step not done after this long is stopped; `None`: 15 minutes (2 with `--quick`).
    pub step_timeout: Option<Duration>,
}

/// Jobs each bounded prune takes (`prune_at_most`, as `work --retain` runs it).
const PRUNE_SMALL: u64 = 100;

/// A step whose memory passes this is stopped: the machine is shared.
const MEMORY_LIMIT: u64 = 8 << 30;

/// Runs the scale benchmark.
pub fn run(config: &Config, options: &Options) -> Result<ScaleReport, BenchError> {
    let load_before = crate::load_average();
    let mut sizes = options
        .sizes
        .clone()
        .unwrap_or_else(|| if config.quick { QUICK_SIZES.to_vec() } else { SIZES.to_vec() });
    // Smallest first: the ratio is the largest size's over the smallest's.
    sizes.sort_unstable();
    sizes.dedup();
    let dir = config.scratch_dir()?;
    let progress = config.stamped(Instant::now());
    let step_timeout =
        options.step_timeout.unwrap_or(Duration::from_secs(if config.quick { 120 } else { 900 }));
    let bench = Bench {
        options,
        reps: if config.quick { 5 } else { 15 },
        heavy_runs: if config.quick { 1 } else { 3 },
        import_jobs: if config.quick { 1_000 } else { 100_000 },
        import_lines: if config.quick { 500 } else { 10_000 },
        limits: Limits { time: step_timeout, memory_bytes: MEMORY_LIMIT },
        dir: dir.path(),
        progress: &progress,
    };
    let mut stores = Vec::new();
    for &store in &options.stores {
        stores.push(match store {
            Store::Sqlite => bench.sqlite(&sizes)?,
            Store::Postgres => bench.postgres(&config.postgres, &sizes)?,
        });
    }
    Ok(ScaleReport {
        quick: config.quick,
        sizes,
        reps: bench.reps,
        step_timeout_s: step_timeout.as_secs_f64(),
        nproc: std::thread::available_parallelism().map_or(0, |n| n.get()),
        disk: crate::disk_of(dir.path()),
        load_before,
        load_after: crate::load_average(),
        stores,
    })
}

/// One run's settings and where it works.
struct Bench<'a> {
    options: &'a Options,
    /// Timed runs of a cheap operation.
    reps: usize,
    /// Runs of an import and of an audit (reaps and prunes always make 3: the cohorts and
    /// slices).
    heavy_runs: usize,
    /// Jobs of each import through `enqueue_bulk`.
    import_jobs: u64,
    /// Lines of each `enqueue --file`'s file.
    import_lines: u64,
    limits: Limits,
    dir: &'a Path,
    progress: &'a dyn Fn(&str),
}

impl Bench<'_> {
    /// Every size on SQLite files, each removed before the next is filled.
    fn sqlite(&self, sizes: &[u64]) -> Result<StoreScale, BenchError> {
        let mut at = Vec::new();
        for &n in sizes {
            let started = Instant::now();
            let path = self.dir.join(format!("scale-{n}.db"));
            (self.progress)(&format!("scale: SQLite, {n} jobs: filling"));
            let mix = Mix::new(n, now_ms()?);
            let filled = {
                let mut queue = Queue::open(&path)?;
                let filled = fill::fill(&mut queue, &mix, self.progress)?;
                fill::check(&queue, &mix)?;
                filled
            };
            let bytes = sqlite_bytes(&path)?;
            let db = path.to_string_lossy().into_owned();
            let measured = self.measure(&db, &mix, Store::Sqlite, &|| Ok(()));
            crate::throughput::remove_db(&path);
            let mut ops = measured?;
            let (older, old_schema_bytes) = self.older_schema(&mix)?;
            ops.extend(older);
            at.push(AtSize {
                jobs: n,
                stored: mix.expected(),
                fill: filled,
                bytes,
                old_schema_bytes: Some(old_schema_bytes),
                seconds: started.elapsed().as_secs_f64(),
                ops,
            });
        }
        let table = report::rows(&at);
        Ok(StoreScale {
            store: "sqlite".into(),
            available: true,
            note: "a file: WAL, synchronous=FULL".into(),
            at,
            table,
        })
    }

    /// Every size on a PostgreSQL database of its own, dropped before the next is filled.
    fn postgres(&self, server: &crate::postgres::Server, sizes: &[u64]) -> Result<StoreScale, BenchError> {
        let (cluster, note) = match server {
            crate::postgres::Server::At(url) => {
                (Cluster::existing(url), "the server named by --pg-url".to_owned())
            }
            crate::postgres::Server::Own => match Cluster::start(true) {
                Ok(cluster) => {
                    (cluster, "a throwaway local cluster, fsync on, synchronous_commit on".to_owned())
                }
                Err(why @ Unavailable::NotInstalled) => {
                    return Ok(StoreScale {
                        store: "postgres".into(),
                        available: false,
                        note: format!("unavailable: {why}"),
                        at: Vec::new(),
                        table: Vec::new(),
                    });
                }
                Err(e) => return Err(BenchError::Setup(format!("PostgreSQL: {e}"))),
            },
        };
        let mut at = Vec::new();
        for &n in sizes {
            let started = Instant::now();
            let url = cluster.create_database().map_err(BenchError::Setup)?;
            (self.progress)(&format!("scale: PostgreSQL, {n} jobs: filling"));
            let mix = Mix::new(n, now_ms()?);
            let measured = (|| {
                let filled = pg_fill::fill(&url, &mix, self.progress)?;
                let bytes = pg_bytes(&url)?;
                let ops = self.measure(&url, &mix, Store::Postgres, &|| stop_sessions(&url))?;
                Ok::<_, BenchError>((filled, bytes, ops))
            })();
            cluster.drop_database(&url).map_err(BenchError::Setup)?;
            let (fill, bytes, ops) = measured?;
            at.push(AtSize {
                jobs: n,
                stored: mix.expected(),
                fill,
                bytes,
                old_schema_bytes: None,
                seconds: started.elapsed().as_secs_f64(),
                ops,
            });
        }
        let table = report::rows(&at);
        Ok(StoreScale { store: "postgres".into(), available: true, note, at, table })
    }

    /// Every step on the filled store `db`: reads, then writes at the wall clock, then the
    /// reaps and the prunes, the upgrade from schema 4, the imports. `stopped` runs after a
    /// step was killed (PostgreSQL: its session may still be running its statement).
    fn measure(
        &self,
        db: &str,
        mix: &Mix,
        store: Store,
        stopped: &dyn Fn() -> Result<(), BenchError>,
    ) -> Result<Vec<Op>, BenchError> {
        let progress = self.progress;
        let mut ops = Vec::new();
        progress("  stats, list");
        ops.extend(self.step(db, StepOp::Stats, self.reps, &["stats"], stopped)?);
        for (name, status, reason) in [
            ("list --status pending", Status::Pending, None),
            ("list --status done", Status::Done, None),
            ("list --reason cancelled", Status::Dead, Some(DeadReason::Cancelled)),
        ] {
            let op = StepOp::List {
                status: status.to_string(),
                reason: reason.map(|r| r.to_string()),
                limit: 100,
            };
            ops.extend(self.step(db, op, self.reps, &[name], stopped)?);
        }
        progress("  the dashboard, over HTTP");
        ops.extend(self.dashboard(db, mix));
        progress("  audit");
        ops.extend(self.step(
            db,
            StepOp::Audit { read_only: false },
            self.heavy_runs,
            &["audit"],
            stopped,
        )?);
        progress("  claim, complete, enqueue");
        let op = StepOp::ClaimComplete { queue: QUEUES[0].0.to_owned() };
        ops.extend(self.step(db, op, self.reps, &["claim", "complete"], stopped)?);
        let op = StepOp::Enqueue { prefix: format!("enqueued-{}", mix.n) };
        ops.extend(self.step(db, op, self.reps, &["enqueue"], stopped)?);
        progress("  reaps of 10 overdue, then of 1% overdue");
        let expected = mix.expected();
        let reaps = (0..COHORTS).map(|k| {
            (StepOp::Reap { now: mix.straggler_deadline(k) }, Some(expected.stragglers[usize::from(k)]))
        });
        ops.push(self.runs(db, "reap of 10 overdue", Per::Operation, reaps, stopped)?);
        let reaps = (0..COHORTS)
            .map(|k| (StepOp::Reap { now: mix.cohort_deadline(k) }, Some(expected.cohorts[usize::from(k)])));
        ops.push(self.runs(db, "reap of 1% overdue", Per::Job, reaps, stopped)?);
        progress("  prunes of 1%, then of 100 jobs");
        let now = mix.prune_now();
        let prunes =
            (0..3).map(|k| (StepOp::Prune { before: mix.prune_slice_before(k), limit: None, now }, None));
        ops.push(self.runs(db, "prune of 1%", Per::Job, prunes, stopped)?);
        let prunes =
            (0..3).map(|_| (StepOp::Prune { before: now, limit: Some(PRUNE_SMALL), now }, Some(PRUNE_SMALL)));
        ops.push(self.runs(db, "prune_at_most of 100", Per::Operation, prunes, stopped)?);
        progress("  the upgrade from schema 4");
        let upgrade = self.upgrade_from_4(db, store, stopped)?;
        let upgraded = upgrade.failure.is_none();
        ops.push(upgrade);
        let name = format!("import: enqueue_bulk of {} jobs", self.import_jobs);
        if !upgraded {
            // Their open would run the upgrade again.
            let why = "not run: the upgrade from schema 4 did not finish";
            ops.push(failed(&name, Per::Job, why.into(), None));
            ops.push(failed(&self.import_file_name(), Per::Job, why.into(), None));
            return Ok(ops);
        }
        progress("  imports: enqueue_bulk, enqueue --file");
        let op = StepOp::Import { prefix: format!("imported-{}", mix.n), jobs: self.import_jobs };
        ops.extend(self.step(db, op, self.heavy_runs, &[&name], stopped)?);
        ops.push(self.import_file(db, mix)?);
        Ok(ops)
    }

    /// The store at `db` put back to schema 4 (`old.rs`: claim's index, and on PostgreSQL the
    /// reaps' indexes, as schema 4 defined them, and its version mark), then upgraded by a
    /// read-write open, as this build opens a schema 4 store the first time. Per job of the
    /// table, whose indexes it builds.
    fn upgrade_from_4(
        &self,
        db: &str,
        store: Store,
        stopped: &dyn Fn() -> Result<(), BenchError>,
    ) -> Result<Op, BenchError> {
        let name = "upgrade from schema 4";
        let jobs = match store {
            Store::Sqlite => old::sqlite_to_4(Path::new(db))?,
            Store::Postgres => old::pg_to_4(db)?,
        };
        let mut upgrade = self.step(db, StepOp::Upgrade, 1, &[name], stopped)?;
        let mut op =
            upgrade.pop().unwrap_or_else(|| failed(name, Per::Job, "no upgrade was run".into(), None));
        per_job(&mut op, jobs);
        Ok(op)
    }

    /// One step in its child: an op per series, named by `names` in order.
    fn step(
        &self,
        db: &str,
        op: StepOp,
        reps: usize,
        names: &[&str],
        stopped: &dyn Fn() -> Result<(), BenchError>,
    ) -> Result<Vec<Op>, BenchError> {
        let spec = StepSpec { db: db.to_owned(), op, reps };
        let (output, peak) = step::launch(&self.options.step, &spec, self.limits)?;
        Ok(match output {
            Ok(output) => names.iter().enumerate().map(|(i, name)| op_of(name, &output, i, peak)).collect(),
            Err(why) => {
                stopped()?;
                names.iter().map(|name| failed(name, Per::Operation, why.clone(), peak)).collect()
            }
        })
    }

    /// One op from several one-run steps (the reaps, the prunes), each expected to touch the
    /// given number of jobs if any: a failed run ends the series (the next would find more).
    /// Its cost is per job touched, or per call.
    fn runs(
        &self,
        db: &str,
        name: &str,
        per: Per,
        steps: impl Iterator<Item = (StepOp, Option<u64>)>,
        stopped: &dyn Fn() -> Result<(), BenchError>,
    ) -> Result<Op, BenchError> {
        let (mut per_job, mut totals, mut touched, mut peak) =
            (Vec::new(), Vec::new(), Vec::new(), None::<u64>);
        let (mut counts, mut pieces) = (Vec::new(), Vec::new());
        for (op, expected) in steps {
            let spec = StepSpec { db: db.to_owned(), op, reps: 1 };
            let (output, rss) = step::launch(&self.options.step, &spec, self.limits)?;
            peak = peak.max(rss);
            let output = match output {
                Ok(output) => output,
                Err(why) => {
                    stopped()?;
                    return Ok(failed(name, per, why, peak));
                }
            };
            let (Some(&us), Some(&n)) =
                (output.series.first().and_then(|(_, runs)| runs.first()), output.touched.first())
            else {
                return Ok(failed(name, per, "the step reported nothing".into(), peak));
            };
            if let Some(expected) = expected.filter(|&e| e != n) {
                return Ok(failed(
                    name,
                    per,
                    format!("it touched {n} jobs where {expected} were meant"),
                    peak,
                ));
            }
            per_job.push(if per == Per::Job { us / n.max(1) as f64 } else { us });
            totals.push(us / 1e3);
            touched.push(n as f64);
            counts.push(output.pieces.len() as f64);
            pieces.extend(output.pieces.iter().map(|us| us / 1e3));
        }
        let longest_ms =
            pieces.iter().copied().fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))));
        let pieces = longest_ms.map(|longest_ms| Pieces {
            count: median(&mut counts) as u64,
            median_ms: median(&mut pieces),
            longest_ms,
        });
        Ok(Op {
            name: name.into(),
            per,
            median_us: Some(median(&mut per_job)),
            runs: totals.len(),
            touched: Some(median(&mut touched) as u64),
            total_ms: Some(median(&mut totals)),
            peak_rss_bytes: peak,
            pieces,
            failure: None,
        })
    }

    /// The dashboard's pages and `/metrics`, `reps` requests each, through `retryq serve`.
    fn dashboard(&self, db: &str, mix: &Mix) -> Vec<Op> {
        let done = (mix.n / 2..mix.n).find(|&i| mix.fate(i) == Fate::Done).map_or_else(String::new, Mix::id);
        let pruned = (0..mix.n).find(|&i| mix.pruned(i)).map_or_else(String::new, Mix::id);
        let pages = [
            ("GET / (overview)", "/".to_owned()),
            ("GET /metrics", "/metrics".to_owned()),
            ("GET /jobs", "/jobs".to_owned()),
            ("GET /jobs?status=pending", "/jobs?status=pending".to_owned()),
            ("GET /jobs?queue=email", "/jobs?queue=email".to_owned()),
            ("GET /jobs?status=dead&reason=cancelled", "/jobs?status=dead&reason=cancelled".to_owned()),
            ("GET /jobs?prefix=<one job's id>", format!("/jobs?prefix={done}")),
            ("GET /job?id=<a done job>", format!("/job?id={done}")),
            ("GET /job?id=<a pruned job>", format!("/job?id={pruned}")),
        ];
        let served = match dashboard::Served::start(&self.options.program, db, self.limits.time) {
            Ok(served) => served,
            Err(e) => {
                return pages
                    .iter()
                    .map(|(name, _)| failed(name, Per::Operation, e.to_string(), None))
                    .collect();
            }
        };
        pages
            .iter()
            .map(|(name, path)| match served.time(path, self.reps) {
                Ok(mut runs) => Op {
                    name: (*name).into(),
                    per: Per::Operation,
                    median_us: Some(median(&mut runs)),
                    runs: runs.len(),
                    touched: None,
                    total_ms: Some(median(&mut runs) / 1e3),
                    peak_rss_bytes: None,
                    pieces: None,
                    failure: None,
                },
                Err(why) => failed(name, Per::Operation, why, None),
            })
            .collect()
    }

    /// `retryq enqueue --file` of [`Bench::import_lines`] new jobs, a few times: the bulk
    /// import an operator runs (its lines read, parsed and handed to `enqueue_bulk`), timed
    /// from the command's start to its end.
    fn import_file(&self, db: &str, mix: &Mix) -> Result<Op, BenchError> {
        let name = self.import_file_name();
        let (mut per_job, mut totals, mut peak) = (Vec::new(), Vec::new(), None::<u64>);
        for run in 0..self.heavy_runs {
            let file = self.dir.join(format!("import-{}-{run}.jsonl", mix.n));
            write_import(&file, mix.n, run, self.import_lines)?;
            let mut command = std::process::Command::new(&self.options.program);
            command.args(["enqueue", "--db", db, "--file"]).arg(&file);
            let result = step::supervise(&mut command, self.limits);
            let _ = std::fs::remove_file(&file);
            let result = result?;
            peak = peak.max(result.peak_rss_bytes);
            if let Some(why) = result.stopped {
                return Ok(failed(&name, Per::Job, why, peak));
            }
            if !result.success {
                return Ok(failed(&name, Per::Job, format!("failed: {}", result.last_error), peak));
            }
            per_job.push(result.seconds * 1e6 / self.import_lines as f64);
            totals.push(result.seconds * 1e3);
        }
        Ok(Op {
            name,
            per: Per::Job,
            median_us: Some(median(&mut per_job)),
            runs: totals.len(),
            touched: Some(self.import_lines),
            total_ms: Some(median(&mut totals)),
            peak_rss_bytes: peak,
            pieces: None,
            failure: None,
        })
    }

    fn import_file_name(&self) -> String {
        format!("import: enqueue --file of {} lines", self.import_lines)
    }

    /// A schema 3 file of the same mix: its audit before the upgrade (read-only), the
    /// upgrade (a read-write open), the audit after. Returns the ops and the file's size.
    fn older_schema(&self, mix: &Mix) -> Result<(Vec<Op>, u64), BenchError> {
        let path = self.dir.join(format!("scale-{}-schema3.db", mix.n));
        (self.progress)(&format!("scale: SQLite, {} jobs: a schema 3 file", mix.n));
        let result = (|| {
            old::write(&path, mix, self.progress)?;
            let bytes = sqlite_bytes(&path)?;
            let db = path.to_string_lossy().into_owned();
            let none = || Ok(());
            let mut ops = Vec::new();
            (self.progress)("  audit of the schema 3 file, read-only");
            let op = StepOp::Audit { read_only: true };
            ops.extend(self.step(
                &db,
                op,
                self.heavy_runs,
                &["audit, schema 3, before its upgrade"],
                &none,
            )?);
            (self.progress)("  its upgrade");
            let mut upgrade = self.step(&db, StepOp::Upgrade, 1, &["upgrade from schema 3"], &none)?;
            for op in &mut upgrade {
                // The open is the operation; it touched every job of the file.
                per_job(op, mix.n + old::FIXTURE_JOBS);
            }
            let upgraded = upgrade.iter().all(|op| op.failure.is_none());
            ops.extend(upgrade);
            let after = "audit, after the upgrade";
            if upgraded {
                (self.progress)("  audit after the upgrade");
                let op = StepOp::Audit { read_only: false };
                ops.extend(self.step(&db, op, self.heavy_runs, &[after], &none)?);
            } else {
                // Its open would run the upgrade again.
                ops.push(failed(after, Per::Job, "not run: the upgrade did not finish".into(), None));
            }
            Ok::<_, BenchError>((ops, bytes))
        })();
        crate::throughput::remove_db(&path);
        result
    }
}

/// An upgrade's op, whose one run touched the `jobs` of its table: per job.
fn per_job(op: &mut Op, jobs: u64) {
    op.per = Per::Job;
    op.touched = Some(jobs);
    op.median_us = op.median_us.map(|us| us / jobs.max(1) as f64);
}

/// The op of series `i` of a step's output: per job when the step counted jobs touched.
fn op_of(name: &str, output: &StepOutput, i: usize, peak: Option<u64>) -> Op {
    let Some((_, runs)) = output.series.get(i) else {
        return failed(name, Per::Operation, "the step reported no such series".into(), peak);
    };
    let mut totals = runs.clone();
    let total_ms = (!runs.is_empty()).then(|| median(&mut totals) / 1e3);
    let (per, median_us, touched) = if output.touched.is_empty() {
        (Per::Operation, (!runs.is_empty()).then(|| median(&mut runs.clone())), None)
    } else {
        let mut per_job: Vec<f64> =
            runs.iter().zip(&output.touched).map(|(us, &n)| us / n.max(1) as f64).collect();
        let mut touched: Vec<f64> = output.touched.iter().map(|&n| n as f64).collect();
        (Per::Job, Some(median(&mut per_job)), Some(median(&mut touched) as u64))
    };
    Op {
        name: name.into(),
        per,
        median_us,
        runs: runs.len(),
        touched,
        total_ms,
        peak_rss_bytes: peak,
        pieces: None,
        failure: output.problem.clone(),
    }
}

fn failed(name: &str, per: Per, why: String, peak: Option<u64>) -> Op {
    Op {
        name: name.into(),
        per,
        median_us: None,
        runs: 0,
        touched: None,
        total_ms: None,
        peak_rss_bytes: peak,
        pieces: None,
        failure: Some(why),
    }
}

/// The file `retryq enqueue --file` imports: `lines` new jobs of the mix's queues and
/// priorities, due now, with a 90-day time to live.
fn write_import(path: &Path, n: u64, run: usize, lines: u64) -> Result<(), BenchError> {
    use std::io::Write as _;
    let mix = Mix::new(lines, 0);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for i in 0..lines {
        let job = mix.job(i);
        let line = serde_json::json!({
            "id": format!("imported-{n}-{run}-{i}"),
            "payload": Mix::payload(i),
            "max_attempts": 3,
            "ttl": "90d",
            "queue": job.queue,
            "priority": job.priority,
        });
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

/// A SQLite database's size once its log is folded in: the file and what is left of the log.
fn sqlite_bytes(path: &Path) -> Result<u64, BenchError> {
    rusqlite::Connection::open(path)?.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    Ok(std::fs::metadata(path)?.len() + std::fs::metadata(PathBuf::from(wal)).map_or(0, |m| m.len()))
}

/// A PostgreSQL database's size on disk.
fn pg_bytes(url: &str) -> Result<u64, BenchError> {
    let mut client = postgres::Client::connect(url, postgres::NoTls)?;
    let bytes: i64 = client.query_one("SELECT pg_database_size(current_database())", &[])?.get(0);
    Ok(u64::try_from(bytes).unwrap_or(0))
}

/// Ends every other session of the database at `url`: a killed step's session may still be
/// running its statement, holding locks the next step would wait for.
fn stop_sessions(url: &str) -> Result<(), BenchError> {
    let mut client = postgres::Client::connect(url, postgres::NoTls)?;
    client.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
        &[],
    )?;
    Ok(())
}
