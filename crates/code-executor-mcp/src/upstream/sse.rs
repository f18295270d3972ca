//! The legacy HTTP+SSE transport (MCP 2024-11-05), for servers that only speak that: a GET
//! opens an event stream whose first `endpoint` event names the URL to POST messages to;
//! answers arrive as `message` events on the stream. Every request carries the stored OAuth
//! token, if any ([`SseAuth`]).

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;

use futures::{Sink, Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use sse_stream::SseStream;

use crate::oauth::SseAuth;

/// Why the SSE transport failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SseError(String);

pub type SseSink = Pin<Box<dyn Sink<ClientJsonRpcMessage, Error = SseError> + Send>>;
pub type SseMessages = Pin<Box<dyn Stream<Item = ServerJsonRpcMessage> + Send>>;

fn header_map(headers: &BTreeMap<String, String>) -> Result<reqwest::header::HeaderMap, String> {
    let mut map = reqwest::header::HeaderMap::new();
    for (k, v) in headers {
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|e| format!("header name {k:?}: {e}"))?;
        let value =
            reqwest::header::HeaderValue::from_str(v).map_err(|e| format!("header {k}: {e}"))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// Opens the event stream, waits for the `endpoint` event, and returns the message sink and
/// stream that rmcp runs a client session over.
pub async fn connect(
    url: &str,
    headers: &BTreeMap<String, String>,
    auth: SseAuth,
) -> Result<(SseSink, SseMessages), String> {
    let headers = header_map(headers)?;
    let auth = Arc::new(auth);
    let client = reqwest::Client::builder()
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let response = auth
        .send(|token| {
            let r = client
                .get(url)
                .headers(headers.clone())
                .header(reqwest::header::ACCEPT, "text/event-stream");
            match token {
                Some(t) => r.bearer_auth(t),
                None => r,
            }
        })
        .await
        .map_err(|e| format!("GET {url}: {e}"))?
        .error_for_status()
        .map_err(|e| format!("GET {url}: {e}"))?;
    let base = response.url().clone();
    let mut events = SseStream::from_bytes_stream(response.bytes_stream());
    let endpoint = loop {
        match events.next().await {
            Some(Ok(e)) if e.event.as_deref() == Some("endpoint") => {
                break e.data.unwrap_or_default();
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(format!("event stream: {e}")),
            None => return Err("the event stream ended before its `endpoint` event".into()),
        }
    };
    let post_url = base
        .join(endpoint.trim())
        .map_err(|e| format!("endpoint {endpoint:?}: {e}"))?;
    if post_url.origin() != base.origin() {
        return Err(format!(
            "the server named a message endpoint on another origin ({post_url}); refused"
        ));
    }
    let messages = events.filter_map(|event| async move {
        match event {
            Ok(e) if matches!(e.event.as_deref(), None | Some("message")) => {
                let data = e.data?;
                match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                    Ok(m) => Some(m),
                    Err(err) => {
                        tracing::warn!("SSE upstream sent an unreadable message: {err}");
                        None
                    }
                }
            }
            _ => None,
        }
    });
    let sink = futures::sink::unfold(
        (client, post_url, headers, auth),
        |(client, url, headers, auth), message: ClientJsonRpcMessage| async move {
            auth.send(|token| {
                let r = client
                    .post(url.clone())
                    .headers(headers.clone())
                    .json(&message);
                match token {
                    Some(t) => r.bearer_auth(t),
                    None => r,
                }
            })
            .await
            .map_err(|e| SseError(format!("POST {url}: {e}")))?
            .error_for_status()
            .map_err(|e| SseError(format!("POST {url}: {e}")))?;
            Ok::<_, SseError>((client, url, headers, auth))
        },
    );
    Ok((Box::pin(sink), Box::pin(messages)))
}
