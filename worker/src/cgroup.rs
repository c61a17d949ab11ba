//! A cgroup v2 of one command's own: the kernel's containment, which no fork, `setsid` or
//! double fork leaves, killed whole by one write to its `cgroup.kill` (Linux 5.14), forks
//! under way included.
//!
//! The watchdog (`trampoline.rs`) makes one under its own cgroup for each command, named
//! `retryq-exec-PID` after itself (the worker finds that cgroup's directory once, [`Home`],
//! and hands it down in [`HOME_VAR`]: a watchdog that read `/proc/self/mountinfo` itself
//! spent a quarter of its time on it), moves itself into it, starts the command — which is born
//! inside — and moves itself back out, so that a kill of the cgroup reaches every process of
//! the command and none of the watchdog's. It needs a cgroup v2 hierarchy where the
//! watchdog's cgroup is writable by it: root's, or one delegated to the worker's user (a
//! systemd service with `Delegate=yes`, or a user session's). Where it cannot make one (a
//! cgroup v1 host, a read-only `/sys/fs/cgroup`, a kernel without `cgroup.kill`), or
//! [`OFF_VAR`] says not to, the watchdog falls back to walking its descendants
//! (`descendants.rs`).

use std::fs;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

/// The environment variable that, set to `off`, keeps the watchdog from making a cgroup:
/// for a host where the worker's cgroup is another manager's to arrange, and for the tests
/// of the fallback.
pub const OFF_VAR: &str = "RETRYQ_EXEC_CGROUP";

/// The prefix of every command's cgroup: the worker removes only what bears it.
const PREFIX: &str = "retryq-exec-";

/// The environment variable in which a worker hands its watchdogs its cgroup ([`Home`]):
/// its path in `/proc/self/cgroup`, a newline, its directory. A watchdog uses the directory
/// only while its own path is still that one.
pub(crate) const HOME_VAR: &str = "RETRYQ_EXEC_CGROUP_HOME";

/// The cgroup the worker and its watchdogs are in, under which the commands' go: as the
/// worker hands it down, [`HOME_VAR`]'s value, made once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Home {
    var: String,
}

impl Home {
    /// This process's cgroup, found once for the watchdogs it starts, with the commands'
    /// cgroups that watchdogs killed with their worker left there removed (`kill -9` of
    /// both: nobody else would remove them). `None` where no cgroup can be made, or
    /// [`OFF_VAR`] says not to.
    pub(crate) fn find() -> Option<Home> {
        if off() {
            return None;
        }
        let path = own_path()?;
        let dir = dir_of(&path)?;
        sweep(&dir);
        Some(Home { var: format!("{path}\n{}", dir.display()) })
    }

    /// Its value in [`HOME_VAR`].
    pub(crate) fn var(&self) -> &str {
        &self.var
    }

    /// The directory [`HOME_VAR`] names, if this process is still in the cgroup it names.
    fn inherited() -> Option<PathBuf> {
        let var = std::env::var(HOME_VAR).ok()?;
        let (path, dir) = var.split_once('\n')?;
        (own_path()? == path && Path::new(dir).is_absolute()).then(|| PathBuf::from(dir))
    }
}

/// A command's cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroup {
    dir: PathBuf,
}

/// Where this process is, and the cgroup it makes for its command.
#[derive(Debug)]
pub(crate) struct Entered {
    pub(crate) cgroup: Cgroup,
    /// The cgroup this process came from, and goes back to.
    home: PathBuf,
}

impl Cgroup {
    /// The cgroup at `dir`, as a watchdog announced it (`retryq-exec-…`); `None` for any
    /// other path.
    pub fn at(dir: impl Into<PathBuf>) -> Option<Cgroup> {
        let dir = dir.into();
        let named = dir.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(PREFIX));
        (named && dir.is_absolute()).then_some(Cgroup { dir })
    }

    /// Its directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Makes a cgroup for a command under this process's own and moves this process into it:
    /// a command started now is born inside. `Ok(None)` where no cgroup can be made here (see
    /// the module's doc); then nothing was changed.
    pub(crate) fn enter() -> io::Result<Option<Entered>> {
        if off() {
            return Ok(None);
        }
        let Some(home) = Home::inherited().or_else(own_dir) else { return Ok(None) };
        let pid = std::process::id();
        let mut made = None;
        for n in 0..4 {
            let name = if n == 0 { format!("{PREFIX}{pid}") } else { format!("{PREFIX}{pid}-{n}") };
            let dir = home.join(name);
            match fs::create_dir(&dir) {
                Ok(()) => {
                    made = Some(dir);
                    break;
                }
                // One left by an earlier process of this id: removed if empty, else the next.
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    if fs::remove_dir(&dir).is_ok() && fs::create_dir(&dir).is_ok() {
                        made = Some(dir);
                        break;
                    }
                }
                Err(_) => return Ok(None),
            }
        }
        let Some(dir) = made else { return Ok(None) };
        let cgroup = Cgroup { dir };
        // Without cgroup.kill (before Linux 5.14) the kill would not be whole.
        if !cgroup.dir.join("cgroup.kill").exists() || move_to(&cgroup.dir, pid).is_err() {
            let _ = cgroup.remove();
            return Ok(None);
        }
        Ok(Some(Entered { cgroup, home }))
    }

    /// Whether a watchdog on this host, in this process's cgroup, can make cgroups for its
    /// commands (and [`OFF_VAR`] does not say otherwise): a probe made and removed.
    pub fn available() -> bool {
        if off() {
            return false;
        }
        let Some(home) = own_dir() else { return false };
        let probe = home.join(format!("{PREFIX}probe-{}", std::process::id()));
        if fs::create_dir(&probe).is_err() {
            return false;
        }
        let whole = probe.join("cgroup.kill").exists();
        let _ = fs::remove_dir(&probe);
        whole
    }

    /// Kills every process in it at once (SIGKILL), those forking meanwhile included.
    pub fn kill(&self) -> io::Result<()> {
        fs::write(self.dir.join("cgroup.kill"), "1")
    }

    /// Whether a live process is still in it (a zombie is not).
    pub fn populated(&self) -> bool {
        match fs::read_to_string(self.dir.join("cgroup.events")) {
            Ok(events) => events.lines().any(|line| line == "populated 1"),
            Err(_) => false,
        }
    }

    /// The processes in it now.
    pub fn procs(&self) -> Vec<rustix::process::Pid> {
        fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|text| {
                text.lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .filter_map(rustix::process::Pid::from_raw)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Removes it, once empty; gone already is no error.
    pub fn remove(&self) -> io::Result<()> {
        match fs::remove_dir(&self.dir) {
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            done => done,
        }
    }
}

impl Entered {
    /// Moves this process back where it came from; what it started since stays inside.
    pub(crate) fn leave(&self) -> io::Result<()> {
        move_to(&self.home, std::process::id())
    }
}

/// Removes the commands' cgroups under `home` whose watchdog is gone and that are empty: a
/// watchdog killed with its worker (`kill -9` of both) leaves its cgroup behind, and nobody
/// else would remove it. One still populated is not removed (its `rmdir` fails), nor one whose
/// watchdog's process id is alive, whoever holds it now.
fn sweep(home: &Path) {
    let Ok(entries) = fs::read_dir(home) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|name| name.strip_prefix(PREFIX)).and_then(watchdog_pid)
        else {
            continue;
        };
        if !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = fs::remove_dir(entry.path());
        }
    }
}

/// The process id a command's cgroup is named after: `PID`, `PID-N` or `probe-PID`.
fn watchdog_pid(suffix: &str) -> Option<u32> {
    let suffix = suffix.strip_prefix("probe-").unwrap_or(suffix);
    suffix.split('-').next()?.parse().ok()
}

/// Moves process `pid`, all its threads, into the cgroup at `dir`.
fn move_to(dir: &Path, pid: u32) -> io::Result<()> {
    fs::write(dir.join("cgroup.procs"), pid.to_string())
}

/// Whether [`OFF_VAR`] says not to make cgroups.
fn off() -> bool {
    std::env::var_os(OFF_VAR).is_some_and(|v| v == "off")
}

/// This process's cgroup v2 directory; `None` on a host without one.
fn own_dir() -> Option<PathBuf> {
    dir_of(&own_path()?)
}

/// This process's cgroup v2 path, as `/proc/self/cgroup` names it (`0::PATH`).
fn own_path() -> Option<String> {
    let cgroups = fs::read_to_string("/proc/self/cgroup").ok()?;
    cgroups.lines().find_map(|line| line.strip_prefix("0::")).map(str::to_owned)
}

/// The directory of the cgroup v2 `path`: under the cgroup2 mount of `/proc/self/mountinfo`;
/// `None` on a host without one.
fn dir_of(path: &str) -> Option<PathBuf> {
    let mounts = fs::read_to_string("/proc/self/mountinfo").ok()?;
    mounts.lines().find_map(|line| {
        // `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPER`
        let (fields, rest) = line.split_once(" - ")?;
        if rest.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mut fields = fields.split_whitespace();
        let root = fields.nth(3)?;
        let mountpoint = fields.next()?;
        let inside =
            path.strip_prefix(root.trim_end_matches('/')).filter(|p| p.is_empty() || p.starts_with('/'))?;
        let dir = Path::new(mountpoint).join(inside.trim_start_matches('/'));
        dir.is_dir().then_some(dir)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_commands_cgroup_is_taken_from_a_watchdog() {
        assert!(Cgroup::at("/sys/fs/cgroup/retryq-exec-42").is_some());
        assert!(Cgroup::at("/sys/fs/cgroup/user.slice").is_none());
        assert!(Cgroup::at("retryq-exec-42").is_none(), "a relative path");
        assert!(Cgroup::at("/").is_none());
    }

    #[test]
    fn a_cgroup_is_named_after_its_watchdog() {
        assert_eq!(watchdog_pid("42"), Some(42));
        assert_eq!(watchdog_pid("42-3"), Some(42));
        assert_eq!(watchdog_pid("probe-42"), Some(42));
        assert_eq!(watchdog_pid("x"), None);
        assert_eq!(watchdog_pid(""), None);
    }
}
