//! The work view over a store larger than a page: filters and sorts the store answers,
//! sorts of the page on screen, and keyset paging.

use crossterm::event::KeyCode;
use leasehold::model::work::WorkFilter;
use leasehold::model::{PageRequest, WorkState};
use leasehold::tui::action::{Action, ViewId};
use leasehold::tui::harness::Harness;

use super::{fixture, harness, screen};

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

    // Every failed item, the discarded ones too: no row facet, so the counters total it.
    h.press('/');
    h.type_text("state:failed,discarded");
    assert_eq!(visible_keys(&h), first_page, "nothing applies while typing");
    assert!(
        screen(&h).contains("state: kind: owner: compat: handler: code: class: id:"),
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
    assert!(text.contains("/state:failed,discarded"), "{text}");
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
        "the work view cannot filter on \"bogus\": use state:, kind:, owner:, compat:, \
         handler:, code:, class:, id: (or plain text for an id prefix)"
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
    // Cycle the sort column to generation (column 5).
    h.press('s');
    h.press('s');
    h.press('s');
    h.press('s');
    h.press('s');
    assert_eq!(h.app.table_ui().sort.map(|s| s.0), Some(5));
    let d = h.app.table_data().unwrap();
    let gens: Vec<i64> = h
        .app
        .visible()
        .iter()
        .map(|i| d.rows[*i].cells[5].text.parse().unwrap())
        .collect();
    let mut sorted = gens.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(gens, sorted, "still descending after z");
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
        .map(|r| r.cells[3].text.clone())
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

/// The audit view lists the log newest first, and `/actor:NAME`, `/action:NAME` keep
/// exactly the entries the audit table holds with that actor and action — compared whole,
/// so `ana@ops` is not `ana@ops.example`.
#[test]
fn the_audit_view_lists_newest_first_and_filters_by_actor_and_action() {
    let f = fixture();
    for (actor, action) in [
        ("ana@ops", "requeue-work"),
        ("bo@ops", "requeue-work"),
        ("ana@ops", "discard-work"),
        ("ana@ops.example", "requeue-work"),
        ("ana@ops", "requeue-work"),
    ] {
        f.store.audit(actor, action, "effect-003", "done").unwrap();
    }
    let all = f.store.list_audit(&PageRequest::first(1_000)).unwrap().rows;
    let mut h = harness(&f, "dark", 160, 48);
    h.press('9');
    let shown = |h: &Harness| -> Vec<String> {
        let data = h.app.table_data().unwrap();
        h.app
            .visible()
            .iter()
            .map(|i| data.rows[*i].cells[0].text.clone())
            .collect()
    };
    let newest_first: Vec<String> = all.iter().rev().map(|a| a.id.to_string()).collect();
    assert_eq!(shown(&h), newest_first);
    for (filter, actor, action) in [
        ("actor:ana@ops", Some("ana@ops"), None),
        ("action:requeue-work", None, Some("requeue-work")),
        (
            "actor:ana@ops action:requeue-work",
            Some("ana@ops"),
            Some("requeue-work"),
        ),
    ] {
        h.dispatch(Action::ClearFilter);
        h.press('/');
        h.type_text(filter);
        h.key(KeyCode::Enter);
        let expected: Vec<String> = all
            .iter()
            .rev()
            .filter(|a| actor.is_none_or(|x| a.actor == x))
            .filter(|a| action.is_none_or(|x| a.action == x))
            .map(|a| a.id.to_string())
            .collect();
        assert!(!expected.is_empty(), "{filter}");
        assert_eq!(shown(&h), expected, "{filter}");
    }
    h.dispatch(Action::ClearFilter);
    h.press('/');
    h.type_text("actor:");
    h.key(KeyCode::Enter);
    assert!(
        h.app
            .status()
            .is_some_and(|s| s.text.contains("actor: needs a value")),
        "{:?}",
        h.app.status()
    );
}

/// The leases view lists what is held: every named lease, then every work item claimed
/// now with its handler, owner, generation and expiry — the store's own lease table and
/// claims, page after page (a short terminal: a few rows a page), and back with PgUp.
#[test]
fn the_leases_view_lists_the_leases_then_the_claims_of_the_store() {
    use leasehold::tui::text::relative;

    let f = fixture();
    let leases = f
        .store
        .list_leases(&PageRequest::first(1_000))
        .unwrap()
        .rows;
    let claimed = WorkFilter {
        states: vec![WorkState::Claimed],
        ..WorkFilter::default()
    };
    let claims = f
        .store
        .list_work(&claimed, &PageRequest::first(1_000))
        .unwrap()
        .rows;
    assert!(!claims.is_empty(), "the fixture holds claims");
    let mut h = harness(&f, "dark", 80, 12);
    h.press('3');
    let now = h.app.now();
    let mut expected: Vec<Vec<String>> = leases
        .iter()
        .map(|l| {
            vec![
                l.resource_id.clone(),
                "lease".into(),
                l.owner_id.clone(),
                l.generation.to_string(),
            ]
        })
        .collect();
    expected.extend(claims.iter().map(|w| {
        vec![
            w.id.clone(),
            w.kind.as_str().into(),
            w.owner_id.clone().unwrap(),
            w.generation.to_string(),
        ]
    }));
    let mut pages = 0;
    let mut seen: Vec<Vec<String>> = Vec::new();
    for _ in 0..10 {
        let data = h.app.table_data().unwrap();
        pages += usize::from(!data.rows.is_empty());
        for row in &data.rows {
            let cells: Vec<String> = row.cells.iter().map(|c| c.text.clone()).collect();
            if let Some(w) = claims
                .iter()
                .find(|w| w.id == cells[0] && cells[1] != "lease")
            {
                assert_eq!(cells[6], w.handler);
                let expires = w.lease_expires_at.unwrap();
                if expires > now {
                    assert_eq!(cells[5], relative(now, Some(expires)), "{}", w.id);
                }
            }
            seen.push(cells[..4].to_vec());
        }
        if !data.more_after {
            break;
        }
        h.key(KeyCode::PageDown);
    }
    assert_eq!(seen, expected);
    assert!(pages > 1, "more than a page: {pages}");
    let forward: Vec<String> = seen.iter().map(|r| r[0].clone()).collect();
    h.key(KeyCode::End);
    let mut back: Vec<String> = Vec::new();
    for _ in 0..10 {
        // A page that runs into the start shows the first full page: only its rows before
        // the ones already seen are new.
        let page: Vec<String> = visible_keys(&h)
            .into_iter()
            .take_while(|k| back.first() != Some(k))
            .collect();
        back.splice(0..0, page);
        if !h.app.table_data().unwrap().more_before {
            break;
        }
        h.key(KeyCode::PageUp);
    }
    assert_eq!(
        back, forward,
        "End, then PgUp back through the claims into the leases"
    );
}
