//! Personal data stays out of the model (`pii`, `policy::pii` in the server): the
//! fixture's `customers` records go through the bridge, and in both languages the client's
//! whole wire (results, logs, errors, progress), the output file, the audit log and the
//! server's log hold no raw email, phone or card number; `send_message` (allowed) receives
//! the real address, `web_search` (not allowed) the token, or the call is refused; tokens
//! are the same within a session and differ across sessions.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::EXE;

/// The raw values of the fixture's records that must never reach the client.
const RAW: &[&str] = &[
    "ada.lovelace@example.com",
    "alan.turing@example.org",
    "grace@navy.example.net",
    "+44 20 7946 0958",
    "7946 0958",
    "+1 415 555 0132",
    "4111 1111 1111 1111",
    "5500005555555559",
    "3782 822463 10005",
    "GB82WEST12345698765432",
];

fn assert_clean(what: &str, text: &str) {
    for raw in RAW {
        assert!(!text.contains(raw), "{raw} is in the {what}:\n{text}");
    }
}

/// The built server over raw stdio with `settings`, the fixture as `fx` (its customer tools
/// on, writing to `outbox`), answering each of `calls` (`tools/call` params, each with a
/// progress token) in turn; `next` builds a call from the answers so far. Returns every
/// line it wrote, the answers, its log and its audit file, and its configuration's directory
/// (which holds its state, the output files too, until dropped).
async fn drive(
    settings: Value,
    outbox: &Path,
    calls: &mut dyn FnMut(&[Value]) -> Option<Value>,
) -> (String, Vec<Value>, String, String, test_support::TempConfig) {
    drive_with(settings, outbox, json!({}), "debug", calls).await
}

/// [`drive`] with more environment for the fixture (`fx_env`) and the server's `RUST_LOG`.
async fn drive_with(
    settings: Value,
    outbox: &Path,
    fx_env: Value,
    rust_log: &str,
    calls: &mut dyn FnMut(&[Value]) -> Option<Value>,
) -> (String, Vec<Value>, String, String, test_support::TempConfig) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let fixture = test_support::workspace_bin("fixture-server");
    let mut env = json!({"FIXTURE_CRM_OUTBOX": outbox.to_str().unwrap()});
    if let (Some(e), Some(more)) = (env.as_object_mut(), fx_env.as_object()) {
        e.extend(more.clone());
    }
    let config = test_support::TempConfig::new(json!({
        "fx": {"command": fixture, "args": ["fx"], "env": env}
    }));
    let settings_path = config.dir.join("settings.json");
    std::fs::write(&settings_path, settings.to_string()).unwrap();
    let log = config.dir.join("server.log");
    let mut child = tokio::process::Command::new(EXE)
        .args(["--config", config.path.to_str().unwrap(), "--no-discover"])
        .env("CODE_EXECUTOR_CONFIG_PATH", &settings_path)
        .env("XDG_STATE_HOME", config.dir.join("state"))
        .env("CODE_EXECUTOR_CACHE_DIR", config.dir.join("cache"))
        .env("RUST_LOG", rust_log)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut wire = String::new();
    let mut send = async |m: Value| {
        stdin.write_all(format!("{m}\n").as_bytes()).await.unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let mut answers = Vec::new();
    let mut i = 0;
    while let Some(mut params) = calls(&answers) {
        i += 1;
        params["_meta"] = json!({"progressToken": format!("p{i}")});
        send(json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})).await;
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("the server answers");
            wire.push_str(&line);
            wire.push('\n');
            let m: Value = serde_json::from_str(&line).expect("every line is JSON");
            if m["id"] == json!(i) {
                answers.push(m["result"].clone());
                break;
            }
        }
    }
    drop(stdin);
    while let Ok(Some(line)) = lines.next_line().await {
        wire.push_str(&line);
        wire.push('\n');
    }
    let _ = child.wait().await;
    let audit = config.dir.join("state/code-executor-mcp/audit.jsonl");
    (
        wire,
        answers,
        std::fs::read_to_string(log).unwrap_or_default(),
        std::fs::read_to_string(audit).unwrap_or_default(),
        config,
    )
}

fn outbox_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const TS: &str = r#"
    const { customers } = await tools.fx.customers({});
    const c = customers[0];
    console.log('first', JSON.stringify(c));
    for (let i = 0; i < 30; i++) console.log('row', i, JSON.stringify(customers));
    await progress(5, 10, 'mailing ' + c.email);
    const sent = await tools.fx.send_message({ to: c.email, body: `Dear ${c.name}, card ${c.card}` });
    const searched = await tools.fx.web_search({ query: customers[1].email });
    let failed;
    try { await tools.fx.customers({ fail: true }); } catch (e) { failed = e.name + ': ' + e.message; }
    return { first: c, sent, searched, failed };
"#;

const PY: &str = r#"
customers = tools.fx.customers()['customers']
c = customers[0]
print('first', c)
for i in range(30):
    print('row', i, customers)
progress(5, 10, 'mailing ' + c['email'])
sent = tools.fx.send_message(to=c['email'], body=f"Dear {c['name']}, card {c['card']}")
searched = tools.fx.web_search(query=customers[1]['email'])
try:
    tools.fx.customers(fail=True)
    failed = None
except Exception as e:
    failed = type(e).__name__ + ': ' + str(e)
{'first': c, 'sent': sent, 'searched': searched, 'failed': failed}
"#;

/// A token's shape: `[EMAIL_1_3fa9c2]`.
fn is_token(v: &Value, label: &str) -> bool {
    let Some(inner) = v
        .as_str()
        .and_then(|s| s.strip_prefix(&format!("[{label}_")))
        .and_then(|r| r.strip_suffix(']'))
    else {
        return false;
    };
    let Some((n, salt)) = inner.split_once('_') else {
        return false;
    };
    !n.is_empty()
        && n.bytes().all(|c| c.is_ascii_digit())
        && salt.len() == 6
        && salt.bytes().all(|c| c.is_ascii_hexdigit())
}

fn base_settings(extra: Value) -> Value {
    let mut pii = json!({"scan": ["mcp__fx__*"], "restoreTo": ["mcp__fx__send_message"]});
    if let (Some(p), Some(e)) = (pii.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    json!({"pii": pii, "executionLimits": {"maxLogBytes": 2000}})
}

/// Code sees tokens (the default): in both languages, in a session each, nothing raw
/// reaches the client (result, logs, errors, progress), the output file, the audit log or
/// the server's log; the mailer got the real address and the card in the body, the search
/// the token; the same customer has the same token in the session's next execution, and
/// another in the other session; the audit counts the tokens per detector.
#[tokio::test]
async fn the_client_never_sees_personal_data_and_the_mailer_gets_the_real_address() {
    let dir = test_support::TempDir::new("cem-pii-tokens");
    let outbox = dir.0.join("outbox.jsonl");
    let mut step = 0;
    let mut next = |answers: &[Value]| {
        step += 1;
        let session = |i: usize| answers[i]["structuredContent"]["session"]["id"].clone();
        match step {
            1 => Some(json!({"name": "execute_typescript",
                "arguments": {"code": TS, "session": "new"}})),
            2 => Some(json!({"name": "execute_python",
                "arguments": {"code": PY, "session": "new"}})),
            3 => Some(json!({"name": "execute_typescript", "arguments": {
                "code": "return (await tools.fx.customers({})).customers[0].email",
                "session": session(0)}})),
            4 => Some(json!({"name": "execute_python", "arguments": {
                "code": "tools.fx.customers()['customers'][0]['email']",
                "session": session(1)}})),
            5 => Some(json!({"name": "execute_typescript", "arguments": {"code":
                "const c = (await tools.fx.customers({})).customers[0]; throw new Error('cannot reach ' + c.email + ' at ' + c.phone)"}})),
            _ => None,
        }
    };
    let (wire, answers, log, audit, _config) =
        drive(base_settings(json!({})), &outbox, &mut next).await;
    assert_clean("client's wire", &wire);
    assert_clean("server log", &log);
    assert_clean("audit log", &audit);
    for (i, a) in answers.iter().take(2).enumerate() {
        let r = &a["structuredContent"];
        assert_eq!(a["isError"], json!(false), "{i}: {a}");
        let first = &r["result"]["first"];
        assert!(is_token(&first["email"], "EMAIL"), "{first}");
        assert!(is_token(&first["phone"], "PHONE"), "{first}");
        assert!(is_token(&first["card"], "CARD"), "{first}");
        assert!(is_token(&first["iban"], "IBAN"), "{first}");
        assert!(is_token(&first["lastLogin"], "IP"), "{first}");
        assert_eq!(first["name"], "Ada Lovelace");
        let failed = r["result"]["failed"].as_str().unwrap();
        assert!(failed.contains("[EMAIL_"), "{failed}");
        // The output file holds the whole output, tokenised too.
        let file = r["outputFile"]
            .as_str()
            .expect("the output overflowed into a file");
        let kept = std::fs::read_to_string(file).unwrap();
        assert!(kept.contains("[EMAIL_"), "{kept}");
        assert_clean("output file", &kept);
    }
    // Progress reached the client, tokenised (the upstream's; the code's own, which the
    // pump may coalesce away when the run ends first, is in the clean wire when sent).
    assert!(wire.contains("notifications/progress"), "{wire}");
    assert!(
        wire.contains("loading [EMAIL_") || wire.contains("mailing [EMAIL_"),
        "{wire}"
    );
    // Stable within a session, different across sessions.
    let ts_first = &answers[0]["structuredContent"]["result"]["first"]["email"];
    let py_first = &answers[1]["structuredContent"]["result"]["first"]["email"];
    assert_eq!(&answers[2]["structuredContent"]["result"], ts_first);
    assert_eq!(&answers[3]["structuredContent"]["result"], py_first);
    assert_ne!(ts_first, py_first);
    // An error thrown by code holds tokens only.
    let error = answers[4]["structuredContent"]["error"]["message"]
        .as_str()
        .unwrap();
    assert!(
        error.contains("cannot reach [EMAIL_1_") && error.contains("[PHONE_"),
        "{error}"
    );
    // The mailer received the real address and card; the search the token.
    let out = outbox_lines(&outbox);
    let sent: Vec<&Value> = out.iter().filter(|l| l["tool"] == "send_message").collect();
    let searched: Vec<&Value> = out.iter().filter(|l| l["tool"] == "web_search").collect();
    assert_eq!(sent.len(), 2, "{out:?}");
    for s in &sent {
        assert_eq!(s["args"]["to"], "ada.lovelace@example.com", "{s}");
        assert_eq!(
            s["args"]["body"], "Dear Ada Lovelace, card 4111 1111 1111 1111",
            "{s}"
        );
    }
    for s in &searched {
        assert!(is_token(&s["args"]["query"], "EMAIL"), "{s}");
    }
    // The audit says how many tokens were made, per detector, and nothing more.
    let counts: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["event"] == "pii.tokens")
        .collect();
    // Made in the first two executions and the last (the sessions' next runs made none).
    assert_eq!(counts.len(), 3, "{audit}");
    assert_eq!(counts[0]["tokens"]["EMAIL"], json!(3), "{audit}");
    assert_eq!(counts[0]["tokens"]["CARD"], json!(3), "{audit}");
}

/// Code sees values (`sandboxSees: "values"`) and tokens bound elsewhere are refused
/// (`elsewhere: "deny"`): code computes with the real address (its domain), what it returns
/// and prints is tokenised on the way out, the mailer gets the value, and a search with an
/// address is refused as a policy decision, in both languages.
#[tokio::test]
async fn code_that_sees_values_is_tokenised_on_the_way_out_and_elsewhere_is_refused() {
    let dir = test_support::TempDir::new("cem-pii-values");
    let outbox = dir.0.join("outbox.jsonl");
    let ts = r#"
        const c = (await tools.fx.customers({})).customers[0];
        console.log('mailing', c.email);
        await tools.fx.send_message({ to: c.email, body: 'hi' });
        let refused;
        try { await tools.fx.web_search({ query: c.email }); } catch (e) { refused = e.name; }
        return { domain: c.email.split('@')[1], email: c.email, refused };
    "#;
    let py = r#"
c = tools.fx.customers()['customers'][0]
print('mailing', c['email'])
tools.fx.send_message(to=c['email'], body='hi')
try:
    tools.fx.web_search(query=c['email'])
    refused = None
except Exception as e:
    refused = type(e).__name__
{'domain': c['email'].split('@')[1], 'email': c['email'], 'refused': refused}
"#;
    // A long run (`yieldAfterMs`) read with `wait`: its running answers (the task status:
    // the lines so far, progress) pass the same exit.
    let long = r#"
        const { customers } = await tools.fx.customers({});
        for (let i = 0; i < 40; i++) {
          const c = customers[i % 3];
          console.log('step', i, c.email, c.phone);
          await progress(i + 1, 40, 'at ' + c.email);
          await tools.fx.customers({});
        }
        return customers.map((c) => c.email);
    "#;
    let calls = [
        json!({"name": "execute_typescript", "arguments": {"code": ts}}),
        json!({"name": "execute_python", "arguments": {"code": py}}),
        json!({"name": "execute_typescript", "arguments": {"code": long, "yieldAfterMs": 1}}),
    ];
    let mut it = calls.into_iter();
    let mut next = |answers: &[Value]| match answers.last() {
        Some(a) if a["structuredContent"].get("running").is_some() => Some(json!({
            "name": "wait",
            "arguments": {"handle": a["structuredContent"]["running"]["handle"], "timeoutMs": 50}
        })),
        _ => it.next(),
    };
    let settings = base_settings(json!({"sandboxSees": "values", "elsewhere": "deny"}));
    let (wire, answers, log, audit, _config) = drive(settings, &outbox, &mut next).await;
    assert_clean("client's wire", &wire);
    assert_clean("server log", &log);
    assert_clean("audit log", &audit);
    let last = &answers[answers.len() - 1]["structuredContent"];
    assert_eq!(last["result"].as_array().map(Vec::len), Some(3), "{last}");
    assert!(is_token(&last["result"][0], "EMAIL"), "{last}");
    assert!(
        answers[2]["structuredContent"].get("running").is_some(),
        "the long run answered at once with a handle: {}",
        answers[2]
    );
    assert!(wire.contains("step 0 [EMAIL_"), "{wire}");
    for a in &answers[..2] {
        let r = &a["structuredContent"]["result"];
        assert_eq!(r["domain"], "example.com", "{a}");
        assert!(is_token(&r["email"], "EMAIL"), "{a}");
        assert_eq!(r["refused"], "PolicyError", "{a}");
        let logs = a["structuredContent"]["logs"].to_string();
        assert!(logs.contains("mailing [EMAIL_"), "{logs}");
    }
    let out = outbox_lines(&outbox);
    assert_eq!(out.len(), 2, "only the mailer was called: {out:?}");
    assert!(
        out.iter()
            .all(|l| l["tool"] == "send_message" && l["args"]["to"] == "ada.lovelace@example.com"),
        "{out:?}"
    );
}

/// Values of every detector and a user pattern, some encoded as a URL or a page would carry
/// them, planted by the fixture's `leak` (the code names them in base64 only).
const PLANTED: &[&str] = &[
    "judy.planted@example.com",
    "+1 415 555 0177",
    "DE89 3704 0044 0532 0130 00",
    "5500 0055 5555 5559",
    "203.0.113.77",
    "sk-plantedAbcdefghijklmnopqrstu",
    "CUS-424242",
    "judy.encoded%40example.com",
    "judy.entity&#64;example&#x2E;com",
    "judy.escaped\\u0040example.com",
    "https://crm.example/find?phone=%2B1+415+555+0199&x=1",
];

/// What must be nowhere: each planted value (and, for the encoded ones, the value decoded).
const FORBIDDEN: &[&str] = &[
    "judy.planted@example.com",
    "+1 415 555 0177",
    "415 555 0177",
    "DE89 3704 0044 0532 0130 00",
    "5500 0055 5555 5559",
    "203.0.113.77",
    "sk-plantedAbcdefghijklmnopqrstu",
    "plantedAbcdefghijk",
    "CUS-424242",
    "judy.encoded%40example.com",
    "judy.encoded@example.com",
    "judy.entity&#64;example&#x2E;com",
    "judy.entity@example.com",
    "judy.escaped\\u0040example.com",
    "judy.escaped\\\\u0040example.com",
    "judy.escaped@example.com",
    "%2B1+415+555+0199",
    "415 555 0199",
];

/// The configured secret (the fixture's `TOK`), and the forms of it that must be nowhere:
/// itself, hex in both cases, base64 at each alignment (the characters that encode it
/// alone), every byte percent-encoded, every character a `\u` escape.
const CONFIGURED: &str = "cfg-Secret-Planted-9f8e7d";

fn configured_forms() -> Vec<String> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let b = CONFIGURED.as_bytes();
    let hex: String = b.iter().map(|c| format!("{c:02x}")).collect();
    let mut forms = vec![
        CONFIGURED.to_string(),
        hex.to_ascii_uppercase(),
        hex,
        b.iter().map(|c| format!("%{c:02X}")).collect(),
        CONFIGURED
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect(),
    ];
    for (k, prefix) in ["", "x", "xy"].iter().enumerate() {
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let enc = engine.encode([prefix.as_bytes(), b].concat());
            // The characters from the first whole one after the prefix, 16 of them.
            let from = (8 * k).div_ceil(6);
            forms.push(enc[from..from + 16].to_string());
        }
    }
    forms
}

fn assert_nothing_planted(what: &str, text: &str) {
    for raw in FORBIDDEN {
        assert!(!text.contains(raw), "{raw} is in the {what}:\n{text}");
    }
    for form in configured_forms() {
        assert!(!text.contains(&form), "{form} is in the {what}:\n{text}");
    }
}

/// Every file under `dir`, as text.
fn files_under(dir: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            let bytes = std::fs::read(&p).unwrap_or_default();
            out.push((p, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    out
}

const EVERYWHERE_TS: &str = r#"
    const shapes = ['text', 'json', 'keys', 'structured_keys', 'blocks', 'split', 'error', 'rpc_error', 'progress'];
    const out = {};
    const leak = async (what, as) => {
      try { return await tools.fx.leak({ what, as }); }
      catch (e) { return e.name + ': ' + e.message; }
    };
    for (const [i, b] of PLANTED.entries())
      for (const as of shapes) out[i + ':' + as] = await leak('b64:' + b, as);
    for (const as of [...shapes, 'encoded']) out['env:' + as] = await leak('env:TOK', as);
    out.reflected = await tools.fx.reflect({ value: out['0:keys'] });
    // The token when code sees tokens; the address itself when it sees values.
    const t0 = out['0:text'];
    const token = t0.includes('[') ? t0.slice(t0.indexOf('[')) : t0.slice('upstream says: '.length);
    // Restored for send_message and echo (neither scanned), which echo it back.
    out.sent = await tools.fx.send_message({ to: token, body: 'hi' });
    out.echoed = await tools.fx.echo({ message: token });
    out.token = token;
    out.joined = out['env:split'].join('');
    out.signature = tools.fx.leak.signature + tools.fx.reflect.signature;
    out.schema = await getToolSchema('mcp__fx__leak');
    console.log(JSON.stringify(out));
    return out;
"#;

const EVERYWHERE_PY: &str = r#"
shapes = ['text', 'json', 'keys', 'structured_keys', 'blocks', 'split', 'error', 'rpc_error', 'progress']
out = {}
def leak(what, shape):
    try:
        return tools.fx.leak({'what': what, 'as': shape})
    except Exception as e:
        return type(e).__name__ + ': ' + str(e)
for i, b in enumerate(PLANTED):
    for shape in shapes:
        out[f'{i}:{shape}'] = leak('b64:' + b, shape)
for shape in shapes + ['encoded']:
    out['env:' + shape] = leak('env:TOK', shape)
out['reflected'] = tools.fx.reflect(value=out['0:keys'])
t0 = out['0:text']
token = t0[t0.index('['):] if '[' in t0 else t0[len('upstream says: '):]
out['sent'] = tools.fx.send_message(to=token, body='hi')
out['echoed'] = tools.fx.echo(message=token)
out['token'] = token
out['joined'] = ''.join(out['env:split'])
out['signature'] = tools.fx.leak.signature + tools.fx.reflect.signature
out['schema'] = get_tool_schema('mcp__fx__leak')
print(out)
out
"#;

/// Data at rest and on the wire: values of every detector, a user pattern and a configured
/// secret (also encoded: percent, HTML references, `\u` escapes, a query's `+`; the secret
/// in base64, hex, percent and `\u` forms), planted by an upstream in every position of a
/// result (a text, JSON values, object keys and nested keys, array items, structured
/// content, resource blocks and links, `_meta`, two blocks, an error result, a JSON-RPC
/// error, progress), read by TypeScript and Python, with the server logging at `trace` and
/// auditing arguments: no byte the server sent, no line it logged and no file it wrote (the
/// learned types and schema caches, the audit log, output files) holds any of them; the
/// learned types still typed the results; a value restored for `send_message` and `echo`
/// (not scanned) and echoed back comes back as the same token.
#[tokio::test]
async fn no_planted_value_reaches_any_exit_or_any_file() {
    no_planted_value_leaves("tokens").await;
}

/// The same when code sees the values (`sandboxSees: "values"`): learned from the raw
/// results, the types keep no key that is personal data, and every exit tokenises.
#[tokio::test]
async fn no_planted_value_leaves_when_code_sees_values() {
    no_planted_value_leaves("values").await;
}

async fn no_planted_value_leaves(sees: &str) {
    use base64::Engine;
    let dir = test_support::TempDir::new("cem-pii-everywhere");
    let outbox = dir.0.join("outbox.jsonl");
    let planted: Vec<String> = PLANTED
        .iter()
        .map(|v| base64::engine::general_purpose::STANDARD.encode(v))
        .collect();
    let planted = serde_json::to_string(&planted).unwrap();
    let ts = EVERYWHERE_TS.replace("PLANTED", &planted);
    let py = EVERYWHERE_PY.replace("PLANTED", &planted);
    let mut calls = vec![
        json!({"name": "execute_typescript", "arguments": {"code": ts}}),
        json!({"name": "execute_python", "arguments": {"code": py}}),
        json!({"name": "get_tool_schema", "arguments": {"name": "mcp__fx__leak"}}),
        json!({"name": "search_tools", "arguments": {"query": "leak reflect", "detail": "full"}}),
        // Kept in the store: a session's execution (its cell, with its call log) and a run
        // with a handle (its call log, as it goes).
        json!({"name": "execute_typescript", "arguments": {"code": ts, "session": "new"}}),
        json!({"name": "execute_python", "arguments": {"code": py, "yieldAfterMs": 0}}),
    ]
    .into_iter();
    let mut waited = false;
    let mut next = |answers: &[Value]| {
        calls.next().or_else(|| {
            let handle = answers.last()?["structuredContent"]["running"]["handle"].clone();
            (!waited && handle.is_string()).then(|| {
                waited = true;
                json!({"name": "wait", "arguments": {"handle": handle, "timeoutMs": 50_000}})
            })
        })
    };
    let settings = json!({
        "pii": {
            "scan": ["mcp__fx__leak", "mcp__fx__reflect"],
            "patterns": {"CUSTOMER_ID": "CUS-[0-9]{6}"},
            "restoreTo": ["mcp__fx__send_message", "mcp__fx__echo"],
            "sandboxSees": sees
        },
        "audit": {"logArguments": true},
        "executionLimits": {"maxLogBytes": 2000}
    });
    let fx_env = json!({"FIXTURE_META_TOOLS": "1", "TOK": CONFIGURED});
    let (wire, answers, log, audit, config) =
        drive_with(settings, &outbox, fx_env, "trace", &mut next).await;
    assert_nothing_planted("client's wire", &wire);
    assert_nothing_planted("server log", &log);
    assert_nothing_planted("audit log", &audit);
    let mut files = files_under(&config.dir.join("state"));
    files.extend(files_under(&config.dir.join("cache")));
    assert!(
        files
            .iter()
            .any(|(p, _)| p.to_string_lossy().contains("types-")),
        "the learned types were written: {:?}",
        files.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    assert!(
        files
            .iter()
            .any(|(p, _)| p.to_string_lossy().contains("store.sqlite3")),
        "the store was written: {:?}",
        files.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for (path, text) in &files {
        assert_nothing_planted(&path.display().to_string(), text);
    }
    // The session's execution and the long run answered as the others did.
    assert!(
        answers[4]["structuredContent"]["session"]["id"].is_string(),
        "{}",
        answers[4]
    );
    assert_eq!(answers[6]["isError"], json!(false), "{}", answers[6]);
    assert!(
        answers[6]["structuredContent"]["result"]["token"].is_string(),
        "{}",
        answers[6]
    );
    for (i, a) in answers.iter().take(2).enumerate() {
        let r = &a["structuredContent"]["result"];
        assert_eq!(a["isError"], json!(false), "{i}: {a}");
        let token = r["token"].as_str().unwrap();
        assert!(is_token(&json!(token), "EMAIL"), "{i}: {token}");
        // The echoes of the restored value are its token again.
        for echoed in [&r["sent"], &r["echoed"]] {
            assert!(echoed.to_string().contains(token), "{i}: {echoed}");
        }
        // Keys that are personal data made their objects maps; the fields below are typed.
        let sig = r["signature"].as_str().unwrap();
        assert!(sig.contains("deep") && sig.contains("nested"), "{i}: {sig}");
        // The encoded values became tokens in their encoding.
        for (n, label) in [(7, "EMAIL"), (8, "EMAIL"), (9, "EMAIL"), (10, "PHONE")] {
            let text = r[format!("{n}:text")].as_str().unwrap();
            assert!(text.contains(&format!("[{label}_")), "{i} {n}: {text}");
        }
        assert!(
            r["joined"].as_str().unwrap().contains("[redacted]"),
            "{i}: {r}"
        );
    }
    // The mailer got the real address.
    let out = outbox_lines(&outbox);
    assert!(
        out.iter()
            .any(|l| l["tool"] == "send_message" && l["args"]["to"] == "judy.planted@example.com"),
        "{out:?}"
    );
}
