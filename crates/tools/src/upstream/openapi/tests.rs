//! The host side of OpenAPI calls without a network: which hops are made, where the
//! credential goes, what an answer becomes.

use std::collections::BTreeMap;

use reqwest::header::HeaderMap;
use serde_json::json;
use url::Url;

use super::http::{ResolvedAuth, apply, check_hop};
use super::*;
use crate::config::{ApiKeyIn, OpenApiAuth};

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

#[test]
fn hops_follow_the_fetch_guards_rules() {
    let none = Reach::default();
    let loopback = Reach::of_addresses(&["127.0.0.1"]).unwrap();
    for (u, reach) in [
        ("http://169.254.169.254/latest/meta-data", &loopback),
        ("http://127.0.0.1:8080/x", &none),
        ("http://[::1]/x", &loopback),
        ("http://0x7f.1/x", &none),
        ("http://10.0.0.1/x", &loopback),
        ("http://[::ffff:127.0.0.1]/x", &none),
    ] {
        let e = check_hop(reach, &url(u), false).unwrap_err();
        assert!(matches!(e, CallError::Special { .. }), "{u}: {e}");
    }
    for u in [
        "ftp://example.com/x",
        "http://user:pw@example.com/x",
        "file:///etc/passwd",
    ] {
        let e = check_hop(&none, &url(u), true).unwrap_err();
        assert!(e.to_string().contains("http(s)"), "{u}: {e}");
    }
    check_hop(&loopback, &url("http://127.0.0.1:8080/x"), false).unwrap();
    check_hop(&none, &url("https://api.github.com/x"), false).unwrap();
}

#[test]
fn the_credential_goes_where_the_entry_or_the_document_says() {
    let schemes = BTreeMap::from([(
        "k".to_string(),
        openapi::SecurityScheme::ApiKey {
            name: "api_key".into(),
            location: openapi::ApiKeyLocation::Query,
        },
    )]);
    let key = |name: Option<&str>, location| OpenApiAuth::ApiKey {
        name: name.map(str::to_string),
        location,
        value: "s3cret-value".into(),
    };
    let mut u = url("https://api.example.com/v1/x?a=1");
    let mut h = HeaderMap::new();
    apply(
        &ResolvedAuth::resolve(&key(None, None), &schemes).unwrap(),
        &mut u,
        &mut h,
    )
    .unwrap();
    assert_eq!(
        u.as_str(),
        "https://api.example.com/v1/x?a=1&api_key=s3cret-value"
    );
    let mut u = url("https://api.example.com/");
    apply(
        &ResolvedAuth::resolve(&key(Some("sid"), Some(ApiKeyIn::Cookie)), &schemes).unwrap(),
        &mut u,
        &mut h,
    )
    .unwrap();
    assert_eq!(h["cookie"], "sid=s3cret-value");
    let basic = OpenApiAuth::Basic {
        username: "ann".into(),
        password: "pw".into(),
    };
    apply(
        &ResolvedAuth::resolve(&basic, &schemes).unwrap(),
        &mut u,
        &mut h,
    )
    .unwrap();
    assert_eq!(h["authorization"], "Basic YW5uOnB3");
    assert!(format!("{h:?}").contains("Sensitive"), "{h:?}");
    // No scheme in the document and no name: the entry must say.
    assert!(ResolvedAuth::resolve(&key(None, None), &BTreeMap::new()).is_err());
    // A value that would inject a header is refused.
    let bad = OpenApiAuth::Bearer("x\r\nX-Injected: 1".into());
    let mut h = HeaderMap::new();
    assert!(
        apply(
            &ResolvedAuth::resolve(&bad, &schemes).unwrap(),
            &mut u,
            &mut h
        )
        .is_err()
    );
}

#[test]
fn answers_become_results() {
    let r = result(openapi::ResponseBody::Json(json!({"a": 1})));
    assert_eq!(r.structured_content, Some(json!({"a": 1})));
    let r = result(openapi::ResponseBody::Json(json!([1, 2])));
    assert_eq!(r.structured_content, None);
    assert_eq!(r.content[0].as_text().unwrap().text, "[1,2]");
    let r = result(openapi::ResponseBody::Binary {
        mime: "image/png".into(),
        bytes: vec![1, 2, 3],
    });
    assert!(matches!(r.content[0], ContentBlock::Image(_)));
    let r = result(openapi::ResponseBody::Binary {
        mime: "application/pdf".into(),
        bytes: vec![1, 2, 3],
    });
    assert!(matches!(r.content[0], ContentBlock::Resource(_)));
}

/// The client-credentials grant: one token request (form-encoded, the secret in the body),
/// the token reused until it expires, sent as a bearer token to the API's origin only.
#[tokio::test]
async fn client_credentials_are_fetched_once_and_sent_as_a_bearer_token() {
    use test_support::rawhttp::{RawHttp, Reply};
    let server = RawHttp::start(std::collections::HashMap::from([(
        "/token".to_string(),
        Reply::Fixed(
            200,
            "application/json",
            br#"{"access_token": "tok-FETCHED-123456", "expires_in": 3600}"#.to_vec(),
        ),
    )]));
    let reach = Reach::of_addresses(&["127.0.0.1"]).unwrap();
    let http = http::Http {
        client: crate::net::guarded_client(
            reach.clone(),
            crate::net::system_lookup(),
            http::CONNECT_TIMEOUT,
        )
        .unwrap(),
        reach,
        auth: Some(ResolvedAuth::ClientCredentials {
            token_url: format!("{}/token", server.base_url()),
            client_id: "cid".into(),
            client_secret: "cs-SECRET-0987654321".into(),
            scopes: vec!["read".into(), "write".into()],
        }),
        token: Default::default(),
    };
    for _ in 0..2 {
        let out = http::Outgoing {
            method: reqwest::Method::GET,
            url: url(&format!("{}/api/x", server.base_url())),
            headers: HeaderMap::new(),
            body: None,
        };
        let answer = http.send(out, 1 << 20).await.unwrap();
        assert_eq!(answer.status, 200);
    }
    let arrived = server.requests();
    let token_requests: Vec<_> = arrived
        .iter()
        .filter(|a| a.line.starts_with("POST /token"))
        .collect();
    assert_eq!(token_requests.len(), 1, "{arrived:?}");
    let form = String::from_utf8_lossy(&token_requests[0].body).into_owned();
    assert!(
        form.contains("grant_type=client_credentials")
            && form.contains("client_secret=cs-SECRET-0987654321")
            && form.contains("scope=read+write"),
        "{form}"
    );
    let calls: Vec<_> = arrived
        .iter()
        .filter(|a| a.line.starts_with("GET /api/x"))
        .collect();
    assert_eq!(calls.len(), 2);
    assert!(
        calls
            .iter()
            .all(|c| c.head.contains("authorization: Bearer tok-FETCHED-123456")),
        "{calls:?}"
    );
}
