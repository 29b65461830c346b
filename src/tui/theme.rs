//! Themes as files. Each theme is a TOML file whose keys name *roles* — what a colour means
//! (`lease_live`, `work_failed`, `fenced`, `selection`…) — never widgets. The shipped
//! themes in `themes/` are embedded with `include_str!`, so the binary works anywhere; a
//! user directory (`$XDG_CONFIG_HOME/leasehold/themes/NAME.toml`) adds themes or overrides
//! a shipped one. Unknown keys and unknown theme names are errors, never silent fallbacks.
//! `NO_COLOR` is honoured by [`Theme::monochrome`] (the caller decides; widgets never read
//! the environment).

use std::path::{Path, PathBuf};
use std::str::FromStr;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

use crate::error::{Error, Result};

/// The shipped themes, in cycling order.
pub const BUILTIN: [(&str, &str); 3] = [
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
];

/// One role's style as written in a theme file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StyleSpec {
    pub fg: Option<String>,
    pub bg: Option<String>,
    #[serde(default)]
    pub bold: bool,
    #[serde(default)]
    pub dim: bool,
    #[serde(default)]
    pub italic: bool,
    #[serde(default)]
    pub underline: bool,
    #[serde(default)]
    pub reversed: bool,
}

impl StyleSpec {
    fn to_style(&self, role: &str) -> Result<Style> {
        let colour = |c: &Option<String>| -> Result<Option<Color>> {
            c.as_deref()
                .map(|c| {
                    Color::from_str(c).map_err(|_| {
                        Error::Invalid(format!("theme role {role}: unknown colour {c:?}"))
                    })
                })
                .transpose()
        };
        let mut style = Style::default();
        if let Some(fg) = colour(&self.fg)? {
            style = style.fg(fg);
        }
        if let Some(bg) = colour(&self.bg)? {
            style = style.bg(bg);
        }
        for (on, m) in [
            (self.bold, Modifier::BOLD),
            (self.dim, Modifier::DIM),
            (self.italic, Modifier::ITALIC),
            (self.underline, Modifier::UNDERLINED),
            (self.reversed, Modifier::REVERSED),
        ] {
            if on {
                style = style.add_modifier(m);
            }
        }
        Ok(style)
    }
}

macro_rules! roles {
    ($($(#[$doc:meta])* $name:ident => $variant:ident,)*) => {
        /// What a piece of the screen means; a theme gives each role a style.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Role { $($(#[$doc])* $variant,)* }

        impl Role {
            pub const ALL: &'static [Role] = &[$(Role::$variant,)*];

            /// The key naming this role in theme files.
            #[must_use]
            pub fn key(self) -> &'static str {
                match self { $(Role::$variant => stringify!($name),)* }
            }
        }

        /// Every role of a theme file; all are required so a typo is caught at load.
        #[derive(Debug, Clone, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Roles { $($name: StyleSpec,)* }

        impl Roles {
            fn styles(&self) -> Result<Vec<Style>> {
                Ok(vec![$(self.$name.to_style(stringify!($name))?,)*])
            }
        }
    };
}

roles! {
    /// Default text and the screen background.
    base => Base,
    /// Secondary text: units, hints, empty cells.
    muted => Muted,
    /// Emphasis: the store, the current view, keys in hints.
    accent => Accent,
    title => Title,
    border => Border,
    /// Table header row.
    header => Header,
    /// The selected row.
    selection => Selection,
    /// A row that changed in the latest refresh.
    flash => Flash,
    live => Live,
    paused => Paused,
    /// The "stale Ns" badge and loading indicator.
    stale => Stale,
    /// The store-error banner and refusals.
    error => Error,
    warning => Warning,
    ok => Ok,
    lease_live => LeaseLive,
    lease_expired => LeaseExpired,
    lease_released => LeaseReleased,
    work_pending => WorkPending,
    work_claimed => WorkClaimed,
    work_retry => WorkRetry,
    work_succeeded => WorkSucceeded,
    work_failed => WorkFailed,
    /// Work or instances no live authority can run.
    incompatible => Incompatible,
    /// Refused (fenced) writes and reclaims.
    fenced => Fenced,
    authority_live => AuthorityLive,
    authority_silent => AuthoritySilent,
    authority_gone => AuthorityGone,
    wf_running => WfRunning,
    wf_waiting => WfWaiting,
    wf_completed => WfCompleted,
    wf_failed => WfFailed,
    wf_cancelled => WfCancelled,
    sparkline => Sparkline,
    /// Key names in the help overlay and footer.
    key => Key,
    /// Dialog and overlay body.
    dialog => Dialog,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: String,
    #[serde(default)]
    description: String,
    roles: Roles,
}

/// A loaded theme: one style per [`Role`].
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    pub description: String,
    styles: Vec<Style>,
    monochrome: bool,
}

impl Theme {
    /// Parses a theme file.
    ///
    /// # Errors
    /// `INVALID` naming the file, for bad TOML, unknown keys, missing roles or colours.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let file: ThemeFile =
            toml::from_str(text).map_err(|e| Error::Invalid(format!("theme {origin}: {e}")))?;
        Ok(Self {
            name: file.name,
            description: file.description,
            styles: file.roles.styles()?,
            monochrome: false,
        })
    }

    /// A shipped theme by name.
    ///
    /// # Errors
    /// `INVALID` for an unknown name.
    pub fn builtin(name: &str) -> Result<Self> {
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name).ok_or_else(|| {
            Error::Invalid(format!(
                "unknown theme {name:?}; shipped themes: dark, light, high-contrast"
            ))
        })?;
        Self::parse(text, name)
    }

    /// The style of `role`.
    #[must_use]
    pub fn style(&self, role: Role) -> Style {
        let index = Role::ALL.iter().position(|r| *r == role).unwrap_or(0);
        self.styles.get(index).copied().unwrap_or_default()
    }

    /// The same theme without colours (for `NO_COLOR`): modifiers stay, and the roles that
    /// only colour distinguished get reverse video or bold so nothing becomes invisible.
    #[must_use]
    pub fn monochrome(mut self) -> Self {
        for (i, style) in self.styles.iter_mut().enumerate() {
            let mut plain = Style::default().add_modifier(style.add_modifier);
            match Role::ALL.get(i) {
                Some(Role::Selection | Role::Error | Role::Dialog) => {
                    plain = plain.add_modifier(Modifier::REVERSED);
                }
                Some(
                    Role::Flash
                    | Role::Header
                    | Role::Title
                    | Role::Fenced
                    | Role::Incompatible
                    | Role::WorkFailed,
                ) => {
                    plain = plain.add_modifier(Modifier::BOLD);
                }
                _ => {}
            }
            *style = plain;
        }
        self.monochrome = true;
        self
    }

    #[must_use]
    pub fn is_monochrome(&self) -> bool {
        self.monochrome
    }
}

/// The themes an operator can pick from: the shipped ones plus a user directory.
#[derive(Debug, Clone, Default)]
pub struct ThemeSet {
    user_dir: Option<PathBuf>,
}

impl ThemeSet {
    /// Themes from the shipped set and `user_dir` (which may not exist).
    #[must_use]
    pub fn new(user_dir: Option<PathBuf>) -> Self {
        Self { user_dir }
    }

    /// The conventional user directory: `$XDG_CONFIG_HOME/leasehold/themes`, else
    /// `$HOME/.config/leasehold/themes`. Read by the entry point, passed down.
    #[must_use]
    pub fn default_user_dir() -> Option<PathBuf> {
        std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".config")))
            .map(|base| base.join("leasehold").join("themes"))
    }

    /// Every theme name: shipped first, then user themes, sorted, without duplicates.
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = BUILTIN.iter().map(|(n, _)| (*n).to_owned()).collect();
        if let Some(dir) = &self.user_dir
            && let Ok(entries) = std::fs::read_dir(dir)
        {
            let mut user: Vec<String> = entries
                .filter_map(std::result::Result::ok)
                .filter_map(|e| {
                    let path = e.path();
                    (path.extension().is_some_and(|x| x == "toml"))
                        .then(|| path.file_stem()?.to_str().map(str::to_owned))?
                })
                .filter(|n| !names.contains(n))
                .collect();
            user.sort();
            names.extend(user);
        }
        names
    }

    /// Loads `name`: a user file of that name wins over a shipped theme.
    ///
    /// # Errors
    /// `INVALID` for an unknown name or a bad file.
    pub fn load(&self, name: &str) -> Result<Theme> {
        if name.contains(['/', '\\']) || name.starts_with('.') {
            return Err(Error::Invalid(format!(
                "theme name {name:?} must be a plain name"
            )));
        }
        if let Some(dir) = &self.user_dir {
            let path = dir.join(format!("{name}.toml"));
            if path.is_file() {
                let text = crate::foundation::file_input::read_text(
                    &path,
                    crate::foundation::file_input::MAX_THEME_BYTES,
                )
                .map_err(|e| Error::Invalid(format!("theme {}: {e}", path.display())))?;
                return Theme::parse(&text, &path.display().to_string());
            }
        }
        Theme::builtin(name).map_err(|_| {
            Error::Invalid(format!(
                "unknown theme {name:?}; available: {}",
                self.names().join(", ")
            ))
        })
    }

    /// The theme after `current` in [`Self::names`], wrapping around.
    #[must_use]
    pub fn next_name(&self, current: &str) -> String {
        let names = self.names();
        let i = names
            .iter()
            .position(|n| n == current)
            .map_or(0, |i| (i + 1) % names.len().max(1));
        names.get(i).cloned().unwrap_or_else(|| "dark".into())
    }
}
