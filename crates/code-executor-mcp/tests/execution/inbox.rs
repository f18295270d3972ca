//! The approvals inbox (`approvals.fallback: "inbox"`) through the real server over stdio with
//! a client that can be asked nothing: a call waits; a person approves it on the loopback page
//! (POST with the token) and the TypeScript run goes on; a wrong token sees and answers
//! nothing; the terminal command lists and denies a Python run's call and approves another; a
//! call nobody answers is refused saying where to approve; every answer is audited with who
//! gave it.
//!
//! The attacks: a token in the query where only the header counts, one server's token on
//! another, path tricks on the answer routes, oversized bodies and arguments, HTML in the
//! tool's arguments and code, a run that ends while it waits, the link file's mode, and the
//! token in the logs at `RUST_LOG=trace`.
//!
//! In a real browser (Debian's Chromium, headless, through playwright-core:
//! `inbox_browser.cjs`), over stdio and `serve --http`: the pending approval appears, is
//! approved by a click and the run goes on; a wrong token, no credentials and another
//! principal see nothing. Without the browser the test says SKIP, or fails under
//! `CODE_EXECUTOR_REQUIRE_INTEROP` (CI, where `scripts/setup-interop.sh` installs both).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use test_support::http::{Generation, HttpServer, McpHttp};
use test_support::{Harness, TempDir};

use crate::common::EXE;

async fn start(dir: &TempDir, timeout_ms: u64) -> Harness {
    start_with(dir, timeout_ms, &[], false).await
}

/// [`start`] with `env` added, its log kept in a file when `capture`.
async fn start_with(
    dir: &TempDir,
    timeout_ms: u64,
    env: &[(&str, &str)],
    capture: bool,
) -> Harness {
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
    let mut all = vec![
        ("CODE_EXECUTOR_CONFIG_PATH", settings.to_str().unwrap()),
        ("XDG_RUNTIME_DIR", run.to_str().unwrap()),
    ];
    all.extend_from_slice(env);
    if capture {
        Harness::start_capturing_log(Path::new(EXE), json!({ "fix": fix }), &[], &all).await
    } else {
        Harness::start(Path::new(EXE), json!({ "fix": fix }), &[], &all).await
    }
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
    // `approvals watch` prints each approval as it arrives.
    let mut watch = tokio::process::Command::new(EXE)
        .args(["approvals", "watch"])
        .env("XDG_RUNTIME_DIR", dir.0.join("run"))
        .env("XDG_STATE_HOME", dir.0.join("state"))
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut watched =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(watch.stdout.take().unwrap()));

    // TypeScript: approved on the page.
    let person = async {
        let (url, token, list) = pending(&dir, pid).await;
        assert_eq!(list.len(), 1);
        assert_eq!(list[0]["tool"], "tick");
        let id = list[0]["id"].as_u64().unwrap();
        let seen = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(l) = watched.next_line().await.unwrap() {
                if l.contains("fix/tick") {
                    return l;
                }
            }
            panic!("watch ended");
        })
        .await
        .expect("watch shows the approval");
        assert!(seen.starts_with(&format!("{id}\t")), "{seen}");
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
        // The code around the call, numbered, the call's line marked.
        let code = list[0]["code"].as_str().unwrap();
        assert!(
            code.contains(">   2 |     return {'tick': await tools.fix.tick({})}")
                && code.contains("    1 | try:"),
            "{code}"
        );
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

    // TypeScript again: the terminal approves it (by PID:N) and the run goes on.
    let person = async {
        let (_, _, list) = pending(&dir, pid).await;
        let id = format!("{pid}:{}", list[0]["id"]);
        let out = cli(&dir, &["approve", &id]).await;
        assert!(out.status.success(), "{out:?}");
    };
    let ((v, _), ()) = tokio::join!(h.exec(TS_TICK), person);
    assert_eq!(v["result"]["tick"], json!(2), "{v}");
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
            ("inbox-terminal".to_string(), "deny".to_string()),
            ("inbox-terminal".to_string(), "once".to_string())
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

/// The status of a POST to `path` sent byte for byte (an HTTP client would normalise `..`
/// and the like before sending), with the token in its header.
async fn raw_post(url: &str, path: &str, token: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/approvals");
    let mut s = tokio::net::TcpStream::connect(authority).await.unwrap();
    s.write_all(
        format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nx-approvals-token: {token}\r\n\
             content-length: 0\r\nconnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).await.unwrap();
    reply
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {reply:?}"))
}

/// The page's status for a POST to `path` with `headers` and `body`.
async fn post(url: &str, path: &str, headers: &[(&str, &str)], body: String) -> u16 {
    let base = url.trim_end_matches("/approvals");
    let mut r = http()
        .post(format!("{base}{path}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    r.send().await.unwrap().status().as_u16()
}

fn mode(path: &Path) -> u32 {
    std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(path).unwrap().permissions()) & 0o777
}

/// Two servers, one logging at `trace`: the token counts only where it belongs, paths and
/// bodies cannot trick an answer, what the page shows is bounded, and the token never
/// reaches a log line.
#[tokio::test]
async fn the_page_withstands_token_path_and_size_tricks_and_the_token_stays_out_of_logs() {
    let (da, db) = (TempDir::new("inbox-a"), TempDir::new("inbox-b"));
    // Server A's link directory is there already, open to all, with a file another user
    // could have planted (mode 0644, for a live pid): A tightens the directory, and the
    // terminal command ignores the planted file.
    let links = da.0.join("run/code-executor-mcp/approvals");
    std::fs::create_dir_all(&links).unwrap();
    test_support::set_mode(&links, 0o777);
    let planted = links.join("1.json");
    std::fs::write(
        &planted,
        json!({"pid": 1, "url": "http://127.0.0.1:9/approvals", "token": "planted"}).to_string(),
    )
    .unwrap();
    test_support::set_mode(&planted, 0o644);
    let a = start_with(&da, 30_000, &[("RUST_LOG", "trace")], true).await;
    let b = start(&db, 30_000).await;
    let (pa, pb) = (a.pid.unwrap(), b.pid.unwrap());
    // A megabyte of arguments and HTML around the call in the code.
    let code_a = "const big = 'x'.repeat(1 << 20);\n// </pre><script>alert(1)</script>\n\
                  try { return { tick: await tools.fix.tick({ big, html: '<img src=x onerror=alert(1)>', password: 'hunter2', note: '10 USD \\u202e0001\\u202c' }) }; }\n\
                  catch (e) { return { name: e.name, message: e.message }; }";
    let person = async {
        let (url_a, tok_a, list_a) = pending(&da, pa).await;
        let (url_b, tok_b, list_b) = pending(&db, pb).await;
        let (ia, ib) = (
            list_a[0]["id"].as_u64().unwrap(),
            list_b[0]["id"].as_u64().unwrap(),
        );
        // Bounded: the arguments are cut, the code is the lines around the call.
        let args = list_a[0]["arguments"].as_str().unwrap();
        assert!(
            args.len() < 4_000 && args.contains("(cut)") || args.len() < 1_000,
            "{}",
            args.len()
        );
        let code = list_a[0]["code"].as_str().unwrap();
        assert!(
            code.contains(">   3 | try { return { tick: await tools.fix.tick"),
            "{code}"
        );
        assert!(code.len() < 4_000, "{}", code.len());
        // A secret in the code is masked as in the arguments; a direction override shows.
        assert!(
            !code.contains("hunter2") && !args.contains("hunter2"),
            "{code}\n{args}"
        );
        assert!(code.contains("password: '[masked]'"), "{code}");
        assert!(args.contains("10 USD ⟨U+202E⟩0001⟨U+202C⟩"), "{args}");
        let html = http()
            .get(format!("{url_a}?token={tok_a}"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            !html.contains("<script>") && !html.contains("<img"),
            "{html}"
        );
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(html.len() < 16_000, "{}", html.len());

        // One server's token on the other: nothing seen, nothing answered.
        let r = http()
            .get(format!("{url_b}.json"))
            .header("x-approvals-token", &tok_a)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
        let approve_b = format!("/approvals/{ib}/approve");
        assert_eq!(
            post(
                &url_b,
                &approve_b,
                &[("x-approvals-token", &tok_a)],
                String::new()
            )
            .await,
            403
        );
        assert_eq!(
            post(&url_b, &approve_b, &[], format!("token={tok_a}")).await,
            403
        );
        // The list takes the token in the header only; an answer never in the query.
        let r = http()
            .get(format!("{url_a}.json?token={tok_a}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
        let r = http()
            .get(&url_a)
            .header("x-approvals-token", &tok_a)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let answer_a = format!("/approvals/{ia}/approve");
        assert_eq!(
            post(
                &url_a,
                &format!("{answer_a}?token={tok_a}"),
                &[],
                String::new()
            )
            .await,
            403
        );
        // Path tricks are no answer, even with the token.
        let t = [("x-approvals-token", tok_a.as_str())];
        for path in [
            format!("/approvals/../approvals/{ia}/approve"),
            format!("/approvals/%3{ia}/approve"),
            format!("/approvals/+{ia}/approve"),
            format!("/approvals/{ia}/approve/"),
            format!("/approvals/{ia}x/approve"),
            format!("/approvals/{ia}/approve/../deny"),
            "/approvals/1e0/approve".to_string(),
            format!("/approvals/0{ia}/approve"),
        ] {
            assert_eq!(raw_post(&url_a, &path, &tok_a).await, 404, "{path}");
        }
        // A request not addressed to the page (DNS rebinding: another Host; another site's
        // Origin) is refused though it carries the token.
        for headers in [
            vec![("host", "evil.example")],
            vec![("origin", "http://evil.example")],
            vec![("host", "localhost:1")],
        ] {
            let mut all = vec![("x-approvals-token", tok_a.as_str())];
            all.extend(headers.iter().copied());
            assert_eq!(
                post(&url_a, &answer_a, &all, String::new()).await,
                403,
                "{headers:?}"
            );
        }
        // An oversized body is refused before anything is decided.
        assert_eq!(
            post(
                &url_a,
                &answer_a,
                &[],
                format!("token={tok_a}&pad={}", "p".repeat(8_192))
            )
            .await,
            413
        );
        // Still waiting after all that.
        let (_, _, still) = pending(&da, pa).await;
        assert_eq!(still[0]["id"].as_u64(), Some(ia));
        // The terminal command at `trace` prints no token either.
        let out = tokio::process::Command::new(EXE)
            .args(["approvals", "list"])
            .env("XDG_RUNTIME_DIR", da.0.join("run"))
            .env("RUST_LOG", "trace")
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(all.contains("fix/tick") && !all.contains(&tok_a), "{all}");
        assert!(!all.contains("pid 1 "), "the planted file was used: {all}");
        // The terminal shows the code around the call too.
        assert!(
            all.contains(">   3 | try { return { tick: await tools.fix.tick"),
            "{all}"
        );
        // The link file: 0600 in a 0700 directory.
        assert_eq!(mode(&link_file(&da, pa)), 0o600);
        assert_eq!(mode(link_file(&da, pa).parent().unwrap()), 0o700);
        // Answer both, each with its own token.
        assert_eq!(post(&url_a, &answer_a, &t, String::new()).await, 303);
        assert_eq!(
            post(
                &url_b,
                &format!("/approvals/{ib}/deny"),
                &[("x-approvals-token", &tok_b)],
                String::new()
            )
            .await,
            303
        );
        tok_a
    };
    let ((va, _), (vb, _), tok_a) = tokio::join!(a.exec(code_a), b.exec(TS_TICK), person);
    assert_eq!(va["result"]["tick"], json!(1), "{va}");
    assert_eq!(vb["result"]["name"], "ApprovalDenied", "{vb}");
    // At `trace`, the token is in one line of the server's stderr: the link for the person.
    let log = a.server_log();
    assert!(log.contains(" TRACE "), "trace logging is on:\n{log}");
    let with_token: Vec<&str> = log.lines().filter(|l| l.contains(&tok_a)).collect();
    assert_eq!(with_token.len(), 1, "{with_token:#?}");
    assert!(
        with_token[0].starts_with(
            "code-executor-mcp: a call waits for your approval: open http://127.0.0.1:"
        ),
        "{}",
        with_token[0]
    );
}

/// A run whose own deadline passes while its call waits ends, and its approval leaves the
/// inbox with it. The deadline leaves room for a Python worker to start and reach the call
/// on a loaded machine (1.5 s did not, once): the approval must be in the inbox first.
#[tokio::test]
async fn a_run_that_ends_while_waiting_leaves_the_inbox() {
    let dir = TempDir::new("inbox-ends");
    let h = start(&dir, 60_000).await;
    let pid = h.pid.unwrap();
    let run = h.exec_python_with(json!({"code": PY_TICK, "timeoutMs": 6_000}));
    let person = async {
        let (url, token, _) = pending(&dir, pid).await;
        (url, token)
    };
    let ((v, _), (url, token)) = tokio::join!(run, person);
    assert!(v.to_string().contains("Timeout"), "{v}");
    let http = http();
    let mut left = vec![json!(0)];
    for _ in 0..500 {
        left = http
            .get(format!("{url}.json"))
            .header("x-approvals-token", &token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(left.is_empty(), "{left:?}");
}

/// Debian's Chromium driven by `inbox_browser.cjs` (one browser for the whole test).
struct Browser {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Browser {
    /// The browser, or `None` after a loud SKIP (a failure under
    /// `CODE_EXECUTOR_REQUIRE_INTEROP`) when Chromium or playwright-core is not installed.
    async fn start() -> Option<Browser> {
        let prefix =
            crate::common::interop::prefix(&["browser/node_modules/playwright-core/package.json"])?;
        let chromium = std::env::var_os("CODE_EXECUTOR_CHROMIUM")
            .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
        if !chromium.exists() {
            crate::common::setup::skip_or_fail(&format!(
                "no Chromium at {} (apt-get install chromium; scripts/setup-interop.sh does)",
                chromium.display()
            ));
            return None;
        }
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/execution/inbox_browser.cjs");
        let mut child = tokio::process::Command::new("node")
            .arg(script)
            .env(
                "PLAYWRIGHT_CORE",
                prefix.join("browser/node_modules/playwright-core"),
            )
            .env("CHROMIUM", &chromium)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node");
        let stdin = child.stdin.take().unwrap();
        let lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(
            child.stdout.take().unwrap(),
        ));
        let mut b = Browser {
            child,
            stdin,
            lines,
        };
        let ready = b.next().await;
        assert!(
            ready["ready"].is_string(),
            "the browser did not start: {ready}"
        );
        Some(b)
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(60), self.lines.next_line())
            .await
            .expect("the browser answers within 60 s")
            .unwrap()
            .expect("the browser's driver ended");
        serde_json::from_str(&line).unwrap()
    }

    async fn send(&mut self, cmd: Value) -> Value {
        use tokio::io::AsyncWriteExt;
        self.stdin
            .write_all(format!("{cmd}\n").as_bytes())
            .await
            .unwrap();
        let v = self.next().await;
        assert!(v.get("error").is_none(), "{cmd}: {v}");
        v
    }

    /// What the page at `url` shows with `headers`.
    async fn open(&mut self, url: &str, headers: Value) -> Value {
        self.send(json!({"op": "open", "url": url, "headers": headers}))
            .await
    }

    /// Clicks Approve or Deny on approval `id` at `url`; the page after it.
    async fn answer(&mut self, url: &str, headers: Value, id: u64, what: &str) -> Value {
        let v = self
            .send(json!({"op": "answer", "url": url, "headers": headers, "id": id, "what": what, "waitMs": 20_000}))
            .await;
        assert_eq!(
            v["found"], true,
            "approval {id} never appeared at {url}: {v}"
        );
        v
    }

    async fn quit(mut self) {
        let _ = self.send_quit().await;
        let _ = tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await;
    }

    async fn send_quit(&mut self) -> std::io::Result<()> {
        use tokio::io::AsyncWriteExt;
        self.stdin.write_all(b"{\"op\":\"quit\"}\n").await
    }
}

/// What a person sees in the browser, over stdio (the loopback page) and `serve --http`
/// (each principal its own approvals), and that a click lets the run go on.
#[tokio::test]
async fn in_a_real_browser_a_person_approves_and_nobody_else_sees_anything() {
    let Some(mut browser) = Browser::start().await else {
        return;
    };

    // stdio: the loopback page.
    let dir = TempDir::new("inbox-browser");
    let h = start(&dir, 30_000).await;
    let pid = h.pid.unwrap();
    let code = "// calls the fixture </pre><script>window.__pwned = true</script>\n\
                const note = '<img src=x onerror=\"window.__pwned = true\">';\n\
                return { tick: await tools.fix.tick({ note }) };";
    let person = async {
        let (url, token, list) = pending(&dir, pid).await;
        let id = list[0]["id"].as_u64().unwrap();
        for wrong in [
            format!("{url}?token=wrong"),
            url.clone(),
            format!("{url}?token="),
        ] {
            let page = browser.open(&wrong, json!({})).await;
            assert_eq!(page["status"], 403, "{page}");
            assert_eq!(page["ids"], json!([]), "{page}");
            assert!(!page["text"].as_str().unwrap().contains("tick"), "{page}");
        }
        let page = browser
            .open(&format!("{url}?token={token}"), json!({}))
            .await;
        assert_eq!(page["ids"], json!([id]), "{page}");
        let text = page["text"].as_str().unwrap();
        assert!(text.contains("fix / tick"), "{text}");
        assert!(text.contains("<img src=x"), "shown as text: {text}");
        assert!(text.contains("The code around the call"), "{text}");
        assert!(
            text.contains("return { tick: await tools.fix.tick({ note }) };"),
            "{text}"
        );
        assert_eq!(page["scripts"], 0, "{page}");
        assert_eq!(page["pwned"], false, "{page}");
        let after = browser
            .answer(&format!("{url}?token={token}"), json!({}), id, "approve")
            .await;
        assert_eq!(after["status"], 200, "{after}");
        assert_eq!(after["ids"], json!([]), "{after}");
        assert_eq!(after["pwned"], false, "{after}");
    };
    let ((v, _), ()) = tokio::join!(h.exec(code), person);
    assert_eq!(v["result"]["tick"], json!(1), "{v}");
    drop(h);

    // serve --http: behind the server's tokens, each principal sees its own.
    let hdir = TempDir::new("inbox-browser-http");
    let toks = [
        "token-of-p0-aaaaaaaaaaaaaaaa",
        "token-of-p1-bbbbbbbbbbbbbbbb",
    ];
    let tokens = hdir.0.join("tokens");
    std::fs::write(&tokens, format!("p0={}\np1={}\n", toks[0], toks[1])).unwrap();
    test_support::set_mode(&tokens, 0o600);
    let settings = hdir.0.join("settings.json");
    std::fs::write(
        &settings,
        json!({"approvals": {"annotations": "notReadOnly", "fallback": "inbox", "timeoutMs": 30_000}})
            .to_string(),
    )
    .unwrap();
    let mut fx = test_support::fixture_entry("fx");
    fx["env"] = json!({"FIXTURE_PAUSE_TOOLS": "1"});
    let run = hdir.0.join("run");
    let s = HttpServer::start(
        Path::new(EXE),
        json!({ "fx": fx }),
        &["--tokens-file", tokens.to_str().unwrap()],
        &[
            ("CODE_EXECUTOR_CONFIG_PATH", settings.to_str().unwrap()),
            ("XDG_RUNTIME_DIR", run.to_str().unwrap()),
        ],
    )
    .await;
    let page_url = format!("{}/approvals", s.base);
    let bearer = |i: usize| json!({"Authorization": format!("Bearer {}", toks[i])});
    let c0 = McpHttp::connect(&s.url, Some(toks[0]), Generation::Stateless).await;
    let person = async {
        // Bounded poll of p0's list until its approval arrives.
        let mut list: Vec<Value> = vec![];
        for _ in 0..1000 {
            list = http()
                .get(format!("{page_url}.json"))
                .bearer_auth(toks[0])
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if !list.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(list.len(), 1, "{list:?}");
        let id = list[0]["id"].as_u64().unwrap();
        assert_eq!(list[0]["principal"], "token:p0");
        // p1 sees nothing and answers nothing, like an id never issued.
        let page = browser.open(&page_url, bearer(1)).await;
        assert_eq!(page["status"], 200, "{page}");
        assert_eq!(page["ids"], json!([]), "{page}");
        assert!(!page["text"].as_str().unwrap().contains("tick"), "{page}");
        let theirs = http()
            .post(format!("{page_url}/{id}/approve"))
            .bearer_auth(toks[1])
            .send()
            .await
            .unwrap();
        assert_eq!(theirs.status(), 404);
        let theirs = theirs.text().await.unwrap();
        let never = http()
            .post(format!("{page_url}/999999/approve"))
            .bearer_auth(toks[1])
            .send()
            .await
            .unwrap();
        assert_eq!(never.status(), 404);
        assert_eq!(never.text().await.unwrap(), theirs, "no leak of existence");
        // Without credentials, or with a cookie or the loopback page's token: 401.
        let page = browser.open(&page_url, json!({})).await;
        assert_eq!(page["status"], 401, "{page}");
        assert_eq!(page["ids"], json!([]), "{page}");
        let page = browser
            .open(&page_url, json!({"Cookie": format!("token={}", toks[0])}))
            .await;
        assert_eq!(page["status"], 401, "{page}");
        let r = http()
            .post(format!("{page_url}/{id}/approve"))
            .header("cookie", format!("Authorization=Bearer {}", toks[0]))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
        // A cross-site form is refused by its Origin, credentials or not.
        let r = http()
            .post(format!("{page_url}/{id}/approve"))
            .bearer_auth(toks[0])
            .header("origin", "https://evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
        // Ids that are not plain digits are no answer, even for the owner.
        for path in [format!("{id}x"), format!("+{id}"), format!("%3{id}")] {
            let r = http()
                .post(format!("{page_url}/{path}/approve"))
                .bearer_auth(toks[0])
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 404, "{path}");
        }
        // p0 sees it with who asked, and approves it by a click.
        let page = browser.open(&page_url, bearer(0)).await;
        assert_eq!(page["ids"], json!([id]), "{page}");
        assert!(
            page["text"].as_str().unwrap().contains("token:p0"),
            "{page}"
        );
        let after = browser.answer(&page_url, bearer(0), id, "approve").await;
        assert_eq!(after["status"], 200, "{after}");
        assert_eq!(after["ids"], json!([]), "{after}");
    };
    let ((v, _), ()) = tokio::join!(
        c0.exec(json!({"code": "return { tick: await tools.fx.tick({}) };"})),
        person
    );
    assert_eq!(v["result"]["tick"], json!(1), "{v}");
    browser.quit().await;
    let answered: Vec<(Value, Value, Value)> = s
        .audit()
        .into_iter()
        .filter(|l| l["event"] == "approval")
        .map(|l| {
            (
                l["via"].clone(),
                l["answer"].clone(),
                l["answeredBy"].clone(),
            )
        })
        .collect();
    assert_eq!(
        answered,
        [(json!("inbox-http"), json!("once"), json!("token:p0"))]
    );
}

/// `serve --http`: with authentication the refusal names the server's own `/approvals`, which
/// refuses callers without credentials like `/mcp` does; without authentication there is no
/// inbox over HTTP, and the answer says where to go instead.
#[tokio::test]
async fn over_http_the_refusal_names_the_route_which_needs_authentication() {
    let dir = TempDir::new("inbox-http-refusal");
    let tokens = dir.0.join("tokens");
    std::fs::write(&tokens, "p0=token-of-p0-cccccccccccccccc\n").unwrap();
    test_support::set_mode(&tokens, 0o600);
    let settings = dir.0.join("settings.json");
    std::fs::write(
        &settings,
        json!({"approvals": {"annotations": "notReadOnly", "fallback": "inbox", "timeoutMs": 300}})
            .to_string(),
    )
    .unwrap();
    let run = dir.0.join("run");
    let env = [
        ("CODE_EXECUTOR_CONFIG_PATH", settings.to_str().unwrap()),
        ("XDG_RUNTIME_DIR", run.to_str().unwrap()),
    ];
    let mut fx = test_support::fixture_entry("fx");
    fx["env"] = json!({"FIXTURE_PAUSE_TOOLS": "1"});
    let s = HttpServer::start(
        Path::new(EXE),
        json!({ "fx": fx.clone() }),
        &["--tokens-file", tokens.to_str().unwrap()],
        &env,
    )
    .await;
    let c = McpHttp::connect(
        &s.url,
        Some("token-of-p0-cccccccccccccccc"),
        Generation::Stateless,
    )
    .await;
    let (v, _) = c
        .exec(json!({"code": "try { await tools.fx.tick({}); } catch (e) { return { name: e.name, message: e.message }; }"}))
        .await;
    assert_eq!(v["result"]["name"], "ApprovalDenied", "{v}");
    let m = v["result"]["message"].as_str().unwrap();
    assert!(
        m.contains(&format!("{}/approvals", s.base))
            && m.contains("http://127.0.0.1:")
            && m.contains("code-executor-mcp approvals"),
        "{m}"
    );
    let r = http()
        .get(format!("{}/approvals", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.headers().contains_key("www-authenticate"));
    let r = http()
        .post(format!("{}/approvals/1/approve", s.base))
        .bearer_auth("not-a-token-of-anyone-at-all")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    drop(s);

    // Loopback without tokens: no inbox over HTTP.
    let s = HttpServer::start(Path::new(EXE), json!({ "fx": fx }), &[], &env).await;
    let r = http()
        .get(format!("{}/approvals", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let text = r.text().await.unwrap();
    assert!(
        text.contains("authenticates nobody") && text.contains("code-executor-mcp approvals"),
        "{text}"
    );
}
