//! The guided tour: a scripted walk through failover that tells the viewer what is about
//! to happen and where to look, does it to the cluster, then waits until the promised
//! effect is in the store's own records (a takeover under a higher generation, a late
//! write refused, …) before it moves on — never a fixed sleep. A step looks for its effect
//! in the records the dashboard lists (`F` failovers, `W` fenced writes), read whole, so it
//! never misses one they show. In manual mode it waits for a key instead of moving on by
//! itself.
//!
//! The tour is a plain state machine over the [`ClusterControl`] seam and the store:
//! [`Tour::tick`] is called often (the dashboard: twice a second; tests: after every
//! step of virtual time) and does at most one thing per call.

mod caption;
mod effects;

use serde::Serialize;

use super::control::{ClusterControl, DemoState};
use crate::clock::{Millis, format_duration};
use crate::error::Result;
use crate::store::Store;
use effects::claims_by_owner;

/// How long a step waits for its effect before it says it did not see it and moves on.
pub const GIVE_UP_MS: Millis = 45_000;
/// How long the confirmation of a step stays up before the next step starts (auto mode):
/// time to read it, counted from when the effect was seen.
pub const LINGER_MS: Millis = 4_000;
/// How far ahead the skew step sets a clock.
pub const SKEW_MS: Millis = 8_000;

/// The tour's steps, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    /// Every authority holds leases.
    Watch,
    /// Pause the busiest authority: another reclaims its work under a higher generation.
    Pause,
    /// Resume it: its late writes are refused (`WORK_FENCED`, or `already-terminal` for an
    /// item its new owner already ended).
    Resume,
    /// Kill another: its claims lapse and are reclaimed.
    Kill,
    /// Restart the killed one as a new incarnation.
    Restart,
    /// Deploy a compatible build beside the fleet: it claims work at once.
    DeployCompatible,
    /// Deploy an incompatible build: new work waits for it, old work stays with the fleet.
    DeployIncompatible,
    /// Skew a clock ahead: its heartbeat shows how far ahead, never a negative age.
    Skew,
    End,
}

/// Every step, in order.
pub const STEPS: [Step; 9] = [
    Step::Watch,
    Step::Pause,
    Step::Resume,
    Step::Kill,
    Step::Restart,
    Step::DeployCompatible,
    Step::DeployIncompatible,
    Step::Skew,
    Step::End,
];

/// What a step saw (or did not see) before it moved on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Seen {
    pub step: Step,
    /// The authority it acted on, if any.
    pub subject: Option<String>,
    /// When the effect was seen (or the step gave up).
    pub at: Millis,
    pub happened: bool,
    /// What the store showed, in a sentence.
    pub fact: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// About to act (the caption says what is coming).
    Acting,
    /// Acted at `since`; waiting for the effect.
    Waiting { since: Millis },
    /// The effect was seen at `at` (auto mode moves on after [`LINGER_MS`]).
    Shown { at: Millis },
}

/// The tour's state.
#[derive(Debug, Clone)]
pub struct Tour {
    manual: bool,
    step: usize,
    phase: Phase,
    subject: Option<String>,
    /// The authority the tour killed (the restart step brings it back).
    killed: Option<String>,
    /// Authorities before a deploy, to tell the new one.
    before: Vec<String>,
    log: Vec<Seen>,
}

impl Tour {
    /// A tour from the first step; `manual` waits for [`Self::next`] between steps.
    #[must_use]
    pub fn new(manual: bool) -> Self {
        Self {
            manual,
            step: 0,
            phase: Phase::Acting,
            subject: None,
            killed: None,
            before: Vec::new(),
            log: Vec::new(),
        }
    }

    /// The step under way.
    #[must_use]
    pub fn step(&self) -> Step {
        STEPS[self.step.min(STEPS.len() - 1)]
    }

    /// Whether the tour reached its end.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.step() == Step::End
    }

    /// What every finished step saw, in order.
    #[must_use]
    pub fn log(&self) -> &[Seen] {
        &self.log
    }

    /// Moves on after a shown step (manual mode), or skips a step still waiting.
    pub fn next(&mut self, now: Millis) {
        match self.phase {
            Phase::Shown { .. } => self.advance(),
            Phase::Waiting { .. } => {
                self.finish(now, false, "skipped".into());
                self.advance();
            }
            Phase::Acting => {}
        }
    }

    fn advance(&mut self) {
        if !self.is_done() {
            self.step += 1;
        }
        self.phase = Phase::Acting;
        self.subject = None;
    }

    fn finish(&mut self, at: Millis, happened: bool, fact: String) {
        self.log.push(Seen {
            step: self.step(),
            subject: self.subject.clone(),
            at,
            happened,
            fact,
        });
        self.phase = Phase::Shown { at };
    }

    /// Does the next thing: act, look for the effect, or move on.
    ///
    /// # Errors
    /// A store failure (the tour stays where it was; call again).
    pub fn tick(&mut self, cluster: &dyn ClusterControl, store: &Store) -> Result<()> {
        let now = store.now();
        match self.phase.clone() {
            Phase::Acting => {
                if self.is_done() {
                    return Ok(());
                }
                self.act(cluster, store)?;
                if self.phase != Phase::Acting {
                    // The cluster refused the act, and the step said so.
                    return Ok(());
                }
                self.phase = Phase::Waiting { since: now };
                // An effect already true (the first step) shows at once.
                self.look(cluster, store, now, now)
            }
            Phase::Waiting { since } => {
                // Look before giving up: an effect the store holds is always reported.
                self.look(cluster, store, since, now)?;
                if self.phase == (Phase::Waiting { since }) && now - since > GIVE_UP_MS {
                    let fact = format!(
                        "not seen within {}: the tour moves on",
                        format_duration(GIVE_UP_MS)
                    );
                    self.finish(now, false, fact);
                }
                Ok(())
            }
            Phase::Shown { at } => {
                if !self.manual && now - at >= LINGER_MS {
                    self.advance();
                }
                Ok(())
            }
        }
    }

    fn act(&mut self, cluster: &dyn ClusterControl, store: &Store) -> Result<()> {
        let authorities = cluster.authorities();
        let claims = claims_by_owner(store)?;
        let busiest = |except: Option<&str>| {
            authorities
                .iter()
                .filter(|a| a.state == DemoState::Running && Some(a.id.as_str()) != except)
                .max_by_key(|a| {
                    (
                        claims.get(&a.id).copied().unwrap_or(0),
                        std::cmp::Reverse(a.id.clone()),
                    )
                })
                .map(|a| a.id.clone())
        };
        let outcome = match self.step() {
            Step::Watch | Step::End => Ok(String::new()),
            Step::Pause => {
                self.subject = busiest(None);
                self.subject
                    .as_deref()
                    .map(|id| cluster.pause(id))
                    .transpose()
                    .map(|_| String::new())
            }
            Step::Resume => {
                self.subject = self.log.last().and_then(|s| s.subject.clone());
                self.subject
                    .as_deref()
                    .map(|id| cluster.resume(id))
                    .transpose()
                    .map(|_| String::new())
            }
            Step::Kill => {
                let paused_before = self.log.last().and_then(|s| s.subject.clone());
                self.subject = busiest(paused_before.as_deref());
                self.killed.clone_from(&self.subject);
                self.subject
                    .as_deref()
                    .map(|id| cluster.kill(id))
                    .transpose()
                    .map(|_| String::new())
            }
            Step::Restart => {
                self.subject.clone_from(&self.killed);
                self.subject
                    .as_deref()
                    .map(|id| cluster.resume(id))
                    .transpose()
                    .map(|_| String::new())
            }
            Step::DeployCompatible | Step::DeployIncompatible => {
                self.before = authorities.iter().map(|a| a.id.clone()).collect();
                cluster.deploy(self.step() == Step::DeployCompatible)
            }
            Step::Skew => {
                self.subject = busiest(None);
                self.subject
                    .as_deref()
                    .map(|id| cluster.skew(id, SKEW_MS))
                    .transpose()
                    .map(|_| String::new())
            }
        };
        if let Err(why) = outcome {
            // The cluster refused (an authority changed state meanwhile): say so, move on.
            let now = store.now();
            self.finish(now, false, format!("could not act: {why}"));
        }
        Ok(())
    }

    fn look(
        &mut self,
        cluster: &dyn ClusterControl,
        store: &Store,
        since: Millis,
        now: Millis,
    ) -> Result<()> {
        if let Some(fact) = self.effect(cluster, store, since)? {
            self.finish(now, true, fact);
        }
        Ok(())
    }
}
