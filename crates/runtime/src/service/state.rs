//! The runtime's parts (pools, policy, live handles, checkers, ...) and what the faces read
//! of them (`health`'s vitals, the pools' statistics, readiness problems).

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::error::RunError;
use crate::host::net::Clients;
use crate::host::remembered::Remembered;
use crate::live::Live;
use crate::live::sessions::Sessions;
use crate::worker::Language;
use crate::worker::grants::GrantPools;
use crate::worker::pool::{Pool, PoolStats};
use crate::worker::python::PythonRuntime;
use policy::Policy;
use tools::catalog::Catalog;
use tools::skills::store::Skills;

/// Runs TypeScript, JavaScript and Python executions.
pub struct Runtime {
    pub(super) catalog: Catalog,
    pub(super) js_pool: Pool,
    pub(super) python: PythonRuntime,
    pub(super) unconfined: bool,
    pub(super) policy: Arc<Policy>,
    /// The table of live handles: sessions, parked runs and tasks, paused executions.
    pub(super) live: Live,
    /// "Approve for the session" answers.
    pub(super) remembered: Arc<Remembered>,
    /// HTTP clients for `fetch`, one per set of granted destinations, shared by executions.
    pub(super) fetch_clients: Arc<Clients>,
    /// Saved code (`skills.name(args)`), run as nested executions.
    pub(super) skills: Arc<Skills>,
    /// The type checkers of `check: true`.
    pub(super) checkers: Arc<crate::check::Checkers>,
    /// Warm workers for executions granted data paths (`permissions.read`).
    pub(super) grant_pools: GrantPools,
    /// Skills one request's code runs at once (`executionLimits.maxConcurrentSkills`, else
    /// `poolMax`); see [`crate::run::ledger::SkillSlots`].
    pub(super) max_concurrent_skills: usize,
    /// When the runtime (and so the server) started, for `health`'s `uptime`.
    pub(super) started: Instant,
}

impl Runtime {
    #[expect(
        clippy::too_many_arguments,
        reason = "the composition root hands over every part once"
    )]
    pub fn new(
        catalog: Catalog,
        js_pool: Pool,
        python: PythonRuntime,
        unconfined: bool,
        policy: Arc<Policy>,
        sessions: Sessions,
        replica: policy::replica::Replica,
        skills: Arc<Skills>,
        checkers: Arc<crate::check::Checkers>,
    ) -> Self {
        let max_concurrent_skills = match policy.execution.max_concurrent_skills {
            0 => js_pool.sizing().max.max(1),
            n => n,
        };
        Runtime {
            started: Instant::now(),
            max_concurrent_skills,
            skills,
            checkers,
            fetch_clients: Arc::default(),
            catalog,
            js_pool,
            python,
            unconfined,
            live: Live::new(sessions, policy.long_runs, replica),
            policy,
            remembered: Arc::default(),
            grant_pools: GrantPools::default(),
        }
    }

    /// Keeps sessions' stored values and runs with a handle in `store` too, so that they
    /// survive a restart (`crate::live::durable`); `None` keeps them in memory only.
    pub fn with_store(mut self, store: Option<store::Shared>) -> Self {
        if let Some(store) = store {
            let durable = crate::live::durable::Durable::new(store, self.policy.redactor.clone());
            durable.keep_alive();
            self.live.set_durable(durable);
        }
        self
    }

    /// The skills code saves and calls.
    pub fn skills(&self) -> &Skills {
        &self.skills
    }

    /// The table of live handles every server face asks.
    pub fn live(&self) -> &Live {
        &self.live
    }

    /// The approvals inbox (`approvals.fallback: "inbox"`), which `serve --http` serves to
    /// each principal too.
    pub fn inbox(&self) -> &Arc<crate::host::inbox::Inbox> {
        &self.remembered.inbox
    }

    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    pub async fn pool_stats(&self) -> Vec<PoolStats> {
        vec![self.js_pool.stats().await, self.python.stats().await]
    }

    /// `health` as the product line's documents have it, with our values: `healthy` (no
    /// [`Runtime::problems`], the checks of `/readyz`; `problems` says them), `auditLog.enabled`,
    /// `mcpClients.connected` (upstream servers connected now), `connectionPool` (executions
    /// running, waiting in the queue, and the most that run at once), `uptime` in seconds and
    /// `timestamp` (RFC 3339). Both `health` and code's `health` answer these.
    /// Why the server cannot run code well now, given its pools' `stats` (none: it can):
    /// workers that cannot start, a pool still warming up, an audit log that is not written.
    /// `/readyz` fails on them, and `health` reports them (`healthy`, `problems`).
    pub fn problems(&self, stats: &[PoolStats]) -> Vec<String> {
        let python = self.python.install().is_some();
        let mut problems = Vec::new();
        for p in stats {
            if p.language == "python" && !python {
                continue;
            }
            // An empty pool is a problem before its first worker started, or when workers
            // fail to start; not when its workers are all busy: a replica under load stays
            // ready, or a proxy's health check would take it out and send its pinned handles
            // elsewhere.
            if p.target > 0 && p.ready == 0 {
                match &p.last_error {
                    Some(e) => problems.push(format!("{} workers cannot start: {e}", p.language)),
                    None if p.started == 0 => {
                        problems.push(format!("{} pool is warming up", p.language));
                    }
                    None => {}
                }
            }
        }
        if let Some(why) = self.policy.audit.problem() {
            problems.push(format!(
                "the audit log is not written ({why}): mount a writable volume for it, or set \
                 audit.enabled to false"
            ));
        }
        problems
    }

    pub async fn vitals(&self) -> Value {
        let connected = self
            .catalog
            .upstreams()
            .status()
            .await
            .iter()
            .filter(|s| s.status == "connected")
            .count();
        let problems = self.problems(&self.pool_stats().await);
        let audit = &self.policy.audit;
        let (active, waiting, max) = self.policy.admission.occupancy();
        serde_json::json!({
            "healthy": problems.is_empty(),
            "problems": problems,
            "auditLog": {"enabled": audit.path().is_some()},
            "mcpClients": {"connected": connected},
            "connectionPool": {"active": active, "waiting": waiting, "max": max},
            "uptime": (self.started.elapsed().as_secs_f64() * 1e3).round() / 1e3,
            "timestamp": policy::audit::rfc3339_now(),
        })
    }

    /// The warm pools of read grants (`worker::grants`), each with its data paths.
    pub async fn grant_pool_stats(&self) -> Vec<(Vec<std::path::PathBuf>, PoolStats)> {
        self.grant_pools.stats().await
    }

    pub fn python(&self) -> &PythonRuntime {
        &self.python
    }

    pub(super) async fn pool(&self, language: Language) -> Result<&Pool, RunError> {
        match language {
            Language::JavaScript => Ok(&self.js_pool),
            Language::Python => self
                .python
                .pool()
                .await
                .map_err(RunError::PythonUnavailable),
        }
    }
}
