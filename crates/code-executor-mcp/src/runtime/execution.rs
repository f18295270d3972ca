//! An execution as an owned object: [`Runtime::start`] returns a handle, and a task of its own
//! owns everything the execution uses until it ends.
//!
//! What the client asked for ([`ExecRequest`]: code, limits, allowed tools, session) is kept
//! apart from what the server attaches ([`ExecContext`]: execution id, principal, rate
//! limiter, counters, cancellation). The task goes through these states:
//!
//! ```text
//! Admitting --refused--> Done(error)
//!     |  (admission: concurrency, queue, rates of the principal)
//! Resolving session --unknown/ended/full--> Done(SessionError)
//!     |  (none, "new", or a handle of this principal; `reset` ends it here)
//! Running  (prepare, lease a worker, drive; see Runtime::execute)
//!     |
//! Done(outcome) -- the handle's `outcome()` returns it
//! ```
//!
//! Every state can end in `Cancelled`: the handle was dropped or [`Execution::cancel`] was
//! called (the client cancelled, the server is stopping). The task's future is then dropped,
//! which kills the worker (a session's is stopped, and the session's next run says so), gives
//! the admission slot back and writes `run.end` with outcome `cancelled`: every `run.start`
//! has its end.

use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use std::time::Instant;

use governor::DefaultDirectRateLimiter;
use tokio_util::sync::{CancellationToken, DropGuard};

use serde_json::Value;

use super::events::Events;
use super::paused::Ask;
use super::session::{EndReason, Session, SessionArg};
use super::worker::Language;
use super::{ExecOutcome, Runtime, SessionInfo};
use crate::policy::RequestLimits;
use crate::policy::audit::{AuditEvent, AuditLog, sha256_hex};
use crate::policy::long_runs::LongRunLimits;
use crate::principal::Principal;

/// What the client asked for.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExecRequest {
    pub code: String,
    pub timeout_ms: Option<u64>,
    pub allowed_tools: Option<Vec<String>>,
    /// Limits the request tightens for itself.
    pub limits: RequestLimits,
    /// Run in a session: a new one, or one this principal holds.
    pub session: Option<SessionArg>,
    /// End the session named by `session` before the code runs (the code then runs in a
    /// fresh worker outside any session).
    pub reset: bool,
    /// The execution may outlive its request (a task, or `yieldAfterMs`): its deadline
    /// defaults to and is bounded by `longRuns` instead of `executionLimits`.
    pub long_run: bool,
    /// Model calls from code are allowed for this execution although the settings do not
    /// enable them (`enableSampling: true`).
    pub enable_sampling: bool,
    /// File and network access asked for (within the configured ceiling).
    pub permissions: Option<crate::policy::access::PermissionsRequest>,
    /// The trace context of the request (the span of its `tools/call`, or the caller's when
    /// nothing is exported): the execution's span goes under it.
    pub trace: Option<crate::trace::TraceContext>,
}

/// What the server attaches to an execution.
pub(crate) struct ExecContext {
    /// The execution's id in the audit log and in scratch directory names.
    pub execution: String,
    /// Who asked: owns the session, keys admission, rates and audit lines.
    pub principal: Principal,
    /// The principal's tool-call rate limiter, set at admission.
    pub tool_rate: Option<Arc<DefaultDirectRateLimiter>>,
    /// Tool-call attempts, readable even after the run is abandoned.
    pub tool_calls: Arc<AtomicU32>,
    /// Cancels the execution (the client cancelled; the server is stopping).
    pub cancel: CancellationToken,
    /// The requesting client, while it is connected.
    pub client: Option<ClientLink>,
    /// What the execution did so far (logs, progress, its end), for whoever watches it.
    pub events: Arc<Events>,
    /// The trace context upstream calls go under (the execution's span; see `crate::trace`).
    pub trace: Option<crate::trace::TraceContext>,
}

/// The client that asked for an execution, reachable while it runs: notifications (progress
/// while the execution waits) and questions (approvals, model calls, an upstream's requests).
#[derive(Clone)]
pub(crate) struct ClientLink {
    pub peer: rmcp::Peer<rmcp::RoleServer>,
    /// The request's `_meta.progressToken`: progress is sent only when the client asked.
    pub progress_token: Option<rmcp::model::ProgressToken>,
    /// How a question reaches the client.
    pub route: InputRoute,
    /// What the client declared it can answer.
    pub caps: ClientCaps,
}

/// How questions reach the requesting client, by protocol generation.
#[derive(Clone)]
pub(crate) enum InputRoute {
    /// Before 2026-07-28: a request to the client while the `tools/call` is open.
    Inline,
    /// 2026-07-28: the `tools/call` answers `input_required` (see `runtime::paused`).
    Mrtr(tokio::sync::mpsc::Sender<Ask>),
}

/// The client capabilities questions need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ClientCaps {
    pub elicitation: bool,
    pub sampling: bool,
    pub roots: bool,
}

/// Why a question got no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AskError {
    #[error("the client did not declare the {0} capability")]
    Unsupported(&'static str),
    #[error("the client's answer did not come within {0} ms")]
    Timeout(u128),
    #[error("the client could not answer: {0}")]
    Failed(String),
}

impl ClientLink {
    /// Tells the client, when it asked for progress, what the execution is waiting for. Sent
    /// in the background: a slow client never holds the execution up.
    pub(crate) fn waiting(&self, message: &str) {
        let Some(token) = self.progress_token.clone() else {
            return;
        };
        let peer = self.peer.clone();
        let param = rmcp::model::ProgressNotificationParam::new(token, 0.0)
            .with_message(message.to_string());
        tokio::spawn(async move {
            if let Err(e) = peer.notify_progress(param).await {
                tracing::debug!("cannot send progress to the client: {e}");
            }
        });
    }

    /// Asks the client `request` (`{"method", "params"}` of `elicitation/create`,
    /// `sampling/createMessage` or `roots/list`) and waits at most `timeout` for the result.
    pub(crate) async fn ask(
        &self,
        request: Value,
        timeout: std::time::Duration,
    ) -> Result<Value, AskError> {
        let method = request["method"].as_str().unwrap_or_default();
        let (cap, declared) = match method {
            "elicitation/create" => ("elicitation", self.caps.elicitation),
            "sampling/createMessage" => ("sampling", self.caps.sampling),
            "roots/list" => ("roots", self.caps.roots),
            _ => return Err(AskError::Failed(format!("internal: cannot ask {method}"))),
        };
        if !declared {
            return Err(AskError::Unsupported(cap));
        }
        let answer = async {
            match &self.route {
                InputRoute::Inline => {
                    let request: rmcp::model::ServerRequest = serde_json::from_value(request)
                        .map_err(|e| AskError::Failed(format!("internal: {e}")))?;
                    let result = self
                        .peer
                        .send_request(request)
                        .await
                        .map_err(|e| AskError::Failed(e.to_string()))?;
                    serde_json::to_value(result).map_err(|e| AskError::Failed(e.to_string()))
                }
                InputRoute::Mrtr(asks) => {
                    let (reply, answer) = tokio::sync::oneshot::channel();
                    asks.send(Ask { request, reply }).await.map_err(|_| {
                        AskError::Failed("the request that could carry the question ended".into())
                    })?;
                    match answer.await {
                        Ok(Value::Null) | Err(_) => Err(AskError::Failed(
                            "the client's retry carried no answer to the question".into(),
                        )),
                        Ok(v) => Ok(v),
                    }
                }
            }
        };
        match tokio::time::timeout(timeout, answer).await {
            Ok(r) => r,
            Err(_) => Err(AskError::Timeout(timeout.as_millis())),
        }
    }
}

impl ExecContext {
    pub(crate) fn new(principal: Principal) -> ExecContext {
        ExecContext {
            execution: new_execution_id(),
            principal,
            tool_rate: None,
            tool_calls: Arc::default(),
            cancel: CancellationToken::new(),
            client: None,
            events: Events::detached(),
            trace: None,
        }
    }

    /// The context of an execution `client` asked for: its progress goes to the client when
    /// the request carried a progress token.
    pub(crate) fn for_client(
        principal: Principal,
        client: Option<ClientLink>,
        limits: &LongRunLimits,
    ) -> ExecContext {
        let mut ctx = ExecContext::new(principal);
        ctx.events = Events::new(client.as_ref(), limits);
        ctx.client = client;
        ctx
    }
}

/// The handle of a started execution. Dropping it cancels the execution.
pub(crate) struct Execution {
    done: tokio::sync::oneshot::Receiver<ExecOutcome>,
    /// Questions for the client that travel by MRTR (see `runtime::paused`).
    asks: Option<tokio::sync::mpsc::Receiver<Ask>>,
    _cancel_on_drop: DropGuard,
}

/// What a started execution did next.
pub(crate) enum Event {
    Done(Box<ExecOutcome>),
    /// It waits for the client's answers to these questions (all it asked meanwhile).
    Asks(Vec<Ask>),
}

impl Execution {
    /// Questions put through `ctx.client` with [`InputRoute::Mrtr`] come out of
    /// [`Execution::next`].
    pub(crate) fn with_asks(mut self, asks: tokio::sync::mpsc::Receiver<Ask>) -> Execution {
        self.asks = Some(asks);
        self
    }

    /// Waits for the outcome, or for questions the client must answer first.
    pub(crate) async fn next(&mut self) -> Event {
        let asked = async {
            match self.asks.as_mut() {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            outcome = &mut self.done => Event::Done(Box::new(outcome.unwrap_or_else(|_| cancelled()))),
            Some(first) = asked => {
                let mut all = vec![first];
                if let Some(rx) = self.asks.as_mut() {
                    while let Ok(more) = rx.try_recv() {
                        all.push(more);
                    }
                }
                Event::Asks(all)
            }
        }
    }

    /// Waits for the outcome.
    pub(crate) async fn outcome(mut self) -> ExecOutcome {
        match (&mut self.done).await {
            Ok(outcome) => outcome,
            Err(_) => cancelled(),
        }
    }
}

fn cancelled() -> ExecOutcome {
    ExecOutcome::refused(
        "CancelledError",
        "the execution was cancelled before it finished".into(),
    )
}

impl Runtime {
    /// Starts an execution of `req` in `language` for `ctx`: the returned handle yields its
    /// outcome, and dropping the handle cancels it.
    pub(crate) fn start(
        self: &Arc<Self>,
        language: Language,
        req: ExecRequest,
        ctx: ExecContext,
    ) -> Execution {
        let (tx, done) = tokio::sync::oneshot::channel();
        let cancel = ctx.cancel.clone();
        let runtime = self.clone();
        tokio::spawn(async move {
            let token = ctx.cancel.clone();
            tokio::select! {
                outcome = runtime.run_task(language, req, ctx) => {
                    let _ = tx.send(outcome);
                }
                () = token.cancelled() => {}
            }
        });
        Execution {
            done,
            asks: None,
            _cancel_on_drop: cancel.drop_guard(),
        }
    }

    /// Starts a long run whose handle is parked (see [`super::parked`]): the entry is
    /// reserved before anything runs, so a client over its limits is refused at once; the
    /// execution's outcome is kept there when it ends. The handle is handed out by
    /// [`super::parked::Parked::publish_as`].
    pub(crate) fn start_parked(
        self: &Arc<Self>,
        language: Language,
        mut req: ExecRequest,
        ctx: ExecContext,
        kind: super::parked::Kind,
        asks: Option<tokio::sync::mpsc::Receiver<Ask>>,
    ) -> Result<String, super::parked::ParkError> {
        req.long_run = true;
        let limits = &self.policy().long_runs;
        let duration =
            std::time::Duration::from_millis(req.timeout_ms.unwrap_or(limits.default_duration_ms));
        let handle = self.parked().reserve(kind, duration, &ctx)?;
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
                        Some(rt) => rt.parked().ask(&key, asks),
                        None => return,
                    },
                }
            };
            if let Some(rt) = runtime.upgrade() {
                rt.parked().finish(&key, outcome);
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
                    reason: reason.clone(),
                });
                return span.end(ExecOutcome::refused("BusyError", reason));
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
            Err(message) => return span.end(ExecOutcome::refused("SessionError", message)),
        };
        audit.record(AuditEvent::RunStart {
            execution: ctx.execution.clone(),
            client,
            language: language.tool_language(),
            code_sha256: sha256_hex(req.code.as_bytes()),
            code_bytes: req.code.len(),
            allowed_tools: req.allowed_tools.clone(),
            session: session.as_ref().map(|s| s.id.clone()),
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
    ) -> Result<(Option<Arc<Session>>, Option<SessionInfo>), String> {
        let audit = &self.policy().audit;
        let sessions = self.sessions();
        match (req.session.take(), req.reset) {
            (None, false) => Ok((None, None)),
            (None | Some(SessionArg::New), true) => Err(
                "reset ends a session: pass the session's handle as session, with reset: true"
                    .into(),
            ),
            (Some(SessionArg::Existing(id)), true) => {
                sessions
                    .get(&ctx.principal, &id, language)
                    .map_err(|e| e.to_string())?;
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
                let s = sessions
                    .create(&ctx.principal, language, audit)
                    .map_err(|e| e.to_string())?;
                let info = SessionInfo {
                    id: s.id.clone(),
                    created: true,
                    state_lost: None,
                    ended: None,
                };
                Ok((Some(s), Some(info)))
            }
            (Some(SessionArg::Existing(id)), false) => {
                let s = sessions
                    .get(&ctx.principal, &id, language)
                    .map_err(|e| e.to_string())?;
                Ok((Some(s), None))
            }
        }
    }
}

/// The span of one execution (`crate::trace`): language, session, outcome, duration. One
/// dropped before [`ExecSpan::end`] (the execution was cancelled) says so.
struct ExecSpan(crate::trace::Span, Option<Instant>);

impl ExecSpan {
    fn start(language: Language, req: &ExecRequest, ctx: &ExecContext) -> ExecSpan {
        use crate::trace::{Kind, Span};
        let mut span = Span::start(
            || format!("execute {}", language.tool_language()).into(),
            Kind::Internal,
            req.trace.as_ref(),
        );
        if span.recording() {
            span.set("code_executor.language", language.tool_language());
            span.set("code_executor.execution.id", &ctx.execution);
            span.set("code_executor.long_run", req.long_run);
        }
        ExecSpan(span, Some(Instant::now()))
    }

    fn end(mut self, outcome: ExecOutcome) -> ExecOutcome {
        self.1 = None;
        let span = &mut self.0;
        if span.recording() {
            span.set("code_executor.duration_ms", outcome.duration_ms);
            span.set("code_executor.tool_calls", outcome.tool_calls);
            match &outcome.error {
                None => span.set("code_executor.outcome", "ok"),
                Some(e) => {
                    span.set("code_executor.outcome", "error");
                    span.set("error.type", &e.name);
                    span.fail(&e.name);
                }
            }
        }
        outcome
    }
}

impl Drop for ExecSpan {
    fn drop(&mut self) {
        if let Some(started) = self.1.take()
            && self.0.recording()
        {
            self.0.set("code_executor.outcome", "cancelled");
            self.0.set(
                "code_executor.duration_ms",
                (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
            );
            self.0.fail("cancelled");
        }
    }
}

/// The `run.end` line of an execution. Written with the outcome when the run finishes; an
/// execution abandoned before that (cancelled, the server shutting down) is recorded as
/// `cancelled` when it is dropped, so every `run.start` has its end.
struct RunEnd<'a> {
    audit: &'a AuditLog,
    /// Taken when the line is written.
    execution: Option<String>,
    started: Instant,
    tool_calls: Arc<AtomicU32>,
}

impl RunEnd<'_> {
    fn write(&mut self, outcome: &ExecOutcome) {
        let Some(execution) = self.execution.take() else {
            return;
        };
        self.audit.record_now(AuditEvent::RunEnd {
            execution,
            outcome: if outcome.error.is_none() {
                "ok"
            } else {
                "error"
            },
            error: outcome.error.as_ref().map(|e| e.name.clone()),
            duration_ms: outcome.duration_ms,
            tool_calls: outcome.tool_calls,
            result_bytes: outcome.result_bytes,
            log_bytes: outcome.logs.iter().map(|l| l.text.len()).sum(),
            memory_peak_bytes: outcome.memory_peak_bytes,
        });
    }
}

impl Drop for RunEnd<'_> {
    fn drop(&mut self) {
        let Some(execution) = self.execution.take() else {
            return;
        };
        self.audit.record_now(AuditEvent::RunEnd {
            execution,
            outcome: "cancelled",
            error: None,
            duration_ms: (self.started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
            tool_calls: self.tool_calls.load(std::sync::atomic::Ordering::Relaxed),
            result_bytes: 0,
            log_bytes: 0,
            memory_peak_bytes: None,
        });
    }
}

/// A fresh, unguessable execution id (16 hex digits).
fn new_execution_id() -> String {
    super::ids::random_hex::<8>()
}
