//! Skills from code: `saveSkill` (the upstream tools the code names are recorded with their
//! schemas), `listSkills`, and `skills.name(args)`, which runs the skill as an execution of
//! its own through [`Nested`], with the calling execution's allowed tools, limits, approvals,
//! permissions and remaining time, never more, drawing from its request's ledger
//! (`crate::run::ledger`: one set of budgets for the whole tree, and a bound on the
//! skills running at once). A skill whose tools changed since it was saved
//! is said to be so, with what changed, wherever it shows.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::Tool;
use serde_json::{Value, json};
use worker_protocol::{CallError, CallOutcome};

use super::scope::{RunScope, err, ok};
use crate::error::{RunError, SkillCallError};
use crate::outcome::ExecOutcome;
use crate::run::output::HOST_LEVEL;
use crate::worker::Language;
use tools::catalog::Catalog;
use tools::skills::changes::{self, Change};
use tools::skills::error::SkillError;
use tools::skills::skill::{CodeSkill, Skill, SkillLanguage, ToolSchemas};
use tools::skills::store::{SaveRequest, Skills};

use crate::run::ledger::MAX_SKILL_DEPTH;

/// What the runtime lends the host for skills and for the executor's own tools called from
/// code (`super::own`): the store, nested executions, and the server's vitals.
pub trait Nested: Send + Sync {
    fn skills(&self) -> &Skills;

    /// Runs `run` as an execution of its own for the execution of `scope`: within its allowed
    /// tools, limits, permissions and what is left of its time, with its client, drawing from
    /// its request's ledger, one level deeper. The one way executions nest.
    fn run_nested<'a>(&'a self, scope: &'a RunScope, run: NestedRun) -> BoxFuture<'a, NestedEnd>;

    /// `health`'s fields as the product line's documents have them (`Runtime::vitals`).
    fn vitals(&self) -> BoxFuture<'_, Value>;
}

/// How an execution ended, as the code that started it (a skill's caller, our own execute
/// tool called from code) needs it: the outcome, and why the run itself failed when the host
/// ended or refused it, typed (the outcome's `error` is then that failure as the answer
/// carries it; otherwise it is the code's own exception, if any).
pub struct NestedEnd {
    pub outcome: ExecOutcome,
    pub failure: Option<RunError>,
}

impl NestedEnd {
    /// What the calling code catches when the run ended with an error: the class of the same
    /// failure met by the code itself. A run the host failed says so by its [`RunError`]; an
    /// exception the code raised keeps its class when it is one of the protocol's (a
    /// `PolicyError` stays one), and is a `ToolError` otherwise.
    pub fn call_error(&self) -> Option<CallError> {
        match (&self.failure, &self.outcome.error) {
            (Some(failure), _) => Some(failure.call_error()),
            (None, Some(e)) => Some(CallError::from_name(&e.name).unwrap_or(CallError::Tool)),
            (None, None) => None,
        }
    }
}

/// One nested execution.
pub struct NestedRun {
    pub language: Language,
    pub code: String,
    pub what: NestedWhat,
}

/// What a nested execution runs.
pub enum NestedWhat {
    /// A skill (its name in the audit log) with its arguments, under its caller's allowed
    /// tools and limits.
    Skill { name: String, args: Value },
    /// Code given to the executor's own execute tool from code, with what the call asks
    /// for itself: its own `allowedTools` (checked inside its caller's), limits (within its
    /// caller's), deadline (within what is left of its caller's), model calls (when its
    /// caller may make them) and type check.
    Code {
        allowed_tools: Option<Vec<String>>,
        limits: policy::RequestLimits,
        timeout_ms: Option<u64>,
        enable_sampling: bool,
        check: Option<bool>,
    },
}

/// A tool's schemas as a skill records them.
pub fn schemas_of(tool: &Tool) -> Value {
    let mut v = json!({"inputSchema": Value::Object((*tool.input_schema).clone())});
    if let Some(out) = &tool.output_schema {
        v["outputSchema"] = Value::Object((**out).clone());
    }
    v
}

/// The tool lists of the connected servers, to compare skills against.
pub async fn connected(catalog: &Catalog) -> HashMap<String, Arc<Vec<Tool>>> {
    let upstreams = catalog.upstreams();
    let mut out = HashMap::new();
    for server in upstreams.names() {
        if let Some(tools) = upstreams.tools_if_connected(server).await {
            out.insert(server.to_string(), tools);
        }
    }
    out
}

/// What changed under `skill`, against the connected servers' lists.
pub fn changes_of(skill: &Skill, lists: &HashMap<String, Arc<Vec<Tool>>>) -> Vec<Change> {
    let Some(code) = &skill.code else {
        return Vec::new();
    };
    if code.tools.is_empty() {
        return Vec::new();
    }
    let current = |server: &str, tool: &str| -> Option<Option<Value>> {
        let list = lists.get(server)?;
        Some(list.iter().find(|t| t.name == tool).map(schemas_of))
    };
    changes::changes(code, &CodeSkill::saved_schemas(skill), &current)
}

/// A skill as code and search see it.
pub fn describe(skill: &Skill, changed: &[Change]) -> Value {
    let mut v = json!({
        "name": skill.name,
        "description": skill.description,
        "origin": skill.origin.as_str(),
        "path": skill.dir.display().to_string(),
    });
    match &skill.code {
        Some(code) => {
            v["language"] = json!(code.language.as_str());
            v["version"] = json!(code.version);
            v["call"] = json!(format!(
                "skills.{}(args)",
                worker_protocol::ident(&skill.name)
            ));
            if let Some(schema) = &code.input_schema {
                v["inputSchema"] = schema.clone();
            }
            let tools: Vec<String> = code
                .tools
                .iter()
                .flat_map(|(s, t)| t.keys().map(move |t| format!("{s}.{t}")))
                .collect();
            if !tools.is_empty() {
                v["tools"] = json!(tools);
            }
        }
        None => v["instructionsOnly"] = json!(true),
    }
    if !changed.is_empty() {
        v["changed"] = changed.iter().map(Change::to_json).collect();
    }
    v
}

/// Every skill as a document `search_tools` ranks with the tools (see
/// [`tools::catalog::SKILLS_SOURCE`]): its name, description and input schema, and in
/// `_meta.skill` what a hit shows (flags included). The same list (by value) is the same
/// `Arc`, so the catalog keeps its index while nothing changed.
pub async fn search_docs(catalog: &Catalog, store: &Skills) -> Arc<Vec<Tool>> {
    if let Some(docs) = store.fresh_docs() {
        return docs;
    }
    let (skills, _) = store.list();
    let lists = connected(catalog).await;
    let mut docs: Vec<Tool> = skills
        .iter()
        .map(|s| {
            let changed = changes_of(s, &lists);
            let schema = s
                .code
                .as_ref()
                .and_then(|c| c.input_schema.clone())
                .and_then(|v| match v {
                    Value::Object(m) => Some(m),
                    _ => None,
                })
                .unwrap_or_else(|| {
                    let mut m = serde_json::Map::new();
                    m.insert("type".into(), json!("object"));
                    m
                });
            let mut meta = serde_json::Map::new();
            meta.insert("skill".into(), describe(s, &changed));
            let mut tool = Tool::new(s.name.clone(), s.description.clone(), Arc::new(schema));
            tool.meta = Some(rmcp::model::MetaObject(meta));
            tool
        })
        .collect();
    // The connected upstreams' skills, named by their server, read through us.
    let upstreams = catalog.upstreams();
    for server in upstreams.names() {
        let Some(list) = upstreams.skills_if_connected(server).await else {
            continue;
        };
        for s in list.iter() {
            let Some(uri) = tools::skills::uri::ours(server, &s.uri) else {
                continue;
            };
            let name = s.frontmatter.name.clone();
            let described = json!({
                "name": format!("{server}/{name}"),
                "server": server,
                "skill": name,
                "description": s.frontmatter.description,
                "origin": "upstream",
                "uri": uri,
                "read": format!("resources/read {uri} (its files are relative to it)"),
            });
            let mut meta = serde_json::Map::new();
            meta.insert("skill".into(), described);
            let mut schema = serde_json::Map::new();
            schema.insert("type".into(), json!("object"));
            let mut tool = Tool::new(name, s.frontmatter.description.clone(), Arc::new(schema));
            tool.meta = Some(rmcp::model::MetaObject(meta));
            docs.push(tool);
        }
    }
    store.same_docs(docs)
}

pub fn skill_error(e: SkillError) -> CallOutcome {
    let e = SkillCallError::Store(e);
    err(e.kind(), e.to_string())
}

/// `saveSkill`.
pub async fn save(
    catalog: &Catalog,
    nested: &dyn Nested,
    scope: &RunScope,
    req: (String, String, String, Option<String>, Option<Value>),
) -> CallOutcome {
    // The skill store is an exit: when code sees values, what it saves holds tokens.
    let (name, code, description, language, mut input_schema) = req;
    let code = scope.exit_text(&code).into_owned();
    let description = scope.exit_text(&description).into_owned();
    if let Some(schema) = input_schema.as_mut() {
        scope.exit_value(schema);
    }
    let req = (name, code, description, language, input_schema);
    match save_skill(
        catalog,
        nested.skills(),
        &scope.policy.audit,
        &scope.execution,
        owner_of(&scope.principal),
        req,
    )
    .await
    {
        Ok(v) => ok(v),
        Err(e) => e,
    }
}

/// Saves a skill (from code, or from a client's `save`): `req` is its name, code,
/// description, language (`typescript` when absent) and input schema. The upstream tools the
/// code names are recorded with their schemas now. `by` names who saved it in the audit log
/// (an execution, or a client). Answers what was saved, as code and clients see it.
/// Who owns what `principal` saves: an authenticated principal (its display form), else
/// nobody in particular (stdio and loopback clients name themselves).
pub fn owner_of(principal: &policy::principal::Principal) -> Option<String> {
    (principal.via() != policy::principal::AuthMethod::Declared).then(|| principal.to_string())
}

pub async fn save_skill(
    catalog: &Catalog,
    store: &Skills,
    audit: &policy::audit::AuditLog,
    by: &str,
    owner: Option<String>,
    req: (String, String, String, Option<String>, Option<Value>),
) -> Result<Value, CallOutcome> {
    let (name, code, description, language, input_schema) = req;
    let language = match language.as_deref().map(SkillLanguage::parse).transpose() {
        Ok(l) => l.unwrap_or(SkillLanguage::TypeScript),
        Err(e) => return Err(skill_error(e)),
    };
    if let Some(schema) = &input_schema
        && let Err(e) = jsonschema::validator_for(schema)
    {
        return Err(err(
            CallError::Argument,
            format!("saveSkill: inputSchema is not a valid JSON Schema: {e}"),
        ));
    }
    let tools = referenced_schemas(catalog, &code).await;
    let request = SaveRequest {
        name,
        description,
        code,
        language,
        input_schema,
        tools,
        owner,
    };
    let skill = store.save(request).map_err(skill_error)?;
    let version = skill.code.as_ref().map_or(1, |c| c.version);
    audit.record(policy::audit::AuditEvent::SkillSave {
        execution: by.to_string(),
        skill: skill.name.clone(),
        version,
        path: skill.dir.display().to_string(),
    });
    let mut v = describe(&skill, &[]);
    v["previousVersions"] = json!(store.versions(&skill.name));
    Ok(v)
}

/// The tools `code` names, with their schemas now: of the connected servers, and of the
/// others the code names (started for it, as a search would).
async fn referenced_schemas(catalog: &Catalog, code: &str) -> ToolSchemas {
    let mut lists = connected(catalog).await;
    let upstreams = catalog.upstreams();
    for server in upstreams.names() {
        if lists.contains_key(server) {
            continue;
        }
        let is = worker_protocol::ident(server);
        let named = code.contains(&format!("{is}.")) || code.contains(server);
        if named
            && let Ok(Ok(tools)) =
                tokio::time::timeout(tools::upstream::SEARCH_START_WAIT, upstreams.tools(server))
                    .await
        {
            lists.insert(server.to_string(), tools);
        }
    }
    let known = lists
        .iter()
        .flat_map(|(s, l)| l.iter().map(move |t| (s.as_str(), t.name.as_ref())));
    let mut tools: ToolSchemas = BTreeMap::new();
    for (server, tool) in changes::referenced(code, known) {
        if let Some(t) = lists
            .get(&server)
            .and_then(|l| l.iter().find(|t| t.name == tool))
        {
            tools.entry(server).or_default().insert(tool, schemas_of(t));
        }
    }
    tools
}

/// `listSkills`.
pub async fn list(catalog: &Catalog, nested: &dyn Nested) -> CallOutcome {
    let lists = connected(catalog).await;
    let store = nested.skills();
    let (skills, problems) = store.list();
    let described: Vec<Value> = skills
        .iter()
        .map(|s| describe(s, &changes_of(s, &lists)))
        .collect();
    let mut v = json!({"skills": described});
    let mut problems = problems;
    if let Some(why) = &store.project_held_back {
        problems.push(why.clone());
    }
    if !problems.is_empty() {
        v["problems"] = json!(problems);
    }
    ok(v)
}

/// A saved skill made ready to run: its language, its code, and what changed under it since
/// it was saved (said where it runs, as `[skill name] ...` lines).
pub struct Resolved {
    pub name: String,
    pub language: Language,
    pub code: String,
    pub warnings: Vec<String>,
}

/// The skill `name` ready to run with `args`: found in the store, runnable, its arguments an
/// object that fits its input schema. Both ways a skill runs start here: a client's `skill`
/// (a run of its own, `crate::door::Work::Skill`) and code's `skills.name(args)` ([`run`]).
pub async fn resolve(
    catalog: &Catalog,
    store: &Skills,
    name: &str,
    args: &Value,
) -> Result<Resolved, SkillCallError> {
    let skill = store.find(name)?;
    let (language, code) = skill
        .script_source()?
        .ok_or_else(|| SkillError::NotRunnable(skill.name.clone()))?;
    if !args.is_object() {
        return Err(SkillCallError::NotAnObject(name.to_string()));
    }
    if let Some(schema) = skill.code.as_ref().and_then(|c| c.input_schema.as_ref())
        && let Ok(validator) = jsonschema::validator_for(schema)
    {
        let errors: Vec<String> = validator
            .iter_errors(args)
            .take(10)
            .map(|e| {
                let path = e.instance_path().to_string();
                format!("arguments{path}: {e}")
            })
            .collect();
        if !errors.is_empty() {
            return Err(SkillCallError::Arguments {
                name: skill.name.clone(),
                errors,
                schema: schema.clone(),
            });
        }
    }
    let lists = connected(catalog).await;
    let warnings = changes_of(&skill, &lists)
        .iter()
        .map(|c| {
            format!(
                "{}.{} changed since the skill was saved: {}; check the skill's code, and save \
                 it again once it works",
                c.server, c.tool, c.what
            )
        })
        .collect();
    Ok(Resolved {
        name: skill.name.clone(),
        language: match language {
            SkillLanguage::TypeScript => Language::JavaScript,
            SkillLanguage::Python => Language::Python,
        },
        code,
        warnings,
    })
}

/// `skills.name(args)`.
pub async fn run(
    catalog: &Catalog,
    nested: &dyn Nested,
    scope: &RunScope,
    name: &str,
    args: Value,
) -> CallOutcome {
    if scope.depth >= MAX_SKILL_DEPTH {
        let e = SkillCallError::TooDeep {
            name: name.to_string(),
            depth: MAX_SKILL_DEPTH,
        };
        return err(e.kind(), e.to_string());
    }
    let skill = match resolve(catalog, nested.skills(), name, &args).await {
        Ok(s) => s,
        Err(e) => return err(e.kind(), e.to_string()),
    };
    let run = NestedRun {
        language: skill.language,
        code: skill.code,
        what: NestedWhat::Skill {
            name: skill.name.clone(),
            args,
        },
    };
    let end = nested.run_nested(scope, run).await;
    let kind = end.call_error();
    let out = end.outcome;
    // The skill's lines leave the request's output budget with it: the caller's code prints
    // them into its own output, which takes them from the budget again.
    let handed: u64 = out
        .logs
        .iter()
        .filter(|l| l.level != HOST_LEVEL)
        .map(|l| l.text.len() as u64)
        .sum();
    scope.ledger.output.give_back(handed);
    let logs: Vec<String> = out.logs.iter().map(|l| l.text.clone()).collect();
    let warnings = skill.warnings;
    match (out.error, kind) {
        (Some(e), Some(kind)) => {
            let mut message = format!("skill {} failed: {}: {}", skill.name, e.name, e.message);
            for w in &warnings {
                message.push_str(&format!(" ({w})"));
            }
            err(kind, message)
        }
        _ => ok(json!({"result": out.result, "logs": logs, "warnings": warnings})),
    }
}
