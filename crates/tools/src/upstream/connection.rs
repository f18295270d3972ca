//! One live connection to an upstream server: its rmcp service, its tool list (refetched when
//! the server says it changed), and why it last refused our authorization.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::RoleClient;
use rmcp::handler::client::progress::ProgressDispatcher;
use rmcp::model::Tool;
use rmcp::service::RunningService;

use super::handler::Handler;
use super::redact;
use crate::oauth::AuthWatch;
use policy::filter::{ToolFilter, retain_visible};
use policy::redact::Redactor;

pub(super) struct Connection {
    pub(super) service: RunningService<RoleClient, Handler>,
    pub(super) tools: std::sync::Mutex<Arc<Vec<Tool>>>,
    pub(super) stale: Arc<AtomicBool>,
    /// HTTP and SSE connections: why the server last refused our authorization.
    pub(super) auth: Option<Arc<AuthWatch>>,
    /// The tools the entry's client config hides, dropped from every list as it arrives.
    pub(super) filter: Option<ToolFilter>,
    /// The handler's progress routes: a call that passes progress on subscribes here.
    pub(super) progress: ProgressDispatcher,
}

impl Connection {
    /// False once the server process exited or its pipe closed.
    pub(super) fn alive(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }

    pub(super) fn tools(&self) -> Arc<Vec<Tool>> {
        self.tools.lock().map(|t| t.clone()).unwrap_or_default()
    }

    pub(super) fn auth_failure(&self) -> Option<String> {
        self.auth.as_ref().and_then(|w| w.failure())
    }

    /// Refetches the tool list if the server announced a change.
    pub(super) async fn refresh(
        &self,
        server: &str,
        redactor: &Redactor,
        definitions: &super::definitions::Definitions,
    ) {
        if !self.stale.swap(false, Ordering::AcqRel) {
            return;
        }
        match self.service.peer().list_all_tools().await {
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
                self.stale.store(true, Ordering::Release);
            }
        }
    }
}
