//! The `leasehold` command line (docs/ARCHITECTURE.md#command-line): parsing, dispatch and the exit-code contract.
//!
//! One file per subcommand; [`output`] holds tables and `--json`; what `compatible` means
//! for every view is [`crate::ops::live_builds`]'s.
//!
//! Contract:
//! - exit 0 ok; 1 a semantic refusal or violation; 2 usage, an unreadable store or an
//!   internal error;
//! - an error is one line on stderr, `leasehold: <message>`, never a backtrace or `Debug`
//!   output (clap's multi-line errors are folded into one line too);
//! - `--store` falls back to `LEASEHOLD_STORE`;
//! - `--json` prints one JSON object per line with camelCase keys.

pub mod attach;
pub mod authority;
pub mod bench;
pub mod bulk;
pub mod check;
pub mod completions;
pub mod config;
pub mod copy;
pub mod demo;
pub mod enqueue;
pub mod enqueue_from;
pub mod event;
pub mod exact_json;
pub mod handler;
pub mod handler_version;
pub mod init;
pub mod inspect;
pub mod instance;
pub mod log;
pub mod man;
pub mod output;
pub mod payload;
pub mod registry;
pub mod replay;
pub mod schedule;
pub mod seed;
pub mod settings;
pub mod store_admin;
pub mod witness;
pub mod work;
pub mod work_lines;
pub mod work_show;
pub mod workflow;

use std::ffi::OsString;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::error::Error;
use crate::foundation::text_cell::{defang, escape, truncate};
use crate::store::Store;
use crate::store::url::{OpenMode, open};

/// Exit code: success.
pub const EXIT_OK: u8 = 0;
/// Exit code: a semantic refusal or an invariant violation.
pub const EXIT_REFUSED: u8 = 1;
/// Exit code: usage error, unreadable store, internal error.
pub const EXIT_USAGE: u8 = 2;

/// What `--version` prints after the name: the version, the git revision the binary was
/// built from (`unknown` outside a git checkout) and the enabled features (set by
/// `build.rs`).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (revision ",
    env!("LEASEHOLD_REVISION"),
    "; features: ",
    env!("LEASEHOLD_FEATURES"),
    ")"
);

/// Leased, fenced durable work — and the terminal dashboard that watches it.
#[derive(Debug, Parser)]
#[command(name = "leasehold", version = VERSION, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Every subcommand (see the README and docs/ARCHITECTURE.md#command-line).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run an embedded in-memory N-authority cluster and watch it.
    Demo(demo::DemoArgs),
    /// Attach the dashboard to a store (`leasehold STORE` is a shorthand).
    Attach(attach::AttachArgs),
    /// Run one authority process against a store.
    Authority(Box<authority::AuthorityArgs>),
    /// Create an empty store (the other writers refuse a missing one).
    Init(init::InitArgs),
    /// Fill a store with a realistic mixed workload.
    Seed(seed::SeedArgs),
    /// Print one view of a store as a table or as JSON lines.
    Inspect(inspect::InspectArgs),
    /// Print a workflow instance's history.
    History(instance::HistoryArgs),
    /// Cancel a workflow instance.
    Cancel(instance::CancelArgs),
    /// Run the invariant checker over a store's durable history (exit 1 on a violation).
    Check(check::CheckArgs),
    /// What the durable history says happened in a window: failovers, fenced writes,
    /// throughput, each step, one resource at any revision.
    Replay(replay::ReplayArgs),
    /// Validate, deploy and start durable workflows.
    #[command(subcommand)]
    Workflow(workflow::WorkflowCommand),
    /// Enqueue work; triage failed work: requeue or discard an item.
    #[command(subcommand)]
    Work(work::WorkCommand),
    /// Ingest one external event (dedup on source and id).
    Event(event::EventArgs),
    /// Create, update and list schedules.
    #[command(subcommand)]
    Schedule(schedule::ScheduleCommand),
    /// Pause and resume a handler fleet-wide; list the paused handlers.
    #[command(subcommand)]
    Handler(handler::HandlerCommand),
    /// Check a config file (`leasehold.toml`).
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Copy a store into another (e.g. SQLite to PostgreSQL).
    Copy(copy::CopyArgs),
    /// Administer the store itself: check it whole (`store verify`), accept a rewound store
    /// (`store accept-rewind`), acknowledge a change of database server (`store
    /// acknowledge-server-change`).
    #[command(subcommand)]
    Store(store_admin::StoreCommand),
    /// Measure store throughput and the dashboard's cost.
    Bench(bench::BenchArgs),
    /// Print the completion script for a shell.
    Completions(completions::CompletionsArgs),
    /// Print the manual page, or write one page per command with --dir.
    Man(man::ManArgs),
    /// `leasehold STORE`: shorthand for `leasehold attach STORE`.
    #[command(external_subcommand)]
    External(Vec<OsString>),
}

/// The `--store` option shared by every subcommand that reads or writes a store.
#[derive(Debug, Clone, Args)]
pub struct StoreArg {
    /// The work store: a SQLite file path or sqlite:PATH, or postgres://….
    #[arg(
        long,
        env = "LEASEHOLD_STORE",
        hide_env_values = true,
        value_name = "STORE"
    )]
    pub store: String,
}

impl StoreArg {
    /// Opens the store. `memory` is refused: each process that opens it gets a new, empty
    /// store, so a one-shot command would read nothing and write what is gone when it
    /// exits.
    ///
    /// # Errors
    /// The store's own error, mapped to exit 2 for an unreadable store; `memory` (exit 2).
    pub fn open(&self, mode: OpenMode) -> Result<Store, Failure> {
        refuse_memory(&self.store, "read or write from a one-shot command")?;
        open(&self.store, mode).map_err(Failure::from)
    }

    /// Opens an existing store for a one-shot writer (`event`, `work …`, `cancel`, …),
    /// checked against this host's rewind witness when the host has a state directory
    /// (`LEASEHOLD_STATE_DIR`, else `$XDG_STATE_HOME` or `$HOME`): a store rewound behind
    /// what this host has seen, or another store under the same name, is refused before
    /// anything is written. Without a state directory there is nothing to judge by.
    ///
    /// # Errors
    /// As [`Self::open`]; `STORE_REWOUND` (exit 2).
    pub fn open_writer(&self) -> Result<Store, Failure> {
        self.open_witnessed(OpenMode::Existing)
    }

    /// [`Self::open_writer`] in `mode` (`seed` creates the store it fills).
    ///
    /// # Errors
    /// As [`Self::open_writer`].
    pub fn open_witnessed(&self, mode: OpenMode) -> Result<Store, Failure> {
        Ok(self.open(mode)?.with_host_witness()?)
    }
}

/// Refuses `memory`, a new, empty store inside each process that opens it, where there is
/// nothing to `what` (the in-memory cluster is `leasehold demo`).
///
/// # Errors
/// `memory`, or a store URL that does not parse (exit 2).
pub(crate) fn refuse_memory(store: &str, what: &str) -> Result<(), Failure> {
    if crate::store::url::StoreUrl::parse(store)? == crate::store::url::StoreUrl::Memory {
        return Err(Failure::usage(format!(
            "memory is a new, empty store inside each process that opens it: there is nothing to {what} (the in-memory cluster runs in `leasehold demo`)"
        )));
    }
    Ok(())
}

/// Why a command did not succeed: the exit code and the one line to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub exit: u8,
    /// The message (without the `leasehold: ` prefix); empty for a quiet exit.
    pub message: String,
}

impl Failure {
    /// A usage error or unreadable input (exit 2).
    #[must_use]
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            exit: EXIT_USAGE,
            message: message.into(),
        }
    }

    /// A semantic refusal or violation (exit 1).
    #[must_use]
    pub fn refused(message: impl Into<String>) -> Self {
        Self {
            exit: EXIT_REFUSED,
            message: message.into(),
        }
    }
}

impl From<Error> for Failure {
    /// Store failures, malformed requests, unknown names, an instance id another running
    /// authority holds, missing capabilities, a refused copy and a failure of this
    /// process's own surroundings are exit 2; every other error is a semantic refusal,
    /// exit 1.
    fn from(error: Error) -> Self {
        let exit = if error.is_store_failure()
            || matches!(
                error,
                Error::Invalid(_)
                    | Error::InstanceInUse { .. }
                    | Error::NotFound { .. }
                    | Error::CapabilityMissing { .. }
                    | Error::TargetNotEmpty { .. }
                    | Error::CopyIncomplete { .. }
                    | Error::Local(_)
            ) {
            EXIT_USAGE
        } else {
            EXIT_REFUSED
        };
        Self {
            exit,
            message: error.to_string(),
        }
    }
}

impl From<io::Error> for Failure {
    /// A closed pipe (`leasehold inspect work | head`) ends the command quietly.
    fn from(error: io::Error) -> Self {
        if error.kind() == io::ErrorKind::BrokenPipe {
            Self {
                exit: EXIT_OK,
                message: String::new(),
            }
        } else {
            Self::usage(format!("cannot write output: {error}"))
        }
    }
}

/// The result of one command.
pub type CliResult = Result<(), Failure>;

/// The async runtime the long-running subcommands (`authority`, `demo`, `attach`) block on.
fn tokio_runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::usage(format!("cannot start the async runtime: {e}")))
}

/// Installs the last-resort panic hook: one line on stderr, exit 2. A hook installed later
/// (the TUI's terminal restore) runs first and then chains to this one.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = crate::foundation::panic::message(info.payload()).unwrap_or("unknown panic");
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let line = truncate(&escape(payload), 300);
        let _ = writeln!(
            io::stderr(),
            "leasehold: internal error: {line}{place} (please report this)"
        );
        std::process::exit(i32::from(EXIT_USAGE));
    }));
}

/// The whole binary: parse `std::env::args_os()`, run, print the error line, exit.
#[must_use]
pub fn main() -> ExitCode {
    run_from(std::env::args_os())
}

/// Parses `args` (the first is the program name), runs the command against the process's
/// stdout and reports a failure as one line on stderr.
pub fn run_from<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::InvalidUtf8 => {
            report(&Failure::usage(not_utf8(&args[1.min(args.len())..], 1)));
            return ExitCode::from(EXIT_USAGE);
        }
        Err(e) => return ExitCode::from(clap_exit(&e)),
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let outcome = execute(cli, &mut out).and_then(|()| out.flush().map_err(Failure::from));
    match outcome {
        Ok(()) => ExitCode::from(EXIT_OK),
        Err(failure) => {
            drop(out);
            report(&failure);
            ExitCode::from(failure.exit)
        }
    }
}

/// Prints a failure as one line: `leasehold: <message>` (nothing for a quiet exit).
pub fn report(failure: &Failure) {
    if !failure.message.is_empty() {
        let _ = writeln!(io::stderr(), "leasehold: {}", one_line(&failure.message));
    }
}

/// Folds a message onto one line and escapes anything a terminal would act on; values the
/// message escaped already (ids shown as cells) are not escaped twice.
#[must_use]
pub fn one_line(message: &str) -> String {
    let joined = message
        .split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    defang(&joined)
}

/// Which of `words` (the first at position `first`, counted after the program name) are
/// not UTF-8, for a usage error that names them: `argument 3 ('a\u{fffd}') is not valid
/// UTF-8` (each byte that is not UTF-8 shown as U+FFFD).
fn not_utf8(words: &[OsString], first: usize) -> String {
    let bad: Vec<String> = (first..)
        .zip(words)
        .filter(|(_, w)| w.to_str().is_none())
        .map(|(n, w)| format!("argument {n} ('{}')", truncate(&w.to_string_lossy(), 60)))
        .collect();
    format!(
        "{} not valid UTF-8: leasehold takes names, ids and store URLs as UTF-8 text (only file paths may hold other bytes)",
        if bad.len() == 1 {
            format!("{} is", bad.join(""))
        } else {
            format!("{} are", bad.join(", "))
        }
    )
}

/// Help and version print as clap renders them (exit 0); every other parse error is
/// folded into one line (exit 2).
fn clap_exit(error: &clap::Error) -> u8 {
    use clap::error::ErrorKind;
    match error.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = error.print();
            u8::try_from(error.exit_code()).unwrap_or(EXIT_USAGE)
        }
        _ => {
            report(&Failure::usage(clap_message(error)));
            EXIT_USAGE
        }
    }
}

/// The substance of a clap error without its usage block: `unexpected argument '--x'
/// found; try --help`.
fn clap_message(error: &clap::Error) -> String {
    let rendered = error.render().to_string();
    let body = rendered.split("\nUsage:").next().unwrap_or(&rendered);
    let body = body.split("\nFor more information").next().unwrap_or(body);
    let body = body.trim().strip_prefix("error:").unwrap_or(body).trim();
    let text = body
        .split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    format!("{text}; try --help")
}

/// Runs a parsed command, writing its normal output to `out`.
///
/// # Errors
/// The [`Failure`] to report.
pub fn execute(cli: Cli, out: &mut dyn Write) -> CliResult {
    match cli.command {
        Command::Init(args) => init::run(&args, out),
        Command::Seed(args) => seed::run(&args, out),
        Command::Inspect(args) => inspect::run(&args, out),
        Command::Event(args) => event::run(&args, out),
        Command::Workflow(cmd) => workflow::run(cmd, out),
        Command::Schedule(cmd) => schedule::run(cmd, out),
        Command::Handler(cmd) => handler::run(&cmd, out),
        Command::Work(cmd) => work::run(&cmd, out),
        Command::Config(cmd) => config::run(&cmd, out),
        Command::Demo(args) => demo::run(&args, out),
        Command::Attach(args) => attach::run(&args),
        Command::Authority(args) => match &args.command {
            Some(command) => registry::run(command, out),
            None => authority::run(&args, out),
        },
        Command::History(args) => instance::history(&args, out),
        Command::Cancel(args) => instance::cancel(&args, out),
        Command::Check(args) => check::run(&args, out),
        Command::Replay(args) => replay::run(&args, out),
        Command::Copy(args) => copy::run(&args, out),
        Command::Store(cmd) => store_admin::run(&cmd, out),
        Command::Bench(args) => bench::run(&args, out),
        Command::Completions(args) => completions::run(&args, out),
        Command::Man(args) => man::run(&args, out),
        Command::External(words) => {
            let attach = shorthand_attach(&words)?;
            execute(
                Cli {
                    command: Command::Attach(attach),
                },
                out,
            )
        }
    }
}

/// `leasehold STORE …` means `leasehold attach STORE …` — but only when every word looks
/// like a store, so a mistyped subcommand is an error rather than a new SQLite file.
fn shorthand_attach(words: &[OsString]) -> Result<attach::AttachArgs, Failure> {
    if words.iter().any(|w| w.to_str().is_none()) {
        return Err(Failure::usage(not_utf8(words, 1)));
    }
    let looks_like_store = |word: &str| {
        word == "memory" || word.contains(['/', '.', ':']) || std::path::Path::new(word).exists()
    };
    let stores: Vec<String> = words
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    match stores.iter().find(|w| !looks_like_store(w)) {
        None if !stores.is_empty() => Ok(attach::AttachArgs {
            store: stores,
            read_only: false,
            theme: None,
            config: None,
        }),
        other => Err(Failure::usage(format!(
            "unrecognized subcommand '{}'; try --help",
            other.map_or("", String::as_str)
        ))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn clap_errors_fold_into_one_line() {
        let error = Cli::try_parse_from(["leasehold", "inspect", "work", "--store"]).unwrap_err();
        let message = clap_message(&error);
        assert!(!message.contains('\n'), "{message}");
        assert!(message.ends_with("; try --help"), "{message}");
    }

    #[test]
    fn error_mapping_follows_the_contract() {
        assert_eq!(
            Failure::from(Error::Unavailable("x".into())).exit,
            EXIT_USAGE
        );
        assert_eq!(Failure::from(Error::Invalid("x".into())).exit, EXIT_USAGE);
        assert_eq!(Failure::from(Error::Refused("x".into())).exit, EXIT_USAGE);
        assert_eq!(Failure::from(Error::Local("x".into())).exit, EXIT_USAGE);
        let conflict = Error::EventIdConflict {
            event_source: "s".into(),
            external_id: "i".into(),
        };
        assert_eq!(Failure::from(conflict).exit, EXIT_REFUSED);
        // The refusals of operator actions: semantic, and their line starts with the code.
        for refusal in [
            Error::WorkStateMismatch {
                id: "w".into(),
                state: "pending".into(),
            },
            Error::ItemsRefused("1 of 2 matched item(s) refused".into()),
            Error::ConfirmationRequired("150 items match".into()),
        ] {
            let code = refusal.code();
            let failure = Failure::from(refusal);
            assert_eq!(failure.exit, EXIT_REFUSED, "{code}");
            assert!(failure.message.starts_with(&format!("{code}: ")), "{code}");
        }
    }

    #[test]
    fn messages_are_one_escaped_line() {
        assert_eq!(one_line("a\nb\u{1b}[2J"), "a b\\x1b[2J");
        let shown = crate::foundation::text_cell::cell("id\u{202e}");
        assert_eq!(
            one_line(&format!("{shown}: unknown")),
            "id\\u{202e}: unknown"
        );
    }

    #[test]
    fn the_shorthand_only_takes_store_like_words() {
        assert!(shorthand_attach(&["memory".into()]).is_ok());
        assert!(shorthand_attach(&["./x.db".into()]).is_ok());
        assert!(shorthand_attach(&["inspct".into()]).is_err());
        let several = shorthand_attach(&["a.db".into(), "memory".into()]).unwrap();
        assert_eq!(several.store, ["a.db", "memory"]);
        assert!(shorthand_attach(&["a.db".into(), "inspct".into()]).is_err());
    }
}
