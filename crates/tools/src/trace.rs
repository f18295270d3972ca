//! Distributed tracing: the W3C trace context a request carries, the spans we record for it,
//! and the context we pass on to every upstream call it makes.
//!
//! A request's context comes from `_meta.traceparent` / `_meta.tracestate` of the `tools/call`
//! (any transport, any protocol revision) or, over streamable HTTP, from the `traceparent` /
//! `tracestate` headers (`_meta` wins when both are valid). A malformed value is ignored: the
//! request runs as if it carried none, and a log line at debug level shows at most
//! [`LOGGED_CHARS`] characters of it, escaped.
//!
//! Two modes:
//! - **Exporting** (the `otel` cargo feature, and the standard `OTEL_*` environment variables
//!   turn it on, see [`init`]): a request span (kind server, child of the caller's context, or a
//!   new trace), an `execute` span under it (language, session, outcome, duration), and a
//!   `tools/call` span (kind client) for every upstream call under that; the upstream receives
//!   the context of its call span.
//! - **Not exporting** (the default): nothing is recorded, and the caller's context, when it
//!   sent one, is passed on unchanged to every upstream call, so the upstream's spans still join
//!   the caller's trace. The cost is one relaxed check of a `OnceLock` per span.
//!
//! Upstreams receive the context as `_meta.traceparent` (and `_meta.tracestate`) in the
//! `tools/call` request, and HTTP upstreams also as the `traceparent` / `tracestate` headers
//! (`oauth::transport`). Nothing else of the request is passed on.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::{Map, Value};

/// At most this many characters of a malformed header or `_meta` value reach a log line.
pub const LOGGED_CHARS: usize = 64;
/// A `tracestate` longer than this is dropped (W3C: 32 members of at most 256 bytes; 512 is
/// what propagators must at least pass on).
const MAX_TRACESTATE: usize = 512;
/// The `_meta` keys (as OpenTelemetry's MCP conventions name them).
pub const META_TRACEPARENT: &str = "traceparent";
pub const META_TRACESTATE: &str = "tracestate";

/// A W3C trace context: the trace, the parent span in it, the flags and the vendor state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub flags: u8,
    /// The `tracestate` list, kept only when it is well-formed and within bounds.
    pub state: Option<String>,
}

impl TraceContext {
    /// Parses a `traceparent` (and an optional `tracestate`); `None` when `traceparent` is not
    /// a valid W3C value. A bad `tracestate` is dropped on its own.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<TraceContext> {
        let tp = traceparent.trim_matches([' ', '\t']);
        let b = tp.as_bytes();
        // version "-" trace-id "-" parent-id "-" flags: 2+1+32+1+16+1+2 = 55.
        if b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let version = hex_u8(&b[0..2])?;
        if version == 0xff || (version == 0 && b.len() != 55) || (b.len() > 55 && b[55] != b'-') {
            return None;
        }
        let mut trace_id = [0u8; 16];
        for (i, out) in trace_id.iter_mut().enumerate() {
            *out = hex_u8(&b[3 + 2 * i..5 + 2 * i])?;
        }
        let mut span_id = [0u8; 8];
        for (i, out) in span_id.iter_mut().enumerate() {
            *out = hex_u8(&b[36 + 2 * i..38 + 2 * i])?;
        }
        let flags = hex_u8(&b[53..55])?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(TraceContext {
            trace_id,
            span_id,
            // Only the sampled bit is defined for version 00.
            flags: flags & 0x01,
            state: tracestate.and_then(valid_tracestate).map(str::to_string),
        })
    }

    /// The context in a request's `_meta`, if it holds a valid one; a malformed one is noted
    /// at debug level (bounded, escaped) and ignored.
    pub fn from_meta(meta: &Map<String, Value>) -> Option<TraceContext> {
        let tp = meta.get(META_TRACEPARENT)?;
        let state = meta.get(META_TRACESTATE).and_then(Value::as_str);
        let found = tp.as_str().and_then(|tp| TraceContext::parse(tp, state));
        if found.is_none() {
            tracing::debug!(
                traceparent = %bounded(&tp.to_string()),
                "ignoring a malformed _meta.traceparent"
            );
        }
        found
    }

    /// The context in HTTP headers (`traceparent`, `tracestate`; several `tracestate` lines
    /// are one list), if they hold a valid one.
    pub fn from_headers(headers: &http::HeaderMap) -> Option<TraceContext> {
        let mut tps = headers.get_all(META_TRACEPARENT).iter();
        let tp = tps.next()?;
        if tps.next().is_some() {
            tracing::debug!("ignoring a request with more than one traceparent header");
            return None;
        }
        let state: Option<String> = {
            let parts: Vec<&str> = headers
                .get_all(META_TRACESTATE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            (!parts.is_empty()).then(|| parts.join(","))
        };
        let found = tp
            .to_str()
            .ok()
            .and_then(|tp| TraceContext::parse(tp, state.as_deref()));
        if found.is_none() {
            tracing::debug!(
                traceparent = %bounded(&String::from_utf8_lossy(tp.as_bytes())),
                "ignoring a malformed traceparent header"
            );
        }
        found
    }

    /// The `traceparent` value (version 00).
    pub fn traceparent(&self) -> String {
        let mut s = String::with_capacity(55);
        s.push_str("00-");
        for b in self.trace_id {
            let _ = write!(s, "{b:02x}");
        }
        s.push('-');
        for b in self.span_id {
            let _ = write!(s, "{b:02x}");
        }
        let _ = write!(s, "-{:02x}", self.flags);
        s
    }

    /// Writes this context into an outgoing request's `_meta`.
    pub fn write_meta(&self, meta: &mut Map<String, Value>) {
        meta.insert(META_TRACEPARENT.into(), Value::String(self.traceparent()));
        match &self.state {
            Some(s) => meta.insert(META_TRACESTATE.into(), Value::String(s.clone())),
            None => meta.remove(META_TRACESTATE),
        };
    }
}

fn hex_u8(two: &[u8]) -> Option<u8> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    Some(digit(two[0])? << 4 | digit(two[1])?)
}

/// `tracestate` when it is a bounded list of `key=value` members in printable ASCII.
fn valid_tracestate(s: &str) -> Option<&str> {
    let s = s.trim_matches([' ', '\t']);
    if s.is_empty() || s.len() > MAX_TRACESTATE {
        return None;
    }
    let mut members = 0;
    for m in s.split(',') {
        let m = m.trim_matches([' ', '\t']);
        if m.is_empty() {
            continue;
        }
        members += 1;
        let (k, v) = m.split_once('=')?;
        let key_ok = !k.is_empty()
            && k.len() <= 256
            && k.bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"_-*/@".contains(&c));
        let value_ok = !v.is_empty()
            && v.len() <= 256
            && v.bytes()
                .all(|c| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=')
            && !v.ends_with(' ');
        if !key_ok || !value_ok {
            return None;
        }
    }
    (members > 0 && members <= 32).then_some(s)
}

/// At most [`LOGGED_CHARS`] characters of `s`, escaped, for a log line.
pub fn bounded(s: &str) -> String {
    let cut: String = s.chars().take(LOGGED_CHARS).collect();
    let more = if s.chars().nth(LOGGED_CHARS).is_some() {
        "…"
    } else {
        ""
    };
    format!("{}{more}", cut.escape_debug())
}

/// What kind of span: the request we serve, work inside it, or a call we make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Server,
    Internal,
    Client,
}

/// An attribute value (borrowed: nothing is copied unless the span records).
#[derive(Debug, Clone, Copy)]
pub enum Attr<'a> {
    Str(&'a str),
    Int(i64),
    F64(f64),
    Bool(bool),
}

impl<'a> From<&'a str> for Attr<'a> {
    fn from(v: &'a str) -> Self {
        Attr::Str(v)
    }
}
impl<'a> From<&'a String> for Attr<'a> {
    fn from(v: &'a String) -> Self {
        Attr::Str(v)
    }
}
impl From<i64> for Attr<'_> {
    fn from(v: i64) -> Self {
        Attr::Int(v)
    }
}
impl From<u32> for Attr<'_> {
    fn from(v: u32) -> Self {
        Attr::Int(i64::from(v))
    }
}
impl From<f64> for Attr<'_> {
    fn from(v: f64) -> Self {
        Attr::F64(v)
    }
}
impl From<bool> for Attr<'_> {
    fn from(v: bool) -> Self {
        Attr::Bool(v)
    }
}

/// One span. When tracing is not exported it records nothing and only carries its parent's
/// context on. Ends when dropped.
pub struct Span {
    /// What work under this span passes on: its own context when it records, else its
    /// parent's.
    context: Option<TraceContext>,
    #[cfg(feature = "otel")]
    inner: Option<otel::Recording>,
}

impl Span {
    /// Starts a span named `name` under `parent` (a new trace when there is none and tracing
    /// is exported). `name` is only turned into a string when the span records.
    pub fn start(
        name: impl FnOnce() -> Cow<'static, str>,
        kind: Kind,
        parent: Option<&TraceContext>,
    ) -> Span {
        #[cfg(feature = "otel")]
        if let Some(tracer) = otel::tracer() {
            let recording = otel::Recording::start(tracer, name(), kind, parent);
            return Span {
                context: recording.context().or_else(|| parent.cloned()),
                inner: Some(recording),
            };
        }
        let _ = (name, kind);
        Span {
            context: parent.cloned(),
            #[cfg(feature = "otel")]
            inner: None,
        }
    }

    /// The context to pass on to work under this span.
    pub fn context(&self) -> Option<&TraceContext> {
        self.context.as_ref()
    }

    /// Whether the span records (attributes cost something only then).
    pub fn recording(&self) -> bool {
        #[cfg(feature = "otel")]
        if self.inner.is_some() {
            return true;
        }
        false
    }

    /// Sets an attribute (nothing when the span does not record).
    pub fn set<'a>(&mut self, key: &'static str, value: impl Into<Attr<'a>>) {
        #[cfg(feature = "otel")]
        if let Some(r) = self.inner.as_mut() {
            r.set(key, value.into());
        }
        #[cfg(not(feature = "otel"))]
        let _ = (key, value);
    }

    /// Marks the span as failed with `message` (its outcome attribute says how).
    pub fn fail(&mut self, message: &str) {
        #[cfg(feature = "otel")]
        if let Some(r) = self.inner.as_mut() {
            r.fail(message);
        }
        #[cfg(not(feature = "otel"))]
        let _ = message;
    }
}

/// Turns exporting on when the environment asks for it (see [`otel::init`]); a no-op without
/// the `otel` feature, with a warning when the environment asked for traces.
pub fn init() {
    #[cfg(feature = "otel")]
    otel::init();
    #[cfg(not(feature = "otel"))]
    if std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
        || std::env::var_os("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
        || std::env::var("OTEL_TRACES_EXPORTER").is_ok_and(|v| v == "otlp")
    {
        tracing::warn!(
            "OpenTelemetry export is configured in the environment, but this build has no `otel` feature: traces are not exported"
        );
    }
}

/// Exports what is pending and stops the exporter (at exit; blocks up to a few seconds).
pub fn shutdown() {
    #[cfg(feature = "otel")]
    otel::shutdown();
}

#[cfg(feature = "otel")]
mod otel {
    //! The OpenTelemetry SDK side: the tracer provider with the OTLP/HTTP exporter.

    use std::borrow::Cow;
    use std::sync::OnceLock;
    use std::time::Duration;

    use opentelemetry::trace::{
        Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags,
        TraceId, TraceState, Tracer as _,
    };
    use opentelemetry::{Context, KeyValue, Value};
    use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

    use super::{Attr, Kind, TraceContext};

    static PROVIDER: OnceLock<(SdkTracerProvider, SdkTracer)> = OnceLock::new();

    pub(super) fn tracer() -> Option<&'static SdkTracer> {
        PROVIDER.get().map(|(_, t)| t)
    }

    /// An `OTEL_TRACES_EXPORTER` this build does not have.
    #[derive(Debug, thiserror::Error)]
    #[error("OTEL_TRACES_EXPORTER={0}: only otlp (or none) is supported; traces are not exported")]
    struct OtherExporter(String);

    /// What the environment says: `Some(true)` export, `Some(false)` asked not to, `None` not
    /// configured.
    fn wanted() -> Result<bool, OtherExporter> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(false);
        }
        let endpoint = var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
            || var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some();
        match var("OTEL_TRACES_EXPORTER") {
            None => Ok(endpoint),
            Some(v) => {
                let v = v.trim().to_ascii_lowercase();
                match v.as_str() {
                    "otlp" => Ok(true),
                    "none" => Ok(false),
                    _ => Err(OtherExporter(super::bounded(&v))),
                }
            }
        }
    }

    pub(super) fn init() {
        match wanted() {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!("{e}");
                return;
            }
        }
        crate::tls::install_tls_provider();
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let mut builder = opentelemetry_otlp::SpanExporter::builder().with_http();
        let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
        match protocol.as_deref().map(str::trim) {
            Some("http/json") | Some("http/protobuf") => {}
            Some(other) => {
                tracing::warn!(
                    "OTEL_EXPORTER_OTLP_PROTOCOL={}: this build exports over HTTP only (http/protobuf or http/json); using http/protobuf",
                    super::bounded(other)
                );
                builder = opentelemetry_otlp::WithExportConfig::with_protocol(
                    builder,
                    opentelemetry_otlp::Protocol::HttpBinary,
                );
            }
            // The specification's default (the crate's would be JSON with both features).
            None => {
                builder = opentelemetry_otlp::WithExportConfig::with_protocol(
                    builder,
                    opentelemetry_otlp::Protocol::HttpBinary,
                );
            }
        }
        let exporter = match builder.build() {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(
                    "OpenTelemetry: cannot build the OTLP exporter: {e}; traces are not exported"
                );
                return;
            }
        };
        let mut resource = opentelemetry_sdk::Resource::builder();
        let named = var("OTEL_SERVICE_NAME").is_some()
            || var("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|v| v.contains("service.name="));
        if !named {
            resource = resource.with_service_name("code-executor-mcp");
        }
        let resource = resource
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = opentelemetry::trace::TracerProvider::tracer(&provider, "code-executor-mcp");
        if PROVIDER.set((provider, tracer)).is_ok() {
            tracing::info!("OpenTelemetry: exporting traces over OTLP/HTTP");
        }
    }

    pub(super) fn shutdown() {
        if let Some((provider, _)) = PROVIDER.get()
            && let Err(e) = provider.shutdown_with_timeout(Duration::from_secs(5))
        {
            tracing::debug!("OpenTelemetry shutdown: {e}");
        }
    }

    /// A span the SDK records.
    pub(super) struct Recording(opentelemetry_sdk::trace::Span);

    impl Recording {
        pub(super) fn start(
            tracer: &SdkTracer,
            name: Cow<'static, str>,
            kind: Kind,
            parent: Option<&TraceContext>,
        ) -> Recording {
            let cx = match parent {
                Some(p) => Context::new().with_remote_span_context(SpanContext::new(
                    TraceId::from_bytes(p.trace_id),
                    SpanId::from_bytes(p.span_id),
                    TraceFlags::new(p.flags),
                    true,
                    p.state
                        .as_deref()
                        .and_then(|s| s.parse::<TraceState>().ok())
                        .unwrap_or_default(),
                )),
                None => Context::new(),
            };
            let kind = match kind {
                Kind::Server => SpanKind::Server,
                Kind::Internal => SpanKind::Internal,
                Kind::Client => SpanKind::Client,
            };
            Recording(
                tracer
                    .span_builder(name)
                    .with_kind(kind)
                    .start_with_context(tracer, &cx),
            )
        }

        pub(super) fn context(&self) -> Option<TraceContext> {
            let sc = self.0.span_context();
            sc.is_valid().then(|| TraceContext {
                trace_id: sc.trace_id().to_bytes(),
                span_id: sc.span_id().to_bytes(),
                flags: sc.trace_flags().to_u8() & 0x01,
                state: Some(sc.trace_state().header()).filter(|s| !s.is_empty()),
            })
        }

        pub(super) fn set(&mut self, key: &'static str, value: Attr<'_>) {
            let value: Value = match value {
                Attr::Str(s) => s.to_string().into(),
                Attr::Int(i) => i.into(),
                Attr::F64(f) => f.into(),
                Attr::Bool(b) => b.into(),
            };
            self.0.set_attribute(KeyValue::new(key, value));
        }

        pub(super) fn fail(&mut self, message: &str) {
            self.0.set_status(Status::error(message.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_round_trips() {
        let c = TraceContext::parse(TP, Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")).unwrap();
        assert_eq!(c.traceparent(), TP);
        assert_eq!(c.trace_id[0], 0x4b);
        assert_eq!(c.flags, 1);
        assert_eq!(
            c.state.as_deref(),
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        );
        let mut meta = Map::new();
        c.write_meta(&mut meta);
        assert_eq!(TraceContext::from_meta(&meta), Some(c));
    }

    #[test]
    fn malformed_traceparents_are_ignored() {
        for bad in [
            "",
            "garbage",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "0é-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad:?}");
        }
        // A later version may append fields after a dash.
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-more";
        let c = TraceContext::parse(later, None).unwrap();
        assert_eq!(c.flags, 1, "only the sampled flag is passed on");
        // Non-string or malformed _meta values are ignored, not errors.
        let mut meta = Map::new();
        meta.insert("traceparent".into(), serde_json::json!({"x": 1}));
        assert_eq!(TraceContext::from_meta(&meta), None);
    }

    #[test]
    fn a_bad_tracestate_is_dropped_alone() {
        let long = format!("k={}", "v".repeat(600));
        for bad in ["no-equals", "K=upper", "a=b\nc=d", long.as_str(), "a=b,=c"] {
            let c = TraceContext::parse(TP, Some(bad)).unwrap();
            assert_eq!(c.state, None, "{bad:?}");
        }
    }

    #[test]
    fn headers_give_a_context_and_more_than_one_traceparent_gives_none() {
        let mut h = http::HeaderMap::new();
        h.append("traceparent", TP.parse().unwrap());
        h.append("tracestate", "a=1".parse().unwrap());
        h.append("tracestate", "b=2".parse().unwrap());
        let c = TraceContext::from_headers(&h).unwrap();
        assert_eq!(c.state.as_deref(), Some("a=1,b=2"));
        h.append("traceparent", TP.parse().unwrap());
        assert_eq!(TraceContext::from_headers(&h), None);
    }

    #[test]
    fn logged_values_are_bounded_and_escaped() {
        let s = format!("\n\u{1b}[31m{}", "x".repeat(10_000));
        let b = bounded(&s);
        assert!(b.chars().count() < 100, "{b}");
        assert!(!b.contains('\n') && !b.contains('\u{1b}'));
    }

    #[test]
    fn without_an_exporter_a_span_passes_its_parent_on() {
        let parent = TraceContext::parse(TP, None).unwrap();
        let span = Span::start(|| "x".into(), Kind::Server, Some(&parent));
        if !span.recording() {
            assert_eq!(span.context(), Some(&parent));
        }
        assert_eq!(
            Span::start(|| "x".into(), Kind::Server, None)
                .context()
                .is_some(),
            span.recording()
        );
    }
}
