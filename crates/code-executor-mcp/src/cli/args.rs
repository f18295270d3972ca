//! The command line's shape: global options, commands and their arguments, as clap reads
//! them (and as `__reference` documents them, docs/cli.md).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use super::serve_args::ServeArgs;
use super::tool_commands::Lang;
use runtime::python::{PYTHON_ENV, SITE_PACKAGES_ENV};

#[derive(Debug, Parser)]
#[command(
    name = "code-executor-mcp",
    version = crate::version::VERSION,
    about = "An MCP server that lets an agent use every MCP server it has through sandboxed code.",
    after_long_help = AFTER_HELP
)]
pub struct Cli {
    /// Upstream servers, as {"mcpServers": {...}} (default: $MCP_CONFIG_PATH).
    #[arg(long, global = true, value_name = "PATH")]
    pub(super) config: Option<PathBuf>,
    /// Pre-started workers per language (default: settings' poolSize, else 2, growing under
    /// load up to --pool-max; a size given here or in the settings is kept exactly unless
    /// --pool-max or poolMax is given too).
    #[arg(long, global = true, value_name = "N")]
    pub(super) pool_size: Option<usize>,
    /// Read only --config / $MCP_CONFIG_PATH, not the config files of other MCP clients.
    #[arg(long, global = true)]
    pub(super) no_discover: bool,
    /// Worker confinement. `none` runs code unconfined, for development only; every result
    /// then says `UNSANDBOXED`.
    #[arg(long, global = true, value_enum, default_value_t = SandboxArg::Enforce)]
    pub(super) sandbox: SandboxArg,
    /// Python interpreter for execute_python (default: the first usable of python3 on PATH,
    /// /usr/bin/python3, /usr/local/bin/python3).
    #[arg(long, global = true, value_name = "PATH", env = PYTHON_ENV)]
    pub(super) python: Option<PathBuf>,
    /// Pre-started Python workers (default 1, growing under load up to --pool-max; a size
    /// given here is kept exactly unless --pool-max is given too).
    #[arg(long, global = true, value_name = "N")]
    pub(super) python_pool_size: Option<usize>,
    /// Most workers each pool grows to under back-to-back or parallel load (default:
    /// settings' poolMax, else 8); idle pools shrink back to their size.
    #[arg(long, global = true, value_name = "N")]
    pub(super) pool_max: Option<usize>,
    /// Memory ceiling of all pools' ready workers together, in MiB (default: settings'
    /// poolMemoryMb, else 256).
    #[arg(long, global = true, value_name = "MIB")]
    pub(super) pool_memory_mb: Option<u64>,
    /// Let Python code import the interpreter's site-packages (mounted read-only; see
    /// docs/python.md).
    #[arg(long, global = true, env = SITE_PACKAGES_ENV)]
    pub(super) python_site_packages: bool,
    /// Where sessions' stored values and tasks' results are kept so that they survive a
    /// restart: sqlite:PATH, a postgres://... URL (replicas sharing one store), or none (in
    /// memory only). Default: the `store` setting, else SQLite in the data directory
    /// ($XDG_STATE_HOME/code-executor-mcp/store.sqlite3). See docs/store.md.
    #[arg(long, global = true, value_name = "URL", env = "CODE_EXECUTOR_STORE")]
    pub(super) store: Option<String>,
    /// Log lines on stderr: text, or one JSON object per line.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, env = "CODE_EXECUTOR_LOG_FORMAT")]
    pub(super) log_format: LogFormat,
    #[command(subcommand)]
    pub(super) command: Option<Command>,
}

/// What `--help` says after the options: exit codes, errors and progress.
const AFTER_HELP: &str = "A command that cannot do what it was asked says so on stderr as `error: ...` (and \
`hint: ...` where there is something to do) and exits 1 (2 for a usage error); one whose output \
goes to a reader that stops early (`code-executor-mcp completions zsh | head -1`) stops quietly. \
Long commands (`bench`, `eval`) show their progress on stderr when it is a terminal \
(`CODE_EXECUTOR_PROGRESS=1` shows it anyway, `0` never); stdout keeps only the report. Log \
level: `RUST_LOG` (default `info` when serving, to stderr; stdout carries only MCP).";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum SandboxArg {
    Enforce,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum LangArg {
    #[value(alias = "ts", alias = "js", alias = "javascript")]
    Typescript,
    #[value(alias = "py")]
    Python,
}

#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Serve MCP over stdio (the default), or over streamable HTTP with --http.
    Serve(ServeArgs),
    /// Run a TypeScript/JavaScript or Python file (or - for stdin) against the configured servers.
    Exec {
        /// The script: a .ts/.js/.py file, or - to read it from stdin.
        file: PathBuf,
        /// Language of the code (default: python for *.py files, else typescript).
        #[arg(long, value_enum)]
        lang: Option<LangArg>,
        /// Wall clock of the run (default: the settings' executionLimits.defaultTimeoutMs).
        #[arg(long, value_name = "MS")]
        timeout_ms: Option<u64>,
        /// File and network access, as the tools' `permissions` (within the settings' ceiling),
        /// e.g. '{"read": ["/home/me/project"], "net": ["api.github.com"]}'.
        #[arg(long, value_name = "JSON")]
        permissions: Option<String>,
        /// Print the whole structured result as JSON.
        #[arg(long)]
        json: bool,
        /// Type-check the code first (see the settings' `check`); errors stop it from running.
        #[arg(long)]
        check: bool,
    },
    /// Run a sample program against a built-in demo MCP server; needs no configuration.
    Demo,
    /// Measure latency against a direct MCP baseline and print JSON (see README).
    Bench(bench::BenchArgs),
    /// Measure code mode against direct tool calls on the configured servers: context cost,
    /// tokens, turns and time of scripted tasks (table, --json, --chart; see docs/eval.md).
    Eval(Box<eval::EvalArgs>),
    /// Check the sandbox layer by layer, the configuration, the held tool definitions and the
    /// permissions ceiling, with a test execution in each worker.
    Doctor,
    /// Show the merged upstream configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Read the audit log.
    Audit {
        #[command(subcommand)]
        action: AuditAction,
    },
    /// Search and inspect the tools of the configured servers.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// List and answer the calls waiting for approval in running servers' inboxes
    /// (`approvals.fallback: "inbox"`; see docs/guardrails.md).
    Approvals {
        #[command(subcommand)]
        action: Option<ApprovalsAction>,
    },
    /// Write a typed wrapper file per upstream tool, a folder per server, with indexes.
    Wrappers {
        /// The wrappers' language.
        #[arg(long, value_enum, default_value_t = Lang::Ts)]
        lang: Lang,
        /// The directory to write them to.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Log in to an HTTP or SSE server that uses OAuth: prints a URL to open in a browser,
    /// waits for the redirect, stores the token (0600, in the user config dir).
    Login {
        /// The server's name in the merged config (see `config show`).
        server: String,
        /// Seconds to wait for the browser's redirect.
        #[arg(long, value_name = "SECS", default_value_t = tools::oauth::login::DEFAULT_TIMEOUT.as_secs())]
        timeout: u64,
    },
    /// Forget the stored OAuth login of a server (every URL it had).
    Logout {
        /// The server's name in the merged config (see `config show`).
        server: String,
    },
    /// Add this server to the MCP clients found here (Claude Code, Claude Desktop, Cursor,
    /// VS Code, Windsurf, Codex, Gemini CLI): shows a diff per client, asks, backs up, writes.
    Setup(crate::setup::SetupArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
pub(super) enum ConfigAction {
    /// Every server with the file it came from, secrets masked; settings; warnings.
    Show,
}

#[derive(Debug, Subcommand)]
pub(super) enum AuditAction {
    /// The last lines of the audit log, one readable line each.
    Tail {
        /// How many lines, from the end.
        #[arg(short = 'n', long, default_value_t = 20)]
        lines: usize,
        /// Print the raw JSON lines.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(super) enum ApprovalsAction {
    /// List the waiting approvals, with the code around each call (the default).
    List,
    /// Approve one (its number from `list`, or PID:N when several servers run).
    Approve {
        /// N from `list`, or PID:N.
        id: String,
    },
    /// Deny one (its number from `list`, or PID:N when several servers run).
    Deny {
        /// N from `list`, or PID:N.
        id: String,
    },
    /// Print each approval as it arrives, until interrupted.
    Watch,
}

#[derive(Debug, Subcommand)]
pub(super) enum ToolsCommand {
    /// Ranked search of tools and skills, as the search_tools MCP tool answers it
    /// (`--server skills` for skills alone).
    Search {
        /// What to look for, in words.
        query: String,
        /// How much of each tool to show (default: summary).
        #[arg(long, value_parser = ["names", "summary", "full"])]
        detail: Option<String>,
        /// Only this server's tools (`skills`: skills alone).
        #[arg(long)]
        server: Option<String>,
        /// Most results on a page (default 10, at most 200).
        #[arg(long)]
        limit: Option<u32>,
        /// The next page, from the last answer's cursor.
        #[arg(long)]
        cursor: Option<String>,
        /// The search_tools answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Accepts the changed definition of a held tool (NAME is mcp__server__tool; --all: every
    /// held tool), so calls to it go out again.
    Accept {
        /// The held tool, mcp__server__tool.
        name: Option<String>,
        /// Every held tool (`doctor` lists them).
        #[arg(long)]
        all: bool,
    },
    /// One tool's signature and types (NAME is mcp__server__tool).
    Show {
        /// The tool, mcp__server__tool.
        name: String,
        /// The language of the signature.
        #[arg(long, value_enum, default_value_t = Lang::Ts)]
        lang: Lang,
        /// The whole get_tool_schema answer as JSON.
        #[arg(long)]
        json: bool,
    },
}
