//! The protected resource of the mock (`super`'s docs): RFC 9728 metadata, a 401 with a
//! `WWW-Authenticate` challenge for every MCP request without a valid bearer token, and the
//! [`Fixture`] MCP server behind it, over streamable HTTP at `/mcp` and over the legacy
//! HTTP+SSE transport at `/sse` (messages POSTed to `/messages?session=N`).

use std::convert::Infallible;
use std::time::Instant;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde_json::json;

use super::shared::{Body, Ctx, query_pairs, reply};
use crate::fixture::Fixture;

pub(super) async fn resource(ctx: &Ctx, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_string();
    if req.method() == "GET" {
        let described = match path.as_str() {
            "/.well-known/oauth-protected-resource" => Some("/mcp"),
            p => p
                .strip_prefix("/.well-known/oauth-protected-resource")
                .filter(|r| matches!(*r, "/mcp" | "/sse")),
        };
        if let Some(resource) = described {
            return reply(
                StatusCode::OK,
                json!({
                    "resource": format!("{}{resource}", ctx.rs_base),
                    "authorization_servers": [ctx.issuer],
                    "scopes_supported": ctx.opts.scopes,
                    "bearer_methods_supported": ["header"],
                }),
            );
        }
    }
    // `/messages` belongs to the SSE resource.
    let resource_path = match path.as_str() {
        "/mcp" => "/mcp",
        "/sse" | "/messages" => "/sse",
        _ => return reply(StatusCode::NOT_FOUND, json!({"error": "not_found"})),
    };
    let token = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let valid = {
        let mut s = ctx.state.lock().expect("state");
        let ok = token
            .as_ref()
            .and_then(|t| s.access.get(t))
            .is_some_and(|g| g.expires > Instant::now());
        if ok {
            let t = token.clone().unwrap_or_default();
            if !s.accepted.contains(&t) {
                s.accepted.push(t);
            }
        } else {
            s.events.push("mcp:401".into());
        }
        ok
    };
    if !valid {
        let error = if token.is_some() {
            ", error=\"invalid_token\""
        } else {
            ""
        };
        return Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .header(
                "www-authenticate",
                format!(
                    "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource{resource_path}\", scope=\"{}\"{error}",
                    ctx.rs_base,
                    ctx.opts.scopes.join(" ")
                ),
            )
            .body(Full::new(Bytes::new()).boxed())
            .expect("response");
    }
    match path.as_str() {
        "/sse" => sse_stream(ctx),
        "/messages" => sse_message(ctx, req).await,
        _ => {
            let mut mcp = ctx.mcp.clone();
            match tower_service::Service::call(&mut mcp, req).await {
                Ok(r) => r,
                Err(never) => match never {},
            }
        }
    }
}

#[derive(Debug)]
struct Closed;

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the SSE stream is closed")
    }
}

impl std::error::Error for Closed {}

/// Opens a legacy SSE session: the `endpoint` event, then the server's messages.
fn sse_stream(ctx: &Ctx) -> Response<Body> {
    let (to_server, from_client) = tokio::sync::mpsc::unbounded_channel::<ClientJsonRpcMessage>();
    let (to_client, mut for_client) =
        tokio::sync::mpsc::unbounded_channel::<ServerJsonRpcMessage>();
    let session = {
        let mut s = ctx.state.lock().expect("state");
        s.next += 1;
        s.next
    };
    ctx.sse_sessions
        .lock()
        .expect("sessions")
        .insert(session, to_server);
    let sink = futures::sink::unfold(to_client, |tx, m: ServerJsonRpcMessage| async move {
        tx.send(m).map_err(|_| Closed)?;
        Ok::<_, Closed>(tx)
    });
    let stream = futures::stream::unfold(from_client, |mut rx| async move {
        rx.recv().await.map(|m| (m, rx))
    });
    tokio::spawn(async move {
        if let Ok(service) = Fixture::new("secure")
            .serve((Box::pin(sink), Box::pin(stream)))
            .await
        {
            let _ = service.waiting().await;
        }
    });
    let first = format!("event: endpoint\ndata: /messages?session={session}\n\n");
    let events =
        futures::stream::once(async move { first }).chain(futures::stream::poll_fn(move |cx| {
            for_client.poll_recv(cx).map(|m| {
                m.map(|m| {
                    format!(
                        "event: message\ndata: {}\n\n",
                        serde_json::to_string(&m).unwrap_or_default()
                    )
                })
            })
        }));
    let body = http_body_util::StreamBody::new(
        events.map(|e| Ok::<_, Infallible>(hyper::body::Frame::data(Bytes::from(e)))),
    );
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-store")
        .body(BodyExt::boxed(body))
        .expect("response")
}

/// A message POSTed to a legacy SSE session.
async fn sse_message(ctx: &Ctx, req: Request<Incoming>) -> Response<Body> {
    let session: Option<u64> = query_pairs(req.uri().query())
        .get("session")
        .and_then(|s| s.parse().ok());
    let tx = session.and_then(|s| ctx.sse_sessions.lock().expect("sessions").get(&s).cloned());
    let Some(tx) = tx else {
        return reply(StatusCode::NOT_FOUND, json!({"error": "no such session"}));
    };
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let sent = serde_json::from_slice::<ClientJsonRpcMessage>(&body)
        .ok()
        .is_some_and(|m| tx.send(m).is_ok());
    if !sent {
        return reply(StatusCode::BAD_REQUEST, json!({"error": "bad message"}));
    }
    Response::builder()
        .status(StatusCode::ACCEPTED)
        .body(Full::new(Bytes::new()).boxed())
        .expect("response")
}
