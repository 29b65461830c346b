//! The model and its one update function (the Elm architecture). [`App`] holds the latest
//! store snapshot and the UI state (view, selection, filter, sort, prompts, dialogs);
//! [`App::update`] is the only thing that changes it, and it answers with [`Command`]s —
//! read this query, cancel that workflow, kill that authority — which the event loop (or
//! [`super::harness::Harness`] in tests) carries out and feeds back as Actions.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use crossterm::event::KeyEvent;

mod cancel_dialog;
mod describe_pane;

use super::action::{Action, DemoKey, DemoOp, Done, ViewId, WorkQuick};
use super::describe::{Describe, Fetch};
use super::keymap::{self, Mode};
use super::snapshot::{Query, Snapshot, ViewData};
use super::store_filter::{self, StoreOrder};
use super::theme::{Role, Theme, ThemeSet};
use super::views::{self, CHROME_ROWS, SortKey, TableData, workflow_detail};
use crate::clock::Millis;
use crate::model::PageRequest;
use crate::ops::timefmt::{TimeFmt, Zone};

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
    /// Publish this query to the reader (it reads at once).
    Query(Query),
    /// Cancel a workflow instance (then audit it).
    Cancel {
        instance: String,
        reason: String,
    },
    Demo(DemoOp),
    /// Read what a describe pane still lacks.
    Fetch(Fetch),
    /// Put this text on the clipboard (OSC 52, through the terminal backend).
    Copy(String),
    /// Capture the mouse (`true`) or leave it to the terminal for selecting text.
    Mouse(bool),
    Quit,
}

/// A popup over the view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    Help {
        scroll: u16,
    },
    /// Every field of one record.
    Describe(Describe),
    /// Confirm a cancel; `editing` while the reason field has the keyboard.
    ConfirmCancel {
        instance: String,
        reason: String,
        editing: bool,
    },
}

/// What a prompt is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptKind {
    Command,
    Filter,
    RollOut,
    Skew { authority: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub kind: PromptKind,
    pub text: String,
}

/// Per-view table state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableUi {
    pub selected: usize,
    pub selected_key: Option<String>,
    /// Column index and descending.
    pub sort: Option<(usize, bool)>,
    pub filter: String,
    pub page: Option<PageRequest>,
    /// Rows before this page, tracked while paging (keyset pages carry no offset);
    /// `None` when unknown.
    pub offset: Option<usize>,
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

/// Expansion and selection of the history tree.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TreeUi {
    pub closed: BTreeSet<String>,
    pub selected: Vec<String>,
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
    now: Millis,
    wall: Millis,
    size: (u16, u16),
    snapshot: Option<Arc<Snapshot>>,
    last_contact: Option<Millis>,
    error: Option<StoreError>,
    tables: HashMap<ViewId, TableUi>,
    work_quick: WorkQuick,
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
    /// Whether the dashboard captures the mouse (off: the terminal selects text).
    mouse: bool,
    quit: bool,
}

impl App {
    /// A dashboard showing the overview, sized 80×24 until told otherwise.
    #[must_use]
    pub fn new(options: AppOptions, theme: Theme, themes: ThemeSet) -> Self {
        let no_color = theme.is_monochrome();
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
            now: 0,
            wall: 0,
            size: (80, 24),
            snapshot: None,
            last_contact: None,
            error: None,
            tables: HashMap::new(),
            work_quick: WorkQuick::All,
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
    /// Seconds since the reader last reported, when that is late (not while paused).
    #[must_use]
    pub fn stale_for(&self) -> Option<Millis> {
        if self.paused {
            return None;
        }
        let limit = i64::try_from(self.options.refresh_ms.saturating_mul(4))
            .unwrap_or(i64::MAX)
            .max(2_000);
        let since = self.wall - self.last_contact?;
        (since > limit).then_some(since)
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
        usize::from(self.size.1.saturating_sub(CHROME_ROWS).max(1))
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
                Some(Overlay::ConfirmCancel { editing: true, .. }) => Mode::DialogText,
                Some(Overlay::ConfirmCancel { .. }) => Mode::Dialog,
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
                force = !matches!(done, Done::Described { .. });
                match done {
                    Done::Cancel {
                        instance,
                        message,
                        refused,
                    } => {
                        let role = if refused { Role::Error } else { Role::Ok };
                        self.say(
                            format!("{}: {message}", super::text::clean(&instance, 40)),
                            role,
                        );
                    }
                    Done::Demo { message } => self.say(message, Role::Ok),
                    Done::Described { fetch, value } => self.on_described(&fetch, value),
                }
            }
            Action::Resize { width, height } => self.size = (width, height),
            other => {
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
            out.insert(0, Command::Query(q));
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

    fn normal_action(&mut self, action: Action, out: &mut Vec<Command>) -> bool {
        match action {
            Action::SwitchView(view) => {
                if view == ViewId::Timeline && self.resource.is_none() {
                    self.say(
                        "pick a row and press t (or :timeline RESOURCE) to see its generations",
                        Role::Warning,
                    );
                }
                self.switch(view);
            }
            Action::Back => {
                if !self.table_ui().filter.is_empty() {
                    self.apply_filter("");
                } else if let Some(v) = self.back.pop() {
                    self.view = v;
                    self.rebuild();
                }
            }
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
                })
            }
            Action::OpenFilter => {
                let text = self.table_ui().filter;
                self.prompt = Some(Prompt {
                    kind: PromptKind::Filter,
                    text,
                });
            }
            Action::ClearFilter => self.apply_filter(""),
            Action::CycleSort => {
                let before = self.store_order();
                let columns = self.data.as_ref().map_or(0, |d| d.columns.len());
                let t = self.table_mut();
                t.sort = match t.sort {
                    None if columns > 0 => Some((0, false)),
                    Some((c, desc)) if c + 1 < columns => Some((c + 1, desc)),
                    _ => None,
                };
                self.sort_changed(before);
            }
            Action::ReverseSort => {
                let before = self.store_order();
                let t = self.table_mut();
                t.sort = Some(t.sort.map_or((0, true), |(c, d)| (c, !d)));
                self.sort_changed(before);
            }
            Action::SortBy(c) => {
                let before = self.store_order();
                let t = self.table_mut();
                t.sort = match t.sort {
                    Some((old, desc)) if old == c => Some((c, !desc)),
                    _ => Some((c, false)),
                };
                self.sort_changed(before);
            }
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
            Action::CycleTheme => {
                let next = self.themes.next_name(&self.theme.name);
                self.set_theme(&next);
            }
            Action::Quit => {
                self.quit = true;
                out.push(Command::Quit);
            }
            Action::CancelWorkflow => self.ask_cancel(),
            Action::Demo(key) => self.demo_key(key, out),
            Action::Click { column, row } => self.click(column, row),
            _ => {}
        }
        false
    }

    fn prompt_action(&mut self, mut prompt: Prompt, action: Action, out: &mut Vec<Command>) {
        match action {
            Action::Input(c) => {
                if prompt.text.chars().count() < 200 && !c.is_control() {
                    prompt.text.push(c);
                }
            }
            Action::Backspace => {
                prompt.text.pop();
            }
            Action::Complete => {
                if prompt.kind == PromptKind::Command {
                    if let Some(done) = complete(&prompt.text) {
                        prompt.text = done;
                    }
                }
            }
            Action::Dismiss => {
                // The filter in force stays (Esc again clears it): the prompt only edits.
                self.prompt = None;
                return;
            }
            Action::Submit => {
                self.prompt = None;
                self.submit(prompt, out);
                return;
            }
            _ => return,
        }
        self.prompt = Some(prompt);
    }

    fn submit(&mut self, prompt: Prompt, out: &mut Vec<Command>) {
        let text = prompt.text.trim().to_owned();
        match prompt.kind {
            PromptKind::Filter => self.apply_filter(&text),
            PromptKind::Command => self.command(&text, out),
            PromptKind::RollOut => {
                if text.is_empty() {
                    self.say("roll-out cancelled: no build tag", Role::Warning);
                } else {
                    self.say(
                        format!("rolling out build {}…", super::text::clean(&text, 40)),
                        Role::Accent,
                    );
                    out.push(Command::Demo(DemoOp::RollOut(text)));
                }
            }
            PromptKind::Skew { authority } => match text.parse::<i64>() {
                Ok(ms) => {
                    self.say(format!("skewing {authority} by {ms} ms…"), Role::Accent);
                    out.push(Command::Demo(DemoOp::Skew(authority, ms)));
                }
                Err(_) => self.say(
                    format!(
                        "not a number of milliseconds: {}",
                        super::text::clean(&text, 30)
                    ),
                    Role::Error,
                ),
            },
        }
    }

    fn command(&mut self, text: &str, out: &mut Vec<Command>) {
        let mut words = text.split_whitespace();
        let Some(head) = words.next() else { return };
        let rest: Vec<&str> = words.collect();
        match head {
            "q" | "quit" | "q!" => {
                self.quit = true;
                out.push(Command::Quit);
            }
            "theme" => match rest.first() {
                Some(name) => self.set_theme(name),
                None => self.say(
                    format!("themes: {}", self.themes.names().join(", ")),
                    Role::Accent,
                ),
            },
            "help" => self.overlay = Some(Overlay::Help { scroll: 0 }),
            "timeline" | "gen" if !rest.is_empty() => self.open_timeline(rest.join(" ")),
            "workflow" | "wf" if !rest.is_empty() => self.open_instance(rest.join(" ")),
            word => match ViewId::parse(word) {
                Some(view) => {
                    if view == ViewId::Work {
                        if let Some(q) = rest.first().and_then(|w| parse_quick(w)) {
                            self.work_quick = q;
                            self.tables.entry(ViewId::Work).or_default().page = None;
                        }
                    }
                    if view == ViewId::Timeline && self.resource.is_none() {
                        self.say(
                            "pick a row and press t (or :timeline RESOURCE)",
                            Role::Warning,
                        );
                    }
                    self.switch(view);
                }
                None => self.say(
                    format!("unknown command :{}", super::text::clean(text, 40)),
                    Role::Error,
                ),
            },
        }
    }

    fn set_theme(&mut self, name: &str) {
        match self.themes.load(name) {
            Ok(theme) => {
                self.theme = if self.no_color {
                    theme.monochrome()
                } else {
                    theme
                };
                self.say(format!("theme: {name}"), Role::Accent);
            }
            Err(e) => self.say(e.to_string(), Role::Error),
        }
    }

    fn overlay_action(&mut self, overlay: Overlay, action: Action, out: &mut Vec<Command>) {
        match (overlay, action) {
            (Overlay::ConfirmCancel { .. }, action) => self.cancel_dialog_action(action, out),
            (Overlay::Describe(d), action) => self.describe_action(d, action, out),
            (Overlay::Help { scroll }, Action::Up | Action::ScrollUp) => {
                self.scroll_help(scroll.saturating_sub(1));
            }
            (Overlay::Help { scroll }, Action::Down | Action::ScrollDown) => {
                self.scroll_help(scroll.saturating_add(1));
            }
            (Overlay::Help { scroll }, Action::PageDown) => {
                self.scroll_help(scroll.saturating_add(10));
            }
            (Overlay::Help { scroll }, Action::PageUp) => {
                self.scroll_help(scroll.saturating_sub(10));
            }
            (_, Action::Dismiss | Action::Back | Action::ToggleHelp | Action::Quit) => {
                self.overlay = None;
            }
            _ => {}
        }
    }

    fn scroll_help(&mut self, to: u16) {
        if let Some(Overlay::Help { scroll }) = &mut self.overlay {
            *scroll = to.min(500);
        }
    }

    fn demo_key(&mut self, key: DemoKey, out: &mut Vec<Command>) {
        if !self.options.demo {
            self.say(
                "demo keys work only with an embedded cluster (leasehold demo)",
                Role::Warning,
            );
            return;
        }
        if self.options.read_only {
            self.say(
                "read-only: actions are disabled (started with --read-only)",
                Role::Error,
            );
            return;
        }
        let selected = (self.view == ViewId::Authorities)
            .then(|| self.selected_row().and_then(|r| r.authority.clone()))
            .flatten();
        let need = |app: &mut Self| {
            app.say(
                "select an authority first (2 for authorities)",
                Role::Warning,
            )
        };
        match key {
            DemoKey::Add => {
                self.say("adding an authority…", Role::Accent);
                out.push(Command::Demo(DemoOp::Add));
            }
            DemoKey::RollOut => {
                self.prompt = Some(Prompt {
                    kind: PromptKind::RollOut,
                    text: String::new(),
                })
            }
            DemoKey::Kill | DemoKey::Pause | DemoKey::Resume | DemoKey::Skew => {
                let Some(id) = selected else {
                    return need(self);
                };
                match key {
                    DemoKey::Kill => out.push(Command::Demo(DemoOp::Kill(id))),
                    DemoKey::Pause => out.push(Command::Demo(DemoOp::Pause(id))),
                    DemoKey::Resume => out.push(Command::Demo(DemoOp::Resume(id))),
                    _ => {
                        self.prompt = Some(Prompt {
                            kind: PromptKind::Skew { authority: id },
                            text: String::new(),
                        })
                    }
                }
            }
        }
    }

    fn enter(&mut self, out: &mut Vec<Command>) {
        if self.view == ViewId::WorkflowDetail {
            let sel = self.tree.selected.last().cloned();
            if let Some(id) = sel {
                if !self.tree.closed.remove(&id) {
                    self.tree.closed.insert(id);
                }
            }
            return;
        }
        let Some(row) = self.selected_row().cloned() else {
            return;
        };
        if let Some(instance) = row.instance.filter(|_| self.view == ViewId::Workflows) {
            self.open_instance(instance);
            return;
        }
        self.open_describe(out);
    }

    fn open_instance(&mut self, instance: String) {
        if self.instance.as_deref() != Some(&instance) {
            self.tree = TreeUi::default();
        }
        self.instance = Some(instance);
        self.switch(ViewId::WorkflowDetail);
    }

    fn open_timeline(&mut self, resource: String) {
        if self.resource.as_deref() != Some(&resource) {
            self.tables.entry(ViewId::Timeline).or_default().page = None;
        }
        self.resource = Some(resource);
        self.switch(ViewId::Timeline);
    }

    fn move_selection(&mut self, delta: i64) {
        if self.view == ViewId::WorkflowDetail {
            self.tree_move(delta);
            return;
        }
        let len = self.visible.len();
        if len == 0 {
            return;
        }
        let t = self.tables.entry(self.view).or_default();
        let cur = i64::try_from(t.selected).unwrap_or(0);
        let max = i64::try_from(len - 1).unwrap_or(0);
        t.selected = usize::try_from((cur + delta).clamp(0, max)).unwrap_or(0);
        self.remember_selection();
    }

    fn remember_selection(&mut self) {
        let key = self.selected_row().map(|r| r.key.clone());
        self.table_mut().selected_key = key;
    }

    fn page(&mut self, how: PageMove) {
        if !self.view.is_table() {
            return;
        }
        let limit = self.page_size();
        let (first, last) = self
            .data
            .as_ref()
            .map_or((None, None), |d| (d.first_key.clone(), d.last_key.clone()));
        let (more_before, more_after) = self
            .data
            .as_ref()
            .map_or((false, false), |d| (d.more_before, d.more_after));
        let next = match how {
            PageMove::Down if more_after => last.map(|k| PageRequest::after(k, limit)),
            PageMove::Up if self.view == ViewId::Timeline => Some(PageRequest::first(limit)),
            PageMove::Up if more_before => first.map(|k| PageRequest::before(k, limit)),
            PageMove::Home => Some(PageRequest::first(limit)),
            PageMove::End if self.view != ViewId::Timeline => Some(PageRequest::last(limit)),
            PageMove::Down => {
                self.say("last page", Role::Muted);
                None
            }
            PageMove::Up => {
                self.say("first page", Role::Muted);
                None
            }
            PageMove::End => None,
        };
        if let Some(page) = next {
            let fetched = self.data.as_ref().map_or(0, |d| d.fetched);
            let start = views::position::page_start(self, views::position::total(self), fetched);
            let offset = match how {
                PageMove::Down => start.map(|s| s + fetched),
                PageMove::Up => start.map(|s| s.saturating_sub(limit)),
                PageMove::Home | PageMove::End => None,
            };
            let t = self.table_mut();
            t.offset = offset;
            t.page = Some(page);
            t.selected = if how == PageMove::End { usize::MAX } else { 0 };
            t.selected_key = None;
        }
    }

    fn click(&mut self, column: u16, row: u16) {
        let (w, h) = self.size;
        let [_, tabs, body, _] = views::chrome::layout(ratatui::layout::Rect::new(0, 0, w, h));
        if row == tabs.y {
            if let Some(view) = views::chrome::tab_at(tabs, column) {
                self.switch(view);
            }
            return;
        }
        if !self.view.is_table() || row < body.y + 1 || row >= body.bottom().saturating_sub(1) {
            return;
        }
        let Some(data) = &self.data else { return };
        if row == body.y + 1 {
            if let Some(c) =
                views::table::column_at(body, data, self.table_ui().sort.map(|(c, _)| c), column)
            {
                let _ = self.normal_action(Action::SortBy(c), &mut Vec::new());
            }
            return;
        }
        let index = usize::from(row - body.y - 2);
        if index < self.visible.len() {
            self.table_mut().selected = index;
            self.remember_selection();
        }
    }

    // --- workflow history tree

    fn tree_paths(&self) -> Vec<Vec<String>> {
        match self.snapshot.as_deref().map(|s| &s.data) {
            Some(ViewData::Detail { history, .. }) => {
                workflow_detail::visible_paths(&workflow_detail::nodes(history), &self.tree.closed)
            }
            _ => Vec::new(),
        }
    }

    fn tree_move(&mut self, delta: i64) {
        let paths = self.tree_paths();
        if paths.is_empty() {
            return;
        }
        let cur = paths
            .iter()
            .position(|p| *p == self.tree.selected)
            .map_or(-1, |i| i64::try_from(i).unwrap_or(0));
        let max = i64::try_from(paths.len() - 1).unwrap_or(0);
        let next = usize::try_from((cur + delta).clamp(0, max)).unwrap_or(0);
        if let Some(p) = paths.get(next) {
            self.tree.selected.clone_from(p);
        }
    }

    fn tree_left(&mut self) {
        if let Some(id) = self.tree.selected.last().cloned() {
            if self.tree.selected.len() > 1 {
                self.tree.selected.pop();
            } else {
                self.tree.closed.insert(id);
            }
        }
    }

    fn tree_right(&mut self) {
        if let Some(id) = self.tree.selected.last() {
            self.tree.closed.remove(id);
        }
    }

    // --- snapshots

    /// Takes a new snapshot; returns true when a follow-up read is needed.
    fn on_snapshot(&mut self, snapshot: Arc<Snapshot>) -> bool {
        self.last_contact = Some(self.wall);
        self.error = None;
        self.now = self.now.max(snapshot.at);
        // Flash rows whose data changed since the last snapshot of the same page.
        let scope = Query {
            seq: 0,
            paused: false,
            ..snapshot.query.clone()
        };
        let same_scope = self.version_scope.as_ref() == Some(&scope);
        let at_read = TimeFmt::new(snapshot.at, self.options.zone);
        if let Some(data) = views::table(&snapshot, at_read) {
            let versions: HashMap<String, String> = data
                .rows
                .iter()
                .map(|r| (r.key.clone(), row_version(r)))
                .collect();
            if same_scope {
                for (key, v) in &versions {
                    if self.versions.get(key) != Some(v) {
                        self.flash.insert(key.clone(), self.wall + FLASH_MS);
                    }
                }
            } else {
                self.flash.clear();
            }
            self.versions = versions;
        }
        self.version_scope = Some(scope);
        self.sample(&snapshot);
        // A backwards page that ran into the start: show the first full page instead.
        let page = &snapshot.query.page;
        let short_backwards = page.backwards
            && page.after.is_some()
            && snapshot.query.seq == self.query.seq
            && { views::table(&snapshot, at_read).is_some_and(|d| d.fetched < page.limit) };
        let view = snapshot.query.view;
        self.snapshot = Some(snapshot);
        if self.view == ViewId::WorkflowDetail && self.tree.selected.is_empty() {
            if let Some(first) = self.tree_paths().first() {
                self.tree.selected.clone_from(first);
            }
        }
        if short_backwards {
            let limit = self.page_size();
            self.tables.entry(view).or_default().page = Some(PageRequest::first(limit));
        }
        self.rebuild();
        false
    }

    fn sample(&mut self, s: &Snapshot) {
        let sample = Sample {
            wall: self.wall,
            claims: s.overview.claims,
            refused: s.overview.writes_refused,
            accepted: s.overview.writes_accepted,
        };
        if self
            .samples
            .back()
            .is_some_and(|last| last.wall == sample.wall)
        {
            self.samples.pop_back();
        }
        self.samples.push_back(sample);
        while self.samples.len() > SAMPLES {
            self.samples.pop_front();
        }
    }

    /// Recomputes the table model, then the filtered / sorted order and the selection.
    fn rebuild(&mut self) {
        self.data = self
            .snapshot
            .as_deref()
            .filter(|s| s.query.view == self.view)
            .and_then(|s| views::table(s, self.time_fmt()));
        let ui = self.table_ui();
        let Some(data) = &self.data else {
            self.visible.clear();
            return;
        };
        // Only an id prefix on a view whose store read takes none narrows the page here.
        let prefix = store_filter::parse(self.view, &ui.filter)
            .ok()
            .and_then(|f| f.page_prefix().map(str::to_owned));
        let mut visible: Vec<usize> = (0..data.rows.len())
            .filter(|i| {
                data.rows
                    .get(*i)
                    .is_some_and(|r| prefix.as_deref().is_none_or(|p| r.key.starts_with(p)))
            })
            .collect();
        // A store order arrives sorted; only a sort the store cannot give is done here.
        if let Some((col, desc)) = ui.sort.filter(|_| self.store_order().is_none()) {
            let key = |i: &usize| {
                data.rows
                    .get(*i)
                    .and_then(|r| r.cells.get(col))
                    .map(|c| c.sort.clone())
                    .unwrap_or(SortKey::Num(i64::MIN))
            };
            visible.sort_by_key(key);
            if desc {
                visible.reverse();
            }
        }
        let selected = ui
            .selected_key
            .as_ref()
            .and_then(|k| {
                visible
                    .iter()
                    .position(|i| data.rows.get(*i).is_some_and(|r| &r.key == k))
            })
            .unwrap_or(ui.selected)
            .min(visible.len().saturating_sub(1));
        self.visible = visible;
        let t = self.table_mut();
        t.selected = selected;
        self.remember_selection();
    }

    // --- the query the reader should answer

    fn build_query(&self, seq: u64) -> Query {
        let limit = self.page_size();
        let page = match self.view {
            ViewId::Overview | ViewId::WorkflowDetail => PageRequest::first(limit),
            _ => {
                let mut p = self
                    .tables
                    .get(&self.view)
                    .and_then(|t| t.page.clone())
                    .unwrap_or_else(|| PageRequest::first(limit));
                p.limit = limit;
                p
            }
        };
        Query {
            seq,
            view: self.view,
            page,
            work: if self.view == ViewId::Work {
                self.work_quick
            } else {
                WorkQuick::All
            },
            instance: if self.view == ViewId::WorkflowDetail {
                self.instance.clone()
            } else {
                None
            },
            resource: if self.view == ViewId::Timeline {
                self.resource.clone()
            } else {
                None
            },
            filter: self.store_filter(),
            order: self.store_order(),
            paused: self.paused,
        }
    }

    /// The order the store pages the current view in, when the sort asks for one it can
    /// give through an index (work ascending by state or kind, workflows by status). Any
    /// other sort orders only the rows of the page.
    #[must_use]
    pub fn store_order(&self) -> Option<StoreOrder> {
        let (col, desc) = self.tables.get(&self.view)?.sort?;
        let columns = match self.view {
            ViewId::Work => views::work::COLUMNS,
            ViewId::Workflows => views::workflows::COLUMNS,
            _ => return None,
        };
        StoreOrder::for_sort(self.view, columns.get(col)?.name, desc)
    }

    /// After a sort change: a new store order pages from its first page.
    fn sort_changed(&mut self, before: Option<StoreOrder>) {
        if self.store_order() != before {
            let t = self.table_mut();
            t.page = None;
            t.offset = None;
            t.selected = 0;
            t.selected_key = None;
        }
        self.rebuild();
    }

    /// The current view's `/` filter when the store applies it (work, workflows).
    fn store_filter(&self) -> Option<crate::ops::filter::Filter> {
        let text = self.tables.get(&self.view).map(|t| t.filter.as_str())?;
        store_filter::parse(self.view, text)
            .ok()
            .filter(|f| f.subject.prefix_in_store() && !f.is_empty())
    }

    /// Applies a submitted `/` filter (from the first page), or refuses it on the status
    /// line and keeps the one in force: the filter is parsed by the same grammar as
    /// `inspect --filter`. An empty text clears it.
    fn apply_filter(&mut self, text: &str) {
        match store_filter::parse(self.view, text) {
            Ok(_) => {
                let t = self.table_mut();
                t.filter = text.to_owned();
                t.page = None;
                t.selected = 0;
                t.selected_key = None;
                self.rebuild();
            }
            Err(e) => self.say(e.to_string(), Role::Error),
        }
    }

    fn sync_query(&mut self, force: bool) -> Option<Query> {
        let candidate = self.build_query(self.query.seq);
        if candidate == self.query && !force {
            return None;
        }
        // Pausing or resuming alone does not need a new read, only a new instruction.
        let only_pause = Query {
            paused: self.query.paused,
            ..candidate.clone()
        } == self.query;
        let seq = if only_pause && !force {
            self.query.seq
        } else {
            self.query.seq + 1
        };
        self.query = Query { seq, ..candidate };
        Some(self.query.clone())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageMove {
    Up,
    Down,
    Home,
    End,
}

fn row_version(row: &views::Row) -> String {
    row.version.clone()
}

fn parse_quick(word: &str) -> Option<WorkQuick> {
    [
        WorkQuick::All,
        WorkQuick::Pending,
        WorkQuick::Claimed,
        WorkQuick::Retry,
        WorkQuick::Failed,
        WorkQuick::Incompatible,
    ]
    .into_iter()
    .find(|q| q.name().starts_with(&word.to_ascii_lowercase()))
}

/// Every `:` command word, for completion.
#[must_use]
pub fn command_words() -> Vec<&'static str> {
    let mut words: Vec<&'static str> = ViewId::MAIN.iter().map(|v| v.name()).collect();
    words.extend(["workflow", "theme", "help", "quit"]);
    words
}

/// Completions of a partial `:` command.
#[must_use]
pub fn completions(text: &str) -> Vec<&'static str> {
    if text.contains(' ') {
        return Vec::new();
    }
    command_words()
        .into_iter()
        .filter(|w| w.starts_with(text))
        .collect()
}

/// The longest common completion of `text`, if it adds anything.
fn complete(text: &str) -> Option<String> {
    let options = completions(text);
    let first = options.first()?;
    if options.len() == 1 {
        let space = if matches!(*first, "timeline" | "workflow" | "theme" | "work") {
            " "
        } else {
            ""
        };
        return Some(format!("{first}{space}"));
    }
    let mut prefix: String = (*first).to_owned();
    for o in &options[1..] {
        let common = prefix
            .chars()
            .zip(o.chars())
            .take_while(|(a, b)| a == b)
            .count();
        prefix = prefix.chars().take(common).collect();
    }
    (prefix.len() > text.len()).then_some(prefix)
}
