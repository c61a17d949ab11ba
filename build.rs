//! Names the commit the `retryq` binary is built from, so that every figure it measures
//! (`bench --json`, `verify --json`, `check --json`) says which code it is of:
//! `git rev-parse --short=12 HEAD`, or `unknown` outside a git checkout.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=RETRYQ_COMMIT={commit}");
    // A commit moves HEAD or the branch it names; a worktree's .git is a file, and a path
    // that does not exist makes cargo run this again on every build (cheap).
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    println!("cargo:rerun-if-changed=.git/packed-refs");
}
