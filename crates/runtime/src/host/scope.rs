//! What one execution may do, shared by all its concurrent requests and by every module of
//! the host side ([`RunScope`]), and the two ways a request is answered ([`ok`], [`err`]).

use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use std::time::Instant;

use governor::DefaultDirectRateLimiter;
use serde_json::Value;
use worker_protocol::{CallError, CallOutcome, ErrorInfo};

use std::collections::BTreeMap;

use super::net::FetchState;
use super::remembered::{ExecutionApprovals, Remembered};
use crate::live::sessions::Session;
use crate::run::client::ClientLink;
use crate::run::clock::Clock;
use crate::run::events::Events;
use crate::run::execution::ExecContext;
use crate::run::ledger::Ledger;
use policy::pii::vault::Vault;
use policy::pii::{Exit, Made};
use policy::principal::Principal;
use policy::{Limits, Policy, ToolAllowlist};
use tools::catalog::ToolView;

/// What one execution may do, shared by all its concurrent calls.
pub struct RunScope {
    /// The execution's id in the audit log.
    pub execution: String,
    pub allow: ToolAllowlist,
    /// The tool lists this execution sees, frozen when first seen.
    pub view: ToolView,
    pub limits: Limits,
    /// The deadline, which stands still while the execution waits for a person.
    pub clock: Arc<Clock>,
    /// Who started the execution.
    pub principal: Principal,
    /// The client that started it, to ask (approvals, model calls), if any.
    pub client: Option<ClientLink>,
    /// Tools approved for the rest of this execution, and the session-wide answers.
    pub(super) approvals: ExecutionApprovals,
    /// Model calls are allowed at all.
    pub(super) llm_enabled: bool,
    /// What the request this execution belongs to (the top-level execution and every skill
    /// under it) spends: tool calls and their permits, discovery, model calls, `fetch`,
    /// output, skill workers. A skill's execution shares its caller's.
    pub ledger: Arc<Ledger>,
    /// Tool-call attempts of the request so far (the ledger's counter, shared with whoever
    /// records the run's end).
    pub tool_calls: Arc<AtomicU32>,
    pub policy: Arc<Policy>,
    /// The client's tool-call rate, shared by its executions.
    pub tool_rate: Option<Arc<DefaultDirectRateLimiter>>,
    /// The session the execution runs in, whose values `store`/`load` reach.
    pub(super) session: Option<Arc<Session>>,
    /// Where progress and finished tool calls are reported.
    pub(super) events: Arc<Events>,
    /// The network the execution was granted, and its `fetch` counters.
    pub(super) fetch: FetchState,
    /// The trace context upstream calls go under (see `tools::trace`).
    pub trace: Option<tools::trace::TraceContext>,
    /// The token map of personal data (the session's, else the execution's own) when
    /// `pii` is on.
    pub pii: Option<Arc<Vault>>,
    /// Tokens made for this execution, by detector (for the audit's `pii.tokens`).
    pub pii_made: Made,
    /// What leaves passes here when code sees values.
    pub pii_exit: Option<Exit>,
    /// How many levels deep this execution is nested (0: not nested).
    pub depth: u32,
    /// Where this execution's model calls are counted: its own tally first, then each
    /// caller's (a nested run's `samplingMetrics`: `crate::run::ledger::LlmSpent`).
    pub llm_spent: Vec<Arc<crate::run::ledger::LlmSpent>>,
    /// What a skill this execution calls inherits from its request.
    pub inherit: Inherit,
    /// Digests of the objects and arrays this execution's calls handed code, to name a
    /// result passed where a string is wanted.
    pub handed: super::handed::Handed,
    /// The execution's code as the client sent it, for a person asked to approve a call
    /// ("the code around the call"; `None` for a direct tool call).
    pub code: Option<Arc<str>>,
}

/// The parts of an execution's request that a skill it calls runs under too (the skill gets
/// what is left of its time, never more than it had).
#[derive(Debug, Clone, Default)]
pub struct Inherit {
    pub allowed_tools: Option<Vec<String>>,
    /// The `allowedTools` of the executions above this one (see `NestedOf::within`).
    pub within: Vec<Vec<String>>,
    pub limits: policy::RequestLimits,
    pub permissions: Option<policy::access::PermissionsRequest>,
    pub long_run: bool,
    pub enable_sampling: bool,
}

/// What a run's scope is made of, resolved by the runtime before the run starts
/// ([`RunScope::new`] adds what comes from its [`ExecContext`]).
pub struct ScopeParts {
    /// What the run may call (rules, `allowedTools`, its callers' layers).
    pub allow: ToolAllowlist,
    pub limits: Limits,
    pub policy: Arc<Policy>,
    pub deadline: Instant,
    pub session: Option<Arc<Session>>,
    /// The "approve for the session" answers of its client or session.
    pub remembered: Arc<Remembered>,
    /// Model calls from code are allowed.
    pub llm_enabled: bool,
    pub fetch: FetchState,
    /// What a nested run started from it inherits.
    pub inherit: Inherit,
    /// The request's ledger, shared with every run nested under it.
    pub ledger: Arc<Ledger>,
}

impl RunScope {
    /// The scope of the execution `ctx` describes, complete: its allowlist, limits, deadline
    /// and network grant resolved.
    pub fn new(ctx: &ExecContext, parts: ScopeParts) -> Self {
        let ScopeParts {
            allow,
            limits,
            policy,
            deadline,
            session,
            remembered,
            llm_enabled,
            fetch,
            inherit,
            ledger,
        } = parts;
        let (execution, tool_rate, tool_calls) = (
            ctx.execution.clone(),
            ctx.tool_rate.clone(),
            ledger.tool_calls.clone(),
        );
        let inherited_vault = ctx.nested.as_ref().and_then(|n| n.vault.clone());
        let pii = policy
            .pii
            .enabled()
            .then(|| match (&session, inherited_vault) {
                (Some(s), _) => s.pii.clone(),
                (None, Some(v)) => v,
                (None, None) => Arc::new(Vault::new()),
            });
        let pii_made = Made::default();
        let pii_exit = pii
            .as_ref()
            .and_then(|v| Exit::new(&policy.pii, v, &pii_made));
        RunScope {
            pii,
            pii_made,
            pii_exit,
            execution,
            allow,
            view: ToolView::default(),
            limits,
            clock: Clock::new(deadline),
            principal: ctx.principal.clone(),
            client: ctx.client.clone(),
            approvals: ExecutionApprovals::new(remembered),
            llm_enabled,
            ledger,
            tool_calls,
            policy,
            tool_rate,
            session,
            events: ctx.events.clone(),
            fetch,
            trace: ctx.trace.clone(),
            depth: ctx.nested.as_ref().map_or(0, |n| n.depth),
            llm_spent: std::iter::once(Arc::default())
                .chain(ctx.nested.iter().flat_map(|n| n.llm_spent.iter().cloned()))
                .collect(),
            inherit,
            handed: Default::default(),
            code: None,
        }
    }
}

impl RunScope {
    /// Adds tokens made to the execution's counts.
    pub fn count_tokens(&self, made: BTreeMap<String, u32>) {
        policy::pii::count(&self.pii_made, made);
    }

    /// `text` as it may leave this execution: when code sees values (`pii.sandboxSees:
    /// "values"`), with every value the detectors find replaced by its token.
    pub fn exit_text<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        match &self.pii_exit {
            Some(e) => e.text(text),
            None => std::borrow::Cow::Borrowed(text),
        }
    }

    /// `v` as it may leave this execution (see [`RunScope::exit_text`]).
    pub fn exit_value(&self, v: &mut Value) {
        if let Some(e) = &self.pii_exit {
            e.value(v);
        }
    }
}

/// A failed request, named by the taxonomy both languages share.
pub fn err(kind: CallError, message: impl Into<String>) -> CallOutcome {
    CallOutcome::Err {
        error: ErrorInfo {
            name: kind.name().into(),
            message: message.into(),
            stack: None,
        },
    }
}

pub fn ok(value: Value) -> CallOutcome {
    CallOutcome::ok(&value)
}
