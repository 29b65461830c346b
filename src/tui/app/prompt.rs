//! The one-line prompts (`:` command, `/` filter, a demo picker, a skew):
//! editing their text and what submitting each kind does. Kept apart from the update
//! function because a prompt takes the keyboard while it is open.

use super::command::complete;
use super::{Action, App, Command, DemoKey, DemoOp, Role};

/// What a prompt is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptKind {
    Command,
    Filter,
    /// A demo picker: one keystroke chooses (see `demo_keys.rs`).
    Pick(DemoKey),
    Skew {
        authority: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub kind: PromptKind,
    pub text: String,
}

impl App {
    pub(super) fn prompt_action(
        &mut self,
        mut prompt: Prompt,
        action: Action,
        out: &mut Vec<Command>,
    ) {
        match (&prompt.kind, action) {
            (PromptKind::Pick(key), Action::Input(c)) => {
                self.prompt = None;
                self.pick(*key, c, out);
                return;
            }
            (_, Action::Input(c)) => {
                if prompt.text.chars().count() < 200 && !c.is_control() {
                    prompt.text.push(c);
                }
            }
            (_, Action::Backspace) => {
                prompt.text.pop();
            }
            (_, Action::Complete) => {
                if prompt.kind == PromptKind::Command
                    && let Some(done) = complete(&prompt.text, &self.store_names())
                {
                    prompt.text = done;
                }
            }
            (_, Action::Dismiss) => {
                // The filter in force stays (Esc again clears it): the prompt only edits.
                self.prompt = None;
                return;
            }
            (_, Action::Submit) => {
                self.prompt = None;
                self.submit(prompt, out);
                return;
            }
            _ => return,
        }
        self.prompt = Some(prompt);
    }

    pub(super) fn submit(&mut self, prompt: Prompt, out: &mut Vec<Command>) {
        let text = prompt.text.trim().to_owned();
        match prompt.kind {
            PromptKind::Filter => self.apply_filter(&text),
            PromptKind::Command => self.command(&text, out),
            PromptKind::Pick(_) => self.say("nothing picked", Role::Warning),
            PromptKind::Skew { authority } => match text.parse::<i64>() {
                Ok(ms) => {
                    self.say(format!("skewing {authority} by {ms} ms…"), Role::Accent);
                    out.push(Command::Demo(DemoOp::Skew(authority, ms)));
                }
                Err(_) => self.say(
                    format!(
                        "not a number of milliseconds: {}",
                        crate::tui::text::clean(&text, 30)
                    ),
                    Role::Error,
                ),
            },
        }
    }
}
