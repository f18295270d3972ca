//! code-executor-mcp: an MCP server through which an agent reaches every other MCP server by
//! writing code that runs in a sandbox.
//!
//! The parts, in the order a request meets them (see docs/ and ../shared/DESIGN.md):
//! [`server`] (rmcp handler) -> [`policy`] (limits, allowlists) -> [`runtime`] (strip, pool,
//! worker, bridge) -> [`upstream`] (MCP clients) with [`catalog`] (names, search, schemas)
//! over them, configured by [`config`]. [`cli`] is the command line; [`demo`] the built-in
//! demo server and program.

pub(crate) mod bench;
pub mod catalog;
mod child;
pub mod cli;
mod config;
mod confinement;
mod console;
mod defaults;
pub mod demo;
pub(crate) mod http;
mod lines;
pub(crate) mod oauth;
mod options;
mod pipes;
pub(crate) mod policy;
mod principal;
mod replica;
pub(crate) mod runtime;
pub(crate) mod server;
pub(crate) mod setup;
mod shutdown;
mod tls;
pub(crate) mod trace;
pub(crate) mod upstream;

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use catalog::Catalog;
use config::Config;
use confinement::worker_policy;
pub use defaults::{DEMO_SERVER_ARG, WORKER_ARG};
pub use options::CoreOptions;
use policy::Policy;
use principal::Principal;
use runtime::door::{Caller, Mode, Start, Started};
use runtime::execution::ExecRequest;
use runtime::live::sessions::Sessions;
use runtime::pool::Pool;
use runtime::python::PythonRuntime;
use runtime::run::client::ClientLink;
use runtime::worker::{Language, WorkerSpawner};
use runtime::{ExecOutcome, Runtime};
use upstream::Upstreams;

/// Everything an execution needs, shared by the MCP handler and the command line.
pub struct Core {
    pub catalog: Catalog,
    pub runtime: Arc<Runtime>,
    pub policy: Arc<Policy>,
    pub started: Instant,
    pub options: CoreOptions,
    pub config_warnings: Vec<String>,
}

impl Core {
    /// Starts the core: upstreams stay unstarted (lazy), the worker pool fills in the
    /// background. Needs a tokio runtime.
    pub fn start(config: &Config, settings: &config::Settings, options: CoreOptions) -> Arc<Core> {
        let redactor = Arc::new(policy::redact::Redactor::new(secrets(config, settings)));
        policy::redact::install_for_logs(redactor.clone());
        let upstreams = Arc::new(Upstreams::new(config, settings).with_redactor(redactor.clone()));
        upstreams.connect_eagerly();
        let policy = Arc::new(
            Policy::new(
                settings.policy.clone(),
                settings.execution_limits,
                &settings.audit,
                settings.limits,
                runtime::output::default_scratch_root(),
            )
            .with_servers(config.servers.keys())
            .with_long_runs(settings.long_runs)
            .with_pauses(settings.approvals.clone(), settings.llm.clone(), redactor)
            .with_access(settings.permissions.clone()),
        );
        let catalog = Catalog::with_cache(upstreams, catalog::cache::ToolCache::for_config(config));
        let sandbox_policy = worker_policy(
            options.sandbox,
            &options.exe,
            settings.long_runs.max_duration_ms,
        );
        let spawner = WorkerSpawner::javascript(&options.exe, sandbox_policy.clone());
        let budget = runtime::pool::MemoryBudget::new(options.pool_memory_bytes);
        let pool = Pool::start(
            spawner,
            options.sizing(options.pool_size, options.pool_size_pinned),
            budget.clone(),
        );
        let python = PythonRuntime::start(
            options.python.clone(),
            sandbox_policy,
            options.sizing(options.python.pool_size, options.python.pool_size_pinned),
            budget,
        );
        let root = runtime::roots::workspace_root();
        runtime::roots::remove_stale_roots_in_background(root.clone());
        let sessions = Sessions::new(settings.sessions, root);
        let runtime = Arc::new(Runtime::new(
            catalog.clone(),
            pool,
            python,
            options.sandbox == sandbox::SandboxMode::Disabled,
            policy.clone(),
            sessions,
            options.replica.clone(),
        ));
        runtime::end_idle_sessions(Arc::downgrade(&runtime));
        runtime::sweep_periodically(Arc::downgrade(&runtime));
        Arc::new(Core {
            runtime,
            policy,
            catalog,
            started: Instant::now(),
            options,
            config_warnings: config.warnings.clone(),
        })
    }

    /// Runs code for `principal` through the runtime's one door and waits for the outcome
    /// (see [`runtime::door`]). Never fails: a refusal is an outcome with `error`.
    pub(crate) async fn execute(
        &self,
        language: Language,
        req: ExecRequest,
        principal: Principal,
        client: Option<ClientLink>,
    ) -> ExecOutcome {
        let start = Start {
            language,
            request: req,
            context: Caller { principal, client },
            mode: Mode::Plain { asks: None },
        };
        match self.runtime.begin(start).and_then(Started::waiting) {
            Ok(run) => run.outcome().await,
            Err(e) => ExecOutcome::refused(e.info()),
        }
    }

    /// What the `health` tool reports; sessions are `principal`'s own (and a count of all).
    pub(crate) async fn health(&self, principal: &Principal) -> Value {
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "uptimeMs": self.started.elapsed().as_millis() as u64,
            "principal": {"name": principal.name(), "via": principal.via().as_str()},
            "replica": self.options.replica.id(),
            "sandbox": format!("{:?}", self.options.sandbox).to_lowercase(),
            "pools": self.runtime.pool_stats().await,
            "sessions": self.runtime.live().sessions().report(principal),
            "longRuns": self.runtime.live().parked().report(),
            "pausedExecutions": self.runtime.live().paused().len(),
            "servers": self.catalog.upstreams().status().await,
            "configWarnings": self.config_warnings,
            "audit": {
                "path": self.policy.audit.path(),
                "problem": self.policy.audit.problem(),
            },
            "permissions": self.policy.access.to_json(),
            "engines": {
                "javascript": "QuickJS-NG via rquickjs 0.14",
                "typescript": "oxc 0.146 (types stripped)",
                "python": self.runtime.python().install().map(|i| format!("CPython {} ({})", i.version, i.executable.display())),
            },
        })
    }
}

/// Every credential the server holds: the configuration's (`config::secret_values`), the
/// model provider's key (`llm.provider.apiKeyEnv`) and the tokens of stored OAuth logins.
/// A token refreshed or obtained later joins when the store saves it
/// (`policy::redact::learn_secret`).
fn secrets(config: &Config, settings: &config::Settings) -> Vec<String> {
    let mut out = config::secret_values(config);
    if let Some(var) = settings
        .llm
        .provider
        .as_ref()
        .and_then(|p| p.api_key_env.as_deref())
        && let Ok(key) = std::env::var(var)
    {
        out.push(key);
    }
    out.extend(oauth::stored_tokens(config));
    out
}
