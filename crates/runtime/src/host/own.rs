//! The executor's own tools called from code, in both languages:
//! `callMCPTool('mcp__code-executor__executeTypescript', {...})`,
//! `call_mcp_tool('code-executor', 'search_tools', {...})`. Their names and parameters are the
//! server's, ours and the product line's documents' (`tools::own_tools`); what each does when
//! code calls it:
//!
//! - An execute tool runs its code as a nested execution through [`Nested::run_nested`], the
//!   one way executions nest (skills take it too): one level deeper (at most
//!   [`MAX_SKILL_DEPTH`] in all), drawing from the request's ledger (tool calls, model calls
//!   and tokens, discovery, `fetch`, output: one budget for the whole tree), inside its
//!   caller's `allowedTools` (its own patterns can only narrow them), within its caller's
//!   limits and what is left of its time, with its caller's file and network grant, and
//!   model calls only when its caller may make them. Its answer is the execute tool's
//!   (`result`, `logs`, `toolCalls`, `durationMs`, `llm`) with the documents' `success`,
//!   `samplingMetrics` and `execution_ms`; a nested run that fails throws, its error's kind
//!   kept where code has a class for it ([`super::skills::NestedEnd::call_error`]: a `PolicyError`
//!   stays one).
//! - Every call is first a tool call ([`count`], [`admit`]): counted on the request's
//!   `maxToolCalls` and the client's rate, and judged by the policy's rules for
//!   `code-executor` and `allowedTools` by the name code used or ours.
//! - `search_tools`, `get_tool_schema` (`get_tool_signature`), `list_servers`: what
//!   `searchTools`, `getToolSchema`, `listServers` answer in code (the caller's view and
//!   allowlist; each a discovery request).
//! - `health`: the documents' fields (`Runtime::vitals`), the version and the servers'
//!   statuses; the rest of the client's `health` (pools, audit path, configuration warnings,
//!   grants) is the client's.
//! - `wait`, and the parameters only a client has (`session`, `reset`, `yieldAfterMs`,
//!   `save`, `skill`, `permissions`), are refused with what to do from code instead.

use std::sync::atomic::Ordering;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use worker_protocol::{CallError, CallOutcome, CallRequest};

use super::scope::{RunScope, err, ok};
use super::skills::{Nested, NestedRun, NestedWhat};
use crate::run::ledger::MAX_SKILL_DEPTH;
use crate::worker::Language;
use policy::{Decision, RequestLimits};
use tools::catalog::Catalog;
use tools::own_tools::{self, Code, Name, OwnTool};

/// What a call of one of our tools from code comes to.
pub(super) enum Own {
    /// Its answer.
    Answer(CallOutcome),
    /// A discovery request, answered as code's own are (counted and capped with them).
    Discovery(CallRequest),
}

/// The call of our tool `name` with `args` from the execution of `scope`.
pub(super) async fn call(
    catalog: &Catalog,
    scope: &RunScope,
    nested: &dyn Nested,
    name: &'static Name,
    args: Value,
) -> Own {
    // Counted, then judged by the policy before its arguments are read (as any tool's call
    // is), and judged again once `execute_code`'s `language` names the tool it is.
    if let Err(refused) = count(scope, name.name).and_then(|()| admit(scope, name, name.tool)) {
        return Own::Answer(refused);
    }
    let call = match own_tools::normalize(name, args) {
        Ok(c) => c,
        Err(e) => return Own::Answer(err(CallError::Argument, e.to_string())),
    };
    if call.tool != name.tool
        && let Err(refused) = admit(scope, name, call.tool)
    {
        return Own::Answer(refused);
    }
    let parsed = |args: Map<String, Value>| -> Result<Discover, CallOutcome> {
        serde_json::from_value(Value::Object(args))
            .map_err(|e| err(CallError::Argument, format!("{}: {e}", name.name)))
    };
    match call.tool {
        OwnTool::Execute(code) => {
            Own::Answer(execute(scope, nested, name.name, code, call.args).await)
        }
        OwnTool::SearchTools => match parsed(call.args) {
            Ok(Discover {
                query: Some(query),
                detail,
                server,
                limit,
                cursor,
                ..
            }) => Own::Discovery(CallRequest::SearchTools {
                query,
                detail,
                server,
                limit,
                cursor,
            }),
            Ok(_) => Own::Answer(err(
                CallError::Argument,
                format!("{}: give `query`, the words to search for", name.name),
            )),
            Err(e) => Own::Answer(e),
        },
        OwnTool::GetToolSchema => match parsed(call.args) {
            Ok(Discover {
                name: Some(tool),
                server: None,
                tool: None,
                ..
            }) => Own::Discovery(CallRequest::GetToolSchema {
                server: None,
                name: tool,
            }),
            Ok(Discover {
                name: None,
                server: Some(server),
                tool: Some(tool),
                ..
            }) => Own::Discovery(CallRequest::GetToolSchema {
                server: Some(server),
                name: tool,
            }),
            Ok(_) => Own::Answer(err(
                CallError::Argument,
                format!(
                    "{}: give `name` (mcp__server__tool), or `server` and `tool`",
                    name.name
                ),
            )),
            Err(e) => Own::Answer(e),
        },
        OwnTool::ListServers => Own::Discovery(CallRequest::ListServers),
        OwnTool::Health => {
            // Built and held by the host like a discovery answer, and capped with them.
            let n = scope.ledger.discovery_calls.fetch_add(1, Ordering::Relaxed) + 1;
            if n > scope.limits.max_discovery_calls {
                return Own::Answer(err(
                    CallError::Limit,
                    format!(
                        "this execution reached its limit of {} discovery requests (health counts as one); keep the answer of the first",
                        scope.limits.max_discovery_calls
                    ),
                ));
            }
            let mut v = nested.vitals().await;
            v["version"] = json!(env!("CARGO_PKG_VERSION"));
            v["servers"] = catalog.servers().await["servers"].take();
            Own::Answer(ok(v))
        }
        OwnTool::Wait => Own::Answer(err(
            CallError::Argument,
            format!(
                "{}: wait follows a client's long runs; code has none (a nested execution \
                 answers when it ends)",
                name.name
            ),
        )),
    }
}

/// The arguments of the discovery tools, under our names.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Discover {
    query: Option<String>,
    detail: Option<String>,
    server: Option<String>,
    limit: Option<u32>,
    cursor: Option<String>,
    name: Option<String>,
    tool: Option<String>,
}

/// An execute tool's arguments from code (the ones only a client has are refused before).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NestedArgs {
    code: Option<String>,
    timeout_ms: Option<u64>,
    allowed_tools: Option<Vec<String>>,
    #[serde(default)]
    limits: RequestLimits,
    enable_sampling: Option<bool>,
    check: Option<bool>,
}

/// The execute tools' parameters a nested execution cannot have, with what to do instead.
const CLIENTS_ONLY: [(&str, &str); 7] = [
    (
        "session",
        "a nested execution runs outside any session; keep values with store/load in the \
         caller's session",
    ),
    (
        "reset",
        "a nested execution runs outside any session; keep values with store/load in the \
         caller's session",
    ),
    (
        "yieldAfterMs",
        "a nested execution answers its caller's code when it ends",
    ),
    (
        "save",
        "save a skill from code with saveSkill(name, {code, description})",
    ),
    ("skill", "run a skill from code with skills.name(args)"),
    ("args", "run a skill from code with skills.name(args)"),
    (
        "permissions",
        "a nested execution has its caller's file and network grant and cannot ask for \
         another",
    ),
];

/// A call from code of our tool `name` (known or not) counts as a tool call, as every
/// attempt does: on the request's ledger against `maxToolCalls` (a nested run is one call of
/// its caller, and its own calls count on the same ledger), and on the client's
/// `toolCallsPerMinute`.
pub(super) fn count(scope: &RunScope, name: &str) -> Result<(), CallOutcome> {
    let qualified = policy::qualified_name(own_tools::SELF_SERVER, name);
    let n = scope.tool_calls.fetch_add(1, Ordering::Relaxed) + 1;
    if n > scope.limits.max_tool_calls {
        return refuse(
            &qualified,
            CallError::Limit,
            format!(
                "this execution reached its limit of {} tool calls (a call of {qualified} counts \
                 as one, with every call of the execution tree it belongs to)",
                scope.limits.max_tool_calls
            ),
        );
    }
    if let Some(rate) = &scope.tool_rate
        && rate.check().is_err()
    {
        return refuse(
            &qualified,
            CallError::Limit,
            "this client is over its rate of tool calls per minute (limits.toolCallsPerMinute); \
             slow down or retry shortly"
                .into(),
        );
    }
    Ok(())
}

/// Whether code may call our tool `name` (`tool`, its language resolved): the policy's
/// rules for [`own_tools::SELF_SERVER`] and the `allowedTools` of this execution and its
/// callers decide, by the name code used or ours ([`policy::ToolAllowlist::check_own`]).
fn admit(scope: &RunScope, name: &Name, tool: OwnTool) -> Result<(), CallOutcome> {
    let names = [name.name, tool.ours()].map(|n| own_tools::as_tool(n, tool));
    match scope.allow.check_own(own_tools::SELF_SERVER, &names) {
        Decision::Allow => Ok(()),
        Decision::Deny { reason } => refuse(
            &policy::qualified_name(own_tools::SELF_SERVER, name.name),
            CallError::Policy,
            reason,
        ),
    }
}

fn refuse(qualified: &str, kind: CallError, reason: String) -> Result<(), CallOutcome> {
    tracing::info!(tool = %qualified, "call of the executor's own tool refused: {reason}");
    Err(err(kind, reason))
}

async fn execute(
    scope: &RunScope,
    nested: &dyn Nested,
    tool: &str,
    code: Option<Code>,
    mut args: Map<String, Value>,
) -> CallOutcome {
    if let Some((param, instead)) = CLIENTS_ONLY.iter().find(|(p, _)| args.contains_key(*p)) {
        return err(
            CallError::Argument,
            format!("{tool} from code takes no `{param}`: {instead}"),
        );
    }
    // `check` is the settings' when not given; `null` is not given.
    args.retain(|_, v| !v.is_null());
    let a: NestedArgs = match serde_json::from_value(Value::Object(args)) {
        Ok(a) => a,
        Err(e) => return err(CallError::Argument, format!("{tool}: {e}")),
    };
    let Some(code_text) = a.code else {
        return err(CallError::Argument, format!("{tool}: give `code` to run"));
    };
    if scope.depth >= MAX_SKILL_DEPTH {
        return err(
            CallError::Limit,
            format!(
                "executions nest at most {MAX_SKILL_DEPTH} deep (skills, and the executor's own \
                 execute tools called from code); {tool} would be deeper (code that calls \
                 itself?)"
            ),
        );
    }
    if let Some(problem) = a
        .allowed_tools
        .iter()
        .flatten()
        .find_map(|p| policy::pattern::problem(p))
    {
        return err(CallError::Argument, format!("allowedTools: {problem}"));
    }
    let limits = match within_callers(&a.limits, scope) {
        Ok(l) => l,
        Err(e) => return err(CallError::Limit, format!("{tool}: {e}")),
    };
    let enable_sampling = a.enable_sampling.unwrap_or(false);
    if enable_sampling && !scope.llm_enabled {
        return err(
            CallError::Policy,
            format!(
                "{tool}: enableSampling: the calling execution may not make model calls, and a \
                 nested execution can do no more than its caller; pass enableSampling: true \
                 to the outer execution (or enable llm in the settings)"
            ),
        );
    }
    let run = NestedRun {
        language: match code {
            Some(Code::Python) => Language::Python,
            Some(Code::TypeScript) | None => Language::JavaScript,
        },
        code: code_text,
        what: NestedWhat::Code {
            allowed_tools: a.allowed_tools,
            limits,
            timeout_ms: a.timeout_ms,
            enable_sampling,
            check: a.check,
        },
    };
    let end = nested.run_nested(scope, run).await;
    match (&end.outcome.error, end.call_error()) {
        (Some(e), Some(kind)) => err(kind, format!("{tool} failed: {}: {}", e.name, e.message)),
        _ => {
            let mut v = serde_json::to_value(&end.outcome).unwrap_or(Value::Null);
            own_tools::documents_fields(&mut v);
            ok(v)
        }
    }
}

/// A nested run asked for more of a limit than its caller has.
#[derive(Debug, thiserror::Error)]
#[error(
    "limits.{limit}: {asked} is more than the calling execution's {has}; a nested execution has \
     at most its caller's"
)]
struct OverCaller {
    limit: &'static str,
    asked: u64,
    has: u64,
}

/// The nested run's limits: what it asks, each at most its caller's (an ask above is an
/// error naming it), the caller's where it asks none.
fn within_callers(asked: &RequestLimits, scope: &RunScope) -> Result<RequestLimits, OverCaller> {
    let caller = &scope.limits;
    let over = |name: &'static str, asked: Option<u64>, has: u64| match asked {
        Some(v) if v > has => Err(OverCaller {
            limit: name,
            asked: v,
            has,
        }),
        _ => Ok(()),
    };
    over(
        "maxToolCalls",
        asked.max_tool_calls.map(u64::from),
        u64::from(caller.max_tool_calls),
    )?;
    over(
        "maxConcurrentToolCalls",
        asked.max_concurrent_tool_calls.map(|v| v as u64),
        caller.max_concurrent_tool_calls as u64,
    )?;
    over(
        "maxDiscoveryCalls",
        asked.max_discovery_calls.map(u64::from),
        u64::from(caller.max_discovery_calls),
    )?;
    over("maxLogBytes", asked.max_log_bytes, caller.max_log_bytes)?;
    over(
        "memoryMb",
        asked.memory_mb,
        caller.memory_bytes / (1024 * 1024),
    )?;
    let inherited = &scope.inherit.limits;
    Ok(RequestLimits {
        max_tool_calls: asked.max_tool_calls.or(inherited.max_tool_calls),
        max_concurrent_tool_calls: asked
            .max_concurrent_tool_calls
            .or(inherited.max_concurrent_tool_calls),
        max_discovery_calls: asked.max_discovery_calls.or(inherited.max_discovery_calls),
        max_log_bytes: asked.max_log_bytes.or(inherited.max_log_bytes),
        memory_mb: asked.memory_mb.or(inherited.memory_mb),
    })
}
