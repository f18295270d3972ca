//! The one door ([`Runtime::begin`]): an execution started as its mode says, in a task of
//! its own (admission, session, audit lines), a pinned direct tool's call, parked runs.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::state::Runtime;
use super::until::until;
use crate::door::{DirectCall, Mode, Run, Start, Started, Work};
use crate::error::RunError;
use crate::host::bridge::{self};
use crate::host::net::FetchState;
use crate::host::scope::{Inherit, RunScope, ScopeParts};
use crate::host::skills;
use crate::live::parked::{Kind, ParkError};
use crate::live::sessions::{EndReason, Session, SessionError};
use crate::outcome::{Called, ExecOutcome, LogEntry, Outcome, SessionInfo};
use crate::run::client::Ask;
use crate::run::execution::{
    Event, ExecContext, ExecRequest, ExecSpan, Execution, RunEnd, SessionArg, SkillRun,
};
use crate::run::ledger::Ledger;
use crate::run::output::HOST_LEVEL;
use crate::worker::Language;
use policy::Limits;
use policy::access::Grant;
use policy::audit::{AuditEvent, sha256_hex};

/// What starts run `req` of `ctx` again after a restart (`crate::live::durable::Resume`).
pub(super) fn resume_of(
    language: Language,
    req: &ExecRequest,
    ctx: &ExecContext,
) -> crate::live::durable::Resume {
    crate::live::durable::Resume {
        language: language.tool_language().to_string(),
        code: req.code.clone(),
        timeout_ms: req.timeout_ms,
        allowed_tools: req.allowed_tools.clone(),
        limits: req.limits,
        enable_sampling: req.enable_sampling,
        permissions: req.permissions.clone(),
        seed: ctx.calls.seed(),
    }
}

/// What a started execution runs: code in a language, or a saved skill, whose language is
/// its own (found when the run starts).
pub(super) enum Runnable {
    Code(Language),
    Skill {
        name: String,
        args: serde_json::Value,
    },
}

impl Runtime {
    /// The one door (see [`crate::door`]): starts the execution `start` describes, as its
    /// mode says. A plain run never fails to start (its refusals are its outcome); a parked
    /// one is refused when its deadline could not be a long run's or there is no room for it.
    pub fn begin(self: &Arc<Self>, start: Start) -> Result<Started, RunError> {
        let Start {
            work,
            context,
            mode,
        } = start;
        let (what, request) = match work {
            Work::Code { language, request } => (Runnable::Code(language), *request),
            Work::Skill {
                name,
                args,
                request,
            } => (Runnable::Skill { name, args }, *request),
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
                    Outcome::Called(runtime.run_direct(call, ctx).await)
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
                let mut run = self.start(what, request, ctx);
                if let Some(asks) = asks {
                    run = run.with_asks(asks);
                }
                Run::Waiting(run)
            }
            Mode::Parked {
                kind,
                asks,
                documents,
            } => Run::Parked(self.start_parked(what, request, ctx, kind, documents, asks)?),
        };
        Ok(Started { execution, run })
    }

    /// Starts an execution of `what` for `ctx`: the returned handle yields its outcome, and
    /// dropping the handle cancels it.
    pub(super) fn start(
        self: &Arc<Self>,
        what: Runnable,
        req: ExecRequest,
        ctx: ExecContext,
    ) -> Execution {
        let runtime = self.clone();
        self.spawn(ctx, move |ctx| async move {
            Outcome::Ran(runtime.run_task(what, req, ctx).await)
        })
    }

    /// Runs `run(ctx)` in a task of its own until it ends or `ctx` is cancelled: the
    /// returned handle yields its outcome, and dropping the handle cancels it.
    fn spawn<F, Fut>(&self, ctx: ExecContext, run: F) -> Execution
    where
        F: FnOnce(ExecContext) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Outcome> + Send + 'static,
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
    async fn run_direct(&self, call: DirectCall, mut ctx: ExecContext) -> Called {
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
                return Called::refused(RunError::Busy(reason.to_string()).info());
            }
        };
        ctx.tool_rate = Some(admitted.tool_calls.clone());
        let limits = match Limits::configured(&self.policy.execution, None) {
            Ok(l) => l,
            Err(e) => return Called::refused(RunError::Limits(e).info()),
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
                    ctx.calls.clone(),
                )),
            },
        );
        let called = until(
            &scope.clock,
            bridge::call_direct(&self.catalog, &scope, &call.server, &call.tool, call.args),
        )
        .await;
        let out = Called {
            result: match called {
                Ok(Ok(result)) => Ok(Box::new(result)),
                Ok(Err(error)) => Err(error),
                Err(()) => Err(RunError::CallTimeout {
                    timeout_ms: timeout.as_millis(),
                }
                .info()),
            },
            tool_calls: ctx.tool_calls.load(Ordering::Relaxed),
            duration_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
        };
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
        what: Runnable,
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
        if let Runnable::Code(language) = &what
            && req.session.is_none()
        {
            self.live
                .parked()
                .set_resume(&handle, resume_of(*language, &req, &ctx));
        }
        let mut execution = self.start(what, req, ctx);
        if let Some(asks) = asks {
            execution = execution.with_asks(asks);
        }
        self.keep_parked(execution, handle.clone(), None);
        Ok(handle)
    }

    /// Keeps the outcome of parked `execution` under `key` when it ends, and passes its
    /// questions to the entry meanwhile. A replay (`replayed`: its call log) that diverged
    /// ends with that error, whatever the code did with it.
    pub(super) fn keep_parked(
        self: &Arc<Self>,
        mut execution: Execution,
        key: String,
        replayed: Option<Arc<crate::run::calllog::CallLog>>,
    ) {
        let runtime = Arc::downgrade(self);
        tokio::spawn(async move {
            // Questions (a task of a 2026-07-28 client) wait on the entry for `tasks/update`.
            let mut outcome = loop {
                match execution.next().await {
                    // Parked work is code (a direct call is answered plainly).
                    Event::Done(outcome) => break outcome.into_ran(),
                    Event::Asks(asks) => match runtime.upgrade() {
                        Some(rt) => rt.live().parked().ask(&key, asks),
                        None => return,
                    },
                }
            };
            if let Some(diverged) = replayed.and_then(|calls| calls.diverged()) {
                outcome.result = serde_json::Value::Null;
                outcome.error = Some(worker_protocol::ErrorInfo {
                    name: "ReplayDiverged".into(),
                    ..diverged
                });
            }
            if let Some(rt) = runtime.upgrade() {
                rt.live().parked().finish(&key, outcome);
                // Kept in the store once handed out (nothing is written otherwise).
                rt.live().parked().persist(&key).await;
            }
        });
    }

    /// The whole life of one execution (see the module docs).
    async fn run_task(
        &self,
        what: Runnable,
        mut req: ExecRequest,
        mut ctx: ExecContext,
    ) -> ExecOutcome {
        let audit = &self.policy().audit;
        let language = match what {
            Runnable::Code(language) => language,
            Runnable::Skill { name, args } => {
                match skills::resolve(&self.catalog, &self.skills, &name, &args).await {
                    Ok(skill) => {
                        req.code = skill.code;
                        // A skill was saved to be run: it is not checked at each call.
                        req.check = Some(false);
                        req.skill = Some(SkillRun {
                            name: skill.name,
                            args,
                            warnings: skill.warnings,
                        });
                        skill.language
                    }
                    Err(e) => {
                        audit.record_now(AuditEvent::RunRefused {
                            client: ctx.principal.to_string(),
                            reason: e.to_string(),
                        });
                        return ExecOutcome::refused(RunError::from(e).info());
                    }
                }
            }
        };
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
        let (session, mut info) = match self.resolve_session(language, &mut req, &ctx).await {
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
            skill: req.skill.as_ref().map(|s| s.name.clone()),
            parent: None,
        });
        let mut end = RunEnd {
            audit,
            execution: Some(ctx.execution.clone()),
            started: Instant::now(),
            tool_calls: ctx.tool_calls.clone(),
        };
        let _in_use = session.as_ref().map(Session::in_use);
        // A session's executions are kept for its replay: with their calls' results.
        if session.as_ref().is_some_and(|s| s.durable().is_some()) {
            ctx.calls.keep_results();
        }
        // A session brought back after a restart first replays its earlier executions.
        let replayed = match &session {
            Some(s) => self.replay_cells(language, s, &ctx).await,
            None => Ok(None),
        };
        let mut outcome = match replayed {
            Err(e) => ExecOutcome::refused(RunError::Session(e).info()),
            Ok(replayed) => {
                let mut outcome = self.execute(language, &req, &ctx, session.as_ref()).await;
                if let Some(s) = &session {
                    self.record_cell(s, language, &req, &ctx, &mut outcome)
                        .await;
                }
                if let (Some(n), Some(info)) = (replayed, outcome.session.as_mut()) {
                    info.replayed = Some(n);
                }
                outcome
            }
        };
        if let Some(skill) = &req.skill {
            // What changed under the skill since it was saved comes first, in the host's words.
            let said = skill.warnings.iter().map(|w| LogEntry {
                level: HOST_LEVEL,
                text: format!("[skill {}] {w}", skill.name),
            });
            outcome.logs.splice(0..0, said);
            // A failed skill's error says it too: the change is the likely cause.
            if let Some(e) = outcome.error.as_mut() {
                for w in &skill.warnings {
                    e.message.push_str(&format!(" ({w})"));
                }
            }
        }
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
    async fn resolve_session(
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
                self.existing_session(&ctx.principal, &id, language).await?;
                sessions.end(&id, EndReason::Reset, audit);
                Ok((
                    None,
                    Some(SessionInfo {
                        id,
                        created: false,
                        state_lost: None,
                        ended: Some(EndReason::Reset.as_str()),
                        replayed: None,
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
                    replayed: None,
                };
                Ok((Some(s), Some(info)))
            }
            (Some(SessionArg::Existing(id)), false) => {
                let s = self.existing_session(&ctx.principal, &id, language).await?;
                Ok((Some(s), None))
            }
        }
    }

    /// Live session `id`, or one an earlier server left in the durable store, brought back
    /// (`crate::live::revive`).
    async fn existing_session(
        &self,
        principal: &policy::principal::Principal,
        id: &str,
        language: Language,
    ) -> Result<Arc<Session>, SessionError> {
        let sessions = self.live.sessions();
        match sessions.get(principal, id, language) {
            Err(SessionError::Unknown(unknown)) => {
                match sessions
                    .revive(principal, id, language, &self.policy().audit)
                    .await?
                {
                    Some(s) => Ok(s),
                    None => Err(SessionError::Unknown(unknown)),
                }
            }
            other => other,
        }
    }
}
