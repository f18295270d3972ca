//! Which upstream tools a skill's code calls (read from its text when it is saved), and what
//! changed in their schemas since (by the hashes kept in its frontmatter and the schemas kept
//! in its `tools.json`), so a skill whose tools moved under it is flagged before it fails.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use worker_protocol::ident;

use super::skill::{CodeSkill, ToolSchemas};
use super::store::schema_hash;

/// The `(server, tool)` pairs of `known` that `code` names, in any of the ways code reaches a
/// tool: `tools.server.tool`, `tools.server['tool.name']`, `mcp__server__tool`, and
/// `callMCPTool('server', 'tool')` / `call_mcp_tool("server", "tool")`.
pub fn referenced<'a>(
    code: &str,
    known: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<(String, String)> {
    let mut out = BTreeSet::new();
    for (server, tool) in known {
        let (is, it) = (ident(server), ident(tool));
        let mut forms = vec![format!("{is}.{it}"), format!("mcp__{server}__{tool}")];
        for q in ['\'', '"', '`'] {
            forms.push(format!("{is}[{q}{tool}{q}]"));
            forms.push(format!("{q}{server}{q}, {q}{tool}{q}"));
            forms.push(format!("{q}{server}{q},{q}{tool}{q}"));
        }
        if forms.iter().any(|f| contains_word(code, f)) {
            out.insert((server.to_string(), tool.to_string()));
        }
    }
    out.into_iter().collect()
}

/// `needle` in `hay`, not as the tail or head of a longer identifier.
fn contains_word(hay: &str, needle: &str) -> bool {
    let ident_char =
        |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
    hay.match_indices(needle).any(|(i, _)| {
        let before = hay[..i].chars().next_back();
        let after = hay[i + needle.len()..].chars().next();
        let first = needle.chars().next();
        let last = needle.chars().next_back();
        (!ident_char(first) || !ident_char(before)) && (!ident_char(last) || !ident_char(after))
    })
}

/// One tool of a skill that is not what it was when the skill was saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub server: String,
    pub tool: String,
    /// What changed, in words.
    pub what: String,
}

impl Change {
    pub fn to_json(&self) -> Value {
        json!({"tool": format!("{}.{}", self.server, self.tool), "changed": self.what})
    }
}

/// What the server's tools look like now: `None` when that is not known (the server is not
/// connected), `Some(None)` when the server has no such tool any more.
pub type Current<'a> = &'a dyn Fn(&str, &str) -> Option<Option<Value>>;

/// The tools of `skill` whose schemas changed since it was saved (`saved`: its `tools.json`).
pub fn changes(skill: &CodeSkill, saved: &ToolSchemas, current: Current<'_>) -> Vec<Change> {
    let mut out = Vec::new();
    for (server, tools) in &skill.tools {
        for (tool, hash) in tools {
            let change = |what: String| Change {
                server: server.clone(),
                tool: tool.clone(),
                what,
            };
            match current(server, tool) {
                None => {}
                Some(None) => out.push(change(format!("{server} no longer has a tool {tool:?}"))),
                Some(Some(now)) if schema_hash(&now) != *hash => {
                    let before = saved.get(server).and_then(|t| t.get(tool));
                    out.push(change(describe(before, &now)));
                }
                Some(Some(_)) => {}
            }
        }
    }
    out
}

/// The difference between two `{"inputSchema", "outputSchema"}`, in words.
fn describe(before: Option<&Value>, now: &Value) -> String {
    let Some(before) = before else {
        return "its schema changed (the schema it had is not kept)".into();
    };
    let mut parts = Vec::new();
    let input = |v: &Value| v.get("inputSchema").cloned().unwrap_or(Value::Null);
    let (a, b) = (input(before), input(now));
    let props = |v: &Value| {
        v.get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let required = |v: &Value| -> BTreeSet<String> {
        v.get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (pa, pb) = (props(&a), props(&b));
    let names = |v: Vec<&String>| {
        v.iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let added: Vec<&String> = pb.keys().filter(|k| !pa.contains_key(*k)).collect();
    let removed: Vec<&String> = pa.keys().filter(|k| !pb.contains_key(*k)).collect();
    let changed: Vec<&String> = pa
        .iter()
        .filter(|(k, v)| pb.get(*k).is_some_and(|w| schema_hash(w) != schema_hash(v)))
        .map(|(k, _)| k)
        .collect();
    if !removed.is_empty() {
        parts.push(format!("argument {} removed", names(removed)));
    }
    if !added.is_empty() {
        parts.push(format!("argument {} added", names(added)));
    }
    if !changed.is_empty() {
        parts.push(format!("argument {} changed type", names(changed)));
    }
    let (ra, rb) = (required(&a), required(&b));
    let newly: Vec<&String> = rb.difference(&ra).collect();
    if !newly.is_empty() {
        parts.push(format!("now required: {}", names(newly)));
    }
    let output = |v: &Value| v.get("outputSchema").map(schema_hash);
    if output(before) != output(now) {
        parts.push("its output schema changed".into());
    }
    if parts.is_empty() {
        "its schema changed".into()
    } else {
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::skills::skill::SkillLanguage;

    #[test]
    fn the_tools_code_names_are_found_in_every_form() {
        let known = [
            ("fx", "echo"),
            ("fx", "get.page"),
            ("my-srv", "list"),
            ("fx", "echo2"),
        ];
        let cases = [
            ("await tools.fx.echo({})", vec![("fx", "echo")]),
            ("tools.fx['get.page']()", vec![("fx", "get.page")]),
            ("tools.my_srv.list()", vec![("my-srv", "list")]),
            ("callMCPTool('mcp__fx__echo', {})", vec![("fx", "echo")]),
            ("call_mcp_tool(\"fx\", \"echo2\")", vec![("fx", "echo2")]),
            ("tools.fx.echo2()", vec![("fx", "echo2")]),
            ("return notools.fx.echoes", vec![]),
        ];
        for (code, want) in cases {
            let got = referenced(code, known);
            let want: Vec<(String, String)> = want
                .iter()
                .map(|(s, t)| (s.to_string(), t.to_string()))
                .collect();
            assert_eq!(got, want, "{code}");
        }
    }

    #[test]
    fn a_changed_schema_is_described() {
        let before = json!({"inputSchema": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "number"}}}});
        let now = json!({"inputSchema": {"type": "object", "properties": {"q": {"type": "number"}, "page": {}}, "required": ["page"]}, "outputSchema": {"type": "object"}});
        let skill = CodeSkill {
            language: SkillLanguage::TypeScript,
            script: "skill.ts".into(),
            input_schema: None,
            tools: BTreeMap::from([(
                "fx".into(),
                BTreeMap::from([
                    ("search".into(), schema_hash(&before)),
                    ("gone".into(), schema_hash(&before)),
                    ("same".into(), schema_hash(&before)),
                    ("unknown".into(), schema_hash(&before)),
                ]),
            )]),
            version: 1,
            owner: None,
        };
        let saved: ToolSchemas = BTreeMap::from([(
            "fx".into(),
            BTreeMap::from([("search".into(), before.clone())]),
        )]);
        let current = |_: &str, t: &str| match t {
            "search" => Some(Some(now.clone())),
            "gone" => Some(None),
            "same" => Some(Some(before.clone())),
            _ => None,
        };
        let got = changes(&skill, &saved, &current);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].tool, "gone");
        assert!(got[0].what.contains("no longer has"));
        let w = &got[1].what;
        assert!(
            w.contains("`n` removed")
                && w.contains("`page` added")
                && w.contains("`q` changed type")
                && w.contains("now required: `page`")
                && w.contains("output schema changed"),
            "{w}"
        );
    }
}
