//! The legacy HTTP+SSE transport (MCP 2024-11-05), for servers that only speak that: a GET
//! opens an event stream whose first `endpoint` event names the URL to POST messages to;
//! answers arrive as `message` events on the stream. Every request carries the stored OAuth
//! token, if any ([`SseAuth`]).

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;

use futures::{Sink, Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ErrorData, RequestId, ServerJsonRpcMessage};
use sse_stream::SseStream;

use super::error::TransportError;
use crate::lines::shape;
use crate::oauth::SseAuth;

/// Why the SSE transport failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SseError(String);

pub type SseSink = Pin<Box<dyn Sink<ClientJsonRpcMessage, Error = SseError> + Send>>;
pub type SseMessages = Pin<Box<dyn Stream<Item = ServerJsonRpcMessage> + Send>>;

fn header_map(
    headers: &BTreeMap<String, String>,
) -> Result<reqwest::header::HeaderMap, TransportError> {
    let mut map = reqwest::header::HeaderMap::new();
    for (k, v) in headers {
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes()).map_err(|error| {
            TransportError::HeaderName {
                name: k.clone(),
                error,
            }
        })?;
        let value = reqwest::header::HeaderValue::from_str(v).map_err(|error| {
            TransportError::HeaderValue {
                name: k.clone(),
                error,
            }
        })?;
        map.insert(name, value);
    }
    Ok(map)
}

/// Ends the byte stream with an error once one event grows past `max` bytes, so a server
/// cannot make us buffer without bound; the session then ends and its calls fail.
fn bounded<S, D, E>(stream: S, max: usize) -> impl Stream<Item = Result<D, SseError>> + Send
where
    S: Stream<Item = Result<D, E>> + Send + 'static,
    D: AsRef<[u8]> + Send + 'static,
    E: std::fmt::Display,
{
    // (bytes in the current event, the last byte ended a line, failed)
    stream
        .scan(
            (0usize, false, false),
            move |(size, at_line_end, failed), chunk| {
                if *failed {
                    return futures::future::ready(None);
                }
                let item = match chunk {
                    Err(e) => Err(SseError(format!("event stream: {e}"))),
                    Ok(data) => {
                        for &b in data.as_ref() {
                            match b {
                                b'\r' => {}
                                b'\n' if *at_line_end => *size = 0, // a blank line ends the event
                                b'\n' => *at_line_end = true,
                                _ => {
                                    *at_line_end = false;
                                    *size += 1;
                                }
                            }
                        }
                        if *size > max {
                            *failed = true;
                            Err(SseError(format!(
                                "an event from the server is over the {max}-byte limit \
                             (maxResultBytes plus 64 KiB); the connection was closed"
                            )))
                        } else {
                            Ok(data)
                        }
                    }
                };
                futures::future::ready(Some(item))
            },
        )
        .boxed()
}

/// What an event refused for its shape comes to: an answer becomes an error answer with its
/// id (its call fails at once, saying why); anything else is dropped.
fn refused(data: &[u8], why: shape::ShapeError) -> Option<ServerJsonRpcMessage> {
    let mut scan = shape::Scanner::default();
    scan.feed_all(data);
    let message = format!(
        "the server's message {why}; it was dropped unread. {}",
        super::cap::OVERSIZED_HINT
    );
    tracing::warn!("SSE upstream: {message}");
    if scan.has_method() {
        return None;
    }
    let id = serde_json::from_value::<RequestId>(scan.id()?).ok()?;
    Some(ServerJsonRpcMessage::error(
        ErrorData::internal_error(message, None),
        Some(id),
    ))
}

/// Opens the event stream, waits for the `endpoint` event, and returns the message sink and
/// stream that rmcp runs a client session over.
pub async fn connect(
    url: &str,
    headers: &BTreeMap<String, String>,
    auth: SseAuth,
    max_event: usize,
) -> Result<(SseSink, SseMessages), TransportError> {
    let headers = header_map(headers)?;
    let auth = Arc::new(auth);
    let client = reqwest::Client::builder()
        .build()
        .map_err(TransportError::Client)?;
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
        .map_err(|error| TransportError::Get {
            url: url.to_string(),
            error: Box::new(error),
        })?
        .error_for_status()
        .map_err(|error| TransportError::Get {
            url: url.to_string(),
            error: Box::new(error.into()),
        })?;
    let base = response.url().clone();
    let mut events = SseStream::from_bytes_stream(bounded(response.bytes_stream(), max_event));
    let endpoint = loop {
        match events.next().await {
            Some(Ok(e)) if e.event.as_deref() == Some("endpoint") => {
                break e.data.unwrap_or_default();
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(TransportError::EventStream(e.to_string())),
            None => return Err(TransportError::NoEndpoint),
        }
    };
    let post_url = base
        .join(endpoint.trim())
        .map_err(|error| TransportError::Endpoint {
            endpoint: endpoint.clone(),
            error,
        })?;
    if post_url.origin() != base.origin() {
        return Err(TransportError::OtherOrigin(post_url.to_string()));
    }
    let messages = events.filter_map(|event| async move {
        match event {
            Ok(e) if matches!(e.event.as_deref(), None | Some("message")) => {
                let data = e.data?;
                if data.len() >= shape::SHAPE_CHECKED_BYTES
                    && let Err(why) = shape::check(data.as_bytes())
                {
                    return refused(data.as_bytes(), why);
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(chunks: &[&'static str], max: usize) -> Vec<Result<String, String>> {
        let chunks: Vec<Result<&'static [u8], SseError>> =
            chunks.iter().map(|c| Ok(c.as_bytes())).collect();
        bounded(futures::stream::iter(chunks), max)
            .map(|r| {
                r.map(|d| String::from_utf8_lossy(d).into_owned())
                    .map_err(|e| e.to_string())
            })
            .collect()
            .await
    }

    #[tokio::test]
    async fn events_within_the_limit_pass_and_a_larger_one_ends_the_stream() {
        let ok = run(&["data: 12345\n\n", "data: 1234", "5\r\n\r\n"], 12).await;
        assert_eq!(ok.len(), 3);
        assert!(ok.iter().all(Result::is_ok));
        let over = run(&["data: 1234", "56789\n", "data: x\n\n", "data: y\n\n"], 12).await;
        assert_eq!(over.len(), 2, "{over:?}");
        assert!(over[1].as_ref().unwrap_err().contains("12-byte limit"));
    }
}
