//! Pure edits of one client file: the text before -> the text after. Nothing here touches
//! the file system, so every client's shape is tested by value.
//!
//! JSON files are edited as text ([`json_text`]): every value setup does not set keeps its
//! exact bytes (numbers beyond 64 bits, `1e400`, `-0`, escapes, key order, duplicates,
//! spacing), and what setup adds takes the file's indentation (Claude Code, Gemini CLI and
//! the editors write `JSON.stringify(x, null, 2)`); the final newline is kept or left out as
//! before. A JSON file with comments (VS Code allows them) is refused rather
//! than rewritten without them. Codex's TOML is edited in place with `toml_edit`, so its
//! comments and layout survive.

use serde_json::{Map, Value};

pub use super::error::EditError;
use super::json_text::{self, Obj, Style};

/// What we add: one stdio server, and the environment variables its entry sets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Launch {
    pub command: String,
    pub args: Vec<String>,
    /// `--env KEY=VALUE`, in the order given (each key once).
    pub env: Vec<(String, String)>,
}

impl Launch {
    fn env_value(&self) -> Value {
        Value::Object(
            self.env
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.clone())))
                .collect(),
        )
    }
}

/// The shape a client's own `mcp add` gives a stdio entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryShape {
    /// `claude mcp add`: `{"type": "stdio", "command", "args", "env": {}}`.
    ClaudeCode,
    /// VS Code: `{"type": "stdio", "command", "args"}`.
    VsCode,
    /// Gemini CLI, Claude Desktop, Cursor, Windsurf: `{"command", "args"}`.
    Plain,
}

/// The entry a client's own `mcp add` would write for `launch`: every client's JSON entry
/// takes its variables as an `env` object (Claude Code's always has one).
pub fn json_entry(shape: EntryShape, launch: &Launch) -> Value {
    let mut m = Map::new();
    if matches!(shape, EntryShape::ClaudeCode | EntryShape::VsCode) {
        m.insert("type".into(), Value::from("stdio"));
    }
    m.insert("command".into(), Value::from(launch.command.clone()));
    m.insert(
        "args".into(),
        Value::Array(launch.args.iter().cloned().map(Value::from).collect()),
    );
    if shape == EntryShape::ClaudeCode || !launch.env.is_empty() {
        m.insert("env".into(), launch.env_value());
    }
    Value::Object(m)
}

/// A JSON document edited in place ([`json_text`]): what setup does not set keeps its exact
/// text, the file's indentation and final newline included.
pub struct JsonDoc {
    pub root: Obj,
    style: Style,
    /// The text before and after the top object (whitespace, the final newline).
    before: String,
    after: String,
}

impl JsonDoc {
    /// Parses `text` (`None`: the file does not exist yet). With `jsonc`, a file with
    /// comments or trailing commas is refused (`snippet` is what to add by hand).
    pub fn parse(text: Option<&str>, jsonc: bool, snippet: &str) -> Result<JsonDoc, EditError> {
        let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
            return Ok(JsonDoc {
                root: Obj::default(),
                style: Style {
                    indent: "  ".into(),
                    pretty: true,
                },
                before: String::new(),
                after: "\n".into(),
            });
        };
        if jsonc && tools::config::sources::strip_json_comments(text) != text {
            return Err(EditError::Comments(snippet.to_string()));
        }
        let Some((before, root, after)) = json_text::parse(text)? else {
            return Err(EditError::NotAnObject("the file".into()));
        };
        Ok(JsonDoc {
            root,
            style: Style {
                indent: detect_indent(text),
                pretty: text.trim().contains('\n'),
            },
            before,
            after,
        })
    }

    /// The object under `key`, created when missing.
    pub fn object(&mut self, key: &str) -> Result<&mut Obj, EditError> {
        self.root.object(key)
    }

    pub fn render(&self) -> String {
        format!(
            "{}{}{}",
            self.before,
            self.root.render(&self.style),
            self.after
        )
    }
}

/// `map[key]` as an object, created when missing; an error when it is something else.
pub fn object_in<'a>(map: &'a mut Obj, key: &str) -> Result<&'a mut Obj, EditError> {
    map.object(key)
}

/// The indentation unit of a pretty-printed JSON text (two spaces when it is not indented).
fn detect_indent(text: &str) -> String {
    text.lines()
        .skip(1)
        .map(|l| {
            l.chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect::<String>()
        })
        .find(|i| !i.is_empty())
        .unwrap_or_else(|| "  ".to_string())
}

/// Puts our entry under `servers[name]`. An entry that already launches the same command
/// with the same arguments is left as it is (the user may have added `env`), but for the
/// variables `entry` sets (`--env`), set in its `env` beside the user's own; one that
/// launches something else gets our command and arguments, its other keys kept.
/// Returns whether anything changed.
pub fn put_json_entry(servers: &mut Obj, name: &str, entry: Value) -> bool {
    let Value::Object(want) = entry else {
        return false;
    };
    match servers.child_mut(name) {
        Some(have) => {
            let env_changed = match want.get("env") {
                Some(Value::Object(vars)) if !vars.is_empty() => put_env(have, vars),
                _ => false,
            };
            let args = have.get("args").unwrap_or(Value::Array(vec![]));
            if have.get("command").as_ref() == want.get("command")
                && Some(&args) == want.get("args")
            {
                return env_changed;
            }
            for key in ["type", "command", "args"] {
                if let Some(v) = want.get(key) {
                    have.set(key, v.clone());
                }
            }
            // A URL entry of that name turned into ours: its transport keys would contradict.
            for key in ["url", "httpUrl", "serverUrl"] {
                have.remove(key);
            }
            true
        }
        None => {
            servers.set(name, Value::Object(want));
            true
        }
    }
}

/// Sets each of `vars` in the entry's `env` object (made when missing or not an object),
/// keeping its other variables; returns whether anything changed.
fn put_env(entry: &mut Obj, vars: &Map<String, Value>) -> bool {
    if entry.child("env").is_none() {
        if entry.get("env").is_some() {
            entry.remove("env");
        }
        entry.set("env", Value::Object(vars.clone()));
        return true;
    }
    let Some(env) = entry.child_mut("env") else {
        return false;
    };
    let mut changed = false;
    for (k, v) in vars {
        if env.get(k).as_ref() != Some(v) {
            env.set(k, v.clone());
            changed = true;
        }
    }
    changed
}

/// Sets `disabled: true` on each named entry that is not already disabled; returns the
/// names it switched off.
pub fn disable_json_entries(servers: &mut Obj, names: &[String]) -> Vec<String> {
    let mut done = Vec::new();
    for name in names {
        if let Some(e) = servers.child_mut(name)
            && e.get("disabled") != Some(Value::Bool(true))
        {
            e.set("disabled", Value::Bool(true));
            done.push(name.clone());
        }
    }
    done
}

/// Adds the names missing from the string list `map[key]` (created when missing); returns
/// those it added.
pub fn add_to_list(map: &mut Obj, key: &str, names: &[String]) -> Result<Vec<String>, EditError> {
    map.add_to_list(key, names)
}

/// Codex's `config.toml`: `[mcp_servers.<name>]` with `command` and, when there are any,
/// `args`, and `[mcp_servers.<name>.env]` (what `codex mcp add --env K=V` writes); the variables are set in the
/// entry's `env` beside the user's own. With `disable`, `enabled = false` on those entries.
/// Returns the new text, the names switched off, and whether our entry changed.
pub fn codex_edit(
    text: Option<&str>,
    name: &str,
    launch: &Launch,
    disable: &[String],
) -> Result<(String, Vec<String>, bool), EditError> {
    use toml_edit::{Array, DocumentMut, Item, Table, value};
    let mut doc: DocumentMut = text
        .unwrap_or("")
        .parse()
        .map_err(|e: toml_edit::TomlError| EditError::Toml(e.to_string()))?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_like_mut()
        .ok_or_else(|| EditError::NotAnObject("mcp_servers".into()))?;
    let want_args: Vec<String> = launch.args.clone();
    let same = servers
        .get(name)
        .and_then(Item::as_table_like)
        .is_some_and(|t| {
            let command = t.get("command").and_then(Item::as_str);
            let args: Vec<String> = t
                .get("args")
                .and_then(Item::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            command == Some(launch.command.as_str()) && args == want_args
        });
    if !same {
        let entry = servers
            .entry(name)
            .or_insert_with(|| Item::Table(Table::new()));
        let Some(t) = entry.as_table_like_mut() else {
            return Err(EditError::NotAnObject(format!("mcp_servers.{name}")));
        };
        t.remove("url");
        t.insert("command", value(launch.command.clone()));
        if launch.args.is_empty() {
            t.remove("args");
        } else {
            let mut a = Array::new();
            for x in &launch.args {
                a.push(x.as_str());
            }
            t.insert("args", value(a));
        }
    }
    let mut env_changed = false;
    if !launch.env.is_empty() {
        let Some(t) = servers.get_mut(name).and_then(Item::as_table_like_mut) else {
            return Err(EditError::NotAnObject(format!("mcp_servers.{name}")));
        };
        // `[mcp_servers.<name>.env]`, its keys in order, as `codex mcp add --env` writes it.
        let env = t.entry("env").or_insert_with(|| Item::Table(Table::new()));
        if env.as_table_like().is_none() {
            *env = Item::Table(Table::new());
        }
        let Some(env) = env.as_table_like_mut() else {
            return Err(EditError::NotAnObject(format!("mcp_servers.{name}.env")));
        };
        let mut sorted: Vec<&(String, String)> = launch.env.iter().collect();
        sorted.sort();
        for (k, v) in sorted {
            if env.get(k).and_then(Item::as_str) != Some(v.as_str()) {
                env.insert(k, value(v.clone()));
                env_changed = true;
            }
        }
    }
    let mut switched = Vec::new();
    for other in disable {
        if let Some(t) = servers.get_mut(other).and_then(Item::as_table_like_mut)
            && t.get("enabled").and_then(Item::as_bool) != Some(false)
        {
            t.insert("enabled", value(false));
            switched.push(other.clone());
        }
    }
    Ok((doc.to_string(), switched, !same || env_changed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn launch() -> Launch {
        Launch {
            command: "/opt/cem/code-executor-mcp".into(),
            args: vec![],
            env: vec![],
        }
    }

    #[test]
    fn entries_have_each_clients_shape() {
        assert_eq!(
            json_entry(EntryShape::ClaudeCode, &launch()),
            json!({"type": "stdio", "command": "/opt/cem/code-executor-mcp", "args": [], "env": {}})
        );
        assert_eq!(
            json_entry(EntryShape::Plain, &launch()),
            json!({"command": "/opt/cem/code-executor-mcp", "args": []})
        );
        assert_eq!(
            json_entry(EntryShape::VsCode, &launch()),
            json!({"type": "stdio", "command": "/opt/cem/code-executor-mcp", "args": []})
        );
    }

    #[test]
    fn json_keeps_indent_order_and_final_newline() {
        let text = "{\n    \"z\": 1,\n    \"a\": {\"b\": [1, 2]}\n}";
        let mut doc = JsonDoc::parse(Some(text), false, "").unwrap();
        put_json_entry(
            doc.object("mcpServers").unwrap(),
            "ce",
            json_entry(EntryShape::Plain, &launch()),
        );
        let out = doc.render();
        assert_eq!(
            out,
            "{\n    \"z\": 1,\n    \"a\": {\"b\": [1, 2]},\n    \"mcpServers\": {\n        \"ce\": {\n            \"command\": \"/opt/cem/code-executor-mcp\",\n            \"args\": []\n        }\n    }\n}"
        );
    }

    #[test]
    fn the_same_entry_again_changes_nothing_and_keeps_user_keys() {
        let mut doc = JsonDoc::parse(None, false, "").unwrap();
        let servers = doc.object("mcpServers").unwrap();
        assert!(put_json_entry(
            servers,
            "ce",
            json_entry(EntryShape::Plain, &launch())
        ));
        servers
            .child_mut("ce")
            .unwrap()
            .set("env", json!({"K": "v"}));
        assert!(!put_json_entry(
            servers,
            "ce",
            json_entry(EntryShape::Plain, &launch())
        ));
        let other = Launch {
            command: "/new/path".into(),
            args: vec!["serve".into()],
            env: vec![],
        };
        assert!(put_json_entry(
            servers,
            "ce",
            json_entry(EntryShape::Plain, &other)
        ));
        assert_eq!(
            servers.get("ce"),
            Some(json!({"command": "/new/path", "args": ["serve"], "env": {"K": "v"}}))
        );
    }

    #[test]
    fn comments_are_refused_not_dropped() {
        let err = JsonDoc::parse(Some("{ // mine\n \"servers\": {} }"), true, "SNIPPET")
            .err()
            .unwrap();
        assert_eq!(err, EditError::Comments("SNIPPET".into()));
        assert!(JsonDoc::parse(Some("[1]"), false, "").is_err());
        assert!(
            JsonDoc::parse(Some("{\"mcpServers\": 3}"), false, "")
                .unwrap()
                .object("mcpServers")
                .is_err()
        );
    }

    #[test]
    fn codex_edit_keeps_every_value_it_does_not_own_byte_identical() {
        let text = "# mine\nbig = 9223372036854775807\nf = 0.1000000000000000055511151231257827\ne = 1e300\nz = -0.0\none = 1.0\ns = \"\\u00e9\"\nh = 0xDEAD_beef\n\n[mcp_servers.fs]\ncommand = \"npx\"\nenv = { N = 123456789, T = 1979-05-27T07:32:00Z }\n";
        let (out, _, changed) = codex_edit(Some(text), "ce", &launch(), &[]).unwrap();
        assert!(changed);
        assert!(out.starts_with(text), "{out}");
        // Beyond 64 bits (or f64) TOML itself has no number: refused, nothing rewritten.
        for bad in ["n = 123456789012345678901234567890\n", "e = 1e400\n"] {
            assert!(
                matches!(
                    codex_edit(Some(bad), "ce", &launch(), &[]),
                    Err(EditError::Toml(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn codex_edit_keeps_comments_and_is_idempotent() {
        let text = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.fs]\ncommand = \"npx\" # keep\nargs = [\"-y\", \"fs\"]\n";
        let (out, off, changed) = codex_edit(Some(text), "ce", &launch(), &["fs".into()]).unwrap();
        assert_eq!(off, ["fs"]);
        assert!(changed);
        assert!(out.starts_with("# my settings\nmodel = \"o3\"\n"), "{out}");
        assert!(out.contains("command = \"npx\" # keep"), "{out}");
        assert!(
            out.contains("[mcp_servers.ce]\ncommand = \"/opt/cem/code-executor-mcp\"\n"),
            "{out}"
        );
        assert!(out.contains("enabled = false"), "{out}");
        let (again, off, changed) =
            codex_edit(Some(&out), "ce", &launch(), &["fs".into()]).unwrap();
        assert_eq!(again, out);
        assert!(off.is_empty() && !changed);
        assert!(matches!(
            codex_edit(Some("mcp_servers = 3"), "ce", &launch(), &[]),
            Err(EditError::NotAnObject(_))
        ));
        assert!(matches!(
            codex_edit(Some("[[["), "ce", &launch(), &[]),
            Err(EditError::Toml(_))
        ));
    }

    /// `--env` lands in Codex's `env` table beside the user's variables (a table the user
    /// wrote as `[mcp_servers.ce.env]` included), and the same again changes nothing.
    #[test]
    fn codex_env_is_set_beside_the_users_variables() {
        let with_env = Launch {
            env: vec![("A".into(), "1".into()), ("B_2".into(), "x y".into())],
            ..launch()
        };
        let (out, _, changed) = codex_edit(None, "ce", &with_env, &[]).unwrap();
        assert!(changed);
        let v: toml::Value = toml::from_str(&out).unwrap();
        assert_eq!(v["mcp_servers"]["ce"]["env"]["A"].as_str(), Some("1"));
        assert_eq!(v["mcp_servers"]["ce"]["env"]["B_2"].as_str(), Some("x y"));
        let (again, _, changed) = codex_edit(Some(&out), "ce", &with_env, &[]).unwrap();
        assert!(!changed);
        assert_eq!(again, out);
        let mine = "[mcp_servers.ce]\ncommand = \"/opt/cem/code-executor-mcp\"\n\n[mcp_servers.ce.env]\nMINE = \"kept\" # mine\nA = \"0\"\n";
        let (out, _, changed) = codex_edit(Some(mine), "ce", &with_env, &[]).unwrap();
        assert!(changed);
        assert!(out.contains("MINE = \"kept\" # mine"), "{out}");
        let v: toml::Value = toml::from_str(&out).unwrap();
        assert_eq!(v["mcp_servers"]["ce"]["env"]["A"].as_str(), Some("1"));
    }

    /// In JSON clients, `--env` sets the entry's `env` object, keeps the user's variables,
    /// and replaces an `env` that is not an object.
    #[test]
    fn json_env_is_set_beside_the_users_variables() {
        let with_env = Launch {
            env: vec![("A".into(), "1".into())],
            ..launch()
        };
        let entry = json_entry(EntryShape::Plain, &with_env);
        assert_eq!(entry["env"], json!({"A": "1"}));
        assert!(
            json_entry(EntryShape::Plain, &launch())
                .get("env")
                .is_none()
        );
        for (had, want) in [
            (json!({"MINE": "k"}), json!({"MINE": "k", "A": "1"})),
            (json!({"A": "0"}), json!({"A": "1"})),
            (json!("oops"), json!({"A": "1"})),
        ] {
            let text = json!({"mcpServers": {"ce": {"command": "/opt/cem/code-executor-mcp", "args": [], "env": had}}}).to_string();
            let mut doc = JsonDoc::parse(Some(&text), false, "").unwrap();
            let servers = doc.object("mcpServers").unwrap();
            assert!(put_json_entry(servers, "ce", entry.clone()));
            let out: Value = serde_json::from_str(&doc.render()).unwrap();
            assert_eq!(out["mcpServers"]["ce"]["env"], want);
            let mut doc = JsonDoc::parse(Some(&doc.render()), false, "").unwrap();
            assert!(!put_json_entry(
                doc.object("mcpServers").unwrap(),
                "ce",
                entry.clone()
            ));
        }
    }
}
