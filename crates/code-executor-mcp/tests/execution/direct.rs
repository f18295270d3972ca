//! Pinned direct tools (`directTools`) through the built binary, with rmcp clients of both
//! protocol generations: listed with the upstream's own schemas, called without code, and
//! held to what calls from code are held to: the configured rules, schema validation,
//! approvals (elicitation inline on 2025-11-25, `input_required` + `requestState` on
//! 2026-07-28), the client's tool-call rate, and one audit line per call.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, ProtocolVersion, ServerNotification,
    SubscriptionFilter, Tool,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RunningService,
};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use test_support::{TempConfig, TempDir, workspace_bin};

use crate::common::EXE;

/// A client with a person behind it: answers approvals from a list ("once", "deny"), and
/// notes `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct Person {
    answers: Arc<Mutex<Vec<&'static str>>>,
    asked: Arc<Mutex<Vec<String>>>,
    list_changed: Arc<tokio::sync::Notify>,
    progress: Arc<Mutex<Vec<rmcp::model::ProgressNotificationParam>>>,
}

impl ClientHandler for Person {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let message = serde_json::to_value(&request).unwrap()["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        self.asked.lock().unwrap().push(message);
        let decision = {
            let mut a = self.answers.lock().unwrap();
            if a.is_empty() { "deny" } else { a.remove(0) }
        };
        Ok(ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({ "decision": decision })))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            serde_json::from_value(json!({"elicitation": {}})).unwrap(),
            Implementation::new("direct-tools-test", "0"),
        )
    }
}

struct Server {
    client: RunningService<RoleClient, Person>,
    person: Person,
    dir: TempDir,
    _config: TempConfig,
}

/// The pins of most tests: two tools of `fx` a rule denies or allows, one that fails, one
/// that needs an approval, and the one that counts the calls that reached the server.
fn pins() -> Value {
    json!([
        "mcp__fx__echo",
        "mcp__fx__add",
        "mcp__fx__fail",
        "mcp__fx__sleep",
        "mcp__fx__write_*",
        "mcp__fx__counts",
        "mcp__fx__surprise",
        "mcp__fx__sleep_marked",
        "mcp__fx__progress_steps",
    ])
}

/// The binary with the fixture `fx` (with its pause tools) and `settings` (approvals of
/// `write_*`, `sleep` denied by a rule, unless `settings` says otherwise), driven by a
/// client of the 2026-07-28 generation when `modern`, else of 2025-11-25.
async fn start(modern: bool, settings: Value) -> Server {
    let mut fx = test_support::fixture_entry("fx");
    fx["env"] = json!({"FIXTURE_PAUSE_TOOLS": "1"});
    let config = TempConfig::new(json!({ "fx": fx }));
    let dir = TempDir::new("direct-tools");
    let mut all = json!({
        "directTools": pins(),
        "approvals": {"approve": ["mcp__fx__write_*"], "timeoutMs": 5000},
        "policy": {"servers": {"fx": {"deny": ["sleep"]}}},
        "audit": {"path": dir.0.join("audit.jsonl")},
    });
    for (k, v) in settings.as_object().unwrap() {
        all[k] = v.clone();
    }
    let path = dir.0.join("settings.json");
    std::fs::write(&path, all.to_string()).unwrap();
    let _ = workspace_bin("fixture-server");
    let mut cmd = tokio::process::Command::new(EXE);
    cmd.arg("--config")
        .arg(&config.path)
        .arg("--no-discover")
        .env("CODE_EXECUTOR_CONFIG_PATH", &path)
        .env("XDG_STATE_HOME", dir.0.join("state"))
        .env("CODE_EXECUTOR_CACHE_DIR", dir.0.join("cache"))
        .kill_on_drop(true);
    let (transport, _) = TokioChildProcess::builder(cmd).spawn().unwrap();
    let person = Person::default();
    let client = if modern {
        person
            .clone()
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .unwrap()
    } else {
        person.clone().serve(transport).await.unwrap()
    };
    Server {
        client,
        person,
        dir,
        _config: config,
    }
}

impl Server {
    async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        let Value::Object(map) = args else {
            unreachable!()
        };
        self.client
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
            .await
            .unwrap()
    }

    /// The `tool.call` lines of the audit log.
    fn calls(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.0.join("audit.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|l| l["event"] == "tool.call")
            .collect()
    }

    /// How often each pause tool reached the upstream.
    async fn counts(&self) -> Value {
        let r = self.call("fx__counts", json!({})).await;
        serde_json::from_str(&text(&r)).unwrap()
    }
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

const OURS: [&str; 7] = [
    "execute_typescript",
    "execute_python",
    "search_tools",
    "get_tool_schema",
    "list_servers",
    "wait",
    "health",
];

fn tokens(tools: &[&Tool]) -> usize {
    let json = serde_json::to_string(tools).unwrap();
    tiktoken_rs::cl100k_base()
        .unwrap()
        .encode_with_special_tokens(&json)
        .len()
}

async fn listed_with_the_upstreams_schemas(modern: bool) {
    let s = start(modern, json!({})).await;
    let tools = s.client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    let pinned: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !OURS.contains(n))
        .collect();
    // `sleep` is pinned but denied by a rule: not listed. `surprise` does not exist yet.
    assert_eq!(
        pinned,
        [
            "fx__add",
            "fx__counts",
            "fx__echo",
            "fx__fail",
            "fx__progress_steps",
            "fx__sleep_marked",
            "fx__write_note"
        ],
        "{names:?}"
    );
    assert!(OURS.iter().all(|o| names.contains(o)), "{names:?}");
    let add = tools.iter().find(|t| t.name == "fx__add").unwrap();
    let upstream = s
        .call("get_tool_schema", json!({"name": "mcp__fx__add"}))
        .await
        .structured_content
        .unwrap();
    assert_eq!(
        add.description.as_deref(),
        Some("fx: Add two numbers; structured result.")
    );
    assert_eq!(
        serde_json::to_value(&add.input_schema).unwrap(),
        upstream["inputSchema"],
        "{upstream}"
    );
    assert_eq!(
        serde_json::to_value(add.output_schema.as_ref().unwrap()).unwrap(),
        upstream["outputSchema"],
        "{upstream}"
    );
    let counts = tools.iter().find(|t| t.name == "fx__counts").unwrap();
    assert_eq!(
        counts.annotations.as_ref().and_then(|a| a.read_only_hint),
        Some(true)
    );
    // Our own part stays within its budget; the pinned tools cost their own schemas.
    let own: Vec<&Tool> = tools.iter().filter(|t| OURS.contains(&&*t.name)).collect();
    let five: Vec<&Tool> = tools
        .iter()
        .filter(|t| t.name != "fx__sleep_marked")
        .collect();
    let (own, with) = (tokens(&own), tokens(&five));
    assert!(own < 500, "our own tools are {own} tokens");
    assert!(with > own);
}

#[tokio::test]
async fn legacy_client_lists_pinned_tools_with_the_upstreams_schemas() {
    listed_with_the_upstreams_schemas(false).await;
}

#[tokio::test]
async fn modern_client_lists_pinned_tools_with_the_upstreams_schemas() {
    listed_with_the_upstreams_schemas(true).await;
}

async fn called_without_code(modern: bool) {
    let s = start(modern, json!({})).await;
    // The upstream's own result: structured content, a text, an error.
    let r = s.call("fx__add", json!({"a": 2, "b": 3})).await;
    assert_eq!(r.structured_content, Some(json!({"sum": 5.0})), "{r:?}");
    assert_eq!(text(&r), r#"{"sum":5.0}"#);
    assert_ne!(r.is_error, Some(true));
    let r = s.call("fx__echo", json!({"message": "hi"})).await;
    assert_eq!(text(&r), "Echo: hi");
    assert_eq!(r.structured_content, None);
    let r = s.call("fx__fail", json!({"message": "nope"})).await;
    assert_eq!((r.is_error, text(&r).as_str()), (Some(true), "nope"));
    // Denied by the rule, as code is: a tool error naming the rule, and nothing sent.
    let r = s.call("fx__sleep", json!({"ms": 1})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(
        text(&r),
        "PolicyError: mcp__fx__sleep is denied by the policy for server \"fx\" (deny: sleep)"
    );
    // Arguments are checked against the upstream's schema before anything is sent.
    let r = s.call("fx__add", json!({"a": "one"})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(
        text(&r).starts_with("TypeError: invalid arguments for mcp__fx__add:"),
        "{}",
        text(&r)
    );
    // A name that is not listed is not a tool.
    let Value::Object(args) = json!({}) else {
        unreachable!()
    };
    let e = s
        .client
        .call_tool(CallToolRequestParams::new("fx__nothing").with_arguments(args))
        .await
        .expect_err("an unknown tool is a protocol error");
    assert!(e.to_string().contains("unknown tool"), "{e}");
    // One audit line per call, as for calls from code.
    let calls = s.calls();
    let line = |tool: &str| {
        calls
            .iter()
            .filter(|l| l["server"] == "fx" && l["tool"] == tool)
            .map(|l| (l["decision"].clone(), l["outcome"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        line("add"),
        [(json!("allow"), json!("ok")), (json!("deny"), Value::Null)],
        "{calls:?}"
    );
    assert_eq!(line("echo"), [(json!("allow"), json!("ok"))]);
    assert_eq!(line("fail"), [(json!("allow"), json!("tool_error"))]);
    assert_eq!(line("sleep"), [(json!("deny"), Value::Null)]);
    let denied = calls.iter().find(|l| l["tool"] == "sleep").unwrap();
    assert!(
        denied["reason"].as_str().unwrap().contains("deny: sleep"),
        "{denied}"
    );
    // The same line as a call from code makes (its keys), under an execution id of its own.
    let v = s
        .call(
            "execute_typescript",
            json!({"code": "return await tools.fx.echo({ message: 'x' })"}),
        )
        .await;
    assert_ne!(v.is_error, Some(true), "{v:?}");
    let calls = s.calls();
    let keys = |l: &Value| {
        let mut k: Vec<String> = l.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let from_code = calls.last().unwrap();
    let direct = calls.iter().find(|l| l["tool"] == "echo").unwrap();
    assert_eq!(keys(from_code), keys(direct));
    assert_ne!(from_code["execution"], direct["execution"]);
}

#[tokio::test]
async fn legacy_client_calls_pinned_tools_without_code_under_the_same_policy() {
    called_without_code(false).await;
}

#[tokio::test]
async fn modern_client_calls_pinned_tools_without_code_under_the_same_policy() {
    called_without_code(true).await;
}

/// An approval rule on a pinned tool asks the client, as for a call from code: approved once,
/// then denied (and the denied call never reaches the server).
async fn approved_by_a_person(modern: bool) {
    let s = start(modern, json!({})).await;
    s.person.answers.lock().unwrap().extend(["once", "deny"]);
    let r = s.call("fx__write_note", json!({"text": "a"})).await;
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert_eq!(text(&r), "1");
    let r = s.call("fx__write_note", json!({"text": "b"})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(text(&r).starts_with("ApprovalDenied: "), "{}", text(&r));
    let asked = s.person.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].contains("write_note"), "{asked:?}");
    assert_eq!(s.counts().await["write_note"], 1);
    let decisions: Vec<Value> = s
        .calls()
        .iter()
        .filter(|l| l["tool"] == "write_note")
        .map(|l| l["decision"].clone())
        .collect();
    assert_eq!(decisions, [json!("allow"), json!("deny")]);
}

#[tokio::test]
async fn legacy_client_approves_a_pinned_tool_by_elicitation() {
    approved_by_a_person(false).await;
}

#[tokio::test]
async fn modern_client_approves_a_pinned_tool_by_input_required() {
    approved_by_a_person(true).await;
}

/// The 2026-07-28 rounds by hand: the call answers `input_required` with the question and a
/// `requestState`; the retry with the answer completes the same call, once.
#[tokio::test]
async fn a_pinned_tools_approval_is_a_request_state_round_on_2026_07_28() {
    let s = start(true, json!({})).await;
    let Value::Object(args) = json!({"text": "q"}) else {
        unreachable!()
    };
    let call = || CallToolRequestParams::new("fx__write_note").with_arguments(args.clone());
    let first = s.client.peer().call_tool_once(call()).await.unwrap();
    let CallToolResponse::InputRequired(ir) = first else {
        panic!("expected input_required, got {first:?}")
    };
    let state = ir.request_state.clone().unwrap();
    let requests = ir.input_requests.clone().unwrap();
    assert_eq!(requests.len(), 1);
    let key = requests.keys().next().unwrap().clone();
    let asked = serde_json::to_value(&requests[&key]).unwrap();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert!(
        asked["params"]["message"]
            .as_str()
            .unwrap()
            .contains("write_note")
    );
    // Nothing was sent while the question is open.
    assert_eq!(s.counts().await.get("write_note"), None);
    let answer = json!({"action": "accept", "content": {"decision": "once"}});
    let retry = call()
        .with_request_state(state.clone())
        .with_input_responses([(key.clone(), answer.clone())].into_iter().collect());
    let done = s.client.peer().call_tool_once(retry.clone()).await.unwrap();
    let CallToolResponse::Complete(r) = done else {
        panic!("expected the result, got {done:?}")
    };
    assert_eq!(text(&r), "1");
    let again = s.client.peer().call_tool_once(retry).await;
    assert!(again.is_err(), "a requestState resumes once");
    assert_eq!(s.counts().await["write_note"], 1);
}

/// The client's rate of tool calls counts direct calls and calls from code together.
async fn rate_limited(modern: bool) {
    let s = start(modern, json!({"limits": {"toolCallsPerMinute": 2}})).await;
    for i in 0..2 {
        let r = s.call("fx__echo", json!({"message": i.to_string()})).await;
        assert_ne!(r.is_error, Some(true), "{r:?}");
    }
    let r = s.call("fx__echo", json!({"message": "3"})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(
        text(&r).starts_with("LimitError: this client is over its rate of tool calls per minute"),
        "{}",
        text(&r)
    );
    let v = s
        .call(
            "execute_typescript",
            json!({"code": "try { await tools.fx.echo({ message: 'x' }); } catch (e) { return e.name; }"}),
        )
        .await
        .structured_content
        .unwrap();
    assert_eq!(v["result"], "LimitError", "{v}");
    let denied = s.calls().iter().filter(|l| l["decision"] == "deny").count();
    assert_eq!(denied, 2);
}

#[tokio::test]
async fn legacy_client_pinned_calls_count_against_the_clients_rate() {
    rate_limited(false).await;
}

#[tokio::test]
async fn modern_client_pinned_calls_count_against_the_clients_rate() {
    rate_limited(true).await;
}

/// A pinned tool that appears later (the upstream announces `tools/list_changed`) is
/// announced to the client, and listed.
#[tokio::test]
async fn a_pinned_tool_that_appears_is_announced_and_listed() {
    let s = start(false, json!({})).await;
    let before = s.client.peer().list_all_tools().await.unwrap();
    assert!(!before.iter().any(|t| t.name == "fx__surprise"));
    let r = s
        .call(
            "execute_typescript",
            json!({"code": "return await tools.fx.add_surprise_tool({})"}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    // Each announcement is followed by a new list, as a client does, until it shows the tool
    // (fx's start was announced too, maybe later than the first list).
    let appeared = async {
        loop {
            s.person.list_changed.notified().await;
            let after = s.client.peer().list_all_tools().await.unwrap();
            if after.iter().any(|t| t.name == "fx__surprise") {
                return;
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), appeared)
        .await
        .expect("notifications/tools/list_changed, then fx__surprise in tools/list");
    let r = s.call("fx__surprise", json!({})).await;
    assert_eq!(text(&r), "surprise!", "{r:?}");
}

/// On 2026-07-28 (no `initialize`, so no session to notify) a client subscribes with
/// `subscriptions/listen`, and a pinned tool that appears is announced there.
#[tokio::test]
async fn a_pinned_tool_that_appears_is_announced_to_a_2026_07_28_subscription() {
    let s = start(true, json!({})).await;
    let mut subscription = s
        .client
        .peer()
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .unwrap();
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    let r = s
        .call(
            "execute_typescript",
            json!({"code": "return await tools.fx.add_surprise_tool({})"}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let appeared = async {
        loop {
            match subscription.next().await.unwrap() {
                Some(ServerNotification::ToolListChangedNotification(_)) => {
                    let after = s.client.peer().list_all_tools().await.unwrap();
                    if after.iter().any(|t| t.name == "fx__surprise") {
                        return;
                    }
                }
                Some(_) => {}
                None => panic!("the subscription ended"),
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), appeared)
        .await
        .expect("notifications/tools/list_changed on the subscription, then fx__surprise");
}

/// A pinned call that outlives the upstream call timeout ends with the upstream's timeout
/// error (naming the server and tool), audited as a timeout; the upstream call is cancelled.
#[tokio::test]
async fn a_pinned_call_ends_at_the_upstream_call_timeout() {
    let s = start(false, json!({"policy": {}, "upstreamCallTimeoutMs": 300})).await;
    let r = s.call("fx__sleep", json!({"ms": 30000})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert_eq!(
        text(&r),
        "ToolError: MCP server \"fx\": tool sleep did not answer within 0.3s"
    );
    let line = s
        .calls()
        .into_iter()
        .find(|l| l["tool"] == "sleep")
        .unwrap();
    assert_eq!(line["outcome"], "timeout", "{line}");
}

/// Personal data in a scanned tool's result is tokenised before the client sees it, whatever
/// code would see: a direct call's result leaves the server as an execution's exit does.
#[tokio::test]
async fn a_pinned_scanned_tools_result_reaches_the_client_tokenised() {
    for sees in ["tokens", "values"] {
        let s = start(
            false,
            json!({"pii": {"scan": ["mcp__fx__echo"], "sandboxSees": sees}}),
        )
        .await;
        let r = s
            .call("fx__echo", json!({"message": "write to ada@example.com"}))
            .await;
        let t = text(&r);
        assert!(
            t.starts_with("Echo: write to [EMAIL_") && !t.contains("ada@"),
            "{sees}: {t}"
        );
    }
}

/// A pinned server that hangs at its start holds up neither a call of another server's
/// pinned tool nor, past the start wait (10 s), the listing, which leaves it out.
#[tokio::test]
async fn a_hung_pinned_server_holds_up_no_other_pinned_tool() {
    let mut slow = test_support::fixture_entry("slow");
    slow["env"] = json!({"FIXTURE_HANG_AT_START": "1"});
    let (h, _settings) = test_support::Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": test_support::fixture_entry("fx"), "slow": slow }),
        &json!({"directTools": ["mcp__fx__echo", "mcp__slow__*"], "connectTimeoutMs": 60000}),
        &[],
    )
    .await;
    // `slow` started with the server (its tools are pinned) and is still starting.
    let started = std::time::Instant::now();
    let r = h.call("fx__echo", json!({"message": "now"})).await;
    assert_eq!(text(&r), "Echo: now", "{r:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "the call waited {:?} for another server's start",
        started.elapsed()
    );
    let tools = h.client.peer().list_all_tools().await.unwrap();
    let pinned: Vec<&str> = tools
        .iter()
        .map(|t| &*t.name)
        .filter(|n| n.contains("__"))
        .collect();
    assert_eq!(pinned, ["fx__echo"]);
}

/// The client cancelling a pinned call (`notifications/cancelled`) cancels the upstream call
/// too, and the call's audit line says it was cancelled.
#[tokio::test]
async fn a_client_cancelling_a_pinned_call_cancels_the_upstream_call() {
    use rmcp::model::{CallToolRequest, ClientRequest};
    let s = start(false, json!({})).await;
    let marker = s.dir.0.join("cancelled");
    let started = s.dir.0.join("started");
    let Value::Object(args) = json!({"ms": 60000, "marker": marker, "started": started}) else {
        unreachable!()
    };
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("fx__sleep_marked").with_arguments(args),
    ));
    let handle = s
        .client
        .peer()
        .send_cancellable_request(request, rmcp::service::PeerRequestOptions::no_options())
        .await
        .unwrap();
    // The call reaches the upstream before the client gives up (polling for the file it
    // writes when it starts, as the execution tests do).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the call never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    handle
        .cancel(Some("the user stopped it".into()))
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !marker.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the upstream call was not cancelled"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // The server goes on serving; the next call's line follows the cancelled one's.
    let r = s.call("fx__echo", json!({"message": "after"})).await;
    assert_eq!(text(&r), "Echo: after");
    let lines: Vec<(Value, Value)> = s
        .calls()
        .iter()
        .map(|l| (l["tool"].clone(), l["outcome"].clone()))
        .collect();
    assert_eq!(
        lines,
        [
            (json!("sleep_marked"), json!("cancelled")),
            (json!("echo"), json!("ok"))
        ]
    );
}

/// A client that asks for progress gets the upstream's progress of a pinned call under its
/// own token, as it would for an execution's upstream calls.
#[tokio::test]
async fn a_pinned_calls_upstream_progress_reaches_the_client() {
    use rmcp::model::{NumberOrString, ProgressToken, RequestMetaObject};
    let s = start(false, json!({})).await;
    let Value::Object(args) = json!({"steps": 3}) else {
        unreachable!()
    };
    let mut params = CallToolRequestParams::new("fx__progress_steps").with_arguments(args);
    let mut meta = RequestMetaObject::default();
    meta.set_progress_token(ProgressToken(NumberOrString::String("direct-1".into())));
    params.meta = Some(meta);
    let r = s.client.peer().call_tool(params).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let got = s.person.progress.lock().unwrap().clone();
    assert!(!got.is_empty(), "no progress arrived");
    // Under the request's token (rmcp's client puts in one of its own), growing (coalesced
    // to longRuns.progressPerSecond), each saying where it comes from.
    assert!(
        got.iter().all(|p| p.progress_token == got[0].progress_token
            && p.message
                .as_deref()
                .unwrap_or("")
                .starts_with("fx.progress_steps: step")),
        "{got:?}"
    );
    assert!(
        got.windows(2).all(|w| w[0].progress < w[1].progress),
        "{got:?}"
    );
}

/// A pinned tool of a server that failed to start is still called through the bridge: a tool
/// error naming the server and why, audited as a denied attempt, as for code.
#[tokio::test]
async fn a_pinned_tool_of_a_server_that_failed_to_start_says_why() {
    let mut bad = test_support::fixture_entry("bad");
    bad["env"] = json!({"FIXTURE_FAIL_TO_START": "1"});
    let dir = TempDir::new("direct-bad");
    let (h, _settings) = test_support::Harness::with_settings(
        EXE.as_ref(),
        json!({ "fx": test_support::fixture_entry("fx"), "bad": bad }),
        &json!({"directTools": ["mcp__fx__echo", "mcp__bad__echo"], "audit": {"path": dir.0.join("audit.jsonl")}}),
        &[],
    )
    .await;
    let tools = h.client.peer().list_all_tools().await.unwrap();
    assert!(!tools.iter().any(|t| t.name == "bad__echo"));
    let r = h.call("bad__echo", json!({"message": "x"})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(
        text(&r).starts_with("ToolError: MCP server \"bad\" failed to start: "),
        "{}",
        text(&r)
    );
    // An unpinned name of that server is not a tool.
    let Value::Object(args) = json!({}) else {
        unreachable!()
    };
    let e = h
        .client
        .call_tool(CallToolRequestParams::new("bad__other").with_arguments(args))
        .await
        .expect_err("not pinned");
    assert!(e.to_string().contains("unknown tool"), "{e}");
    let audit = std::fs::read_to_string(dir.0.join("audit.jsonl")).unwrap();
    let line = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["event"] == "tool.call")
        .unwrap();
    assert_eq!(
        (&line["server"], &line["tool"], &line["decision"]),
        (&json!("bad"), &json!("echo"), &json!("deny")),
        "{line}"
    );
}
