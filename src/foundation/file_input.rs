//! Files an operator hands a command (workflow definitions, themes, a work payload on
//! stdin) are read with a size bound: a path to `/dev/zero`, a log or a disk image is
//! refused after reading at most one byte past the bound, never loaded whole.

use std::io::Read;
use std::path::Path;

/// The largest workflow definition read: real definitions are a few kilobytes.
pub const MAX_DEFINITION_BYTES: u64 = 4 * 1024 * 1024;
/// The largest theme file read: a theme is a few dozen lines.
pub const MAX_THEME_BYTES: u64 = 256 * 1024;
/// The largest work payload a producer command accepts: a payload is a handler's input
/// (ids, a few fields), not a file transfer.
pub const MAX_PAYLOAD_BYTES: u64 = 1024 * 1024;

/// Why a bounded read failed; callers map it to their own wording and exit code.
#[derive(Debug)]
pub enum ReadFailure {
    /// It could not be opened or read (missing, a directory, no permission).
    Io(std::io::Error),
    /// It holds more than the bound.
    TooLarge { limit: u64 },
    /// It is not UTF-8 text.
    NotText,
}

impl std::fmt::Display for ReadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => write!(f, "{e}"),
            Self::TooLarge { limit } => write!(
                f,
                "larger than {} (the limit for this kind of file)",
                human_bytes(*limit)
            ),
            Self::NotText => f.write_str("not UTF-8 text"),
        }
    }
}

/// Reads the UTF-8 text file at `path`, refusing it once it is found to hold more than
/// `limit` bytes (at most `limit + 1` bytes are ever read, whatever the file is).
///
/// # Errors
/// [`ReadFailure`].
pub fn read_text(path: &Path, limit: u64) -> std::result::Result<String, ReadFailure> {
    let file = std::fs::File::open(path).map_err(ReadFailure::Io)?;
    if file.metadata().map_err(ReadFailure::Io)?.is_dir() {
        return Err(ReadFailure::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "is a directory",
        )));
    }
    read_text_from(file, limit)
}

/// [`read_text`] over any reader (standard input, a pipe): at most `limit + 1` bytes are
/// ever read.
///
/// # Errors
/// [`ReadFailure`].
pub fn read_text_from(reader: impl Read, limit: u64) -> std::result::Result<String, ReadFailure> {
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadFailure::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadFailure::TooLarge { limit });
    }
    String::from_utf8(bytes).map_err(|_| ReadFailure::NotText)
}

/// `4 MiB`, `256 KiB`, `17 bytes`.
fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_text_within_the_bound_and_refuses_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.json");
        std::fs::write(&small, "{\"id\":\"x\"}").unwrap();
        assert_eq!(read_text(&small, 10).unwrap(), "{\"id\":\"x\"}");
        let failure = read_text(&small, 9).unwrap_err();
        assert!(matches!(failure, ReadFailure::TooLarge { limit: 9 }));
        assert_eq!(
            failure.to_string(),
            "larger than 9 bytes (the limit for this kind of file)"
        );

        let binary = dir.path().join("binary");
        std::fs::write(&binary, [0xff, 0xfe, 0x00]).unwrap();
        assert!(matches!(read_text(&binary, 100), Err(ReadFailure::NotText)));
        assert!(matches!(
            read_text(dir.path(), 100),
            Err(ReadFailure::Io(_))
        ));
        assert!(matches!(
            read_text(&dir.path().join("missing"), 100),
            Err(ReadFailure::Io(_))
        ));
    }

    #[test]
    fn an_endless_reader_is_refused_after_the_bound() {
        assert_eq!(read_text_from(&b"[1]"[..], 3).unwrap(), "[1]");
        let failure = read_text_from(std::io::repeat(b'a'), MAX_PAYLOAD_BYTES).unwrap_err();
        assert_eq!(
            failure.to_string(),
            "larger than 1 MiB (the limit for this kind of file)"
        );
    }

    #[cfg(unix)]
    #[test]
    fn an_endless_file_is_refused_after_the_bound() {
        let failure = read_text(Path::new("/dev/zero"), MAX_DEFINITION_BYTES).unwrap_err();
        assert_eq!(
            failure.to_string(),
            "larger than 4 MiB (the limit for this kind of file)"
        );
    }
}
