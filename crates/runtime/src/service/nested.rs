//! Executions inside executions: the runtime lends itself to the host side as [`Nested`]
//! (skills, our own execute tool called from code).

use std::time::Instant;

use serde_json::Value;

use super::state::Runtime;
use crate::host::scope::RunScope;
use crate::host::skills::{Nested, NestedEnd, NestedRun, NestedWhat};
use crate::run::execution::{ExecContext, ExecRequest, NestedOf, RunEnd, SkillRun};
use policy::audit::{AuditEvent, sha256_hex};
use tools::skills::store::Skills;

impl Nested for Runtime {
    fn skills(&self) -> &Skills {
        &self.skills
    }

    fn run_nested<'a>(
        &'a self,
        scope: &'a RunScope,
        run: NestedRun,
    ) -> futures::future::BoxFuture<'a, NestedEnd> {
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
            let (skill, allowed_tools, limits, enable_sampling, check) = match what {
                NestedWhat::Skill { name, args } => (
                    Some(SkillRun {
                        name,
                        args,
                        warnings: Vec::new(),
                    }),
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
                    (None, allowed_tools, limits, enable_sampling, check)
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
                skill,
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
                skill: req.skill.as_ref().map(|s| s.name.clone()),
                parent: Some(scope.execution.clone()),
            });
            let mut end = RunEnd {
                audit,
                execution: Some(ctx.execution.clone()),
                started: Instant::now(),
                tool_calls: ctx.tool_calls.clone(),
            };
            let ended = self.execute_ended(language, &req, &ctx, None).await;
            end.write(&ended.outcome);
            ended
        })
    }

    fn vitals(&self) -> futures::future::BoxFuture<'_, Value> {
        Box::pin(Runtime::vitals(self))
    }
}
