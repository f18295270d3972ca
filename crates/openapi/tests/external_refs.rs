//! `$ref`s to files and URLs: refused by default; with a granted directory, relative files
//! inside it are read and nothing else is.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use openapi::{Format, OperationError, ParseOptions, RefError, RefPolicy, Spec};
use serde_json::json;

/// A fresh directory under the system's temporary one, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "openapi-refs-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A document with one operation per reference, the reference as its body's schema.
fn doc_with(refs: &[&str]) -> Vec<u8> {
    let mut paths = serde_json::Map::new();
    for (i, r) in refs.iter().enumerate() {
        paths.insert(
            format!("/op{i}"),
            json!({"post": {"operationId": format!("op{i}"), "requestBody": {"content": {"application/json": {"schema": {"$ref": r}}}}, "responses": {}}}),
        );
    }
    json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": paths})
        .to_string()
        .into_bytes()
}

fn granted(dir: &Path, bytes: &[u8]) -> Spec {
    let options = ParseOptions {
        format: Format::Json,
        refs: RefPolicy::Directory(dir.to_path_buf()),
        ..ParseOptions::default()
    };
    Spec::parse_with(bytes, &options).unwrap()
}

fn ref_error(spec: &Spec, name: &str) -> RefError {
    match spec.operation(name) {
        Err(OperationError::Ref(e)) => e,
        other => panic!("{name}: expected a ref error, got {other:?}"),
    }
}

#[test]
fn external_refs_are_refused_by_default_naming_the_ref() {
    let refs = [
        "schemas/pet.yaml#/Pet",
        "https://example.com/pet.json#/Pet",
        "file:///etc/passwd",
        "/etc/passwd",
    ];
    let spec = Spec::parse(&doc_with(&refs), Format::Json).unwrap();
    assert_eq!(spec.operations().len(), 4, "listing does not need the refs");
    let e = ref_error(&spec, "op0");
    assert!(matches!(e, RefError::ExternalRefused { .. }));
    let text = e.to_string();
    assert!(
        text.contains("schemas/pet.yaml#/Pet") && text.contains("RefPolicy::Directory"),
        "{text}"
    );
    assert!(matches!(
        ref_error(&spec, "op1"),
        RefError::UrlRefused { .. }
    ));
    assert!(matches!(
        ref_error(&spec, "op2"),
        RefError::UrlRefused { .. }
    ));
    assert!(matches!(
        ref_error(&spec, "op3"),
        RefError::ExternalRefused { .. }
    ));
}

#[test]
fn a_granted_directory_serves_relative_files_and_nothing_outside() {
    let root = TempDir::new();
    let granted_dir = root.0.join("spec");
    write(
        &granted_dir.join("schemas/pet.yaml"),
        "Pet:\n  type: object\n  properties:\n    id: {$ref: 'common.json#/Id'}\n    friend: {$ref: '#/Pet'}\n",
    );
    write(
        &granted_dir.join("schemas/common.json"),
        r#"{"Id": {"type": "integer", "minimum": 1}}"#,
    );
    write(
        &granted_dir.join("schemas/escape.yaml"),
        "Up: {$ref: '../../outside.yaml#/Secret'}\n",
    );
    write(&granted_dir.join("weird name.yaml"), "X: {type: boolean}\n");
    write(
        &root.0.join("outside.yaml"),
        "Secret: {type: string, description: leaked}\n",
    );
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(root.0.join("outside.yaml"), granted_dir.join("link.yaml"))
            .unwrap();
        std::os::unix::fs::symlink(&root.0, granted_dir.join("linkdir")).unwrap();
    }
    let outside = root.0.join("outside.yaml");
    let absolute = format!("{}#/Secret", outside.display());
    let refs = [
        "schemas/pet.yaml#/Pet",
        "./schemas/common.json#/Id",
        "../outside.yaml#/Secret",
        "schemas/../../outside.yaml#/Secret",
        "%2E%2E/outside.yaml#/Secret",
        "link.yaml#/Secret",
        "linkdir/outside.yaml#/Secret",
        absolute.as_str(),
        "https://example.com/x.yaml#/Secret",
        "schemas/escape.yaml#/Up",
        "weird%20name.yaml#/X",
        "missing.yaml#/X",
        "schemas/pet.yaml#/Nope",
        "schemas\\..\\..\\outside.yaml#/Secret",
    ];
    let spec = granted(&granted_dir, &doc_with(&refs));

    let pet = spec.operation("op0").unwrap();
    let body = &pet.input_schema["properties"]["body"];
    assert_eq!(
        body["properties"]["id"],
        json!({"type": "integer", "minimum": 1}),
        "a ref relative to the referring file"
    );
    assert_eq!(
        body["properties"]["friend"],
        json!({"$ref": "#/$defs/Pet"}),
        "a cycle inside a file"
    );
    assert_eq!(
        pet.input_schema["$defs"]["Pet"]["properties"]["friend"],
        json!({"$ref": "#/$defs/Pet"})
    );
    assert_eq!(
        spec.operation("op1").unwrap().input_schema["properties"]["body"]["type"],
        "integer"
    );

    for (op, why) in [
        ("op2", "`..`"),
        ("op3", "`..`"),
        ("op4", "`..`"),
        ("op5", "outside"),
        ("op6", "outside"),
        ("op7", "absolute"),
    ] {
        let e = ref_error(&spec, op);
        assert!(matches!(e, RefError::PathRefused { .. }), "{op}: {e}");
        assert!(e.to_string().contains(why), "{op}: {e}");
    }
    assert!(matches!(
        ref_error(&spec, "op8"),
        RefError::UrlRefused { .. }
    ));
    let e = ref_error(&spec, "op9");
    assert!(
        matches!(e, RefError::PathRefused { .. }) && e.to_string().contains("../../outside.yaml"),
        "{e}"
    );
    assert_eq!(
        spec.operation("op10").unwrap().input_schema["properties"]["body"]["type"],
        "boolean"
    );
    assert!(matches!(ref_error(&spec, "op11"), RefError::File { .. }));
    assert!(matches!(
        ref_error(&spec, "op12"),
        RefError::Dangling { .. }
    ));
    assert!(matches!(
        ref_error(&spec, "op13"),
        RefError::PathRefused { .. }
    ));
    // Nothing from outside.yaml made it into any schema.
    for i in 0..refs.len() {
        if let Ok(op) = spec.operation(&format!("op{i}")) {
            assert!(!op.input_schema.to_string().contains("leaked"), "op{i}");
        }
    }
}

#[test]
fn a_missing_granted_directory_grants_nothing() {
    let spec = granted(
        Path::new("/nonexistent/openapi-refs"),
        &doc_with(&["pet.yaml#/Pet"]),
    );
    assert!(matches!(
        ref_error(&spec, "op0"),
        RefError::PathRefused { .. }
    ));
}

#[test]
fn files_referring_to_each_other_terminate() {
    let dir = TempDir::new();
    write(
        &dir.0.join("a.yaml"),
        "A:\n  type: object\n  properties:\n    b: {$ref: 'b.yaml#/B'}\n",
    );
    write(
        &dir.0.join("b.yaml"),
        "B:\n  type: object\n  properties:\n    a: {$ref: 'a.yaml#/A'}\n",
    );
    let spec = granted(&dir.0, &doc_with(&["a.yaml#/A"]));
    let op = spec.operation("op0").unwrap();
    let body = &op.input_schema["properties"]["body"];
    assert_eq!(
        body["properties"]["b"]["properties"]["a"],
        json!({"$ref": "#/$defs/A"})
    );
    assert_eq!(
        op.input_schema["$defs"]["A"]["properties"]["b"]["properties"]["a"],
        json!({"$ref": "#/$defs/A"})
    );
}

#[test]
fn referenced_files_share_the_documents_byte_budget() {
    let dir = TempDir::new();
    let big = format!(
        "X: {{type: string, description: '{}'}}\n",
        "z".repeat(4_000)
    );
    for i in 0..5 {
        write(&dir.0.join(format!("f{i}.yaml")), &big);
    }
    let refs: Vec<String> = (0..5).map(|i| format!("f{i}.yaml#/X")).collect();
    let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
    let bytes = doc_with(&refs);
    let limits = openapi::Limits {
        max_bytes: bytes.len() + 10_000,
        ..openapi::Limits::default()
    };
    let options = ParseOptions {
        format: Format::Json,
        limits,
        refs: RefPolicy::Directory(dir.0.clone()),
        ..ParseOptions::default()
    };
    let spec = Spec::parse_with(&bytes, &options).unwrap();
    let results: Vec<bool> = (0..5)
        .map(|i| spec.operation(&format!("op{i}")).is_ok())
        .collect();
    assert_eq!(results.iter().filter(|ok| **ok).count(), 2, "{results:?}");
    let failed = results.iter().position(|ok| !ok).unwrap();
    let e = ref_error(&spec, &format!("op{failed}"));
    assert!(e.to_string().contains("together exceed"), "{e}");
}
