//! The `:` commands: what each word does, and their completion (Tab). Kept apart from
//! the prompt that edits them because the words are the dashboard's own small language.

use super::{App, Command, Overlay, Role, ViewId, WorkQuick};

impl App {
    pub(super) fn command(&mut self, text: &str, out: &mut Vec<Command>) {
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
                Some(ViewId::Replay) => self.open_replay(&rest),
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
                    format!("unknown command :{}", crate::tui::text::clean(text, 40)),
                    Role::Error,
                ),
            },
        }
    }

    pub(super) fn set_theme(&mut self, name: &str) {
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
}

pub(super) fn parse_quick(word: &str) -> Option<WorkQuick> {
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
    words.extend([
        "triage", "builds", "horizon", "replay", "workflow", "theme", "help", "quit",
    ]);
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
pub(super) fn complete(text: &str) -> Option<String> {
    let options = completions(text);
    let first = options.first()?;
    if options.len() == 1 {
        let space = if matches!(
            *first,
            "timeline" | "workflow" | "theme" | "work" | "replay"
        ) {
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
