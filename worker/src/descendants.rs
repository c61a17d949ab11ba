//! A watchdog's processes, as `/proc` shows them: its descendants, signalled through pidfds,
//! and its zombie children, reaped as they appear.
//!
//! The watchdog is its command's child subreaper (`PR_SET_CHILD_SUBREAPER`): a process of the
//! command whose parent exits — a double fork, `setsid`, a fork that hops from session to
//! session — becomes the watchdog's child, so every process of the command stays among its
//! descendants. Without a cgroup (`cgroup.rs`) they are killed by walking `/proc` over and
//! over until the watchdog has no child left: a walk can miss a command that forks faster
//! than it, and the next walk goes on.
//!
//! A process found in `/proc` may end and its id be given to another before the signal is
//! sent. So each is signalled through a pidfd opened first and checked after: the pidfd names
//! the process it was opened on, and that process is signalled only if `/proc` still shows it
//! a live descendant once the pidfd is held.

use std::collections::HashMap;
use std::fs;

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, getpid, waitid};
#[cfg(target_os = "linux")]
use rustix::process::{PidfdFlags, pidfd_open, pidfd_send_signal};

/// One line of `/proc/PID/stat`: the state, the parent and the process group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stat {
    zombie: bool,
    parent: i32,
    group: i32,
}

fn stat(pid: i32) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `PID (COMM) STATE PPID PGRP …`: the name may hold spaces and parentheses.
    let (_, rest) = text.rsplit_once(") ")?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some(Stat { zombie: state == "Z", parent, group })
}

/// Every process of the host and its [`Stat`], read from `/proc`.
fn table() -> HashMap<i32, Stat> {
    let Ok(entries) = fs::read_dir("/proc") else { return HashMap::new() };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .collect()
}

/// Every live (not zombie) process descended from this one; empty where `/proc` cannot be
/// read.
pub(crate) fn live() -> Vec<Pid> {
    let table = table();
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (&pid, s) in &table {
        children.entry(s.parent).or_default().push(pid);
    }
    let mut found = Vec::new();
    let mut next = vec![getpid().as_raw_nonzero().get()];
    while let Some(parent) = next.pop() {
        for &child in children.get(&parent).into_iter().flatten() {
            if table.get(&child).is_some_and(|s| !s.zombie) {
                found.extend(Pid::from_raw(child));
            }
            next.push(child);
        }
    }
    found
}

/// Whether a live (not zombie) process is in process group `group`. A group whose processes
/// have all died can still hold their zombies until whoever inherited them reaps them — init,
/// on some hosts seconds later — and `kill(-group, 0)` counts those. Elsewhere than on Linux
/// (no `/proc` to read), that is the answer.
pub(crate) fn group_alive(group: Pid) -> bool {
    if cfg!(target_os = "linux") {
        let group = group.as_raw_nonzero().get();
        table().values().any(|s| s.group == group && !s.zombie)
    } else {
        rustix::process::test_kill_process_group(group).is_ok()
    }
}

/// Sends `signal` to each of `pids` that is, once a pidfd names it, still a live descendant
/// of this process. Where pidfds are missing (Linux before 5.3), by its id.
pub(crate) fn signal_each(pids: &[Pid], signal: Signal) {
    if pids.is_empty() {
        return;
    }
    let me = getpid().as_raw_nonzero().get();
    let descends = |pid: Pid| {
        let mut at = pid.as_raw_nonzero().get();
        // Up the parents to this process, a bounded number of steps.
        for _ in 0..4096 {
            match stat(at) {
                Some(s) if s.parent == me => return true,
                Some(s) if s.parent > 1 => at = s.parent,
                _ => return false,
            }
        }
        false
    };
    for &pid in pids {
        #[cfg(not(target_os = "linux"))]
        if descends(pid) {
            let _ = rustix::process::kill_process(pid, signal);
        }
        #[cfg(target_os = "linux")]
        match pidfd_open(pid, PidfdFlags::empty()) {
            Ok(pidfd) => {
                if stat(pid.as_raw_nonzero().get()).is_some_and(|s| !s.zombie) && descends(pid) {
                    let _ = pidfd_send_signal(&pidfd, signal);
                }
            }
            Err(rustix::io::Errno::NOSYS) => {
                let _ = rustix::process::kill_process(pid, signal);
            }
            // Gone already.
            Err(_) => {}
        }
    }
}

/// Reaps every zombie child of this process but `keep` (the command's shell, which stays
/// unreaped until the watchdog is done with its group's id); how many.
pub(crate) fn reap_zombies(keep: Pid) -> usize {
    let me = getpid().as_raw_nonzero().get();
    let mut reaped = 0;
    for (pid, s) in table() {
        if s.parent != me || !s.zombie || pid == keep.as_raw_nonzero().get() {
            continue;
        }
        let Some(pid) = Pid::from_raw(pid) else { continue };
        if matches!(waitid(WaitId::Pid(pid), WaitIdOptions::EXITED | WaitIdOptions::NOHANG), Ok(Some(_))) {
            reaped += 1;
        }
    }
    reaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_reads_its_own_stat() {
        let me = stat(std::process::id() as i32).expect("stat");
        assert!(!me.zombie);
        assert_eq!(Some(me.parent), rustix::process::getppid().map(|p| p.as_raw_nonzero().get()));
        let group = rustix::process::getpgrp().as_raw_nonzero().get();
        assert_eq!(me.group, group);
        assert!(group_alive(rustix::process::getpgrp()), "this process is alive in its group");
    }

    /// Reaping is left to the binary's tests (`tests/overlap.rs`): in this process it would
    /// take the children of the tests running beside.
    #[test]
    fn a_child_is_a_live_descendant_until_it_is_signalled() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().expect("sleep");
        let pid = Pid::from_raw(child.id() as i32).expect("pid");
        assert!(live().contains(&pid));
        signal_each(&[pid], Signal::KILL);
        // Dead and unreaped: a zombie, no longer live.
        let start = std::time::Instant::now();
        while live().contains(&pid) {
            assert!(start.elapsed() < std::time::Duration::from_secs(5), "not killed");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(child.wait().expect("reap").code().is_none(), "killed by a signal");
        // Not a descendant: nothing is sent.
        signal_each(&[Pid::from_raw(1).expect("pid")], Signal::CONT);
    }

    /// A group whose only process is a zombie is no live group, though `kill(-group, 0)`
    /// still finds it.
    #[test]
    fn a_group_of_zombies_is_not_alive() {
        use std::os::unix::process::CommandExt;
        let mut child =
            std::process::Command::new("sleep").arg("30").process_group(0).spawn().expect("sleep");
        let group = Pid::from_raw(child.id() as i32).expect("pid");
        assert!(group_alive(group));
        rustix::process::kill_process_group(group, Signal::KILL).expect("kill");
        // Dead and unreaped: its group still answers a signal.
        let start = std::time::Instant::now();
        while group_alive(group) {
            assert!(start.elapsed() < std::time::Duration::from_secs(5), "not killed");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(rustix::process::test_kill_process_group(group).is_ok(), "the zombie is still in its group");
        child.wait().expect("reap");
        assert!(!group_alive(group));
    }
}
