//! Whether each client would start a server it lists: its trust and approval rules, read
//! from its own files, so that we never start what the user's client would not.
//!
//! - Claude Code starts a project's `.mcp.json` server only once it is approved
//!   (`enabledMcpjsonServers` / `enableAllProjectMcpServers`) and not rejected
//!   (`disabledMcpjsonServers`), in `~/.claude/settings.json`, `.claude/settings.local.json`,
//!   `.claude/settings.json` or (older versions) `~/.claude.json` `projects[<dir>]`. The
//!   project's own `.claude/settings.json` counts only once the workspace is trusted
//!   (`hasTrustDialogAccepted`), and `.claude/settings.local.json` then too, or when it is
//!   untracked in a git repository and not a symlink (Claude Code's own rule). A name in
//!   `projects[<dir>].disabledMcpServers` is disabled.
//! - Gemini CLI starts no server at all (its user-level ones included) in a folder that
//!   `~/.gemini/trustedFolders.json` does not trust, unless `security.folderTrust.enabled` is
//!   false; it blocks names outside `mcp.allowed` or in `mcp.excluded`, and
//!   `~/.gemini/mcp-server-enablement.json` disables names.
//! - Codex reads a project's `.codex/config.toml` only when `projects."<dir>".trust_level`
//!   is `"trusted"` (the directory's own entry, else its git root's).
//! - VS Code and Cursor ask before they start a workspace's servers and keep the answer in
//!   their internal state, which we cannot read: their project files are held back.
//!
//! Our own escape hatch is the `trustedProjects` setting (user settings file only): a
//! project listed there (or under a listed directory) has every project file trusted.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::read::ReadError;
use super::sources::{
    Format, Places, Scope, Source, claude_project, git_root, project_key, read_config,
    strip_json_comments,
};
use policy::hooks::claude_name;

/// The settings key listing projects whose own server files are trusted (see
/// this module); read only from a user settings file, never from a project's.
pub const TRUST_SETTING: &str = "trustedProjects";

/// What happens to one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Start it on use.
    Start,
    /// Its client disabled it: still available (every server starts lazily), marked.
    Disabled(String),
    /// Its client would not start it; neither do we. The reason says how to allow it.
    HeldBack(String),
}

/// Everything the clients' rules need, read once per load.
pub struct Trust {
    cwd: PathBuf,
    /// The project is under a directory of our `trustedProjects`.
    ours: Option<PathBuf>,
    claude: Claude,
    gemini: Gemini,
    codex: Codex,
    /// Problems reading the clients' trust files.
    pub warnings: Vec<String>,
}

/// The working directory's project is not trusted: what it brings beyond server entries (its
/// skills) is held back. The text says how to trust it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the project {} is not trusted (a project's files may come with a cloned repository); to \
     trust it, accept Claude Code's trust dialog there, or add \"{}\" to \"{TRUST_SETTING}\" in \
     the user settings file (~/.config/code-executor-mcp/config.json)",
    .dir.display(),
    .dir.display()
)]
pub struct UntrustedProject {
    pub dir: PathBuf,
}

impl Trust {
    pub fn load(places: &Places, trusted_projects: &[PathBuf]) -> Trust {
        let cwd = canonical(&places.cwd);
        let ours = trusted_by(trusted_projects, &cwd);
        let mut warnings = Vec::new();
        Trust {
            claude: Claude::load(places, &cwd, &mut warnings),
            gemini: Gemini::load(places, &cwd, &mut warnings),
            codex: Codex::load(places),
            cwd,
            ours,
            warnings,
        }
    }

    /// Whether the project itself (the working directory) is trusted, for what it brings
    /// beyond server entries (its skills): by `trustedProjects`, or by Claude Code's trust
    /// dialog. Otherwise why not, and how to trust it.
    pub fn project(&self) -> Result<(), UntrustedProject> {
        if self.ours.is_some() || self.claude.workspace_trusted {
            return Ok(());
        }
        Err(UntrustedProject {
            dir: self.cwd.clone(),
        })
    }

    /// The hooks of Claude Code's settings files that would run here (see [`ClientHooks`]).
    pub fn claude_hooks(&self) -> ClientHooks {
        let counted: Vec<&HookFile> = self
            .claude
            .hooks
            .iter()
            .filter(|h| h.counts || (h.project && self.ours.is_some()))
            .collect();
        let managed_only = counted.iter().any(|h| h.managed_only);
        let managed_off = counted.iter().any(|h| h.managed && h.disable_all);
        let others_off = counted.iter().any(|h| h.disable_all);
        let files = counted
            .into_iter()
            .filter(|h| {
                if h.managed {
                    !managed_off
                } else {
                    !managed_only && !others_off
                }
            })
            .filter(|h| !h.hooks.is_null())
            .map(|h| (h.file.clone(), h.hooks.clone()))
            .collect();
        ClientHooks { files }
    }

    /// The gate of entry `name` of `source`.
    pub fn gate(&self, source: &Source, name: &str) -> Gate {
        let held = |why: String, how: &str| {
            Gate::HeldBack(format!(
                "{why}; to allow it, {how}, or trust this project for code-executor-mcp: add \"{}\" to \"{TRUST_SETTING}\" in the user settings file (~/.config/code-executor-mcp/config.json)",
                self.cwd.display()
            ))
        };
        let dir = self.cwd.display();
        let gate = match (source.client, source.scope) {
            (_, Scope::Explicit) => Gate::Start,
            ("claude-code", Scope::Project) if source.format == Format::McpServers => {
                match self.claude.project_server(name) {
                    ClaudeApproval::Rejected(file) => {
                        return Gate::HeldBack(format!(
                            "Claude Code rejected this project server (disabledMcpjsonServers in {}); to allow it, remove it there (or run `claude mcp reset-project-choices`)",
                            file.display()
                        ));
                    }
                    ClaudeApproval::Approved => Gate::Start,
                    ClaudeApproval::Pending if self.ours.is_some() => Gate::Start,
                    ClaudeApproval::Pending => held(
                        format!(
                            "Claude Code has not approved this server of {}/.mcp.json (it asks before starting a project's servers)",
                            dir
                        ),
                        "approve it in Claude Code (or list it in enabledMcpjsonServers of ~/.claude/settings.json)",
                    ),
                }
            }
            ("gemini", _) => {
                if let Some(why) = self.gemini.blocked(name) {
                    return Gate::HeldBack(why);
                }
                match &self.gemini.untrusted {
                    Some(why) if self.ours.is_none() => held(
                        why.clone(),
                        &format!(
                            "trust the folder in Gemini CLI (add \"{dir}\": \"TRUST_FOLDER\" to ~/.gemini/trustedFolders.json)"
                        ),
                    ),
                    _ => Gate::Start,
                }
            }
            ("codex", Scope::Project) => {
                let folder = source
                    .path
                    .parent()
                    .and_then(Path::parent)
                    .unwrap_or(Path::new("/"));
                if self.codex.trusted(folder) || self.ours.is_some() {
                    Gate::Start
                } else {
                    held(
                        format!(
                            "Codex reads {} only in a trusted project",
                            source.path.display()
                        ),
                        &format!(
                            "add [projects.\"{}\"] trust_level = \"trusted\" to ~/.codex/config.toml",
                            folder.display()
                        ),
                    )
                }
            }
            ("vscode" | "cursor", Scope::Project) if self.ours.is_none() => held(
                format!(
                    "{} asks before it starts the servers of a workspace's {} and keeps the answer where code-executor-mcp cannot read it",
                    if source.client == "vscode" {
                        "VS Code"
                    } else {
                        "Cursor"
                    },
                    source.path.display()
                ),
                "copy the entry to a file you own (for example ~/.claude.json or --config)",
            ),
            _ => Gate::Start,
        };
        if gate != Gate::Start {
            return gate;
        }
        let disabled = match source.client {
            "claude-code" => self
                .claude
                .disabled_servers
                .iter()
                .any(|n| n == name)
                .then(|| {
                    "disabled in Claude Code (disabledMcpServers of this project in ~/.claude.json)"
                        .to_string()
                }),
            "gemini" => self.gemini.disabled(name),
            _ => None,
        };
        disabled.map_or(Gate::Start, Gate::Disabled)
    }
}

/// The entry of `trustedProjects` that holds `dir` (both compared canonical), if any.
pub fn trusted_by(trusted_projects: &[PathBuf], dir: &Path) -> Option<PathBuf> {
    let dir = canonical(dir);
    trusted_projects
        .iter()
        .map(|p| canonical(p))
        .find(|p| dir.starts_with(p))
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// A client's JSON (with comments) settings file; a missing file is `None`. A file that
/// cannot be read or parsed is `None` too, with a warning when `warnings` is given (files
/// that are also server sources are reported by the config loader instead).
fn read_json(path: &Path, warnings: Option<&mut Vec<String>>) -> Option<Value> {
    let parsed = read_config(path).map_err(|e| (e == ReadError::NotFound, e.to_string()));
    let parsed = parsed.and_then(|text| {
        serde_json::from_str(&strip_json_comments(&text))
            .map_err(|e| (false, format!("is not valid JSON: {e}")))
    });
    match parsed {
        Ok(v) => Some(v),
        Err((missing, why)) => {
            if let Some(w) = warnings
                && !missing
            {
                w.push(format!("{} ignored: {why}", path.display()));
            }
            None
        }
    }
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    v?.as_array().map(|a| {
        a.iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    })
}

/// One Claude Code settings file's hooks.
struct HookFile {
    file: PathBuf,
    hooks: Value,
    /// Counted without `trustedProjects`.
    counts: bool,
    /// A project file: counted under `trustedProjects` too.
    project: bool,
    /// `disableAllHooks: true`.
    disable_all: bool,
    /// The managed (administrator) file.
    managed: bool,
    /// `allowManagedHooksOnly: true` (the managed file only).
    managed_only: bool,
}

/// The hooks of Claude Code's settings files that would run in this project, by Claude
/// Code's rules: files counted as for its MCP servers (the user's always; the project's own
/// once the workspace is trusted, or under `trustedProjects`; the local one as for servers),
/// the managed file always; `disableAllHooks` in a counted file turns off every file's hooks
/// but the managed ones (the managed file's own turns off all); `allowManagedHooksOnly` in
/// the managed file keeps only its hooks.
pub struct ClientHooks {
    /// `(file, its "hooks" object)`, lowest precedence first.
    pub files: Vec<(PathBuf, Value)>,
}

enum ClaudeApproval {
    Approved,
    Pending,
    Rejected(PathBuf),
}

/// One Claude Code settings file's approval keys.
struct ClaudeChoices {
    file: PathBuf,
    enabled: Vec<String>,
    disabled: Vec<String>,
    enable_all: bool,
    /// Counted for approvals (rejections always count).
    counts: bool,
}

struct Claude {
    choices: Vec<ClaudeChoices>,
    /// The settings files' `hooks` objects, lowest precedence first, with whether the file
    /// counts on its own (the project's own file also counts under `trustedProjects`).
    hooks: Vec<HookFile>,
    disabled_servers: Vec<String>,
    /// The user accepted Claude Code's trust dialog for this workspace.
    workspace_trusted: bool,
}

impl Claude {
    fn load(places: &Places, cwd: &Path, warnings: &mut Vec<String>) -> Claude {
        let key = project_key(cwd);
        // Also a server source: the config loader reports it when it cannot be read.
        let project = places
            .home
            .as_ref()
            .and_then(|h| read_config(&h.join(".claude.json")).ok())
            .and_then(|text| claude_project(&text, key.to_string_lossy().as_ref()).ok())
            .flatten()
            .unwrap_or(Value::Null);
        let trusted = project.get("hasTrustDialogAccepted") == Some(&Value::Bool(true));
        let user_file = places
            .home
            .as_ref()
            .map(|h| h.join(".claude/settings.json"));
        let project_file = cwd.join(".claude/settings.json");
        let local_file = cwd.join(".claude/settings.local.json");
        let managed_file = places
            .claude_managed_dir
            .as_ref()
            .map(|d| d.join("managed-settings.json"));
        let mut choices = Vec::new();
        let mut hooks = Vec::new();
        // `project`: a project file (counted under `trustedProjects` too for its hooks).
        let mut add = |file: PathBuf, v: &Value, counts: bool, project: bool| {
            let managed = managed_file.as_ref() == Some(&file);
            if v.get("hooks").is_some() || v.get("disableAllHooks").is_some() {
                hooks.push(HookFile {
                    file: file.clone(),
                    hooks: v.get("hooks").cloned().unwrap_or(Value::Null),
                    counts,
                    project,
                    disable_all: v.get("disableAllHooks") == Some(&Value::Bool(true)),
                    managed,
                    managed_only: managed
                        && v.get("allowManagedHooksOnly") == Some(&Value::Bool(true)),
                });
            }
            if managed {
                return;
            }
            let c = ClaudeChoices {
                enabled: strings(v.get("enabledMcpjsonServers")).unwrap_or_default(),
                disabled: strings(v.get("disabledMcpjsonServers")).unwrap_or_default(),
                enable_all: v.get("enableAllProjectMcpServers") == Some(&Value::Bool(true)),
                file,
                counts,
            };
            choices.push(c);
        };
        if let Some(home) = &places.home {
            add(home.join(".claude.json"), &project, true, false);
        }
        if let Some(f) = &user_file
            && let Some(v) = read_json(f, Some(warnings))
        {
            add(f.clone(), &v, true, false);
        }
        if let Some(v) = read_json(&project_file, Some(warnings)) {
            let same_as_user = user_file
                .as_ref()
                .is_some_and(|u| canonical(u) == canonical(&project_file));
            add(project_file, &v, trusted || same_as_user, !same_as_user);
        }
        if let Some(v) = read_json(&local_file, Some(warnings)) {
            let counts = trusted || !local_settings_suspicious(cwd);
            add(local_file, &v, counts, true);
        }
        if let Some(f) = &managed_file
            && let Some(v) = read_json(f, Some(warnings))
        {
            add(f.clone(), &v, true, false);
        }
        Claude {
            choices,
            hooks,
            disabled_servers: strings(project.get("disabledMcpServers")).unwrap_or_default(),
            workspace_trusted: trusted,
        }
    }

    fn project_server(&self, name: &str) -> ClaudeApproval {
        let n = claude_name(name);
        if let Some(c) = self
            .choices
            .iter()
            .find(|c| c.disabled.iter().any(|d| claude_name(d) == n))
        {
            return ClaudeApproval::Rejected(c.file.clone());
        }
        let approved = self
            .choices
            .iter()
            .filter(|c| c.counts)
            .any(|c| c.enable_all || c.enabled.iter().any(|e| claude_name(e) == n));
        if approved {
            ClaudeApproval::Approved
        } else {
            ClaudeApproval::Pending
        }
    }
}

/// Claude Code ignores an untrusted workspace's `.claude/settings.local.json` when it could
/// have come with the repository: `.claude` or the file is a symlink, `.claude/.git` exists,
/// the directory is not in a git work tree, or git tracks the file.
fn local_settings_suspicious(cwd: &Path) -> bool {
    for p in [cwd.join(".claude"), cwd.join(".claude/settings.local.json")] {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return true,
        }
    }
    if std::fs::symlink_metadata(cwd.join(".claude/.git")).is_ok() {
        return true;
    }
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=",
            "-C",
        ])
        .arg(cwd)
        .args([
            "ls-files",
            "--error-unmatch",
            "--",
            ".claude/settings.local.json",
        ])
        .env("GIT_LITERAL_PATHSPECS", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match out {
        // Tracked (0), or not a work tree (128): suspicious. Untracked (1): not.
        Ok(s) => s.code() != Some(1),
        // No git at all: Claude Code then trusts the file.
        Err(_) => false,
    }
}

struct Gemini {
    /// Why the folder is not trusted (then nothing of Gemini's starts).
    untrusted: Option<String>,
    allowed: Option<(Vec<String>, String)>,
    excluded: Vec<(String, String)>,
    disabled: Vec<String>,
    enablement_file: PathBuf,
}

impl Gemini {
    fn load(places: &Places, cwd: &Path, warnings: &mut Vec<String>) -> Gemini {
        let dir = places.home.clone().unwrap_or_default().join(".gemini");
        let user_file = dir.join("settings.json");
        // Also a server source: the config loader reports it.
        let user = read_json(&user_file, None).unwrap_or(Value::Null);
        let enabled = user.pointer("/security/folderTrust/enabled") != Some(&Value::Bool(false));
        let untrusted = if enabled {
            folder_untrusted(&dir.join("trustedFolders.json"), cwd, warnings)
        } else {
            None
        };
        let mut files = vec![(user_file.clone(), user)];
        let ws_file = cwd.join(".gemini/settings.json");
        if untrusted.is_none()
            && canonical(&ws_file) != canonical(&user_file)
            && let Some(v) = read_json(&ws_file, None)
        {
            files.push((ws_file, v));
        }
        // Allow lists intersect; exclude lists add up (Gemini CLI's consolidation).
        let mut allowed: Option<(Vec<String>, String)> = None;
        let mut excluded = Vec::new();
        for (file, v) in &files {
            if let Some(list) = strings(v.pointer("/mcp/allowed")) {
                let list: Vec<String> = list.iter().map(|s| gemini_normal(s)).collect();
                let where_ = format!("mcp.allowed of {}", file.display());
                allowed = Some(match allowed {
                    None => (list, where_),
                    Some((acc, w)) => (
                        acc.into_iter().filter(|a| list.contains(a)).collect(),
                        format!("{w} and {where_}"),
                    ),
                });
            }
            for e in strings(v.pointer("/mcp/excluded")).unwrap_or_default() {
                excluded.push((
                    gemini_normal(&e),
                    format!("mcp.excluded of {}", file.display()),
                ));
            }
        }
        let enablement_file = dir.join("mcp-server-enablement.json");
        let disabled = read_json(&enablement_file, Some(warnings))
            .and_then(|v| v.as_object().cloned())
            .map(|m| {
                m.into_iter()
                    .filter(|(_, s)| s.get("enabled") == Some(&Value::Bool(false)))
                    .map(|(k, _)| gemini_normal(&k))
                    .collect()
            })
            .unwrap_or_default();
        Gemini {
            untrusted,
            allowed,
            excluded,
            disabled,
            enablement_file,
        }
    }

    fn blocked(&self, name: &str) -> Option<String> {
        let n = gemini_normal(name);
        if let Some((list, where_)) = &self.allowed
            && !list.contains(&n)
        {
            return Some(format!(
                "Gemini CLI blocks it: it is not in {where_}; to allow it, add it there"
            ));
        }
        self.excluded
            .iter()
            .find(|(e, _)| *e == n)
            .map(|(_, where_)| {
                format!(
                    "Gemini CLI blocks it: it is listed in {where_}; to allow it, remove it there"
                )
            })
    }

    fn disabled(&self, name: &str) -> Option<String> {
        self.disabled.contains(&gemini_normal(name)).then(|| {
            format!(
                "disabled in Gemini CLI ({}; `gemini mcp enable {name}` enables it)",
                self.enablement_file.display()
            )
        })
    }
}

fn gemini_normal(name: &str) -> String {
    name.trim().to_lowercase()
}

/// Gemini CLI's folder trust: the longest rule of `trustedFolders.json` whose folder holds
/// `cwd` (`TRUST_PARENT` names a folder by its child) decides; none means untrusted.
fn folder_untrusted(file: &Path, cwd: &Path, warnings: &mut Vec<String>) -> Option<String> {
    let rules = match read_config(file) {
        Err(ReadError::NotFound) => serde_json::Map::new(),
        Err(e) => return Some(unreadable(file, &e.to_string(), warnings)),
        Ok(text) => match serde_json::from_str::<Value>(&strip_json_comments(&text)) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Some(unreadable(file, "not a JSON object", warnings)),
            Err(e) => return Some(unreadable(file, &e.to_string(), warnings)),
        },
    };
    let mut best: Option<(usize, &str)> = None;
    for (rule, level) in &rules {
        let level = match level.as_str() {
            Some(l @ ("TRUST_FOLDER" | "TRUST_PARENT" | "DO_NOT_TRUST")) => l,
            _ => {
                return Some(unreadable(
                    file,
                    &format!("invalid trust level {level} for \"{rule}\""),
                    warnings,
                ));
            }
        };
        let path = Path::new(rule);
        let folder = if level == "TRUST_PARENT" {
            path.parent().unwrap_or(path)
        } else {
            path
        };
        if cwd.starts_with(canonical(folder)) && best.is_none_or(|(len, _)| rule.len() > len) {
            best = Some((rule.len(), level));
        }
    }
    match best {
        Some((_, "TRUST_FOLDER" | "TRUST_PARENT")) => None,
        Some(_) => Some(format!(
            "Gemini CLI starts no MCP server here: {} marks {} DO_NOT_TRUST",
            file.display(),
            cwd.display()
        )),
        None => Some(format!(
            "Gemini CLI starts no MCP server (user-level ones included) in a folder it does not trust, and {} does not trust {}",
            file.display(),
            cwd.display()
        )),
    }
}

fn unreadable(file: &Path, why: &str, warnings: &mut Vec<String>) -> String {
    let msg = format!("{} cannot be read: {why}", file.display());
    warnings.push(msg.clone());
    format!("Gemini CLI starts no MCP server while {msg}")
}

struct Codex {
    /// `projects."<dir>".trust_level` of the user config.
    projects: Vec<(PathBuf, String)>,
}

impl Codex {
    fn load(places: &Places) -> Codex {
        #[derive(serde::Deserialize)]
        struct File {
            #[serde(default)]
            projects: std::collections::BTreeMap<String, Project>,
        }
        #[derive(serde::Deserialize)]
        struct Project {
            trust_level: Option<String>,
        }
        let projects = places
            .codex_home
            .as_ref()
            // Also a server source: the config loader reports it when it cannot be read.
            .and_then(|h| read_config(&h.join("config.toml")).ok())
            .and_then(|t| toml::from_str::<File>(&t).ok())
            .map(|f| {
                f.projects
                    .into_iter()
                    .filter_map(|(k, p)| Some((canonical(Path::new(&k)), p.trust_level?)))
                    .collect()
            })
            .unwrap_or_default();
        Codex { projects }
    }

    /// A folder's own entry decides, else its git root's; none: untrusted.
    fn trusted(&self, folder: &Path) -> bool {
        let folder = canonical(folder);
        let level = |d: &Path| {
            self.projects
                .iter()
                .find(|(p, _)| p == d)
                .map(|(_, l)| l.as_str())
        };
        let decided =
            level(&folder).or_else(|| git_root(&folder).and_then(|r| level(&canonical(&r))));
        decided == Some("trusted")
    }
}
