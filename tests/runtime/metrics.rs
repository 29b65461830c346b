//! The two metrics pages, rendered from a store an authority has worked (completions, a
//! durable retry, a retry that may have acted, retries run out, a terminal failure, a
//! lapsed claim taken over, a dead letter): every name and label follows Prometheus's
//! naming rules, the two pages share no name (so a sum over a Prometheus that scrapes both
//! counts each fact once), and the per-handler counters state what the store's rows and
//! write history say happened.

use std::collections::{BTreeMap, BTreeSet};

use leasehold::Store;
use leasehold::authority::metrics;
use leasehold::authority::{
    AttemptContext, AuthorityCore, HandlerOutcome, HealthReport, Pace, Stats, Workload,
};
use leasehold::clock::ManualClock;
use leasehold::model::work::{NewWork, WorkFilter};
use leasehold::model::{CompatSet, FailureClass, PageRequest, WorkItem, WorkState, WriteVerb};
use leasehold::ops::fleet_metrics;

use crate::support::runtime::{T0, compat, config, store};

/// The handlers the authority registers; `nobody` names an item's handler it does not.
const HANDLERS: [&str; 2] = ["charge", "mail"];

/// The authority's `/metrics` page and the fleet's, after `worked`.
struct Pages {
    authority: String,
    fleet: String,
}

/// `charge` answers by the payload: `terminal` fails for good, `once` fails retryably on
/// the first attempt, `timeout` times out (retryably, and it may have acted) on the first,
/// `always` fails retryably every time; anything else succeeds. `mail` succeeds.
fn workload() -> Workload {
    Workload::new("metered", 1)
        .with("charge", |ctx: &AttemptContext| {
            match (ctx.payload["fail"].as_str(), ctx.attempt) {
                (Some("terminal"), _) => HandlerOutcome::terminal("DECLINED", "no"),
                (Some("once"), 1) | (Some("always"), _) => {
                    HandlerOutcome::retryable("BUSY", "later")
                }
                (Some("timeout"), 1) => HandlerOutcome::retryable("TIMEOUT", "gave up"),
                _ => HandlerOutcome::Succeeded(None),
            }
        })
        .with("mail", |_: &AttemptContext| HandlerOutcome::Succeeded(None))
}

/// Work of every outcome, a claim left to lapse and one left to lapse on its last attempt
/// (by `ghost`, an owner that never answers), worked by authority `a` until nothing is due.
fn worked(clock: &ManualClock, s: &Store) -> AuthorityCore {
    let effect = |id: &str, handler: &str, fail: &str| NewWork {
        max_attempts: 2,
        ..NewWork::effect(id, handler, format!(r#"{{"fail":"{fail}"}}"#))
    };
    let items = [
        effect("ok-1", "charge", ""),
        effect("ok-2", "charge", ""),
        effect("once", "charge", "once"),
        effect("timeout", "charge", "timeout"),
        effect("always", "charge", "always"),
        effect("declined", "charge", "terminal"),
        effect("lapse", "charge", ""),
        NewWork {
            max_attempts: 1,
            ..effect("dead", "charge", "")
        },
        effect("mail-1", "mail", ""),
        effect("mail-2", "mail", ""),
        effect("orphan", "nobody", ""),
    ];
    for item in items {
        s.enqueue(item, &compat()).expect("enqueues");
    }
    for id in ["lapse", "dead"] {
        let keys = CompatSet::new([s.work(id).expect("reads").expect("exists").compat]);
        s.claim(id, "ghost", keys, 1_000).expect("ghost claims");
    }
    let a = AuthorityCore::new(s.clone(), config("a"), workload(), Pace::Virtual).expect("a");
    a.register().expect("registers");
    for _ in 0..20 {
        for job in a.poll().expect("polls") {
            a.finish(a.execute(&job));
        }
        clock.advance(1_000);
    }
    a
}

/// What a running, registered authority with a reachable store reports.
fn healthy() -> HealthReport {
    HealthReport {
        ready: true,
        live: true,
        registered: true,
        stopping: false,
        store_reachable: true,
        since_loop_ms: Some(0),
        since_heartbeat_ms: Some(0),
    }
}

fn pages() -> (Store, AuthorityCore, Pages) {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let a = worked(&clock, &s);
    let pages = Pages {
        authority: metrics::render(&a.stats(), a.compat(), a.inflight(), &healthy()),
        fleet: fleet_metrics::render(&s, s.now()).expect("renders"),
    };
    (s, a, pages)
}

/// One family of a page: its type and its samples.
#[derive(Debug, Default)]
struct Family {
    kind: String,
    samples: Vec<Sample>,
}

/// One sample line: `name{labels} value`.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: String,
}

impl Sample {
    fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A page's families by name, read the way a scraper reads them.
fn families(page: &str) -> BTreeMap<String, Family> {
    let mut out: BTreeMap<String, Family> = BTreeMap::new();
    for line in page.lines().filter(|l| *l != "# EOF") {
        if let Some(meta) = line.strip_prefix("# TYPE ") {
            let (name, kind) = meta.split_once(' ').expect(line);
            kind.clone_into(&mut out.entry(name.to_owned()).or_default().kind);
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect(line);
        assert!(value == "+Inf" || value.parse::<f64>().is_ok(), "{line}");
        let (name, labels) = match series.split_once('{') {
            Some((name, labels)) => (name, labels_of(labels.strip_suffix('}').expect(line))),
            None => (series, Vec::new()),
        };
        let Some((_, family)) = out
            .iter_mut()
            .filter(|(f, _)| name.starts_with(f.as_str()))
            .max_by_key(|(f, _)| f.len())
        else {
            panic!("{line}: no family declared");
        };
        family.samples.push(Sample {
            name: name.to_owned(),
            labels,
            value: value.to_owned(),
        });
    }
    out
}

/// `k="v",…` (values with `\"` and `\\` escapes) as pairs.
fn labels_of(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"").expect(text);
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next().expect(text) {
                (_, '\\') => value.push(chars.next().expect(text).1),
                (at, '"') => break at,
                (_, c) => value.push(c),
            }
        };
        out.push((key.to_owned(), value));
        rest = after[end + 1..]
            .strip_prefix(',')
            .unwrap_or(&after[end + 1..]);
    }
    out
}

fn is_name(name: &str, colon: bool) -> bool {
    let ok = |c: char| c.is_ascii_alphabetic() || c == '_' || (colon && c == ':');
    let mut chars = name.chars();
    chars.next().is_some_and(ok) && chars.all(|c| ok(c) || c.is_ascii_digit())
}

/// Whether `name` states a time or a size in anything but the base units.
fn names_a_unit_other_than_the_base(name: &str) -> bool {
    let words: Vec<&str> = name.split('_').collect();
    let other_units = [
        "ms",
        "millis",
        "milliseconds",
        "us",
        "microseconds",
        "minutes",
        "hours",
        "days",
        "kb",
        "mb",
        "kib",
        "mib",
        "kilobytes",
        "megabytes",
    ];
    let timed = ["latency", "duration", "age", "late", "elapsed", "time"];
    words.iter().any(|w| other_units.contains(w))
        || (words.iter().any(|w| timed.contains(w)) && !words.contains(&"seconds"))
}

/// Every naming rule one page's families break, as lines.
fn broken_rules(page: &str) -> Vec<String> {
    let mut broken = Vec::new();
    for (name, family) in families(page) {
        if !is_name(&name, true) {
            broken.push(format!("{name}: not a metric name"));
        }
        if names_a_unit_other_than_the_base(&name) {
            broken.push(format!("{name}: not in base units (seconds, bytes)"));
        }
        for Sample {
            name: sample,
            labels,
            ..
        } in &family.samples
        {
            if family.kind == "counter" && *sample != format!("{name}_total") {
                broken.push(format!(
                    "{sample}: a counter's sample not named {name}_total"
                ));
            }
            for (label, _) in labels {
                if !is_name(label, false) || label.starts_with("__") {
                    broken.push(format!("{sample}: label {label:?}"));
                }
            }
        }
    }
    broken
}

/// The sample names a page states.
fn sample_names(page: &str) -> BTreeSet<String> {
    families(page)
        .into_values()
        .flat_map(|f| f.samples.into_iter().map(|s| s.name))
        .collect()
}

#[test]
fn both_pages_follow_the_naming_rules_and_share_no_name() {
    let (_, _, pages) = pages();
    for page in [&pages.authority, &pages.fleet] {
        assert_eq!(broken_rules(page), Vec::<String>::new(), "{page}");
    }
    let (authority, fleet) = (families(&pages.authority), families(&pages.fleet));
    let shared: Vec<&String> = authority
        .keys()
        .filter(|n| fleet.contains_key(*n))
        .collect();
    assert!(shared.is_empty(), "families on both pages: {shared:?}");
    let (authority, fleet) = (sample_names(&pages.authority), sample_names(&pages.fleet));
    let shared: Vec<&String> = authority.intersection(&fleet).collect();
    assert!(shared.is_empty(), "series names on both pages: {shared:?}");
    assert!(
        fleet.iter().all(|n| n.starts_with("leasehold_fleet_"))
            && authority.iter().all(|n| !n.starts_with("leasehold_fleet_")),
        "the fleet's names, and only they, start leasehold_fleet_: {fleet:?} {authority:?}"
    );
}

/// What the store says happened to `handler`'s items, in the per-handler counters' terms.
fn recorded(s: &Store, handler: &str) -> BTreeMap<String, u64> {
    let items: Vec<WorkItem> = s
        .list_work(&WorkFilter::default(), &PageRequest::first(1_000))
        .expect("lists")
        .rows
        .into_iter()
        .filter(|w| w.handler == handler)
        .collect();
    let ids: BTreeSet<&str> = items.iter().map(|w| w.id.as_str()).collect();
    let (_, writes) = s.ownership_history(None, 0, 10_000).expect("reads");
    let retries = writes
        .iter()
        .filter(|w| w.accepted && w.verb == WriteVerb::Fail && ids.contains(w.resource_id.as_str()))
        .filter(|w| w.detail.contains(r#""state":"retry""#))
        .count() as u64;
    let failed = |class: FailureClass| {
        items
            .iter()
            .filter(|w| w.state == WorkState::Failed)
            .filter(|w| w.last_failure.as_ref().is_some_and(|f| f.class == class))
            .count() as u64
    };
    let mut out = BTreeMap::from([
        (
            "completions".to_owned(),
            items
                .iter()
                .filter(|w| w.state == WorkState::Succeeded)
                .count() as u64,
        ),
        ("retries_scheduled".to_owned(), retries),
        (
            "uncertain_attempts".to_owned(),
            items.iter().map(|w| u64::from(w.uncertain_attempts)).sum(),
        ),
    ]);
    for class in FailureClass::ALL {
        // Every accepted retry was a retryable failure; the rest of each class ended items.
        let retried = if class == FailureClass::Retryable {
            retries
        } else {
            0
        };
        out.insert(
            format!("failures/{}", class.as_str()),
            failed(class) + retried,
        );
    }
    out
}

/// The same facts read off the authority's page.
fn counted(page: &str, handler: &str) -> BTreeMap<String, u64> {
    let families = families(page);
    let value = |family: &str, class: Option<&str>| {
        let samples = families
            .get(family)
            .map(|f| f.samples.as_slice())
            .unwrap_or_default();
        samples
            .iter()
            .filter(|s| s.label("handler") == Some(handler) && s.label("class") == class)
            .map(|s| s.value.parse::<u64>().expect("a count"))
            .sum::<u64>()
    };
    let mut out = BTreeMap::from([
        (
            "completions".to_owned(),
            value("leasehold_handler_completions", None),
        ),
        (
            "retries_scheduled".to_owned(),
            value("leasehold_handler_retries_scheduled", None),
        ),
        (
            "uncertain_attempts".to_owned(),
            value("leasehold_handler_uncertain_attempts", None),
        ),
    ]);
    for class in FailureClass::ALL {
        out.insert(
            format!("failures/{}", class.as_str()),
            value("leasehold_handler_failures", Some(class.as_str())),
        );
    }
    out
}

#[test]
fn per_handler_counters_state_what_the_store_recorded() {
    let (s, a, pages) = pages();
    let left: Vec<String> = s
        .list_work(&WorkFilter::default(), &PageRequest::first(1_000))
        .expect("lists")
        .rows
        .into_iter()
        .filter(|w| {
            w.handler != "nobody" && !matches!(w.state, WorkState::Succeeded | WorkState::Failed)
        })
        .map(|w| w.id)
        .collect();
    assert!(left.is_empty(), "not worked to the end: {left:?}");
    for handler in HANDLERS {
        let recorded = recorded(&s, handler);
        assert_eq!(counted(&pages.authority, handler), recorded, "{handler}");
        assert!(
            recorded.values().all(|n| *n > 0) || handler == "mail",
            "{recorded:?}"
        );
    }
    // Label values come from the registrations, never from item data.
    let handlers: BTreeSet<String> = families(&pages.authority)
        .into_values()
        .flat_map(|f| f.samples)
        .filter_map(|s| s.label("handler").map(str::to_owned))
        .collect();
    assert_eq!(handlers, HANDLERS.iter().map(|h| (*h).to_owned()).collect());
    assert_eq!(a.inflight(), 0);
}

/// The polls that stood aside from a crowded SQLite lock are on the page an operator
/// scrapes, as the authority counted them, beside the lost leases.
#[test]
fn the_authority_page_states_its_steps_aside() {
    let stats = Stats {
        lock_step_asides: 7,
        leases_lost: 2,
        ..Stats::default()
    };
    let page = metrics::render(&stats, "digest", 0, &healthy());
    assert!(
        page.contains("\nleasehold_lock_step_asides_total 7\n"),
        "{page}"
    );
    assert!(page.contains("\nleasehold_leases_lost_total 2\n"), "{page}");
    assert!(
        page.contains("# TYPE leasehold_lock_step_asides counter"),
        "{page}"
    );
    assert!(broken_rules(&page).is_empty(), "{:?}", broken_rules(&page));
}
