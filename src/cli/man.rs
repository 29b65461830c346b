//! `leasehold man [--dir DIR]`: the manual pages, in roff.
//!
//! Generated from the one clap definition ([`super::Cli`]), so the pages say what `--help`
//! says and cannot drift from it. Without `--dir`, `leasehold(1)` goes to stdout (its
//! SUBCOMMANDS section lists every command); with `--dir`, one page per command and nested
//! command is written there (`leasehold.1`, `leasehold-inspect.1`,
//! `leasehold-workflow-deploy.1`, …) and each path written is printed on its own line.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory, ValueHint};
use clap_mangen::Man;

use super::{Cli, CliResult, Failure};

/// Arguments of `leasehold man`.
#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// Write one page per command into this directory (created if missing), e.g.
    /// ~/.local/share/man/man1, instead of printing leasehold(1).
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub dir: Option<PathBuf>,
}

/// Runs `leasehold man`.
///
/// # Errors
/// A directory or page that cannot be written, or a failed write to stdout (exit 2).
pub fn run(args: &ManArgs, out: &mut dyn Write) -> CliResult {
    match &args.dir {
        None => {
            out.write_all(&render(&Man::new(built())))?;
            Ok(())
        }
        Some(dir) => {
            fs::create_dir_all(dir).map_err(|e| {
                Failure::usage(format!("cannot create directory {}: {e}", dir.display()))
            })?;
            for page in pages(&built()) {
                let path = write_page(&page, dir)?;
                writeln!(out, "{}", path.display())?;
            }
            Ok(())
        }
    }
}

/// The command line as the manual shows it: built (so every subcommand knows its full
/// name, `leasehold-inspect`) and without clap's `help` subcommand, which is `--help`
/// again.
fn built() -> clap::Command {
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    command
}

/// One page for `command` and one for each visible command under it, outermost first.
fn pages(command: &clap::Command) -> Vec<Man> {
    let mut all = vec![Man::new(command.clone())];
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        all.extend(pages(sub));
    }
    all
}

/// The page as roff text, in ASCII (see [`ascii_roff`]).
fn render(page: &Man) -> Vec<u8> {
    let mut roff = Vec::new();
    page.render(&mut roff)
        .expect("rendering into memory cannot fail");
    ascii_roff(&String::from_utf8_lossy(&roff)).into_bytes()
}

/// Writes every non-ASCII character (the help text's `…` and `—`) as the glyph escape
/// `\[uXXXX]`: `groff -man` reads raw input as Latin-1, so a UTF-8 byte would be a
/// warning and a wrong glyph; only `man`'s own preprocessing would have converted it.
fn ascii_roff(text: &str) -> String {
    let mut ascii = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            ascii.push(c);
        } else {
            ascii.push_str(&format!("\\[u{:04X}]", u32::from(c)));
        }
    }
    ascii
}

fn write_page(page: &Man, dir: &Path) -> Result<PathBuf, Failure> {
    let path = dir.join(page.get_filename());
    fs::write(&path, render(page))
        .map_err(|e| Failure::usage(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn there_is_one_page_per_command_named_by_its_path() {
        let names: Vec<String> = pages(&built()).iter().map(Man::get_filename).collect();
        for expected in [
            "leasehold.1",
            "leasehold-inspect.1",
            "leasehold-workflow-deploy.1",
            "leasehold-completions.1",
            "leasehold-man.1",
        ] {
            assert!(
                names.iter().any(|n| n == expected),
                "{expected} in {names:?}"
            );
        }
        assert!(!names.iter().any(|n| n.contains("help")), "{names:?}");
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
    }

    #[test]
    fn pages_are_ascii_with_glyph_escapes() {
        assert_eq!(
            ascii_roff("postgres://… — ok"),
            "postgres://\\[u2026] \\[u2014] ok"
        );
        let page = render(&Man::new(built()));
        assert!(page.is_ascii());
    }

    #[test]
    fn the_main_page_lists_every_command() {
        let page = String::from_utf8(render(&Man::new(built()))).unwrap();
        for sub in built().get_subcommands() {
            assert!(
                page.contains(&format!("leasehold\\-{}(1)", sub.get_name())),
                "{} missing",
                sub.get_name()
            );
        }
    }
}
