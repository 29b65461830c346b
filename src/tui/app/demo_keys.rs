//! The demo keys (`K P R A B X`): kill, pause, resume / restart, add, deploy, skew an
//! authority of an embedded cluster, from any view. On the authorities view they act on
//! the selected authority; anywhere else (or with nothing selected) they open a picker
//! listing the authorities the key applies to, chosen by one keystroke. Kept apart
//! because they exist only with `leasehold demo` and are refused everywhere else (and
//! under `--read-only`).

use super::super::tour_driver::TourCommand;
use super::{App, Command, DemoKey, DemoOp, Prompt, PromptKind, Role, ViewId};
use crate::cluster::control::{DemoAuthority, DemoState};

/// The keys a picker's choices are chosen by, in order.
pub const PICK_KEYS: &str = "123456789abcdefghijklmnopqrstuvwxyz";

/// One choice of a picker: what it is called and what choosing it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub label: String,
    pub pick: Pick,
}

/// What a picker's choice stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    Authority(String),
    /// A build beside the fleet: compatible (same key) or not.
    Build {
        compatible: bool,
    },
}

impl DemoKey {
    /// Whether this key applies to an authority in `state`.
    fn applies(self, state: DemoState) -> bool {
        match self {
            Self::Kill => matches!(state, DemoState::Running | DemoState::Paused),
            Self::Pause => state == DemoState::Running,
            Self::Resume => matches!(state, DemoState::Paused | DemoState::Crashed),
            Self::Skew => !matches!(state, DemoState::Stopped),
            Self::Add | Self::Deploy => false,
        }
    }

    /// The picker's question.
    #[must_use]
    pub fn question(self) -> &'static str {
        match self {
            Self::Kill => "kill which authority?",
            Self::Pause => "pause which authority?",
            Self::Resume => "resume / restart which authority?",
            Self::Skew => "skew whose clock?",
            Self::Deploy => "deploy which build beside the fleet?",
            Self::Add => "",
        }
    }
}

/// The choices of `key`'s picker over the cluster's `authorities`.
#[must_use]
pub fn choices(key: DemoKey, authorities: &[DemoAuthority]) -> Vec<Choice> {
    if key == DemoKey::Deploy {
        return vec![
            Choice {
                label: "compatible (same key: claims everything)".into(),
                pick: Pick::Build { compatible: true },
            },
            Choice {
                label: "incompatible (new key: new work waits for it)".into(),
                pick: Pick::Build { compatible: false },
            },
        ];
    }
    authorities
        .iter()
        .filter(|a| key.applies(a.state))
        .take(PICK_KEYS.len())
        .map(|a| Choice {
            label: format!("{} ({})", a.id, a.state.as_str()),
            pick: Pick::Authority(a.id.clone()),
        })
        .collect()
}

impl App {
    /// The cluster's authorities as the last snapshot saw them.
    fn demo_authorities(&self) -> Vec<DemoAuthority> {
        self.snapshot()
            .and_then(|s| s.demo.clone())
            .unwrap_or_default()
    }

    /// The choices of the picker open now (empty when none is).
    #[must_use]
    pub fn pick_choices(&self) -> Vec<Choice> {
        match self.prompt().map(|p| &p.kind) {
            Some(PromptKind::Pick(key)) => choices(*key, &self.demo_authorities()),
            _ => Vec::new(),
        }
    }

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
        if key == DemoKey::Add {
            self.say("adding an authority…", Role::Accent);
            out.push(Command::Demo(DemoOp::Add));
            return;
        }
        let selected = (self.view == ViewId::Authorities)
            .then(|| self.selected_row().and_then(|r| r.authority.clone()))
            .flatten();
        match selected {
            Some(id) if key != DemoKey::Deploy => self.demo_on(key, id, out),
            _ => {
                if choices(key, &self.demo_authorities()).is_empty() {
                    self.say(format!("no authority to {}", key.verb()), Role::Warning);
                } else {
                    self.prompt = Some(Prompt {
                        kind: PromptKind::Pick(key),
                        text: String::new(),
                    });
                }
            }
        }
    }

    /// `T` starts the guided tour; `n` moves it on (or skips a step still waiting).
    pub(super) fn tour_key(&mut self, next: bool, out: &mut Vec<Command>) {
        if !self.options.demo {
            self.say(
                "the guided tour is part of leasehold demo (leasehold demo --tour)",
                Role::Warning,
            );
        } else if self.options.read_only {
            self.say(
                "read-only: actions are disabled (started with --read-only)",
                Role::Error,
            );
        } else if !next {
            out.push(Command::Tour(TourCommand::Start { manual: false }));
        } else if self.caption.is_some() {
            out.push(Command::Tour(TourCommand::Next));
        } else {
            self.say("no tour runs: T starts one", Role::Warning);
        }
    }

    /// The picker's choice under key `c`, if any.
    pub(super) fn pick(&mut self, key: DemoKey, c: char, out: &mut Vec<Command>) {
        let Some(choice) = PICK_KEYS
            .find(c)
            .and_then(|i| choices(key, &self.demo_authorities()).into_iter().nth(i))
        else {
            self.say(format!("no choice {c}: Esc cancels"), Role::Warning);
            self.prompt = Some(Prompt {
                kind: PromptKind::Pick(key),
                text: String::new(),
            });
            return;
        };
        match choice.pick {
            Pick::Authority(id) => self.demo_on(key, id, out),
            Pick::Build { compatible } => {
                self.say("deploying a build beside the fleet…", Role::Accent);
                out.push(Command::Demo(DemoOp::Deploy { compatible }));
            }
        }
    }

    /// `key` on authority `id`.
    fn demo_on(&mut self, key: DemoKey, id: String, out: &mut Vec<Command>) {
        match key {
            DemoKey::Kill => out.push(Command::Demo(DemoOp::Kill(id))),
            DemoKey::Pause => out.push(Command::Demo(DemoOp::Pause(id))),
            DemoKey::Resume => out.push(Command::Demo(DemoOp::Resume(id))),
            DemoKey::Skew => {
                self.prompt = Some(Prompt {
                    kind: PromptKind::Skew { authority: id },
                    text: String::new(),
                });
            }
            DemoKey::Add | DemoKey::Deploy => {}
        }
    }
}

impl DemoKey {
    fn verb(self) -> &'static str {
        match self {
            Self::Kill => "kill",
            Self::Pause => "pause",
            Self::Resume => "resume or restart",
            Self::Skew => "skew",
            Self::Add => "add",
            Self::Deploy => "deploy",
        }
    }
}
