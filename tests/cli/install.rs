//! What an installed `leasehold` gives the shell around it: completion scripts that the
//! shells parse (and that complete subcommands, view names and store paths), manual pages
//! that render, and a `--version` naming the version, the revision and the features.
//!
//! A shell or formatter that is not installed is skipped with a note, except bash under
//! `CI=true`: bash is always there, so its absence is a broken setup.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use clap::CommandFactory;
use leasehold::cli::Cli;

use super::{assert_one_line_failure, code, leasehold, stderr, stdout};

const SHELLS: [&str; 5] = ["bash", "zsh", "fish", "elvish", "powershell"];

fn installed(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Whether `shell` can be used; a missing one is a skip with a note, or a failure under CI
/// when `required_in_ci`.
fn shell_available(shell: &str, required_in_ci: bool) -> bool {
    if installed(shell) {
        return true;
    }
    assert!(
        !(required_in_ci && under_ci()),
        "{shell} is missing under CI=true"
    );
    eprintln!("{shell} is not installed; skipping its check");
    false
}

/// `leasehold completions SHELL`, checked to succeed quietly.
fn script(shell: &str) -> String {
    let o = leasehold(&["completions", shell]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "{shell}");
    stdout(&o)
}

/// Runs `program args… FILE` on `text` written to a temp file.
fn run_on_file(text: &str, file_name: &str, program: &str, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file_name);
    std::fs::write(&path, text).unwrap();
    Command::new(program)
        .args(args)
        .arg(&path)
        .current_dir(dir.path())
        .output()
        .unwrap()
}

fn assert_parses(shell: &str, check: &[&str], required_in_ci: bool) {
    if !shell_available(check[0], required_in_ci) {
        return;
    }
    let o = run_on_file(
        &script(shell),
        "leasehold.completion",
        check[0],
        &check[1..],
    );
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "{shell}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn every_shell_gets_a_script_naming_the_commands() {
    for shell in SHELLS {
        let text = script(shell);
        for word in ["leasehold", "inspect", "completions", "--store"] {
            assert!(text.contains(word), "{shell} script lacks {word}");
        }
    }
}

#[test]
fn the_bash_script_parses() {
    assert_parses("bash", &["bash", "-n"], true);
}

#[test]
fn the_zsh_script_parses() {
    assert_parses("zsh", &["zsh", "-n"], false);
}

#[test]
fn the_fish_script_parses() {
    assert_parses("fish", &["fish", "--no-execute"], false);
}

#[test]
fn an_unknown_shell_is_one_line_and_exit_2() {
    let err = assert_one_line_failure(&leasehold(&["completions", "tcsh"]), 2);
    assert!(err.contains("tcsh"), "{err}");
}

/// What bash offers after `words` (the last one being completed), sorted, run in a
/// directory holding only `alpha.db` and `beta.db`.
fn bash_offers(words: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("stores");
    std::fs::create_dir(&cwd).unwrap();
    for file in ["alpha.db", "beta.db"] {
        std::fs::write(cwd.join(file), "").unwrap();
    }
    let script_path = dir.path().join("leasehold.bash");
    std::fs::write(&script_path, script("bash")).unwrap();
    // `compopt` only works inside a real completion; outside one it would just complain.
    let driver = format!(
        r#"source {script}
compopt() {{ :; }}
COMP_WORDS=({words})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
_leasehold leasehold "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        script = script_path.display(),
        words = words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" "),
    );
    let o = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &driver])
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
    let mut offered: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    offered.sort();
    offered
}

#[test]
fn bash_completes_subcommands_views_and_store_paths() {
    if !shell_available("bash", true) {
        return;
    }
    assert_eq!(bash_offers(&["leasehold", "compl"]), ["completions"]);
    let views = bash_offers(&["leasehold", "inspect", ""]);
    for view in super::VIEWS {
        assert!(views.iter().any(|v| v == view), "{view} not in {views:?}");
    }
    assert_eq!(
        bash_offers(&["leasehold", "inspect", "--store", ""]),
        ["alpha.db", "beta.db"]
    );
    assert_eq!(
        bash_offers(&["leasehold", "copy", "--to", "be"]),
        ["beta.db"]
    );
    assert_eq!(bash_offers(&["leasehold", "work", "enq"]), ["enqueue"]);
    assert_eq!(
        bash_offers(&["leasehold", "work", "enqueue", "--store", "al"]),
        ["alpha.db"]
    );
}

/// Checks a page's roff skeleton, then renders it with groff (or `man -l`) where one is
/// installed: no error and no warning.
fn assert_renders(page: &str, name: &str) {
    for part in [".TH ", ".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION"] {
        assert!(page.contains(part), "{name} lacks {part}");
    }
    let o = if installed("groff") {
        run_on_file(page, name, "groff", &["-man", "-Tutf8", "-ww", "-z"])
    } else if installed("man") {
        run_on_file(page, name, "man", &["--warnings", "-l"])
    } else {
        eprintln!("neither groff nor man is installed; checked the roff structure only");
        return;
    };
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "{name}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn subcommand_names() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect()
}

#[test]
fn the_manual_page_renders_and_names_every_command() {
    let o = leasehold(&["man"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let page = stdout(&o);
    assert_renders(&page, "leasehold.1");
    assert!(page.contains(".TH leasehold 1"), "{page}");
    for name in subcommand_names() {
        assert!(page.contains(&format!("leasehold\\-{name}(1)")), "{name}");
    }
}

#[test]
fn man_dir_writes_a_rendering_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("share/man/man1");
    let o = leasehold(&["man", "--dir", target.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let written: Vec<String> = stdout(&o).lines().map(str::to_owned).collect();
    let mut expected: Vec<String> = vec!["leasehold.1".to_owned()];
    expected.extend(
        subcommand_names()
            .iter()
            .map(|name| format!("leasehold-{name}.1")),
    );
    expected.push("leasehold-workflow-deploy.1".to_owned());
    expected.push("leasehold-work-enqueue.1".to_owned());
    for name in &expected {
        let path = target.join(name);
        assert!(
            written.contains(&path.display().to_string()),
            "{name} not reported in {written:?}"
        );
    }
    let mut on_disk: Vec<String> = std::fs::read_dir(&target)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    assert_eq!(on_disk.len(), written.len(), "{on_disk:?} vs {written:?}");
    for name in on_disk {
        let page = std::fs::read_to_string(target.join(&name)).unwrap();
        assert_renders(&page, &name);
    }
}

#[test]
fn man_dir_over_a_file_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("taken");
    std::fs::write(&file, "x").unwrap();
    let err = assert_one_line_failure(&leasehold(&["man", "--dir", file.to_str().unwrap()]), 2);
    assert!(err.contains("taken"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

/// The revision git reports for this checkout, when the package is the top of one.
fn checkout_revision() -> Option<String> {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(manifest_dir)
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let top = git(&["rev-parse", "--show-toplevel"])?;
    let same = Path::new(&top).canonicalize().ok()? == manifest_dir.canonicalize().ok()?;
    if same {
        git(&["rev-parse", "--short", "HEAD"])
    } else {
        None
    }
}

#[test]
fn version_names_the_version_the_revision_and_the_features() {
    let revision = checkout_revision().unwrap_or_else(|| "unknown".to_owned());
    let enabled: Vec<&str> = [
        ("cli", cfg!(feature = "cli")),
        ("jemalloc", cfg!(feature = "jemalloc")),
        ("postgres", cfg!(feature = "postgres")),
        ("testing", cfg!(feature = "testing")),
        ("tui", cfg!(feature = "tui")),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect();
    let features = if enabled.is_empty() {
        "none".to_owned()
    } else {
        enabled.join(",")
    };
    let expected = format!(
        "leasehold {} (revision {revision}; features: {features})\n",
        env!("CARGO_PKG_VERSION")
    );
    let o = leasehold(&["--version"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), expected);
    let sub = leasehold(&["inspect", "--version"]);
    assert_eq!(stdout(&sub), format!("leasehold-inspect{}", &expected[9..]));
}
