//! A session's variables across a restart (issue #54). Each execution of a session (a
//! *cell*) is kept in the durable store with what started it and its call log
//! ([`Runtime::record_cell`]; kind `session-cell`). A session brought back after a restart
//! (`crate::live::revive`) replays its cells, in order, on its fresh worker before its next
//! execution ([`Runtime::replay_cells`]): each one's tool calls and answers are served from
//! its log (nothing upstream is called again), with its random seed, and what it prints is
//! dropped. Its variables, functions and workspace files are rebuilt so, and its next
//! execution runs on them as if nothing had happened.
//!
//! Code must be deterministic up to tool calls for this (time and randomness aside: the
//! seed is replayed, the clock is not). A cell whose replay asks for something its log does
//! not have at that step, or ends otherwise than it did (failed where it succeeded, or the
//! reverse), stops the replay: the execution that needed it fails with an error naming the
//! cell and the step, the session's worker is dropped, and the session stays as it is (its
//! stored values, its cells) for the client to reset or try again; it is never reset
//! silently.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::state::Runtime;
use crate::live::durable::{Cell, MAX_SESSION_CELLS};
use crate::live::sessions::{Session, SessionError};
use crate::outcome::ExecOutcome;
use crate::run::calllog::CallLog;
use crate::run::execution::{ExecContext, ExecRequest};
use crate::worker::Language;

impl Runtime {
    /// Keeps execution `req` of `session` (its call log in `ctx`, its end in `outcome`) for
    /// the session's replay after a restart. Nothing is kept without a durable store, past
    /// [`MAX_SESSION_CELLS`], or for an execution that never reached the session's worker
    /// (refused before it ran). A cell that cannot be kept makes the session unreplayable:
    /// its cells are forgotten (a restart then brings it back without its variables, and
    /// says so), and the answer warns; were they not forgotten either (the store is
    /// unreachable), the warning says a restart may bring back older variables.
    pub(super) async fn record_cell(
        &self,
        session: &Session,
        language: Language,
        req: &ExecRequest,
        ctx: &ExecContext,
        outcome: &mut ExecOutcome,
    ) {
        let Some(durable) = session.durable() else {
            return;
        };
        if !ran(outcome) {
            return;
        }
        let index = session.cells.fetch_add(1, Ordering::AcqRel);
        if index >= MAX_SESSION_CELLS {
            return;
        }
        let cell = Cell {
            run: super::begin::resume_of(language, req, ctx),
            log: ctx.calls.entries(),
            failed: outcome.error.as_ref().map(|e| e.name.clone()),
        };
        let kept = match session.open_durably().await {
            Ok(()) => {
                durable
                    .session_cell(
                        &session.principal,
                        &session.id,
                        index,
                        &cell,
                        session.idle_ttl(),
                    )
                    .await
            }
            Err(e) => Err(e),
        };
        let Err(e) = kept else {
            return;
        };
        // No later cell is kept either: the replay would skip this one.
        session.cells.store(MAX_SESSION_CELLS, Ordering::Release);
        let forgotten = durable.forget_cells(&session.principal, &session.id).await;
        let warning = match forgotten {
            Ok(()) => format!(
                "this execution could not be kept in the store ({e}): after a restart this \
                 session comes back without its variables"
            ),
            Err(_) => format!(
                "this execution could not be kept in the store ({e}), nor its earlier ones \
                 forgotten: after a restart this session may come back with the variables of \
                 an earlier execution; reset it if that matters"
            ),
        };
        tracing::warn!("session {}: {warning}", session.id);
        outcome.warning = Some(match outcome.warning.take() {
            Some(w) => format!("{w}; {warning}"),
            None => warning,
        });
    }

    /// Replays the cells of `session`'s earlier life, if it has some waiting, on its worker
    /// (module docs): `Ok(Some(n))` after `n` cells, `Ok(None)` when there was nothing to
    /// replay, the divergence otherwise.
    pub(super) async fn replay_cells(
        &self,
        language: Language,
        session: &Arc<Session>,
        ctx: &ExecContext,
    ) -> Result<Option<usize>, SessionError> {
        // Held until the replay ends: another execution of the session waits here, and never
        // runs on a half-rebuilt worker.
        let mut pending = session.replay.lock().await;
        let Some(cells) = pending.take() else {
            return Ok(None);
        };
        for (i, cell) in cells.iter().enumerate() {
            let req = ExecRequest {
                code: cell.run.code.clone(),
                timeout_ms: cell.run.timeout_ms,
                allowed_tools: cell.run.allowed_tools.clone(),
                limits: cell.run.limits,
                enable_sampling: cell.run.enable_sampling,
                permissions: cell.run.permissions.clone(),
                ..ExecRequest::default()
            };
            let mut replay = ExecContext::new(ctx.principal.clone());
            replay.tool_rate = ctx.tool_rate.clone();
            replay.calls = Arc::new(CallLog::replaying_whole(cell.run.seed, cell.log.clone()));
            let outcome = self.execute(language, &req, &replay, Some(session)).await;
            let ended = outcome.error.as_ref().map(|e| e.name.clone());
            let left = replay.calls.replay_left();
            let why = match replay.calls.diverged() {
                Some(d) => Some(d.message),
                None if left > 0 => Some(format!(
                    "it ended with {left} of its logged calls not asked for again"
                )),
                None if ended != cell.failed => Some(format!(
                    "it {} now, and {} the first time",
                    ended_as(ended.as_deref()),
                    ended_as(cell.failed.as_deref())
                )),
                None => None,
            };
            if let Some(why) = why {
                // Half rebuilt: the worker goes, the cells stay for the next try.
                session
                    .drop_worker(format!(
                        "replaying its execution {} of {} after a restart failed",
                        i + 1,
                        cells.len()
                    ))
                    .await;
                *pending = Some(cells.clone());
                return Err(SessionError::ReplayDiverged {
                    id: session.id.clone(),
                    cell: i + 1,
                    of: cells.len(),
                    why,
                });
            }
        }
        Ok(Some(cells.len()))
    }
}

/// Whether the execution reached the session's worker: refusals before it ran (admission,
/// the session, a type check, syntax stripped in the host) leave nothing to replay.
fn ran(outcome: &ExecOutcome) -> bool {
    !matches!(
        outcome.error.as_ref().map(|e| e.name.as_str()),
        Some(
            "BusyError" | "SessionError" | "TypeCheckError" | "SandboxError" | "PythonUnavailable"
        )
    )
}

fn ended_as(failed: Option<&str>) -> String {
    match failed {
        Some(name) => format!("failed with {name}"),
        None => "succeeded".to_string(),
    }
}
