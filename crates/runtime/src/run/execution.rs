//! An execution as an owned object: `Runtime::start` (`runtime::service`) returns a handle, and a task of its own
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

use super::client::{Ask, ClientLink};
use super::events::Events;
use crate::outcome::{ExecOutcome, Outcome};
use crate::worker::Language;
use policy::RequestLimits;
use policy::audit::{AuditEvent, AuditLog};
use policy::long_runs::LongRunLimits;
use policy::principal::Principal;

/// What the client asked for.
#[derive(Debug, Clone, Default)]
pub struct ExecRequest {
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
    pub permissions: Option<policy::access::PermissionsRequest>,
    /// The trace context of the request (the span of its `tools/call`, or the caller's when
    /// nothing is exported): the execution's span goes under it.
    pub trace: Option<tools::trace::TraceContext>,
    /// A saved skill's run: its code sees `args`.
    pub skill: Option<SkillRun>,
    /// Type-check the code before it runs (`check`); `None`: as the settings say.
    pub check: Option<bool>,
}

/// A saved skill's run: its name (the audit line's `skill`), the arguments its code sees as
/// `args`, and what changed under it since it was saved (its output says so first).
#[derive(Debug, Clone)]
pub struct SkillRun {
    pub name: String,
    pub args: serde_json::Value,
    pub warnings: Vec<String>,
}

/// What a request asked for with `session`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionArg {
    New,
    Existing(String),
}

impl SessionArg {
    /// `"new"`, or a handle. Handles are 34 characters, 98 at most with a replica's suffix;
    /// a longer text cannot be one and is cut (it is echoed in the error that says it is
    /// unknown).
    pub fn parse(s: &str) -> SessionArg {
        if s == "new" {
            SessionArg::New
        } else {
            SessionArg::Existing(s.chars().take(128).collect())
        }
    }
}

/// What the server attaches to an execution.
pub struct ExecContext {
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
    /// The trace context upstream calls go under (the execution's span; see `tools::trace`).
    pub trace: Option<tools::trace::TraceContext>,
    /// The execution that runs this one as a skill, when it is one.
    pub nested: Option<NestedOf>,
    /// The request's call log (`super::calllog`): a top-level execution's ledger takes it
    /// (a nested one logs in its caller's, through the ledger).
    pub calls: Arc<super::calllog::CallLog>,
}

/// What a nested execution (a skill, or the executor's own execute tool called from code)
/// takes from the execution that called it.
#[derive(Clone)]
pub struct NestedOf {
    /// How many levels deep this one is (1 for one called by a plain execution).
    pub depth: u32,
    /// The `allowedTools` of the executions above it, outermost first: each must allow its
    /// calls too (`ToolAllowlist::within`).
    pub within: Vec<Vec<String>>,
    /// The caller's token map of personal data, so tokens pass between them.
    pub vault: Option<Arc<policy::pii::vault::Vault>>,
    /// The request's ledger: every budget and cap the caller draws from, the skill draws
    /// from too.
    pub ledger: Arc<super::ledger::Ledger>,
    /// Where the caller's model calls are counted (its own tally, then its callers'): the
    /// nested run's count there too.
    pub llm_spent: Vec<Arc<super::ledger::LlmSpent>>,
}

impl ExecContext {
    pub fn new(principal: Principal) -> ExecContext {
        ExecContext {
            execution: new_execution_id(),
            principal,
            tool_rate: None,
            tool_calls: Arc::default(),
            cancel: CancellationToken::new(),
            client: None,
            events: Events::detached(),
            trace: None,
            nested: None,
            calls: Arc::default(),
        }
    }

    /// The context of an execution `client` asked for: its progress goes to the client when
    /// the request carried a progress token.
    pub fn for_client(
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
pub struct Execution {
    done: tokio::sync::oneshot::Receiver<Outcome>,
    /// Questions for the client that travel by MRTR (see `runtime::paused`).
    asks: Option<tokio::sync::mpsc::Receiver<Ask>>,
    _cancel_on_drop: DropGuard,
}

/// What a started execution did next.
pub enum Event {
    Done(Box<Outcome>),
    /// It waits for the client's answers to these questions (all it asked meanwhile).
    Asks(Vec<Ask>),
}

impl Execution {
    /// Questions put through `ctx.client` with [`InputRoute::Mrtr`] come out of
    /// [`Execution::next`].
    pub fn with_asks(mut self, asks: tokio::sync::mpsc::Receiver<Ask>) -> Execution {
        self.asks = Some(asks);
        self
    }

    /// Waits for the outcome, or for questions the client must answer first.
    pub async fn next(&mut self) -> Event {
        let asked = async {
            match self.asks.as_mut() {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            outcome = &mut self.done => Event::Done(Box::new(outcome.unwrap_or_else(|_| Outcome::cancelled()))),
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
    pub async fn outcome(mut self) -> Outcome {
        match (&mut self.done).await {
            Ok(outcome) => outcome,
            Err(_) => Outcome::cancelled(),
        }
    }
}

impl Execution {
    /// The handle of an execution whose task sends its outcome to `done`; dropping the handle
    /// cancels `cancel`.
    pub fn new(
        done: tokio::sync::oneshot::Receiver<Outcome>,
        cancel: CancellationToken,
    ) -> Execution {
        Execution {
            done,
            asks: None,
            _cancel_on_drop: cancel.drop_guard(),
        }
    }
}

/// The span of one execution (`tools::trace`): language, session, outcome, duration. One
/// dropped before [`ExecSpan::end`] (the execution was cancelled) says so.
pub struct ExecSpan(pub tools::trace::Span, Option<Instant>);

impl ExecSpan {
    pub fn start(language: Language, req: &ExecRequest, ctx: &ExecContext) -> ExecSpan {
        use tools::trace::{Kind, Span};
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

    pub fn end(mut self, outcome: ExecOutcome) -> ExecOutcome {
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
pub struct RunEnd<'a> {
    pub audit: &'a AuditLog,
    /// Taken when the line is written.
    pub execution: Option<String>,
    pub started: Instant,
    pub tool_calls: Arc<AtomicU32>,
}

impl RunEnd<'_> {
    pub fn write(&mut self, outcome: &ExecOutcome) {
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
    crate::ids::random_hex::<8>()
}
