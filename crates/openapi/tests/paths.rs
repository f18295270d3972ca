//! Path arguments stay inside their segment and under the base URL's path, whatever they
//! hold: `..`, `/`, `%2e%2e`, `?` and `#`, unicode.
#![allow(clippy::unwrap_used, reason = "tests")]

use openapi::{Format, Operation, RequestError, Spec, build_request};
use serde_json::{Value, json};
use url::Url;

fn spec() -> Spec {
    let doc = json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {
        "/files/{name}": {"get": {"operationId": "file", "parameters": [
            {"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}], "responses": {}}},
        "/join/{a}{b}": {"get": {"operationId": "join", "parameters": [
            {"name": "a", "in": "path", "required": true, "schema": {"type": "string"}},
            {"name": "b", "in": "path", "required": true, "schema": {"type": "string"}}], "responses": {}}},
        "/styles/{simple}/{label}/{matrix}/{exploded}": {"get": {"operationId": "styles", "parameters": [
            {"name": "simple", "in": "path", "required": true, "schema": {"type": "array"}},
            {"name": "label", "in": "path", "required": true, "style": "label", "schema": {"type": "array"}},
            {"name": "matrix", "in": "path", "required": true, "style": "matrix", "schema": {"type": "array"}},
            {"name": "exploded", "in": "path", "required": true, "style": "simple", "explode": true, "schema": {"type": "object"}}], "responses": {}}},
        "/dot/.{a}": {"get": {"operationId": "dot", "parameters": [
            {"name": "a", "in": "path", "required": true, "schema": {"type": "string"}}], "responses": {}}},
        "/../admin": {"get": {"operationId": "authorTraversal", "responses": {}}}
    }});
    Spec::parse(doc.to_string().as_bytes(), Format::Json).unwrap()
}

fn get(op: &Operation, args: &Value) -> Result<Url, RequestError> {
    let base = Url::parse("https://api.example.com/v1/").unwrap();
    build_request(op, &base, args).map(|r| r.url)
}

#[test]
fn values_are_encoded_inside_their_segment() {
    let spec = spec();
    let op = spec.operation("file").unwrap();
    for (value, path) in [
        ("../admin", "/v1/files/..%2Fadmin"),
        ("a/b", "/v1/files/a%2Fb"),
        ("%2e%2e", "/v1/files/%252e%252e"),
        ("%2F", "/v1/files/%252F"),
        ("?x=1#frag", "/v1/files/%3Fx%3D1%23frag"),
        ("ünï cödé", "/v1/files/%C3%BCn%C3%AF%20c%C3%B6d%C3%A9"),
        ("a\\b", "/v1/files/a%5Cb"),
        ("...", "/v1/files/..."),
        ("a;b=c,d", "/v1/files/a%3Bb%3Dc%2Cd"),
        ("\u{202E}\r\n", "/v1/files/%E2%80%AE%0D%0A"),
    ] {
        let url = get(&op, &json!({ "name": value })).unwrap();
        assert_eq!(url.path(), path, "{value:?}");
        assert_eq!(url.query(), None, "{value:?}");
        assert_eq!(url.fragment(), None, "{value:?}");
        assert_eq!(url.host_str(), Some("api.example.com"));
    }
    assert_eq!(
        get(&op, &json!({"name": 42})).unwrap().path(),
        "/v1/files/42"
    );
    assert_eq!(
        get(&op, &json!({"name": true})).unwrap().path(),
        "/v1/files/true"
    );
}

#[test]
fn dot_and_empty_segments_are_refused() {
    let spec = spec();
    let op = spec.operation("file").unwrap();
    for value in ["..", ".", ""] {
        let err = get(&op, &json!({ "name": value })).unwrap_err();
        assert_eq!(
            err,
            RequestError::PathTraversal {
                name: "name".to_owned()
            },
            "{value:?}"
        );
    }
    assert_eq!(
        get(&op, &json!({"name": null})),
        Err(RequestError::MissingRequired(vec!["name".to_owned()]))
    );
    // A value that would make `..` with the template's text.
    let dot = spec.operation("dot").unwrap();
    assert!(get(&dot, &json!({"a": "."})).is_err());
    assert_eq!(get(&dot, &json!({"a": "x"})).unwrap().path(), "/v1/dot/.x");
    assert!(matches!(get(&dot, &json!({"a": "%2e"})), Ok(u) if u.path() == "/v1/dot/.%252e"));
    let join = spec.operation("join").unwrap();
    assert!(get(&join, &json!({"a": ".", "b": "."})).is_err());
    assert_eq!(
        get(&join, &json!({"a": "x", "b": "y"})).unwrap().path(),
        "/v1/join/xy"
    );
    // A document's own `..` does not climb out either.
    let author = spec.operation("authorTraversal").unwrap();
    assert!(matches!(
        get(&author, &json!({})),
        Err(RequestError::EscapesBase { .. })
    ));
}

#[test]
fn the_base_path_is_a_prefix_whatever_its_spelling() {
    let spec = spec();
    let op = spec.operation("file").unwrap();
    for (base, path) in [
        ("https://h.example", "/files/x"),
        ("https://h.example/", "/files/x"),
        ("https://h.example/api", "/api/files/x"),
        ("https://h.example/api/", "/api/files/x"),
        ("https://h.example/a%2Fb/", "/a%2Fb/files/x"),
    ] {
        let url = build_request(&op, &Url::parse(base).unwrap(), &json!({"name": "x"}))
            .unwrap()
            .url;
        assert_eq!(url.path(), path, "{base}");
    }
    let fragment = Url::parse("https://h.example/api#frag").unwrap();
    let url = build_request(&op, &fragment, &json!({"name": "x"}))
        .unwrap()
        .url;
    assert_eq!(url.as_str(), "https://h.example/api/files/x");
    let not_http = Url::parse("file:///etc").unwrap();
    assert!(matches!(
        build_request(&op, &not_http, &json!({"name": "x"})),
        Err(RequestError::Server(_))
    ));
}

#[test]
fn path_styles() {
    let spec = spec();
    let op = spec.operation("styles").unwrap();
    let url = get(&op, &json!({"simple": ["a", "b/c"], "label": ["x", "y"], "matrix": ["m", "n"], "exploded": {"k": "v?", "l": 1}})).unwrap();
    assert_eq!(url.path(), "/v1/styles/a,b%2Fc/.x,y/;matrix=m,n/k=v%3F,l=1");
    // Empty arrays leave nothing: refused like an empty value.
    assert!(matches!(
        get(
            &op,
            &json!({"simple": [], "label": ["x"], "matrix": ["m"], "exploded": {}})
        ),
        Err(RequestError::PathTraversal { .. })
    ));
}
