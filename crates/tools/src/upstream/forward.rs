//! Requests an upstream sends us (elicitation, sampling, roots), routed to the client on
//! behalf of the execution whose tool call caused them.
//!
//! Off by default per server: only servers named in `forwardRequests.servers` (or `"*"`) are
//! told we can answer them (the capabilities we declare at `initialize`), and only their
//! requests are routed; every other server's requests get the defaults (elicitation declined,
//! sampling not supported, no roots). A request is routed to the execution with a call to that
//! server in flight (the latest, when several are): it answers through its client, inline or
//! by MRTR, like its own questions. A request that arrives when no execution is calling that
//! server is refused.
//!
//! Roots: the client's (asked when it declared roots), narrowed to `forwardRequests.roots`
//! when those are configured; never more than the client granted (no roots capability: none).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;

/// What answers an upstream's request for the execution that caused it.
pub trait Forward: Send + Sync {
    /// Asks the execution's client `request` (`{"method", "params"}`); the client's result,
    /// or the error the upstream is answered with.
    fn ask(&self, request: Value) -> BoxFuture<'_, Result<Value, rmcp::ErrorData>>;
    /// Whether the client declared the roots capability.
    fn has_roots(&self) -> bool;
}

/// Callers of each server: (call id, who answers for it), oldest first.
type ByServer = HashMap<String, Vec<(u64, Arc<dyn Forward>)>>;

/// Executions with a call in flight, by server.
#[derive(Default)]
pub struct Callers {
    by_server: Mutex<ByServer>,
    next: AtomicU64,
}

/// A call in flight; it stops being a caller when dropped.
pub struct Calling<'a> {
    callers: &'a Callers,
    server: String,
    id: u64,
}

impl Drop for Calling<'_> {
    fn drop(&mut self) {
        let mut all = self.callers.lock();
        if let Some(list) = all.get_mut(&self.server) {
            list.retain(|(id, _)| *id != self.id);
            if list.is_empty() {
                all.remove(&self.server);
            }
        }
    }
}

impl Callers {
    fn lock(&self) -> std::sync::MutexGuard<'_, ByServer> {
        self.by_server
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn enter(&self, server: &str, forward: Arc<dyn Forward>) -> Calling<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock()
            .entry(server.to_string())
            .or_default()
            .push((id, forward));
        Calling {
            callers: self,
            server: server.to_string(),
            id,
        }
    }

    /// The execution a request from `server` is for: the latest with a call in flight.
    pub fn current(&self, server: &str) -> Option<Arc<dyn Forward>> {
        self.lock()
            .get(server)
            .and_then(|l| l.last())
            .map(|(_, f)| f.clone())
    }
}

/// `uri` lies at or under `root` (both `file://` URIs).
fn within(uri: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    uri == root
        || uri
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The roots an upstream gets: the client's, narrowed to the configured ones.
pub fn narrow_roots(client: &Value, configured: &[String]) -> Value {
    let granted: Vec<Value> = client["roots"].as_array().cloned().unwrap_or_default();
    if configured.is_empty() {
        return serde_json::json!({ "roots": granted });
    }
    let mut out = Vec::new();
    for c in configured {
        if let Some(g) = granted
            .iter()
            .find(|g| g["uri"].as_str().is_some_and(|u| within(c, u)))
        {
            let mut r = serde_json::json!({ "uri": c });
            if c == g["uri"].as_str().unwrap_or_default()
                && let Some(name) = g.get("name")
            {
                r["name"] = name.clone();
            }
            out.push(r);
        }
    }
    serde_json::json!({ "roots": out })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roots_are_never_more_than_the_client_granted() {
        let client = json!({"roots": [{"uri": "file:///home/u/proj", "name": "proj"}]});
        assert_eq!(narrow_roots(&client, &[]), client);
        let configured = [
            "file:///home/u/proj/sub".to_string(),
            "file:///home/u/projector".to_string(),
            "file:///etc".to_string(),
            "file:///home/u/proj".to_string(),
        ];
        assert_eq!(
            narrow_roots(&client, &configured),
            json!({"roots": [{"uri": "file:///home/u/proj/sub"}, {"uri": "file:///home/u/proj", "name": "proj"}]})
        );
        assert_eq!(narrow_roots(&json!({}), &configured), json!({"roots": []}));
    }
}
