//! `exec` handlers: one child process per attempt, in a process group of its own. The
//! attempt goes in on stdin as one JSON line; the answer is the last JSON object line on
//! stdout (earlier `{"checkpoint": …}` lines are saved under the attempt's fence as they
//! come). Without an answer the exit status decides: 0 a retryable `BAD_ANSWER` (or, for
//! a handler whose file sets `require_answer = false`, success with no output), any other
//! code a retryable `EXIT_<n>` carrying the last stderr line, a signal an uncertain attempt
//! (it may have acted). A timeout or a lost lease stops the group with SIGTERM, then SIGKILL
//! after the kill grace; no child outlives its attempt, even when the attempt's task is
//! dropped. A timeout is a retryable `TIMEOUT`, which the store counts as an uncertain
//! attempt too (`rules::work::may_have_acted`): the command may have acted before it was
//! stopped.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

use super::wire::{self, Answer};
use crate::authority::handlers::{Attempt, Handler, HandlerFuture, HandlerOutcome, cut_message};
use crate::clock::Millis;
use crate::model::HandlerVersion;

/// The longest stdout line read whole; a longer answer is a bad one.
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// How much of stderr's end is kept for the last line.
const STDERR_TAIL_BYTES: usize = 4 * 1024;

/// A command, as the config file gave it and resolved.
#[derive(Debug, Clone)]
pub struct ExecSpec {
    /// The program: an absolute path, or a bare name found on `PATH`.
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Set on top of the authority's environment.
    pub env: BTreeMap<String, String>,
    pub cwd: PathBuf,
    /// SIGTERM to SIGKILL.
    pub kill_grace_ms: Millis,
}

/// An async [`Handler`] running [`ExecSpec`] per attempt.
#[derive(Debug, Clone)]
pub struct ExecHandler(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    spec: ExecSpec,
    version: String,
    timeout_ms: Millis,
    require_answer: bool,
}

impl ExecHandler {
    /// `require_answer`: whether a command that exits 0 without printing an answer failed
    /// (`BAD_ANSWER`) rather than succeeded with no output: a command that crashed
    /// quietly, or a wrapper script that lost its child's answer, is not mistaken for
    /// done.
    #[must_use]
    pub fn new(
        spec: ExecSpec,
        version: &HandlerVersion,
        timeout_ms: Millis,
        require_answer: bool,
    ) -> Self {
        Self(Arc::new(Inner {
            spec,
            version: version.to_string(),
            timeout_ms,
            require_answer,
        }))
    }
}

impl Handler for ExecHandler {
    fn handle(&self, attempt: Attempt) -> HandlerFuture {
        let inner = self.0.clone();
        Box::pin(async move { inner.run(attempt).await })
    }
}

fn millis(ms: Millis) -> Duration {
    Duration::from_millis(ms.max(0).unsigned_abs())
}

/// The child's process group: signalled as a whole, and killed when dropped before the
/// child was reaped (the attempt's task was cancelled).
struct Group {
    leader: Option<Pid>,
    reaped: bool,
}

impl Group {
    fn of(child: &Child) -> Self {
        Self {
            leader: child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .and_then(Pid::from_raw),
            reaped: false,
        }
    }

    fn signal(&self, signal: Signal) {
        if let (Some(leader), false) = (self.leader, self.reaped) {
            // It may have exited already; then there is nothing to stop.
            let _ = kill_process_group(leader, signal);
        }
    }

    /// SIGTERM, then SIGKILL once `grace` has passed; returns when the child is reaped.
    async fn stop(&mut self, child: &mut Child, grace: Millis) {
        self.signal(Signal::TERM);
        if tokio::time::timeout(millis(grace), child.wait())
            .await
            .is_err()
        {
            self.signal(Signal::KILL);
            let _ = child.wait().await;
        }
        self.reaped = true;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(Signal::KILL);
    }
}

enum Ended {
    Exited(
        Option<Result<HandlerOutcome, String>>,
        String,
        Option<std::process::ExitStatus>,
    ),
    TimedOut,
    LeaseLost,
}

impl Inner {
    async fn run(&self, attempt: Attempt) -> HandlerOutcome {
        let spec = &self.spec;
        let mut body = wire::request(&attempt, &self.version).to_string();
        body.push('\n');
        let mut command = Command::new(&spec.program);
        // The store URL may hold a password; a handler that needs it is given it in `env`.
        command
            .args(&spec.args)
            .env_remove("LEASEHOLD_STORE")
            .envs(&spec.env)
            .current_dir(&spec.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                return HandlerOutcome::retryable(
                    "SPAWN_FAILED",
                    format!("{}: {e}", spec.program.display()),
                );
            }
        };
        let mut group = Group::of(&child);
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let ended = {
            let feed = async move {
                if let Some(mut stdin) = stdin {
                    // A command that does not read its input is its own business.
                    let _ = stdin.write_all(body.as_bytes()).await;
                }
            };
            let work = async {
                let ((), answer, last_err, status) = tokio::join!(
                    feed,
                    answers(stdout, &attempt),
                    last_line(stderr),
                    child.wait()
                );
                Ended::Exited(answer, last_err, status.ok())
            };
            tokio::select! {
                ended = work => ended,
                () = tokio::time::sleep(millis(self.timeout_ms)) => Ended::TimedOut,
                () = attempt.lease_lost() => Ended::LeaseLost,
            }
        };
        match ended {
            Ended::Exited(answer, last_err, status) => {
                group.reaped = status.is_some();
                match answer {
                    Some(Ok(outcome)) => outcome,
                    Some(Err(why)) => wire::bad_answer(&why),
                    None => by_status(status, &last_err, self.require_answer),
                }
            }
            Ended::TimedOut => {
                group.stop(&mut child, spec.kill_grace_ms).await;
                HandlerOutcome::retryable(
                    crate::rules::work::TIMEOUT_CODE,
                    format!("stopped after {} ms without an answer", self.timeout_ms),
                )
            }
            Ended::LeaseLost => {
                group.stop(&mut child, spec.kill_grace_ms).await;
                // Whatever it did, the fence refuses this owner's answer now.
                HandlerOutcome::Uncertain
            }
        }
    }
}

/// The outcome a command's exit status gives when it printed no answer.
fn by_status(
    status: Option<std::process::ExitStatus>,
    last_err: &str,
    require_answer: bool,
) -> HandlerOutcome {
    match status.map(|s| (s.success(), s.code())) {
        Some((true, _)) if require_answer => wire::bad_answer(
            "exited 0 without printing an answer ({\"ok\": …} as a line on stdout); require_answer = false in the handler's table accepts that as success",
        ),
        Some((true, _)) => HandlerOutcome::Succeeded(None),
        Some((false, Some(code))) => {
            let message = if last_err.is_empty() {
                format!("exited with status {code}")
            } else {
                cut_message(last_err)
            };
            HandlerOutcome::retryable(&format!("EXIT_{code}"), message)
        }
        // Killed by a signal (or never reaped): it may have acted.
        _ => HandlerOutcome::Uncertain,
    }
}

/// Reads stdout line by line: saves checkpoint lines, keeps the last answer (or the last
/// malformed one's reason). Lines are bounded by [`MAX_ANSWER_BYTES`].
async fn answers(
    stdout: Option<impl AsyncRead + Unpin>,
    attempt: &Attempt,
) -> Option<Result<HandlerOutcome, String>> {
    let mut reader = BufReader::new(stdout?);
    let mut last = None;
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let (used, newline) = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(buf) => {
                let end = buf.iter().position(|&b| b == b'\n');
                let chunk = &buf[..end.unwrap_or(buf.len())];
                if line.len() + chunk.len() > MAX_ANSWER_BYTES {
                    too_long = true;
                } else if !too_long {
                    line.extend_from_slice(chunk);
                }
                (chunk.len() + usize::from(end.is_some()), end.is_some())
            }
        };
        reader.consume(used);
        if newline {
            take_line(&line, too_long, attempt, &mut last).await;
            line.clear();
            too_long = false;
        }
    }
    if !line.is_empty() || too_long {
        take_line(&line, too_long, attempt, &mut last).await;
    }
    last
}

async fn take_line(
    line: &[u8],
    too_long: bool,
    attempt: &Attempt,
    last: &mut Option<Result<HandlerOutcome, String>>,
) {
    if too_long {
        if line.first() == Some(&b'{') || line.is_empty() {
            *last = Some(Err(format!(
                "an output line is longer than {MAX_ANSWER_BYTES} bytes"
            )));
        }
        return;
    }
    let text = String::from_utf8_lossy(line);
    match wire::parse_answer(&text) {
        Ok(Some(Answer::Outcome(outcome))) => *last = Some(Ok(outcome)),
        Ok(Some(Answer::Checkpoint(data))) => {
            // A checkpoint the fence refuses (the lease is gone) is dropped; the lease-lost
            // signal stops the command.
            let _ = attempt.save_checkpoint(data).await;
        }
        Ok(None) => {}
        Err(why) => *last = Some(Err(why)),
    }
}

/// The last non-empty line of stderr (read to its end, keeping only a bounded tail).
async fn last_line(stderr: Option<impl AsyncRead + Unpin>) -> String {
    let Some(stderr) = stderr else {
        return String::new();
    };
    let mut reader = BufReader::new(stderr);
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let used = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(buf) => {
                tail.extend_from_slice(buf);
                buf.len()
            }
        };
        reader.consume(used);
        if tail.len() > STDERR_TAIL_BYTES {
            tail.drain(..tail.len() - STDERR_TAIL_BYTES);
        }
    }
    String::from_utf8_lossy(&tail)
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Instant;

    use serde_json::json;

    use super::*;
    use crate::authority::handlers::{AttemptContext, AttemptKind, Pace};

    fn attempt() -> Attempt {
        Attempt::new(AttemptContext::new(
            "e1",
            AttemptKind::Effect,
            "job",
            json!({}),
            "e1",
            "e1",
            1,
            "a",
            1,
            0,
            Pace::Real,
        ))
    }

    /// Running, not a zombie waiting to be reaped.
    fn running(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|s| !s.trim_start().starts_with('Z'))
        })
    }

    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A cancelled attempt (its task dropped) takes its command's whole process group
    /// with it: here a shell and the `sleep` it started.
    #[test]
    fn a_dropped_attempt_leaves_no_process_behind() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let spec = ExecSpec {
            program: "sh".into(),
            args: vec![
                "-c".into(),
                format!("sleep 600 & echo $$ $! > {}; wait", pids.display()),
            ],
            env: BTreeMap::new(),
            cwd: dir.path().to_path_buf(),
            kill_grace_ms: 5_000,
        };
        let handler =
            ExecHandler::new(spec, &HandlerVersion::parse("1.0.0").unwrap(), 60_000, true);
        let rt = tokio::runtime::Runtime::new().unwrap();
        let task = rt.spawn(handler.handle(attempt()));
        wait_for("the command to start", || {
            std::fs::read_to_string(&pids).is_ok_and(|p| p.split_whitespace().count() == 2)
        });
        let pids = std::fs::read_to_string(&pids).unwrap();
        let pids: Vec<&str> = pids.split_whitespace().collect();
        assert!(pids.iter().all(|p| running(p)));
        task.abort();
        wait_for("the shell and its child to be gone", || {
            pids.iter().all(|p| !running(p))
        });
    }
}
