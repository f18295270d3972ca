//! code-executor-mcp: an MCP server through which an agent reaches every other MCP server by
//! writing code that runs in a sandbox.
//!
//! The parts, in the order a request meets them (see docs/ and ../shared/DESIGN.md):
//! [`server`] (rmcp handler) -> [`policy`] (limits, allowlists) -> [`runtime`] (strip, pool,
//! worker, bridge) -> [`upstream`] (MCP clients) with [`catalog`] (names, search, schemas)
//! over them, configured by [`config`]. [`cli`] is the command line; [`demo`] the built-in
//! demo server and program.

pub mod bench;
pub mod catalog;
pub mod cli;
pub mod config;
pub mod demo;
pub mod policy;
pub mod runtime;
pub mod server;
pub mod upstream;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use catalog::Catalog;
use config::Config;
use runtime::Runtime;
use runtime::pool::Pool;
use runtime::worker::{Language, WorkerSpawner};
use upstream::Upstreams;

/// First argument of the binary re-entered as a worker: `code-executor-mcp __worker js`.
pub const WORKER_ARG: &str = "__worker";
/// First argument of the binary re-entered as the built-in demo MCP server.
pub const DEMO_SERVER_ARG: &str = "__demo-server";

/// Default number of pre-started JavaScript workers: one request in flight and one spare
/// covers an agent's sequential use; each idle worker costs a few MB.
pub const DEFAULT_POOL_SIZE: usize = 2;

/// How the core is started.
#[derive(Debug, Clone)]
pub struct CoreOptions {
    /// The binary re-entered for workers (normally `std::env::current_exe()`).
    pub exe: PathBuf,
    pub pool_size: usize,
    pub sandbox: sandbox::SandboxMode,
}

/// Everything an execution needs, shared by the MCP handler and the command line.
pub struct Core {
    pub catalog: Catalog,
    pub runtime: Runtime,
    pub started: Instant,
    pub options: CoreOptions,
    pub config_warnings: Vec<String>,
}

impl Core {
    /// Starts the core: upstreams stay unstarted (lazy), the worker pool fills in the
    /// background. Needs a tokio runtime.
    pub fn start(config: &Config, options: CoreOptions) -> Arc<Core> {
        let upstreams = Arc::new(Upstreams::new(config));
        let catalog = Catalog::with_cache(upstreams, catalog::cache::ToolCache::for_config(config));
        let spawner = WorkerSpawner {
            exe: options.exe.clone(),
            language: Language::JavaScript,
            policy: worker_policy(options.sandbox, &options.exe),
        };
        let pool = Pool::start(spawner, options.pool_size);
        Arc::new(Core {
            runtime: Runtime::new(
                catalog.clone(),
                pool,
                options.sandbox == sandbox::SandboxMode::Disabled,
            ),
            catalog,
            started: Instant::now(),
            options,
            config_warnings: config.warnings.clone(),
        })
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
            "engines": {"javascript": "QuickJS-NG via rquickjs 0.14", "typescript": "oxc 0.146 (types stripped)"},
        })
    }
}

/// The confinement every worker gets; `exe` re-enters as the sandbox helper.
pub fn worker_policy(mode: sandbox::SandboxMode, exe: &std::path::Path) -> sandbox::SandboxPolicy {
    let mut policy = sandbox::SandboxPolicy::new(mode, Some(exe.to_path_buf()));
    policy.limits = sandbox::ResourceLimits {
        // CPU time is a backstop behind the host's wall-clock deadline.
        cpu_seconds: policy::MAX_TIMEOUT_MS / 1000 + 5,
        // A JS worker is two threads (engine and pipe reader); nothing may fork.
        max_processes: 8,
        // stdin, stdout, stderr and a few the runtime opens.
        max_open_files: 64,
        ..sandbox::ResourceLimits::default()
    };
    policy
}
