//! `retryq enqueue --file FILE` (`-`: standard input): a bulk import, one JSON object a line,
//! each with the fields of `enqueue`'s flags in snake case (`job_line.rs`):
//!
//! ```text
//! {"id":"order-7","payload":"{\"sku\":42}","max_attempts":5,"ttl":"1h"}
//! {"id":"order-8","payload":"…","max_attempts":3,"deadline":"2026-12-31T00:00:00Z","start_in":"10m","queue":"mail","priority":2}
//! ```
//!
//! The input is read a block at a time — up to [`BLOCK_LINES`] jobs and about [`BLOCK_BYTES`]
//! — and never whole, so its size is not bounded by memory (`file_lines.rs`). Each block is
//! checked whole, every rule the queue would apply included (its times against the store's
//! clock), before any of it is written; then the library's bulk import writes it in
//! transactions of a few milliseconds (`Backend::enqueue_bulk`), so that the workers on the
//! same store go on between them.
//!
//! So a bad line — not JSON, a key given twice, an unknown or missing field, a value out of
//! range, a deadline already past, a line too long — stops the import at its block: the
//! blocks before it were written, each line answered on standard output, and nothing of its
//! block or after it was. Standard error names the line and its field, and the last line
//! written; exit 2. A file of one block (the common small file) is all or nothing, as before:
//! its bad line enqueues nothing and creates no database. Running the same file again, once
//! corrected — or after a crash, a lost connection, a full disk — is safe: ids are idempotent,
//! and every line written already answers `existing`.
//!
//! What only the store can tell — an id stored with another payload, or given twice in the
//! file with two payloads — is that line's `conflict`, as for one `enqueue`: it changes
//! nothing for that id and does not stop the others, and the command exits 1.
//!
//! Standard output has one line per job, in the file's order, printed once its transaction
//! committed: its id, a tab, and `enqueued`, `existing` or `conflict` (ids with control
//! characters escaped, so a tab in one cannot shift the column). Standard error sums it up.

use std::path::Path;
use std::process::ExitCode;

use retryq::{Enqueued, NewJob};

use super::CliError;
use super::db::{ClockFlag, Db};
use super::file_lines::{Lines, ReadError};
use super::job_line::{Line, LineError, parse_line};
use crate::out::{noteln, out};
use crate::printable::printable;

/// The most jobs of a block: read and checked whole before any of it is written.
pub const BLOCK_LINES: usize = 10_000;
/// About the most bytes of a block's jobs (ids, payloads and queues), beyond its last line.
pub const BLOCK_BYTES: usize = 16 << 20;

/// Why an import stopped at a line, or never began.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Line(#[from] LineError),
    #[error("holds no job: it is empty or only blank lines")]
    Empty,
}

/// Enqueues the jobs of `file` (see the module's doc).
pub fn run(db: &Db, clock: &ClockFlag, file: &Path) -> Result<ExitCode, CliError> {
    let name = if file == Path::new("-") { "standard input".to_owned() } else { file.display().to_string() };
    let mut import = Import { name: &name, new: 0, existing: 0, conflicts: 0, refused: 0, written: None };
    let mut lines = Lines::open(file).map_err(|e| import.stopped(e.into()))?;
    let mut block = next_block(&mut lines).map_err(|e| import.stopped(e))?;
    if block.is_empty() {
        return Err(import.stopped(FileError::Empty));
    }
    // Checked against this host's clock before anything is opened, so that a bad line of the
    // first block creates nothing; on PostgreSQL the server's clock then decides.
    let now = super::now()?;
    block.iter().try_for_each(|line| line.times(now).map(drop)).map_err(|e| import.stopped(e.into()))?;
    let mut queue = db.open_write(true)?;
    while !block.is_empty() {
        let now = clock.now(db, &*queue).map_err(|e| import.failed(e))?;
        let times: Vec<(u64, Option<u64>)> = block
            .iter()
            .map(|line| line.times(now))
            .collect::<Result<_, _>>()
            .map_err(|e| import.stopped(e.into()))?;
        let jobs: Vec<NewJob<'_>> =
            block.iter().zip(times).map(|(line, times)| line.job(now, times)).collect();
        let mut answers = Vec::with_capacity(jobs.len());
        let written = queue.enqueue_bulk(&jobs, &mut answers);
        import.answered(&block, &answers).map_err(|e| import.failed(e))?;
        written.map_err(|e| import.failed(db.explain(e)))?;
        block = next_block(&mut lines).map_err(|e| import.stopped(e))?;
    }
    import.note();
    Ok(if import.conflicts + import.refused == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The next block's jobs, each line checked but for its times; empty at the end of the input.
fn next_block(lines: &mut Lines) -> Result<Vec<Line>, FileError> {
    let mut block = Vec::new();
    let mut bytes = 0;
    while block.len() < BLOCK_LINES && bytes < BLOCK_BYTES {
        let Some((number, raw)) = lines.next_line()? else { break };
        if raw.trim().is_empty() {
            continue;
        }
        let line = parse_line(number, raw)?;
        bytes += line.size();
        block.push(line);
    }
    Ok(block)
}

/// What an import has answered so far.
struct Import<'a> {
    /// The input, as messages name it.
    name: &'a str,
    new: u64,
    existing: u64,
    conflicts: u64,
    refused: u64,
    /// The number of the last line written, once one was.
    written: Option<usize>,
}

impl Import<'_> {
    /// Prints the answers of a block's first jobs, those of a transaction that committed.
    fn answered(&mut self, block: &[Line], answers: &[retryq::Result<Enqueued>]) -> Result<(), CliError> {
        let mut text = String::new();
        for (line, answer) in block.iter().zip(answers) {
            let word = match answer {
                Ok(Enqueued::New) => {
                    self.new += 1;
                    "enqueued"
                }
                Ok(Enqueued::Existing) => {
                    self.existing += 1;
                    "existing"
                }
                Err(retryq::Error::Conflict { .. }) => {
                    self.conflicts += 1;
                    "conflict"
                }
                // Every rule was checked above; a refusal here is the store's own, said by line.
                Ok(_) | Err(_) => {
                    self.refused += 1;
                    noteln!("retryq: line {}: the queue answered {answer:?}", line.number);
                    "refused"
                }
            };
            text += &format!("{}\t{word}\n", printable(&line.id));
            self.written = Some(line.number);
        }
        out!("{text}")
    }

    /// What was written and what was not, in words.
    fn progress(&self) -> String {
        match self.written {
            None => "nothing was enqueued".into(),
            Some(last) => format!(
                "lines 1 to {last} were enqueued (each answered on standard output), nothing after line \
                 {last} was: run the same file again to enqueue the rest (a line enqueued already \
                 answers existing)"
            ),
        }
    }

    /// The sum on standard error, and what was not written when the import did not end.
    fn note(&self) {
        let Import { name, new, existing, conflicts, refused, .. } = self;
        let refused = if *refused > 0 { format!(", {refused} refused by the queue") } else { String::new() };
        noteln!(
            "{name}: {new} enqueued, {existing} existing (nothing changed), {conflicts} conflicting (another \
             payload under the same id: nothing changed){refused}"
        );
    }

    /// A failure part-way (the store, its clock, standard output), after the sum: said with
    /// what was written and what was not (on standard error alone when it goes unsaid).
    fn failed(&self, error: CliError) -> CliError {
        self.note();
        if error.is_quiet() {
            noteln!("retryq: {}: {}", self.name, self.progress());
            return error;
        }
        error.with_note(&self.progress())
    }

    /// The refusal of a bad line (or of the input), after the sum of what came before it.
    fn stopped(&self, error: FileError) -> CliError {
        if self.written.is_some() {
            self.note();
        }
        CliError::flag("--file", format!("{} {error}; {}", self.name, self.progress()))
    }
}
