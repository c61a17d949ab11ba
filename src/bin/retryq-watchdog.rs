//! `retryq-watchdog exec-trampoline WORKER_PID SHELL -c COMMAND`: the watchdog `retryq work
//! --exec` starts beside each command (`retryq_worker::Trampoline`), installed beside
//! `retryq`. A program of its own because one starts per attempt: it is a fifteenth of
//! `retryq`'s size and starts in about half its time (docs/benchmarks.md, "Commands beside
//! their watchdog"). Without it the worker starts `retryq exec-trampoline`, the same code.

fn main() -> std::process::ExitCode {
    retryq_worker::run_watchdog(std::env::args_os().skip(1))
}
