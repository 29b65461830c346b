//! The dashboard, end to end without a terminal: deterministic data (memory store, manual
//! clock, seeded ids) driven through the app's update loop and drawn with `TestBackend`.
//!
//! - `snapshots_*`: insta snapshots of every view at 80×24 and 160×48 in two themes.
//! - interaction tests: views, `:` completion, filter, sort, keyset paging, workflow detail
//!   and its history tree, cancel through the dialog, read-only, demo keys, live flashes,
//!   pause, store errors, hostile text.
//! - `no_panic_on_tiny_sizes`: every view and overlay at every size up to 30×12.
//! - `screenshots`: renders every main view; with `LEASEHOLD_SCREENSHOTS=1` it also writes
//!   `screenshots/<view>.svg` (`LEASEHOLD_SCREENSHOTS=1 cargo test --test tui screenshots`).

#![allow(clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

#[path = "tui/describe.rs"]
mod describe;

use std::sync::{Arc, Mutex};

use crossterm::event::KeyCode;
use leasehold::clock::{Clock, ManualClock};
use leasehold::cluster::control::{ClusterControl, DemoAuthority, DemoState, Outcome};
use leasehold::foundation::timefmt::Zone;
use leasehold::ids::SeededIds;
use leasehold::model::event::NewEvent;
use leasehold::model::schedule::Trigger as ScheduleTrigger;
use leasehold::model::work::{NewWork, WorkFilter};
use leasehold::model::{
    Authority, CatchUp, Failure, FailureClass, PageRequest, WorkItem, WorkState,
};
use leasehold::store::Backend;
use leasehold::store::memory::MemoryBackend;
use leasehold::store::{Keyed, Store};
use leasehold::tui::action::{Action, ViewId};
use leasehold::tui::app::{Act, AppOptions, Overlay};
use leasehold::tui::harness::{Harness, buffer_text, render_app};
use leasehold::tui::snapshot::ViewData;
use leasehold::tui::theme::{BUILTIN, Role, Theme, ThemeSet};
use leasehold::workflow::Catalog;
use leasehold::workflow::engine::Engine;
use serde_json::{Map, Value, json};

/// 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600_000;
const OLD: &str = "0ld0ld0ld0ld0ld0";

struct Fixture {
    store: Store,
    clock: ManualClock,
    backend: MemoryBackend,
    /// Workflow instance ids by role.
    running: String,
    completed: String,
    retrying: String,
}

fn args(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn authority(id: &str, build: &str, compat: &str, at: i64, stopped: bool) -> Authority {
    Authority {
        instance_id: id.into(),
        compat: compat.into(),
        build: build.into(),
        config: json!({"pollIntervalMs": 1000, "leaseDurationMs": 30000,
                       "handlers": {"send-email": "1.0.0"}})
        .to_string(),
        started_at: at - 60_000,
        heartbeat_at: at,
        stopped_at: stopped.then_some(at),
        host: "host-1".into(),
        pid: 4242,
        published: leasehold::model::Published::default(),
    }
}

/// A heartbeat from the fixture's registration of `id` (registered at `T0`).
fn beat(store: &Store, id: &str) {
    let registered = authority(id, "v1.4.0", support::send_email_key(), T0, false);
    store.heartbeat(&registered.incarnation(), false).unwrap();
}

/// A store with something in every view, more than one page of work, a failover with a
/// fenced write, workflows in every status, and hostile text.
#[allow(clippy::too_many_lines)]
fn fixture() -> Fixture {
    let clock = ManualClock::new(T0);
    let backend = MemoryBackend::new();
    let store = Store::new(
        Arc::new(backend.clone()),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(7)),
    );
    let now = clock.now();
    store
        .register_authority(&authority(
            "auth-a",
            "v1.4.0",
            support::send_email_key(),
            now,
            false,
        ))
        .unwrap();
    store
        .register_authority(&authority(
            "auth-b",
            "v1.4.0",
            support::send_email_key(),
            now,
            false,
        ))
        .unwrap();
    store
        .register_authority(&authority("auth-old", "v1.3.9", OLD, now - 120_000, true))
        .unwrap();

    store
        .create_schedule(
            "hourly-report",
            ScheduleTrigger::Interval {
                every_ms: 3_600_000,
            },
            CatchUp::Latest,
            "report",
            "{}",
            support::send_email_key(),
        )
        .unwrap();
    store
        .create_schedule(
            "cleanup",
            ScheduleTrigger::Interval { every_ms: 5_000 },
            CatchUp::All,
            "cleanup",
            "{}",
            support::send_email_key(),
        )
        .unwrap();

    // Work: 40 effects, 3 from an old build, one hostile item.
    let specs: Vec<NewWork> = (0..40)
        .map(|i| {
            NewWork::effect(
                format!("effect-{i:03}"),
                "send-email",
                json!({"to": format!("user{i}@example.com")}).to_string(),
            )
        })
        .collect();
    store
        .enqueue_batch(specs, support::send_email_key())
        .unwrap();
    let old: Vec<NewWork> = (0..3)
        .map(|i| NewWork::effect(format!("legacy-{i}"), "send-email", "{}"))
        .collect();
    store.enqueue_batch(old, OLD).unwrap();
    let hostile = format!("evil\u{1b}[31mred\nline\u{202e}{}", "x".repeat(500));
    // Ids like this are refused at every entry point now; a store from an older build
    // may still hold one, so it is planted below the validator.
    let planted = WorkItem::new(
        NewWork::effect(hostile.clone(), "send-email", "y".repeat(100_000)),
        support::send_email_key(),
        clock.now(),
    );
    backend
        .write(&mut |tx| {
            tx.commit_revision()?;
            tx.insert_work(&planted)?;
            tx.adjust_counter(
                &format!("work|effect|pending|{}", support::send_email_key()),
                1,
            )
        })
        .unwrap();

    for i in 0..6 {
        let id = format!("effect-{i:03}");
        let item = store
            .claim(&id, "auth-a", support::send_email_key(), 30_000)
            .unwrap();
        match i {
            0 | 1 => {
                store
                    .complete(
                        &id,
                        "auth-a",
                        item.generation,
                        Some("{\"sent\":true}".into()),
                    )
                    .unwrap();
            }
            2 => {
                store
                    .fail(
                        &id,
                        "auth-a",
                        item.generation,
                        Failure {
                            class: FailureClass::Retryable,
                            code: "SMTP_TIMEOUT".into(),
                            message: "smtp timed out".into(),
                        },
                    )
                    .unwrap();
            }
            3 => {
                store
                    .fail(
                        &id,
                        "auth-a",
                        item.generation,
                        Failure {
                            class: FailureClass::Terminal,
                            code: "BAD_ADDRESS".into(),
                            message: "no such mailbox".into(),
                        },
                    )
                    .unwrap();
            }
            _ => {}
        }
    }
    let hostile_item = store
        .claim(&hostile, "auth-b", support::send_email_key(), 30_000)
        .unwrap();
    store
        .fail(
            &hostile,
            "auth-b",
            hostile_item.generation,
            Failure {
                class: FailureClass::Terminal,
                code: "E\u{7}BELL".into(),
                message: format!("boom\r\n{}", "z".repeat(10_000)),
            },
        )
        .unwrap();

    // A failover: auth-b claims, stalls past its lease, auth-a reclaims, auth-b's late
    // completion is fenced.
    let stale = store
        .claim("effect-020", "auth-b", support::send_email_key(), 5_000)
        .unwrap();
    clock.advance(6_000);
    store
        .claim("effect-020", "auth-a", support::send_email_key(), 30_000)
        .unwrap();
    let fenced = store.complete("effect-020", "auth-b", stale.generation, None);
    assert!(fenced.is_err(), "the stale owner must be fenced");

    // Leases.
    store
        .acquire("leader/orders", "auth-a", 30_000.0, Keyed { key: None })
        .unwrap();
    store
        .acquire("leader/billing", "auth-b", 2_000.0, Keyed { key: None })
        .unwrap();
    let lock = store
        .acquire("lock/reports", "auth-a", 10_000.0, Keyed { key: None })
        .unwrap();
    store
        .release(
            "lock/reports",
            "auth-a",
            &lock.token,
            lock.generation,
            Keyed { key: None },
        )
        .unwrap();

    // Schedules, a subscription, events.
    store
        .fire_due_schedules(support::send_email_key(), 10)
        .unwrap();
    store
        .claim(
            "cleanup@1767225605000",
            "auth-b",
            support::send_email_key(),
            30_000,
        )
        .unwrap();
    store
        .create_schedule(
            "launch",
            ScheduleTrigger::Delay {
                after_ms: T0 + 1_000,
            },
            CatchUp::Latest,
            "launch",
            "{}",
            support::send_email_key(),
        )
        .unwrap();
    store
        .create_subscription(
            "payments-sink",
            "payment-received",
            "sink",
            support::send_email_key(),
        )
        .unwrap();
    store
        .create_subscription(
            "audit-sink",
            "order-placed",
            "sink",
            support::send_email_key(),
        )
        .unwrap();
    let cursor = store
        .claim(
            "cursor:payments-sink",
            "auth-b",
            support::send_email_key(),
            30_000,
        )
        .unwrap();
    for (source, id, amount) in [
        (Some("stripe"), Some("evt_1"), 10),
        (Some("stripe"), Some("evt_1"), 10),
        (Some("stripe"), Some("evt_1"), 99),
        (None, None, 5),
        (Some("stripe"), Some("evt_2"), 20),
    ] {
        store
            .ingest(&NewEvent {
                event_type: "payment-received".into(),
                source: source.map(Into::into),
                external_id: id.map(Into::into),
                payload: json!({"amount": amount}),
            })
            .unwrap();
    }
    store
        .advance_cursor("payments-sink", "auth-b", cursor.generation, 2)
        .unwrap();

    // Workflows.
    let catalog = Catalog::demo();
    for (_, text) in leasehold::workflow::SHIPPED_DEFINITIONS {
        store.deploy_workflow(text, &catalog).unwrap().unwrap();
    }
    let call = |partner: &str| {
        args(&[
            ("partner", json!(partner)),
            ("request", json!({"op": "sync"})),
        ])
    };
    let ok = store
        .start_workflow(
            "integration-call",
            call("acme"),
            "alice",
            None,
            support::send_email_key(),
        )
        .unwrap()
        .instance_id;
    let retry = store
        .start_workflow(
            "integration-call",
            call("globex"),
            "alice",
            None,
            support::send_email_key(),
        )
        .unwrap()
        .instance_id;
    let gave_up = store
        .start_workflow(
            "integration-call",
            call("initech"),
            "bob",
            None,
            support::send_email_key(),
        )
        .unwrap()
        .instance_id;
    let running = store
        .start_workflow(
            "integration-call",
            call("umbrella"),
            "bob",
            None,
            support::send_email_key(),
        )
        .unwrap()
        .instance_id;
    let reminder = store
        .start_workflow(
            "reminder",
            args(&[("recipient", json!("carol")), ("message", json!("standup"))]),
            "carol",
            None,
            support::send_email_key(),
        )
        .unwrap()
        .instance_id;
    let cancelled = store
        .start_workflow(
            "reminder",
            args(&[("recipient", json!("dave")), ("message", json!("lunch"))]),
            "dave",
            None,
            support::send_email_key(),
        )
        .unwrap()
        .instance_id;
    store
        .start_workflow("integration-call", call("legacy"), "erin", None, OLD)
        .unwrap();
    let engine = Engine::new(store.clone(), "auth-a", support::send_email_key());
    for claimed in engine.claim(16, 30_000).unwrap() {
        let id = claimed.row.instance_id.clone();
        if id == running {
            engine.release(&claimed).unwrap();
            continue;
        }
        let _ = engine.advance(&claimed, |_| {
            if id == ok {
                Ok(json!({"status": 200}))
            } else if id == retry {
                Err(leasehold::workflow::machine::Failure {
                    code: "HTTP_503".into(),
                    message: "partner busy".into(),
                    retryable: true,
                })
            } else if id == gave_up {
                Err(leasehold::workflow::machine::Failure {
                    code: "HTTP_400".into(),
                    message: "bad request".into(),
                    retryable: false,
                })
            } else {
                Ok(json!({}))
            }
        });
    }
    let _ = reminder;
    store
        .cancel_workflow(&cancelled, None, "ops@host", "not needed")
        .unwrap();
    store
        .audit("ops@host", "cancel-workflow", &cancelled, "cancelled")
        .unwrap();
    clock.advance(1_500);
    beat(&store, "auth-a");
    clock.advance(200);
    beat(&store, "auth-b");
    Fixture {
        store,
        clock,
        backend,
        running,
        completed: ok,
        retrying: retry,
    }
}

fn options() -> AppOptions {
    AppOptions {
        read_only: false,
        demo: false,
        actor: "tester@ci".into(),
        refresh_ms: 250,
        zone: Zone::Utc,
    }
}

fn harness(f: &Fixture, theme: &str, w: u16, h: u16) -> Harness {
    Harness::new(
        f.store.clone(),
        options(),
        Theme::builtin(theme).unwrap(),
        None,
        w,
        h,
    )
}

fn screen(h: &Harness) -> String {
    buffer_text(&h.render())
}

/// Every view reachable for snapshots, with how to get there.
fn open(h: &mut Harness, view: ViewId, f: &Fixture) {
    match view {
        ViewId::WorkflowDetail => {
            h.dispatch(Action::SwitchView(ViewId::Workflows));
            h.press(':');
            h.type_text(&format!("workflow {}", f.running));
            h.key(KeyCode::Enter);
        }
        ViewId::Timeline => {
            h.press(':');
            h.type_text("timeline effect-020");
            h.key(KeyCode::Enter);
        }
        v => h.dispatch(Action::SwitchView(v)),
    }
    assert_eq!(h.app.view(), view);
}

const ALL_VIEWS: [ViewId; 13] = [
    ViewId::Overview,
    ViewId::Authorities,
    ViewId::Leases,
    ViewId::Work,
    ViewId::Workflows,
    ViewId::WorkflowDetail,
    ViewId::Cursors,
    ViewId::Events,
    ViewId::Schedules,
    ViewId::Timeline,
    ViewId::Audit,
    ViewId::Failovers,
    ViewId::Fenced,
];

#[test]
fn snapshots_every_view_two_sizes_two_themes() {
    let f = fixture();
    for theme in ["dark", "light"] {
        for (w, hgt) in [(80, 24), (160, 48)] {
            for view in ALL_VIEWS {
                let mut h = harness(&f, theme, w, hgt);
                open(&mut h, view, &f);
                let buffer = h.render();
                let name = format!("{}_{w}x{hgt}_{theme}", view.name());
                if theme == "dark" {
                    // Text only: what an operator reads.
                    insta::assert_snapshot!(name, buffer_text(&buffer));
                } else {
                    // Cells with styles: the theme's roles at work.
                    insta::assert_snapshot!(name, format!("{buffer:?}"));
                }
            }
        }
    }
}

#[test]
fn number_keys_and_command_completion_switch_views() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    h.press('3');
    assert_eq!(h.app.view(), ViewId::Leases);
    h.press(':');
    h.type_text("wor");
    h.key(KeyCode::Tab);
    assert_eq!(
        h.app.prompt().map(|p| p.text.as_str()),
        Some("work"),
        "two candidates (work, workflows) share `work`"
    );
    h.type_text("fl");
    h.key(KeyCode::Tab);
    assert_eq!(
        h.app.prompt().map(|p| p.text.as_str()),
        Some("workflow"),
        "`workflow ID` and `workflows`"
    );
    h.press('s');
    h.key(KeyCode::Tab);
    assert_eq!(h.app.prompt().map(|p| p.text.as_str()), Some("workflows"));
    h.key(KeyCode::Enter);
    assert_eq!(h.app.view(), ViewId::Workflows);
    h.key(KeyCode::Esc);
    assert_eq!(h.app.view(), ViewId::Leases, "Esc goes back");
    h.press(':');
    h.type_text("nonsense");
    h.key(KeyCode::Enter);
    assert!(
        h.app
            .status()
            .is_some_and(|s| s.text.contains("unknown command"))
    );
    h.press(':');
    h.type_text("work failed");
    h.key(KeyCode::Enter);
    assert_eq!(h.app.view(), ViewId::Work);
    assert_eq!(h.app.work_quick().name(), "failed");
}

/// The keys of the rows on screen, in order.
fn visible_keys(h: &Harness) -> Vec<String> {
    let data = h.app.table_data().unwrap();
    h.app
        .visible()
        .iter()
        .map(|i| data.rows[*i].key.clone())
        .collect()
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn filter_asks_the_store_across_every_page() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    h.press('4');
    let first_page = visible_keys(&h);
    let everything = f
        .store
        .list_work(&WorkFilter::default(), &PageRequest::first(10_000))
        .unwrap()
        .rows
        .len();
    assert!(
        screen(&h).contains(&format!("rows 1–{} of {everything}", first_page.len())),
        "the counters' total is the store's: {}",
        screen(&h)
    );
    let failed_in_store: Vec<String> = f
        .store
        .list_work(
            &WorkFilter {
                states: vec![WorkState::Failed],
                ..WorkFilter::default()
            },
            &PageRequest::first(100),
        )
        .unwrap()
        .rows
        .into_iter()
        .map(|w| w.id)
        .collect();
    assert!(
        failed_in_store.iter().any(|id| !first_page.contains(id)),
        "the fixture has a failed item beyond the first page"
    );

    h.press('/');
    h.type_text("state:failed");
    assert_eq!(visible_keys(&h), first_page, "nothing applies while typing");
    assert!(
        screen(&h).contains("state: kind: owner: compat: id:"),
        "the prompt lists the view's fields: {}",
        screen(&h)
    );
    h.key(KeyCode::Enter);
    assert_eq!(
        visible_keys(&h),
        failed_in_store,
        "every failed item, from the store"
    );
    let text = screen(&h);
    assert!(text.contains("/state:failed"), "{text}");
    assert!(
        text.contains(&format!("rows 1–2 of {}", failed_in_store.len())),
        "position and the counters' total: {text}"
    );
    h.key(KeyCode::Esc);
    assert!(
        h.app.table_ui().filter.is_empty(),
        "Esc clears the filter first"
    );
    assert_eq!(visible_keys(&h), first_page);
    h.press('/');
    h.type_text("effect-");
    h.key(KeyCode::Enter);
    h.key(KeyCode::PageDown);
    assert!(visible_keys(&h).iter().all(|k| k.starts_with("effect-")));
    assert_ne!(
        visible_keys(&h),
        first_page,
        "a later page of the filtered rows"
    );
    h.key(KeyCode::Esc);
    assert_eq!(
        visible_keys(&h),
        first_page,
        "clearing starts from the first page"
    );

    // An unknown field is refused on the status line, with the valid ones, not applied.
    h.press('/');
    h.type_text("bogus:zzz");
    h.key(KeyCode::Enter);
    let status = h.app.status().map(|s| s.text.clone()).unwrap_or_default();
    assert_eq!(
        status,
        "the work view cannot filter on \"bogus\": use state:, kind:, owner:, compat:, id: \
         (or plain text for an id prefix)"
    );
    assert!(h.app.table_ui().filter.is_empty());
    assert_eq!(visible_keys(&h), first_page);
    h.press('/');
    h.type_text("state:nope");
    h.key(KeyCode::Enter);
    assert!(
        h.app
            .status()
            .is_some_and(|s| s.text.contains("use pending, claimed")),
        "bad values too"
    );

    // Free text is an id prefix, read from the store's key range.
    h.press('/');
    h.type_text("legacy-");
    h.key(KeyCode::Enter);
    assert_eq!(visible_keys(&h), ["legacy-0", "legacy-1", "legacy-2"]);
    h.press('/');
    h.type_text("x");
    h.key(KeyCode::Esc);
    assert_eq!(
        h.app.table_ui().filter,
        "legacy-",
        "Esc in the prompt keeps the filter"
    );

    // Workflows filter by status in the store, too.
    h.key(KeyCode::Esc);
    h.dispatch(Action::SwitchView(ViewId::Workflows));
    h.press('/');
    h.type_text("status:completed");
    h.key(KeyCode::Enter);
    assert_eq!(visible_keys(&h), std::slice::from_ref(&f.completed));

    // Where the store takes no prefix, it narrows the page and the title says so.
    h.dispatch(Action::SwitchView(ViewId::Leases));
    h.press('/');
    h.type_text("state:x");
    h.key(KeyCode::Enter);
    assert!(h.app.status().is_some_and(|s| s.text.contains("use id:")));
    h.press('/');
    h.type_text("effect-02");
    h.key(KeyCode::Enter);
    assert!(visible_keys(&h).iter().all(|k| k.starts_with("effect-02")));
    assert!(screen(&h).contains("(within page:"), "{}", screen(&h));
}

#[test]
fn sort_by_column_within_the_page() {
    let f = fixture();
    let mut h = harness(&f, "dark", 160, 48);
    h.press('4');
    let ids = |h: &Harness| -> Vec<String> {
        let d = h.app.table_data().unwrap();
        h.app
            .visible()
            .iter()
            .map(|i| d.rows[*i].cells[0].text.clone())
            .collect()
    };
    let natural = ids(&h);
    assert!(!screen(&h).contains("sorted within page"));
    h.press('s');
    assert_eq!(h.app.table_ui().sort, Some((0, false)));
    assert!(
        screen(&h).contains("sorted within page"),
        "the store pages by key; a column sort orders only the page, and says so"
    );
    h.press('z');
    let mut reversed = natural.clone();
    reversed.sort_by_key(|s| std::cmp::Reverse(s.to_lowercase()));
    assert_eq!(ids(&h), reversed);
    // Cycle the sort column to generation (column 4).
    h.press('s');
    h.press('s');
    h.press('s');
    h.press('s');
    assert_eq!(h.app.table_ui().sort.map(|s| s.0), Some(4));
    let d = h.app.table_data().unwrap();
    let gens: Vec<i64> = h
        .app
        .visible()
        .iter()
        .map(|i| d.rows[*i].cells[4].text.parse().unwrap())
        .collect();
    let mut sorted = gens.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(gens, sorted, "still descending after z");
}

/// Mouse: a click on a tab switches views, on a column header sorts by it, on a row
/// selects it; the wheel moves the selection.
#[test]
fn mouse_clicks_and_wheel() {
    use leasehold::tui::views::{chrome, table};
    use ratatui::layout::Rect;

    let f = fixture();
    let mut h = harness(&f, "dark", 160, 48);
    let [_, tabs, body, _] = chrome::layout(Rect::new(0, 0, 160, 48));
    let tab_x = (0..160)
        .find(|x| chrome::tab_at(tabs, *x) == Some(ViewId::Work))
        .expect("the work tab is on screen");
    h.dispatch(Action::Click {
        column: tab_x,
        row: tabs.y,
    });
    assert_eq!(h.app.view(), ViewId::Work);

    let data = h.app.table_data().unwrap().clone();
    let gen_x = (body.x..body.right())
        .find(|x| table::column_at(body, &data, None, *x) == Some(4))
        .expect("the generation column is on screen");
    h.dispatch(Action::Click {
        column: gen_x,
        row: body.y + 1,
    });
    assert_eq!(
        h.app.table_ui().sort.map(|s| s.0),
        Some(4),
        "header click sorts"
    );

    h.dispatch(Action::Click {
        column: body.x + 2,
        row: body.y + 4,
    });
    assert_eq!(h.app.table_ui().selected, 2, "third row selected");
    h.dispatch(Action::ScrollDown);
    assert_eq!(h.app.table_ui().selected, 5, "the wheel moves three rows");
    h.dispatch(Action::ScrollUp);
    assert_eq!(h.app.table_ui().selected, 2);
}

#[test]
fn pages_through_the_store_with_keyset_paging() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    h.press('4');
    let page = h.app.page_size();
    assert_eq!(page, 18);
    let first: Vec<String> = h
        .app
        .table_data()
        .unwrap()
        .rows
        .iter()
        .map(|r| r.key.clone())
        .collect();
    assert_eq!(first.len(), page, "only the visible page is read");
    assert!(h.app.table_data().unwrap().more_after);
    h.key(KeyCode::PageDown);
    let second: Vec<String> = h
        .app
        .table_data()
        .unwrap()
        .rows
        .iter()
        .map(|r| r.key.clone())
        .collect();
    assert_eq!(second.len(), page);
    assert!(
        second[0] > first[page - 1],
        "the next page continues after the last key"
    );
    assert!(screen(&h).contains("◀ more"));
    h.key(KeyCode::End);
    let last: Vec<String> = h
        .app
        .table_data()
        .unwrap()
        .rows
        .iter()
        .map(|r| r.key.clone())
        .collect();
    assert!(!h.app.table_data().unwrap().more_after);
    assert!(
        last.last().unwrap().starts_with("legacy-"),
        "End shows the last keys"
    );
    h.key(KeyCode::PageUp);
    let before: Vec<String> = h
        .app
        .table_data()
        .unwrap()
        .rows
        .iter()
        .map(|r| r.key.clone())
        .collect();
    assert!(before.last().unwrap() < &last[0]);
    h.key(KeyCode::Home);
    let home: Vec<String> = h
        .app
        .table_data()
        .unwrap()
        .rows
        .iter()
        .map(|r| r.key.clone())
        .collect();
    assert_eq!(home, first);
    // Quick filters narrow the store query.
    h.press('f');
    let states: Vec<String> = h
        .app
        .table_data()
        .unwrap()
        .rows
        .iter()
        .map(|r| r.cells[2].text.clone())
        .collect();
    assert!(
        !states.is_empty() && states.iter().all(|s| s == "failed (terminal)"),
        "{states:?}"
    );
    h.press('x');
    let rows = &h.app.table_data().unwrap().rows;
    assert_eq!(rows.len(), 3, "the three legacy items are incompatible");
    assert!(rows.iter().all(|r| r.key.starts_with("legacy-")));
}

#[test]
fn workflow_detail_shows_history_tree() {
    let f = fixture();
    let mut h = harness(&f, "dark", 160, 48);
    h.press('5');
    let target = f.completed.clone();
    let index = h
        .app
        .visible()
        .iter()
        .position(|i| h.app.table_data().unwrap().rows[*i].key == target)
        .unwrap();
    for _ in 0..index {
        h.key(KeyCode::Down);
    }
    h.key(KeyCode::Enter);
    assert_eq!(h.app.view(), ViewId::WorkflowDetail);
    assert_eq!(h.app.instance(), Some(target.as_str()));
    let Some(ViewData::Detail { instance, history }) = h.app.snapshot().map(|s| &s.data) else {
        panic!("detail data")
    };
    assert_eq!(instance.as_ref().unwrap().status, "completed");
    assert!(history.iter().any(|r| r.kind == "completed"));
    let text = screen(&h);
    assert!(text.contains("history:"), "{text}");
    assert!(text.contains("call#0"), "activation node: {text}");
    assert!(text.contains("step-succeeded"));
    let first = h.app.tree().selected.clone();
    h.key(KeyCode::Down);
    h.key(KeyCode::Down);
    assert_ne!(h.app.tree().selected, first);
    // Fold the activation.
    h.key(KeyCode::Left);
    h.key(KeyCode::Enter);
    assert!(!h.app.tree().closed.is_empty());
    assert!(!screen(&h).contains("step-succeeded"));
    h.key(KeyCode::Esc);
    assert_eq!(h.app.view(), ViewId::Workflows);
}

fn select_workflow(h: &mut Harness, id: &str) {
    h.dispatch(Action::SwitchView(ViewId::Workflows));
    h.dispatch(Action::Home);
    while h.app.selected_row().is_some_and(|r| r.key != id) {
        let before = h.app.table_ui().selected;
        h.key(KeyCode::Down);
        assert_ne!(before, h.app.table_ui().selected, "{id} not on the page");
    }
}

#[test]
fn cancel_through_the_dialog() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    select_workflow(&mut h, &f.running);
    h.press('C');
    assert!(matches!(
        h.app.overlay(),
        Some(Overlay::Confirm(c)) if c.act == Act::Cancel && c.subject == f.running
    ));
    let text = screen(&h);
    assert!(text.contains("not rollback"), "{text}");
    h.press('n');
    assert!(h.app.overlay().is_none());
    assert_eq!(
        f.store.instance(&f.running).unwrap().unwrap().status,
        "running",
        "n keeps it running"
    );
    h.press('C');
    h.press('y');
    assert_eq!(
        f.store.instance(&f.running).unwrap().unwrap().status,
        "cancelled"
    );
    assert!(
        h.app.status().unwrap().text.ends_with(": cancelled"),
        "{:?}",
        h.app.status()
    );
    assert!(screen(&h).contains("cancelled"));
    // Again: nothing to cancel, and no dialog.
    h.press('C');
    assert!(h.app.overlay().is_none());
    assert_eq!(
        h.app.status().unwrap().text,
        "cancelled — nothing to cancel"
    );
    // A completed instance is not offered either.
    select_workflow(&mut h, &f.completed);
    h.press('C');
    assert!(h.app.overlay().is_none());
    assert_eq!(
        h.app.status().unwrap().text,
        "completed — nothing to cancel"
    );
    assert_eq!(h.app.status().unwrap().role, Role::Warning);
    // Only the act itself was audited, in the shared vocabulary.
    let audit = f
        .store
        .list_audit(&leasehold::model::PageRequest::first(50))
        .unwrap()
        .rows;
    let mine: Vec<_> = audit
        .iter()
        .filter(|a| a.actor == "tester@ci")
        .map(|a| (a.action.as_str(), a.outcome.as_str()))
        .collect();
    assert_eq!(mine, [("cancel-workflow", "cancelled")]);
}

#[test]
fn read_only_hides_and_refuses_actions() {
    let f = fixture();
    let mut h = Harness::new(
        f.store.clone(),
        AppOptions {
            read_only: true,
            ..options()
        },
        Theme::builtin("dark").unwrap(),
        None,
        80,
        24,
    );
    select_workflow(&mut h, &f.running);
    h.press('C');
    assert!(h.app.overlay().is_none());
    assert!(h.app.status().unwrap().text.contains("read-only"));
    assert_eq!(
        f.store.instance(&f.running).unwrap().unwrap().status,
        "running"
    );
    let help: Vec<String> = leasehold::tui::views::help::entries(&h.app)
        .into_iter()
        .map(|e| e.2)
        .collect();
    assert!(
        !help
            .iter()
            .any(|l| l.contains("cancel the selected workflow") || l.contains("requeue"))
    );
    assert!(screen(&h).contains("read-only"));
    // Nor is a work item requeued.
    h.press('4');
    h.press('U');
    assert!(h.app.overlay().is_none());
    assert!(h.app.status().unwrap().text.contains("read-only"));
}

#[derive(Default)]
struct FakeCluster {
    calls: Mutex<Vec<String>>,
}

impl FakeCluster {
    /// Records a control call; the fake never refuses.
    #[allow(clippy::unnecessary_wraps)] // every control answers an Outcome
    fn call(&self, what: String) -> Outcome {
        self.calls.lock().unwrap().push(what.clone());
        Ok(what)
    }
}

impl ClusterControl for FakeCluster {
    fn authorities(&self) -> Vec<DemoAuthority> {
        vec![
            DemoAuthority {
                id: "auth-a".into(),
                build: "v1.4.0".into(),
                state: DemoState::Running,
                clock_offset_ms: 0,
            },
            DemoAuthority {
                id: "auth-b".into(),
                build: "v1.4.0".into(),
                state: DemoState::Paused,
                clock_offset_ms: 0,
            },
        ]
    }
    fn kill(&self, id: &str) -> Outcome {
        self.call(format!("kill {id}"))
    }
    fn pause(&self, id: &str) -> Outcome {
        self.call(format!("pause {id}"))
    }
    fn resume(&self, id: &str) -> Outcome {
        self.call(format!("resume {id}"))
    }
    fn add_authority(&self) -> Outcome {
        self.call("add".into())
    }
    fn deploy(&self, compatible: bool) -> Outcome {
        self.call(format!("deploy compatible={compatible}"))
    }
    fn skew(&self, id: &str, offset_ms: i64) -> Outcome {
        self.call(format!("skew {id} {offset_ms}"))
    }
    fn scenario(&self) -> String {
        "failover seed=7".into()
    }
}

#[test]
fn demo_keys_drive_the_cluster() {
    let f = fixture();
    let cluster = Arc::new(FakeCluster::default());
    let mut h = Harness::new(
        f.store.clone(),
        AppOptions {
            demo: true,
            ..options()
        },
        Theme::builtin("dark").unwrap(),
        Some(cluster.clone()),
        120,
        30,
    );
    // Away from the authorities view, a key opens a picker of the authorities it fits.
    h.press('K');
    assert!(
        screen(&h).contains("kill which authority?"),
        "{}",
        screen(&h)
    );
    h.press('2');
    h.press('2');
    assert!(screen(&h).contains("paused"), "demo state shows");
    h.press('K');
    h.key(KeyCode::Down);
    h.press('P');
    h.press('R');
    h.press('A');
    h.press('B');
    assert!(screen(&h).contains("incompatible"), "{}", screen(&h));
    h.press('2');
    h.press('X');
    h.type_text("-1500");
    h.key(KeyCode::Enter);
    assert_eq!(
        *cluster.calls.lock().unwrap(),
        [
            "kill auth-b",
            "kill auth-a",
            "pause auth-b",
            "resume auth-b",
            "add",
            "deploy compatible=false",
            "skew auth-b -1500"
        ]
    );
    assert!(screen(&h).contains("demo failover seed=7"));
}

#[test]
fn live_refresh_flashes_changed_rows_and_pauses() {
    let f = fixture();
    let mut h = harness(&f, "dark", 160, 48);
    h.press('4');
    let item = f.store.work("effect-004").unwrap().unwrap();
    assert_eq!(item.state, WorkState::Claimed);
    f.store
        .complete("effect-004", "auth-a", item.generation, None)
        .unwrap();
    h.refresh();
    assert!(h.app.is_flashing("effect-004"));
    assert!(
        !h.app.is_flashing("effect-005"),
        "unchanged rows do not flash"
    );
    h.advance(2_000);
    assert!(!h.app.is_flashing("effect-004"), "the flash fades");
    assert!(screen(&h).contains("● LIVE"));
    h.press(' ');
    assert!(h.app.paused());
    assert!(h.app.query().paused);
    assert!(screen(&h).contains("PAUSED"));
}

#[test]
fn store_errors_show_a_banner_and_keep_the_last_frame() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    h.press('4');
    let before = h.app.table_data().unwrap().rows.len();
    f.backend.set_outage(true);
    h.refresh();
    let text = screen(&h);
    assert!(text.contains("STORE ERROR"), "{text}");
    assert_eq!(
        h.app.table_data().unwrap().rows.len(),
        before,
        "the last good frame stays"
    );
    f.backend.set_outage(false);
    h.refresh();
    assert!(!screen(&h).contains("STORE ERROR"));
    // Silence from the reader shows as stale.
    h.advance(5_000);
    assert!(screen(&h).contains("stale 5s"));
}

#[test]
fn stats_and_help_and_themes_cycle() {
    let f = fixture();
    let mut h = harness(&f, "dark", 120, 40);
    h.press('i');
    assert!(screen(&h).contains("queries"));
    h.press('?');
    let text = screen(&h);
    assert!(text.contains("keys (↑↓ scroll"), "{text}");
    assert!(text.contains("next page (read from the store)"));
    h.key(KeyCode::PageDown);
    h.key(KeyCode::PageDown);
    assert!(
        screen(&h).contains("pause / resume live refresh"),
        "scrolled"
    );
    h.key(KeyCode::Esc);
    assert!(h.app.overlay().is_none());
    let before = h.app.theme().name.clone();
    h.dispatch(Action::CycleTheme);
    assert_ne!(h.app.theme().name, before);
}

#[test]
fn hostile_text_is_escaped_and_truncated() {
    let f = fixture();
    let mut h = harness(&f, "dark", 160, 48);
    h.press('4');
    h.key(KeyCode::End);
    h.press('/');
    h.type_text("evil");
    h.key(KeyCode::Enter);
    let text = screen(&h);
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{202e}'));
    assert!(text.contains("evil\\u{1b}[31mred\\n"), "{text}");
    assert!(text.contains("E\\u{7}BELL: boom\\r\\n"));
    h.key(KeyCode::Enter);
    let text = screen(&h);
    assert!(text.contains('…'), "huge fields are cut: {text}");
    assert!(!text.contains('\r'));
}

#[test]
fn themes_load_and_refuse_unknown() {
    for (name, _) in BUILTIN {
        let theme = Theme::builtin(name).unwrap();
        assert_eq!(theme.name, name);
        let mono = theme.monochrome();
        for role in Role::ALL {
            let s = mono.style(*role);
            assert!(s.fg.is_none() && s.bg.is_none(), "NO_COLOR strips colours");
        }
    }
    assert!(Theme::builtin("neon").is_err());
    assert!(
        ThemeSet::new(None)
            .load("neon")
            .unwrap_err()
            .to_string()
            .contains("unknown theme")
    );
    let extra = format!("{}\nsurprise = 1\n", BUILTIN[0].1);
    assert!(
        Theme::parse(&extra, "test").is_err(),
        "unknown keys are refused"
    );
    let bad = BUILTIN[0].1.replace("#cdd6f4", "not-a-colour");
    assert!(Theme::parse(&bad, "test").is_err());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.toml"),
        BUILTIN[1].1.replace("name = \"light\"", "name = \"mine\""),
    )
    .unwrap();
    let set = ThemeSet::new(Some(dir.path().to_path_buf()));
    assert!(set.names().contains(&"mine".to_owned()));
    assert_eq!(set.load("mine").unwrap().name, "mine");
    assert_eq!(set.next_name("high-contrast"), "mine");
}

#[test]
fn help_lists_every_binding() {
    let f = fixture();
    let h = Harness::new(
        f.store.clone(),
        AppOptions {
            demo: true,
            ..options()
        },
        Theme::builtin("dark").unwrap(),
        Some(Arc::new(FakeCluster::default())),
        80,
        24,
    );
    let entries = leasehold::tui::views::help::entries(&h.app);
    for b in leasehold::tui::keymap::bindings() {
        assert!(
            entries
                .iter()
                .any(|e| e.1 == b.label() && e.2.starts_with(b.help)),
            "{} missing from help",
            b.help
        );
    }
}

#[test]
fn no_panic_on_tiny_sizes() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    for view in ALL_VIEWS {
        open(&mut h, view, &f);
        for overlay in [None, Some('?'), Some('\n')] {
            match overlay {
                Some('?') => h.press('?'),
                Some(_) => h.key(KeyCode::Enter),
                None => {}
            }
            for w in 0..=30 {
                for hgt in 0..=12 {
                    h.dispatch(Action::Resize {
                        width: w,
                        height: hgt,
                    });
                    let _ = render_app(&h.app, w, hgt);
                }
            }
            h.key(KeyCode::Esc);
            h.dispatch(Action::Resize {
                width: 80,
                height: 24,
            });
            if h.app.view() != view {
                open(&mut h, view, &f);
            }
        }
    }
    let mut h = harness(&f, "dark", 80, 24);
    select_workflow(&mut h, &f.running);
    h.press('C');
    for w in 0..=30 {
        for hgt in 0..=12 {
            let _ = render_app(&h.app, w, hgt);
        }
    }
    let _ = f.clock.now();
}

#[test]
fn screenshots() {
    let f = fixture();
    let write = std::env::var("LEASEHOLD_SCREENSHOTS").is_ok_and(|v| v == "1");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("screenshots");
    // Some activity first, so the overview's sparklines have a story to tell.
    let mut live = harness(&f, "dark", 120, 32);
    for round in 0..40 {
        let n = [3, 5, 8, 6, 2, 9, 12, 7, 4, 1][round % 10];
        let more: Vec<NewWork> = (0..n)
            .map(|i| NewWork::effect(format!("load-{round:02}-{i:02}"), "send-email", "{}"))
            .collect();
        f.store
            .enqueue_batch(more, support::send_email_key())
            .unwrap();
        let claimed = f
            .store
            .claim_batch(
                &format!("auth-{}", if round % 2 == 0 { "a" } else { "b" }),
                support::send_email_key(),
                n,
                30_000,
            )
            .unwrap();
        for item in claimed.iter().skip(1) {
            let owner = item.owner_id.clone().unwrap();
            f.store
                .complete(&item.id, &owner, item.generation, None)
                .unwrap();
        }
        if round % 7 == 3 {
            let _ = f.store.complete("effect-020", "auth-b", 1, None);
        }
        f.clock.advance(250);
        beat(&f.store, "auth-a");
        beat(&f.store, "auth-b");
        live.advance(250);
        live.refresh();
    }
    let mut live = Some(live);
    for view in ALL_VIEWS {
        let mut h = match (view, live.take()) {
            (ViewId::Overview, Some(h)) => h,
            (_, back) => {
                live = back;
                harness(&f, "dark", 120, 32)
            }
        };
        if view == ViewId::WorkflowDetail {
            h.press(':');
            h.type_text(&format!("workflow {}", f.retrying));
            h.key(KeyCode::Enter);
        } else {
            open(&mut h, view, &f);
        }
        if view == ViewId::Work {
            h.key(KeyCode::Down);
            h.key(KeyCode::Down);
        }
        let svg = leasehold::tui::screenshot::to_svg(&h.render(), h.app.theme());
        assert!(svg.starts_with("<svg") && svg.contains("leasehold"));
        if write {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("{}.svg", view.name())), svg).unwrap();
        }
    }
    if write {
        let shot = |path: std::path::PathBuf, h: &Harness| {
            let svg = leasehold::tui::screenshot::to_svg(&h.render(), h.app.theme());
            std::fs::write(path, svg).unwrap();
        };
        let mut h = harness(&f, "light", 120, 32);
        open(&mut h, ViewId::Overview, &f);
        shot(dir.join("overview-light.svg"), &h);
        let mut h = harness(&f, "dark", 120, 32);
        select_workflow(&mut h, &f.running);
        h.press('C');
        h.key(KeyCode::Tab);
        h.type_text("duplicate of order 4411");
        h.key(KeyCode::Tab);
        shot(dir.join("cancel-dialog.svg"), &h);
        let mut h = harness(&f, "dark", 120, 32);
        select_workflow(&mut h, &f.retrying);
        h.press('d');
        shot(dir.join("describe.svg"), &h);
        // The replay on the fixture's failover, its resource at that revision.
        let mut h = harness(&f, "dark", 120, 32);
        h.press('H');
        h.press('}');
        h.key(KeyCode::Enter);
        shot(dir.join("replay.svg"), &h);
        // The views reached by command only.
        for name in ["triage", "builds", "horizon"] {
            let mut h = harness(&f, "dark", 120, 32);
            h.command(name);
            shot(dir.join(format!("{name}.svg")), &h);
        }
    }
}

/// `attach` reads through a read-only handle; an action opens a write handle at that moment
/// (never creating a store), and a handle that cannot be opened is the action's refusal.
#[test]
fn actions_open_a_write_handle_only_when_they_run() {
    use leasehold::store::url::{OpenMode, open as open_store};
    use leasehold::tui::action::Done;
    use leasehold::tui::app::Command;
    use leasehold::tui::writer::{OpenWriter, execute_with};

    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("store.db").display().to_string();
    let instance = {
        let store = open_store(&url, OpenMode::ReadWrite).unwrap();
        let reminder = leasehold::workflow::SHIPPED_DEFINITIONS
            .iter()
            .find(|(name, _)| name.contains("reminder"))
            .map(|(_, text)| *text)
            .unwrap();
        store
            .deploy_workflow(reminder, &Catalog::demo())
            .unwrap()
            .unwrap();
        let inputs = args(&[("recipient", json!("ops")), ("message", json!("hi"))]);
        let versions = support::actions_at_demo(&store, "reminder");
        store
            .start_workflow("reminder", inputs, "alice", None, versions)
            .unwrap()
            .instance_id
    };
    let reader = open_store(&url, OpenMode::ReadOnly).unwrap();
    let cancel = Command::Cancel {
        instance: instance.clone(),
        reason: "test".into(),
    };
    let outcome = |writer: Option<&OpenWriter>| match execute_with(
        &reader,
        writer,
        None,
        "tester@ci",
        &cancel,
    ) {
        Some(Action::Done(Done::Acted {
            message, refused, ..
        })) => (message, refused),
        other => panic!("{other:?}"),
    };

    let (message, refused) = outcome(None);
    assert!(refused && message.contains("STORE_READ_ONLY"), "{message}");

    let missing = dir.path().join("typo.db");
    let gone = missing.display().to_string();
    let broken: OpenWriter = Arc::new(move || open_store(&gone, OpenMode::Existing));
    let (message, refused) = outcome(Some(&broken));
    assert!(refused, "{message}");
    assert!(
        message.starts_with("cannot open the store for writing: "),
        "{message}"
    );
    assert!(!missing.exists(), "the write handle never creates a store");

    let target = url.clone();
    let writer: OpenWriter = Arc::new(move || open_store(&target, OpenMode::Existing));
    let (message, refused) = outcome(Some(&writer));
    assert!(!refused, "{message}");
    assert_eq!(
        reader.instance(&instance).unwrap().unwrap().status,
        "cancelled",
        "the reader sees the write handle's commit"
    );
}

/// Sorting the work view by state (an indexed column) pages the whole store in that order;
/// any other sort orders the page on screen and says so.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn sort_on_an_indexed_column_is_done_by_the_store() {
    use leasehold::store::WorkOrder;
    use leasehold::tui::store_filter::StoreOrder;
    use leasehold::tui::views::work::COLUMNS;

    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    h.press('4');
    let state = COLUMNS.iter().position(|c| c.name == "state").unwrap();
    h.dispatch(Action::SortBy(state));
    assert!(
        screen(&h).contains("by state (store order)"),
        "{}",
        screen(&h)
    );
    let first = visible_keys(&h);
    let store_first = f
        .store
        .list_work_ordered(
            &WorkFilter::default(),
            WorkOrder::State,
            &PageRequest::first(first.len()),
        )
        .unwrap();
    let ids: Vec<String> = store_first.rows.iter().map(|w| w.id.clone()).collect();
    assert_eq!(
        first, ids,
        "the first page is the store's first page in state order"
    );
    assert_eq!(
        store_first.rows[0].state,
        WorkState::Claimed,
        "claimed sorts first"
    );

    h.key(KeyCode::PageDown);
    let store_next = f
        .store
        .list_work_ordered(
            &WorkFilter::default(),
            WorkOrder::State,
            &PageRequest::after(store_first.next.clone().unwrap(), first.len()),
        )
        .unwrap();
    let ids: Vec<String> = store_next.rows.iter().map(|w| w.id.clone()).collect();
    assert_eq!(visible_keys(&h), ids, "and so is the next");

    // Descending, or a column without an index: the page on screen, and the title says so.
    h.dispatch(Action::SortBy(state));
    assert!(screen(&h).contains("sorted within page"), "{}", screen(&h));
    assert_eq!(h.app.store_order(), None);
    let kind = COLUMNS.iter().position(|c| c.name == "kind").unwrap();
    h.dispatch(Action::SortBy(kind));
    assert_eq!(h.app.store_order(), Some(StoreOrder::Work(WorkOrder::Kind)));

    // Workflows by status: the store's order, every instance once whichever way it pages.
    let mut expected: Vec<(String, String)> = f
        .store
        .list_instances(None, &PageRequest::first(1_000))
        .unwrap()
        .rows
        .into_iter()
        .map(|i| (i.status.to_string(), i.instance_id))
        .collect();
    expected.sort();
    let expected: Vec<String> = expected.into_iter().map(|(_, id)| id).collect();
    for limit in [1, 2, 3, expected.len() + 1] {
        let mut forward = Vec::new();
        let mut request = PageRequest::first(limit);
        loop {
            let page = f
                .store
                .list_instances_by_status(None, None, &request)
                .unwrap();
            forward.extend(page.rows.into_iter().map(|i| i.instance_id));
            match page.next {
                Some(next) => request = PageRequest::after(next, limit),
                None => break,
            }
        }
        assert_eq!(forward, expected, "forward pages of {limit}");
        let mut pages = Vec::new();
        let mut request = PageRequest::last(limit);
        loop {
            let page = f
                .store
                .list_instances_by_status(None, None, &request)
                .unwrap();
            pages.push(
                page.rows
                    .into_iter()
                    .map(|i| i.instance_id)
                    .collect::<Vec<_>>(),
            );
            match page.next {
                Some(next) => request = PageRequest::before(next, limit),
                None => break,
            }
        }
        let backward: Vec<String> = pages.into_iter().rev().flatten().collect();
        assert_eq!(backward, expected, "backward pages of {limit}");
    }
    h.dispatch(Action::SwitchView(ViewId::Workflows));
    let status = leasehold::tui::views::workflows::COLUMNS
        .iter()
        .position(|c| c.name == "status")
        .unwrap();
    h.dispatch(Action::SortBy(status));
    assert_eq!(h.app.store_order(), Some(StoreOrder::WorkflowStatus));
    assert!(screen(&h).contains("· by status"), "{}", screen(&h));
    let shown = visible_keys(&h);
    assert_eq!(
        shown,
        expected[..shown.len()],
        "the store's first page in status order"
    );
}
