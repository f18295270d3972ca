//! The context cost of the tool definitions: every upstream tool as a client loads it when
//! it connects to each server directly, per server and in all, against our own `tools/list`
//! (pinned `directTools` included, as a client receives it).

use std::sync::Arc;

use rmcp::model::Tool;
use serde::Serialize;

use faces::tokens::{TokenizerError, count_tokens};
use tools::upstream::{UpstreamError, Upstreams};

/// One upstream server's tools.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ServerCost {
    pub server: String,
    pub tools: usize,
    /// cl100k tokens of its tool definitions (compact JSON, as `tools/list` sends them).
    pub tokens: usize,
    /// Why its tools could not be listed (it then counts zero).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Our own `tools/list`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct OurCost {
    pub tools: usize,
    pub tokens: usize,
    /// Of which our own tools (the execute tools, search, schema, servers, health, ...).
    pub own_tokens: usize,
    /// Tools pinned by `directTools`, listed beside ours.
    pub pinned_tools: usize,
    pub pinned_tokens: usize,
}

/// Both sides' tool definitions.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ContextCost {
    pub servers: Vec<ServerCost>,
    pub direct_tools: usize,
    pub direct_tokens: usize,
    pub ours: OurCost,
    /// Ours / direct (below 1: we cost less).
    pub ratio: f64,
}

/// Every upstream's tool list (or why it has none), in name order.
pub(crate) type Listed = Vec<(String, Result<Arc<Vec<Tool>>, UpstreamError>)>;

/// Lists every configured server's tools (starting them).
pub(crate) async fn list_upstreams(up: &Upstreams) -> Listed {
    let names: Vec<String> = up.names().map(str::to_string).collect();
    let lists = futures::future::join_all(names.iter().map(|n| up.tools(n))).await;
    names.into_iter().zip(lists).collect()
}

fn tokens_of(tools: &[Tool]) -> Result<usize, TokenizerError> {
    count_tokens(&serde_json::to_string(tools).unwrap_or_default())
}

/// The cost of `listed` directly against `ours` (our `tools/list`).
pub(crate) fn cost(listed: &Listed, ours: &[Tool]) -> Result<ContextCost, TokenizerError> {
    let mut servers = Vec::new();
    for (name, r) in listed {
        servers.push(match r {
            Ok(tools) => ServerCost {
                server: name.clone(),
                tools: tools.len(),
                tokens: tokens_of(tools)?,
                error: None,
            },
            Err(e) => ServerCost {
                server: name.clone(),
                tools: 0,
                tokens: 0,
                error: Some(e.to_string()),
            },
        });
    }
    let own_names: Vec<_> = faces::server::tool_definitions()
        .into_iter()
        .map(|t| t.name)
        .collect();
    let (own, pinned): (Vec<Tool>, Vec<Tool>) = ours
        .iter()
        .cloned()
        .partition(|t| own_names.contains(&t.name));
    let direct_tokens = servers.iter().map(|s| s.tokens).sum();
    let ours = OurCost {
        tools: ours.len(),
        tokens: tokens_of(ours)?,
        own_tokens: tokens_of(&own)?,
        pinned_tools: pinned.len(),
        pinned_tokens: tokens_of(&pinned)?,
    };
    Ok(ContextCost {
        direct_tools: servers.iter().map(|s| s.tools).sum(),
        ratio: ratio(ours.tokens as f64, direct_tokens as f64),
        servers,
        direct_tokens,
        ours,
    })
}

/// `a / b` with three decimals; NaN (null in JSON) when `b` is zero.
pub(crate) fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        f64::NAN
    } else {
        (a / b * 1000.0).round() / 1000.0
    }
}
