//! The watchdog beside every `--exec` command (`retryq exec-trampoline`), through the real
//! binary, in its cgroup where this host lets it make one and without it
//! (`RETRYQ_EXEC_CGROUP=off`):
//!
//! - a command that keeps forking and leaving its session dies with its worker;
//! - a watchdog killed with SIGKILL leaves no command behind: the worker kills it, and its
//!   attempt ends only once it is gone;
//! - the processes a command backgrounds from subshells do not stay zombies of the watchdog
//!   until the attempt ends;
//! - the watchdog is `retryq-watchdog` beside the binary where it speaks the binary's
//!   protocol, else the binary itself.
//!
//! The overlap runs (`tests/overlap.rs`, `tests/pg_overlap.rs`) do the same to many attempts
//! at once and check that no two attempts of a job ran together.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{BIN, enqueue, read_only, wait_until};

/// A command that forks in a loop, the parent exiting and the child leaving for a session of
/// its own, for `SECONDS`; it appends a byte to `LOG` every 20 hops. Perl's POSIX module is
/// in Debian's essential `perl-base`.
const HOPPER: &str = r#"use strict; use warnings; use POSIX ();
my ($log, $seconds) = @ARGV;
my $until = time + $seconds;
my $hops = 0;
while (1) {
    my $pid = fork;
    unless (defined $pid) { select(undef, undef, undef, 0.01); next; }
    exit 0 if $pid;
    POSIX::setsid();
    exit 0 if time >= $until;
    if (++$hops % 20 == 0) { open(my $fh, '>>', $log) or exit 0; print $fh "."; close $fh; }
}
"#;

/// How the watchdog contains its command in a test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Containment {
    /// A cgroup of the command's own, where this host allows it.
    Cgroup,
    /// The process group and the walk of the watchdog's descendants.
    Walk,
}

impl Containment {
    /// Whether this host can run the watchdog so; says so when it cannot.
    fn here(self) -> bool {
        if self == Containment::Cgroup && !retryq_worker::Cgroup::available() {
            eprintln!("SKIPPED: no cgroup v2 the watchdog may make cgroups in on this host");
            return false;
        }
        true
    }
}

struct Setup {
    dir: tempfile::TempDir,
    db: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::Builder::new().prefix("retryq-watchdog-").tempdir().expect("tempdir");
        let db = dir.path().join("q.db");
        Setup { dir, db }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `retryq work` on one job `id`, running `exec`, with a 30 s lease.
    fn worker(&self, id: &str, exec: &str, how: Containment) -> Child {
        self.worker_on(&self.db, id, exec, how)
    }

    /// The same on the database `db`.
    fn worker_on(&self, db: &Path, id: &str, exec: &str, how: Containment) -> Child {
        self.worker_of(Path::new(BIN), db, id, exec, how)
    }

    /// The same, the worker being the binary `program`.
    fn worker_of(&self, program: &Path, db: &Path, id: &str, exec: &str, how: Containment) -> Child {
        enqueue(db, id, "p", 2, 600_000);
        let mut command = Command::new(program);
        command
            .args(["work", "--worker", "w", "--exec", exec, "--lease", "30s", "--timeout", "60s"])
            .arg("--db")
            .arg(db)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        match how {
            Containment::Cgroup => command.env_remove(retryq_worker::EXEC_CGROUP_VAR),
            Containment::Walk => command.env(retryq_worker::EXEC_CGROUP_VAR, "off"),
        };
        command.spawn().expect("spawn worker")
    }
}

/// `(parent, state)` of process `pid`, if it exists.
fn stat(pid: u32) -> Option<(u32, char)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(") ")?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    Some((fields.next()?.parse().ok()?, state))
}

/// Whether process `pid` is running (a zombie is not).
fn running(pid: u32) -> bool {
    stat(pid).is_some_and(|(_, state)| state != 'Z')
}

/// The processes whose parent is `parent`, and how many of them are zombies.
fn children(parent: u32) -> (Vec<u32>, usize) {
    let mut all = Vec::new();
    let mut zombies = 0;
    for entry in fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if let Some((ppid, state)) = stat(pid)
            && ppid == parent
        {
            all.push(pid);
            zombies += usize::from(state == 'Z');
        }
    }
    (all, zombies)
}

/// The watchdog of worker `worker`'s one command, once it runs.
fn trampoline_of(worker: u32) -> u32 {
    let mut found = None;
    wait_until("the worker started no watchdog", Duration::from_secs(10), || {
        found = children(worker).0.into_iter().find(|&pid| {
            fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains("exec-trampoline"))
        });
        found.is_some()
    });
    found.expect("found")
}

fn read_pid(path: &Path) -> u32 {
    let mut pid = None;
    wait_until(&format!("{} was never written", path.display()), Duration::from_secs(10), || {
        pid = fs::read_to_string(path).ok().and_then(|text| text.trim().parse().ok());
        pid.is_some()
    });
    pid.expect("pid")
}

fn hops(log: &Path) -> u64 {
    fs::metadata(log).map(|m| m.len()).unwrap_or(0)
}

/// Three workers are killed with SIGKILL while their commands hop from session to session:
/// every chain stops once the watchdog's kill grace (SIGTERM, then 500 ms before SIGKILL:
/// `KILL_GRACE`) is over and its kills have caught it, and never starts again. The chains are
/// read 2 s after the kill: a read at half a second raced the grace itself. (Against builds
/// before, a chain outran the watchdog's 20 rounds of kills about one time in three; and
/// without a cgroup, two chains of three outran three walks in a row that found no process,
/// on every run on a 2-core host, until the kill ended only once the watchdog had no child.)
fn a_fork_hopping_command_dies_with_its_worker(how: Containment) {
    if !how.here() {
        return;
    }
    let s = Setup::new();
    let script = s.path("hop.pl");
    fs::write(&script, HOPPER).expect("hop.pl");
    let logs: Vec<PathBuf> = (0..3).map(|n| s.path(&format!("hops-{n}"))).collect();
    let mut workers: Vec<Child> = logs
        .iter()
        .enumerate()
        .map(|(n, log)| {
            // The chain runs beside the command's shell, which waits for it.
            let exec = format!("perl {} {} 20 & sleep 60", script.display(), log.display());
            s.worker_on(&s.path(&format!("q{n}.db")), "hop", &exec, how)
        })
        .collect();
    wait_until("a command never hopped", Duration::from_secs(20), || logs.iter().all(|log| hops(log) > 3));
    for worker in &mut workers {
        worker.kill().expect("SIGKILL");
        worker.wait().expect("reap");
    }
    thread::sleep(retryq_worker::KILL_GRACE + Duration::from_millis(1500));
    let after_kill: Vec<u64> = logs.iter().map(|log| hops(log)).collect();
    thread::sleep(Duration::from_millis(1500));
    let later: Vec<u64> = logs.iter().map(|log| hops(log)).collect();
    assert_eq!(
        later, after_kill,
        "{how:?}: fork-hopping commands went on hopping after their workers were killed"
    );
}

#[test]
fn a_fork_hopping_command_dies_with_its_worker_in_its_cgroup() {
    a_fork_hopping_command_dies_with_its_worker(Containment::Cgroup);
}

#[test]
fn a_fork_hopping_command_dies_with_its_worker_without_a_cgroup() {
    a_fork_hopping_command_dies_with_its_worker(Containment::Walk);
}

/// The watchdog is killed with SIGKILL under a running command: the worker kills the command
/// (its process group; in its cgroup, also a process that left the group and the session)
/// before the attempt ends, and notes what happened on the job. Before, the command ran on
/// and the worker let the next attempt start beside it.
fn a_killed_watchdogs_command_is_killed_by_its_worker(how: Containment) {
    if !how.here() {
        return;
    }
    let s = Setup::new();
    let (shell, away) = (s.path("shell"), s.path("away"));
    let exec = format!(
        "setsid sh -c 'echo $$ > {away}; exec sleep 60' & echo $$ > {shell}; sleep 60",
        away = away.display(),
        shell = shell.display()
    );
    let mut worker = s.worker("orphaned", &exec, how);
    let (shell, away) = (read_pid(&shell), read_pid(&away));
    let trampoline = trampoline_of(worker.id());
    common::kill(trampoline, "KILL");
    let killed = Instant::now();
    wait_until("the command outlived its killed watchdog", Duration::from_secs(5), || !running(shell));
    if how == Containment::Cgroup {
        wait_until(
            "a process that left the session outlived the killed watchdog",
            Duration::from_secs(5),
            || !running(away),
        );
    } else {
        // Out of reach without a cgroup (docs/operating.md says so).
        common::kill(away, "KILL");
    }
    eprintln!("{how:?}: the killed watchdog's command was gone {} ms later", killed.elapsed().as_millis());
    // The attempt ended unclassified, with what happened noted; the job waits for its lease.
    wait_until("no note on the job", Duration::from_secs(10), || {
        read_only(&s.db)
            .get("orphaned")
            .expect("get")
            .and_then(|job| job.last_error)
            .is_some_and(|error| error.contains("the watchdog died; the worker killed what it left"))
    });
    assert!(worker.try_wait().expect("try_wait").is_none(), "the worker goes on");
    worker.kill().expect("SIGKILL");
    worker.wait().expect("reap");
}

#[test]
fn a_killed_watchdogs_command_is_killed_by_its_worker_in_its_cgroup() {
    a_killed_watchdogs_command_is_killed_by_its_worker(Containment::Cgroup);
}

#[test]
fn a_killed_watchdogs_command_is_killed_by_its_worker_without_a_cgroup() {
    a_killed_watchdogs_command_is_killed_by_its_worker(Containment::Walk);
}

/// `(sleep 0.01 &)` 500 times: each sleep is orphaned by its subshell and becomes the
/// watchdog's child. They are reaped as they end, not left as 500 zombies until the attempt
/// ends (before, all 500 were).
fn zombies_are_reaped_as_they_appear(how: Containment) {
    if !how.here() {
        return;
    }
    let s = Setup::new();
    let looped = s.path("looped");
    let exec = format!(
        "i=0; while [ $i -lt 500 ]; do (sleep 0.01 &); i=$((i+1)); done; : > {}; sleep 60",
        looped.display()
    );
    let mut worker = s.worker("zombies", &exec, how);
    let trampoline = trampoline_of(worker.id());
    wait_until("the command never looped", Duration::from_secs(60), || looped.exists());
    let mut zombies = usize::MAX;
    let settled = Instant::now();
    while settled.elapsed() < Duration::from_secs(5) {
        zombies = children(trampoline).1;
        if zombies == 0 {
            break;
        }
        thread::sleep(Duration::from_millis(50));
    }
    assert!(fs::metadata(&looped).is_ok() && running(trampoline));
    worker.kill().expect("SIGKILL");
    worker.wait().expect("reap");
    assert_eq!(zombies, 0, "{how:?}: {zombies} zombie children of the watchdog while its command runs");
}

#[test]
fn zombies_are_reaped_as_they_appear_in_a_cgroup() {
    zombies_are_reaped_as_they_appear(Containment::Cgroup);
}

#[test]
fn zombies_are_reaped_as_they_appear_without_a_cgroup() {
    zombies_are_reaped_as_they_appear(Containment::Walk);
}

/// A command's cgroup is removed once its attempt ends; and the next command's watchdog
/// removes an empty one whose watchdog is gone, as a watchdog killed with its worker leaves
/// (`kill -9` of both: nobody is left to remove it).
#[test]
fn a_commands_cgroup_goes_with_it() {
    if !Containment::Cgroup.here() {
        return;
    }
    let s = Setup::new();
    let cgroup = s.path("cgroup");
    let exec = format!("grep '^0::' /proc/self/cgroup | cut -c4- > {}", cgroup.display());
    // Named after a process that has exited.
    let mut gone = Command::new("true").spawn().expect("true");
    gone.wait().expect("reap");
    let left = cgroup_dir_of(&fs::read_to_string("/proc/self/cgroup").expect("cgroup"))
        .join(format!("retryq-exec-{}", gone.id()));
    fs::create_dir(&left).expect("a cgroup left behind");
    let mut worker = s.worker("one", &exec, Containment::Cgroup);
    wait_until("the job was not done", Duration::from_secs(20), || {
        read_only(&s.db).get("one").expect("get").is_some_and(|job| job.status == retryq::Status::Done)
    });
    let dir = cgroup_dir(&cgroup);
    assert_eq!(dir.parent(), left.parent(), "the command's cgroup is under the worker's");
    wait_until(&format!("{} was not removed", dir.display()), Duration::from_secs(5), || !dir.exists());
    let removed = !left.exists();
    let _ = fs::remove_dir(&left);
    assert!(removed, "{} was left behind", left.display());
    worker.kill().expect("SIGKILL");
    worker.wait().expect("reap");
}

/// The directory of the cgroup a command wrote to `file` (`grep '^0::' /proc/self/cgroup`):
/// a command's own, `retryq-exec-…`.
fn cgroup_dir(file: &Path) -> PathBuf {
    let path = fs::read_to_string(file).expect("cgroup");
    let name = path.trim().rsplit('/').next().expect("name").to_owned();
    assert!(name.starts_with("retryq-exec-"), "the command ran in {path:?}");
    cgroup_dir_of(&path)
}

/// The directory of the cgroup v2 `path` (as `/proc/PID/cgroup` gives it after `0::`, or
/// that whole file), under the cgroup2 mount.
fn cgroup_dir_of(path: &str) -> PathBuf {
    let path = path.lines().find_map(|line| line.strip_prefix("0::")).unwrap_or(path);
    let mounted = fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let mountpoint = mounted
        .lines()
        .find(|line| line.contains(" - cgroup2 "))
        .and_then(|line| line.split_whitespace().nth(4))
        .expect("a cgroup2 mount");
    Path::new(mountpoint).join(path.trim().trim_start_matches('/'))
}

/// A killed watchdog's command, once the worker has killed it, stays a zombie until whoever
/// inherited it reaps it: init, seconds later on some hosts,
/// or nobody before the worker ends if a child subreaper that reaps nothing sits above it —
/// which this test process makes itself. A zombie is no process of the command: the attempt
/// ends once none is left alive, noted as killed, and its cgroup is removed. Before, the
/// zombie shell kept the command's process group answering `kill(-group, 0)`, and the worker
/// held the attempt until it was reaped (here never), or until the lease ran out — then
/// leaving the cgroup behind: 4 of 5 killed watchdogs of an overlap run left theirs.
fn a_killed_watchdogs_zombies_do_not_hold_its_attempt(how: Containment) {
    if !how.here() {
        return;
    }
    // Process-wide and never undone: the other tests' orphans (a killed worker's watchdog)
    // stay this process's zombies until it exits, which none of them minds.
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).expect("subreaper");
    let s = Setup::new();
    let (shell, cgroup) = (s.path("shell"), s.path("cgroup"));
    let exec = format!(
        "grep '^0::' /proc/self/cgroup | cut -c4- > {}; echo $$ > {}; sleep 60",
        cgroup.display(),
        shell.display()
    );
    let mut worker = s.worker("zombie", &exec, how);
    let shell = read_pid(&shell);
    common::kill(trampoline_of(worker.id()), "KILL");
    wait_until("the killed watchdog's attempt did not end", Duration::from_secs(20), || {
        read_only(&s.db)
            .get("zombie")
            .expect("get")
            .and_then(|job| job.last_error)
            .is_some_and(|error| error.contains("the watchdog died; the worker killed what it left"))
    });
    // The shell is dead and unreaped, this process's zombie: the case the test is about.
    assert_eq!(stat(shell), Some((std::process::id(), 'Z')), "the shell is not this process's zombie");
    if how == Containment::Cgroup {
        let dir = cgroup_dir(&cgroup);
        wait_until(&format!("{} was not removed", dir.display()), Duration::from_secs(5), || !dir.exists());
    }
    let pid = rustix::process::Pid::from_raw(shell as i32).expect("pid");
    rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty()).expect("reap the shell");
    worker.kill().expect("SIGKILL");
    worker.wait().expect("reap");
}

#[test]
fn a_killed_watchdogs_zombies_do_not_hold_its_attempt_in_its_cgroup() {
    a_killed_watchdogs_zombies_do_not_hold_its_attempt(Containment::Cgroup);
}

#[test]
fn a_killed_watchdogs_zombies_do_not_hold_its_attempt_without_a_cgroup() {
    a_killed_watchdogs_zombies_do_not_hold_its_attempt(Containment::Walk);
}

/// The watchdog that starts a command is `retryq-watchdog` beside `retryq`; with none beside
/// it, or one that answers `--protocol` with another protocol (a build of another version),
/// it is `retryq exec-trampoline`. Each command writes down its parent's binary: the shell's
/// parent is its watchdog.
#[test]
fn the_watchdog_is_the_small_binary_beside_retryq_when_it_speaks_the_protocol() {
    let s = Setup::new();
    let bin = s.path("bin");
    fs::create_dir(&bin).expect("bin");
    let retryq = bin.join("retryq");
    fs::copy(BIN, &retryq).expect("copy retryq");
    let beside = bin.join("retryq-watchdog");
    let parent_of = |case: &str, watchdog: Option<&[u8]>| -> String {
        match watchdog {
            Some(program) => {
                fs::write(&beside, program).expect("write the watchdog");
                fs::set_permissions(&beside, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                    .expect("chmod");
            }
            None => {
                let _ = fs::remove_file(&beside);
            }
        }
        let db = s.path(&format!("{case}.db"));
        let out = s.path(&format!("{case}.parent"));
        let exec = format!("readlink /proc/$PPID/exe > {}", out.display());
        let mut worker = s.worker_of(&retryq, &db, case, &exec, Containment::Walk);
        wait_until(&format!("{case}: the job was not done"), Duration::from_secs(20), || {
            read_only(&db).get(case).expect("get").is_some_and(|job| job.status == retryq::Status::Done)
        });
        worker.kill().expect("SIGKILL");
        worker.wait().expect("reap");
        fs::read_to_string(&out).expect("the parent").trim().to_owned()
    };
    let small = fs::read(env!("CARGO_BIN_EXE_retryq-watchdog")).expect("retryq-watchdog");
    assert_eq!(parent_of("beside", Some(&small)), beside.display().to_string());
    assert_eq!(parent_of("none", None), retryq.display().to_string());
    let other = b"#!/bin/sh\necho 'retryq-watchdog 1'\n";
    assert_eq!(
        parent_of("other", Some(other)),
        retryq.display().to_string(),
        "a watchdog of another protocol"
    );
}
