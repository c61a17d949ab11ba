//! What a peer's script prints, one JSON object a line (`bench/peers/peer_common.py` lists
//! them), read into figures: the lines of one process, and the throughput of several
//! processes from their last tallies.

use serde::Deserialize;

/// One line of a peer script's output.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    /// The peer is set up, or its worker can take jobs.
    Ready {
        /// The peer's version, as its package reports it.
        version: String,
    },
    /// A bulk load finished.
    Loaded {
        /// Jobs loaded.
        jobs: u64,
        /// Seconds the bulk call took.
        seconds: f64,
    },
    /// A worker process's tally so far.
    Tally(Tally),
    /// An enqueue returned (its commit acknowledged).
    Committed {
        /// The job.
        id: String,
        /// When, wall-clock milliseconds.
        at_ms: f64,
    },
    /// A handler started a job.
    Started {
        /// The job.
        id: String,
        /// When, wall-clock milliseconds.
        at_ms: f64,
    },
    /// The peer cannot run here, and why.
    Unavailable(String),
}

/// Jobs one worker process has handled, and the wall-clock seconds of its first and last.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
pub struct Tally {
    /// Jobs handled.
    pub jobs: u64,
    /// When the first was handled.
    pub first: f64,
    /// When the last was handled.
    pub last: f64,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Ready { ready: bool, version: String },
    Loaded { loaded: u64, seconds: f64 },
    Tally(Tally),
    Committed { committed: String, at: f64 },
    Started { started: String, at: f64 },
    Unavailable { unavailable: String },
}

/// Reads one line; `None` for anything that is not one of the lines above (a peer's own
/// logging, a blank line), which the caller skips.
pub fn parse(line: &str) -> Option<Line> {
    let raw: Raw = serde_json::from_str(line.trim()).ok()?;
    Some(match raw {
        Raw::Ready { ready: true, version } => Line::Ready { version },
        Raw::Ready { ready: false, .. } => return None,
        Raw::Loaded { loaded, seconds } => Line::Loaded { jobs: loaded, seconds },
        Raw::Tally(tally) => Line::Tally(tally),
        Raw::Committed { committed, at } => Line::Committed { id: committed, at_ms: at },
        Raw::Started { started, at } => Line::Started { id: started, at_ms: at },
        Raw::Unavailable { unavailable } => Line::Unavailable(unavailable),
    })
}

/// Jobs per second of processes that shared one queue, from each one's last tally: all the
/// jobs over the span from the earliest first to the latest last. `None` when no job was
/// handled or the span is empty.
pub fn throughput(tallies: &[Tally]) -> Option<f64> {
    let jobs: u64 = tallies.iter().map(|t| t.jobs).sum();
    let first = tallies.iter().map(|t| t.first).reduce(f64::min)?;
    let last = tallies.iter().map(|t| t.last).reduce(f64::max)?;
    let span = last - first;
    (jobs > 0 && span > 0.0).then(|| jobs as f64 / span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_a_script_prints_is_read() {
        assert_eq!(
            parse(r#"{"ready": true, "version": "1.6.0"}"#),
            Some(Line::Ready { version: "1.6.0".into() })
        );
        assert_eq!(
            parse(r#"{"loaded": 2000, "seconds": 0.0864}"#),
            Some(Line::Loaded { jobs: 2000, seconds: 0.0864 })
        );
        assert_eq!(
            parse(r#"{"jobs":1900,"first":1796390931.479,"last":1796390933.607}"#),
            Some(Line::Tally(Tally { jobs: 1900, first: 1796390931.479, last: 1796390933.607 }))
        );
        assert_eq!(
            parse(r#"{"committed": "a1", "at": 1796390910438.8}"#),
            Some(Line::Committed { id: "a1".into(), at_ms: 1796390910438.8 })
        );
        assert_eq!(
            parse(r#"{"started":"a1","at":1796390910468}"#),
            Some(Line::Started { id: "a1".into(), at_ms: 1796390910468.0 })
        );
        assert_eq!(
            parse(r#"{"unavailable": "huey is not installed"}"#),
            Some(Line::Unavailable("huey is not installed".into()))
        );
    }

    #[test]
    fn a_peers_own_logging_is_skipped() {
        for line in
            ["", "[INFO] worker started", "{}", r#"{"jobs": 3}"#, r#"{"ready": false, "version": "x"}"#]
        {
            assert_eq!(parse(line), None, "{line:?}");
        }
    }

    #[test]
    fn throughput_spans_every_process() {
        let a = Tally { jobs: 300, first: 100.0, last: 102.0 };
        let b = Tally { jobs: 100, first: 101.0, last: 104.0 };
        assert_eq!(throughput(&[a, b]), Some(100.0));
        assert_eq!(throughput(&[a]), Some(150.0));
        assert_eq!(throughput(&[]), None);
        assert_eq!(throughput(&[Tally { jobs: 1, first: 5.0, last: 5.0 }]), None);
    }
}
