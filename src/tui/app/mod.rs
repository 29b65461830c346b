//! The model and its one update function (the Elm architecture). [`App`] holds the latest
//! store snapshot and the UI state (view, selection, filter, sort, prompts, dialogs);
//! [`App::update`] is the only thing that changes it, and it answers with [`Command`]s —
//! read this query, cancel that workflow, kill that authority — which the event loop (or
//! [`super::harness::Harness`] in tests) carries out and feeds back as Actions.
//!
//! This file holds the model, its read access and the routing of actions; what each kind
//! of action does to the model lives beside it, one concern a file: the table state
//! (`table.rs`), the history tree (`tree.rs`), prompts (`prompt.rs`) and `:` commands
//! (`command.rs`), overlays (`overlay.rs`), the describe pane and the cancel dialog, demo
//! keys, snapshots coming in (`snapshots.rs`) and the query going out (`query.rs`).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crossterm::event::KeyEvent;

mod authority_dialog;
mod bulk_dialog;
mod cancel_dialog;
mod command;
mod confirm;
mod demo_keys;
mod describe_pane;
mod navigate;
mod overlay;
mod prompt;
mod query;
mod replay;
mod schedule_dialog;
mod snapshots;
mod stores;
mod table;
mod tree;
mod triage_dialog;

pub use authority_dialog::AuthorityVerb;
pub use bulk_dialog::TYPE_COUNT_ABOVE;
pub use command::{command_words, completions};
pub use confirm::{Act, Confirmation};
pub use demo_keys::{Choice, PICK_KEYS, Pick};
pub use overlay::Overlay;
pub use prompt::{Prompt, PromptKind};
pub use replay::ReplayUi;
pub use stores::StoreBadge;
pub use table::TableUi;
pub use tree::TreeUi;

use table::PageMove;

use super::action::{Action, DemoKey, DemoOp, Done, ViewId, WorkQuick};
use super::describe::Fetch;
use super::keymap::{self, Mode};
use super::snapshot::{Query, Snapshot, ViewData};
use super::store_filter::{self, StoreOrder};
use super::theme::{Role, Theme, ThemeSet};
use super::views::{self, CHROME_ROWS, SortKey, TableData, workflow_detail};
use crate::clock::Millis;
use crate::foundation::timefmt::{TimeFmt, Zone};
use crate::model::PageRequest;

/// How long a changed row stays highlighted.
pub const FLASH_MS: Millis = 1_500;
/// How long a status-line message stays up.
pub const STATUS_MS: Millis = 6_000;
/// Samples kept for the sparklines.
pub const SAMPLES: usize = 120;

/// Fixed settings of one dashboard session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppOptions {
    pub read_only: bool,
    /// A demo cluster is attached (its keys are shown and work).
    pub demo: bool,
    /// `account@host`, recorded in the audit log.
    pub actor: String,
    pub refresh_ms: u64,
    /// The zone wall times are shown in (UTC in tests, local for people).
    pub zone: Zone,
}

impl Default for AppOptions {
    fn default() -> Self {
        Self {
            read_only: false,
            demo: false,
            actor: "operator@localhost".into(),
            refresh_ms: 250,
            zone: Zone::Utc,
        }
    }
}

/// Something the event loop must do for the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Publish this query to the reader (it reads at once); boxed, as a filter is large
    /// beside the other commands.
    Query(Box<Query>),
    /// Cancel a workflow instance (then audit it).
    Cancel {
        instance: String,
        reason: String,
    },
    /// Requeue, discard or retry now one work item (then audit it).
    Triage {
        verb: crate::rules::triage::Verb,
        item: String,
        reason: String,
    },
    /// Release a gone authority's claims, or forget it (then audit it).
    Authority {
        verb: AuthorityVerb,
        instance: String,
        reason: String,
    },
    /// Pause, resume or delete a schedule (then audit it).
    Schedule {
        control: crate::rules::schedule::Control,
        schedule: String,
        reason: String,
    },
    /// Pause or resume a handler fleet-wide (then audit it).
    Handler {
        control: crate::rules::handler::HandlerControl,
        handler: String,
        reason: String,
    },
    /// Count what a work filter matches and name the first, for a bulk dialog.
    BulkPreview {
        verb: crate::rules::triage::Verb,
        filter: String,
        reason: String,
    },
    /// Run a triage verb over every item a work filter matches, unless more than the
    /// `confirmed` count match by now.
    Bulk {
        verb: crate::rules::triage::Verb,
        filter: String,
        reason: String,
        confirmed: usize,
    },
    Demo(DemoOp),
    /// Start the guided tour, or move it on.
    Tour(super::tour_driver::TourCommand),
    /// Read what a describe pane still lacks.
    Fetch(Fetch),
    /// Put this text on the clipboard (OSC 52, through the terminal backend).
    Copy(String),
    /// Capture the mouse (`true`) or leave it to the terminal for selecting text.
    Mouse(bool),
    Quit,
}

/// A status-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub text: String,
    pub role: Role,
    pub until: Millis,
}

/// The reader's last failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    pub message: String,
    pub retry_in_ms: u64,
    pub failures: u32,
}

/// Counter readings for the sparklines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub wall: Millis,
    pub claims: u64,
    pub refused: u64,
    pub accepted: u64,
}

/// The dashboard model.
#[derive(Debug, Clone)]
pub struct App {
    options: AppOptions,
    theme: Theme,
    themes: ThemeSet,
    no_color: bool,
    view: ViewId,
    back: Vec<ViewId>,
    overlay: Option<Overlay>,
    prompt: Option<Prompt>,
    paused: bool,
    show_stats: bool,
    /// The demo's event ticker pane is shown (on by default in a demo).
    show_ticker: bool,
    /// The guided tour's caption line, while a tour runs.
    caption: Option<String>,
    /// The demo checker's latest verdict.
    checked: Option<super::checker_badge::Verdict>,
    now: Millis,
    wall: Millis,
    size: (u16, u16),
    snapshot: Option<Arc<Snapshot>>,
    last_contact: Option<Millis>,
    /// When the reader last read the store successfully (the stale badge's age).
    last_good: Option<Millis>,
    error: Option<StoreError>,
    /// The attached stores (none or one: a single-store dashboard) and which is on
    /// screen; the others' state is parked in their slots.
    stores: Vec<stores::Slot>,
    store: usize,
    tables: HashMap<ViewId, TableUi>,
    work_quick: WorkQuick,
    /// How far back the failovers and refused-writes views look (`:failovers 1h`).
    incident_window: crate::ops::window::Window,
    instance: Option<String>,
    resource: Option<String>,
    query: Query,
    data: Option<TableData>,
    visible: Vec<usize>,
    flash: HashMap<String, Millis>,
    versions: HashMap<String, String>,
    version_scope: Option<Query>,
    samples: VecDeque<Sample>,
    status: Option<Status>,
    tree: TreeUi,
    /// The replay view's window and cursor, once opened.
    replay: Option<ReplayUi>,
    /// Whether the dashboard captures the mouse (off: the terminal selects text).
    mouse: bool,
    quit: bool,
}

impl App {
    /// A dashboard showing the overview, sized 80×24 until told otherwise.
    #[must_use]
    pub fn new(options: AppOptions, theme: Theme, themes: ThemeSet) -> Self {
        let no_color = theme.is_monochrome();
        let show_ticker = options.demo;
        let mut app = Self {
            options,
            theme,
            themes,
            no_color,
            view: ViewId::Overview,
            back: Vec::new(),
            overlay: None,
            prompt: None,
            paused: false,
            show_stats: false,
            show_ticker,
            caption: None,
            checked: None,
            now: 0,
            wall: 0,
            size: (80, 24),
            snapshot: None,
            last_contact: None,
            last_good: None,
            error: None,
            stores: Vec::new(),
            store: 0,
            tables: HashMap::new(),
            work_quick: WorkQuick::All,
            incident_window: crate::ops::window::Window::default(),
            instance: None,
            resource: None,
            query: Query::default(),
            data: None,
            visible: Vec::new(),
            flash: HashMap::new(),
            versions: HashMap::new(),
            version_scope: None,
            samples: VecDeque::new(),
            status: None,
            tree: TreeUi::default(),
            replay: None,
            mouse: true,
            quit: false,
        };
        app.query = app.build_query(0);
        app
    }

    // --- read access for views and tests

    #[must_use]
    pub fn options(&self) -> &AppOptions {
        &self.options
    }
    #[must_use]
    pub fn theme(&self) -> &Theme {
        &self.theme
    }
    #[must_use]
    pub fn view(&self) -> ViewId {
        self.view
    }
    #[must_use]
    pub fn overlay(&self) -> Option<&Overlay> {
        self.overlay.as_ref()
    }
    #[must_use]
    pub fn prompt(&self) -> Option<&Prompt> {
        self.prompt.as_ref()
    }
    #[must_use]
    pub fn paused(&self) -> bool {
        self.paused
    }
    #[must_use]
    pub fn show_stats(&self) -> bool {
        self.show_stats
    }
    /// The demo checker's latest verdict.
    #[must_use]
    pub fn checked(&self) -> Option<&super::checker_badge::Verdict> {
        self.checked.as_ref()
    }
    /// The guided tour's caption, while a tour runs.
    #[must_use]
    pub fn caption(&self) -> Option<&str> {
        self.caption.as_deref()
    }
    /// Whether the event ticker pane is shown (only ever with a demo cluster).
    #[must_use]
    pub fn show_ticker(&self) -> bool {
        self.show_ticker && self.options.demo
    }
    #[must_use]
    pub fn now(&self) -> Millis {
        self.now
    }
    #[must_use]
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_deref()
    }
    #[must_use]
    pub fn store_error(&self) -> Option<&StoreError> {
        self.error.as_ref()
    }
    #[must_use]
    pub fn status(&self) -> Option<&Status> {
        self.status.as_ref().filter(|s| s.until > self.wall)
    }
    #[must_use]
    pub fn work_quick(&self) -> WorkQuick {
        self.work_quick
    }
    #[must_use]
    pub fn query(&self) -> &Query {
        &self.query
    }
    #[must_use]
    pub fn should_quit(&self) -> bool {
        self.quit
    }
    #[must_use]
    pub fn samples(&self) -> &VecDeque<Sample> {
        &self.samples
    }
    #[must_use]
    pub fn tree(&self) -> &TreeUi {
        &self.tree
    }
    #[must_use]
    pub fn instance(&self) -> Option<&str> {
        self.instance.as_deref()
    }
    #[must_use]
    pub fn resource(&self) -> Option<&str> {
        self.resource.as_deref()
    }
    /// The current view's table state.
    #[must_use]
    pub fn table_ui(&self) -> TableUi {
        self.tables.get(&self.view).cloned().unwrap_or_default()
    }
    /// The current table model (rows of the visible page), if the snapshot is for this view.
    #[must_use]
    pub fn table_data(&self) -> Option<&TableData> {
        self.data.as_ref()
    }
    /// Indices into [`Self::table_data`] rows, filtered and sorted, in display order.
    #[must_use]
    pub fn visible(&self) -> &[usize] {
        &self.visible
    }
    /// The selected row, if any.
    #[must_use]
    pub fn selected_row(&self) -> Option<&views::Row> {
        let data = self.data.as_ref()?;
        let i = *self.visible.get(self.table_ui().selected)?;
        data.rows.get(i)
    }
    #[must_use]
    pub fn is_flashing(&self, key: &str) -> bool {
        self.flash.get(key).is_some_and(|until| *until > self.wall)
    }
    /// Whether the snapshot on screen answers an older query (a read is in flight).
    #[must_use]
    pub fn loading(&self) -> bool {
        self.snapshot
            .as_ref()
            .is_none_or(|s| s.query.seq != self.query.seq)
    }
    /// How old the last good read is, when the reader has been silent too long or the
    /// store is failing (not while paused).
    #[must_use]
    pub fn stale_for(&self) -> Option<Millis> {
        self.current_staleness()
    }
    /// Whether the snapshot is for the view on screen.
    #[must_use]
    pub fn snapshot_fits_view(&self) -> bool {
        self.snapshot
            .as_ref()
            .is_some_and(|s| s.query.view == self.view)
    }
    /// Rows a table page holds at the current size.
    #[must_use]
    pub fn page_size(&self) -> usize {
        let caption = u16::from(self.caption.is_some());
        let body = self.size.1.saturating_sub(CHROME_ROWS + caption);
        usize::from(
            body.saturating_sub(views::ticker::rows_taken(self, body))
                .max(1),
        )
    }
    #[must_use]
    pub fn size(&self) -> (u16, u16) {
        self.size
    }
    /// How instants are written: the store's now, in the session's zone.
    #[must_use]
    pub fn time_fmt(&self) -> TimeFmt {
        TimeFmt::new(self.now, self.options.zone)
    }
    /// Whether the dashboard has the mouse (shown in the footer when it does not).
    #[must_use]
    pub fn mouse_captured(&self) -> bool {
        self.mouse
    }

    /// The key-map mode the app is in.
    #[must_use]
    pub fn mode(&self) -> Mode {
        if self.prompt.is_some() {
            Mode::Prompt
        } else {
            match self.overlay {
                Some(
                    Overlay::Confirm(Confirmation { editing: true, .. })
                    | Overlay::ConfirmBulk { editing: true, .. },
                ) => Mode::DialogText,
                Some(Overlay::Confirm(_) | Overlay::ConfirmBulk { .. }) => Mode::Dialog,
                Some(_) => Mode::Overlay,
                None => Mode::Normal(self.view),
            }
        }
    }

    /// Resolves a key press through the key map and applies it.
    pub fn handle_key(&mut self, key: &KeyEvent) -> Vec<Command> {
        match keymap::resolve(key, self.mode()) {
            Some(action) => self.update(action),
            None => Vec::new(),
        }
    }

    // --- the update function

    /// Applies one action; returns what the event loop must do.
    pub fn update(&mut self, action: Action) -> Vec<Command> {
        let mut out = Vec::new();
        let mut force = false;
        match action {
            Action::Tick { now, wall } => {
                self.now = now;
                self.wall = wall;
                self.flash.retain(|_, until| *until > wall);
                self.rebuild();
            }
            Action::Snapshot(snapshot) => {
                force = self.on_snapshot(snapshot);
            }
            Action::Fresh => {
                self.last_contact = Some(self.wall);
                self.last_good = Some(self.wall);
                self.error = None;
                if let Some(s) = self.snapshot.clone() {
                    self.sample(&s);
                }
            }
            Action::StoreError {
                message,
                retry_in_ms,
                failures,
            } => {
                self.last_contact = Some(self.wall);
                self.error = Some(StoreError {
                    message,
                    retry_in_ms,
                    failures,
                });
            }
            Action::Done(done) => {
                // An operator action changed the store: read it again. A describe read
                // changed nothing.
                force = !matches!(done, Done::Described { .. } | Done::Previewed { .. });
                match done {
                    Done::Acted {
                        subject,
                        message,
                        refused,
                    } => {
                        let role = if refused { Role::Error } else { Role::Ok };
                        self.say(
                            format!("{}: {message}", super::text::clean(&subject, 40)),
                            role,
                        );
                    }
                    Done::Previewed {
                        verb,
                        reason,
                        tally,
                    } => self.on_preview(verb, reason, tally),
                    Done::Demo { message, refused } => {
                        self.say(message, if refused { Role::Error } else { Role::Ok });
                    }
                    Done::Described { fetch, value } => self.on_described(&fetch, value),
                }
            }
            Action::Background { store, read } => self.on_background(store, read),
            Action::Resize { width, height } => self.size = (width, height),
            Action::Caption(caption) => self.caption = caption,
            Action::Checked(verdict) => self.checked = Some(verdict),
            other => {
                self.drop_error();
                if let Some(prompt) = self.prompt.clone() {
                    self.prompt_action(prompt, other, &mut out);
                } else if let Some(overlay) = self.overlay.clone() {
                    self.overlay_action(overlay, other, &mut out);
                } else {
                    force = self.normal_action(other, &mut out);
                }
            }
        }
        if let Some(q) = self.sync_query(force) {
            out.insert(0, Command::Query(Box::new(q)));
        }
        out
    }

    fn say(&mut self, text: impl Into<String>, role: Role) {
        self.status = Some(Status {
            text: text.into(),
            role,
            until: self.wall + STATUS_MS,
        });
    }

    /// An error stays on the status line only until the operator acts again: after the
    /// next key (a move, a view change, a prompt) it speaks of a state the screen no longer
    /// shows. A key that fails in turn puts up its own.
    fn drop_error(&mut self) {
        if self.status.as_ref().is_some_and(|s| s.role == Role::Error) {
            self.status = None;
        }
    }

    fn table_mut(&mut self) -> &mut TableUi {
        self.tables.entry(self.view).or_default()
    }

    fn switch(&mut self, view: ViewId) {
        if view != self.view {
            self.back.push(self.view);
            if self.back.len() > 32 {
                self.back.remove(0);
            }
            self.view = view;
            self.rebuild();
        }
    }

    #[expect(clippy::too_many_lines, reason = "the key map: one arm per action")]
    fn normal_action(&mut self, action: Action, out: &mut Vec<Command>) -> bool {
        match action {
            Action::SwitchView(ViewId::Replay) => self.show_replay(),
            Action::SwitchView(view) => {
                if view == ViewId::Timeline && self.resource.is_none() {
                    self.say(
                        "pick a row and press t (or :timeline RESOURCE) to see its generations",
                        Role::Warning,
                    );
                }
                self.switch(view);
            }
            Action::Back if self.replay_close() => {}
            Action::Back => {
                if !self.table_ui().filter.is_empty() {
                    self.apply_filter("");
                } else if let Some(v) = self.back.pop() {
                    self.view = v;
                    self.rebuild();
                }
            }
            Action::Up if self.view == ViewId::Replay => {
                self.replay_move(super::replay::Seek::PreviousStep);
            }
            Action::Down if self.view == ViewId::Replay => {
                self.replay_move(super::replay::Seek::NextStep);
            }
            Action::Replay(seek) => self.replay_move(seek),
            Action::Up => self.move_selection(-1),
            Action::Down => self.move_selection(1),
            Action::ScrollUp => self.move_selection(-3),
            Action::ScrollDown => self.move_selection(3),
            Action::Left => self.tree_left(),
            Action::Right => self.tree_right(),
            Action::PageDown => self.page(PageMove::Down),
            Action::PageUp => self.page(PageMove::Up),
            Action::Home => self.page(PageMove::Home),
            Action::End => self.page(PageMove::End),
            Action::Enter => self.enter(out),
            Action::Describe => self.open_describe(out),
            Action::CopyId => self.copy_id(out),
            Action::ToggleMouse => self.toggle_mouse(out),
            Action::Timeline => match self.selected_row().and_then(|r| r.resource.clone()) {
                Some(resource) => self.open_timeline(resource),
                None => self.say("this row has no lease resource", Role::Warning),
            },
            Action::OpenCommand => {
                self.prompt = Some(Prompt {
                    kind: PromptKind::Command,
                    text: String::new(),
                });
            }
            Action::OpenFilter => {
                let text = self.table_ui().filter;
                self.prompt = Some(Prompt {
                    kind: PromptKind::Filter,
                    text,
                });
            }
            Action::ClearFilter => self.apply_filter(""),
            Action::CycleSort => self.cycle_sort(),
            Action::ReverseSort => self.reverse_sort(),
            Action::SortBy(c) => self.sort_by(c),
            Action::QuickFilter(q) if self.work_quick != q => {
                self.work_quick = q;
                self.table_mut().page = None;
                self.table_mut().selected = 0;
            }
            Action::TogglePause => {
                self.paused = !self.paused;
                self.say(
                    if self.paused {
                        "paused: the frame is frozen (space resumes)"
                    } else {
                        "live"
                    },
                    Role::Accent,
                );
            }
            Action::ToggleHelp => self.overlay = Some(Overlay::Help { scroll: 0 }),
            Action::ToggleStats => self.show_stats = !self.show_stats,
            Action::StartTour => self.tour_key(false, out),
            Action::NextTourStep => self.tour_key(true, out),
            Action::ToggleTicker => {
                if self.options.demo {
                    self.show_ticker = !self.show_ticker;
                } else {
                    self.say("the event ticker is part of leasehold demo", Role::Warning);
                }
            }
            Action::CycleTheme => {
                let next = self.themes.next_name(&self.theme.name);
                self.set_theme(&next);
            }
            Action::Quit => {
                self.quit = true;
                out.push(Command::Quit);
            }
            Action::CancelWorkflow => self.ask_cancel(),
            Action::TriageWork(verb) => self.ask_triage(verb),
            Action::ActOnAuthority(verb) => self.ask_authority(verb),
            Action::ControlSchedule(control) => self.ask_schedule(control),
            Action::ControlHandler(control) => self.ask_handler(control),
            Action::Demo(key) => self.demo_key(key, out),
            Action::Click { column, row } => self.click(column, row),
            _ => {}
        }
        false
    }
}
