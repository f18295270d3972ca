//! OpenAPI sources under attack, through the built binary: hostile documents (huge, deeply
//! nested, circular, `$ref`s outside the document, colliding and non-identifier operation
//! ids, servers at loopback or metadata addresses) and hostile answers and arguments (path
//! values with `..` and encodings, header injection, redirects to metadata addresses and to
//! another origin, huge bodies, a server slower than the deadline). Requests go to a scripted
//! server on loopback that records what arrived (`test_support::rawhttp`).

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::rawhttp::{RawHttp, Reply};
use test_support::{Harness, Lang, TempDir};

use crate::common::openapi::{BEARER, BEARER_VAR};
use crate::common::{BOTH, EXE};

fn op(id: &str, method: &str, params: Value) -> Value {
    json!({method: {"operationId": id, "summary": format!("the {id} operation"), "parameters": params,
        "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}}}})
}

fn doc(servers: &str, paths: Value) -> Value {
    json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
           "servers": [{"url": servers}], "paths": paths})
}

/// The document of the scripted server: each path an attack.
fn attack_doc() -> Value {
    let path =
        json!([{"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}]);
    let header =
        json!([{"name": "X-Note", "in": "header", "required": true, "schema": {"type": "string"}}]);
    let mut paths = serde_json::Map::new();
    for (p, o) in [
        ("/files/{name}", op("getFile", "get", path)),
        ("/note", op("sendNote", "get", header)),
        ("/echo", op("echo", "get", json!([]))),
        ("/to-metadata", op("toMetadata", "get", json!([]))),
        ("/to-loopback", op("toLoopback", "get", json!([]))),
        ("/to-other", op("toOther", "get", json!([]))),
        ("/huge", op("huge", "get", json!([]))),
        ("/slow", op("slow", "get", json!([]))),
    ] {
        paths.insert(p.into(), o);
    }
    doc("https://api.example.com", Value::Object(paths))
}

/// Hostile documents, one entry each.
fn hostile_docs(dir: &Path) -> Value {
    let write = |name: &str, v: &Value| {
        let p = dir.join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    // Nested ~118 levels deep (the limit is 100, serde_json's own 128).
    let mut deep = json!({"type": "string"});
    for _ in 0..55 {
        deep = json!({"type": "object", "properties": {"a": deep}});
    }
    let nested = doc(
        "https://api.example.com",
        json!({"/x": {"post": {"operationId": "deep",
        "requestBody": {"content": {"application/json": {"schema": deep}}}, "responses": {"200": {"description": "ok"}}}}}),
    );
    // Circular schemas, and refs to a file and a URL outside the document.
    let mut circular = doc(
        "https://api.example.com",
        json!({
            "/tree": op("getTree", "get", json!([])),
            "/file-ref": {"get": {"operationId": "fileRef", "parameters": [{"$ref": "./other.json#/p"}], "responses": {"200": {"description": "ok"}}}},
            "/url-ref": {"get": {"operationId": "urlRef", "parameters": [{"$ref": "http://169.254.169.254/latest/meta-data#/p"}], "responses": {"200": {"description": "ok"}}}},
        }),
    );
    circular["paths"]["/tree"]["get"]["responses"]["200"]["content"]["application/json"]["schema"] =
        json!({"$ref": "#/components/schemas/Node"});
    circular["components"] = json!({"schemas": {"Node": {"type": "object", "properties": {
        "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}}});
    std::fs::write(
        dir.join("other.json"),
        r#"{"p": {"name": "x", "in": "query"}}"#,
    )
    .unwrap();
    // Colliding and non-identifier operation ids.
    let mut names = serde_json::Map::new();
    for (i, id) in [
        "get pet",
        "get-pet",
        "getPet",
        "get_pet",
        "GET_PET",
        "../../etc/passwd",
        "__proto__",
        "constructor",
        "dé jà",
        "x\u{200b}y",
    ]
    .iter()
    .enumerate()
    {
        names.insert(format!("/p{i}"), op(id, "get", json!([])));
    }
    let colliding = doc("https://api.example.com", Value::Object(names));
    // 3,000 operations: loads and is searchable.
    let mut many = serde_json::Map::new();
    for i in 0..3000 {
        many.insert(
            format!("/r{i}"),
            op(&format!("resource{i}"), "get", json!([])),
        );
    }
    let huge = doc("https://api.example.com", Value::Object(many));
    // Over the document size limit (64 MiB).
    let too_big = dir.join("too-big.json");
    let f = std::fs::File::create(&too_big).unwrap();
    f.set_len(65 << 20).unwrap();
    // Swagger 2.0, and a YAML alias bomb (a billion laughs).
    let swagger = json!({"swagger": "2.0", "info": {"title": "t", "version": "1"}, "paths": {}});
    let mut bomb = String::from(
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\nx0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
    );
    for i in 1..10 {
        let p = i - 1;
        bomb.push_str(&format!(
            "x{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    bomb.push_str("paths: {}\n");
    std::fs::write(dir.join("bomb.yaml"), bomb).unwrap();
    let entry = |spec: &Path| json!({"type": "openapi", "spec": spec});
    json!({
        "nested": entry(&write("nested.json", &nested)),
        "circular": entry(&write("circular.json", &circular)),
        "colliding": entry(&write("colliding.json", &colliding)),
        "huge": entry(&write("huge.json", &huge)),
        "toobig": entry(&too_big),
        "swagger": entry(&write("swagger.json", &swagger)),
        "bomb": entry(&dir.join("bomb.yaml")),
        "loopback": entry(&write("loopback.json", &doc("http://127.0.0.1:9/v1", json!({"/a": op("a", "get", json!([]))})))),
        "metadata": entry(&write("metadata.json", &doc("http://169.254.169.254/latest", json!({"/a": op("a", "get", json!([]))})))),
        "localname": entry(&write("localname.json", &doc("http://localhost:9/", json!({"/a": op("a", "get", json!([]))})))),
    })
}

async fn start(servers: Value, env: &[(&str, &str)]) -> Harness {
    let mut env = env.to_vec();
    env.push(("RUST_LOG", "info"));
    Harness::start_capturing_log(
        EXE.as_ref(),
        servers,
        &["--pool-size", "1", "--python-pool-size", "1"],
        &env,
    )
    .await
}

/// One call from code: `Ok(result)` or `Err("Name: message")`.
async fn call(
    h: &Harness,
    lang: Lang,
    server: &str,
    tool: &str,
    args: Value,
) -> Result<Value, String> {
    let code = lang.pick(
        format!("try {{ return {{ok: await callMCPTool('{server}', '{tool}', {args})}}; }} catch (e) {{ return {{err: e.name + ': ' + e.message}}; }}"),
        format!("try:\n    r = {{'ok': call_mcp_tool('{server}', '{tool}', {args})}}\nexcept Exception as e:\n    r = {{'err': type(e).__name__ + ': ' + str(e)}}\nr"),
    );
    let code = code.replace("true", lang.pick("true", "True"));
    let (v, _) = h.run_tool(lang.tool(), json!({ "code": code })).await;
    let r = &v["result"];
    match (r.get("ok"), r.get("err")) {
        (Some(ok), _) => Ok(ok.clone()),
        (_, Some(e)) => Err(e.as_str().unwrap_or_default().to_string()),
        _ => Err(format!("no result: {v}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_documents_are_refused_or_contained() {
    let dir = TempDir::new("openapi-hostile");
    let h = start(hostile_docs(&dir.0), &[]).await;
    let lang = Lang::Ts;
    let err = |r: Result<Value, String>| r.expect_err("refused");
    let e = err(call(&h, lang, "nested", "deep", json!({})).await);
    assert!(e.contains("nests deeper than 100"), "{e}");
    assert!(e.contains("nested"), "names the server: {e}");
    let e = err(call(&h, lang, "toobig", "x", json!({})).await);
    assert!(e.contains("more than") && e.contains("toobig"), "{e}");
    let e = err(call(&h, lang, "swagger", "x", json!({})).await);
    assert!(
        e.contains("Swagger 2.0") && e.contains("swagger2openapi"),
        "{e}"
    );
    let e = err(call(&h, lang, "bomb", "x", json!({})).await);
    // Refused by our expansion bound or the YAML parser's own repetition limit.
    assert!(
        e.contains("expands to more than") || e.contains("repetition limit"),
        "{e}"
    );
    for (server, what) in [
        ("loopback", "loopback"),
        ("metadata", "metadata"),
        ("localname", "loopback"),
    ] {
        let e = err(call(&h, lang, server, "a", json!({})).await);
        assert!(
            e.contains(what) && e.contains("allowAddresses"),
            "{server}: {e}"
        );
    }
    // Circular schemas load (as $defs); refs outside the document leave their operations out.
    let (v, _) = h
        .run_tool("get_tool_schema", json!({"name": "mcp__circular__getTree"}))
        .await;
    assert!(v.to_string().contains("children"), "{v}");
    let (v, _) = h
        .run_tool(
            "search_tools",
            json!({"query": "operation", "server": "circular", "detail": "names"}),
        )
        .await;
    let names = v.to_string();
    assert!(
        names.contains("getTree") && !names.contains("fileRef") && !names.contains("urlRef"),
        "{names}"
    );
    let log = h.server_log();
    assert!(
        log.contains("fileRef") && log.contains("outside the document"),
        "{log}"
    );
    // Colliding and odd ids: ten distinct identifier-like tools, each callable by name.
    let (v, _) = h
        .run_tool("search_tools", json!({"query": "pet operation", "server": "colliding", "detail": "names", "limit": 50}))
        .await;
    let tools: Vec<String> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tool"].as_str().unwrap().to_string())
        .collect();
    let mut unique = tools.clone();
    unique.sort_by_key(|t| t.to_ascii_lowercase());
    unique.dedup_by_key(|t| t.to_ascii_lowercase());
    assert_eq!(unique.len(), tools.len(), "{tools:?}");
    assert!(tools.len() >= 8, "{tools:?}");
    assert!(
        tools.iter().all(|t| t
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')),
        "{tools:?}"
    );
    // 3,000 operations: searchable.
    let (v, _) = h
        .run_tool(
            "search_tools",
            json!({"query": "the resource2999 operation", "server": "huge", "detail": "names"}),
        )
        .await;
    assert!(v.to_string().contains("resource2999"), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_answers_and_arguments_are_contained() {
    let other = RawHttp::start(HashMap::new());
    let routes = HashMap::from([
        ("/api/echo".to_string(), Reply::EchoHead),
        (
            "/api/to-metadata".into(),
            Reply::Redirect("http://169.254.169.254/latest/meta-data".into()),
        ),
        (
            "/api/to-other".into(),
            Reply::Redirect(format!("http://localhost:{}/landed", other.port)),
        ),
        (
            "/api/huge".into(),
            Reply::Fixed(200, "application/json", vec![b' '; 3 << 20]),
        ),
        ("/api/slow".into(), Reply::Slow(Duration::from_secs(30))),
        // Another loopback address than the one allowed (127.0.0.1).
        (
            "/api/to-loopback".into(),
            Reply::Redirect(format!("http://127.0.0.2:{}/x", other.port)),
        ),
        (
            "/spec.json".into(),
            Reply::Fixed(
                200,
                "application/json",
                attack_doc().to_string().into_bytes(),
            ),
        ),
    ]);
    let server = RawHttp::start(routes);
    let dir = TempDir::new("openapi-attacks");
    let spec = dir.0.join("attacks.json");
    std::fs::write(&spec, attack_doc().to_string()).unwrap();
    let entry = json!({"type": "openapi", "spec": spec, "baseUrl": format!("{}/api", server.base_url()),
        "allowAddresses": ["127.0.0.1"], "auth": {"bearer": format!("${{{BEARER_VAR}}}")},
        "tool_timeout_sec": 2});
    // Results (and so bodies) of at most 1 MiB here.
    let settings = dir.0.join("settings.json");
    std::fs::write(&settings, json!({"maxResultBytes": 1 << 20}).to_string()).unwrap();
    // Another principal: an entry without a credential, on another origin.
    let plain = json!({"type": "openapi", "spec": spec, "baseUrl": format!("{}/api", other.base_url()),
        "allowAddresses": ["127.0.0.1"]});
    let h = start(
        json!({
            "attacks": entry,
            "plain": plain,
            // The document by URL: fetched by the host under the same guard.
            "byurl": {"type": "openapi", "spec": format!("{}/spec.json", server.base_url()),
                      "baseUrl": format!("{}/api", server.base_url()), "allowAddresses": ["127.0.0.1"]},
            "byurlrefused": {"type": "openapi", "spec": format!("{}/spec.json", server.base_url())},
        }),
        &[
            (BEARER_VAR, BEARER),
            ("CODE_EXECUTOR_CONFIG_PATH", settings.to_str().unwrap()),
        ],
    )
    .await;
    let ok = call(&h, Lang::Ts, "byurl", "getFile", json!({"name": "a"})).await;
    assert!(ok.is_ok(), "{ok:?}");
    let e = call(
        &h,
        Lang::Ts,
        "byurlrefused",
        "getFile",
        json!({"name": "a"}),
    )
    .await
    .unwrap_err();
    assert!(e.contains("loopback") && e.contains("spec.json"), "{e}");
    for lang in BOTH {
        // `..` and encodings stay inside their segment and under the base path.
        let ok = call(
            &h,
            lang,
            "attacks",
            "getFile",
            json!({"name": "../../admin?x=1#f"}),
        )
        .await;
        assert!(ok.is_ok(), "{ok:?}");
        let line = server.requests().last().unwrap().line.clone();
        assert!(
            line.starts_with("GET /api/files/..%2F..%2Fadmin%3Fx%3D1%23f "),
            "{line}"
        );
        // Percent-encodings in a value are data, not escapes: `%2e%2e%2f` stays literal.
        call(
            &h,
            lang,
            "attacks",
            "getFile",
            json!({"name": "%2e%2e%2fetc"}),
        )
        .await
        .unwrap();
        let line = server.requests().last().unwrap().line.clone();
        assert!(
            line.starts_with("GET /api/files/%252e%252e%252fetc "),
            "{line}"
        );
        // The credential of one entry never goes with another entry's requests.
        call(&h, lang, "plain", "echo", json!({})).await.unwrap();
        let landed = other.requests().last().unwrap().clone();
        assert!(landed.line.starts_with("GET /api/echo"), "{landed:?}");
        assert!(
            !landed.head.to_ascii_lowercase().contains("authorization"),
            "{landed:?}"
        );
        // Header injection is refused before anything is sent.
        let before = server.requests().len();
        let e = call(
            &h,
            lang,
            "attacks",
            "sendNote",
            json!({"X-Note": "a\r\nX-Injected: 1"}),
        )
        .await
        .unwrap_err();
        assert_eq!(server.requests().len(), before, "{e}");
        // A server echoing the credential: it arrived, and the code sees it redacted.
        let echoed = call(&h, lang, "attacks", "echo", json!({})).await.unwrap();
        let arrived = server.requests().last().unwrap().head.clone();
        assert!(
            arrived.contains(&format!("authorization: Bearer {BEARER}")),
            "{arrived}"
        );
        assert!(!echoed.to_string().contains(BEARER), "{echoed}");
        // Redirects: to a metadata address refused; to another origin without the credential.
        let e = call(&h, lang, "attacks", "toMetadata", json!({}))
            .await
            .unwrap_err();
        assert!(e.contains("metadata") && e.contains("redirect"), "{e}");
        let e = call(&h, lang, "attacks", "toLoopback", json!({}))
            .await
            .unwrap_err();
        assert!(e.contains("loopback") && e.contains("redirect"), "{e}");
        call(&h, lang, "attacks", "toOther", json!({}))
            .await
            .unwrap();
        let landed = other.requests().last().unwrap().clone();
        assert!(landed.line.starts_with("GET /landed"), "{landed:?}");
        assert!(
            !landed.head.to_ascii_lowercase().contains("authorization"),
            "{landed:?}"
        );
        // A huge body is stopped at the cap; a slow server at the deadline.
        let e = call(&h, lang, "attacks", "huge", json!({}))
            .await
            .unwrap_err();
        assert!(e.contains("larger than"), "{e}");
        let started = std::time::Instant::now();
        let e = call(&h, lang, "attacks", "slow", json!({}))
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(20), "{e}");
        assert!(
            e.contains("2s") || e.contains("2000") || e.contains("time"),
            "{e}"
        );
    }
    assert!(
        !h.server_log().contains(BEARER),
        "the credential is in the log"
    );
}
