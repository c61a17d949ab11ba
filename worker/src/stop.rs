//! Stopping: SIGTERM and SIGINT, as a deployment sends them.
//!
//! The first signal asks the loop to stop: it claims nothing more, the attempts under way
//! finish (each command is in a process group of its own, so a terminal's Ctrl-C does not
//! reach it), their outcomes are recorded, and the loop returns. A second signal means
//! "now": the running commands' process groups are killed and the process exits with 128 +
//! the signal's number, leaving their jobs leased — the same as a crash, which the queue is
//! built to survive.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// A stop request shared by the loop, the transport and the signal handler.
#[derive(Clone, Default)]
pub struct Stop {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The signal that asked for the stop (0 for a request from code), once asked.
    requested: Mutex<Option<i32>>,
    wake: Condvar,
    /// The process groups of the commands running now, one per attempt in flight, each with
    /// the flag that stops it through its trampoline, if it has one.
    running: Mutex<Vec<(i32, Option<Arc<AtomicBool>>)>>,
    /// Set on a second signal, before the running commands are killed.
    leaving: AtomicBool,
    /// Set by a wake-up of the store (`Stop::nudge`): the store thread's sleep ends early.
    nudged: AtomicBool,
    /// Cancels the statement the store runs, when the stop is requested: a worker asked to
    /// stop does not wait out a lock or statement timeout.
    interrupt: Mutex<Option<Arc<dyn retryq::Interrupt>>>,
}

impl Stop {
    /// A stop nobody has requested yet. Nothing listens for signals until
    /// [`Stop::on_signals`].
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Listens for SIGTERM and SIGINT on a thread of its own: the first requests the stop,
    /// the second kills the running commands' process groups and exits the process.
    pub fn on_signals(&self) -> io::Result<()> {
        let mut signals = Signals::new([SIGTERM, SIGINT])?;
        let stop = self.clone();
        thread::Builder::new().name("retryq-signals".into()).spawn(move || {
            for signal in signals.forever() {
                if stop.request_by(signal) {
                    continue;
                }
                tracing::warn!(signal, "second signal: exiting now, the attempts under way stay leased");
                stop.inner.leaving.store(true, Ordering::SeqCst);
                stop.kill_running();
                std::process::exit(128 + signal);
            }
        })?;
        Ok(())
    }

    /// Requests the stop, as a first signal would: nothing more is claimed, and the
    /// attempts under way finish and are recorded. Asked again, it abandons them instead:
    /// the worker returns as soon as they return (an async handler's task is dropped, a
    /// command's process group killed), records nothing of them, and their jobs wait out
    /// their leases, as after a crash.
    pub fn request(&self) {
        if !self.request_by(0) {
            self.inner.leaving.store(true, Ordering::SeqCst);
            self.kill_running();
            self.inner.wake.notify_all();
        }
    }

    /// Records the request; false if one was already there.
    fn request_by(&self, signal: i32) -> bool {
        let mut requested = self.inner.requested.lock().unwrap_or_else(PoisonError::into_inner);
        if requested.is_some() {
            return false;
        }
        *requested = Some(signal);
        let interrupt = self.inner.interrupt.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(interrupt) = interrupt {
            interrupt.interrupt();
        }
        if signal != 0 {
            tracing::info!(
                signal,
                "stopping: nothing more is claimed; the attempts under way finish and are recorded first"
            );
        }
        self.inner.wake.notify_all();
        true
    }

    /// What cancels the store's running statement when a stop is requested; `None` to stop
    /// cancelling.
    pub(crate) fn interrupt_with(&self, interrupt: Option<Arc<dyn retryq::Interrupt>>) {
        *self.inner.interrupt.lock().unwrap_or_else(PoisonError::into_inner) = interrupt;
    }

    /// Whether the attempts under way are abandoned (a second signal, which exits the
    /// process, or a second [`Stop::request`]): the attempts it killed end with errors of its
    /// own making, which are neither recorded nor reported.
    pub(crate) fn leaving(&self) -> bool {
        self.inner.leaving.load(Ordering::SeqCst)
    }

    /// Whether a stop was requested.
    pub fn requested(&self) -> bool {
        self.inner.requested.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// Sleeps for `duration`, or less if a stop is requested meanwhile. True if it was.
    pub fn sleep(&self, duration: Duration) -> bool {
        self.sleep_unless(duration, false)
    }

    /// Ends the store thread's sleep ([`Stop::sleep_or_nudged`]) now: the store says a job
    /// may have become due (`retryq::Backend::listen`).
    pub(crate) fn nudge(&self) {
        let _requested = self.inner.requested.lock().unwrap_or_else(PoisonError::into_inner);
        self.inner.nudged.store(true, Ordering::SeqCst);
        self.inner.wake.notify_all();
    }

    /// [`Stop::sleep`], ended early by a [`Stop::nudge`] too (then false, and the nudge is
    /// spent).
    pub(crate) fn sleep_or_nudged(&self, duration: Duration) -> bool {
        self.sleep_unless(duration, true)
    }

    fn sleep_unless(&self, duration: Duration, nudged: bool) -> bool {
        let until = Instant::now() + duration;
        let mut requested = self.inner.requested.lock().unwrap_or_else(PoisonError::into_inner);
        while requested.is_none() {
            if nudged && self.inner.nudged.swap(false, Ordering::SeqCst) {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            requested =
                self.inner.wake.wait_timeout(requested, left).unwrap_or_else(PoisonError::into_inner).0;
        }
        true
    }

    /// A transport's command now runs as process group `group`; `through` is set to stop it
    /// when it runs through a trampoline (which is then the group's process, and must not be
    /// killed before the command).
    pub(crate) fn running(&self, group: Pid, through: Option<Arc<AtomicBool>>) {
        self.groups().push((group.as_raw_nonzero().get(), through));
    }

    /// The command of process group `group` ended.
    pub(crate) fn idle(&self, group: Pid) {
        let raw = group.as_raw_nonzero().get();
        self.groups().retain(|(g, _)| *g != raw);
    }

    /// Stops every command running now: for a second signal, and for a loop that gives up
    /// while attempts are in flight (their outcomes could not be recorded). A command's
    /// process group is killed; one behind a trampoline is told to stop, and its trampoline
    /// kills its group as soon as its pipe closes (at the latest when this process exits).
    pub(crate) fn kill_running(&self) {
        let groups = std::mem::take(&mut *self.groups());
        for (group, through) in groups {
            match through {
                Some(flag) => flag.store(true, Ordering::SeqCst),
                // It may have ended meanwhile: nothing to do then.
                None => {
                    if let Some(group) = Pid::from_raw(group) {
                        let _ = kill_process_group(group, Signal::KILL);
                    }
                }
            }
        }
    }

    fn groups(&self) -> std::sync::MutexGuard<'_, Vec<(i32, Option<Arc<AtomicBool>>)>> {
        self.inner.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_wakes_a_sleep_and_only_the_first_counts() {
        let stop = Stop::new();
        assert!(!stop.requested());
        let start = Instant::now();
        assert!(!stop.sleep(Duration::from_millis(20)), "nobody asked");
        assert!(start.elapsed() >= Duration::from_millis(20));
        let asker = stop.clone();
        let handle = thread::spawn(move || {
            thread::sleep(Duration::from_millis(50));
            asker.request_by(15)
        });
        let start = Instant::now();
        assert!(stop.sleep(Duration::from_secs(30)), "woken by the request");
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(handle.join().expect("asker"), "the first request counts");
        assert!(!stop.request_by(2), "a second one is a second signal");
        assert!(stop.requested());
        assert!(stop.sleep(Duration::from_secs(30)), "a requested stop does not sleep");
    }
}
