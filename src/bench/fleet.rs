//! The authorities a benchmark runs: K real authority runtimes, either in this process
//! (one tokio runtime, each authority with its own store connection, as separate
//! processes would have) or as K `leasehold authority` OS processes.

use std::process::{Child, Command, Stdio};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::authority::config::{AuthorityConfig, StepAside};
use crate::authority::handlers::Workload;
use crate::authority::runtime::{RunOptions, run_authority_with};
use crate::authority::stats::Stats;
use crate::authority::workload;
use crate::clock::Millis;
use crate::error::{Error, Result};

use crate::store::{Store, StoreKind};

/// How the fleet's authorities are set up.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    /// The store URL each authority opens (its own connection).
    pub url: String,
    pub authorities: usize,
    /// Build tag: decides which items they may claim.
    pub build: String,
    /// Workload name ([`workload::named`]).
    pub workload: String,
    pub concurrency: usize,
    pub batch: usize,
    pub lease_ms: Millis,
    pub poll_ms: Millis,
    /// Real OS processes instead of in-process runtimes.
    pub processes: bool,
    /// Whether the authorities step aside from a crowded write lock.
    pub step_aside: StepAside,
}

impl FleetOptions {
    /// A small in-process fleet over the memory store, for the benches' own tests.
    #[cfg(test)]
    pub(crate) fn in_memory(
        authorities: usize,
        workload: &str,
        concurrency: usize,
        poll_ms: Millis,
    ) -> Self {
        Self {
            url: "memory".into(),
            authorities,
            build: super::BENCH_BUILD.into(),
            workload: workload.into(),
            concurrency,
            batch: concurrency,
            lease_ms: 30_000,
            poll_ms,
            processes: false,
            step_aside: StepAside::Auto,
        }
    }

    /// Authority `i`'s config.
    fn config(&self, i: usize) -> AuthorityConfig {
        let mut config = AuthorityConfig::new(format!("{}-a{i}", self.build), self.build.clone())
            .with_timing(self.lease_ms, self.lease_ms / 3);
        config.worker_concurrency = self.concurrency;
        config.claim_batch_size = self.batch;
        config.poll_interval_ms = self.poll_ms;
        config.step_aside = self.step_aside;
        config
    }
}

/// Running authorities.
pub enum Fleet {
    InProcess {
        runtime: tokio::runtime::Runtime,
        stop: watch::Sender<bool>,
        tasks: Vec<JoinHandle<Result<Stats>>>,
    },
    Processes(Vec<Child>),
}

impl Fleet {
    /// Starts the fleet. In-process authorities over a memory store share `primary`'s
    /// backend (a memory store lives in this process only).
    ///
    /// # Errors
    /// `INVALID` for unsafe knobs or processes over a memory store; `LOCAL_FAILURE` when
    /// an authority process cannot be started; a store failure.
    pub fn start(options: &FleetOptions, primary: &Store) -> Result<Self> {
        let configs: Vec<AuthorityConfig> = (0..options.authorities)
            .map(|i| options.config(i))
            .collect();
        for config in &configs {
            config.validate()?;
        }
        if options.processes {
            if primary.kind() == StoreKind::Memory {
                return Err(Error::Invalid(
                    "--processes needs a store other processes can open (SQLite or Postgres), not memory"
                        .into(),
                ));
            }
            return spawn_processes(options, &configs).map(Self::Processes);
        }
        Self::in_process(
            options,
            primary,
            configs,
            workload::named(&options.workload, 0)?,
        )
    }

    /// Starts the fleet in this process running `workload` (a benchmark's own handlers)
    /// instead of a named one.
    ///
    /// # Errors
    /// `INVALID` for unsafe knobs or `options.processes` (processes run named workloads
    /// only); a store failure.
    pub fn start_with(options: &FleetOptions, primary: &Store, workload: Workload) -> Result<Self> {
        if options.processes {
            return Err(Error::Invalid(
                "this benchmark runs its authorities in this process only".into(),
            ));
        }
        let configs: Vec<AuthorityConfig> = (0..options.authorities)
            .map(|i| options.config(i))
            .collect();
        for config in &configs {
            config.validate()?;
        }
        Self::in_process(options, primary, configs, workload)
    }

    fn in_process(
        options: &FleetOptions,
        primary: &Store,
        configs: Vec<AuthorityConfig>,
        workload: Workload,
    ) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Local(format!("cannot start the async runtime: {e}")))?;
        let (stop, watcher) = watch::channel(false);
        let mut tasks = Vec::with_capacity(configs.len());
        for config in configs {
            let store = if primary.kind() == StoreKind::Memory {
                primary.clone()
            } else {
                super::open_writer(&options.url)?
            };
            let mut watcher = watcher.clone();
            let shutdown = async move {
                let _ = watcher.wait_for(|stopped| *stopped).await;
            };
            let run = run_authority_with(
                store,
                config,
                workload.clone(),
                RunOptions {
                    // Nothing to say: the benchmark reports on its own.
                    log: Some(tracing::Dispatch::none()),
                    ..RunOptions::default()
                },
                shutdown,
            );
            tasks.push(runtime.spawn(run));
        }
        Ok(Self::InProcess {
            runtime,
            stop,
            tasks,
        })
    }

    /// The OS process ids of the authorities when they run as processes (none in-process).
    #[must_use]
    pub fn process_ids(&self) -> Vec<u32> {
        match self {
            Self::InProcess { .. } => Vec::new(),
            Self::Processes(children) => children.iter().map(Child::id).collect(),
        }
    }

    /// Fails when an authority process has already exited: the bench would otherwise wait
    /// out its whole timeout for work nobody is doing. The process's own error is on
    /// stderr, which it shares with the bench.
    ///
    /// # Errors
    /// `LOCAL_FAILURE` naming the process that exited and how.
    pub fn check_running(&mut self) -> Result<()> {
        let Self::Processes(children) = self else {
            return Ok(());
        };
        for child in children {
            let pid = child.id();
            let exited = child
                .try_wait()
                .map_err(|e| Error::Local(format!("authority process {pid}: {e}")))?;
            if let Some(status) = exited {
                return Err(Error::Local(format!(
                    "authority process {pid} exited ({status}) before the bench was done; its error is above"
                )));
            }
        }
        Ok(())
    }

    /// Stops every authority (a clean shutdown: they release what they hold) and returns
    /// their counters.
    ///
    /// # Errors
    /// An authority that failed, or a process that did not report.
    pub fn stop(self) -> Result<Vec<Stats>> {
        match self {
            Self::InProcess {
                runtime,
                stop,
                tasks,
            } => {
                let _ = stop.send(true);
                runtime.block_on(async {
                    let mut all = Vec::with_capacity(tasks.len());
                    for task in tasks {
                        let stats = task.await.map_err(|e| {
                            Error::Local(format!("an authority task failed: {e}"))
                        })??;
                        all.push(stats);
                    }
                    Ok(all)
                })
            }
            Self::Processes(mut children) => {
                for child in &mut children {
                    if matches!(child.try_wait(), Ok(Some(_))) {
                        // Already gone: nothing to stop (and `kill` would complain).
                        continue;
                    }
                    // SIGTERM: the authority releases what it owns and prints its counters.
                    let _ = Command::new("kill")
                        .args(["-TERM", &child.id().to_string()])
                        .status();
                }
                children.into_iter().map(process_stats).collect()
            }
        }
    }
}

fn spawn_processes(options: &FleetOptions, configs: &[AuthorityConfig]) -> Result<Vec<Child>> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::Local(format!("cannot find the leasehold binary: {e}")))?;
    let mut children = Vec::with_capacity(configs.len());
    for config in configs {
        let spawned = Command::new(&exe)
            .arg("authority")
            .args(["--instance", &config.instance_id])
            .args(["--build", &config.build])
            .args(["--workload", &options.workload])
            .args(["--concurrency", &config.worker_concurrency.to_string()])
            .args(["--batch", &config.claim_batch_size.to_string()])
            .args(["--poll-ms", &config.poll_interval_ms.to_string()])
            .args(["--lease-ms", &config.lease_duration_ms.to_string()])
            .args(["--step-aside", config.step_aside.as_str()])
            .args(["--log-format", "off"])
            // Through the environment, so a password never shows in a process list.
            .env("LEASEHOLD_STORE", &options.url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        match spawned {
            Ok(child) => children.push(child),
            Err(e) => {
                for mut child in children {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                return Err(Error::Local(format!(
                    "cannot start an authority process: {e}"
                )));
            }
        }
    }
    Ok(children)
}

/// Waits for a stopped authority process and reads the counters it prints on stdout.
fn process_stats(child: Child) -> Result<Stats> {
    let pid = child.id();
    let output = child
        .wait_with_output()
        .map_err(|e| Error::Local(format!("authority process {pid}: {e}")))?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .rev()
        .find_map(|line| serde_json::from_str::<Stats>(line).ok())
        .ok_or_else(|| {
            Error::Local(format!(
                "authority process {pid} exited ({}) without reporting its counters",
                output.status
            ))
        })
}
