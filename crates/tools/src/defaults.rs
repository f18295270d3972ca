//! Fixed names and defaults: the arguments the binary re-enters
//! itself with, and the pools' default sizes, shared by the command line, the settings and the
//! runtime (a leaf: it depends on nothing of ours).

/// First argument of the binary re-entered as a worker: `code-executor-mcp __worker js`.
pub const WORKER_ARG: &str = "__worker";
/// First argument of the binary re-entered as the built-in demo MCP server.
pub const DEMO_SERVER_ARG: &str = "__demo-server";
/// First argument of the binary re-entered as one server of the synthetic catalog (`eval`).
pub const SYNTHETIC_SERVER_ARG: &str = "__synthetic-server";

/// Default number of pre-started JavaScript workers: one request in flight and one spare
/// covers an agent's sequential use; each idle worker costs a few MB.
pub const DEFAULT_POOL_SIZE: usize = 2;
/// Default number of pre-started Python workers: an idle CPython with the shim loaded costs
/// about 17 MB (proportional set size), so one is kept warm, and the pool grows under load
/// (up to `poolMax`); the server and its warm pools stay under 60 MB idle.
pub const DEFAULT_PYTHON_POOL_SIZE: usize = 1;
/// Largest `poolMax` (and `poolSize`).
pub const MAX_POOL_SIZE: usize = 64;
/// Default `poolMax`: eight warm workers per language absorb a burst of parallel tool calls.
pub const DEFAULT_POOL_MAX: usize = 8;
/// Default `poolMemoryMb`: the ceiling of all pools' ready workers together.
pub const DEFAULT_POOL_MEMORY_BYTES: u64 = 256 * 1024 * 1024;
/// Default `poolShrinkAfterMs`: idle time after which a grown pool stops one worker.
pub const DEFAULT_POOL_SHRINK_AFTER: std::time::Duration = std::time::Duration::from_secs(10);
