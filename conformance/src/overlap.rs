//! The overlap run, on either store: no two attempts of a job ever run at once, checked on
//! the commands themselves rather than on the store.
//!
//! Workers run the README's form of command, `--exec './deliver.sh'`: a script run by dash,
//! which forks for every `sleep` and `date`. A quarter of the jobs run their loop in a
//! background subshell; a quarter ignore SIGTERM; a quarter hand their ticks to a chain of
//! processes that fork in a loop, each parent exiting and each child leaving for a session of
//! its own (`hop.pl`), while the script waits. Each attempt logs its start, a tick every
//! 100 ms for 4 s — twice the 2 s lease, which heartbeats keep renewing — and its end; a
//! SIGTERM is logged as `term`. Meanwhile the run SIGKILLs workers (four, with four attempts
//! in flight each), SIGSTOPs them for longer than the lease (one that holds leases) and
//! resumes them, SIGKILLs the watchdogs (`retryq exec-trampoline`) of running commands, and
//! (on SQLite) steps the wall clock forward by half a second through the workers' stepped
//! clock (`retryq_worker::STEP_FILE_VAR`), always within what the margin tolerates (1 s
//! margin, 250 ms grace: 750 ms of skew). Then, from the log alone:
//!
//! - no (id, attempt) started twice;
//! - no attempt logged anything (a tick, its end, a `term`) after a later attempt of the
//!   same job started — every such line is reported with how long the two overlapped;
//! - no logged attempt beyond the job's stored attempts;
//!
//! and from the store: every job done or dead, `retryq audit` clean.
//!
//! `tests/overlap.rs` and `tests/pg_overlap.rs` run it, and so does `retryq verify` (at a
//! shorter spell of trouble); any failure is an [`Err`] with the seed that reproduces it.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use retryq::{Backend, NewJob, OpenOptions, PgQueue, Queue, Status};

/// The command every attempt runs, as `./deliver.sh` in the run's directory. Its payload
/// says how it behaves: `plain`, `background` (the loop in a background subshell, waited
/// for), `stubborn` (ignores SIGTERM) or `hopper` (the ticks come from `hop.pl`'s chain of
/// processes hopping from session to session; the script waits for the chain's last one).
const DELIVER: &str = r#"#!/bin/sh
mode=$(cat)
log="$OVERLAP_LOG"
say() { echo "$1 $RETRYQ_JOB_ID $RETRYQ_ATTEMPT $(date +%s%N)" >> "$log"; }
case "$mode" in
  stubborn) trap '' TERM ;;
  *) trap 'say term; exit 143' TERM ;;
esac
say start
ticks() { i=0; while [ $i -lt 40 ]; do sleep 0.1; say tick; i=$((i+1)); done; }
if [ "$mode" = background ]; then
  ticks &
  wait $!
elif [ "$mode" = hopper ]; then
  done="./hopped.$RETRYQ_JOB_ID.$RETRYQ_ATTEMPT"
  perl ./hop.pl "$log" "$done" &
  while [ ! -e "$done" ]; do sleep 0.1; done
else
  ticks
fi
say end
"#;

/// `hop.pl LOG DONE`: in a loop, fork; the parent exits and the child leaves for a session
/// of its own (`setsid`), a millisecond apart. A `hop` line in the log every 100 ms, like a
/// tick, for 4 s; then the file DONE. Perl's POSIX module is in Debian's essential
/// `perl-base`.
const HOP: &str = r#"use strict; use warnings; use POSIX ();
my ($log, $done) = @ARGV;
my $until = time + 4;
my $next = 0;
while (1) {
    my $pid = fork;
    unless (defined $pid) { select(undef, undef, undef, 0.01); next; }
    exit 0 if $pid;
    POSIX::setsid();
    my $now = `date +%s%N`;
    chomp $now;
    if ($now >= $next) {
        open(my $fh, '>>', $log) or exit 1;
        print $fh "hop $ENV{RETRYQ_JOB_ID} $ENV{RETRYQ_ATTEMPT} $now\n";
        close $fh;
        $next = $now + 100_000_000;
    }
    if (time >= $until) { open(my $fh, '>', $done); close $fh; exit 0; }
    select(undef, undef, undef, 0.001);
}
"#;

/// The workers' lease, margin and the rest: a 2 s lease renewed every 667 ms, stopped 1 s
/// before its end (the watchdog's grace is then 250 ms: 750 ms of skew tolerated).
const FLAGS: [&str; 10] =
    ["--lease", "2s", "--timeout", "10s", "--base", "50ms", "--cap", "200ms", "--concurrency", "4"];
const MARGIN: [&str; 2] = ["--margin", "1s"];
/// Workers (four attempts in flight each), jobs — fewer than the slots, so that a job whose
/// lease ran out is claimed again at once, as it would be by an idle fleet — and how many
/// attempts each job may take.
const WORKERS: usize = 4;
const JOBS: usize = 12;
const MAX_ATTEMPTS: u64 = 10;
/// The whole run must end within this.
const BOUND: Duration = Duration::from_secs(90);
/// Each forward step of the stepped clock.
const STEP_MS: i64 = 500;
/// How the jobs' commands behave, in turn (`DELIVER`).
const MODES: [&str; 4] = ["plain", "background", "stubborn", "hopper"];

/// What the run does to its workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// A SQLite file: kills, stops, and steps of the wall clock.
    Sqlite,
    /// The PostgreSQL database at this URL: kills and stops (the server's clock is not
    /// stepped here; `tests/pg_overlap.rs` steps it on a server of its own).
    Postgres,
}

/// One overlap run: its seed, its store, the programs it runs and how long the trouble lasts.
#[derive(Clone, Debug)]
pub struct Overlap {
    /// Draws the trouble's events; a run is repeated by its seed.
    pub seed: u64,
    /// Which store, and so which kinds of trouble.
    pub store: Store,
    /// The empty PostgreSQL database to run on (for [`Store::Postgres`]); a SQLite file in
    /// the run's directory otherwise.
    pub url: Option<String>,
    /// The `retryq` program whose workers run (another build's, to show that the run fails
    /// where commands outlive their workers: a build without `--margin` is run without it).
    pub workers: PathBuf,
    /// The `retryq` program that audits the store at the end.
    pub audit: PathBuf,
    /// How long the trouble lasts; the run then drains. One event every 0.4–0.9 s, in turn.
    pub trouble: Duration,
}

/// What a run did and what its log shows.
#[derive(Default, Debug)]
pub struct Seen {
    /// (id, attempt) pairs started.
    pub attempts: usize,
    /// Lines an attempt logged after a later attempt of its job had started, with how long
    /// after that start.
    pub overlaps: Vec<String>,
    /// Attempts that started twice.
    pub twice: Vec<String>,
    /// SIGTERMs logged: the watchdog stopped a command.
    pub terms: usize,
    /// Lines the fork-hopping chains logged.
    pub hops: usize,
    /// Attempts that logged their end.
    pub ends: usize,
    /// The longest an attempt went on after a later one of its job started, in ms.
    pub worst_ms: f64,
    /// Workers killed with SIGKILL.
    pub kills: usize,
    /// Workers stopped with SIGSTOP past their lease, then resumed.
    pub stops: usize,
    /// Watchdogs of running commands killed with SIGKILL.
    pub orphaned: usize,
    /// Forward steps of the workers' wall clock.
    pub steps: usize,
    /// Jobs by the status they ended in.
    pub outcomes: BTreeMap<String, usize>,
    /// Seconds from the first worker's start to the last one's exit.
    pub seconds: f64,
}

impl Seen {
    /// One line of what the run did and saw.
    pub fn summary(&self) -> String {
        format!(
            "{} kills, {} stops past the lease, {} watchdogs killed, {} clock steps of {STEP_MS} ms; {} attempts \
             started, {} ended, {} stopped by SIGTERM (the watchdog), {} hop lines; jobs {:?}; {} overlapping \
             lines, {} attempts started twice; {:.1} s",
            self.kills,
            self.stops,
            self.orphaned,
            self.steps,
            self.attempts,
            self.ends,
            self.terms,
            self.hops,
            self.outcomes,
            self.overlaps.len(),
            self.twice.len(),
            self.seconds
        )
    }
}

struct Run {
    dir: tempfile::TempDir,
    db: String,
    log: PathBuf,
    step_file: PathBuf,
    bin: PathBuf,
    margin: bool,
    workers: Vec<(String, Child)>,
    started: usize,
}

impl Run {
    fn spawn_worker(&mut self) -> Result<(), String> {
        let name = format!("w{}", self.started);
        self.started += 1;
        let log = self.dir.path().join(format!("{name}.log"));
        let stderr = File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut command = Command::new(&self.bin);
        command
            .current_dir(self.dir.path())
            .args(["work", "--worker", &name, "--exec", "./deliver.sh", "--until-idle"])
            .args(FLAGS)
            .env("RETRYQ_DB", &self.db)
            .env("OVERLAP_LOG", &self.log)
            .env(retryq_worker::STEP_FILE_VAR, &self.step_file)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        if self.margin {
            command.args(MARGIN);
        }
        let child = command.spawn().map_err(|e| format!("starting {}: {e}", self.bin.display()))?;
        self.workers.push((name, child));
        Ok(())
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        for (_, child) in &mut self.workers {
            signal(child.id(), "CONT");
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The mode of job `id` (`job-NN`): its payload.
fn mode_of(id: &str) -> &'static str {
    let n: usize = id.trim_start_matches("job-").parse().unwrap_or(0);
    MODES[n % MODES.len()]
}

/// The watchdogs (`retryq exec-trampoline`) among the children of `workers`, and the job each
/// watches (its `RETRYQ_JOB_ID`).
fn trampolines(workers: &[u32]) -> Vec<(u32, String)> {
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let parent =
            stat.rsplit_once(") ").and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok());
        if !parent.is_some_and(|parent: u32| workers.contains(&parent)) {
            continue;
        }
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains("exec-trampoline") {
            continue;
        }
        let environ = fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let job = environ
            .split(|&b| b == 0)
            .find_map(|var| var.strip_prefix(b"RETRYQ_JOB_ID="))
            .map(|id| String::from_utf8_lossy(id).into_owned());
        if let Some(job) = job {
            found.push((pid, job));
        }
    }
    found
}

fn signal(pid: u32, name: &str) {
    let _ = Command::new("kill").args([&format!("-{name}"), &pid.to_string()]).status();
}

/// One line of the commands' log.
struct Line {
    what: String,
    id: String,
    attempt: u64,
    at_ns: Option<u128>,
}

fn parse(log: &str) -> Result<Vec<Line>, String> {
    log.lines()
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            // The time is `date`'s, which a kill may cut short: then it is missing.
            let (what, id, attempt, at) = match words[..] {
                [what, id, attempt, at] => (what, id, attempt, at.parse().ok()),
                [what, id, attempt] => (what, id, attempt, None),
                _ => return Err(format!("log line {line:?}")),
            };
            Ok(Line {
                what: what.to_owned(),
                id: id.to_owned(),
                attempt: attempt.parse().map_err(|_| format!("log line {line:?}"))?,
                at_ns: at,
            })
        })
        .collect()
}

/// Reads the log in write order (each line is one `write` to a file opened for appending).
fn check_log(log: &str) -> Result<(Seen, HashMap<String, u64>), String> {
    let mut seen = Seen::default();
    let mut latest: HashMap<String, (u64, u128)> = HashMap::new();
    let mut started: HashMap<(String, u64), ()> = HashMap::new();
    let mut highest: HashMap<String, u64> = HashMap::new();
    for line in parse(log)? {
        let top = highest.entry(line.id.clone()).or_default();
        *top = (*top).max(line.attempt);
        match line.what.as_str() {
            "start" => {
                if started.insert((line.id.clone(), line.attempt), ()).is_some() {
                    seen.twice.push(format!("{} attempt {}", line.id, line.attempt));
                }
                seen.attempts += 1;
                let entry = latest.entry(line.id.clone()).or_insert((0, 0));
                if line.attempt < entry.0 {
                    seen.overlaps.push(format!(
                        "{} attempt {} started after attempt {} had started",
                        line.id, line.attempt, entry.0
                    ));
                } else {
                    *entry = (line.attempt, line.at_ns.unwrap_or(0));
                }
            }
            what => {
                seen.terms += usize::from(what == "term");
                seen.hops += usize::from(what == "hop");
                seen.ends += usize::from(what == "end");
                if let Some(&(newer, since)) = latest.get(&line.id)
                    && newer > line.attempt
                {
                    let ms = line.at_ns.map_or(f64::NAN, |at| at.saturating_sub(since) as f64 / 1e6);
                    if ms > seen.worst_ms {
                        seen.worst_ms = ms;
                    }
                    seen.overlaps.push(format!(
                        "{} attempt {} logged {what} {ms:.0} ms after attempt {newer} started",
                        line.id, line.attempt
                    ));
                }
            }
        }
    }
    Ok((seen, highest))
}

/// The store at `db`, to read while workers may still write.
fn reader(db: &str) -> Result<Box<dyn Backend>, String> {
    if db.starts_with("postgres://") {
        Ok(Box::new(PgQueue::connect_existing(db).map_err(|e| format!("connect: {e}"))?))
    } else {
        let options = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
        Ok(Box::new(Queue::open_with(Path::new(db), &options).map_err(|e| format!("open {db}: {e}"))?))
    }
}

/// Whether `bin`'s worker takes `--margin` (a build before the watchdog does not).
fn takes_margin(bin: &Path) -> Result<bool, String> {
    let out = Command::new(bin)
        .args(["work", "--help"])
        .output()
        .map_err(|e| format!("{} work --help: {e}", bin.display()))?;
    Ok(String::from_utf8_lossy(&out.stdout).contains("--margin"))
}

fn now_ms() -> Result<u64, String> {
    retryq_worker::now_ms().map_err(|e| format!("the clock: {e}"))
}

/// A file of the run, written.
fn write(path: &Path, text: &str) -> Result<(), String> {
    fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

impl Overlap {
    /// The whole run, then every check of the module's doc; `progress` is called after each
    /// event of the trouble. Returns what the run did and its log showed; any check that
    /// fails is an `Err` naming the seed.
    pub fn run(&self, progress: &dyn Fn()) -> Result<Seen, String> {
        self.run_inner(progress).map_err(|why| format!("seed {} on {:?}: {why}", self.seed, self.store))
    }

    fn run_inner(&self, progress: &dyn Fn()) -> Result<Seen, String> {
        let seed = self.seed;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let dir = tempfile::Builder::new()
            .prefix("retryq-overlap-")
            .tempdir()
            .map_err(|e| format!("temporary directory: {e}"))?;
        let deliver = dir.path().join("deliver.sh");
        write(&deliver, DELIVER)?;
        fs::set_permissions(&deliver, fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("chmod: {e}"))?;
        write(&dir.path().join("hop.pl"), HOP)?;
        let log = dir.path().join("attempts.log");
        write(&log, "")?;
        let step_file = dir.path().join("clock-step");
        write(&step_file, "0")?;
        let db = match &self.url {
            Some(url) => url.clone(),
            None => dir
                .path()
                .join("q.db")
                .to_str()
                .ok_or("the temporary directory's path is not UTF-8")?
                .to_owned(),
        };
        let margin = takes_margin(&self.workers)?;
        let mut run = Run {
            dir,
            db,
            log: log.clone(),
            step_file: step_file.clone(),
            bin: self.workers.clone(),
            margin,
            workers: Vec::new(),
            started: 0,
        };

        let now = now_ms()?;
        {
            let mut q = retryq::open_backend(&run.db).map_err(|e| format!("create the store: {e}"))?;
            for n in 0..JOBS {
                let mode = MODES[n % MODES.len()];
                let id = format!("job-{n:02}");
                let job = NewJob {
                    id: &id,
                    payload: mode,
                    max_attempts: MAX_ATTEMPTS,
                    deadline: now + 600_000,
                    now,
                    ..NewJob::default()
                };
                q.enqueue(&job).map_err(|e| format!("enqueue {id}: {e}"))?;
            }
        }
        for _ in 0..WORKERS {
            run.spawn_worker()?;
        }
        let start = Instant::now();
        let mut seen = Seen::default();
        let mut step_ms = 0i64;
        // Where the watchdog has no cgroup, a fork-hopping command whose watchdog is killed is
        // out of reach (docs/operating.md): its watchdog is spared then.
        let contained = retryq_worker::Cgroup::available();
        // The trouble: one event every 0.4–0.9 s, in turn a kill, a stop, a watchdog's kill and
        // (SQLite) a step. A stopped worker is resumed 2.5–3.5 s later (past its 2 s lease)
        // while the others go on.
        let mut turn = 0;
        let mut stopped: Vec<(u32, Instant)> = Vec::new();
        let mut next = Instant::now();
        while start.elapsed() < self.trouble || !stopped.is_empty() {
            thread::sleep(Duration::from_millis(20));
            stopped.retain(|&(pid, until)| {
                let due = Instant::now() >= until;
                if due {
                    signal(pid, "CONT");
                }
                !due
            });
            if Instant::now() < next || start.elapsed() >= self.trouble {
                continue;
            }
            next = Instant::now() + Duration::from_millis(rng.random_range(400..=900));
            let kinds = if self.store == Store::Sqlite { 4 } else { 3 };
            match turn % kinds {
                0 => {
                    let victim = rng.random_range(0..run.workers.len());
                    let (_, mut child) = run.workers.remove(victim);
                    let _ = child.kill();
                    let _ = child.wait();
                    stopped.retain(|&(pid, _)| pid != child.id());
                    seen.kills += 1;
                    run.spawn_worker()?;
                }
                1 => {
                    // A running worker that holds live leases, so that the stop lands inside
                    // attempts; any running one if none does.
                    let owners = reader(&run.db)?.owners(now_ms()?).unwrap_or_default();
                    let holds = |name: &str| {
                        owners
                            .iter()
                            .any(|o| o.worker.starts_with(&format!("{name}.")) && o.leased > o.expired)
                    };
                    let running: Vec<(u32, bool)> = run
                        .workers
                        .iter()
                        .map(|(name, c)| (c.id(), holds(name)))
                        .filter(|(pid, _)| !stopped.iter().any(|(p, _)| p == pid))
                        .collect();
                    let busy: Vec<u32> =
                        running.iter().filter(|(_, busy)| *busy).map(|(pid, _)| *pid).collect();
                    let pool: Vec<u32> =
                        if busy.is_empty() { running.iter().map(|(pid, _)| *pid).collect() } else { busy };
                    if let Some(&pid) = pool.get(rng.random_range(0..pool.len().max(1))) {
                        signal(pid, "STOP");
                        let stall = Duration::from_millis(rng.random_range(2500..=3500));
                        stopped.push((pid, Instant::now() + stall));
                        seen.stops += 1;
                    }
                }
                2 => {
                    // The watchdog of a running command, of a worker not stopped.
                    let workers: Vec<u32> = run
                        .workers
                        .iter()
                        .map(|(_, c)| c.id())
                        .filter(|pid| !stopped.iter().any(|(p, _)| p == pid))
                        .collect();
                    let watchdogs: Vec<(u32, String)> = trampolines(&workers)
                        .into_iter()
                        .filter(|(_, job)| contained || mode_of(job) != "hopper")
                        .collect();
                    if let Some((pid, _)) = watchdogs.get(rng.random_range(0..watchdogs.len().max(1))) {
                        signal(*pid, "KILL");
                        seen.orphaned += 1;
                    }
                }
                _ => {
                    step_ms += STEP_MS;
                    write(&step_file, &step_ms.to_string())?;
                    seen.steps += 1;
                }
            }
            turn += 1;
            progress();
        }
        // Drain: the workers exit once nothing is pending or leased.
        loop {
            if start.elapsed() > BOUND {
                return Err(format!("not idle within {BOUND:?}"));
            }
            let mut i = 0;
            while i < run.workers.len() {
                if let Some(status) = run.workers[i].1.try_wait().map_err(|e| format!("try_wait: {e}"))? {
                    let (name, _) = run.workers.remove(i);
                    if !status.success() {
                        return Err(format!("worker {name} exited with {status}"));
                    }
                } else {
                    i += 1;
                }
            }
            if run.workers.is_empty() {
                break;
            }
            thread::sleep(Duration::from_millis(100));
        }
        let seconds = start.elapsed().as_secs_f64();

        let q = reader(&run.db)?;
        let stats = q.stats(now_ms()? + 60_000).map_err(|e| format!("stats: {e}"))?;
        if (stats.pending, stats.leased, stats.done + stats.dead) != (0, 0, JOBS as u64) {
            return Err(format!("not every job ended done or dead: {stats:?}"));
        }
        let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
        let mut stored = HashMap::new();
        for n in 0..JOBS {
            let id = format!("job-{n:02}");
            let job = q.get(&id).map_err(|e| format!("get {id}: {e}"))?.ok_or(format!("{id} lost"))?;
            if !matches!(job.status, Status::Done | Status::Dead) {
                return Err(format!("{id}: {:?}", job.status));
            }
            *outcomes.entry(job.status.to_string()).or_default() += 1;
            stored.insert(id, job.attempts);
        }
        let out = Command::new(&self.audit)
            .args(["audit", "--db", &run.db])
            .output()
            .map_err(|e| format!("{} audit: {e}", self.audit.display()))?;
        let report = String::from_utf8_lossy(&out.stdout);
        if !(out.status.success() && report.contains("audit: clean")) {
            return Err(format!("audit:\n{report}"));
        }

        let text = fs::read_to_string(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let (logged, highest) = check_log(&text)?;
        for (id, attempt) in &highest {
            let stored = stored.get(id).copied().unwrap_or_default();
            if *attempt > stored {
                return Err(format!("{id} logged attempt {attempt} of {stored} stored"));
            }
        }
        let seen = Seen { outcomes, seconds, ..logged }.with_trouble(&seen);
        if !(seen.overlaps.is_empty() && seen.twice.is_empty()) {
            return Err(format!(
                "two attempts of a job ran at once ({} lines logged after a later attempt started, the \
                 longest {:.0} ms after it; {} attempts started twice):\n{}",
                seen.overlaps.len(),
                seen.worst_ms,
                seen.twice.len(),
                first_lines(seen.twice.iter().chain(&seen.overlaps))
            ));
        }
        if !(seen.kills >= 3 && seen.stops >= 3 && seen.orphaned >= 2) {
            return Err(format!(
                "too little trouble: {} kills, {} stops, {} watchdogs killed",
                seen.kills, seen.stops, seen.orphaned
            ));
        }
        if seen.hops == 0 {
            return Err("no fork-hopping command ran".into());
        }
        if self.store == Store::Sqlite && seen.steps < 3 {
            return Err(format!("only {} clock steps", seen.steps));
        }
        if seen.terms == 0 {
            return Err("no stop landed inside an attempt: the watchdog was never needed".into());
        }
        Ok(seen)
    }
}

/// How many lines of findings a failure shows.
const SHOWN: usize = 20;

/// The first [`SHOWN`] of `lines`, and how many more there are.
fn first_lines<'a>(lines: impl Iterator<Item = &'a String>) -> String {
    let lines: Vec<&String> = lines.collect();
    let mut text = lines.iter().take(SHOWN).map(|l| l.as_str()).collect::<Vec<_>>().join("\n");
    if lines.len() > SHOWN {
        text.push_str(&format!("\n… and {} more", lines.len() - SHOWN));
    }
    text
}

impl Seen {
    /// The log's findings with the trouble's counts of `trouble`.
    fn with_trouble(self, trouble: &Seen) -> Seen {
        Seen {
            kills: trouble.kills,
            stops: trouble.stops,
            orphaned: trouble.orphaned,
            steps: trouble.steps,
            ..self
        }
    }
}
