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
mod console;
pub mod demo;
pub(crate) mod oauth;
pub(crate) mod policy;
pub(crate) mod runtime;
pub(crate) mod server;
mod tls;
pub(crate) mod upstream;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use catalog::Catalog;
use config::Config;
use policy::Policy;
use policy::audit::{AuditEvent, sha256_hex};
use runtime::pool::Pool;
use runtime::python::{PythonOptions, PythonRuntime};
use runtime::worker::{Language, WorkerSpawner};
use runtime::{ExecOutcome, ExecRequest, Runtime};
use upstream::Upstreams;

/// First argument of the binary re-entered as a worker: `code-executor-mcp __worker js`.
pub const WORKER_ARG: &str = "__worker";
/// First argument of the binary re-entered as the built-in demo MCP server.
pub const DEMO_SERVER_ARG: &str = "__demo-server";

/// Default number of pre-started JavaScript workers: one request in flight and one spare
/// covers an agent's sequential use; each idle worker costs a few MB.
pub const DEFAULT_POOL_SIZE: usize = 2;
/// Default number of pre-started Python workers, for the same reason; an idle CPython with
/// the shim loaded costs about 15 MB.
pub const DEFAULT_PYTHON_POOL_SIZE: usize = 2;

/// How the core is started.
#[derive(Debug, Clone)]
pub struct CoreOptions {
    /// The binary re-entered for workers (normally `std::env::current_exe()`).
    pub exe: PathBuf,
    pub pool_size: usize,
    pub sandbox: sandbox::SandboxMode,
    pub python: PythonOptions,
}

/// Everything an execution needs, shared by the MCP handler and the command line.
pub struct Core {
    pub catalog: Catalog,
    pub runtime: Runtime,
    pub policy: Arc<Policy>,
    pub started: Instant,
    pub options: CoreOptions,
    pub config_warnings: Vec<String>,
}

impl Core {
    /// Starts the core: upstreams stay unstarted (lazy), the worker pool fills in the
    /// background. Needs a tokio runtime.
    pub fn start(config: &Config, settings: &config::Settings, options: CoreOptions) -> Arc<Core> {
        let upstreams = Arc::new(Upstreams::new(config, settings));
        upstreams.connect_eagerly();
        let policy = Arc::new(
            Policy::new(
                settings.policy.clone(),
                settings.execution_limits,
                &settings.audit,
                settings.limits,
                runtime::output::default_scratch_root(),
            )
            .with_servers(config.servers.keys()),
        );
        let catalog = Catalog::with_cache(upstreams, catalog::cache::ToolCache::for_config(config));
        let sandbox_policy = worker_policy(options.sandbox, &options.exe);
        let spawner = WorkerSpawner::javascript(&options.exe, sandbox_policy.clone());
        let pool = Pool::start(spawner, options.pool_size);
        let python = PythonRuntime::start(options.python.clone(), sandbox_policy);
        Arc::new(Core {
            runtime: Runtime::new(
                catalog.clone(),
                pool,
                python,
                options.sandbox == sandbox::SandboxMode::Disabled,
                policy.clone(),
            ),
            policy,
            catalog,
            started: Instant::now(),
            options,
            config_warnings: config.warnings.clone(),
        })
    }

    /// Runs code for `client`: admission (concurrency, queue, rate), then the run, with its
    /// start and end in the audit log. Never fails: a refusal is an outcome with `error`.
    pub async fn execute(
        &self,
        language: Language,
        mut req: ExecRequest,
        client: &str,
    ) -> ExecOutcome {
        let admitted = match self.policy.admission.admit(client).await {
            Ok(a) => a,
            Err(reason) => {
                self.policy.audit.record_now(AuditEvent::RunRefused {
                    client: client.to_string(),
                    reason: reason.clone(),
                });
                return ExecOutcome::refused("BusyError", reason);
            }
        };
        req.execution = new_execution_id();
        req.tool_rate = Some(admitted.tool_calls.clone());
        self.policy.audit.record(AuditEvent::RunStart {
            execution: req.execution.clone(),
            client: client.to_string(),
            language: match language {
                Language::JavaScript => "typescript",
                Language::Python => "python",
            },
            code_sha256: sha256_hex(req.code.as_bytes()),
            code_bytes: req.code.len(),
            allowed_tools: req.allowed_tools.clone(),
        });
        let mut end = RunEnd {
            audit: &self.policy.audit,
            execution: Some(req.execution.clone()),
            started: Instant::now(),
            tool_calls: req.tool_calls.clone(),
        };
        let outcome = self.runtime.execute(language, req).await;
        end.write(&outcome);
        drop(admitted);
        outcome
    }

    /// What the `health` tool reports.
    pub async fn health(&self) -> Value {
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "uptimeMs": self.started.elapsed().as_millis() as u64,
            "sandbox": format!("{:?}", self.options.sandbox).to_lowercase(),
            "pools": self.runtime.pool_stats().await,
            "servers": self.catalog.upstreams().status().await,
            "configWarnings": self.config_warnings,
            "engines": {
                "javascript": "QuickJS-NG via rquickjs 0.14",
                "typescript": "oxc 0.146 (types stripped)",
                "python": self.runtime.python().install().map(|i| format!("CPython {} ({})", i.version, i.executable.display())),
            },
        })
    }
}

/// The `run.end` line of an execution. Written with the outcome when the run finishes; an
/// execution abandoned before that (the client cancelled the request, the server is shutting
/// down) is recorded as `cancelled` when it is dropped, so every `run.start` has its end.
struct RunEnd<'a> {
    audit: &'a policy::audit::AuditLog,
    /// Taken when the line is written.
    execution: Option<String>,
    started: Instant,
    tool_calls: Arc<std::sync::atomic::AtomicU32>,
}

impl RunEnd<'_> {
    fn write(&mut self, outcome: &ExecOutcome) {
        let Some(execution) = self.execution.take() else {
            return;
        };
        self.audit.record_now(AuditEvent::RunEnd {
            execution,
            outcome: if outcome.error.is_none() {
                "ok"
            } else {
                "error"
            },
            error: outcome.error.as_ref().map(|e| e.name.clone()),
            duration_ms: outcome.duration_ms,
            tool_calls: outcome.tool_calls,
            result_bytes: outcome.result.to_string().len(),
            log_bytes: outcome.logs.iter().map(|l| l.text.len()).sum(),
            memory_peak_bytes: outcome.memory_peak_bytes,
        });
    }
}

impl Drop for RunEnd<'_> {
    fn drop(&mut self) {
        let Some(execution) = self.execution.take() else {
            return;
        };
        self.audit.record_now(AuditEvent::RunEnd {
            execution,
            outcome: "cancelled",
            error: None,
            duration_ms: (self.started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
            tool_calls: self.tool_calls.load(std::sync::atomic::Ordering::Relaxed),
            result_bytes: 0,
            log_bytes: 0,
            memory_peak_bytes: None,
        });
    }
}

/// The confinement every worker gets; `exe` re-enters as the sandbox helper.
pub fn worker_policy(mode: sandbox::SandboxMode, exe: &std::path::Path) -> sandbox::SandboxPolicy {
    let mut policy = sandbox::SandboxPolicy::new(mode, Some(exe.to_path_buf()));
    policy.limits = sandbox::ResourceLimits {
        // CPU time is a backstop behind the host's wall-clock deadline. It is counted per
        // process over all its threads, so a run that keeps every core busy until the
        // longest deadline must stay under it: the deadline times the cores, plus a margin.
        cpu_seconds: (policy::MAX_TIMEOUT_MS / 1000)
            * std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
            + 5,
        // A JS worker is two threads (engine and pipe reader); nothing may fork.
        max_processes: 8,
        // stdin, stdout, stderr and a few the runtime opens.
        max_open_files: 64,
        ..sandbox::ResourceLimits::default()
    };
    policy
}

/// A fresh, unguessable execution id (16 hex digits).
fn new_execution_id() -> String {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        b = (t.as_nanos() as u64).to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}
