//! OpenAPI entries (`"type": "openapi"`): their shape, paths relative to the config file,
//! credentials kept out of `config show` and `Debug` but given to the redactor, and errors
//! that say what to write.

use super::spec::{ApiKeyIn, DocumentLocation, OpenApiAuth};
use super::*;
use std::path::PathBuf;

fn parse(text: &str) -> Config {
    Config::parse(text, Path::new("/cfg/mcp.json"), None).unwrap()
}

fn openapi(c: &Config, name: &str) -> spec::OpenApiSpec {
    match &c.servers[name].transport {
        Transport::OpenApi(o) => (**o).clone(),
        other => panic!("{name} is {other:?}"),
    }
}

const TOKEN: &str = "ghp_openapiBearer0123456789abcdef";
const KEY: &str = "inv-key-ZYXW9876543210-secret";

#[test]
fn reads_an_openapi_entry_with_a_relative_spec_and_every_kind_of_auth() {
    let c = parse(&format!(
        r#"{{"mcpServers": {{
          "gh": {{"type": "openapi", "spec": "./specs/github.json", "baseUrl": "https://api.github.com",
                  "auth": {{"bearer": "{TOKEN}"}}}},
          "inv": {{"type": "openapi", "spec": "https://example.com/inv.yaml", "serverVariables": {{"version": "v1"}},
                   "auth": {{"apiKey": {{"name": "X-API-Key", "in": "header", "value": "{KEY}"}}}},
                   "allowAddresses": ["127.0.0.1", "::1"], "refsDirectory": "schemas"}},
          "basic": {{"type": "openapi", "spec": "/abs/api.yaml", "auth": {{"basic": {{"username": "ann", "password": "pw-Basic-0123456789"}}}}}},
          "cc": {{"type": "openapi", "spec": "a.json", "auth": {{"oauth2ClientCredentials": {{"tokenUrl": "https://auth.example.com/token", "clientId": "cid", "clientSecret": "cs-0123456789abcdef", "scopes": ["read"]}}}}}}
        }}}}"#
    ));
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let gh = openapi(&c, "gh");
    assert_eq!(
        gh.document,
        DocumentLocation::File(PathBuf::from("/cfg/./specs/github.json"))
    );
    assert_eq!(gh.base_url.as_deref(), Some("https://api.github.com"));
    assert_eq!(gh.auth, Some(OpenApiAuth::Bearer(TOKEN.into())));
    let inv = openapi(&c, "inv");
    assert_eq!(
        inv.document,
        DocumentLocation::Url("https://example.com/inv.yaml".into())
    );
    assert_eq!(inv.refs_directory, Some(PathBuf::from("/cfg/schemas")));
    assert!(matches!(
        inv.auth,
        Some(OpenApiAuth::ApiKey {
            location: Some(ApiKeyIn::Header),
            ..
        })
    ));
    assert_eq!(
        openapi(&c, "basic").document,
        DocumentLocation::File(PathBuf::from("/abs/api.yaml"))
    );
    // Every credential reaches the redactor; none shows in `config show` or `Debug`.
    let secrets = secret_values(&c);
    for s in [TOKEN, KEY, "pw-Basic-0123456789", "cs-0123456789abcdef"] {
        assert!(secrets.iter().any(|v| v == s), "{s} not among {secrets:?}");
    }
    let shown = c.describe().to_string();
    let debug = format!("{c:?}");
    for s in [TOKEN, KEY, "pw-Basic-0123456789", "cs-0123456789abcdef"] {
        assert!(!shown.contains(s), "config show leaks {s}: {shown}");
        assert!(!debug.contains(s), "Debug leaks {s}");
    }
    assert!(shown.contains("\"transport\":\"openapi\""), "{shown}");
    assert!(shown.contains("X-API-Key"), "{shown}");
}

#[test]
fn a_bad_openapi_entry_says_what_to_write() {
    let c = parse(
        r#"{"mcpServers": {
          "nospec": {"type": "openapi"},
          "ftp": {"type": "openapi", "spec": "ftp://x/y.json"},
          "auth": {"type": "openapi", "spec": "a.json", "auth": {"token": "x"}},
          "where": {"type": "openapi", "spec": "a.json", "auth": {"apiKey": {"in": "body", "value": "k"}}},
          "addr": {"type": "openapi", "spec": "a.json", "allowAddresses": ["localhost"]},
          "base": {"type": "openapi", "spec": "a.json", "baseUrl": "file:///etc"}
        }}"#,
    );
    assert!(c.servers.is_empty(), "{:?}", c.servers.keys());
    let w = c.warnings.join("\n");
    for needle in [
        "\"spec\" is missing",
        "ftp://x/y.json",
        "write one of",
        "must be header, query or cookie",
        "allowAddresses",
        "baseUrl",
    ] {
        assert!(w.contains(needle), "{needle} not in {w}");
    }
}

#[test]
fn openapi_keys_on_another_kind_of_entry_are_keys_not_understood() {
    let c = parse(
        r#"{"mcpServers": {"s": {"command": "x", "auth": {"bearer": "t"}, "spec": "a.json"}}}"#,
    );
    assert!(c.servers.contains_key("s"));
    let w = c.warnings.join("\n");
    assert!(w.contains("auth") && w.contains("spec"), "{w}");
}
