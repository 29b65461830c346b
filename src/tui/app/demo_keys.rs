//! The demo keys (`K P R A B X`): kill, pause, resume, add, roll out, skew an authority of
//! an embedded cluster. Kept apart because they exist only with `leasehold demo` and are
//! refused everywhere else (and under `--read-only`).

use super::{App, Command, DemoKey, DemoOp, Prompt, PromptKind, Role, ViewId};

impl App {
    pub(super) fn demo_key(&mut self, key: DemoKey, out: &mut Vec<Command>) {
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
            );
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
                });
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
                        });
                    }
                }
            }
        }
    }
}
