//! `retryq explore [--port P]`: stateright's Explorer on the model, served on 127.0.0.1, to
//! click through states, actions and properties in a browser. `--port 0` picks a free port,
//! and the address printed is the one served.
//!
//! It explores the world `retryq check` checks, reduced the same way: worlds that differ only
//! by a renumbering of workers are one state (stateright's Explorer ignores stateright's own
//! symmetry option, so the model steps to each world's representative instead; the states
//! counted are the ones `check` counts). Actions and steps name workers and jobs as `check`'s
//! traces do (`wé1`, `jöb-z`), each step shown as its trace line.

use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;

use retryq_model::Bug;
use retryq_model::model::QueueModel;
use stateright::{Checker, Model};

use super::CliError;
use super::check::{BoundsArgs, parse_bug};
use crate::out::outln;

#[derive(clap::Args)]
pub struct Args {
    /// Explore the store with this seeded bug (an unknown NAME is refused with the list of
    /// every bug).
    #[arg(long, value_name = "NAME", value_parser = parse_bug)]
    bug: Option<Bug>,
    #[command(flatten)]
    bounds: BoundsArgs,
    /// The port to listen on, on 127.0.0.1; 0 picks a free one (printed).
    #[arg(long, default_value_t = 3000)]
    port: u16,
    /// Explore without symmetry reduction over workers (for comparison).
    #[arg(long)]
    no_symmetry: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let wanted = SocketAddr::from(([127, 0, 0, 1], args.port));
    // The Explorer's server binds the address itself, and panics if it cannot: find out
    // first, and say why. With port 0 this also picks the port, which the server is then
    // given: it would otherwise pick another, and the one printed would be wrong. (The
    // server cannot take this listener over; another program could take the port in the
    // moment between, and the server would then fail as it does on a taken port.)
    let address = TcpListener::bind(wanted)
        .and_then(|listener| listener.local_addr())
        .map_err(|e| CliError::Other(format!("cannot listen on {wanted}: {e}")))?;
    let mut model = QueueModel::new(args.bounds.bounds(), args.bug);
    if !args.no_symmetry {
        model = model.stepping_to_representatives();
    }
    outln!(
        "retryq explore: http://{address}/ (the model with {}, {}; Ctrl-C stops)",
        model.bounds,
        if args.no_symmetry { "no symmetry reduction" } else { "symmetry reduction over workers" }
    )?;
    let checker = model.checker().serve(address);
    // `serve` returns only if its server stops.
    outln!("retryq explore: stopped after {} states", checker.unique_state_count())?;
    Ok(ExitCode::SUCCESS)
}
