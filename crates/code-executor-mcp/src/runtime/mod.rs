//! Runs code: prepare it, hand it to a warm worker, serve the worker's requests, enforce the
//! deadline from outside, and collect the result.
//!
//! Both languages share one path ([`Runtime::execute`]): prepare the code (TypeScript is
//! stripped here; Python is compiled in the worker), take a warm worker from that language's
//! pool, drive it, and turn what it reports into an [`ExecOutcome`].
//!
//! - [`execution`]: an execution as an owned object (a task with a handle): admission,
//!   session, audit lines, cancellation;
//! - [`session`]: workers, stored values and workspaces that outlive one execution;
//! - [`drive`]: the loop that serves one run, through the [`drive::Host`] trait;
//! - [`tree`]: directory trees code wrote, measured and deleted by descriptor;
//! - [`worker`]: one worker process and its frames;
//! - [`pool`]: pre-started workers;
//! - [`python`]: finding the host's CPython and starting it with the embedded shim;
//! - [`bridge`]: every request from code passes here (policy, then upstream).

mod approval;
mod bounded;
pub(crate) mod bridge;
mod clock;
mod drive;
pub(crate) mod events;
pub(crate) mod execution;
mod fetch;
pub(crate) mod ids;
mod lease;
mod llm;
pub(crate) mod memory;
pub(crate) mod output;
pub(crate) mod parked;
pub(crate) mod paused;
pub(crate) mod pool;
mod prepare;
pub(crate) mod python;
pub(crate) mod roots;
pub(crate) mod session;
mod tree;
pub(crate) mod worker;
mod workspace;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use worker_protocol::{
    AccessInfo, EngineLimits, ErrorInfo, HostFrame, RunOutcome, RunRequest, ToolBinding, encode,
};

use crate::catalog::Catalog;
use crate::policy::access::{self, Grant};
use crate::policy::{Decision, Limits, Policy};
use bridge::{CatalogHost, RunScope};
use drive::{Failure, Finished, Host, drive, map_stack};
use execution::{ExecContext, ExecRequest};
use lease::{Files, Lease};
use output::{LogCollector, Spill};
use pool::{Pool, PoolStats};
use prepare::NotPrepared;
use python::PythonRuntime;
use session::{Session, Sessions};
use worker::Language;

/// One captured line of output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    pub level: &'static str,
    pub text: String,
}

/// The result of an execution, as the agent receives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecOutcome {
    pub result: Value,
    pub logs: Vec<LogEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    pub tool_calls: u32,
    pub duration_ms: f64,
    /// Set when code ran without confinement (`--sandbox=none`), so every result says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// The full output, when it was cut and kept in the execution's scratch directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_file: Option<String>,
    /// The session the execution ran in, and what became of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionInfo>,
    /// Peak resident memory of the worker, for the audit log (not part of the answer).
    #[serde(skip)]
    pub memory_peak_bytes: Option<u64>,
    /// The result's size as the worker sent it, for the audit log (not part of the answer).
    #[serde(skip)]
    pub result_bytes: usize,
    /// Model calls the code made, and their tokens (present when it made any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<crate::policy::llm::LlmUsage>,
}

/// What an answer says about its session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The handle to pass back as `session`.
    pub id: String,
    /// The session was created by this call.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub created: bool,
    /// The session's worker was gone (and why): this run started in a fresh one, without the
    /// variables of earlier runs; stored values and workspace files were kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_lost: Option<String>,
    /// The session ended with this call (`reset`); the handle no longer works.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<&'static str>,
}

impl ExecOutcome {
    /// An execution that was not started.
    pub fn refused(name: &str, message: String) -> ExecOutcome {
        ExecOutcome {
            result: Value::Null,
            logs: Vec::new(),
            error: Some(error(name, message)),
            tool_calls: 0,
            duration_ms: 0.0,
            warning: None,
            output_file: None,
            session: None,
            memory_peak_bytes: None,
            result_bytes: 0,
            llm: None,
        }
    }
}

/// The warning every result carries when the sandbox is off.
pub const UNSANDBOXED_WARNING: &str =
    "UNSANDBOXED: this server runs with --sandbox=none; code ran without OS confinement";

/// Runs TypeScript, JavaScript and Python executions.
pub struct Runtime {
    catalog: Catalog,
    /// What answers the requests of code (the catalog and upstreams behind it).
    host: Arc<dyn Host>,
    js_pool: Pool,
    python: PythonRuntime,
    unconfined: bool,
    policy: Arc<Policy>,
    sessions: Sessions,
    /// Executions that outlive their request (tasks, `yieldAfterMs`).
    parked: parked::Parked,
    /// Executions waiting for their client's answers (MRTR).
    paused: Arc<paused::PausedTable>,
    /// "Approve for the session" answers.
    remembered: Arc<approval::Remembered>,
    /// HTTP clients for `fetch`, one per set of granted destinations, shared by executions.
    fetch_clients: Arc<fetch::Clients>,
}

fn error(name: &str, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo {
        name: name.into(),
        message: message.into(),
        stack: None,
    }
}

impl Runtime {
    pub(crate) fn new(
        catalog: Catalog,
        js_pool: Pool,
        python: PythonRuntime,
        unconfined: bool,
        policy: Arc<Policy>,
        sessions: Sessions,
        replica: crate::replica::Replica,
    ) -> Self {
        Runtime {
            fetch_clients: Arc::default(),
            host: Arc::new(CatalogHost(catalog.clone())),
            catalog,
            js_pool,
            python,
            unconfined,
            parked: parked::Parked::new(policy.long_runs).with_replica(replica.clone()),
            policy,
            sessions: sessions.with_replica(replica.clone()),
            paused: paused::PausedTable::new(replica),
            remembered: Arc::default(),
        }
    }

    pub(crate) fn parked(&self) -> &parked::Parked {
        &self.parked
    }

    pub(crate) fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    pub(crate) fn paused(&self) -> &Arc<paused::PausedTable> {
        &self.paused
    }

    pub(crate) fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    pub async fn pool_stats(&self) -> Vec<PoolStats> {
        vec![self.js_pool.stats().await, self.python.stats().await]
    }

    pub fn python(&self) -> &PythonRuntime {
        &self.python
    }

    async fn pool(&self, language: Language) -> Result<&Pool, ErrorInfo> {
        match language {
            Language::JavaScript => Ok(&self.js_pool),
            Language::Python => self
                .python
                .pool()
                .await
                .map_err(|e| error("PythonUnavailable", e)),
        }
    }

    /// One run in `language`, in a pooled worker or in `session`'s. Never fails: every problem
    /// is an outcome with `error`. Dropping the future stops the run (its worker is killed).
    pub(super) async fn execute(
        &self,
        language: Language,
        req: &ExecRequest,
        ctx: &ExecContext,
        session: Option<&Arc<Session>>,
    ) -> ExecOutcome {
        let started = Instant::now();
        let mut out = ExecOutcome {
            result: Value::Null,
            logs: Vec::new(),
            error: None,
            tool_calls: 0,
            duration_ms: 0.0,
            warning: self.unconfined.then(|| UNSANDBOXED_WARNING.to_string()),
            output_file: None,
            session: None,
            memory_peak_bytes: None,
            result_bytes: 0,
            llm: None,
        };
        let finish = |mut out: ExecOutcome| {
            out.duration_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1e3;
            out
        };
        let configured = if req.long_run {
            Limits::configured_long(
                &self.policy.execution,
                &self.policy.long_runs,
                req.timeout_ms,
            )
        } else {
            Limits::configured(&self.policy.execution, req.timeout_ms)
        };
        let limits = match configured.and_then(|l| l.narrowed(&req.limits)) {
            Ok(l) => l,
            Err(e) => {
                out.error = Some(error("RangeError", e));
                return finish(out);
            }
        };
        let max_code_bytes = self.policy.execution.max_code_bytes;
        if req.code.len() > max_code_bytes {
            out.error = Some(error(
                "RangeError",
                format!(
                    "the code is {} bytes; the limit is {max_code_bytes}",
                    req.code.len()
                ),
            ));
            return finish(out);
        }
        // The deadline runs from here: preparing the code counts against it.
        let deadline = tokio::time::Instant::now() + limits.timeout;
        let prepared =
            match prepare::prepare(language, &req.code, deadline, session.is_some()).await {
                Ok(p) => p,
                Err(NotPrepared::Invalid(e)) => {
                    out.error = Some(e);
                    return finish(out);
                }
                Err(NotPrepared::Deadline) => {
                    out.error = Some(timeout_error(&limits));
                    return finish(out);
                }
            };
        // Files and network: what the request asks, within the configured ceiling.
        let grant = match &req.permissions {
            None => Grant::default(),
            Some(asked) => match access::grant(&self.policy.access, asked) {
                Ok(g) => g,
                Err(e) => {
                    out.error = Some(error("PolicyError", e.to_string()));
                    return finish(out);
                }
            },
        };
        let pool = match self.pool(language).await {
            Ok(p) => p,
            Err(e) => {
                out.error = Some(e);
                return finish(out);
            }
        };
        if language == Language::Python && python::uses_asyncio(&req.code) {
            pool.prefer_warm();
        }
        let mut scope = RunScope::new(
            ctx,
            self.policy.allowlist(req.allowed_tools.clone()),
            limits,
            self.policy.clone(),
            deadline.into_std(),
            session.cloned(),
            self.remembered.clone(),
            req.enable_sampling || self.policy.llm.enabled,
        );
        // Outside a session, a write grant is a fresh workspace of this run's own, deleted
        // when it ends (a session has its workspace already).
        let run_workspace = match (grant.write, session) {
            (true, None) => match self.sessions.run_workspace(&scope.execution) {
                Ok(w) => Some(w),
                Err(e) => {
                    out.error = Some(error("SandboxError", e.to_string()));
                    return finish(out);
                }
            },
            _ => None,
        };
        let files = Files {
            data: grant.read.clone(),
            workspace: run_workspace.as_ref().map(|w| w.0.clone()),
        };
        let access_info = (grant.needs_files() || !grant.net.is_empty()).then(|| AccessInfo {
            read: grant.read.iter().map(|p| p.display().to_string()).collect(),
            // Both kinds of workspace appear at the same path inside.
            workspace: (files.workspace.is_some() || session.is_some())
                .then(|| session::WORKSPACE_MOUNT.to_string()),
            net: !grant.net.is_empty(),
        });
        scope.fetch = fetch::FetchState::new(Arc::new(grant), self.fetch_clients.clone());
        let scope = Arc::new(scope);
        let tools = self.bindings(&scope).await;
        // Output past the answer's cap is still wanted, up to the file's own cap, when it
        // can be kept.
        let spill = self
            .policy
            .scratch
            .as_ref()
            .filter(|_| limits.max_output_file_bytes > 0)
            .map(|root| Spill {
                dir: root.join(scratch_name(&scope.execution)),
                max_bytes: limits.max_output_file_bytes,
                redactor: self.policy.redactor.clone(),
            });
        let worker_log_bytes = match &spill {
            Some(s) => limits.max_log_bytes.max(s.max_bytes),
            None => limits.max_log_bytes,
        };
        let run = RunRequest {
            code: prepared.code,
            tools,
            limits: EngineLimits {
                memory_bytes: limits.memory_bytes,
                stack_bytes: limits.stack_bytes,
                max_log_bytes: worker_log_bytes,
            },
            persist: session.is_some(),
            access: access_info,
        };
        let run = match encode(&HostFrame::Run(run)) {
            Ok(bytes) => bytes,
            Err(e) => {
                out.error = Some(error(
                    "InternalError",
                    format!("cannot encode the run: {e}"),
                ));
                return finish(out);
            }
        };
        let mut before = workspace::Usage::default();
        let mut lease = match tokio::time::timeout_at(
            deadline,
            Lease::take(
                pool,
                session,
                &run,
                &self.sessions,
                ctx,
                &mut before,
                &files,
            ),
        )
        .await
        {
            Ok(Ok(lease)) => lease,
            Ok(Err(e)) => {
                out.error = Some(e);
                return finish(out);
            }
            Err(_) => {
                out.error = Some(timeout_error(&limits));
                return finish(out);
            }
        };
        out.session = session.map(|s| SessionInfo {
            id: s.id.clone(),
            created: false,
            state_lost: lease.state_lost.take(),
            ended: None,
        });
        let mut logs = LogCollector::new(limits.max_log_bytes, spill);
        // Lines of a run that outlives its request are read while it runs (`wait`, tasks).
        if req.long_run {
            logs = logs.mirrored(ctx.events.clone());
        }
        let ended = {
            let run = drive(&mut lease.worker, &*self.host, &scope, &mut logs);
            let clock = scope.clock.clone();
            let watched = session.map(|s| &s.workspace).or(files.workspace.as_ref());
            match watched {
                None => until(&clock, run).await,
                Some(dir) => {
                    let quota = workspace::watch(dir, self.sessions.limits(), before);
                    until(&clock, async {
                        tokio::select! {
                            ended = run => ended,
                            over = quota => Err(Failure::Quota(over)),
                        }
                    })
                    .await
                }
            }
        };
        let worker = &mut lease.worker;
        out.memory_peak_bytes = worker.memory_peak();
        out.tool_calls = scope
            .tool_calls
            .load(Ordering::Relaxed)
            .min(limits.max_tool_calls);
        let llm = scope.llm.usage();
        out.llm = (llm.calls > 0).then_some(llm);
        let mut reusable = None;
        let mut quota_failed = false;
        match ended {
            Ok(Ok(Finished {
                outcome,
                bytes,
                clean,
            })) => {
                match outcome {
                    RunOutcome::Ok { result } => {
                        out.result = result;
                        out.result_bytes = bytes;
                    }
                    // The drive loop turns a reference to a kept reply into its string.
                    RunOutcome::Reply { id } => {
                        out.error = Some(error(
                            "WorkerError",
                            format!("the result refers to reply {id}, which was not resolved"),
                        ));
                    }
                    RunOutcome::Err { mut error } => {
                        if let Some(stripped) = &prepared.stripped {
                            error.stack = error.stack.map(|s| map_stack(&s, stripped));
                        }
                        error.stack = error.stack.filter(|s| !s.trim().is_empty());
                        out.error = Some(error);
                    }
                }
                reusable = Some(clean);
            }
            Ok(Err(Failure::Protocol(e))) => {
                worker.kill();
                out.error = Some(error("WorkerError", e));
            }
            Ok(Err(Failure::Exited)) => {
                out.error = Some(error("WorkerCrashed", worker.exit_description().await));
            }
            Ok(Err(Failure::Quota(message))) => {
                worker.kill();
                quota_failed = true;
                out.error = Some(error("LimitError", message));
            }
            Err(_) => {
                worker.kill();
                out.error = Some(timeout_error(&limits));
            }
        }
        // A session run that ended well may still leave its workspace over the quota.
        let watched = session.map(|s| &s.workspace).or(files.workspace.as_ref());
        if let (Some(dir), Some(_)) = (watched, reusable)
            && let Some(over) = workspace::verdict_after(
                workspace::measure(dir, self.sessions.limits(), Some(before)).await,
                before,
                self.sessions.limits(),
                out.error.as_ref(),
            )
        {
            out.result = Value::Null;
            quota_failed = true;
            out.error = Some(error("LimitError", over));
        }
        // A measured session workspace gets back what the failed run wrote, so failed runs
        // cannot add up; its worker (whose threads may still write) is stopped first.
        if let (true, Some(s), Some(e)) = (quota_failed, session, out.error.as_mut())
            && let Some(note) = workspace::take_back(&mut lease.worker, &s.workspace, before).await
        {
            reusable = None;
            e.message.push_str(&note);
        }
        lease.give_back(reusable, &out, &self.sessions);
        drop(run_workspace);
        let captured = logs.finish();
        out.logs = captured.logs;
        out.output_file = captured.file.map(|p| p.display().to_string());
        finish(out)
    }

    /// The tools of already-connected servers, for enumerable `tools.server` proxies; their
    /// lists are frozen in the execution's view. Servers not started yet are still callable
    /// through the proxies; starting them here would make every execution wait for every
    /// upstream. Declarations are not sent: the worker asks for one when code reads it.
    async fn bindings(&self, scope: &RunScope) -> Vec<ToolBinding> {
        let upstreams = self.catalog.upstreams();
        let allow = &scope.allow;
        let mut out = Vec::new();
        for server in upstreams.names() {
            match upstreams.tools_if_connected(server).await {
                Some(tools) => {
                    let tools = scope.view.freeze(server, tools);
                    out.extend(
                        tools
                            .iter()
                            .filter(|t| allow.check(server, t) == Decision::Allow)
                            .map(|t| ToolBinding {
                                server: server.to_string(),
                                tool: Some(t.name.to_string()),
                            }),
                    )
                }
                None => out.push(ToolBinding {
                    server: server.to_string(),
                    tool: None,
                }),
            }
        }
        out
    }
}

/// Runs `fut` until the execution's deadline, which stands still while the execution waits
/// for a person (`Err` when the deadline came first).
async fn until<T>(
    clock: &clock::Clock,
    fut: impl std::future::Future<Output = T>,
) -> Result<T, ()> {
    tokio::select! {
        out = fut => Ok(out),
        () = clock.expired() => Err(()),
    }
}

/// The scratch directory name of an execution: its audit id, or a fresh one for unaudited
/// runs.
fn scratch_name(execution: &str) -> String {
    if !execution.is_empty() && execution.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return execution.to_string();
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("run-{}-{}", std::process::id(), t.as_nanos())
}

fn timeout_error(limits: &Limits) -> ErrorInfo {
    error(
        "TimeoutError",
        format!(
            "the execution exceeded its {} ms deadline and was stopped; pass a larger timeoutMs \
             (at most {}) or do less per execution",
            limits.timeout.as_millis(),
            crate::policy::MAX_TIMEOUT_MS
        ),
    )
}
