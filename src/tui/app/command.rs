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
            "ctx" | "context" | "store" => self.ctx_command(&rest),
            word => match ViewId::parse(word) {
                Some(ViewId::Replay) => self.open_replay(&rest),
                Some(view) => {
                    if view == ViewId::Work
                        && let Some(q) = rest.first().and_then(|w| parse_quick(w))
                    {
                        self.work_quick = q;
                        self.tables.entry(ViewId::Work).or_default().page = None;
                    }
                    if matches!(view, ViewId::Failovers | ViewId::Fenced)
                        && let Some(word) = rest.first()
                    {
                        match crate::ops::window::Window::parse(word) {
                            Ok(window) => {
                                self.incident_window = window;
                                self.tables.entry(ViewId::Failovers).or_default().page = None;
                                self.tables.entry(ViewId::Fenced).or_default().page = None;
                            }
                            Err(e) => {
                                self.say(e.to_string(), Role::Error);
                                return;
                            }
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

/// The `:` words that take a store name.
const CTX_WORDS: [&str; 3] = ["ctx", "context", "store"];

/// Completions of the word being typed in a partial `:` command: a command word, or
/// after `ctx ` one of the attached `stores` (`ctx` is offered only with several).
#[must_use]
pub fn completions(text: &str, stores: &[String]) -> Vec<String> {
    match text.split_once(' ') {
        None => {
            let ctx = (stores.len() > 1).then_some("ctx");
            command_words()
                .into_iter()
                .chain(ctx)
                .filter(|w| w.starts_with(text))
                .map(str::to_owned)
                .collect()
        }
        Some((head, name)) if CTX_WORDS.contains(&head) && !name.contains(' ') => stores
            .iter()
            .filter(|s| s.starts_with(name))
            .cloned()
            .collect(),
        Some(_) => Vec::new(),
    }
}

/// The longest common completion of `text`, if it adds anything.
pub(super) fn complete(text: &str, stores: &[String]) -> Option<String> {
    let (before, word) = match text.rsplit_once(' ') {
        Some((head, word)) => (format!("{head} "), word),
        None => (String::new(), text),
    };
    let options = completions(text, stores);
    let first = options.first()?;
    if options.len() == 1 {
        let takes_more = before.is_empty()
            && matches!(
                first.as_str(),
                "timeline" | "workflow" | "theme" | "work" | "replay" | "ctx"
            );
        let space = if takes_more { " " } else { "" };
        return Some(format!("{before}{first}{space}"));
    }
    let mut prefix: String = first.clone();
    for o in &options[1..] {
        let common = prefix
            .chars()
            .zip(o.chars())
            .take_while(|(a, b)| a == b)
            .count();
        prefix = prefix.chars().take(common).collect();
    }
    (prefix.len() > word.len()).then(|| format!("{before}{prefix}"))
}
