//! The table of parked executions (module docs of `runtime::live::parked`): reserving,
//! finishing, handing out, `wait`, `tasks/*`, and the limits on what is kept.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::outcome::ExecOutcome;
use crate::run::client::Ask;
use crate::run::execution::ExecContext;
use policy::audit::{AuditEvent, AuditLog};
use policy::long_runs::LongRunLimits;
use policy::principal::Principal;
use policy::replica::Replica;

use super::entry::{Entry, Kind, Question, State};
pub use super::error::ParkError;
use super::snapshot::{Snapshot, snapshot};
use crate::live::table::{Fate, Handles, Miss, mint};

/// Handles of dropped or expired results remembered, for a clear answer about them.
const REMEMBERED_GONE: usize = 1024;
/// Handles of parked runs are `run-` and 128 random bits in hex.
const HANDLE_PREFIX: &str = "run-";
/// How often finished results are checked for expiry when nobody asks.
pub const SWEEP_EVERY: Duration = Duration::from_secs(5);
/// How long a cancelling `wait` waits for the execution to stop before answering.
const CANCEL_WAIT: Duration = Duration::from_secs(5);
/// Log lines a task's status carries.
pub const STATUS_LOG_LINES: usize = 5;

pub(super) struct Table {
    /// The entries, bound to their principals; handles whose results were dropped or
    /// expired are remembered with why.
    pub(super) handles: Handles<Entry, String>,
    kept_bytes: usize,
}

/// The table of parked executions (see the module docs).
pub struct Parked {
    table: Mutex<Table>,
    pub(super) limits: LongRunLimits,
    /// Tags new handles, refuses another replica's.
    pub(super) replica: Replica,
    /// Runs with a handle are kept there too, to be answered after a restart
    /// (`super::recall`).
    pub(super) durable: Option<crate::live::durable::Durable>,
    /// Starts again a run that was paused for a person when its server stopped (the
    /// runtime, once it is made: `super::recall`).
    pub(super) resumer: std::sync::OnceLock<Box<dyn super::resumer::Resumer>>,
}

/// Whether a reserved execution finished before its request handed it out.
pub enum Published {
    /// It finished meanwhile: the request answers with the outcome (the entry is gone).
    Finished(ExecOutcome),
    /// The handle is now the client's.
    Handed(Snapshot),
}

impl Parked {
    pub fn new(limits: LongRunLimits) -> Parked {
        Parked {
            table: Mutex::new(Table {
                handles: Handles::new(REMEMBERED_GONE),
                kept_bytes: 0,
            }),
            limits,
            replica: Replica::single(),
            durable: None,
            resumer: std::sync::OnceLock::new(),
        }
    }

    /// Runs with a handle are kept in `durable` too.
    pub fn set_durable(&mut self, durable: crate::live::durable::Durable) {
        self.durable = Some(durable);
    }

    /// Handles end in `@ID` of `replica` (see `policy::replica`).
    pub fn with_replica(mut self, replica: Replica) -> Parked {
        self.replica = replica;
        self
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reserves an entry for an execution of `owner` that is about to start; the handle is
    /// the client's once [`Parked::publish_as`] hands it out.
    pub fn reserve(
        &self,
        kind: Kind,
        duration: Duration,
        ctx: &ExecContext,
    ) -> Result<String, ParkError> {
        self.reserve_as(None, kind, duration, ctx)?
            .ok_or_else(|| ParkError::Unknown(String::new()))
    }

    /// [`Parked::reserve`], under `handle` when given (a run started again after a restart
    /// keeps its handle, which is its client's already: shown at once). `Ok(None)`: that
    /// handle is in the table already (another request started it again first).
    pub(super) fn reserve_as(
        &self,
        handle: Option<&str>,
        kind: Kind,
        duration: Duration,
        ctx: &ExecContext,
    ) -> Result<Option<String>, ParkError> {
        if !self.limits.enabled() {
            return Err(ParkError::Off);
        }
        let mut t = self.lock();
        if let Some(h) = handle
            && t.handles.get(h).is_some()
        {
            return Ok(None);
        }
        self.sweep(&mut t);
        let owner = &ctx.principal;
        let held = t.handles.held_by(owner).count();
        if held >= self.limits.max_parked_per_client
            && !drop_oldest_finished(
                &mut t,
                Some(owner),
                "dropped to make room for a newer run of this client (longRuns.maxParkedPerClient)",
            )
        {
            return Err(ParkError::Full {
                held,
                limit: self.limits.max_parked_per_client,
                setting: "maxParkedPerClient",
            });
        }
        if t.handles.len() >= self.limits.max_parked
            && !drop_oldest_finished(
                &mut t,
                None,
                "dropped to make room for a newer run (longRuns.maxParked)",
            )
        {
            return Err(ParkError::Full {
                held: t.handles.held_by(owner).count(),
                limit: self.limits.max_parked,
                setting: "maxParked",
            });
        }
        // Its calls' results are kept: it may be kept in the store and replayed.
        ctx.calls.keep_results();
        let visible = handle.is_some();
        let handle = handle.map_or_else(|| mint(&self.replica, HANDLE_PREFIX), str::to_string);
        t.handles.insert(
            handle.clone(),
            owner.clone(),
            Entry {
                execution: ctx.execution.clone(),
                kind,
                documents: false,
                created: Instant::now(),
                created_ms: store::now_ms(),
                persisting: Arc::default(),
                created_at: rmcp::task_manager::current_timestamp(),
                duration,
                events: ctx.events.clone(),
                cancel: ctx.cancel.clone(),
                tool_calls: ctx.tool_calls.clone(),
                visible,
                delivered: 0,
                cancelled_by: None,
                state: State::Running,
                finished: Arc::new(watch::channel(false).0),
                questions: Vec::new(),
                asked: 0,
                asking: Arc::default(),
                calls: ctx.calls.clone(),
                resume: None,
            },
        );
        Ok(Some(handle))
    }

    /// What starts the run behind `handle` again after a restart (see `super::recall`).
    pub fn set_resume(&self, handle: &str, resume: crate::live::durable::Resume) {
        if let Some(e) = self.lock().handles.get_mut(handle) {
            e.resume = Some(resume);
        }
    }

    /// The execution behind `handle` was started by a name of the product line's documents:
    /// its answer carries their fields too, whenever it is given.
    pub fn started_by_documents_name(&self, handle: &str) {
        if let Some(e) = self.lock().handles.get_mut(handle) {
            e.documents = true;
        }
    }

    /// The execution behind `handle` ended with `outcome`: kept for the keep time (or
    /// dropped at once if the request that reserved it is still deciding; see `publish_as`).
    pub fn finish(&self, handle: &str, outcome: ExecOutcome) {
        let mut t = self.lock();
        let bytes = outcome_bytes(&outcome);
        let Some(e) = t.handles.get_mut(handle) else {
            return;
        };
        e.state = State::Finished {
            outcome: Arc::new(outcome),
            at: Instant::now(),
            at_text: rmcp::task_manager::current_timestamp(),
            bytes,
        };
        let signal = e.finished.clone();
        t.kept_bytes += bytes;
        while t.kept_bytes > self.limits.max_kept_bytes() {
            if !drop_oldest_finished(
                &mut t,
                None,
                "dropped because kept results reached longRuns.maxKeptMb (the oldest go first)",
            ) {
                break;
            }
        }
        drop(t);
        signal.send_replace(true);
    }

    /// Waits up to `limit` for the reserved execution to finish, then either takes its
    /// outcome back (it finished: no handle is needed) or hands the handle out.
    /// With `always`, the handle is handed out even when the run finished meanwhile (the
    /// client asked for a task or a handle at once, and gets one).
    pub async fn publish_as(
        &self,
        handle: &str,
        limit: Duration,
        always: bool,
    ) -> Option<Published> {
        let (signal, asking) = self
            .lock()
            .handles
            .get(handle)
            .map(|e| (e.finished.clone(), e.asking.clone()))?;
        let mut rx = signal.subscribe();
        tokio::select! {
            _ = tokio::time::timeout(limit, rx.wait_for(|done| *done)) => {}
            () = asking.notified() => {}
        }
        let published = self.take_or_hand_out(handle, always)?;
        if matches!(published, Published::Handed(_)) {
            self.persist(handle).await;
        }
        Some(published)
    }

    /// After [`Parked::publish_as`] waited: the outcome taken back, or the handle handed out.
    fn take_or_hand_out(&self, handle: &str, always: bool) -> Option<Published> {
        let mut t = self.lock();
        let finished = matches!(t.handles.get(handle)?.state, State::Finished { .. });
        if finished && !always {
            let e = t.handles.end(handle, |_| None)?;
            if let State::Finished { outcome, bytes, .. } = e.state {
                t.kept_bytes = t.kept_bytes.saturating_sub(bytes);
                return Some(Published::Finished(
                    Arc::try_unwrap(outcome).unwrap_or_else(|a| (*a).clone()),
                ));
            }
            return None;
        }
        let e = t.handles.get_mut(handle)?;
        e.visible = true;
        let (logs, progress) = e.events.since(0);
        e.delivered = logs.len();
        Some(Published::Handed(snapshot(
            handle,
            e,
            logs,
            progress,
            &self.limits,
        )))
    }

    /// Drops a reservation whose request ended before handing it out (it was cancelled):
    /// the execution is cancelled with it.
    pub fn abandon(&self, handle: &str) {
        let mut t = self.lock();
        if let Some(e) = t.handles.end(handle, |_| None) {
            e.cancel.cancel();
            t.unkeep(&e);
        }
    }

    /// The entry of `handle` if `owner` may see it (the table's one binding and replica
    /// check; see `runtime::live::table`).
    pub(super) fn visible<'a>(
        replica: &Replica,
        t: &'a mut Table,
        owner: &Principal,
        handle: &str,
    ) -> Result<&'a mut Entry, ParkError> {
        t.handles
            .find(replica, owner, handle, |e| e.visible)
            .map_err(|miss| match miss {
                Miss::Elsewhere(elsewhere) => ParkError::WrongReplica {
                    handle: handle.to_string(),
                    elsewhere,
                },
                Miss::Unknown => ParkError::Unknown(handle.to_string()),
                Miss::Gone(reason) => ParkError::Gone {
                    handle: handle.to_string(),
                    reason,
                },
            })
    }

    /// Asks the execution to stop (`by`: how the client asked); the worker is killed and its
    /// upstream calls cancelled by the task that owns it. Audited. A finished one is left as
    /// it is.
    pub fn cancel(
        &self,
        owner: &Principal,
        handle: &str,
        by: &'static str,
        audit: &AuditLog,
    ) -> Result<(), ParkError> {
        let mut t = self.lock();
        self.sweep(&mut t);
        let e = Parked::visible(&self.replica, &mut t, owner, handle)?;
        if matches!(e.state, State::Running) && e.cancelled_by.is_none() {
            e.cancelled_by = Some(by);
            e.cancel.cancel();
            audit.record_now(AuditEvent::RunCancel {
                execution: e.execution.clone(),
                client: owner.to_string(),
                by,
            });
        }
        Ok(())
    }

    /// `wait`: up to `limit` for the execution to finish (after cancelling it, with
    /// `cancel`), then what is new: the lines not handed out yet and the progress, or the
    /// outcome with the lines not handed out yet.
    pub async fn wait(
        &self,
        owner: &Principal,
        handle: &str,
        limit: Duration,
        cancel: bool,
        audit: &AuditLog,
    ) -> Result<Snapshot, ParkError> {
        let limit = if cancel {
            if let Err(miss) = self.cancel(owner, handle, "wait", audit) {
                let asked = self
                    .cancel_elsewhere(owner, handle, miss.clone(), "wait", audit)
                    .await?;
                if asked.outcome.is_some() {
                    return Ok(asked);
                }
                if !self.held_here(owner, handle) {
                    // Running on another replica, asked to stop through the store.
                    return self
                        .answer_from_store(owner, handle, miss, CANCEL_WAIT)
                        .await;
                }
                // Started again here by the recall, and cancelled: waited for below.
            }
            CANCEL_WAIT
        } else {
            limit
        };
        let found = {
            let mut t = self.lock();
            self.sweep(&mut t);
            Parked::visible(&self.replica, &mut t, owner, handle).map(|e| {
                let open = e.open_questions().next().is_some();
                (e.finished.clone(), e.asking.clone(), open)
            })
        };
        let (signal, asking, open) = match found {
            Err(miss) => return self.answer_from_store(owner, handle, miss, limit).await,
            Ok(found) => found,
        };
        // Open questions are answered at once: the run waits for the client, not the reverse.
        if !open {
            let mut rx = signal.subscribe();
            tokio::select! {
                _ = tokio::time::timeout(limit, rx.wait_for(|done| *done)) => {}
                () = asking.notified() => {}
            }
        }
        let mut t = self.lock();
        let e = Parked::visible(&self.replica, &mut t, owner, handle)?;
        match &e.state {
            State::Running if e.open_questions().next().is_some() => {
                // The answer is the questions (`input_required` carries no lines): the lines
                // stay for the next `wait`.
                let progress = e.events.latest_progress();
                Ok(snapshot(handle, e, Vec::new(), progress, &self.limits))
            }
            State::Running => {
                let (logs, progress) = e.events.since(e.delivered);
                e.delivered += logs.len();
                Ok(snapshot(handle, e, logs, progress, &self.limits))
            }
            State::Finished { outcome, .. } => {
                let mut outcome = (**outcome).clone();
                outcome.logs = outcome.logs.split_off(e.delivered.min(outcome.logs.len()));
                let progress = e.events.latest_progress();
                let mut s = snapshot(handle, e, Vec::new(), progress, &self.limits);
                s.outcome = Some(Arc::new(outcome));
                Ok(s)
            }
        }
    }

    /// Waits up to `limit` for the run to finish (the older revision's `tasks/result`), then
    /// its state with the last few lines and, once finished, the whole outcome. Unlike
    /// [`Parked::wait`], it hands out no lines.
    pub async fn finished(
        &self,
        owner: &Principal,
        handle: &str,
        limit: Duration,
    ) -> Result<Snapshot, ParkError> {
        let found = {
            let mut t = self.lock();
            self.sweep(&mut t);
            Parked::visible(&self.replica, &mut t, owner, handle).map(|e| e.finished.clone())
        };
        let signal = match found {
            Err(miss) => {
                let recalled = self
                    .answer_from_store(owner, handle, miss.clone(), limit)
                    .await?;
                if recalled.outcome.is_some() || !self.held_here(owner, handle) {
                    return Ok(recalled);
                }
                // Started again by the recall: waited for like any other.
                let mut t = self.lock();
                Parked::visible(&self.replica, &mut t, owner, handle)?
                    .finished
                    .clone()
            }
            Ok(signal) => signal,
        };
        let mut rx = signal.subscribe();
        let _ = tokio::time::timeout(limit, rx.wait_for(|done| *done)).await;
        self.get(owner, handle)
    }

    /// `tasks/get`: the state now, with the last few lines.
    pub fn get(&self, owner: &Principal, handle: &str) -> Result<Snapshot, ParkError> {
        let mut t = self.lock();
        self.sweep(&mut t);
        let e = Parked::visible(&self.replica, &mut t, owner, handle)?;
        let (logs, _) = e.events.tail(STATUS_LOG_LINES);
        let progress = e.events.latest_progress();
        Ok(snapshot(handle, e, logs, progress, &self.limits))
    }

    /// The entries `owner` holds: (handle, kind, running).
    pub fn list(&self, owner: &Principal) -> Vec<(String, Kind, bool)> {
        let mut t = self.lock();
        self.sweep(&mut t);
        let mut out: Vec<(Instant, String, Kind, bool)> = t
            .handles
            .iter()
            .filter(|(_, o, e)| *o == owner && e.visible)
            .map(|(h, _, e)| {
                (
                    e.created,
                    h.clone(),
                    e.kind,
                    matches!(e.state, State::Running),
                )
            })
            .collect();
        out.sort_by_key(|x| x.0);
        out.into_iter().map(|(_, h, k, r)| (h, k, r)).collect()
    }

    /// Counts for `health`: running, finished and kept, bytes kept.
    pub fn report(&self) -> Value {
        let mut t = self.lock();
        self.sweep(&mut t);
        let running = t
            .handles
            .iter()
            .filter(|(_, _, e)| matches!(e.state, State::Running))
            .count();
        json!({
            "running": running,
            "kept": t.handles.len() - running,
            "keptBytes": t.kept_bytes,
        })
    }

    /// Drops finished results past their keep time now (the runtime does it every few
    /// seconds, so their memory goes even when nobody asks).
    pub fn sweep_now(&self) {
        let mut t = self.lock();
        self.sweep(&mut t);
    }

    /// Drops finished results past their keep time (the table's expiry rule; a handle the
    /// client saw is remembered as expired).
    fn sweep(&self, t: &mut Table) {
        let keep = self.limits.keep_result();
        let reason = format!(
            "it expired: results are kept for {} ms after the run finished \
             (longRuns.keepResultMs)",
            self.limits.keep_result_ms
        );
        let ended = t.handles.expire(|e| match e.state {
            State::Finished { at, .. } if at.elapsed() >= keep => {
                Fate::Ends(e.visible.then(|| reason.clone()))
            }
            _ => Fate::Stays,
        });
        for (_, e) in ended {
            t.unkeep(&e);
        }
    }
}

/// Questions a long run of a 2026-07-28 client puts through its handle.
impl Parked {
    /// The run behind `handle` asks its client `asks` (see the module docs). Questions of an
    /// entry that is gone are dropped, which the asker sees as no answer.
    pub fn ask(&self, handle: &str, asks: Vec<Ask>) {
        let mut t = self.lock();
        let Some(e) = t.handles.get_mut(handle) else {
            return;
        };
        e.questions.retain(Question::open);
        for ask in asks {
            e.asked += 1;
            e.questions.push(Question {
                key: format!("q{}", e.asked),
                request: ask.request,
                reply: ask.reply,
            });
        }
        e.asking.notify_one();
    }

    /// `tasks/update`: the client's answers to the task's open questions, by key; a key that
    /// names no open question is ignored (it was answered, or timed out, meanwhile).
    pub fn answer(
        &self,
        owner: &Principal,
        handle: &str,
        mut responses: rmcp::model::InputResponses,
    ) -> Result<(), ParkError> {
        let mut t = self.lock();
        self.sweep(&mut t);
        let e = Parked::visible(&self.replica, &mut t, owner, handle)?;
        for q in std::mem::take(&mut e.questions) {
            match responses.remove(&q.key) {
                Some(answer) => {
                    let _ = q.reply.send(answer);
                }
                None if q.open() => e.questions.push(q),
                None => {}
            }
        }
        Ok(())
    }
}

/// Drops the oldest finished entry (of `owner`, or of anyone): false when there is none.
fn drop_oldest_finished(t: &mut Table, owner: Option<&Principal>, why: &str) -> bool {
    let oldest = t
        .handles
        .iter()
        .filter(|(_, o, _)| owner.is_none_or(|owner| *o == owner))
        .filter_map(|(h, _, e)| match e.state {
            State::Finished { at, .. } => Some((at, h.clone())),
            State::Running => None,
        })
        .min_by_key(|x| x.0);
    match oldest {
        Some((_, h)) => {
            remove(t, &h, why.to_string());
            true
        }
        None => false,
    }
}

fn remove(t: &mut Table, handle: &str, reason: String) {
    if let Some(e) = t.handles.end(handle, |e| e.visible.then_some(reason)) {
        t.unkeep(&e);
    }
}

impl Table {
    /// An entry left: the bytes its kept result held are free.
    fn unkeep(&mut self, e: &Entry) {
        if let State::Finished { bytes, .. } = e.state {
            self.kept_bytes = self.kept_bytes.saturating_sub(bytes);
        }
    }
}

/// What a kept outcome costs: its JSON size plus a little per log line.
fn outcome_bytes(o: &ExecOutcome) -> usize {
    o.result.to_string().len()
        + o.logs.iter().map(|l| l.text.len() + 32).sum::<usize>()
        + o.error.as_ref().map_or(0, |e| {
            e.message.len() + e.stack.as_ref().map_or(0, String::len)
        })
        + 256
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(text: &str) -> ExecOutcome {
        let mut o = ExecOutcome::cancelled();
        o.error = None;
        o.result = Value::String(text.into());
        o
    }

    fn limits() -> LongRunLimits {
        LongRunLimits {
            max_parked_per_client: 2,
            max_parked: 3,
            ..Default::default()
        }
    }

    fn reserve(p: &Parked, who: &Principal) -> Result<String, ParkError> {
        p.reserve(
            Kind::Yielded,
            Duration::from_secs(60),
            &ExecContext::new(who.clone()),
        )
    }

    async fn hand_out(p: &Parked, h: &str) {
        assert!(matches!(
            p.publish_as(h, Duration::ZERO, true).await,
            Some(Published::Handed(_))
        ));
    }

    #[tokio::test]
    async fn another_client_sees_the_same_unknown_as_a_handle_never_issued() {
        let p = Parked::new(limits());
        let (a, b) = (Principal::new("a"), Principal::new("b"));
        let h = reserve(&p, &a).unwrap_or_default();
        hand_out(&p, &h).await;
        assert!(p.get(&a, &h).is_ok());
        assert_eq!(p.get(&b, &h).err(), Some(ParkError::Unknown(h.clone())));
        assert_eq!(
            p.get(&b, "run-nope").err(),
            Some(ParkError::Unknown("run-nope".into()))
        );
    }

    #[tokio::test]
    async fn a_replicas_handle_names_it_and_stays_bound_to_its_client() {
        let here = Replica::named("r1").unwrap_or_default();
        let p = Parked::new(limits()).with_replica(here);
        let other = Parked::new(limits()).with_replica(Replica::named("r2").unwrap_or_default());
        let (a, b) = (Principal::new("a"), Principal::new("b"));
        let h = reserve(&p, &a).unwrap_or_default();
        hand_out(&p, &h).await;
        assert!(h.starts_with("run-") && h.ends_with("@r1"), "{h}");
        assert!(p.get(&a, &h).is_ok());
        // On its own replica another client still gets "unknown".
        assert_eq!(p.get(&b, &h).err(), Some(ParkError::Unknown(h.clone())));
        // Elsewhere, the answer names the replica to route to.
        let err = other.get(&a, &h).err();
        assert!(
            matches!(&err, Some(ParkError::WrongReplica { elsewhere, .. }) if elsewhere.owner == "r1"),
            "{err:?}"
        );
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.contains("replica \"r1\"") && text.contains("this is replica \"r2\""),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_client_at_its_limit_drops_its_oldest_finished_result_first() {
        let p = Parked::new(limits());
        let a = Principal::new("a");
        let first = reserve(&p, &a).unwrap_or_default();
        hand_out(&p, &first).await;
        p.finish(&first, outcome("one"));
        let second = reserve(&p, &a).unwrap_or_default();
        hand_out(&p, &second).await;
        // Two held (one finished): the finished one makes room.
        let third = reserve(&p, &a).unwrap_or_default();
        hand_out(&p, &third).await;
        assert!(matches!(p.get(&a, &first), Err(ParkError::Gone { .. })));
        // Two running: refused, with the setting named.
        assert_eq!(
            reserve(&p, &a).err(),
            Some(ParkError::Full {
                held: 2,
                limit: 2,
                setting: "maxParkedPerClient"
            })
        );
    }

    #[tokio::test]
    async fn a_run_that_finished_before_it_was_handed_out_is_answered_directly() {
        let p = Parked::new(limits());
        let a = Principal::new("a");
        let h = reserve(&p, &a).unwrap_or_default();
        p.finish(&h, outcome("done"));
        match p.publish_as(&h, Duration::from_secs(5), false).await {
            Some(Published::Finished(o)) => assert_eq!(o.result, json!("done")),
            _ => panic!("expected the outcome"),
        }
        assert_eq!(p.get(&a, &h).err(), Some(ParkError::Unknown(h.clone())));
        assert_eq!(p.report()["keptBytes"], 0);
    }

    #[tokio::test]
    async fn results_past_the_memory_limit_drop_the_oldest_first() {
        let p = Parked::new(LongRunLimits {
            max_kept_mb: 1,
            ..Default::default()
        });
        let a = Principal::new("a");
        let big = "x".repeat(600 << 10);
        let first = reserve(&p, &a).unwrap_or_default();
        hand_out(&p, &first).await;
        p.finish(&first, outcome(&big));
        let second = reserve(&p, &a).unwrap_or_default();
        hand_out(&p, &second).await;
        p.finish(&second, outcome(&big));
        assert!(
            matches!(p.get(&a, &first), Err(ParkError::Gone { reason, .. }) if reason.contains("maxKeptMb"))
        );
        assert!(p.get(&a, &second).is_ok());
    }

    #[tokio::test]
    async fn an_expired_result_says_it_expired() {
        let p = Parked::new(LongRunLimits {
            keep_result_ms: 1,
            ..Default::default()
        });
        let a = Principal::new("a");
        let h = reserve(&p, &a).unwrap_or_default();
        hand_out(&p, &h).await;
        p.finish(&h, outcome("done"));
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(
            matches!(p.get(&a, &h), Err(ParkError::Gone { reason, .. }) if reason.contains("expired"))
        );
    }
}
