//! The PostgreSQL stage: the generated traces of the SQLite stage's seed (the first
//! `--pg-cases` of them) replayed on PostgreSQL, each on an empty database, both readings
//! compared after every step — the model being the reading SQLite is held to, the two stores
//! answer alike wherever the traces go. The server is a throwaway cluster this process starts
//! (`retryq-pgtest`: `initdb` and `pg_ctl` of the newest `/usr/lib/postgresql/N/bin`, else of
//! `PATH`), or the one `RETRYQ_PG_URL` names; where neither is to be had, the stage is
//! skipped and says so.

use retryq_conformance::pg::{Databases, Fresh};
use retryq_conformance::run::{self, Setup, Storage};
use retryq_pgtest::{Cluster, Unavailable};

use super::meter::Meter;
use super::row::{Row, Verdict, conformance_row};

/// Why the stage is skipped where PostgreSQL is not installed.
const NOT_INSTALLED: &str =
    "PostgreSQL not installed (no initdb in /usr/lib/postgresql/*/bin or on PATH; RETRYQ_PG_URL not set)";

/// The stage: `cases` generated traces of `seed`, of at most `max_len` steps, on PostgreSQL.
pub fn stage(cases: u32, seed: u64, max_len: usize, meter: &Meter) -> Row {
    let cluster = match std::env::var("RETRYQ_PG_URL") {
        Ok(url) => Cluster::existing(&url),
        Err(_) => match Cluster::start(false) {
            Ok(cluster) => cluster,
            Err(Unavailable::NotInstalled) => {
                let mut row = Row::new("postgres");
                row.verdict = Verdict::Skipped(NOT_INSTALLED.into());
                return row;
            }
            Err(Unavailable::Failed(why)) => {
                let mut row = Row::new("postgres");
                row.verdict = Verdict::Fail(format!("PostgreSQL would not start: {why}"));
                return row;
            }
        },
    };
    let result = Databases::new(&cluster.url("postgres"), Fresh::Reset).and_then(|databases| {
        let storage = Storage::Postgres(databases);
        let threads = run::default_threads(&storage);
        run::random(cases, seed, max_len, &Setup::new(storage), threads, &|| meter.tick())
    });
    conformance_row("postgres", result, |t| {
        let checked = format!("{} traces, {} steps, seed {seed}", t.traces, t.steps);
        (checked, vec![("traces", t.traces), ("steps", t.steps), ("seed", seed)])
    })
}
