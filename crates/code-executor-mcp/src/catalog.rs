//! Every upstream tool under one naming scheme, with search and schema lookup.
//!
//! An upstream tool is named `mcp__server__tool` (qualified) or by the pair (server, tool).
//! Inside the sandbox, `tools.server.tool` also accepts identifier forms of both names, in
//! which every character that is not valid in an identifier is written `_`
//! (`my-server` -> `my_server`, `get.page` -> `get_page`); an identifier form that fits two
//! names is an error naming both.

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::{Value, json};

use crate::policy::{Decision, ToolAllowlist};
use crate::upstream::{UpstreamError, Upstreams};

/// Discovery over the configured upstreams: what `search_tools`, `get_tool_schema` and
/// `list_servers` answer, both as MCP tools and inside the sandbox.
#[derive(Clone)]
pub struct Catalog {
    upstreams: Arc<Upstreams>,
}

impl Catalog {
    pub fn new(upstreams: Arc<Upstreams>) -> Self {
        Catalog { upstreams }
    }

    pub fn upstreams(&self) -> &Arc<Upstreams> {
        &self.upstreams
    }

    /// Resolves a call target to canonical (server, tool) names and the tool's definition.
    /// `server` given: `name` is a tool of it. Otherwise `name` is `mcp__server__tool`.
    pub async fn resolve(
        &self,
        server: Option<&str>,
        name: &str,
    ) -> Result<(String, Tool), String> {
        let (server, tool) = match server {
            Some(s) => (
                pick(self.upstreams.names(), s, "server")?.to_string(),
                name.to_string(),
            ),
            None => split_qualified(self.upstreams.names(), name)?,
        };
        let tools = self
            .upstreams
            .tools(&server)
            .await
            .map_err(|e| e.to_string())?;
        let found = pick(
            tools.iter().map(|t| &*t.name),
            &tool,
            &format!("tool of server \"{server}\""),
        )?;
        let def = tools
            .iter()
            .find(|t| t.name == found)
            .cloned()
            .ok_or_else(|| format!("tool {found} vanished"))?;
        Ok((server, def))
    }

    /// Tools of `server` (or of every server), connecting them as needed, that `allow` permits.
    /// Servers that fail to start are skipped; their errors come back alongside.
    pub async fn tools(
        &self,
        server: Option<&str>,
        allow: &ToolAllowlist,
    ) -> Result<(Vec<(String, Tool)>, Vec<UpstreamError>), String> {
        let servers: Vec<String> = match server {
            Some(s) => vec![pick(self.upstreams.names(), s, "server")?.to_string()],
            None => self.upstreams.names().map(str::to_string).collect(),
        };
        let lists =
            futures::future::join_all(servers.iter().map(|s| self.upstreams.tools(s))).await;
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for (s, list) in servers.iter().zip(lists) {
            match list {
                Ok(tools) => out.extend(
                    tools
                        .iter()
                        .filter(|t| allow.check(s, t) == Decision::Allow)
                        .map(|t| (s.clone(), t.clone())),
                ),
                Err(e) => errors.push(e),
            }
        }
        Ok((out, errors))
    }

    /// `search_tools`: ranked matches plus the servers that could not be searched.
    pub async fn search(
        &self,
        query: &str,
        detail: Option<&str>,
        server: Option<&str>,
        limit: Option<u32>,
        allow: &ToolAllowlist,
    ) -> Result<Value, String> {
        let detail = Detail::parse(detail)?;
        let limit = limit.map_or(DEFAULT_SEARCH_LIMIT, |l| {
            (l as usize).clamp(1, MAX_SEARCH_LIMIT)
        });
        let (tools, errors) = self.tools(server, allow).await?;
        let hits = search(
            tools.iter().map(|(s, t)| (s.as_str(), t)),
            query,
            limit,
            detail,
        );
        let mut out = json!({ "tools": hits });
        if !errors.is_empty() {
            out["unavailable"] = errors
                .iter()
                .map(|e| Value::String(e.to_string()))
                .collect();
        }
        Ok(out)
    }

    /// `get_tool_schema`: one tool in full, by qualified name.
    pub async fn schema(&self, name: &str) -> Result<Value, String> {
        let (server, tool) = self.resolve(None, name).await?;
        Ok(describe(&server, &tool, Detail::Full))
    }

    /// `list_servers`.
    pub async fn servers(&self) -> Value {
        json!({ "servers": self.upstreams.status().await })
    }
}

/// The identifier form of a server or tool name (see the module docs).
pub fn ident(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

/// Picks the one name in `names` that is `wanted` exactly, or else whose identifier form is.
pub fn pick<'a>(
    names: impl Iterator<Item = &'a str> + Clone,
    wanted: &str,
    what: &str,
) -> Result<&'a str, String> {
    if let Some(n) = names.clone().find(|n| *n == wanted) {
        return Ok(n);
    }
    let matches: Vec<&str> = names.clone().filter(|n| ident(n) == wanted).collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => {
            let all: Vec<&str> = names.collect();
            Err(format!(
                "no {what} named \"{wanted}\"; available: {}",
                if all.is_empty() {
                    "(none)".to_string()
                } else {
                    all.join(", ")
                }
            ))
        }
        many => Err(format!(
            "\"{wanted}\" could mean the {what}s {}; use the exact name",
            many.join(" or ")
        )),
    }
}

/// Splits a qualified `mcp__server__tool` against the configured server names. A name that
/// can be read two ways (servers `a` and `a__b`) is an error naming both readings.
pub fn split_qualified<'a>(
    servers: impl Iterator<Item = &'a str>,
    qualified: &str,
) -> Result<(String, String), String> {
    let Some(rest) = qualified.strip_prefix("mcp__") else {
        return Err(format!(
            "\"{qualified}\" is not a qualified tool name; write mcp__<server>__<tool>, or pass \
             the server and the tool separately: callMCPTool(server, tool, args)"
        ));
    };
    let readings: Vec<(String, String)> = servers
        .filter_map(|s| {
            rest.strip_prefix(s)
                .and_then(|r| r.strip_prefix("__"))
                .filter(|tool| !tool.is_empty())
                .map(|tool| (s.to_string(), tool.to_string()))
        })
        .collect();
    match readings.len() {
        1 => Ok(readings.into_iter().next().unwrap_or_default()),
        0 => Err(format!(
            "\"{qualified}\" names no configured server; call listServers() to see them"
        )),
        _ => Err(format!(
            "\"{qualified}\" is ambiguous: {}; use callMCPTool(server, tool, args)",
            readings
                .iter()
                .map(|(s, t)| format!("server \"{s}\" tool \"{t}\""))
                .collect::<Vec<_>>()
                .join(" or ")
        )),
    }
}

/// How much of each tool a search returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    Names,
    Summary,
    Full,
}

impl Detail {
    pub fn parse(s: Option<&str>) -> Result<Detail, String> {
        match s {
            None | Some("summary") => Ok(Detail::Summary),
            Some("names") => Ok(Detail::Names),
            Some("full") => Ok(Detail::Full),
            Some(other) => Err(format!(
                "detail must be \"names\", \"summary\" or \"full\", not \"{other}\""
            )),
        }
    }
}

/// Default and largest number of search results.
pub const DEFAULT_SEARCH_LIMIT: usize = 10;
pub const MAX_SEARCH_LIMIT: usize = 200;

/// Splits a name into lowercase words at `_`, `-`, `.`, spaces and camelCase boundaries.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Scores a tool against query words: name words weigh most, then the description and the
/// server name. Zero means no match.
fn score(server: &str, tool: &Tool, query: &[String]) -> u32 {
    let name_words = words(&tool.name);
    let desc = tool.description.as_deref().unwrap_or("").to_lowercase();
    let desc_words = words(&desc);
    let server_words = words(server);
    let mut total = 0;
    for q in query {
        let mut s = 0;
        if name_words.iter().any(|w| w == q) {
            s += 6;
        } else if name_words
            .iter()
            .any(|w| w.starts_with(q.as_str()) || q.starts_with(w.as_str()) && w.len() >= 3)
        {
            s += 3;
        }
        if server_words.iter().any(|w| w == q) {
            s += 2;
        }
        if desc_words.iter().any(|w| w == q) {
            s += 2;
        } else if q.len() >= 3 && desc.contains(q.as_str()) {
            s += 1;
        }
        total += s;
    }
    if query.len() > 1 && tool.name.to_lowercase() == query.join("_") {
        total += 10;
    }
    total
}

/// Renders one tool at a detail level.
pub fn describe(server: &str, tool: &Tool, detail: Detail) -> Value {
    let mut v = json!({
        "name": crate::policy::qualified_name(server, &tool.name),
        "server": server,
        "tool": tool.name,
    });
    if detail != Detail::Names
        && let Some(desc) = &tool.description
    {
        v["description"] = Value::String(if detail == Detail::Summary {
            summary(desc)
        } else {
            desc.to_string()
        });
    }
    if detail == Detail::Full {
        v["inputSchema"] = Value::Object((*tool.input_schema).clone());
        if let Some(out) = &tool.output_schema {
            v["outputSchema"] = Value::Object((**out).clone());
        }
    }
    v
}

/// The first sentence of a description, at most 200 characters.
fn summary(desc: &str) -> String {
    const MAX: usize = 200;
    let first = desc
        .split_inclusive(". ")
        .next()
        .unwrap_or(desc)
        .lines()
        .next()
        .unwrap_or("")
        .trim();
    if first.chars().count() > MAX {
        let cut: String = first.chars().take(MAX - 1).collect();
        format!("{cut}…")
    } else {
        first.to_string()
    }
}

/// Ranks `(server, tool)` pairs for `query`; an empty query lists everything.
pub fn search<'a>(
    tools: impl Iterator<Item = (&'a str, &'a Tool)>,
    query: &str,
    limit: usize,
    detail: Detail,
) -> Vec<Value> {
    let q = words(query);
    let mut scored: Vec<(u32, &str, &Tool)> = tools
        .map(|(s, t)| (if q.is_empty() { 1 } else { score(s, t, &q) }, s, t))
        .filter(|(sc, _, _)| *sc > 0)
        .collect();
    scored.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| a.1.cmp(b.1))
            .then_with(|| a.2.name.cmp(&b.2.name))
    });
    scored
        .into_iter()
        .take(limit)
        .map(|(_, s, t)| describe(s, t, detail))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, desc: &str) -> Tool {
        serde_json::from_value(
            json!({"name": name, "description": desc, "inputSchema": {"type": "object"}}),
        )
        .unwrap()
    }

    #[test]
    fn identifier_forms() {
        assert_eq!(ident("my-server"), "my_server");
        assert_eq!(ident("get.page"), "get_page");
        assert_eq!(ident("9lives"), "_9lives");
        assert_eq!(ident("ok_name$"), "ok_name$");
    }

    #[test]
    fn pick_prefers_exact_then_unique_identifier_form() {
        let names = ["get-page", "get_page", "read.file"];
        assert_eq!(
            pick(names.iter().copied(), "get_page", "tool"),
            Ok("get_page")
        );
        assert_eq!(
            pick(names.iter().copied(), "read_file", "tool"),
            Ok("read.file")
        );
        let err = pick(["a-b", "a.b"].iter().copied(), "a_b", "tool").unwrap_err();
        assert!(err.contains("a-b or a.b"), "{err}");
        let err = pick(names.iter().copied(), "nope", "tool").unwrap_err();
        assert!(
            err.contains("available: get-page, get_page, read.file"),
            "{err}"
        );
    }

    #[test]
    fn qualified_names_split_against_servers_and_ambiguity_names_both() {
        let servers = ["fs", "git", "a", "a__b"];
        assert_eq!(
            split_qualified(servers.iter().copied(), "mcp__fs__read_file"),
            Ok(("fs".into(), "read_file".into()))
        );
        assert_eq!(
            split_qualified(servers.iter().copied(), "mcp__git__git__log"),
            Ok(("git".into(), "git__log".into()))
        );
        let err = split_qualified(servers.iter().copied(), "mcp__a__b__c").unwrap_err();
        assert!(
            err.contains("server \"a\" tool \"b__c\"")
                && err.contains("server \"a__b\" tool \"c\""),
            "{err}"
        );
        assert!(split_qualified(servers.iter().copied(), "mcp__FS__read_file").is_err());
        assert!(split_qualified(servers.iter().copied(), "fs__read_file").is_err());
        assert!(split_qualified(servers.iter().copied(), "mcp__fs__").is_err());
    }

    #[test]
    fn search_ranks_name_matches_first() {
        let tools = [
            ("fs", tool("read_file", "Read a file from disk")),
            ("fs", tool("write_file", "Write a file")),
            ("git", tool("git_log", "Show commit logs; can read history")),
            (
                "mem",
                tool("createEntities", "Create entities in the graph"),
            ),
        ];
        let hits = search(
            tools.iter().map(|(s, t)| (*s, t)),
            "read file",
            10,
            Detail::Names,
        );
        let names: Vec<&str> = hits.iter().map(|h| h["name"].as_str().unwrap()).collect();
        assert_eq!(names[0], "mcp__fs__read_file");
        assert!(names.contains(&"mcp__fs__write_file"));
        let hits = search(
            tools.iter().map(|(s, t)| (*s, t)),
            "entities",
            10,
            Detail::Summary,
        );
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0]["description"], "Create entities in the graph");
        assert_eq!(
            search(tools.iter().map(|(s, t)| (*s, t)), "", 2, Detail::Names).len(),
            2
        );
    }

    #[test]
    fn words_split_camel_snake_kebab() {
        assert_eq!(words("getFileInfo"), ["get", "file", "info"]);
        assert_eq!(
            words("read_multiple-files.v2"),
            ["read", "multiple", "files", "v2"]
        );
    }
}
