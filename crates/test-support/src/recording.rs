//! The [`Fixture`] MCP server over streamable HTTP on loopback, recording every HTTP request
//! it receives (method, headers, body), so a test sees exactly what a client sent it: the
//! trace context a `tools/call` carried, and that nothing else (a caller's token) came along.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio::net::TcpListener;

use crate::fixture::Fixture;

/// One HTTP request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Every header, names in lowercase, in order (a repeated header appears repeatedly).
    pub headers: Vec<(String, String)>,
    /// The body as text (lossy).
    pub body: String,
}

impl Recorded {
    /// The JSON-RPC message of the body, if it is one.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.body).ok()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The running server; stops when dropped.
pub struct RecordingUpstream {
    /// `http://127.0.0.1:PORT/mcp`
    pub url: String,
    log: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RecordingUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RecordingUpstream {
    /// Starts the fixture named `name` on an ephemeral loopback port.
    pub async fn start(name: &str) -> RecordingUpstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!(
            "http://127.0.0.1:{}/mcp",
            listener.local_addr().expect("addr").port()
        );
        let name = name.to_string();
        let mcp = StreamableHttpService::new(
            move || Ok(Fixture::new(&name).with_meta_tools(true)),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let log: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let l = log.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (l, mcp) = (l.clone(), mcp.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req: Request<_>| {
                        let (l, mut mcp) = (l.clone(), mcp.clone());
                        async move {
                            let (parts, body) = req.into_parts();
                            let body: Bytes = match BodyExt::collect(body).await {
                                Ok(b) => b.to_bytes(),
                                Err(_) => Bytes::new(),
                            };
                            l.lock().expect("log").push(Recorded {
                                method: parts.method.to_string(),
                                headers: parts
                                    .headers
                                    .iter()
                                    .map(|(k, v)| {
                                        (
                                            k.as_str().to_string(),
                                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                                        )
                                    })
                                    .collect(),
                                body: String::from_utf8_lossy(&body).into_owned(),
                            });
                            let req = Request::from_parts(parts, Full::new(body));
                            match tower_service::Service::call(&mut mcp, req).await {
                                Ok(r) => Ok::<_, Infallible>(r),
                                Err(never) => match never {},
                            }
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        RecordingUpstream { url, log, task }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.log.lock().expect("log").clone()
    }

    /// The `tools/call` requests received so far, with their JSON-RPC messages.
    pub fn tool_calls(&self) -> Vec<(Recorded, Value)> {
        self.requests()
            .into_iter()
            .filter_map(|r| {
                let j = r.json()?;
                (j["method"] == "tools/call").then_some((r, j))
            })
            .collect()
    }
}
