//! `retryq get ID`: SPEC section 5's `get` result for one job, as one JSON line
//! (`{"ok":"job",…}`), or `{"error":"not_found"}` and exit 1.

use std::process::ExitCode;

use retryq_conformance::sqlite::job_view;
use retryq_model::{Failure, Reply, Response};

use super::{CliError, Db, print_json};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    db: Db,
    /// The job's id.
    #[arg(value_name = "ID", value_parser = super::name)]
    id: String,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut queue = args.db.open_read()?;
    match queue.get(&args.id).map_err(|e| args.db.explain(e))? {
        Some(job) => {
            print_json(&Response::Ok(Reply::Job(job_view(&job))))?;
            Ok(ExitCode::SUCCESS)
        }
        None => {
            print_json(&Response::Err(Failure::NotFound))?;
            Ok(ExitCode::FAILURE)
        }
    }
}
