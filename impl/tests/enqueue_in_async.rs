//! Enqueue in the application's own transaction on the async PostgreSQL clients —
//! `tokio-postgres` (`PgQueue::enqueue_in_tokio_postgres`) and sqlx (`PgQueue::enqueue_in_sqlx`):
//! a rolled-back transaction leaves no job, a committed one is claimable, a refusal leaves the
//! transaction usable, and every answer (new, existing, conflict, each refusal) is
//! `Queue::enqueue`'s for the same input.

use retryq::{Backend, Completion, Enqueue, Enqueued, Error, NewJob, Outcome, PgQueue, Queue, Result};
use tokio::runtime::Runtime;

const NOW: u64 = 1_000;
const ORDERS: &str = "CREATE TABLE orders (id BIGINT PRIMARY KEY)";
const ORDER: &str = "INSERT INTO orders (id) VALUES ($1)";

fn job(id: &'static str, payload: &'static str) -> NewJob<'static> {
    NewJob { id, payload, max_attempts: 3, deadline: 1 << 40, now: NOW, ..NewJob::default() }
}

/// One input for every answer an enqueue gives: new, existing, conflict, each argument
/// refused, and a pruned id's tombstone answering existing or conflict.
fn inputs() -> Vec<NewJob<'static>> {
    vec![
        job("a", "p"),
        job("a", "p"),
        job("a", "other"),
        job("", "p"),
        NewJob { max_attempts: 0, ..job("b", "p") },
        NewJob { deadline: NOW, ..job("b", "p") },
        NewJob { not_before: Some(NOW - 1), ..job("b", "p") },
        NewJob { queue: Some(""), ..job("b", "p") },
        NewJob { priority: Some(10), ..job("b", "p") },
        NewJob { deadline: 1 << 60, ..job("b", "p") },
        job("pruned", "p"),
        job("pruned", "other"),
        NewJob { queue: Some("mail"), priority: Some(3), not_before: Some(NOW + 5), ..job("c", "p") },
    ]
}

/// An answer as a word: the same word from two stores is the same answer.
fn word(answer: &Result<Enqueued>) -> String {
    match answer {
        Ok(enqueued) => format!("{enqueued:?}"),
        Err(Error::InvalidInput { field, .. }) => format!("invalid_input {field}"),
        Err(e) => format!("{:?}", e.kind()),
    }
}

/// Leaves a tombstone under `pruned`: enqueued, done, pruned.
fn prune_one(store: &mut dyn Backend) {
    store.enqueue(&job("pruned", "p")).expect("enqueue");
    let claimed = store.claim("w", NOW + 1).expect("claim").expect("claimed");
    store.complete(&Completion::new(&claimed.lease, Outcome::Ok, NOW + 2, 0.5)).expect("done");
    assert_eq!(store.prune(NOW + 2, NOW + 3).expect("prune"), 1);
}

/// `Queue::enqueue`'s answers to `inputs()`, after `prune_one`.
fn reference() -> Vec<String> {
    let mut queue = Queue::open_in_memory().expect("queue");
    prune_one(&mut queue);
    let answers: Vec<String> = inputs().iter().map(|input| word(&queue.enqueue(input))).collect();
    // Every kind of answer is there, so an equal list is a comparison of each.
    for expected in ["New", "Existing", "Conflict", "invalid_input id", "invalid_input priority"] {
        assert!(answers.iter().any(|a| a == expected), "{expected} missing from {answers:?}");
    }
    answers
}

/// A fresh database with the application's `orders` table and the queue, and a `PgQueue` on
/// it holding a tombstone; `None` where PostgreSQL is not there (outside CI).
fn database(test: &str) -> Option<(String, PgQueue)> {
    let url = retryq_pgtest::database(test)?;
    let mut client = retryq::postgres::Client::connect(&url, retryq::postgres::NoTls).expect("connect");
    client.batch_execute(ORDERS).expect("orders");
    PgQueue::install(&mut client).expect("install");
    let mut queue = PgQueue::connect(&url).expect("queue");
    prune_one(&mut queue);
    Some((url, queue))
}

fn orders(url: &str) -> i64 {
    let mut client = retryq::postgres::Client::connect(url, retryq::postgres::NoTls).expect("connect");
    client.query_one("SELECT count(*) FROM orders", &[]).expect("count").get(0)
}

/// What both drivers must show, given `enqueue(order, job, commit)`: the order's row and the
/// job in one transaction, committed or rolled back; the answers; a refusal that leaves the
/// transaction usable; a database without the schema refused.
fn the_drivers_contract(
    url: &str,
    mut queue: PgQueue,
    rt: &Runtime,
    mut enqueue: impl AsyncFnMut(i64, &NewJob<'_>, bool) -> (Result<Enqueued>, Result<Enqueued>),
) {
    // Rolled back: neither the row nor the job.
    let (first, _) = rt.block_on(enqueue(1, &job("rolled-back", "p"), false));
    assert_eq!(first.expect("enqueued"), Enqueued::New);
    assert_eq!(queue.get("rolled-back").expect("get"), None);
    assert_eq!(orders(url), 0);
    // Committed: the row, and the job, claimable; a conflict in the same transaction was
    // refused without spoiling it.
    let (first, refused) = rt.block_on(enqueue(2, &job("committed", "p"), true));
    assert_eq!(first.expect("enqueued"), Enqueued::New);
    assert_eq!(word(&refused), "Conflict", "the second enqueue, another payload: {refused:?}");
    assert_eq!(orders(url), 1);
    let claimed = queue.claim("w", NOW + 10).expect("claim").expect("the committed job is claimable");
    assert_eq!((claimed.lease.id.as_str(), claimed.payload.as_str()), ("committed", "p"));
    // The answers, each in a committed transaction of its own.
    let mut answers = Vec::new();
    for (n, input) in inputs().iter().enumerate() {
        let order = 100 + i64::try_from(n).expect("small");
        answers.push(word(&rt.block_on(enqueue(order, input, true)).0));
    }
    assert_eq!(answers, reference());
    let c = queue.get("c").expect("get").expect("c");
    assert_eq!((c.queue.as_str(), c.priority, c.not_before), ("mail", 3, NOW + 5));
    assert!(queue.audit().expect("audit").is_clean());
}

/// A database without the queue's schema: refused, nothing written, the transaction usable.
fn no_schema_url(test: &str) -> Option<String> {
    let url = retryq_pgtest::database(test)?;
    let mut client = retryq::postgres::Client::connect(&url, retryq::postgres::NoTls).expect("connect");
    client.batch_execute(ORDERS).expect("orders");
    Some(url)
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

async fn tokio_client(url: &str) -> retryq::tokio_postgres::Client {
    let (client, connection) =
        retryq::tokio_postgres::connect(url, retryq::tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
}

#[test]
fn tokio_postgres_enqueues_in_the_applications_transaction() {
    let Some((url, queue)) = database("tokio_postgres_enqueues_in_the_applications_transaction") else {
        return;
    };
    let rt = runtime();
    let mut client = rt.block_on(tokio_client(&url));
    the_drivers_contract(&url, queue, &rt, async |order, input, commit| {
        let mut tx = client.transaction().await.expect("begin");
        tx.execute(ORDER, &[&order]).await.expect("the order's row");
        let first = PgQueue::enqueue_in_tokio_postgres(&mut tx, input).await;
        let again =
            PgQueue::enqueue_in_tokio_postgres(&mut tx, &NewJob { payload: "another", ..*input }).await;
        // Still usable after either answer.
        tx.execute("SELECT 1", &[]).await.expect("the transaction goes on");
        match commit {
            true => tx.commit().await.expect("commit"),
            false => tx.rollback().await.expect("rollback"),
        }
        (first, again)
    });
    // On the server's clock, and refused where the schema is missing.
    let Some(bare) = no_schema_url("tokio_postgres_enqueue_in_a_database_without_the_queue") else { return };
    rt.block_on(async {
        let mut client = tokio_client(&bare).await;
        let mut tx = client.transaction().await.expect("begin");
        let err = PgQueue::enqueue_in_tokio_postgres(&mut tx, &Enqueue::new("x", "p")).await.unwrap_err();
        assert!(matches!(err, Error::NotRetryq { .. }), "{err}");
        tx.execute(ORDER, &[&1_i64]).await.expect("the transaction goes on");
        tx.commit().await.expect("commit");
        let mut tx = client.transaction().await.expect("begin");
        let err = PgQueue::enqueue_in_tokio_postgres(&mut tx, &job("", "p")).await.unwrap_err();
        assert_eq!(word(&Err(err)), "invalid_input id", "the arguments are checked before the schema");
    });
    assert_eq!(orders(&bare), 1);
}

#[test]
fn sqlx_enqueues_in_the_applications_transaction() {
    use sqlx::Connection as _;
    let Some((url, queue)) = database("sqlx_enqueues_in_the_applications_transaction") else { return };
    let rt = runtime();
    let mut conn = rt.block_on(sqlx::PgConnection::connect(&url)).expect("connect");
    the_drivers_contract(&url, queue, &rt, async |order, input, commit| {
        let mut tx = conn.begin().await.expect("begin");
        sqlx::query(ORDER).bind(order).execute(&mut *tx).await.expect("the order's row");
        let first = PgQueue::enqueue_in_sqlx(&mut tx, input).await;
        let again = PgQueue::enqueue_in_sqlx(&mut tx, &NewJob { payload: "another", ..*input }).await;
        sqlx::query("SELECT 1").execute(&mut *tx).await.expect("the transaction goes on");
        match commit {
            true => tx.commit().await.expect("commit"),
            false => tx.rollback().await.expect("rollback"),
        }
        (first, again)
    });
    let Some(bare) = no_schema_url("sqlx_enqueue_in_a_database_without_the_queue") else { return };
    rt.block_on(async {
        let mut conn = sqlx::PgConnection::connect(&bare).await.expect("connect");
        let mut tx = conn.begin().await.expect("begin");
        let err = PgQueue::enqueue_in_sqlx(&mut tx, &Enqueue::new("x", "p")).await.unwrap_err();
        assert!(matches!(err, Error::NotRetryq { .. }), "{err}");
        sqlx::query(ORDER).bind(1_i64).execute(&mut *tx).await.expect("the transaction goes on");
        tx.commit().await.expect("commit");
    });
    assert_eq!(orders(&bare), 1);
}

/// `Enqueue`'s times are the server's, read in the transaction: the default budget, an hour.
#[test]
fn an_enqueue_is_resolved_on_the_servers_clock() {
    let Some((url, queue)) = database("an_enqueue_is_resolved_on_the_servers_clock") else { return };
    let rt = runtime();
    rt.block_on(async {
        let mut client = tokio_client(&url).await;
        let mut tx = client.transaction().await.expect("begin");
        let answer = PgQueue::enqueue_in_tokio_postgres(&mut tx, &Enqueue::new("clocked", "p")).await;
        assert_eq!(answer.expect("enqueued"), Enqueued::New);
        tx.commit().await.expect("commit");
    });
    let job = queue.get("clocked").expect("get").expect("committed");
    assert_eq!((job.max_attempts, job.deadline - job.enqueued_at), (5, 3_600_000));
    let server = retryq::now_ms().expect("clock");
    assert!(job.enqueued_at.abs_diff(server) < 60_000, "{} against {server}", job.enqueued_at);
}
