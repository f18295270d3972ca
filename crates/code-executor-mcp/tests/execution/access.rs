//! File and network access for code, through the built binary, a real MCP client and the
//! real sandbox, in both languages: what a grant allows works; one attack per test, each
//! asserting that it fails and that the error names what is missing.
//!
//! Network tests talk only to a loopback HTTP server the test starts itself; the ceiling names
//! its address (`127.0.0.1:PORT`) explicitly for the allowed cases.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::{Harness, Lang, TempConfig, TempDir, fixture_entry};

use crate::common::{BOTH, EXE};

// ------------------------------------------------------------------ a loopback HTTP server

/// A tiny HTTP/1.1 server on 127.0.0.1 (one thread per connection, `Connection: close`):
/// `/kb` 1,024 bytes, `/json`, `/echo` (method and body back), `/to-kb` and `/to-meta`
/// (redirects), `/to-localhost/N` (a redirect with status N to `http://localhost:PORT/echo`),
/// `/big` (2 MiB), `/status/N`.
fn http_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            std::thread::spawn(move || serve_one(stream, port));
        }
    });
    port
}

fn serve_one(mut stream: std::net::TcpStream, port: u16) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut len = 0usize;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut body = vec![0u8; len];
    let _ = reader.read_exact(&mut body);
    let (status, extra, payload): (&str, String, Vec<u8>) = match path.as_str() {
        "/kb" => ("200 OK", String::new(), vec![b'x'; 1024]),
        "/json" => (
            "200 OK",
            "Content-Type: application/json\r\n".into(),
            br#"{"ok":true,"n":[1,2,3]}"#.to_vec(),
        ),
        "/echo" => {
            let ua = headers
                .iter()
                .find(|(k, _)| k == "x-test")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let mut out = format!("{method} {ua} ").into_bytes();
            out.extend_from_slice(&body);
            ("200 OK", String::new(), out)
        }
        "/to-kb" => ("302 Found", "Location: /kb\r\n".into(), Vec::new()),
        "/to-meta" => (
            "302 Found",
            "Location: http://169.254.169.254/latest/meta-data/\r\n".into(),
            Vec::new(),
        ),
        p if p.starts_with("/to-localhost/") => (
            match p.trim_start_matches("/to-localhost/") {
                "303" => "303 See Other",
                "307" => "307 Temporary Redirect",
                _ => "302 Found",
            },
            format!("Location: http://localhost:{port}/echo\r\n"),
            Vec::new(),
        ),
        "/big" => ("200 OK", String::new(), vec![b'y'; 2 << 20]),
        p if p.starts_with("/status/") => ("404 Not Found", String::new(), b"nope".to_vec()),
        _ => ("404 Not Found", String::new(), Vec::new()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
        payload.len()
    );
    let _ = stream.write_all(head.as_bytes());
    if method != "HEAD" {
        let _ = stream.write_all(&payload);
    }
}

// ---------------------------------------------------------------------------- the server

/// Files the tests grant and attack: `project/` (granted) with `data.txt`, `sub/`, and a
/// symlink `escape` to `secret.txt` outside it; `secret.txt` beside it (never granted).
struct Files {
    _dir: TempDir,
    project: PathBuf,
    secret: PathBuf,
}

fn files() -> Files {
    let dir = TempDir::new("access");
    let project = dir.0.join("project");
    std::fs::create_dir_all(project.join("sub")).unwrap();
    std::fs::write(project.join("data.txt"), "granted data\n").unwrap();
    std::fs::write(project.join("sub/inner.txt"), "inner\n").unwrap();
    let secret = dir.0.join("secret.txt");
    std::fs::write(&secret, "TOP SECRET\n").unwrap();
    std::os::unix::fs::symlink(&secret, project.join("escape")).unwrap();
    for p in [&project, &project.join("sub")] {
        test_support::set_mode(p, 0o755);
    }
    Files {
        _dir: dir,
        project,
        secret,
    }
}

/// A server whose ceiling grants `project` (read), a workspace (write, 1 MiB quota), and the
/// loopback server at `port` by address and by name, with responses capped at 1 MiB.
async fn server(project: &Path, port: u16) -> (Harness, TempConfig) {
    let net = json!([
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("127.0.0.1:{}", port.wrapping_add(1).max(1)),
    ]);
    server_with_net(project, net).await
}

/// [`server`] with the network ceiling `net`.
async fn server_with_net(project: &Path, net: Value) -> (Harness, TempConfig) {
    let settings = json!({
        "permissions": {
            "read": [project],
            "write": true,
            "net": net,
            "fetch": {"maxResponseBytes": 1 << 20}
        },
        "sessions": {"workspaceQuotaMb": 1}
    });
    Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": fixture_entry("fx") }),
        &settings,
        &[("CODE_EXECUTOR_POOL_SIZE", "1")],
    )
    .await
}

async fn run(h: &Harness, lang: Lang, code: &str, permissions: Value) -> (Value, bool) {
    let mut args = json!({"code": code});
    if !permissions.is_null() {
        args["permissions"] = permissions;
    }
    h.run_tool(lang.tool(), args).await
}

/// Runs `code` and returns its result; the run must succeed.
async fn ok(h: &Harness, lang: Lang, code: &str, permissions: Value) -> Value {
    let (v, is_error) = run(h, lang, code, permissions).await;
    assert!(!is_error, "{lang:?}: {v}");
    v["result"].clone()
}

/// Runs `code`, which must fail; returns (error name, message).
async fn fails(h: &Harness, lang: Lang, code: &str, permissions: Value) -> (String, String) {
    let (v, is_error) = run(h, lang, code, permissions).await;
    assert!(is_error, "{lang:?}: expected an error: {v}");
    (
        v["error"]["name"].as_str().unwrap_or("").to_string(),
        v["error"]["message"].as_str().unwrap_or("").to_string(),
    )
}

fn fetch_code(lang: Lang, url: &str) -> String {
    match lang {
        Lang::Ts => format!(
            "const r = await fetch({url:?}); return {{status: r.status, text: await r.text()}};"
        ),
        Lang::Py => format!("r = fetch({url:?})\n{{'status': r.status, 'text': r.text()}}"),
    }
}

fn read_code(lang: Lang, path: &str) -> String {
    match lang {
        Lang::Ts => format!("return await fs.readFile({path:?}, 'utf8');"),
        Lang::Py => format!("open({path:?}).read()"),
    }
}

fn audit_lines(h: &Harness, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(h.audit_path())
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == kind)
        .collect()
}

// --------------------------------------------------------------------------- network

/// Names and redirects that lead to loopback (issue 39, item 2).
mod ssrf;

#[tokio::test]
async fn a_granted_fetch_to_a_loopback_server_the_ceiling_names_works_and_is_audited() {
    let f = files();
    let port = http_server();
    let (h, _d) = server(&f.project, port).await;
    let net = json!({"net": [format!("127.0.0.1:{port}")]});
    for lang in BOTH {
        let v = ok(
            &h,
            lang,
            &fetch_code(lang, &format!("http://127.0.0.1:{port}/kb")),
            net.clone(),
        )
        .await;
        assert_eq!(v["status"], 200, "{lang:?}: {v}");
        assert_eq!(v["text"].as_str().unwrap().len(), 1024, "{lang:?}");
        // JSON, headers, a POST body, a followed redirect.
        let code = lang.pick(
            format!(
                "const j = await (await fetch('http://127.0.0.1:{port}/json')).json();
                 const e = await fetch('http://127.0.0.1:{port}/echo', {{method: 'POST', body: 'hi', headers: {{'X-Test': 't1'}}}});
                 const r = await fetch('http://127.0.0.1:{port}/to-kb');
                 return {{j, echo: await e.text(), redirected: r.redirected, len: (await r.arrayBuffer()).byteLength,
                          type: e.headers.get('content-length')}};"
            ),
            format!(
                "j = fetch('http://127.0.0.1:{port}/json').json()
e = fetch('http://127.0.0.1:{port}/echo', method='POST', body='hi', headers={{'X-Test': 't1'}})
r = fetch('http://127.0.0.1:{port}/to-kb')
{{'j': j, 'echo': e.text(), 'redirected': r.redirected, 'len': len(r.content), 'type': e.headers.get('content-length')}}"
            ),
        );
        let v = ok(&h, lang, &code, net.clone()).await;
        assert_eq!(
            v,
            json!({"j": {"ok": true, "n": [1, 2, 3]}, "echo": "POST t1 hi", "redirected": true, "len": 1024, "type": "10"}),
            "{lang:?}"
        );
    }
    // urllib.request works unchanged in Python.
    let v = ok(
        &h,
        Lang::Py,
        &format!(
            "import urllib.request, urllib.error
body = urllib.request.urlopen('http://127.0.0.1:{port}/kb').read()
try:
    urllib.request.urlopen('http://127.0.0.1:{port}/status/404')
    code = None
except urllib.error.HTTPError as e:
    code = e.code
[len(body), code]"
        ),
        net.clone(),
    )
    .await;
    assert_eq!(v, json!([1024, 404]));
    // In parallel: asyncio.gather with afetch, Promise.all with fetch.
    let v = ok(
        &h,
        Lang::Py,
        &format!(
            "import asyncio\nrs = await asyncio.gather(*[afetch('http://127.0.0.1:{port}/kb') for _ in range(4)])\n[r.status for r in rs]"
        ),
        net.clone(),
    )
    .await;
    assert_eq!(v, json!([200, 200, 200, 200]));
    let v = ok(
        &h,
        Lang::Ts,
        &format!(
            "const rs = await Promise.all([1, 2, 3, 4].map(() => fetch('http://127.0.0.1:{port}/kb')));
             return rs.map((r) => r.status);"
        ),
        net.clone(),
    )
    .await;
    assert_eq!(v, json!([200, 200, 200, 200]));
    let lines = audit_lines(&h, "net.fetch");
    let kb: Vec<&Value> = lines
        .iter()
        .filter(|l| l["decision"] == "allow" && l["status"] == 200 && l["responseBytes"] == 1024)
        .collect();
    assert!(
        kb.len() >= 3,
        "each granted fetch has its audit line: {lines:?}"
    );
    assert_eq!(kb[0]["host"], "127.0.0.1");
    assert_eq!(kb[0]["method"], "GET");
    assert_eq!(kb[0]["port"], port);
}

#[tokio::test]
async fn fetch_without_a_grant_is_refused() {
    let f = files();
    let port = http_server();
    let (h, _d) = server(&f.project, port).await;
    for lang in BOTH {
        let (name, msg) = fails(
            &h,
            lang,
            &fetch_code(lang, &format!("http://127.0.0.1:{port}/kb")),
            Value::Null,
        )
        .await;
        assert_eq!(name, "PolicyError", "{lang:?}: {msg}");
        assert!(
            msg.contains("no network grant") && msg.contains("permissions.net"),
            "{msg}"
        );
    }
    // urllib too: the host refuses it and says how to ask.
    let (name, msg) = fails(
        &h,
        Lang::Py,
        &format!("import urllib.request\nurllib.request.urlopen('http://127.0.0.1:{port}/kb')"),
        Value::Null,
    )
    .await;
    assert_eq!(name, "PolicyError", "{msg}");
    assert!(msg.contains("permissions.net"), "{msg}");
    let denied: Vec<Value> = audit_lines(&h, "net.fetch")
        .into_iter()
        .filter(|l| l["decision"] == "deny")
        .collect();
    assert_eq!(denied.len(), 3, "{denied:?}");
}

#[tokio::test]
async fn asking_for_more_than_the_ceiling_is_an_error_naming_the_ceiling() {
    let f = files();
    let port = http_server();
    let (h, _d) = server(&f.project, port).await;
    for lang in BOTH {
        let (name, msg) = fails(&h, lang, "1", json!({"net": ["example.com"]})).await;
        assert_eq!(name, "PolicyError");
        assert!(
            msg.contains("example.com is outside what may be granted")
                && msg.contains(&format!("permissions.net ceiling is [127.0.0.1:{port}")),
            "{msg}"
        );
        let (_, msg) = fails(&h, lang, "1", json!({"read": ["/etc"]})).await;
        assert!(
            msg.contains("/etc is outside") && msg.contains("permissions.read ceiling"),
            "{msg}"
        );
        let (_, msg) = fails(
            &h,
            lang,
            "1",
            json!({"net": [format!("127.0.0.1:{}", port.wrapping_add(2))]}),
        )
        .await;
        assert!(
            msg.contains("outside what may be granted"),
            "another port: {msg}"
        );
        let (_, msg) = fails(&h, lang, "1", json!({"net": ["127.0.0.0/8"]})).await;
        assert!(
            msg.contains("outside what may be granted"),
            "a wider range: {msg}"
        );
    }
}

#[tokio::test]
async fn fetching_a_denied_host_is_refused() {
    let f = files();
    let port = http_server();
    let (h, _d) = server(&f.project, port).await;
    for lang in BOTH {
        let (name, msg) = fails(
            &h,
            lang,
            &fetch_code(lang, "https://example.com/"),
            json!({"net": true}),
        )
        .await;
        assert_eq!(name, "PolicyError", "{msg}");
        assert!(
            msg.contains("example.com is not a granted destination"),
            "{msg}"
        );
    }
}

#[tokio::test]
async fn the_same_host_by_ip_in_any_form_is_refused_when_only_its_name_is_granted() {
    let f = files();
    let port = http_server();
    let (h, _d) = server(&f.project, port).await;
    let net = json!({"net": [format!("localhost:{port}")]});
    // Dotted, decimal, octal and hex forms of 127.0.0.1: none is the granted name.
    for form in [
        "127.0.0.1",
        "2130706433",
        "0177.0.0.1",
        "0x7f000001",
        "0x7f.1",
    ] {
        for lang in BOTH {
            let (name, msg) = fails(
                &h,
                lang,
                &fetch_code(lang, &format!("http://{form}:{port}/kb")),
                net.clone(),
            )
            .await;
            assert_eq!(name, "PolicyError", "{form}: {msg}");
            assert!(
                msg.contains("127.0.0.1 is not a granted destination"),
                "{form}: {msg}"
            );
        }
    }
}

#[tokio::test]
async fn a_name_that_resolves_to_loopback_is_refused_unless_the_address_is_granted() {
    let f = files();
    let port = http_server();
    let (h, _d) = server(&f.project, port).await;
    for lang in BOTH {
        let url = format!("http://localhost:{port}/kb");
        let (name, msg) = fails(
            &h,
            lang,
            &fetch_code(lang, &url),
            json!({"net": [format!("localhost:{port}")]}),
        )
        .await;
        assert_eq!(name, "PolicyError", "{msg}");
        assert!(
            msg.contains("loopback address") && msg.contains("localhost resolves to it"),
            "{msg}"
        );
        // Granting the address too (the ceiling names it) makes the name usable.
        let both = json!({"net": [format!("localhost:{port}"), format!("127.0.0.1:{port}")]});
        let v = ok(&h, lang, &fetch_code(lang, &url), both).await;
        assert_eq!(v["status"], 200);
    }
}

#[tokio::test]
async fn a_redirect_to_cloud_metadata_is_refused() {
    let f = files();
    let port = http_server();
    let (h, _d) = server(&f.project, port).await;
    for lang in BOTH {
        let url = format!("http://127.0.0.1:{port}/to-meta");
        let (name, msg) = fails(&h, lang, &fetch_code(lang, &url), json!({"net": true})).await;
        assert_eq!(name, "PolicyError", "{msg}");
        assert!(
            msg.contains("169.254.169.254") && msg.contains("reached by a redirect"),
            "{msg}"
        );
    }
    let lines = audit_lines(&h, "net.fetch");
    assert!(
        lines
            .iter()
            .any(|l| l["host"] == "169.254.169.254" && l["decision"] == "deny"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l["status"] == 302 && l["decision"] == "allow"),
        "{lines:?}"
    );
}

#[tokio::test]
async fn ipv4_mapped_ipv6_loopback_is_refused() {
    let f = files();
    let port = http_server();
    let (h, _d) = server(&f.project, port).await;
    for lang in BOTH {
        let url = format!("http://[::ffff:127.0.0.1]:{port}/kb");
        let (name, msg) = fails(&h, lang, &fetch_code(lang, &url), json!({"net": true})).await;
        assert_eq!(name, "PolicyError", "{msg}");
        assert!(msg.contains("not a granted destination"), "{msg}");
    }
}

#[tokio::test]
async fn a_disallowed_port_or_method_is_refused() {
    let f = files();
    let port = http_server();
    let (h, _d) = server(&f.project, port).await;
    let net = json!({"net": [format!("GET 127.0.0.1:{port}")]});
    let other = port.wrapping_add(1).max(1);
    for lang in BOTH {
        let (name, msg) = fails(
            &h,
            lang,
            &fetch_code(lang, &format!("http://127.0.0.1:{other}/kb")),
            net.clone(),
        )
        .await;
        assert_eq!(name, "PolicyError");
        assert!(
            msg.contains(&format!("port {other} is not granted")),
            "{msg}"
        );
        let code = lang.pick(
            format!("await fetch('http://127.0.0.1:{port}/echo', {{method: 'POST', body: 'x'}})"),
            format!("fetch('http://127.0.0.1:{port}/echo', method='POST', body='x')"),
        );
        let (name, msg) = fails(&h, lang, &code, net.clone()).await;
        assert_eq!(name, "PolicyError");
        assert!(msg.contains("method POST is not granted"), "{msg}");
    }
}

#[tokio::test]
async fn a_response_past_the_cap_is_a_limit_error() {
    let f = files();
    let port = http_server();
    let (h, _d) = server(&f.project, port).await;
    for lang in BOTH {
        let (name, msg) = fails(
            &h,
            lang,
            &fetch_code(lang, &format!("http://127.0.0.1:{port}/big")),
            json!({"net": true}),
        )
        .await;
        assert_eq!(name, "LimitError", "{msg}");
        assert!(msg.contains("maxResponseBytes"), "{msg}");
    }
}

// ------------------------------------------------------------------------------ files

#[tokio::test]
async fn a_granted_path_is_readable_at_its_own_path() {
    let f = files();
    let (h, _d) = server(&f.project, http_server()).await;
    let read = json!({"read": [f.project]});
    let p = f.project.display().to_string();
    for lang in BOTH {
        let v = ok(
            &h,
            lang,
            &read_code(lang, &format!("{p}/data.txt")),
            read.clone(),
        )
        .await;
        assert_eq!(v, "granted data\n", "{lang:?}");
        let code = lang.pick(
            format!("const s = await fs.stat('{p}/data.txt'); return [await fs.readdir('{p}'), s.size, s.isFile()];"),
            format!("import os\n[sorted(os.listdir('{p}')), os.stat('{p}/data.txt').st_size, os.path.isfile('{p}/data.txt')]"),
        );
        let v = ok(&h, lang, &code, read.clone()).await;
        assert_eq!(
            v,
            json!([["data.txt", "escape", "sub"], 13, true]),
            "{lang:?}"
        );
    }
    // The Node shapes: fs.promises, the *Sync forms, bytes.
    let code = format!(
        "return [await fs.promises.readFile('{p}/sub/inner.txt', {{encoding: 'utf8'}}), fs.readFileSync('{p}/data.txt', 'utf8'),
                 fs.existsSync('{p}/data.txt'), fs.existsSync('{p}/nope'), (await fs.readFile('{p}/data.txt')).length,
                 fs.statSync('{p}/sub').isDirectory(), fs.lstatSync('{p}/escape').isSymbolicLink()];"
    );
    let v = ok(&h, Lang::Ts, &code, read.clone()).await;
    assert_eq!(
        v,
        json!(["inner\n", "granted data\n", true, false, 13, true, true])
    );
}

#[tokio::test]
async fn reading_without_a_grant_fails_and_names_the_missing_grant() {
    let f = files();
    let (h, _d) = server(&f.project, http_server()).await;
    let p = f.project.display().to_string();
    for lang in BOTH {
        let (_, msg) = fails(
            &h,
            lang,
            &read_code(lang, &format!("{p}/data.txt")),
            Value::Null,
        )
        .await;
        assert!(
            msg.contains("no read grant covers") && msg.contains("permissions.read"),
            "{lang:?}: {msg}"
        );
    }
}

#[tokio::test]
async fn a_caught_python_file_error_names_the_missing_grant_too() {
    let f = files();
    let (h, _d) = server(&f.project, http_server()).await;
    let code = "import pathlib\ntry:\n    pathlib.Path('/etc/hostname').read_text()\nexcept OSError as e:\n    r = str(e)\nr";
    let v = ok(&h, Lang::Py, code, json!({"read": [f.project]})).await;
    assert!(
        v.as_str()
            .unwrap()
            .contains("no read grant covers /etc/hostname"),
        "{v}"
    );
}

#[tokio::test]
async fn reading_outside_a_grant_by_dotdot_fails() {
    let f = files();
    let (h, _d) = server(&f.project, http_server()).await;
    let path = format!("{}/../secret.txt", f.project.display());
    for lang in BOTH {
        let (_, msg) = fails(
            &h,
            lang,
            &read_code(lang, &path),
            json!({"read": [f.project]}),
        )
        .await;
        assert!(!msg.contains("TOP SECRET"));
        assert!(
            msg.contains("no read grant covers") && msg.contains("secret.txt"),
            "{lang:?}: {msg}"
        );
    }
}

#[tokio::test]
async fn a_symlink_planted_in_a_granted_directory_leads_nowhere() {
    let f = files();
    let (h, _d) = server(&f.project, http_server()).await;
    let path = format!("{}/escape", f.project.display());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "TOP SECRET\n",
        "the link works on the host"
    );
    for lang in BOTH {
        let (_, msg) = fails(
            &h,
            lang,
            &read_code(lang, &path),
            json!({"read": [f.project]}),
        )
        .await;
        assert!(!msg.contains("TOP SECRET"), "{msg}");
        assert!(
            msg.contains("ENOENT") || msg.contains("No such file"),
            "{lang:?}: {msg}"
        );
    }
    // Granting the link itself is refused: it resolves outside the ceiling.
    let (name, msg) = fails(&h, Lang::Py, "1", json!({"read": [path]})).await;
    assert_eq!(name, "PolicyError");
    assert!(msg.contains("a symlink leads out"), "{msg}");
}

#[tokio::test]
async fn proc_self_root_does_not_reach_the_host() {
    let f = files();
    let (h, _d) = server(&f.project, http_server()).await;
    let path = format!("/proc/self/root{}", f.secret.display());
    for lang in BOTH {
        let (_, msg) = fails(
            &h,
            lang,
            &read_code(lang, &path),
            json!({"read": [f.project]}),
        )
        .await;
        assert!(!msg.contains("TOP SECRET"), "{msg}");
    }
    // The granted file through /proc/self/root is the view's own copy (same path inside).
    let inside = format!("/proc/self/root{}/data.txt", f.project.display());
    let v = ok(
        &h,
        Lang::Py,
        &read_code(Lang::Py, &inside),
        json!({"read": [f.project]}),
    )
    .await;
    assert_eq!(v, "granted data\n");
}

#[tokio::test]
async fn a_hard_link_cannot_make_a_granted_file_writable() {
    let f = files();
    let (h, _d) = server(&f.project, http_server()).await;
    let p = f.project.display().to_string();
    let perms = json!({"read": [f.project], "write": true});
    // Linking a read-only granted file into the workspace crosses mounts: refused.
    let (name, msg) = fails(
        &h,
        Lang::Py,
        &format!("import os\nos.link('{p}/data.txt', 'stolen')"),
        perms.clone(),
    )
    .await;
    assert_eq!(name, "OSError", "{msg}");
    assert!(msg.contains("cross-device link"), "{msg}");
    // JavaScript's fs has no link(); writing over the granted file is refused the same way.
    let (_, msg) = fails(
        &h,
        Lang::Ts,
        &format!("await fs.writeFile('{p}/data.txt', 'owned')"),
        perms,
    )
    .await;
    assert!(
        msg.contains("only the workspace") && msg.contains("is writable"),
        "{msg}"
    );
    assert_eq!(
        std::fs::read_to_string(f.project.join("data.txt")).unwrap(),
        "granted data\n"
    );
}

#[tokio::test]
async fn writing_outside_the_workspace_fails_and_names_the_workspace() {
    let f = files();
    let (h, _d) = server(&f.project, http_server()).await;
    for lang in BOTH {
        let code = lang.pick(
            "await fs.writeFile('/tmp/owned', 'x')",
            "open('/tmp/owned', 'w').write('x')",
        );
        let (_, msg) = fails(&h, lang, code, json!({"write": true})).await;
        assert!(
            msg.contains("only the workspace") && msg.contains("is writable"),
            "{lang:?}: {msg}"
        );
        // No write grant: nothing is writable, and the message says how to ask.
        let (_, msg) = fails(&h, lang, code, Value::Null).await;
        assert!(msg.contains("permissions.write"), "{lang:?}: {msg}");
    }
    assert!(!Path::new("/tmp/owned").exists());
}

#[tokio::test]
async fn the_workspace_is_writable_and_gone_after_the_run() {
    let f = files();
    let (h, _d) = server(&f.project, http_server()).await;
    for lang in BOTH {
        let code = lang.pick(
            "await fs.mkdir('out'); await fs.writeFile('out/a.txt', 'hello'); await fs.writeFile('b.bin', new Uint8Array([0, 255, 7]));
             return [fs.workspace, await fs.readFile('out/a.txt', 'utf8'), Array.from(await fs.readFile('b.bin'))];",
            "import os\nos.mkdir('out')\nopen('out/a.txt', 'w').write('hello')\nopen('b.bin', 'wb').write(bytes([0, 255, 7]))\n[os.getcwd(), open('out/a.txt').read(), list(open('b.bin', 'rb').read())]",
        );
        let v = ok(&h, lang, code, json!({"write": true})).await;
        // The workspace appears at /workspace (the host path, which names the server, stays
        // hidden), as a session's does.
        assert_eq!(v, json!(["/workspace", "hello", [0, 255, 7]]), "{lang:?}");
    }
    // Deleted with its run: no execution workspace is left beside the sessions'.
    let server_pid = h.pid.unwrap();
    let roots = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name().to_str().is_some_and(|n| {
                n.starts_with(&format!("code-executor-mcp-sessions-{server_pid}-"))
            })
        })
        .count();
    assert_eq!(roots, 1, "the workspaces' root is where this test looks");
    let left: Vec<PathBuf> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with(&format!("code-executor-mcp-sessions-{server_pid}-"))
            })
        })
        .flat_map(|root| {
            std::fs::read_dir(root)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
        })
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("run-"))
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn writing_past_the_workspace_quota_is_a_limit_error() {
    let f = files();
    let (h, _d) = server(&f.project, http_server()).await;
    for lang in BOTH {
        let code = lang.pick(
            "await fs.writeFile('big', 'z'.repeat(3 << 20))",
            "open('big', 'w').write('z' * (3 << 20))",
        );
        let (name, msg) = fails(&h, lang, code, json!({"write": true})).await;
        assert!(
            name == "LimitError" || msg.contains("EFBIG") || msg.contains("too large"),
            "{lang:?}: {name}: {msg}"
        );
    }
}

#[tokio::test]
async fn in_a_session_the_worker_holds_its_read_grants_and_other_grants_restart_it() {
    let f = files();
    let (h, _d) = server(&f.project, http_server()).await;
    let p = f.project.display().to_string();
    for lang in BOTH {
        let code = lang.pick(
            format!("globalThis.kept = 1; return await fs.readFile('{p}/data.txt', 'utf8');"),
            format!("kept = 1\nopen('{p}/data.txt').read()"),
        );
        let (v, is_error) = h
            .run_tool(
                lang.tool(),
                json!({"code": code, "session": "new", "permissions": {"read": [f.project]}}),
            )
            .await;
        assert!(!is_error, "{lang:?}: {v}");
        assert_eq!(v["result"], "granted data\n");
        let id = v["session"]["id"].as_str().unwrap().to_string();
        // The same grants: the same worker (its variables are there).
        let same = lang.pick("return typeof kept", "type(kept).__name__");
        let (v, _) = h
            .run_tool(
                lang.tool(),
                json!({"code": same, "session": id, "permissions": {"read": [f.project]}}),
            )
            .await;
        assert_eq!(v["result"], lang.pick("number", "int"), "{lang:?}: {v}");
        // No read grant: a fresh worker whose view lacks the project; the answer says so.
        let (v, is_error) = h
            .run_tool(
                lang.tool(),
                json!({"code": read_code(lang, &format!("{p}/data.txt")), "session": id}),
            )
            .await;
        assert!(is_error, "{lang:?}: {v}");
        assert!(
            v["session"]["stateLost"]
                .as_str()
                .unwrap_or("")
                .contains("read grants"),
            "{lang:?}: {v}"
        );
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("no read grant covers"),
            "{v}"
        );
    }
}

#[tokio::test]
async fn https_to_a_server_without_valid_tls_is_a_network_error_not_a_fallback() {
    let f = files();
    let port = http_server();
    let (h, _d) = server(&f.project, port).await;
    for lang in BOTH {
        let url = format!("https://127.0.0.1:{port}/kb");
        let (name, msg) = fails(&h, lang, &fetch_code(lang, &url), json!({"net": true})).await;
        assert_eq!(name, "NetworkError", "{lang:?}: {msg}");
        assert!(msg.contains(&url), "{msg}");
    }
}

mod grants;
