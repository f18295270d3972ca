//! `doctor`: the sandbox checked layer by layer, the configuration and settings in effect,
//! and a trivial run in each worker, with a failing exit code if any of them is unhealthy.

use std::process::ExitCode;

use faces::CoreOptions;
use faces::composition::Core;
use policy::principal::Principal;
use runtime::execution::ExecRequest;
use runtime::python::PythonOptions;
use runtime::worker::Language;
use tools::config::settings::ProjectSettings;
use tools::config::{Config, Settings};
use tools::console::say;

/// `options` and `load` are the command line's (called in this order, as `doctor` needs them).
pub(super) async fn doctor(
    options: impl FnOnce() -> anyhow::Result<CoreOptions>,
    load: impl FnOnce() -> anyhow::Result<(Config, Settings, CoreOptions)>,
) -> anyhow::Result<ExitCode> {
    let opts = options()?;
    let policy = runtime::confinement::worker_policy(
        sandbox::SandboxMode::Enforce,
        &opts.exe,
        policy::MAX_TIMEOUT_MS,
    );
    let report = sandbox::probe(&policy);
    say(&format!(
        "sandbox (what --sandbox=enforce applies to every worker):\n{report}"
    ));
    say(&format!(
        "worker start: {}",
        runtime::worker::template::start_path(&policy)
    ));
    let mut healthy = report.minimum_guarantee_met();
    // In a container, name the runtime setting that stops the sandbox (docs/container.md).
    if let Some(diagnosis) = sandbox::container::diagnose(&report) {
        say(diagnosis.to_string().trim_end());
    }
    if !healthy {
        say("=> the minimum guarantee is NOT met: executions will be refused (fail closed).");
    }
    match load() {
        Ok((config, settings, loaded)) => {
            if !store_report(&loaded).await {
                healthy = false;
            }
            say(&format!(
                "settings: {}",
                settings
                    .source
                    .as_ref()
                    .map_or("defaults".to_string(), |p| p.display().to_string())
            ));
            match &settings.project {
                Some(ProjectSettings::Applied { path, trusted_by }) => say(&format!(
                    "  project settings {} applied over them (trusted: {} is in trustedProjects)",
                    path.display(),
                    trusted_by.display()
                )),
                Some(ProjectSettings::Ignored { path, reason }) => {
                    say(&format!("  warning: {}: {reason}", path.display()));
                }
                None => {}
            }
            // The audit log as the server would open it: a deployment must not lose its
            // trail silently (docs/container.md).
            if !settings.audit.enabled {
                say("audit log: off (audit.enabled is false)");
            } else {
                match policy::audit::AuditLog::open(&settings.audit) {
                    Ok(log) => say(&format!(
                        "audit log: {}",
                        log.path()
                            .map(|p| p.display().to_string())
                            .unwrap_or_default()
                    )),
                    Err(e) => {
                        healthy = false;
                        say(&format!(
                            "audit log: FAILED: {e}; the server would serve without its audit trail and /readyz would fail: mount a writable volume for it (docs/container.md), set audit.path, or set audit.enabled to false"
                        ));
                    }
                }
            }
            // Tools whose definition changed since a person accepted it, or that hid text.
            let definitions = tools::upstream::definitions::Definitions::new(
                tools::catalog::cache::default_dir().as_deref(),
                settings.tool_changes,
            );
            let notices = definitions.notices(config.servers.keys().map(String::as_str));
            if notices.is_empty() {
                say("tool definitions: none held, none flagged");
            } else {
                say("tool definitions:");
                for n in &notices {
                    let name = policy::qualified_name(&n.server, &n.tool);
                    if let Some(what) = &n.changed {
                        say(&format!(
                            "  HELD {name}: {what}; accept it with `code-executor-mcp tools accept {name}`"
                        ));
                    }
                    if n.flagged {
                        say(&format!(
                            "  flagged {name}: its description or a result hid text in invisible characters (taken out)"
                        ));
                    }
                }
            }
            say("permissions code may be granted (the ceiling; a call asks with `permissions`):");
            for line in settings.permissions.describe() {
                say(&format!("  {line}"));
            }
            for path in &settings.permissions.read {
                if std::fs::canonicalize(path).is_err() {
                    say(&format!(
                        "  warning: permissions.read: {} does not exist; it grants nothing",
                        path.display()
                    ));
                }
            }
            say(&format!(
                "upstream servers configured: {}",
                config.servers.len()
            ));
            for (name, spec) in &config.servers {
                let login = match tools::oauth::server_url(spec) {
                    None => String::new(),
                    Some(_) if tools::oauth::has_login(spec, config.token_dir.as_deref()) => {
                        "; OAuth login stored".to_string()
                    }
                    Some(_) => format!(
                        "; no OAuth login stored (if it asks for one: code-executor-mcp login {name})"
                    ),
                };
                say(&format!(
                    "  {name} ({}, from {}{login})",
                    spec.client,
                    spec.source.display()
                ));
            }
            for h in config.held_back.values() {
                say(&format!(
                    "  {} HELD BACK ({}, from {}): {}",
                    h.name,
                    h.client,
                    h.source.display(),
                    h.reason
                ));
            }
            for w in &config.warnings {
                say(&format!("  warning: {w}"));
            }
            if !settings.direct_tools.is_empty() {
                direct_tools(&config, &settings).await;
            }
            // A file that cannot be read drops every server in it: not healthy.
            for u in &config.unreadable {
                healthy = false;
                say(&format!("config: FAILED: {u}"));
            }
        }
        Err(e) => {
            healthy = false;
            say(&format!("config: {e}"));
        }
    }
    let core = Core::start(
        &Config::default(),
        &Settings::default(),
        CoreOptions {
            pool_size: 0,
            python: PythonOptions {
                pool_size: 0,
                ..opts.python.clone()
            },
            ..opts
        },
    );
    let outcome = core
        .execute(
            Language::JavaScript,
            ExecRequest {
                code: "return 1 + 1".into(),
                ..ExecRequest::default()
            },
            Principal::new("doctor"),
            None,
        )
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
    let outcome = core
        .execute(
            Language::Python,
            ExecRequest {
                code: "1 + 1".into(),
                ..ExecRequest::default()
            },
            Principal::new("doctor"),
            None,
        )
        .await;
    let python = core
        .runtime
        .python()
        .install()
        .map(|i| format!("CPython {} at {}", i.version, i.executable.display()))
        .unwrap_or_default();
    match &outcome.error {
        None => say(&format!(
            "python worker: ok, {python} (1 + 1 -> {} in {} ms)",
            outcome.result, outcome.duration_ms
        )),
        Some(e) => {
            healthy = false;
            say(&format!("python worker: FAILED: {}: {}", e.name, e.message));
        }
    }
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `directTools`: what each pattern pins (the servers it reaches are started, as a
/// `tools/list` would), the names they are listed under, and what they cost `tools/list`.
async fn direct_tools(config: &Config, settings: &Settings) {
    let upstreams = std::sync::Arc::new(tools::upstream::Upstreams::new(config, settings));
    let catalog = tools::catalog::Catalog::new(upstreams.clone());
    let (pinned, errors) = catalog
        .pinned(
            &policy::ToolAllowlist::allow_all(),
            Some(tools::upstream::SEARCH_START_WAIT),
            None,
        )
        .await;
    say(&format!(
        "direct tools (directTools, listed as our own tools): {} pinned",
        pinned.len()
    ));
    for p in &pinned {
        say(&format!(
            "  {} ({})",
            p.name,
            policy::qualified_name(&p.server, &p.tool.name)
        ));
    }
    for pattern in catalog.direct().patterns() {
        let names = upstreams.names();
        if !names
            .clone()
            .any(|s| policy::pattern::reaches(pattern, names.clone(), s))
        {
            say(&format!(
                "  warning: {pattern} reaches no configured server; it pins nothing"
            ));
        } else if !pinned
            .iter()
            .any(|p| policy::pattern::matches(pattern, names.clone(), &p.server, &p.tool.name))
        {
            say(&format!(
                "  warning: {pattern} matches no tool the servers list now"
            ));
        }
    }
    for e in errors {
        say(&format!("  warning: not listed now: {e}"));
    }
    let own = faces::server::tool_definitions();
    let mut all = own.clone();
    all.extend(pinned.iter().map(tools::catalog::direct::Pinned::listed));
    let count = |tools: &[rmcp::model::Tool]| {
        serde_json::to_string(tools)
            .ok()
            .and_then(|t| faces::tokens::count_tokens(&t).ok())
            .unwrap_or(0)
    };
    say(&format!(
        "  tools/list: {} cl100k tokens of our own tools, {} with the pinned ones \
         (the configured rules may list fewer)",
        count(&own),
        count(&all)
    ));
}

/// The store as the server would open it (docs/store.md): what and where, or why it cannot
/// be used (the server would not start). False when it cannot.
async fn store_report(opts: &CoreOptions) -> bool {
    if opts.store == store::Spec::None {
        say("store: none (sessions' stored values and tasks' results are kept in memory only)");
        return true;
    }
    match store::open(&opts.store, opts.store_limits).await {
        Ok(Some(s)) => {
            let d = s.describe();
            say(&format!(
                "store: {} at {} (schema version {}; at most {} bytes per client)",
                d.backend, d.location, d.schema_version, d.limits.max_bytes_per_principal
            ));
            true
        }
        Ok(None) => true,
        Err(e) if !opts.store_named => {
            say(&format!(
                "store: warning: {e}\n  the server would keep sessions' stored values and \
                 tasks' results in memory only (this default store cannot be used)"
            ));
            true
        }
        Err(e) => {
            say(&format!("store: FAILED: {e}"));
            false
        }
    }
}
