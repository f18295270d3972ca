//! A server's own tool filter, as its client's config writes it: Gemini CLI's `includeTools` /
//! `excludeTools`, Codex's `enabled_tools` / `disabled_tools`, Windsurf's `disabledTools`.
//!
//! A tool the filter excludes does not exist for us: the upstream layer drops it from the
//! server's tool list as the list arrives (so no search, schema, typed proxy or cache ever
//! sees it) and refuses a call to it. [`ToolFilter::decide`] is the one place that decides;
//! the reason it gives names the file and the key, so the user knows what to edit.

use serde::Serialize;

use super::pattern::qualified_name;
use super::rules::Decision;

/// The filter of one server entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolFilter {
    /// Only these tools are visible (`includeTools`, `enabled_tools`); `None`: all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include: Option<Vec<String>>,
    /// These tools are hidden, whatever `include` says (`excludeTools`, `disabled_tools`,
    /// `disabledTools`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Where the filter was written: `<file>: mcpServers.<name>` (for reasons).
    pub origin: String,
    /// The keys as the file spells them, for reasons (`includeTools`, `disabled_tools`, ...).
    pub include_key: &'static str,
    pub exclude_key: &'static str,
}

impl ToolFilter {
    /// Whether `tool` of `server` is visible. Names match exactly; an `include` entry also
    /// matches as Gemini CLI's `name(...)` form (`run(git)` includes `run`).
    pub fn decide(&self, server: &str, tool: &str) -> Decision {
        if self.exclude.iter().any(|t| t == tool) {
            return Decision::Deny {
                reason: format!(
                    "{} is hidden: it is listed in {} of {}",
                    qualified_name(server, tool),
                    self.exclude_key,
                    self.origin
                ),
            };
        }
        if let Some(include) = &self.include {
            let listed = include.iter().any(|t| {
                t == tool
                    || t.strip_prefix(tool)
                        .is_some_and(|rest| rest.starts_with('('))
            });
            if !listed {
                return Decision::Deny {
                    reason: format!(
                        "{} is hidden: it is not listed in {} of {}",
                        qualified_name(server, tool),
                        self.include_key,
                        self.origin
                    ),
                };
            }
        }
        Decision::Allow
    }

    /// Whether the filter hides nothing.
    pub fn is_empty(&self) -> bool {
        self.include.is_none() && self.exclude.is_empty()
    }
}

/// `tools` without those `filter` hides.
pub fn retain_visible(
    filter: Option<&ToolFilter>,
    server: &str,
    tools: Vec<rmcp::model::Tool>,
) -> Vec<rmcp::model::Tool> {
    match filter {
        None => tools,
        Some(f) => tools
            .into_iter()
            .filter(|t| f.decide(server, &t.name) == Decision::Allow)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(include: Option<&[&str]>, exclude: &[&str]) -> ToolFilter {
        ToolFilter {
            include: include.map(|i| i.iter().map(|s| s.to_string()).collect()),
            exclude: exclude.iter().map(|s| s.to_string()).collect(),
            origin: "/h/.gemini/settings.json: mcpServers.fs".into(),
            include_key: "includeTools",
            exclude_key: "excludeTools",
        }
    }

    #[test]
    fn filter_table() {
        let f = filter(Some(&["read", "run(git status)"]), &["read", "write"]);
        let cases = [
            ("read", false), // exclude wins over include
            ("write", false),
            ("run", true), // Gemini's name(args) form
            ("runner", false),
            ("ru", false),
            ("stat", false), // not included
            ("READ", false),
        ];
        for (tool, visible) in cases {
            assert_eq!(f.decide("fs", tool) == Decision::Allow, visible, "{tool}");
        }
        let only_exclude = filter(None, &["delete"]);
        assert_eq!(only_exclude.decide("fs", "read"), Decision::Allow);
        assert_eq!(
            only_exclude.decide("fs", "delete"),
            Decision::Deny {
                reason: "mcp__fs__delete is hidden: it is listed in excludeTools of /h/.gemini/settings.json: mcpServers.fs".into()
            }
        );
        assert_eq!(
            f.decide("fs", "stat"),
            Decision::Deny {
                reason: "mcp__fs__stat is hidden: it is not listed in includeTools of /h/.gemini/settings.json: mcpServers.fs".into()
            }
        );
    }
}
