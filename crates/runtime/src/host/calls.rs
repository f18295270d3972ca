//! What each upstream call from code has beside it: its audit line ([`CallRecord`], written
//! once whatever becomes of the call) and the relay of the upstream's own requests during it
//! to the execution's client ([`Relay`]).

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::Value;

use super::scope::RunScope;
use crate::run::client::ClientLink;
use crate::run::clock::Clock;
use policy::audit::AuditEvent;

/// Answers an upstream's requests during a call of this execution through its client; the
/// clock stands still while the client (a person, often) answers.
pub(super) struct Relay {
    pub(super) client: ClientLink,
    pub(super) clock: Arc<Clock>,
    pub(super) timeout: std::time::Duration,
}

impl tools::upstream::forward::Forward for Relay {
    fn ask(&self, request: Value) -> BoxFuture<'_, Result<Value, rmcp::ErrorData>> {
        Box::pin(async move {
            let _paused = self.clock.pause();
            self.client
                .ask(request, self.timeout)
                .await
                .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
        })
    }

    fn has_roots(&self) -> bool {
        self.client.caps.roots
    }
}

/// The audit line of one call attempt. An allowed call that never finished (its execution
/// ended or timed out while it waited for a slot or for the upstream, which cancels it) is
/// recorded as `cancelled` when it is dropped, so every attempt has exactly one line.
pub(super) struct CallRecord<'a> {
    pub(super) scope: &'a RunScope,
    pub(super) server: String,
    pub(super) tool: String,
    pub(super) started: Instant,
    pub(super) digest: policy::audit::ArgsDigest,
    pub(super) args: Option<Value>,
    /// Allowed and not yet recorded.
    pub(super) allowed: bool,
}

impl CallRecord<'_> {
    pub(super) fn write(
        &mut self,
        decision: &'static str,
        reason: Option<String>,
        outcome: Option<&'static str>,
        result_bytes: usize,
    ) {
        self.allowed = false;
        let (args_sha256, args_bytes) = self.digest.take();
        self.scope.policy.audit.record(AuditEvent::ToolCall {
            execution: self.scope.execution.clone(),
            server: self.server.clone(),
            tool: self.tool.clone(),
            decision,
            reason,
            outcome,
            duration_ms: (self.started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
            args_sha256,
            args_bytes,
            args: self.args.take(),
            result_bytes,
        });
    }
}

impl Drop for CallRecord<'_> {
    fn drop(&mut self) {
        if self.allowed {
            self.write(
                "allow",
                Some("the execution ended before the call finished; it was cancelled".into()),
                Some("cancelled"),
                0,
            );
        }
    }
}
