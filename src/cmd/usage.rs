//! The usage line clap prints after a wrong command line, kept to the help's.
//!
//! After an error clap's usage line lists the arguments it was given as if they were its
//! syntax, and counts `--db` taken from `RETRYQ_DB` as given: `RETRYQ_DB=q.db retryq get`
//! answered `Usage: retryq get --db <PATH> <ID>`, which reads as though `--db` were required
//! when it has a variable and a default. The help's usage line (`[OPTIONS]`) is the command's
//! syntax; every command that takes `--db` prints that one after an error too.

use clap::Command;

/// `cli` with each subcommand that takes `--db` printing its help usage line after errors.
pub fn help_usage_after_errors(mut cli: Command) -> Command {
    // Subcommands learn their full name (`retryq get`) when the whole command is built.
    cli.build();
    cli.mut_subcommands(|mut sub| {
        if !sub.get_arguments().any(|arg| arg.get_id() == "db") {
            return sub;
        }
        let rendered = sub.render_usage().to_string();
        let line = rendered.strip_prefix("Usage: ").unwrap_or(&rendered).trim_end().to_owned();
        sub.override_usage(line)
    })
}
