//! Fresh PostgreSQL databases for conformance runs: one empty database per trace, on the
//! server an administrator's URL names.
//!
//! Every trace must start on an empty database, as every trace on SQLite starts on a new
//! file. `CREATE DATABASE` per trace costs tens of milliseconds (it copies the template
//! database and checkpoints), more than a short trace itself; so by default ([`Fresh::Reset`])
//! a run keeps one database per thread and empties it between traces by dropping every
//! schema in it and creating `public` again — the queue's tables, functions and triggers
//! go with their schema, and the next connect creates them anew, as on an empty database.
//! [`Fresh::Create`] (a new database per trace, dropped at the end) is kept for comparison;
//! `docs/conformance.md` has the figures.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use retryq::Backend;

use crate::ReplayError;

/// Whether `db` (a `--db` value) names a PostgreSQL database rather than a SQLite file.
pub fn is_url(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// Connects the PostgreSQL store to the database `url` names; an empty database gets the
/// schema.
pub fn connect(url: &str) -> Result<Box<dyn Backend>, ReplayError> {
    Ok(Box::new(retryq::PgQueue::connect(url)?))
}

/// `url` with its database replaced by `name` (its query string kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let (before_query, query) = match rest.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (rest, None),
    };
    let authority = before_query.split_once('/').map_or(before_query, |(authority, _)| authority);
    match query {
        Some(query) => format!("{scheme}://{authority}/{name}?{query}"),
        None => format!("{scheme}://{authority}/{name}"),
    }
}

/// `url` as it may be shown in a message: the library's one redaction of every form in
/// which the PostgreSQL client reads a password.
pub use retryq::redacted;

/// How each trace gets its empty database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fresh {
    /// One database per thread, emptied between traces (every schema dropped): the default.
    Reset,
    /// `CREATE DATABASE` for every trace; all of them dropped when the run ends.
    Create,
}

/// Empties the database it runs in: every schema that is not the server's own is dropped with
/// everything in it (the queue's tables, and the trigger that refuses to delete history, go
/// with them), and an empty `public` is created again.
const RESET: &str = "
DO $$
DECLARE s name;
BEGIN
    FOR s IN SELECT nspname FROM pg_namespace
             WHERE left(nspname, 3) <> 'pg_' AND nspname <> 'information_schema'
    LOOP
        EXECUTE format('DROP SCHEMA %I CASCADE', s);
    END LOOP;
    CREATE SCHEMA public;
END
$$";

/// How many other sessions are connected to a database: a killed client's server process
/// may still be finishing its last statement.
const OTHER_SESSIONS: &str =
    "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()";

/// Numbers the runs of this process, so that two runs on one server name their databases
/// apart.
static RUNS: AtomicU32 = AtomicU32::new(0);

/// The databases of one run on one server.
pub struct Databases {
    /// The administrator's URL: its database is where `CREATE DATABASE` runs.
    admin: String,
    fresh: Fresh,
    /// This run's database names start with it (the process id and the run's number keep
    /// runs apart).
    prefix: String,
    next: AtomicU32,
    /// Databases used and returned, to be emptied before their next trace.
    free: Mutex<Vec<String>>,
    /// Every database this run created, dropped at the end.
    made: Mutex<Vec<String>>,
}

impl std::fmt::Debug for Databases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Databases({}, {:?})", redacted(&self.admin), self.fresh)
    }
}

impl Databases {
    /// The databases of a run on the server `admin` names (a URL whose user may create
    /// databases). Connects once, so that a wrong URL or password is said at once.
    pub fn new(admin: &str, fresh: Fresh) -> Result<Arc<Databases>, ReplayError> {
        drop(admin_client(admin)?);
        Ok(Arc::new(Databases {
            admin: admin.to_owned(),
            fresh,
            prefix: format!("retryq_conform_{}_{}", std::process::id(), RUNS.fetch_add(1, Ordering::Relaxed)),
            next: AtomicU32::new(0),
            free: Mutex::new(Vec::new()),
            made: Mutex::new(Vec::new()),
        }))
    }

    /// An empty database for one trace, given back when the [`Lent`] is dropped.
    pub fn lend(self: &Arc<Self>) -> Result<Lent, ReplayError> {
        let reused = match self.fresh {
            Fresh::Reset => self.free.lock().map_err(|_| poisoned())?.pop(),
            Fresh::Create => None,
        };
        let name = match reused {
            Some(name) => {
                let mut client = admin_client(&with_database(&self.admin, &name))?;
                client.batch_execute(RESET)?;
                name
            }
            None => self.create()?,
        };
        Ok(Lent { url: with_database(&self.admin, &name), name, databases: Arc::clone(self) })
    }

    /// A new database. A name may be taken already on a server the run did not start, left
    /// by an earlier process that had this one's id and did not end cleanly: the next number
    /// is tried.
    fn create(&self) -> Result<String, ReplayError> {
        let mut admin = admin_client(&self.admin)?;
        let mut tries = 0;
        loop {
            let name = format!("{}_{}", self.prefix, self.next.fetch_add(1, Ordering::Relaxed));
            match admin.batch_execute(&format!("CREATE DATABASE {name}")) {
                Ok(()) => {
                    self.made.lock().map_err(|_| poisoned())?.push(name.clone());
                    return Ok(name);
                }
                Err(e)
                    if tries < 1000 && e.code() == Some(&postgres::error::SqlState::DUPLICATE_DATABASE) =>
                {
                    tries += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Waits (up to `limit`) until nobody else is connected to database `name`: a client
    /// that was killed leaves a server process behind that may still commit its last
    /// transaction, and a reading taken before that would be of a state still moving.
    pub fn wait_idle(&self, name: &str, limit: Duration) -> Result<(), ReplayError> {
        let mut client = admin_client(&self.admin)?;
        let start = Instant::now();
        loop {
            let others: i64 = client.query_one(OTHER_SESSIONS, &[&name])?.get(0);
            if others == 0 {
                return Ok(());
            }
            if start.elapsed() > limit {
                return Err(ReplayError::Io(std::io::Error::other(format!(
                    "database {name} still has {others} other sessions after {limit:?}"
                ))));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Drops every database this run created (each at once, even with sessions still on it).
    pub fn drop_all(&self) -> Result<(), ReplayError> {
        let names: Vec<String> = std::mem::take(&mut *self.made.lock().map_err(|_| poisoned())?);
        self.free.lock().map_err(|_| poisoned())?.clear();
        if names.is_empty() {
            return Ok(());
        }
        let mut client = admin_client(&self.admin)?;
        for name in names {
            client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))?;
        }
        Ok(())
    }
}

impl Drop for Databases {
    /// Best effort: a run that ends leaves no database behind on the server; one that cannot
    /// reach the server any more cannot drop them, and their names say whose they were.
    fn drop(&mut self) {
        let _ = self.drop_all();
    }
}

/// A database lent to one trace.
pub struct Lent {
    url: String,
    name: String,
    databases: Arc<Databases>,
}

impl Lent {
    /// Its URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Its name on the server.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The run it belongs to.
    pub fn databases(&self) -> &Databases {
        &self.databases
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if self.databases.fresh == Fresh::Reset
            && let Ok(mut free) = self.databases.free.lock()
        {
            free.push(std::mem::take(&mut self.name));
        }
    }
}

fn admin_client(url: &str) -> Result<postgres::Client, ReplayError> {
    Ok(postgres::Client::connect(url, postgres::NoTls)?)
}

fn poisoned() -> ReplayError {
    ReplayError::Io(std::io::Error::other("a thread panicked while holding the database list"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_apart_rewritten_and_redacted() {
        assert!(is_url("postgres://u@h/db") && is_url("postgresql://h"));
        assert!(!is_url("/tmp/q.db") && !is_url("postgres.db"));
        assert_eq!(with_database("postgres://u:p@h:5/admin", "t1"), "postgres://u:p@h:5/t1");
        assert_eq!(with_database("postgresql://h", "t1"), "postgresql://h/t1");
        assert_eq!(
            with_database("postgres://h/admin?sslmode=disable", "t1"),
            "postgres://h/t1?sslmode=disable"
        );
        assert_eq!(redacted("postgres://u:secret@h:5/db"), "postgres://u:***@h:5/db");
        assert_eq!(redacted("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            redacted("postgres://h/db?user=u&password=x&sslmode=disable"),
            "postgres://h/db?user=u&password=***&sslmode=disable"
        );
    }
}
