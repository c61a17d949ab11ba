//! Schema 7's tallies and notes' triggers turned back into schema 6's shape, for the tests that
//! make an older file from this build's schema: the tallies by metric, queue and label alone
//! (the kinds summed), and no trigger that reads a kind (the upgrade creates them again).

use retryq::rusqlite::Connection;

/// Schema 6's tallies (and 4's and 5's), by metric, queue and label alone, filled from
/// schema 7's.
const TALLIES_6: &str = "
CREATE TEMP TABLE t6 AS SELECT metric, queue, label, sum(n) AS n FROM tallies GROUP BY 1, 2, 3;
CREATE TEMP TABLE b6 AS
    SELECT metric, queue, label, le, sum(n) AS n, sum(sum_ms) AS sum_ms FROM tally_buckets GROUP BY 1, 2, 3, 4;
DROP TABLE tallies;
DROP TABLE tally_buckets;
CREATE TABLE tallies (
    metric TEXT    NOT NULL,
    queue  TEXT    NOT NULL,
    label  TEXT    NOT NULL,
    n      INTEGER NOT NULL CHECK (n >= 0),
    PRIMARY KEY (metric, queue, label)
) STRICT, WITHOUT ROWID;
CREATE TABLE tally_buckets (
    metric TEXT    NOT NULL,
    queue  TEXT    NOT NULL,
    label  TEXT    NOT NULL,
    le     INTEGER NOT NULL,
    n      INTEGER NOT NULL CHECK (n >= 0),
    sum_ms INTEGER NOT NULL CHECK (sum_ms >= 0),
    PRIMARY KEY (metric, queue, label, le)
) STRICT, WITHOUT ROWID;
INSERT INTO tallies SELECT * FROM temp.t6;
INSERT INTO tally_buckets SELECT * FROM temp.b6;
";

/// The notes' triggers, which read the kinds: a schema 6 file's did not, and this test's goes
/// without them (the upgrade creates them again, as for a real one).
const NOTES_TRIGGERS: [&str; 17] = [
    "attempts_of_claims",
    "attempts_ended_never_change",
    "attempts_no_delete",
    "tombstones_forgotten_whole",
    "tallies_only_grow",
    "tallies_never_deleted",
    "tally_buckets_only_grow",
    "tally_buckets_never_deleted",
    "jobs_tally_enqueued",
    "jobs_attempt_claimed",
    "jobs_attempt_reported",
    "jobs_tally_moved",
    "jobs_tally_cancel_requested",
    "jobs_tally_heartbeat",
    "attempts_tally_ended",
    "tombstones_tally_pruned",
    "tombstones_tally_forgotten",
];

/// Turns `conn`'s tallies into schema 6's shape and drops the notes' triggers, before the
/// jobs' `kind` column goes.
pub fn tallies(conn: &Connection) {
    for trigger in NOTES_TRIGGERS {
        conn.execute_batch(&format!("DROP TRIGGER {trigger};")).expect("drop a trigger");
    }
    conn.execute_batch(TALLIES_6).expect("schema 6's tallies");
}
