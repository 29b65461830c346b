//! What the tour's caption line says at each step: before the step's effect, what is
//! about to happen and where to look; after it, what the store showed.

use super::{Phase, SKEW_MS, STEPS, Step, Tour};
use crate::clock::format_duration;

impl Tour {
    /// The caption line: `tour 2/8 · what is happening and where to look`.
    #[must_use]
    pub fn caption(&self) -> String {
        let n = STEPS.len() - 1;
        let who = self.subject.as_deref().unwrap_or("an authority");
        let text = match (&self.phase, self.log.last()) {
            (Phase::Shown { .. }, Some(seen)) => {
                let next = if self.manual {
                    "press n for the next step"
                } else {
                    "next step in a moment"
                };
                format!("✓ {} · {next}", seen.fact)
            }
            _ => match self.step() {
                Step::Watch => "every authority holds leases on long-running work: watch the OWNED column on 2:authorities".into(),
                Step::Pause => format!("pausing {who} mid-work: its leases run out in 5s; watch another authority reclaim them under a higher generation (ticker: RECLAIM)"),
                Step::Resume => format!("resuming {who}: it wakes up and writes its late results under its old generation; watch the store refuse them (W: fenced writes; ticker: FENCED)"),
                Step::Kill => format!("killing {who}: a crash, nothing released; its claims lapse and are reclaimed under a new generation"),
                Step::Restart => format!("restarting {who} as a new incarnation: it registers once the old one is gone, then claims again"),
                Step::DeployCompatible => "deploying a compatible build beside the fleet: same key, so it claims work at once".into(),
                Step::DeployIncompatible => "deploying an incompatible build: new work takes its key and waits for it; the old fleet drains the old work".into(),
                Step::Skew => format!("skewing {who}'s clock {} ahead: its heartbeat reads '+… ahead', never a negative age", format_duration(SKEW_MS)),
                Step::End => "tour over: the fault keys K P R A B X are yours (e: ticker, ?: help, q: quit)".into(),
            },
        };
        if self.is_done() {
            return text;
        }
        format!("tour {}/{n} · {text}", self.step + 1)
    }
}
