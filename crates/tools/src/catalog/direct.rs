//! Pinned direct tools (`directTools`): which upstream tools are also listed as our own MCP
//! tools, under which names, and with which definitions.
//!
//! A pinned tool is listed as `server__tool` (characters a client would refuse become `_`;
//! a name that had to change, is longer than 64 characters or would be listed twice ends in
//! `_` and 8 hex digits of a hash of the exact (server, tool) pair), with the upstream's
//! schemas, title, icons and annotations and its description prefixed by the server. Our own
//! tools never contain `__`, so no pinned name can be one of them. The calls themselves are
//! not made here: the runtime makes them through the same bridge as calls from code.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::Tool;
use sha2::{Digest, Sha256};

use policy::pattern;

/// The longest tool name clients accept (`^[a-zA-Z0-9_-]{1,64}$`).
pub const MAX_NAME: usize = 64;

/// The `directTools` patterns of the settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectTools {
    patterns: Vec<String>,
}

/// One upstream tool listed as ours.
#[derive(Debug, Clone, PartialEq)]
pub struct Pinned {
    /// The name we list it under.
    pub name: String,
    pub server: String,
    /// The upstream's own definition.
    pub tool: Tool,
}

impl DirectTools {
    pub fn new(patterns: Vec<String>) -> DirectTools {
        DirectTools { patterns }
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// The configured servers some pattern reaches: the ones whose lists the listing needs.
    pub fn servers<'a>(&self, all: impl Iterator<Item = &'a str> + Clone) -> Vec<String> {
        all.clone()
            .filter(|s| {
                self.patterns
                    .iter()
                    .any(|p| pattern::reaches(p, all.clone(), s))
            })
            .map(str::to_string)
            .collect()
    }

    /// Whether a tool of `server` could be listed as `name`: its listed names all start with
    /// the server's part (as far as a hashed name keeps it). Two pairs that spell the same
    /// name are both candidates, so a lookup among the candidates still sees the clash.
    pub fn may_name(server: &str, name: &str) -> bool {
        let part = clean(&format!("{server}__"));
        let keep = part.len().min(MAX_NAME - 1 - HASH_DIGITS);
        name.starts_with(&part[..keep])
    }

    /// Whether some pattern pins `tool` of `server`.
    pub fn pins<'a>(
        &self,
        all: impl Iterator<Item = &'a str> + Clone,
        server: &str,
        tool: &str,
    ) -> bool {
        self.patterns
            .iter()
            .any(|p| pattern::matches(p, all.clone(), server, tool))
    }

    /// The pinned tools among `lists` (server -> its tools), named, in server then tool
    /// order. `all` are the configured server names the patterns resolve against.
    pub fn pinned<'a>(
        &self,
        all: impl Iterator<Item = &'a str> + Clone,
        lists: &[(String, Arc<Vec<Tool>>)],
    ) -> Vec<Pinned> {
        let mut out: Vec<Pinned> = lists
            .iter()
            .flat_map(|(server, tools)| {
                let all = all.clone();
                tools
                    .iter()
                    .filter(move |t| self.pins(all.clone(), server, &t.name))
                    .map(move |t| Pinned {
                        name: plain_name(server, &t.name)
                            .unwrap_or_else(|| hashed_name(server, &t.name)),
                        server: server.clone(),
                        tool: t.clone(),
                    })
            })
            .collect();
        out.sort_by(|a, b| (&a.server, &a.tool.name).cmp(&(&b.server, &b.tool.name)));
        // Two pairs may spell the same name (server `gh` tool `a__b`, server `gh__a` tool
        // `b`): each of them is listed under its hashed name.
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for p in &out {
            *seen.entry(p.name.clone()).or_default() += 1;
        }
        for p in &mut out {
            if seen.get(&p.name).copied().unwrap_or(0) > 1 {
                p.name = hashed_name(&p.server, &p.tool.name);
            }
        }
        out
    }
}

impl Pinned {
    /// The definition we list: the upstream's, under our name, its description prefixed by
    /// the server. Its `_meta` is the upstream's business (it may point at resources we do
    /// not serve) and is left out.
    pub fn listed(&self) -> Tool {
        let mut t = self.tool.clone();
        t.name = self.name.clone().into();
        t.description = Some(match &self.tool.description {
            Some(d) if !d.trim().is_empty() => format!("{}: {d}", self.server).into(),
            _ => format!("{}: {}", self.server, self.tool.name).into(),
        });
        t.meta = None;
        t
    }
}

/// `server__tool` when both names are made of characters clients accept and it fits.
fn plain_name(server: &str, tool: &str) -> Option<String> {
    let name = format!("{server}__{tool}");
    (name.len() <= MAX_NAME && name.bytes().all(allowed)).then_some(name)
}

fn allowed(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// `server__tool` with every other character as `_`, cut to fit, then `_` and 8 hex digits
/// of the SHA-256 of `server`, a NUL and `tool` (unique to the exact pair).
fn hashed_name(server: &str, tool: &str) -> String {
    let digest = Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let hash: String = digest[..HASH_DIGITS / 2]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut name = clean(&format!("{server}__{tool}"));
    name.truncate(MAX_NAME - 1 - HASH_DIGITS);
    format!("{name}_{hash}")
}

/// Hex digits of the hash a hashed name ends with.
const HASH_DIGITS: usize = 8;

/// `text` with every character clients refuse in a name as `_` (ASCII only, one byte each).
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii() && allowed(c as u8) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(json!({
            "name": name, "description": "Does it.", "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}, "_meta": {"x": 1}
        }))
        .unwrap()
    }

    fn lists(of: &[(&str, &[&str])]) -> Vec<(String, Arc<Vec<Tool>>)> {
        of.iter()
            .map(|(s, ts)| {
                (
                    s.to_string(),
                    Arc::new(ts.iter().map(|t| tool(t)).collect()),
                )
            })
            .collect()
    }

    #[test]
    fn names_are_what_clients_accept_and_never_collide() {
        let servers = ["fx", "gh", "gh__a", "ünï.x"];
        let d = DirectTools::new(vec![
            "mcp__fx__echo".into(),
            "mcp__gh__*".into(),
            "mcp__gh__a__*".into(),
            "mcp__ünï.x__*".into(),
        ]);
        let long = "t".repeat(80);
        let l = lists(&[
            ("fx", &["echo", "add"]),
            ("gh", &["list_x", "a__b"]),
            ("gh__a", &["b"]),
            ("ünï.x", &["get.page", &long]),
        ]);
        let pinned = d.pinned(servers.iter().copied(), &l);
        let names: Vec<&str> = pinned.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names.len(), 6, "{names:?}");
        assert!(names.contains(&"fx__echo") && !names.contains(&"fx__add"));
        assert!(names.contains(&"gh__list_x"));
        assert!(all_valid(&names), "{names:?}");
        let unique: std::collections::BTreeSet<&&str> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        // The two spellings of gh__a__b are both hashed, and differ.
        let ab: Vec<&&str> = names
            .iter()
            .filter(|n| n.starts_with("gh__a__b_"))
            .collect();
        assert_eq!(ab.len(), 2, "{names:?}");
        // Characters a client refuses become `_`, and the name is hashed.
        assert!(
            names.iter().any(|n| n.starts_with("_n__x__get_page_")),
            "{names:?}"
        );
        // Too long: cut to 64 with its hash.
        assert!(
            names
                .iter()
                .any(|n| n.len() == MAX_NAME && n.starts_with("_n__x__ttt")),
            "{names:?}"
        );
        // Stable: the same pair gets the same name every time.
        assert_eq!(d.pinned(servers.iter().copied(), &l), pinned);
    }

    fn all_valid(names: &[&str]) -> bool {
        names
            .iter()
            .all(|n| !n.is_empty() && n.len() <= MAX_NAME && n.bytes().all(allowed))
    }

    /// A name's candidate servers include its own and every server whose pair could spell
    /// the same name, and no other.
    #[test]
    fn a_listed_name_names_its_candidate_servers() {
        let servers = ["fx", "gh", "gh__a", "ünï.x", "other"];
        let d = DirectTools::new(vec!["*".into()]);
        let long = "t".repeat(80);
        let l = lists(&[
            ("fx", &["echo"]),
            ("gh", &["a__b"]),
            ("gh__a", &["b"]),
            ("ünï.x", &["get.page", &long]),
            ("other", &["echo"]),
        ]);
        for p in d.pinned(servers.iter().copied(), &l) {
            let candidates: Vec<&str> = servers
                .iter()
                .copied()
                .filter(|s| DirectTools::may_name(s, &p.name))
                .collect();
            assert!(
                candidates.contains(&p.server.as_str()),
                "{}: {candidates:?}",
                p.name
            );
            assert!(
                !candidates.contains(&"other") || p.server == "other",
                "{}",
                p.name
            );
            if p.server.starts_with("gh") {
                assert_eq!(candidates, ["gh", "gh__a"], "{}", p.name);
            }
        }
    }

    #[test]
    fn the_listed_definition_is_the_upstreams_under_our_name() {
        let p = Pinned {
            name: "fx__echo".into(),
            server: "fx".into(),
            tool: tool("echo"),
        };
        let t = serde_json::to_value(p.listed()).unwrap();
        assert_eq!(
            t,
            json!({"name": "fx__echo", "description": "fx: Does it.",
                   "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}})
        );
    }

    #[test]
    fn servers_are_those_a_pattern_reaches() {
        let d = DirectTools::new(vec!["mcp__fx__echo".into(), "mcp__g*__list".into()]);
        let all = ["fx", "gh", "gl", "other"];
        assert_eq!(d.servers(all.iter().copied()), ["fx", "gh", "gl"]);
    }
}
