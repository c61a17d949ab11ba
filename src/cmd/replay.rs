//! `retryq replay [FILE|-] [--db PATH]`: SPEC section 5 against SQLite.

use std::fs::File;
use std::io::{self, BufReader};
use std::path::PathBuf;
use std::process::ExitCode;

use retryq_conformance::{ReplayError, Sqlite, replay};

use super::CliError;

#[derive(clap::Args)]
pub struct Args {
    /// The JSON Lines trace to run; `-` or nothing reads standard input.
    file: Option<PathBuf>,
    /// Run against this database file (created if missing) instead of a fresh temporary one.
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut side = match &args.db {
        Some(path) => Sqlite::file(path)?,
        None => Sqlite::temporary()?,
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
