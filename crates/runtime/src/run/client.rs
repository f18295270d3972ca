//! The client that asked for an execution, as the execution sees it while it runs: progress
//! notifications, and questions (approvals, model calls, an upstream's requests) that travel
//! inline or, on 2026-07-28, as an [`Ask`] to the request that serves the call (see
//! `runtime::live::paused`).

use serde_json::Value;
use tokio::sync::oneshot;

/// One question for the client: a JSON-RPC request without id (`{"method", "params"}`), and
/// where its answer (the client's result, or `null` when none came) goes.
#[derive(Debug)]
pub struct Ask {
    pub request: Value,
    pub reply: oneshot::Sender<Value>,
}

/// The client that asked for an execution, reachable while it runs: notifications (progress
/// while the execution waits) and questions (approvals, model calls, an upstream's requests).
#[derive(Clone)]
pub struct ClientLink {
    pub peer: rmcp::Peer<rmcp::RoleServer>,
    /// The request's `_meta.progressToken`: progress is sent only when the client asked.
    pub progress_token: Option<rmcp::model::ProgressToken>,
    /// How a question reaches the client.
    pub route: InputRoute,
    /// What the client declared it can answer.
    pub caps: ClientCaps,
}

/// How questions reach the requesting client, by protocol generation.
#[derive(Clone)]
pub enum InputRoute {
    /// Before 2026-07-28: a request to the client while the `tools/call` is open.
    Inline,
    /// 2026-07-28: the `tools/call` answers `input_required` (see `runtime::paused`).
    Mrtr(tokio::sync::mpsc::Sender<Ask>),
}

/// The client capabilities questions need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCaps {
    pub elicitation: bool,
    pub sampling: bool,
    pub roots: bool,
}

/// Why a question got no answer.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("the client did not declare the {0} capability")]
    Unsupported(&'static str),
    #[error("the client's answer did not come within {0} ms")]
    Timeout(u128),
    #[error("the client could not answer: {0}")]
    Failed(String),
}

impl ClientLink {
    /// Tells the client, when it asked for progress, what the execution is waiting for. Sent
    /// in the background: a slow client never holds the execution up.
    pub fn waiting(&self, message: &str) {
        let Some(token) = self.progress_token.clone() else {
            return;
        };
        let peer = self.peer.clone();
        let param = rmcp::model::ProgressNotificationParam::new(token, 0.0)
            .with_message(message.to_string());
        tokio::spawn(async move {
            if let Err(e) = peer.notify_progress(param).await {
                tracing::debug!("cannot send progress to the client: {e}");
            }
        });
    }

    /// Asks the client `request` (`{"method", "params"}` of `elicitation/create`,
    /// `sampling/createMessage` or `roots/list`) and waits at most `timeout` for the result.
    pub async fn ask(
        &self,
        request: Value,
        timeout: std::time::Duration,
    ) -> Result<Value, AskError> {
        let method = request["method"].as_str().unwrap_or_default();
        let (cap, declared) = match method {
            "elicitation/create" => ("elicitation", self.caps.elicitation),
            "sampling/createMessage" => ("sampling", self.caps.sampling),
            "roots/list" => ("roots", self.caps.roots),
            _ => return Err(AskError::Failed(format!("internal: cannot ask {method}"))),
        };
        if !declared {
            return Err(AskError::Unsupported(cap));
        }
        let answer = async {
            match &self.route {
                InputRoute::Inline => {
                    let request: rmcp::model::ServerRequest = serde_json::from_value(request)
                        .map_err(|e| AskError::Failed(format!("internal: {e}")))?;
                    let result = self
                        .peer
                        .send_request(request)
                        .await
                        .map_err(|e| AskError::Failed(e.to_string()))?;
                    serde_json::to_value(result).map_err(|e| AskError::Failed(e.to_string()))
                }
                InputRoute::Mrtr(asks) => {
                    let (reply, answer) = tokio::sync::oneshot::channel();
                    asks.send(Ask { request, reply }).await.map_err(|_| {
                        AskError::Failed("the request that could carry the question ended".into())
                    })?;
                    match answer.await {
                        Ok(Value::Null) | Err(_) => Err(AskError::Failed(
                            "the client's retry carried no answer to the question".into(),
                        )),
                        Ok(v) => Ok(v),
                    }
                }
            }
        };
        match tokio::time::timeout(timeout, answer).await {
            Ok(r) => r,
            Err(_) => Err(AskError::Timeout(timeout.as_millis())),
        }
    }
}
