//! What comes from an upstream, with the configured secrets taken out before anything of
//! ours sees it (`policy::redact`): a tool's result (every content block, structured
//! content, metadata), its errors and start failures (a child's stderr tail, a URL), its
//! progress messages and its tool list (a description may quote a token). Code in the
//! sandbox could return a secret it saw in any form it computes, so it must never see one;
//! the exits (`lines/`, `http::shim`, the log writer, the audit log) redact again what the
//! server itself composes.

use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam, Tool};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::ConnectError;
use super::error::UpstreamError;
use policy::redact::{REDACTED, Redactor, strip_userinfo};

/// `item` with every secret in its JSON taken out; untouched (one scan of its encoding, no
/// copy kept) when it holds none. An item that no longer fits its type once redacted is
/// replaced by `fallback`.
fn through_json<T: Serialize + DeserializeOwned>(
    r: &Redactor,
    item: T,
    fallback: impl FnOnce() -> T,
) -> T {
    let Ok(bytes) = serde_json::to_vec(&item) else {
        return item;
    };
    if !r.finds(&bytes) {
        return item;
    }
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return fallback();
    };
    r.value(&mut value);
    serde_json::from_value(value).unwrap_or_else(|_| fallback())
}

/// A tool's result without secrets. A text block (the large ones: a 5 MB result is one) is
/// scanned in place and copied only when a secret is found; other blocks, structured content
/// and metadata go through their JSON. A secret split across text blocks, or across the
/// strings of an array, is cut too (`Redactor::across`), and so are its encoded forms.
pub(super) fn result(r: &Redactor, mut result: CallToolResult) -> CallToolResult {
    if r.is_empty() {
        return result;
    }
    result.content = std::mem::take(&mut result.content)
        .into_iter()
        .map(|block| match block {
            ContentBlock::Text(mut t) => {
                r.string(&mut t.text);
                if t.meta.is_none() && t.annotations.is_none() {
                    ContentBlock::Text(t)
                } else {
                    through_json(r, ContentBlock::Text(t), || ContentBlock::text(REDACTED))
                }
            }
            other => through_json(r, other, || ContentBlock::text(REDACTED)),
        })
        .collect();
    // A secret split across text blocks (code can join them) is cut in each.
    let mut texts: Vec<&mut String> = result
        .content
        .iter_mut()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(&mut t.text),
            _ => None,
        })
        .collect();
    r.across(&mut texts);
    if let Some(v) = result.structured_content.as_mut() {
        r.value(v);
    }
    if result.meta.is_some() {
        result.meta = through_json(r, result.meta.take(), || None);
    }
    result
}

/// A tool list without secrets (names, descriptions, schemas).
pub(super) fn tools(r: &Redactor, tools: Vec<Tool>) -> Vec<Tool> {
    if r.is_empty() {
        return tools;
    }
    tools
        .into_iter()
        .map(|t| {
            let name = t.name.clone();
            through_json(r, t, || {
                Tool::new(name, REDACTED, std::sync::Arc::new(serde_json::Map::new()))
            })
        })
        .collect()
}

/// A progress notification without secrets in its message.
pub(super) fn progress(
    r: &Redactor,
    mut p: ProgressNotificationParam,
) -> ProgressNotificationParam {
    if let Some(m) = p.message.as_mut() {
        r.string(m);
    }
    p
}

/// A failed start's reason without secrets (a child's stderr, a URL with userinfo).
pub(super) fn connect_error(r: &Redactor, e: ConnectError) -> ConnectError {
    let clean = |s: String| strip_userinfo(&r.str(&s)).into_owned();
    match e {
        ConnectError::NeedsLogin(s) => ConnectError::NeedsLogin(clean(s)),
        ConnectError::TimedOut(s) => ConnectError::TimedOut(clean(s)),
        ConnectError::Other(s) => ConnectError::Other(clean(s)),
    }
}

/// An error without secrets in any of its texts (an upstream's JSON-RPC error message), and
/// without the userinfo of any URL in it.
pub(super) fn error(r: &Redactor, e: UpstreamError) -> UpstreamError {
    let clean = |s: String| strip_userinfo(&r.str(&s)).into_owned();
    match e {
        UpstreamError::UnknownServer(s) => UpstreamError::UnknownServer(clean(s)),
        UpstreamError::HeldBack { server, reason } => UpstreamError::HeldBack {
            server,
            reason: clean(reason),
        },
        UpstreamError::HiddenTool { reason } => UpstreamError::HiddenTool {
            reason: clean(reason),
        },
        UpstreamError::Start { server, reason } => UpstreamError::Start {
            server,
            reason: clean(reason),
        },
        UpstreamError::Call {
            server,
            tool,
            reason,
        } => UpstreamError::Call {
            server,
            tool: clean(tool),
            reason: clean(reason),
        },
        UpstreamError::SkillFile {
            server,
            uri,
            reason,
        } => UpstreamError::SkillFile {
            server,
            uri: clean(uri),
            reason: clean(reason),
        },
        UpstreamError::Unauthorized { server, reason } => UpstreamError::Unauthorized {
            server,
            reason: clean(reason),
        },
        e @ (UpstreamError::Timeout { .. } | UpstreamError::Starting { .. }) => e,
    }
}
