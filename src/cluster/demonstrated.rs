//! The one sentence a headless report ends with: what the run demonstrated, stated from
//! its own numbers — and, when the thing the scenario exists to show did not happen, a
//! sentence that says so instead of claiming it.

use super::report::Report;

/// What `report`'s run demonstrated, in one sentence.
#[must_use]
pub fn demonstrated(report: &Report) -> String {
    let clean = if report.is_clean() {
        "and the checker found 0 violations".to_owned()
    } else {
        format!(
            "but the checker found {} violation(s)",
            report.checker.violations
        )
    };
    let crashed = report
        .authorities
        .iter()
        .filter(|a| a.state == "crashed")
        .count();
    let fenced = report.fenced_writes_refused;
    let failovers = report.failovers;
    let stall = |what: &str| {
        if fenced > 0 {
            format!(
                "{what}: {fenced} late write(s) from stalled owners were refused WORK_FENCED after {failovers} takeover(s), {clean}."
            )
        } else {
            format!(
                "{what} was NOT demonstrated: no late write met a newer generation ({failovers} takeover(s)), {clean}."
            )
        }
    };
    match report.scenario.as_str() {
        "steady" => format!(
            "A fault-free baseline: {} completions, {failovers} takeover(s), {clean}.",
            report
                .authorities
                .iter()
                .map(|a| a.completions)
                .sum::<u64>()
        ),
        "failover" if fenced > 0 && crashed > 0 => format!(
            "Failover: {crashed} crashed authorities' claims were reclaimed under higher generations ({failovers} takeovers), and {fenced} late write(s) from a stalled owner were refused WORK_FENCED, {clean}."
        ),
        "failover" => stall("Failover with fencing"),
        "stall" => stall("A stalled owner fenced"),
        "chaos" => stall("Fencing under chaos"),
        "rolling-deploy" => match &report.rolling_deploy {
            Some(d) => format!(
                "A rolling deploy: up to {} old-build items were held incompatible (never failed), {} of {} drained once a compatible authority returned, {clean}.",
                d.held_max, d.drained, d.held_items
            ),
            None => format!("A rolling deploy held nothing incompatible, {clean}."),
        },
        "skew" => format!(
            "Clock skew: {failovers} takeover(s) and {fenced} fenced write(s) from authorities that disagree on time, {clean}."
        ),
        other => {
            format!("Scenario {other}: {failovers} takeover(s), {fenced} fenced write(s), {clean}.")
        }
    }
}
