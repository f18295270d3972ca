//! Which tool calls a person must approve first, and what happens when nobody can be asked:
//! `approvals` in the settings. A pure function of the settings and the tool, tested by value;
//! asking is the runtime's part (`runtime::approval`).
//!
//! ```json
//! "approvals": {
//!   "approve": ["mcp__github__*_issue", "mcp__fs__write_*"],
//!   "annotations": "destructive",
//!   "fallback": "deny",
//!   "timeoutMs": 120000
//! }
//! ```
//!
//! `approve` patterns use the `allowedTools` syntax (`policy::pattern`); `annotations` adds
//! every tool annotated `destructiveHint: true` (`"destructive"`) or every tool not annotated
//! `readOnlyHint: true` (`"notReadOnly"`). `fallback` is what a call needing approval gets
//! when the client can be asked neither inline nor by MRTR (`deny`, the default, `allow`, or
//! `inbox`: wait for a person in the approvals inbox, its page or `code-executor-mcp
//! approvals`); `timeoutMs` bounds the wait for an answer (then the call is denied).

use std::time::Duration;

use rmcp::model::Tool;
use serde::Deserialize;

use super::error::SettingError;

use super::pattern::{self, qualified_name};

/// Default wait for a person's answer: long enough to read a prompt and decide, short enough
/// that a forgotten prompt does not hold a worker for long.
pub const DEFAULT_APPROVAL_TIMEOUT_MS: u64 = 120_000;
/// Longest configurable wait for an answer (a paused execution holds its worker).
pub const MAX_APPROVAL_TIMEOUT_MS: u64 = 3_600_000;

/// Which annotated tools need approval besides the `approve` patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AnnotationRule {
    /// Annotations alone never ask.
    #[default]
    Off,
    /// Tools annotated `destructiveHint: true`.
    Destructive,
    /// Tools not annotated `readOnlyHint: true` (the cautious choice: unannotated tools ask).
    NotReadOnly,
}

/// What a call needing approval gets when the client cannot be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fallback {
    #[default]
    Deny,
    Allow,
    /// Wait in the approvals inbox (`runtime::host::inbox`) for a person's answer from the
    /// page or the terminal, up to `timeoutMs`.
    Inbox,
}

impl Fallback {
    pub fn as_str(self) -> &'static str {
        match self {
            Fallback::Deny => "deny",
            Fallback::Allow => "allow",
            Fallback::Inbox => "inbox",
        }
    }
}

/// What a call of a tool whose definition changed since a person accepted it gets
/// (`toolChanges`, `upstream::definitions`): refused until accepted, or a person asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangedTools {
    #[default]
    Refuse,
    Ask,
}

/// The `approvals` settings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalSettings {
    #[serde(default)]
    pub approve: Vec<String>,
    #[serde(default)]
    pub annotations: AnnotationRule,
    #[serde(default)]
    pub fallback: Fallback,
    pub timeout_ms: Option<u64>,
}

impl ApprovalSettings {
    /// Checks the values: a pattern that can match nothing, or a timeout out of range, is an
    /// error to name, not a rule that silently never asks.
    pub fn validate(self) -> Result<Self, SettingError> {
        if let Some(p) = self.approve.iter().find_map(|p| pattern::problem(p)) {
            return Err(SettingError::ApprovalPattern(p));
        }
        if let Some(ms) = self.timeout_ms
            && !(1..=MAX_APPROVAL_TIMEOUT_MS).contains(&ms)
        {
            return Err(SettingError::ApprovalTimeout {
                ms,
                max: MAX_APPROVAL_TIMEOUT_MS,
            });
        }
        Ok(self)
    }

    /// How long a call waits for a person's answer.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.unwrap_or(DEFAULT_APPROVAL_TIMEOUT_MS))
    }

    /// Whether a call to `tool` of `server` needs approval, and which rule says so.
    pub fn rule_for<'a>(
        &self,
        servers: impl Iterator<Item = &'a str> + Clone,
        server: &str,
        tool: &Tool,
    ) -> Option<String> {
        let name = &*tool.name;
        if let Some(p) = self
            .approve
            .iter()
            .find(|p| pattern::matches(p, servers.clone(), server, name))
        {
            return Some(format!("approvals.approve: {p}"));
        }
        let hint = |f: fn(&rmcp::model::ToolAnnotations) -> Option<bool>| {
            tool.annotations.as_ref().and_then(f)
        };
        match self.annotations {
            AnnotationRule::Off => None,
            AnnotationRule::Destructive => (hint(|a| a.destructive_hint) == Some(true))
                .then(|| "approvals.annotations: destructive (destructiveHint: true)".into()),
            AnnotationRule::NotReadOnly => (hint(|a| a.read_only_hint) != Some(true)).then(|| {
                format!(
                    "approvals.annotations: notReadOnly ({} is not annotated readOnlyHint: true)",
                    qualified_name(server, name)
                )
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, annotations: serde_json::Value) -> Tool {
        serde_json::from_value(
            json!({"name": name, "inputSchema": {"type": "object"}, "annotations": annotations}),
        )
        .unwrap()
    }

    fn settings(v: serde_json::Value) -> ApprovalSettings {
        serde_json::from_value::<ApprovalSettings>(v)
            .unwrap()
            .validate()
            .unwrap()
    }

    #[test]
    fn approval_table() {
        let servers = ["gh", "fs", "gh__admin"];
        let by_pattern = settings(json!({"approve": ["mcp__gh__*_issue", "mcp__fs__write_*"]}));
        let destructive = settings(json!({"annotations": "destructive"}));
        let not_read_only = settings(json!({"annotations": "notReadOnly"}));
        let ro = json!({"readOnlyHint": true});
        let destroy = json!({"destructiveHint": true});
        let none = json!({});
        let cases = [
            (&by_pattern, "gh", tool("create_issue", none.clone()), true),
            (&by_pattern, "gh", tool("get_pr", none.clone()), false),
            (
                &by_pattern,
                "gh__admin",
                tool("create_issue", none.clone()),
                false,
            ),
            (&by_pattern, "fs", tool("write_file", ro.clone()), true),
            (&destructive, "fs", tool("rm", destroy.clone()), true),
            (&destructive, "fs", tool("write", none.clone()), false),
            (&not_read_only, "fs", tool("write", none.clone()), true),
            (&not_read_only, "fs", tool("read", ro.clone()), false),
            (&not_read_only, "fs", tool("rm", destroy.clone()), true),
            (
                &ApprovalSettings::default(),
                "fs",
                tool("rm", destroy),
                false,
            ),
        ];
        for (s, server, t, want) in &cases {
            let got = s.rule_for(servers.iter().copied(), server, t);
            assert_eq!(got.is_some(), *want, "{server} {} {got:?}", t.name);
        }
    }

    #[test]
    fn bad_settings_are_named() {
        let bad = |v| {
            serde_json::from_value::<ApprovalSettings>(v)
                .map_err(|e| e.to_string())
                .and_then(|s| ApprovalSettings::validate(s).map_err(|e| e.to_string()))
                .unwrap_err()
        };
        assert!(bad(json!({"approve": ["github_*"]})).contains("approvals.approve"));
        assert!(bad(json!({"timeoutMs": 0})).contains("timeoutMs"));
        assert!(bad(json!({"fallback": "maybe"})).contains("maybe"));
        assert!(bad(json!({"annotations": "all"})).contains("all"));
    }
}
