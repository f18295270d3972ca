//! The command line: serve (default), exec, demo, bench, doctor, tools search/show, wrappers.
//!
//! In serve mode stdout belongs to the MCP protocol; logs go to stderr through `tracing`.
//! The other commands are for people at a terminal and print to stdout.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use rmcp::ServiceExt;

use crate::catalog::Catalog;
use crate::catalog::commands::{self, Lang};
use crate::config::Config;
use crate::runtime::ExecRequest;
use crate::server::{CodeExecutorServer, render_text};
use crate::{Core, CoreOptions, DEFAULT_POOL_SIZE};

#[derive(Debug, Parser)]
#[command(
    name = "code-executor-mcp",
    version,
    about = "An MCP server that lets an agent use every MCP server it has through sandboxed code."
)]
pub struct Cli {
    /// Upstream servers, as {"mcpServers": {...}} (default: $MCP_CONFIG_PATH).
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Pre-started JavaScript workers.
    #[arg(long, global = true, default_value_t = DEFAULT_POOL_SIZE, value_name = "N")]
    pool_size: usize,
    /// Worker confinement. `none` runs code unconfined, for development only.
    #[arg(long, global = true, value_enum, default_value_t = SandboxArg::Enforce)]
    sandbox: SandboxArg,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SandboxArg {
    Enforce,
    None,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP over stdio (the default).
    Serve,
    /// Run a TypeScript/JavaScript file (or - for stdin) against the configured servers.
    Exec {
        file: PathBuf,
        #[arg(long, value_name = "MS")]
        timeout_ms: Option<u64>,
        /// Print the whole structured result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a sample program against a built-in demo MCP server; needs no configuration.
    Demo,
    /// Measure latency against a direct MCP baseline and print JSON (see README).
    Bench(crate::bench::BenchArgs),
    /// Check the sandbox layer by layer, the configuration and the JS worker.
    Doctor,
    /// Search and inspect the tools of the configured servers.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Write a typed wrapper file per upstream tool, a folder per server, with indexes.
    Wrappers {
        #[arg(long, value_enum, default_value_t = Lang::Ts)]
        lang: Lang,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum ToolsCommand {
    /// Ranked search, as the search_tools MCP tool answers it.
    Search {
        query: String,
        #[arg(long, value_parser = ["names", "summary", "full"])]
        detail: Option<String>,
        #[arg(long)]
        server: Option<String>,
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long)]
        cursor: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// One tool's signature and types (NAME is mcp__server__tool).
    Show {
        name: String,
        #[arg(long, value_enum, default_value_t = Lang::Ts)]
        lang: Lang,
        /// The whole get_tool_schema answer as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Entry point after helper modes were ruled out.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let quiet = !matches!(cli.command, None | Some(Command::Serve));
    init_tracing(quiet);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(quiet: bool) {
    // rmcp logs whole peer descriptions at info; keep its noise out of the default.
    let default = if quiet { "warn" } else { "info,rmcp=warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

fn options(cli: &Cli) -> anyhow::Result<CoreOptions> {
    let exe = std::env::current_exe().context("cannot locate our own binary")?;
    let sandbox = match cli.sandbox {
        SandboxArg::Enforce => sandbox::SandboxMode::Enforce,
        SandboxArg::None => {
            tracing::warn!("--sandbox=none: code runs UNCONFINED; use this for development only");
            sandbox::SandboxMode::Disabled
        }
    };
    Ok(CoreOptions {
        exe,
        pool_size: cli.pool_size,
        sandbox,
    })
}

/// The catalog alone (no workers), for the discovery commands.
fn catalog(cli: &Cli) -> anyhow::Result<Catalog> {
    let exe = std::env::current_exe().context("cannot locate our own binary")?;
    let config = Config::load(cli.config.as_deref(), Some(&exe))?;
    let cache = crate::catalog::cache::ToolCache::for_config(&config);
    Ok(Catalog::with_cache(
        Arc::new(crate::upstream::Upstreams::new(&config)),
        cache,
    ))
}

fn start_core(cli: &Cli) -> anyhow::Result<Arc<Core>> {
    let opts = options(cli)?;
    let config = Config::load(cli.config.as_deref(), Some(&opts.exe))?;
    Ok(Core::start(&config, opts))
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        None | Some(Command::Serve) => {
            let core = start_core(&cli)?;
            tracing::info!(
                servers = core.catalog.upstreams().names().count(),
                "serving MCP on stdio"
            );
            let service = CodeExecutorServer::new(core)
                .serve(rmcp::transport::stdio_pipes())
                .await
                .context("MCP initialization failed")?;
            service
                .waiting()
                .await
                .context("MCP service ended abnormally")?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Exec {
            file,
            timeout_ms,
            json,
        }) => {
            let code = if file.as_os_str() == "-" {
                let mut s = String::new();
                std::io::stdin()
                    .read_to_string(&mut s)
                    .context("cannot read code from stdin")?;
                s
            } else {
                std::fs::read_to_string(file)
                    .with_context(|| format!("cannot read {}", file.display()))?
            };
            let core = start_core(&cli)?;
            let outcome = core
                .runtime
                .execute_typescript(ExecRequest {
                    code,
                    timeout_ms: *timeout_ms,
                    allowed_tools: None,
                })
                .await;
            let text = if *json {
                serde_json::to_string_pretty(&outcome)?
            } else {
                render_text(&outcome)
            };
            say(&text);
            Ok(if outcome.error.is_some() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Some(Command::Demo) => {
            let opts = options(&cli)?;
            crate::demo::run_demo(opts).await
        }
        Some(Command::Doctor) => doctor(&cli).await,
        Some(Command::Tools(ToolsCommand::Search {
            query,
            detail,
            server,
            limit,
            cursor,
            json,
        })) => {
            let catalog = catalog(&cli)?;
            let params = crate::catalog::SearchParams {
                query,
                detail: detail.as_deref(),
                server: server.as_deref(),
                limit: *limit,
                cursor: cursor.as_deref(),
            };
            say(&commands::search(&catalog, &params, *json).await?);
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Tools(ToolsCommand::Show { name, lang, json })) => {
            say(&commands::show(&catalog(&cli)?, name, *lang, *json).await?);
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Wrappers { lang, out }) => {
            say(&commands::wrappers(&catalog(&cli)?, *lang, out).await?);
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Bench(args)) => {
            let opts = options(&cli)?;
            crate::bench::run_bench(opts, args).await
        }
    }
}

async fn doctor(cli: &Cli) -> anyhow::Result<ExitCode> {
    let opts = options(cli)?;
    let policy = crate::worker_policy(sandbox::SandboxMode::Enforce, &opts.exe);
    let report = sandbox::probe(&policy);
    say(&format!(
        "sandbox (what --sandbox=enforce applies to every worker):\n{report}"
    ));
    let mut healthy = report.minimum_guarantee_met();
    if !healthy {
        say("=> the minimum guarantee is NOT met: executions will be refused (fail closed).");
    }
    match Config::load(cli.config.as_deref(), Some(&opts.exe)) {
        Ok(config) => {
            say(&format!(
                "upstream servers configured: {}",
                config.servers.len()
            ));
            for (name, spec) in &config.servers {
                say(&format!(
                    "  {name}: {} {} (from {})",
                    spec.command,
                    spec.args.join(" "),
                    spec.source.display()
                ));
            }
            for w in &config.warnings {
                say(&format!("  warning: {w}"));
            }
        }
        Err(e) => {
            healthy = false;
            say(&format!("config: {e}"));
        }
    }
    let core = Core::start(
        &Config::default(),
        CoreOptions {
            pool_size: 0,
            ..opts
        },
    );
    let outcome = core
        .runtime
        .execute_typescript(ExecRequest {
            code: "return 1 + 1".into(),
            ..ExecRequest::default()
        })
        .await;
    match &outcome.error {
        None => say(&format!(
            "js worker: ok (return 1 + 1 -> {} in {} ms)",
            outcome.result, outcome.duration_ms
        )),
        Some(e) => {
            healthy = false;
            say(&format!("js worker: FAILED: {}: {}", e.name, e.message));
        }
    }
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Terminal output of the people-facing commands (never used in serve mode).
#[expect(
    clippy::print_stdout,
    reason = "people-facing commands print their answer"
)]
pub fn say(text: &str) {
    println!("{text}");
}
