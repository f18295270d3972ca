//! The `/mcp` endpoint: the caller authenticated, its transport session checked, the body
//! read within its caps, then rmcp's service; a `tools/call` whose client went away is
//! cancelled.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::{Value, json};

use super::auth::AuthError;
use super::guard::{self, SessionUse};
use super::reply::{Body, busy, full, json_response, rpc_error};
use super::shim;
use super::state::{State, prune_sessions};
use policy::principal::Principal;

pub(super) fn unauthorized(state: &State, err: &AuthError) -> Response<Body> {
    let reason = match err {
        AuthError::Missing => "missing",
        AuthError::InvalidToken(_) => "invalid_token",
        AuthError::InsufficientScope(_) => "insufficient_scope",
    };
    state.metrics.auth_failure(reason);
    let quote = |s: &str| s.replace(['"', '\\'], "'");
    let mut challenge = String::from("Bearer realm=\"code-executor-mcp\"");
    match err {
        AuthError::Missing => {}
        AuthError::InvalidToken(why) => challenge.push_str(&format!(
            ", error=\"invalid_token\", error_description=\"{}\"",
            quote(why)
        )),
        AuthError::InsufficientScope(scopes) => challenge.push_str(&format!(
            ", error=\"insufficient_scope\", scope=\"{}\"",
            quote(scopes)
        )),
    }
    if let Some((url, _)) = &state.resource {
        challenge.push_str(&format!(", resource_metadata=\"{url}\""));
    }
    let status = match err {
        AuthError::InsufficientScope(_) => StatusCode::FORBIDDEN,
        _ => StatusCode::UNAUTHORIZED,
    };
    let mut r = rpc_error(status, -32001, &err.to_string());
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    r
}

/// Largest plain-text refusal body of rmcp's read to become a JSON-RPC error message.
const MAX_PLAIN_REFUSAL_BYTES: u64 = 4096;

/// The JSON-RPC error code of a refusal with this HTTP status (docs/http.md, "Errors"),
/// the codes the MCP SDKs use for the same refusals.
fn rpc_code(status: StatusCode) -> i64 {
    match status.as_u16() {
        400 | 408 | 413 | 422 => -32600,
        401 | 403 => -32001,
        404 => -32001,
        500..=599 => -32603,
        _ => -32000,
    }
}

/// Every refusal of `/mcp` is a JSON-RPC error (`Content-Type: application/json`, `"id":
/// null`) with its HTTP status and headers (`Allow`, `WWW-Authenticate`, ...): rmcp answers
/// some (405, 406, 415, 400 for headers, 404 for an unknown session) in plain text, whose
/// text becomes the error's message. A JSON answer, or a success, passes as it is.
async fn as_rpc_error(r: Response<Body>) -> Response<Body> {
    let status = r.status();
    let is_json = r
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"));
    if status.is_success()
        || status.is_informational()
        || is_json
        || hyper::body::Body::size_hint(r.body())
            .upper()
            .is_none_or(|n| n > MAX_PLAIN_REFUSAL_BYTES)
    {
        return r;
    }
    let (mut parts, old) = r.into_parts();
    let text = old
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let message = String::from_utf8_lossy(&text).trim().to_string();
    let message = if message.is_empty() {
        status.canonical_reason().unwrap_or("refused").to_string()
    } else {
        message
    };
    let v = json!({"jsonrpc": "2.0", "id": null, "error": {"code": rpc_code(status), "message": message}});
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, full(v.to_string()))
}

/// The method and id of a JSON-RPC request body (not of a batch or a notification).
fn head_of(body: &[u8]) -> (Option<String>, Option<Value>) {
    #[derive(serde::Deserialize)]
    struct Head {
        method: Option<String>,
        id: Option<Value>,
    }
    match serde_json::from_slice::<Head>(body) {
        Ok(h) => (h.method, h.id),
        Err(_) => (None, None),
    }
}

/// A response body that runs `on_drop` if it is dropped before its end: the client went
/// away while the answer was still being produced.
struct CancelOnDrop {
    inner: Body,
    ended: bool,
    on_drop: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl hyper::body::Body for CancelOnDrop {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_frame(cx);
        if let std::task::Poll::Ready(None) = polled {
            self.ended = true;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.ended
            && let Some(f) = self.on_drop.take()
        {
            f();
        }
    }
}

/// In a transport session (2025-11-25) rmcp keeps a request running when its response stream
/// is dropped (a client could resume it). A `tools/call` whose client went away is cancelled
/// instead, as if the client had sent `notifications/cancelled`: its execution stops and its
/// worker is killed rather than running to its deadline for nobody.
fn cancel_when_abandoned(
    state: &Arc<State>,
    session: String,
    id: Value,
    response: Response<Body>,
) -> Response<Body> {
    let manager = state.session_manager.clone();
    let (parts, body) = response.into_parts();
    let on_drop = Box::new(move || {
        let note = json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "the client disconnected"}
        });
        let Ok(message) = serde_json::from_value(note) else {
            return;
        };
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                use rmcp::transport::streamable_http_server::SessionManager;
                let sid: rmcp::transport::streamable_http_server::SessionId = session.into();
                if let Err(e) = manager.accept_message(&sid, message).await {
                    tracing::debug!("cancelling an abandoned request: {e}");
                }
            });
        }
    });
    Response::from_parts(
        parts,
        BodyExt::boxed(CancelOnDrop {
            inner: body,
            ended: false,
            on_drop: Some(on_drop),
        }),
    )
}

pub(super) async fn mcp(state: &Arc<State>, req: Request<Incoming>) -> Response<Body> {
    if state.shutting_down.load(Ordering::SeqCst) {
        let mut r = rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            -32000,
            "the server is shutting down",
        );
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return r;
    }
    let (mut parts, body) = req.into_parts();
    let principal: Option<Principal> = if state.require_auth {
        let value = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        match state.auth.authenticate(value).await {
            Ok(p) => Some(p),
            Err(e) => return unauthorized(state, &e),
        }
    } else {
        None
    };
    // Nothing past this point sees the caller's credentials.
    parts.headers.remove(header::AUTHORIZATION);
    parts.headers.remove(header::COOKIE);
    if let Some(p) = &principal {
        parts.extensions.insert(p.clone());
    }
    let session = parts
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if let Some(id) = &session
        && state.transport.check(id, principal.as_ref()) == SessionUse::Foreign
    {
        // Byte for byte our answer for a session that does not exist (rmcp's, made JSON-RPC).
        let mut r = Response::new(full("Not Found: Session not found"));
        *r.status_mut() = StatusCode::NOT_FOUND;
        return as_rpc_error(r).await;
    }
    let bytes = if parts.method == Method::POST {
        let limited = Limited::new(body, state.limits.max_body_bytes);
        match tokio::time::timeout(state.limits.body_timeout, limited.collect()).await {
            Err(_) => {
                let mut r = rpc_error(
                    StatusCode::REQUEST_TIMEOUT,
                    -32600,
                    &format!(
                        "the request body did not arrive within {} s",
                        state.limits.body_timeout.as_secs()
                    ),
                );
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                return r;
            }
            Ok(Err(e)) => {
                let too_big = e
                    .downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some();
                if too_big {
                    let mut r = rpc_error(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        -32600,
                        &format!(
                            "the request body is larger than {} bytes",
                            state.limits.max_body_bytes
                        ),
                    );
                    r.headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                    return r;
                }
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    -32700,
                    &format!("cannot read the request body: {e}"),
                );
            }
            Ok(Ok(collected)) => collected.to_bytes(),
        }
    } else {
        Bytes::new()
    };
    // A body's items are counted before anything decodes it: a small body of a million
    // elements would otherwise grow the server by hundreds of MB (`lines::shape`).
    if bytes.len() >= tools::lines::shape::SHAPE_CHECKED_BYTES
        && let Err(e) = tools::lines::shape::check(&bytes)
    {
        return rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            -32600,
            &format!("the request {e}; it was not read. Send less in one request"),
        );
    }
    let declared_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    let (method, request_id) = head_of(&bytes);
    let opens_session = parts.method == Method::POST
        && session.is_none()
        && method.as_deref() == Some("initialize");
    // The 2025-11-25 task shim of the transport session (a new one for `initialize`).
    let task_shim: Option<guard::SharedShim> = if opens_session {
        Some(guard::SharedShim::default())
    } else if parts.method == Method::POST {
        session.as_deref().and_then(|id| state.transport.shim(id))
    } else {
        None
    };
    let bytes = match &task_shim {
        Some(s) => shim::inbound(s, bytes),
        None => bytes,
    };
    // A body under the right Content-Type that is not a JSON-RPC message of MCP gets JSON-RPC
    // 2.0's answer (as over stdio), where rmcp would give a 415 with a line of text: a parse
    // error, or `Invalid request` with the request's id when it can be read; a notification
    // outside MCP is accepted and ignored (202), never answered. A wrong Content-Type is
    // rmcp's 415 (made a JSON-RPC error below).
    if parts.method == Method::POST && declared_json {
        match tools::lines::classify_client_message(&bytes) {
            tools::lines::ClientMessage::Answer(answer) => {
                return json_response(StatusCode::BAD_REQUEST, &answer);
            }
            tools::lines::ClientMessage::Ignore => {
                let mut r = Response::new(full(Bytes::new()));
                *r.status_mut() = StatusCode::ACCEPTED;
                return r;
            }
            tools::lines::ClientMessage::Pass => {}
        }
    }
    if opens_session {
        if state.transport.count() >= state.limits.max_sessions {
            prune_sessions(state).await;
        }
        if state.transport.count() >= state.limits.max_sessions {
            state.metrics.busy.fetch_add(1, Ordering::Relaxed);
            return busy(&format!(
                "{} MCP sessions are open (the server's maximum); close one or retry later",
                state.limits.max_sessions
            ));
        }
        if principal.is_some()
            && state.transport.count_of(principal.as_ref())
                >= state.limits.max_sessions_per_principal
        {
            prune_sessions(state).await;
            if state.transport.count_of(principal.as_ref())
                >= state.limits.max_sessions_per_principal
            {
                state.metrics.busy.fetch_add(1, Ordering::Relaxed);
                return busy(&format!(
                    "you have {} MCP sessions open (the maximum per principal); close one (DELETE) or retry later",
                    state.limits.max_sessions_per_principal
                ));
            }
        }
    }
    let is_delete = parts.method == Method::DELETE;
    let http_method = parts.method.clone();
    let started = std::time::Instant::now();
    let req = Request::from_parts(parts, Full::new(bytes));
    let response = state.mcp.handle(req).await;
    let mut response = as_rpc_error(response).await;
    // A closed transport session is answered 200 (rmcp says 202): the official Python SDK
    // takes only 200 or 204 and logs "Session termination failed: 202" on every close.
    if is_delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    let response = shim::outbound(
        task_shim.clone(),
        state.core.policy.redactor.clone(),
        response,
    );
    // The access log (RUST_LOG=code_executor_mcp::http=debug: the target users were told,
    // kept when this module moved crates); the time is to the answer's head (a streamed
    // answer continues after it).
    tracing::debug!(
        target: "code_executor_mcp::http",
        principal = principal.as_ref().map(|p| p.to_string()),
        http = %http_method,
        method = method.as_deref().unwrap_or(""),
        status = response.status().as_u16(),
        ms = started.elapsed().as_secs_f64() * 1e3,
        "mcp request"
    );
    if opens_session
        && response.status().is_success()
        && let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
    {
        state
            .transport
            .opened(id.to_string(), principal, task_shim.unwrap_or_default());
    } else if is_delete
        && response.status().is_success()
        && let Some(id) = &session
    {
        state.transport.closed(id);
    }
    if let (Some(session), Some(id), Some("tools/call")) = (session, request_id, method.as_deref())
        && response.status() == StatusCode::OK
    {
        return cancel_when_abandoned(state, session, id, response);
    }
    response
}
