//! The bench's rounds for what an execution does besides run: in a session (state kept), as
//! a task (it outlives its request), and paused for an approval. Each is measured next to a
//! direct `echo` to server-everything in the same rounds.

use std::time::{Duration, Instant};

use anyhow::Context;

use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use super::measure::{Client, SIDE_BY_SIDE_GAP, call, median, summarize, timed};

/// A client that approves every call at once (`elicitation/create` answered "once").
#[derive(Clone)]
struct Approver;

impl rmcp::ClientHandler for Approver {
    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        Ok(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"decision": "once"})),
        )
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            serde_json::from_value(json!({"elicitation": {}})).unwrap_or_default(),
            rmcp::model::Implementation::new("bench-approver", "0"),
        )
    }
}

/// The cost of one approval round trip (the client answers at once), in both protocol
/// generations, next to a direct `echo` in the same rounds. Our server gets server-everything
/// twice, as `everything` (its `echo` needs approval) and `plain` (it does not); one execution
/// per round times, inside the sandbox, ten `plain.echo` calls and then ten approved
/// `everything.echo` calls (inline `elicitation/create` before 2026-07-28; an `input_required`
/// result and a retried `tools/call` on it): the difference per call is the round trip.
pub(super) async fn approval_rounds(
    direct: &Client,
    exe: &str,
    our_args: &[String],
    cfg: &Value,
    dir: &std::path::Path,
    rounds: usize,
) -> anyhow::Result<Value> {
    let settings = dir.join("approvals.json");
    std::fs::write(
        &settings,
        serde_json::to_vec(&json!({"approvals": {"approve": ["mcp__everything__echo"]}}))?,
    )?;
    let entry = cfg["mcpServers"]["everything"].clone();
    let two = dir.join("approvals-mcp.json");
    std::fs::write(
        &two,
        serde_json::to_vec(&json!({"mcpServers": {"everything": entry.clone(), "plain": entry}}))?,
    )?;
    let mut args = our_args.to_vec();
    args[1] = two.display().to_string();
    const CALLS: usize = 10;
    let code = json!({"code": format!(
        "const t0 = performance.now();
         for (let i = 0; i < {CALLS}; i++) await tools.plain.echo({{ message: 'hi' }});
         const t1 = performance.now();
         for (let i = 0; i < {CALLS}; i++) await tools.everything.echo({{ message: 'hi' }});
         const t2 = performance.now();
         return {{ plain: (t1 - t0) / {CALLS}, approved: (t2 - t1) / {CALLS} }};"
    )});
    let mut out = serde_json::Map::new();
    for generation in ["2025-11-25", "2026-07-28"] {
        let mut cmd = tokio::process::Command::new(exe);
        cmd.args(&args)
            .env("CODE_EXECUTOR_CONFIG_PATH", &settings)
            .kill_on_drop(true);
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {exe}"))?;
        let approving = if generation == "2026-07-28" {
            use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
            Approver
                .serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
                    },
                )
                .await?
        } else {
            Approver.serve(transport).await?
        };
        let run = || async {
            let Value::Object(args) = code.clone() else {
                anyhow::bail!("arguments must be an object")
            };
            // Each approved call is one round on 2026-07-28.
            let r = approving
                .call_tool_with_mrtr_max_rounds(
                    CallToolRequestParams::new("execute_typescript").with_arguments(args),
                    4 * CALLS,
                )
                .await?;
            match r.structured_content {
                Some(v) if r.is_error != Some(true) => Ok(v["result"].clone()),
                _ => anyhow::bail!("the approved execution failed: {:?}", r.content),
            }
        };
        run().await?;
        let (mut echo, mut plain, mut approved, mut ratio) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            tokio::time::sleep(SIDE_BY_SIDE_GAP).await;
            let e = timed(async {
                call(direct, "echo", json!({"message": "hi"}))
                    .await
                    .map(|_| ())
            })
            .await?;
            tokio::time::sleep(SIDE_BY_SIDE_GAP).await;
            let v = run().await?;
            let (p, a) = (
                v["plain"].as_f64().unwrap_or_default(),
                v["approved"].as_f64().unwrap_or_default(),
            );
            echo.push(e);
            plain.push(p);
            approved.push(a);
            ratio.push((a - p).max(0.0) / e);
        }
        out.insert(
            generation.to_string(),
            json!({
                "direct_echo_ms": summarize(echo),
                "call_from_code_ms": summarize(plain),
                "approved_call_from_code_ms": summarize(approved),
                "approval_round_trip_vs_direct_echo_per_round": summarize(ratio),
            }),
        );
        drop(approving);
    }
    Ok(Value::Object(out))
}

/// A trivial execution in an existing session (its worker kept, none taken from the pool)
/// next to a direct `echo`, in alternating rounds after the same idle gap, both languages; and
/// the memory of an idle session worker (as `health` reports it).
pub(super) async fn session_rounds(
    direct: &Client,
    ours: &Client,
    rounds: usize,
) -> anyhow::Result<Value> {
    let mut handles = Vec::new();
    for (tool, code) in [("execute_typescript", "return 1"), ("execute_python", "1")] {
        let r = call(ours, tool, json!({"code": code, "session": "new"})).await?;
        let id = r
            .structured_content
            .as_ref()
            .and_then(|v| v["session"]["id"].as_str())
            .context("a new session returns its handle")?
            .to_string();
        handles.push((tool, code, id));
    }
    let echo = || async {
        call(direct, "echo", json!({"message": "hello"}))
            .await
            .map(|_| ())
    };
    let in_session = |i: usize| {
        let (tool, code, id) = &handles[i];
        async move {
            call(ours, tool, json!({"code": code, "session": id}))
                .await
                .map(|_| ())
        }
    };
    for i in 0..2 {
        in_session(i).await?;
    }
    let (mut d, mut ts, mut py, mut r_ts, mut r_py) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        tokio::time::sleep(SIDE_BY_SIDE_GAP).await;
        let e = timed(echo()).await?;
        tokio::time::sleep(SIDE_BY_SIDE_GAP).await;
        let t = timed(in_session(0)).await?;
        tokio::time::sleep(SIDE_BY_SIDE_GAP).await;
        let p = timed(in_session(1)).await?;
        d.push(e);
        ts.push(t);
        py.push(p);
        r_ts.push(t / e);
        r_py.push(p / e);
    }
    let health = call(ours, "health", json!({})).await?;
    let memory: Vec<Value> = health
        .structured_content
        .as_ref()
        .and_then(|v| v["sessions"]["mine"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(|s| json!({"language": s["language"], "memoryBytes": s["memoryBytes"]}))
        .collect();
    let (r_ts, r_py) = (summarize(r_ts), summarize(r_py));
    Ok(json!({
        "direct_echo_ms": summarize(d),
        "typescript_trivial_in_session_ms": summarize(ts),
        "python_trivial_in_session_ms": summarize(py),
        "typescript_in_session_vs_direct_echo": median(&r_ts),
        "python_in_session_vs_direct_echo": median(&r_py),
        "typescript_in_session_vs_direct_echo_per_round": r_ts,
        "python_in_session_vs_direct_echo_per_round": r_py,
        "idle_session_worker_memory": memory,
        "target": "in session vs direct echo <= 1.0",
    }))
}

/// A client that declares the tasks extension (2026-07-28).
#[derive(Clone)]
struct TaskClient;

impl rmcp::ClientHandler for TaskClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder()
                .enable_tasks()
                .build(),
            rmcp::model::Implementation::new(
                "code-executor-bench-tasks",
                env!("CARGO_PKG_VERSION"),
            ),
        )
    }
}

/// A trivial execution run as a task (`tools/call` answered with the task at once, then one
/// `tasks/get` once it finished; the polling in between is not timed) next to the same
/// execution answered directly and a direct `echo`, in alternating rounds after the same idle
/// gap, through a client that declared tasks.
pub(super) async fn task_rounds(
    direct: &Client,
    exe: &str,
    our_args: &[String],
    rounds: usize,
) -> anyhow::Result<Value> {
    use rmcp::model::{CallToolResponse, GetTaskParams, TaskStatus};
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args(our_args).kill_on_drop(true);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("cannot start our server")?;
    let client = TaskClient.serve(transport).await?;
    let peer = client.peer().clone();
    let params = |yield_after: Option<u64>| {
        let mut map = serde_json::Map::new();
        map.insert("code".into(), json!("return 1 + 1"));
        if let Some(ms) = yield_after {
            map.insert("yieldAfterMs".into(), json!(ms));
        }
        CallToolRequestParams::new("execute_typescript").with_arguments(map)
    };
    let echo = || async {
        call(direct, "echo", json!({"message": "hello"}))
            .await
            .map(|_| ())
    };
    // Warm up both paths.
    for _ in 0..3 {
        peer.call_tool_once(params(None))
            .await
            .context("a trivial execution through the tasks client")?;
    }
    let (mut d, mut plain, mut create, mut get, mut total, mut r_plain, mut r_task) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    for _ in 0..rounds {
        tokio::time::sleep(SIDE_BY_SIDE_GAP).await;
        let e = timed(echo()).await?;
        tokio::time::sleep(SIDE_BY_SIDE_GAP).await;
        let p = timed(async {
            match peer.call_tool_once(params(None)).await? {
                CallToolResponse::Complete(_) => Ok(()),
                _ => anyhow::bail!("a trivial run without yieldAfterMs became a task"),
            }
        })
        .await?;
        tokio::time::sleep(SIDE_BY_SIDE_GAP).await;
        let t = Instant::now();
        let task = match peer
            .call_tool_once(params(Some(0)))
            .await
            .context("a trivial execution as a task")?
        {
            CallToolResponse::Task(t) => t.task,
            _ => anyhow::bail!("yieldAfterMs 0 with tasks declared did not make a task"),
        };
        let c = t.elapsed().as_secs_f64() * 1e3;
        // Untimed: until it finished.
        loop {
            let got = peer
                .get_task(GetTaskParams::new(task.task_id.clone()))
                .await
                .context("tasks/get")?;
            if got.task.status() != TaskStatus::Working {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(SIDE_BY_SIDE_GAP).await;
        let g = timed(async {
            let got = peer
                .get_task(GetTaskParams::new(task.task_id.clone()))
                .await?;
            anyhow::ensure!(got.task.status() == TaskStatus::Completed, "not completed");
            Ok(())
        })
        .await?;
        d.push(e);
        plain.push(p);
        create.push(c);
        get.push(g);
        total.push(c + g);
        r_plain.push(p / e);
        r_task.push((c + g) / e);
    }
    let (r_plain, r_task) = (summarize(r_plain), summarize(r_task));
    Ok(json!({
        "direct_echo_ms": summarize(d),
        "typescript_trivial_ms": summarize(plain),
        "typescript_trivial_as_task_create_ms": summarize(create),
        "typescript_trivial_as_task_get_after_done_ms": summarize(get),
        "typescript_trivial_as_task_create_plus_get_ms": summarize(total),
        "trivial_vs_direct_echo": median(&r_plain),
        "task_create_plus_get_vs_direct_echo": median(&r_task),
        "trivial_vs_direct_echo_per_round": r_plain,
        "task_create_plus_get_vs_direct_echo_per_round": r_task,
    }))
}
