//! The `bench` subcommand's flags (`code-executor-mcp bench --help`).

use std::path::PathBuf;

use anyhow::Context;

#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// server-everything's dist/index.js (default: $EVERYTHING_JS).
    #[arg(long, value_name = "PATH")]
    pub(crate) everything: Option<PathBuf>,
    /// Node.js to run it with.
    #[arg(long, default_value = "node")]
    pub(crate) node: String,
    /// Samples per measurement (with --http: calls per client per round).
    #[arg(long, default_value_t = 50)]
    pub(crate) iterations: usize,
    /// Instead of the latency report: executions per second and latency percentiles over
    /// streamable HTTP (`serve --http`) at 1, 8 and 32 concurrent clients, next to a direct
    /// HTTP `echo`, and the server's memory.
    #[arg(long)]
    pub(crate) http: bool,
    /// With --http: executions per second through HAProxy (the shipped
    /// deploy/haproxy/haproxy.cfg, --haproxy-config) in front of 1 and of 3 replicas, at 8 and
    /// 32 clients, next to one replica without a proxy and the direct HTTP `echo`.
    #[arg(long, requires = "http")]
    pub(crate) via_haproxy: bool,
    /// The HAProxy configuration --via-haproxy runs (its list of replicas is replaced).
    #[arg(
        long,
        value_name = "PATH",
        default_value = "deploy/haproxy/haproxy.cfg"
    )]
    pub(crate) haproxy_config: PathBuf,
    /// Only the tool-search section (needs no upstream server).
    #[arg(long)]
    pub(crate) search_only: bool,
    /// Instead of the latency report: N executions back to back, alternating TypeScript and
    /// Python, each calling server-everything's `echo` once, with the server's rate limits
    /// raised out of the way; reports how many failed and why, and their latency.
    #[arg(long, value_name = "N")]
    pub(crate) soak: Option<usize>,
    /// Only the file and network access section (needs no upstream server): a granted fetch
    /// of 1 KB from a loopback server next to the same request made from the host, and a
    /// 10 MB granted file read from code next to `cat`.
    #[arg(long)]
    pub(crate) access_only: bool,
    /// Only the worker-start section (needs no upstream server): from the request to start a
    /// worker to its ready frame, sandbox included, TypeScript and Python alternating.
    #[arg(long)]
    pub(crate) start_only: bool,
    /// With the latency report or --paths-only: also back to back as measured from the
    /// official MCP Python SDK, run by this interpreter (it needs the `mcp` package).
    #[arg(long, value_name = "PYTHON")]
    pub(crate) python_sdk: Option<PathBuf>,
    /// Only the Python SDK's back-to-back section (with --python-sdk).
    #[arg(long, requires = "python_sdk")]
    pub(crate) sdk_only: bool,
    /// Only the paths section: trivial executions after 1 s and 5 s of idle, in bursts of 4,
    /// back to back (n=200) and sustained for 10 s, in both languages, each next to the
    /// direct `echo` measured the same way; and idle memory with warm pools.
    #[arg(long)]
    pub(crate) paths_only: bool,
    /// Only the skills section: a saved skill that calls `echo` once, called by a client
    /// (`{skill}`), from TypeScript and from Python, next to the same code run directly and
    /// the direct `echo`.
    #[arg(long)]
    pub(crate) skills_only: bool,
    /// Only the check section: what `check: true` adds to a 50-line script (one `echo` call)
    /// in each language, warm, next to the same script unchecked and the direct `echo`.
    #[arg(long)]
    pub(crate) check_only: bool,
    /// With --check-only: the TypeScript checker (default: tsgo or tsc on PATH).
    #[arg(long, value_name = "PATH", requires = "check_only")]
    pub(crate) check_typescript: Option<String>,
    /// With --check-only: the Python checker (default: ty, pyright or mypy on PATH).
    #[arg(long, value_name = "PATH", requires = "check_only")]
    pub(crate) check_python: Option<String>,
    /// Instead of the latency report: a trivial execution (TypeScript and Python) over HTTP
    /// against the server at URL (e.g. the container image), next to this binary serving on
    /// the host, interleaved in the same run (bearer token: $CODE_EXECUTOR_BENCH_TOKEN).
    #[arg(long, value_name = "URL")]
    pub(crate) container_url: Option<String>,
    /// Only the `large_results` section (a 5 MB result from code next to the direct call)
    /// and the `tokens` line.
    #[arg(long)]
    pub(crate) large_only: bool,
}

impl BenchArgs {
    /// server-everything's entry point, from the flag or `EVERYTHING_JS`.
    pub(crate) fn everything_js(&self) -> anyhow::Result<PathBuf> {
        self.everything
            .clone()
            .or_else(|| std::env::var_os("EVERYTHING_JS").map(PathBuf::from))
            .context(
                "pass --everything PATH/TO/server-everything/dist/index.js or set EVERYTHING_JS",
            )
    }
}
