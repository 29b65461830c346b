//! The one-line prompts (`:` command, `/` filter, a demo roll-out's build tag, a skew):
//! editing their text and what submitting each kind does. Kept apart from the update
//! function because a prompt takes the keyboard while it is open.

use super::command::complete;
use super::{Action, App, Command, DemoOp, Role};

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

impl App {
    pub(super) fn prompt_action(
        &mut self,
        mut prompt: Prompt,
        action: Action,
        out: &mut Vec<Command>,
    ) {
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

    pub(super) fn submit(&mut self, prompt: Prompt, out: &mut Vec<Command>) {
        let text = prompt.text.trim().to_owned();
        match prompt.kind {
            PromptKind::Filter => self.apply_filter(&text),
            PromptKind::Command => self.command(&text, out),
            PromptKind::RollOut => {
                if text.is_empty() {
                    self.say("roll-out cancelled: no build tag", Role::Warning);
                } else {
                    self.say(
                        format!("rolling out build {}…", crate::tui::text::clean(&text, 40)),
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
                        crate::tui::text::clean(&text, 30)
                    ),
                    Role::Error,
                ),
            },
        }
    }
}
