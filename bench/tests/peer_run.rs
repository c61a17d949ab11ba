//! `peer_run` driving a stand-in peer: a shell script that speaks the peers' line protocol
//! (`bench/peers/peer_common.py`), so that the process handling — several workers' tallies
//! summed, the pickup's enqueues matched to their starts, a peer's refusal passed on — is
//! checked without Python, Node or a database.

use std::path::{Path, PathBuf};

use retryq_bench::peer_run::Script;

/// Every mode of a peer: each worker process reports 50 and then 100 jobs between 10 s and
/// 12 s; pickup's worker starts each id the enqueuer appends to the target file. No mode
/// leaves a process behind when its shell is killed (`exec`, short-lived children only).
const FAKE: &str = r#"
mode=$1
eval target=\${$#}
now() { date +%s%3N; }
case $mode in
install) echo '{"ready": true, "version": "fake-1"}' ;;
load) echo "{\"loaded\": $2, \"seconds\": 0.5}" ;;
work)
  echo 'starting up'
  echo '{"jobs": 50, "first": 10.0, "last": 11.0}'
  echo '{"jobs": 100, "first": 10.0, "last": 12.0}'
  exec sleep 30 ;;
pickup)
  : > "$target"
  echo '{"ready": true, "version": "fake-1"}'
  seen=0
  while sleep 0.01; do
    while [ "$seen" -lt "$(wc -l < "$target")" ]; do
      seen=$((seen + 1))
      echo "{\"started\": \"$(sed -n "${seen}p" "$target")\", \"at\": $(now)}"
    done
  done ;;
enqueue)
  while read -r id; do
    echo "$id" >> "$target"
    echo "{\"committed\": \"$id\", \"at\": $(now)}"
  done ;;
esac
"#;

const REFUSES: &str = r#"echo '{"unavailable": "the stand-in is not installed"}'"#;

fn script(dir: &Path, text: &str) -> Script {
    let path = dir.join("peer.sh");
    std::fs::write(&path, text).unwrap();
    Script { program: PathBuf::from("sh"), script: path, env: Vec::new() }
}

#[test]
fn a_peers_processes_are_driven_and_read() {
    let dir = tempfile::tempdir().unwrap();
    let peer = script(dir.path(), FAKE);
    let target = dir.path().join("queue").display().to_string();
    assert_eq!(peer.install(&target).unwrap(), "fake-1");
    assert_eq!(peer.load(&target, 200).unwrap(), 0.5);
    // Two processes of 100 jobs each, over the same 2 s: 100 jobs/s, not one process's 50.
    assert_eq!(peer.work(&target, 2, 200).unwrap(), 100.0);
    let waits = peer.pickup(&target, 3).unwrap();
    assert_eq!(waits.len(), 3);
    assert!(waits.iter().all(|w| (0.0..5_000.0).contains(w)), "{waits:?}");
}

#[test]
fn a_peer_that_cannot_run_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let peer = script(dir.path(), REFUSES);
    let target = dir.path().join("queue").display().to_string();
    assert_eq!(peer.install(&target).unwrap_err(), "the stand-in is not installed");
    assert_eq!(peer.work(&target, 1, 10).unwrap_err(), "the stand-in is not installed");
}
