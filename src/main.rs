//! The `leasehold` binary: install the last-resort panic hook, then hand over to
//! [`leasehold::cli`], which parses, runs and maps errors to exit codes.

fn main() -> std::process::ExitCode {
    leasehold::cli::install_panic_hook();
    leasehold::cli::main()
}
