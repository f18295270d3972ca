//! Pauses mid-script with rmcp clients in both protocol generations (the Python SDK drives the
//! same in `tests/interop/pauses.py`): approvals asked inline (2025-11-25) or by
//! `input_required` (2026-07-28), the `requestState` handle and its misuse, the deadline clock
//! standing still while a person answers, and `llm.ask` through the client's sampling.

#![allow(
    deprecated,
    reason = "sampling (deprecated in 2026-07-28) is what llm.ask uses"
)]

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientConfig, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use test_support::{TempConfig, TempDir, workspace_bin};

use crate::common::EXE;

/// Answers approvals from a list ("once", "execution", "deny", or "slow:MS" then "once"), and
/// sampling with `sampled: <last prompt>`.
#[derive(Clone, Default)]
struct Person {
    answers: Arc<Mutex<Vec<String>>>,
    asked: Arc<Mutex<Vec<String>>>,
    /// Declares the tasks extension (2026-07-28).
    tasks: bool,
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
        let next = {
            let mut a = self.answers.lock().unwrap();
            if a.is_empty() {
                "deny".to_string()
            } else {
                a.remove(0)
            }
        };
        let decision = match next.strip_prefix("slow:") {
            Some(ms) => {
                tokio::time::sleep(std::time::Duration::from_millis(ms.parse().unwrap())).await;
                "once".to_string()
            }
            None => next,
        };
        Ok(
            ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({"decision": decision})),
        )
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let v = serde_json::to_value(&params).unwrap();
        let last = v["messages"].as_array().unwrap().last().unwrap()["content"]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        Ok(serde_json::from_value(json!({
            "model": "person", "role": "assistant",
            "content": {"type": "text", "text": format!("sampled: {last}")}
        }))
        .unwrap())
    }

    fn get_info(&self) -> ClientConfig {
        let mut caps = json!({"elicitation": {}, "sampling": {}});
        if self.tasks {
            caps["extensions"] = json!({ "io.modelcontextprotocol/tasks": {} });
        }
        ClientConfig::new(
            serde_json::from_value(caps).unwrap(),
            Implementation::new("pauses-test", "0"),
        )
    }
}

struct Server {
    client: RunningService<RoleClient, Person>,
    person: Person,
    _config: TempConfig,
    _dir: TempDir,
}

async fn start(modern: bool) -> Server {
    start_as(modern, Person::default()).await
}

async fn start_as(modern: bool, person: Person) -> Server {
    start_with(modern, person, json!({})).await
}

/// [`start_as`] with `extra` settings beside the approvals and model calls.
async fn start_with(modern: bool, person: Person, extra: Value) -> Server {
    let mut fix = test_support::fixture_entry("fix");
    fix["env"] = json!({"FIXTURE_PAUSE_TOOLS": "1"});
    let config = TempConfig::new(json!({ "fix": fix }));
    let dir = TempDir::new("pauses");
    let settings = dir.0.join("settings.json");
    let mut all = json!({"approvals": {"approve": ["mcp__fix__write_*"], "timeoutMs": 2000}, "llm": {"enabled": true}});
    for (k, v) in extra.as_object().unwrap() {
        all[k] = v.clone();
    }
    std::fs::write(&settings, all.to_string()).unwrap();
    let _ = workspace_bin("fixture-server");
    let mut cmd = tokio::process::Command::new(EXE);
    cmd.arg("--config")
        .arg(&config.path)
        .arg("--no-discover")
        .env("CODE_EXECUTOR_CONFIG_PATH", &settings)
        .env("XDG_STATE_HOME", dir.0.join("state"))
        .env("CODE_EXECUTOR_CACHE_DIR", dir.0.join("cache"))
        .env("XDG_DATA_HOME", dir.0.join("data"))
        .kill_on_drop(true);
    let (transport, _) = TokioChildProcess::builder(cmd).spawn().unwrap();
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
        _config: config,
        _dir: dir,
    }
}

fn params(code: &str, extra: Value) -> CallToolRequestParams {
    params_for("execute_typescript", code, extra)
}

fn params_for(tool: &'static str, code: &str, extra: Value) -> CallToolRequestParams {
    let mut args = json!({"code": code});
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    let Value::Object(map) = args else {
        unreachable!()
    };
    CallToolRequestParams::new(tool).with_arguments(map)
}

async fn exec(s: &Server, code: &str, extra: Value) -> Value {
    let r = s.client.call_tool(params(code, extra)).await.unwrap();
    r.structured_content.unwrap()
}

const TWO_WRITES: &str = "
    let local = 0;
    const t = await tools.fix.tick({}); local++;
    const a = await tools.fix.write_note({ text: 'a' }); local++;
    let denied;
    try { await tools.fix.write_note({ text: 'b' }); } catch (e) { denied = e.name; }
    return { t, a, local, denied };";

async fn approve_then_deny(modern: bool) {
    let s = start(modern).await;
    s.person
        .answers
        .lock()
        .unwrap()
        .extend(["once".into(), "deny".into()]);
    let v = exec(&s, TWO_WRITES, json!({})).await;
    assert_eq!(
        v["result"],
        json!({"t": 1, "a": 1, "local": 2, "denied": "ApprovalDenied"}),
        "{v}"
    );
    assert_eq!(s.person.asked.lock().unwrap().len(), 2);
    let v = exec(&s, "return await tools.fix.counts({})", json!({})).await;
    assert_eq!(v["result"], json!({"tick": 1, "write_note": 1}), "{v}");
}

/// A skill's calls are approved by the person of the execution that called it, in either
/// generation (its questions travel with the caller's `tools/call`), from either language.
async fn a_skill_asks_its_callers_person(modern: bool) {
    let s = start(modern).await;
    let saved = exec(
        &s,
        "return await saveSkill('note-writer', {code: 'return await tools.fix.write_note({text: args.text})', description: 'Writes a note.'})",
        json!({}),
    )
    .await;
    assert_eq!(saved["result"]["version"], 1, "{saved}");
    s.person
        .answers
        .lock()
        .unwrap()
        .extend(["once".into(), "deny".into()]);
    let v = exec(
        &s,
        "return await skills.note_writer({text: 'from a skill'})",
        json!({}),
    )
    .await;
    assert!(v.get("error").is_none(), "{v}");
    let r = s
        .client
        .call_tool(params_for(
            "execute_python",
            "skills.note_writer(text='denied')",
            json!({}),
        ))
        .await
        .unwrap();
    let v = r.structured_content.unwrap();
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("skill note-writer failed") && message.contains("ApprovalDenied"),
        "{v}"
    );
    assert_eq!(s.person.asked.lock().unwrap().len(), 2);
    let v = exec(&s, "return await tools.fix.counts({})", json!({})).await;
    assert_eq!(v["result"]["write_note"], 1, "{v}");
}

#[tokio::test]
async fn legacy_skill_calls_are_approved_inline() {
    a_skill_asks_its_callers_person(false).await;
}

#[tokio::test]
async fn modern_skill_calls_are_approved_by_input_required() {
    a_skill_asks_its_callers_person(true).await;
}

#[tokio::test]
async fn legacy_client_approves_then_denies_inline() {
    approve_then_deny(false).await;
}

#[tokio::test]
async fn modern_client_approves_then_denies_by_input_required() {
    approve_then_deny(true).await;
}

/// The deadline is 1 s and the person takes 1.5 s: the clock stood still while they decided.
async fn the_deadline_waits_for_the_person(modern: bool) {
    let s = start(modern).await;
    s.person.answers.lock().unwrap().push("slow:1500".into());
    let v = exec(
        &s,
        "const w = await tools.fix.write_note({ text: 'x' }); return w;",
        json!({"timeoutMs": 1000}),
    )
    .await;
    assert_eq!(v["result"], json!(1), "{v}");
    // Code that runs past its deadline still ends at it.
    let v = exec(&s, "while (true) {}", json!({"timeoutMs": 300})).await;
    assert_eq!(v["error"]["name"], "TimeoutError", "{v}");
}

#[tokio::test]
async fn legacy_deadline_stands_still_while_a_person_answers() {
    the_deadline_waits_for_the_person(false).await;
}

#[tokio::test]
async fn modern_deadline_stands_still_while_a_person_answers() {
    the_deadline_waits_for_the_person(true).await;
}

/// Driving the rounds by hand: the requestState resumes the paused execution once; a made-up
/// or reused one is refused with a clear error.
#[tokio::test]
async fn request_state_resumes_once_and_is_refused_otherwise() {
    let s = start(true).await;
    let code = "let n = await tools.fix.tick({}); const w = await tools.fix.write_note({ text: 'q' }); return { n, w };";
    let first = s
        .client
        .peer()
        .call_tool_once(params(code, json!({})))
        .await
        .unwrap();
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

    let answer = json!({"action": "accept", "content": {"decision": "once"}});
    let retry = |state: &str| {
        params(code, json!({}))
            .with_request_state(state.to_string())
            .with_input_responses([(key.clone(), answer.clone())].into_iter().collect())
    };
    let bogus = s
        .client
        .peer()
        .call_tool_once(retry("0123456789abcdef0123456789abcdef"))
        .await;
    let e = bogus
        .expect_err("a made-up requestState is refused")
        .to_string();
    assert!(e.contains("requestState"), "{e}");

    let done = s.client.peer().call_tool_once(retry(&state)).await.unwrap();
    let CallToolResponse::Complete(r) = done else {
        panic!("expected the result, got {done:?}")
    };
    assert_eq!(
        r.structured_content.unwrap()["result"],
        json!({"n": 1, "w": 1})
    );

    let again = s.client.peer().call_tool_once(retry(&state)).await;
    assert!(again.is_err(), "a requestState resumes once");
    let v = exec(&s, "return await tools.fix.counts({})", json!({})).await;
    assert_eq!(v["result"], json!({"tick": 1, "write_note": 1}), "{v}");
}

/// Two approvals asked at once (Promise.all) arrive in one input_required round and both
/// answers resume the execution.
#[tokio::test]
async fn parallel_questions_travel_together_on_2026_07_28() {
    let s = start(true).await;
    s.person
        .answers
        .lock()
        .unwrap()
        .extend(["once".into(), "once".into(), "once".into()]);
    let v = exec(
        &s,
        "return await Promise.all([1, 2, 3].map((i) => tools.fix.write_note({ text: String(i) })));",
        json!({}),
    )
    .await;
    let mut got: Vec<u64> = v["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    got.sort_unstable();
    assert_eq!(got, [1, 2, 3], "{v}");
}

async fn sampling_loop(modern: bool) {
    let s = start(modern).await;
    let v = exec(
        &s,
        "const out = []; for (let i = 0; i < 5; i++) out.push(await llm.ask('p' + i)); return out;",
        json!({}),
    )
    .await;
    assert_eq!(
        v["result"],
        json!([
            "sampled: p0",
            "sampled: p1",
            "sampled: p2",
            "sampled: p3",
            "sampled: p4"
        ]),
        "{v}"
    );
    assert_eq!(v["llm"]["calls"], 5);
    // Python, plain and awaitable forms (gathered in parallel).
    let r = s
        .client
        .call_tool(params_for(
            "execute_python",
            "import asyncio\n\
             async def both():\n    return await asyncio.gather(llm.aask('x'), llm.athink([{'role': 'user', 'content': 'y'}]))\n\
             [llm.ask('w', max_tokens=5), *asyncio.run(both())]\n",
            json!({}),
        ))
        .await
        .unwrap();
    let v = r.structured_content.unwrap();
    assert_eq!(
        v["result"],
        json!(["sampled: w", "sampled: x", "sampled: y"]),
        "{v}"
    );
    // Called by a documents' name, asking from a nested run: the question reaches the same
    // person (inline, or by input_required answered under that name), and the answers carry
    // the documents' samplingMetrics.
    let r = s
        .client
        .call_tool(params_for(
            "executeTypescript",
            "const n = await callMCPTool('mcp__code-executor__executePython', \
             {code: \"llm.ask('z')\", enableSampling: true}); \
             return [n.result, n.samplingMetrics.totalRounds];",
            json!({"enableSampling": true}),
        ))
        .await
        .unwrap();
    let v = r.structured_content.unwrap();
    assert_eq!(v["result"], json!(["sampled: z", 1]), "{v}");
    assert_eq!(v["samplingMetrics"]["totalRounds"], 1, "{v}");
}

/// "Approve for the session": later executions of the session are not asked again; an
/// execution outside it is.
#[tokio::test]
async fn approval_for_the_session_covers_its_later_executions() {
    let s = start(false).await;
    s.person
        .answers
        .lock()
        .unwrap()
        .extend(["session".into(), "once".into()]);
    let v = exec(
        &s,
        "return await tools.fix.write_note({ text: '1' })",
        json!({"session": "new"}),
    )
    .await;
    let id = v["session"]["id"].as_str().unwrap().to_string();
    let v2 = exec(
        &s,
        "return await tools.fix.write_note({ text: '2' })",
        json!({"session": id}),
    )
    .await;
    assert_eq!(
        (v["result"].clone(), v2["result"].clone()),
        (json!(1), json!(2)),
        "{v} {v2}"
    );
    assert_eq!(
        s.person.asked.lock().unwrap().len(),
        1,
        "asked again within the session"
    );
    let v3 = exec(
        &s,
        "return await tools.fix.write_note({ text: '3' })",
        json!({}),
    )
    .await;
    assert_eq!(v3["result"], json!(3), "{v3}");
    assert_eq!(
        s.person.asked.lock().unwrap().len(),
        2,
        "not asked outside the session"
    );
}

#[tokio::test]
async fn legacy_llm_ask_loop_goes_through_inline_sampling() {
    sampling_loop(false).await;
}

#[tokio::test]
async fn modern_llm_ask_loop_goes_through_input_required_sampling() {
    sampling_loop(true).await;
}

/// A client that can be asked nothing gets the configured fallback: `deny` by default (the
/// error says why), `allow` when configured; either way the decision is audited.
#[tokio::test]
async fn the_fallback_decides_for_a_client_that_cannot_be_asked() {
    for (fallback, want_through) in [("deny", false), ("allow", true)] {
        let dir = TempDir::new("fallback");
        let settings = dir.0.join("settings.json");
        let audit = dir.0.join("audit.jsonl");
        std::fs::write(
            &settings,
            json!({"approvals": {"annotations": "notReadOnly", "fallback": fallback},
                   "audit": {"path": audit}})
            .to_string(),
        )
        .unwrap();
        let mut fix = test_support::fixture_entry("fix");
        fix["env"] = json!({"FIXTURE_PAUSE_TOOLS": "1"});
        let h = test_support::Harness::start(
            std::path::Path::new(EXE),
            json!({ "fix": fix }),
            &[],
            &[("CODE_EXECUTOR_CONFIG_PATH", settings.to_str().unwrap())],
        )
        .await;
        let (v, _) = h
            .exec(
                "const peek = await tools.fix.peek({});
                 try { return { peek, tick: await tools.fix.tick({}) }; }
                 catch (e) { return { peek, name: e.name, message: e.message }; }",
            )
            .await;
        let r = &v["result"];
        assert_eq!(
            r["peek"],
            json!(1),
            "read-only tools are not asked about: {v}"
        );
        if want_through {
            assert_eq!(r["tick"], json!(1), "{v}");
        } else {
            assert_eq!(r["name"], "ApprovalDenied", "{v}");
            let m = r["message"].as_str().unwrap();
            assert!(
                m.contains("no elicitation capability") && m.contains("fallback is deny"),
                "{m}"
            );
        }
        drop(h);
        let lines = std::fs::read_to_string(&audit).unwrap();
        let line = lines
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|l| l["event"] == "approval")
            .expect("an approval line");
        assert_eq!(line["via"], "fallback");
        assert_eq!(
            line["answer"],
            if want_through { "approved" } else { "denied" }
        );
        assert_eq!(line["tool"], "tick");
    }
}

/// A 2026-07-28 client that declared tasks gets a task for a run that asks: the question is
/// `input_required` in `tasks/get`, the answer goes back by `tasks/update`, and the run goes on
/// (nothing ran twice); a denial there is the code's `ApprovalDenied`. Both languages.
#[tokio::test]
async fn a_task_asks_through_tasks_get_and_takes_the_answer_by_tasks_update() {
    use rmcp::model::{GetTaskParams, TaskPayload, UpdateTaskParams};
    let s = start_as(
        true,
        Person {
            tasks: true,
            ..Person::default()
        },
    )
    .await;
    let py = "t = tools.fix.tick({})\na = tools.fix.write_note({'text': 'p'})\n\
              try:\n    tools.fix.write_note({'text': 'q'})\n    denied = None\n\
              except ApprovalDenied as e:\n    denied = type(e).__name__\n\
              {'t': t, 'a': a, 'local': 2, 'denied': denied}";
    for (round, (tool, code)) in [("execute_typescript", TWO_WRITES), ("execute_python", py)]
        .into_iter()
        .enumerate()
    {
        let created = match s
            .client
            .call_tool_once(params_for(tool, code, json!({})))
            .await
        {
            Ok(CallToolResponse::Task(t)) => t.task,
            other => panic!("{tool}: a task was expected: {other:?}"),
        };
        let id = created.task_id.clone();
        let mut answered = Vec::new();
        let result = loop {
            let got = s
                .client
                .get_task(GetTaskParams::new(id.clone()))
                .await
                .unwrap();
            match got.task.payload {
                TaskPayload::InputRequired { input_requests } => {
                    let mut responses = rmcp::model::InputResponses::new();
                    for (key, request) in input_requests {
                        let request = serde_json::to_value(&request).unwrap();
                        assert_eq!(request["method"], "elicitation/create", "{request}");
                        assert!(
                            request["params"]["message"]
                                .as_str()
                                .unwrap()
                                .contains("write_note"),
                            "{request}"
                        );
                        assert!(!answered.contains(&key), "{key} asked twice");
                        let decision = if answered.is_empty() { "once" } else { "deny" };
                        answered.push(key.clone());
                        responses.insert(
                            key,
                            json!({"action": "accept", "content": {"decision": decision}}),
                        );
                    }
                    s.client
                        .update_task(UpdateTaskParams::new(id.clone(), responses))
                        .await
                        .unwrap();
                }
                TaskPayload::Completed { result } => break Value::Object(result),
                TaskPayload::Working => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                other => panic!("{tool}: unexpected task state {other:?}"),
            }
        };
        assert_eq!(answered.len(), 2, "{tool}: two questions: {answered:?}");
        assert_eq!(
            result["structuredContent"]["result"],
            json!({"t": round + 1, "a": round + 1, "local": 2, "denied": "ApprovalDenied"}),
            "{tool}: {result}"
        );
        // An update for a task of nobody's or with stale keys is harmless or refused.
        let stale = s
            .client
            .update_task(UpdateTaskParams::new(
                id.clone(),
                [("q1".to_string(), json!({"action": "accept"}))].into(),
            ))
            .await;
        assert!(stale.is_ok(), "a key no longer open is ignored: {stale:?}");
        let unknown = s
            .client
            .update_task(UpdateTaskParams::new("run-not-ours", Default::default()))
            .await;
        assert!(unknown.is_err(), "an unknown task is refused");
    }
}

/// A 2026-07-28 run with a `wait` handle asks through `wait`: it answers `input_required`, and
/// the retry with the answers goes on waiting (rmcp's client drives the rounds with the same
/// person); a `requestState` of another handle is refused.
#[tokio::test]
async fn a_yielded_run_asks_through_wait() {
    let s = start(true).await;
    s.person
        .answers
        .lock()
        .unwrap()
        .extend(["once".into(), "deny".into()]);
    let v = exec(&s, TWO_WRITES, json!({"yieldAfterMs": 0})).await;
    let handle = v["running"]["handle"]
        .as_str()
        .expect("a handle")
        .to_string();
    let wait = |extra: Value| {
        let mut args = json!({"handle": handle, "timeoutMs": 10_000});
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        let Value::Object(map) = args else {
            unreachable!()
        };
        CallToolRequestParams::new("wait").with_arguments(map)
    };
    let mut bad = wait(json!({}));
    bad.request_state = Some("wait:run-someone-elses".into());
    match s.client.call_tool_once(bad).await.unwrap() {
        CallToolResponse::Complete(r) => {
            let v = r.structured_content.unwrap();
            assert_eq!(v["error"]["name"], "HandleError", "{v}");
        }
        other => panic!("a refusal was expected: {other:?}"),
    }
    let result = loop {
        let r = s.client.call_tool(wait(json!({}))).await.unwrap();
        let v = r.structured_content.unwrap();
        if v.get("running").is_none() {
            break v;
        }
    };
    assert_eq!(
        result["result"],
        json!({"t": 1, "a": 1, "local": 2, "denied": "ApprovalDenied"}),
        "{result}"
    );
    assert_eq!(s.person.asked.lock().unwrap().len(), 2);
    let v = exec(&s, "return await tools.fix.counts({})", json!({})).await;
    assert_eq!(v["result"], json!({"tick": 1, "write_note": 1}), "{v}");
}

/// A hook that answers `ask` puts the question to the person through the client, in either
/// generation (inline, or `input_required`): approved, the call goes on; denied, code gets
/// `ApprovalDenied`; the question carries the hook's reason.
async fn a_hooks_ask_reaches_the_person(modern: bool) {
    let hook = r#"printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"ticks need a nod"}}'"#;
    let extra = json!({"hooks": {"PreToolUse": [
        {"matcher": "mcp__fix__tick", "hooks": [{"type": "command", "command": hook}]}
    ]}});
    let s = start_with(modern, Person::default(), extra).await;
    s.person
        .answers
        .lock()
        .unwrap()
        .extend(["once".into(), "deny".into()]);
    let code = "const t = await tools.fix.tick({});
        let denied;
        try { await tools.fix.tick({}); } catch (e) { denied = e.name; }
        return { t, denied };";
    let v = exec(&s, code, json!({})).await;
    assert_eq!(
        v["result"],
        json!({"t": 1, "denied": "ApprovalDenied"}),
        "{v}"
    );
    let asked = s.person.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(
        asked.iter().all(|q| q.contains("ticks need a nod")),
        "{asked:?}"
    );
    let v = exec(&s, "return await tools.fix.counts({})", json!({})).await;
    assert_eq!(v["result"]["tick"], 1, "{v}");
}

#[tokio::test]
async fn legacy_client_answers_a_hooks_ask_inline() {
    a_hooks_ask_reaches_the_person(false).await;
}

#[tokio::test]
async fn modern_client_answers_a_hooks_ask_by_input_required() {
    a_hooks_ask_reaches_the_person(true).await;
}
