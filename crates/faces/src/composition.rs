//! The composition root: [`Core`] builds every part (policy from the settings, the
//! upstreams and the catalog over them, the pools, the live handles, the runtime) once, and
//! the server faces (stdio, HTTP, the command line, the demo) share it.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use crate::options::CoreOptions;
use policy::Policy;
use policy::principal::Principal;
use runtime::confinement::worker_policy;
use runtime::door::{Caller, Mode, Start, Started, Work};
use runtime::execution::ExecRequest;
use runtime::live::sessions::Sessions;
use runtime::pool::Pool;
use runtime::python::PythonRuntime;
use runtime::run::client::ClientLink;
use runtime::worker::{Language, WorkerSpawner};
use runtime::{ExecOutcome, Runtime};
use tools::catalog::Catalog;
use tools::config::Config;
use tools::upstream::Upstreams;

/// The skills of the user, of the working directory's project (when it is trusted) and of
/// the directories the settings serve (also what `tools search` ranks among the tools).
pub fn skills(config: &Config, settings: &tools::config::Settings) -> tools::skills::store::Skills {
    use tools::skills::store::{PROJECT_SKILLS, Skills};
    let project = config.project_dir.as_ref().map(|d| d.join(PROJECT_SKILLS));
    let trust = config.project_trust.clone().unwrap_or(Ok(()));
    let trust = trust.as_ref().map_err(|why| why as &dyn std::fmt::Display);
    Skills::new(&settings.skills, project, trust.copied())
}

/// Everything an execution needs, shared by the MCP handler and the command line.
pub struct Core {
    pub catalog: Catalog,
    pub runtime: Arc<Runtime>,
    pub policy: Arc<Policy>,
    pub started: Instant,
    pub options: CoreOptions,
    pub config_warnings: Vec<String>,
}

/// The store's file in the data directory (the default store).
pub const STORE_FILE: &str = "store.sqlite3";

/// Opens the store `options` name (made and migrated if new): `None` for `--store none`.
/// A named store that cannot be opened (unreachable, corrupt, a newer schema) is an error
/// that says so: the server does not start without the store it was told to use. The
/// default one (SQLite in the data directory) that cannot be opened (a read-only home in a
/// container) leaves the server in memory only, with a warning that says why.
pub async fn open_store(options: &CoreOptions) -> Result<Option<store::Shared>, store::StoreError> {
    let store = match store::open(&options.store, options.store_limits).await {
        Err(e) if !options.store_named => {
            tracing::warn!(
                "{e}; sessions' stored values and tasks' results are kept in memory only \
                 (name a store with --store to make this an error)"
            );
            None
        }
        other => other?,
    };
    if let Some(s) = &store {
        let d = s.describe();
        tracing::info!(
            "store: {} at {} (schema version {})",
            d.backend,
            d.location,
            d.schema_version
        );
    }
    Ok(store)
}

impl Core {
    /// Starts the core: upstreams stay unstarted (lazy), the worker pool fills in the
    /// background. Needs a tokio runtime. Keeps nothing beyond the process (no store).
    pub fn start(
        config: &Config,
        settings: &tools::config::Settings,
        options: CoreOptions,
    ) -> Arc<Core> {
        Core::start_with_store(config, settings, options, None)
    }

    /// [`Core::start`], keeping sessions' stored values and runs with a handle in `store`
    /// too (see [`open_store`]).
    pub fn start_with_store(
        config: &Config,
        settings: &tools::config::Settings,
        options: CoreOptions,
        store: Option<store::Shared>,
    ) -> Arc<Core> {
        let redactor = Arc::new(policy::redact::Redactor::new(secrets(config, settings)));
        policy::redact::install_for_logs(redactor.clone());
        let upstreams = Arc::new(
            Upstreams::new(config, settings)
                .with_redactor(redactor.clone())
                .with_definitions(tools::upstream::definitions::Definitions::new(
                    tools::catalog::cache::default_dir().as_deref(),
                    settings.tool_changes,
                )),
        );
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
            .with_access(settings.permissions.clone())
            .with_pii(settings.pii.clone())
            .with_hooks(policy::hooks::Hooks::new(
                &settings.hooks,
                &config.client_hooks,
                config.project_dir.clone(),
            )),
        );
        if let Some(filter) = policy::pii::log_filter(&policy.pii) {
            policy::redact::install_log_filter(Arc::new(filter));
        }
        for pattern in &settings.direct_tools {
            let names = config.servers.keys().map(String::as_str);
            if !names
                .clone()
                .any(|s| policy::pattern::reaches(pattern, names.clone(), s))
            {
                tracing::warn!(
                    "directTools: {pattern} reaches no configured server; it pins nothing"
                );
            }
        }
        let catalog = Catalog::with_cache(
            upstreams,
            tools::catalog::cache::ToolCache::for_config(config),
        );
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
        let runtime = Arc::new(
            Runtime::new(
                catalog.clone(),
                pool,
                python,
                options.sandbox == sandbox::SandboxMode::Disabled,
                policy.clone(),
                sessions,
                options.replica.clone(),
                Arc::new(skills(config, settings)),
                runtime::check::Checkers::new(
                    settings.check.clone(),
                    runtime::check::Confinement {
                        mode: options.sandbox,
                        helper_exe: Some(options.exe.clone()),
                        memory_bytes: settings
                            .check
                            .memory_mb
                            .unwrap_or(runtime::check::confine::DEFAULT_MEMORY_MB)
                            << 20,
                    },
                ),
            )
            .with_store(store.clone()),
        );
        if store.is_some() {
            runtime::cancels_from_store_periodically(Arc::downgrade(&runtime));
        }
        runtime::sweep_store_periodically(store);
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
    pub async fn execute(
        &self,
        language: Language,
        req: ExecRequest,
        principal: Principal,
        client: Option<ClientLink>,
    ) -> ExecOutcome {
        let start = Start {
            work: Work::Code {
                language,
                request: Box::new(req),
            },
            context: Caller { principal, client },
            mode: Mode::Plain { asks: None },
        };
        match self.runtime.begin(start).and_then(Started::waiting) {
            Ok(run) => run.outcome().await.into_ran(),
            Err(e) => ExecOutcome::refused(e.info()),
        }
    }

    /// What the `health` tool reports; sessions are `principal`'s own (and a count of all).
    pub(crate) async fn health(&self, principal: &Principal) -> Value {
        let mut v = json!({
            "version": env!("CARGO_PKG_VERSION"),
            "uptimeMs": self.started.elapsed().as_millis() as u64,
            "principal": {"name": principal.name(), "via": principal.via().as_str()},
            "replica": self.options.replica.id(),
            "sandbox": format!("{:?}", self.options.sandbox).to_lowercase(),
            // How pooled workers start: forked from a template per spawner, or with a
            // helper each, and why (docs/sandbox.md, "Workers forked from a template").
            "workerStart": runtime::worker::template::start_path(&runtime::confinement::worker_policy(
                self.options.sandbox,
                &self.options.exe,
                0,
            )),
            "pools": self.runtime.pool_stats().await,
            "grantPools": self.runtime.grant_pool_stats().await.into_iter().map(|(paths, stats)| {
                let mut v = json!(stats);
                v["dataPaths"] = json!(paths);
                v
            }).collect::<Vec<_>>(),
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
            // Tools whose definition changed since it was accepted (held), or that hid text.
            "heldTools": self
                .catalog
                .upstreams()
                .definitions()
                .notices(self.catalog.upstreams().names())
                .iter()
                .map(|n| n.to_json())
                .collect::<Vec<_>>(),
            "engines": {
                "javascript": "QuickJS-NG via rquickjs 0.14",
                "typescript": "oxc 0.146 (types stripped)",
                "python": self.runtime.python().install().map(|i| format!("CPython {} ({})", i.version, i.executable.display())),
            },
        });
        // The product line's documents' fields, beside ours.
        if let (Some(o), Value::Object(vitals)) = (v.as_object_mut(), self.runtime.vitals().await) {
            o.extend(vitals);
        }
        v
    }
}

/// Every credential the server holds: the configuration's (`tools::config::secret_values`), the
/// model provider's key (`llm.provider.apiKeyEnv`) and the tokens of stored OAuth logins.
/// A token refreshed or obtained later joins when the store saves it
/// (`policy::redact::learn_secret`).
fn secrets(config: &Config, settings: &tools::config::Settings) -> Vec<String> {
    let mut out = tools::config::secret_values(config);
    if let Some(var) = settings
        .llm
        .provider
        .as_ref()
        .and_then(|p| p.api_key_env.as_deref())
        && let Ok(key) = std::env::var(var)
    {
        out.push(key);
    }
    out.extend(tools::oauth::stored_tokens(config));
    out
}
