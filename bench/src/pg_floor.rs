//! The PostgreSQL floor: what the server itself does for the same three writes per job, at the
//! queue's durability (`synchronous_commit = on`) and with no queue logic — no budget, no
//! reaping, no fencing, no history, no checks. Each statement is its own transaction
//! (autocommit), as each queue operation is. The pick skips rows other workers hold locked,
//! as the queue's claim does, so that several processes do not queue behind one row.

use postgres::{Client, NoTls, Statement};

use crate::BenchError;

const DDL: &str = "
CREATE TABLE IF NOT EXISTS jobs (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id           text   NOT NULL UNIQUE,
    payload      text   NOT NULL,
    status       text   NOT NULL,
    attempts     bigint NOT NULL,
    available_at bigint,
    owner        text
);
CREATE INDEX IF NOT EXISTS jobs_due ON jobs (available_at, seq) WHERE status = 'pending';
";

const INSERT: &str =
    "INSERT INTO jobs (id, payload, status, attempts, available_at) VALUES ($1, $2, 'pending', 0, $3)";

const CLAIM: &str = "
    UPDATE jobs SET status = 'leased', attempts = attempts + 1, owner = $2, available_at = $3
    WHERE seq = (SELECT seq FROM jobs WHERE status = 'pending' AND available_at <= $1
                 ORDER BY available_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id";

const DONE: &str = "UPDATE jobs SET status = 'done', available_at = NULL, owner = NULL WHERE id = $1";

/// Connects with the queue's durability and creates the floor's table if missing.
pub fn open(url: &str) -> Result<Client, BenchError> {
    let mut client = Client::connect(url, NoTls)?;
    client.batch_execute("SET synchronous_commit = on")?;
    client.batch_execute(DDL)?;
    Ok(client)
}

/// The three prepared statements of one floor worker.
pub struct Floor {
    client: Client,
    insert: Statement,
    claim: Statement,
    done: Statement,
}

impl Floor {
    /// Prepares the three statements once, so that the floor times only their execution.
    pub fn new(mut client: Client) -> Result<Floor, BenchError> {
        let insert = client.prepare(INSERT)?;
        let claim = client.prepare(CLAIM)?;
        let done = client.prepare(DONE)?;
        Ok(Floor { client, insert, claim, done })
    }

    /// One job through: insert, lease, done — three commits. `false` if the pick found
    /// nothing (another process took the last due job).
    pub fn cycle(&mut self, id: &str, payload: &str, worker: &str, now: u64) -> Result<bool, BenchError> {
        self.client.execute(&self.insert, &[&id, &payload, &(now as i64)])?;
        self.take(worker, now)
    }

    /// One due row leased and finished — two commits. `false` if the pick found nothing.
    pub fn take(&mut self, worker: &str, now: u64) -> Result<bool, BenchError> {
        let now = now as i64;
        let lease_until = now + 30_000;
        let leased = self.client.query_opt(&self.claim, &[&now, &worker, &lease_until])?;
        let Some(row) = leased else { return Ok(false) };
        let id: String = row.try_get(0)?;
        self.client.execute(&self.done, &[&id])?;
        Ok(true)
    }
}

/// `jobs` pending rows, due at 0, in one statement: the work the floor's workers take.
pub fn fill(client: &mut Client, jobs: usize) -> Result<(), BenchError> {
    let jobs = i64::try_from(jobs).map_err(|_| BenchError::Setup(format!("{jobs} rows")))?;
    client.execute(
        "INSERT INTO jobs (id, payload, status, attempts, available_at)
         SELECT 'job-' || n, '{}', 'pending', 0, 0 FROM generate_series(1, $1::bigint) AS n",
        &[&jobs],
    )?;
    Ok(())
}
