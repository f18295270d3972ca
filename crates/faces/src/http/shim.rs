//! The 2025-11-25 task shim (`server::legacy_tasks::Shim`) over streamable HTTP: the same two
//! pure rewrites as on stdio, applied to a transport session's request bodies (one JSON-RPC
//! message each) and to the messages of its answers, which come as an SSE stream (each
//! event's `data`) or as one JSON body. Each transport session has its own shim state, kept
//! with the session (`guard::TransportSessions`); stateless 2026-07-28 requests have none and
//! pass untouched. The same body rewrite redacts every message of every answer, shimmed or
//! not (`policy::redact`).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Response, header};
use http_body_util::BodyExt;
use hyper::body::Frame;

use super::guard::SharedShim;
use super::reply::Body;
use policy::redact::Redactor;

/// A request body, rewritten when the session's shim wants it.
pub(super) fn inbound(shim: &SharedShim, body: Bytes) -> Bytes {
    match shim
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .inbound(&body)
    {
        Some(rewritten) => Bytes::from(rewritten),
        None => body,
    }
}

/// The answer, with every message in it passed through the session's shim (when it has
/// one), then redacted (`policy::redact`: no configured secret reaches the client).
pub(super) fn outbound(
    shim: Option<SharedShim>,
    redactor: Arc<Redactor>,
    response: Response<Body>,
) -> Response<Body> {
    if shim.is_none() && redactor.is_empty() {
        return response;
    }
    let kind = match response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        Some(t) if t.starts_with("text/event-stream") => Kind::Sse,
        Some(t) if t.starts_with("application/json") => Kind::Json,
        _ => return response,
    };
    let (mut parts, body) = response.into_parts();
    if kind == Kind::Json {
        // The rewritten body has another length.
        parts.headers.remove(header::CONTENT_LENGTH);
    }
    Response::from_parts(
        parts,
        BodyExt::boxed(ShimBody {
            inner: body,
            shim,
            redactor,
            kind,
            buf: Vec::new(),
            scanned: 0,
            out: VecDeque::new(),
            done: false,
        }),
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sse,
    Json,
}

struct ShimBody {
    inner: Body,
    shim: Option<SharedShim>,
    redactor: Arc<Redactor>,
    kind: Kind,
    /// Bytes of an event (or of the JSON body) not yet complete.
    buf: Vec<u8>,
    /// `buf[..scanned]` holds no event's end.
    scanned: usize,
    /// Rewritten frames ready to go.
    out: VecDeque<Bytes>,
    done: bool,
}

impl ShimBody {
    fn rewrite(&self, message: &[u8]) -> Option<Vec<u8>> {
        let shimmed = self.shim.as_ref().and_then(|shim| {
            shim.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .outbound(message)
        });
        self.redactor.after_rewrite(message, shimmed)
    }

    /// Moves every complete event out of `buf`, rewritten.
    fn drain_events(&mut self) {
        // Every answer passes here now (redaction), a large result's event among them: the
        // search goes on from where the last one stopped instead of from the start.
        while let Some(end) = find(&self.buf[self.scanned..], b"\n\n").map(|e| e + self.scanned) {
            self.scanned = 0;
            let event: Vec<u8> = self.buf.drain(..end + 2).collect();
            let rewritten = rewrite_event(&event, |m| self.rewrite(m));
            self.out.push_back(Bytes::from(rewritten.unwrap_or(event)));
        }
        // A blank line's first newline may end this chunk.
        self.scanned = self.buf.len().saturating_sub(1);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// One SSE event (ending in a blank line) with its `data` rewritten by `f`; `None` when `f`
/// leaves it alone (or it has no data).
fn rewrite_event(event: &[u8], f: impl FnOnce(&[u8]) -> Option<Vec<u8>>) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(event).ok()?;
    let lines: Vec<&str> = text.trim_end_matches('\n').split('\n').collect();
    let data: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    if data.is_empty() {
        return None;
    }
    let new = f(data.join("\n").as_bytes())?;
    let new = String::from_utf8(new).ok()?;
    let mut out = String::with_capacity(event.len() + 64);
    let mut written = false;
    for l in lines {
        if l.starts_with("data:") {
            if !written {
                out.push_str("data: ");
                out.push_str(&new);
                out.push('\n');
                written = true;
            }
        } else {
            out.push_str(l);
            out.push('\n');
        }
    }
    out.push('\n');
    Some(out.into_bytes())
}

impl hyper::body::Body for ShimBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        loop {
            if let Some(b) = self.out.pop_front() {
                return Poll::Ready(Some(Ok(Frame::data(b))));
            }
            if self.done {
                return Poll::Ready(None);
            }
            match Pin::new(&mut self.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        self.buf.extend_from_slice(&data);
                        if self.kind == Kind::Sse {
                            self.drain_events();
                        }
                    }
                    Err(other) => return Poll::Ready(Some(Ok(other))),
                },
                Poll::Ready(Some(Err(never))) => match never {},
                Poll::Ready(None) => {
                    self.done = true;
                    let rest = std::mem::take(&mut self.buf);
                    if !rest.is_empty() {
                        let rewritten = match self.kind {
                            Kind::Sse => rewrite_event(&rest, |m| self.rewrite(m)),
                            Kind::Json => self.rewrite(&rest),
                        };
                        self.out.push_back(Bytes::from(rewritten.unwrap_or(rest)));
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.out.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_keeps_its_other_fields_and_gets_one_data_line() {
        let e = b"id: 7\nevent: message\ndata: {\"a\":\ndata: 1}\n\n";
        let mut seen = Vec::new();
        let out = rewrite_event(e, |m| {
            seen = m.to_vec();
            Some(b"{\"b\":2}".to_vec())
        })
        .unwrap();
        assert_eq!(seen, b"{\"a\":\n1}");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "id: 7\nevent: message\ndata: {\"b\":2}\n\n"
        );
        assert_eq!(rewrite_event(b"id: 1\n\n", |_| Some(Vec::new())), None);
        assert_eq!(rewrite_event(b"data: x\n\n", |_| None), None);
    }
}
