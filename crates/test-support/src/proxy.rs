//! A small reverse proxy in front of several replicas of the server, as a load balancer or an
//! ingress would be (docs/kubernetes.md, "Replicas and affinity"):
//!
//! - a request that carries an affinity key goes to the replica it names: a handle in the
//!   `Mcp-Name` header (a task's id, for `tasks/get`, `tasks/cancel`) or in the JSON-RPC body
//!   (a session `s_…`, a `requestState`, a task or `wait` handle `run-…`), whose 128 random
//!   bits in hex are followed by `@` and the replica's id;
//! - a request with an `Mcp-Session-Id` (the 2025-11-25 transport session) goes where the
//!   answer that opened it came from (learned from responses, like a sticky table);
//! - anything else goes round robin;
//! - a replica that cannot be reached is skipped for the next one (as `proxy_next_upstream`
//!   does), so a request pinned to a dead replica reaches a live one, which says whose handle
//!   it was.
//!
//! Responses stream through (SSE included). Each response says which replica answered in
//! `X-Routed-To`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

type Body = BoxBody<Bytes, std::io::Error>;

/// One replica behind the proxy: its id (as in `--replica-id`) and its base URL.
#[derive(Debug, Clone)]
pub struct Backend {
    pub name: String,
    pub base: String,
}

struct Shared {
    backends: Vec<Backend>,
    next: AtomicUsize,
    /// Mcp-Session-Id -> backend index.
    sticky: Mutex<HashMap<String, usize>>,
    client: reqwest::Client,
}

/// The proxy; stops when dropped.
pub struct Proxy {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// `http://127.0.0.1:PORT/mcp`
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Listens on a free loopback port in front of `backends`.
    pub async fn start(backends: Vec<Backend>) -> Proxy {
        crate::tls::install_tls_provider();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let shared = Arc::new(Shared {
            backends,
            next: AtomicUsize::new(0),
            sticky: Mutex::default(),
            client: reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("proxy client"),
        });
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let shared = shared.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let shared = shared.clone();
                        async move { Ok::<_, Infallible>(forward(&shared, req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        let base = format!("http://127.0.0.1:{port}");
        Proxy {
            url: format!("{base}/mcp"),
            base,
            task,
        }
    }
}

/// The replica id a body names: the first `@ID` right after 32 hex digits, when `ID` is one
/// of `names`.
pub fn affinity_key<'a>(body: &[u8], names: &'a [String]) -> Option<&'a str> {
    for (i, _) in body.iter().enumerate().filter(|(_, b)| **b == b'@') {
        if i < 32 || !body[i - 32..i].iter().all(u8::is_ascii_hexdigit) {
            continue;
        }
        let id: Vec<u8> = body[i + 1..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_'))
            .copied()
            .collect();
        if let Some(name) = names.iter().find(|n| n.as_bytes() == id.as_slice()) {
            return Some(name);
        }
    }
    None
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    Response::builder()
        .status(status)
        .body(
            Full::new(Bytes::from(text.to_string()))
                .map_err(|e: Infallible| match e {})
                .boxed(),
        )
        .expect("response")
}

async fn forward(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
        return plain(StatusCode::BAD_REQUEST, "unreadable request body");
    };
    let names: Vec<String> = shared.backends.iter().map(|b| b.name.clone()).collect();
    let n = shared.backends.len();
    let session = parts
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    // The key in Mcp-Name (a task's id, SEP-2663), else anywhere in the body.
    let header_key = parts
        .headers
        .get("mcp-name")
        .and_then(|v| affinity_key(v.as_bytes(), &names));
    let first = if let Some(key) = header_key.or_else(|| affinity_key(&body, &names)) {
        names.iter().position(|n| n == key).unwrap_or(0)
    } else if let Some(i) = session
        .as_ref()
        .and_then(|s| shared.sticky.lock().ok()?.get(s).copied())
    {
        i
    } else {
        shared.next.fetch_add(1, Ordering::Relaxed) % n
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    for attempt in 0..n {
        let i = (first + attempt) % n;
        let backend = &shared.backends[i];
        let mut out = shared
            .client
            .request(parts.method.clone(), format!("{}{path}", backend.base));
        for (name, value) in &parts.headers {
            if !matches!(
                name.as_str(),
                "host" | "content-length" | "connection" | "transfer-encoding"
            ) {
                out = out.header(name, value);
            }
        }
        let answer = match out.body(body.clone()).send().await {
            Ok(a) => a,
            // Not reachable: the next replica (the request never arrived, so none ran it).
            Err(e) if e.is_connect() => continue,
            Err(e) => return plain(StatusCode::BAD_GATEWAY, &format!("{}: {e}", backend.name)),
        };
        if let Some(id) = answer
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            && let Ok(mut sticky) = shared.sticky.lock()
        {
            sticky.insert(id.to_string(), i);
        }
        let mut response = Response::builder().status(answer.status());
        for (name, value) in answer.headers() {
            if !matches!(
                name.as_str(),
                "content-length" | "connection" | "transfer-encoding"
            ) {
                response = response.header(name, value);
            }
        }
        response = response.header("x-routed-to", backend.name.as_str());
        let stream = answer
            .bytes_stream()
            .map(|chunk| chunk.map(Frame::data).map_err(std::io::Error::other));
        return response
            .body(BodyExt::boxed(StreamBody::new(stream)))
            .expect("response");
    }
    plain(StatusCode::BAD_GATEWAY, "no replica is reachable")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_affinity_key_is_a_known_replica_after_a_handles_random_part() {
        let names = vec!["r0".to_string(), "r1".to_string()];
        let hex = "0123456789abcdef0123456789abcdef";
        let body = format!(r#"{{"arguments":{{"session":"s_{hex}@r1"}}}}"#);
        assert_eq!(affinity_key(body.as_bytes(), &names), Some("r1"));
        let body = format!(r#"{{"requestState":"{hex}@r0"}}"#);
        assert_eq!(affinity_key(body.as_bytes(), &names), Some("r0"));
        // Not after 32 hex digits, or not a known replica: no key.
        assert_eq!(affinity_key(br#"{"a":"me@r1"}"#, &names), None);
        let body = format!(r#"{{"taskId":"run-{hex}@r9"}}"#);
        assert_eq!(affinity_key(body.as_bytes(), &names), None);
        // A longer id is not a prefix match.
        let body = format!(r#"{{"taskId":"run-{hex}@r10"}}"#);
        assert_eq!(affinity_key(body.as_bytes(), &names), None);
    }
}
