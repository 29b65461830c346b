//! The replay view's state: its window, the cursor, a jump the reader is resolving and
//! the resource being inspected. A step within the page on screen moves the cursor at
//! once; a step off the page or a jump to a failover goes to the reader as a seek from
//! the cursor, and the answer's cursor is adopted when it comes back. Kept apart because
//! the replay moves by history position, not by table row.

use super::{App, Role, ViewId};
use crate::clock::Millis;
use crate::ops::replay::{self, StepAt};
use crate::tui::replay::{ReplayData, ReplayQuery, Seek};
use crate::tui::snapshot::ViewData;
use crate::tui::views::replay::{RESOURCE_ROWS, SUMMARY_ROWS, key};

/// The replay view's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayUi {
    /// The window, in store instants.
    pub from: Millis,
    pub to: Millis,
    /// The step the cursor is on; `None`: the window's first.
    pub cursor: Option<StepAt>,
    /// A move the reader still has to resolve from the cursor.
    pub seek: Seek,
    /// The resource whose standing at the cursor's revision is shown.
    pub inspect: Option<String>,
}

impl App {
    /// The replay view's state, once a window was chosen.
    #[must_use]
    pub fn replay(&self) -> Option<&ReplayUi> {
        self.replay.as_ref()
    }

    /// What the reader last read for the replay view.
    #[must_use]
    pub fn replay_data(&self) -> Option<&ReplayData> {
        match &self.snapshot.as_deref()?.data {
            ViewData::Replay(data) => data.as_ref(),
            _ => None,
        }
    }

    /// `:replay [FROM [TO]]`: the window the words give (the last 15 minutes without
    /// any), the cursor on its first step. A window that cannot be read is refused on the
    /// status line and the view is not opened.
    pub(super) fn open_replay(&mut self, words: &[&str]) {
        let (from, to) = match words {
            [] => (replay::DEFAULT_FROM, replay::DEFAULT_TO),
            [from] => (*from, replay::DEFAULT_TO),
            [from, to] => (*from, *to),
            _ => {
                self.say("replay takes a window: :replay [FROM [TO]]", Role::Error);
                return;
            }
        };
        match replay::parse_window(from, to, self.now, self.options.zone) {
            Ok((from, to)) => {
                self.replay = Some(ReplayUi {
                    from,
                    to,
                    cursor: None,
                    seek: Seek::Stay,
                    inspect: None,
                });
                self.switch(ViewId::Replay);
            }
            Err(e) => self.say(e.to_string(), Role::Error),
        }
    }

    /// `H` or a tab: back to the replay where it was, or the last 15 minutes.
    pub(super) fn show_replay(&mut self) {
        if self.replay.is_none() {
            self.open_replay(&[]);
        } else {
            self.switch(ViewId::Replay);
        }
    }

    /// The step the cursor is on: the one chosen, else the reader's.
    fn replay_cursor(&self) -> Option<StepAt> {
        self.replay
            .as_ref()
            .and_then(|r| r.cursor)
            .or_else(|| self.replay_data().and_then(|d| d.cursor))
    }

    /// Moves the cursor: a step still on the page at once, anything else through the
    /// reader.
    pub(super) fn replay_move(&mut self, seek: Seek) {
        let cursor = self.replay_cursor();
        let local = self.replay_data().and_then(|d| {
            let i = d.steps.iter().position(|(at, _)| Some(*at) == cursor)?;
            let j = match seek {
                Seek::PreviousStep => i.checked_sub(1)?,
                Seek::NextStep => i + 1,
                _ => return None,
            };
            d.steps.get(j).map(|(at, _)| *at)
        });
        let Some(ui) = self.replay.as_mut() else {
            return;
        };
        ui.cursor = local.or(cursor);
        ui.seek = if local.is_some() { Seek::Stay } else { seek };
        self.rebuild();
    }

    /// Enter: the cursor step's resource as of the cursor's revision (again: closed).
    pub(super) fn replay_inspect(&mut self) {
        let resource = self.selected_row().and_then(|r| r.resource.clone());
        if let Some(ui) = self.replay.as_mut() {
            ui.inspect = if ui.inspect == resource {
                None
            } else {
                resource
            };
        }
    }

    /// Esc while a resource is inspected closes its pane; returns whether it did.
    pub(super) fn replay_close(&mut self) -> bool {
        match self.replay.as_mut() {
            Some(ui) if self.view == ViewId::Replay && ui.inspect.is_some() => {
                ui.inspect = None;
                true
            }
            _ => false,
        }
    }

    /// Takes the cursor the reader resolved a seek to, once the answer is for the query
    /// in force, and says when there was nothing to go to.
    pub(super) fn adopt_replay(&mut self) {
        let answered = self
            .snapshot
            .as_ref()
            .is_some_and(|s| s.query.seq == self.query.seq);
        let Some((cursor, found)) = self
            .replay_data()
            .filter(|_| answered)
            .map(|d| (d.cursor, d.found))
        else {
            return;
        };
        let Some(ui) = self.replay.as_mut() else {
            return;
        };
        let seek = std::mem::take(&mut ui.seek);
        if seek == Seek::Stay {
            return;
        }
        ui.cursor = cursor;
        if !found {
            self.say(
                match seek {
                    Seek::PreviousFailover => "no failover before this step in the window",
                    Seek::NextFailover => "no failover after this step in the window",
                    Seek::PreviousStep => "the first step of the window",
                    Seek::NextStep | Seek::Stay => "the last step of the window",
                },
                Role::Muted,
            );
        }
    }

    /// The page key of the cursor's row, so the table selects it.
    pub(super) fn replay_selected_key(&self) -> Option<String> {
        self.replay_cursor().map(key)
    }

    /// The replay part of the query: the window, the cursor and its seek, and as many
    /// steps as the body shows, half before the cursor.
    pub(super) fn replay_query(&self) -> Option<ReplayQuery> {
        let ui = self.replay.as_ref()?;
        let panes = SUMMARY_ROWS
            + if ui.inspect.is_some() {
                RESOURCE_ROWS
            } else {
                0
            };
        let rows = self.page_size().saturating_sub(usize::from(panes)).max(1);
        let before = (rows - 1) / 2;
        Some(ReplayQuery {
            from: ui.from,
            to: ui.to,
            anchor: ui.cursor,
            seek: ui.seek,
            before,
            after: rows - before,
            inspect: ui.inspect.clone(),
        })
    }
}
