//! The file size limit (`ulimit -f`, `RLIMIT_FSIZE`): a write past it must fail, not kill.
//!
//! A write past the limit raises SIGXFSZ, whose default action ends the process: a worker
//! would die between two statements, with no word of why. With the signal caught, the write
//! fails with EFBIG instead; SQLite rolls the transaction back and reports an I/O error,
//! and the worker stops saying that the limit is what failed. The signal is caught by a
//! handler rather than ignored because a handler, unlike an ignored signal, is reset by
//! `exec`: the commands the worker runs keep the default action.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Set by the handler once a write went past the limit.
static HIT: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Catches SIGXFSZ for the rest of the process. Calling it again does nothing.
pub fn catch_file_size_signal() -> io::Result<()> {
    if HIT.get().is_some() {
        return Ok(());
    }
    let hit = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGXFSZ, Arc::clone(&hit))?;
    let _ = HIT.set(hit);
    Ok(())
}

/// Whether a write went past the file size limit since [`catch_file_size_signal`].
pub fn file_size_limit_hit() -> bool {
    HIT.get().is_some_and(|hit| hit.load(Ordering::SeqCst))
}

/// The process's file size limit in bytes; `None` for unlimited.
pub fn file_size_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Fsize).current
}

/// Says, for an operator, that the file size limit made a write fail.
pub fn describe_limit() -> String {
    match file_size_limit() {
        Some(bytes) => format!(
            "a write went past the file size limit ({bytes} bytes, `ulimit -f`) and failed with EFBIG"
        ),
        None => "a write went past the file size limit (`ulimit -f`) and failed with EFBIG".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_hit_until_the_signal_comes() {
        catch_file_size_signal().expect("catch");
        catch_file_size_signal().expect("again");
        assert!(!file_size_limit_hit());
        // SIGXFSZ to this process: caught, noted, and the test goes on.
        rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::XFSZ)
            .expect("signal");
        let start = std::time::Instant::now();
        while !file_size_limit_hit() {
            assert!(start.elapsed() < std::time::Duration::from_secs(5), "never noted");
            std::thread::yield_now();
        }
        assert!(describe_limit().contains("EFBIG"));
    }
}
