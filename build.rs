//! Stamps the build with what `leasehold --version` reports besides the version: the git
//! revision the source was built from and the enabled cargo features.
//!
//! - `LEASEHOLD_REVISION`: `git rev-parse --short HEAD` when this package is the top of a
//!   git work tree (a plain checkout or a worktree), else `unknown` — a build from a
//!   tarball, or from a package unpacked inside some unrelated repository, must neither
//!   fail nor borrow that repository's revision.
//! - `LEASEHOLD_FEATURES`: the enabled features, comma-separated (`none` when there are
//!   none), read from cargo's `CARGO_FEATURE_*` variables so no list is kept here.
//!
//! The script reruns only when `HEAD` or the ref it names moves (and when this file
//! changes), so an edit to a source file does not rerun it and a commit does.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let revision = match git_checkout(&manifest_dir) {
        Some(checkout) => {
            for file in checkout.watched_files() {
                println!("cargo:rerun-if-changed={}", file.display());
            }
            checkout.short_revision().unwrap_or_else(unknown)
        }
        None => unknown(),
    };
    println!("cargo:rustc-env=LEASEHOLD_REVISION={revision}");
    println!("cargo:rustc-env=LEASEHOLD_FEATURES={}", features());
}

fn unknown() -> String {
    "unknown".to_owned()
}

/// The enabled features, as cargo names them to build scripts (`CARGO_FEATURE_POSTGRES`
/// for `postgres`), sorted; the `default` alias is not a feature of its own.
fn features() -> String {
    let mut names: Vec<String> = env::vars()
        .filter_map(|(key, _)| {
            key.strip_prefix("CARGO_FEATURE_")
                .map(|name| name.to_lowercase().replace('_', "-"))
        })
        .filter(|name| name != "default")
        .collect();
    names.sort();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(",")
    }
}

/// A git work tree whose top is this package's directory.
struct Checkout {
    dir: PathBuf,
}

/// The checkout this package is the top of, if any (no git, no repository, or a repository
/// around an unpacked package all give `None`).
fn git_checkout(manifest_dir: &Path) -> Option<Checkout> {
    let checkout = Checkout {
        dir: manifest_dir.to_path_buf(),
    };
    let top = PathBuf::from(checkout.git(&["rev-parse", "--show-toplevel"])?);
    let same = top.canonicalize().ok()? == manifest_dir.canonicalize().ok()?;
    same.then_some(checkout)
}

impl Checkout {
    /// Runs git in the package directory; its trimmed stdout on success.
    fn git(&self, args: &[&str]) -> Option<String> {
        let output = Command::new("git")
            .args(args)
            .current_dir(&self.dir)
            .output()
            .ok()?;
        let text = String::from_utf8(output.stdout).ok()?;
        let text = text.trim();
        (output.status.success() && !text.is_empty()).then(|| text.to_owned())
    }

    fn short_revision(&self) -> Option<String> {
        self.git(&["rev-parse", "--short", "HEAD"])
    }

    /// `HEAD`, the ref it points to and `packed-refs`, wherever git keeps them (a worktree
    /// has its own `HEAD` but shares the refs): the files a commit or a checkout changes.
    /// Only existing files are named, because cargo reruns a script on every build while
    /// a watched path is missing.
    fn watched_files(&self) -> Vec<PathBuf> {
        let mut names = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
        names.extend(self.git(&["symbolic-ref", "-q", "HEAD"]));
        names
            .iter()
            .filter_map(|name| self.git(&["rev-parse", "--git-path", name]))
            .map(|path| self.dir.join(path))
            .filter(|path| path.is_file())
            .collect()
    }
}
