//! Reading a TOML file an operator wrote (`leasehold.toml`, a handler table): every mistake
//! becomes one line naming the file, the line and the dotted key — `FILE:LINE: KEY: why` —
//! and an unknown key names the nearest valid one.

use std::ops::Range;
use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::Error;

/// A file's text with its name, for located errors.
#[derive(Debug, Clone, Copy)]
pub struct Located<'a> {
    pub path: &'a Path,
    pub text: &'a str,
}

impl Located<'_> {
    /// `INVALID: FILE:LINE: KEY: why` for the byte range `span`.
    #[must_use]
    pub fn error(&self, span: Range<usize>, why: &str) -> Error {
        let (line, key) = locate(self.text, span.start);
        Error::Invalid(format!("{}:{line}: {key}: {why}", self.path.display()))
    }

    /// Parses the whole text as `T`.
    ///
    /// # Errors
    /// `INVALID`, located, for bad TOML or a value of the wrong shape; an unknown key says
    /// which valid key is nearest.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, Error> {
        toml::from_str(self.text).map_err(|e| {
            let first = e.message().lines().next().unwrap_or("not valid TOML");
            self.error(e.span().unwrap_or(0..0), &suggest(first))
        })
    }
}

/// serde's "unknown field `x`, expected one of `a`, `b`" with the nearest candidate named.
fn suggest(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message.to_owned();
    };
    let Some((unknown, expected)) = rest.split_once('`') else {
        return message.to_owned();
    };
    let candidates: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    match nearest(unknown, candidates.iter().copied()) {
        Some(near) => format!(
            "unknown key `{unknown}` (did you mean `{near}`? valid: {})",
            candidates.join(", ")
        ),
        None => format!("unknown key `{unknown}` (valid: {})", candidates.join(", ")),
    }
}

/// The candidate nearest to `unknown`, when one is near enough to be a likely misspelling
/// of it (at most about half its letters changed): the "did you mean" of every name an
/// operator writes in a file, keys and handler names alike.
#[must_use]
pub fn nearest<'a>(
    unknown: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .min_by_key(|c| distance(unknown, c))
        .filter(|c| distance(unknown, c) <= unknown.len().max(c.len()) / 2 + 1)
}

/// Edit distance between two short keys.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The 1-based line of byte `offset` in `text`, and the dotted key there: the last table
/// header at or above it, plus the key its line assigns (`handlers.send-email.timeout`).
#[must_use]
pub fn locate(text: &str, offset: usize) -> (usize, String) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_no = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or_default().trim();
    let header = text[..line_start]
        .lines()
        .chain(std::iter::once(line))
        .rev()
        .find_map(|l| {
            let l = l.trim();
            l.starts_with('[').then(|| {
                l.trim_start_matches('[')
                    .split(']')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_owned()
            })
        });
    let assigned = (!line.starts_with('['))
        .then(|| line.split_once('=').map(|(key, _)| key.trim().to_owned()))
        .flatten()
        .filter(|k| !k.is_empty());
    let key = match (header, assigned) {
        (Some(h), Some(k)) => format!("{h}.{k}"),
        (Some(h), None) => h,
        (None, Some(k)) => k,
        (None, None) => "(top level)".to_owned(),
    };
    (line_no, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_and_line_of_an_offset() {
        let text = "[handlers.a]\nversion = \"1\"\nexec = [\"x\"]\n\n[handlers.b]\nhttp = \"u\"\n";
        let at = |needle: &str| locate(text, text.find(needle).expect(needle));
        assert_eq!(at("\"1\""), (2, "handlers.a.version".into()));
        assert_eq!(at("[\"x\"]"), (3, "handlers.a.exec".into()));
        assert_eq!(at("[handlers.b]"), (5, "handlers.b".into()));
        assert_eq!(at("\"u\""), (6, "handlers.b.http".into()));
        assert_eq!(locate("x = 1", 0), (1, "x".into()));
    }

    #[test]
    fn an_unknown_key_names_the_nearest() {
        let m = suggest("unknown field `leese`, expected one of `lease`, `renew`, `poll`");
        assert!(m.contains("did you mean `lease`?"), "{m}");
        let far = suggest("unknown field `colour`, expected one of `lease`, `renew`");
        assert!(!far.contains("did you mean"), "{far}");
        assert!(far.contains("valid: lease, renew"), "{far}");
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
