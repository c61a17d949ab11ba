//! `retryq get ID`: SPEC section 5's `get` result for one job, as one JSON line
//! (`{"ok":"job",…}`), or `{"error":"not_found"}` and exit 1.

use std::process::ExitCode;

use super::{CliError, Db, print_json, view};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    /// The job's id.
    #[arg(value_name = "ID", value_parser = super::name)]
    id: String,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let queue = args.db.open_read()?;
    match queue.get(&args.id).map_err(|e| args.db.explain(e))? {
        Some(job) => {
            print_json(&view::job(&job))?;
            Ok(ExitCode::SUCCESS)
        }
        None => {
            print_json(&view::NOT_FOUND)?;
            Ok(ExitCode::FAILURE)
        }
    }
}
