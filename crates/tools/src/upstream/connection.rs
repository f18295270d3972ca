//! One started source as the pool holds it: the source ([`super::source::ToolSource`]) and
//! its list of tools, cleaned (secrets taken out, hidden tools dropped, definitions
//! fingerprinted) and listed again when the source says it changed.

use std::sync::Arc;

use rmcp::model::Tool;

use super::redact;
use super::source::ToolSource;
use policy::filter::{ToolFilter, retain_visible};
use policy::redact::Redactor;

pub(super) struct Connection {
    pub(super) source: Arc<dyn ToolSource>,
    pub(super) tools: std::sync::Mutex<Arc<Vec<Tool>>>,
    /// The tools the entry's client config hides, dropped from every list as it arrives.
    pub(super) filter: Option<ToolFilter>,
}

impl Connection {
    /// False once the source is gone (its process exited, its connection closed).
    pub(super) fn alive(&self) -> bool {
        self.source.alive()
    }

    pub(super) fn tools(&self) -> Arc<Vec<Tool>> {
        self.tools.lock().map(|t| t.clone()).unwrap_or_default()
    }

    pub(super) fn auth_failure(&self) -> Option<String> {
        self.source.auth_failure()
    }

    /// Lists the tools again if the source announced a change.
    pub(super) async fn refresh(
        &self,
        server: &str,
        redactor: &Redactor,
        definitions: &super::definitions::Definitions,
    ) {
        if !self.source.take_stale() {
            return;
        }
        match self.source.list_tools().await {
            Ok(tools) => {
                tracing::info!(server, tools = tools.len(), "upstream tool list changed");
                if let Ok(mut t) = self.tools.lock() {
                    let tools = redact::tools(redactor, tools);
                    let tools = retain_visible(self.filter.as_ref(), server, tools);
                    *t = Arc::new(definitions.observe(server, tools));
                }
            }
            Err(e) => {
                tracing::warn!(server, "refetching the changed tool list failed: {e}");
                self.source.mark_stale();
            }
        }
    }
}
