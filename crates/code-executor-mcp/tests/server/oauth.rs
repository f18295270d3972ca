//! OAuth through the built binary: `code-executor-mcp login` against the mock authorization
//! server in test-support (run as a child process, its printed URL followed like a browser
//! would), then the server calling the MCP server that mock protects: the token file, the
//! bearer on calls, refresh on expiry and after a 401, the "run login" error, and the
//! attacks a login must refuse (a forged state, a code bound to another PKCE challenge).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::Harness;
use test_support::oauth::{MockOAuth, MockOptions, browse, location_of, pkce_pair};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use crate::common::EXE;

/// A fake user: a config dir (where tokens go) and an MCP config naming the protected
/// server `secure`.
struct User {
    root: PathBuf,
    servers: Value,
}

impl User {
    fn new(servers: Value) -> User {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let root = std::env::temp_dir().join(format!(
            "cem-oauth-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(
            root.join("mcp.json"),
            json!({ "mcpServers": servers }).to_string(),
        )
        .unwrap();
        User { root, servers }
    }

    fn for_mock(mock: &MockOAuth) -> User {
        User::new(json!({ "secure": { "type": "http", "url": mock.resource } }))
    }

    fn config_home(&self) -> PathBuf {
        self.root.join("config")
    }

    fn token_dir(&self) -> PathBuf {
        self.config_home().join("code-executor-mcp/oauth")
    }

    fn token_files(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.token_dir())
            .map(|d| {
                d.map(|e| e.unwrap().path())
                    .filter(|p| p.extension().is_some_and(|e| e == "json"))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn token_file(&self) -> PathBuf {
        let files = self.token_files();
        assert_eq!(files.len(), 1, "{files:?}");
        files[0].clone()
    }

    fn stored(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.token_file()).unwrap()).unwrap()
    }

    /// Makes the stored login look received longer ago than its token lives, as if that much
    /// time had passed: the server reads the file again when it changes, so its next request
    /// refreshes the token first. (No test waits for a token to expire by the clock.)
    fn expire_stored_token(&self) {
        let mut v = self.stored();
        let creds = &mut v["credentials"];
        let ttl = creds["token_response"]["expires_in"].as_u64().unwrap();
        let received = creds["token_received_at"].as_u64().unwrap();
        creds["token_received_at"] = json!(received - ttl - 60);
        std::fs::write(self.token_file(), serde_json::to_vec(&v).unwrap()).unwrap();
    }

    fn access_token(&self) -> String {
        self.stored()["credentials"]["token_response"]["access_token"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("XDG_CONFIG_HOME", self.config_home().display().to_string()),
            (
                "XDG_STATE_HOME",
                self.root.join("state").display().to_string(),
            ),
            (
                "CODE_EXECUTOR_CACHE_DIR",
                self.root.join("cache").display().to_string(),
            ),
        ]
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(EXE);
        cmd.arg("--config")
            .arg(self.root.join("mcp.json"))
            .arg("--no-discover")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in self.env() {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs a command to its end: (success, stdout, stderr).
    async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = tokio::time::timeout(Duration::from_secs(60), self.command(args).output())
            .await
            .expect("command timed out")
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Starts `login SERVER` and returns it once it printed the URL to open.
    async fn start_login(&self, server: &str) -> Login {
        let mut child = self
            .command(&["login", server, "--timeout", "60"])
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        let url = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = stderr.next_line().await.unwrap() {
                seen.push_str(&line);
                seen.push('\n');
                if line.trim().starts_with("http") {
                    return line.trim().to_string();
                }
            }
            panic!("login printed no URL:\n{seen}");
        })
        .await
        .expect("login printed no URL in time");
        let rest = tokio::spawn(async move {
            let mut out = seen;
            while let Ok(Some(line)) = stderr.next_line().await {
                out.push_str(&line);
                out.push('\n');
            }
            out
        });
        Login { child, url, rest }
    }

    async fn login(&self, server: &str) {
        let login = self.start_login(server).await;
        let (status, page) = browse(&login.url).await;
        assert_eq!(status, 200, "{page}");
        assert!(page.contains("Logged in"), "{page}");
        let (ok, stdout, stderr) = login.finish().await;
        assert!(ok, "login failed:\n{stderr}");
        assert!(
            stdout.contains(&format!("Logged in to \"{server}\"")),
            "{stdout}"
        );
    }

    async fn harness(&self, capture_log: bool, extra_env: &[(&str, &str)]) -> Harness {
        let env = self.env();
        let mut all: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        all.extend_from_slice(extra_env);
        if capture_log {
            Harness::start_capturing_log(EXE.as_ref(), self.servers.clone(), &[], &all).await
        } else {
            Harness::start(EXE.as_ref(), self.servers.clone(), &[], &all).await
        }
    }
}

impl Drop for User {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

struct Login {
    child: tokio::process::Child,
    url: String,
    rest: tokio::task::JoinHandle<String>,
}

impl Login {
    /// Waits for the login to end: (success, stdout, stderr).
    async fn finish(mut self) -> (bool, String, String) {
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("login did not end")
            .unwrap();
        let mut stdout = String::new();
        if let Some(mut out) = self.child.stdout.take() {
            out.read_to_string(&mut stdout).await.unwrap();
        }
        (status.success(), stdout, self.rest.await.unwrap())
    }

    fn param(&self, key: &str) -> String {
        reqwest::Url::parse(&self.url)
            .unwrap()
            .query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
            .unwrap_or_else(|| panic!("no {key} in {}", self.url))
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

async fn echo(h: &Harness, message: &str) -> (Value, bool) {
    h.exec(&format!(
        "return await tools.secure.echo({{ message: {} }});",
        json!(message)
    ))
    .await
}

#[tokio::test]
async fn login_stores_a_private_token_that_calls_then_use() {
    let mock = MockOAuth::start(MockOptions::default()).await;
    let user = User::for_mock(&mock);
    let login = user.start_login("secure").await;
    // The URL carries PKCE (S256) and a state, and the redirect goes to loopback.
    assert_eq!(login.param("code_challenge_method"), "S256");
    assert!(login.param("state").len() >= 16);
    assert!(login.param("redirect_uri").starts_with("http://127.0.0.1:"));
    let (status, page) = browse(&login.url).await;
    assert_eq!(status, 200, "{page}");
    let (ok, stdout, stderr) = login.finish().await;
    assert!(ok, "{stderr}");
    assert!(stdout.contains("Token stored in"), "{stdout}");
    assert_eq!(mock.count("register"), 1, "{:?}", mock.events());
    assert_eq!(mock.count("token:authorization_code"), 1);

    let file = user.token_file();
    assert_eq!(mode(&file), 0o600, "token file mode");
    assert_eq!(mode(&user.token_dir()), 0o700, "token dir mode");
    let token = user.access_token();
    assert!(token.starts_with("access-"), "{}", user.stored());
    // Neither the token nor anything else secret went to the terminal.
    assert!(!stdout.contains(&token) && !stderr.contains(&token));

    let h = user.harness(false, &[]).await;
    let (v, is_error) = echo(&h, "hello").await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], "Echo: hello");
    assert_eq!(mock.accepted_tokens(), [token]);
    let r = h.call("list_servers", json!({})).await;
    let servers = r.structured_content.unwrap();
    assert_eq!(servers["servers"][0]["status"], "connected", "{servers}");

    // `config show` says a login is stored, and nothing of it.
    let (ok, shown, _) = user.run(&["config", "show"]).await;
    assert!(ok);
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["servers"][0]["oauthLogin"], "stored", "{shown}");
}

#[tokio::test]
async fn an_expired_token_is_refreshed_before_the_call_and_after_a_401_and_persisted() {
    let mock = MockOAuth::start(MockOptions::default()).await;
    let user = User::for_mock(&mock);
    user.login("secure").await;
    let first = user.access_token();
    let first_refresh = user.stored()["credentials"]["token_response"]["refresh_token"].clone();
    let h = user.harness(false, &[]).await;
    let (v, is_error) = echo(&h, "one").await;
    assert!(!is_error, "{v}");

    // Past its expiry the token is refreshed before the request is sent.
    user.expire_stored_token();
    let refreshes = mock.count("token:refresh_token");
    let (v, is_error) = echo(&h, "two").await;
    assert!(!is_error, "{v}");
    assert!(
        mock.count("token:refresh_token") > refreshes,
        "{:?}",
        mock.events()
    );
    let second = user.access_token();
    assert_ne!(second, first, "the refreshed token is written to the file");
    assert_ne!(
        user.stored()["credentials"]["token_response"]["refresh_token"],
        first_refresh,
        "the rotated refresh token is kept"
    );
    assert_eq!(mode(&user.token_file()), 0o600);
    assert!(mock.accepted_tokens().contains(&second));

    // A token the server stops accepting early: one refresh after the 401, then the call
    // goes through.
    mock.revoke_access_tokens();
    let refreshes = mock.count("token:refresh_token");
    let (v, is_error) = echo(&h, "three").await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], "Echo: three");
    assert_eq!(mock.count("token:refresh_token"), refreshes + 1);
    assert_ne!(user.access_token(), second);
}

#[tokio::test]
async fn a_revoked_login_tells_which_login_to_run() {
    let mock = MockOAuth::start(MockOptions::default()).await;
    let user = User::for_mock(&mock);
    user.login("secure").await;
    let h = user.harness(false, &[]).await;
    let (v, is_error) = echo(&h, "ok").await;
    assert!(!is_error, "{v}");

    mock.revoke_all();
    let (v, is_error) = echo(&h, "refused").await;
    assert!(is_error, "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("run `code-executor-mcp login secure`"),
        "{v}"
    );
    let r = h.call("list_servers", json!({})).await;
    let servers = r.structured_content.unwrap();
    let s = &servers["servers"][0];
    assert_eq!(s["status"], "failed", "{servers}");
    assert!(
        s["reason"]
            .as_str()
            .unwrap()
            .contains("code-executor-mcp login secure"),
        "{servers}"
    );
    // The dead refresh token is forgotten, and a new login is used at once (no backoff).
    let (_, shown, _) = user.run(&["config", "show"]).await;
    assert!(shown.contains("\"oauthLogin\": \"none\""), "{shown}");
    user.login("secure").await;
    let (v, is_error) = echo(&h, "back").await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], "Echo: back");
}

#[tokio::test]
async fn without_a_login_the_error_says_to_log_in_and_logout_forgets_it() {
    let mock = MockOAuth::start(MockOptions::default()).await;
    let user = User::for_mock(&mock);
    {
        let h = user.harness(false, &[]).await;
        let (v, is_error) = echo(&h, "x").await;
        assert!(is_error);
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("no login is stored for it; run `code-executor-mcp login secure`"),
            "{v}"
        );
    }
    user.login("secure").await;
    let (ok, out, _) = user.run(&["logout", "secure"]).await;
    assert!(ok, "{out}");
    assert!(out.contains("Logged out of \"secure\""), "{out}");
    assert!(user.token_files().is_empty());
    let (ok, out, _) = user.run(&["logout", "secure"]).await;
    assert!(ok && out.contains("No stored login"), "{out}");
}

#[tokio::test]
async fn a_token_for_another_url_is_not_used() {
    let mock = MockOAuth::start(MockOptions::default()).await;
    let user = User::for_mock(&mock);
    user.login("secure").await;
    // The same name now points somewhere else (here: the same server under another path
    // spelling, which is another resource as far as tokens go).
    let moved =
        User::new(json!({ "secure": { "type": "http", "url": format!("{}?v=2", mock.resource) } }));
    std::fs::create_dir_all(moved.token_dir()).unwrap();
    std::fs::copy(
        user.token_file(),
        moved
            .token_dir()
            .join(user.token_file().file_name().unwrap()),
    )
    .unwrap();
    let h = moved.harness(false, &[]).await;
    let (v, is_error) = echo(&h, "x").await;
    assert!(is_error, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("code-executor-mcp login secure"),
        "{v}"
    );
    assert!(mock.accepted_tokens().is_empty());
}

#[tokio::test]
async fn a_redirect_with_a_forged_state_is_refused_and_nothing_is_stored() {
    let mock = MockOAuth::start(MockOptions::default()).await;
    let user = User::for_mock(&mock);
    let login = user.start_login("secure").await;
    // The authorization server sends the browser back with a code; an attacker's page
    // sends it there with its own state instead.
    let location = location_of(&login.url).await;
    let mut forged = reqwest::Url::parse(&location).unwrap();
    let pairs: Vec<(String, String)> = forged
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == "state" {
                "forged-state".to_string()
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    forged.query_pairs_mut().clear().extend_pairs(pairs);
    let (status, page) = browse(forged.as_str()).await;
    assert_eq!(status, 400, "{page}");
    assert!(!page.contains("forged-state"), "the page reflects no input");
    let (ok, _, stderr) = login.finish().await;
    assert!(!ok);
    assert!(stderr.contains("state does not match"), "{stderr}");
    assert!(stderr.contains("nothing was stored"), "{stderr}");
    assert!(user.token_files().is_empty());
    assert_eq!(mock.count("token:authorization_code"), 0);
}

#[tokio::test]
async fn a_code_bound_to_another_pkce_challenge_is_refused() {
    let mock = MockOAuth::start(MockOptions::default()).await;
    let user = User::for_mock(&mock);
    let login = user.start_login("secure").await;
    // An attacker obtains a code for its own PKCE challenge and injects it into the
    // victim's redirect (with the victim's state): the exchange with the victim's verifier
    // must fail.
    let (_, attacker_challenge) = pkce_pair("attacker");
    let mut url = reqwest::Url::parse(&login.url).unwrap();
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == "code_challenge" {
                attacker_challenge.clone()
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    url.query_pairs_mut().clear().extend_pairs(pairs);
    let (status, page) = browse(url.as_str()).await;
    assert_eq!(status, 400, "{page}");
    let (ok, _, stderr) = login.finish().await;
    assert!(!ok);
    assert!(
        stderr.contains("exchanging the authorization code failed"),
        "{stderr}"
    );
    assert!(user.token_files().is_empty());
    assert_eq!(mock.count("rejected:pkce"), 1, "{:?}", mock.events());
}

#[tokio::test]
async fn the_mock_checks_pkce_itself() {
    // The test above proves something only if the mock really checks the verifier.
    let mock = MockOAuth::start(MockOptions {
        preregistered: Some(("pre".into(), None)),
        ..MockOptions::default()
    })
    .await;
    let (verifier, challenge) = pkce_pair("right");
    let authorize = format!(
        "{}/authorize?response_type=code&client_id=pre&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&code_challenge={challenge}&code_challenge_method=S256&state=s",
        mock.issuer
    );
    let exchange = |verifier: String| {
        let issuer = mock.issuer.clone();
        let authorize = authorize.clone();
        async move {
            let loc = location_of(&authorize).await;
            let code = reqwest::Url::parse(&loc)
                .unwrap()
                .query_pairs()
                .find(|(k, _)| k == "code")
                .unwrap()
                .1
                .into_owned();
            test_support::install_tls_provider();
            let mut form = reqwest::Url::parse("http://form/").unwrap();
            form.query_pairs_mut().extend_pairs([
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("client_id", "pre"),
                ("redirect_uri", "http://127.0.0.1:9/cb"),
                ("code_verifier", &verifier),
            ]);
            reqwest::Client::new()
                .post(format!("{issuer}/token"))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form.query().unwrap_or_default().to_string())
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(exchange(pkce_pair("wrong").0).await, 400);
    assert_eq!(exchange(verifier).await, 200);
}

#[tokio::test]
async fn a_preregistered_confidential_client_from_the_config_is_used() {
    let mock = MockOAuth::start(MockOptions {
        registration: false,
        preregistered: Some(("cem-client".into(), Some("cem-secret-value".into()))),
        ..MockOptions::default()
    })
    .await;
    let user = User::new(json!({ "secure": {
        "type": "http", "url": mock.resource,
        "oauth": { "clientId": "cem-client", "clientSecret": "${CEM_TEST_SECRET}", "scopes": ["mcp:tools"] }
    }}));
    // The secret reaches login and the server through their environment only.
    let mut child = {
        let mut cmd = user.command(&["login", "secure", "--timeout", "60"]);
        cmd.env("CEM_TEST_SECRET", "cem-secret-value");
        cmd.spawn().unwrap()
    };
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next_line().await.unwrap().expect("a URL");
        if line.trim().starts_with("http") {
            break line.trim().to_string();
        }
    };
    assert!(url.contains("client_id=cem-client"), "{url}");
    let (status, page) = browse(&url).await;
    assert_eq!(status, 200, "{page}");
    assert!(child.wait().await.unwrap().success());
    assert_eq!(mock.count("register"), 0);
    let stored = std::fs::read_to_string(user.token_file()).unwrap();
    assert!(
        !stored.contains("cem-secret-value"),
        "a configured secret is not copied into the token file"
    );
    // The server refreshes with the configured secret (the mock checks it).
    let h = user
        .harness(false, &[("CEM_TEST_SECRET", "cem-secret-value")])
        .await;
    user.expire_stored_token();
    let (v, is_error) = echo(&h, "pre").await;
    assert!(!is_error, "{v}");
    assert!(
        mock.count("token:refresh_token") >= 1,
        "{:?}",
        mock.events()
    );
    assert_eq!(mock.count("rejected:client secret"), 0);
}

#[tokio::test]
async fn tokens_reach_no_log_no_audit_line_no_config_output_and_no_sandboxed_code() {
    let mock = MockOAuth::start(MockOptions::default()).await;
    let user = User::for_mock(&mock);
    user.login("secure").await;
    let planted = user.access_token();
    let refresh = user.stored()["credentials"]["token_response"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_string();
    let token_file = user.token_file();
    let h = user.harness(true, &[("RUST_LOG", "trace")]).await;
    // Code that looks everywhere it could: its environment, the token file, our config dir.
    let (v, is_error) = h
        .exec_python(&format!(
            r#"
import os
found = []
found.append(repr(dict(os.environ)))
for p in [{file:?}, {dir:?}]:
    try:
        found.append(open(p).read())
    except Exception as e:
        found.append('denied: ' + type(e).__name__)
found.append(str(call_mcp_tool('secure', 'echo', {{'message': 'x'}})))
found
"#,
            file = token_file.display().to_string(),
            dir = user.token_dir().display().to_string(),
        ))
        .await;
    assert!(!is_error, "{v}");
    let seen = v.to_string();
    assert!(seen.contains("denied"), "{seen}");
    // A refresh happens too, so its request and answer are covered.
    user.expire_stored_token();
    let (v, is_error) = echo(&h, "after refresh").await;
    assert!(!is_error, "{v}");
    let refreshed = user.access_token();
    assert_ne!(refreshed, planted);
    let (_, shown, shown_err) = user.run(&["config", "show"]).await;
    let audit = std::fs::read_to_string(user.root.join("state/code-executor-mcp/audit.jsonl"))
        .unwrap_or_default();
    assert!(!audit.is_empty(), "the audit log was written");
    let log = h.server_log();
    // The log saw the refresh happen (so the check below covers it).
    assert!(log.contains("Refreshed access token"), "{log}");
    for secret in [&planted, &refresh, &refreshed] {
        for (what, text) in [
            ("sandboxed code", &seen),
            ("config show", &shown),
            ("config show stderr", &shown_err),
            ("audit log", &audit),
            ("server log (RUST_LOG=trace)", &log),
        ] {
            assert!(
                !text.contains(secret.as_str()),
                "a token reached the {what}"
            );
        }
    }
}

#[tokio::test]
async fn login_refuses_what_it_cannot_do_and_says_why() {
    let mock = MockOAuth::start(MockOptions::default()).await;
    let user = User::new(json!({
        "secure": { "type": "http", "url": mock.resource },
        "local": { "command": "true" },
    }));
    let (ok, _, err) = user.run(&["login", "nope"]).await;
    assert!(!ok && err.contains("no MCP server named \"nope\""), "{err}");
    let (ok, _, err) = user.run(&["login", "local"]).await;
    assert!(!ok && err.contains("stdio server"), "{err}");
    // Nobody opens the URL: the wait ends with a clear message.
    let (ok, _, err) = user.run(&["login", "secure", "--timeout", "1"]).await;
    assert!(!ok);
    assert!(err.contains("no redirect arrived within 1 s"), "{err}");
    assert!(err.contains("code-executor-mcp login secure"), "{err}");
    assert!(user.token_files().is_empty());
}

#[tokio::test]
async fn legacy_sse_servers_get_the_token_refresh_and_the_login_message_too() {
    let mock = MockOAuth::start(MockOptions::default()).await;
    let user = User::new(json!({ "secure": { "type": "sse", "url": mock.sse } }));
    {
        // Before the login: the event-stream GET is refused and the error says what to do.
        let h = user.harness(false, &[]).await;
        let (v, is_error) = echo(&h, "x").await;
        assert!(is_error);
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("run `code-executor-mcp login secure`"),
            "{v}"
        );
    }
    user.login("secure").await;
    let h = user.harness(false, &[]).await;
    let (v, is_error) = echo(&h, "over sse").await;
    assert!(!is_error, "{v}");
    assert_eq!(v["result"], "Echo: over sse");
    // The message POSTs carry a refreshed token once the first one expired.
    let first = user.access_token();
    user.expire_stored_token();
    let (v, is_error) = echo(&h, "later").await;
    assert!(!is_error, "{v}");
    assert_ne!(user.access_token(), first);
    assert!(mock.count("token:refresh_token") >= 1);
    // A 401 on a POST: one refresh, then the POST goes through.
    mock.revoke_access_tokens();
    let (v, is_error) = echo(&h, "after 401").await;
    assert!(!is_error, "{v}");
    // Nothing fixes a revoked grant.
    mock.revoke_all();
    let (v, is_error) = echo(&h, "revoked").await;
    assert!(is_error, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("needs a login"),
        "{v}"
    );
}
