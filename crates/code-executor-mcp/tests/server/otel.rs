//! Distributed tracing (`tools::trace`): a caller's W3C trace context reaches every upstream
//! call an execution makes, and, with an OTLP exporter configured, the spans we export form
//! the tree request -> execution -> upstream call in the caller's trace.
//!
//! Real parts: the built binary (stdio with an rmcp client, and `serve --http` with a raw
//! HTTP client), the fixture upstream over stdio and over streamable HTTP (it answers with
//! the `_meta` and headers it received), and an OTLP/HTTP receiver (test-support).

#![cfg_attr(
    not(feature = "otel"),
    allow(dead_code, reason = "helpers of the export tests")
)]
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, RequestMetaObject};
use serde_json::{Value, json};
use test_support::http::{Generation, HttpServer, McpHttp};
use test_support::otlp::{OtlpReceiver, ReceivedSpan};
use test_support::recording::RecordingUpstream;
use test_support::{Harness, Lang, fixture_entry};

use crate::common::EXE;

const WAIT: Duration = Duration::from_secs(30);

/// A fresh random trace id and span id (hex), as a caller would make them.
fn ids() -> (String, String) {
    let mut b = [0u8; 24];
    getrandom_fill(&mut b);
    let hex = |s: &[u8]| s.iter().map(|x| format!("{x:02x}")).collect::<String>();
    (hex(&b[..16]), hex(&b[16..]))
}

fn getrandom_fill(b: &mut [u8]) {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(b))
        .expect("urandom");
}

/// The upstreams: `fx` (stdio fixture) and `web` (streamable HTTP fixture, recording).
fn servers(web: &RecordingUpstream) -> Value {
    let mut fx = fixture_entry("fx");
    fx["env"] = json!({"FIXTURE_META_TOOLS": "1"});
    json!({"fx": fx, "web": {"type": "http", "url": web.url}})
}

/// The environment that turns export on, to `receiver`, as OTLP JSON, exported quickly.
fn otel_env(receiver: &OtlpReceiver, json: bool) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.clone()),
        ("OTEL_SERVICE_NAME", "cem-under-test".to_string()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50".to_string()),
    ];
    if json {
        env.push(("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json".to_string()));
    }
    env
}

fn code(lang: Lang) -> &'static str {
    lang.pick(
        "const a = await tools.fx.request_meta({}); const b = await tools.web.request_meta({}); return {a, b};",
        "a = tools.fx.request_meta()\nb = tools.web.request_meta()\n{'a': a, 'b': b}",
    )
}

/// Calls an execution tool with `_meta` (a traceparent, say) over the rmcp client.
async fn call_with_meta(h: &Harness, tool: &str, code: &str, meta: Value) -> (Value, bool) {
    let mut params = CallToolRequestParams::new(tool.to_string())
        .with_arguments(json!({"code": code}).as_object().unwrap().clone());
    let Value::Object(m) = meta else {
        panic!("meta must be an object")
    };
    params.meta = Some(RequestMetaObject::from(m));
    let r = h.client.peer().call_tool(params).await.expect("tools/call");
    (
        r.structured_content.unwrap_or(Value::Null),
        r.is_error == Some(true),
    )
}

/// `{trace id, parent span id}` of a traceparent.
fn split(tp: &str) -> (String, String) {
    let parts: Vec<&str> = tp.split('-').collect();
    assert_eq!(parts.len(), 4, "traceparent {tp}");
    assert_eq!(parts[0], "00");
    (parts[1].to_string(), parts[2].to_string())
}

fn one<'a>(
    spans: &'a [ReceivedSpan],
    what: &str,
    f: impl Fn(&ReceivedSpan) -> bool,
) -> &'a ReceivedSpan {
    let found: Vec<&ReceivedSpan> = spans.iter().filter(|s| f(s)).collect();
    assert_eq!(found.len(), 1, "{what}: {found:#?}\nall: {spans:#?}");
    found[0]
}

/// The result of a fixture `request_meta` call seen by code (the parsed text).
fn upstream_traceparent(seen: &Value) -> String {
    seen["meta"]["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("no traceparent reached the upstream: {seen}"))
        .to_string()
}

/// Checks the exported tree for one request and the contexts the upstreams saw.
fn check_tree(
    spans: &[ReceivedSpan],
    trace: &str,
    caller_span: &str,
    tool: &str,
    language: &str,
    seen: &Value,
) {
    let request = one(spans, "the request span", |s| {
        s.trace_id == trace && s.name == format!("tools/call {tool}")
    });
    assert_eq!(
        request.parent_span_id, caller_span,
        "the request span is the caller's child"
    );
    assert_eq!(request.kind, 2, "server kind");
    assert_eq!(request.service, "cem-under-test");
    assert_eq!(request.attr_str("code_executor.outcome"), Some("ok"));
    let exec = one(spans, "the execution span", |s| {
        s.trace_id == trace && s.parent_span_id == request.span_id
    });
    assert_eq!(exec.attr_str("code_executor.language"), Some(language));
    assert_eq!(exec.attr_str("code_executor.outcome"), Some("ok"));
    assert_eq!(exec.attr_str("code_executor.session"), Some("none"));
    assert!(
        exec.attr("code_executor.duration_ms")
            .and_then(Value::as_f64)
            .is_some(),
        "{exec:?}"
    );
    assert!(exec.end_ns >= exec.start_ns && request.end_ns >= exec.end_ns.min(request.end_ns));
    for (server, key) in [("fx", "a"), ("web", "b")] {
        let call = one(spans, "an upstream call span", |s| {
            s.trace_id == trace
                && s.parent_span_id == exec.span_id
                && s.attr_str("code_executor.upstream.server") == Some(server)
        });
        assert_eq!(call.kind, 3, "client kind");
        assert_eq!(call.name, "tools/call request_meta");
        assert_eq!(call.attr_str("gen_ai.tool.name"), Some("request_meta"));
        assert_eq!(call.attr_str("code_executor.outcome"), Some("ok"));
        let (t, parent) = split(&upstream_traceparent(&seen[key]));
        assert_eq!(t, trace, "{server} is in the caller's trace");
        assert_eq!(parent, call.span_id, "{server}'s parent is our call span");
    }
}

/// Over stdio, for both languages: `_meta.traceparent` starts the tree, every upstream
/// (stdio and HTTP) gets the context of its call span in `_meta`, an HTTP upstream in the
/// header too, and the caller's tracestate travels along.
#[cfg(feature = "otel")]
#[tokio::test]
async fn exported_spans_form_the_tree_and_upstreams_see_their_parent() {
    let receiver = OtlpReceiver::start().await;
    let web = RecordingUpstream::start("web").await;
    let env = otel_env(&receiver, true);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let h = Harness::start(EXE.as_ref(), servers(&web), &[], &env).await;
    for lang in [Lang::Ts, Lang::Py] {
        let (trace, caller) = ids();
        let meta = json!({
            "traceparent": format!("00-{trace}-{caller}-01"),
            "tracestate": "vendor=abc123",
        });
        let (v, is_error) = call_with_meta(&h, lang.tool(), code(lang), meta).await;
        assert!(!is_error, "{v}");
        let seen = &v["result"];
        // The HTTP upstream got the same context as a header.
        let b_tp = upstream_traceparent(&seen["b"]);
        assert_eq!(seen["b"]["headers"]["traceparent"], json!(b_tp), "{seen}");
        assert_eq!(seen["b"]["meta"]["tracestate"], json!("vendor=abc123"));
        assert_eq!(seen["a"]["meta"]["tracestate"], json!("vendor=abc123"));
        let calls = web.tool_calls();
        let (rec, msg) = calls.last().unwrap();
        assert_eq!(rec.header("traceparent"), Some(b_tp.as_str()));
        assert_eq!(rec.header("tracestate"), Some("vendor=abc123"));
        assert_eq!(msg["params"]["_meta"]["traceparent"], json!(b_tp));
        let spans = receiver
            .wait_for(WAIT, |s| {
                s.iter().filter(|s| s.trace_id == trace).count() >= 4
            })
            .await;
        let language = lang.pick("typescript", "python");
        check_tree(&spans, &trace, &caller, lang.tool(), language, seen);
    }
    // Without a caller's context a new trace starts, and upstreams join it.
    let (v, is_error) = call_with_meta(&h, "execute_typescript", code(Lang::Ts), json!({})).await;
    assert!(!is_error, "{v}");
    let (trace, parent) = split(&upstream_traceparent(&v["result"]["a"]));
    // Spans come in batches: the request's own span ends last, so wait for it too.
    let spans = receiver
        .wait_for(WAIT, |s| {
            s.iter().any(|s| s.span_id == parent)
                && s.iter()
                    .any(|s| s.trace_id == trace && s.parent_span_id.is_empty())
        })
        .await;
    let request = one(&spans, "the new trace's root", |s| {
        s.trace_id == trace && s.parent_span_id.is_empty()
    });
    assert_eq!(request.name, "tools/call execute_typescript");
    // A failing execution and a failing upstream call say so.
    let (tid, caller) = ids();
    let (v, is_error) = call_with_meta(
        &h,
        "execute_typescript",
        "await tools.fx.fail({message: 'no'}).catch(() => null); throw new Error('boom')",
        json!({"traceparent": format!("00-{tid}-{caller}-01")}),
    )
    .await;
    assert!(is_error, "{v}");
    let spans = receiver
        .wait_for(WAIT, |s| {
            s.iter().filter(|s| s.trace_id == tid).count() >= 3
        })
        .await;
    let exec = one(&spans, "the failed execution", |s| {
        s.trace_id == tid && s.name == "execute typescript"
    });
    assert_eq!(exec.attr_str("code_executor.outcome"), Some("error"));
    assert_eq!(exec.status_code, 2);
    let call = one(&spans, "the failed call", |s| {
        s.trace_id == tid && s.name == "tools/call fail"
    });
    assert_eq!(call.attr_str("code_executor.outcome"), Some("tool_error"));
    assert_eq!(call.parent_span_id, exec.span_id);
    assert!(receiver.rejected().is_empty(), "{:?}", receiver.rejected());
}

/// Over streamable HTTP: the `traceparent` header of the POST starts the tree (2026-07-28 and
/// 2025-11-25), and `_meta.traceparent` wins over the header when both are there.
#[cfg(feature = "otel")]
#[tokio::test]
async fn over_http_the_header_or_meta_starts_the_tree() {
    let receiver = OtlpReceiver::start().await;
    let web = RecordingUpstream::start("web").await;
    let env = otel_env(&receiver, true);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let s = HttpServer::start(EXE.as_ref(), servers(&web), &[], &env).await;
    for generation in [Generation::Stateless, Generation::Sessions] {
        let (trace, caller) = ids();
        let mut c = McpHttp::connect(&s.url, None, generation).await;
        c.extra_headers
            .push(("traceparent".into(), format!("00-{trace}-{caller}-01")));
        let (v, is_error) = c.exec(json!({"code": code(Lang::Ts)})).await;
        assert!(!is_error, "{v}");
        let spans = receiver
            .wait_for(WAIT, |s| {
                s.iter().filter(|s| s.trace_id == trace).count() >= 4
            })
            .await;
        check_tree(
            &spans,
            &trace,
            &caller,
            "execute_typescript",
            "typescript",
            &v["result"],
        );
        // Both: _meta wins.
        let (meta_trace, meta_caller) = ids();
        let r = c
            .request(
                "tools/call",
                json!({"name": "execute_python", "arguments": {"code": code(Lang::Py)},
                       "_meta": {"traceparent": format!("00-{meta_trace}-{meta_caller}-01")}}),
            )
            .await;
        assert_eq!(r.status, 200, "{r:?}");
        let result = r
            .messages
            .iter()
            .rev()
            .find_map(|m| m.get("result").cloned())
            .unwrap();
        let v = &result["structuredContent"];
        let spans = receiver
            .wait_for(WAIT, |s| {
                s.iter().filter(|s| s.trace_id == meta_trace).count() >= 4
            })
            .await;
        check_tree(
            &spans,
            &meta_trace,
            &meta_caller,
            "execute_python",
            "python",
            &v["result"],
        );
        // A malformed header is ignored: the request starts a trace of its own.
        let junk = format!(
            "00-{}-{}-01{}",
            "A".repeat(32),
            "b".repeat(16),
            "x".repeat(4000)
        );
        c.extra_headers = vec![("traceparent".into(), junk)];
        let (v, is_error) = c.exec(json!({"code": code(Lang::Ts)})).await;
        assert!(!is_error, "{v}");
        let tp = upstream_traceparent(&v["result"]["b"]);
        let (t, _) = split(&tp);
        assert_ne!(t, "a".repeat(32), "{tp}");
        assert_eq!(tp.len(), 55, "{tp}");
    }
    let log = s.log();
    assert!(
        !log.contains(&"x".repeat(100)),
        "a malformed header is not logged unbounded"
    );
}

/// No exporter configured: nothing is recorded, and the caller's context reaches every
/// upstream unchanged. A malformed one is ignored (the upstream gets none) and only a bounded,
/// escaped piece of it reaches the log.
#[tokio::test]
async fn without_an_exporter_the_callers_context_passes_through_and_bad_ones_are_ignored() {
    let web = RecordingUpstream::start("web").await;
    let h = Harness::start_capturing_log(
        EXE.as_ref(),
        servers(&web),
        &[],
        &[("RUST_LOG", "debug,rmcp=warn")],
    )
    .await;
    let (trace, caller) = ids();
    let tp = format!("00-{trace}-{caller}-01");
    for lang in [Lang::Ts, Lang::Py] {
        let (v, is_error) =
            call_with_meta(&h, lang.tool(), code(lang), json!({"traceparent": tp})).await;
        assert!(!is_error, "{v}");
        for key in ["a", "b"] {
            assert_eq!(upstream_traceparent(&v["result"][key]), tp, "{key}: {v}");
        }
        assert_eq!(v["result"]["b"]["headers"]["traceparent"], json!(tp));
    }
    let marker = "Z".repeat(20_000);
    for bad in [
        json!(format!("00-{trace}-{caller}-01-{marker}")),
        json!(format!("00-{}-{caller}-01", "0".repeat(32))),
        json!(format!("\n{marker}")),
        json!({"nested": marker}),
        json!(42),
    ] {
        let (v, is_error) = call_with_meta(
            &h,
            "execute_typescript",
            code(Lang::Ts),
            json!({"traceparent": bad}),
        )
        .await;
        assert!(!is_error, "a bad traceparent does not fail the call: {v}");
        for key in ["a", "b"] {
            assert!(
                v["result"][key]["meta"].get("traceparent").is_none(),
                "{key}: {v}"
            );
        }
        assert!(
            v["result"]["b"]["headers"].get("traceparent").is_none(),
            "{v}"
        );
    }
    let log = h.server_log();
    assert!(
        log.contains("ignoring a malformed _meta.traceparent"),
        "{log}"
    );
    assert!(
        !log.contains(&"Z".repeat(200)),
        "a malformed value is logged bounded"
    );
}

/// The default protocol is OTLP/HTTP protobuf (the specification's default).
#[cfg(feature = "otel")]
#[tokio::test]
async fn protobuf_is_the_default_protocol() {
    let receiver = OtlpReceiver::start().await;
    let env = otel_env(&receiver, false);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let h = Harness::start(EXE.as_ref(), json!({}), &[], &env).await;
    let (trace, caller) = ids();
    let (v, is_error) = call_with_meta(
        &h,
        "execute_typescript",
        "return 1",
        json!({"traceparent": format!("00-{trace}-{caller}-01")}),
    )
    .await;
    assert!(!is_error, "{v}");
    let raw: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&trace[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    receiver
        .wait_for_protobuf(WAIT, |bodies| {
            bodies
                .iter()
                .any(|b| b.windows(16).filter(|w| *w == raw.as_slice()).count() >= 2)
        })
        .await;
    assert!(receiver.spans().is_empty(), "nothing came as JSON");
}
