//! The terminal side: set the terminal up (and always put it back), then one
//! `tokio::select!` loop over terminal input, the readers' snapshots (one reader per
//! attached store, each refreshing on its own), a tick for countdowns and the results of
//! operator commands. Input is drained before drawing, and a frame is drawn only when
//! something changed.

use std::io::{self, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{
    DisableMouseCapture, EnableMouseCapture, Event, EventStream, KeyEventKind, MouseButton,
    MouseEventKind,
};
use crossterm::execute;
use futures_util::{FutureExt, StreamExt};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::{mpsc, watch};

use super::action::Action;
use super::app::{App, AppOptions, Command};
use super::record::Recorder;
use super::snapshot::{Published, Query, run_reader};
use super::stores::Attached;
use super::theme::ThemeSet;
use super::tour_driver::{TourCommand, TourDriver};
use super::writer::execute_with;
use super::{TuiOptions, checker_badge, describe, views};
use crate::error::{Error, Result};
use crate::foundation::timefmt::Zone;
use crate::store::Store;

/// Restores the terminal when dropped (normal exit, error, or unwinding panic).
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = execute!(io::stdout(), DisableMouseCapture);
        ratatui::restore();
    }
}

fn terminal_error(e: &io::Error) -> Error {
    Error::Local(format!("terminal: {e}"))
}

/// Runs the dashboard over one store until the operator quits; operator actions go
/// through `options.writer`. See [`run_attached`].
///
/// # Errors
/// As [`run_attached`].
pub async fn run(store: Store, options: TuiOptions) -> Result<()> {
    let one = Attached {
        name: store.describe(),
        given: store.describe(),
        writer: options.writer.clone(),
        store,
    };
    run_attached(vec![one], options).await
}

/// Runs the dashboard over every attached store (the first on screen, `:ctx NAME`
/// switches) until the operator quits. The theme is loaded (and an unknown name refused)
/// before the terminal is touched.
///
/// # Errors
/// `INVALID` for an unknown or broken theme or no store; `LOCAL_FAILURE` when the
/// terminal cannot be used. Store failures while running are shown, retried, and not
/// returned.
pub async fn run_attached(stores: Vec<Attached>, options: TuiOptions) -> Result<()> {
    if stores.is_empty() {
        return Err(Error::Invalid("the dashboard needs a store".into()));
    }
    let themes = ThemeSet::new(ThemeSet::default_user_dir());
    let mut theme = themes.load(&options.theme)?;
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        theme = theme.monochrome();
    }
    let mut app = App::new(
        AppOptions {
            read_only: options.read_only,
            demo: options.demo.is_some(),
            actor: options.actor.clone(),
            refresh_ms: options.refresh_ms,
            zone: Zone::Local,
        },
        theme,
        themes,
    );
    if stores.len() > 1 {
        app = app.with_stores(
            stores
                .iter()
                .map(|a| (a.name.clone(), a.given.clone()))
                .collect(),
        );
    }
    let terminal = ratatui::try_init().map_err(|e| terminal_error(&e))?;
    let guard = TerminalGuard;
    // ratatui's hook restores the terminal; release the mouse first, then chain.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = execute!(io::stdout(), DisableMouseCapture);
        previous(info);
    }));
    execute!(io::stdout(), EnableMouseCapture).map_err(|e| terminal_error(&e))?;
    let result = match options.record.clone() {
        None => event_loop(terminal, app, stores, options).await,
        Some(path) => match recording(&path) {
            Ok(recorded) => event_loop(recorded, app, stores, options).await,
            Err(e) => Err(Error::Invalid(format!(
                "cannot record to {}: {e}",
                path.display()
            ))),
        },
    };
    drop(guard);
    result
}

/// The dashboard's terminal while it records (`--record`).
type Recording = Terminal<CrosstermBackend<Recorder<io::Stdout, io::BufWriter<std::fs::File>>>>;

/// A terminal whose output is also recorded into `path` as an asciicast (v2).
fn recording(path: &std::path::Path) -> io::Result<Recording> {
    let (width, height) = crossterm::terminal::size()?;
    let file = io::BufWriter::new(std::fs::File::create(path)?);
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut terminal = Terminal::new(CrosstermBackend::new(Recorder::new(
        io::stdout(),
        file,
        width,
        height,
        unix,
    )?))?;
    // The recording starts from a blank screen, as the replay will.
    terminal.clear()?;
    Ok(terminal)
}

/// [`run`] on a fresh tokio runtime, for callers without one.
///
/// # Errors
/// As [`run`]; `LOCAL_FAILURE` when no runtime can be built.
pub fn run_blocking(store: Store, options: TuiOptions) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Local(format!("tokio runtime: {e}")))?;
    runtime.block_on(run(store, options))
}

/// Maps a terminal event to an action (keys through the key map, in the app's mode).
fn event_action(app: &mut App, event: Event) -> Vec<Command> {
    match event {
        Event::Key(key) if key.kind == KeyEventKind::Press => app.handle_key(&key),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollUp => app.update(Action::ScrollUp),
            MouseEventKind::ScrollDown => app.update(Action::ScrollDown),
            MouseEventKind::Down(MouseButton::Left) => app.update(Action::Click {
                column: m.column,
                row: m.row,
            }),
            _ => Vec::new(),
        },
        Event::Resize(width, height) => app.update(Action::Resize { width, height }),
        _ => Vec::new(),
    }
}

/// Writes a terminal-side command through the backend, between frames, so it is never
/// interleaved with drawing: the clipboard's OSC 52 sequence, or mouse capture on / off.
fn terminal_command<W: Write>(
    terminal: &mut Terminal<CrosstermBackend<W>>,
    command: &Command,
) -> io::Result<()> {
    let backend = terminal.backend_mut();
    match command {
        Command::Copy(text) => {
            backend.write_all(describe::osc52(text).as_bytes())?;
            backend.flush()
        }
        Command::Mouse(true) => execute!(backend, EnableMouseCapture),
        Command::Mouse(false) => execute!(backend, DisableMouseCapture),
        _ => Ok(()),
    }
}

/// One reader per attached store, each publishing into its own watch channel, forwarded
/// into one stream tagged with the store's index.
struct Readers {
    queries: Vec<watch::Sender<Query>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    published: mpsc::UnboundedReceiver<(usize, Published)>,
}

impl Readers {
    fn spawn(stores: &[Attached], first: &Query, options: &TuiOptions) -> Self {
        let (tx, published) = mpsc::unbounded_channel();
        let mut queries = Vec::with_capacity(stores.len());
        let mut tasks = Vec::with_capacity(stores.len() * 2);
        for (i, attached) in stores.iter().enumerate() {
            let (query_tx, query_rx) = watch::channel(Query {
                store: i,
                ..first.clone()
            });
            let (snap_tx, mut snap_rx) = watch::channel(Published::Nothing);
            tasks.push(tokio::spawn(run_reader(
                attached.store.clone(),
                options.demo.clone(),
                query_rx,
                snap_tx,
                options.refresh_ms,
            )));
            let tx = tx.clone();
            tasks.push(tokio::spawn(async move {
                while snap_rx.changed().await.is_ok() {
                    let published = snap_rx.borrow_and_update().clone();
                    if tx.send((i, published)).is_err() {
                        return;
                    }
                }
            }));
            queries.push(query_tx);
        }
        Self {
            queries,
            tasks,
            published,
        }
    }

    /// Hands `query` to the reader of the store it is for.
    fn ask(&self, query: Query) {
        if let Some(tx) = self.queries.get(query.store) {
            let _ = tx.send(query);
        }
    }

    fn stop(&self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// What a reader's report means to the app: for the store on screen the snapshot (or
/// failure) itself, for any other a background read.
fn reported(app: &App, store: usize, published: Published) -> Option<Action> {
    if store != app.store_index() {
        return Some(Action::Background {
            store,
            read: published,
        });
    }
    published.into_action()
}

#[expect(
    clippy::too_many_lines,
    reason = "the event loop's select, one arm per source"
)]
async fn event_loop<W: Write>(
    mut terminal: Terminal<CrosstermBackend<W>>,
    mut app: App,
    stores: Vec<Attached>,
    options: TuiOptions,
) -> Result<()> {
    let started = Instant::now();
    let wall = move || i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    // The store on screen (the app says which); `stores` is never empty.
    let current =
        |app: &App| -> &Attached { stores.get(app.store_index()).unwrap_or_else(|| &stores[0]) };
    let size = terminal.size().map_err(|e| terminal_error(&e))?;
    let mut pending = app.update(Action::Resize {
        width: size.width,
        height: size.height,
    });
    pending.extend(app.update(Action::Tick {
        now: current(&app).store.now(),
        wall: wall(),
    }));

    let mut readers = Readers::spawn(&stores, app.query(), &options);
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Action>();
    let mut events = EventStream::new();
    let tour = Arc::new(TourDriver::default());
    if let Some(manual) = options.tour {
        pending.push(Command::Tour(TourCommand::Start { manual }));
    }
    let mut tour_tick = tokio::time::interval(Duration::from_millis(500));
    tour_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut check_tick = tokio::time::interval(Duration::from_millis(checker_badge::EVERY_MS));
    check_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut dirty = true;

    let outcome = loop {
        // Carry out what the app asked for, on the store on screen.
        let mut broken = None;
        for command in pending.drain(..) {
            let here = current(&app);
            match command {
                Command::Quit => {}
                Command::Query(q) => readers.ask(*q),
                Command::Tour(t) => {
                    let (driver, store, tx) = (tour.clone(), here.store.clone(), done_tx.clone());
                    tokio::task::spawn_blocking(move || {
                        let _ = tx.send(driver.command(t, &store));
                    });
                }
                Command::Copy(_) | Command::Mouse(_) => {
                    if let Err(e) = terminal_command(&mut terminal, &command) {
                        broken = Some(terminal_error(&e));
                    }
                }
                other => {
                    let (store, writer, cluster, actor, tx) = (
                        here.store.clone(),
                        here.writer.clone(),
                        options.demo.clone(),
                        app.options().actor.clone(),
                        done_tx.clone(),
                    );
                    tokio::task::spawn_blocking(move || {
                        if let Some(action) = execute_with(
                            &store,
                            writer.as_ref(),
                            cluster.as_deref(),
                            &actor,
                            &other,
                        ) {
                            let _ = tx.send(action);
                        }
                    });
                }
            }
        }
        if let Some(e) = broken {
            break Err(e);
        }
        if app.should_quit() {
            break Ok(());
        }
        if dirty {
            if let Err(e) = terminal.draw(|f| views::render(f, &app)) {
                break Err(terminal_error(&e));
            }
            dirty = false;
        }
        tokio::select! {
            event = events.next() => match event {
                Some(Ok(event)) => {
                    pending.extend(event_action(&mut app, event));
                    // Drain whatever input is already waiting before drawing again.
                    while let Some(Some(Ok(event))) = events.next().now_or_never() {
                        pending.extend(event_action(&mut app, event));
                    }
                    dirty = true;
                }
                Some(Err(e)) => break Err(terminal_error(&e)),
                None => break Ok(()),
            },
            report = readers.published.recv() => {
                let Some((store, published)) = report else {
                    break Err(Error::Unavailable("the store reader stopped".into()));
                };
                let Some(action) = reported(&app, store, published) else { continue };
                let badges = app.store_badges();
                dirty |= !matches!(action, Action::Fresh | Action::Background { .. })
                    || app.stale_for().is_some()
                    || app.store_error().is_some();
                pending.extend(app.update(action));
                dirty |= app.store_badges() != badges;
            },
            _ = tour_tick.tick(), if tour.active() => {
                if let Some(cluster) = options.demo.clone() {
                    let (driver, store, tx) = (tour.clone(), current(&app).store.clone(), done_tx.clone());
                    tokio::task::spawn_blocking(move || {
                        if let Some(action) = driver.tick(cluster.as_ref(), &store) {
                            let _ = tx.send(action);
                        }
                    });
                }
            },
            _ = check_tick.tick(), if options.demo.is_some() => {
                let (store, tx) = (current(&app).store.clone(), done_tx.clone());
                tokio::task::spawn_blocking(move || {
                    if let Some(verdict) = checker_badge::run(&store) {
                        let _ = tx.send(Action::Checked(verdict));
                    }
                });
            },
            _ = tick.tick() => {
                pending.extend(app.update(Action::Tick { now: current(&app).store.now(), wall: wall() }));
                dirty = true;
            },
            Some(action) = done_rx.recv() => {
                pending.extend(app.update(action));
                dirty = true;
            },
        }
    };
    readers.stop();
    outcome
}
