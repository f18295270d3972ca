//! The one door into the runtime: every server face (stdio and HTTP `tools/call`, tasks, the
//! early return that `wait` reads, the command line, a pinned direct tool) asks for an
//! execution with one value, [`Start`]: what is to run ([`Work`]: code, a saved skill, or one
//! call of a pinned direct tool), who asks and through which client, and how the run answers
//! ([`Mode`]). `Runtime::begin` (in `runtime::service`) is the only function that
//! takes it; the execution's context (its id, events, cancellation) is made there, once.

use tokio::sync::mpsc::Receiver;

use super::error::RunError;
use super::live::parked::Kind;
use super::run::client::{Ask, ClientLink};
use super::run::execution::{ExecRequest, Execution};
use super::worker::Language;
use policy::principal::Principal;

/// One execution to start.
pub struct Start {
    /// What the client asked for.
    pub work: Work,
    /// Who asks and which client to reach while it runs.
    pub context: Caller,
    pub mode: Mode,
}

/// What an execution does.
#[derive(Clone)]
pub enum Work {
    /// Runs code in a worker.
    Code {
        language: Language,
        /// Boxed: a request is large beside a direct call, and moves through every face.
        request: Box<ExecRequest>,
    },
    /// Runs a saved skill (a client's `skill`): one worker of the skill's own language runs
    /// its code, which sees `args`, under the request's allowed tools, limits, permissions and
    /// deadline, exactly as code given to the tool would run. The request's `code` is
    /// unused; the skill's is found (and its arguments checked) when the run starts.
    Skill {
        name: String,
        args: serde_json::Value,
        request: Box<ExecRequest>,
    },
    /// Makes one upstream call through the bridge, as code would (admission, rules, rate,
    /// schema, approval, audit), and answers with the upstream's result: a pinned direct
    /// tool (`directTools`). Answered plainly, never parked.
    Direct(DirectCall),
}

/// One call of a pinned direct tool.
#[derive(Clone)]
pub struct DirectCall {
    /// The upstream server and its tool's own name.
    pub server: String,
    pub tool: String,
    pub args: serde_json::Value,
    /// The trace context of the request (its `tools/call` span).
    pub trace: Option<tools::trace::TraceContext>,
}

/// Who asks for an execution: the principal it runs for, and the requesting client while it
/// is connected (progress, questions).
pub struct Caller {
    pub principal: Principal,
    pub client: Option<ClientLink>,
}

/// How an execution answers its request.
pub enum Mode {
    /// The request waits for the outcome; questions a 2026-07-28 client answers by retrying
    /// come out of the handle (`asks`).
    Plain { asks: Option<Receiver<Ask>> },
    /// The run may outlive its request: it is parked under a handle of `kind` (a task, or a
    /// run that returns early and is read with `wait`) before anything runs; its questions
    /// (2026-07-28) wait on the handle (`asks`).
    Parked {
        kind: Kind,
        asks: Option<Receiver<Ask>>,
        /// Started by a name of the product line's documents: its answer, whenever it is
        /// given (`wait`, a task's result), carries their fields too.
        documents: bool,
    },
}

/// A started execution.
pub struct Started {
    /// Its id in the audit log.
    pub execution: String,
    pub run: Run,
}

/// Where a started execution is followed.
pub enum Run {
    /// Its handle: the outcome (or its questions); dropping it cancels the run.
    Waiting(Execution),
    /// The handle it is parked under, to hand out (`Parked::publish_as`).
    Parked(String),
}

impl Started {
    /// The handle of a run that waits (`Mode::Plain`).
    pub fn waiting(self) -> Result<Execution, RunError> {
        match self.run {
            Run::Waiting(run) => Ok(run),
            Run::Parked(_) => Err(RunError::Internal(
                "an execution to wait for was parked".into(),
            )),
        }
    }

    /// The handle a run is parked under (`Mode::Parked`).
    pub fn parked(self) -> Result<String, RunError> {
        match self.run {
            Run::Parked(handle) => Ok(handle),
            Run::Waiting(_) => Err(RunError::Internal(
                "an execution to park was not parked".into(),
            )),
        }
    }
}
