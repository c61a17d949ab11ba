//! The peers' own installation, done by the benchmark and never by hand: a Python venv with
//! pinned pgqueuer, huey and persist-queue, and an npm install of pinned graphile-worker, both
//! in a cache directory that later runs reuse; and the peers' scripts written beside them.
//! A step that fails makes the peers that need it unavailable, with the reason.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Python packages, pinned.
pub const PIP: [&str; 4] = ["pgqueuer==1.6.0", "asyncpg==0.32.0", "huey==3.5.4", "persist-queue==1.1.0"];
/// The npm package, pinned.
pub const NPM: &str = "graphile-worker@0.18.0";

/// The scripts, by file name, as they are written into the cache.
const SCRIPTS: [(&str, &str); 5] = [
    ("peer_common.py", include_str!("../peers/peer_common.py")),
    ("pgqueuer_peer.py", include_str!("../peers/pgqueuer_peer.py")),
    ("huey_peer.py", include_str!("../peers/huey_peer.py")),
    ("persist_queue_peer.py", include_str!("../peers/persist_queue_peer.py")),
    ("graphile_worker_peer.js", include_str!("../peers/graphile_worker_peer.js")),
];

/// What the installation gave: how to run a script of each runtime, or why it cannot run.
#[derive(Debug)]
pub struct Installed {
    /// Where the scripts are.
    pub scripts: PathBuf,
    /// The venv's Python.
    pub python: Result<PathBuf, String>,
    /// `node` and the `node_modules` to find graphile-worker in.
    pub node: Result<(PathBuf, PathBuf), String>,
}

/// The cache: `$XDG_CACHE_HOME/retryq-bench-peers`, else `~/.cache/retryq-bench-peers`, else
/// under the system's temporary directory.
pub fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("retryq-bench-peers")
}

/// Installs what is missing under `cache` with `python` (the interpreter that makes the
/// venv) and `npm`.
pub fn install(cache: &Path, python: &str, progress: &dyn Fn(&str)) -> Installed {
    let scripts = cache.join("scripts");
    let written = std::fs::create_dir_all(&scripts).map_err(|e| e.to_string()).and_then(|()| {
        SCRIPTS.iter().try_for_each(|(name, text)| {
            std::fs::write(scripts.join(name), text).map_err(|e| format!("cannot write {name}: {e}"))
        })
    });
    if let Err(why) = written {
        let why = format!("the scripts could not be written under {}: {why}", cache.display());
        return Installed { scripts, python: Err(why.clone()), node: Err(why) };
    }
    progress(&format!("peers: pip install {} into {}", PIP.join(" "), cache.join("venv").display()));
    let venv = cache.join("venv");
    let venv_python = venv.join("bin").join("python");
    let python = (|| {
        if !venv_python.exists() {
            run(Command::new(python).args(["-m", "venv"]).arg(&venv))?;
        }
        run(Command::new(&venv_python)
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .args(PIP))?;
        Ok(venv_python.clone())
    })();
    progress(&format!("peers: npm install {NPM} into {}", cache.join("node").display()));
    let prefix = cache.join("node");
    let node = (|| {
        std::fs::create_dir_all(&prefix).map_err(|e| e.to_string())?;
        run(Command::new("npm").arg("install").arg("--prefix").arg(&prefix).args([
            "--no-audit",
            "--no-fund",
            "--silent",
            NPM,
        ]))?;
        Ok((PathBuf::from("node"), prefix.join("node_modules")))
    })();
    Installed { scripts, python, node }
}

/// Runs a setup step; its last line of stderr when it fails.
fn run(command: &mut Command) -> Result<(), String> {
    let shown = format!("{command:?}");
    let output = command.output().map_err(|e| format!("cannot run {shown}: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message");
    Err(format!("{shown} failed ({}): {last}", output.status))
}
