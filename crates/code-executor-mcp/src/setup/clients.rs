//! The MCP clients `setup` knows: where each keeps its servers (the config loader's table,
//! [`tools::config::sources::user_files`]), the entry its own `mcp add` would write, and how
//! it switches a server off:
//!
//! | client | file | switched off by |
//! | --- | --- | --- |
//! | Claude Code | `~/.claude.json` `mcpServers` (user scope) | `projects[<project>].disabledMcpServers` (Claude Code keeps this per project) |
//! | Claude Desktop | `claude_desktop_config.json` | nothing in its file |
//! | Cursor | `~/.cursor/mcp.json` | nothing in its file (Cursor keeps it in its own state) |
//! | VS Code | `Code/User/mcp.json` `servers` | nothing in its file (VS Code keeps it in its own state) |
//! | Windsurf | `~/.codeium/windsurf/mcp_config.json` | `"disabled": true` |
//! | Codex | `$CODEX_HOME/config.toml` `[mcp_servers.NAME]` | `enabled = false` |
//! | Gemini CLI | `~/.gemini/settings.json` | `~/.gemini/mcp-server-enablement.json` (what `gemini mcp disable` writes) |
//!
//! A switched-off server stays reachable through us: the config loader reads disabled
//! entries and starts them on use.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::edit::{self, EntryShape, JsonDoc, Launch};
use super::error::EditError;
use tools::config::sources::{self, Format, Places};

/// A client `setup` can configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum ClientId {
    ClaudeCode,
    ClaudeDesktop,
    Cursor,
    #[value(alias = "code")]
    Vscode,
    Windsurf,
    Codex,
    #[value(alias = "gemini-cli")]
    Gemini,
}

impl ClientId {
    pub const ALL: [ClientId; 7] = [
        ClientId::ClaudeCode,
        ClientId::ClaudeDesktop,
        ClientId::Cursor,
        ClientId::Vscode,
        ClientId::Windsurf,
        ClientId::Codex,
        ClientId::Gemini,
    ];

    /// The id the config loader uses for this client's files.
    pub fn config_id(self) -> &'static str {
        match self {
            ClientId::ClaudeCode => "claude-code",
            ClientId::ClaudeDesktop => "claude-desktop",
            ClientId::Cursor => "cursor",
            ClientId::Vscode => "vscode",
            ClientId::Windsurf => "windsurf",
            ClientId::Codex => "codex",
            ClientId::Gemini => "gemini",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            ClientId::ClaudeCode => "Claude Code",
            ClientId::ClaudeDesktop => "Claude Desktop",
            ClientId::Cursor => "Cursor",
            ClientId::Vscode => "VS Code",
            ClientId::Windsurf => "Windsurf",
            ClientId::Codex => "Codex",
            ClientId::Gemini => "Gemini CLI",
        }
    }

    /// Whether its file can switch a server off.
    pub fn can_switch_off(self) -> bool {
        matches!(
            self,
            ClientId::ClaudeCode | ClientId::Windsurf | ClientId::Codex | ClientId::Gemini
        )
    }

    fn shape(self) -> EntryShape {
        match self {
            ClientId::ClaudeCode => EntryShape::ClaudeCode,
            ClientId::Vscode => EntryShape::VsCode,
            _ => EntryShape::Plain,
        }
    }

    /// The command-line program of the client, when it has one.
    fn program(self) -> Option<&'static str> {
        match self {
            ClientId::ClaudeCode => Some("claude"),
            ClientId::Codex => Some("codex"),
            ClientId::Gemini => Some("gemini"),
            _ => None,
        }
    }
}

/// Where a client keeps its servers and whether it looks installed.
#[derive(Debug, Clone)]
pub struct Found {
    pub client: ClientId,
    pub path: PathBuf,
    format: Format,
    /// Why we think it is installed; `None` when nothing says so.
    pub evidence: Option<String>,
}

/// Every client, with the file `setup` would edit and what shows it is installed: its
/// config file, its config directory, or its program on `PATH`.
pub fn find(places: &Places) -> Vec<Found> {
    let files = sources::user_files(places);
    ClientId::ALL
        .iter()
        .filter_map(|&client| {
            let mine: Vec<_> = files
                .iter()
                .filter(|s| s.client == client.config_id())
                .collect();
            // The existing file wins; else the platform's usual place.
            let pick = mine
                .iter()
                .find(|s| std::fs::symlink_metadata(&s.path).is_ok())
                .or_else(|| {
                    let mac = cfg!(target_os = "macos");
                    mine.iter()
                        .find(|s| s.path.to_string_lossy().contains("Library/") == mac)
                })
                .or(mine.first())?;
            let evidence = if std::fs::symlink_metadata(&pick.path).is_ok() {
                Some(format!("{} exists", pick.path.display()))
            } else if let Some(dir) = marker_dir(client, &pick.path, places)
                && dir.is_dir()
            {
                Some(format!("{} exists", dir.display()))
            } else {
                client
                    .program()
                    .and_then(|p| on_path(p).map(|f| format!("{} is on PATH", f.display())))
            };
            Some(Found {
                client,
                path: pick.path.clone(),
                format: pick.format.clone(),
                evidence,
            })
        })
        .collect()
}

/// The directory a client creates when it is installed and run once.
fn marker_dir(client: ClientId, file: &Path, places: &Places) -> Option<PathBuf> {
    match client {
        ClientId::ClaudeCode => places.home.as_ref().map(|h| h.join(".claude")),
        // Code/User -> Code
        ClientId::Vscode => file.parent()?.parent().map(Path::to_path_buf),
        _ => file.parent().map(Path::to_path_buf),
    }
}

pub(crate) use tools::child::on_path;

/// One file's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBuf,
    /// `None`: the file does not exist yet.
    pub before: Option<String>,
    pub after: String,
}

/// What `setup` would do to one client.
#[derive(Debug, Clone, Default)]
pub struct ClientPlan {
    /// Files whose text changes (none: the client is already set up).
    pub changes: Vec<FileChange>,
    /// Whether our entry is added or changed.
    pub entry_changed: bool,
    /// Its other servers, and those this plan switches off.
    pub others: Vec<String>,
    pub switched_off: Vec<String>,
    /// What the person should know (a switch the client does not have, its scope).
    pub notes: Vec<String>,
}

/// What to plan.
pub struct Want<'a> {
    pub name: &'a str,
    pub launch: &'a Launch,
    pub switch_off_others: bool,
    pub places: &'a Places,
    pub self_exe: Option<&'a Path>,
}

/// Why a client cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("cannot read {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("cannot edit {path}: {source}")]
    Edit { path: PathBuf, source: EditError },
}

/// Reads a file's text (bounded, regular files only); `None` when it does not exist.
pub fn read_existing(path: &Path) -> Result<Option<String>, PlanError> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    sources::read_config(path)
        .map(Some)
        .map_err(|e| PlanError::Read {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
}

/// The plan for one client: pure given the files' texts.
pub fn plan(found: &Found, want: &Want<'_>) -> Result<ClientPlan, PlanError> {
    let path = &found.path;
    let before = read_existing(path)?;
    let edit_err = |source| PlanError::Edit {
        path: path.clone(),
        source,
    };
    // The servers it has now, as the loader reads them (an unreadable shape fails here).
    let entries = match &before {
        Some(t) if !t.trim().is_empty() => sources::parse_entries(
            &if found.format == Format::VsCode {
                sources::strip_json_comments(t)
            } else {
                t.clone()
            },
            &found.format,
        )
        .map_err(|reason| PlanError::Read {
            path: path.clone(),
            reason: reason.to_string(),
        })?,
        _ => Default::default(),
    };
    let is_other = |name: &str, v: &Value| {
        if name == want.name {
            return false;
        }
        let command = v.get("command").and_then(Value::as_str).unwrap_or("");
        let args: Vec<String> = v
            .get("args")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        !tools::config::launches_self(command, &args, want.self_exe)
    };
    let mut plan = ClientPlan {
        others: entries
            .iter()
            .filter(|(n, v)| is_other(n, v))
            .map(|(n, _)| n.clone())
            .collect(),
        ..ClientPlan::default()
    };
    let switch = want.switch_off_others && !plan.others.is_empty();
    if want.switch_off_others && !found.client.can_switch_off() && !plan.others.is_empty() {
        plan.notes.push(format!(
            "{} has no switch in its file to turn a server off; its other servers stay on",
            found.client.title()
        ));
    }
    let entry = edit::json_entry(found.client.shape(), want.launch);
    let after = match found.client {
        ClientId::Codex => {
            let (text, off, changed) = edit::codex_edit(
                before.as_deref(),
                want.name,
                want.launch,
                if switch { &plan.others } else { &[] },
            )
            .map_err(edit_err)?;
            plan.switched_off = off;
            plan.entry_changed = changed;
            text
        }
        client => {
            let key = if client == ClientId::Vscode {
                "servers"
            } else {
                "mcpServers"
            };
            let snippet = serde_json::to_string_pretty(&json!({ key: { want.name: entry } }))
                .unwrap_or_default();
            let mut doc = JsonDoc::parse(before.as_deref(), client == ClientId::Vscode, &snippet)
                .map_err(edit_err)?;
            let servers = doc.object(key).map_err(edit_err)?;
            plan.entry_changed = edit::put_json_entry(servers, want.name, entry);
            if switch && client == ClientId::Windsurf {
                plan.switched_off = edit::disable_json_entries(servers, &plan.others);
            }
            if switch && client == ClientId::ClaudeCode {
                let others = claude_code_others(&mut doc, want, &mut plan)?;
                let project = sources::project_key(&want.places.cwd);
                let projects = doc.object("projects").map_err(edit_err)?;
                let entry =
                    edit::object_in(projects, &project.to_string_lossy()).map_err(edit_err)?;
                plan.switched_off =
                    edit::add_to_list(entry, "disabledMcpServers", &others).map_err(edit_err)?;
                plan.notes.push(format!(
                    "Claude Code keeps switched-off servers per project: this is for {}; run setup in another project to do the same there",
                    project.display()
                ));
            }
            match &before {
                // Nothing to change: the text stays as it is, however it is formatted.
                Some(text) if !plan.entry_changed && plan.switched_off.is_empty() => text.clone(),
                _ => doc.render(),
            }
        }
    };
    if before.as_deref() != Some(after.as_str()) {
        plan.changes.push(FileChange {
            path: path.clone(),
            before: before.clone(),
            after,
        });
    }
    if switch && found.client == ClientId::Gemini {
        gemini_switch_off(found, &mut plan)?;
    }
    if found.client == ClientId::Gemini
        && let Some(note) = gemini_trust_note(before.as_deref(), want.name, &want.places.cwd)
    {
        plan.notes.push(note);
    }
    Ok(plan)
}

/// What a Gemini CLI user must know: with folder trust on (its default), Gemini CLI keeps
/// every MCP server, ours included, disabled in a folder it does not trust. Nothing when
/// the user's settings switch folder trust off.
fn gemini_trust_note(settings: Option<&str>, name: &str, cwd: &Path) -> Option<String> {
    let off = settings
        .and_then(|t| serde_json::from_str::<Value>(&sources::strip_json_comments(t)).ok())
        .and_then(|v| v.pointer("/security/folderTrust/enabled").cloned())
        == Some(Value::Bool(false));
    (!off).then(|| {
        format!(
            "Gemini CLI starts MCP servers only in folders it trusts (security.folderTrust): in \
             an untrusted folder it keeps {name:?} disabled. Trust a folder from Gemini CLI with \
             /permissions, or add \"{dir}\": \"TRUST_FOLDER\" (or another folder) to \
             ~/.gemini/trustedFolders.json",
            dir = cwd.display()
        )
    })
}

/// Claude Code's servers in this project besides ours: user-scope ones and the project's
/// own (`projects[<dir>].mcpServers`).
fn claude_code_others(
    doc: &mut JsonDoc,
    want: &Want<'_>,
    plan: &mut ClientPlan,
) -> Result<Vec<String>, PlanError> {
    let key = sources::project_key(&want.places.cwd);
    let mut names = plan.others.clone();
    if let Some(local) = doc
        .root
        .child("projects")
        .and_then(|p| p.child(key.to_string_lossy().as_ref()))
        .and_then(|p| p.child("mcpServers"))
    {
        for (n, v) in local.entries() {
            let v = v.unwrap_or(Value::Null);
            let command = v.get("command").and_then(Value::as_str).unwrap_or("");
            let args: Vec<String> = v
                .get("args")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            if n != want.name
                && !names.contains(&n)
                && !tools::config::launches_self(command, &args, want.self_exe)
            {
                names.push(n);
            }
        }
    }
    plan.others = names.clone();
    Ok(names)
}

/// Gemini CLI keeps switched-off servers in `mcp-server-enablement.json` next to its
/// settings, by lower-cased name: `{"name": {"enabled": false}}`.
fn gemini_switch_off(found: &Found, plan: &mut ClientPlan) -> Result<(), PlanError> {
    let path = found
        .path
        .parent()
        .map(|d| d.join("mcp-server-enablement.json"))
        .unwrap_or_default();
    let before = read_existing(&path)?;
    let mut doc =
        JsonDoc::parse(before.as_deref(), false, "").map_err(|source| PlanError::Edit {
            path: path.clone(),
            source,
        })?;
    for name in &plan.others {
        let id = name.trim().to_lowercase();
        let off = json!({"enabled": false});
        if doc.root.get(&id).as_ref() != Some(&off) {
            doc.root.set(&id, off);
            plan.switched_off.push(name.clone());
        }
    }
    let after = doc.render();
    if before.as_deref() != Some(after.as_str()) {
        plan.changes.push(FileChange {
            path,
            before,
            after,
        });
    }
    Ok(())
}
