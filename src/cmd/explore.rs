//! `retryq explore [--port P]`: stateright's Explorer on the model, served on 127.0.0.1, to
//! click through states, actions and properties in a browser.

use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;

use retryq_model::model::QueueModel;
use stateright::{Checker, Model};

use super::CliError;
use super::check::BoundsArgs;
use crate::out::outln;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    bounds: BoundsArgs,
    /// The port to listen on, on 127.0.0.1.
    #[arg(long, default_value_t = 3000)]
    port: u16,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let address = SocketAddr::from(([127, 0, 0, 1], args.port));
    // The Explorer's server panics if it cannot listen: find out first, and say why.
    drop(
        TcpListener::bind(address)
            .map_err(|e| CliError::Other(format!("cannot listen on {address}: {e}")))?,
    );
    let model = QueueModel::new(args.bounds.bounds(), args.bounds.bug);
    outln!("retryq explore: http://{address}/ (the model with {}; Ctrl-C stops)", model.bounds)?;
    let checker = model.checker().serve(address);
    // `serve` returns only if its server stops.
    outln!("retryq explore: stopped after {} states", checker.unique_state_count())?;
    Ok(ExitCode::SUCCESS)
}
