//! A handler's declared semantic version and the part of it that carries meaning: what
//! the compatibility key of its work is derived from (`compat.rs::handler_key`).

use crate::error::{Error, Result};

/// A handler's declared semantic version, `MAJOR.MINOR.PATCH` with an optional
/// `-prerelease`: what the code promises about its meaning, shown with the authority's
/// registration so an operator sees which code runs where.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HandlerVersion(String);

impl HandlerVersion {
    /// The version of the built-in demo handlers.
    pub const DEMO: &'static str = "1.0.0";

    /// Parses `text`.
    ///
    /// # Errors
    /// `INVALID`, naming the text, when it is not `MAJOR.MINOR.PATCH[-prerelease]`.
    pub fn parse(text: &str) -> Result<Self> {
        let (core, pre) = match text.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (text, None),
        };
        let numeric = |part: &str| {
            !part.is_empty()
                && part.len() <= 9
                && part.bytes().all(|b| b.is_ascii_digit())
                && (part == "0" || !part.starts_with('0'))
        };
        let parts: Vec<&str> = core.split('.').collect();
        let pre_ok = pre.is_none_or(|p| {
            !p.is_empty()
                && p.len() <= 32
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        });
        if parts.len() == 3 && parts.iter().all(|p| numeric(p)) && pre_ok {
            Ok(Self(text.to_owned()))
        } else {
            Err(Error::Invalid(format!(
                "handler version {text:?} is not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.4.0)"
            )))
        }
    }

    /// The version as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The part of the version that carries meaning, semver's own promise: the MAJOR from
    /// `1.0.0` on (a minor or patch release keeps meaning), `0.MINOR` before it (each 0.x
    /// minor may break), and the whole version for a prerelease (promises nothing). Two
    /// versions with the same part run each other's work.
    #[must_use]
    pub fn compatibility_part(&self) -> &str {
        if self.0.contains('-') {
            return &self.0;
        }
        let mut dots = self.0.match_indices('.').map(|(i, _)| i);
        let first = dots.next().unwrap_or(self.0.len());
        if &self.0[..first] == "0" {
            &self.0[..dots.next().unwrap_or(self.0.len())]
        } else {
            &self.0[..first]
        }
    }

    /// The first release of the next major version (`1.4.2` → `2.0.0`, `0.3.1` →
    /// `1.0.0`): a release that no longer runs this one's work.
    #[must_use]
    pub fn next_major(&self) -> Self {
        let major: u64 = self
            .0
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        Self(format!("{}.0.0", major + 1))
    }

    /// The demo handlers' version.
    #[must_use]
    pub fn demo() -> Self {
        Self(Self::DEMO.to_owned())
    }
}

impl std::fmt::Display for HandlerVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compatibility_part_follows_semver() {
        for (version, part) in [
            ("1.2.0", "1"),
            ("1.3.7", "1"),
            ("2.0.0", "2"),
            ("0.3.1", "0.3"),
            ("0.4.0", "0.4"),
            ("2.0.0-rc.1", "2.0.0-rc.1"),
        ] {
            let v = HandlerVersion::parse(version).expect(version);
            assert_eq!(v.compatibility_part(), part, "{version}");
        }
    }

    #[test]
    fn versions_are_semantic() {
        for good in ["1.0.0", "0.12.3", "2.0.0-rc.1"] {
            assert_eq!(HandlerVersion::parse(good).expect(good).as_str(), good);
        }
        for bad in [
            "",
            "1",
            "1.0",
            "1.0.0.0",
            "v1.0.0",
            "01.0.0",
            "1.0.0-",
            "1.x.0",
            "1.0.0-a b",
        ] {
            let e = HandlerVersion::parse(bad).expect_err(bad);
            assert_eq!(e.code(), "INVALID", "{bad}");
            assert!(!e.to_string().contains('\n'));
        }
    }
}
