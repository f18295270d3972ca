//! Running the hooks a user configured (`policy::hooks`) for the calls and runs of one
//! execution: before every upstream call (`PreToolUse`, from the bridge, whoever calls: code,
//! a skill, a pinned direct tool), after it answered (`PostToolUse`), and before a run
//! (`PreExecute`).
//!
//! Each hook is a `bash -c` command run on the host, outside the sandbox, as the user
//! configured it: in the project directory, fed the event's JSON on stdin, with a curated
//! environment (a few harmless variables, `CLAUDE_PROJECT_DIR`, and what `hooks.env` names;
//! never our own, which holds the upstreams' credentials). The matching hooks of one event run
//! in parallel; each in a process group of its own, which is killed when the hook exits
//! (children it left behind go with it) or its time is up. Its time is the smaller of its
//! `timeout` and what is left of the execution's deadline. What it prints is bounded
//! (`MAX_HOOK_STDOUT_BYTES`); a child that escaped the group and holds the pipe open is
//! given a moment, then its pipe is dropped. Every hook that ran is an audit line (`hook`).
//!
//! Failing closed: a hook that cannot be run, times out, crashes or answers anything but a
//! decision refuses what it judged, with a message naming the hook and what went wrong.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::scope::RunScope;
use policy::audit::AuditEvent;
use policy::hooks::{
    Action, Answer, Event, Exit, Handler, HookFailure, Hooks, MAX_HOOK_STDERR_BYTES,
    MAX_HOOK_STDOUT_BYTES, Verdict, read_answer, strictest,
};

/// How long a hook's output may stay open after the hook itself exited and its process group
/// was killed (a child that left the group and kept the pipe): then the pipe is dropped.
const EXIT_DRAIN_GRACE: Duration = Duration::from_millis(100);
/// The variables of ours a hook gets, when set: what a shell script needs to find programs and
/// write text, and nothing that could hold a credential.
const PASSED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TMPDIR",
    "TZ",
];

/// Why the hooks refused a call, held back its result or refused a run: what code sees as a
/// `PolicyError`.
#[derive(Debug, thiserror::Error)]
pub enum HookRefusal {
    #[error("{name} was blocked by a PreToolUse hook {reason}")]
    Blocked { name: String, reason: String },
    #[error("the result of {name} was held back by a PostToolUse hook {reason}")]
    HeldBack { name: String, reason: String },
    #[error("the run was refused by a PreExecute hook {0}")]
    Run(String),
    /// A PreExecute hook asked, and the person (or the lack of one) said no.
    #[error("{0}")]
    NotApproved(String),
    #[error("{subject} was refused: the {event} hook `{hook}` ({origin}) {failure}")]
    Failed {
        subject: String,
        event: &'static str,
        hook: String,
        origin: String,
        failure: HookFailure,
    },
}

/// What the hooks before a call decided, when they let it go on.
pub(super) enum Before {
    /// Through our own rules (approvals) as usual.
    Go,
    /// A person decides first: the hook's reason.
    Ask(String),
}

/// The hooks before a call of `tool` of `server` with `args` (which an `updatedInput`
/// replaces); `Err` is the refusal code sees as a `PolicyError`.
pub(super) async fn before_call(
    scope: &RunScope,
    server: &str,
    tool: &str,
    args: &mut Map<String, Value>,
    caller: &'static str,
) -> Result<Before, HookRefusal> {
    let hooks = &scope.policy.hooks;
    let name = policy::qualified_name(server, tool);
    let handlers = hooks.matching(Event::PreToolUse, &name);
    if handlers.is_empty() {
        return Ok(Before::Go);
    }
    let mut input = common(scope, Event::PreToolUse, caller);
    input.insert("tool_name".into(), Value::String(name.clone()));
    input.insert("tool_input".into(), Value::Object(args.clone()));
    input.insert("tool_use_id".into(), Value::String(call_id(scope)));
    // Hooks of parallel calls run within the request's permits for calls in flight
    // (`maxConcurrentToolCalls`): `Promise.all` of a thousand calls is not a thousand
    // processes at once. (PostToolUse runs under the permit its call already holds.)
    let answer = {
        let _permit = scope.ledger.in_flight.acquire().await;
        judge(scope, Event::PreToolUse, &name, &handlers, &input).await?
    };
    if let Some(updated) = answer.updated_input {
        *args = updated;
    }
    match answer.verdict {
        Verdict::Deny(reason) => Err(HookRefusal::Blocked { name, reason }),
        Verdict::Ask(reason) => Ok(Before::Ask(reason)),
        Verdict::Allow | Verdict::Nothing => Ok(Before::Go),
    }
}

/// The hooks after a call answered `result` (what code would see, personal data already
/// tokens); `Err` holds the result back as a `PolicyError`. An `updatedMCPToolOutput`
/// replaces the result.
pub(super) async fn after_call(
    scope: &RunScope,
    server: &str,
    tool: &str,
    args: &Map<String, Value>,
    result: &mut CallToolResult,
    caller: &'static str,
) -> Result<(), HookRefusal> {
    let name = policy::qualified_name(server, tool);
    let handlers = scope.policy.hooks.matching(Event::PostToolUse, &name);
    if handlers.is_empty() || result.is_error == Some(true) {
        return Ok(());
    }
    let mut input = common(scope, Event::PostToolUse, caller);
    input.insert("tool_name".into(), Value::String(name.clone()));
    input.insert("tool_input".into(), Value::Object(args.clone()));
    input.insert(
        "tool_response".into(),
        serde_json::to_value(&*result).unwrap_or(Value::Null),
    );
    input.insert("tool_use_id".into(), Value::String(call_id(scope)));
    let answer = judge(scope, Event::PostToolUse, &name, &handlers, &input).await?;
    if let Verdict::Deny(reason) = answer.verdict {
        return Err(HookRefusal::HeldBack { name, reason });
    }
    if let Some(v) = answer.updated_output {
        *result = match v {
            Value::String(s) => CallToolResult::success(vec![ContentBlock::text(s)]),
            other => {
                let mut r = CallToolResult::success(vec![ContentBlock::text(other.to_string())]);
                r.structured_content = other.is_object().then_some(other);
                r
            }
        };
    }
    Ok(())
}

/// The hooks before a run of `code` in `language` that names `tools`; `Err` refuses the run
/// (a `PolicyError`). An `ask` asks a person as a call of `execute_<language>` would be.
pub async fn before_run(
    scope: &RunScope,
    catalog: &tools::catalog::Catalog,
    language: &'static str,
    code: &str,
) -> Result<(), HookRefusal> {
    let subject = format!("execute_{language}");
    let handlers = scope.policy.hooks.matching(Event::PreExecute, &subject);
    if handlers.is_empty() {
        return Ok(());
    }
    let tools = named_tools(catalog, code).await;
    let mut input = common(scope, Event::PreExecute, "code");
    input.insert("tool_name".into(), Value::String(subject.clone()));
    input.insert("language".into(), Value::String(language.into()));
    input.insert("code".into(), Value::String(code.into()));
    input.insert(
        "principal".into(),
        Value::String(scope.principal.to_string()),
    );
    input.insert(
        "tools".into(),
        Value::Array(tools.into_iter().map(Value::String).collect()),
    );
    let answer = judge(scope, Event::PreExecute, &subject, &handlers, &input).await?;
    match answer.verdict {
        Verdict::Deny(reason) => Err(HookRefusal::Run(reason)),
        Verdict::Ask(reason) => {
            let tool = Tool::new(subject.clone(), "run code", Arc::new(Map::new()));
            let mut args = Map::new();
            args.insert("code".into(), Value::String(code.into()));
            let rule = rule_text(Event::PreExecute, &reason);
            super::approval::gate(scope, "code-executor", &tool, &args, &rule)
                .await
                .map_err(|denied| HookRefusal::NotApproved(denied.0))
        }
        Verdict::Allow | Verdict::Nothing => Ok(()),
    }
}

/// The tools `code` names, as `mcp__server__tool`: those of the connected servers it reaches
/// in any form code can (`tools.server.tool`, `callMCPTool('server', 'tool')`, ...), and any
/// `mcp__server__tool` of a configured server written out, connected or not.
async fn named_tools(catalog: &tools::catalog::Catalog, code: &str) -> Vec<String> {
    let lists = super::skills::connected(catalog).await;
    let known = lists
        .iter()
        .flat_map(|(s, l)| l.iter().map(move |t| (s.as_str(), t.name.as_ref())));
    let mut out: std::collections::BTreeSet<String> =
        tools::skills::changes::referenced(code, known)
            .into_iter()
            .map(|(s, t)| policy::qualified_name(&s, &t))
            .collect();
    for server in catalog.upstreams().names() {
        let prefix = format!("mcp__{server}__");
        for (at, _) in code.match_indices(&prefix) {
            let tool: String = code[at + prefix.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
                .collect();
            if !tool.is_empty() {
                out.insert(format!("{prefix}{tool}"));
            }
        }
    }
    out.into_iter().collect()
}

/// The rule a question names when a hook asks.
pub(super) fn rule_text(event: Event, reason: &str) -> String {
    format!("a {} hook asks {reason}", event.as_str())
}

/// The fields every event's input has (Claude Code's common fields, and ours).
fn common(scope: &RunScope, event: Event, caller: &'static str) -> Map<String, Value> {
    let cwd = working_dir(&scope.policy.hooks);
    let session = scope
        .session
        .as_ref()
        .map_or_else(|| scope.execution.clone(), |s| s.id.clone());
    // A skill's calls are code's too, one level down.
    let caller = if caller == "code" && scope.depth > 0 {
        "skill"
    } else {
        caller
    };
    let mut m = Map::new();
    m.insert("session_id".into(), Value::String(session));
    m.insert("transcript_path".into(), Value::String(String::new()));
    m.insert("cwd".into(), Value::String(cwd.display().to_string()));
    m.insert("permission_mode".into(), Value::String("default".into()));
    m.insert(
        "hook_event_name".into(),
        Value::String(event.as_str().into()),
    );
    m.insert(
        "code_executor".into(),
        json!({
            "execution": scope.execution,
            "principal": scope.principal.to_string(),
            "caller": caller,
            "depth": scope.depth,
        }),
    );
    m
}

fn call_id(scope: &RunScope) -> String {
    format!(
        "{}-{}",
        scope.execution,
        scope.tool_calls.load(std::sync::atomic::Ordering::Relaxed)
    )
}

fn working_dir(hooks: &Hooks) -> PathBuf {
    hooks
        .project_dir
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Runs `handlers` on `input` at once and reads the strictest answer; a hook that failed
/// refuses (the first, in configuration order). Every hook is audited.
async fn judge(
    scope: &RunScope,
    event: Event,
    subject: &str,
    handlers: &[&Handler],
    input: &Map<String, Value>,
) -> Result<Answer, HookRefusal> {
    let bytes = serde_json::to_vec(input).unwrap_or_default();
    let deadline = scope.clock.deadline();
    let hooks = &scope.policy.hooks;
    let runs = handlers.iter().map(|h| {
        let bytes = &bytes;
        async move {
            let started = Instant::now();
            let answer = match &h.action {
                Action::Refuse(why) => Err(HookFailure::Unrunnable(why.clone())),
                Action::Command {
                    command,
                    timeout,
                    background: true,
                } => {
                    background(scope, event, subject, h, command, *timeout, bytes.clone());
                    return None;
                }
                Action::Command {
                    command, timeout, ..
                } => {
                    let budget = deadline
                        .saturating_duration_since(Instant::now())
                        .min(*timeout);
                    run(hooks, command, event, bytes, budget).await
                }
            };
            audit(scope, event, subject, h, &answer, started.elapsed());
            Some((*h, answer))
        }
    });
    let results: Vec<(&Handler, Result<Answer, HookFailure>)> = futures::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
        .collect();
    let mut answers = Vec::new();
    let mut from = Vec::new();
    for (h, r) in results {
        match r {
            Ok(a) => {
                answers.push(a);
                from.push(h);
            }
            Err(failure) => {
                return Err(HookRefusal::Failed {
                    subject: subject.to_string(),
                    event: event.as_str(),
                    hook: h.label().to_string(),
                    origin: h.origin.0.clone(),
                    failure,
                });
            }
        }
    }
    let mut answer = strictest(&answers);
    // A refusal or a question names the file the deciding hook came from.
    if let Some(h) = answers
        .iter()
        .position(|a| a.verdict == answer.verdict)
        .and_then(|i| from.get(i))
    {
        match &mut answer.verdict {
            Verdict::Deny(r) | Verdict::Ask(r) => {
                let why = if r.is_empty() {
                    String::new()
                } else {
                    format!(": {r}")
                };
                *r = format!("({}){why}", h.origin.0);
            }
            Verdict::Allow | Verdict::Nothing => {}
        }
    }
    Ok(answer)
}

/// `async: true` hooks running at once, in the whole server: one more is not started (and
/// that is audited), so a burst of calls cannot fork without bound.
pub const MAX_BACKGROUND_HOOKS: usize = 32;
static BACKGROUND: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_BACKGROUND_HOOKS);

/// An `async: true` hook: started (while fewer than [`MAX_BACKGROUND_HOOKS`] run), bounded by
/// its own timeout, audited, never waited for.
fn background(
    scope: &RunScope,
    event: Event,
    subject: &str,
    h: &Handler,
    command: &str,
    timeout: Duration,
    input: Vec<u8>,
) {
    let hooks = scope.policy.hooks.clone();
    let policy = scope.policy.clone();
    let execution = scope.execution.clone();
    let (subject, command, h) = (subject.to_string(), command.to_string(), h.clone());
    let Ok(permit) = BACKGROUND.try_acquire() else {
        let refused = Err(HookFailure::TooManyInBackground(MAX_BACKGROUND_HOOKS));
        record(
            &policy,
            execution,
            event,
            &subject,
            &h,
            &refused,
            Duration::ZERO,
        );
        return;
    };
    tokio::spawn(async move {
        let _permit = permit;
        let started = Instant::now();
        let answer = run(&hooks, &command, event, &input, timeout).await;
        record(
            &policy,
            execution,
            event,
            &subject,
            &h,
            &answer,
            started.elapsed(),
        );
    });
}

fn audit(
    scope: &RunScope,
    event: Event,
    subject: &str,
    h: &Handler,
    answer: &Result<Answer, HookFailure>,
    took: Duration,
) {
    record(
        &scope.policy,
        scope.execution.clone(),
        event,
        subject,
        h,
        answer,
        took,
    );
}

fn record(
    policy: &policy::Policy,
    execution: String,
    event: Event,
    subject: &str,
    h: &Handler,
    answer: &Result<Answer, HookFailure>,
    took: Duration,
) {
    let (said, reason) = match answer {
        Ok(a) => (
            a.verdict.as_str(),
            match &a.verdict {
                Verdict::Deny(r) | Verdict::Ask(r) if !r.is_empty() => Some(r.clone()),
                _ => None,
            },
        ),
        Err(f) => ("failed", Some(f.to_string())),
    };
    policy.audit.record(AuditEvent::Hook {
        execution,
        hook_event: event.as_str(),
        subject: subject.to_string(),
        source: h.origin.0.clone(),
        command: h.label().to_string(),
        answer: said,
        reason,
        duration_ms: (took.as_secs_f64() * 1e6).round() / 1e3,
    });
}

/// The shell hooks run in: Claude Code's (`bash`), else `sh`.
fn shell() -> &'static str {
    if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    }
}

/// Runs one command hook on `input` within `budget` and reads its answer.
async fn run(
    hooks: &Hooks,
    command: &str,
    event: Event,
    input: &[u8],
    budget: Duration,
) -> Result<Answer, HookFailure> {
    if budget.is_zero() {
        return Err(HookFailure::TimedOut(budget));
    }
    let deadline = tokio::time::Instant::now() + budget;
    let cwd = working_dir(hooks);
    let mut env: Vec<(OsString, OsString)> = PASSED_ENV
        .iter()
        .filter_map(|k| std::env::var_os(k).map(|v| (OsString::from(k), v)))
        .collect();
    env.push(("CLAUDE_PROJECT_DIR".into(), cwd.clone().into_os_string()));
    for (k, v) in &hooks.env {
        env.push((k.into(), configured_value(v).into()));
    }
    // The user's command, not confined, but as upstreams are started: a session and process
    // group of its own, only the environment above, and killed when the server dies.
    let target = sandbox::WorkerCommand {
        program: shell().into(),
        args: vec!["-c".into(), command.into()],
        env,
        cwd: Some(cwd),
    };
    let unconfined = sandbox::SandboxPolicy::new(sandbox::SandboxMode::Disabled, None);
    let mut cmd = tokio::process::Command::from(
        sandbox::command(&target, &unconfined).map_err(|e| HookFailure::Spawn(e.to_string()))?,
    );
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = tools::child::spawn(cmd)
        .await
        .map_err(|e| HookFailure::Spawn(e.to_string()))?;
    let group = child.id().map(|p| p as i32);
    let mut group_guard = GroupKill(group);
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.to_vec();
        // A hook that does not read its input must not hold us: the write ends when the
        // hook does (a broken pipe).
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        });
    }
    let (Some(mut out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(HookFailure::Spawn("its output could not be read".into()));
    };
    let (mut out_buf, mut err_buf) = (Vec::new(), Vec::new());
    let (mut out_done, mut err_done) = (false, false);
    let status = loop {
        tokio::select! {
            s = child.wait() => break s,
            r = drain(&mut out, &mut out_buf, MAX_HOOK_STDOUT_BYTES, false), if !out_done => {
                out_done = true;
                if r {
                    return Err(HookFailure::Garbage(format!(
                        "more than {} KiB on stdout", MAX_HOOK_STDOUT_BYTES / 1024
                    )));
                }
            }
            _ = drain(&mut err, &mut err_buf, MAX_HOOK_STDERR_BYTES, true), if !err_done => {
                err_done = true;
            }
            _ = tokio::time::sleep_until(deadline) => {
                return Err(HookFailure::TimedOut(budget));
            }
        }
    };
    let status = status.map_err(|e| HookFailure::Spawn(e.to_string()))?;
    // What it left behind in its group goes with it; what is still writing is cut off.
    kill_group(group);
    group_guard.0 = None;
    let grace = deadline.min(tokio::time::Instant::now() + EXIT_DRAIN_GRACE);
    let mut overflow = false;
    let _ = tokio::time::timeout_at(grace, async {
        if !out_done {
            overflow = drain(&mut out, &mut out_buf, MAX_HOOK_STDOUT_BYTES, false).await;
        }
        if !err_done {
            drain(&mut err, &mut err_buf, MAX_HOOK_STDERR_BYTES, true).await;
        }
    })
    .await;
    if overflow {
        return Err(HookFailure::Garbage(format!(
            "more than {} KiB on stdout",
            MAX_HOOK_STDOUT_BYTES / 1024
        )));
    }
    use std::os::unix::process::ExitStatusExt;
    let exit = match (status.code(), status.signal()) {
        (Some(c), _) => Exit::Code(c),
        (None, Some(s)) => Exit::Signal(s),
        (None, None) => Exit::Code(-1),
    };
    read_answer(event, exit, &out_buf, &err_buf)
}

/// A value of `hooks.env`: `${NAME}` passes our variable `NAME` on (empty when unset);
/// anything else is the value itself.
fn configured_value(v: &str) -> String {
    match v.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
        Some(name) => std::env::var(name).unwrap_or_default(),
        None => v.to_string(),
    }
}

/// Reads `pipe` to its end into `buf`, up to `cap` bytes; `true` when there was more (read
/// and dropped when `keep_reading`, else left unread). Cancel-safe: what was read stays.
async fn drain<R: AsyncRead + Unpin>(
    pipe: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
    keep_reading: bool,
) -> bool {
    let mut chunk = [0u8; 8192];
    let mut over = false;
    loop {
        let n = match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return over,
            Ok(n) => n,
        };
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..n.min(room)]);
        if n > room {
            over = true;
            if !keep_reading {
                return true;
            }
        }
    }
}

fn kill_group(group: Option<i32>) {
    if let Some(g) = group.filter(|g| *g > 0) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(g),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Kills the hook's process group however its run ends (a timeout, a refusal, the
/// execution dropped).
struct GroupKill(Option<i32>);

impl Drop for GroupKill {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}
