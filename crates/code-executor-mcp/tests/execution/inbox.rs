//! The approvals inbox (`approvals.fallback: "inbox"`) through the real server over stdio with
//! a client that can be asked nothing: a call waits; a person approves it on the loopback page
//! (POST with the token) and the TypeScript run goes on; a wrong token sees and answers
//! nothing; the terminal command lists and denies a Python run's call; a call nobody answers is
//! refused saying where to approve; every answer is audited with who gave it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use test_support::{Harness, TempDir};

use crate::common::EXE;

async fn start(dir: &TempDir, timeout_ms: u64) -> Harness {
    let settings = dir.0.join("settings.json");
    std::fs::write(
        &settings,
        json!({"approvals": {"annotations": "notReadOnly", "fallback": "inbox", "timeoutMs": timeout_ms},
               "audit": {"path": dir.0.join("audit.jsonl")}})
        .to_string(),
    )
    .unwrap();
    let mut fix = test_support::fixture_entry("fix");
    fix["env"] = json!({"FIXTURE_PAUSE_TOOLS": "1"});
    let run = dir.0.join("run");
    Harness::start(
        Path::new(EXE),
        json!({ "fix": fix }),
        &[],
        &[
            ("CODE_EXECUTOR_CONFIG_PATH", settings.to_str().unwrap()),
            ("XDG_RUNTIME_DIR", run.to_str().unwrap()),
        ],
    )
    .await
}

/// A plain-HTTP client (the loopback page has no TLS; reqwest still wants a provider).
fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn link_file(dir: &TempDir, pid: u32) -> PathBuf {
    dir.0
        .join("run/code-executor-mcp/approvals")
        .join(format!("{pid}.json"))
}

/// Waits (bounded) until the server's inbox holds a pending approval; returns the page's
/// URL, token and the pending list.
async fn pending(dir: &TempDir, pid: u32) -> (String, String, Vec<Value>) {
    let http = http();
    for _ in 0..1000 {
        if let Ok(text) = std::fs::read_to_string(link_file(dir, pid)) {
            let f: Value = serde_json::from_str(&text).unwrap();
            let (url, token) = (
                f["url"].as_str().unwrap().to_string(),
                f["token"].as_str().unwrap().to_string(),
            );
            let list: Vec<Value> = http
                .get(format!("{url}.json"))
                .header("x-approvals-token", &token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if !list.is_empty() {
                return (url, token, list);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no approval arrived in the inbox");
}

async fn cli(dir: &TempDir, args: &[&str]) -> std::process::Output {
    tokio::process::Command::new(EXE)
        .arg("approvals")
        .args(args)
        .env("XDG_RUNTIME_DIR", dir.0.join("run"))
        .env("XDG_STATE_HOME", dir.0.join("state"))
        .output()
        .await
        .unwrap()
}

const TS_TICK: &str =
    "try { return { tick: await tools.fix.tick({ note: '</pre><script>alert(1)</script>' }) }; }
     catch (e) { return { name: e.name, message: e.message }; }";
const PY_TICK: &str = "try:\n    return {'tick': await tools.fix.tick({})}\nexcept Exception as e:\n    return {'name': type(e).__name__, 'message': str(e)}";

#[tokio::test]
async fn a_person_answers_from_the_page_or_the_terminal() {
    let dir = TempDir::new("inbox");
    let h = start(&dir, 30_000).await;
    let pid = h.pid.unwrap();
    let http = http();

    // TypeScript: approved on the page.
    let person = async {
        let (url, token, list) = pending(&dir, pid).await;
        assert_eq!(list.len(), 1);
        assert_eq!(list[0]["tool"], "tick");
        let id = list[0]["id"].as_u64().unwrap();
        // A wrong token sees and answers nothing.
        let r = http.get(format!("{url}?token=wrong")).send().await.unwrap();
        assert_eq!(r.status(), 403);
        assert!(!r.text().await.unwrap().contains("tick"));
        let r = http
            .get(format!("{url}.json"))
            .header("x-approvals-token", "x")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
        let r = http
            .post(format!("{url}/{id}/approve"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("token=wrong")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
        // A cookie alone is no token.
        let r = http
            .post(format!("{url}/{id}/approve"))
            .header("cookie", format!("token={token}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
        // The page shows it, escaped, under a strict CSP.
        let r = http
            .get(format!("{url}?token={token}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let csp = r.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(csp.contains("default-src 'none'"), "{csp}");
        let html = r.text().await.unwrap();
        assert!(html.contains(&format!("approval-{id}")), "{html}");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;/pre&gt;&lt;script&gt;"), "{html}");
        let r = http
            .post(format!("{url}/{id}/approve"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={token}&do=approve"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 303);
    };
    let ((v, _), ()) = tokio::join!(h.exec(TS_TICK), person);
    assert_eq!(v["result"]["tick"], json!(1), "{v}");

    // Python: the terminal lists it and denies it.
    let person = async {
        let (_, _, list) = pending(&dir, pid).await;
        let id = list[0]["id"].as_u64().unwrap().to_string();
        let out = cli(&dir, &["list"]).await;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(out.status.success(), "{out:?}");
        assert!(text.contains("fix/tick"), "{text}");
        let out = cli(&dir, &["deny", &id]).await;
        assert!(out.status.success(), "{out:?}");
        // Answered: gone.
        let out = cli(&dir, &["approve", &id]).await;
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("no approval"),
            "{out:?}"
        );
    };
    let ((v, _), ()) = tokio::join!(h.exec_python(PY_TICK), person);
    assert_eq!(v["result"]["name"], "ApprovalDenied", "{v}");
    assert!(
        v["result"]["message"].as_str().unwrap().contains("inbox"),
        "{v}"
    );
    drop(h);

    let audit = std::fs::read_to_string(dir.0.join("audit.jsonl")).unwrap();
    let vias: Vec<(String, String)> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["event"] == "approval")
        .map(|l| {
            (
                l["via"].as_str().unwrap().to_string(),
                l["answer"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        vias,
        [
            ("inbox-page".to_string(), "once".to_string()),
            ("inbox-terminal".to_string(), "deny".to_string())
        ]
    );
}

/// Nobody answers: the call is refused, and the refusal says where a person approves.
#[tokio::test]
async fn an_unanswered_approval_is_refused_saying_where_to_approve() {
    let dir = TempDir::new("inbox-timeout");
    let h = start(&dir, 300).await;
    let (v, _) = h.exec(TS_TICK).await;
    assert_eq!(v["result"]["name"], "ApprovalDenied", "{v}");
    let m = v["result"]["message"].as_str().unwrap();
    assert!(
        m.contains("nobody answered")
            && m.contains("http://127.0.0.1:")
            && m.contains("code-executor-mcp approvals"),
        "{m}"
    );
    let token: Value =
        serde_json::from_str(&std::fs::read_to_string(link_file(&dir, h.pid.unwrap())).unwrap())
            .unwrap();
    assert!(
        !m.contains(token["token"].as_str().unwrap()),
        "the token never reaches the model"
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(link_file(&dir, h.pid.unwrap()))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
}
