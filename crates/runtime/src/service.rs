//! The runtime as one value: it owns the warm pools, the host side and the table of live
//! handles, and runs an execution from its request to its outcome.
//!
//! [`Runtime::start`] gives an execution a task of its own ([`Runtime::run_task`]: admission,
//! session, audit lines); [`Runtime::execute`] is one run inside it: prepare the code
//! (TypeScript is stripped here; Python is compiled in the worker), take a worker (pooled, or
//! the session's: [`super::lease`]), drive it against the host side, and turn what it reports
//! into an [`ExecOutcome`]. Every `impl Runtime` is in this file.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Instant;

use serde_json::Value;
use worker_protocol::{
    AccessInfo, EngineLimits, HostFrame, RunOutcome, RunRequest, ToolBinding, encode,
};

use super::door::{DirectCall, Mode, Run, Start, Started, Work};
use super::error::RunError;
use super::host::bridge::{self, RunHost};
use super::host::net::{Clients, FetchState};
use super::host::remembered::Remembered;
use super::host::scope::{Inherit, RunScope, ScopeParts};
use super::host::skills::{Nested, NestedRun, NestedWhat};
use super::lease::{Files, Lease};
use super::live::Live;
use super::live::parked::{self, Kind, ParkError};
use super::live::sessions::{self, EndReason, Session, SessionError, Sessions};
use super::outcome::{ExecOutcome, SessionInfo, UNSANDBOXED_WARNING};
use super::run::client::Ask;
use super::run::clock::Clock;
use super::run::drive::{Failure, Finished, drive, map_stack};
use super::run::execution::{
    Event, ExecContext, ExecRequest, ExecSpan, Execution, NestedOf, RunEnd, SessionArg,
};
use super::run::ledger::Ledger;
use super::run::output::{LogCollector, Spill};
use super::run::prepare::{self, NotPrepared};
use super::worker::grants::GrantPools;
use super::worker::pool::{Pool, PoolStats};
use super::worker::python::{self, PythonRuntime};
use super::worker::{Language, workspace};
use policy::access::{self, Grant};
use policy::audit::{AuditEvent, sha256_hex};
use policy::{Decision, Limits, Policy};
use tools::catalog::Catalog;
use tools::skills::store::Skills;

/// Personal data out of what an execution answers when its code saw values (`pii`): the
/// result and the error; and the audit's count of tokens made, per detector.
fn pii_exit(scope: &RunScope, out: &mut ExecOutcome, policy: &Policy) {
    if let Some(exit) = &scope.pii_exit {
        exit.value(&mut out.result);
        if let Some(e) = out.error.as_mut() {
            if let std::borrow::Cow::Owned(m) = exit.text(&e.message) {
                e.message = m;
            }
            if let Some(s) = e.stack.as_mut()
                && let std::borrow::Cow::Owned(t) = exit.text(s)
            {
                *s = t;
            }
        }
    }
    let made = scope.pii_made.lock().map(|m| m.clone()).unwrap_or_default();
    if !made.is_empty() {
        policy.audit.record(AuditEvent::PiiTokens {
            execution: scope.execution.clone(),
            tokens: made,
        });
    }
}

/// Runs TypeScript, JavaScript and Python executions.
pub struct Runtime {
    catalog: Catalog,
    js_pool: Pool,
    python: PythonRuntime,
    unconfined: bool,
    policy: Arc<Policy>,
    /// The table of live handles: sessions, parked runs and tasks, paused executions.
    live: Live,
    /// "Approve for the session" answers.
    remembered: Arc<Remembered>,
    /// HTTP clients for `fetch`, one per set of granted destinations, shared by executions.
    fetch_clients: Arc<Clients>,
    /// Saved code (`skills.name(args)`), run as nested executions.
    skills: Arc<Skills>,
    /// The type checkers of `check: true`.
    checkers: Arc<crate::check::Checkers>,
    /// Warm workers for executions granted data paths (`permissions.read`).
    grant_pools: GrantPools,
    /// Skills one request's code runs at once (`executionLimits.maxConcurrentSkills`, else
    /// `poolMax`); see [`super::run::ledger::SkillSlots`].
    max_concurrent_skills: usize,
    /// When the runtime (and so the server) started, for `health`'s `uptime`.
    started: Instant,
}

impl Runtime {
    #[expect(
        clippy::too_many_arguments,
        reason = "the composition root hands over every part once"
    )]
    pub fn new(
        catalog: Catalog,
        js_pool: Pool,
        python: PythonRuntime,
        unconfined: bool,
        policy: Arc<Policy>,
        sessions: Sessions,
        replica: policy::replica::Replica,
        skills: Arc<Skills>,
        checkers: Arc<crate::check::Checkers>,
    ) -> Self {
        let max_concurrent_skills = match policy.execution.max_concurrent_skills {
            0 => js_pool.sizing().max.max(1),
            n => n,
        };
        Runtime {
            started: Instant::now(),
            max_concurrent_skills,
            skills,
            checkers,
            fetch_clients: Arc::default(),
            catalog,
            js_pool,
            python,
            unconfined,
            live: Live::new(sessions, policy.long_runs, replica),
            policy,
            remembered: Arc::default(),
            grant_pools: GrantPools::default(),
        }
    }

    /// The skills code saves and calls.
    pub fn skills(&self) -> &Skills {
        &self.skills
    }

    /// The table of live handles every server face asks.
    pub fn live(&self) -> &Live {
        &self.live
    }

    /// The approvals inbox (`approvals.fallback: "inbox"`), which `serve --http` serves to
    /// each principal too.
    pub fn inbox(&self) -> &Arc<super::host::inbox::Inbox> {
        &self.remembered.inbox
    }

    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    pub async fn pool_stats(&self) -> Vec<PoolStats> {
        vec![self.js_pool.stats().await, self.python.stats().await]
    }

    /// `health` as the product line's documents have it, with our values: `healthy` (no
    /// [`Runtime::problems`], the checks of `/readyz`; `problems` says them), `auditLog.enabled`,
    /// `mcpClients.connected` (upstream servers connected now), `connectionPool` (executions
    /// running, waiting in the queue, and the most that run at once), `uptime` in seconds and
    /// `timestamp` (RFC 3339). Both `health` and code's `health` answer these.
    /// Why the server cannot run code well now, given its pools' `stats` (none: it can):
    /// workers that cannot start, a pool still warming up, an audit log that is not written.
    /// `/readyz` fails on them, and `health` reports them (`healthy`, `problems`).
    pub fn problems(&self, stats: &[PoolStats]) -> Vec<String> {
        let python = self.python.install().is_some();
        let mut problems = Vec::new();
        for p in stats {
            if p.language == "python" && !python {
                continue;
            }
            // An empty pool is a problem before its first worker started, or when workers
            // fail to start; not when its workers are all busy: a replica under load stays
            // ready, or a proxy's health check would take it out and send its pinned handles
            // elsewhere.
            if p.target > 0 && p.ready == 0 {
                match &p.last_error {
                    Some(e) => problems.push(format!("{} workers cannot start: {e}", p.language)),
                    None if p.started == 0 => {
                        problems.push(format!("{} pool is warming up", p.language));
                    }
                    None => {}
                }
            }
        }
        if let Some(why) = self.policy.audit.problem() {
            problems.push(format!(
                "the audit log is not written ({why}): mount a writable volume for it, or set \
                 audit.enabled to false"
            ));
        }
        problems
    }

    pub async fn vitals(&self) -> Value {
        let connected = self
            .catalog
            .upstreams()
            .status()
            .await
            .iter()
            .filter(|s| s.status == "connected")
            .count();
        let problems = self.problems(&self.pool_stats().await);
        let audit = &self.policy.audit;
        let (active, waiting, max) = self.policy.admission.occupancy();
        serde_json::json!({
            "healthy": problems.is_empty(),
            "problems": problems,
            "auditLog": {"enabled": audit.path().is_some()},
            "mcpClients": {"connected": connected},
            "connectionPool": {"active": active, "waiting": waiting, "max": max},
            "uptime": (self.started.elapsed().as_secs_f64() * 1e3).round() / 1e3,
            "timestamp": policy::audit::rfc3339_now(),
        })
    }

    /// The warm pools of read grants (`worker::grants`), each with its data paths.
    pub async fn grant_pool_stats(&self) -> Vec<(Vec<std::path::PathBuf>, PoolStats)> {
        self.grant_pools.stats().await
    }

    pub fn python(&self) -> &PythonRuntime {
        &self.python
    }

    async fn pool(&self, language: Language) -> Result<&Pool, RunError> {
        match language {
            Language::JavaScript => Ok(&self.js_pool),
            Language::Python => self
                .python
                .pool()
                .await
                .map_err(RunError::PythonUnavailable),
        }
    }

    /// One run in `language`, in a pooled worker or in `session`'s. Never fails: every problem
    /// is an outcome with `error`. Dropping the future stops the run (its worker is killed).
    pub async fn execute(
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
            upstream: None,
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
                out.error = Some(RunError::Limits(e).info());
                return finish(out);
            }
        };
        let max_code_bytes = self.policy.execution.max_code_bytes;
        if req.code.len() > max_code_bytes {
            out.error = Some(
                RunError::Range(format!(
                    "the code is {} bytes; the limit is {max_code_bytes}",
                    req.code.len()
                ))
                .info(),
            );
            return finish(out);
        }
        // The deadline runs from here: preparing the code counts against it.
        let deadline = tokio::time::Instant::now() + limits.timeout;
        let prepared =
            match prepare::prepare(language, &req.code, deadline, session.is_some()).await {
                Ok(p) => p,
                Err(NotPrepared::Syntax(e)) => {
                    out.error = Some(RunError::Syntax(e).info());
                    return finish(out);
                }
                Err(NotPrepared::Unavailable(e)) => {
                    out.error = Some(RunError::Internal(e).info());
                    return finish(out);
                }
                Err(NotPrepared::Deadline) => {
                    out.error = Some(RunError::timeout(limits.timeout).info());
                    return finish(out);
                }
            };
        // Checked before any worker starts or tool is called, against the tools this
        // request may call.
        // The allowedTools of the executions above a nested one hold for it too.
        let within = ctx
            .nested
            .as_ref()
            .map(|n| n.within.clone())
            .unwrap_or_default();
        let allowlist = || {
            self.policy
                .allowlist(req.allowed_tools.clone())
                .within(within.clone())
        };
        if self.checkers.wanted(req.check) {
            let allow = allowlist();
            let servers =
                crate::check::servers_for(&self.catalog, &allow, &req.code, deadline.into_std())
                    .await;
            if let Err(e) = self
                .checkers
                .check(
                    match language {
                        Language::JavaScript => crate::check::Language::TypeScript,
                        Language::Python => crate::check::Language::Python,
                    },
                    &req.code,
                    &servers,
                    deadline.into_std(),
                    session.is_some(),
                )
                .await
            {
                out.error = Some(RunError::Check(e).info());
                return finish(out);
            }
        }
        // Files and network: what the request asks, within the configured ceiling.
        let grant = match &req.permissions {
            None => Grant::default(),
            Some(asked) => match access::grant(&self.policy.access, asked) {
                Ok(g) => g,
                Err(e) => {
                    out.error = Some(RunError::Policy(e).info());
                    return finish(out);
                }
            },
        };
        let pool = match self.pool(language).await {
            Ok(p) => p,
            Err(e) => {
                out.error = Some(e.info());
                return finish(out);
            }
        };
        if language == Language::Python && python::uses_asyncio(&req.code) {
            pool.prefer_warm();
        }
        // Outside a session, a write grant is a fresh workspace of this run's own, deleted
        // when it ends (a session has its workspace already).
        let run_workspace = match (grant.write, session) {
            (true, None) => match self.live.sessions().run_workspace(&ctx.execution) {
                Ok(w) => Some(w),
                Err(e) => {
                    out.error = Some(RunError::RunWorkspace(e).info());
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
                .then(|| sessions::WORKSPACE_MOUNT.to_string()),
            net: !grant.net.is_empty(),
        });
        // A skill draws from its caller's ledger; a request starts its own.
        let ledger = match &ctx.nested {
            Some(n) => n.ledger.clone(),
            None => Arc::new(Ledger::new(
                &limits,
                ctx.tool_calls.clone(),
                self.max_concurrent_skills,
            )),
        };
        let mut scope = RunScope::new(
            ctx,
            ScopeParts {
                allow: allowlist(),
                limits,
                policy: self.policy.clone(),
                deadline: deadline.into_std(),
                session: session.cloned(),
                remembered: self.remembered.clone(),
                llm_enabled: req.enable_sampling || self.policy.llm.enabled,
                fetch: FetchState::new(Arc::new(grant), self.fetch_clients.clone()),
                inherit: Inherit {
                    allowed_tools: req.allowed_tools.clone(),
                    within: within.clone(),
                    limits: req.limits,
                    permissions: req.permissions.clone(),
                    long_run: req.long_run,
                    enable_sampling: req.enable_sampling,
                },
                ledger,
            },
        );
        scope.code = Some(Arc::from(req.code.as_str()));
        // The user's PreExecute hooks judge the run before any worker is leased; their time
        // is the run's.
        let lang = match language {
            Language::JavaScript => "typescript",
            Language::Python => "python",
        };
        if let Err(reason) =
            crate::host::hooks::before_run(&scope, &self.catalog, lang, &req.code).await
        {
            out.error = Some(RunError::Hook(reason.to_string()).info());
            return finish(out);
        }
        let tools = self.bindings(&scope).await;
        // Output past the answer's cap is still wanted, up to the file's own cap, when it
        // can be kept: for the request's own output (a skill's output goes to its caller's
        // code, which the agent reads through the caller's answer; no file of its own).
        let spill = self
            .policy
            .scratch
            .as_ref()
            .filter(|_| limits.max_output_file_bytes > 0 && ctx.nested.is_none())
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
            args: req.args.clone(),
        };
        let run = match encode(&HostFrame::Run(run)) {
            Ok(bytes) => bytes,
            Err(e) => {
                out.error = Some(RunError::Internal(format!("cannot encode the run: {e}")).info());
                return finish(out);
            }
        };
        // Data paths alone, outside a session: a worker of the warm pool whose view holds
        // exactly them (`worker::grants`).
        let grant_pool = (session.is_none() && files.workspace.is_none() && !files.data.is_empty())
            .then(|| {
                self.grant_pools
                    .pool_for(pool, &GrantPools::key(&files.data))
            });
        let no_files = Files::default();
        let (pool, lease_files) = match &grant_pool {
            Some(p) => (p, &no_files),
            None => (pool, &files),
        };
        let mut before = workspace::Usage::default();
        let mut lease = match tokio::time::timeout_at(
            deadline,
            Lease::take(
                pool,
                session,
                &run,
                self.live.sessions(),
                ctx,
                &mut before,
                lease_files,
            ),
        )
        .await
        {
            Ok(Ok(lease)) => lease,
            Ok(Err(e)) => {
                out.error = Some(e.info());
                return finish(out);
            }
            Err(_) => {
                out.error = Some(RunError::timeout(limits.timeout).info());
                return finish(out);
            }
        };
        out.session = session.map(|s| SessionInfo {
            id: s.id.clone(),
            created: false,
            state_lost: lease.state_lost.take(),
            ended: None,
        });
        // Lines kept take from the request's output budget, which its skills share.
        let mut logs =
            LogCollector::new(limits.max_log_bytes, spill).sharing(scope.ledger.output.clone());
        // Lines of a run that outlives its request are read while it runs (`wait`, tasks).
        if req.long_run {
            logs = logs.mirrored(ctx.events.clone());
        }
        logs = logs.tokenised(scope.pii_exit.clone());
        let ended = {
            let host = RunHost::new(&self.catalog, &scope, self);
            let run = drive(&mut lease.worker, &host, &mut logs);
            let clock = scope.clock.clone();
            let watched = session.map(|s| &s.workspace).or(files.workspace.as_ref());
            match watched {
                None => until(&clock, run).await,
                Some(dir) => {
                    let quota = workspace::watch(dir, self.live.sessions().limits(), before);
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
        // The request's usage: its skills' calls are in it. A nested run's: its own and
        // those of the runs under it.
        let llm = match (&ctx.nested, scope.llm_spent.first()) {
            (Some(_), Some(mine)) => mine.usage(),
            _ => scope.ledger.llm.usage(),
        };
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
                        out.error = Some(
                            RunError::Worker(format!(
                                "the result refers to reply {id}, which was not resolved"
                            ))
                            .info(),
                        );
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
                out.error = Some(RunError::Worker(e).info());
            }
            Ok(Err(Failure::Exited)) => {
                out.error = Some(RunError::WorkerCrashed(worker.exit_description().await).info());
            }
            Ok(Err(Failure::Quota(message))) => {
                worker.kill();
                quota_failed = true;
                out.error = Some(RunError::Limit(message).info());
            }
            Err(_) => {
                worker.kill();
                out.error = Some(RunError::timeout(limits.timeout).info());
            }
        }
        // A session run that ended well may still leave its workspace over the quota.
        let watched = session.map(|s| &s.workspace).or(files.workspace.as_ref());
        if let (Some(dir), Some(_)) = (watched, reusable)
            && let Some(over) = workspace::verdict_after(
                workspace::measure(dir, self.live.sessions().limits(), Some(before)).await,
                before,
                self.live.sessions().limits(),
                out.error.as_ref(),
            )
        {
            out.result = Value::Null;
            quota_failed = true;
            out.error = Some(RunError::Limit(over).info());
        }
        // A measured session workspace gets back what the failed run wrote, so failed runs
        // cannot add up; its worker (whose threads may still write) is stopped first.
        if let (true, Some(s), Some(e)) = (quota_failed, session, out.error.as_mut())
            && let Some(note) = workspace::take_back(&mut lease.worker, &s.workspace, before).await
        {
            reusable = None;
            e.message.push_str(&note);
        }
        // A session's worker the code left threads or processes running in is stopped with
        // this execution: they must neither act under the next execution's grants nor outlive
        // this one's deadline. Read from the host's /proc, which code cannot fake.
        if let (Some(_), Some(_)) = (session, reusable)
            && let Some(left) = lease.worker.leftovers_settled().await
        {
            let why = format!(
                "the session's last execution left {left} running when it ended; {}",
                super::lease::RULE
            );
            let note = format!(
                "this execution left {left} running when it ended: the session's worker was \
                 stopped with it, so the session's next execution starts afresh (its variables \
                 are gone; stored values and workspace files stay); {}",
                super::lease::RULE
            );
            out.warning = Some(match out.warning.take() {
                Some(w) => format!("{w}; {note}"),
                None => note,
            });
            lease.retire(why);
        }
        lease.give_back(reusable, &out, self.live.sessions());
        drop(run_workspace);
        let captured = logs.finish();
        out.logs = captured.logs;
        out.output_file = captured.file.map(|p| p.display().to_string());
        pii_exit(&scope, &mut out, &self.policy);
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

    /// The one door (see [`super::door`]): starts the execution `start` describes, as its
    /// mode says. A plain run never fails to start (its refusals are its outcome); a parked
    /// one is refused when its deadline could not be a long run's or there is no room for it.
    pub fn begin(self: &Arc<Self>, start: Start) -> Result<Started, RunError> {
        let Start {
            work,
            context,
            mode,
        } = start;
        let (language, request) = match work {
            Work::Code { language, request } => (language, *request),
            Work::Direct(call) => {
                let Mode::Plain { asks } = mode else {
                    return Err(RunError::Internal(
                        "a direct tool's call is answered plainly, never parked".into(),
                    ));
                };
                let ctx = ExecContext::for_client(
                    context.principal,
                    context.client,
                    &self.policy.long_runs,
                );
                let execution = ctx.execution.clone();
                let runtime = self.clone();
                let mut run = self.spawn(ctx, move |ctx| async move {
                    runtime.run_direct(call, ctx).await
                });
                if let Some(asks) = asks {
                    run = run.with_asks(asks);
                }
                return Ok(Started {
                    execution,
                    run: Run::Waiting(run),
                });
            }
        };
        if matches!(mode, Mode::Parked { .. }) {
            // A deadline the run could not have is said before anything is reserved.
            Limits::configured_long(
                &self.policy.execution,
                &self.policy.long_runs,
                request.timeout_ms,
            )
            .map_err(RunError::Limits)?;
        }
        let ctx =
            ExecContext::for_client(context.principal, context.client, &self.policy.long_runs);
        let execution = ctx.execution.clone();
        let run = match mode {
            Mode::Plain { asks } => {
                let mut run = self.start(language, request, ctx);
                if let Some(asks) = asks {
                    run = run.with_asks(asks);
                }
                Run::Waiting(run)
            }
            Mode::Parked {
                kind,
                asks,
                documents,
            } => Run::Parked(self.start_parked(language, request, ctx, kind, documents, asks)?),
        };
        Ok(Started { execution, run })
    }

    /// Starts an execution of `req` in `language` for `ctx`: the returned handle yields its
    /// outcome, and dropping the handle cancels it.
    fn start(
        self: &Arc<Self>,
        language: Language,
        req: ExecRequest,
        ctx: ExecContext,
    ) -> Execution {
        let runtime = self.clone();
        self.spawn(ctx, move |ctx| async move {
            runtime.run_task(language, req, ctx).await
        })
    }

    /// Runs `run(ctx)` in a task of its own until it ends or `ctx` is cancelled: the
    /// returned handle yields its outcome, and dropping the handle cancels it.
    fn spawn<F, Fut>(&self, ctx: ExecContext, run: F) -> Execution
    where
        F: FnOnce(ExecContext) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ExecOutcome> + Send + 'static,
    {
        let (tx, done) = tokio::sync::oneshot::channel();
        let cancel = ctx.cancel.clone();
        let token = ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                outcome = run(ctx) => {
                    let _ = tx.send(outcome);
                }
                () = token.cancelled() => {}
            }
        });
        Execution::new(done, cancel)
    }

    /// One call of a pinned direct tool (`directTools`): admitted like an execution (its
    /// slot, the client's tool-call rate; not its rate of executions), then the bridge's
    /// call, exactly as code makes it (rules, rate, schema, approval, upstream, audit
    /// line). The deadline is the upstream call timeout, standing still while a person
    /// decides an approval.
    async fn run_direct(&self, call: DirectCall, mut ctx: ExecContext) -> ExecOutcome {
        let started = Instant::now();
        ctx.trace = call.trace.clone();
        let client = ctx.principal.to_string();
        let link = ctx.client.clone();
        let on_wait = move || {
            if let Some(link) = link {
                link.waiting("queued: the server is running its maximum of executions");
            }
        };
        let admitted = match self.policy().admission.admit_call(&client, on_wait).await {
            Ok(a) => a,
            Err(reason) => {
                self.policy().audit.record_now(AuditEvent::RunRefused {
                    client,
                    reason: reason.to_string(),
                });
                return ExecOutcome::refused(RunError::Busy(reason.to_string()).info());
            }
        };
        ctx.tool_rate = Some(admitted.tool_calls.clone());
        let limits = match Limits::configured(&self.policy.execution, None) {
            Ok(l) => l,
            Err(e) => return ExecOutcome::refused(RunError::Limits(e).info()),
        };
        // The upstream's own timeout (which names the server and tool) comes first; this
        // margin only catches a call that outlives it.
        const MARGIN: std::time::Duration = std::time::Duration::from_secs(1);
        let timeout = self.catalog.upstreams().call_timeout(&call.server);
        let scope = RunScope::new(
            &ctx,
            ScopeParts {
                allow: self.policy.allowlist(None),
                limits,
                policy: self.policy.clone(),
                deadline: Instant::now() + timeout + MARGIN,
                session: None,
                remembered: self.remembered.clone(),
                llm_enabled: false,
                fetch: FetchState::new(Arc::new(Grant::default()), self.fetch_clients.clone()),
                inherit: Inherit::default(),
                ledger: Arc::new(Ledger::new(
                    &limits,
                    ctx.tool_calls.clone(),
                    self.max_concurrent_skills,
                )),
            },
        );
        let called = until(
            &scope.clock,
            bridge::call_direct(&self.catalog, &scope, &call.server, &call.tool, call.args),
        )
        .await;
        let mut out = ExecOutcome::refused(
            RunError::CallTimeout {
                timeout_ms: timeout.as_millis(),
            }
            .info(),
        );
        match called {
            Ok(Ok(result)) => {
                out.error = None;
                out.upstream = Some(Box::new(result));
            }
            Ok(Err(error)) => out.error = Some(error),
            Err(()) => {}
        }
        out.tool_calls = ctx.tool_calls.load(Ordering::Relaxed);
        out.duration_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1e3;
        // The call's line is on disk before the client has the answer, as an execution's
        // lines are with its run.end.
        self.policy().audit.flush();
        drop(admitted);
        out
    }

    /// Starts a long run whose handle is parked (see [`parked`]): the entry is
    /// reserved before anything runs, so a client over its limits is refused at once; the
    /// execution's outcome is kept there when it ends. The handle is handed out by
    /// [`parked::Parked::publish_as`].
    fn start_parked(
        self: &Arc<Self>,
        language: Language,
        mut req: ExecRequest,
        ctx: ExecContext,
        kind: Kind,
        documents: bool,
        asks: Option<tokio::sync::mpsc::Receiver<Ask>>,
    ) -> Result<String, ParkError> {
        req.long_run = true;
        let limits = &self.policy().long_runs;
        let duration =
            std::time::Duration::from_millis(req.timeout_ms.unwrap_or(limits.default_duration_ms));
        let handle = self.live.parked().reserve(kind, duration, &ctx)?;
        if documents {
            self.live.parked().started_by_documents_name(&handle);
        }
        let mut execution = self.start(language, req, ctx);
        if let Some(asks) = asks {
            execution = execution.with_asks(asks);
        }
        let runtime = Arc::downgrade(self);
        let key = handle.clone();
        tokio::spawn(async move {
            // Questions (a task of a 2026-07-28 client) wait on the entry for `tasks/update`.
            let outcome = loop {
                match execution.next().await {
                    Event::Done(outcome) => break *outcome,
                    Event::Asks(asks) => match runtime.upgrade() {
                        Some(rt) => rt.live().parked().ask(&key, asks),
                        None => return,
                    },
                }
            };
            if let Some(rt) = runtime.upgrade() {
                rt.live().parked().finish(&key, outcome);
            }
        });
        Ok(handle)
    }

    /// The whole life of one execution (see the module docs).
    async fn run_task(
        &self,
        language: Language,
        mut req: ExecRequest,
        mut ctx: ExecContext,
    ) -> ExecOutcome {
        let audit = &self.policy().audit;
        let mut span = ExecSpan::start(language, &req, &ctx);
        ctx.trace = span.0.context().cloned();
        let client = ctx.principal.to_string();
        let link = ctx.client.clone();
        let on_wait = move || {
            if let Some(link) = link {
                link.waiting("queued: the server is running its maximum of executions");
            }
        };
        let admitted = match self.policy().admission.admit(&client, on_wait).await {
            Ok(a) => a,
            Err(reason) => {
                audit.record_now(AuditEvent::RunRefused {
                    client,
                    reason: reason.to_string(),
                });
                return span.end(ExecOutcome::refused(
                    RunError::Busy(reason.to_string()).info(),
                ));
            }
        };
        ctx.tool_rate = Some(admitted.tool_calls.clone());
        let asked_session = match (&req.session, req.reset) {
            (_, true) => "reset",
            (None, false) => "none",
            (Some(SessionArg::New), false) => "new",
            (Some(SessionArg::Existing(_)), false) => "existing",
        };
        span.0.set("code_executor.session", asked_session);
        let (session, mut info) = match self.resolve_session(language, &mut req, &ctx) {
            Ok(s) => s,
            Err(e) => return span.end(ExecOutcome::refused(RunError::Session(e).info())),
        };
        audit.record(AuditEvent::RunStart {
            execution: ctx.execution.clone(),
            client,
            language: language.tool_language(),
            code_sha256: sha256_hex(req.code.as_bytes()),
            code_bytes: req.code.len(),
            allowed_tools: req.allowed_tools.clone(),
            session: session.as_ref().map(|s| s.id.clone()),
            skill: None,
            parent: None,
        });
        let mut end = RunEnd {
            audit,
            execution: Some(ctx.execution.clone()),
            started: Instant::now(),
            tool_calls: ctx.tool_calls.clone(),
        };
        let _in_use = session.as_ref().map(Session::in_use);
        let mut outcome = self.execute(language, &req, &ctx, session.as_ref()).await;
        if let Some(info) = info.as_mut() {
            info.state_lost = outcome.session.take().and_then(|run| run.state_lost);
            outcome.session = Some(info.clone());
        }
        end.write(&outcome);
        drop(admitted);
        span.end(outcome)
    }

    /// The session `req` asked for, and what the answer says about it. `reset` ends the named
    /// session here; the code then runs outside any session.
    fn resolve_session(
        &self,
        language: Language,
        req: &mut ExecRequest,
        ctx: &ExecContext,
    ) -> Result<(Option<Arc<Session>>, Option<SessionInfo>), SessionError> {
        let audit = &self.policy().audit;
        let sessions = self.live.sessions();
        match (req.session.take(), req.reset) {
            (None, false) => Ok((None, None)),
            (None | Some(SessionArg::New), true) => Err(SessionError::ResetWithoutHandle),
            (Some(SessionArg::Existing(id)), true) => {
                sessions.get(&ctx.principal, &id, language)?;
                sessions.end(&id, EndReason::Reset, audit);
                Ok((
                    None,
                    Some(SessionInfo {
                        id,
                        created: false,
                        state_lost: None,
                        ended: Some(EndReason::Reset.as_str()),
                    }),
                ))
            }
            (Some(SessionArg::New), false) => {
                let s = sessions.create(&ctx.principal, language, audit)?;
                let info = SessionInfo {
                    id: s.id.clone(),
                    created: true,
                    state_lost: None,
                    ended: None,
                };
                Ok((Some(s), Some(info)))
            }
            (Some(SessionArg::Existing(id)), false) => {
                let s = sessions.get(&ctx.principal, &id, language)?;
                Ok((Some(s), None))
            }
        }
    }
}

impl Nested for Runtime {
    fn skills(&self) -> &Skills {
        &self.skills
    }

    fn run_nested<'a>(
        &'a self,
        scope: &'a RunScope,
        run: NestedRun,
    ) -> futures::future::BoxFuture<'a, ExecOutcome> {
        Box::pin(async move {
            let inherit = &scope.inherit;
            let depth = scope.depth + 1;
            // A worker of the request's nested runs (`SkillSlots`): past the cap, the run
            // waits for one. The wait is the caller's time: the caller's deadline ends it with
            // the caller's run (its `TimeoutError`), which drops this future and leaves the
            // queue.
            let _slot = scope.ledger.skills.take(depth).await;
            // What is left of the caller's time, to the millisecond (at least one), and a
            // grace: the caller's deadline governs (its run's `TimeoutError`, which drops this
            // one), so the two never race to end the caller with the nested run's error
            // instead.
            const DEADLINE_GRACE: std::time::Duration = std::time::Duration::from_millis(250);
            let left = scope
                .clock
                .deadline()
                .saturating_duration_since(Instant::now());
            let most = if inherit.long_run {
                self.policy.long_runs.max_duration_ms
            } else {
                self.policy.execution.max_timeout_ms
            };
            let NestedRun {
                language,
                code,
                what,
            } = run;
            let mut timeout_ms = ((left + DEADLINE_GRACE).as_millis() as u64)
                .min(most)
                .max(1);
            // A skill runs under its caller's allowedTools; code given to an execute tool
            // under its own, inside its caller's (and theirs).
            let mut within = inherit.within.clone();
            let (skill, args, allowed_tools, limits, enable_sampling, check) = match what {
                NestedWhat::Skill { name, args } => (
                    Some(name),
                    Some(args),
                    inherit.allowed_tools.clone(),
                    inherit.limits,
                    inherit.enable_sampling,
                    // A skill was saved to be run: it is not checked at each call.
                    Some(false),
                ),
                NestedWhat::Code {
                    allowed_tools,
                    limits,
                    timeout_ms: asked,
                    enable_sampling,
                    check,
                } => {
                    within.extend(inherit.allowed_tools.clone());
                    if let Some(asked) = asked {
                        timeout_ms = timeout_ms.min(asked.max(1));
                    }
                    (None, None, allowed_tools, limits, enable_sampling, check)
                }
            };
            let req = ExecRequest {
                code,
                timeout_ms: Some(timeout_ms),
                allowed_tools,
                limits,
                session: None,
                reset: false,
                long_run: inherit.long_run,
                enable_sampling,
                permissions: inherit.permissions.clone(),
                trace: scope.trace.clone(),
                args,
                check,
            };
            let mut ctx = ExecContext::new(scope.principal.clone());
            ctx.tool_rate = scope.tool_rate.clone();
            // The nested run's tool calls count against the caller's cap.
            ctx.tool_calls = scope.tool_calls.clone();
            ctx.client = scope.client.clone();
            ctx.trace = scope.trace.clone();
            ctx.nested = Some(NestedOf {
                depth,
                within,
                vault: scope.pii.clone(),
                ledger: scope.ledger.clone(),
                llm_spent: scope.llm_spent.clone(),
            });
            let audit = &self.policy.audit;
            audit.record(AuditEvent::RunStart {
                execution: ctx.execution.clone(),
                client: ctx.principal.to_string(),
                language: language.tool_language(),
                code_sha256: sha256_hex(req.code.as_bytes()),
                code_bytes: req.code.len(),
                allowed_tools: req.allowed_tools.clone(),
                session: None,
                skill,
                parent: Some(scope.execution.clone()),
            });
            let mut end = RunEnd {
                audit,
                execution: Some(ctx.execution.clone()),
                started: Instant::now(),
                tool_calls: ctx.tool_calls.clone(),
            };
            let outcome = self.execute(language, &req, &ctx, None).await;
            end.write(&outcome);
            outcome
        })
    }

    fn vitals(&self) -> futures::future::BoxFuture<'_, Value> {
        Box::pin(Runtime::vitals(self))
    }
}

/// Runs `fut` until the execution's deadline, which stands still while the execution waits
/// for a person (`Err` when the deadline came first).
async fn until<T>(clock: &Clock, fut: impl std::future::Future<Output = T>) -> Result<T, ()> {
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

/// Ends idle sessions in the background, as long as the runtime lives.
pub fn end_idle_sessions(runtime: Weak<Runtime>) {
    let Some(rt) = runtime.upgrade() else {
        return;
    };
    let period = (rt.live().sessions().limits().idle_timeout() / 4).clamp(
        std::time::Duration::from_millis(200),
        std::time::Duration::from_secs(30),
    );
    drop(rt);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(rt) = runtime.upgrade() else {
                return;
            };
            rt.live().sessions().end_idle(&rt.policy().audit);
        }
    });
}

/// Drops expired results every few seconds, so their memory goes even when nobody asks;
/// stops with the runtime.
pub fn sweep_periodically(runtime: Weak<Runtime>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(parked::SWEEP_EVERY);
        loop {
            tick.tick().await;
            let Some(rt) = runtime.upgrade() else {
                return;
            };
            rt.live().parked().sweep_now();
        }
    });
}
