//! Configuration: the upstream MCP servers and our own settings.
//!
//! Servers come from the files every MCP client keeps ([`sources`]), merged by precedence
//! (explicit file, then project files, then global files); each entry is parsed raw (any
//! client's dialect) and
//! validated into a typed [`ServerSpec`], with `${VAR}` references expanded ([`expand`]). A
//! broken file or entry is skipped with a warning that names the file and the key; the rest
//! loads. An entry that would launch this server itself is skipped too. An entry its own
//! client would not start (a project server not approved, a folder not trusted: [`trust`])
//! is held back: not started, not callable, listed with the reason and how to allow it.

mod entry;
pub mod error;
pub mod expand;
mod openapi_entry;
pub mod read;
mod secrets;
pub mod settings;
pub mod sources;
pub mod spec;
pub mod trust;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

pub use entry::launches_self;
pub(crate) use openapi_entry::shown as openapi_shown;
pub use secrets::secret_values;
pub use settings::Settings;
use sources::{Format, Places, Scope, Source};
use spec::mask_url;
pub use spec::{
    ApiKeyIn, Config, DocumentLocation, HeldBack, INHERITED_ENV, OpenApiAuth, OpenApiSpec,
    ServerSpec, Transport, mask,
};
use trust::{Gate, Trust};

/// Environment variable naming the upstream config file when `--config` is not given.
pub const CONFIG_PATH_ENV: &str = "MCP_CONFIG_PATH";

/// Where and how to load from.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `--config` (else `MCP_CONFIG_PATH`).
    pub explicit: Option<PathBuf>,
    /// Read other clients' files too.
    pub discover: bool,
    pub places: Places,
    /// Our own binary, to skip entries that would launch it.
    pub self_exe: Option<PathBuf>,
    /// The `trustedProjects` setting.
    pub trusted_projects: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {reason}")]
    Read {
        path: PathBuf,
        reason: error::SourceError,
    },
}

impl Config {
    /// Loads and merges every source. Only a broken explicit file is an error; problems with
    /// discovered files become warnings.
    pub fn load(opts: &LoadOptions) -> Result<Config, ConfigError> {
        let mut list: Vec<Source> = if opts.discover {
            sources::discover(&opts.places)
        } else {
            Vec::new()
        };
        let explicit = opts
            .explicit
            .clone()
            .or_else(|| std::env::var_os(CONFIG_PATH_ENV).map(PathBuf::from));
        if let Some(path) = explicit {
            // Read (and refused when missing or not a regular file) below.
            let path = std::path::absolute(&path).unwrap_or(path);
            list.push(Source {
                client: "explicit",
                format: if path.extension().is_some_and(|e| e == "toml") {
                    Format::CodexToml
                } else {
                    Format::McpServers
                },
                path,
                scope: Scope::Explicit,
            });
        }
        let lookup = |k: &str| std::env::var(k).ok();
        let mut config = Config {
            token_dir: opts.places.config_dir.as_ref().map(|d| token_dir_in(d)),
            ..Config::default()
        };
        let trust = Trust::load(&opts.places, &opts.trusted_projects);
        for w in &trust.warnings {
            config.warn(w.clone());
        }
        config.project_dir = Some(opts.places.cwd.clone());
        config.project_trust = Some(trust.project());
        if opts.discover {
            config.client_hooks = trust.claude_hooks().files;
        }
        for source in &list {
            match sources::read_entries(source) {
                Ok(entries) => config.merge(
                    source,
                    entries,
                    opts.self_exe.as_deref(),
                    &lookup,
                    &|name| trust.gate(source, name),
                ),
                Err(reason) if source.scope == Scope::Explicit => {
                    return Err(ConfigError::Read {
                        path: source.path.clone(),
                        reason,
                    });
                }
                Err(reason) => {
                    let msg = format!(
                        "{} ({}) skipped: {reason}",
                        source.path.display(),
                        source.client
                    );
                    config.unreadable.push(msg.clone());
                    config.warn(msg);
                }
            }
            config.sources.push(source.path.clone());
        }
        // Code calls this server's own tools by this name unless an upstream has it.
        let own = crate::own_tools::SELF_SERVER;
        if config.servers.contains_key(own) {
            config.warn(format!(
                "an upstream server is named \"{own}\", the name code calls this server's own \
                 tools by (callMCPTool('mcp__{own}__health')): code reaches that server under \
                 the name, and not this server's own tools; rename the entry to reach both"
            ));
        }
        Ok(config)
    }

    /// Parses one `{"mcpServers": ...}` text as an explicit file (tests, the demo).
    pub fn parse(text: &str, path: &Path, self_exe: Option<&Path>) -> Result<Config, ConfigError> {
        let source = Source {
            client: "explicit",
            path: path.to_path_buf(),
            format: Format::McpServers,
            scope: Scope::Explicit,
        };
        let entries =
            sources::parse_entries(text, &source.format).map_err(|reason| ConfigError::Read {
                path: path.to_path_buf(),
                reason,
            })?;
        let mut config = Config::default();
        config.merge(
            &source,
            entries,
            self_exe,
            &|k| std::env::var(k).ok(),
            &|_| Gate::Start,
        );
        config.sources.push(path.to_path_buf());
        Ok(config)
    }

    fn warn(&mut self, msg: String) {
        tracing::warn!("{msg}");
        self.warnings.push(msg);
    }

    /// Adds one file's entries: a later file's entry replaces an earlier one of the same
    /// name, except that an entry held back never displaces one that can start.
    fn merge(
        &mut self,
        source: &Source,
        entries: BTreeMap<String, Value>,
        self_exe: Option<&Path>,
        lookup: &dyn Fn(&str) -> Option<String>,
        gate: &dyn Fn(&str) -> Gate,
    ) {
        let section = entry::section(&source.format);
        for (name, value) in entries {
            let mut unknown = Vec::new();
            let result = entry::validate(&name, value, source, self_exe, lookup, &mut unknown);
            for key in unknown {
                self.warn(format!(
                    "{}: {section}.{name}.{key} is not understood by code-executor-mcp and has no effect",
                    source.path.display()
                ));
            }
            let mut spec = match result {
                Ok(Some(spec)) => spec,
                Ok(None) => continue,
                Err(reason) => {
                    self.warn(format!(
                        "{}: {section}.{name} skipped: {reason}",
                        source.path.display()
                    ));
                    continue;
                }
            };
            match gate(&name) {
                Gate::Start => {}
                Gate::Disabled(why) => {
                    spec.disabled = true;
                    spec.not_applied
                        .push(format!("started on use although {why}"));
                }
                Gate::HeldBack(reason) => {
                    tracing::info!(server = name, "held back: {reason}");
                    if let Some(used) = self.servers.get(&name) {
                        self.warn(format!(
                            "{}: {section}.{name} is held back ({reason}); the entry of {} is used",
                            source.path.display(),
                            used.source.display()
                        ));
                    } else {
                        self.held_back.insert(
                            name.clone(),
                            HeldBack {
                                name,
                                source: source.path.clone(),
                                client: source.client,
                                reason,
                            },
                        );
                    }
                    continue;
                }
            }
            if let Some(old) = self.servers.get(&name) {
                tracing::debug!(
                    server = name,
                    "{} overrides {}",
                    source.path.display(),
                    old.source.display()
                );
            }
            self.held_back.remove(&name);
            self.servers.insert(name, spec);
        }
    }

    /// `config show`: every server with its source, secrets masked.
    pub fn describe(&self) -> Value {
        let servers: Vec<Value> = self
            .servers
            .values()
            .map(|s| {
                let mut v = match &s.transport {
                    Transport::Stdio {
                        command,
                        args,
                        env,
                        cwd,
                    } => json!({
                        "transport": "stdio", "command": command, "args": args,
                        "env": env.iter().map(|(k, v)| (k.clone(), Value::String(mask(k, v)))).collect::<serde_json::Map<_, _>>(),
                        "cwd": cwd,
                    }),
                    Transport::Http { url, headers } | Transport::Sse { url, headers } => json!({
                        "transport": if matches!(s.transport, Transport::Sse { .. }) { "sse" } else { "http" },
                        "url": mask_url(url),
                        "headers": headers.iter().map(|(k, v)| (k.clone(), Value::String(mask(k, v)))).collect::<serde_json::Map<_, _>>(),
                    }),
                    Transport::OpenApi(o) => json!({
                        "transport": "openapi",
                        "spec": openapi_entry::shown(&o.document),
                        "baseUrl": o.base_url.as_deref().map(mask_url),
                        "serverVariables": o.server_variables,
                        "auth": o.auth.as_ref().map(spec::OpenApiAuth::describe),
                        "allowAddresses": o.allow_addresses,
                        "refsDirectory": o.refs_directory,
                    }),
                };
                if let Some(o) = &s.oauth {
                    v["oauth"] = json!({
                        "clientId": o.client_id,
                        "clientSecret": o.client_secret.as_ref().map(|c| mask("clientSecret", c)),
                        "scopes": o.scopes,
                        "callbackPort": o.callback_port,
                    });
                }
                v["name"] = json!(s.name);
                v["source"] = json!(s.source);
                v["client"] = json!(s.client);
                if s.disabled {
                    v["disabled"] = json!(true);
                }
                if let Some(f) = &s.tool_filter {
                    v["toolFilter"] = json!(f);
                }
                if let Some(t) = s.startup_timeout {
                    v["startupTimeoutMs"] = json!(t.as_millis() as u64);
                }
                if let Some(t) = s.tool_timeout {
                    v["toolTimeoutMs"] = json!(t.as_millis() as u64);
                }
                if !s.not_applied.is_empty() {
                    v["notApplied"] = json!(s.not_applied);
                }
                v
            })
            .collect();
        let held: Vec<Value> = self
            .held_back
            .values()
            .map(|h| json!({"name": h.name, "source": h.source, "client": h.client, "reason": h.reason}))
            .collect();
        json!({ "servers": servers, "heldBack": held, "sources": self.sources, "warnings": self.warnings })
    }
}

/// The token directory under a user config dir.
pub fn token_dir_in(config_dir: &Path) -> PathBuf {
    config_dir.join("code-executor-mcp").join("oauth")
}

#[cfg(test)]
mod openapi_tests;
#[cfg(test)]
mod settings_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod trust_tests;
