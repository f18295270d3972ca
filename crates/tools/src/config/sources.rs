//! Where each MCP client keeps its servers, and how to read each format into raw entries.
//!
//! [`discover`] lists the files to read in increasing precedence: global (per-user) files,
//! then project files (under the working directory), then the explicit file. A later source's
//! entry replaces an earlier one of the same name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::error::SourceError;
use super::read::{MAX_CLAUDE_JSON_BYTES, MAX_CONFIG_BYTES, ReadError, read_text};

/// How a file lists its servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// `{"mcpServers": {...}}`: Claude Code `.mcp.json`, Claude Desktop, Cursor, Windsurf,
    /// Gemini CLI, and explicit files.
    McpServers,
    /// VS Code: `{"servers": {...}}` with `type`.
    VsCode,
    /// Codex: TOML with `[mcp_servers.NAME]` tables.
    CodexToml,
    /// Claude Code's `~/.claude.json`, its per-project part: `projects[<dir>].mcpServers`.
    ClaudeCodeProject(PathBuf),
}

/// How far a source reaches; a narrower scope wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    Global,
    Project,
    Explicit,
}

/// One file to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub client: &'static str,
    pub path: PathBuf,
    pub format: Format,
    pub scope: Scope,
}

/// Where to look.
#[derive(Debug, Clone, Default)]
pub struct Places {
    pub home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    pub config_dir: Option<PathBuf>,
    /// `$CODEX_HOME`, else `~/.codex`.
    pub codex_home: Option<PathBuf>,
    pub cwd: PathBuf,
    /// Where Claude Code's managed (administrator) settings live: `/etc/claude-code` on
    /// Linux; only its hooks are read from there.
    pub claude_managed_dir: Option<PathBuf>,
}

impl Places {
    /// From our environment.
    pub fn from_env(cwd: PathBuf) -> Places {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let config_dir = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".config")));
        let codex_home = std::env::var_os("CODEX_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".codex")));
        Places {
            home,
            config_dir,
            codex_home,
            cwd,
            claude_managed_dir: Some(PathBuf::from("/etc/claude-code")),
        }
    }
}

/// Every per-user file each supported client may keep servers in, lowest precedence first,
/// whether it exists or not (`setup` creates the one a client lacks).
pub fn user_files(places: &Places) -> Vec<Source> {
    let mut out = Vec::new();
    let mut add = |client, path: PathBuf, format| {
        out.push(Source {
            client,
            path,
            format,
            scope: Scope::Global,
        })
    };
    use Format::*;
    if let Some(cfg) = &places.config_dir {
        add(
            "claude-desktop",
            cfg.join("Claude/claude_desktop_config.json"),
            McpServers,
        );
        add("vscode", cfg.join("Code/User/mcp.json"), VsCode);
    }
    if let Some(home) = &places.home {
        add(
            "claude-desktop",
            home.join("Library/Application Support/Claude/claude_desktop_config.json"),
            McpServers,
        );
        add(
            "windsurf",
            home.join(".codeium/windsurf/mcp_config.json"),
            McpServers,
        );
        add("cursor", home.join(".cursor/mcp.json"), McpServers);
    }
    if let Some(codex) = &places.codex_home {
        add("codex", codex.join("config.toml"), CodexToml);
    }
    if let Some(home) = &places.home {
        add("gemini", home.join(".gemini/settings.json"), McpServers);
        add("claude-code", home.join(".claude.json"), McpServers);
    }
    out
}

/// Every file any supported client may keep servers in, lowest precedence first. Files that
/// do not exist are left out.
pub fn discover(places: &Places) -> Vec<Source> {
    // Anything at the path counts (a directory, a FIFO, a dangling link): reading it then
    // says what is wrong, rather than the file being passed over in silence.
    let mut out: Vec<Source> = user_files(places)
        .into_iter()
        .filter(|s| std::fs::symlink_metadata(&s.path).is_ok())
        .collect();
    let mut add = |client, path: PathBuf, format, scope| {
        if std::fs::symlink_metadata(&path).is_ok() {
            out.push(Source {
                client,
                path,
                format,
                scope,
            });
        }
    };
    use Format::*;
    use Scope::*;
    let cwd = &places.cwd;
    // Codex: every `.codex/config.toml` from the project root (the git root, else the
    // working directory) down to the working directory, the deepest last.
    if let Some(codex) = &places.codex_home {
        let root = git_root(cwd).unwrap_or_else(|| cwd.clone());
        let mut dirs: Vec<&Path> = cwd
            .ancestors()
            .take_while(|d| d.starts_with(&root))
            .collect();
        dirs.reverse();
        let user = codex.join("config.toml");
        for d in dirs {
            let file = d.join(".codex/config.toml");
            if !same_file(&file, &user) {
                add("codex", file, CodexToml, Project);
            }
        }
    }
    add("vscode", cwd.join(".vscode/mcp.json"), VsCode, Project);
    add("cursor", cwd.join(".cursor/mcp.json"), McpServers, Project);
    let gemini = cwd.join(".gemini/settings.json");
    // In the home directory the workspace file is the user file (Gemini CLI reads it once).
    if !places
        .home
        .as_ref()
        .is_some_and(|h| same_file(&gemini, &h.join(".gemini/settings.json")))
    {
        add("gemini", gemini, McpServers, Project);
    }
    add("claude-code", cwd.join(".mcp.json"), McpServers, Project);
    if let Some(home) = &places.home {
        add(
            "claude-code",
            home.join(".claude.json"),
            ClaudeCodeProject(project_key(cwd)),
            Project,
        );
    }
    out
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The root of the git work tree holding `dir` (the nearest ancestor with a `.git`).
pub fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

/// The key Claude Code files a project under in `~/.claude.json` `projects`: the git root
/// (a linked worktree's main repository), else the directory itself.
pub fn project_key(dir: &Path) -> PathBuf {
    let Some(root) = git_root(dir) else {
        return dir.to_path_buf();
    };
    // A worktree's `.git` is a file `gitdir: <main>/.git/worktrees/<name>`.
    let main = read_text(&root.join(".git"), 64 * 1024).ok().and_then(|t| {
        let gitdir = PathBuf::from(t.strip_prefix("gitdir:")?.trim());
        let worktrees = gitdir.parent()?;
        let dot_git = worktrees.parent()?;
        (worktrees.file_name()? == "worktrees" && dot_git.file_name()? == ".git")
            .then(|| dot_git.parent().map(Path::to_path_buf))?
    });
    main.unwrap_or(root)
}

/// The raw entries of one file, by name, or why the file cannot be read at all.
pub fn read_entries(source: &Source) -> Result<BTreeMap<String, Value>, SourceError> {
    let text = read_config(&source.path)?;
    parse_entries(&text, &source.format)
}

/// A client config file's text, bounded ([`read_text`]); Claude Code's `~/.claude.json`,
/// which keeps history too, may be larger than the others.
pub fn read_config(path: &Path) -> Result<String, ReadError> {
    let limit = if path.file_name().is_some_and(|n| n == ".claude.json") {
        MAX_CLAUDE_JSON_BYTES
    } else {
        MAX_CONFIG_BYTES
    };
    read_text(path, limit)
}

/// `projects[<key>]` of Claude Code's `~/.claude.json`, parsed without building the rest
/// of the file (its history can reach 100 MB); `None` when the project has no entry.
pub fn claude_project(text: &str, key: &str) -> Result<Option<Value>, serde_json::Error> {
    use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
    /// The top-level object (`projects` picked) or `projects` itself (`key` picked).
    struct Pick<'a> {
        key: &'a str,
        top: bool,
    }
    impl<'de> DeserializeSeed<'de> for Pick<'_> {
        type Value = Option<Value>;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Value>, D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Pick<'_> {
        type Value = Option<Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Value>, A::Error> {
            let mut found = None;
            while let Some(k) = map.next_key::<String>()? {
                match (self.top, k == "projects", k == self.key) {
                    (true, true, _) => {
                        found = map.next_value_seed(Pick {
                            key: self.key,
                            top: false,
                        })?;
                    }
                    (false, _, true) => found = Some(map.next_value::<Value>()?),
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(found)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let found = Pick { key, top: true }.deserialize(&mut de)?;
    de.end()?;
    Ok(found)
}

/// Parses the text of a file of the given format into raw entries.
pub fn parse_entries(text: &str, format: &Format) -> Result<BTreeMap<String, Value>, SourceError> {
    #[derive(Deserialize)]
    struct McpServersFile {
        #[serde(default, rename = "mcpServers")]
        mcp_servers: Option<BTreeMap<String, Value>>,
    }
    #[derive(Deserialize)]
    struct VsCodeFile {
        #[serde(default)]
        servers: Option<BTreeMap<String, Value>>,
    }
    #[derive(Deserialize)]
    struct CodexFile {
        #[serde(default)]
        mcp_servers: Option<BTreeMap<String, Value>>,
    }
    let invalid = |e: &dyn std::fmt::Display| SourceError::Invalid {
        format: format_name(format),
        reason: e.to_string(),
    };
    match format {
        Format::McpServers => {
            let f: McpServersFile = serde_json::from_str(text).map_err(|e| invalid(&e))?;
            Ok(f.mcp_servers.unwrap_or_default())
        }
        Format::VsCode => {
            let f: VsCodeFile =
                serde_json::from_str(&strip_json_comments(text)).map_err(|e| invalid(&e))?;
            Ok(f.servers.unwrap_or_default())
        }
        Format::CodexToml => {
            let f: CodexFile = toml::from_str(text).map_err(|e| invalid(&e))?;
            Ok(f.mcp_servers.unwrap_or_default())
        }
        Format::ClaudeCodeProject(dir) => {
            let project =
                claude_project(text, dir.to_string_lossy().as_ref()).map_err(|e| invalid(&e))?;
            let servers = project
                .and_then(|mut p| p.get_mut("mcpServers").map(Value::take))
                .unwrap_or(Value::Null);
            if servers.is_null() {
                return Ok(BTreeMap::new());
            }
            serde_json::from_value(servers).map_err(|e| invalid(&e))
        }
    }
}

fn format_name(format: &Format) -> &'static str {
    match format {
        Format::McpServers => "JSON of the form {\"mcpServers\": {...}}",
        Format::VsCode => "VS Code mcp.json ({\"servers\": {...}})",
        Format::CodexToml => "Codex TOML ([mcp_servers.NAME] tables)",
        Format::ClaudeCodeProject(_) => "Claude Code JSON",
    }
}

/// VS Code's mcp.json is JSON with comments and trailing commas; drop both (outside strings).
pub fn strip_json_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut prev = ' ';
                for n in chars.by_ref() {
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
            }
            (',', _) => {
                // A trailing comma: the next non-space character closes the object or array.
                let rest: String = chars.clone().take_while(|c| c.is_whitespace()).collect();
                let next = chars.clone().nth(rest.chars().count());
                if !matches!(next, Some('}') | Some(']')) {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn vscode_comments_and_trailing_commas_are_accepted() {
        let text = r#"{
            // a comment
            "servers": { /* block */ "a": {"type": "stdio", "command": "x", "args": ["//not", "a,"],}, },
        }"#;
        let entries = parse_entries(text, &Format::VsCode).unwrap();
        assert_eq!(
            entries["a"],
            json!({"type": "stdio", "command": "x", "args": ["//not", "a,"]})
        );
    }

    #[test]
    fn codex_toml_tables() {
        let text = "model = \"o3\"\n[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"docs-mcp\"]\nenv = { API_KEY = \"k\" }\n";
        let entries = parse_entries(text, &Format::CodexToml).unwrap();
        assert_eq!(
            entries["docs"],
            json!({"command": "npx", "args": ["-y", "docs-mcp"], "env": {"API_KEY": "k"}})
        );
    }

    /// 100,000 levels of each nesting shape of each format: a clean error, no overflow.
    const DEPTH: usize = 100_000;

    fn assert_too_deep(text: &str, format: &Format) {
        let err = parse_entries(text, format).unwrap_err().to_string();
        assert!(err.starts_with("not valid "), "{err}");
    }

    #[test]
    fn deeply_nested_json_arrays_are_an_error() {
        let text = format!(
            "{{\"mcpServers\": {{\"a\": {}{}}}}}",
            "[".repeat(DEPTH),
            "]".repeat(DEPTH)
        );
        assert_too_deep(&text, &Format::McpServers);
        assert_too_deep(&text.replace("mcpServers", "servers"), &Format::VsCode);
    }

    #[test]
    fn deeply_nested_json_objects_are_an_error() {
        let text = format!(
            "{{\"projects\": {{\"/p\": {}1{}}}}}",
            "{\"a\":".repeat(DEPTH),
            "}".repeat(DEPTH)
        );
        assert_too_deep(&text, &Format::ClaudeCodeProject("/p".into()));
        let text = format!(
            "{{\"mcpServers\": {}1{}}}",
            "{\"a\":".repeat(DEPTH),
            "}".repeat(DEPTH)
        );
        assert_too_deep(&text, &Format::McpServers);
        assert_too_deep(&text.replace("mcpServers", "servers"), &Format::VsCode);
    }

    #[test]
    fn deep_nesting_in_parts_nobody_reads_is_skipped_without_overflow() {
        // Another project's entry in ~/.claude.json is never built.
        let text = format!(
            "{{\"projects\": {{\"/other\": {}{}, \"/p\": {{\"mcpServers\": {{}}}}}}}}",
            "[".repeat(DEPTH),
            "]".repeat(DEPTH)
        );
        assert_eq!(
            parse_entries(&text, &Format::ClaudeCodeProject("/p".into())),
            Ok(BTreeMap::new())
        );
    }

    #[test]
    fn deeply_nested_toml_arrays_are_an_error() {
        let text = format!(
            "[mcp_servers.a]\nargs = {}{}\n",
            "[".repeat(DEPTH),
            "]".repeat(DEPTH)
        );
        assert_too_deep(&text, &Format::CodexToml);
    }

    #[test]
    fn deeply_nested_toml_inline_tables_are_an_error() {
        let text = format!(
            "[mcp_servers.a]\nenv = {}1{}\n",
            "{ a = ".repeat(DEPTH),
            " }".repeat(DEPTH)
        );
        assert_too_deep(&text, &Format::CodexToml);
    }

    #[test]
    fn deeply_dotted_toml_keys_are_an_error() {
        let keys = vec!["k"; DEPTH].join(".");
        assert_too_deep(&format!("{keys} = 1\n"), &Format::CodexToml);
        assert_too_deep(&format!("[{keys}]\n"), &Format::CodexToml);
    }

    #[test]
    fn claude_code_project_entries_are_found_by_directory() {
        let text = r#"{"mcpServers": {"u": {"command": "a"}},
                       "projects": {"/work/p": {"mcpServers": {"local": {"command": "b"}}}}}"#;
        let local = parse_entries(text, &Format::ClaudeCodeProject("/work/p".into())).unwrap();
        assert_eq!(local.keys().collect::<Vec<_>>(), ["local"]);
        let other = parse_entries(text, &Format::ClaudeCodeProject("/elsewhere".into())).unwrap();
        assert!(other.is_empty());
        let user = parse_entries(text, &Format::McpServers).unwrap();
        assert_eq!(user.keys().collect::<Vec<_>>(), ["u"]);
    }
}
