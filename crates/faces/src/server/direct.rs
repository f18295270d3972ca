//! Pinned direct tools on the wire (`directTools`): what `tools/list` adds to our own tools,
//! which listed name a `tools/call` names, and how a direct call's outcome is answered.
//!
//! A direct call enters the runtime through its one door like an execution
//! (`runtime::door::Work::Direct`): admission, the bridge's rules, rate, schema, approval
//! (asked inline, or by `input_required` on 2026-07-28), upstream call and audit line are
//! the ones calls from code go through. Its answer is the upstream's own result; a refusal is
//! a tool error (`isError`) naming what refused it, as code would have caught it.

use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock, ResultType, SubscriptionFilter, Tool};
use rmcp::service::SubscriptionContext;
use rmcp::{Peer, RoleServer};
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;

use crate::composition::Core;
use policy::ToolAllowlist;
use runtime::outcome::Called;
use tools::catalog::Catalog;
use tools::catalog::direct::Pinned;

/// How long a `tools/list` or a direct call waits for a pinned server to start; past it the
/// server's tools are left out of this answer and its start goes on in the background.
pub(super) const START_WAIT: Duration = tools::upstream::SEARCH_START_WAIT;

/// The pinned tools `tools/list` shows: those the configured rules allow (a tool the rules
/// deny could only ever be refused). Servers that could not be listed are logged.
pub(super) async fn listed(core: &Core) -> Vec<Tool> {
    if core.catalog.direct().is_empty() {
        return Vec::new();
    }
    let (pinned, errors) = core
        .catalog
        .pinned(&core.policy.allowlist(None), Some(START_WAIT), None)
        .await;
    for e in errors {
        tracing::warn!("directTools: left out of tools/list for now: {e}");
    }
    pinned.iter().map(Pinned::listed).collect()
}

/// The upstream (server, tool) listed as `name`, whatever the rules say of it (the bridge
/// decides, and audits, a call the rules deny). A name `server__tool` that a pattern pins, of
/// a server that cannot be listed now (it failed to start, or is still starting), is that
/// pair too: the bridge then says why it cannot be called, and audits it, as for code.
pub(super) async fn find(core: &Core, name: &str) -> Option<(String, String)> {
    let direct = core.catalog.direct();
    if direct.is_empty() || !name.contains("__") {
        return None;
    }
    let (pinned, errors) = core
        .catalog
        .pinned(&ToolAllowlist::allow_all(), Some(START_WAIT), Some(name))
        .await;
    if let Some(p) = pinned.into_iter().find(|p| p.name == name) {
        return Some((p.server, p.tool.name.to_string()));
    }
    if errors.is_empty() {
        return None;
    }
    let names = core.catalog.upstreams().names();
    names
        .clone()
        .filter_map(|s| {
            let tool = name.strip_prefix(s)?.strip_prefix("__")?;
            direct
                .pins(names.clone(), s, tool)
                .then(|| (s.to_string(), tool.to_string()))
        })
        .max_by_key(|(s, _)| s.len())
}

/// A direct call's answer: the upstream's result as it came (content, structured content,
/// `isError`), or a tool error naming what refused or failed the call (`PolicyError: ...`).
pub(super) fn answer(called: Called) -> CallToolResult {
    match called.result {
        Ok(mut result) => {
            // An upstream of an earlier revision sends no `resultType`; a 2026-07-28 client
            // needs it (rmcp strips it again for earlier peers).
            result.result_type = Some(ResultType::COMPLETE);
            *result
        }
        Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
            "{}: {}",
            e.name, e.message
        ))]),
    }
}

/// How often a client that was told of no change is checked for having gone away.
const PEER_CHECK: Duration = Duration::from_secs(30);

/// Sends `peer` `notifications/tools/list_changed` whenever a server a pin reaches connects or
/// announces a changed list (its pinned tools may have changed), until the client is gone: a
/// session that began with `initialize` (before 2026-07-28).
pub(super) fn announce_changes(catalog: Catalog, peer: Peer<RoleServer>) {
    if catalog.direct().is_empty() {
        return;
    }
    let mut changes = catalog.upstreams().changes();
    tokio::spawn(async move {
        let mut check = tokio::time::interval(PEER_CHECK);
        loop {
            let more = tokio::select! {
                more = next_change(&catalog, &mut changes) => more,
                _ = check.tick() => {
                    if peer.is_transport_closed() {
                        return;
                    }
                    continue;
                }
            };
            if !more || peer.notify_tool_list_changed().await.is_err() {
                return;
            }
        }
    });
}

/// What a 2026-07-28 `subscriptions/listen` may subscribe to: `tools/list_changed` when
/// tools are pinned (else nothing: the method is not offered).
pub(super) fn accepted_filter(catalog: &Catalog) -> Option<SubscriptionFilter> {
    (!catalog.direct().is_empty())
        .then(|| SubscriptionFilter::builder().tools_list_changed().build())
}

/// One 2026-07-28 subscription: `notifications/tools/list_changed` for each change, as
/// [`announce_changes`] sends it, until the client cancels it.
pub(super) async fn listen(catalog: Catalog, subscription: SubscriptionContext) {
    let mut changes = catalog.upstreams().changes();
    loop {
        let more = tokio::select! {
            () = subscription.cancelled() => return,
            more = next_change(&catalog, &mut changes) => more,
        };
        if !more
            || subscription
                .sink()
                .notify_tool_list_changed()
                .await
                .is_err()
        {
            return;
        }
    }
}

/// Waits for the next change of a server some pin reaches (`true`; also when changes were
/// missed), or for the changes to end with the upstreams (`false`).
async fn next_change(catalog: &Catalog, changes: &mut Receiver<String>) -> bool {
    loop {
        match changes.recv().await {
            Ok(server) => {
                if catalog
                    .direct()
                    .servers(catalog.upstreams().names())
                    .contains(&server)
                {
                    return true;
                }
            }
            Err(RecvError::Lagged(_)) => return true,
            Err(RecvError::Closed) => return false,
        }
    }
}
