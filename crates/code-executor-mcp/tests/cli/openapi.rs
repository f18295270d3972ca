//! The discovery commands on OpenAPI sources: `tools search` and `tools show` find and
//! declare operations (the document is read, no request is made), and `config show` shows
//! the entry with its credential masked.

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use test_support::TempDir;

use crate::common::EXE;

const KEY: &str = "cli-PLANTED-key-8Hd3kQ0zLw2";

fn run(dir: &TempDir, config: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(EXE)
        .args(["--no-discover", "--config"])
        .arg(config)
        .args(args)
        .env("HOME", &dir.0)
        .env("XDG_CONFIG_HOME", dir.0.join(".config"))
        .env("XDG_STATE_HOME", dir.0.join("state"))
        .env("CODE_EXECUTOR_CACHE_DIR", dir.0.join("cache"))
        .env("OPENAPI_CLI_KEY", KEY)
        .env_remove("CODE_EXECUTOR_CONFIG_PATH")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}\n{stdout}");
    assert!(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        "{args:?} leaked the key"
    );
    stdout
}

#[test]
fn tools_search_show_and_config_show_work_on_operations() {
    let dir = TempDir::new("cli-openapi");
    let config = dir.0.join("servers.json");
    // The document by a path relative to the config file.
    std::fs::copy(
        test_support::prism::inventory_spec(),
        dir.0.join("inventory.yaml"),
    )
    .unwrap();
    std::fs::write(
        &config,
        json!({"mcpServers": {"inventory": {
            "type": "openapi", "spec": "./inventory.yaml",
            "auth": {"apiKey": {"value": "${OPENAPI_CLI_KEY}"}}}}})
        .to_string(),
    )
    .unwrap();
    let found: Value = serde_json::from_str(&run(
        &dir,
        &config,
        &[
            "tools",
            "search",
            "order more stock from the supplier",
            "--json",
        ],
    ))
    .unwrap();
    assert_eq!(
        found["tools"][0]["name"], "mcp__inventory__orderRestock",
        "{found}"
    );
    let lines = run(&dir, &config, &["tools", "search", "remove an item"]);
    assert!(lines.contains("mcp__inventory__deleteItem"), "{lines}");
    let shown = run(
        &dir,
        &config,
        &["tools", "show", "mcp__inventory__createItem"],
    );
    assert!(shown.contains("sku") && shown.contains("body"), "{shown}");
    let config_show = run(&dir, &config, &["config", "show"]);
    assert!(
        config_show.contains("openapi") && config_show.contains("inventory.yaml"),
        "{config_show}"
    );
    assert!(config_show.contains("masked"), "{config_show}");
    // `wrappers` writes a typed file per operation.
    let out = dir.0.join("wrappers");
    run(
        &dir,
        &config,
        &["wrappers", "--lang", "ts", "--out", out.to_str().unwrap()],
    );
    let written: Vec<String> = std::fs::read_dir(out.join("inventory"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        written.iter().any(|f| f.starts_with("getItem")),
        "{written:?}"
    );
    // A tool filter hides operations as it hides MCP tools.
    std::fs::write(
        &config,
        json!({"mcpServers": {"inventory": {
            "type": "openapi", "spec": "./inventory.yaml", "excludeTools": ["deleteItem"],
            "auth": {"apiKey": {"value": "${OPENAPI_CLI_KEY}"}}}}})
        .to_string(),
    )
    .unwrap();
    let lines = run(&dir, &config, &["tools", "search", "remove an item"]);
    assert!(!lines.contains("deleteItem"), "{lines}");
}

/// `eval` runs a task on an operation both ways (direct calls and code) against the
/// inventory's Prism mock.
#[test]
fn eval_runs_a_task_on_operations() {
    let Some(prefix) = crate::common::interop::prefix(&["openapi/node_modules/.bin/prism"]) else {
        return;
    };
    let mock = test_support::prism::inventory(&prefix);
    let dir = TempDir::new("cli-openapi-eval");
    let config = dir.0.join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"inventory": {
            "type": "openapi", "spec": mock.spec, "baseUrl": mock.base_url(),
            "allowAddresses": ["127.0.0.1"],
            "auth": {"apiKey": {"value": "${OPENAPI_CLI_KEY}"}}}}})
        .to_string(),
    )
    .unwrap();
    let tasks = dir.0.join("tasks.json");
    std::fs::write(
        &tasks,
        json!({"name": "inventory", "tasks": [{
            "name": "one-item",
            "prompt": "What is the item WID-0042 called?",
            "direct": [{"server": "inventory", "tool": "getItem", "arguments": {"sku": "WID-0042"}}],
            "code": {"language": "typescript", "source": "return (await callMCPTool('inventory', 'getItem', { sku: 'WID-0042' })).name;"},
            "expect": {"contains": ["Blue widget"]}
        }]})
        .to_string(),
    )
    .unwrap();
    let out = run(
        &dir,
        &config,
        &[
            "eval",
            "--tasks",
            tasks.to_str().unwrap(),
            "--runs",
            "1",
            "--json",
        ],
    );
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(out.contains("one-item"), "{v}");
    // Both sides answered, and their answers held the expected text.
    assert!(out.contains("\"ok\": true"), "{v}");
    assert!(!out.contains("\"ok\": false"), "{v}");
}
