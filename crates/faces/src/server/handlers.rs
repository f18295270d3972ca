//! One handler per tool of ours, and the one place that chooses how an execution's answer is
//! delivered ([`deliver`]: a task, an early answer with a handle, a plain result, or on
//! 2026-07-28 questions in `input_required`). [`dispatch`] looks a call's name up in the one
//! table of names (`tools::own_tools`), turns the documents' parameters into ours, and hands
//! the call to its handler; any other name is a pinned direct tool's ([`direct_call`]).

use rmcp::ErrorData as McpError;
use rmcp::model::CallToolResponse;
use serde_json::Value;

use super::answer::{runs_report, saved_result, value_result};
use super::args::{ExecuteArgs, PINNED_TOO, SchemaArgs, SearchArgs, Tasks, parse, skill_args};
use super::direct;
use super::follow::{MAX_QUESTIONS_AT_ONCE, follow};
use super::legacy_tasks;
use super::long_runs;
use super::render::execution_result;
use crate::composition::Core;
use policy::ToolAllowlist;
use policy::principal::Principal;
use runtime::ExecOutcome;
use runtime::door::{Caller, DirectCall, Mode, Start, Started, Work};
use runtime::execution::{ExecRequest, SessionArg};
use runtime::outcome::Called;
use runtime::parked::Kind;
use runtime::run::client::{ClientLink, InputRoute};
use runtime::worker::Language;
use tools::catalog::SearchParams;
use tools::own_tools::{self, Name, OwnTool};

/// A `tools/call` of `name` with `args`, by `principal` over `client`.
pub(super) async fn dispatch(
    core: &Core,
    name: &str,
    args: Value,
    principal: Principal,
    client: ClientLink,
    tasks: Tasks,
    trace: Option<tools::trace::TraceContext>,
) -> Result<CallToolResponse, McpError> {
    let named = match own_tools::named(name, PINNED_TOO) {
        Ok(named) => named,
        Err(unknown) => {
            if let Some((server, tool)) = direct::find(core, name).await {
                let call = DirectCall {
                    server,
                    tool,
                    args,
                    trace,
                };
                return direct_call(core, name, call, principal, client).await;
            }
            return Err(McpError::invalid_params(unknown.to_string(), None));
        }
    };
    // The documents' parameter names become ours; an unknown one is an error.
    let call = own_tools::normalize(named, args)
        .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
    let args = Value::Object(call.args);
    match call.tool {
        OwnTool::Execute(code) => {
            let language = match code {
                Some(own_tools::Code::Python) => Language::Python,
                Some(own_tools::Code::TypeScript) | None => Language::JavaScript,
            };
            let a: ExecuteArgs = parse(named.name, args)?;
            execute(core, named, language, a, principal, client, tasks, trace).await
        }
        OwnTool::Wait => {
            let a: long_runs::WaitArgs = parse(named.name, args)?;
            Ok(long_runs::wait(core, a, &principal, None).await)
        }
        OwnTool::SearchTools => search_tools(core, parse(named.name, args)?).await,
        OwnTool::GetToolSchema => get_tool_schema(core, parse(named.name, args)?).await,
        OwnTool::ListServers => {
            let mut servers = core.catalog.servers().await;
            servers["sessions"] = core.runtime.live().sessions().report(&principal);
            servers["runs"] = runs_report(core, &principal);
            Ok(value_result(Ok(servers)).into())
        }
        OwnTool::Health => Ok(value_result(Ok(core.health(&principal).await)).into()),
    }
}

/// An execute tool: code to run (or to keep, with `save`), or a saved skill to run.
#[expect(
    clippy::too_many_arguments,
    reason = "the call as dispatch resolved it: name, language, arguments, caller, delivery"
)]
async fn execute(
    core: &Core,
    named: &Name,
    language: Language,
    mut a: ExecuteArgs,
    principal: Principal,
    client: ClientLink,
    tasks: Tasks,
    trace: Option<tools::trace::TraceContext>,
) -> Result<CallToolResponse, McpError> {
    // A pattern that can match nothing is a mistake to name, not a silent denial.
    if let Some(problem) = a
        .allowed_tools
        .iter()
        .flatten()
        .find_map(|p| policy::pattern::problem(p))
    {
        return Err(McpError::invalid_params(
            format!("allowedTools: {problem}"),
            None,
        ));
    }
    let (code, skill, save, args) = (a.code.take(), a.skill.take(), a.save.take(), a.args.take());
    let request = |code| ExecRequest {
        code,
        timeout_ms: a.timeout_ms,
        allowed_tools: a.allowed_tools.clone(),
        limits: a.limits,
        session: a.session.as_deref().map(SessionArg::parse),
        reset: a.reset,
        long_run: false,
        enable_sampling: a.enable_sampling,
        permissions: a.permissions.clone(),
        trace: trace.clone(),
        skill: None,
        check: a.check,
    };
    let work = match (code, skill, save) {
        (Some(code), None, Some(save)) => {
            let req = (
                save.name,
                code,
                save.description,
                Some(language.tool_language().to_string()),
                save.input_schema,
            );
            let saved = runtime::host::skills::save_skill(
                &core.catalog,
                core.runtime.skills(),
                &core.policy.audit,
                &principal.to_string(),
                runtime::host::skills::owner_of(&principal),
                req,
            )
            .await;
            return Ok(saved_result(saved).into());
        }
        (Some(code), None, None) => Work::Code {
            language,
            request: Box::new(request(code)),
        },
        (None, Some(_), None) if a.session.is_some() || a.reset => {
            return Err(McpError::invalid_params(
                "`skill` runs a saved skill in a worker of its own, outside any session; give \
                 `session` (or `reset`) with `code`, which can call it as skills.name(args)",
                None,
            ));
        }
        (None, Some(name), None) => Work::Skill {
            name,
            args: skill_args(args)?,
            request: Box::new(request(String::new())),
        },
        (None, None, _) => {
            return Err(McpError::invalid_params(
                "give `code` to run (or to keep with `save`), or `skill` (and `args`) to run a saved skill",
                None,
            ));
        }
        (Some(_), Some(_), _) | (None, Some(_), Some(_)) => {
            return Err(McpError::invalid_params(
                "`skill` runs a saved skill and takes no `code` or `save`; give one or the other",
                None,
            ));
        }
    };
    let delivery = Delivery {
        tasks,
        yield_after_ms: a.yield_after_ms,
        documents: !named.listed,
    };
    deliver(core, work, principal, client, delivery, named.name).await
}

/// How the client may be answered: what it said about tasks, how long it waits before a
/// handle, and whether it called a documents' name.
struct Delivery {
    tasks: Tasks,
    yield_after_ms: Option<u64>,
    documents: bool,
}

/// The one place that chooses how an execution's answer is delivered: a task (2025-11-25
/// task-augmented calls), an early answer with a handle (`yieldAfterMs`, or a task the
/// 2026-07-28 server chose), a plain result, or on 2026-07-28 its questions as
/// `input_required` (followed until the run ends).
async fn deliver(
    core: &Core,
    work: Work,
    principal: Principal,
    mut client: ClientLink,
    delivery: Delivery,
    tool: &str,
) -> Result<CallToolResponse, McpError> {
    // Every way in builds one `Start` for the runtime's one door.
    let start = |work, client, mode| Start {
        work,
        context: Caller {
            principal: principal.clone(),
            client: Some(client),
        },
        mode,
    };
    if delivery.tasks == Tasks::Asked {
        // A task outlives this request: its questions go to the client inline (or meet the
        // rule's fallback).
        client.route = InputRoute::Inline;
        let mode = Mode::Parked {
            kind: Kind::Task,
            asks: None,
            documents: delivery.documents,
        };
        let handle = long_runs::start_task(core, start(work, client, mode));
        return legacy_tasks::create(core, handle).await.map(Into::into);
    }
    let work = match long_runs::Answer::choose(
        core,
        delivery.tasks == Tasks::Declared,
        delivery.yield_after_ms,
    ) {
        long_runs::Answer::Early(early) => {
            let mut link = client.clone();
            // A 2026-07-28 run that outlives its request carries its questions through its
            // handle (tasks/get, or wait); an older client's are asked inline (or meet the
            // fallback).
            let asks = match &client.route {
                InputRoute::Mrtr(_) => {
                    let (tx, rx) = tokio::sync::mpsc::channel(MAX_QUESTIONS_AT_ONCE);
                    link.route = InputRoute::Mrtr(tx);
                    Some(rx)
                }
                InputRoute::Inline => None,
            };
            let mode = Mode::Parked {
                kind: early.kind(),
                asks,
                documents: delivery.documents,
            };
            match long_runs::early(core, start(work, link, mode), early).await {
                Ok(answer) => return Ok(answer),
                // The server chose a task it could not make: answered plainly.
                Err(work) => work,
            }
        }
        long_runs::Answer::Plain => work,
    };
    match client.route {
        InputRoute::Inline => {
            let mode = Mode::Plain { asks: None };
            Ok(long_runs::plain(core, start(work, client, mode))
                .await
                .into())
        }
        InputRoute::Mrtr(_) => {
            let (tx, rx) = tokio::sync::mpsc::channel(MAX_QUESTIONS_AT_ONCE);
            client.route = InputRoute::Mrtr(tx);
            let mode = Mode::Plain { asks: Some(rx) };
            match core
                .runtime
                .begin(start(work, client, mode))
                .and_then(Started::waiting)
            {
                Ok(execution) => follow(core, execution, &principal, tool).await,
                Err(e) => Ok(execution_result(&ExecOutcome::refused(e.info())).into()),
            }
        }
    }
}

/// `search_tools`: the catalog's tools and the skills, ranked together.
async fn search_tools(core: &Core, a: SearchArgs) -> Result<CallToolResponse, McpError> {
    let catalog = &core.catalog;
    let skills = runtime::host::skills::search_docs(catalog, core.runtime.skills()).await;
    let found = catalog
        .search_with(
            &tools::catalog::ToolView::default(),
            &SearchParams {
                query: &a.query,
                detail: a.detail.as_deref(),
                server: a.server.as_deref(),
                limit: a.limit,
                cursor: a.cursor.as_deref(),
            },
            &ToolAllowlist::allow_all(),
            Some(skills),
        )
        .await;
    Ok(value_result(found).into())
}

/// `get_tool_schema`: an upstream tool's definition, or one of ours with its long reference.
async fn get_tool_schema(core: &Core, a: SchemaArgs) -> Result<CallToolResponse, McpError> {
    let (server, name) = a.named()?;
    // Our own execute tools answer with their long reference, by any of their names.
    let upstreams = core.catalog.upstreams().names();
    let own = match own_tools::from_code(upstreams, server, name) {
        Some(Ok(n)) => Some(n),
        Some(Err(unknown)) => {
            return Err(McpError::invalid_params(unknown.to_string(), None));
        }
        None if server.is_none() => own_tools::lookup(name),
        None => None,
    };
    if let Some(r) = own.and_then(own_tools::own_schema) {
        return Ok(value_result(Ok(r)).into());
    }
    Ok(value_result(core.catalog.schema(server, name).await).into())
}

/// A pinned direct tool's call (`directTools`): one upstream call through the runtime's
/// door, followed like an execution (its approval may pause it on 2026-07-28).
async fn direct_call(
    core: &Core,
    name: &str,
    call: DirectCall,
    principal: Principal,
    mut client: ClientLink,
) -> Result<CallToolResponse, McpError> {
    let asks = match &client.route {
        InputRoute::Mrtr(_) => {
            let (tx, rx) = tokio::sync::mpsc::channel(MAX_QUESTIONS_AT_ONCE);
            client.route = InputRoute::Mrtr(tx);
            Some(rx)
        }
        InputRoute::Inline => None,
    };
    let start = Start {
        work: Work::Direct(call),
        context: Caller {
            principal: principal.clone(),
            client: Some(client),
        },
        mode: Mode::Plain { asks },
    };
    match core.runtime.begin(start).and_then(Started::waiting) {
        Ok(execution) => follow(core, execution, &principal, name).await,
        Err(e) => Ok(direct::answer(Called::refused(e.info())).into()),
    }
}
