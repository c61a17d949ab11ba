//! Filling a PostgreSQL store with a [`Mix`] through the store's own statements, each run
//! over a whole chunk of jobs at once (`… WHERE id = ANY($ids)`), in one transaction per
//! chunk.
//!
//! Why not the library's bulk calls, as on SQLite (`fill.rs`): on PostgreSQL they run one
//! statement per job, and every statement that moves a job adds to the same few counter rows
//! (`counts`, `tallies`, `tally_buckets`) of the transaction's shard; each update of a row
//! leaves a version the next update of it walks past until the transaction ends, so a batch
//! of `k` jobs costs about `k²` (about 330 jobs/s in batches of 50 on this machine, and 20 in
//! batches of 1,000 — hours for a million). One statement over the chunk fires the
//! statement-level triggers once, and the row-level ones per row, as the store's own reaps
//! and prunes do: the history, the attempts' records, the counts and the tallies are the
//! triggers' own work, and the audit passes on the result (`scale::tests`).
//!
//! The statements are the store's (`impl/src/pg/`): the enqueue's insert, the claim's lease,
//! a completion's finish and retry, the reap's deadline, the cancel, with the same columns
//! and values, only over many rows; the fences they carry one row at a time hold by
//! construction here (each chunk's jobs are the fill's alone). The prune of the oldest tenth
//! is the store's own `prune_at_most`.

use std::time::Instant;

use postgres::{Client, NoTls};
use retryq::{Backend, PgQueue};

use super::fill::{FILLER, Filled, PERMANENT, RETRYABLE};
use super::mix::{Fate, LEASE_MS, Mix, Planned};
use crate::BenchError;

/// The enqueue's insert, over the chunk's arrays, in order of enqueue (the `seq` order).
const ENQUEUE: &str = "
    INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline,
                      redrives, enqueued_at, updated_at, not_before, base_ms, cap_ms, queue,
                      priority, cancel_requested)
    SELECT id, payload, 'pending', 0, max_attempts, not_before, deadline, 0, enqueued_at,
           enqueued_at, not_before, NULL, NULL, queue, priority, false
    FROM unnest($1::text[], $2::bytea[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[],
                $7::text[], $8::smallint[])
         AS j(id, payload, max_attempts, not_before, deadline, enqueued_at, queue, priority)
    ORDER BY enqueued_at";

/// The claim's lease (`pg/claim.rs`): `$1` now, `$2` the holder, `$3` the expiry.
///
/// Every statement here finds its rows by their ids alone (`unnest`, joined on the unique
/// index), and checks what the store's statement filters on in its `SET` instead: a row that
/// fails the check would get a `NULL` status, which the table refuses, so the fill stops. Why
/// not filter: the chunk's jobs were inserted by this transaction, which the planner's
/// statistics have not seen, so it takes a filter on `status` (or `available_at`) to match
/// one row and walks an open jobs' partial index as the outer side of a nested loop over the
/// ids — a cost of rows × ids (89,991,000 comparisons, 13 s, for a lease of 9,000 at 10^6). And
/// not `id = ANY($ids)`, which tests each row of such a walk against the whole array.
const LEASE: &str = "
    UPDATE jobs SET status = CASE WHEN jobs.status = 'pending' AND jobs.available_at <= $1
                                  THEN 'leased' END,
                    attempts = attempts + 1, owner = $2, claimed_at = $1, available_at = $3,
                    updated_at = $1
    FROM unnest($4::text[]) AS u(id)
    WHERE jobs.id = u.id";

/// Completions that end their jobs (`pg/complete.rs`), each at its own instant: `$1` status,
/// `$2` reason, `$3` the report's error, `$4` and `$5` the ids and their instants.
const FINISH: &str = "
    UPDATE jobs SET status = CASE WHEN jobs.status = 'leased' AND jobs.owner = $6 THEN $1::text END,
                    dead_reason = $2, available_at = NULL, owner = NULL,
                    claimed_at = NULL, updated_at = u.now, last_error = $3, last_node = NULL,
                    ended_at = u.now, cancel_requested = false
    FROM unnest($4::text[], $5::bigint[]) AS u(id, now)
    WHERE jobs.id = u.id";

/// `retryable` completions with attempts left, each due again at once (jitter 0).
const RETRY: &str = "
    UPDATE jobs SET status = CASE WHEN jobs.status = 'leased' AND jobs.owner = $4 THEN 'pending' END,
                    available_at = u.now, owner = NULL, claimed_at = NULL,
                    updated_at = u.now, last_error = $1, last_node = NULL
    FROM unnest($2::text[], $3::bigint[]) AS u(id, now)
    WHERE jobs.id = u.id";

/// An operator's cancels of pending jobs (`pg/cancel.rs`), each at its own instant.
const CANCEL: &str = "
    UPDATE jobs SET status = CASE WHEN jobs.status = 'pending' THEN 'dead' END,
                    dead_reason = 'cancelled', available_at = NULL,
                    updated_at = u.now, ended_at = u.now
    FROM unnest($1::text[], $2::bigint[]) AS u(id, now)
    WHERE jobs.id = u.id";

/// Fills the empty store at `url` (its schema made) with `mix`.
pub fn fill(url: &str, mix: &Mix, progress: &dyn Fn(&str)) -> Result<Filled, BenchError> {
    fill_in_groups(url, mix, GROUP, progress)
}

/// [`fill`], each statement taking at most `group` jobs.
fn fill_in_groups(url: &str, mix: &Mix, group: usize, progress: &dyn Fn(&str)) -> Result<Filled, BenchError> {
    let started = Instant::now();
    drop(PgQueue::connect(url)?);
    let mut client = Client::connect(url, NoTls)?;
    // The fill's own session only: its statements move a chunk of 10,000 rows at once, and
    // the notes' triggers' plans for that many cost enough to be compiled each time (some
    // 300 ms a statement); what they write is the same.
    client.batch_execute("SET jit = off")?;
    let chunks = mix.chunks();
    let mut told = 0;
    for c in 0..chunks {
        chunk(&mut client, mix, c, group)?;
        let tenth = (c + 1) * 10 / chunks;
        if tenth > told {
            told = tenth;
            progress(&format!(
                "  filled {} of {} jobs ({:.0} s)",
                mix.chunk(c).end,
                mix.n,
                started.elapsed().as_secs_f64()
            ));
        }
    }
    let leased: Vec<String> = (0..mix.n).filter(|&i| mix.fate(i) == Fate::Leased).map(Mix::id).collect();
    let now = to_i64(mix.fill_end())?;
    let until = to_i64(mix.fill_end() + LEASE_MS)?;
    let mut tx = client.transaction()?;
    for some in leased.chunks(group) {
        let moved = tx.execute(LEASE, &[&now, &FILLER, &until, &some])?;
        expect("lease", some.len(), moved)?;
    }
    tx.commit()?;
    drop(client);
    let mut store = PgQueue::connect(url)?;
    let expected = mix.expected();
    let mut pruned = 0;
    loop {
        let n = store.prune_at_most(mix.pruned_before(), mix.fill_end(), 100_000)?;
        if n == 0 {
            break;
        }
        pruned += n;
    }
    expect("prune", (expected.pruned_done + expected.pruned_dead) as usize, pruned)?;
    super::fill::check(&store as &dyn Backend, mix)?;
    drop(store);
    // What autovacuum does to a working store, done now rather than left to its schedule:
    // the fill moved every job through `pending` and `leased` in minutes, and until a vacuum
    // the open jobs' partial indexes keep an entry for every version a job had there (at 10^5
    // jobs, `stats`' walk of the expired leases read 93,758 dead entries for none live).
    Client::connect(url, NoTls)?.batch_execute("VACUUM (ANALYZE)")?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(Filled { seconds, jobs_per_s: mix.n as f64 / seconds })
}

/// The most jobs one statement of the fill leases or reports: each lease's statement-level
/// check of the attempts it opens (`retryq_attempt_opened`, `pg/ddl.rs`) is planned as a
/// nested loop over every leased job of the table for each record — the planner's statistics
/// count none of the leases this transaction took — so a lease of `k` jobs costs about `k²`
/// (a lease of 9,000 at 10^6 jobs: 40,495,500 rows compared, 7 s). In groups of 500 a chunk
/// of 10,000 costs a twentieth of that.
const GROUP: usize = 500;

fn to_i64(n: u64) -> Result<i64, BenchError> {
    i64::try_from(n).map_err(|_| BenchError::Setup(format!("{n} does not fit a bigint")))
}

/// One chunk in one transaction: enqueued, then its ended jobs lived through.
fn chunk(client: &mut Client, mix: &Mix, c: u64, group: usize) -> Result<(), BenchError> {
    let planned: Vec<_> = mix.chunk(c).map(|i| mix.job(i)).collect();
    let Some(first) = planned.first() else { return Ok(()) };
    let mut tx = client.transaction()?;
    let ids: Vec<String> = planned.iter().map(|p| Mix::id(p.i)).collect();
    let payloads: Vec<Vec<u8>> = planned.iter().map(|p| Mix::payload(p.i).into_bytes()).collect();
    let max_attempts: Vec<i64> = planned.iter().map(|p| p.max_attempts as i64).collect();
    let not_before = planned.iter().map(|p| to_i64(p.not_before)).collect::<Result<Vec<_>, _>>()?;
    let deadline = planned.iter().map(|p| to_i64(p.deadline)).collect::<Result<Vec<_>, _>>()?;
    let enqueued_at = planned.iter().map(|p| to_i64(p.enqueued_at)).collect::<Result<Vec<_>, _>>()?;
    let queues: Vec<&str> = planned.iter().map(|p| p.queue).collect();
    let priorities: Vec<i16> = planned.iter().map(|p| p.priority as i16).collect();
    let inserted = tx.execute(
        ENQUEUE,
        &[&ids, &payloads, &max_attempts, &not_before, &deadline, &enqueued_at, &queues, &priorities],
    )?;
    expect("enqueue", ids.len(), inserted)?;

    // The ids of the jobs of a fate in a group, and each one's instant.
    let of = |group: &[Planned],
              keep: &dyn Fn(Fate) -> bool,
              at: &dyn Fn(u64) -> u64|
     -> Result<(Vec<String>, Vec<i64>), BenchError> {
        let chosen: Vec<_> = group.iter().filter(|p| keep(p.fate)).collect();
        let at = chosen.iter().map(|p| to_i64(at(p.i))).collect::<Result<_, _>>()?;
        Ok((chosen.iter().map(|p| Mix::id(p.i)).collect(), at))
    };
    let first_report = |i| mix.first_report(i);
    let second_report = |i| mix.second_report(i);
    let no_reason: Option<&str> = None;
    // Notes are bytea on PostgreSQL.
    let no_error: Option<&[u8]> = None;
    let (retryable, permanent) = (RETRYABLE.as_bytes(), PERMANENT.as_bytes());
    let window = to_i64(mix.window())?;

    // First attempts, claimed at one instant, each reported at its own; a group at a time.
    let claimed_at = to_i64(mix.first_claim(first.i))?;
    for group in planned.chunks(group) {
        let (claimed, _) = of(group, &Fate::claimed_first, &first_report)?;
        expect(
            "claim",
            claimed.len(),
            tx.execute(LEASE, &[&claimed_at, &FILLER, &(claimed_at + window), &claimed])?,
        )?;
        let (ids, at) = of(group, &|f| f == Fate::Done, &first_report)?;
        let moved = tx.execute(FINISH, &[&"done", &no_reason, &no_error, &ids, &at, &FILLER])?;
        expect("ok", ids.len(), moved)?;
        let (ids, at) = of(group, &|f| f == Fate::Permanent, &first_report)?;
        let moved = tx.execute(FINISH, &[&"dead", &"permanent", &permanent, &ids, &at, &FILLER])?;
        expect("permanent", ids.len(), moved)?;
        let (ids, at) = of(group, &|f| f == Fate::Deadline, &first_report)?;
        let moved = tx.execute(FINISH, &[&"dead", &"deadline", &retryable, &ids, &at, &FILLER])?;
        expect("deadline", ids.len(), moved)?;
        let (ids, at) = of(group, &Fate::retried, &first_report)?;
        expect("retry", ids.len(), tx.execute(RETRY, &[&retryable, &ids, &at, &FILLER])?)?;
    }

    // The retried ones again.
    let claimed_at = to_i64(mix.second_claim(first.i))?;
    for group in planned.chunks(group) {
        let (claimed, _) = of(group, &Fate::retried, &second_report)?;
        expect(
            "claim",
            claimed.len(),
            tx.execute(LEASE, &[&claimed_at, &FILLER, &(claimed_at + window), &claimed])?,
        )?;
        let (ids, at) = of(group, &|f| f == Fate::DoneAfterRetry, &second_report)?;
        let moved = tx.execute(FINISH, &[&"done", &no_reason, &no_error, &ids, &at, &FILLER])?;
        expect("ok", ids.len(), moved)?;
        let (ids, at) = of(group, &|f| f == Fate::Exhausted, &second_report)?;
        let moved = tx.execute(FINISH, &[&"dead", &"exhausted", &retryable, &ids, &at, &FILLER])?;
        expect("exhausted", ids.len(), moved)?;
    }

    // The cancels, each a millisecond after the one before.
    let cancels = mix.cancels(first.i);
    let ids: Vec<String> =
        planned.iter().filter(|p| p.fate == Fate::Cancelled).map(|p| Mix::id(p.i)).collect();
    let at = (0..ids.len() as u64).map(|rank| to_i64(cancels + 1 + rank)).collect::<Result<Vec<_>, _>>()?;
    expect("cancel", ids.len(), tx.execute(CANCEL, &[&ids, &at])?)?;
    tx.commit()?;
    Ok(())
}

fn expect(what: &str, expected: usize, got: u64) -> Result<(), BenchError> {
    if expected as u64 == got {
        Ok(())
    } else {
        Err(BenchError::Setup(format!("the fill's {what} moved {got} jobs where the mix has {expected}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filled_database_holds_the_mix_and_passes_its_audit() {
        let Some(url) = retryq_pgtest::database("scale fill on postgres") else { return };
        let mix = Mix::new(3_000, 1_800_000_000_000);
        // Groups of 7: a chunk's 30 jobs in five statements of each kind, the last one short.
        fill_in_groups(&url, &mix, 7, &|_| {}).expect("fill");
        let mut store = PgQueue::connect(&url).expect("connect");
        let audit = Backend::audit(&store).expect("audit");
        assert!(audit.is_clean(), "{:?}", &audit.violations[..audit.violations.len().min(5)]);
        let e = mix.expected();
        assert_eq!(audit.jobs, 3_000 - e.pruned_done - e.pruned_dead);
        assert_eq!(store.reap(mix.straggler_deadline(0) - 1).expect("reap"), 0);
        assert_eq!(store.reap(mix.straggler_deadline(0)).expect("reap"), e.stragglers[0]);
        assert_eq!(
            store.reap(mix.cohort_deadline(0)).expect("reap"),
            e.stragglers[1] + e.stragglers[2] + e.cohorts[0]
        );
        // The ends are a millisecond apart at least: a bounded prune takes what it is asked.
        assert_eq!(store.prune_at_most(mix.fill_end(), mix.fill_end(), 7).expect("prune"), 7);
    }

    /// Each statement refuses a job not in the state the store's own statement would find it
    /// in, and changes nothing then: its check is in its `SET`, not its filter.
    #[test]
    fn each_statement_refuses_a_job_in_another_state() {
        let Some(url) = retryq_pgtest::database("scale fill's checks") else { return };
        let mix = Mix::new(1_000, 1_800_000_000_000);
        fill(&url, &mix, &|_| {}).expect("fill");
        let of = |fate: Fate| (0..mix.n).find(|&i| mix.fate(i) == fate && !mix.pruned(i)).map(Mix::id);
        let (done, pending) =
            (of(Fate::Done).expect("a done job"), of(Fate::Pending).expect("a pending job"));
        let leased = of(Fate::Leased).expect("a leased job");
        let mut client = Client::connect(&url, NoTls).expect("connect");
        let now = to_i64(mix.fill_end() + 1).expect("now");
        let no_reason: Option<&str> = None;
        let no_error: Option<&[u8]> = None;
        let refused = [
            // A lease of a done job; a lease of a pending job before it is due.
            client.execute(LEASE, &[&now, &FILLER, &(now + 1), &vec![done.clone()]]),
            client.execute(
                LEASE,
                &[
                    &to_i64(mix.w0 - 40 * super::super::mix::DAY).expect("now"),
                    &FILLER,
                    &now,
                    &vec![pending.clone()],
                ],
            ),
            // A completion of a pending job, and of a lease another worker holds.
            client.execute(
                FINISH,
                &[&"done", &no_reason, &no_error, &vec![pending.clone()], &vec![now], &FILLER],
            ),
            client.execute(
                FINISH,
                &[&"done", &no_reason, &no_error, &vec![leased.clone()], &vec![now], &"another"],
            ),
            client.execute(RETRY, &[&RETRYABLE.as_bytes(), &vec![done.clone()], &vec![now], &FILLER]),
            // A cancel of a leased job.
            client.execute(CANCEL, &[&vec![leased.clone()], &vec![now]]),
        ];
        for (k, result) in refused.into_iter().enumerate() {
            assert!(result.is_err(), "statement {k} moved a job it should have refused");
        }
        let store = PgQueue::connect(&url).expect("connect");
        let audit = Backend::audit(&store).expect("audit");
        assert!(audit.is_clean(), "{:?}", &audit.violations[..audit.violations.len().min(5)]);
        assert_eq!(store.stats(mix.fill_end()).expect("stats").leased, mix.expected().leased);
    }
}
