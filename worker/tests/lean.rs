//! The lean build stays lean: `retryq-worker` with its default features (handlers over a
//! SQLite queue) brings no HTTP client, no TLS and no PostgreSQL client, and each comes back
//! only with the feature that asks for it. `.ci/run` also `cargo check`s that build, so that
//! it compiles without them.

use std::process::Command;

/// What a build with `--features` would compile: the normal dependencies' names, each once.
fn crates(features: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "-e", "normal", "--prefix", "none", "--format", "{p}", "-p", "retryq-worker"])
        .args(["--no-default-features", "--features", features])
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree: {}", String::from_utf8_lossy(&out.stderr));
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Crates a worker over a SQLite queue must not build.
const HEAVY: [&str; 6] = ["ureq", "rustls", "ring", "postgres", "tokio-postgres", "retryq-control"];

#[test]
fn the_default_worker_builds_no_http_client_tls_or_postgres() {
    let lean = crates("");
    let found: Vec<&str> = HEAVY.iter().copied().filter(|heavy| lean.iter().any(|c| c == heavy)).collect();
    assert!(found.is_empty(), "the lean build of retryq-worker pulls in {found:?}");
    assert!(lean.iter().any(|c| c == "rusqlite"), "the lean build still has the SQLite queue: {lean:?}");
}

#[test]
fn each_heavy_crate_comes_with_its_feature() {
    // The same look on the full build finds them: the check above can see what it refuses.
    let http = crates("http");
    for heavy in ["ureq", "rustls", "ring", "retryq-control"] {
        assert!(http.iter().any(|c| c == heavy), "feature http without {heavy}: {http:?}");
    }
    assert!(!http.iter().any(|c| c == "postgres"), "feature http brings postgres: {http:?}");
    let postgres = crates("postgres");
    assert!(postgres.iter().any(|c| c == "postgres"), "feature postgres without it: {postgres:?}");
    assert!(!postgres.iter().any(|c| c == "ureq"), "feature postgres brings ureq: {postgres:?}");
}
