//! `serve --http` as an OAuth 2.1 resource server: the mock authorization server in
//! test-support publishes its metadata and JWKS and signs access tokens; the built binary
//! publishes its protected-resource metadata, challenges with `resource_metadata`, and takes
//! a valid JWT's subject as the principal. Every way a token can be wrong is refused.

use serde_json::{Value, json};
use test_support::http::{Generation, HttpServer, McpHttp};
use test_support::jwt::{SigningKey, now, unsigned};
use test_support::oauth::{MockOAuth, MockOptions};

use crate::common::EXE;

async fn setup(extra: &[&str]) -> (MockOAuth, HttpServer) {
    let mock = MockOAuth::start(MockOptions::default()).await;
    let mut args = vec![
        "--oauth-issuer",
        mock.issuer.as_str(),
        "--oauth-scope",
        "mcp:tools",
    ];
    args.extend_from_slice(extra);
    let s = HttpServer::start(EXE.as_ref(), json!({}), &args, &[]).await;
    (mock, s)
}

#[tokio::test]
async fn metadata_and_the_challenge_name_the_authorization_server() {
    let (mock, s) = setup(&[]).await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let (status, body) = s.get(path).await;
        assert_eq!(status, 200, "{path}");
        let doc: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(doc["resource"], json!(s.url));
        assert_eq!(doc["authorization_servers"], json!([mock.issuer]));
        assert_eq!(doc["scopes_supported"], json!(["mcp:tools"]));
    }
    let r = McpHttp::new(&s.url, None, Generation::Stateless)
        .request("server/discover", json!({}))
        .await;
    assert_eq!(r.status, 401);
    let challenge = r.header("www-authenticate").unwrap();
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            s.base
        )),
        "{challenge}"
    );
    let (status, body) = s.get("/readyz").await;
    assert!(
        status == 200 || !body.contains("authorization server"),
        "keys were loaded at start: {body}"
    );
}

/// A valid token's subject is the principal, in both generations; two subjects do not see
/// each other's sessions.
#[tokio::test]
async fn a_valid_token_names_its_subject_as_the_principal() {
    let (mock, s) = setup(&[]).await;
    let alice = mock.jwt(&mock.claims("alice", &s.url, "mcp:tools openid"));
    let bob = mock.jwt(&mock.claims("bob", &s.url, "mcp:tools"));
    for generation in [Generation::Sessions, Generation::Stateless] {
        let a = McpHttp::connect(&s.url, Some(&alice), generation).await;
        let b = McpHttp::connect(&s.url, Some(&bob), generation).await;
        let health = a.call("health", json!({})).await;
        assert_eq!(
            health["structuredContent"]["principal"],
            json!({"name": "alice", "via": "oauth"})
        );
        let (v, is_error) = a
            .exec(json!({"code": "await store('x', 'alice'); return 1", "session": "new"}))
            .await;
        assert!(!is_error, "{v}");
        let id = v["session"]["id"].as_str().unwrap();
        let (v, is_error) = b
            .exec(json!({"code": "return await load('x')", "session": id}))
            .await;
        assert!(is_error, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("unknown session"),
            "{v}"
        );
    }
    // The audit log names OAuth principals as such.
    let audit = std::fs::read_to_string(s.audit_path()).unwrap();
    assert!(audit.contains("\"client\":\"oauth:alice\""), "{audit}");
}

#[tokio::test]
async fn every_wrong_token_is_refused() {
    let (mock, s) = setup(&[]).await;
    let t = now();
    let good = mock.claims("mallory", &s.url, "mcp:tools");
    let with = |k: &str, v: Value| {
        let mut c = good.clone();
        c[k] = v;
        c
    };
    let without = |k: &str| {
        let mut c = good.clone();
        c.as_object_mut().unwrap().remove(k);
        c
    };
    let tampered = {
        let token = mock.jwt(&good);
        let parts: Vec<&str> = token.split('.').collect();
        use base64::Engine;
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(with("sub", json!("admin")).to_string());
        format!("{}.{}.{}", parts[0], payload, parts[2])
    };
    let cases: Vec<(&str, String)> = vec![
        ("expired", mock.jwt(&with("exp", json!(t - 3600)))),
        ("not yet valid", mock.jwt(&with("nbf", json!(t + 3600)))),
        (
            "another issuer",
            mock.jwt(&with("iss", json!("https://evil.example"))),
        ),
        (
            "another audience",
            mock.jwt(&with("aud", json!("http://127.0.0.1:1/mcp"))),
        ),
        ("no audience", mock.jwt(&without("aud"))),
        ("no expiry", mock.jwt(&without("exp"))),
        ("no subject", mock.jwt(&without("sub"))),
        ("alg none", unsigned("none", &good)),
        ("HMAC", unsigned("HS256", &good)),
        (
            "an unpublished key",
            SigningKey::generate("key-1").sign(&good),
        ),
        ("a payload changed after signing", tampered),
        ("not a JWT", "a.b.c".to_string()),
    ];
    for (what, token) in &cases {
        let r = McpHttp::new(&s.url, Some(token), Generation::Stateless)
            .request("server/discover", json!({}))
            .await;
        assert_eq!(r.status, 401, "{what}: {r:?}");
        let challenge = r.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
        assert!(
            challenge.contains("resource_metadata="),
            "{what}: {challenge}"
        );
    }
    // Valid but without the required scope: 403 insufficient_scope naming it.
    let r = McpHttp::new(
        &s.url,
        Some(&mock.jwt(&with("scope", json!("openid profile")))),
        Generation::Stateless,
    )
    .request("server/discover", json!({}))
    .await;
    assert_eq!(r.status, 403, "{r:?}");
    let challenge = r.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\", scope=\"mcp:tools\""),
        "{challenge}"
    );
    // The same claims, correctly signed, pass.
    let c = McpHttp::connect(&s.url, Some(&mock.jwt(&good)), Generation::Stateless).await;
    assert_eq!(c.request("tools/list", json!({})).await.status, 200);
}

/// Keys rotate: a token signed with a new key makes the server fetch the JWKS again; tokens
/// naming keys nobody publishes do not make it fetch again and again.
#[tokio::test]
async fn rotated_keys_are_fetched_and_unknown_keys_do_not_hammer_the_issuer() {
    let (mock, s) = setup(&[]).await;
    let fetches = || mock.count("jwks");
    assert_eq!(fetches(), 1, "fetched once at start: {:?}", mock.events());
    mock.rotate_key();
    let fresh = mock.jwt(&mock.claims("carol", &s.url, "mcp:tools"));
    let c = McpHttp::connect(&s.url, Some(&fresh), Generation::Stateless).await;
    assert_eq!(c.request("tools/list", json!({})).await.status, 200);
    assert_eq!(fetches(), 2);
    let rogue = SigningKey::generate("rogue");
    for i in 0..10 {
        let token = rogue.sign(&mock.claims(&format!("m{i}"), &s.url, "mcp:tools"));
        let r = McpHttp::new(&s.url, Some(&token), Generation::Stateless)
            .request("server/discover", json!({}))
            .await;
        assert_eq!(r.status, 401);
    }
    assert_eq!(fetches(), 2, "no refetch within the minimum interval");
}

/// Static tokens and OAuth side by side: each authenticates its own principals, which stay
/// distinct even under the same name.
#[tokio::test]
async fn static_tokens_and_oauth_together() {
    let dir = test_support::TempDir::new("both");
    let file = dir.0.join("tokens");
    std::fs::write(&file, "alice=static-token-of-alice-0001\n").unwrap();
    test_support::set_mode(&file, 0o600);
    let (mock, s) = setup(&["--tokens-file", file.to_str().unwrap()]).await;
    let via_token = McpHttp::connect(
        &s.url,
        Some("static-token-of-alice-0001"),
        Generation::Sessions,
    )
    .await;
    let via_oauth = McpHttp::connect(
        &s.url,
        Some(&mock.jwt(&mock.claims("alice", &s.url, "mcp:tools"))),
        Generation::Sessions,
    )
    .await;
    let who = |v: Value| v["structuredContent"]["principal"].clone();
    assert_eq!(
        who(via_token.call("health", json!({})).await),
        json!({"name": "alice", "via": "token"})
    );
    assert_eq!(
        who(via_oauth.call("health", json!({})).await),
        json!({"name": "alice", "via": "oauth"})
    );
    let (v, _) = via_token
        .exec(json!({"code": "return 1", "session": "new"}))
        .await;
    let id = v["session"]["id"].as_str().unwrap();
    let (v, is_error) = via_oauth
        .exec(json!({"code": "return 2", "session": id}))
        .await;
    assert!(is_error, "{v}");
}

/// The caller's credentials stay with us: neither a static bearer token nor an OAuth access
/// token reaches an upstream, in any header, `_meta`, argument or body of any request an HTTP
/// upstream receives (it records them all), nor in the environment or `_meta` of a stdio
/// upstream, in either generation.
#[tokio::test]
async fn a_callers_token_never_reaches_an_upstream() {
    use test_support::recording::RecordingUpstream;
    let web = RecordingUpstream::start("web").await;
    let mut fx = test_support::fixture_entry("fx");
    fx["env"] = json!({"FIXTURE_META_TOOLS": "1"});
    let servers = json!({"fx": fx, "web": {"type": "http", "url": web.url}});
    let dir = test_support::TempDir::new("tokens-stay");
    let file = dir.0.join("tokens");
    let static_token = "static-token-of-carol-7f3a9c2e41";
    let env_token = "env-token-of-erin-5b8d0e11aa";
    std::fs::write(&file, format!("carol={static_token}\n")).unwrap();
    test_support::set_mode(&file, 0o600);
    let mock = MockOAuth::start(MockOptions::default()).await;
    let s = HttpServer::start(
        EXE.as_ref(),
        servers,
        &[
            "--oauth-issuer",
            mock.issuer.as_str(),
            "--oauth-scope",
            "mcp:tools",
            "--tokens-file",
            file.to_str().unwrap(),
        ],
        // A token given in our environment: a stdio upstream's environment must not get it.
        &[("CODE_EXECUTOR_HTTP_TOKENS", &format!("erin={env_token}"))],
    )
    .await;
    let jwt = mock.jwt(&mock.claims("dave", &s.url, "mcp:tools"));
    // Distinctive pieces of the JWT too (header, claims, signature), in case a part leaked.
    let jwt_parts: Vec<String> = jwt.split('.').map(str::to_string).collect();
    let code = "const seen = []; \
        seen.push(await tools.web.request_meta({})); \
        seen.push(await tools.web.echo({message: 'hello'})); \
        seen.push(await tools.fx.request_meta({})); \
        seen.push(await tools.fx.environment({})); \
        return seen;";
    let py = "[tools.web.request_meta(), tools.fx.request_meta(), tools.fx.environment()]";
    let mut answers = Vec::new();
    for token in [static_token, env_token, jwt.as_str()] {
        for generation in [Generation::Sessions, Generation::Stateless] {
            let c = McpHttp::connect(&s.url, Some(token), generation).await;
            let (v, is_error) = c.exec(json!({"code": code})).await;
            assert!(!is_error, "{v}");
            answers.push(v);
            let r = c.call("execute_python", json!({"code": py})).await;
            assert_ne!(r["isError"], json!(true), "{r}");
            answers.push(r["structuredContent"].clone());
        }
    }
    // The upstream calls happened, with their headers recorded.
    let calls = web.tool_calls();
    assert!(calls.len() >= 18, "{} calls recorded", calls.len());
    assert!(
        answers
            .iter()
            .all(|a| a["result"][0]["headers"]["host"].is_string()),
        "request_meta over HTTP reports the headers it got: {answers:?}"
    );
    let leaks = |hay: &str| -> Vec<&str> {
        let mut needles = vec![static_token, env_token, jwt.as_str()];
        needles.extend(jwt_parts.iter().map(String::as_str));
        needles.into_iter().filter(|n| hay.contains(n)).collect()
    };
    for r in web.requests() {
        for (k, v) in &r.headers {
            assert!(
                !k.eq_ignore_ascii_case("authorization"),
                "an Authorization header reached the upstream: {v}"
            );
            assert!(leaks(v).is_empty(), "header {k} carries a token");
        }
        assert!(
            leaks(&r.body).is_empty(),
            "a body carries a token: {}",
            r.body
        );
    }
    for a in &answers {
        let text = a.to_string();
        assert!(leaks(&text).is_empty(), "an upstream saw a token: {text}");
    }
    // The environment of the stdio upstream was really read (PATH is there).
    assert!(
        answers[0]["result"][3]["PATH"].is_string(),
        "{}",
        answers[0]["result"][3]
    );
}
