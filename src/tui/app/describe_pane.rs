//! The describe pane's side of the update function: open it from the selected row (Enter
//! on rows without a detail view of their own, `d` everywhere), scroll it, fill in what
//! a read by key brings back, copy the id (`y`), and hand the mouse to the terminal (`m`).

use super::{Action, App, Command, Overlay, Role};
use crate::tui::describe::{self, Describe, Fetch};
use crate::tui::text::clean;

impl App {
    fn describe_selected(&self) -> Option<Describe> {
        let snap = self
            .snapshot
            .as_deref()
            .filter(|s| s.query.view == self.view)?;
        describe::locate(snap, self.selected_row(), self.now)
    }

    pub(super) fn open_describe(&mut self, out: &mut Vec<Command>) {
        if !describe::describes(self.view) {
            self.say("pick a table view to describe a row", Role::Muted);
            return;
        }
        match self.describe_selected() {
            Some(d) => {
                if let Some(f) = &d.pending {
                    out.push(Command::Fetch(f.clone()));
                }
                self.overlay = Some(Overlay::Describe(d));
            }
            None => self.say("nothing selected to describe", Role::Muted),
        }
    }

    /// A read by key came back: put it into the pane it was for, if that is still open.
    pub(super) fn on_described(&mut self, fetch: &Fetch, value: Result<serde_json::Value, String>) {
        let Some(Overlay::Describe(d)) = &mut self.overlay else {
            return;
        };
        if d.pending.as_ref() != Some(fetch) {
            return;
        }
        d.pending = None;
        let value = value.unwrap_or_else(|e| format!("could not read: {e}").into());
        d.related.push((fetch.field().into(), value));
    }

    pub(super) fn describe_action(&mut self, d: Describe, action: Action, out: &mut Vec<Command>) {
        let (w, h) = self.size;
        let area = ratatui::layout::Rect::new(0, 0, w, h);
        let max = describe::max_scroll(&d, self.options.zone, area);
        let page = describe::viewport(area).1.max(1);
        let scroll = match action {
            Action::Up | Action::ScrollUp => d.scroll.saturating_sub(1),
            Action::Down | Action::ScrollDown => d.scroll.saturating_add(1),
            Action::PageUp => d.scroll.saturating_sub(page),
            Action::PageDown => d.scroll.saturating_add(page),
            Action::Home => 0,
            Action::End => max,
            Action::CopyId => {
                self.copy(d.id, out);
                return;
            }
            Action::Dismiss | Action::Back | Action::Quit => {
                self.overlay = None;
                return;
            }
            _ => return,
        };
        if let Some(Overlay::Describe(open)) = &mut self.overlay {
            open.scroll = scroll.min(max);
        }
    }

    pub(super) fn copy_id(&mut self, out: &mut Vec<Command>) {
        match self.describe_selected() {
            Some(d) => self.copy(d.id, out),
            None => self.say("nothing selected to copy", Role::Muted),
        }
    }

    fn copy(&mut self, id: String, out: &mut Vec<Command>) {
        self.say(format!("copied {} (OSC 52)", clean(&id, 60)), Role::Ok);
        out.push(Command::Copy(id));
    }

    pub(super) fn toggle_mouse(&mut self, out: &mut Vec<Command>) {
        self.mouse = !self.mouse;
        self.say(
            if self.mouse {
                "mouse: captured (wheel scrolls, click selects)"
            } else {
                "mouse: released — select text with the terminal; m takes it back"
            },
            Role::Accent,
        );
        out.push(Command::Mouse(self.mouse));
    }
}
