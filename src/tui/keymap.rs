//! The key map: one table from keys to [`Action`]s. [`resolve`] is what the event loop
//! calls, and the help overlay is generated from [`bindings`] — so the help can never
//! disagree with the keys.

use std::sync::LazyLock;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::{Action, DemoKey, ViewId, WorkQuick};
use super::app::AuthorityVerb;
use super::replay::Seek;
use crate::rules::handler::HandlerControl;
use crate::rules::schedule::Control;
use crate::rules::triage::Verb;

/// Where the keyboard focus is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Browsing a view.
    Normal(ViewId),
    /// Typing in the `:` or `/` prompt (or a demo prompt).
    Prompt,
    /// A confirmation dialog is open.
    Dialog,
    /// A dialog's text field (the cancel reason) has the keyboard.
    DialogText,
    /// The help overlay or a describe pane is open.
    Overlay,
}

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Global,
    /// Every paged table view.
    Table,
    View(ViewId),
}

/// What a binding is for; operator and demo bindings are hidden when unavailable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Views,
    Navigation,
    Live,
    Operator,
    Demo,
}

impl Group {
    #[must_use]
    pub fn title(self) -> &'static str {
        match self {
            Self::Views => "Views",
            Self::Navigation => "Navigation",
            Self::Live => "Live data & display",
            Self::Operator => "Operator actions",
            Self::Demo => "Demo cluster (faults you can drive by hand)",
        }
    }
}

/// One key (code + modifiers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl Key {
    const fn plain(code: KeyCode) -> Self {
        Self {
            code,
            mods: KeyModifiers::NONE,
        }
    }
    const fn ch(c: char) -> Self {
        Self::plain(KeyCode::Char(c))
    }
    const fn ctrl(c: char) -> Self {
        Self {
            code: KeyCode::Char(c),
            mods: KeyModifiers::CONTROL,
        }
    }

    /// How the key is written in help and hints.
    #[must_use]
    pub fn label(self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "space".into(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Enter => "Enter".into(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            KeyCode::Tab => "Tab".into(),
            KeyCode::F(n) => format!("F{n}"),
            other => format!("{other:?}"),
        };
        if self.mods.contains(KeyModifiers::CONTROL) {
            format!("ctrl-{base}")
        } else {
            base
        }
    }

    fn matches(self, event: &KeyEvent) -> bool {
        // Some terminals report uppercase letters with SHIFT, some without: the character
        // decides, SHIFT is ignored.
        let mods = event.modifiers - KeyModifiers::SHIFT;
        event.code == self.code && mods == self.mods - KeyModifiers::SHIFT
    }
}

/// One row of the key map.
#[derive(Debug, Clone)]
pub struct Binding {
    pub keys: Vec<Key>,
    pub action: Action,
    pub scope: Scope,
    pub group: Group,
    pub help: &'static str,
}

impl Binding {
    /// `j/↓` style label of every key.
    #[must_use]
    pub fn label(&self) -> String {
        self.keys
            .iter()
            .map(|k| k.label())
            .collect::<Vec<_>>()
            .join("/")
    }
}

fn bind(keys: &[Key], action: Action, scope: Scope, group: Group, help: &'static str) -> Binding {
    Binding {
        keys: keys.to_vec(),
        action,
        scope,
        group,
        help,
    }
}

static BINDINGS: LazyLock<Vec<Binding>> = LazyLock::new(|| {
    use Group::{Demo, Live, Navigation, Operator, Views};
    use Scope::{Global, Table, View};
    let mut b = vec![bind(
        &[Key::ch(':')],
        Action::OpenCommand,
        Global,
        Views,
        "command: switch view (:work, :timeline RES, :replay FROM TO, :ctx STORE, :theme NAME, :q), Tab completes",
    )];
    for view in ViewId::MAIN
        .into_iter()
        .chain([ViewId::Triage, ViewId::Replay])
    {
        if let Some(d) = view.digit() {
            b.push(bind(
                &[Key::ch(d)],
                Action::SwitchView(view),
                Global,
                Views,
                view_help(view),
            ));
        }
    }
    b.extend([
        bind(
            &[Key::plain(KeyCode::Enter)],
            Action::Enter,
            Global,
            Navigation,
            "open: workflow detail, else describe the row; toggle a history node",
        ),
        bind(
            &[Key::ch('d')],
            Action::Describe,
            Global,
            Navigation,
            "describe the selected row: every field, JSON pretty-printed, scrollable",
        ),
        bind(
            &[Key::ch('y')],
            Action::CopyId,
            Global,
            Navigation,
            "copy the selected row's id to the clipboard (OSC 52)",
        ),
        bind(
            &[Key::plain(KeyCode::Esc)],
            Action::Back,
            Global,
            Navigation,
            "back: close, clear the filter, previous view",
        ),
        bind(
            &[Key::ch('k'), Key::plain(KeyCode::Up)],
            Action::Up,
            Global,
            Navigation,
            "up",
        ),
        bind(
            &[Key::ch('j'), Key::plain(KeyCode::Down)],
            Action::Down,
            Global,
            Navigation,
            "down",
        ),
        bind(
            &[Key::ch('h'), Key::plain(KeyCode::Left)],
            Action::Left,
            View(ViewId::WorkflowDetail),
            Navigation,
            "collapse a history node",
        ),
        bind(
            &[Key::ch('l'), Key::plain(KeyCode::Right)],
            Action::Right,
            View(ViewId::WorkflowDetail),
            Navigation,
            "expand a history node",
        ),
        bind(
            &[Key::plain(KeyCode::PageDown), Key::ctrl('f')],
            Action::PageDown,
            Table,
            Navigation,
            "next page (read from the store)",
        ),
        bind(
            &[Key::plain(KeyCode::PageUp), Key::ctrl('b')],
            Action::PageUp,
            Table,
            Navigation,
            "previous page",
        ),
        bind(
            &[Key::plain(KeyCode::Home), Key::ch('g')],
            Action::Home,
            Table,
            Navigation,
            "first page",
        ),
        bind(
            &[Key::plain(KeyCode::End), Key::ch('G')],
            Action::End,
            Table,
            Navigation,
            "last page",
        ),
        bind(
            &[Key::ch('/')],
            Action::OpenFilter,
            Table,
            Navigation,
            "filter (the store, every page): field:value (state:failed) or an id prefix",
        ),
        bind(
            &[Key::ch('s')],
            Action::CycleSort,
            Table,
            Navigation,
            "sort by the next column (within the page)",
        ),
        bind(
            &[Key::ch('z')],
            Action::ReverseSort,
            Table,
            Navigation,
            "reverse the sort",
        ),
        bind(
            &[Key::ch('t')],
            Action::Timeline,
            Table,
            Navigation,
            "generation timeline of the selected resource",
        ),
        bind(
            &[Key::ch('[')],
            Action::Replay(Seek::PreviousStep),
            View(ViewId::Replay),
            Navigation,
            "replay: one step back",
        ),
        bind(
            &[Key::ch(']')],
            Action::Replay(Seek::NextStep),
            View(ViewId::Replay),
            Navigation,
            "replay: one step forward",
        ),
        bind(
            &[Key::ch('{')],
            Action::Replay(Seek::PreviousFailover),
            View(ViewId::Replay),
            Navigation,
            "replay: the previous failover",
        ),
        bind(
            &[Key::ch('}')],
            Action::Replay(Seek::NextFailover),
            View(ViewId::Replay),
            Navigation,
            "replay: the next failover",
        ),
        bind(
            &[Key::ch('a')],
            Action::QuickFilter(WorkQuick::All),
            View(ViewId::Work),
            Navigation,
            "work: all states",
        ),
        bind(
            &[Key::ch('p')],
            Action::QuickFilter(WorkQuick::Pending),
            View(ViewId::Work),
            Navigation,
            "work: pending only",
        ),
        bind(
            &[Key::ch('c')],
            Action::QuickFilter(WorkQuick::Claimed),
            View(ViewId::Work),
            Navigation,
            "work: claimed only",
        ),
        bind(
            &[Key::ch('r')],
            Action::QuickFilter(WorkQuick::Retry),
            View(ViewId::Work),
            Navigation,
            "work: retry only",
        ),
        bind(
            &[Key::ch('f')],
            Action::QuickFilter(WorkQuick::Failed),
            View(ViewId::Work),
            Navigation,
            "work: failed only",
        ),
        bind(
            &[Key::ch('x')],
            Action::QuickFilter(WorkQuick::Incompatible),
            View(ViewId::Work),
            Navigation,
            "work: incompatible (no live authority can run it)",
        ),
        bind(
            &[Key::ch(' ')],
            Action::TogglePause,
            Global,
            Live,
            "pause / resume live refresh",
        ),
        bind(
            &[Key::ch('i')],
            Action::ToggleStats,
            Global,
            Live,
            "show query count and latency",
        ),
        bind(
            &[Key::ch('m')],
            Action::ToggleMouse,
            Global,
            Live,
            "release / capture the mouse (released: select text with the terminal)",
        ),
        bind(
            &[Key::ctrl('t')],
            Action::CycleTheme,
            Global,
            Live,
            "next theme",
        ),
        bind(
            &[Key::ch('?')],
            Action::ToggleHelp,
            Global,
            Live,
            "this help",
        ),
        bind(
            &[Key::ch('q'), Key::ctrl('c')],
            Action::Quit,
            Global,
            Live,
            "quit",
        ),
        bind(
            &[Key::ch('C')],
            Action::CancelWorkflow,
            Global,
            Operator,
            "cancel the selected workflow (asks first, Tab: a reason; not a rollback)",
        ),
        bind(
            &[Key::ch('L')],
            Action::ActOnAuthority(AuthorityVerb::Release),
            View(ViewId::Authorities),
            Operator,
            "release the selected gone authority's claims under new generations (asks first)",
        ),
        bind(
            &[Key::ch('O')],
            Action::ActOnAuthority(AuthorityVerb::Forget),
            View(ViewId::Authorities),
            Operator,
            "forget the selected gone authority, once it holds nothing (asks first)",
        ),
        bind(
            &[Key::ch('U')],
            Action::TriageWork(Verb::Requeue),
            View(ViewId::Work),
            Operator,
            "requeue the selected failed or dead-lettered item (asks first)",
        ),
        bind(
            &[Key::ch('D')],
            Action::TriageWork(Verb::Discard),
            View(ViewId::Work),
            Operator,
            "discard the selected item for good (asks for a reason)",
        ),
        bind(
            &[Key::ch('N')],
            Action::TriageWork(Verb::RetryNow),
            View(ViewId::Work),
            Operator,
            "retry the selected item now, skipping its backoff (asks first)",
        ),
        bind(
            &[Key::ch('Z')],
            Action::ControlHandler(HandlerControl::Pause),
            View(ViewId::Work),
            Operator,
            "pause the selected item's handler fleet-wide: its work waits until resumed (asks first)",
        ),
        bind(
            &[Key::ch('W')],
            Action::ControlHandler(HandlerControl::Resume),
            View(ViewId::Work),
            Operator,
            "resume the selected item's handler fleet-wide (asks first)",
        ),
        bind(
            &[Key::ch('Z')],
            Action::ControlSchedule(Control::Pause),
            View(ViewId::Schedules),
            Operator,
            "pause the selected schedule: it fires nothing until resumed (asks first)",
        ),
        bind(
            &[Key::ch('W')],
            Action::ControlSchedule(Control::Resume),
            View(ViewId::Schedules),
            Operator,
            "resume the selected schedule: its catch-up policy decides what missed boundaries fire (asks first)",
        ),
        bind(
            &[Key::ch('D')],
            Action::ControlSchedule(Control::Delete),
            View(ViewId::Schedules),
            Operator,
            "delete the selected schedule; firings already enqueued stay (asks first)",
        ),
        bind(
            &[Key::ch('K')],
            Action::Demo(DemoKey::Kill),
            Global,
            Demo,
            "kill an authority (the selected one, or pick): a crash, nothing released",
        ),
        bind(
            &[Key::ch('P')],
            Action::Demo(DemoKey::Pause),
            Global,
            Demo,
            "pause an authority: its leases expire, others reclaim them",
        ),
        bind(
            &[Key::ch('R')],
            Action::Demo(DemoKey::Resume),
            Global,
            Demo,
            "resume a paused authority (its late writes are fenced) or restart a crashed one",
        ),
        bind(
            &[Key::ch('A')],
            Action::Demo(DemoKey::Add),
            Global,
            Demo,
            "add an authority",
        ),
        bind(
            &[Key::ch('B')],
            Action::Demo(DemoKey::Deploy),
            Global,
            Demo,
            "deploy a build beside the fleet (pick: compatible or not)",
        ),
        bind(
            &[Key::ch('n')],
            Action::NextTourStep,
            Global,
            Live,
            "tour: next step (manual mode), or skip the step under way",
        ),
        bind(
            &[Key::ch('e')],
            Action::ToggleTicker,
            Global,
            Live,
            "show / hide the demo's event ticker (reclaims, fenced writes, faults)",
        ),
        bind(
            &[Key::ch('X')],
            Action::Demo(DemoKey::Skew),
            Global,
            Demo,
            "skew an authority's clock (prompts for ms)",
        ),
        bind(
            &[Key::ch('T')],
            Action::StartTour,
            Global,
            Demo,
            "start the guided tour (a caption says what happens next and where to look)",
        ),
    ]);
    b
});

fn view_help(view: ViewId) -> &'static str {
    match view {
        ViewId::Overview => "overview: counts, throughput, failovers",
        ViewId::Authorities => "authorities: builds, heartbeats, ownership",
        ViewId::Leases => "leases, then work claims: owner, generation, expiry",
        ViewId::Work => "work items: state, owner, attempts, compatibility",
        ViewId::Workflows => "workflow instances",
        ViewId::Cursors => "subscription cursors",
        ViewId::Events => "events: dedup outcomes and journal seq",
        ViewId::Schedules => "schedules: due, late, owned, fired",
        ViewId::Audit => "audit log of operator actions, newest first (/actor:NAME action:NAME)",
        ViewId::Timeline => "generation timeline of the last chosen resource",
        ViewId::WorkflowDetail => "workflow detail",
        ViewId::Failovers => "failovers: resources taken from a holder that never let go",
        ViewId::Fenced => "fenced writes: refused writes and who held the resource then",
        ViewId::Triage => "triage: what needs a person, by reason; Enter lists a group's work",
        ViewId::Builds => {
            "builds: who can run what; stranded work; what stopping a build would strand"
        }
        ViewId::Horizon => "horizon: what becomes due in the next 15 minutes; d lists a slice",
        ViewId::Replay => {
            "replay: the durable history of the last 15 minutes (:replay FROM [TO]), step by step"
        }
    }
}

/// Every binding, in help order.
#[must_use]
pub fn bindings() -> &'static [Binding] {
    &BINDINGS
}

fn in_scope(scope: Scope, view: ViewId) -> bool {
    match scope {
        Scope::Global => true,
        Scope::Table => view.is_table(),
        Scope::View(v) => v == view,
    }
}

/// The action for `key` in `mode`, if any. View-specific bindings win over global ones.
#[must_use]
pub fn resolve(key: &KeyEvent, mode: Mode) -> Option<Action> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match mode {
        Mode::Prompt => Some(match key.code {
            KeyCode::Esc => Action::Dismiss,
            KeyCode::Enter => Action::Submit,
            KeyCode::Tab => Action::Complete,
            KeyCode::Backspace => Action::Backspace,
            KeyCode::Char('c') if ctrl => Action::Dismiss,
            KeyCode::Char(c) if !ctrl => Action::Input(c),
            _ => return None,
        }),
        Mode::Dialog => match key.code {
            KeyCode::Char('y' | 'Y') | KeyCode::Enter => Some(Action::Confirm),
            KeyCode::Char('n' | 'N' | 'q') | KeyCode::Esc => Some(Action::Dismiss),
            KeyCode::Tab => Some(Action::Complete),
            // `a` widens an item's dialog to the filter's matches; digits type a count.
            KeyCode::Char(c @ ('a' | '0'..='9')) if !ctrl => Some(Action::Input(c)),
            KeyCode::Backspace => Some(Action::Backspace),
            _ => None,
        },
        Mode::DialogText => Some(match key.code {
            KeyCode::Enter => Action::Confirm,
            KeyCode::Esc | KeyCode::Tab => Action::Complete,
            KeyCode::Backspace => Action::Backspace,
            KeyCode::Char('c') if ctrl => Action::Dismiss,
            KeyCode::Char(c) if !ctrl => Action::Input(c),
            _ => return None,
        }),
        Mode::Overlay => match key.code {
            KeyCode::Esc | KeyCode::Char('?' | 'q') | KeyCode::Enter => Some(Action::Dismiss),
            KeyCode::Up | KeyCode::Char('k') => Some(Action::Up),
            KeyCode::Down | KeyCode::Char('j') => Some(Action::Down),
            KeyCode::PageUp => Some(Action::PageUp),
            KeyCode::PageDown | KeyCode::Char(' ') => Some(Action::PageDown),
            KeyCode::Home | KeyCode::Char('g') => Some(Action::Home),
            KeyCode::End | KeyCode::Char('G') => Some(Action::End),
            KeyCode::Char('y') => Some(Action::CopyId),
            _ => None,
        },
        Mode::Normal(view) => {
            let candidates = bindings()
                .iter()
                .filter(|b| in_scope(b.scope, view) && b.keys.iter().any(|k| k.matches(key)));
            let mut best: Option<&Binding> = None;
            for b in candidates {
                if best.is_none() || !matches!(b.scope, Scope::Global) {
                    best = Some(b);
                }
            }
            best.map(|b| b.action.clone())
        }
    }
}
