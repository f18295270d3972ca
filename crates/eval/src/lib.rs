//! `code-executor-mcp eval`: evidence, on the user's own configured servers, of what code mode
//! costs and saves against calling the same tools directly.
//!
//! - The context cost of the tool definitions: every upstream tool loaded directly (per server
//!   and in all) against our own `tools/list` (`context`).
//! - Scripted tasks from a task file (`tasks`): each task's direct call sequence, run against
//!   the upstreams through a real MCP client session, and its equivalent code, run through our
//!   server (in-process, over an MCP session) with the same configuration; the tokens that
//!   pass through the model's context each way, the model turns, and the wall time of the
//!   calls (`measure`, `scripted`), as a table, JSON, and an SVG chart (`chart`).
//! - With `--model`, the same tasks driven by the configured `llm` provider in both modes
//!   (`model`): success, the provider's reported tokens, turns, time.
//! - `--tasks synthetic` runs against the built-in synthetic catalog (`synthetic`), hundreds
//!   of tools served by our own binary.
//!
//! Not to be confused with `catalog::eval`, the search-quality evaluation of `search_tools`.

mod chart;
mod context;
mod error;
mod fixture;
mod measure;
mod model;
mod report;
mod scripted;
mod sides;
mod synthetic;
mod tasks;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

pub use error::EvalError;
use faces::Core;
use faces::CoreOptions;
pub use synthetic::serve_synthetic_main;
use tools::config::{Config, Settings};
use tools::console::{Hinted, Progress, say};
use tools::upstream::Upstreams;

/// `eval`'s flags.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// The task file: `reference` (the five reference servers), `synthetic` (a built-in
    /// catalog of 500+ tools), or a path to a JSON task file (see docs/eval.md).
    #[arg(
        long,
        value_name = "FILE|reference|synthetic",
        default_value = "reference"
    )]
    tasks: String,
    /// Make the reference tasks' data and a config of the five reference servers in DIR
    /// (new, empty, or an earlier fixture), and run on that config instead of yours. Needs
    /// git, and node's npx and uv's uvx on PATH (or the servers in $CODE_EXECUTOR_INTEROP's
    /// prefix).
    #[arg(long, value_name = "DIR")]
    fixture: Option<PathBuf>,
    /// A task file variable, NAME=VALUE (repeatable); overrides the file's `vars`.
    #[arg(long = "var", value_name = "NAME=VALUE")]
    vars: Vec<String>,
    /// Timed runs of each task each way; medians are reported.
    #[arg(long, value_name = "N", default_value_t = 3)]
    runs: usize,
    /// Untimed runs of each task each way before the timed ones (connections and caches warm).
    #[arg(long, value_name = "N", default_value_t = 1)]
    warmup: usize,
    /// Only the tasks with these names (repeatable).
    #[arg(long = "task", value_name = "NAME")]
    only: Vec<String>,
    /// Write the whole report as JSON to PATH (`-` or no value: to stdout, instead of the table).
    #[arg(long, value_name = "PATH", num_args = 0..=1, default_missing_value = "-")]
    json: Option<PathBuf>,
    /// Write a bar chart (tokens and time, direct against code, per task) as SVG to PATH.
    #[arg(long, value_name = "PATH.svg")]
    chart: Option<PathBuf>,
    /// Also let the configured model (`llm.provider` in the settings) do each task in both
    /// modes, and report its success, tokens, turns and time.
    #[arg(long)]
    model: bool,
    /// Most model turns per task and mode with --model.
    #[arg(long, value_name = "N", default_value_t = model::DEFAULT_MAX_TURNS)]
    max_turns: usize,
}

fn parse_vars(list: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    list.iter()
        .map(|v| {
            v.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| anyhow::anyhow!("--var {v:?}: expected NAME=VALUE"))
        })
        .collect()
}

fn write(path: &std::path::Path, text: &str) -> Result<(), EvalError> {
    std::fs::write(path, text).map_err(|e| EvalError::Write {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

impl EvalArgs {
    /// With `--fixture DIR`: makes the fixture and returns the config to run on instead of
    /// the user's.
    pub fn fixture_config(&self) -> Result<Option<PathBuf>, EvalError> {
        self.fixture.as_deref().map(fixture::make).transpose()
    }
}

/// Why the built-in reference tasks cannot run on `config`, and what to do: the servers
/// they call that are not configured.
fn reference_servers_missing(config: &Config) -> Option<Hinted> {
    let missing: Vec<&str> = fixture::REFERENCE_SERVERS
        .iter()
        .copied()
        .filter(|s| !config.servers.contains_key(*s))
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some(Hinted::new(
        format!(
            "the reference tasks run on the five reference MCP servers ({}) over fixture data, \
             and {} {} not configured",
            fixture::REFERENCE_SERVERS.join(", "),
            missing.join(", "),
            if missing.len() == 1 { "is" } else { "are" }
        ),
        "`code-executor-mcp eval --fixture DIR` makes the data in DIR and configures the five \
         servers (it needs git, and node's npx and uv's uvx on PATH); `--tasks synthetic` \
         needs nothing installed (docs/eval.md)",
    ))
}

/// The argument after `flag` (`flag VALUE` or `flag=VALUE`) of the configured stdio server
/// `server`.
fn server_arg(config: &Config, server: &str, flag: &str) -> Option<String> {
    let spec = config.servers.get(server)?;
    let tools::config::Transport::Stdio { args, .. } = &spec.transport else {
        return None;
    };
    args.iter().enumerate().find_map(|(i, a)| {
        if a == flag {
            args.get(i + 1).cloned()
        } else {
            a.strip_prefix(flag)
                .and_then(|rest| rest.strip_prefix('='))
                .map(str::to_string)
        }
    })
}

/// `code-executor-mcp eval`, on `config` (the synthetic catalog replaces it when the task file
/// asks for it).
pub async fn run(
    config: Config,
    settings: Settings,
    opts: CoreOptions,
    args: &EvalArgs,
) -> anyhow::Result<ExitCode> {
    let vars = parse_vars(&args.vars)?;
    if args.tasks == "reference"
        && let Some(e) = reference_servers_missing(&config)
    {
        return Err(e.into());
    }
    let server_args = |server: &str, flag: &str| server_arg(&config, server, flag);
    let mut file = tasks::load(&args.tasks, &vars, &server_args)?;
    if !args.only.is_empty() {
        if let Some(unknown) = args
            .only
            .iter()
            .find(|n| !file.tasks.iter().any(|t| &t.name == *n))
        {
            let names: Vec<&str> = file.tasks.iter().map(|t| t.name.as_str()).collect();
            anyhow::bail!(
                "--task {unknown:?}: no such task in {} (it has: {})",
                file.name,
                names.join(", ")
            );
        }
        file.tasks.retain(|t| args.only.contains(&t.name));
    }
    let config = match file.servers {
        tasks::Servers::Configured => config,
        tasks::Servers::Synthetic => synthetic::config(&opts.exe),
    };
    if config.servers.is_empty() {
        return Err(EvalError::NoServers.into());
    }
    if args.model && settings.llm.provider.is_none() {
        return Err(EvalError::Model(
            "no provider is configured: set \"llm\": {\"provider\": {\"api\": \"anthropic\" or \
             \"openai\", \"model\": ..., \"apiKeyEnv\": ...}} in the settings (docs/eval.md)"
                .into(),
        )
        .into());
    }
    let progress = Progress::new("eval");
    progress.step(&format!(
        "starting {} servers, directly and through our server",
        config.servers.len()
    ));
    // The definitions as a client loads them from each server directly: our upstream
    // client, a session per server, apart from our server's. The direct steps themselves go
    // through our runtime's door, as pinned direct tools' calls (`sides::Ours::direct`).
    let up = Arc::new(Upstreams::new(&config, &settings));
    let core = Core::start(&config, &settings, opts);
    let ours = sides::Ours::start(core).await?;
    // Both sides start every server before anything is timed: starting one is not a cost of
    // either way of calling it.
    let (listed, _) = futures::join!(
        context::list_upstreams(&up),
        context::list_upstreams(ours.core.catalog.upstreams())
    );
    let our_tools = ours.tools().await?;
    let cost = context::cost(&listed, &our_tools)?;
    ours.wait_for_pools().await;
    let setup = scripted::Setup {
        ours: &ours,
        listed: &listed,
        direct_schemas: cost.direct_tokens,
        our_schemas: cost.ours.tokens,
        runs: args.runs.max(1),
        warmup: args.warmup,
    };
    let mut rows = Vec::new();
    for (i, task) in file.tasks.iter().enumerate() {
        progress.step(&format!(
            "task {}/{}: {} ({} run{} each way)",
            i + 1,
            file.tasks.len(),
            task.name,
            setup.warmup + setup.runs,
            if setup.warmup + setup.runs == 1 {
                ""
            } else {
                "s"
            }
        ));
        rows.push(scripted::run_task(&setup, task).await?);
    }
    let modeled = if args.model {
        let provider = settings.llm.provider.clone();
        match provider {
            Some(p) => {
                progress.step(&format!(
                    "the model does the {} tasks both ways",
                    file.tasks.len()
                ));
                Some(model::run_all(&p, &file.tasks, &setup, &our_tools, args.max_turns).await?)
            }
            None => None,
        }
    } else {
        None
    };
    ours.stop().await;
    let report = report::Report {
        file: &file,
        runs: args.runs.max(1),
        warmup: args.warmup,
        cost: &cost,
        rows: &rows,
        model: modeled.as_deref(),
    };
    let json = report.json();
    let to_stdout = args.json.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if to_stdout {
        say(&serde_json::to_string_pretty(&json)?);
    } else {
        say(&report.table());
    }
    if let Some(path) = args.json.as_deref().filter(|p| p.as_os_str() != "-") {
        write(path, &serde_json::to_string_pretty(&json)?)?;
    }
    if let Some(path) = &args.chart {
        write(
            path,
            &chart::svg(&report.chart_title(), &report.chart_subtitle(), &rows),
        )?;
    }
    // A scripted task that fails is a broken task file or server: exit 1. What a model does
    // with a task is a result, not a failure of `eval`.
    Ok(if rows.iter().all(|r| r.direct.ok && r.code.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
