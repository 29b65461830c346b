//! The background reader. One task owns every store read of the dashboard: it probes the
//! store's cheap change token at the refresh interval and, when the token moved or the UI
//! asked for something else (another view, page or filter), reads exactly the visible page
//! plus the headline counters into one [`Snapshot`] and publishes it through a
//! `tokio::sync::watch` channel. All panes render from that one snapshot, so they always
//! agree. Reads run on `spawn_blocking`: the UI thread never waits on the store. A failing
//! store is retried with exponential backoff while the last good frame stays on screen.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

mod view_data;
pub use crate::ops::holds::Holds;
pub use view_data::ViewData;

use super::action::{ViewId, WorkQuick};
use super::store_filter::StoreOrder;
use super::views::ticker::{LINES, WINDOW};
use crate::clock::Millis;
use crate::cluster::control::{ClusterControl, DemoAuthority};
use crate::error::Result;
use crate::model::PageRequest;
use crate::ops;
use crate::ops::claim_rates::ClaimRates;
use crate::ops::failovers::FailoverRow;
use crate::ops::live_builds::LiveBuilds;
use crate::ops::window::{Listing, Window};
use crate::store::server_record::ServerChange;
use crate::store::stall::ProcessStall;
use crate::store::witness::{Rewound, host_dir};
use crate::store::{Overview, Store};
use crate::workflow::runnable::RunnableMemo;

/// Failovers the overview lists (the count covers the whole window).
pub const OVERVIEW_FAILOVERS: usize = 12;
/// How far the authorities' claim rates look back at most: revisions, and grant rows.
pub const RECENT_REVISIONS: u64 = 512;
pub const RECENT_LIMIT: usize = 1_024;
/// The timeline reads this many grants and writes per visible row.
pub const TIMELINE_FACTOR: usize = 4;

/// What the UI wants to see. Any change (tracked by `seq`) triggers a read right away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub seq: u64,
    /// Which attached store this is for (0 with one store).
    pub store: usize,
    pub view: ViewId,
    pub page: PageRequest,
    pub work: WorkQuick,
    /// The workflow instance of the detail view.
    pub instance: Option<String>,
    /// The resource of the timeline view.
    pub resource: Option<String>,
    /// The `/` filter the store applies (work and workflows), already parsed.
    pub filter: Option<crate::ops::filter::Filter>,
    /// The table's order when the store gives it (an indexed column, then id).
    pub order: Option<StoreOrder>,
    /// The replay view's window, cursor and seek.
    pub replay: Option<Box<super::replay::ReplayQuery>>,
    /// While paused the reader only answers new queries; it does not refresh.
    pub paused: bool,
    /// How far back the failovers and refused-writes views look (`:failovers 1h`).
    pub window: Window,
}

impl Default for Query {
    fn default() -> Self {
        Self {
            seq: 0,
            store: 0,
            view: ViewId::Overview,
            page: PageRequest::first(20),
            work: WorkQuick::All,
            instance: None,
            resource: None,
            filter: None,
            order: None,
            replay: None,
            paused: false,
            window: Window::default(),
        }
    }
}

/// Cost of producing one snapshot (shown with `i`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryStats {
    pub queries: u32,
    pub latency_us: u64,
}

/// Everything one refresh read, at one store instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The query this answers.
    pub query: Query,
    /// Store clock at the read.
    pub at: Millis,
    pub token: u64,
    pub store: String,
    pub overview: Overview,
    /// The registry as every operator's reader reads it: every registration (to the
    /// store's bound) and what the running authorities can run, builds and handlers.
    pub fleet: LiveBuilds,
    /// Writes waiting on the store's write lock at the read, as the waiting processes post
    /// them.
    pub stalls: Vec<ProcessStall>,
    /// The code labels (registration digests) of authorities that are not gone.
    pub live_compats: Vec<String>,
    /// Non-terminal work whose compat no live authority has (0 with no live authority).
    pub incompatible: u64,
    /// The compat digests of that work.
    pub incompatible_compats: Vec<String>,
    /// Each authority's claims per second (read for the authorities view only).
    pub claim_rates: ClaimRates,
    /// The overview's failover summary: the window's count and its latest few.
    pub failovers: Option<Listing<FailoverRow>>,
    /// Demo cluster view of its authorities, when attached to one.
    pub demo: Option<Vec<DemoAuthority>>,
    pub scenario: Option<String>,
    /// The demo's event ticker, newest first (empty without a demo cluster).
    pub ticker: Vec<crate::ops::ticker::TickerLine>,
    pub data: ViewData,
    pub stats: QueryStats,
    /// Why the writers on this host refuse the store as rewound (its rewind witness, in
    /// `LEASEHOLD_STATE_DIR` or the default directory); `None` when they take it.
    pub rewound: Option<String>,
    /// The latest change of database server the store shows (`store/server_record.rs`):
    /// a warning, since whether commits were lost cannot be told, until an operator
    /// acknowledges it.
    pub server_changed: Option<ServerChange>,
}

/// Counts store calls for the stats line.
struct Counter<'a> {
    store: &'a Store,
    queries: u32,
}

impl Counter<'_> {
    fn run<T>(&mut self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        self.queries += 1;
        f(self.store)
    }
}

/// Reads one snapshot for `query`, synchronously (tests and the harness call this).
///
/// # Errors
/// A store failure.
pub fn read(store: &Store, query: &Query, demo: Option<&dyn ClusterControl>) -> Result<Snapshot> {
    read_cached(store, query, demo, &mut Cache::default())
}

/// What a reader keeps between reads: the replay window's span and summary, and what the
/// running authorities can run.
#[derive(Debug, Clone, Default)]
pub struct Cache {
    replay: super::replay::ReplayCache,
    runnable: RunnableMemo,
}

/// [`read`], reusing what `cache` kept from earlier reads. The reader task calls this on
/// a blocking thread. Each part of the snapshot has its own reader, with its own rule for
/// what it reads and keeps: the headline every view shows (`Headline`), the claim
/// rates and the failover summary of the views that show them, the visible view's rows
/// (`ViewData::read`) and the demo cluster's state.
///
/// # Errors
/// A store failure.
pub fn read_cached(
    store: &Store,
    query: &Query,
    demo: Option<&dyn ClusterControl>,
    cache: &mut Cache,
) -> Result<Snapshot> {
    let started = Instant::now();
    let mut c = Counter { store, queries: 0 };
    let token = c.run(Store::change_token)?;
    let at = store.now();
    let head = Headline::read(&mut c, at, &mut cache.runnable)?;
    let claim_rates = claim_rates(&mut c, query.view, at)?;
    let failovers = overview_failovers(&mut c, query.view, at)?;
    let data = ViewData::read(&mut c, query, at, &head, &mut cache.replay)?;
    let demo = DemoState::read(&mut c, demo, at)?;
    let rewound = rewound(&mut c)?;
    let server_changed = c.run(Store::server_changes)?.last().copied();
    let latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    Ok(Snapshot {
        query: query.clone(),
        at,
        token,
        store: store.describe(),
        overview: head.overview,
        fleet: head.fleet,
        stalls: head.stalls,
        live_compats: head.live_compats,
        incompatible: head.incompatible,
        incompatible_compats: head.incompatible_compats,
        claim_rates,
        failovers,
        demo: demo.authorities,
        scenario: demo.scenario,
        ticker: demo.ticker,
        data,
        stats: QueryStats {
            queries: c.queries,
            latency_us,
        },
        rewound,
        server_changed,
    })
}

/// The store judged by this host's rewind witness, as the writers here judge it; nothing
/// for a memory store or a host without a state directory.
fn rewound(c: &mut Counter<'_>) -> Result<Option<String>> {
    match host_dir() {
        Some(dir) if c.store.physical_durability() => {
            c.run(|s| Ok(Rewound::find(&dir, s)?.map(|r| r.detail)))
        }
        _ => Ok(None),
    }
}

/// What every view shows, read at every refresh: the store's counters, the fleet and what
/// it can run (derived again only when the registrations or definitions changed), and the
/// work no running authority can run.
struct Headline {
    overview: Overview,
    fleet: LiveBuilds,
    stalls: Vec<ProcessStall>,
    live_compats: Vec<String>,
    incompatible: u64,
    incompatible_compats: Vec<String>,
}

impl Headline {
    fn read(c: &mut Counter<'_>, at: Millis, runnable: &mut RunnableMemo) -> Result<Self> {
        let overview = c.run(Store::overview)?;
        let fleet = c.run(|s| LiveBuilds::load_cached(s, at, runnable))?;
        let stalls = c.run(Store::write_stalls)?;
        let mut live_compats: Vec<String> = fleet.running().map(|a| a.compat.clone()).collect();
        live_compats.sort();
        live_compats.dedup();
        // With no authority running, every unfinished item is stranded (`inspect triage`
        // says "no authority is running"): the count and the `x` filter say so too.
        let mut incompatible_compats: Vec<String> = overview
            .work
            .iter()
            .filter(|w| !w.state.is_terminal() && w.count > 0 && !fleet.compatible(&w.compat))
            .map(|w| w.compat.clone())
            .collect();
        incompatible_compats.sort();
        incompatible_compats.dedup();
        let incompatible = overview
            .work
            .iter()
            .filter(|w| !w.state.is_terminal() && incompatible_compats.contains(&w.compat))
            .map(|w| w.count)
            .sum();
        Ok(Self {
            overview,
            fleet,
            stalls,
            live_compats,
            incompatible,
            incompatible_compats,
        })
    }
}

/// Each authority's claims per second, read for the authorities view only.
fn claim_rates(c: &mut Counter<'_>, view: ViewId, at: Millis) -> Result<ClaimRates> {
    if view != ViewId::Authorities {
        return Ok(ClaimRates::default());
    }
    c.run(|s| {
        ClaimRates::read(
            s,
            at,
            super::views::authorities::RATE_WINDOW_MS,
            RECENT_LIMIT,
            RECENT_REVISIONS,
        )
    })
}

/// The overview's failover summary, read for the overview only.
fn overview_failovers(
    c: &mut Counter<'_>,
    view: ViewId,
    at: Millis,
) -> Result<Option<Listing<FailoverRow>>> {
    if view != ViewId::Overview {
        return Ok(None);
    }
    c.run(|s| ops::failovers::failovers(s, Window::default(), at, None, OVERVIEW_FAILOVERS))
        .map(Some)
}

/// The demo cluster's view of its authorities, its scenario and its event ticker; nothing
/// without a demo cluster.
#[derive(Default)]
struct DemoState {
    authorities: Option<Vec<DemoAuthority>>,
    scenario: Option<String>,
    ticker: Vec<crate::ops::ticker::TickerLine>,
}

impl DemoState {
    fn read(c: &mut Counter<'_>, demo: Option<&dyn ClusterControl>, at: Millis) -> Result<Self> {
        let Some(d) = demo else {
            return Ok(Self::default());
        };
        let (authorities, scenario) = (d.authorities(), d.scenario());
        let lines = c.run(|s| crate::ops::ticker::ticker(s, at, WINDOW, LINES))?;
        Ok(Self {
            authorities: Some(authorities),
            scenario: Some(scenario),
            ticker: crate::ops::ticker::merged(lines, d.faults(LINES), LINES),
        })
    }
}

/// What the reader publishes.
#[derive(Debug, Clone)]
pub enum Published {
    Nothing,
    /// Checked: nothing changed since the last snapshot.
    Fresh,
    Snapshot(Arc<Snapshot>),
    Error {
        message: String,
        retry_in_ms: u64,
        failures: u32,
    },
}

impl Published {
    /// What a report of the store on screen is to the app (nothing for `Nothing`).
    #[must_use]
    pub fn into_action(self) -> Option<super::action::Action> {
        use super::action::Action;
        Some(match self {
            Self::Nothing => return None,
            Self::Fresh => Action::Fresh,
            Self::Snapshot(s) => Action::Snapshot(s),
            Self::Error {
                message,
                retry_in_ms,
                failures,
            } => Action::StoreError {
                message,
                retry_in_ms,
                failures,
            },
        })
    }
}

/// Backoff after `failures` consecutive failed refreshes: 250 ms doubling to 8 s.
#[must_use]
pub fn backoff_ms(base_ms: u64, failures: u32) -> u64 {
    let shift = failures.saturating_sub(1).min(6);
    (base_ms.max(50) << shift).min(8_000)
}

/// How often a reader whose store pushes its commits still polls: the fallback for a
/// notification lost while the feed's session was down.
const PUSHED_POLL: Duration = Duration::from_secs(2);

/// The shortest gap between two reads a pushed commit starts: a store committing
/// thousands of times a second is read at most this often, still within one frame.
const PUSHED_GAP: Duration = Duration::from_millis(100);

/// Runs the reader until the query channel closes. Publishes a snapshot whenever the query
/// changed or the store's change token moved — checked on every commit the store pushes
/// (PostgreSQL), and every `refresh_ms` unless paused (every 2 s at least
/// with a feed).
pub async fn run_reader(
    store: Store,
    demo: Option<Arc<dyn ClusterControl>>,
    mut queries: watch::Receiver<Query>,
    out: watch::Sender<Published>,
    refresh_ms: u64,
) {
    let pushed = super::push::spawn(&store);
    let refresh = match pushed {
        Some(_) => Duration::from_millis(refresh_ms.max(10)).max(PUSHED_POLL),
        None => Duration::from_millis(refresh_ms.max(10)),
    };
    let mut last_seq: Option<u64> = None;
    // The change token, and the write stalls posted now: a stall changes no row (nothing
    // can be written while it lasts), so it is probed beside the token.
    let mut last_token: Option<(u64, Vec<ProcessStall>)> = None;
    let mut failures: u32 = 0;
    let mut last_read = tokio::time::Instant::now();
    let mut cache = Cache::default();
    loop {
        let query = queries.borrow_and_update().clone();
        let fresh_query = last_seq != Some(query.seq);
        let mut wait = refresh;
        if fresh_query || !query.paused || failures > 0 {
            last_read = tokio::time::Instant::now();
            let probe_store = store.clone();
            // The token probe is cheap; skip the full read when nothing changed.
            let token = tokio::task::spawn_blocking(move || {
                Ok((probe_store.change_token()?, probe_store.write_stalls()?))
            })
            .await;
            let token = match token {
                Ok(r) => r,
                Err(e) => Err(crate::error::Error::Unavailable(format!(
                    "reader task failed: {e}"
                ))),
            };
            let result = match token {
                Ok(t)
                    if !fresh_query
                        && failures == 0
                        && last_token.as_ref() == Some(&t)
                        && !demo_moving(demo.as_ref()) =>
                {
                    None
                }
                Ok(_) | Err(_) => {
                    let (s, q, d) = (store.clone(), query.clone(), demo.clone());
                    let mut kept = std::mem::take(&mut cache);
                    let joined = tokio::task::spawn_blocking(move || {
                        let read = read_cached(&s, &q, d.as_deref(), &mut kept);
                        (read, kept)
                    })
                    .await;
                    Some(match joined {
                        Ok((read, kept)) => {
                            cache = kept;
                            read
                        }
                        Err(e) => Err(crate::error::Error::Unavailable(format!(
                            "reader task failed: {e}"
                        ))),
                    })
                }
            };
            match result {
                None => {
                    if out.send(Published::Fresh).is_err() {
                        return;
                    }
                }
                Some(Ok(snapshot)) => {
                    failures = 0;
                    last_seq = Some(query.seq);
                    last_token = Some((snapshot.token, snapshot.stalls.clone()));
                    if out.send(Published::Snapshot(Arc::new(snapshot))).is_err() {
                        return;
                    }
                }
                Some(Err(e)) => {
                    failures = failures.saturating_add(1);
                    let retry = backoff_ms(refresh_ms, failures);
                    wait = Duration::from_millis(retry);
                    let message = e.to_string();
                    if out
                        .send(Published::Error {
                            message,
                            retry_in_ms: retry,
                            failures,
                        })
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
        tokio::select! {
            changed = queries.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(wait) => {}
            () = super::push::next(pushed.as_deref()) => {
                tokio::time::sleep_until(last_read + PUSHED_GAP).await;
            }
        }
    }
}

/// With a demo cluster the store token covers everything but the cluster's own view of
/// its authorities (paused/crashed), which is cheap; always re-read then.
fn demo_moving(demo: Option<&Arc<dyn ClusterControl>>) -> bool {
    demo.is_some()
}
