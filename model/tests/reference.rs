//! The reference store, one SPEC rule per test.

use retryq_model::{
    DeadReason, Failure, MAX_INT, Op, Outcome, Reply, Response, RunOutcome, StatsView, Status, Store,
};

fn enqueue(id: &str, max_attempts: u64, deadline: u64, now: u64) -> Op {
    enqueue_payload(id, "p", max_attempts, deadline, now)
}

fn enqueue_payload(id: &str, payload: &str, max_attempts: u64, deadline: u64, now: u64) -> Op {
    Op::Enqueue {
        priority: None,
        queue: None,
        id: id.into(),
        payload: payload.into(),
        max_attempts,
        deadline,
        now,
        not_before: None,
        base_ms: None,
        cap_ms: None,
        kind: None,
    }
}

fn claim(worker: &str, now: u64) -> Op {
    Op::Claim { queues: None, worker: worker.into(), now }
}

fn complete(worker: &str, id: &str, attempt: u64, outcome: Outcome, now: u64, jitter: Option<f64>) -> Op {
    Op::Complete { worker: worker.into(), id: id.into(), attempt, outcome, now, jitter }
}

fn run_once(worker: &str, now: u64, after: Option<u64>, outcome: RunOutcome, jitter: Option<f64>) -> Op {
    Op::RunOnce { queues: None, worker: worker.into(), now, after, outcome, jitter }
}

fn config(base_ms: u64, cap_ms: u64, lease_ms: u64) -> Op {
    Op::Config { base_ms: Some(base_ms), cap_ms: Some(cap_ms), lease_ms: Some(lease_ms), reap_limit: None }
}

fn ok(reply: Reply) -> Response {
    Response::Ok(reply)
}

fn err(failure: Failure) -> Response {
    Response::Err(failure)
}

fn is_invalid(response: &Response) -> bool {
    matches!(response, Response::Err(Failure::InvalidInput { .. }))
}

fn claimed(id: &str, attempt: u64, lease_until: u64) -> Response {
    ok(Reply::Claimed { id: id.into(), attempt, lease_until })
}

fn status(store: &Store, id: &str) -> Status {
    store.job(id).map(|j| j.phase.status()).unwrap_or_else(|| panic!("no job {id}"))
}

#[test]
fn the_spec_worked_trace() {
    let mut store = Store::new();
    let ops = [
        config(100, 250, 1000),
        enqueue_payload("order-7", "", 5, 700, 0),
        run_once("w1", 0, None, RunOutcome::Retryable, Some(0.5)),
        run_once("w1", 50, None, RunOutcome::Retryable, Some(0.5)),
        run_once("w1", 150, None, RunOutcome::Retryable, Some(0.5)),
        run_once("w1", 275, None, RunOutcome::Crash, None),
        claim("w2", 1274),
        claim("w2", 1275),
        Op::Get { id: "order-7".into() },
    ];
    let expected = include_str!("../../tests/traces/spec_worked_trace.expected.jsonl");
    let actual: Vec<String> = ops.iter().map(|op| store.step(op).to_json_line()).collect();
    assert_eq!(actual, expected.lines().collect::<Vec<_>>());
}

/// SPEC 5.8's worked trace of a bounded reap (tests/traces/bounded_reap.jsonl): a claim's
/// reap ends two of the four jobs due to end, by rule then by deadline, its pick passes over
/// the two it left, `stats` shows them pending, and the next reap ends them by first enqueue.
#[test]
fn the_spec_bounded_reap_trace() {
    let mut store = Store::new();
    let ops = [
        Op::Config { base_ms: None, cap_ms: None, lease_ms: Some(10), reap_limit: Some(2) },
        enqueue_payload("e", "", 1, 1000, 0),
        claim("w1", 0),
        enqueue_payload("a", "", 3, 100, 0),
        enqueue_payload("b", "", 3, 50, 0),
        enqueue_payload("c", "", 3, 100, 0),
        enqueue_payload("d", "", 3, 1000, 0),
        claim("w2", 200),
        Op::Stats { queue: None, now: 200 },
        Op::Reap { now: 200 },
        Op::Reap { now: 200 },
        Op::Get { id: "c".into() },
    ];
    let trace = include_str!("../../tests/traces/bounded_reap.jsonl");
    assert_eq!(trace.lines().count(), ops.len(), "the trace's lines, one for each op here");
    let expected = include_str!("../../tests/traces/bounded_reap.expected.jsonl");
    let actual: Vec<String> = ops.iter().map(|op| store.step(op).to_json_line()).collect();
    assert_eq!(actual, expected.lines().collect::<Vec<_>>());
}

#[test]
fn argument_checks_come_before_any_lookup() {
    let mut store = Store::new();
    for op in [
        complete("w", "missing", 0, Outcome::Ok, 0, None),
        complete("w", "missing", 1, Outcome::Retryable, 0, None),
        complete("w", "missing", 1, Outcome::Ok, 0, Some(1.5)),
        complete("", "missing", 1, Outcome::Ok, 0, None),
        Op::Redrive { id: "missing".into(), now: 5, add_attempts: 1, deadline: 5 },
        Op::Redrive { id: "missing".into(), now: 0, add_attempts: 0, deadline: 5 },
        Op::Get { id: "x".repeat(257) },
        run_once("w", 0, Some(MAX_INT + 1), RunOutcome::Ok, None),
    ] {
        assert!(is_invalid(&store.step(&op)), "{op:?}");
    }
    assert_eq!(store.step(&complete("w", "missing", 1, Outcome::Ok, 0, None)), err(Failure::NotFound));
}

#[test]
fn enqueue_validates_everything_and_stores_nothing_when_invalid() {
    let mut store = Store::new();
    for op in [
        enqueue("", 1, 10, 0),
        enqueue(&"x".repeat(257), 1, 10, 0),
        enqueue_payload("a", &"x".repeat((1 << 20) + 1), 1, 10, 0),
        enqueue("a", 0, 10, 0),
        enqueue("a", 1 << 31, 10, 0),
        enqueue("a", 1, 10, 10),
        enqueue("a", 1, MAX_INT + 1, 0),
        enqueue("a", 1, 10, MAX_INT + 1),
    ] {
        assert!(is_invalid(&store.step(&op)), "{op:?}");
    }
    assert!(store.jobs().is_empty());
    assert_eq!(store.step(&enqueue("a", (1 << 31) - 1, MAX_INT, MAX_INT - 1)), ok(Reply::Enqueued));
}

#[test]
fn an_existing_id_changes_nothing_whatever_its_status() {
    let mut store = Store::new();
    store.step(&enqueue("a", 3, 100, 0));
    store.step(&claim("w", 0));
    let before = store.clone();
    assert_eq!(store.step(&enqueue("a", 9, 500, 10)), ok(Reply::Existing));
    let other = enqueue_payload("a", "other", 3, 100, 0);
    assert_eq!(store.step(&other), err(Failure::Conflict));
    assert_eq!(store, before);
}

#[test]
fn claim_picks_the_smallest_available_at_then_the_first_enqueued() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 1000));
    store.step(&enqueue("b", 3, 10_000, 5));
    store.step(&enqueue("a", 3, 10_000, 5));
    store.step(&enqueue("c", 3, 10_000, 3));
    assert_eq!(store.step(&claim("w", 10)), claimed("c", 1, 1010), "smallest available_at");
    assert_eq!(store.step(&claim("w", 10)), claimed("b", 1, 1010), "tie: the first enqueued");
    assert_eq!(store.step(&claim("w", 10)), claimed("a", 1, 1010));
    assert_eq!(store.step(&claim("w", 10)), ok(Reply::None));
}

#[test]
fn a_redriven_job_keeps_its_first_enqueue_for_the_tie_break() {
    let mut store = Store::new();
    store.step(&enqueue("a", 1, 10_000, 0));
    store.step(&enqueue("b", 1, 10_000, 0));
    store.step(&claim("w", 0));
    store.step(&complete("w", "a", 1, Outcome::Permanent, 0, None));
    store.step(&Op::Redrive { id: "a".into(), now: 0, add_attempts: 1, deadline: 10_000 });
    assert_eq!(store.step(&claim("w", 0)), claimed("a", 2, 30_000));
}

#[test]
fn an_unexpired_lease_is_never_reaped_nor_claimed() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 50));
    store.step(&enqueue("a", 1, 20, 0));
    assert_eq!(store.step(&claim("w1", 10)), claimed("a", 1, 60));
    assert_eq!(
        store.step(&Op::Reap { now: 59 }),
        ok(Reply::Reaped { count: 0 }),
        "past the deadline, lease live"
    );
    assert_eq!(store.step(&claim("w2", 59)), ok(Reply::None));
    assert_eq!(store.step(&Op::Reap { now: 60 }), ok(Reply::Reaped { count: 1 }));
    assert_eq!(
        store.job("a").map(|j| j.phase.clone()),
        Some(retryq_model::Phase::Dead(DeadReason::Exhausted))
    );
}

#[test]
fn an_expired_lease_out_of_budget_dies_exhausted_before_deadline() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 10));
    store.step(&enqueue("a", 1, 5, 0));
    store.step(&run_once("w", 0, None, RunOutcome::Crash, None));
    store.step(&Op::Reap { now: 10 });
    let view = store.job("a").map(|j| j.view());
    assert_eq!(view.and_then(|v| v.dead_reason), Some(DeadReason::Exhausted));
}

#[test]
fn an_expired_lease_with_budget_is_reclaimed_and_the_stale_holder_fenced() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 10));
    store.step(&enqueue("a", 2, 100, 0));
    store.step(&claim("w1", 0));
    assert_eq!(store.step(&claim("w2", 10)), claimed("a", 2, 20));
    let before = store.clone();
    assert_eq!(store.step(&complete("w1", "a", 1, Outcome::Ok, 11, None)), err(Failure::LeaseLost));
    assert_eq!(store.step(&complete("w1", "a", 2, Outcome::Ok, 11, None)), err(Failure::LeaseLost), "owner");
    assert_eq!(store.step(&complete("w2", "a", 1, Outcome::Ok, 11, None)), err(Failure::LeaseLost), "token");
    assert_eq!(store.step(&complete("w2", "a", 2, Outcome::Ok, 9, None)), err(Failure::ClockWentBackwards));
    assert_eq!(store, before);
    assert_eq!(store.step(&complete("w2", "a", 2, Outcome::Ok, 11, None)), ok(Reply::Done));
}

#[test]
fn a_late_completion_still_counts_past_deadline_and_budget() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 10));
    store.step(&enqueue("a", 1, 5, 0));
    store.step(&claim("w", 0));
    assert_eq!(store.step(&complete("w", "a", 1, Outcome::Ok, 50, None)), ok(Reply::Done));
}

#[test]
fn retry_dies_when_now_plus_delay_reaches_the_deadline() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 1000));
    store.step(&enqueue("a", 5, 150, 0));
    store.step(&enqueue("b", 5, 151, 0));
    store.step(&claim("w", 100));
    store.step(&claim("w", 100));
    let at_deadline = complete("w", "a", 1, Outcome::Retryable, 100, Some(0.5));
    assert_eq!(store.step(&at_deadline), ok(Reply::Dead { reason: DeadReason::Deadline }), "100 + 50 = 150");
    let before = complete("w", "b", 1, Outcome::Retryable, 100, Some(0.5));
    assert_eq!(store.step(&before), ok(Reply::Retry { available_at: 150 }));
    assert_eq!(store.job("b").map(|j| j.deadline), Some(151), "the deadline never moves");
}

#[test]
fn retry_out_of_budget_dies_exhausted() {
    let mut store = Store::new();
    store.step(&enqueue("a", 1, 100_000, 0));
    store.step(&claim("w", 0));
    let r = store.step(&complete("w", "a", 1, Outcome::Retryable, 0, Some(0.0)));
    assert_eq!(r, ok(Reply::Dead { reason: DeadReason::Exhausted }));
}

#[test]
fn run_once_crash_ignores_after_and_other_outcomes_check_the_clock_first() {
    let mut store = Store::new();
    store.step(&enqueue("a", 5, 100_000, 0));
    store.step(&enqueue("b", 5, 100_000, 0));
    store.step(&enqueue("c", 5, 100_000, 0));
    let crashed = store.step(&run_once("w", 10, Some(3), RunOutcome::Crash, None));
    assert_eq!(crashed, ok(Reply::Crashed { id: "a".into(), attempt: 1 }));
    let backwards = store.step(&run_once("w", 10, Some(3), RunOutcome::Unknown, None));
    assert_eq!(backwards, err(Failure::RanClockWentBackwards { id: "b".into(), attempt: 1 }));
    let unknown = store.step(&run_once("w", 10, None, RunOutcome::Unknown, None));
    assert_eq!(unknown, err(Failure::UnknownError { id: "c".into(), attempt: 1 }));
    for id in ["a", "b", "c"] {
        assert_eq!(status(&store, id), Status::Leased, "{id} stays leased, its attempt spent");
    }
    assert_eq!(store.step(&run_once("w", 10, None, RunOutcome::Ok, None)), ok(Reply::None));
}

#[test]
fn run_once_reports_the_job_it_ran() {
    let mut store = Store::new();
    store.step(&enqueue("a", 5, 100_000, 0));
    assert!(is_invalid(&store.step(&run_once("w", 0, None, RunOutcome::Retryable, None))), "jitter required");
    assert_eq!(store.job("a").map(|j| j.attempts), Some(0), "a refused run_once claims nothing");
    let r = store.step(&run_once("w", 0, Some(7), RunOutcome::Retryable, Some(1.0)));
    assert_eq!(r, ok(Reply::RanRetry { id: "a".into(), attempt: 1, available_at: 107 }));
    let r = store.step(&run_once("w", 107, None, RunOutcome::Permanent, Some(0.25)));
    assert_eq!(r, ok(Reply::RanDead { id: "a".into(), attempt: 2, reason: DeadReason::Permanent }));
}

#[test]
fn redrive_rules() {
    let mut store = Store::new();
    store.step(&enqueue("a", 1, 100, 0));
    assert_eq!(
        store.step(&Op::Redrive { id: "a".into(), now: 0, add_attempts: 1, deadline: 5 }),
        err(Failure::NotDead)
    );
    store.step(&claim("w", 0));
    store.step(&complete("w", "a", 1, Outcome::Permanent, 0, None));
    let too_many = Op::Redrive { id: "a".into(), now: 0, add_attempts: (1 << 31) - 1, deadline: 5 };
    assert!(is_invalid(&store.step(&too_many)), "attempts + add_attempts > 2^31-1");
    assert_eq!(
        store.step(&Op::Redrive { id: "a".into(), now: 7, add_attempts: 2, deadline: 9 }),
        ok(Reply::Redriven)
    );
    let view = store.job("a").map(|j| j.view());
    assert_eq!(
        view.as_ref().map(|v| (v.attempts, v.max_attempts, v.deadline, v.redrives)),
        Some((1, 3, 9, 1))
    );
    assert_eq!(view.and_then(|v| v.available_at), Some(7));
}

#[test]
fn stats_counts_and_the_oldest_open_age() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 10));
    assert_eq!(store.step(&Op::Stats { queue: None, now: 0 }), ok(Reply::Stats(StatsView::default())));
    store.step(&enqueue("a", 1, 100, 5));
    store.step(&enqueue("b", 1, 100, 8));
    store.step(&claim("w", 8));
    let expected = StatsView { pending: 1, leased: 1, oldest_open_age_ms: Some(0), ..Default::default() };
    assert_eq!(store.step(&Op::Stats { queue: None, now: 4 }), ok(Reply::Stats(expected)), "0 at least");
    store.step(&Op::Reap { now: 18 });
    let expected = StatsView {
        pending: 1,
        dead: 1,
        dead_exhausted: 1,
        oldest_open_age_ms: Some(10),
        ..Default::default()
    };
    assert_eq!(store.step(&Op::Stats { queue: None, now: 18 }), ok(Reply::Stats(expected)));
}

#[test]
fn a_lease_may_end_past_2_to_the_53() {
    let mut store = Store::new();
    store.step(&Op::Config { base_ms: None, cap_ms: None, lease_ms: Some(MAX_INT), reap_limit: None });
    store.step(&enqueue("a", 1, MAX_INT, 0));
    assert_eq!(store.step(&claim("w", MAX_INT - 1)), claimed("a", 1, 2 * MAX_INT - 1));
}

#[test]
fn config_keeps_omitted_settings_and_refuses_a_zero_lease() {
    let mut store = Store::new();
    let config = |base_ms, lease_ms, reap_limit| Op::Config { base_ms, cap_ms: None, lease_ms, reap_limit };
    assert!(is_invalid(&store.step(&config(Some(7), Some(0), None))));
    assert!(is_invalid(&store.step(&config(Some(7), None, Some(0)))));
    assert!(is_invalid(&store.step(&config(Some(7), None, Some(MAX_INT + 1)))));
    assert_eq!(store.config(), retryq_model::Config::default(), "a refused config changes nothing");
    store.step(&config(Some(7), None, None));
    let expected = retryq_model::Config { base_ms: 7, cap_ms: 1000, lease_ms: 30_000, reap_limit: 1000 };
    assert_eq!(store.config(), expected);
    store.step(&config(None, None, Some(3)));
    assert_eq!(store.config(), retryq_model::Config { reap_limit: 3, ..expected });
    assert_eq!(store.step(&Op::Restart), ok(Reply::Restart));
    assert_eq!(store.config().base_ms, 7, "settings survive a restart");
}

#[test]
fn retry_delay_as_an_operation() {
    let mut store = Store::new();
    let op = Op::RetryDelay { attempt: 3, base_ms: 100, cap_ms: 250, jitter: 0.5 };
    assert_eq!(store.step(&op), ok(Reply::Delay { delay_ms: 125 }));
    assert!(is_invalid(&store.step(&Op::RetryDelay { attempt: 0, base_ms: 1, cap_ms: 1, jitter: 0.5 })));
    assert!(is_invalid(&store.step(&Op::RetryDelay { attempt: 1, base_ms: 1, cap_ms: 1, jitter: f64::NAN })));
}

fn scheduled(
    id: &str,
    deadline: u64,
    now: u64,
    not_before: Option<u64>,
    base_ms: Option<u64>,
    cap_ms: Option<u64>,
) -> Op {
    Op::Enqueue {
        priority: None,
        queue: None,
        id: id.into(),
        payload: "p".into(),
        max_attempts: 3,
        deadline,
        now,
        not_before,
        base_ms,
        cap_ms,
        kind: None,
    }
}

fn heartbeat(worker: &str, id: &str, attempt: u64, now: u64) -> Op {
    Op::Heartbeat { worker: worker.into(), id: id.into(), attempt, now }
}

fn cancel(id: &str, now: u64) -> Op {
    Op::Cancel { id: id.into(), now }
}

fn view(store: &mut Store, id: &str) -> retryq_model::JobView {
    match store.step(&Op::Get { id: id.into() }) {
        Response::Ok(Reply::Job(view)) => view,
        other => panic!("get {id}: {other:?}"),
    }
}

/// SPEC 3.2, 4.12: a scheduled job waits until `not_before`, then is claimed like any other.
#[test]
fn a_scheduled_job_is_claimable_from_not_before() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 1000));
    assert_eq!(store.step(&scheduled("a", 100, 10, Some(50), None, None)), ok(Reply::Enqueued));
    let a = view(&mut store, "a");
    assert_eq!((a.available_at, a.not_before, a.base_ms, a.cap_ms), (Some(50), 50, None, None));
    assert_eq!(store.step(&claim("w", 49)), ok(Reply::None), "one millisecond early");
    assert_eq!(store.step(&claim("w", 50)), claimed("a", 1, 1050), "at exactly not_before");
    // Without a schedule, not_before is the enqueue's now.
    store.step(&enqueue("b", 1, 100, 20));
    assert_eq!(view(&mut store, "b").not_before, 20);
}

/// SPEC 3.2, 5.2: `not_before` within now … deadline − 1, checked before any lookup and also
/// for an id that exists (6.22); each refusal names the field.
#[test]
fn not_before_is_checked_naming_the_field() {
    let mut store = Store::new();
    store.step(&enqueue("a", 1, 100, 0));
    let before = store.clone();
    for op in [
        scheduled("a", 100, 10, Some(9), None, None),
        scheduled("a", 100, 10, Some(100), None, None),
        scheduled("new", 100, 10, Some(101), None, None),
        scheduled("new", 100, 10, Some(MAX_INT + 1), None, None),
    ] {
        match store.step(&op) {
            Response::Err(Failure::InvalidInput { detail }) => {
                assert!(detail.starts_with("not_before:"), "{detail}")
            }
            other => panic!("{op:?}: {other:?}"),
        }
    }
    for (op, field) in [
        (scheduled("new", 100, 10, None, Some(MAX_INT + 1), None), "base_ms:"),
        (scheduled("new", 100, 10, None, None, Some(MAX_INT + 1)), "cap_ms:"),
    ] {
        match store.step(&op) {
            Response::Err(Failure::InvalidInput { detail }) => assert!(detail.starts_with(field), "{detail}"),
            other => panic!("{op:?}: {other:?}"),
        }
    }
    assert_eq!(store, before);
    // The edges are accepted: now itself and deadline − 1.
    assert_eq!(store.step(&scheduled("b", 100, 10, Some(10), None, None)), ok(Reply::Enqueued));
    assert_eq!(store.step(&scheduled("c", 100, 10, Some(99), Some(0), Some(MAX_INT))), ok(Reply::Enqueued));
}

/// SPEC 6.22: an existing id ignores the schedule and backoff it is sent with.
#[test]
fn an_existing_id_keeps_its_schedule_and_backoff() {
    let mut store = Store::new();
    store.step(&scheduled("a", 100, 0, Some(40), Some(7), None));
    let before = store.clone();
    assert_eq!(store.step(&scheduled("a", 200, 5, Some(5), Some(1), Some(2))), ok(Reply::Existing));
    assert_eq!(store, before);
    let a = view(&mut store, "a");
    assert_eq!(
        (a.available_at, a.not_before, a.base_ms, a.cap_ms, a.deadline),
        (Some(40), 40, Some(7), None, 100)
    );
}

/// SPEC 3.4, 6.23: a job's own settings replace the queue's one by one; an absent one is the
/// queue's in effect at the retry, not a copy taken at the enqueue.
#[test]
fn a_retry_uses_the_jobs_own_backoff_setting_by_setting() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 1000));
    store.step(&scheduled("base", 10_000, 0, None, Some(300), None));
    store.step(&scheduled("cap", 10_000, 0, None, None, Some(40)));
    store.step(&scheduled("both", 10_000, 0, None, Some(10), Some(5)));
    for id in ["base", "cap", "both"] {
        assert!(matches!(store.step(&claim("w", 0)), Response::Ok(Reply::Claimed { .. })), "{id}");
    }
    // The queue's settings change after the enqueues: base-only takes the new cap.
    store.step(&config(100, 200, 1000));
    let retry =
        |store: &mut Store, id: &str| store.step(&complete("w", id, 1, Outcome::Retryable, 10, Some(1.0)));
    assert_eq!(
        retry(&mut store, "base"),
        ok(Reply::Retry { available_at: 10 + 200 }),
        "min(cap 200 now, 300)"
    );
    assert_eq!(
        retry(&mut store, "cap"),
        ok(Reply::Retry { available_at: 10 + 40 }),
        "min(40, queue base 100)"
    );
    assert_eq!(
        retry(&mut store, "both"),
        ok(Reply::Retry { available_at: 10 + 5 }),
        "its own cap below its base"
    );
    // A redrive keeps them (SPEC 3.6), and so does a restart (3.10).
    store.step(&Op::Restart);
    let cap = view(&mut store, "cap");
    assert_eq!((cap.base_ms, cap.cap_ms, cap.not_before), (None, Some(40), 0));
}

/// SPEC 3.12: the fence, the clock, the deadline, each a refusal that changes nothing.
#[test]
fn heartbeat_refusals_change_nothing() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 10));
    store.step(&enqueue("a", 2, 100, 0));
    store.step(&enqueue("done", 1, 100, 0));
    assert_eq!(store.step(&claim("w", 5)), claimed("a", 1, 15));
    store.step(&claim("x", 5));
    store.step(&complete("x", "done", 1, Outcome::Ok, 5, None));
    let before = store.clone();
    for (op, expected) in [
        (heartbeat("w", "missing", 1, 6), err(Failure::NotFound)),
        (heartbeat("v", "a", 1, 6), err(Failure::LeaseLost)),
        (heartbeat("w", "a", 2, 6), err(Failure::LeaseLost)),
        (heartbeat("x", "done", 1, 6), err(Failure::LeaseLost)),
        (heartbeat("w", "a", 1, 4), err(Failure::ClockWentBackwards)),
        (heartbeat("w", "a", 1, 100), err(Failure::DeadlinePassed)),
        (heartbeat("w", "a", 1, 101), err(Failure::DeadlinePassed)),
    ] {
        assert_eq!(store.step(&op), expected, "{op:?}");
        assert_eq!(store, before, "{op:?}");
    }
    for op in [heartbeat("w", "a", 0, 6), heartbeat("", "a", 1, 6), heartbeat("w", "missing", 1, MAX_INT + 1)]
    {
        assert!(is_invalid(&store.step(&op)), "{op:?}: arguments before any lookup");
    }
    assert_eq!(store, before);
}

/// SPEC 3.12, 6.24, 4.11: the expiry becomes max(current, now + lease_ms), with the lease_ms
/// in effect; accepted up to deadline − 1; an expired lease neither reclaimed nor reaped is
/// renewed from now.
#[test]
fn heartbeat_extends_never_shrinks_and_stops_at_the_deadline() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 10));
    store.step(&enqueue("a", 2, 50, 0));
    assert_eq!(store.step(&claim("w", 0)), claimed("a", 1, 10));
    assert_eq!(store.step(&heartbeat("w", "a", 1, 0)), ok(Reply::Extended { lease_until: 10 }), "no change");
    assert_eq!(store.step(&heartbeat("w", "a", 1, 4)), ok(Reply::Extended { lease_until: 14 }));
    store.step(&config(100, 1000, 3));
    assert_eq!(
        store.step(&heartbeat("w", "a", 1, 6)),
        ok(Reply::Extended { lease_until: 14 }),
        "a shorter lease_ms never shortens"
    );
    assert_eq!(
        store.step(&heartbeat("w", "a", 1, 12)),
        ok(Reply::Extended { lease_until: 15 }),
        "the lease_ms in effect"
    );
    // Expired (15 ≤ 20), neither reclaimed nor reaped: renewed from now.
    assert_eq!(store.step(&heartbeat("w", "a", 1, 20)), ok(Reply::Extended { lease_until: 23 }));
    assert_eq!(
        store.step(&heartbeat("w", "a", 1, 49)),
        ok(Reply::Extended { lease_until: 52 }),
        "deadline − 1 + lease_ms"
    );
    assert_eq!(store.step(&heartbeat("w", "a", 1, 50)), err(Failure::DeadlinePassed));
    let a = store.job("a").expect("a");
    assert!(
        matches!(a.phase, retryq_model::Phase::Leased { claimed_at: 0, until: 52, .. }),
        "claimed_at stays the claim's"
    );
    assert_eq!(a.attempts, 1);
    // A clock going back below an earlier heartbeat but not below the claim is accepted, unchanged.
    assert_eq!(store.step(&heartbeat("w", "a", 1, 30)), ok(Reply::Extended { lease_until: 52 }));
}

/// SPEC 6.10: a heartbeat's expiry is an exact 64-bit sum, like a claim's.
#[test]
fn heartbeat_expiry_may_pass_2_53() {
    let mut store = Store::new();
    store.step(&config(100, 1000, MAX_INT));
    store.step(&enqueue("a", 1, MAX_INT, 0));
    assert_eq!(store.step(&claim("w", 0)), claimed("a", 1, MAX_INT));
    let until = (MAX_INT - 1) + MAX_INT;
    assert_eq!(store.step(&heartbeat("w", "a", 1, MAX_INT - 1)), ok(Reply::Extended { lease_until: until }));
    assert_eq!(view(&mut store, "a").available_at, Some(until));
}

/// SPEC 3.13, 6.25: cancel by status; a cancelled job is dead, counted, and redriven like any.
#[test]
fn cancel_takes_only_pending_jobs() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 10));
    store.step(&enqueue("leased", 1, 100, 0));
    store.step(&enqueue("done", 1, 100, 0));
    store.step(&enqueue("dead", 1, 100, 0));
    store.step(&scheduled("scheduled", 100, 0, Some(50), None, None));
    store.step(&enqueue("late", 1, 5, 0));
    assert_eq!(store.step(&claim("w", 0)), claimed("leased", 1, 10));
    store.step(&claim("x", 0));
    store.step(&complete("x", "done", 1, Outcome::Ok, 0, None));
    store.step(&claim("y", 0));
    store.step(&complete("y", "dead", 1, Outcome::Permanent, 0, None));
    let before = store.clone();
    for (op, expected) in [
        (cancel("missing", 1), err(Failure::NotFound)),
        (cancel("done", 1), err(Failure::NotCancellable)),
        (cancel("dead", 1), err(Failure::NotCancellable)),
    ] {
        assert_eq!(store.step(&op), expected, "{op:?}");
        assert_eq!(store, before, "{op:?}");
    }
    // SPEC 1.2: a leased job gets a cancel request, and a second cancel changes nothing more.
    let mut requested = store.clone();
    assert_eq!(requested.step(&cancel("leased", 1)), ok(Reply::Cancelling));
    let once = requested.clone();
    assert_eq!(requested.step(&cancel("leased", 10)), ok(Reply::Cancelling));
    assert_eq!(requested, once);
    assert!(view(&mut requested, "leased").cancel_requested);
    assert!(is_invalid(&store.step(&cancel("", 1))));
    assert!(is_invalid(&store.step(&cancel("missing", MAX_INT + 1))), "arguments before any lookup");
    assert_eq!(store, before);
    assert_eq!(store.step(&cancel("scheduled", 1)), ok(Reply::Cancelled), "before its not_before");
    assert_eq!(store.step(&cancel("late", 7)), ok(Reply::Cancelled), "past its deadline, not yet reaped");
    assert_eq!(store.step(&cancel("late", 8)), err(Failure::NotCancellable));
    assert_eq!(view(&mut store, "late").dead_reason, Some(DeadReason::Cancelled));
    match store.step(&Op::Stats { queue: None, now: 8 }) {
        Response::Ok(Reply::Stats(s)) => {
            assert_eq!((s.dead, s.dead_cancelled, s.dead_permanent), (3, 2, 1));
        }
        other => panic!("{other:?}"),
    }
    let redrive = Op::Redrive { id: "late".into(), now: 8, add_attempts: 1, deadline: 20 };
    assert_eq!(store.step(&redrive), ok(Reply::Redriven));
    assert_eq!(store.step(&claim("w", 8)), claimed("late", 1, 18), "claimable at the redrive's now");
    assert_eq!(store.step(&complete("w", "late", 1, Outcome::Ok, 9, None)), ok(Reply::Done));
}

/// SPEC 4.12: a redrive replaces the schedule with its own `now`.
#[test]
fn a_redrive_replaces_the_schedule() {
    let mut store = Store::new();
    store.step(&scheduled("a", 100, 0, Some(60), None, None));
    store.step(&cancel("a", 1));
    store.step(&Op::Redrive { id: "a".into(), now: 2, add_attempts: 1, deadline: 100 });
    assert!(matches!(store.step(&claim("w", 2)), Response::Ok(Reply::Claimed { .. })));
    assert_eq!(view(&mut store, "a").not_before, 60, "not_before stays the job's");
}

/// SPEC 1.2, 3.13: a cancel request refuses the holder's heartbeat, ends the job at its
/// holder's report (`ok` done, `retryable` dead(cancelled)) or at the reap after the lease.
#[test]
fn a_cancel_request_stops_a_running_job() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 10));
    store.step(&enqueue("a", 3, 100, 0));
    store.step(&enqueue("b", 3, 100, 0));
    store.step(&enqueue("c", 3, 100, 0));
    assert_eq!(store.step(&claim("w", 0)), claimed("a", 1, 10));
    assert_eq!(store.step(&claim("w", 0)), claimed("b", 1, 10));
    assert_eq!(store.step(&claim("w", 0)), claimed("c", 1, 10));
    for id in ["a", "b", "c"] {
        assert_eq!(store.step(&cancel(id, 1)), ok(Reply::Cancelling));
    }
    assert_eq!(store.step(&heartbeat("w", "a", 1, 2)), err(Failure::Cancelled));
    assert_eq!(
        store.step(&complete("w", "a", 1, Outcome::Ok, 3, None)),
        ok(Reply::Done),
        "its effect happened"
    );
    let stopped = complete("w", "b", 1, Outcome::Retryable, 3, Some(0.5));
    assert_eq!(store.step(&stopped), ok(Reply::Dead { reason: DeadReason::Cancelled }), "no retry");
    assert_eq!(store.step(&claim("x", 10)), ok(Reply::None), "never claimed again");
    let c = view(&mut store, "c");
    assert_eq!(
        (c.status, c.dead_reason, c.attempts, c.ended_at),
        (Status::Dead, Some(DeadReason::Cancelled), 1, Some(10))
    );
    assert!(!c.cancel_requested, "a request lasts only while the lease does");
    assert_eq!(view(&mut store, "b").ended_at, Some(3));
}

/// SPEC 1.6, 3.3: a claim takes only its queues' jobs, the smallest priority first, and its
/// reap covers every queue.
#[test]
fn claims_serve_their_queues_by_priority() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 10));
    let job = |id: &str, queue: &str, priority: u64, deadline: u64| Op::Enqueue {
        id: id.into(),
        payload: String::new(),
        max_attempts: 1,
        deadline,
        now: 0,
        not_before: None,
        base_ms: None,
        cap_ms: None,
        queue: Some(queue.into()),
        priority: Some(priority),
        kind: None,
    };
    store.step(&job("low", "mail", 5, 100));
    store.step(&job("urgent", "mail", 0, 100));
    store.step(&job("hook", "hooks", 0, 3));
    let mail = Op::Claim { worker: "w".into(), now: 1, queues: Some(vec!["mail".into()]) };
    assert_eq!(store.step(&mail), claimed("urgent", 1, 11), "priority before first enqueue");
    let on_default = Op::Claim { worker: "w".into(), now: 5, queues: None };
    assert_eq!(store.step(&on_default), ok(Reply::None), "no job in \"default\"");
    assert_eq!(
        view(&mut store, "hook").dead_reason,
        Some(DeadReason::Deadline),
        "reaped by a claim of another queue"
    );
    let twice = Op::Claim { worker: "w".into(), now: 5, queues: Some(vec!["mail".into(), "mail".into()]) };
    assert!(is_invalid(&store.step(&twice)));
    let again = job("urgent", "hooks", 9, 100);
    assert_eq!(store.step(&again), ok(Reply::Existing), "the first enqueue decides the queue");
    assert_eq!(view(&mut store, "urgent").queue, "mail");
}

/// SPEC 3.14, 3.15: a prune leaves tombstones that keep their ids from running again; a
/// forget frees them.
#[test]
fn prune_leaves_tombstones_and_forget_frees_ids() {
    let mut store = Store::new();
    store.step(&config(100, 1000, 10));
    store.step(&enqueue("a", 1, 100, 0));
    store.step(&enqueue("open", 1, 100, 0));
    assert_eq!(store.step(&claim("w", 0)), claimed("a", 1, 10));
    assert_eq!(store.step(&complete("w", "a", 1, Outcome::Ok, 4, None)), ok(Reply::Done));
    let prune = |before: u64, now: u64| Op::Prune { before, now };
    assert!(is_invalid(&store.step(&prune(5, 4))), "before after now");
    assert_eq!(store.step(&prune(3, 9)), ok(Reply::Pruned { count: 0 }), "ended after before");
    assert_eq!(store.step(&prune(4, 9)), ok(Reply::Pruned { count: 1 }), "the open job stays");
    assert!(store.job("a").is_none() && store.tombstone("a").is_some());
    assert_eq!(store.step(&enqueue("a", 1, 100, 9)), ok(Reply::Existing), "the same payload");
    assert_eq!(
        store.step(&Op::Redrive { id: "a".into(), now: 9, add_attempts: 1, deadline: 99 }),
        err(Failure::Pruned)
    );
    assert_eq!(store.step(&cancel("a", 9)), err(Failure::Pruned));
    assert_eq!(store.step(&complete("w", "a", 1, Outcome::Ok, 9, None)), err(Failure::LeaseLost));
    match store.step(&Op::Stats { now: 9, queue: None }) {
        Response::Ok(Reply::Stats(s)) => assert_eq!((s.pending, s.done, s.pruned_done), (1, 0, 1)),
        other => panic!("{other:?}"),
    }
    assert_eq!(store.step(&Op::Forget { before: 3, now: 9 }), ok(Reply::Forgotten { count: 0 }));
    assert_eq!(store.step(&Op::Forget { before: 4, now: 9 }), ok(Reply::Forgotten { count: 1 }));
    assert_eq!(store.step(&enqueue("a", 1, 100, 9)), ok(Reply::Enqueued), "a forgotten id is new");
    assert_eq!(view(&mut store, "a").attempts, 0);
}
