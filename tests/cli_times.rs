//! Times as an operator reads them, through the real binary: `get --human`, `history` and
//! `dead` show every time in Unix milliseconds with the same instant in UTC beside it, `get`'s
//! JSON and the `--json` outputs stay milliseconds alone, and a time past the year 9999 — a
//! deadline of 2^53−1, a lease expiry past 2^53 — is said in words, never a panic. Time flags
//! take RFC 3339 with any offset or Unix milliseconds, and their errors show both forms.

mod common;

use common::{BIN, Ran, command, ran};
use std::fs;
use std::path::{Path, PathBuf};

/// 2100-01-01T00:00:00.123Z: a deadline every run of these tests is before.
const DEADLINE: &str = "4102444800123";
const DEADLINE_UTC: &str = "4102444800123 (2100-01-01T00:00:00.123Z)";
/// SPEC's largest integer, as a deadline: some 285,000 years from 1970.
const FAR: &str = "9007199254740991";

fn retryq(db: &Path, args: &[&str]) -> Ran {
    ran(command(db, args).output().expect("run retryq"))
}

fn fresh() -> (tempfile::TempDir, PathBuf) {
    common::fresh("retryq-times-")
}

fn enqueue(db: &Path, id: &str, deadline: &str, max_attempts: &str) {
    let r = retryq(
        db,
        &["enqueue", "--id", id, "--payload", "x", "--max-attempts", max_attempts, "--deadline", deadline],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

/// Whether `text` holds a UTC time in RFC 3339 with milliseconds right after `ms ` in
/// parentheses: `1796062956712 (2026-11-30T18:22:36.712Z)`.
fn has_stamp(text: &str) -> bool {
    text.split(" (").skip(1).any(|rest| {
        let time: Vec<char> = rest.chars().take(25).collect();
        time.len() == 25
            && time[4] == '-'
            && time[10] == 'T'
            && time[19] == '.'
            && time[23] == 'Z'
            && time[24] == ')'
    })
}

#[test]
fn get_stays_spec_json_and_human_shows_utc_beside_the_milliseconds() {
    let (_dir, db) = fresh();
    enqueue(&db, "order-7", DEADLINE, "3");

    let json = retryq(&db, &["get", "order-7"]);
    assert_eq!(json.code, Some(0), "{}", json.stderr);
    // SPEC's keys in SPEC's order, times in milliseconds alone.
    let (head, tail) = json.stdout.split_once(r#""available_at":"#).expect("available_at");
    assert_eq!(head, r#"{"ok":"job","id":"order-7","status":"pending","attempts":0,"max_attempts":3,"#);
    let (available_at, tail) = tail.split_once(',').expect("more keys");
    assert!(available_at.parse::<u64>().is_ok(), "{}", json.stdout);
    // SPEC 3.9 (1.1): a job enqueued without a schedule has `not_before` = its enqueue's `now`,
    // which is also its first `available_at`.
    assert_eq!(
        tail,
        format!(
            r#""deadline":{DEADLINE},"dead_reason":null,"redrives":0,"not_before":{available_at},"base_ms":null,"cap_ms":null,"queue":"default","priority":0,"ended_at":null,"cancel_requested":false}}"#
        ) + "\n"
    );

    let human = retryq(&db, &["get", "order-7", "--human"]);
    assert_eq!(human.code, Some(0), "{}", human.stderr);
    let line = |name: &str| {
        human
            .stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name}:\n{}", human.stdout))
    };
    assert_eq!(line("deadline"), format!("deadline      {DEADLINE_UTC}"));
    assert!(has_stamp(line("available at")) && has_stamp(line("enqueued at")), "{}", human.stdout);
    assert_eq!(line("status"), "status        pending");
    assert_eq!(line("attempts"), "attempts      0 of 3");

    let missing = retryq(&db, &["get", "nobody", "--human"]);
    assert_eq!((missing.code, missing.stdout.as_str()), (Some(1), ""));
    assert!(missing.stderr.contains("no job \"nobody\""), "{}", missing.stderr);
}

#[test]
fn history_and_dead_show_utc_beside_the_milliseconds_and_json_does_not() {
    let (_dir, db) = fresh();
    enqueue(&db, "bad", DEADLINE, "2");
    let r = retryq(&db, &["work", "--worker", "w1", "--exec", "exit 65", "--until-idle"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);

    let history = retryq(&db, &["history", "bad"]);
    assert_eq!(history.code, Some(0), "{}", history.stderr);
    // The transitions; the record of the attempt the death ended, indented under it, shows
    // no time of its own, only how long the attempt ran.
    let (records, steps): (Vec<&str>, Vec<&str>) =
        history.stdout.lines().partition(|l| l.starts_with("    "));
    assert_eq!(steps.len(), 3, "enqueue, claim, dead:\n{}", history.stdout);
    assert_eq!(records.len(), 1, "{}", history.stdout);
    assert!(records[0].contains("ms: permanent  error: exit 65") && !has_stamp(records[0]), "{}", records[0]);
    for step in &steps {
        // Each entry begins with its time, both ways.
        let (at, _) = step.split_once("  ").expect("columns");
        assert!(has_stamp(at) && at.len() == "1796062956712 (2026-11-30T18:22:36.712Z)".len(), "{step}");
        assert!(step.contains(&format!("deadline {DEADLINE_UTC}")), "{step}");
    }
    assert!(steps[0].contains("available at ") && steps[1].contains("lease until "), "{}", history.stdout);
    assert!(has_stamp(steps[1].split("lease until ").nth(1).expect("expiry")), "{}", steps[1]);
    let json = retryq(&db, &["history", "bad", "--json"]);
    for line in json.stdout.lines() {
        let entry: serde_json::Value = serde_json::from_str(line).expect("json");
        assert!(entry["at"].is_u64() && entry["deadline"].as_u64() == DEADLINE.parse().ok(), "{line}");
    }
    let ended: Vec<serde_json::Value> = json
        .stdout
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("json")["ended_attempt"].clone())
        .collect();
    assert!(ended[0].is_null() && ended[1].is_null(), "the enqueue and the claim end no attempt");
    assert_eq!((ended[2]["attempt"].as_u64(), ended[2]["outcome"].as_str()), (Some(1), Some("permanent")));
    assert!(ended[2]["claimed_at"].is_u64() && ended[2]["duration_ms"].is_u64(), "{}", ended[2]);

    let dead = retryq(&db, &["dead"]);
    assert_eq!(dead.code, Some(0), "{}", dead.stderr);
    let lines: Vec<&str> = dead.stdout.lines().collect();
    assert!(lines[0].contains("enqueued at") && lines[0].contains("deadline"), "{}", dead.stdout);
    assert!(
        lines[1].starts_with("bad ") && lines[1].contains(DEADLINE_UTC) && has_stamp(lines[1]),
        "{}",
        dead.stdout
    );
    assert!(lines[1].contains("exit 65 (permanent)"), "{}", lines[1]);
    let json = retryq(&db, &["dead", "--json"]);
    assert!(!json.stdout.contains("(2"), "{}", json.stdout);
}

#[test]
fn times_past_the_year_9999_are_said_in_words() {
    let (dir, db) = fresh();
    let r =
        retryq(&db, &["enqueue", "--id", "far", "--payload", "x", "--max-attempts", "2", "--deadline", FAR]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("deadline after the year 9999 (in "), "{}", r.stderr);
    let human = retryq(&db, &["get", "far", "--human"]);
    assert_eq!(human.code, Some(0), "{}", human.stderr);
    assert!(human.stdout.contains(&format!("deadline      {FAR} (after the year 9999)")), "{}", human.stdout);
    let history = retryq(&db, &["history", "far"]);
    assert!(history.stdout.contains(&format!("deadline {FAR} (after the year 9999)")), "{}", history.stdout);

    // A lease of 2^53−1 ms expires past 2^53 (SPEC 6.10). The attempt itself looks at the
    // job while it holds it, which is the only time the lease is there to be seen.
    let seen = dir.path().join("seen");
    let exec = format!(
        "{BIN} get far --human > {seen}; {BIN} list --status leased >> {seen}; {BIN} history far >> {seen}",
        seen = seen.display()
    );
    let lease = format!("{FAR}ms");
    let r = retryq(&db, &["work", "--worker", "w1", "--lease", &lease, "--exec", &exec, "--until-idle"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let seen = fs::read_to_string(&seen).expect("what the attempt saw");
    assert!(!seen.contains("panicked"), "{seen}");
    let expiry = seen.lines().find(|l| l.starts_with("lease until")).unwrap_or_else(|| panic!("{seen}"));
    let ms: u64 = expiry.split_whitespace().nth(2).and_then(|ms| ms.parse().ok()).expect("milliseconds");
    assert!(ms > 1 << 53, "{expiry}");
    assert!(expiry.ends_with("(after the year 9999)"), "{expiry}");
    assert!(
        seen.lines().any(|l| l.starts_with("far ")
            && l.contains("leased")
            && l.contains(&format!("{ms} (after the year 9999)"))),
        "{seen}"
    );
    assert!(seen.contains(&format!("lease until {ms} (after the year 9999)")), "{seen}");
}

#[test]
fn time_flags_take_rfc_3339_with_any_offset_and_unix_milliseconds() {
    let (_dir, db) = fresh();
    // The same instant three ways: DEADLINE, in UTC and an hour east of it.
    let forms = ["4102444800123", "2100-01-01T00:00:00.123Z", "2100-01-01T01:00:00.123+01:00"];
    for (n, deadline) in forms.iter().enumerate() {
        let id = format!("job-{n}");
        // Scheduled a second before the deadline, in RFC 3339 with an offset west of UTC.
        let flags = ["--deadline", deadline, "--not-before", "2099-12-31T18:59:59.123-05:00"];
        let r = retryq(
            &db,
            &[&["enqueue", "--id", &id, "--payload", "x", "--max-attempts", "1"][..], &flags[..]].concat(),
        );
        assert_eq!(r.code, Some(0), "{deadline}: {}", r.stderr);
        let job: serde_json::Value =
            serde_json::from_str(&retryq(&db, &["get", &id]).stdout).expect("get prints JSON");
        assert_eq!(job["deadline"].as_u64(), DEADLINE.parse().ok(), "{deadline}");
        assert_eq!(job["not_before"].as_u64(), Some(4_102_444_799_123), "{deadline}");
    }
    // redrive's --deadline is the same flag: read, then refused only because nothing is dead.
    let r = retryq(
        &db,
        &["redrive", "--id", "job-0", "--add-attempts", "1", "--deadline", "2100-01-01T00:00:00Z"],
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stdout.contains("not_dead"), "{}", r.stdout);
    for command in ["enqueue", "redrive"] {
        let help = retryq(&db, &[command, "--help"]).stdout;
        assert!(
            help.contains("--deadline <TIME>") && help.contains("RFC 3339 or Unix milliseconds"),
            "{help}"
        );
    }
    let help = retryq(&db, &["enqueue", "--help"]).stdout;
    assert!(help.contains("--not-before <TIME>"), "{help}");
}

/// A leap second, `23:59:60`, is the last millisecond of its minute (`src/cmd/instant.rs`):
/// before, it was refused as "finer than a millisecond". A second 60 anywhere else is refused
/// as no leap second.
#[test]
fn a_leap_second_is_the_last_millisecond_of_its_minute() {
    let (_dir, db) = fresh();
    // The end of 2099 in UTC; the end of June 2099 written five hours west of UTC.
    let flags = ["--deadline", "2099-12-31T23:59:60Z", "--not-before", "2099-06-30T18:59:60-05:00"];
    let r = retryq(
        &db,
        &[&["enqueue", "--id", "leap", "--payload", "x", "--max-attempts", "1"][..], &flags].concat(),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let job: serde_json::Value =
        serde_json::from_str(&retryq(&db, &["get", "leap"]).stdout).expect("get prints JSON");
    // 2100-01-01T00:00:00Z and 2099-07-01T00:00:00Z, each less one millisecond.
    assert_eq!(job["deadline"].as_u64(), Some(4_102_444_799_999), "{job}");
    assert_eq!(job["not_before"].as_u64(), Some(4_086_547_199_999), "{job}");
    let r = retryq(
        &db,
        &[
            "enqueue",
            "--id",
            "no-leap",
            "--payload",
            "x",
            "--max-attempts",
            "1",
            "--deadline",
            "2099-06-15T10:20:60Z",
        ],
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--deadline <TIME>") && r.stderr.contains("leap second"), "{}", r.stderr);
}

#[test]
fn a_time_the_queue_cannot_hold_is_refused_by_its_flag_not_rounded() {
    let (dir, db) = fresh();
    let enqueue = ["enqueue", "--id", "a", "--payload", "x", "--max-attempts", "1"];
    let cases: [(&[&str], &str, &str); 7] = [
        (&["--deadline", "2100-01-01T00:00:00.0005Z"], "--deadline <TIME>", "finer than a millisecond"),
        (&["--deadline", "2100-01-01T00:00:00.1234Z"], "--deadline <TIME>", "finer than a millisecond"),
        (&["--deadline", "2100-01-01"], "--deadline <TIME>", "or Unix milliseconds"),
        (&["--deadline", "-5"], "--deadline <TIME>", "before 1970"),
        (&["--deadline", "9007199254740992"], "--deadline <TIME>", "too large"),
        (
            &["--ttl", "1h", "--not-before", "2100-01-01T00:00:00.000001Z"],
            "--not-before <TIME>",
            "finer than",
        ),
        (&["--ttl", "1h", "--not-before", "next tuesday"], "--not-before <TIME>", "not a time"),
    ];
    for (flags, flag, why) in cases {
        let r = retryq(&db, &[&enqueue[..], flags].concat());
        assert_eq!((r.code, r.stdout.as_str()), (Some(2), ""), "{flags:?}: {}", r.stderr);
        assert!(r.stderr.contains(flag) && r.stderr.contains(why), "{flags:?}: {}", r.stderr);
    }
    assert!(!db.exists(), "{:?}", fs::read_dir(dir.path()).map(|d| d.count()));
}

#[test]
fn errors_about_times_show_both_forms_and_start_in_in_units() {
    let (dir, db) = fresh();
    let enqueue = ["enqueue", "--id", "a", "--payload", "x", "--max-attempts", "1"];
    let r = retryq(&db, &[&enqueue[..], &["--deadline", "1764633600000"]].concat());
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    let said = "--deadline: 1764633600000 (2025-12-02T00:00:00.000Z) is not after now, ";
    let rest = r.stderr.split(said).nth(1).unwrap_or_else(|| panic!("{said:?} in {}", r.stderr));
    assert!(has_stamp(rest), "now in both forms: {}", r.stderr);

    let r =
        retryq(&db, &[&enqueue[..], &["--ttl", "1h", "--not-before", "2025-12-02T01:00:00+01:00"]].concat());
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("--not-before: 1764633600000 (2025-12-02T00:00:00.000Z) is before now, "),
        "{}",
        r.stderr
    );
    let flags = ["--deadline", DEADLINE, "--not-before", "2100-01-01T00:00:00.123Z"];
    let r = retryq(&db, &[&enqueue[..], &flags[..]].concat());
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("--not-before: {DEADLINE_UTC} is not before the deadline, {DEADLINE_UTC}")),
        "{}",
        r.stderr
    );
    let r = retryq(&db, &[&enqueue[..], &["--ttl", "1h", "--start-in", "2h"]].concat());
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("--start-in: 2h from now, ") && r.stderr.contains("is not before the deadline, "),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("7200000 ms"), "{}", r.stderr);
    assert!(!db.exists(), "{:?}", fs::read_dir(dir.path()).map(|d| d.count()));
}
