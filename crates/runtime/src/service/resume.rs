//! Runs with a handle started again after a restart (issue #54): a run that was waiting for a
//! person (an approval) when its server stopped is, when its handle is next asked for
//! (`wait`, `tasks/get`), started again from the request kept with its record, under the same
//! handle, against its call log: each call and answer it had is served from the log
//! (nothing upstream is called again), a request the log does not have at that step stops it
//! (`ReplayDiverged`, naming the step), and once the log is used up it goes on live, reaches
//! the same question and waits for its answer. Its new calls follow the old ones in the log.
//!
//! No request of the client is open to carry the question then: it is asked in the approvals
//! inbox, so a run is started again only when the inbox is on (`approvals.fallback:
//! "inbox"`); else it is reported lost, with its ledger, saying so.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::begin::Runnable;
use super::state::Runtime;
use crate::live::durable::Resume;
use crate::live::parked::resumer::Resumer;
use crate::live::parked::{Kind, ParkError};
use crate::run::calllog::{CallLog, Entry};
use crate::run::execution::{ExecContext, ExecRequest};
use crate::worker::Language;
use policy::principal::Principal;

/// The runtime, as the table of parked runs reaches it to start a run again.
pub(super) struct Restarter(pub(super) Weak<Runtime>);

impl Resumer for Restarter {
    fn asks_a_person(&self) -> bool {
        self.0
            .upgrade()
            .is_some_and(|rt| rt.policy().approvals.fallback == policy::approval::Fallback::Inbox)
    }

    fn resume(
        &self,
        owner: &Principal,
        handle: &str,
        kind: Kind,
        resume: Resume,
        log: Vec<Entry>,
    ) -> Result<bool, ParkError> {
        match self.0.upgrade() {
            Some(rt) => rt.resume_run(owner, handle, kind, resume, log),
            None => Ok(false),
        }
    }
}

impl Runtime {
    /// Starts run `handle` of `owner` again from `resume`, replaying `log` (module docs).
    fn resume_run(
        self: &Arc<Self>,
        owner: &Principal,
        handle: &str,
        kind: Kind,
        resume: Resume,
        log: Vec<Entry>,
    ) -> Result<bool, ParkError> {
        let language = match resume.language.as_str() {
            "python" => Language::Python,
            _ => Language::JavaScript,
        };
        let req = ExecRequest {
            code: resume.code.clone(),
            timeout_ms: resume.timeout_ms,
            allowed_tools: resume.allowed_tools.clone(),
            limits: resume.limits,
            long_run: true,
            enable_sampling: resume.enable_sampling,
            permissions: resume.permissions.clone(),
            ..ExecRequest::default()
        };
        let mut ctx = ExecContext::for_client(owner.clone(), None, &self.policy().long_runs);
        let calls = Arc::new(CallLog::replaying(resume.seed, log));
        ctx.calls = calls.clone();
        let duration = Duration::from_millis(
            req.timeout_ms
                .unwrap_or(self.policy().long_runs.default_duration_ms),
        );
        let parked = self.live().parked();
        if !parked.reserve_resumed(handle, kind, duration, &ctx)? {
            return Ok(false);
        }
        parked.set_resume(handle, resume);
        let execution = self.start(Runnable::Code(language), req, ctx);
        self.keep_parked(execution, handle.to_string(), Some(calls));
        Ok(true)
    }
}
