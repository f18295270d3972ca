//! Which upstream tools code may call: rules from the settings (per-server allow and deny
//! lists, a read-only mode, a default), combined with the execution's own `allowedTools`.
//!
//! Every rule is evaluated and the strictest wins: one denial denies. The reason names the
//! rule, so the error in the sandbox and the audit line say exactly what denied a call.
//! Patterns use one syntax everywhere: `*` matches any run of characters, nothing else is
//! special, and there is no case folding, trimming or normalisation. Per-server rules match
//! tool names; `allowedTools` patterns match qualified names with their server part resolved
//! against the configured server names ([`super::pattern`]), so no wildcard crosses from one
//! server into another.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::Tool;
use serde::Deserialize;

use super::pattern::{self, glob_match, qualified_name};

/// What happens to a tool no rule mentions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DefaultAction {
    #[default]
    Allow,
    Deny,
}

/// Rules for one server; patterns match the tool's own name (`read_*`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerRule {
    /// When given, only these tools are allowed.
    pub allow: Option<Vec<String>>,
    #[serde(default)]
    pub deny: Vec<String>,
    /// Only tools annotated `readOnlyHint: true` are allowed.
    #[serde(default)]
    pub read_only: bool,
}

/// The configured rules (`policy` in the settings file).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolPolicy {
    #[serde(default)]
    pub default: DefaultAction,
    #[serde(default)]
    pub servers: BTreeMap<String, ServerRule>,
}

/// The outcome of a check. There is no third answer, and no wildcard arm decides one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny { reason: String },
}

/// What one execution may call: the configured rules plus its `allowedTools` patterns over
/// qualified names `mcp__server__tool` (none given: every tool the rules allow).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolAllowlist {
    patterns: Option<Vec<String>>,
    rules: Arc<ToolPolicy>,
    /// The configured server names the patterns' server parts resolve against (empty: only
    /// the server being checked is known).
    servers: Arc<[String]>,
    /// The `allowedTools` of the executions that started this one from code (a nested run
    /// of the executor's own execute tools), outermost first: each must allow a call too, so
    /// a nested run never reaches more than its callers.
    within: Vec<Vec<String>>,
}

impl ToolAllowlist {
    /// Everything allowed (no rules, no patterns).
    pub fn allow_all() -> Self {
        ToolAllowlist::default()
    }

    /// `allowedTools` patterns under no configured rules.
    pub fn new(patterns: Option<Vec<String>>) -> Self {
        ToolAllowlist::with_rules(patterns, Arc::default())
    }

    /// `allowedTools` patterns under the configured rules.
    pub fn with_rules(patterns: Option<Vec<String>>, rules: Arc<ToolPolicy>) -> Self {
        ToolAllowlist {
            patterns,
            rules,
            servers: Arc::from([]),
            within: Vec::new(),
        }
    }

    /// The same allowlist inside the `allowedTools` of the executions that started it
    /// (outermost first): a call must be in each.
    pub fn within(mut self, layers: Vec<Vec<String>>) -> Self {
        self.within = layers;
        self
    }

    /// The same allowlist, resolving the patterns' server parts against `servers`, the
    /// configured server names.
    pub fn among(mut self, servers: Arc<[String]>) -> Self {
        self.servers = servers;
        self
    }

    pub fn patterns(&self) -> Option<&[String]> {
        self.patterns.as_deref()
    }

    /// Checks one tool of one server against every rule; the first denial found is returned
    /// (all of them would deny).
    pub fn check(&self, server: &str, tool: &Tool) -> Decision {
        self.check_under(server, tool, self.rules.default)
    }

    /// Checks one of the executor's own tools, called from code as server `server` by any of
    /// `names` (the name code used and ours for the same tool). The rules for `server` and
    /// the `allowedTools` patterns apply as to any tool, the name code used or ours
    /// matching: a deny pattern matching either denies, an allow list or pattern naming
    /// either allows. The configured default does not: a nested run or a discovery request
    /// reaches nothing its caller could not, so `default: "deny"` does not take the
    /// executor's own tools away; naming them under `policy.servers.code-executor` does.
    pub fn check_own(&self, server: &str, names: &[Tool]) -> Decision {
        if let Some(rule) = self.rules.servers.get(server)
            && let Some((tool, p)) = names.iter().find_map(|t| {
                rule.deny
                    .iter()
                    .find(|p| glob_match(p, &t.name))
                    .map(|p| (t, p))
            })
        {
            return Decision::Deny {
                reason: format!(
                    "{} is denied by the policy for server \"{server}\" (deny: {p})",
                    qualified_name(server, &tool.name)
                ),
            };
        }
        let mut first = None;
        for tool in names {
            match self.check_under(server, tool, DefaultAction::Allow) {
                Decision::Allow => return Decision::Allow,
                deny => {
                    first.get_or_insert(deny);
                }
            }
        }
        first.unwrap_or(Decision::Allow)
    }

    /// [`Self::check`] with `default` for tools no rule mentions.
    fn check_under(&self, server: &str, tool: &Tool, default: DefaultAction) -> Decision {
        let name = &*tool.name;
        let qualified = qualified_name(server, name);
        let deny = |reason: String| Decision::Deny { reason };
        let rule = self.rules.servers.get(server);
        if let Some(rule) = rule {
            if let Some(p) = rule.deny.iter().find(|p| glob_match(p, name)) {
                return deny(format!(
                    "{qualified} is denied by the policy for server \"{server}\" (deny: {p})"
                ));
            }
            let annotated_read_only = tool
                .annotations
                .as_ref()
                .is_some_and(|a| a.read_only_hint == Some(true));
            if rule.read_only && !annotated_read_only {
                return deny(format!(
                    "{qualified} is denied: server \"{server}\" is in read-only mode and the tool is not annotated readOnlyHint"
                ));
            }
        }
        let listed = rule.and_then(|r| r.allow.as_ref());
        match (listed, default) {
            (Some(allow), _) if !allow.iter().any(|p| glob_match(p, name)) => {
                return deny(format!(
                    "{qualified} is not in the allow list for server \"{server}\" ({})",
                    allow.join(", ")
                ));
            }
            (Some(_), _) | (None, DefaultAction::Allow) => {}
            (None, DefaultAction::Deny) => {
                return deny(format!(
                    "{qualified} is denied by the default policy (deny); allow it under policy.servers.{server}.allow"
                ));
            }
        }
        if let Some(patterns) = &self.patterns
            && !patterns
                .iter()
                .any(|p| pattern::matches(p, self.servers.iter().map(String::as_str), server, name))
        {
            return deny(format!(
                "{qualified} is not in this execution's allowedTools ({})",
                patterns.join(", ")
            ));
        }
        let servers = || self.servers.iter().map(String::as_str);
        if let Some(layer) = self.within.iter().find(|layer| {
            !layer
                .iter()
                .any(|p| pattern::matches(p, servers(), server, name))
        }) {
            return deny(format!(
                "{qualified} is not in the allowedTools of the execution that started this one \
                 ({}); a nested execution reaches no more than its caller",
                layer.join(", ")
            ));
        }
        Decision::Allow
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, read_only: Option<bool>) -> Tool {
        let mut v = json!({"name": name, "inputSchema": {"type": "object"}});
        if let Some(ro) = read_only {
            v["annotations"] = json!({"readOnlyHint": ro});
        }
        serde_json::from_value(v).unwrap()
    }

    fn rules(v: serde_json::Value) -> Arc<ToolPolicy> {
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn allowed(list: &ToolAllowlist, server: &str, t: &Tool) -> bool {
        list.check(server, t) == Decision::Allow
    }

    #[test]
    fn policy_table() {
        let r = rules(json!({
            "default": "allow",
            "servers": {
                "gh": {"deny": ["delete_*"], "allow": ["get_*", "list_*", "delete_repo"]},
                "fs": {"readOnly": true},
                "mail": {"deny": ["*"]}
            }
        }));
        let none = ToolAllowlist::with_rules(None, r.clone());
        let cases = [
            ("gh", tool("get_issue", None), true),
            ("gh", tool("list_prs", None), true),
            ("gh", tool("create_issue", None), false), // not in allow
            ("gh", tool("delete_repo", None), false),  // deny beats allow
            ("gh", tool("Get_issue", None), false),    // case matters
            ("fs", tool("read_file", Some(true)), true),
            ("fs", tool("write_file", Some(false)), false),
            ("fs", tool("stat", None), false), // no annotation: not read-only
            ("mail", tool("send", Some(true)), false),
            ("other", tool("anything", None), true), // default allow
        ];
        for (server, t, want) in &cases {
            assert_eq!(allowed(&none, server, t), *want, "{server} {}", t.name);
        }
        let deny_default = ToolAllowlist::with_rules(
            None,
            rules(json!({"default": "deny", "servers": {"fs": {"allow": ["read_*"]}}})),
        );
        assert!(allowed(&deny_default, "fs", &tool("read_file", None)));
        assert!(!allowed(&deny_default, "fs", &tool("write_file", None)));
        assert!(!allowed(&deny_default, "other", &tool("x", None)));
    }

    #[test]
    fn the_strictest_rule_wins_and_names_itself() {
        let r = rules(json!({"servers": {"fs": {"deny": ["write_*"]}}}));
        let list = ToolAllowlist::with_rules(Some(vec!["mcp__fs__*".into()]), r);
        assert_eq!(
            list.check("fs", &tool("write_file", None)),
            Decision::Deny {
                reason:
                    "mcp__fs__write_file is denied by the policy for server \"fs\" (deny: write_*)"
                        .into()
            }
        );
        let list = ToolAllowlist::with_rules(Some(vec!["mcp__fs__read_*".into()]), Arc::default());
        assert_eq!(
            list.check("fs", &tool("list_dir", None)),
            Decision::Deny {
                reason:
                    "mcp__fs__list_dir is not in this execution's allowedTools (mcp__fs__read_*)"
                        .into()
            }
        );
    }

    /// A nested run's own patterns cannot widen its callers': each layer must allow.
    #[test]
    fn a_nested_allowlist_is_inside_its_callers() {
        let list =
            ToolAllowlist::new(Some(vec!["mcp__fs__*".into(), "mcp__gh__*".into()])).within(vec![
                vec!["mcp__fs__*".into()],
                vec!["mcp__fs__read_*".into()],
            ]);
        assert!(allowed(&list, "fs", &tool("read_file", None)));
        assert_eq!(
            list.check("fs", &tool("write_file", None)),
            Decision::Deny {
                reason: "mcp__fs__write_file is not in the allowedTools of the execution that \
                         started this one (mcp__fs__read_*); a nested execution reaches no more \
                         than its caller"
                    .into()
            }
        );
        assert!(!allowed(&list, "gh", &tool("read_issue", None)));
        // No patterns of its own: the callers' still hold.
        let list = ToolAllowlist::new(None).within(vec![vec!["mcp__fs__read_file".into()]]);
        assert!(allowed(&list, "fs", &tool("read_file", None)));
        assert!(!allowed(&list, "fs", &tool("read_files", None)));
    }

    #[test]
    fn near_misses_of_allowed_names_are_denied() {
        let list = ToolAllowlist::new(Some(vec![
            "mcp__fs__read_file".into(),
            "mcp__a__b__c".into(),
        ]));
        let cases = [
            ("fs", "read_file", true),
            ("fs", "read_file ", false),
            ("fs", " read_file", false),
            ("fs", "READ_FILE", false),
            ("fs", "reаd_file", false), // Cyrillic а
            ("fs", "read_file\u{200b}", false),
            ("fs", "read_files", false),
            ("fs", "read*", false),
            ("FS", "read_file", false),
            ("a", "b__c", true), // mcp__a__b__c read as server a, tool b__c
            ("a__b", "c", true), // or as server a__b, tool c: the same qualified name
            ("a_", "_b__c", false),
        ];
        for (server, name, want) in cases {
            assert_eq!(
                allowed(&list, server, &tool(name, None)),
                want,
                "{server:?} {name:?}"
            );
        }
    }

    /// Issue 18: with servers `gh` and `gh__admin`, `mcp__gh__*` reached `gh__admin`.
    #[test]
    fn a_wildcard_for_one_server_does_not_reach_a_server_whose_name_extends_it() {
        let servers: Arc<[String]> = ["gh", "gh__admin", "g", "gh_"]
            .into_iter()
            .map(String::from)
            .collect();
        let list = ToolAllowlist::new(Some(vec!["mcp__gh__*".into()])).among(servers);
        assert_eq!(list.check("gh", &tool("read", None)), Decision::Allow);
        assert_eq!(
            list.check("gh__admin", &tool("delete", None)),
            Decision::Deny {
                reason:
                    "mcp__gh__admin__delete is not in this execution's allowedTools (mcp__gh__*)"
                        .into()
            }
        );
        for (server, name) in [("gh_", "x"), ("g", "h__x")] {
            assert_ne!(
                list.check(server, &tool(name, None)),
                Decision::Allow,
                "{server} {name}"
            );
        }
    }

    #[test]
    fn mutated_names_outside_the_allowlist_are_never_accepted() {
        // A property over many mutations of an allowed name: only the exact name passes.
        let allowed_name = "mcp__github__create_issue";
        let list = ToolAllowlist::new(Some(vec![allowed_name.into()]));
        let base = "create_issue";
        let mut seed = 0x2545F4914F6CDD1Du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let alphabet: Vec<char> =
            "abcdefghijklmnopqrstuvwxyz_*-. ABCDEFGHIJ\u{0430}\u{0435}\u{200b}\u{ff3f}"
                .chars()
                .collect();
        for _ in 0..20_000 {
            let mut chars: Vec<char> = base.chars().collect();
            for _ in 0..=(next() % 3) {
                let i = (next() as usize) % (chars.len() + 1);
                let c = alphabet[(next() as usize) % alphabet.len()];
                match next() % 3 {
                    0 => chars.insert(i, c),
                    1 if i < chars.len() => chars[i] = c,
                    _ if i < chars.len() && chars.len() > 1 => {
                        chars.remove(i);
                    }
                    _ => chars.push(c),
                }
            }
            let mutated: String = chars.into_iter().collect();
            let ok = allowed(&list, "github", &tool(&mutated, None));
            assert_eq!(ok, mutated == base, "{mutated:?}");
        }
    }

    /// The executor's own tools: the rules for their server and `allowedTools` apply by the
    /// name code used or ours (a deny by either denies), the default does not.
    #[test]
    fn own_tools_answer_to_rules_and_patterns_not_the_default() {
        let own = |names: &[(&str, bool)]| -> Vec<Tool> {
            names
                .iter()
                .map(|(n, ro)| tool(n, ro.then_some(true)))
                .collect()
        };
        let exec = own(&[("executeTypescript", false), ("execute_typescript", false)]);
        let search = own(&[("search_tools", true), ("search_tools", true)]);
        let ce = "code-executor";
        let ok = |l: &ToolAllowlist, t: &[Tool]| l.check_own(ce, t) == Decision::Allow;
        // default deny without a rule for the executor: allowed.
        let deny_default = ToolAllowlist::with_rules(None, rules(json!({"default": "deny"})));
        assert!(ok(&deny_default, &exec) && ok(&deny_default, &search));
        // a deny pattern matching our name or the alias denies either way.
        for p in ["execute_*", "executeTypescript", "*"] {
            let l = ToolAllowlist::with_rules(None, rules(json!({"servers": {ce: {"deny": [p]}}})));
            assert!(!ok(&l, &exec), "{p}");
            assert_eq!(ok(&l, &search), p != "*", "{p}");
        }
        // an allow list naming either name allows; readOnly keeps discovery only.
        let l = ToolAllowlist::with_rules(
            None,
            rules(json!({"default": "deny", "servers": {ce: {"allow": ["execute_typescript"]}}})),
        );
        assert!(ok(&l, &exec) && !ok(&l, &search));
        let l =
            ToolAllowlist::with_rules(None, rules(json!({"servers": {ce: {"readOnly": true}}})));
        assert!(!ok(&l, &exec) && ok(&l, &search));
        // allowedTools apply, by either name, in every layer.
        let l = ToolAllowlist::new(Some(vec!["mcp__fx__*".into()]));
        assert!(!ok(&l, &exec) && !ok(&l, &search));
        let l = ToolAllowlist::new(Some(vec!["mcp__code-executor__executeTypescript".into()]));
        assert!(ok(&l, &exec) && !ok(&l, &search));
        let l = ToolAllowlist::new(Some(vec!["mcp__code-executor__*".into()]))
            .within(vec![vec!["mcp__fx__*".into()]]);
        assert!(!ok(&l, &exec));
        // no names at all: nothing to deny by.
        assert!(ok(&ToolAllowlist::allow_all(), &[]));
    }
}
