//! An OTLP/HTTP trace receiver on loopback: it accepts `POST /v1/traces` as OTLP JSON
//! (`application/json`, parsed into [`ReceivedSpan`]s) or protobuf (`application/x-protobuf`,
//! kept as raw bodies), answers as a collector does, and lets a test wait for the spans.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value};
use tokio::net::TcpListener;

/// One exported span, flattened from OTLP JSON.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// 16 lowercase hex digits.
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    /// OTLP's number: 1 internal, 2 server, 3 client.
    pub kind: i64,
    /// Attribute values as JSON (strings, numbers, booleans).
    pub attributes: Map<String, Value>,
    /// OTLP's status code: 0 unset, 1 ok, 2 error.
    pub status_code: i64,
    /// `service.name` of the resource that sent it.
    pub service: String,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl ReceivedSpan {
    pub fn attr(&self, key: &str) -> Option<&Value> {
        self.attributes.get(key)
    }

    pub fn attr_str(&self, key: &str) -> Option<&str> {
        self.attr(key).and_then(Value::as_str)
    }
}

#[derive(Default)]
struct Store {
    spans: Vec<ReceivedSpan>,
    /// Protobuf bodies, as received.
    protobuf: Vec<Vec<u8>>,
    /// Requests with anything else (content type, path), for the test to see.
    rejected: Vec<String>,
}

/// The running receiver; stops when dropped.
pub struct OtlpReceiver {
    /// `http://127.0.0.1:PORT` (what `OTEL_EXPORTER_OTLP_ENDPOINT` takes).
    pub endpoint: String,
    store: Arc<Mutex<Store>>,
    changed: Arc<tokio::sync::Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl OtlpReceiver {
    pub async fn start() -> OtlpReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let endpoint = format!(
            "http://127.0.0.1:{}",
            listener.local_addr().expect("addr").port()
        );
        let store: Arc<Mutex<Store>> = Arc::default();
        let changed = Arc::new(tokio::sync::Notify::new());
        let (s, c) = (store.clone(), changed.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (s, c) = (s.clone(), c.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let (s, c) = (s.clone(), c.clone());
                        async move { Ok::<_, Infallible>(receive(req, &s, &c).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        OtlpReceiver {
            endpoint,
            store,
            changed,
            task,
        }
    }

    /// Every span received so far (JSON exports).
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.store.lock().expect("store").spans.clone()
    }

    /// Protobuf export bodies received so far.
    pub fn protobuf_bodies(&self) -> Vec<Vec<u8>> {
        self.store.lock().expect("store").protobuf.clone()
    }

    /// Requests that were not trace exports.
    pub fn rejected(&self) -> Vec<String> {
        self.store.lock().expect("store").rejected.clone()
    }

    /// Waits until `done` holds for the spans received, at most `within`; the spans then
    /// (or panics with what arrived).
    pub async fn wait_for(
        &self,
        within: Duration,
        done: impl Fn(&[ReceivedSpan]) -> bool,
    ) -> Vec<ReceivedSpan> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                let spans = self.spans();
                if done(&spans) {
                    return spans;
                }
                panic!(
                    "the spans awaited did not arrive within {within:?}; received: {:#?}; rejected: {:?}",
                    spans
                        .iter()
                        .map(|s| (&s.name, &s.trace_id, &s.span_id, &s.parent_span_id))
                        .collect::<Vec<_>>(),
                    self.rejected()
                );
            }
        }
    }

    /// Waits until a protobuf export body has arrived, at most `within`.
    pub async fn wait_for_protobuf(&self, within: Duration, done: impl Fn(&[Vec<u8>]) -> bool) {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if done(&self.protobuf_bodies()) {
                return;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                assert!(
                    done(&self.protobuf_bodies()),
                    "no matching protobuf export within {within:?} ({} bodies; rejected: {:?})",
                    self.protobuf_bodies().len(),
                    self.rejected()
                );
                return;
            }
        }
    }
}

async fn receive(
    req: Request<hyper::body::Incoming>,
    store: &Mutex<Store>,
    changed: &tokio::sync::Notify,
) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    let ctype = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let method = req.method().clone();
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return answer(StatusCode::BAD_REQUEST, "application/json", "{}"),
    };
    if method != hyper::Method::POST || path != "/v1/traces" {
        store
            .lock()
            .expect("store")
            .rejected
            .push(format!("{method} {path}"));
        changed.notify_waiters();
        return answer(StatusCode::NOT_FOUND, "application/json", "{}");
    }
    if ctype.starts_with("application/json") {
        let parsed: Result<Value, _> = serde_json::from_slice(&body);
        match parsed {
            Ok(v) => {
                let spans = flatten(&v);
                store.lock().expect("store").spans.extend(spans);
                changed.notify_waiters();
                answer(StatusCode::OK, "application/json", "{}")
            }
            Err(e) => {
                store
                    .lock()
                    .expect("store")
                    .rejected
                    .push(format!("bad JSON: {e}"));
                changed.notify_waiters();
                answer(StatusCode::BAD_REQUEST, "application/json", "{}")
            }
        }
    } else if ctype.starts_with("application/x-protobuf") {
        store.lock().expect("store").protobuf.push(body.to_vec());
        changed.notify_waiters();
        // An empty ExportTraceServiceResponse.
        answer(StatusCode::OK, "application/x-protobuf", "")
    } else {
        store
            .lock()
            .expect("store")
            .rejected
            .push(format!("content-type {ctype}"));
        changed.notify_waiters();
        answer(StatusCode::UNSUPPORTED_MEDIA_TYPE, "application/json", "{}")
    }
}

fn answer(status: StatusCode, ctype: &str, body: &'static str) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", ctype)
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .expect("response")
}

/// `resourceSpans[].scopeSpans[].spans[]` of an OTLP JSON export.
fn flatten(export: &Value) -> Vec<ReceivedSpan> {
    let mut out = Vec::new();
    let list = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for rs in list(export, "resourceSpans") {
        let resource = attributes(rs.get("resource").unwrap_or(&Value::Null));
        let service = resource
            .get("service.name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        for ss in list(&rs, "scopeSpans") {
            for s in list(&ss, "spans") {
                let text = |k: &str| {
                    s.get(k)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                out.push(ReceivedSpan {
                    trace_id: text("traceId").to_ascii_lowercase(),
                    span_id: text("spanId").to_ascii_lowercase(),
                    parent_span_id: text("parentSpanId").to_ascii_lowercase(),
                    name: text("name"),
                    kind: number(s.get("kind")).unwrap_or(0),
                    attributes: attributes(&s),
                    status_code: s
                        .get("status")
                        .and_then(|st| number(st.get("code")))
                        .unwrap_or(0),
                    service: service.clone(),
                    start_ns: number(s.get("startTimeUnixNano")).unwrap_or(0) as u64,
                    end_ns: number(s.get("endTimeUnixNano")).unwrap_or(0) as u64,
                });
            }
        }
    }
    out
}

/// A number OTLP JSON may write as a number or a string (64-bit integers), or an enum name.
fn number(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok().or(match s.as_str() {
            "SPAN_KIND_INTERNAL" => Some(1),
            "SPAN_KIND_SERVER" => Some(2),
            "SPAN_KIND_CLIENT" => Some(3),
            "STATUS_CODE_OK" => Some(1),
            "STATUS_CODE_ERROR" => Some(2),
            _ => None,
        }),
        _ => None,
    }
}

fn attributes(holder: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    for kv in holder
        .get("attributes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(key) = kv.get("key").and_then(Value::as_str) else {
            continue;
        };
        let v = kv.get("value").cloned().unwrap_or(Value::Null);
        let value = if let Some(s) = v.get("stringValue") {
            s.clone()
        } else if let Some(b) = v.get("boolValue") {
            b.clone()
        } else if let Some(i) = v.get("intValue") {
            number(Some(i)).map_or(Value::Null, Value::from)
        } else if let Some(d) = v.get("doubleValue") {
            d.clone()
        } else {
            v
        };
        out.insert(key.to_string(), value);
    }
    out
}
