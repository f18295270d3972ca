//! Personal data at the bridge (`crate::policy::pii`): the results, errors and progress of
//! scanned tools tokenised on their way in, tokens in a call's arguments restored for the
//! tools allowed to receive them (or left, or the call refused), and what leaves an
//! execution whose code sees values tokenised on its way out.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam};
use serde_json::{Map, Value};

use super::scope::RunScope;
use crate::policy::pii::vault::Vault;
use crate::policy::pii::{Elsewhere, SandboxSees};

/// The execution's map when the results of `tool` of `server` are scanned.
pub(super) fn scans<'s>(scope: &'s RunScope, server: &str, tool: &str) -> Option<&'s Arc<Vault>> {
    let vault = scope.pii.as_ref()?;
    let servers = scope.policy.servers.iter().map(String::as_str);
    scope
        .policy
        .pii
        .scans(servers, server, tool)
        .then_some(vault)
}

/// A scanned tool's result as code may see it: tokenised when code sees tokens (every text
/// block and the structured content); as it is when code sees values (the exits tokenise).
/// An error result is tokenised either way: its message reaches the audit log.
pub(super) fn result(scope: &RunScope, vault: &Vault, mut r: CallToolResult) -> CallToolResult {
    let Some(detectors) = scope.policy.pii.detectors() else {
        return r;
    };
    if scope.policy.pii.sandbox_sees() == SandboxSees::Values && r.is_error != Some(true) {
        return r;
    }
    let mut made = BTreeMap::new();
    for block in &mut r.content {
        if let ContentBlock::Text(t) = block {
            vault.tokenise_string(detectors, &mut t.text, &mut made);
        }
    }
    if let Some(v) = r.structured_content.as_mut() {
        vault.tokenise_value(detectors, v, &mut made);
    }
    scope.count_tokens(made);
    r
}

/// A scanned tool's error message, tokenised (in both modes: it reaches the audit log).
pub(super) fn text(scope: &RunScope, vault: &Vault, s: &mut String) {
    if let Some(detectors) = scope.policy.pii.detectors() {
        let mut made = BTreeMap::new();
        vault.tokenise_string(detectors, s, &mut made);
        scope.count_tokens(made);
    }
}

/// A scanned tool's progress notification, its message tokenised (it goes to the client).
pub(super) fn progress(
    scope: &RunScope,
    vault: &Vault,
    p: &ProgressNotificationParam,
) -> ProgressNotificationParam {
    let mut p = p.clone();
    if let Some(m) = p.message.as_mut() {
        text(scope, vault, m);
    }
    p
}

/// The arguments `tool` of `server` receives: `Ok(Some)` with the tokens restored to their
/// values when it may receive them (or, when code sees values, with the values found made
/// tokens when it may not); `Ok(None)`: as they are; `Err`: refused (`elsewhere: "deny"`
/// and a token or value bound for a tool not allowed to receive it).
pub(super) fn arguments(
    scope: &RunScope,
    server: &str,
    tool: &str,
    args: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, String> {
    let Some(vault) = scope.pii.as_ref() else {
        return Ok(None);
    };
    let pii = &scope.policy.pii;
    let servers = scope.policy.servers.iter().map(String::as_str);
    let allowed = pii.restores_to(servers, server, tool);
    let mut v = Value::Object(args.clone());
    let changed = if allowed {
        let mut n = 0;
        vault.restore_value(&mut v, &mut n);
        n > 0
    } else if let Some((vault, detectors)) = scope.pii_exit.as_ref().and_then(|e| e.parts()) {
        let mut made = BTreeMap::new();
        let before = v.clone();
        vault.tokenise_value(detectors, &mut v, &mut made);
        scope.count_tokens(made);
        v != before
    } else {
        let mut probe = v.clone();
        let mut n = 0;
        vault.restore_value(&mut probe, &mut n);
        if n > 0 && pii.elsewhere() == Elsewhere::Deny {
            return Err(refusal(server, tool));
        }
        false
    };
    if !changed {
        return Ok(None);
    }
    if !allowed && pii.elsewhere() == Elsewhere::Deny {
        return Err(refusal(server, tool));
    }
    match v {
        Value::Object(m) => Ok(Some(m)),
        _ => Ok(None),
    }
}

fn refusal(server: &str, tool: &str) -> String {
    format!(
        "the arguments of {} carry personal data (a token such as [EMAIL_1_...] or the value \
         behind one), and pii.restoreTo does not name this tool; pii.elsewhere is \"deny\"",
        crate::policy::qualified_name(server, tool)
    )
}
