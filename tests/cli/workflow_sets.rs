//! `workflow validate` and `workflow deploy` judge a definition's actions against the
//! application's handlers — a config, the fleet's registrations, a named demo workload, or
//! the union — say which, and name the nearest handler on a miss. A refused deploy is one
//! line, exit 2, and leaves no definition behind.

use std::path::{Path, PathBuf};

use leasehold::clock::{Clock, SystemClock};
use leasehold::store::url::{self, OpenMode};

use super::support::authorities::registration;
use super::{assert_one_line_failure, code, leasehold, stderr, stdout};

/// A file of `examples/polyglot`, where the handlers and the workflow calling them live.
fn polyglot(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/polyglot")
        .join(name)
        .display()
        .to_string()
}

/// The example's workflow with its first action misspelt (`resize-images`).
fn misspelt(dir: &Path) -> String {
    let text = std::fs::read_to_string(polyglot("thumbnail.json")).unwrap();
    let bad = text.replacen("\"resize-image\"", "\"resize-images\"", 1);
    assert_ne!(bad, text);
    let path = dir.join("misspelt.json");
    std::fs::write(&path, bad).unwrap();
    path.display().to_string()
}

/// A fresh SQLite store in `dir`.
fn store(dir: &Path) -> String {
    let path = dir.join("store.db").display().to_string();
    assert_eq!(code(&leasehold(&["init", &path])), 0);
    path
}

/// The workflow ids deployed to `store`, pinned versions left out.
fn deployed(store: &str) -> Vec<String> {
    let store = url::open(store, OpenMode::ReadOnly).unwrap();
    store
        .deployed_definitions()
        .unwrap()
        .into_iter()
        .map(|d| d.workflow_id)
        .filter(|id| !id.contains('@'))
        .collect()
}

/// Plants a live authority that runs the example's two handlers.
fn plant_fleet(store: &str) {
    let store = url::open(store, OpenMode::ReadWrite).unwrap();
    let handlers = [("resize-image", "1.0.0"), ("send-email", "1.0.0")];
    store
        .register_authority(&registration(
            "poly-1",
            &handlers,
            SystemClock.now() + 600_000,
        ))
        .unwrap();
}

#[test]
fn an_application_workflow_is_judged_by_its_config() {
    let dir = tempfile::tempdir().unwrap();
    let config = polyglot("handlers.toml");
    let ok = leasehold(&[
        "workflow",
        "validate",
        "--config",
        &config,
        &polyglot("thumbnail.json"),
    ]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    assert!(
        stdout(&ok).starts_with("ok: workflow thumbnail (6 steps), semantic fingerprint ")
            && stdout(&ok).contains("; actions judged against 2 handlers from handlers.toml\n"),
        "{}",
        stdout(&ok)
    );
    let store = store(dir.path());
    let o = leasehold(&[
        "workflow",
        "deploy",
        "--store",
        &store,
        "--config",
        &config,
        &polyglot("thumbnail.json"),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains(
            "actions judged against 2 handlers from handlers.toml and none registered by the fleet"
        ),
        "{}",
        stdout(&o)
    );
    assert_eq!(deployed(&store), ["thumbnail"]);
}

#[test]
fn a_misspelt_action_names_the_nearest_handler_and_deploys_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = misspelt(dir.path());
    let config = polyglot("handlers.toml");
    let hint = "no handler `resize-images` in the handler set (did you mean `resize-image`?)";
    let o = leasehold(&["workflow", "validate", "--config", &config, &bad]);
    let err = assert_one_line_failure(&o, 1);
    assert!(err.contains("1 problem found"), "{err}");
    assert_eq!(
        stdout(&o),
        format!("WORKFLOW_ACTION_NOT_FOUND at steps[0].action: {hint}\n")
    );

    let store = store(dir.path());
    let o = leasehold(&[
        "workflow", "deploy", "--store", &store, "--config", &config, &bad,
    ]);
    let err = assert_one_line_failure(&o, 2);
    assert!(
        err.contains("not deployed: WORKFLOW_ACTION_NOT_FOUND") && err.contains(hint),
        "{err}"
    );
    assert!(deployed(&store).is_empty(), "nothing was deployed");
}

/// The handlers the running fleet registered are a set of their own (`--store`, and
/// always for a deploy), and the union with a config is said as such.
#[test]
fn the_fleets_registered_handlers_judge_the_actions() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    plant_fleet(&store);
    let definition = polyglot("thumbnail.json");
    let o = leasehold(&["workflow", "validate", "--store", &store, &definition]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).ends_with("; actions judged against 2 registered by the fleet\n"),
        "{}",
        stdout(&o)
    );
    let both = leasehold(&[
        "workflow",
        "validate",
        "--store",
        &store,
        "--config",
        &polyglot("handlers.toml"),
        &definition,
    ]);
    assert!(
        stdout(&both).ends_with(
            "; actions judged against 2 handlers from handlers.toml and 2 registered by the fleet\n"
        ),
        "{}",
        stdout(&both)
    );
    let bad = misspelt(dir.path());
    let o = leasehold(&["workflow", "validate", "--store", &store, &bad]);
    assert_eq!(code(&o), 1);
    assert!(
        stdout(&o).contains("(did you mean `resize-image`?)"),
        "{}",
        stdout(&o)
    );

    let o = leasehold(&["workflow", "deploy", "--store", &store, &definition]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).ends_with("; actions judged against 2 registered by the fleet\n"),
        "{}",
        stdout(&o)
    );
    assert_eq!(deployed(&store), ["thumbnail"]);
}

/// With no set, `validate` checks the structure and says the actions were not checked; a
/// deploy has nothing to judge by and is refused; the demo's handlers are there only when
/// named.
#[test]
fn without_a_handler_set_actions_are_not_assumed() {
    let dir = tempfile::tempdir().unwrap();
    let definition = polyglot("thumbnail.json");
    let o = leasehold(&["workflow", "validate", &definition]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "ok: workflow thumbnail (6 steps); actions not checked: no handler set given (--config, --store or --workload)\n"
    );
    let store = store(dir.path());
    let o = leasehold(&["workflow", "deploy", "--store", &store, &definition]);
    let err = assert_one_line_failure(&o, 2);
    assert!(
        err.contains("no handler to judge its actions by (none registered by the fleet)"),
        "{err}"
    );
    assert!(deployed(&store).is_empty());

    let reminder = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("workflows/reminder.json")
        .display()
        .to_string();
    let o = leasehold(&["workflow", "deploy", "--store", &store, &reminder]);
    assert_one_line_failure(&o, 2);
    let o = leasehold(&[
        "workflow",
        "deploy",
        "--store",
        &store,
        "--workload",
        "default",
        &reminder,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("handlers of the built-in `default` workload"),
        "{}",
        stdout(&o)
    );
    let o = leasehold(&["workflow", "validate", "--workload", "defualt", &reminder]);
    assert_one_line_failure(&o, 2);
    assert_eq!(deployed(&store), ["reminder"]);
}

/// A config that names no handler gives nothing to judge by: one line, exit 2.
#[test]
fn a_config_without_handlers_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("leasehold.toml");
    std::fs::write(&config, "[authority]\nlease = \"30s\"\n").unwrap();
    let config = config.display().to_string();
    let definition = polyglot("thumbnail.json");
    let o = leasehold(&["workflow", "validate", "--config", &config, &definition]);
    let err = assert_one_line_failure(&o, 2);
    assert!(
        err.starts_with(&format!("leasehold: INVALID: {config}: names no handler")),
        "{err}"
    );
    let store = store(dir.path());
    let o = leasehold(&[
        "workflow",
        "deploy",
        "--store",
        &store,
        "--config",
        &config,
        &definition,
    ]);
    let err = assert_one_line_failure(&o, 2);
    assert!(err.starts_with("leasehold: INVALID: "), "{err}");
    assert!(deployed(&store).is_empty());
}

/// A config's own handlers beside a demo workload (in the file, or `--workload`) are refused,
/// as an authority refuses to run them together: a workflow judged by both could call an
/// action no authority runs.
#[test]
fn a_config_s_handlers_beside_a_demo_workload_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let handlers = std::fs::read_to_string(polyglot("handlers.toml")).unwrap();
    let mixed = dir.path().join("mixed.toml");
    std::fs::write(
        &mixed,
        format!("[authority]\nworkload = \"default\"\n\n{handlers}"),
    )
    .unwrap();
    let definition = polyglot("thumbnail.json");
    let plain = polyglot("handlers.toml");
    for args in [
        vec!["--config", mixed.to_str().unwrap()],
        vec!["--config", plain.as_str(), "--workload", "default"],
    ] {
        let mut validate = vec!["workflow", "validate"];
        validate.extend(&args);
        validate.push(&definition);
        let err = assert_one_line_failure(&leasehold(&validate), 2);
        assert!(
            err.starts_with("leasehold: INVALID: ") && err.contains("never both"),
            "{args:?}: {err}"
        );
    }
}
