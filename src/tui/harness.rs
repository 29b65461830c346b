//! Drives the dashboard synchronously, without a terminal: the app, the store and the
//! commands the app asks for, executed in line ([`super::commands::execute`], as the event
//! loop executes them). Tests, screenshot generation and the
//! dashboard benchmark use it; the real event loop does the same work asynchronously.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;

use super::action::Action;
use super::app::{App, AppOptions, Command};
use super::commands::execute;
use super::describe;
use super::snapshot;
use super::theme::{Theme, ThemeSet};
use super::tour_driver::TourDriver;
use super::views;
use crate::clock::Millis;
use crate::cluster::control::ClusterControl;
use crate::store::Store;

/// A dashboard driven in line, over one store or several (`:ctx` switches; commands go
/// to the store on screen, as the event loop sends them).
pub struct Harness {
    pub app: App,
    /// The first store, and the others in order.
    first: Store,
    others: Vec<Store>,
    /// The query each store's reader answers last (a reader keeps re-reading it).
    last_query: Vec<snapshot::Query>,
    /// What each store's reader keeps between reads.
    caches: Vec<snapshot::Cache>,
    cluster: Option<Arc<dyn ClusterControl>>,
    wall: Millis,
    /// What the app wrote to the terminal itself (OSC 52 clipboard sequences).
    terminal_out: Vec<u8>,
    /// Whether the app has the mouse captured, as the terminal would have it.
    mouse: bool,
    tour: TourDriver,
}

impl Harness {
    /// A dashboard over `store` at `width` × `height`, with its first snapshot read.
    #[must_use]
    pub fn new(
        store: Store,
        options: AppOptions,
        theme: Theme,
        cluster: Option<Arc<dyn ClusterControl>>,
        width: u16,
        height: u16,
    ) -> Self {
        Self::attached(
            (store.describe(), store),
            Vec::new(),
            options,
            theme,
            cluster,
            (width, height),
        )
    }

    /// A dashboard over named stores, `first` on screen, every store's first snapshot
    /// read (so a switch shows one at once).
    #[must_use]
    pub fn attached(
        first: (String, Store),
        others: Vec<(String, Store)>,
        options: AppOptions,
        theme: Theme,
        cluster: Option<Arc<dyn ClusterControl>>,
        (width, height): (u16, u16),
    ) -> Self {
        let mut app = App::new(options, theme, ThemeSet::new(None));
        if !others.is_empty() {
            let names = std::iter::once(&first)
                .chain(&others)
                .map(|(n, _)| (n.clone(), n.clone()))
                .collect();
            app = app.with_stores(names);
        }
        let last_query = vec![app.query().clone(); others.len() + 1];
        let caches = vec![snapshot::Cache::default(); others.len() + 1];
        let mut h = Self {
            app,
            first: first.1,
            others: others.into_iter().map(|(_, s)| s).collect(),
            last_query,
            caches,
            cluster,
            wall: 0,
            terminal_out: Vec::new(),
            mouse: true,
            tour: TourDriver::default(),
        };
        h.dispatch(Action::Tick {
            now: h.store().now(),
            wall: 0,
        });
        h.dispatch(Action::Resize { width, height });
        h.refresh();
        for i in 1..=h.others.len() {
            h.refresh_store(i);
        }
        h
    }

    /// Store `i` of the attached ones (0 is the first).
    fn nth(&self, i: usize) -> Option<&Store> {
        match i {
            0 => Some(&self.first),
            i => self.others.get(i - 1),
        }
    }

    /// The store on screen.
    #[must_use]
    pub fn store(&self) -> &Store {
        self.nth(self.app.store_index()).unwrap_or(&self.first)
    }

    /// Re-reads store `i`'s last query, as its reader does when that store changed: a
    /// snapshot (or failure) of the store on screen, or a background read of another.
    pub fn refresh_store(&mut self, i: usize) {
        if i == self.app.store_index() {
            self.refresh();
            return;
        }
        let Some(query) = self.last_query.get(i).cloned() else {
            return;
        };
        let read = self.read(i, &query);
        self.dispatch(Action::Background { store: i, read });
    }

    /// Reads `query` from store `i` as its reader would, with that reader's cache.
    fn read(&mut self, i: usize, query: &snapshot::Query) -> snapshot::Published {
        let store = match i {
            0 => &self.first,
            i => self.others.get(i - 1).unwrap_or(&self.first),
        };
        let mut fresh = snapshot::Cache::default();
        let cache = self.caches.get_mut(i).unwrap_or(&mut fresh);
        match snapshot::read_cached(store, query, self.cluster.as_deref(), cache) {
            Ok(s) => snapshot::Published::Snapshot(Arc::new(s)),
            Err(e) => snapshot::Published::Error {
                message: e.to_string(),
                retry_in_ms: snapshot::backoff_ms(250, 1),
                failures: 1,
            },
        }
    }

    /// The bytes the app asked to write to the terminal (clipboard sequences).
    #[must_use]
    pub fn terminal_output(&self) -> &[u8] {
        &self.terminal_out
    }

    /// Whether the terminal would have the mouse captured now.
    #[must_use]
    pub fn mouse_captured(&self) -> bool {
        self.mouse
    }

    /// Applies an action and everything it leads to.
    pub fn dispatch(&mut self, action: Action) {
        let commands = self.app.update(action);
        self.run(commands);
    }

    fn run(&mut self, commands: Vec<Command>) {
        for command in commands {
            let next = match &command {
                Command::Copy(text) => {
                    self.terminal_out
                        .extend_from_slice(describe::osc52(text).as_bytes());
                    None
                }
                Command::Mouse(on) => {
                    self.mouse = *on;
                    None
                }
                Command::Tour(t) => Some(self.tour.command(*t, self.store())),
                Command::Query(q) => {
                    let q: &snapshot::Query = q;
                    if let Some(last) = self.last_query.get_mut(q.store) {
                        last.clone_from(q);
                    }
                    self.read(q.store, q).into_action()
                }
                other => execute(
                    self.store(),
                    self.cluster.as_deref(),
                    &self.app.options().actor.clone(),
                    other,
                ),
            };
            if let Some(action) = next {
                self.dispatch(action);
            }
        }
    }

    /// One tick of the guided tour, as the event loop does twice a second.
    pub fn tour_tick(&mut self) {
        let action = self
            .cluster
            .as_deref()
            .and_then(|c| self.tour.tick(c, self.store()));
        if let Some(action) = action {
            self.dispatch(action);
        }
    }

    /// Runs the demo checker, as the event loop does every few seconds.
    pub fn check(&mut self) {
        if let Some(verdict) = super::checker_badge::run(self.store()) {
            self.dispatch(Action::Checked(verdict));
        }
    }

    /// Re-reads the current query, as the reader does when the store changed.
    pub fn refresh(&mut self) {
        let q = self.app.query().clone();
        self.run(vec![Command::Query(Box::new(q))]);
    }

    /// Lets `ms` of dashboard time pass (flashes fade, badges age) and ticks.
    pub fn advance(&mut self, ms: Millis) {
        self.wall += ms;
        self.dispatch(Action::Tick {
            now: self.store().now(),
            wall: self.wall,
        });
    }

    /// Presses a key (through the key map, as the terminal would).
    pub fn key(&mut self, code: KeyCode) {
        let commands = self
            .app
            .handle_key(&KeyEvent::new(code, KeyModifiers::NONE));
        self.run(commands);
    }

    /// Presses a character key.
    pub fn press(&mut self, c: char) {
        self.key(KeyCode::Char(c));
    }

    /// Types a string character by character.
    pub fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.press(c);
        }
    }

    /// Types a `:` command and submits it.
    pub fn command(&mut self, text: &str) {
        self.press(':');
        self.type_text(text);
        self.key(KeyCode::Enter);
    }

    /// Draws the current frame at the app's size.
    #[must_use]
    pub fn render(&self) -> Buffer {
        let (w, h) = self.app.size();
        render_app(&self.app, w, h)
    }
}

/// Draws `app` into a fresh buffer of `width` × `height`.
#[must_use]
pub fn render_app(app: &App, width: u16, height: u16) -> Buffer {
    let backend = TestBackend::new(width, height);
    match Terminal::new(backend) {
        Ok(mut terminal) => {
            let _ = terminal.draw(|f| views::render(f, app));
            terminal.backend().buffer().clone()
        }
        Err(_) => Buffer::empty(ratatui::layout::Rect::new(0, 0, width, height)),
    }
}

/// The buffer as plain text lines (for assertions and insta snapshots).
#[must_use]
pub fn buffer_text(buffer: &Buffer) -> String {
    let area = buffer.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut line = String::new();
        for x in area.left()..area.right() {
            if let Some(cell) = buffer.cell((x, y)) {
                line.push_str(cell.symbol());
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
