//! OpenAPI documents as sources of tools, through the built binary with code in both
//! languages: GitHub's document (`@octokit/openapi`) and a YAML inventory API (an API key the
//! mock requires, form bodies), each served by a real Prism mock shared by the tests of this
//! binary (`crate::common::openapi`). Code finds an operation by search, reads its
//! declaration, calls it and gets the mock's answer; a `DELETE` is held for approval; a
//! pinned operation is a direct tool; the planted credentials reach the mock and nothing
//! else (results, the log at trace level, the files the server writes).

use std::time::Duration;

use serde_json::{Value, json};
use test_support::{Harness, Lang, TempDir};

use crate::common::openapi::{
    API_KEY, BEARER, credentials_env, files_holding, github_entry, inventory_entry, mocks,
};
use crate::common::{BOTH, EXE};

/// The server with GitHub's and the inventory's mocks upstream, `settings`, its log kept
/// (at `RUST_LOG=trace`).
async fn start(mocks: &crate::common::openapi::Mocks, settings: Value) -> (Harness, TempDir) {
    let dir = TempDir::new("openapi");
    let path = dir.0.join("settings.json");
    std::fs::write(&path, settings.to_string()).unwrap();
    let mut env: Vec<(&str, &str)> = credentials_env().to_vec();
    env.push(("CODE_EXECUTOR_CONFIG_PATH", path.to_str().unwrap()));
    env.push(("RUST_LOG", "trace"));
    let h = Harness::start_capturing_log(
        EXE.as_ref(),
        json!({"github": github_entry(mocks), "inventory": inventory_entry(mocks)}),
        &["--pool-size", "1", "--python-pool-size", "1"],
        &env,
    )
    .await;
    (h, dir)
}

fn code(lang: Lang) -> &'static str {
    lang.pick(
        r#"
        const found = await searchTools('get a repository by owner and name', { server: 'github', detail: 'names' });
        const schema = await getToolSchema('mcp__github__repos_get');
        const repo = await callMCPTool('mcp__github__repos_get', { owner: 'octocat', repo: 'hello-world' });
        const inv = await searchTools('look up an inventory item by its SKU', { server: 'inventory', detail: 'names' });
        const item = await tools.inventory.getItem({ sku: 'WID-0042' });
        const created = await tools.inventory.createItem({ body: { sku: 'X-1', name: 'Thing', quantity: 3 } });
        const listed = await tools.inventory.listItems({ tag: ['blue', 'widgets'], limit: 5 });
        return { names: found.tools.map(t => t.name), required: schema.inputSchema.required,
                 signature: schema.signature, fullName: repo.full_name,
                 inv: inv.tools.map(t => t.name), item: item.sku, created: created.name,
                 total: listed.total };
        "#,
        r#"
found = search_tools('get a repository by owner and name', server='github', detail='names')
schema = get_tool_schema('mcp__github__repos_get')
repo = call_mcp_tool('mcp__github__repos_get', {'owner': 'octocat', 'repo': 'hello-world'})
inv = search_tools('look up an inventory item by its SKU', server='inventory', detail='names')
item = tools.inventory.getItem(sku='WID-0042')
created = tools.inventory.createItem(body={'sku': 'X-1', 'name': 'Thing', 'quantity': 3})
listed = tools.inventory.listItems(tag=['blue', 'widgets'], limit=5)
{'names': [t['name'] for t in found['tools']], 'required': schema['inputSchema']['required'],
 'signature': schema['signature'], 'fullName': repo['full_name'],
 'inv': [t['name'] for t in inv['tools']], 'item': item['sku'], 'created': created['name'],
 'total': listed['total']}
"#,
    )
}

/// Both languages find, read and call operations of both documents; the credentials reach
/// the mocks (the inventory mock answers 401 without its key) and appear nowhere else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_are_found_read_and_called_in_both_languages() {
    let Some((_, mocks)) = mocks() else { return };
    let (h, _dir) = start(mocks, json!({})).await;
    let mut seen = Vec::new();
    for lang in BOTH {
        let (v, is_err) = h.run_tool(lang.tool(), json!({"code": code(lang)})).await;
        seen.push(v.to_string());
        assert!(!is_err, "{lang:?}: {v}");
        let r = &v["result"];
        let names: Vec<&str> = r["names"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            names.iter().take(5).any(|n| *n == "mcp__github__repos_get"),
            "{lang:?}: {names:?}"
        );
        let required = r["required"].to_string();
        assert!(
            required.contains("owner") && required.contains("repo"),
            "{required}"
        );
        assert!(
            r["signature"].as_str().unwrap().contains("repos_get"),
            "{r}"
        );
        assert_eq!(r["fullName"], "octocat/Hello-World", "{lang:?}: {r}");
        assert_eq!(r["inv"][0], "mcp__inventory__getItem", "{lang:?}: {r}");
        assert_eq!(r["item"], "WID-0042", "{lang:?}: {r}");
        assert_eq!(r["created"], "Blue widget", "{lang:?}: {r}");
        assert_eq!(r["total"], 1, "{lang:?}: {r}");
    }
    // What the client sees of the sources: the catalog, a schema, the servers.
    for (tool, args) in [
        (
            "search_tools",
            json!({"query": "repository", "detail": "full"}),
        ),
        (
            "get_tool_schema",
            json!({"name": "mcp__inventory__createItem"}),
        ),
        ("list_servers", json!({})),
    ] {
        let r = h.call(tool, args).await;
        seen.push(serde_json::to_string(&r).unwrap());
    }
    let tools = h.client.peer().list_all_tools().await.unwrap();
    seen.push(serde_json::to_string(&tools).unwrap());
    let sent = seen.join("\n");
    let log = h.server_log();
    assert!(
        log.contains("OpenAPI document read"),
        "no trace of the start"
    );
    let dir = h.config_path().unwrap().parent().unwrap().to_path_buf();
    let config = h.config_path().unwrap().to_path_buf();
    for secret in [BEARER, API_KEY] {
        assert!(!sent.contains(secret), "a credential reached the client");
        assert!(!log.contains(secret), "a credential is in the log");
        let files = files_holding(&dir, secret, &[config.as_path()]);
        assert!(files.is_empty(), "a credential was written to {files:?}");
    }
    // The cache holds the operations (a warm start searches them without the document).
    assert!(!files_holding(&dir.join("cache"), "repos_get", &[]).is_empty());
}

/// A `DELETE` operation is destructive: the approval rule on destructive tools holds it
/// (this client cannot be asked, so the fallback denies), while reads go through; a pinned
/// operation is a direct tool of ours, listed with its schema and called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_is_held_for_approval_and_a_pinned_operation_is_a_direct_tool() {
    let Some((_, mocks)) = mocks() else { return };
    let settings = json!({
        "approvals": {"annotations": "destructive", "fallback": "deny", "timeoutMs": 2000},
        "directTools": ["mcp__inventory__getItem"],
    });
    let (h, _dir) = start(mocks, settings).await;
    for lang in BOTH {
        let (v, _) = h
            .run_tool(
                lang.tool(),
                json!({"code": lang.pick(
                    "const ok = await tools.inventory.getItem({sku: 'WID-0042'});\ntry { await tools.inventory.deleteItem({sku: 'WID-0042'}); return 'deleted'; } catch (e) { return [ok.sku, e.name, e.message]; }",
                    "ok = tools.inventory.getItem(sku='WID-0042')\ntry:\n    tools.inventory.deleteItem(sku='WID-0042')\n    r = 'deleted'\nexcept Exception as e:\n    r = [ok['sku'], type(e).__name__, str(e)]\nr",
                )}),
            )
            .await;
        let r = &v["result"];
        assert_eq!(r[0], "WID-0042", "{lang:?}: {v}");
        assert_eq!(r[1], "ApprovalDenied", "{lang:?}: {v}");
        assert!(
            r[2].as_str().unwrap().contains("destructive"),
            "{lang:?}: {v}"
        );
    }
    // The pinned operation: listed as ours once the source started, then called.
    let mut listed = Vec::new();
    for _ in 0..100 {
        listed = h.client.peer().list_all_tools().await.unwrap();
        if listed.iter().any(|t| t.name == "inventory__getItem") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pinned = listed
        .iter()
        .find(|t| t.name == "inventory__getItem")
        .unwrap_or_else(|| {
            panic!(
                "not pinned: {:?}",
                listed.iter().map(|t| &t.name).collect::<Vec<_>>()
            )
        });
    assert_eq!(
        pinned.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    let r = h
        .call("inventory__getItem", json!({"sku": "WID-0042"}))
        .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert_eq!(r.structured_content.unwrap()["sku"], "WID-0042");
}

/// A person behind the client: answers each approval with the next of `answers`.
#[derive(Clone, Default)]
struct Approver {
    answers: std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for Approver {
    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let message = serde_json::to_value(&request).unwrap()["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        self.asked.lock().unwrap().push(message);
        let decision = self.answers.lock().unwrap().pop().unwrap_or("deny");
        Ok(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({ "decision": decision })),
        )
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            serde_json::from_value(json!({"elicitation": {}})).unwrap(),
            rmcp::model::Implementation::new("openapi-approvals-test", "0"),
        )
    }
}

/// A `DELETE` waits for a person: denied, it never reaches the API; approved once, it does
/// (the mock answers 204, an empty result).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_waits_for_a_persons_approval() {
    use rmcp::ServiceExt;
    let Some((_, mocks)) = mocks() else { return };
    let dir = TempDir::new("openapi-approve");
    let config = dir.0.join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"inventory": inventory_entry(mocks)}}).to_string(),
    )
    .unwrap();
    let settings = dir.0.join("settings.json");
    std::fs::write(
        &settings,
        json!({"approvals": {"annotations": "destructive", "timeoutMs": 10000}}).to_string(),
    )
    .unwrap();
    let mut cmd = tokio::process::Command::new(EXE);
    cmd.arg("--config")
        .arg(&config)
        .arg("--no-discover")
        .args(["--pool-size", "1", "--python-pool-size", "1"])
        .env("CODE_EXECUTOR_CONFIG_PATH", &settings)
        .env("XDG_STATE_HOME", dir.0.join("state"))
        .env("CODE_EXECUTOR_CACHE_DIR", dir.0.join("cache"))
        .env("XDG_DATA_HOME", dir.0.join("data"))
        .env(crate::common::openapi::API_KEY_VAR, API_KEY)
        .kill_on_drop(true);
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .spawn()
        .unwrap();
    // Answers are taken from the end: the first DELETE is denied, the second approved.
    let person = Approver::default();
    person.answers.lock().unwrap().extend(["once", "deny"]);
    let client = person.clone().serve(transport).await.unwrap();
    let code = "try { const r = await tools.inventory.deleteItem({sku: 'WID-0042'}); return ['done', r]; } catch (e) { return [e.name, e.message]; }";
    let mut outcomes = Vec::new();
    for _ in 0..2 {
        let r = client
            .call_tool(
                rmcp::model::CallToolRequestParams::new("execute_typescript")
                    .with_arguments(json!({"code": code}).as_object().unwrap().clone()),
            )
            .await
            .unwrap();
        outcomes.push(r.structured_content.unwrap()["result"].clone());
    }
    assert_eq!(outcomes[0][0], "ApprovalDenied", "{outcomes:?}");
    assert_eq!(outcomes[1][0], "done", "{outcomes:?}");
    let asked = person.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].contains("deleteItem"), "{asked:?}");
}
