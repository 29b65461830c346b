//! `leasehold demo --record FILE`: the session as an asciicast (v2) file — a JSON header
//! line, then one `[seconds, "o", text]` line per flush of what the dashboard wrote to the
//! terminal — which standard players (`asciinema play`, asciinema-player, agg) replay.
//! The recorder sits between the dashboard's backend and the terminal: everything goes
//! through to the terminal unchanged, and a copy is timed into the file.

use std::io::{self, Write};
use std::time::Instant;

use serde_json::json;

/// Tees terminal output into an asciicast v2 stream.
pub struct Recorder<O: Write, F: Write> {
    out: O,
    file: F,
    started: Instant,
    /// Written since the last flush (and any incomplete UTF-8 sequence left over).
    pending: Vec<u8>,
}

impl<O: Write, F: Write> Recorder<O, F> {
    /// Starts a recording of a `width` × `height` terminal: writes the header to `file`.
    ///
    /// # Errors
    /// Writing the header failed.
    pub fn new(out: O, mut file: F, width: u16, height: u16, unix_time: u64) -> io::Result<Self> {
        let header = json!({
            "version": 2,
            "width": width,
            "height": height,
            "timestamp": unix_time,
            "title": "leasehold demo",
            "env": { "TERM": "xterm-256color" },
        });
        writeln!(file, "{header}")?;
        Ok(Self {
            out,
            file,
            started: Instant::now(),
            pending: Vec::new(),
        })
    }

    /// Writes the complete UTF-8 text pending as one output event.
    fn event(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let complete = match std::str::from_utf8(&self.pending) {
            // A sequence cut by the flush waits for the rest; invalid bytes go as U+FFFD.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            _ => self.pending.len(),
        };
        if complete == 0 {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&self.pending[..complete]).into_owned();
        self.pending.drain(..complete);
        let at = self.started.elapsed().as_secs_f64();
        writeln!(
            self.file,
            "{}",
            json!([(at * 1e6).round() / 1e6, "o", text])
        )?;
        self.file.flush()
    }

    /// Ends the recording: writes what is pending, hands back the terminal side and the
    /// file.
    ///
    /// # Errors
    /// Writing the last event failed.
    pub fn into_parts(mut self) -> io::Result<(O, F)> {
        self.event()?;
        Ok((self.out, self.file))
    }
}

impl<O: Write, F: Write> Write for Recorder<O, F> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.pending.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()?;
        self.event()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_is_a_header_then_timed_output_events() {
        let mut r =
            Recorder::new(Vec::new(), Vec::new(), 80, 24, 1_767_225_600).expect("in memory");
        r.write_all(b"\x1b[2Jhello ").expect("in memory");
        r.flush().expect("in memory");
        // A multi-byte character cut in two by a flush is kept whole.
        let arrow = "→".as_bytes();
        r.write_all(&arrow[..1]).expect("in memory");
        r.flush().expect("in memory");
        r.write_all(&arrow[1..]).expect("in memory");
        r.flush().expect("in memory");
        let (out, file) = r.into_parts().expect("in memory");
        assert_eq!(out, "\x1b[2Jhello →".as_bytes());
        let text = String::from_utf8(file).expect("in memory");
        let mut lines = text.lines();
        let header: serde_json::Value =
            serde_json::from_str(lines.next().expect("in memory")).expect("in memory");
        assert_eq!(header["version"], 2);
        assert_eq!(header["width"], 80);
        assert_eq!(header["height"], 24);
        let events: Vec<serde_json::Value> = lines
            .map(|l| serde_json::from_str(l).expect("in memory"))
            .collect();
        assert_eq!(events.len(), 2);
        let mut last = 0.0;
        let mut replayed = String::new();
        for e in &events {
            let at = e[0].as_f64().expect("in memory");
            assert!(at >= last);
            last = at;
            assert_eq!(e[1], "o");
            replayed.push_str(e[2].as_str().expect("in memory"));
        }
        assert_eq!(replayed, "\x1b[2Jhello →");
    }
}
