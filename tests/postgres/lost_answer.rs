//! A commit whose answer is lost: the server commits, the client never hears it. The write
//! is neither repeated nor reported as failed: the store asks the server what became of
//! the transaction (`txid_status`) and answers with the truth.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use leasehold::model::work::{NewWork, WorkFilter};
use leasehold::model::{PageRequest, WorkState};
use leasehold::store::url::{self, OpenMode};

use crate::support::authorities::HANDLER;
use crate::support::postgres::database;

/// A TCP relay in front of the server that cuts one session: the first simple query
/// holding `marker` and ending with `COMMIT` reaches the server, the server answers it in
/// full, and then both sides are closed before any of that answer reaches the client.
struct AnswerLosingRelay {
    url: String,
    cut: Arc<AtomicBool>,
}

impl AnswerLosingRelay {
    fn start(server_url: &str, marker: &'static str) -> Self {
        let (prefix, rest) = server_url.split_once('@').expect("user@host in the URL");
        let (upstream, path) = rest.split_once('/').expect("a database in the URL");
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let separator = if path.contains('?') { '&' } else { '?' };
        let url = format!(
            "{prefix}@{}/{path}{separator}sslmode=disable",
            listener.local_addr().unwrap()
        );
        let cut = Arc::new(AtomicBool::new(false));
        let (upstream, relay_cut) = (upstream.to_owned(), Arc::clone(&cut));
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let cut = Arc::clone(&relay_cut);
                thread::spawn(move || relay(&client, &server, marker, &cut));
            }
        });
        Self { url, cut }
    }

    fn has_cut(&self) -> bool {
        self.cut.load(Ordering::SeqCst)
    }
}

/// One session: the client's messages are read whole (to find the marked commit), the
/// server's bytes are passed on as they come until that commit's answer starts.
fn relay(client: &TcpStream, server: &TcpStream, marker: &str, cut: &AtomicBool) {
    let doomed = Arc::new(AtomicBool::new(false));
    let answers = {
        let (mut from, mut to) = (server.try_clone().unwrap(), client.try_clone().unwrap());
        let doomed = Arc::clone(&doomed);
        thread::spawn(move || pass_answers(&mut from, &mut to, &doomed))
    };
    let (mut from, mut to) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let _ = pass_queries(&mut from, &mut to, marker, cut, &doomed);
    let _ = server.shutdown(Shutdown::Write);
    let _ = answers.join();
}

/// The client's side: the untyped start-up messages, then typed ones; a doomed session is
/// marked before its commit is passed on, so the answer cannot race the mark.
fn pass_queries(
    from: &mut TcpStream,
    to: &mut TcpStream,
    marker: &str,
    cut: &AtomicBool,
    doomed: &AtomicBool,
) -> std::io::Result<()> {
    loop {
        let mut len = [0; 4];
        from.read_exact(&mut len)?;
        let mut body = vec![0; (u32::from_be_bytes(len) as usize).saturating_sub(4)];
        from.read_exact(&mut body)?;
        to.write_all(&len)?;
        to.write_all(&body)?;
        // An encryption request (answered by one byte) comes before the start-up message.
        if !body.starts_with(&80_877_103u32.to_be_bytes())
            && !body.starts_with(&80_877_104u32.to_be_bytes())
        {
            break;
        }
    }
    loop {
        let mut head = [0; 5];
        from.read_exact(&mut head)?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0; len.saturating_sub(4)];
        from.read_exact(&mut body)?;
        let text = String::from_utf8_lossy(&body);
        let commit = head[0] == b'Q'
            && text.contains(marker)
            && text.trim_end_matches('\0').ends_with("COMMIT");
        if commit && !cut.swap(true, Ordering::SeqCst) {
            doomed.store(true, Ordering::SeqCst);
        }
        to.write_all(&head)?;
        to.write_all(&body)?;
    }
}

/// The server's side: passed on as it comes; once the session is doomed, the answer is read
/// up to its end (`ReadyForQuery`: the server has finished with the commit) and dropped,
/// and both sides are closed.
fn pass_answers(from: &mut TcpStream, to: &mut TcpStream, doomed: &AtomicBool) {
    let mut held = Vec::new();
    let mut chunk = [0; 8192];
    while let Ok(n) = from.read(&mut chunk) {
        if n == 0 {
            break;
        }
        if !doomed.load(Ordering::SeqCst) {
            if to.write_all(&chunk[..n]).is_err() {
                break;
            }
            continue;
        }
        held.extend_from_slice(&chunk[..n]);
        if answer_complete(&held) {
            let _ = to.shutdown(Shutdown::Both);
            let _ = from.shutdown(Shutdown::Both);
            return;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}

/// Whether `bytes`, whole server messages from the start of an answer, reach its
/// `ReadyForQuery`.
fn answer_complete(mut bytes: &[u8]) -> bool {
    while bytes.len() >= 5 {
        let len = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]) as usize;
        if bytes.len() < 1 + len {
            return false;
        }
        if bytes[0] == b'Z' {
            return true;
        }
        bytes = &bytes[1 + len..];
    }
    false
}

#[test]
fn a_commit_whose_answer_is_lost_is_resolved_not_repeated() {
    let db = database();
    let relay = AnswerLosingRelay::start(db.url(), "lost-answer-item");
    let store = url::open(&relay.url, OpenMode::ReadWrite).unwrap();
    let before = store.revision().unwrap();
    let new = store
        .enqueue(NewWork::effect("lost-answer-item", HANDLER, "{}"), "k")
        .expect("resolved with the server, not failed");
    assert!(relay.has_cut(), "the commit's answer was lost on the way");
    assert!(new, "the server committed it: the item is new");

    let direct = url::open(db.url(), OpenMode::ReadOnly).unwrap();
    assert_eq!(
        direct.revision().unwrap(),
        before + 1,
        "committed once, not run again"
    );
    let item = direct.work("lost-answer-item").unwrap().expect("stored");
    assert_eq!(item.state, WorkState::Pending);
    let listed = direct
        .list_work(&WorkFilter::default(), &PageRequest::first(10))
        .unwrap();
    assert_eq!(listed.rows.len(), 1);
    let pending: u64 = direct
        .overview()
        .unwrap()
        .work
        .iter()
        .filter(|c| c.state == WorkState::Pending)
        .map(|c| c.count)
        .sum();
    assert_eq!(pending, 1, "counted once");
}
