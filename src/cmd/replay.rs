//! `retryq replay [FILE|-] [--db PATH|URL]`: SPEC section 5 against SQLite or PostgreSQL.

use std::fs::File;
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use retryq_conformance::{ReplayError, Side, pg, replay};

use super::CliError;

#[derive(clap::Args)]
pub struct Args {
    /// The JSON Lines trace to run; `-` or nothing reads standard input.
    file: Option<PathBuf>,
    /// Run against this database instead of a fresh temporary file: a SQLite file (created
    /// if missing), or a `postgres://` URL (an empty database gets the schema).
    #[arg(long, value_name = "PATH|URL")]
    db: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut side = match &args.db {
        Some(db) => open(db)?,
        None => Side::temporary()?,
    };
    let output = io::stdout().lock();
    let replayed = match args.file.filter(|f| f.as_os_str() != "-") {
        None => replay(io::stdin().lock(), output, &mut side),
        Some(path) => {
            let file = File::open(&path)
                .map_err(|e| CliError::Other(format!("cannot read trace {}: {e}", path.display())))?;
            replay(BufReader::new(file), output, &mut side)
        }
    };
    match replayed {
        Ok(_) => Ok(ExitCode::SUCCESS),
        // The trace is read from a file or a pipe, which never says "broken pipe": the
        // answers' reader went away.
        Err(ReplayError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => Err(CliError::OutputClosed),
        Err(e) => Err(e.into()),
    }
}

/// The store `--db` names. A PostgreSQL database that cannot be used (a bad URL, a server
/// that does not answer, wrong credentials, another program's tables) is said with the URL,
/// its password left out; nothing was changed in it.
fn open(db: &Path) -> Result<Side, CliError> {
    match db.to_str() {
        Some(url) if pg::is_url(url) => Side::postgres(url)
            .map_err(|e| CliError::Database(format!("--db {}: {e}", retryq::redacted(url)))),
        _ => Ok(Side::file(db)?),
    }
}
