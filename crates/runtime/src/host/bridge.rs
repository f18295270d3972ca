//! The single choke point for every request code makes of the host.
//!
//! A tool call from a worker is resolved to canonical names, checked against the policy and
//! the execution's allowlist, rate and caps, its arguments validated against the tool's
//! schema, forwarded to the upstream with a deadline, audited (one line per attempt, allowed
//! or denied), and its result unwrapped into the value the code sees, in the shape the call
//! asked for (structured: [`unwrap_result`]; text: [`super::shape`]). A pinned direct tool's
//! call ([`call_direct`]) takes the same path and keeps the upstream's own result. Discovery
//! requests are answered from the catalog. Later approvals and data hygiene hook in here, and
//! only here.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use rmcp::model::{CallToolResult, Tool};
use serde_json::{Map, Value};
use worker_protocol::{CallError, CallOutcome, CallRequest, ErrorInfo, ResultShape};

use futures::future::BoxFuture;

use super::calls::{CallRecord, Relay};
use super::scope::{RunScope, err, ok};
use super::shape::unwrap_result;
use super::skills::Nested;
use crate::run::drive::Host;
use crate::run::events::{MAX_PROGRESS_MESSAGE_BYTES, Progress};
use policy::{Decision, UPSTREAM_CALL_TIMEOUT};
use tools::catalog::{Asker, Catalog, Detail, SearchParams, describe};

/// The host side of one execution: the catalog (discovery), the upstreams behind it (tool
/// calls), and the session's stored values, within what the execution's scope allows.
pub struct RunHost<'a> {
    catalog: &'a Catalog,
    scope: &'a RunScope,
    /// Skills, and the nested executions they run as.
    nested: &'a dyn Nested,
}

impl<'a> RunHost<'a> {
    pub fn new(catalog: &'a Catalog, scope: &'a RunScope, nested: &'a dyn Nested) -> RunHost<'a> {
        RunHost {
            catalog,
            scope,
            nested,
        }
    }
}

impl Host for RunHost<'_> {
    fn handle(&self, request: CallRequest) -> BoxFuture<'_, CallOutcome> {
        Box::pin(handle(self.catalog, self.scope, self.nested, request))
    }
}

/// Answers one request from a worker.
async fn handle(
    catalog: &Catalog,
    scope: &RunScope,
    nested: &dyn Nested,
    request: CallRequest,
) -> CallOutcome {
    match request {
        CallRequest::RunSkill { name, args } => {
            return super::skills::run(catalog, nested, scope, &name, args).await;
        }
        CallRequest::SaveSkill {
            name,
            code,
            description,
            language,
            input_schema,
        } => {
            let req = (name, code, description, language, input_schema);
            return super::skills::save(catalog, nested, scope, req).await;
        }
        CallRequest::Tool {
            server,
            name,
            args,
            shape,
        } => {
            // This server's own tools, as `code-executor` (unless an upstream has the name).
            match tools::own_tools::from_code(catalog.upstreams().names(), server.as_deref(), &name)
            {
                None => {
                    return call_tool(catalog, scope, server.as_deref(), &name, args, shape).await;
                }
                Some(Err(unknown)) => {
                    return match super::own::count(scope, &name) {
                        Ok(()) => err(CallError::Argument, unknown.to_string()),
                        Err(refused) => refused,
                    };
                }
                Some(Ok(own)) => match super::own::call(catalog, scope, nested, own, args).await {
                    super::own::Own::Answer(answer) => return answer,
                    // Answered below, as code's own discovery requests are.
                    super::own::Own::Discovery(request) => {
                        return Box::pin(handle(catalog, scope, nested, request)).await;
                    }
                },
            }
        }
        CallRequest::Store { key, value, delete } => {
            return match &scope.session {
                None => no_session("store"),
                Some(s) => match s
                    .store_durably(key, (!delete).then_some(value), scope.pii_exit.as_ref())
                    .await
                {
                    Ok(()) => ok(Value::Null),
                    Err(e) => err(CallError::Limit, e.to_string()),
                },
            };
        }
        CallRequest::Progress {
            done,
            total,
            message,
        } => return progress(scope, done, total, message),
        CallRequest::Llm {
            messages,
            system,
            max_tokens,
            model,
        } => {
            return super::logged::llm(scope, messages, system, max_tokens, model).await;
        }
        CallRequest::Fetch(req) => return super::fetch::fetch(scope, req).await,
        CallRequest::Load { key } => {
            return match &scope.session {
                None => no_session("load"),
                Some(s) => {
                    let value = s.load(&key);
                    ok(serde_json::json!({"found": value.is_some(), "value": value}))
                }
            };
        }
        _ => {}
    }
    // Every discovery answer is built and held by the host: a loop of them is capped like
    // tool calls are.
    // The request's: its skills' requests count too.
    let n = scope.ledger.discovery_calls.fetch_add(1, Ordering::Relaxed) + 1;
    if n > scope.limits.max_discovery_calls {
        return err(
            CallError::Limit,
            format!(
                "this execution reached its limit of {} discovery requests (searchTools, \
                 listServers, getToolSchema, discoverMCPTools, signatures; the skills it calls \
                 count too); keep the answers of the first ones instead of asking again",
                scope.limits.max_discovery_calls
            ),
        );
    }
    match request {
        CallRequest::Tool { .. }
        | CallRequest::Store { .. }
        | CallRequest::Load { .. }
        | CallRequest::Progress { .. }
        | CallRequest::Llm { .. }
        | CallRequest::RunSkill { .. }
        | CallRequest::SaveSkill { .. }
        | CallRequest::Fetch(_) => err(
            CallError::Tool,
            "internal: a tool call, stored value or progress report reached discovery",
        ),
        CallRequest::ListServers => ok(catalog.servers().await),
        CallRequest::ListSkills => super::skills::list(catalog, nested).await,
        CallRequest::SearchTools {
            query,
            detail,
            server,
            limit,
            cursor,
        } => match catalog
            .search_with(
                &scope.view,
                &SearchParams {
                    query: &query,
                    detail: detail.as_deref(),
                    server: server.as_deref(),
                    limit,
                    cursor: cursor.as_deref(),
                },
                &scope.allow,
                Some(super::skills::search_docs(catalog, nested.skills()).await),
            )
            .await
        {
            Ok(v) => ok(v),
            Err(e) => err(CallError::Argument, e),
        },
        CallRequest::GetToolSchema { server, name } => {
            // This server's own tools, as `code-executor` (unless an upstream has the name).
            match tools::own_tools::from_code(catalog.upstreams().names(), server.as_deref(), &name)
            {
                Some(Ok(own)) => {
                    return match tools::own_tools::own_schema(own) {
                        Some(v) => ok(v),
                        None => err(CallError::Argument, format!("{} has no schema", own.name)),
                    };
                }
                Some(Err(unknown)) => return err(CallError::Argument, unknown.to_string()),
                None => {}
            }
            match visible_tool(catalog, scope, server.as_deref(), &name).await {
                Ok((server, tool)) => ok(describe(
                    &server,
                    &*catalog.typed(&server, &tool).await,
                    Detail::Full,
                )),
                Err(e) => e,
            }
        }
        CallRequest::Signature {
            server,
            tool,
            language,
        } => match visible_tool(catalog, scope, Some(&server), &tool).await {
            Ok((server, tool)) => ok(Value::String(tools::catalog::declaration(
                &server,
                &*catalog.typed(&server, &tool).await,
                language,
            ))),
            Err(e) => e,
        },
        CallRequest::DiscoverTools => match catalog
            .tools(
                &scope.view,
                None,
                &scope.allow,
                Some(tools::upstream::SEARCH_START_WAIT),
            )
            .await
        {
            Ok((tools, errors)) => {
                let pairs: Vec<(&str, &rmcp::model::Tool)> =
                    tools.iter().map(|(s, t)| (s.as_str(), t)).collect();
                let list: Vec<Value> = catalog
                    .typed_all(&pairs)
                    .await
                    .iter()
                    .zip(&pairs)
                    .map(|(t, (s, _))| describe(s, t, Detail::Full))
                    .collect();
                let mut v = serde_json::json!({ "tools": list });
                if !errors.is_empty() {
                    v["unavailable"] = errors
                        .iter()
                        .map(|e| Value::String(e.to_string()))
                        .collect();
                }
                ok(v)
            }
            Err(e) => err(CallError::Argument, e),
        },
    }
}

/// `progress(done, total, message)`: checked here (the worker's checks are a courtesy), kept
/// as the execution's latest, and passed on to the client when it asked.
fn progress(
    scope: &RunScope,
    done: f64,
    total: Option<f64>,
    message: Option<String>,
) -> CallOutcome {
    if !done.is_finite() || done < 0.0 {
        return err(
            CallError::Range,
            format!("progress: done must be a finite number >= 0, got {done}"),
        );
    }
    if let Some(t) = total
        && (!t.is_finite() || t <= 0.0)
    {
        return err(
            CallError::Range,
            format!("progress: total must be a finite number > 0, got {t}"),
        );
    }
    if let Some(m) = &message
        && m.len() > MAX_PROGRESS_MESSAGE_BYTES
    {
        return err(
            CallError::Range,
            format!(
                "progress: the message is {} bytes; at most {MAX_PROGRESS_MESSAGE_BYTES} are \
                 accepted",
                m.len()
            ),
        );
    }
    let message = message.map(|m| scope.exit_text(&m).into_owned());
    scope.events.progress(Progress {
        done,
        total,
        message,
    });
    ok(Value::Null)
}

fn no_session(what: &str) -> CallOutcome {
    err(
        CallError::Argument,
        format!(
            "{what}() keeps values for a session, and this execution has none: pass session: \"new\" \
             to start one (its handle comes back in the result), then the handle in later calls"
        ),
    )
}

/// A tool this execution may see, for a description of it: resolved in its view (a
/// `TypeError` when unknown) and allowed by its allowlist (a `PolicyError` when not).
async fn visible_tool(
    catalog: &Catalog,
    scope: &RunScope,
    server: Option<&str>,
    name: &str,
) -> Result<(String, Tool), CallOutcome> {
    let (server, tool) = catalog
        .resolve_in(&scope.view, server, name, Asker::Code)
        .await
        .map_err(|e| match catalog.refusal(server, name) {
            // Held back or hidden by the user's client config: a policy decision.
            Some(reason) => err(CallError::Policy, reason),
            None => err(CallError::Argument, e),
        })?;
    match scope.allow.check(&server, &tool) {
        Decision::Allow => Ok((server, tool)),
        Decision::Deny { reason } => Err(err(CallError::Policy, reason)),
    }
}

/// A call from code: the upstream's result unwrapped into the value code sees, in the
/// shape it asked for (`tools.server.tool` the structured one, `callMCPTool` /
/// `call_mcp_tool` the text: [`super::shape`]), and remembered as a digest when it is an
/// object or array, so that passing it where a string is wanted can be named
/// ([`super::handed`]).
async fn call_tool(
    catalog: &Catalog,
    scope: &RunScope,
    server: Option<&str>,
    name: &str,
    args: Value,
    shape: ResultShape,
) -> CallOutcome {
    match call(catalog, scope, server, name, args, Caller::Code).await {
        Ok((server, tool, result)) => {
            let outcome = match shape {
                ResultShape::Structured => unwrap_result(result),
                ResultShape::Text => super::shape::text(result),
            };
            scope.handed.record(&server, &tool, &outcome);
            outcome
        }
        Err(error) => {
            scope.handed.count();
            CallOutcome::Err { error }
        }
    }
}

/// A pinned direct tool's call (`directTools`): the same path as a call from code, and the
/// upstream's own result (content, structured content, `isError`) as the client gets it;
/// `Err` is what a call from code would have thrown.
pub async fn call_direct(
    catalog: &Catalog,
    scope: &RunScope,
    server: &str,
    tool: &str,
    args: Value,
) -> Result<CallToolResult, ErrorInfo> {
    call(catalog, scope, Some(server), tool, args, Caller::Direct)
        .await
        .map(|(_, _, result)| result)
}

/// Who makes a call: code in the sandbox, or a client through a pinned direct tool.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Caller {
    Code,
    Direct,
}

impl Caller {
    /// As hooks are told (`code_executor.caller`).
    fn as_str(self) -> &'static str {
        match self {
            Caller::Code => "code",
            Caller::Direct => "direct",
        }
    }
}

/// One upstream call through the request's call log ([`super::logged`]): served from it
/// when the run replays it, else [`call_live`], logged.
async fn call(
    catalog: &Catalog,
    scope: &RunScope,
    server: Option<&str>,
    name: &str,
    args: Value,
    caller: Caller,
) -> super::logged::CallResult {
    let asked = server.map_or_else(|| name.to_string(), |s| format!("{s}.{name}"));
    let digest = crate::run::calllog::digest(&args);
    let live = call_live(catalog, scope, server, name, args, caller);
    super::logged::call(scope, asked, digest, live).await
}

/// One upstream call, whoever makes it: cap -> resolve -> rules and allowedTools -> rate ->
/// personal data in the arguments -> schema -> approval -> upstream -> audit line. `Ok`: the
/// server and tool it resolved to, and the result; `Err` is the refusal or failure, named
/// as code sees it.
async fn call_live(
    catalog: &Catalog,
    scope: &RunScope,
    server: Option<&str>,
    name: &str,
    args: Value,
    caller: Caller,
) -> super::logged::CallResult {
    let started = Instant::now();
    // Hashed as it is encoded, beside the call when large (`ArgsDigest`).
    let digest = policy::audit::ArgsDigest::start(&args);
    // Until the call is resolved, its audit line names what the code asked for.
    let (asked_server, asked_tool) = match server {
        Some(s) => (s.to_string(), name.to_string()),
        None => tools::catalog::split_qualified(catalog.upstreams().names(), name, Asker::Code)
            .unwrap_or_else(|_| (String::new(), name.to_string())),
    };
    let mut record = CallRecord {
        scope,
        server: asked_server,
        tool: asked_tool,
        started,
        digest,
        // What code sent, with personal data as tokens when code sees values.
        args: scope.policy.audit.log_arguments().then(|| {
            let mut a = args.clone();
            scope.exit_value(&mut a);
            a
        }),
        allowed: false,
    };
    // Every attempt counts, allowed or not, resolved or not (a call to a server that failed
    // to start, or to a name that does not exist): a loop of failing calls is capped too.
    // The counter is the request's: the calls of the skills it runs count on it.
    let n = scope.tool_calls.fetch_add(1, Ordering::Relaxed) + 1;
    if n > scope.limits.max_tool_calls {
        let reason = if scope.depth > 0 {
            format!(
                "this execution reached its limit of {} tool calls (counted with the execution \
                 that called this skill and every skill under it)",
                scope.limits.max_tool_calls
            )
        } else {
            format!(
                "this execution reached its limit of {} tool calls",
                scope.limits.max_tool_calls
            )
        };
        record.write("deny", Some(reason.clone()), None, 0);
        return Err(refusal(CallError::Limit, reason));
    }
    // Resolving may start the server. If it cannot answer before the execution's deadline,
    // the code gets an error naming that server (and can catch it) instead of a bare timeout.
    const NAME_THE_SERVER_MARGIN: std::time::Duration = std::time::Duration::from_millis(100);
    let budget = scope
        .clock
        .deadline()
        .saturating_duration_since(Instant::now())
        .saturating_sub(NAME_THE_SERVER_MARGIN);
    let resolving = catalog.resolve_in(&scope.view, server, name, Asker::Code);
    let (server, tool) = match tokio::time::timeout(budget, resolving).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            // Held back or hidden by the user's client config: a policy decision.
            let (name, reason) = match catalog.refusal(server, name) {
                Some(reason) => (CallError::Policy, reason),
                None => (CallError::Tool, e.to_string()),
            };
            record.write("deny", Some(reason.clone()), None, 0);
            return Err(refusal(name, reason));
        }
        Err(_) => {
            let reason = format!(
                "{}: the MCP server did not start and list its tools within this execution's \
                 deadline; its start goes on in the background, and later calls use it once it \
                 answers",
                server.unwrap_or(name)
            );
            record.write("deny", Some(reason.clone()), None, 0);
            return Err(refusal(CallError::Tool, reason));
        }
    };
    record.server = server.clone();
    record.tool = tool.name.to_string();
    let mut deny = |name: CallError, reason: String| {
        tracing::info!(server, tool = %tool.name, "tool call denied: {reason}");
        record.write("deny", Some(reason.clone()), None, 0);
        Err(refusal(name, reason))
    };
    if let Decision::Deny { reason } = scope.allow.check(&server, &tool) {
        return deny(CallError::Policy, reason);
    }
    if let Some(rate) = &scope.tool_rate
        && rate.check().is_err()
    {
        return deny(
            CallError::Limit,
            "this client is over its rate of tool calls per minute (limits.toolCallsPerMinute); slow down or retry shortly".into(),
        );
    }
    // A tool whose definition changed since a person accepted it is held.
    let definitions = catalog.upstreams().definitions().clone();
    let held = definitions.held(&server, &tool.name).map(|what| {
        let name = policy::qualified_name(&server, &tool.name);
        (
            name.clone(),
            format!(
                "{name} is held: its definition changed since it was accepted ({what}); a \
                 person accepts the change with `code-executor-mcp tools accept {name}` (or, \
                 with toolChanges set to \"ask\", by approving the call)"
            ),
            what,
        )
    });
    if let Some((_, reason, _)) = &held
        && definitions.mode == policy::approval::ChangedTools::Refuse
    {
        return deny(CallError::Policy, reason.clone());
    }
    let mut args: Map<String, Value> = match args {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => {
            return deny(
                CallError::Argument,
                format!("arguments of {} must be an object, not {other}", tool.name),
            );
        }
    };
    // The user's hooks judge the call as code made it (personal data as the tokens code
    // holds); an `updatedInput` replaces the arguments, which every check below then sees.
    let hook_asks =
        match super::hooks::before_call(scope, &server, &tool.name, &mut args, caller.as_str())
            .await
        {
            Ok(super::hooks::Before::Go) => None,
            Ok(super::hooks::Before::Ask(reason)) => Some(reason),
            Err(reason) => return deny(CallError::Policy, reason.to_string()),
        };
    // Tokens of personal data become their values for the tools allowed to receive them;
    // the schema is checked on what the tool gets, a person is shown the tokens.
    let restored = match super::pii::arguments(scope, &server, &tool.name, &args) {
        Ok(r) => r,
        Err(reason) => return deny(CallError::Policy, reason),
    };
    let sent = restored.as_ref().unwrap_or(&args);
    if let Err(e) = scope.policy.validators.check(&server, &tool, sent) {
        // An object or array where a string is wanted: say which of the run's calls it came
        // from, and what to take. (Named from what code sent, tokens and all, as it saw it.)
        let mut reason = e.to_string();
        for (name, value) in scope.policy.validators.wanted_strings(&tool, &args) {
            reason.push('\n');
            reason.push_str(&scope.handed.explain(&name, value));
        }
        return deny(CallError::Argument, reason);
    }
    // Last: a person is asked only about a call that would otherwise go out.
    let servers = scope.policy.servers.iter().map(String::as_str);
    let rule = match hook_asks {
        Some(reason) => Some(super::hooks::rule_text(
            policy::hooks::Event::PreToolUse,
            &reason,
        )),
        None => scope.policy.approvals.rule_for(servers, &server, &tool),
    };
    if let Some((_, _, what)) = &held {
        let rule = format!("its definition changed since it was accepted: {what}");
        if let Err(reason) = super::approval::gate(scope, &server, &tool, &args, &rule).await {
            return deny(CallError::ApprovalDenied, reason.to_string());
        }
        definitions.accept(&server, &tool.name);
    }
    if let Some(rule) = rule
        && let Err(reason) = super::approval::gate(scope, &server, &tool, &args, &rule).await
    {
        return deny(CallError::ApprovalDenied, reason.to_string());
    }
    // What the PostToolUse hooks are shown as the call's input.
    let hooked_args = scope
        .policy
        .hooks
        .has(policy::hooks::Event::PostToolUse)
        .then(|| args.clone());
    let args = restored.unwrap_or(args);
    let scanned = super::pii::scans(scope, &server, &tool.name);
    record.allowed = true;
    // The request's permits: its skills' calls in flight count too.
    let _permit = scope.ledger.in_flight.acquire().await;
    // When the execution's deadline comes first, it governs (a TimeoutError for the whole
    // run, which cancels this call); the grace keeps the two from racing.
    const DEADLINE_GRACE: std::time::Duration = std::time::Duration::from_millis(250);
    let remaining = scope
        .clock
        .deadline()
        .saturating_duration_since(Instant::now());
    let timeout = (remaining + DEADLINE_GRACE).min(UPSTREAM_CALL_TIMEOUT);
    let events = &scope.events;
    let forward = |p: &rmcp::model::ProgressNotificationParam| match scanned {
        Some(vault) => {
            let p = super::pii::progress(scope, vault, p);
            events.upstream_progress(&server, &tool.name, &p);
        }
        None if scope.pii.is_some() => {
            let mut p = p.clone();
            if let Some(m) = p.message.as_mut() {
                super::pii::echoes_text(scope, m);
            }
            events.upstream_progress(&server, &tool.name, &p);
        }
        None => events.upstream_progress(&server, &tool.name, p),
    };
    let on_progress: Option<&(dyn Fn(&rmcp::model::ProgressNotificationParam) + Send + Sync)> =
        events.wants_upstream_progress().then_some(&forward);
    let relay = scope.client.clone().map(|client| {
        Arc::new(Relay {
            client,
            clock: scope.clock.clone(),
            timeout: scope.policy.approvals.timeout(),
        }) as Arc<dyn tools::upstream::forward::Forward>
    });
    let mut span = tools::trace::Span::start(
        || format!("tools/call {}", tool.name).into(),
        tools::trace::Kind::Client,
        scope.trace.as_ref(),
    );
    if span.recording() {
        span.set("mcp.method.name", "tools/call");
        span.set("gen_ai.tool.name", &*tool.name);
        span.set("code_executor.upstream.server", &server);
    }
    let called = catalog
        .upstreams()
        .call_for(
            &server,
            &tool.name,
            args,
            tools::upstream::CallOptions {
                timeout,
                forward: relay,
                on_progress,
                trace: span.context(),
            },
        )
        .await;
    if span.recording() {
        match &called {
            Ok((result, _)) if result.is_error == Some(true) => {
                span.set("code_executor.outcome", "tool_error");
                span.fail("the tool answered with an error");
            }
            Ok(_) => span.set("code_executor.outcome", "ok"),
            Err(e) => {
                let label = if matches!(e, tools::upstream::UpstreamError::Timeout { .. }) {
                    "timeout"
                } else {
                    "failed"
                };
                span.set("code_executor.outcome", label);
                span.fail(label);
            }
        }
    }
    drop(span);
    events.tool_call(
        scope.tool_calls.load(Ordering::Relaxed),
        &server,
        &tool.name,
    );
    match called {
        Ok((mut result, bytes)) => {
            // Text hidden in invisible characters never reaches code (nor the model).
            if tools::upstream::definitions::clean_result(&mut result) {
                definitions.flag(&server, &tool.name);
            }
            let result = match scanned {
                Some(vault) if caller == Caller::Direct => {
                    super::pii::leaving(scope, vault, result)
                }
                Some(vault) => super::pii::result(scope, vault, result),
                None => super::pii::echoes(scope, result, caller == Caller::Direct),
            };
            // Learned from what code receives, after the secrets were taken out (in the
            // upstream pool) and personal data made tokens; when code sees values, a key in
            // which a detector finds a value is not kept (its object is typed as a map).
            // Shapes only, never values.
            catalog
                .learn(&server, &tool, &result, scope.policy.pii.detectors())
                .await;
            let label = if result.is_error == Some(true) {
                "tool_error"
            } else {
                "ok"
            };
            let mut result = result;
            if let Some(args) = &hooked_args
                && let Err(reason) = super::hooks::after_call(
                    scope,
                    &server,
                    &tool.name,
                    args,
                    &mut result,
                    caller.as_str(),
                )
                .await
            {
                let reason = reason.to_string();
                record.write("deny", Some(reason.clone()), Some(label), bytes);
                return Err(refusal(CallError::Policy, reason));
            }
            record.write("allow", None, Some(label), bytes);
            Ok((server, tool.name.to_string(), result))
        }
        Err(e) => {
            let label = if matches!(e, tools::upstream::UpstreamError::Timeout { .. }) {
                "timeout"
            } else {
                "failed"
            };
            let mut message = e.to_string();
            match scanned {
                Some(vault) => super::pii::text(scope, vault, &mut message),
                None => super::pii::echoes_text(scope, &mut message),
            }
            record.write("allow", Some(message.clone()), Some(label), 0);
            Err(refusal(CallError::Tool, message))
        }
    }
}

/// A refused or failed call, named by the taxonomy both languages share.
fn refusal(kind: CallError, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo {
        name: kind.name().into(),
        message: message.into(),
        stack: None,
    }
}

#[cfg(test)]
#[path = "bridge_tests.rs"]
mod tests;
