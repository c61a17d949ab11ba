//! `retryq audit`: checks SPEC section 4's invariants 1 to 6 and 11 to 14 on every job and
//! every recorded transition, and the tombstones and kept counts (see `retryq::Audit`),
//! prints each violation, exits 1 on any.

use std::process::ExitCode;

use super::CliError;
use super::db::Db;
use crate::out::outln;
use crate::printable::printable;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let queue = args.db.open_read()?;
    let audit = queue.audit().map_err(|e| args.db.explain(e))?;
    for violation in &audit.violations {
        // A violation quotes what it found: the stored text, made printable.
        outln!("{}", printable(&violation.to_string()))?;
    }
    let summary = format!("{} jobs, {} history entries", audit.jobs, audit.entries);
    if audit.is_clean() {
        outln!("audit: clean ({summary})")?;
        Ok(ExitCode::SUCCESS)
    } else {
        outln!("audit: {} violations ({summary})", audit.violations.len())?;
        Ok(ExitCode::FAILURE)
    }
}
