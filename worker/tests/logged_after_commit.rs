//! No outcome is logged before it is committed: at the moment each attempt's log line is
//! written, another connection to the database already sees the outcome in the job's
//! history. Eight attempts in flight, so that outcomes share commits.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use retryq::{Claimed, NewJob, OpenOptions, Outcome, Queue, Report, Settings, Status};
use retryq_worker::{Config, Stop, SystemClock, Transport, Unclassified, Window, work_in_slots};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Answers by the job's number: ok, retryable or permanent, after a few milliseconds.
#[derive(Clone)]
struct Nap;

impl Transport for Nap {
    fn attempt(&mut self, job: &Claimed, _: &Window<'_>) -> Result<Report, Unclassified> {
        let n: u64 = job.id().trim_start_matches('j').parse().unwrap_or(0);
        thread::sleep(Duration::from_millis(1 + n % 7));
        Ok(Report::from(match n % 3 {
            0 => Outcome::Ok,
            1 => Outcome::Retryable,
            _ => Outcome::Permanent,
        }))
    }
}

/// At each line with an outcome, checks the store through a connection of its own.
struct Checker {
    db: PathBuf,
    seen: Mutex<Vec<String>>,
    unstored: Mutex<Vec<String>>,
}

#[derive(Default)]
struct Fields(HashMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}").trim_matches('"').to_owned());
    }
}

/// The subscriber: a handle on the checker the test reads afterwards.
struct Probe(Arc<Checker>);

impl Subscriber for Probe {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let (Some(outcome), Some(job), Some(attempt)) =
            (fields.0.get("outcome"), fields.0.get("job"), fields.0.get("attempt"))
        else {
            return;
        };
        let to = match outcome.as_str() {
            "done" => Status::Done,
            "retry" => Status::Pending,
            "dead" => Status::Dead,
            _ => return,
        };
        let attempt: u64 = attempt.parse().unwrap_or(0);
        let options = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
        let queue = Queue::open_with(&self.0.db, &options).expect("open");
        let history = queue.history(job).expect("history");
        let stored =
            history.iter().any(|h| h.from == Some(Status::Leased) && h.to == to && h.attempt == attempt);
        let line = format!("{job} #{attempt} {outcome}");
        if !stored {
            self.0.unstored.lock().expect("lock").push(line.clone());
        }
        self.0.seen.lock().expect("lock").push(line);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

#[test]
fn every_outcome_is_in_the_store_when_its_line_is_logged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("q.db");
    let mut queue = Queue::open(&db).expect("queue");
    let now = retryq_worker::now_ms().expect("clock");
    for n in 0..60 {
        let id = format!("j{n}");
        let job = NewJob {
            id: &id,
            payload: "",
            max_attempts: 2,
            deadline: now + 600_000,
            now,
            ..NewJob::default()
        };
        queue.enqueue(&job).expect("enqueue");
    }
    let config = Config {
        settings: Settings { lease_ms: 30_000, base_ms: 0, cap_ms: 0, ..Settings::default() },
        until_idle: true,
        max_sleep: Duration::from_millis(50),
        ..Config::new("w1")
    };
    let checker = Arc::new(Checker { db, seen: Mutex::default(), unstored: Mutex::default() });
    let mut slots = vec![Nap; 8];
    let summary = tracing::subscriber::with_default(Probe(Arc::clone(&checker)), || {
        work_in_slots(&mut queue, &config, &mut slots, &Stop::new(), &SystemClock)
    })
    .expect("work");
    let seen = checker.seen.lock().expect("lock").len() as u64;
    // Every job ends: 20 done, 20 permanent, 20 retried once and then dead, exhausted.
    assert_eq!((summary.done, summary.dead, summary.retried), (20, 40, 20), "{summary:?}");
    assert_eq!(seen, summary.done + summary.dead + summary.retried, "one line per recorded outcome");
    let unstored = checker.unstored.lock().expect("lock");
    assert!(unstored.is_empty(), "logged before their commit: {unstored:?}");
    // Group commit: fewer transactions than the 160 one at a time would take (80 claims,
    // 80 completions).
    assert!(summary.writes < 160, "{summary:?}");
}
