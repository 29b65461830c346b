//! The host knobs of one authority (docs/ARCHITECTURE.md#authority-runtime). None changes a semantic guarantee
//! but the retention periods, which say how long finished rows and event ids are kept; an
//! unsafe combination is refused when the authority is constructed, never discovered at
//! runtime.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::Rate;
use crate::rules::lease::MIN_LEASE_MS;
use crate::rules::liveness::{DEFAULT_LEASE_DURATION_MS, default_heartbeat_interval};
use crate::rules::retry::{Retry, RetryPolicy};
use crate::rules::work::Backoff;
use crate::store::RetentionPolicy;

/// The build tag used when none is given: a label shown to people, deciding nothing.
pub const DEFAULT_BUILD_TAG: &str = "v1";

/// Default renew cadence: a third of the lease window.
pub const DEFAULT_RENEW_INTERVAL_MS: Millis = 10_000;
/// Default in-flight items per authority.
pub const DEFAULT_WORKER_CONCURRENCY: usize = 4;
/// Default items claimed per poll.
pub const DEFAULT_CLAIM_BATCH_SIZE: usize = 32;
/// Default durable-state re-observation cadence.
pub const DEFAULT_POLL_INTERVAL_MS: Millis = 1_000;
/// One authority's identity and runtime knobs. Serialised (camelCase) into its
/// registration row, where the dashboard reads `leaseDurationMs` and `heartbeatIntervalMs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorityConfig {
    /// This authority's identity (owner id of everything it claims).
    pub instance_id: String,
    /// Human build label, shown to people; it decides nothing (what the authority claims
    /// follows its handlers' versions, see `model/compat.rs`).
    pub build: String,
    /// Lease window: an unrenewed claim becomes reclaimable after this.
    pub lease_duration_ms: Millis,
    /// Renew cadence. Must be `< lease_duration_ms`; `<= lease_duration_ms / 2` recommended.
    pub renew_interval_ms: Millis,
    /// Max in-flight durable work items (work items and workflow steps together).
    pub worker_concurrency: usize,
    /// Max items claimed per poll.
    pub claim_batch_size: usize,
    /// How often durable state is re-observed (claims, schedule firings).
    pub poll_interval_ms: Millis,
    /// How often the registration row's heartbeat is refreshed; by default it follows the
    /// lease ([`default_heartbeat_interval`]).
    pub heartbeat_interval_ms: Millis,
    /// Per-handler concurrency limits: this authority never runs more than `limit` items of
    /// `handler` at once (it claims no more than that handler's free slots), so a handler
    /// calling a slow partner cannot take every worker. Handlers not named share
    /// `worker_concurrency` freely.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub handler_limits: BTreeMap<String, usize>,
    /// Per-handler retry policies: the backoff a failed attempt of `handler` waits, and an
    /// optional cap on its items' attempts (see [`RetryPolicy`] for how the cap and an
    /// item's own budget meet). Handlers not named retry on the default backoff, 500 ms
    /// doubling to 30 s. Kept in the registration, so readers see what each authority
    /// applies.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub retry: BTreeMap<String, RetryPolicy>,
    /// Fleet-wide claim rates: every authority on the store together claims at most the
    /// rate's items of `handler` per interval (a fixed window kept in the store,
    /// `rules/handler.rs`). Each authority enforces the rates it is given, so give every
    /// authority running the handler the same rate.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub handler_rates: BTreeMap<String, Rate>,
    /// How long finished rows, the audit and event ids are kept (`store/retention.rs`).
    #[serde(default)]
    pub retention: RetentionPolicy,
    /// How often this authority trims one batch per table; several authorities trimming
    /// the same rows is harmless.
    #[serde(default = "default_trim_interval")]
    pub trim_interval_ms: Millis,
    /// How long after a claim's lease ran out this authority leaves its owner to renew and
    /// finish it before taking it over, after a first attempt; doubled for each attempt,
    /// up to [`RECLAIM_DELAY_CAP_MS`] (or this, if longer). A lapse alone fences nothing:
    /// only a takeover does, so a slow but living owner keeps its claim through this grace
    /// and a crash-looping handler is not rerun at every lease expiry.
    #[serde(default = "default_reclaim_delay")]
    pub reclaim_delay_ms: Millis,
    /// Whether this authority steps aside from a crowded write lock ([`StepAside`]).
    #[serde(default)]
    pub step_aside: StepAside,
}

/// Whether an authority steps aside from a crowded write lock: behind a long queue of
/// writers it finishes what it holds and claims nothing for a while, so that a few
/// authorities claim full batches and an item waits fewer turns between its claim and its
/// completion (`authority/core/turns.rs`; the measurements are in docs/SCALING.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepAside {
    /// On SQLite, where it was measured to keep the drain beside other load too; off on
    /// PostgreSQL, where a few claimers sharing their cores with other programs lost most
    /// of the drain.
    #[default]
    Auto,
    /// On whatever the store: the shorter tail on PostgreSQL for a fleet whose machines
    /// (the server's too) have cores to spare.
    On,
    /// Every authority claims at every turn.
    Off,
}

impl StepAside {
    /// Every setting, in the order help lists them.
    pub const ALL: [Self; 3] = [Self::Auto, Self::On, Self::Off];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::On => "on",
            Self::Off => "off",
        }
    }

    /// The setting named `name` (`auto`, `on`, `off`).
    ///
    /// # Errors
    /// A one-line message naming the settings, for any other name.
    pub fn parse(name: &str) -> std::result::Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == name)
            .ok_or_else(|| format!("step aside must be auto, on or off (not {name:?})"))
    }

    /// Whether an authority on a store of `kind` steps aside.
    #[must_use]
    pub fn applies_to(self, kind: crate::store::StoreKind) -> bool {
        match self {
            Self::Auto => kind == crate::store::StoreKind::Sqlite,
            Self::On => true,
            Self::Off => false,
        }
    }
}

/// Default grace after a lapse, before a first attempt is taken over: a retry's backoff.
pub const DEFAULT_RECLAIM_DELAY_MS: Millis = 500;
/// The longest the doubled grace grows to (unless the configured delay is longer).
pub const RECLAIM_DELAY_CAP_MS: Millis = 30_000;

/// The longest grace a configuration may ask for: a day.
pub const MAX_RECLAIM_DELAY_MS: Millis = 86_400_000;

fn default_reclaim_delay() -> Millis {
    DEFAULT_RECLAIM_DELAY_MS
}

/// Default trim cadence: often enough that a batch per table keeps up with any steady
/// load an authority can produce, rare enough to cost nothing when there is nothing old.
pub const DEFAULT_TRIM_INTERVAL_MS: Millis = 5_000;

fn default_trim_interval() -> Millis {
    DEFAULT_TRIM_INTERVAL_MS
}

impl AuthorityConfig {
    /// The documented defaults for `instance_id` running build `build`.
    #[must_use]
    pub fn new(instance_id: impl Into<String>, build: impl Into<String>) -> Self {
        Self {
            instance_id: instance_id.into(),
            build: build.into(),
            lease_duration_ms: DEFAULT_LEASE_DURATION_MS,
            renew_interval_ms: DEFAULT_RENEW_INTERVAL_MS,
            worker_concurrency: DEFAULT_WORKER_CONCURRENCY,
            claim_batch_size: DEFAULT_CLAIM_BATCH_SIZE,
            poll_interval_ms: DEFAULT_POLL_INTERVAL_MS,
            heartbeat_interval_ms: default_heartbeat_interval(DEFAULT_LEASE_DURATION_MS),
            handler_limits: BTreeMap::new(),
            retry: BTreeMap::new(),
            handler_rates: BTreeMap::new(),
            retention: RetentionPolicy::default(),
            trim_interval_ms: DEFAULT_TRIM_INTERVAL_MS,
            reclaim_delay_ms: DEFAULT_RECLAIM_DELAY_MS,
            step_aside: StepAside::Auto,
        }
    }

    /// The backoff this authority's claims leave a lapsed claim's owner
    /// ([`crate::store::ClaimBudget::reclaim`]).
    #[must_use]
    pub fn reclaim_backoff(&self) -> Backoff {
        Backoff {
            initial_ms: self.reclaim_delay_ms,
            max_ms: self.reclaim_delay_ms.max(RECLAIM_DELAY_CAP_MS),
            ..Backoff::default()
        }
    }

    /// What a failed attempt of `handler` applies: its policy (or the default backoff),
    /// never retried sooner than `floor_ms`.
    #[must_use]
    pub fn retry_for(&self, handler: &str, floor_ms: Millis) -> Retry {
        self.retry
            .get(handler)
            .map_or_else(|| Retry::with_floor(floor_ms), |p| p.retry(floor_ms))
    }

    /// The same config retrying `handler` under `policy`; validated later, by
    /// [`Self::validate`] at construction of the authority.
    #[must_use]
    pub fn with_retry(mut self, handler: impl Into<String>, policy: RetryPolicy) -> Self {
        self.retry.insert(handler.into(), policy);
        self
    }

    /// The same config running at most `limit` items of `handler` at once.
    #[must_use]
    pub fn with_handler_limit(mut self, handler: impl Into<String>, limit: usize) -> Self {
        self.handler_limits.insert(handler.into(), limit);
        self
    }

    /// The same config claiming `handler` no faster than `rate`, fleet-wide.
    #[must_use]
    pub fn with_handler_rate(mut self, handler: impl Into<String>, rate: Rate) -> Self {
        self.handler_rates.insert(handler.into(), rate);
        self
    }

    /// The same config with another lease window and renew cadence, and the heartbeat
    /// that follows that lease ([`default_heartbeat_interval`]); validated later, by
    /// [`Self::validate`] at construction of the authority.
    #[must_use]
    pub fn with_timing(mut self, lease_duration_ms: Millis, renew_interval_ms: Millis) -> Self {
        self.lease_duration_ms = lease_duration_ms;
        self.renew_interval_ms = renew_interval_ms;
        self.heartbeat_interval_ms = default_heartbeat_interval(lease_duration_ms);
        self
    }

    /// Refuses unsafe or meaningless knobs: `renewIntervalMs >= leaseDurationMs` (a lease
    /// could lapse between renewals, so fencing would only probabilistically hold), zero
    /// or negative intervals, zero concurrency or batch size, a handler limit of zero (or
    /// on a handler name no handler could have), a retry policy that cannot be meant
    /// ([`RetryPolicy::validate`]), an empty identity.
    ///
    /// # Errors
    /// `INVALID` naming the offending knob.
    pub fn validate(&self) -> Result<()> {
        let invalid = |msg: String| Err(Error::Invalid(msg));
        if self.instance_id.trim().is_empty() {
            return invalid("instanceId must not be empty".into());
        }
        if self.build.trim().is_empty() {
            return invalid("build must not be empty".into());
        }
        crate::ids::check_id("instanceId", &self.instance_id)?;
        crate::ids::check_id("build", &self.build)?;
        if self.lease_duration_ms < MIN_LEASE_MS {
            return invalid(format!(
                "leaseDurationMs must be at least {MIN_LEASE_MS} ms, got {}",
                self.lease_duration_ms
            ));
        }
        // Above the longest lease a claim would be cut silently: refused instead.
        if self.lease_duration_ms > crate::rules::lease::MAX_LEASE_MS {
            return invalid(format!(
                "leaseDurationMs must be at most {} ms (30 days), got {}",
                crate::rules::lease::MAX_LEASE_MS,
                self.lease_duration_ms
            ));
        }
        for (name, value) in [
            ("renewIntervalMs", self.renew_interval_ms),
            ("pollIntervalMs", self.poll_interval_ms),
            ("heartbeatIntervalMs", self.heartbeat_interval_ms),
            ("trimIntervalMs", self.trim_interval_ms),
        ] {
            if value <= 0 {
                return invalid(format!("{name} must be positive, got {value}"));
            }
        }
        if self.renew_interval_ms >= self.lease_duration_ms {
            return invalid(format!(
                "renewIntervalMs ({}) must be less than leaseDurationMs ({}); at most half is recommended",
                self.renew_interval_ms, self.lease_duration_ms
            ));
        }
        if !(0..=MAX_RECLAIM_DELAY_MS).contains(&self.reclaim_delay_ms) {
            return invalid(format!(
                "reclaimDelayMs must be between 0 and {MAX_RECLAIM_DELAY_MS} ms (1 day), got {}",
                self.reclaim_delay_ms
            ));
        }
        if self.worker_concurrency == 0 {
            return invalid("workerConcurrency must be at least 1".into());
        }
        if self.claim_batch_size == 0 {
            return invalid("claimBatchSize must be at least 1".into());
        }
        for (handler, limit) in &self.handler_limits {
            crate::ids::check_id("handler", handler)?;
            if *limit == 0 {
                return invalid(format!("handlerLimits.{handler} must be at least 1, got 0"));
            }
        }
        for (handler, policy) in &self.retry {
            crate::ids::check_id("handler", handler)?;
            policy.validate(handler)?;
        }
        for handler in self.handler_rates.keys() {
            crate::ids::check_id("handler", handler)?;
        }
        for source in self.retention.dedup_by_source.keys() {
            crate::ids::check_id("event source", source)?;
        }
        self.retention.validate()
    }

    /// The config as the JSON text stored in the registration row.
    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }
}

/// A fresh instance id for a process started without `--instance`: `<host>-<pid>-<hex>`.
#[must_use]
pub fn generated_instance_id() -> String {
    let ids = crate::ids::SeededIds::random();
    let suffix = crate::ids::IdSource::next_id(&ids, "");
    format!(
        "{}-{}{}",
        crate::foundation::actor::host_name(),
        std::process::id(),
        &suffix[..suffix.len().min(7)]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_documented_and_valid() {
        let c = AuthorityConfig::new("a", "v1");
        assert_eq!(
            (
                c.lease_duration_ms,
                c.renew_interval_ms,
                c.worker_concurrency,
                c.claim_batch_size,
                c.poll_interval_ms
            ),
            (30_000, 10_000, 4, 32, 1_000)
        );
        assert!(c.validate().is_ok());
        assert_eq!(
            crate::rules::schedule::on_time_window(c.poll_interval_ms),
            crate::store::SCHEDULE_ON_TIME_MS,
            "a store's own firing call treats lateness as a default authority does"
        );
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn the_default_postgres_pool_covers_the_default_concurrency() {
        // The workers, the poller and the renewer each call the store at once (the runtime
        // asks the store to fit that many); a default authority must not wait for one.
        let callers = AuthorityConfig::new("a", "v1").worker_concurrency + 2;
        assert!(
            crate::store::postgres::DEFAULT_POOL_SIZE >= callers,
            "a default authority would wait for connections"
        );
    }

    #[test]
    fn stepping_aside_is_on_sqlite_only_unless_asked() {
        use crate::store::StoreKind::{Memory, Postgres, Sqlite};
        let on = |s: StepAside| [Sqlite, Postgres, Memory].map(|k| s.applies_to(k));
        assert_eq!(on(StepAside::Auto), [true, false, false]);
        assert_eq!(on(StepAside::On), [true, true, true]);
        assert_eq!(on(StepAside::Off), [false, false, false]);
        for s in StepAside::ALL {
            assert_eq!(StepAside::parse(s.as_str()), Ok(s));
        }
        assert_eq!(
            StepAside::parse("yes"),
            Err("step aside must be auto, on or off (not \"yes\")".into())
        );
    }

    #[test]
    fn a_registration_written_before_the_setting_reads_as_auto() {
        let mut json: serde_json::Value =
            serde_json::from_str(&AuthorityConfig::new("a", "v1").to_json()).expect("json");
        assert_eq!(json["stepAside"], "auto");
        json.as_object_mut().expect("object").remove("stepAside");
        let read: AuthorityConfig = serde_json::from_value(json).expect("reads");
        assert_eq!(read.step_aside, StepAside::Auto);
    }

    #[test]
    fn the_heartbeat_follows_the_lease() {
        let c = AuthorityConfig::new("a", "v1");
        assert_eq!(c.heartbeat_interval_ms, 10_000);
        for (lease, heartbeat) in [
            (3_000, 1_000),
            (1_000, 333),
            (30_000, 10_000),
            (120_000, 10_000),
        ] {
            let c = AuthorityConfig::new("a", "v1").with_timing(lease, lease / 3);
            assert_eq!(c.heartbeat_interval_ms, heartbeat, "lease {lease}");
            assert!(c.heartbeat_interval_ms * 3 <= lease);
        }
    }

    #[test]
    fn handler_limits_are_validated_and_optional_in_the_stored_config() {
        let c = AuthorityConfig::new("a", "v1").with_handler_limit("slow", 2);
        assert!(c.validate().is_ok());
        let back: AuthorityConfig = serde_json::from_str(&c.to_json()).expect("round trip");
        assert_eq!(back, c);
        let plain = AuthorityConfig::new("a", "v1");
        assert!(
            !plain.to_json().contains("handlerLimits"),
            "absent when unset"
        );
        let err = plain
            .with_handler_limit("slow", 0)
            .validate()
            .expect_err("refused");
        assert_eq!(err.code(), "INVALID");
        assert!(err.to_string().contains("handlerLimits.slow"), "{err}");
    }

    #[test]
    fn retry_policies_are_validated_applied_and_optional_in_the_stored_config() {
        let policy = RetryPolicy {
            max_attempts: Some(4),
            initial_delay_ms: 2_000,
            multiplier: crate::rules::retry::Multiplier::new(3.0).expect("valid"),
            max_delay_ms: 10_000,
        };
        let c = AuthorityConfig::new("a", "v1").with_retry("charge", policy);
        assert!(c.validate().is_ok());
        let back: AuthorityConfig = serde_json::from_str(&c.to_json()).expect("round trip");
        assert_eq!(back, c);
        assert_eq!(c.retry_for("charge", 0), policy.retry(0));
        assert_eq!(c.retry_for("other", 7), Retry::with_floor(7));
        assert!(!AuthorityConfig::new("a", "v1").to_json().contains("retry"));
        let bad = AuthorityConfig::new("a", "v1").with_retry(
            "charge",
            RetryPolicy {
                max_attempts: Some(0),
                ..policy
            },
        );
        let err = bad.validate().expect_err("refused");
        assert!(err.to_string().contains("retry.charge"), "{err}");
    }

    #[test]
    fn handler_rates_are_stored_as_written_and_their_names_checked() {
        let rate: Rate = "600/1m".parse().expect("a rate");
        let c = AuthorityConfig::new("a", "v1").with_handler_rate("api", rate);
        assert!(c.validate().is_ok());
        assert!(c.to_json().contains(r#""handlerRates":{"api":"600/1m"}"#));
        let back: AuthorityConfig = serde_json::from_str(&c.to_json()).expect("round trip");
        assert_eq!(back, c);
        let bad = AuthorityConfig::new("a", "v1").with_handler_rate("bell\u{7}", rate);
        assert_eq!(bad.validate().expect_err("refused").code(), "INVALID");
    }

    #[test]
    fn renew_not_below_lease_is_refused() {
        let err = AuthorityConfig::new("a", "v1")
            .with_timing(1_000, 1_000)
            .validate()
            .expect_err("refused");
        assert_eq!(err.code(), "INVALID");
        assert!(err.to_string().contains("renewIntervalMs"));
    }
}
