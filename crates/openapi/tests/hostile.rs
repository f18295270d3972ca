//! Documents written to hurt: huge, deep, self-referring, badly named, not OpenAPI 3.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::fmt::Write as _;
use std::time::Instant;

use openapi::{
    Format, Limits, OperationError, ParseOptions, RefError, Spec, SpecError, build_request,
};
use serde_json::{Value, json};
use url::Url;

fn doc(paths: &Value, components: &Value) -> Vec<u8> {
    json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths, "components": components})
        .to_string()
        .into_bytes()
}

#[test]
fn five_thousand_operations_parse_and_list_quickly() {
    let mut paths = serde_json::Map::new();
    for i in 0..1_000 {
        let mut item = serde_json::Map::new();
        for method in ["get", "put", "post", "delete", "patch"] {
            item.insert(
                method.to_owned(),
                json!({"operationId": format!("{method}Thing{i}"), "summary": format!("{method} thing {i}"),
                    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}}),
            );
        }
        paths.insert(format!("/things{i}/{{id}}"), Value::Object(item));
    }
    let components =
        json!({"schemas": {"Thing": {"type": "object", "properties": {"id": {"type": "string"}}}}});
    let bytes = doc(&Value::Object(paths), &components);
    let start = Instant::now();
    let spec = Spec::parse(&bytes, Format::Json).unwrap();
    assert_eq!(spec.operations().len(), 5_000);
    let elapsed = start.elapsed();
    // Generous for unoptimised builds on a shared machine; release is far below.
    assert!(elapsed.as_secs() < 10, "{elapsed:?}");
    let op = spec.operation("patchThing999").unwrap();
    assert_eq!(
        op.output_schema.as_ref().unwrap()["properties"]["id"]["type"],
        "string"
    );
    let req = build_request(
        &op,
        &Url::parse("https://x.example").unwrap(),
        &json!({"id": "9"}),
    )
    .unwrap();
    assert_eq!(req.url.as_str(), "https://x.example/things999/9");
}

fn deep_json(depth: usize, open: &str, close: &str) -> Vec<u8> {
    format!(r#"{{"openapi": "3.0.0", "info": {{"title": "t", "version": "1"}}, "paths": {{}}, "x-deep": {}1{}}}"#, open.repeat(depth), close.repeat(depth)).into_bytes()
}

#[test]
fn ten_thousand_deep_json_is_refused_without_overflowing() {
    for (open, close) in [("[", "]"), (r#"{"a":"#, "}")] {
        let err = Spec::parse(&deep_json(10_000, open, close), Format::Json).unwrap_err();
        match err {
            SpecError::TooDeep { max, pointer } => {
                assert_eq!(max, 100);
                assert!(pointer.starts_with("/x-deep/"), "{pointer}");
            }
            other => panic!("{other}"),
        }
    }
    // Above serde_json's own 128: its error is reported as the same kind.
    let limits = Limits {
        max_depth: 1_000,
        ..Limits::default()
    };
    let options = ParseOptions {
        format: Format::Json,
        limits,
        ..ParseOptions::default()
    };
    assert!(matches!(
        Spec::parse_with(&deep_json(10_000, "[", "]"), &options),
        Err(SpecError::TooDeep { .. })
    ));
}

#[test]
fn ten_thousand_deep_yaml_is_refused_without_overflowing() {
    let flow = format!(
        "openapi: 3.0.0\ninfo: {{title: t, version: '1'}}\npaths: {{}}\nx-deep: {}1{}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert!(matches!(
        Spec::parse(flow.as_bytes(), Format::Yaml),
        Err(SpecError::TooDeep { .. })
    ));
    let maps = format!(
        "openapi: 3.0.0\nx-deep: {}1{}\n",
        "{a: ".repeat(10_000),
        "}".repeat(10_000)
    );
    assert!(matches!(
        Spec::parse(maps.as_bytes(), Format::Yaml),
        Err(SpecError::TooDeep { .. })
    ));
    let mut block = String::from("openapi: 3.0.0\nx-deep:\n");
    for i in 0..2_000 {
        let _ = writeln!(block, "{}- ", " ".repeat(i));
    }
    let err = Spec::parse(block.as_bytes(), Format::Yaml);
    assert!(
        matches!(err, Err(SpecError::TooDeep { .. } | SpecError::Yaml(_))),
        "{err:?}"
    );
}

#[test]
fn yaml_alias_bombs_are_bounded() {
    let laughs = "openapi: 3.0.0\n\
        a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n\
        b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
        c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n\
        d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n\
        e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n\
        f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n\
        g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n\
        h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n\
        i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]\n";
    let start = Instant::now();
    let err = Spec::parse(laughs.as_bytes(), Format::Yaml).unwrap_err();
    assert!(
        matches!(err, SpecError::TooManyNodes { .. } | SpecError::Yaml(_)),
        "{err}"
    );
    assert!(start.elapsed().as_secs() < 20);

    // Wide rather than deep: one big anchor aliased many times slips under serde_yaml_ng's
    // own repetition limit (100 jumps per event); the value budget catches it.
    let mut wide = String::from("openapi: 3.0.0\nbig: &big [");
    wide.push_str(&"x, ".repeat(5_000));
    wide.push_str("x]\nmany: [");
    wide.push_str(&"*big, ".repeat(5_000));
    wide.push_str("*big]\n");
    let limits = Limits {
        max_nodes: 1_000_000,
        ..Limits::default()
    };
    let options = ParseOptions {
        format: Format::Yaml,
        limits,
        ..ParseOptions::default()
    };
    let err = Spec::parse_with(wide.as_bytes(), &options).unwrap_err();
    assert!(
        matches!(err, SpecError::TooManyNodes { max: 1_000_000, .. }),
        "{err}"
    );

    // Strings count too: a long string aliased many times.
    let mut long = format!("openapi: 3.0.0\ns: &s {}\nmany: [", "y".repeat(100_000));
    long.push_str(&"*s, ".repeat(2_000));
    long.push_str("*s]\n");
    let limits = Limits {
        max_string_bytes: 10 << 20,
        ..Limits::default()
    };
    let options = ParseOptions {
        format: Format::Yaml,
        limits,
        ..ParseOptions::default()
    };
    assert!(matches!(
        Spec::parse_with(long.as_bytes(), &options),
        Err(SpecError::TooManyBytes { .. })
    ));
}

#[test]
fn circular_schemas_terminate() {
    let components = json!({"schemas": {
        "Self": {"type": "object", "properties": {"me": {"$ref": "#/components/schemas/Self"}, "list": {"type": "array", "items": {"$ref": "#/components/schemas/Self"}}}},
        "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
        "B": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}},
        "All": {"allOf": [{"$ref": "#/components/schemas/Base"}, {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/components/schemas/All"}}}}]},
        "Base": {"type": "object", "properties": {"parent": {"$ref": "#/components/schemas/All"}}},
        "Loop1": {"$ref": "#/components/schemas/Loop2"},
        "Loop2": {"$ref": "#/components/schemas/Loop1"}
    }});
    let body = |name: &str| json!({"content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}});
    let response = |name: &str| json!({"200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}}});
    let paths = json!({
        "/self": {"post": {"operationId": "self", "requestBody": body("Self"), "responses": response("Self")}},
        "/mutual": {"post": {"operationId": "mutual", "requestBody": body("A"), "responses": response("B")}},
        "/all": {"post": {"operationId": "all", "requestBody": body("All"), "responses": response("All")}},
        "/loop": {"post": {"operationId": "loop", "requestBody": body("Loop1"), "responses": {}}}
    });
    let spec = Spec::parse(&doc(&paths, &components), Format::Json).unwrap();

    let op = spec.operation("self").unwrap();
    let body_schema = &op.input_schema["properties"]["body"];
    assert_eq!(
        body_schema["properties"]["me"],
        json!({"$ref": "#/$defs/Self"})
    );
    assert_eq!(
        body_schema["properties"]["list"]["items"],
        json!({"$ref": "#/$defs/Self"})
    );
    assert_eq!(
        op.input_schema["$defs"]["Self"]["properties"]["me"],
        json!({"$ref": "#/$defs/Self"})
    );
    let out = op.output_schema.unwrap();
    assert_eq!(
        out["$defs"]["Self"]["properties"]["me"],
        json!({"$ref": "#/$defs/Self"})
    );

    let op = spec.operation("mutual").unwrap();
    assert_eq!(
        op.input_schema["properties"]["body"]["properties"]["b"]["properties"]["a"],
        json!({"$ref": "#/$defs/A"})
    );
    assert_eq!(
        op.input_schema["$defs"]["A"]["properties"]["b"]["properties"]["a"],
        json!({"$ref": "#/$defs/A"})
    );
    let out = op.output_schema.unwrap();
    assert_eq!(
        out["properties"]["a"]["properties"]["b"],
        json!({"$ref": "#/$defs/B"})
    );

    let op = spec.operation("all").unwrap();
    let all = &op.input_schema["properties"]["body"]["allOf"];
    assert_eq!(
        all[0]["properties"]["parent"],
        json!({"$ref": "#/$defs/All"})
    );
    assert_eq!(
        all[1]["properties"]["kids"]["items"],
        json!({"$ref": "#/$defs/All"})
    );
    assert!(op.input_schema["$defs"]["All"]["allOf"].is_array());

    // A `$ref` that only ever refers to `$ref`s has no schema: an error, not a hang.
    let err = spec.operation("loop").unwrap_err();
    assert!(
        matches!(err, OperationError::Ref(RefError::ChainTooLong { .. })),
        "{err}"
    );
    assert!(
        err.to_string().contains("#/components/schemas/Loop1"),
        "{err}"
    );
}

#[test]
fn dangling_refs_are_named() {
    let paths = json!({
        "/a": {"get": {"operationId": "a", "parameters": [{"$ref": "#/components/parameters/Missing"}], "responses": {}}},
        "/b": {"post": {"operationId": "b", "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/No~1pe"}}}}, "responses": {}}}
    });
    let spec = Spec::parse(&doc(&paths, &json!({})), Format::Json).unwrap();
    let err = spec.operation("a").unwrap_err();
    assert!(matches!(
        err,
        OperationError::Ref(RefError::Dangling { .. })
    ));
    let text = err.to_string();
    assert!(
        text.contains("#/components/parameters/Missing")
            && text.contains("/paths/~1a/get/parameters/0"),
        "{text}"
    );
    let text = spec.operation("b").unwrap_err().to_string();
    assert!(text.contains("#/components/schemas/No~1pe"), "{text}");
}

#[test]
fn odd_operation_ids_get_unique_clean_names() {
    let op = |id: &str| json!({"operationId": id, "responses": {}});
    let paths = json!({
        "/1": {"get": op("repos/get-content"), "put": op("get user!"), "post": op("ユーザー"), "delete": op("list\u{202E}Pets\u{200B}")},
        "/2": {"get": op("listPets"), "put": op("LISTPETS"), "post": op("listpets"), "delete": op("!!!")},
        "/a/b": {"get": {"responses": {}}},
        "/a_b": {"get": {"responses": {}}},
        "/3": {"get": op(&"x".repeat(300)), "put": op(&format!("{}y", "x".repeat(299)))}
    });
    let spec = Spec::parse(&doc(&paths, &json!({})), Format::Json).unwrap();
    let names: Vec<&str> = spec.operations().iter().map(|o| o.name.as_str()).collect();
    assert_eq!(
        &names[..8],
        [
            "repos_get-content",
            "get_user",
            "u30e6u30fcu30b6u30fc",
            "listPets",
            "listPets_2",
            "LISTPETS_3",
            "listpets_4",
            "delete_2",
        ]
    );
    assert_eq!(&names[8..10], ["get_a_b", "get_a_b_2"]);
    assert!(
        names[10].len() <= openapi::MAX_NAME
            && names[11].len() <= openapi::MAX_NAME
            && names[10] != names[11]
    );
    let lower: std::collections::HashSet<String> =
        names.iter().map(|n| n.to_ascii_lowercase()).collect();
    assert_eq!(lower.len(), names.len(), "unique case-insensitively");
    for name in &names {
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "{name}"
        );
    }
    // Every rename is a warning naming both operations; nothing is dropped.
    assert_eq!(spec.operations().len(), 12);
    let renames: Vec<&str> = spec.warnings().iter().map(|w| w.message.as_str()).collect();
    assert_eq!(renames.len(), 4, "{renames:?}");
    // The invisible characters dropped, `list\u{202E}Pets` took `listPets` first.
    assert!(
        renames[0].contains("GET /2") && renames[0].contains("like DELETE /1"),
        "{}",
        renames[0]
    );
    // Both the tool name and the original operationId find an operation.
    assert_eq!(
        spec.operation("repos/get-content").unwrap().name,
        "repos_get-content"
    );
    assert_eq!(
        spec.operation("LISTPETS").unwrap().path,
        "/1",
        "names are case-insensitive first"
    );
    assert_eq!(spec.operation("LISTPETS_3").unwrap().path, "/2");
}

#[test]
fn invisible_characters_do_not_reach_descriptions() {
    let paths = json!({"/x": {"get": {"operationId": "x", "summary": "Safe\u{202E}txt.exe", "description": "a\u{200B}b\u{E0041}c\u{0007}",
        "parameters": [{"name": "p", "in": "query", "description": "d\u{2066}e", "schema": {"type": "string"}}], "responses": {}}}});
    let spec = Spec::parse(&doc(&paths, &json!({})), Format::Json).unwrap();
    assert_eq!(spec.operations()[0].summary.as_deref(), Some("Safetxt.exe"));
    let op = spec.operation("x").unwrap();
    assert_eq!(op.description, "Safetxt.exe\n\nabc");
    assert_eq!(op.input_schema["properties"]["p"]["description"], "de");
    let long = json!({"/x": {"get": {"operationId": "x", "description": "z".repeat(100_000), "responses": {}}}});
    let spec = Spec::parse(&doc(&long, &json!({})), Format::Json).unwrap();
    assert!(spec.operation("x").unwrap().description.chars().count() <= 4_001);
}

#[test]
fn swagger_2_and_other_non_openapi_3_documents_are_refused() {
    let err = Spec::parse(
        br#"{"swagger": "2.0", "info": {}, "paths": {}}"#,
        Format::Json,
    )
    .unwrap_err();
    assert!(matches!(err, SpecError::Swagger2 { .. }));
    assert!(err.to_string().contains("swagger2openapi"), "{err}");
    let err = Spec::parse(b"swagger: '2.0'\npaths: {}\n", Format::Sniff).unwrap_err();
    assert!(matches!(err, SpecError::Swagger2 { .. }));
    assert!(matches!(
        Spec::parse(br#"{"info": {}}"#, Format::Json),
        Err(SpecError::NotOpenApi)
    ));
    assert!(
        matches!(Spec::parse(b"openapi: 4.0.0\n", Format::Yaml), Err(SpecError::UnsupportedVersion(v)) if v == "4.0.0")
    );
    assert!(matches!(
        Spec::parse(b"[1]", Format::Json),
        Err(SpecError::NotAnObject)
    ));
    assert!(matches!(
        Spec::parse(b"{\"openapi\": ", Format::Json),
        Err(SpecError::Json(_))
    ));
    assert!(matches!(
        Spec::parse(b"openapi: [", Format::Yaml),
        Err(SpecError::Yaml(_))
    ));
    // Unquoted YAML versions are numbers.
    assert!(Spec::parse(b"openapi: 3.0\npaths: {}\n", Format::Yaml).is_ok());
    let err = Spec::parse(br#"{"openapi": "3.0.0", "paths": []}"#, Format::Json).unwrap_err();
    assert!(err.to_string().contains("/paths"), "{err}");
}

#[test]
fn broken_operations_fail_alone() {
    let paths = json!({
        "/ok": {"get": {"operationId": "ok", "responses": {}}},
        "/bad/{id}": {"get": {"operationId": "noParam", "responses": {}}},
        "/where": {"get": {"operationId": "badIn", "parameters": [{"name": "x", "in": "body"}], "responses": {}}},
        "/hdr": {"get": {"operationId": "badHeader", "parameters": [{"name": "X\r\nEvil", "in": "header"}], "responses": {}}},
        "/xml": {"post": {"operationId": "xmlOnly", "requestBody": {"required": true, "content": {"application/xml": {}}}, "responses": {}}},
        "nopath": {"get": {"operationId": "nopath", "responses": {}}}
    });
    let spec = Spec::parse(&doc(&paths, &json!({})), Format::Json).unwrap();
    assert!(spec.operation("ok").is_ok());
    assert!(
        spec.operation("noParam")
            .unwrap_err()
            .to_string()
            .contains("{id}")
    );
    assert!(
        spec.operation("badIn")
            .unwrap_err()
            .to_string()
            .contains("in: body")
    );
    assert!(spec.operation("badHeader").is_err());
    assert!(
        spec.operation("xmlOnly")
            .unwrap_err()
            .to_string()
            .contains("application/xml")
    );
    assert!(spec.warnings().iter().any(|w| w.message.contains("nopath")));
}
