//! A second pass at the surface, by category: encodings split across a template's pieces,
//! dot segments, headers a document should not control, and work that grows faster than
//! the document (quadratic loops over parameters, names, properties).
#![allow(clippy::unwrap_used, reason = "tests")]

use std::time::{Duration, Instant};

use openapi::{Format, RequestError, Spec, build_request};
use serde_json::{Map, Value, json};
use url::Url;

fn doc(paths: &Value, components: &Value) -> Vec<u8> {
    json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths, "components": components})
        .to_string()
        .into_bytes()
}

fn base() -> Url {
    Url::parse("https://api.example.com/v1").unwrap()
}

/// Unoptimised builds on a shared two-core machine: generous, but far below quadratic.
const QUICK: Duration = Duration::from_secs(10);

#[test]
fn percent_signs_in_the_template_cannot_pair_with_values() {
    let path_param = |name: &str| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}});
    let paths = json!({
        "/x/%{a}%{b}": {"get": {"operationId": "split", "parameters": [path_param("a"), path_param("b")], "responses": {}}},
        "/y/%2{c}": {"get": {"operationId": "half", "parameters": [path_param("c")], "responses": {}}},
        "/z/..\\..\\{d}": {"get": {"operationId": "backslash", "parameters": [path_param("d")], "responses": {}}}
    });
    let spec = Spec::parse(&doc(&paths, &json!({})), Format::Json).unwrap();
    let split = spec.operation("split").unwrap();
    // The value's `%` is always encoded, so `2e` + `2e` after literal `%`s is the
    // template's own `%2e%2e`: a dot segment, refused.
    assert!(matches!(
        build_request(&split, &base(), &json!({"a": "2e", "b": "2e"})),
        Err(RequestError::EscapesBase { .. })
    ));
    assert_eq!(
        build_request(&split, &base(), &json!({"a": "41", "b": "42"}))
            .unwrap()
            .url
            .path(),
        "/v1/x/%41%42"
    );
    let half = spec.operation("half").unwrap();
    assert!(matches!(
        build_request(&half, &base(), &json!({"c": "e"})),
        Err(RequestError::EscapesBase { .. })
    ));
    let backslash = spec.operation("backslash").unwrap();
    let out = build_request(&backslash, &base(), &json!({"d": "x"}));
    assert!(
        out.as_ref()
            .map_or(true, |r| r.url.path().starts_with("/v1/")),
        "{out:?}"
    );
}

#[test]
fn headers_the_transport_owns_are_not_parameters() {
    let params: Vec<Value> = [
        "Host",
        "Content-Length",
        "Transfer-Encoding",
        "Connection",
        "Cookie",
        "Authorization",
        "X-Fine",
    ]
    .iter()
    .map(|n| json!({"name": n, "in": "header", "schema": {"type": "string"}}))
    .collect();
    let paths = json!({"/h": {"get": {"operationId": "h", "parameters": params, "responses": {}}}});
    let spec = Spec::parse(&doc(&paths, &json!({})), Format::Json).unwrap();
    let op = spec.operation("h").unwrap();
    let props: Vec<&String> = op.input_schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(props, ["X-Fine"]);
    assert_eq!(op.warnings.len(), 6);
}

#[test]
fn body_content_types_with_controls_are_not_used() {
    let paths = json!({"/b": {"post": {"operationId": "b", "requestBody": {"content": {
        "application/vnd.x+json\r\nX-Evil: a+json": {"schema": {"type": "object"}},
        "application/json": {"schema": {"type": "object"}}}}, "responses": {}}}});
    let spec = Spec::parse(&doc(&paths, &json!({})), Format::Json).unwrap();
    let req = build_request(&spec.operation("b").unwrap(), &base(), &json!({"body": {}})).unwrap();
    assert_eq!(req.content_type.as_deref(), Some("application/json"));
}

#[test]
fn a_parameter_named_body_does_not_hide_the_body() {
    let paths = json!({"/b/{body}": {"post": {"operationId": "b", "parameters": [
        {"name": "body", "in": "path", "required": true, "schema": {"type": "string"}},
        {"name": "body_2", "in": "query", "schema": {"type": "string"}}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object"}}}}, "responses": {}}}});
    let spec = Spec::parse(&doc(&paths, &json!({})), Format::Json).unwrap();
    let op = spec.operation("b").unwrap();
    assert_eq!(op.input_schema["required"], json!(["path_body", "body"]));
    let req = build_request(
        &op,
        &base(),
        &json!({"path_body": "p", "body_2": "q", "body": {"k": 1}}),
    )
    .unwrap();
    assert_eq!(req.url.as_str(), "https://api.example.com/v1/b/p?body_2=q");
    assert_eq!(req.body.unwrap(), br#"{"k":1}"#);
}

#[test]
fn many_parameters_and_arguments_stay_linear() {
    let params: Vec<Value> = (0..30_000)
        .map(|i| json!({"name": format!("p{i}"), "in": "query", "schema": {"type": "string"}}))
        .collect();
    let paths =
        json!({"/many": {"get": {"operationId": "many", "parameters": params, "responses": {}}}});
    let spec = Spec::parse(&doc(&paths, &json!({})), Format::Json).unwrap();
    let start = Instant::now();
    let op = spec.operation("many").unwrap();
    assert_eq!(
        op.input_schema["properties"].as_object().unwrap().len(),
        30_000
    );
    let args: Map<String, Value> = (0..30_000).map(|i| (format!("p{i}"), json!("v"))).collect();
    build_request(&op, &base(), &Value::Object(args)).unwrap();
    let unknown: Map<String, Value> = (0..30_000).map(|i| (format!("q{i}"), json!("v"))).collect();
    assert!(matches!(
        build_request(&op, &base(), &Value::Object(unknown)),
        Err(RequestError::UnknownArguments { .. })
    ));
    assert!(start.elapsed() < QUICK, "{:?}", start.elapsed());
}

#[test]
fn many_colliding_names_stay_linear() {
    let mut paths = Map::new();
    for i in 0..20_000 {
        paths.insert(
            format!("/p{i}"),
            json!({"get": {"operationId": "same", "responses": {}}}),
        );
    }
    let start = Instant::now();
    let spec = Spec::parse(&doc(&Value::Object(paths), &json!({})), Format::Json).unwrap();
    assert!(start.elapsed() < QUICK, "{:?}", start.elapsed());
    let ops = spec.operations();
    assert_eq!(ops.len(), 20_000);
    assert_eq!(ops[0].name, "same");
    assert_eq!(ops[19_999].name, "same_20000");
    assert_eq!(spec.warnings().len(), 19_999);
}

#[test]
fn many_hidden_properties_stay_linear() {
    let props: Map<String, Value> = (0..50_000)
        .map(|i| (format!("f{i}"), json!({"type": "string", "readOnly": true})))
        .collect();
    let required: Vec<String> = (0..50_000).map(|i| format!("f{i}")).collect();
    let schema = json!({"type": "object", "properties": props, "required": required});
    let paths = json!({"/r": {"post": {"operationId": "r", "requestBody": {"content": {"application/json": {"schema": schema}}}, "responses": {}}}});
    let spec = Spec::parse(&doc(&paths, &json!({})), Format::Json).unwrap();
    let start = Instant::now();
    let op = spec.operation("r").unwrap();
    assert!(start.elapsed() < QUICK, "{:?}", start.elapsed());
    assert_eq!(
        op.input_schema["properties"]["body"]["properties"],
        json!({})
    );
    assert_eq!(op.input_schema["properties"]["body"]["required"], json!([]));
}

#[test]
fn many_definitions_with_one_name_stay_linear() {
    // Every schema refers to the next through a pointer ending in the same token, and to
    // itself (a cycle each): thousands of `$defs` all hinted `s`.
    let mut schemas = Map::new();
    for i in 0..3_000 {
        schemas.insert(
            format!("S{i}"),
            json!({"s": {"type": "object", "properties": {
                "me": {"$ref": format!("#/components/schemas/S{i}/s")},
                "next": {"$ref": format!("#/components/schemas/S{}/s", (i + 1) % 3_000)}}}}),
        );
    }
    let paths = json!({"/d": {"post": {"operationId": "d", "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/S0/s"}}}}, "responses": {}}}});
    let spec = Spec::parse(&doc(&paths, &json!({"schemas": schemas})), Format::Json).unwrap();
    let start = Instant::now();
    let op = spec.operation("d").unwrap();
    assert!(start.elapsed() < QUICK, "{:?}", start.elapsed());
    let defs = op.input_schema["$defs"].as_object().unwrap();
    assert!(defs.len() >= 2_999, "{}", defs.len());
}

#[test]
fn deep_schemas_behind_many_references_do_not_exhaust_the_stack() {
    // Forty schemas, each nested as deep as the parser allows, each ending in the next.
    let mut schemas = Map::new();
    for i in 0..40 {
        let mut inner = if i == 39 {
            json!({"type": "string"})
        } else {
            json!({"$ref": format!("#/components/schemas/D{}", i + 1)})
        };
        for _ in 0..45 {
            inner = json!({"type": "object", "properties": {"a": inner}});
        }
        schemas.insert(format!("D{i}"), inner);
    }
    let paths = json!({"/deep": {"post": {"operationId": "deep", "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/D0"}}}}, "responses": {}}}});
    let spec = Spec::parse(&doc(&paths, &json!({"schemas": schemas})), Format::Json).unwrap();
    // A small stack on purpose: the host may build tools on any thread.
    let handle = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            spec.operation("deep")
                .map(|op| op.input_schema.to_string().len())
        })
        .unwrap();
    let out = handle.join().unwrap();
    assert!(out.is_ok(), "{out:?}");
}

#[test]
fn a_spec_can_be_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Spec>();
    shared::<openapi::Operation>();
}

#[test]
fn parameter_names_reach_the_caller_without_invisible_characters() {
    let paths = json!({"/p": {"post": {"operationId": "p", "parameters": [
        {"name": "id\u{202E}", "in": "query", "schema": {"type": "string"}},
        {"name": "\u{200B}", "in": "query", "schema": {"type": "string"}}],
        "requestBody": {"content": {"multipart/form-data": {"schema": {"type": "object"}}}}, "responses": {}}}});
    let spec = Spec::parse(&doc(&paths, &json!({})), Format::Json).unwrap();
    let op = spec.operation("p").unwrap();
    let props: Vec<&String> = op.input_schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(props, ["id", "param", "body"]);
    // The request still uses the names as the document wrote them (encoded).
    let req = build_request(
        &op,
        &base(),
        &json!({"id": "1", "param": "2", "body": {"a\"\r\nX-Injected: 1": "v\r\n--not-the-boundary"}}),
    )
    .unwrap();
    assert_eq!(req.url.query(), Some("id%E2%80%AE=1&%E2%80%8B=2"));
    let body = String::from_utf8(req.body.unwrap()).unwrap();
    assert!(
        body.contains("name=\"a%22%0D%0AX-Injected: 1\"\r\n"),
        "{body}"
    );
    assert!(!body.contains("\r\nX-Injected"), "{body}");
}

#[test]
fn references_by_escaped_pointers_and_chains() {
    let paths = json!({
        "/pets/{petId}": {"parameters": [{"name": "petId", "in": "path", "required": true, "schema": {"type": "string", "title": "from the path item"}}],
            "get": {"operationId": "get", "responses": {}}},
        "/other/{petId}": {"get": {"operationId": "other", "parameters": [
            {"$ref": "#/paths/~1pets~1%7BpetId%7D/parameters/0"},
            {"$ref": "#/components/parameters/First"}], "responses": {}}},
        "/empty": {"get": {"operationId": "empty", "parameters": [{"$ref": ""}], "responses": {}}},
        "/nonstring": {"post": {"operationId": "nonstring", "requestBody": {"content": {"application/json": {"schema": {"$ref": 5}}}}, "responses": {}}}
    });
    let components = json!({"parameters": {
        "First": {"$ref": "#/components/parameters/Second"},
        "Second": {"$ref": "#/components/parameters/a~1b~0c"},
        "a/b~c": {"name": "limit", "in": "query", "schema": {"type": "integer"}}}});
    let spec = Spec::parse(&doc(&paths, &components), Format::Json).unwrap();
    let op = spec.operation("other").unwrap();
    assert_eq!(
        op.input_schema["properties"]["petId"]["title"],
        "from the path item"
    );
    assert_eq!(op.input_schema["properties"]["limit"]["type"], "integer");
    let req = build_request(&op, &base(), &json!({"petId": "p", "limit": 3})).unwrap();
    assert_eq!(
        req.url.as_str(),
        "https://api.example.com/v1/other/p?limit=3"
    );
    // `$ref: ""` names the whole document, which is no parameter: an error, not a crash.
    assert!(spec.operation("empty").is_err());
    // A `$ref` that is not a string is no reference: the schema accepts anything.
    let op = spec.operation("nonstring").unwrap();
    assert_eq!(op.input_schema["properties"]["body"], json!({}));
}
