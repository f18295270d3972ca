//! Runs with a handle through the durable store (`crate::live::durable`): what is known of
//! one is written when its handle is handed out and when it finishes ([`Parked::persist`]);
//! a handle this server does not hold is answered from the store ([`Parked::recall`]):
//!
//! - this server restarted: a finished run with its outcome; a run that was waiting for a
//!   person when its server stopped is started again, replaying its call log; any other
//!   run that was still running, as failed, lost to the restart, with the ledger of the
//!   calls it had completed (its call log, armed here once the handle is handed out);
//! - another replica minted it (replicas sharing one store, behind a proxy that need not
//!   route on the handle): a finished run with its outcome; a run still running on a replica
//!   that is alive ([`Durable::alive`](crate::live::durable::Durable::alive)) as running,
//!   which `wait` and `tasks/result` poll the store for until it finishes or their time is
//!   up ([`Parked::answer_from_store`]); one whose replica is gone as lost with it, with its
//!   ledger.
//!
//! A cancel that reaches another replica while the run is alive on its own is left in the
//! store for its replica ([`Parked::cancels_from_store`], every second), which cancels it as
//! if asked itself.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::entry::{Kind, State};
use super::resumer::Resumer;
use super::snapshot::Snapshot;
use super::store::{ParkError, Parked, STATUS_LOG_LINES};
use crate::live::durable::{RunRecord, StoredOutcome, lost_outcome};
use crate::run::calllog::Entry;
use policy::audit::AuditLog;
use policy::principal::Principal;

/// How often a run running on another replica is read again from the store while a
/// request waits for it.
const STORE_POLL: Duration = Duration::from_millis(250);

/// The log of a run that stopped while a person was being asked (nothing after the question).
fn waiting_for_person(log: &[Entry]) -> bool {
    matches!(log.last(), Some(Entry::Asking { .. }))
}

impl Parked {
    /// Runs lost to a restart while they waited for a person are started again by `resumer`.
    pub fn set_resumer(&self, resumer: Box<dyn Resumer>) {
        let _ = self.resumer.set(resumer);
    }

    /// The entry of a run started again under its `handle` (shown to its client at once);
    /// `Ok(false)`: it is in the table already.
    pub fn reserve_resumed(
        &self,
        handle: &str,
        kind: Kind,
        duration: Duration,
        ctx: &crate::run::execution::ExecContext,
    ) -> Result<bool, ParkError> {
        Ok(self
            .reserve_as(Some(handle), kind, duration, ctx)?
            .is_some())
    }

    /// Starts run `handle` again if it was waiting for a person and can be (its request
    /// was kept, its log is whole). `true`: it runs here now.
    async fn resumed(
        &self,
        owner: &Principal,
        handle: &str,
        record: &RunRecord,
        log: &[Entry],
    ) -> bool {
        let (Some(resume), Some(resumer)) = (&record.resume, self.resumer.get()) else {
            return false;
        };
        if !waiting_for_person(log) || !resumer.asks_a_person() {
            return false;
        }
        let kind = if record.kind == "task" {
            Kind::Task
        } else {
            Kind::Yielded
        };
        match resumer.resume(owner, handle, kind, resume.clone(), log.to_vec()) {
            Ok(started) => {
                if started {
                    if record.documents {
                        self.started_by_documents_name(handle);
                    }
                    self.persist(handle).await;
                    tracing::info!("run {handle} was started again, replaying its call log");
                }
                true
            }
            Err(e) => {
                tracing::warn!("run {handle} cannot be started again: {e}");
                false
            }
        }
    }

    /// Writes what is known of run `handle` (running, or its outcome) to the durable store,
    /// if there is one and the handle was handed out. A failure is logged: the run is still
    /// answered from memory while this server lives.
    pub async fn persist(&self, handle: &str) {
        let Some(durable) = &self.durable else {
            return;
        };
        let lock = {
            let t = self.lock();
            match t.handles.get(handle) {
                Some(e) if e.visible => e.persisting.clone(),
                _ => return,
            }
        };
        // Writes of one run go one at a time, each with the state at its turn: the last one
        // written carries the latest state.
        let _turn = lock.lock().await;
        let keep = self.limits.keep_result_ms;
        let Some((owner, record, ttl, calls)) = ({
            let t = self.lock();
            t.handles.get_with_owner(handle).map(|(owner, e)| {
                let mut record = RunRecord {
                    boot: durable.boot().to_string(),
                    kind: match e.kind {
                        Kind::Task => "task",
                        Kind::Yielded => "yielded",
                    }
                    .into(),
                    documents: e.documents,
                    created_at: e.created_at.clone(),
                    created_ms: e.created_ms,
                    keep_ms: keep,
                    cancelled_by: e.cancelled_by.map(str::to_string),
                    finished: None,
                    updated_at: None,
                    finished_ms: None,
                    resume: None,
                };
                let mut calls = None;
                let ttl = match &e.state {
                    State::Running => {
                        record.resume = e.resume.clone();
                        calls = Some(e.calls.clone());
                        e.duration + Duration::from_millis(keep)
                    }
                    State::Finished {
                        outcome, at_text, ..
                    } => {
                        record.finished = Some(StoredOutcome::of(outcome));
                        record.updated_at = Some(at_text.clone());
                        record.finished_ms = Some(store::now_ms());
                        Duration::from_millis(keep)
                    }
                };
                (owner.clone(), record, ttl, calls)
            })
        }) else {
            return;
        };
        if let Err(e) = durable.put_run(&owner, handle, &record, ttl).await {
            tracing::warn!("cannot keep run {handle} in the store: {e}");
        }
        // A running one's calls go to the store from now on (those so far first), each
        // before code sees its result: a loss reports them, a resume replays them.
        if let Some(calls) = calls {
            calls
                .arm(crate::run::calllog::Sink {
                    store: durable.store().clone(),
                    principal: owner.to_string(),
                    handle: handle.to_string(),
                    ttl,
                    redactor: durable.redactor().clone(),
                })
                .await;
        }
    }

    /// Run `handle` of `owner` as the durable store has it (this server does not hold it):
    /// finished, with its outcome; or lost, if it was still running when its server stopped.
    pub async fn recall(&self, owner: &Principal, handle: &str) -> Result<Snapshot, ParkError> {
        let unknown = || ParkError::Unknown(handle.to_string());
        let Some(durable) = &self.durable else {
            return Err(unknown());
        };
        let record = durable
            .run(owner, handle)
            .await
            .map_err(|error| ParkError::Store {
                handle: handle.to_string(),
                error,
            })?
            .ok_or_else(unknown)?;
        let now = store::now_ms();
        let span = |a: i64, b: i64| u64::try_from(b.saturating_sub(a)).unwrap_or(0);
        let (outcome, ended_ms) = match record.finished.clone() {
            Some(o) => (o.outcome(), record.finished_ms.unwrap_or(now)),
            // Still running in this process would be in memory.
            None if record.boot == durable.boot() => return Err(unknown()),
            // Minted by this server (its replica id, or none for both) in an earlier life:
            // started again if it waited for a person, else lost with it.
            None if policy::replica::owner(handle) == self.replica.id() => {
                let ledger = match durable.call_log(owner, handle).await {
                    Ok(log) if self.resumed(owner, handle, &record, &log).await => {
                        return self.get(owner, handle);
                    }
                    Ok(log) => {
                        let mut ledger = crate::run::calllog::ledger(&log);
                        let inbox = self.resumer.get().is_some_and(|r| r.asks_a_person());
                        if waiting_for_person(&log) && record.resume.is_some() && !inbox {
                            ledger.push_str(
                                " (a run waiting for an approval is started again after a \
                                 restart only when the approvals inbox is on: \
                                 approvals.fallback \"inbox\")",
                            );
                        }
                        Some(ledger)
                    }
                    Err(e) => {
                        tracing::warn!("cannot read the call log of run {handle}: {e}");
                        None
                    }
                };
                (lost_outcome(&record, ledger.as_deref()), now)
            }
            // Another replica's, and that replica is alive: still running there.
            None if durable
                .alive(&record.boot)
                .await
                .map_err(|error| ParkError::Store {
                    handle: handle.to_string(),
                    error,
                })? =>
            {
                return Ok(Snapshot {
                    handle: handle.to_string(),
                    documents: record.documents,
                    updated_at: rmcp::task_manager::current_timestamp(),
                    created_at: record.created_at.clone(),
                    ttl_ms: span(record.created_ms, now) + record.keep_ms,
                    progress: None,
                    log_count: 0,
                    logs: Vec::new(),
                    elapsed_ms: span(record.created_ms, now),
                    tool_calls: 0,
                    cancelled_by: None,
                    questions: Vec::new(),
                    outcome: None,
                });
            }
            // Another replica's, and that replica is gone: lost with it (its handle names
            // that replica, so it is not started again here).
            None => {
                let ledger = match durable.call_log(owner, handle).await {
                    Ok(log) => Some(crate::run::calllog::ledger(&log)),
                    Err(e) => {
                        tracing::warn!("cannot read the call log of run {handle}: {e}");
                        None
                    }
                };
                (lost_outcome(&record, ledger.as_deref()), now)
            }
        };
        let logs = outcome.logs[outcome.logs.len().saturating_sub(STATUS_LOG_LINES)..].to_vec();
        Ok(Snapshot {
            handle: handle.to_string(),
            documents: record.documents,
            updated_at: record
                .updated_at
                .clone()
                .unwrap_or_else(rmcp::task_manager::current_timestamp),
            created_at: record.created_at.clone(),
            ttl_ms: span(record.created_ms, ended_ms) + record.keep_ms,
            progress: None,
            log_count: outcome.logs.len(),
            logs,
            elapsed_ms: span(record.created_ms, now),
            tool_calls: outcome.tool_calls,
            cancelled_by: record.cancelled_by.as_deref().and_then(|by| {
                ["wait", "tasks/cancel", "notifications/cancelled"]
                    .into_iter()
                    .find(|known| *known == by)
            }),
            questions: Vec::new(),
            outcome: Some(Arc::new(outcome)),
        })
    }

    /// A handle this table does not hold (`miss`: unknown here, or another replica's),
    /// answered from the store; a run still running on another replica is polled for up
    /// to `limit` until it finishes; one the recall started again here is answered at
    /// once, as this table has it (see [`Parked::held_here`]). Anything else the table
    /// said, and a handle the store does not have either, is `miss` itself.
    pub(super) async fn answer_from_store(
        &self,
        owner: &Principal,
        handle: &str,
        miss: ParkError,
        limit: Duration,
    ) -> Result<Snapshot, ParkError> {
        if !matches!(miss, ParkError::Unknown(_) | ParkError::WrongReplica { .. }) {
            return Err(miss);
        }
        let deadline = Instant::now() + limit;
        loop {
            match self.recall(owner, handle).await {
                Err(ParkError::Unknown(_)) => return Err(miss),
                Ok(s) if s.outcome.is_none() && self.held_here(owner, handle) => return Ok(s),
                Ok(s) if s.outcome.is_none() && Instant::now() < deadline => {
                    tokio::time::sleep_until(deadline.min(Instant::now() + STORE_POLL)).await;
                }
                other => return other,
            }
        }
    }

    /// Whether this table holds run `handle` of `owner` (a recall may have started it again
    /// here).
    pub(super) fn held_here(&self, owner: &Principal, handle: &str) -> bool {
        self.get(owner, handle).is_ok()
    }

    /// `tasks/list`: the tasks `owner` has in this table, then those only the store has (of
    /// this server's earlier life, or of other replicas sharing the store), each as
    /// [`Parked::recall`] answers it, oldest first within each. A store that cannot be read
    /// is an error: a list without them would say they are gone.
    pub async fn tasks(&self, owner: &Principal) -> Result<Vec<Snapshot>, ParkError> {
        let here = self.list(owner);
        let mut out: Vec<Snapshot> = here
            .iter()
            .filter(|(_, kind, _)| *kind == Kind::Task)
            .filter_map(|(h, _, _)| self.get(owner, h).ok())
            .collect();
        let Some(durable) = &self.durable else {
            return Ok(out);
        };
        let stored = durable
            .runs(owner)
            .await
            .map_err(|error| ParkError::Store {
                handle: "(tasks/list)".into(),
                error,
            })?;
        for (handle, record) in stored {
            if record.kind != "task" || here.iter().any(|(h, _, _)| *h == handle) {
                continue;
            }
            if let Ok(snap) = self.recall(owner, &handle).await {
                out.push(snap);
            }
        }
        Ok(out)
    }

    /// `tasks/get`: [`Parked::get`], else [`Parked::recall`].
    pub async fn get_or_recall(
        &self,
        owner: &Principal,
        handle: &str,
    ) -> Result<Snapshot, ParkError> {
        match self.get(owner, handle) {
            Err(miss) => {
                self.answer_from_store(owner, handle, miss, Duration::ZERO)
                    .await
            }
            other => other,
        }
    }

    /// `tasks/cancel`: [`Parked::cancel`]; a run only the store knows has ended already and
    /// is left as it is; one still running on another replica is asked to stop through the
    /// store.
    pub async fn cancel_or_recall(
        &self,
        owner: &Principal,
        handle: &str,
        by: &'static str,
        audit: &AuditLog,
    ) -> Result<(), ParkError> {
        match self.cancel(owner, handle, by, audit) {
            Err(miss) => self
                .cancel_elsewhere(owner, handle, miss, by, audit)
                .await
                .map(|_| ()),
            other => other,
        }
    }

    /// A cancel of a handle this table does not hold: a run that ended (the store has its
    /// outcome, or it was lost) is answered as it is; one running on another replica that
    /// is alive is asked to stop through the store (its replica cancels it within a second
    /// or two), and answered running, cancelled by `by`.
    pub(super) async fn cancel_elsewhere(
        &self,
        owner: &Principal,
        handle: &str,
        miss: ParkError,
        by: &'static str,
        audit: &AuditLog,
    ) -> Result<Snapshot, ParkError> {
        let mut snap = self
            .answer_from_store(owner, handle, miss, Duration::ZERO)
            .await?;
        if snap.outcome.is_some() {
            return Ok(snap);
        }
        // Started again here by the recall: cancelled here, as asked.
        if self.held_here(owner, handle) {
            self.cancel(owner, handle, by, audit)?;
            return self.get(owner, handle);
        }
        if let Some(durable) = &self.durable {
            durable
                .request_cancel(owner, handle, by, Duration::from_millis(snap.ttl_ms.max(1)))
                .await
                .map_err(|error| ParkError::Store {
                    handle: handle.to_string(),
                    error,
                })?;
        }
        snap.cancelled_by = Some(by);
        Ok(snap)
    }

    /// Carries out the cancel requests other replicas left in the store for runs running
    /// here (see [`Parked::cancel_elsewhere`]). A store that cannot be read is logged and
    /// asked again at the next turn.
    pub async fn cancels_from_store(&self, audit: &AuditLog) {
        let Some(durable) = &self.durable else {
            return;
        };
        let owners: std::collections::BTreeSet<Principal> = {
            let t = self.lock();
            t.handles
                .iter()
                .filter(|(_, _, e)| e.visible && matches!(e.state, State::Running))
                .map(|(_, o, _)| o.clone())
                .collect()
        };
        for owner in owners {
            let requests = match durable.cancel_requests(&owner).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!("store: cancel requests not read: {e}");
                    return;
                }
            };
            for (handle, by) in requests {
                let by = ["wait", "tasks/cancel", "notifications/cancelled"]
                    .into_iter()
                    .find(|known| *known == by)
                    .unwrap_or("tasks/cancel");
                // Not held here (another replica's, or gone): left for its replica, or to
                // expire.
                if self.cancel(&owner, &handle, by, audit).is_ok()
                    && let Err(e) = durable.forget_cancel(&owner, &handle).await
                {
                    tracing::warn!("store: cancel request of {handle} not deleted: {e}");
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "recall_tests.rs"]
mod tests;
