//! Personal data at the bridge (`policy::pii`): the results, errors and progress of
//! scanned tools tokenised on their way in (encoded values too), those of every other tool
//! searched for the values the map already holds (an echo of a restored argument gives the
//! token again: [`echoes`]), tokens in a call's arguments restored for the tools allowed to
//! receive them (or left, or the call refused), and what leaves an execution whose code sees
//! values tokenised on its way out. The bridge learns output types from the result as it
//! leaves here.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam, ResourceContents};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::scope::RunScope;
use policy::pii::detect::Detectors;
use policy::pii::vault::Vault;
use policy::pii::{Elsewhere, SandboxSees};

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
/// block, an embedded resource's text, a link, every `_meta`, and the structured content;
/// not an image's, audio's or blob's base64 data); as it is when code sees values (the
/// exits tokenise).
/// An error result is tokenised either way: its message reaches the audit log.
pub(super) fn result(scope: &RunScope, vault: &Vault, mut r: CallToolResult) -> CallToolResult {
    let Some(detectors) = scope.policy.pii.detectors() else {
        return r;
    };
    if scope.policy.pii.sandbox_sees() == SandboxSees::Values && r.is_error != Some(true) {
        return r;
    }
    let mut made = BTreeMap::new();
    tokenise_result(vault, detectors, &mut r, &mut made);
    scope.count_tokens(made);
    r
}

/// A scanned tool's result on its way to the client of a direct call (`directTools`), which
/// is outside the server like an execution's exit: tokenised whatever code would see.
pub(super) fn leaving(scope: &RunScope, vault: &Vault, mut r: CallToolResult) -> CallToolResult {
    let Some(detectors) = scope.policy.pii.detectors() else {
        return r;
    };
    let mut made = BTreeMap::new();
    tokenise_result(vault, detectors, &mut r, &mut made);
    scope.count_tokens(made);
    r
}

/// A result of a tool that is not scanned: every value the map holds (an echo of a value a
/// `restoreTo` tool received, or one another tool returns) replaced by its token, when code
/// sees tokens or the result goes to the client (`leaving`); as it is otherwise.
pub(super) fn echoes(scope: &RunScope, mut r: CallToolResult, leaving: bool) -> CallToolResult {
    let Some(vault) = scope.pii.as_ref() else {
        return r;
    };
    if (!leaving && scope.policy.pii.sandbox_sees() == SandboxSees::Values) || vault.is_empty() {
        return r;
    }
    vault.refresh();
    each_text(
        &mut r,
        &mut |s: &mut String| {
            if let std::borrow::Cow::Owned(new) = vault.echoes(s) {
                *s = new;
            }
        },
        &mut |v: &mut Value| vault.echoes_value(v),
    );
    r
}

/// A message (an error) of a tool that is not scanned, as [`echoes`] treats a result.
pub(super) fn echoes_text(scope: &RunScope, s: &mut String) {
    if let Some(vault) = scope.pii.as_ref() {
        vault.refresh();
        if let std::borrow::Cow::Owned(new) = vault.echoes(s) {
            *s = new;
        }
    }
}

/// Every text a person could have written in `r`, tokenised.
fn tokenise_result(
    vault: &Vault,
    detectors: &Detectors,
    r: &mut CallToolResult,
    made: &mut BTreeMap<String, u32>,
) {
    vault.refresh();
    let made = std::cell::RefCell::new(made);
    each_text(
        r,
        &mut |s: &mut String| vault.tokenise_string(detectors, s, &mut made.borrow_mut()),
        &mut |v: &mut Value| vault.tokenise_value(detectors, v, &mut made.borrow_mut()),
    );
}

/// Applies `text` to every text a person could have written in `r` (each text block, an
/// embedded resource's text) and `value` to every JSON of it (structured content, a link,
/// every `_meta`); not to an image's, audio's or blob's base64 data.
fn each_text(
    r: &mut CallToolResult,
    text: &mut dyn FnMut(&mut String),
    value: &mut dyn FnMut(&mut Value),
) {
    for block in &mut r.content {
        match &mut *block {
            ContentBlock::Text(t) => {
                text(&mut t.text);
                through_json(&mut t.meta, value);
            }
            // Base64 data is no text a person wrote: only the block's metadata is scanned
            // (a token shape inside an image's bytes would corrupt it).
            ContentBlock::Image(i) => through_json(&mut i.meta, value),
            ContentBlock::Audio(a) => through_json(&mut a.meta, value),
            ContentBlock::Resource(e) => {
                match &mut e.resource {
                    ResourceContents::TextResourceContents {
                        text: body, meta, ..
                    } => {
                        text(body);
                        through_json(meta, value);
                    }
                    ResourceContents::BlobResourceContents { meta, .. } => {
                        through_json(meta, value);
                    }
                    _ => {}
                }
                through_json(&mut e.meta, value);
            }
            // A link's name, title, description and URI are all text (and so is whatever
            // a later revision adds).
            _ => through_json(block, value),
        }
    }
    if let Some(v) = r.structured_content.as_mut() {
        value(v);
    }
    through_json(&mut r.meta, value);
}

/// `x` with `value` applied to its JSON; left as it was if the changed JSON does not read
/// back as its type (a token is a string where a string was, so it always does).
fn through_json<T: Serialize + DeserializeOwned>(x: &mut T, value: &mut dyn FnMut(&mut Value)) {
    let Ok(mut v) = serde_json::to_value(&*x) else {
        return;
    };
    if v.is_null() {
        return;
    }
    let before = v.clone();
    value(&mut v);
    if v == before {
        return;
    }
    if let Ok(back) = serde_json::from_value(v) {
        *x = back;
    }
}

/// A scanned tool's error message, tokenised (in both modes: it reaches the audit log).
pub(super) fn text(scope: &RunScope, vault: &Vault, s: &mut String) {
    vault.refresh();
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
        vault.refresh();
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
        policy::qualified_name(server, tool)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of block carries its text through the map; base64 data is left alone.
    #[test]
    fn every_block_kind_is_tokenised_but_base64_data() {
        let detectors = Detectors::new(&["email".into(), "phone".into()], &[]).unwrap();
        let vault = Vault::new();
        let email = "ana.souza@example.org";
        let meta = serde_json::json!({"owner": email});
        let wire = serde_json::json!({
            "content": [
                {"type": "text", "text": format!("mail {email}"), "_meta": meta},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png", "_meta": meta},
                {"type": "audio", "data": "aGVsbG8=", "mimeType": "audio/wav", "_meta": meta},
                {"type": "resource", "resource": {"uri": "crm://1", "text": format!("to {email}"), "_meta": meta}, "_meta": meta},
                {"type": "resource", "resource": {"uri": "crm://2", "blob": "aGVsbG8=", "_meta": meta}},
                {"type": "resource_link", "uri": format!("mailto:{email}"), "name": email, "description": format!("write to {email}")}
            ],
            "structuredContent": {"who": email},
            "_meta": meta
        });
        let mut r: CallToolResult = serde_json::from_value(wire).unwrap();
        let mut made = BTreeMap::new();
        tokenise_result(&vault, &detectors, &mut r, &mut made);
        let out = serde_json::to_string(&r).unwrap();
        assert!(!out.contains(email), "{out}");
        assert_eq!(out.matches("aGVsbG8=").count(), 3, "{out}");
        assert_eq!(made.get("EMAIL"), Some(&1), "{made:?}");
        // One value, one token, wherever it was.
        let mut n = 0;
        let mut back = serde_json::to_value(&r).unwrap();
        vault.restore_value(&mut back, &mut n);
        assert!(back.to_string().contains(email));
    }
}
