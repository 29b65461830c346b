//! `leasehold completions SHELL`: the shell's completion script, on stdout.
//!
//! Generated from the one clap definition ([`super::Cli`]), so a new subcommand, flag or
//! view completes without anyone editing a script. Inspect's view names, the log formats
//! and every other `ValueEnum` complete as their values; every store argument (value name
//! `STORE`) completes as a file path, since a SQLite file is the store most often typed
//! (`memory` and `postgres://…` are typed out).

use std::io::Write;

use clap::{Args, CommandFactory, ValueHint};
use clap_complete::Shell;

use super::{Cli, CliResult};

/// The placeholder every store argument shows (`--store STORE`, `copy --from STORE`).
const STORE_VALUE_NAME: &str = "STORE";

/// Arguments of `leasehold completions`.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to print the completion script for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Runs `leasehold completions`. The script is built in memory first: the generator
/// cannot report a write error, so a closed pipe is left to the caller's `write_all`.
///
/// # Errors
/// Only a failed write of the script.
pub fn run(args: &CompletionsArgs, out: &mut dyn Write) -> CliResult {
    out.write_all(&script(args.shell))?;
    Ok(())
}

/// The completion script for `shell`.
#[must_use]
pub fn script(shell: Shell) -> Vec<u8> {
    let mut command = command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "leasehold", &mut script);
    script
}

/// The command line as completion sees it: the clap definition with every store argument
/// marked as a file path. Applied here, by value name, rather than on each argument, so a
/// store argument added later is covered without anyone remembering to.
#[must_use]
pub fn command() -> clap::Command {
    with_store_paths(Cli::command())
}

fn with_store_paths(command: clap::Command) -> clap::Command {
    command
        .mut_args(|arg| {
            let names_a_store = arg
                .get_value_names()
                .is_some_and(|names| names.iter().any(|name| name == STORE_VALUE_NAME));
            if names_a_store {
                arg.value_hint(ValueHint::FilePath)
            } else {
                arg
            }
        })
        .mut_subcommands(with_store_paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every argument of every (sub)command, with the path of names leading to it.
    fn every_arg(command: &clap::Command, path: &str, found: &mut Vec<(String, clap::Arg)>) {
        for arg in command.get_arguments() {
            found.push((format!("{path} {}", arg.get_id()), arg.clone()));
        }
        for sub in command.get_subcommands() {
            every_arg(sub, &format!("{path} {}", sub.get_name()), found);
        }
    }

    #[test]
    fn every_store_argument_completes_as_a_file_path() {
        let mut found = Vec::new();
        every_arg(&command(), "leasehold", &mut found);
        let stores: Vec<_> = found
            .iter()
            .filter(|(_, arg)| {
                arg.get_value_names()
                    .is_some_and(|n| n.iter().any(|n| n == STORE_VALUE_NAME))
            })
            .collect();
        let paths: Vec<&str> = stores.iter().map(|(path, _)| path.as_str()).collect();
        for expected in [
            "leasehold inspect store",
            "leasehold attach store",
            "leasehold init store",
            "leasehold authority store",
            "leasehold copy from",
            "leasehold copy to",
            "leasehold workflow deploy store",
        ] {
            assert!(paths.contains(&expected), "{expected} not in {paths:?}");
        }
        for (path, arg) in stores {
            assert_eq!(arg.get_value_hint(), ValueHint::FilePath, "{path}");
        }
    }

    #[test]
    fn other_arguments_keep_their_own_hints() {
        let mut found = Vec::new();
        every_arg(&command(), "leasehold", &mut found);
        let (_, view) = found
            .iter()
            .find(|(path, _)| path == "leasehold inspect view")
            .expect("inspect has a view argument");
        assert_eq!(view.get_value_hint(), ValueHint::Unknown);
        assert!(
            view.get_possible_values()
                .iter()
                .any(|v| v.get_name() == "failovers")
        );
    }
}
