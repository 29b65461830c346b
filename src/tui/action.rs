//! Everything that can happen to the dashboard, as data. Keys resolve to [`Action`]s
//! through the [`super::keymap`]; the event loop turns store snapshots, ticks and finished
//! operator commands into Actions too, so [`super::app::App::update`] is the only place the
//! model changes and every behaviour can be driven in a test without a terminal.

use std::sync::Arc;

use crate::clock::Millis;

use super::describe::Fetch;
use super::snapshot::Snapshot;

/// The views, in number-key order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ViewId {
    Overview,
    Authorities,
    Leases,
    Work,
    Workflows,
    Cursors,
    Events,
    Schedules,
    Audit,
    /// Reached from a row (`t`) or `:timeline RESOURCE`.
    Timeline,
    /// Reached with `Enter` on a workflow.
    WorkflowDetail,
    /// Failovers in the last window, newest first.
    Failovers,
    /// Refused (fenced) writes in the last window, newest first.
    Fenced,
    /// Everything that needs a person, grouped by reason (`!`, `:triage`).
    Triage,
    /// The running builds against the unfinished work (`:builds`).
    Builds,
    /// What becomes due over the next minutes (`:horizon`).
    Horizon,
    /// The durable history over a window of time, step by step (`:replay`, `H`).
    Replay,
}

impl ViewId {
    /// Views reachable with `:name` and a key: 1-9, then 0 for the timeline, then letters.
    pub const MAIN: [Self; 12] = [
        Self::Overview,
        Self::Authorities,
        Self::Leases,
        Self::Work,
        Self::Workflows,
        Self::Cursors,
        Self::Events,
        Self::Schedules,
        Self::Audit,
        Self::Timeline,
        Self::Failovers,
        Self::Fenced,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Overview => "overview",
            Self::Authorities => "authorities",
            Self::Leases => "leases",
            Self::Work => "work",
            Self::Workflows => "workflows",
            Self::Cursors => "cursors",
            Self::Events => "events",
            Self::Schedules => "schedules",
            Self::Audit => "audit",
            Self::Timeline => "timeline",
            Self::WorkflowDetail => "workflow",
            Self::Failovers => "failovers",
            Self::Fenced => "fenced",
            Self::Triage => "triage",
            Self::Builds => "builds",
            Self::Horizon => "horizon",
            Self::Replay => "replay",
        }
    }

    /// Resolves a `:` command word (a name or an unambiguous prefix, plus a few aliases).
    #[must_use]
    pub fn parse(word: &str) -> Option<Self> {
        let word = word.trim().to_ascii_lowercase();
        let alias = match word.as_str() {
            "auth" | "au" => Some(Self::Authorities),
            "wf" | "instances" => Some(Self::Workflows),
            "subs" | "subscriptions" => Some(Self::Cursors),
            "gen" | "generations" => Some(Self::Timeline),
            "refused" | "writes" => Some(Self::Fenced),
            "ov" | "home" => Some(Self::Overview),
            "triage" | "tri" | "needs" | "attention" => Some(Self::Triage),
            "builds" | "build" | "compat" | "matrix" => Some(Self::Builds),
            "horizon" | "hz" | "next" | "due" => Some(Self::Horizon),
            "replay" | "rp" | "history" => Some(Self::Replay),
            _ => None,
        };
        if alias.is_some() {
            return alias;
        }
        let mut found = Self::MAIN.iter().filter(|v| v.name().starts_with(&word));
        match (found.next(), found.next()) {
            (Some(v), None) if !word.is_empty() => Some(*v),
            _ => Self::MAIN.iter().find(|v| v.name() == word).copied(),
        }
    }

    /// The key that opens this view, if any: a number for the first ten, then `F`
    /// (failovers) and `W` (refused writes).
    #[must_use]
    pub fn digit(self) -> Option<char> {
        match self {
            Self::Failovers => Some('F'),
            Self::Fenced => Some('W'),
            Self::Triage => Some('!'),
            Self::Replay => Some('H'),
            _ => Self::MAIN.iter().position(|v| *v == self).map(|i| {
                if i == 9 {
                    '0'
                } else {
                    char::from(b'1' + u8::try_from(i).unwrap_or(0))
                }
            }),
        }
    }

    /// Whether the view is a paged table (as opposed to overview, workflow detail and
    /// the replay, which moves by step rather than by page).
    #[must_use]
    pub fn is_table(self) -> bool {
        !matches!(self, Self::Overview | Self::WorkflowDetail | Self::Replay)
    }
}

/// Server-side quick filters of the work view (they narrow the store query, so paging
/// still pages through every matching row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WorkQuick {
    #[default]
    All,
    Pending,
    Claimed,
    Retry,
    Failed,
    Incompatible,
}

impl WorkQuick {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Pending => "pending",
            Self::Claimed => "claimed",
            Self::Retry => "retry",
            Self::Failed => "failed",
            Self::Incompatible => "incompatible",
        }
    }
}

/// Demo-mode faults and scaling (sent to [`crate::cluster::control::ClusterControl`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DemoOp {
    Kill(String),
    Pause(String),
    Resume(String),
    Add,
    /// A build beside the fleet, compatible (same key) or not.
    Deploy {
        compatible: bool,
    },
    Skew(String, i64),
}

/// What a finished background command reports back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Done {
    /// An operator action (a cancel, a requeue …) ran on `subject`: the status line text
    /// and whether it was a refusal.
    Acted {
        subject: String,
        message: String,
        refused: bool,
    },
    /// A bulk action's preview was read: what matches, and the first of it.
    Previewed {
        verb: crate::rules::triage::Verb,
        reason: String,
        tally: crate::ops::bulk::Tally,
    },
    /// A demo operation ran (or was refused).
    Demo { message: String, refused: bool },
    /// A describe pane's read by key finished (the record's field, or the failure).
    Described {
        fetch: Fetch,
        value: Result<serde_json::Value, String>,
    },
}

/// One thing that happened.
#[derive(Debug, Clone)]
pub enum Action {
    // --- navigation
    SwitchView(ViewId),
    Back,
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Home,
    End,
    /// Detail of the selected row (workflow detail for workflows).
    Enter,
    /// Timeline of the selected row's resource.
    Timeline,
    /// Open the `:` command prompt.
    OpenCommand,
    /// Open the `/` filter prompt.
    OpenFilter,
    ClearFilter,
    /// Sort by the next column (within the page); again on the last column: unsorted.
    CycleSort,
    ReverseSort,
    SortBy(usize),
    QuickFilter(WorkQuick),
    TogglePause,
    ToggleHelp,
    ToggleStats,
    /// Show / hide the demo's event ticker pane.
    ToggleTicker,
    CycleTheme,
    Quit,
    // --- prompts and dialogs
    Input(char),
    Backspace,
    Complete,
    Submit,
    Confirm,
    Dismiss,
    /// Open the describe pane of the selected row (every field of its record).
    Describe,
    /// Copy the selected row's id to the clipboard (OSC 52).
    CopyId,
    /// Release / take back the mouse, so the terminal can select text.
    ToggleMouse,
    // --- operator actions
    CancelWorkflow,
    /// Requeue, discard or retry now the selected work item (asks first).
    TriageWork(crate::rules::triage::Verb),
    /// Release the selected gone authority's claims, or forget it (asks first).
    ActOnAuthority(super::app::AuthorityVerb),
    /// Pause, resume or delete the selected schedule (asks first).
    ControlSchedule(crate::rules::schedule::Control),
    /// Pause or resume the selected work item's handler, fleet-wide (asks first).
    ControlHandler(crate::rules::handler::HandlerControl),
    /// Move the replay's cursor: a step or to a failover, either way.
    Replay(super::replay::Seek),
    Demo(DemoKey),
    // --- mouse and terminal
    ScrollUp,
    ScrollDown,
    Click {
        column: u16,
        row: u16,
    },
    Resize {
        width: u16,
        height: u16,
    },
    // --- from the event loop
    /// Time passes: `now` is the store's clock (countdowns), `wall` a monotonic
    /// millisecond count of the dashboard (flashes, the stale badge, sparkline rates).
    Tick {
        now: Millis,
        wall: Millis,
    },
    Snapshot(Arc<Snapshot>),
    /// A reader of another attached store (not the one on screen) reported.
    Background {
        store: usize,
        read: super::snapshot::Published,
    },
    /// The reader checked the store and nothing changed.
    Fresh,
    StoreError {
        message: String,
        retry_in_ms: u64,
        failures: u32,
    },
    Done(Done),
    /// The demo checker's latest verdict.
    Checked(crate::tui::checker_badge::Verdict),
    /// The guided tour's caption (`None`: no tour runs).
    Caption(Option<String>),
    /// Start the guided tour (`T`).
    StartTour,
    /// The tour's next step (`n`, manual mode).
    NextTourStep,
}

/// The demo keys, before the app knows which authority is selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoKey {
    Kill,
    Pause,
    Resume,
    Add,
    Deploy,
    Skew,
}
