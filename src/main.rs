//! The `leasehold` binary: install the last-resort panic hook, then hand over to
//! [`leasehold::cli`], which parses, runs and maps errors to exit codes.

/// jemalloc rather than the system allocator: a drain allocates and frees a handful of short
/// strings per item (ids, index keys, history records) from several threads at once, and
/// glibc malloc spent about half the in-memory store's drain on that (its free-list
/// consolidation most of all); jemalloc drains it 1.7–1.9× faster. The library sets no
/// allocator; an application embedding it picks its own.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    leasehold::cli::install_panic_hook();
    leasehold::cli::main()
}
