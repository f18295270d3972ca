//! Tool definitions that change are held (`upstream::definitions`), through the built binary:
//! the fixture server lists `echo` with another description on its second start (a rug pull,
//! with text hidden in Unicode tag characters) and hides text in its results. The change is
//! held until `tools accept` (or an approval, `toolChanges: "ask"`); `search_tools`, `health`
//! and `doctor` say what changed; no hidden character reaches code or the model.

use serde_json::{Value, json};
use test_support::{Harness, Lang, TempDir, fixture_entry};

use crate::common::{BOTH, EXE};

fn fx(rug_pull: bool) -> Value {
    let mut fx = fixture_entry("fx");
    if rug_pull {
        fx["env"] = json!({"FIXTURE_RUG_PULL": "1"});
    }
    json!({ "fx": fx })
}

async fn start(
    cache: &TempDir,
    rug_pull: bool,
    settings: Value,
) -> (Harness, test_support::TempConfig) {
    Harness::with_settings(
        EXE.as_ref(),
        fx(rug_pull),
        &settings,
        &[("CODE_EXECUTOR_CACHE_DIR", cache.0.to_str().unwrap())],
    )
    .await
}

fn echo(lang: Lang) -> &'static str {
    lang.pick(
        "return await tools.fx.echo({message: 'hi'})",
        "tools.fx.echo(message='hi')",
    )
}

/// Whether `s` holds a tag character, a bidirectional control or a zero-width run.
fn hides(s: &str) -> bool {
    s.chars().any(|c| {
        ('\u{E0000}'..='\u{E007F}').contains(&c)
            || ('\u{202A}'..='\u{202E}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    })
}

/// `code-executor-mcp <args>` against the harness's config, with the cache dir; stdout.
fn cli(h: &Harness, cache: &TempDir, settings: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new(EXE)
        .arg("--config")
        .arg(h.config_path().unwrap())
        .arg("--no-discover")
        .args(args)
        .env("CODE_EXECUTOR_CACHE_DIR", &cache.0)
        .env("CODE_EXECUTOR_CONFIG_PATH", settings)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[tokio::test]
async fn a_changed_definition_is_held_until_accepted_and_hidden_text_never_arrives() {
    let cache = TempDir::new("defs-cache");
    // First start: the definitions are seen and accepted.
    {
        let (h, _c) = start(&cache, false, json!({})).await;
        let (v, is_err) = h
            .run_tool("execute_typescript", json!({"code": echo(Lang::Ts)}))
            .await;
        assert!(!is_err, "{v}");
        assert_eq!(v["result"], "Echo: hi");
    }
    // Second start: the server changed echo's description (and hides text in it).
    let (h, cfg) = start(&cache, true, json!({})).await;
    let settings = cfg.dir.join("settings.json");
    for lang in BOTH {
        let (v, is_err) = h.run_tool(lang.tool(), json!({"code": echo(lang)})).await;
        assert!(is_err, "{lang:?}: {v}");
        assert_eq!(v["error"]["name"], "PolicyError", "{v}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains("mcp__fx__echo is held"), "{msg}");
        assert!(
            msg.contains("the description changed from \"Echo the message back as text.\""),
            "{msg}"
        );
        assert!(msg.contains("tools accept mcp__fx__echo"), "{msg}");
        assert!(!hides(msg), "{msg:?}");
        // An unchanged tool of the same server is not held.
        let (v, is_err) = h
            .run_tool(
                lang.tool(),
                json!({"code": lang.pick("return (await tools.fx.add({a: 1, b: 2})).sum", "tools.fx.add(a=1, b=2)['sum']")}),
            )
            .await;
        assert!(!is_err, "{v}");
    }
    // search_tools and health say what changed; the description reaches nobody with its
    // hidden text.
    let (found, _) = h
        .run_tool(
            "search_tools",
            json!({"query": "echo message", "detail": "full"}),
        )
        .await;
    let entry = found["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__fx__echo")
        .unwrap_or_else(|| panic!("{found}"))
        .clone();
    assert!(
        entry["changed"]
            .as_str()
            .unwrap()
            .contains("the description changed"),
        "{entry}"
    );
    assert!(entry["flagged"].is_string(), "{entry}");
    assert!(!hides(&found.to_string()), "{found}");
    let (health, _) = h.run_tool("health", json!({})).await;
    let held = &health["heldTools"];
    assert_eq!(held[0]["tool"], "mcp__fx__echo", "{health}");
    assert!(held[0]["changed"].is_string(), "{held}");
    // doctor says it too, and `tools accept` lets it go.
    let doctor = cli(&h, &cache, &settings, &["doctor"]);
    assert!(
        doctor.contains("HELD mcp__fx__echo: the description changed"),
        "{doctor}"
    );
    let accepted = cli(&h, &cache, &settings, &["tools", "accept", "mcp__fx__echo"]);
    assert!(accepted.contains("accepted mcp__fx__echo"), "{accepted}");
    let wrong = cli(&h, &cache, &settings, &["tools", "accept", "mcp__fx__add"]);
    assert!(wrong.contains("is not held"), "{wrong}");
    // The running server sees the acceptance; the result's hidden text is taken out.
    for lang in BOTH {
        let (v, is_err) = h.run_tool(lang.tool(), json!({"code": echo(lang)})).await;
        assert!(!is_err, "{lang:?}: {v}");
        assert_eq!(v["result"], "Echo: hi", "{v:?}");
    }
    let (health, _) = h.run_tool("health", json!({})).await;
    assert_eq!(health["heldTools"][0]["changed"], Value::Null, "{health}");
    assert!(health["heldTools"][0]["flagged"].is_string(), "{health}");
}

#[tokio::test]
async fn with_tool_changes_ask_a_person_accepts_the_change_by_approving_the_call() {
    let cache = TempDir::new("defs-ask");
    {
        let (h, _c) = start(&cache, false, json!({})).await;
        let (v, is_err) = h
            .run_tool("execute_python", json!({"code": echo(Lang::Py)}))
            .await;
        assert!(!is_err, "{v}");
    }
    // This client cannot be asked: the fallback answers, first deny, then allow.
    {
        let (h, _c) = start(
            &cache,
            true,
            json!({"toolChanges": "ask", "approvals": {"fallback": "deny"}}),
        )
        .await;
        let (v, _) = h
            .run_tool("execute_typescript", json!({"code": echo(Lang::Ts)}))
            .await;
        assert_eq!(v["error"]["name"], "ApprovalDenied", "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("its definition changed since it was accepted"),
            "{v}"
        );
    }
    let (h, _c) = start(
        &cache,
        true,
        json!({"toolChanges": "ask", "approvals": {"fallback": "allow"}}),
    )
    .await;
    let (v, is_err) = h
        .run_tool("execute_typescript", json!({"code": echo(Lang::Ts)}))
        .await;
    assert!(!is_err, "{v}");
    let (health, _) = h.run_tool("health", json!({})).await;
    assert_eq!(health["heldTools"][0]["changed"], Value::Null, "{health}");
}
