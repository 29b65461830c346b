//! Group commit for producers: concurrent single-item calls share one durable commit.
//!
//! A durable commit costs one fsync, so a service whose request handlers each enqueue one
//! item is bound by the disk's fsync rate. Here the first caller to find no commit running
//! becomes the *leader*: it takes every entry queued so far (its own included) and commits
//! them in one transaction, while callers arriving meanwhile queue behind it; when it is
//! done, one of them leads the next group. Each call still returns only after the
//! transaction holding its own entry committed, with its own answer; a failed commit fails
//! every call in it, with the same error. A lone caller pays nothing: it leads a group of
//! one at once, never waiting for company.
//!
//! Under concurrency, the caller whose answer just came back is usually the first to call
//! again and would lead a group of one while the rest are still waking up. So a leader
//! whose previous group held several entries first *gathers*: it waits up to
//! [`GATHER`] for as many entries as that group held (like PostgreSQL's `commit_delay`,
//! which also waits only when other transactions are active).

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// At most this many entries share one commit, so one transaction stays short.
const MAX_GROUP: usize = 1_024;

/// How long a leader waits for its group to fill, when the previous group had company.
const GATHER: Duration = Duration::from_micros(200);

/// The queue of entries waiting for a commit, and the answers of committed ones.
pub(crate) struct GroupCommit<T, R> {
    state: Mutex<State<T, R>>,
    /// Signalled when a group's answers are published.
    turn: Condvar,
    /// Signalled when an entry is queued (a gathering leader waits on it).
    arrival: Condvar,
}

struct State<T, R> {
    queue: Vec<(u64, T)>,
    next_ticket: u64,
    leading: bool,
    /// How many entries the previous group held.
    last_group: usize,
    answers: HashMap<u64, Result<R>>,
}

impl<T, R> Default for GroupCommit<T, R> {
    fn default() -> Self {
        Self {
            state: Mutex::new(State {
                queue: Vec::new(),
                next_ticket: 0,
                leading: false,
                last_group: 0,
                answers: HashMap::new(),
            }),
            turn: Condvar::new(),
            arrival: Condvar::new(),
        }
    }
}

impl<T, R> GroupCommit<T, R> {
    /// Queues `entry` and returns its answer once the commit holding it is over. If this
    /// call leads a group, `commit` writes the group's entries in one transaction and
    /// answers each, in order; otherwise it is dropped unused (every caller passes the same
    /// kind of commit).
    ///
    /// # Errors
    /// The group's commit failed (each caller in it gets that error); an answer count that
    /// does not match the group is `OUTCOME_UNKNOWN` for all of them.
    pub fn submit(&self, entry: T, commit: impl FnOnce(Vec<T>) -> Result<Vec<R>>) -> Result<R> {
        let mut state = self.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.queue.push((ticket, entry));
        self.arrival.notify_one();
        let mut commit = Some(commit);
        loop {
            if let Some(answer) = state.answers.remove(&ticket) {
                return answer;
            }
            if !state.leading
                && let Some(commit) = commit.take()
            {
                state = self.lead(state, ticket, commit);
                continue;
            }
            state = self
                .turn
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Commits the queue's first [`MAX_GROUP`] entries as one group and publishes their
    /// answers; the lock is released while the commit runs. `own` is the leader's ticket.
    fn lead<'a>(
        &'a self,
        mut state: MutexGuard<'a, State<T, R>>,
        own: u64,
        commit: impl FnOnce(Vec<T>) -> Result<Vec<R>>,
    ) -> MutexGuard<'a, State<T, R>> {
        state.leading = true;
        let want = state.last_group.min(MAX_GROUP);
        if want > 1 {
            let until = Instant::now() + GATHER;
            while state.queue.len() < want {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                state = self
                    .arrival
                    .wait_timeout(state, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
        let take = state.queue.len().min(MAX_GROUP);
        state.last_group = take;
        let (tickets, entries): (Vec<u64>, Vec<T>) = state.queue.drain(..take).unzip();
        drop(state);
        let mut group = Group {
            owner: self,
            tickets,
            leader: own,
        };
        let outcome = commit(entries);
        let mut state = self.lock();
        group.publish(&mut state, outcome);
        state
    }

    fn lock(&self) -> MutexGuard<'_, State<T, R>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The tickets of the group a leader is committing. Dropped without publishing (the
/// commit panicked), it answers them `OUTCOME_UNKNOWN` and hands the lead on, so no caller
/// waits forever for a leader that is gone. Nobody is left to collect the leader's own
/// answer, so it is not kept, and its entry, if still queued behind a full group, is
/// withdrawn (its caller saw the panic, not an answer).
struct Group<'a, T, R> {
    owner: &'a GroupCommit<T, R>,
    tickets: Vec<u64>,
    /// The leader's ticket (it may lead a group its entry is not in).
    leader: u64,
}

impl<T, R> Group<'_, T, R> {
    fn publish(&mut self, state: &mut State<T, R>, outcome: Result<Vec<R>>) {
        let tickets = std::mem::take(&mut self.tickets);
        match outcome {
            Ok(answers) if answers.len() == tickets.len() => {
                state
                    .answers
                    .extend(tickets.into_iter().zip(answers.into_iter().map(Ok)));
            }
            Ok(answers) => {
                let e = Error::OutcomeUnknown(format!(
                    "a group commit of {} entries gave {} answers",
                    tickets.len(),
                    answers.len()
                ));
                state
                    .answers
                    .extend(tickets.into_iter().map(|t| (t, Err(e.clone()))));
            }
            Err(e) => state
                .answers
                .extend(tickets.into_iter().map(|t| (t, Err(e.clone())))),
        }
        state.leading = false;
        self.owner.turn.notify_all();
    }
}

impl<T, R> Drop for Group<'_, T, R> {
    fn drop(&mut self) {
        if self.tickets.is_empty() {
            return;
        }
        let mut state = self.owner.lock();
        self.publish(
            &mut state,
            Err(Error::OutcomeUnknown(
                "the call committing this group panicked".into(),
            )),
        );
        state.answers.remove(&self.leader);
        state.queue.retain(|(ticket, _)| *ticket != self.leader);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::mpsc;
    use std::sync::{Arc, Barrier};
    use std::thread;

    use super::*;

    #[test]
    fn a_lone_caller_commits_alone_and_gets_its_answer() {
        let group = GroupCommit::<u32, u32>::default();
        let mut sizes = Vec::new();
        for i in 0..3 {
            let answer = group.submit(i, |entries| {
                sizes.push(entries.len());
                Ok(entries.iter().map(|e| e * 10).collect())
            });
            assert_eq!(answer, Ok(i * 10));
        }
        assert_eq!(sizes, [1, 1, 1]);
    }

    /// Callers arriving while a commit runs share the next one, each gets its own answer,
    /// and a failed commit fails every call in it — and no call outside it.
    #[test]
    fn callers_queued_behind_a_commit_share_the_next_and_its_failure() {
        let group = Arc::new(GroupCommit::<u32, u32>::default());
        let (entered, first_running) = mpsc::channel();
        let (release, hold) = mpsc::channel::<()>();
        let leader = {
            let group = Arc::clone(&group);
            thread::spawn(move || {
                group.submit(0, move |entries| {
                    entered.send(entries.len()).unwrap();
                    hold.recv().unwrap();
                    Ok(entries)
                })
            })
        };
        assert_eq!(first_running.recv().unwrap(), 1);
        let queued = 8;
        let barrier = Arc::new(Barrier::new(queued + 1));
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let followers: Vec<_> = (1..=queued as u32)
            .map(|i| {
                let (group, barrier, sizes) =
                    (Arc::clone(&group), Arc::clone(&barrier), Arc::clone(&sizes));
                thread::spawn(move || {
                    barrier.wait();
                    group.submit(i, move |entries: Vec<u32>| {
                        sizes.lock().unwrap().push(entries.len());
                        Err(Error::Unavailable(format!(
                            "disk full ({} entries)",
                            entries.len()
                        )))
                    })
                })
            })
            .collect();
        barrier.wait();
        // Every follower is queued before the first commit ends.
        while group.lock().queue.len() < queued {
            thread::yield_now();
        }
        release.send(()).unwrap();
        assert_eq!(leader.join().unwrap(), Ok(0));
        for f in followers {
            let answer = f.join().unwrap();
            assert_eq!(
                answer,
                Err(Error::Unavailable(format!("disk full ({queued} entries)")))
            );
        }
        assert_eq!(
            *sizes.lock().unwrap(),
            [queued],
            "one commit for the queued eight"
        );
    }

    #[test]
    fn a_panicking_commit_answers_its_group_and_hands_the_lead_on() {
        let group = Arc::new(GroupCommit::<u32, u32>::default());
        let g = Arc::clone(&group);
        let panicked = thread::spawn(move || g.submit(1, |_| panic!("boom")));
        assert!(panicked.join().is_err());
        assert!(
            group.lock().answers.is_empty(),
            "nobody is left to collect the panicked leader's answer: it is not kept"
        );
        assert_eq!(group.submit(2, Ok), Ok(2));
        assert!(group.lock().answers.is_empty());
    }

    #[test]
    fn a_wrong_answer_count_is_an_unknown_outcome() {
        let group = GroupCommit::<u32, u32>::default();
        let answer = group.submit(1, |_| Ok(vec![]));
        assert_eq!(answer.map_err(|e| e.code()), Err("OUTCOME_UNKNOWN"));
    }
}
