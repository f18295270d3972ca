//! One run ([`Runtime::execute`]), as named phases: the request's limits, the code
//! prepared and checked, the grant and the run's scope, the hooks, a worker leased, the
//! drive against the host side, and what the ending leaves to settle (the workspace's quota,
//! leftovers in a session's worker, the worker given back, personal data out of the answer).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use serde_json::Value;
use worker_protocol::{
    AccessInfo, EngineLimits, HostFrame, RunOutcome, RunRequest, ToolBinding, encode,
};

use super::state::Runtime;
use super::until::until;
use crate::error::RunError;
use crate::host::bridge::RunHost;
use crate::host::net::FetchState;
use crate::host::scope::{Inherit, RunScope, ScopeParts};
use crate::host::skills::NestedEnd;
use crate::lease::{Files, Lease};
use crate::live::sessions::{self, Session};
use crate::outcome::{ExecOutcome, SessionInfo, UNSANDBOXED_WARNING};
use crate::run::drive::{Failure, Finished, drive, map_stack};
use crate::run::execution::{ExecContext, ExecRequest};
use crate::run::ledger::Ledger;
use crate::run::output::{LogCollector, Spill};
use crate::run::prepare::{self, NotPrepared};
use crate::worker::grants::GrantPools;
use crate::worker::pool::Pool;
use crate::worker::python::{self};
use crate::worker::{Language, workspace};
use policy::access::{self, Grant};
use policy::audit::AuditEvent;
use policy::{Decision, Limits, Policy};

/// A run with its worker: the lease, the workspace's usage before it, the stripped source's
/// map (for stack traces) and the workspace whose quota is watched.
struct Leased<'a, 'w> {
    lease: Lease<'a>,
    before: workspace::Usage,
    stripped: Option<js_worker::Stripped>,
    watched: Option<&'w std::path::PathBuf>,
}

impl Runtime {
    /// One run in `language`, in a pooled worker or in `session`'s. Never fails: every problem
    /// is an outcome with `error`. Dropping the future stops the run (its worker is killed).
    ///
    /// The phases, in order: [`Runtime::limits_for`] (the request's limits and code size),
    /// preparing the code, [`Runtime::check_types`], the grant and the run's scope
    /// ([`Runtime::scope_for`]), the user's `PreExecute` hooks, the frame that starts the run
    /// ([`Runtime::run_frame`]), a worker leased ([`Runtime::lease_for`]), the drive against
    /// the host side ([`Runtime::drive_to_end`]) and what its end leaves to settle
    /// ([`Runtime::settle`]). Each phase before the drive either succeeds or is the outcome's
    /// error; the drive's end is always settled.
    pub async fn execute(
        &self,
        language: Language,
        req: &ExecRequest,
        ctx: &ExecContext,
        session: Option<&Arc<Session>>,
    ) -> ExecOutcome {
        self.execute_ended(language, req, ctx, session)
            .await
            .outcome
    }

    /// [`Runtime::execute`], with why the run itself failed when it did (refused, stopped,
    /// crashed), typed: what a run nested in another tells its caller's code
    /// ([`crate::host::skills::NestedEnd`]). The outcome's `error` is the same failure as the
    /// answer carries it, or the code's own exception.
    pub(crate) async fn execute_ended(
        &self,
        language: Language,
        req: &ExecRequest,
        ctx: &ExecContext,
        session: Option<&Arc<Session>>,
    ) -> NestedEnd {
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
        let failure = match self.run_phases(language, req, ctx, session, &mut out).await {
            Ok(failure) => failure,
            Err(e) => {
                out.error = Some(e.info());
                Some(e)
            }
        };
        out.duration_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1e3;
        NestedEnd {
            outcome: out,
            failure,
        }
    }

    /// [`Runtime::execute`]'s phases; an `Err` is a refusal before the drive, which the
    /// outcome carries as its error; `Ok(Some(_))` a drive that failed (already in `out`).
    async fn run_phases(
        &self,
        language: Language,
        req: &ExecRequest,
        ctx: &ExecContext,
        session: Option<&Arc<Session>>,
        out: &mut ExecOutcome,
    ) -> Result<Option<RunError>, RunError> {
        let limits = self.limits_for(req)?;
        // The deadline runs from here: preparing the code counts against it.
        let deadline = tokio::time::Instant::now() + limits.timeout;
        let prepared = prepare::prepare(language, &req.code, deadline, session.is_some())
            .await
            .map_err(|e| match e {
                NotPrepared::Syntax(e) => RunError::Syntax(e),
                NotPrepared::Unavailable(e) => RunError::Internal(e),
                NotPrepared::Deadline => RunError::timeout(limits.timeout),
            })?;
        // The allowedTools of the executions above a nested one hold for it too.
        let within = ctx
            .nested
            .as_ref()
            .map(|n| n.within.clone())
            .unwrap_or_default();
        self.check_types(language, req, &within, deadline, session)
            .await?;
        // Files and network: what the request asks, within the configured ceiling.
        let grant = match &req.permissions {
            None => Grant::default(),
            Some(asked) => access::grant(&self.policy.access, asked).map_err(RunError::Policy)?,
        };
        let pool = self.pool(language).await?;
        if language == Language::Python && python::uses_asyncio(&req.code) {
            pool.prefer_warm();
        }
        // Outside a session, a write grant is a fresh workspace of this run's own, deleted
        // when it ends (a session has its workspace already).
        let run_workspace = match (grant.write, session) {
            (true, None) => Some(
                self.live
                    .sessions()
                    .run_workspace(&ctx.execution)
                    .map_err(RunError::RunWorkspace)?,
            ),
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
        let scope = self.scope_for(req, ctx, session, limits, deadline, grant, within);
        // The user's PreExecute hooks judge the run before any worker is leased; their time
        // is the run's.
        let lang = match language {
            Language::JavaScript => "typescript",
            Language::Python => "python",
        };
        crate::host::hooks::before_run(&scope, &self.catalog, lang, &req.code)
            .await
            .map_err(|reason| RunError::Hook(reason.to_string()))?;
        let (run, spill) = self
            .run_frame(
                req,
                ctx,
                &scope,
                prepared.code,
                access_info,
                session.is_some(),
            )
            .await?;
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
        let lease = self
            .lease_for(
                pool,
                session,
                &run,
                ctx,
                &mut before,
                lease_files,
                (deadline, scope.limits.timeout),
            )
            .await?;
        let watched = session.map(|s| &s.workspace).or(files.workspace.as_ref());
        let run = Leased {
            lease,
            before,
            stripped: prepared.stripped,
            watched,
        };
        let failure = self
            .drive_and_settle(req, ctx, session, &scope, spill, run, out)
            .await;
        drop(run_workspace);
        Ok(failure)
    }

    /// The request's limits (the configured ones, narrowed by what it asks; a long run's
    /// when it is one), and its code within the size allowed.
    fn limits_for(&self, req: &ExecRequest) -> Result<Limits, RunError> {
        let configured = if req.long_run {
            Limits::configured_long(
                &self.policy.execution,
                &self.policy.long_runs,
                req.timeout_ms,
            )
        } else {
            Limits::configured(&self.policy.execution, req.timeout_ms)
        };
        let limits = configured
            .and_then(|l| l.narrowed(&req.limits))
            .map_err(RunError::Limits)?;
        let max_code_bytes = self.policy.execution.max_code_bytes;
        if req.code.len() > max_code_bytes {
            return Err(RunError::Range(format!(
                "the code is {} bytes; the limit is {max_code_bytes}",
                req.code.len()
            )));
        }
        Ok(limits)
    }

    /// `check: true`: the code type-checked before any worker starts or tool is called,
    /// against the tools this request may call.
    async fn check_types(
        &self,
        language: Language,
        req: &ExecRequest,
        within: &[Vec<String>],
        deadline: tokio::time::Instant,
        session: Option<&Arc<Session>>,
    ) -> Result<(), RunError> {
        if !self.checkers.wanted(req.check) {
            return Ok(());
        }
        let allow = self
            .policy
            .allowlist(req.allowed_tools.clone())
            .within(within.to_vec());
        let servers =
            crate::check::servers_for(&self.catalog, &allow, &req.code, deadline.into_std()).await;
        self.checkers
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
            .map_err(RunError::Check)
    }

    /// The run's scope: what the host side answers its requests with (allowlist, limits,
    /// grant, session, the request's ledger, what nested runs inherit).
    #[expect(
        clippy::too_many_arguments,
        reason = "the parts a run's scope is made of, each decided by an earlier phase"
    )]
    fn scope_for(
        &self,
        req: &ExecRequest,
        ctx: &ExecContext,
        session: Option<&Arc<Session>>,
        limits: Limits,
        deadline: tokio::time::Instant,
        grant: Grant,
        within: Vec<Vec<String>>,
    ) -> RunScope {
        // A skill draws from its caller's ledger; a request starts its own.
        let ledger = match &ctx.nested {
            Some(n) => n.ledger.clone(),
            None => Arc::new(Ledger::new(
                &limits,
                ctx.tool_calls.clone(),
                self.max_concurrent_skills,
                ctx.calls.clone(),
            )),
        };
        let mut scope = RunScope::new(
            ctx,
            ScopeParts {
                allow: self
                    .policy
                    .allowlist(req.allowed_tools.clone())
                    .within(within.clone()),
                limits,
                policy: self.policy.clone(),
                deadline: deadline.into_std(),
                session: session.cloned(),
                remembered: self.remembered.clone(),
                llm_enabled: req.enable_sampling || self.policy.llm.enabled,
                fetch: FetchState::new(Arc::new(grant), self.fetch_clients.clone()),
                inherit: Inherit {
                    allowed_tools: req.allowed_tools.clone(),
                    within,
                    limits: req.limits,
                    permissions: req.permissions.clone(),
                    long_run: req.long_run,
                    enable_sampling: req.enable_sampling,
                },
                ledger,
            },
        );
        scope.code = Some(Arc::from(req.code.as_str()));
        scope
    }

    /// The frame that starts the run in a worker, and where output past the answer's cap goes.
    async fn run_frame(
        &self,
        req: &ExecRequest,
        ctx: &ExecContext,
        scope: &RunScope,
        code: String,
        access: Option<AccessInfo>,
        persist: bool,
    ) -> Result<(Vec<u8>, Option<Spill>), RunError> {
        let limits = &scope.limits;
        let tools = self.bindings(scope).await;
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
            code,
            tools,
            limits: EngineLimits {
                memory_bytes: limits.memory_bytes,
                stack_bytes: limits.stack_bytes,
                max_log_bytes: worker_log_bytes,
            },
            persist,
            access,
            args: req.skill.as_ref().map(|s| s.args.clone()),
            seed: Some(scope.ledger.calls.run_seed()),
        };
        let frame = encode(&HostFrame::Run(run))
            .map_err(|e| RunError::Internal(format!("cannot encode the run: {e}")))?;
        Ok((frame, spill))
    }

    /// A worker for the run, within its deadline: a pooled one (of `pool`), or the session's.
    #[expect(
        clippy::too_many_arguments,
        reason = "what a lease is taken with, each decided by an earlier phase"
    )]
    async fn lease_for<'a>(
        &self,
        pool: &'a Pool,
        session: Option<&'a Arc<Session>>,
        run: &[u8],
        ctx: &ExecContext,
        before: &mut workspace::Usage,
        files: &'a Files,
        (deadline, timeout): (tokio::time::Instant, std::time::Duration),
    ) -> Result<Lease<'a>, RunError> {
        match tokio::time::timeout_at(
            deadline,
            Lease::take(pool, session, run, self.live.sessions(), ctx, before, files),
        )
        .await
        {
            Ok(lease) => lease,
            Err(_) => Err(RunError::timeout(timeout)),
        }
    }

    /// The drive against the host side until the run ends (within its deadline, and in a
    /// workspace within its quota), then what its end leaves to settle: its outcome recorded,
    /// the workspace's quota, what a session's worker left running, the worker given back,
    /// the output collected, personal data out of the answer.
    #[expect(
        clippy::too_many_arguments,
        reason = "the run's request, context and scope, and what the earlier phases made"
    )]
    async fn drive_and_settle(
        &self,
        req: &ExecRequest,
        ctx: &ExecContext,
        session: Option<&Arc<Session>>,
        scope: &RunScope,
        spill: Option<Spill>,
        run: Leased<'_, '_>,
        out: &mut ExecOutcome,
    ) -> Option<RunError> {
        let Leased {
            mut lease,
            before,
            stripped,
            watched,
        } = run;
        let limits = &scope.limits;
        out.session = session.map(|s| SessionInfo {
            id: s.id.clone(),
            created: false,
            state_lost: lease.state_lost.take(),
            ended: None,
            replayed: None,
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
            let host = RunHost::new(&self.catalog, scope, self);
            let run = drive(&mut lease.worker, &host, &mut logs);
            let clock = scope.clock.clone();
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
        // Why the run failed, when the host ended it (the code's own exception is `out.error`).
        let mut failure = None;
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
                        failure = Some(RunError::Worker(format!(
                            "the result refers to reply {id}, which was not resolved"
                        )));
                    }
                    RunOutcome::Err { mut error } => {
                        if let Some(stripped) = &stripped {
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
                failure = Some(RunError::Worker(e));
            }
            Ok(Err(Failure::Exited)) => {
                failure = Some(RunError::WorkerCrashed(worker.exit_description().await));
            }
            Ok(Err(Failure::Quota(message))) => {
                worker.kill();
                quota_failed = true;
                failure = Some(RunError::Limit(message));
            }
            Err(_) => {
                worker.kill();
                failure = Some(RunError::timeout(limits.timeout));
            }
        }
        // A session run that ended well may still leave its workspace over the quota.
        if let (Some(dir), Some(_)) = (watched, reusable)
            && let Some(over) = workspace::verdict_after(
                workspace::measure(dir, self.live.sessions().limits(), Some(before)).await,
                before,
                self.live.sessions().limits(),
                failure
                    .as_ref()
                    .map(RunError::info)
                    .or(out.error.clone())
                    .as_ref(),
            )
        {
            out.result = Value::Null;
            quota_failed = true;
            failure = Some(RunError::Limit(over));
        }
        // A measured session workspace gets back what the failed run wrote, so failed runs
        // cannot add up; its worker (whose threads may still write) is stopped first.
        if let (true, Some(s), Some(RunError::Limit(message))) =
            (quota_failed, session, &mut failure)
            && let Some(note) = workspace::take_back(&mut lease.worker, &s.workspace, before).await
        {
            reusable = None;
            message.push_str(&note);
        }
        if let Some(f) = &failure {
            out.error = Some(f.info());
        }
        // A session's worker the code left threads or processes running in is stopped with
        // this execution: they must neither act under the next execution's grants nor outlive
        // this one's deadline. Read from the host's /proc, which code cannot fake.
        if let (Some(_), Some(_)) = (session, reusable)
            && let Some(left) = lease.worker.leftovers_settled().await
        {
            let why = format!(
                "the session's last execution left {left} running when it ended; {}",
                crate::lease::RULE
            );
            let note = format!(
                "this execution left {left} running when it ended: the session's worker was \
                 stopped with it, so the session's next execution starts afresh (its variables \
                 are gone; stored values and workspace files stay); {}",
                crate::lease::RULE
            );
            out.warning = Some(match out.warning.take() {
                Some(w) => format!("{w}; {note}"),
                None => note,
            });
            lease.retire(why);
        }
        lease.give_back(reusable, out, self.live.sessions());
        let captured = logs.finish();
        out.logs = captured.logs;
        out.output_file = captured.file.map(|p| p.display().to_string());
        pii_exit(scope, out, &self.policy);
        failure
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
