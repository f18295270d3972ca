//! The command line: serve (default), exec, demo, bench, doctor, tools search/show, wrappers,
//! login/logout.
//!
//! In serve mode stdout belongs to the MCP protocol; logs go to stderr through `tracing`.
//! The other commands are for people at a terminal and print to stdout (through
//! `console::say`, which ends quietly when the reader goes away); `login` talks to the person
//! on stderr while it waits. A command's error is an `error: ...` line (and `hint: ...`) on
//! stderr with exit 1, as CLI tools print theirs, not a log line (`console::report_error`).

mod approvals;
mod args;
mod doctor;
mod reference;
mod serve_args;
mod tool_commands;

use std::io::{IsTerminal, Read};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use rmcp::ServiceExt;

pub use args::Cli;
use args::{
    ApprovalsAction, AuditAction, Command, ConfigAction, LangArg, LogFormat, SandboxArg,
    ToolsCommand,
};
use doctor::doctor;
use faces::CoreOptions;
use faces::composition::Core;
use faces::server::{CodeExecutorServer, render_text_within};
use policy::principal::Principal;
use runtime::execution::ExecRequest;
use runtime::python::PythonOptions;
use runtime::worker::Language;
use serve_args::ServeArgs;
use tools::catalog::Catalog;
use tools::config::settings::ProjectSettings;
use tools::config::sources::Places;
use tools::config::{Config, LoadOptions, Settings};
use tools::console::{Hinted, report_error, say, say_bytes, tell};
use tools::defaults::{DEFAULT_POOL_SIZE, DEFAULT_PYTHON_POOL_SIZE};

/// What a person who started us in a terminal sees: what this is and how to add it.
fn first_run_text() -> String {
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "code-executor-mcp".into());
    format!(
        "code-executor-mcp {version}: an MCP server. Your MCP client (Claude Code, Cursor, VS Code, \
Codex, Gemini CLI, ...) starts it and talks to it over stdin/stdout; there is nothing to type here.

Add it to the clients on this machine (shows each change and asks first):
    code-executor-mcp setup

Or add it by hand, e.g.:
    claude mcp add -s user code-executor -- {exe}
    codex mcp add code-executor -- {exe}
    gemini mcp add -s user code-executor {exe}
  or in a client's JSON config:
    {{ \"mcpServers\": {{ \"code-executor\": {{ \"command\": \"{exe}\" }} }} }}

Try it without a client:  code-executor-mcp demo
Check this machine:       code-executor-mcp doctor
Serve on this terminal anyway: code-executor-mcp serve
All commands:             code-executor-mcp --help",
        version = crate::version::VERSION,
    )
}

/// The first argument of `code-executor-mcp __reference [--check] [ROOT]`.
pub const REFERENCE_ARG: &str = "__reference";

/// `code-executor-mcp __reference [--check] [ROOT]`: writes (or checks) the documents generated
/// from the code, docs/cli.md, docs/settings.md and docs/test-files.md. Chosen by `main` from
/// the first argument, as the helper modes are, so no help text or completion script offers it.
pub fn reference_main() -> ExitCode {
    /// The command line of `__reference`.
    #[derive(Debug, Parser)]
    #[command(
        name = "code-executor-mcp __reference",
        bin_name = "code-executor-mcp __reference",
        about = "Write (or --check) the documents generated from the code: docs/cli.md, docs/settings.md, docs/test-files.md."
    )]
    struct ReferenceCli {
        #[command(flatten)]
        args: reference::ReferenceArgs,
    }
    let cli = ReferenceCli::parse_from(std::env::args_os().skip(1));
    match reference::run(&cli.args, &<Cli as clap::CommandFactory>::command()) {
        Ok(code) => code,
        Err(e) => {
            report_error(&anyhow::Error::new(e));
            ExitCode::FAILURE
        }
    }
}

/// Entry point after helper modes were ruled out.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let quiet = !matches!(cli.command, None | Some(Command::Serve(_)));
    init_tracing(quiet, cli.log_format);
    if !quiet {
        // OpenTelemetry export, when the standard OTEL_* variables ask for it.
        tools::trace::init();
    }
    // One thread drives everything: a request's path crosses several tasks (worker frames,
    // bridge, upstream client), and on a current-thread runtime those hand-offs are function
    // calls rather than cross-thread wake-ups. Nothing on it blocks: engines run in their own
    // processes, file work goes to the blocking pool.
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            report_error(&anyhow::Error::new(e).context("cannot start the async runtime"));
            return ExitCode::FAILURE;
        }
    };
    // A command's error is shown as CLI tools show theirs (`error: ...`, `hint: ...` on
    // stderr); a server logging JSON lines for a collector logs it as one of them.
    let json_log = !quiet && cli.log_format == LogFormat::Json;
    let code = match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) if json_log => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
        Err(e) => {
            report_error(&e);
            ExitCode::FAILURE
        }
    };
    // Output that could not be written (other than to a reader that went away) fails the
    // command.
    let code = match tools::console::stdout_failure() {
        Some(why) => {
            report_error(&anyhow::anyhow!("cannot write to stdout: {why}"));
            ExitCode::FAILURE
        }
        None => code,
    };
    // stdin's reader is a blocking thread that waits for input which may never come (after
    // a signal): the runtime does not wait for it.
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    // Spans still queued are exported before the process ends.
    tools::trace::shutdown();
    code
}

fn init_tracing(quiet: bool, format: LogFormat) {
    // rmcp logs whole peer descriptions at info; keep its noise out of the default.
    let default = if quiet { "warn" } else { "info,rmcp=warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // Redacted: an upstream's stderr and errors are logged (policy::redact).
        .with_writer(policy::redact::LogWriter)
        .with_ansi(false);
    match format {
        LogFormat::Text => builder.init(),
        // One JSON object per line (time, level, target, fields), for log collectors.
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}

/// Settings, upstream config and core options, from files, environment and flags.
fn load(cli: &Cli) -> anyhow::Result<(Config, Settings, CoreOptions)> {
    load_with(cli, None)
}

/// [`load`], with the upstream config `only` (and no other, discovery off) when given.
fn load_with(cli: &Cli, only: Option<PathBuf>) -> anyhow::Result<(Config, Settings, CoreOptions)> {
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let places = Places::from_env(cwd.clone());
    let settings =
        Settings::load(&cwd, places.config_dir.as_deref()).map_err(anyhow::Error::msg)?;
    let mut opts = options(cli)?;
    if let Some(n) = cli.pool_size {
        opts.pool_size = n;
    } else {
        opts.pool_size = settings.pool_size;
        opts.pool_size_pinned = settings.pool_size_set;
    }
    opts.pool_max = cli.pool_max.or(settings.pool_max);
    opts.pool_memory_bytes = cli.pool_memory_mb.map_or(settings.pool_memory_bytes, |mb| {
        mb.saturating_mul(1024 * 1024)
    });
    opts.pool_shrink_after = settings.pool_shrink_after;
    let named = cli.store.as_deref().or(settings.store.url.as_deref());
    opts.store = store_spec(named)?;
    opts.store_named = named.is_some();
    opts.store_limits = store::Limits {
        max_bytes_per_principal: settings.store.max_bytes_per_client,
    };
    if opts
        .pool_max
        .is_some_and(|m| m > tools::defaults::MAX_POOL_SIZE)
    {
        anyhow::bail!("--pool-max is above the maximum of 64");
    }
    if cli.pool_memory_mb.is_some_and(|mb| mb < 16) {
        anyhow::bail!("--pool-memory-mb must be at least 16");
    }
    let discover = settings.discover && !cli.no_discover && only.is_none();
    let config = Config::load(&LoadOptions {
        explicit: only.or_else(|| cli.config.clone()),
        discover,
        places,
        self_exe: Some(opts.exe.clone()),
        trusted_projects: settings.trusted_projects.clone(),
    })?;
    Ok((config, settings, opts))
}

/// The store `--store` or the setting names (default: SQLite in the data directory; none
/// when there is no data directory).
fn store_spec(named: Option<&str>) -> anyhow::Result<store::Spec> {
    let default = policy::audit::state_dir().map(|d| d.join(faces::composition::STORE_FILE));
    match (named, default) {
        (Some(s), default) => {
            let fallback = default.unwrap_or_else(|| PathBuf::from(faces::composition::STORE_FILE));
            Ok(store::Spec::parse(s, &fallback)?)
        }
        (None, Some(path)) => Ok(store::Spec::Sqlite(path)),
        (None, None) => {
            tracing::warn!(
                "no data directory (neither XDG_STATE_HOME nor HOME is set): sessions' stored \
                 values and tasks' results are kept in memory only; give --store to keep them"
            );
            Ok(store::Spec::None)
        }
    }
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
    let replica = match &cli.command {
        Some(Command::Serve(ServeArgs {
            replica_id: Some(id),
            ..
        })) => policy::replica::Replica::named(id)?,
        _ => policy::replica::Replica::single(),
    };
    Ok(CoreOptions {
        exe,
        replica,
        pool_size: cli.pool_size.unwrap_or(DEFAULT_POOL_SIZE),
        pool_size_pinned: cli.pool_size.is_some(),
        pool_max: cli.pool_max,
        pool_memory_bytes: cli
            .pool_memory_mb
            .map_or(tools::defaults::DEFAULT_POOL_MEMORY_BYTES, |mb| {
                mb.saturating_mul(1024 * 1024)
            }),
        pool_shrink_after: tools::defaults::DEFAULT_POOL_SHRINK_AFTER,
        sandbox,
        store: store_spec(cli.store.as_deref())?,
        store_named: cli.store.is_some(),
        store_limits: store::Limits::default(),
        python: PythonOptions {
            interpreter: cli.python.clone(),
            pool_size: cli.python_pool_size.unwrap_or(DEFAULT_PYTHON_POOL_SIZE),
            pool_size_pinned: cli.python_pool_size.is_some(),
            site_packages: cli.python_site_packages,
        },
    })
}

/// The catalog alone (no workers), for the discovery commands.
fn catalog(cli: &Cli) -> anyhow::Result<Catalog> {
    let (config, settings, _) = load(cli)?;
    Ok(catalog_of(&config, &settings))
}

fn catalog_of(config: &Config, settings: &tools::config::Settings) -> Catalog {
    let cache = tools::catalog::cache::ToolCache::for_config(config);
    Catalog::with_cache(
        Arc::new(tools::upstream::Upstreams::new(config, settings)),
        cache,
    )
}

/// The core of a command; `durable`: with the store the options name (the serving
/// commands), else none (a one-shot `exec` keeps nothing).
async fn start_core(cli: &Cli, durable: bool) -> anyhow::Result<Arc<Core>> {
    let (config, settings, opts) = load(cli)?;
    let store = match durable {
        true => faces::composition::open_store(&opts).await?,
        false => None,
    };
    Ok(Core::start_with_store(&config, &settings, opts, store))
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        // Started by hand in a terminal: no client is on the other end of stdin.
        None if std::io::stdin().is_terminal() => {
            tell(&first_run_text());
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Setup(args)) => crate::setup::run(args),
        Some(Command::Completions { shell }) => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut cmd, "code-executor-mcp", &mut script);
            say_bytes(&script);
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Serve(ServeArgs {
            http: Some(addr), ..
        })) => {
            let Some(Command::Serve(args)) = &cli.command else {
                return Ok(ExitCode::FAILURE);
            };
            let opts = args.http_options(addr.clone());
            let core = start_core(&cli, true).await?;
            faces::http::serve(core, opts, None).await?;
            Ok(ExitCode::SUCCESS)
        }
        None | Some(Command::Serve(_)) => {
            let core = start_core(&cli, true).await?;
            tracing::info!(
                servers = core.catalog.upstreams().names().count(),
                "serving MCP on stdio"
            );
            // Between the pipes and rmcp: tasks for clients of the 2025-11-25 revision.
            let (reader, writer) = rmcp::transport::stdio_pipes();
            // Duplicates of stdin and stdout, to widen them when a large message passes.
            let dup = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().ok();
            // The end of stdin ends the service at once (see below).
            let input_ended = tokio_util::sync::CancellationToken::new();
            let transport = faces::server::legacy_tasks::transport(
                reader,
                writer,
                core.policy.redactor.clone(),
            )
            .widening(
                dup(std::io::stdin().as_fd()),
                dup(std::io::stdout().as_fd()),
            )
            .on_input_end(input_ended.clone());
            let service = CodeExecutorServer::new(core.clone())
                .serve(transport)
                .await
                .context("MCP initialization failed")?;
            // A client that stops us with a signal, or closes stdin, gets an orderly end at
            // once: running executions are cancelled (their answers go out as errors, with
            // nobody left to wait for them), sessions and their workspaces go, the audit is
            // flushed, upstream children are stopped. Without this rmcp would wait up to 5 s
            // at the end of stdin for executions still running.
            let token = service.cancellation_token();
            let watcher = tokio::spawn(async move {
                // Awaited outside the macro: with `info` off its arguments are never
                // evaluated, and the watcher would cancel the service at once.
                let why = tokio::select! {
                    signal = faces::shutdown::signal() => signal,
                    () = input_ended.cancelled() => "the end of stdin",
                };
                tracing::info!("{why}: shutting down");
                token.cancel();
            });
            let ended = service.waiting().await;
            watcher.abort();
            core.runtime.live().sessions().end_all(&core.policy.audit);
            // Lines of runs cut off by the end are written before we exit.
            core.policy.audit.flush();
            ended.context("MCP service ended abnormally")?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Exec {
            file,
            lang,
            timeout_ms,
            permissions,
            json,
            check,
        }) => {
            let permissions = permissions
                .as_deref()
                .map(serde_json::from_str::<policy::access::PermissionsRequest>)
                .transpose()
                .context(
                    "--permissions: expected {\"read\": [...], \"write\": bool, \"net\": [...]}",
                )?;
            let language = match lang {
                Some(LangArg::Python) => Language::Python,
                Some(LangArg::Typescript) => Language::JavaScript,
                None if file.extension().is_some_and(|e| e == "py") => Language::Python,
                None => Language::JavaScript,
            };
            let code = if file.as_os_str() == "-" {
                let mut s = String::new();
                std::io::stdin()
                    .read_to_string(&mut s)
                    .context("cannot read code from stdin")?;
                s
            } else {
                std::fs::read_to_string(file).map_err(|e| {
                    Hinted::new(
                        format!("cannot read {}: {e}", file.display()),
                        "exec runs a TypeScript/JavaScript or Python file: give its path, or - \
                         to read the code from stdin",
                    )
                })?
            };
            let core = start_core(&cli, false).await?;
            let outcome = core
                .execute(
                    language,
                    ExecRequest {
                        code,
                        timeout_ms: *timeout_ms,
                        permissions,
                        check: check.then_some(true),
                        ..ExecRequest::default()
                    },
                    Principal::new("cli"),
                    None,
                )
                .await;
            let text = if *json {
                serde_json::to_string_pretty(&outcome)?
            } else {
                render_text_within(&outcome, usize::MAX)
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
            faces::demo::run_demo(opts).await
        }
        Some(Command::Doctor) => doctor(|| options(&cli), || load(&cli)).await,
        Some(Command::Approvals { action }) => {
            match action {
                None | Some(ApprovalsAction::List) => approvals::list().await?,
                Some(ApprovalsAction::Approve { id }) => approvals::answer(id, true).await?,
                Some(ApprovalsAction::Deny { id }) => approvals::answer(id, false).await?,
                Some(ApprovalsAction::Watch) => approvals::watch().await?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Audit {
            action: AuditAction::Tail { lines, json },
        }) => {
            let (_, settings, _) = load(&cli)?;
            let path = settings
                .audit
                .path
                .clone()
                .or_else(policy::audit::default_path)
                .context("no audit path: set audit.path in the settings or HOME")?;
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read the audit log {}", path.display()))?;
            let all: Vec<&str> = text.lines().collect();
            for line in &all[all.len().saturating_sub(*lines)..] {
                say(&if *json {
                    (*line).to_string()
                } else {
                    policy::audit::pretty(line)
                });
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Config {
            action: ConfigAction::Show,
        }) => {
            let (config, settings, _) = load(&cli)?;
            let mut shown = config.describe();
            // Whether a login is stored; never anything of the token itself.
            if let Some(list) = shown["servers"].as_array_mut() {
                for entry in list {
                    let spec = entry["name"].as_str().and_then(|n| config.servers.get(n));
                    if let Some(spec) = spec
                        && tools::oauth::server_url(spec).is_some()
                    {
                        entry["oauthLogin"] = serde_json::json!(if tools::oauth::has_login(
                            spec,
                            config.token_dir.as_deref()
                        ) {
                            "stored"
                        } else {
                            "none"
                        });
                    }
                }
            }
            shown["settings"] = serde_json::json!({
                "source": settings.source,
                "poolSize": settings.pool_size,
                "poolMax": settings.pool_max,
                "poolMemoryMb": settings.pool_memory_bytes / (1024 * 1024),
                "poolShrinkAfterMs": settings.pool_shrink_after.as_millis() as u64,
                "connectedServers": settings.connected_servers,
                "directTools": settings.direct_tools,
                "discover": settings.discover && !cli.no_discover,
                "upstreamCallTimeoutMs": settings.upstream_call_timeout.as_millis() as u64,
                "maxResultBytes": settings.max_result_bytes,
                "trustedProjects": settings.trusted_projects,
                "permissions": settings.permissions.to_json(),
                "projectFile": project_settings_json(settings.project.as_ref()),
                // Where the hooks that judge calls and runs come from (docs/guardrails.md).
                "hooks": {
                    "ours": settings.hooks.groups(&policy::hooks::Origin(String::new())).len(),
                    "clientFiles": if settings.hooks.from_clients == Some(false) {
                        Vec::new()
                    } else {
                        config.client_hooks.iter().map(|(f, _)| f.display().to_string()).collect()
                    },
                },
                "toolChanges": match settings.tool_changes {
                    policy::approval::ChangedTools::Refuse => "refuse",
                    policy::approval::ChangedTools::Ask => "ask",
                },
            });
            if let (Some(ProjectSettings::Ignored { path, reason }), Some(w)) =
                (&settings.project, shown["warnings"].as_array_mut())
            {
                w.push(serde_json::json!(format!("{}: {reason}", path.display())));
            }
            say(&serde_json::to_string_pretty(&shown)?);
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Tools(ToolsCommand::Search {
            query,
            detail,
            server,
            limit,
            cursor,
            json,
        })) => {
            let (config, settings, _) = load(&cli)?;
            let catalog = catalog_of(&config, &settings);
            // Skills are ranked among the tools, as `search_tools` ranks them.
            let skills = faces::composition::skills(&config, &settings);
            let params = tools::catalog::SearchParams {
                query,
                detail: detail.as_deref(),
                server: server.as_deref(),
                limit: *limit,
                cursor: cursor.as_deref(),
            };
            say(&tool_commands::search(&catalog, &skills, &params, *json).await?);
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Tools(ToolsCommand::Accept { name, all })) => {
            let (config, settings, _) = load(&cli)?;
            let definitions = tools::upstream::definitions::Definitions::new(
                tools::catalog::cache::default_dir().as_deref(),
                settings.tool_changes,
            );
            let held: Vec<_> = definitions
                .notices(config.servers.keys().map(String::as_str))
                .into_iter()
                .filter(|n| n.changed.is_some())
                .collect();
            let chosen: Vec<_> = match (name, all) {
                (_, true) => held,
                (Some(name), false) => {
                    let (server, tool) = tools::catalog::split_qualified(
                        config.servers.keys().map(String::as_str),
                        name,
                        tools::catalog::Asker::Person,
                    )
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                    let found: Vec<_> = held
                        .into_iter()
                        .filter(|n| n.server == server && n.tool == tool)
                        .collect();
                    if found.is_empty() {
                        anyhow::bail!(
                            "{name} is not held (no changed definition waits for acceptance); `code-executor-mcp doctor` lists the held tools"
                        );
                    }
                    found
                }
                (None, false) => anyhow::bail!(
                    "name the tool to accept (mcp__server__tool), or pass --all; `code-executor-mcp doctor` lists the held tools"
                ),
            };
            for n in &chosen {
                let name = policy::qualified_name(&n.server, &n.tool);
                definitions.accept(&n.server, &n.tool);
                say(&format!(
                    "accepted {name}: {}",
                    n.changed.as_deref().unwrap_or_default()
                ));
            }
            if chosen.is_empty() {
                say("no tool is held");
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Tools(ToolsCommand::Show { name, lang, json })) => {
            say(&tool_commands::show(&catalog(&cli)?, name, *lang, *json).await?);
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Wrappers { lang, out }) => {
            say(&tool_commands::wrappers(&catalog(&cli)?, *lang, out).await?);
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Bench(args)) => bench::run(options(&cli)?, args).await,
        Some(Command::Eval(args)) => {
            let fixture = args.fixture_config()?;
            let (config, settings, opts) = load_with(&cli, fixture)?;
            eval::run(config, settings, opts, args).await
        }
        Some(Command::Login { server, timeout }) => {
            let (config, _, _) = load(&cli)?;
            let spec = config.servers.get(server).with_context(|| {
                format!(
                    "no MCP server named \"{server}\" is configured (`code-executor-mcp config show` lists them)"
                )
            })?;
            let dir = config
                .token_dir
                .clone()
                .context("no user config dir to keep the token in: set HOME or XDG_CONFIG_HOME")?;
            let outcome = tools::oauth::login::login(
                spec,
                &dir,
                std::time::Duration::from_secs(*timeout),
                &tell,
            )
            .await?;
            let expiry = match (outcome.expires_in, outcome.refreshable) {
                (Some(s), true) => {
                    format!("; the access token lasts {s} s and is refreshed automatically")
                }
                (Some(s), false) => {
                    format!("; the access token lasts {s} s (no refresh token: log in again then)")
                }
                (None, _) => String::new(),
            };
            say(&format!(
                "Logged in to \"{server}\"{}. Token stored in {}{expiry}.",
                if outcome.scopes.is_empty() {
                    String::new()
                } else {
                    format!(" (scopes: {})", outcome.scopes.join(" "))
                },
                outcome.token_file.display()
            ));
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Logout { server }) => {
            let cwd = std::env::current_dir().context("cannot read the working directory")?;
            let dir = Places::from_env(cwd)
                .config_dir
                .map(|d| tools::config::token_dir_in(&d))
                .context("no user config dir: set HOME or XDG_CONFIG_HOME")?;
            let removed = tools::oauth::store::remove_server(&dir, server)
                .with_context(|| format!("cannot remove tokens under {}", dir.display()))?;
            if removed.is_empty() {
                say(&format!(
                    "No stored login for \"{server}\" in {}.",
                    dir.display()
                ));
            } else {
                for p in &removed {
                    say(&format!("Removed {}", p.display()));
                }
                say(&format!(
                    "Logged out of \"{server}\" (the tokens were deleted here; the authorization server may still list the grant)."
                ));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `config show`'s account of the working directory's `.code-executor.json`.
fn project_settings_json(project: Option<&ProjectSettings>) -> serde_json::Value {
    match project {
        None => serde_json::Value::Null,
        Some(ProjectSettings::Applied { path, trusted_by }) => {
            serde_json::json!({"path": path, "applied": true, "trustedBy": trusted_by})
        }
        Some(ProjectSettings::Ignored { path, reason }) => {
            serde_json::json!({"path": path, "applied": false, "reason": reason})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// docs/cli.md (generated; `tests/cli/reference.rs` holds it current) lists every visible
    /// command, the hidden `__reference` none; the README points to it.
    #[test]
    fn the_command_reference_lists_every_visible_command() {
        let doc = include_str!("../../../docs/cli.md");
        let mut missing = Vec::new();
        let tree = Cli::command();
        for cmd in tree.get_subcommands() {
            let name = cmd.get_name();
            let listed = doc.contains(&format!("\n## code-executor-mcp {name}\n"))
                || doc.contains(&format!("\n## code-executor-mcp {name} "));
            if !cmd.is_hide_set() && !listed {
                missing.push(name);
            }
        }
        assert_eq!(
            missing,
            Vec::<&str>::new(),
            "commands missing from docs/cli.md"
        );
        let readme = include_str!("../../../README.md");
        assert!(
            readme.contains("(docs/cli.md)"),
            "the README links docs/cli.md"
        );
    }

    /// The help of the argument `id` of the command at `path`.
    fn help_of(path: &[&str], id: &str) -> String {
        let tree = Cli::command();
        let cmd = path
            .iter()
            .fold(&tree, |c, name| c.find_subcommand(name).unwrap());
        let arg = cmd.get_arguments().find(|a| a.get_id() == id).unwrap();
        arg.get_help().unwrap().to_string()
    }

    /// Defaults that a help text states in words (clap cannot show them) are the ones applied.
    #[test]
    fn defaults_stated_in_words_are_the_applied_ones() {
        let limit = format!(
            "(default {}, at most {})",
            tools::catalog::DEFAULT_SEARCH_LIMIT,
            tools::catalog::MAX_SEARCH_LIMIT
        );
        assert!(help_of(&["tools", "search"], "limit").contains(&limit));
        assert!(help_of(&["tools", "search"], "detail").contains("(default: summary)"));
        assert_eq!(
            tools::catalog::Detail::parse(None).ok(),
            tools::catalog::Detail::parse(Some("summary")).ok()
        );
        // `--http` alone serves on the default address.
        assert!(help_of(&["serve"], "http").contains(faces::http::DEFAULT_ADDR));
    }
}
