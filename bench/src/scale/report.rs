//! What `retryq bench --scale` measured, as it is serialised to JSON, and the table it prints.

use std::fmt::Write as _;

use serde::Serialize;

use super::fill::Filled;
use super::mix::Expected;

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct ScaleReport {
    /// Whether this was the smaller `--quick` run.
    pub quick: bool,
    /// The store sizes measured, in jobs (tombstones included).
    pub sizes: Vec<u64>,
    /// Timed runs of each per-operation figure (each after one untimed run).
    pub reps: usize,
    /// A step not done after this long was stopped.
    pub step_timeout_s: f64,
    /// Logical CPUs.
    pub nproc: usize,
    /// The device and file system the SQLite files were on.
    pub disk: String,
    /// 1-minute load average when the run started and when it ended: the machine is shared.
    pub load_before: Option<f64>,
    /// See `load_before`.
    pub load_after: Option<f64>,
    /// One entry per store.
    pub stores: Vec<StoreScale>,
}

/// One store at every size.
#[derive(Clone, Debug, Serialize)]
pub struct StoreScale {
    /// `sqlite` or `postgres`.
    pub store: String,
    /// Whether the store could be had (PostgreSQL may be missing); `note` says why not.
    pub available: bool,
    /// Where it ran: the file's durability, or the server.
    pub note: String,
    /// One entry per size, smallest first.
    pub at: Vec<AtSize>,
    /// Each operation across the sizes, with its ratio largest / smallest.
    pub table: Vec<Row>,
}

/// One store of one size.
#[derive(Clone, Debug, Serialize)]
pub struct AtSize {
    /// Jobs in all, tombstones included.
    pub jobs: u64,
    /// What the filled store holds, as `stats` counted it right after the fill.
    pub stored: Expected,
    /// How long the fill took.
    pub fill: Filled,
    /// The database's size after the fill: the file and its log (SQLite, after a
    /// checkpoint) or `pg_database_size`.
    pub bytes: u64,
    /// The older-schema file's size before its upgrade (SQLite only).
    pub old_schema_bytes: Option<u64>,
    /// Wall-clock seconds of this size in all: fill, steps, clean-up.
    pub seconds: f64,
    /// Every operation measured.
    pub ops: Vec<Op>,
}

/// One operation at one size.
#[derive(Clone, Debug, Serialize)]
pub struct Op {
    /// What was measured (stable across sizes: the table's key).
    pub name: String,
    /// `operation` (one call or request) or `job` (a call that touches many jobs, divided by
    /// the jobs it touched: reap, prune, audit, upgrade, import).
    pub per: Per,
    /// The median cost, in microseconds per `per`; `null` when the step did not finish.
    pub median_us: Option<f64>,
    /// Runs the median is over.
    pub runs: usize,
    /// Jobs each run touched (median), for a cost per job.
    pub touched: Option<u64>,
    /// Median milliseconds of one whole run.
    pub total_ms: Option<f64>,
    /// The measuring process's peak resident memory (`null` for the dashboard's requests,
    /// timed in the client).
    pub peak_rss_bytes: Option<u64>,
    /// A reap's transactions (its pieces of at most `reap_limit` jobs); `null` for every
    /// other operation.
    pub pieces: Option<Pieces>,
    /// Why there is no figure, or what went wrong beside it (an audit's violations).
    pub failure: Option<String>,
}

/// The pieces a reap ended its backlog in, over its runs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Pieces {
    /// Pieces per run (median), the last one ending fewer than the limit (maybe none).
    pub count: u64,
    /// The median piece's milliseconds, over every run's pieces.
    pub median_ms: f64,
    /// The longest piece's milliseconds, over every run: the longest a claim beside the
    /// reap waits for it.
    pub longest_ms: f64,
}

/// What a cost is counted per.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Per {
    /// One call, one request.
    Operation,
    /// One job a call touched.
    Job,
}

/// One operation across the sizes.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The operation.
    pub name: String,
    /// See [`Op::per`].
    pub per: Per,
    /// The median at each size, in the order of [`ScaleReport::sizes`].
    pub median_us: Vec<Option<f64>>,
    /// Largest size's median over the smallest's, when both were measured.
    pub ratio: Option<f64>,
    /// Whether the ratio is within 2 (the goal); `false` also when a size failed.
    pub within_goal: bool,
}

/// The ratio the goal allows, largest size over smallest.
pub const GOAL: f64 = 2.0;

/// The rows of the table: each operation's medians across `at`.
pub fn rows(at: &[AtSize]) -> Vec<Row> {
    let mut names: Vec<(String, Per)> = Vec::new();
    for size in at {
        for op in &size.ops {
            if !names.iter().any(|(n, _)| n == &op.name) {
                names.push((op.name.clone(), op.per));
            }
        }
    }
    let mut rows = Vec::with_capacity(names.len() + 1);
    let bytes: Vec<Option<f64>> = at.iter().map(|s| Some(s.bytes as f64 / s.jobs as f64)).collect();
    rows.push(row("database bytes per job", Per::Job, bytes));
    for (name, per) in names {
        let medians = at
            .iter()
            .map(|size| size.ops.iter().find(|op| op.name == name).and_then(|op| op.median_us))
            .collect();
        rows.push(row(&name, per, medians));
    }
    rows
}

fn row(name: &str, per: Per, median_us: Vec<Option<f64>>) -> Row {
    let ratio = match (median_us.first(), median_us.last()) {
        (Some(Some(first)), Some(Some(last))) if *first > 0.0 && median_us.len() > 1 => Some(last / first),
        _ => None,
    };
    let within_goal = ratio.is_some_and(|r| r <= GOAL) && median_us.iter().all(Option::is_some);
    Row { name: name.to_owned(), per, median_us, ratio, within_goal }
}

/// A cost in the unit that reads best.
fn cost(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.1} µs")
    }
}

/// Sizes as 10^k where they are powers of ten.
fn size_label(n: u64) -> String {
    let mut k = 0;
    let mut m = n;
    while m >= 10 && m.is_multiple_of(10) {
        m /= 10;
        k += 1;
    }
    if m == 1 && k > 0 { format!("10^{k}") } else { n.to_string() }
}

/// The tables `retryq bench --scale` prints.
pub fn render(r: &ScaleReport) -> String {
    let mut out = String::new();
    let load = |l: Option<f64>| l.map_or("?".to_owned(), |l| format!("{l:.2}"));
    let _ = writeln!(
        out,
        "retryq bench --scale{}: {} cores; SQLite files on {}; load {} -> {}; medians of {} runs \
         (cheap operations), of up to 3 (reaps, prunes, imports, audits); steps stopped after {:.0} s",
        if r.quick { " --quick" } else { "" },
        r.nproc,
        r.disk,
        load(r.load_before),
        load(r.load_after),
        r.reps,
        r.step_timeout_s
    );
    for store in &r.stores {
        let _ = writeln!(out, "\n{} ({})", store.store, store.note);
        if !store.available {
            continue;
        }
        let mut header = format!("{:<46} {:>5}", "operation", "per");
        for size in &store.at {
            let _ = write!(header, " {:>11}", size_label(size.jobs));
        }
        let _ = writeln!(out, "{header} {:>8}  goal ≤ {GOAL}×", "ratio");
        for row in &store.table {
            let mut line = format!("{:<46} {:>5}", row.name, if row.per == Per::Job { "job" } else { "op" });
            for (i, median) in row.median_us.iter().enumerate() {
                let cell = match median {
                    Some(us) if row.name.starts_with("database bytes") => format!("{us:.0} B"),
                    Some(us) => cost(*us),
                    None => failure_word(store, i, &row.name),
                };
                let _ = write!(line, " {cell:>11}");
            }
            let ratio = row.ratio.map_or("-".to_owned(), |r| format!("{r:.2}"));
            let _ = writeln!(line, " {ratio:>8}  {}", if row.within_goal { "ok" } else { "MISS" });
            out.push_str(&line);
        }
        let _ = writeln!(out, "{:<46} {:>5}", "fill (the store's own bulk path)", "");
        for size in &store.at {
            let _ = writeln!(
                out,
                "  {:>11} jobs: filled in {:.0} s ({:.0} jobs/s), {:.1} MB, size measured in {:.0} s",
                size_label(size.jobs),
                size.fill.seconds,
                size.fill.jobs_per_s,
                size.bytes as f64 / 1e6,
                size.seconds
            );
        }
        for size in &store.at {
            for op in &size.ops {
                let (Some(p), Some(total), Some(touched)) = (&op.pieces, op.total_ms, op.touched) else {
                    continue;
                };
                let _ = writeln!(
                    out,
                    "  {} at {}: {touched} jobs in {} pieces, {} in all; a piece {} (median), {} (longest)",
                    op.name,
                    size_label(size.jobs),
                    p.count,
                    cost(total * 1e3),
                    cost(p.median_ms * 1e3),
                    cost(p.longest_ms * 1e3)
                );
            }
        }
        for size in &store.at {
            for op in size.ops.iter().filter(|op| op.failure.is_some()) {
                let _ = writeln!(
                    out,
                    "  {} at {}: {}",
                    op.name,
                    size_label(size.jobs),
                    op.failure.as_deref().unwrap_or_default()
                );
            }
        }
    }
    out
}

/// What a missing cell says: stopped (time or memory) or failed.
fn failure_word(store: &StoreScale, i: usize, name: &str) -> String {
    let failure = store
        .at
        .get(i)
        .and_then(|s| s.ops.iter().find(|op| op.name == name))
        .and_then(|op| op.failure.clone());
    match failure {
        Some(why) if why.starts_with("stopped") => "stopped".into(),
        Some(_) => "failed".into(),
        None => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_misses_its_goal_past_two_or_with_a_size_missing() {
        assert!(row("a", Per::Operation, vec![Some(10.0), Some(15.0), Some(20.0)]).within_goal);
        let past = row("b", Per::Operation, vec![Some(10.0), Some(20.5)]);
        assert!(!past.within_goal);
        assert_eq!(past.ratio, Some(2.05));
        let missing = row("c", Per::Job, vec![Some(10.0), None, Some(11.0)]);
        assert!(!missing.within_goal);
        assert!(!row("d", Per::Job, vec![Some(10.0), None]).within_goal);
        assert_eq!(size_label(10_000_000), "10^7");
        assert_eq!(size_label(2_500), "2500");
        assert_eq!(cost(1_500.0), "1.50 ms");
    }
}
