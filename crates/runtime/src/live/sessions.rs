//! Sessions: a worker that outlives one execution, the values code stores on the host, and a
//! workspace directory, owned by the principal that created them.
//!
//! `session: "new"` mints a handle (`s_` and 32 hex digits: 128 random bits) bound to the
//! caller's principal; later calls pass it back. A handle another principal sends is refused
//! exactly as one that never existed. Executions of one session run one at a time, in the
//! order they arrive, in the session's own worker (never one from the pool), so what the code
//! defined is there for the next one. Stored values and the workspace live on the host and
//! survive that worker: when it dies (a crash, a deadline, a cancelled call, too much memory)
//! the next execution starts a fresh worker and says what was lost. Nothing of one
//! execution acts in the next (under its grants): a worker that an execution left threads or
//! processes running in is stopped with it (`runtime::lease`, `WorkerProcess::leftovers`).
//!
//! A session ends when asked (`reset`), when idle past `sessions.idleTimeoutS`, when it is
//! evicted (the oldest idle one goes first when a client or the server is at its limit), or
//! with the server; its worker is killed and its workspace deleted. Ended handles are
//! remembered (a bounded number), so the next call with one says why it ended.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};

use crate::live::durable::{Durable, Revived};
use crate::live::table::{Fate, Handles, Miss, mint};
use crate::worker::{Language, WorkerProcess, bounded, roots, tree};
use policy::audit::{AuditEvent, AuditLog};
use policy::principal::Principal;
use policy::replica::{Elsewhere, Replica};
use policy::session_limits::SessionLimits;

/// Ended sessions remembered so that their next call can say why they ended.
const ENDED_KEPT: usize = 4096;
/// Session handles are `s_` and 128 random bits in hex.
const HANDLE_PREFIX: &str = "s_";

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    Reset,
    Idle,
    Evicted,
    Shutdown,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Reset => "reset",
            EndReason::Idle => "idle",
            EndReason::Evicted => "evicted",
            EndReason::Shutdown => "shutdown",
        }
    }

    fn explain(self, limits: &SessionLimits) -> String {
        match self {
            EndReason::Reset => "it was ended with reset: true".into(),
            EndReason::Idle => format!(
                "it was idle for more than {} s (sessions.idleTimeoutS)",
                limits.idle_timeout_s
            ),
            EndReason::Evicted => format!(
                "it was evicted, being the oldest idle session, to make room for a newer one \
                 (at most {} per client and {} on the server)",
                limits.max_per_client, limits.max_workers
            ),
            EndReason::Shutdown => "the server shut down".into(),
        }
    }
}

/// Why a session could not be used or made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SessionError {
    #[error(
        "unknown session \"{0}\": no session of this client has that handle; start one with \
         session: \"new\""
    )]
    Unknown(String),
    #[error("session \"{id}\" is not here: {elsewhere}")]
    WrongReplica { id: String, elsewhere: Elsewhere },
    #[error(
        "session \"{id}\" has ended: {why}; its variables, stored values and workspace are \
         gone; start a new one with session: \"new\""
    )]
    Ended { id: String, why: String },
    #[error(
        "session \"{id}\" is a {has} session; run {has} code in it, or start a {asked} \
         session with session: \"new\""
    )]
    WrongLanguage {
        id: String,
        has: &'static str,
        asked: &'static str,
    },
    #[error("sessions are turned off on this server (sessions.maxWorkers is 0)")]
    Disabled,
    #[error(
        "{0}; every one is running an execution, so none can be evicted: wait for one to \
         finish, or end one with reset: true"
    )]
    Full(String),
    #[error("reset ends a session: pass the session's handle as session, with reset: true")]
    ResetWithoutHandle,
    #[error(
        "session \"{id}\" ended ({reason}) before this execution could start in it; start a \
         new one with session: \"new\""
    )]
    EndedWhileWaiting { id: String, reason: &'static str },
    /// Its replay after a restart (`crate::service::replay`) did not reproduce an earlier
    /// execution.
    #[error(
        "session \"{id}\" could not be rebuilt after a restart: replaying its execution {cell} \
         of {of} diverged: {why}. Its variables are not there; its stored values are. Reset \
         it (reset: true) to start over, or try again"
    )]
    ReplayDiverged {
        id: String,
        cell: usize,
        of: usize,
        why: String,
    },
    #[error("cannot create the session's workspace {path}: {reason}")]
    Workspace { path: String, reason: String },
    /// The durable store could not be read for a session of an earlier server.
    #[error("session \"{id}\" cannot be brought back after a restart: {error}")]
    Durable {
        id: String,
        error: store::StoreError,
    },
}

/// Why a value was not stored.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StoreError {
    #[error("the store is unavailable")]
    Unavailable,
    /// The durable store refused or failed (`--store`): nothing was stored.
    #[error("{0}; the value was not stored")]
    Durable(store::StoreError),
    #[error(
        "storing {size} bytes under {key:?} would bring this session's stored values to \
         {total} bytes, past its limit of {max} (sessions.maxStoreBytes); store less, or \
         forget keys with store(key) first"
    )]
    Full {
        size: u64,
        key: String,
        total: u64,
        max: u64,
    },
}

/// The worker of a session and what became of the last one.
pub struct Slot {
    pub worker: Option<WorkerProcess>,
    /// Why the session has no worker (it died, was stopped or retired): the next execution
    /// starts a fresh one and says so.
    pub lost: Option<String>,
    /// The read grants (data paths) the kept worker's view holds.
    pub data: Vec<PathBuf>,
}

#[derive(Default)]
pub(super) struct Store {
    pub(super) values: BTreeMap<String, (Value, u64)>,
    pub(super) bytes: u64,
}

/// One session.
pub struct Session {
    pub id: String,
    pub principal: Principal,
    pub language: Language,
    created: Instant,
    last_used: Mutex<Instant>,
    /// Executions holding or waiting for the worker: a session in use is never idle.
    users: AtomicUsize,
    executions: AtomicU64,
    /// One execution at a time, in arrival order (tokio's mutex is fair).
    pub slot: tokio::sync::Mutex<Slot>,
    pub(super) store: Mutex<Store>,
    pub(super) max_store_bytes: u64,
    /// The durable store its stored values go to too (`super::durable`).
    pub(super) durable: Option<Durable>,
    /// Its language is in the durable store (with its first stored value): its records are
    /// touched while it lives and deleted when it ends.
    pub(super) durable_opened: std::sync::atomic::AtomicBool,
    /// When its durable records were last given more time.
    pub(super) touched: Mutex<Instant>,
    /// How long its durable records outlive its last use (`sessions.idleTimeoutS`).
    pub(super) idle_ttl: std::time::Duration,
    /// The only writable directory of the session's worker.
    pub workspace: PathBuf,
    /// How its quota is enforced (a bounded tmpfs, or the host's measurement).
    workspace_bound: bounded::Bound,
    /// Resident memory of the worker after its last execution.
    memory: AtomicU64,
    ended: Mutex<Option<EndReason>>,
    /// The session's token map of personal data (`pii`): tokens stay the same across its
    /// executions.
    pub pii: Arc<policy::pii::vault::Vault>,
    /// Cells of its earlier life to replay on its fresh worker before its next execution
    /// (a session brought back after a restart; `crate::service::replay`).
    pub replay: tokio::sync::Mutex<Option<Vec<super::durable::Cell>>>,
    /// Cells recorded for its replay so far (the next one's index).
    pub cells: AtomicU64,
}

/// Marks a session in use while it lives (an execution holds or awaits its worker).
pub struct InUse(Arc<Session>);

impl Drop for InUse {
    fn drop(&mut self) {
        if let Ok(mut t) = self.0.last_used.lock() {
            *t = Instant::now();
        }
        self.0.users.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Session {
    pub fn in_use(self: &Arc<Self>) -> InUse {
        self.users.fetch_add(1, Ordering::AcqRel);
        self.executions.fetch_add(1, Ordering::Relaxed);
        InUse(self.clone())
    }

    /// The durable store its records go to, if any.
    pub fn durable(&self) -> Option<&Durable> {
        self.durable.as_ref()
    }

    /// How long its durable records outlive its last use.
    pub fn idle_ttl(&self) -> std::time::Duration {
        self.idle_ttl
    }

    /// Puts its language in the durable store (once), so that a restart can bring it back.
    pub async fn open_durably(&self) -> Result<(), store::StoreError> {
        let Some(d) = &self.durable else {
            return Ok(());
        };
        if self.durable_opened.load(Ordering::Acquire) {
            return Ok(());
        }
        d.session_opened(
            &self.principal,
            &self.id,
            self.language.tool_language(),
            self.idle_ttl,
        )
        .await?;
        self.durable_opened.store(true, Ordering::Release);
        Ok(())
    }

    /// Drops its worker (its next execution starts a fresh one and says `why`).
    pub async fn drop_worker(&self, why: String) {
        let mut slot = self.slot.lock().await;
        slot.worker = None;
        slot.lost = Some(why);
    }

    pub fn ended(&self) -> Option<EndReason> {
        self.ended.lock().ok().and_then(|e| *e)
    }

    fn idle_for(&self) -> Option<std::time::Duration> {
        if self.users.load(Ordering::Acquire) > 0 {
            return None;
        }
        self.last_used.lock().ok().map(|t| t.elapsed())
    }

    pub fn set_memory(&self, bytes: u64) {
        self.memory.store(bytes, Ordering::Relaxed);
    }

    /// Keeps `value` under `key`, or forgets the key (`None`). The store's bytes (keys plus
    /// JSON values) stay within the session's cap.
    pub fn store(&self, key: String, value: Option<Value>) -> Result<(), StoreError> {
        let mut store = self.store.lock().map_err(|_| StoreError::Unavailable)?;
        let size = self.room(&store, &key, value.as_ref())?;
        let old = store.values.remove(&key).map_or(0, |(_, n)| n);
        store.bytes -= old;
        if let Some(value) = value {
            store.bytes += size;
            store.values.insert(key, (value, size));
        }
        Ok(())
    }

    /// Refuses `value` under `key` when it would bring the store past the session's cap.
    pub(super) fn check_room(&self, key: &str, value: Option<&Value>) -> Result<(), StoreError> {
        let store = self.store.lock().map_err(|_| StoreError::Unavailable)?;
        self.room(&store, key, value).map(|_| ())
    }

    /// What `value` under `key` takes, if it fits `store` within the cap.
    fn room(&self, store: &Store, key: &str, value: Option<&Value>) -> Result<u64, StoreError> {
        let Some(value) = value else { return Ok(0) };
        let old = store.values.get(key).map_or(0, |(_, n)| *n);
        let size = (key.len() + value.to_string().len()) as u64;
        let total = store.bytes - old + size;
        if total > self.max_store_bytes {
            return Err(StoreError::Full {
                size,
                key: key.to_string(),
                total,
                max: self.max_store_bytes,
            });
        }
        Ok(size)
    }

    /// The value kept under `key`.
    pub fn load(&self, key: &str) -> Option<Value> {
        let store = self.store.lock().ok()?;
        store.values.get(key).map(|(v, _)| v.clone())
    }

    fn describe(&self) -> Value {
        let store = self.store.lock().map(|s| (s.values.len(), s.bytes));
        let (keys, store_bytes) = store.unwrap_or((0, 0));
        json!({
            "session": self.id,
            "language": self.language.tool_language(),
            "ageMs": self.created.elapsed().as_millis() as u64,
            "idleMs": self.idle_for().map(|d| d.as_millis() as u64),
            "executions": self.executions.load(Ordering::Relaxed),
            "memoryBytes": self.memory.load(Ordering::Relaxed),
            "storedKeys": keys,
            "storedBytes": store_bytes,
            "workspaceBound": self.workspace_bound.as_str(),
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // The last holder is gone (the table and every execution): the worker dies with the
        // slot; the workspace goes with the session.
        if let Err(e) = tree::remove(&self.workspace) {
            tracing::warn!(
                "cannot delete the workspace {} of session {}: {e}",
                self.workspace.display(),
                self.id
            );
        }
    }
}

/// The live sessions, bound to their principals, and the ended ones with why.
type Table = Handles<Arc<Session>, EndReason>;

/// Every session of the server.
pub struct Sessions {
    limits: SessionLimits,
    /// Where workspaces are made (one directory per session).
    root: PathBuf,
    table: Mutex<Table>,
    /// Tags new handles, refuses another replica's.
    replica: Replica,
    /// The root's lock file, held (`flock`) from when the root is made until the process
    /// ends: how a later server tells a live root from one whose server died
    /// ([`roots::remove_stale_roots`]).
    root_lock: Mutex<Option<std::fs::File>>,
    /// The durable store stored values go to too (`super::durable`).
    pub(super) durable: Option<Durable>,
    /// Held while a session of an earlier server is brought back (one at a time).
    pub(super) reviving: tokio::sync::Mutex<()>,
}

impl Sessions {
    pub fn new(limits: SessionLimits, root: PathBuf) -> Sessions {
        Sessions {
            limits,
            root,
            table: Mutex::new(Handles::new(ENDED_KEPT)),
            replica: Replica::single(),
            root_lock: Mutex::new(None),
            durable: None,
            reviving: tokio::sync::Mutex::new(()),
        }
    }

    /// Makes the root (if it is not there yet) and holds its lock.
    pub fn ensure_root(&self) -> std::io::Result<()> {
        make_dir(&self.root, 0o711)?;
        let mut held = self.root_lock.lock().unwrap_or_else(|p| p.into_inner());
        if held.is_none() {
            *held = Some(roots::hold_lock(&self.root)?);
        }
        Ok(())
    }

    /// Handles end in `@ID` of `replica` (see `policy::replica`).
    pub fn with_replica(mut self, replica: Replica) -> Sessions {
        self.replica = replica;
        self
    }

    /// Stored values go to `durable` too.
    pub fn set_durable(&mut self, durable: Durable) {
        self.durable = Some(durable);
    }

    pub fn limits(&self) -> &SessionLimits {
        &self.limits
    }

    /// A new session of `principal` in `language`, evicting the oldest idle session when the
    /// client or the server is at its limit.
    pub fn create(
        &self,
        principal: &Principal,
        language: Language,
        audit: &AuditLog,
    ) -> Result<Arc<Session>, SessionError> {
        self.open(principal, language, audit, None)
    }

    /// A new session, or (`revived`) one of an earlier server brought back under its handle
    /// with its stored values and a note of what was lost.
    pub(super) fn open(
        &self,
        principal: &Principal,
        language: Language,
        audit: &AuditLog,
        mut revived: Option<Revived>,
    ) -> Result<Arc<Session>, SessionError> {
        if self.limits.max_workers == 0 {
            return Err(SessionError::Disabled);
        }
        let id = match &revived {
            Some(r) => r.id.clone(),
            None => mint(&self.replica, HANDLE_PREFIX),
        };
        let workspace = self.root.join(&id);
        self.ensure_root()
            .and_then(|()| make_dir(&workspace, 0o700))
            .map_err(|e| SessionError::Workspace {
                path: workspace.display().to_string(),
                reason: e.to_string(),
            })?;
        let workspace_bound = bounded::mount_on(&workspace, &self.limits);
        // A session brought back with cells to replay gets its variables back; one without
        // says what was lost.
        let replay = revived.as_mut().and_then(|r| r.cells.take());
        let lost = revived
            .as_ref()
            .filter(|_| replay.is_none())
            .map(|r| r.lost.clone());
        let session = Arc::new(Session {
            id: id.clone(),
            principal: principal.clone(),
            language,
            created: Instant::now(),
            last_used: Mutex::new(Instant::now()),
            users: AtomicUsize::new(0),
            executions: AtomicU64::new(0),
            slot: tokio::sync::Mutex::new(Slot {
                worker: None,
                lost,
                data: Vec::new(),
            }),
            store: Mutex::new(revived.as_ref().map(restored).unwrap_or_default()),
            max_store_bytes: self.limits.max_store_bytes,
            durable: self.durable.clone(),
            durable_opened: std::sync::atomic::AtomicBool::new(revived.is_some()),
            touched: Mutex::new(Instant::now()),
            idle_ttl: self.limits.idle_timeout(),
            workspace,
            workspace_bound,
            memory: AtomicU64::new(0),
            replay: tokio::sync::Mutex::new(replay),
            cells: AtomicU64::new(revived.as_ref().map_or(0, |r| r.recorded)),
            ended: Mutex::new(None),
            pii: Arc::default(),
        });
        let mut evicted = Vec::new();
        {
            let mut table = self.lock();
            if table.held_by(principal).count() >= self.limits.max_per_client {
                let victim = oldest_idle(table.held_by(principal)).ok_or_else(|| {
                    SessionError::Full(format!(
                        "this client already holds {} sessions (sessions.maxPerClient)",
                        self.limits.max_per_client
                    ))
                })?;
                evicted.extend(self.remove(&mut table, &victim.id, EndReason::Evicted));
            }
            if table.len() >= self.limits.max_workers {
                let victim = oldest_idle(table.iter().map(|(_, _, s)| s)).ok_or_else(|| {
                    SessionError::Full(format!(
                        "the server already holds {} sessions (sessions.maxWorkers)",
                        self.limits.max_workers
                    ))
                })?;
                evicted.extend(self.remove(&mut table, &victim.id, EndReason::Evicted));
            }
            table.insert(id, principal.clone(), session.clone());
        }
        for s in evicted {
            end_audit(audit, &s, EndReason::Evicted);
        }
        audit.record(AuditEvent::SessionStart {
            session: session.id.clone(),
            client: principal.to_string(),
            language: language.tool_language(),
        });
        Ok(session)
    }

    /// The live session `id` of `principal`, for `language`.
    pub fn get(
        &self,
        principal: &Principal,
        id: &str,
        language: Language,
    ) -> Result<Arc<Session>, SessionError> {
        let mut table = self.lock();
        match table.find(&self.replica, principal, id, |_| true) {
            Ok(s) if s.language != language => Err(SessionError::WrongLanguage {
                id: id.to_string(),
                has: s.language.tool_language(),
                asked: language.tool_language(),
            }),
            Ok(s) => Ok(s.clone()),
            Err(Miss::Elsewhere(elsewhere)) => Err(SessionError::WrongReplica {
                id: id.to_string(),
                elsewhere,
            }),
            Err(Miss::Gone(reason)) => Err(SessionError::Ended {
                id: id.to_string(),
                why: reason.explain(&self.limits),
            }),
            Err(Miss::Unknown) => Err(SessionError::Unknown(id.to_string())),
        }
    }

    /// Ends session `id` (if it is still live) for `reason`.
    pub fn end(&self, id: &str, reason: EndReason, audit: &AuditLog) {
        let removed = self.remove(&mut self.lock(), id, reason);
        if let Some(s) = removed {
            end_audit(audit, &s, reason);
        }
    }

    /// Ends the sessions idle past the timeout (the table's expiry rule for sessions).
    pub fn end_idle(&self, audit: &AuditLog) {
        let timeout = self.limits.idle_timeout();
        let ended = self.lock().expire(|s| match s.idle_for() {
            Some(idle) if idle >= timeout => Fate::Ends(Some(EndReason::Idle)),
            _ => Fate::Stays,
        });
        for (_, s) in ended {
            ended_now(&s, EndReason::Idle);
            end_audit(audit, &s, EndReason::Idle);
        }
    }

    /// Ends every session (the server is stopping).
    pub fn end_all(&self, audit: &AuditLog) {
        let ids: Vec<String> = self.lock().iter().map(|(id, _, _)| id.clone()).collect();
        for id in ids {
            self.end(&id, EndReason::Shutdown, audit);
        }
    }

    /// Every live session.
    pub(super) fn all(&self) -> Vec<Arc<Session>> {
        self.lock().iter().map(|(_, _, s)| s.clone()).collect()
    }

    /// Sessions live now (all principals): the `/metrics` gauge.
    pub fn count(&self) -> usize {
        self.lock().len()
    }

    /// What `health` shows: counts for the server, details of the caller's own sessions.
    pub fn report(&self, principal: &Principal) -> Value {
        let table = self.lock();
        let mut mine: Vec<&Arc<Session>> = table.held_by(principal).collect();
        mine.sort_by_key(|s| s.created);
        json!({
            "count": table.len(),
            "maxWorkers": self.limits.max_workers,
            "maxPerClient": self.limits.max_per_client,
            "idleTimeoutS": self.limits.idle_timeout_s,
            "mine": mine.iter().map(|s| s.describe()).collect::<Vec<_>>(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes session `id` out of the table (remembered as ended for `reason`) and marks it
    /// ended; its worker and workspace go when the last execution holding it lets go.
    fn remove(&self, table: &mut Table, id: &str, reason: EndReason) -> Option<Arc<Session>> {
        let removed = table.end(id, |_| Some(reason))?;
        ended_now(&removed, reason);
        if reason != EndReason::Shutdown {
            forget(&removed);
        }
        Some(removed)
    }
}

/// Marks `s` ended for `reason`; an idle session's worker is stopped now, not when the Arc
/// goes.
fn ended_now(s: &Session, reason: EndReason) {
    if let Ok(mut e) = s.ended.lock() {
        *e = Some(reason);
    }
    if let Ok(mut slot) = s.slot.try_lock() {
        slot.worker = None;
    }
}

impl Drop for Sessions {
    fn drop(&mut self) {
        // Sessions still live hold their workspaces under the root; the server is going.
        if let Err(e) = tree::remove(&self.root) {
            tracing::warn!(
                "cannot delete the session workspaces {}: {e}",
                self.root.display()
            );
        }
    }
}

/// Where a session's worker sees its workspace: the same path in every session, so that
/// scripts and messages can name it; the host path (which names the server) stays hidden.
pub const WORKSPACE_MOUNT: &str = "/workspace";

/// The workspace of one execution outside a session (a write grant): a fresh directory
/// beside the sessions' (mode 0700), deleted with this value.
pub struct RunWorkspace(pub PathBuf);

impl Drop for RunWorkspace {
    fn drop(&mut self) {
        if let Err(e) = tree::remove(&self.0) {
            tracing::warn!("cannot delete the workspace {}: {e}", self.0.display());
        }
    }
}

impl Sessions {
    /// A new workspace for the execution `execution` (not in a session).
    pub fn run_workspace(&self, execution: &str) -> Result<RunWorkspace, SessionError> {
        let tag = crate::ids::random_hex::<8>();
        let safe: String = execution
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(32)
            .collect();
        let path = self.root.join(format!("run-{safe}-{tag}"));
        self.ensure_root()
            .and_then(|()| make_dir(&path, 0o700))
            .map_err(|e| SessionError::Workspace {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
        // Bounded by the kernel where the server may mount (`super::bounded`).
        let workspace = RunWorkspace(path);
        bounded::mount_on(&workspace.0, &self.limits);
        Ok(workspace)
    }
}

/// The stored values a session of an earlier server comes back with.
fn restored(r: &Revived) -> Store {
    let mut store = Store::default();
    for (k, v) in &r.values {
        let size = (k.len() + v.to_string().len()) as u64;
        store.bytes += size;
        store.values.insert(k.clone(), (v.clone(), size));
    }
    store
}

/// Deletes the durable records of a session that ended (in the background; they expire
/// anyway).
fn forget(s: &Arc<Session>) {
    let (Some(d), Ok(rt)) = (s.durable.clone(), tokio::runtime::Handle::try_current()) else {
        return;
    };
    if !s.durable_opened.load(Ordering::Acquire) {
        return;
    }
    let (principal, id) = (s.principal.clone(), s.id.clone());
    rt.spawn(async move {
        if let Err(e) = d.forget_session(&principal, &id).await {
            tracing::warn!("cannot delete the stored values of ended session {id}: {e}");
        }
    });
}

fn end_audit(audit: &AuditLog, s: &Session, reason: EndReason) {
    audit.record(AuditEvent::SessionEnd {
        session: s.id.clone(),
        client: s.principal.to_string(),
        reason: reason.as_str(),
        duration_ms: (s.created.elapsed().as_secs_f64() * 1e6).round() / 1e3,
        executions: s.executions.load(Ordering::Relaxed),
    });
}

fn oldest_idle<'a>(sessions: impl Iterator<Item = &'a Arc<Session>>) -> Option<Arc<Session>> {
    sessions
        .filter_map(|s| s.idle_for().map(|d| (d, s)))
        .max_by_key(|(d, _)| *d)
        .map(|(_, s)| s.clone())
}

/// Makes `path` (its parent exists) with `mode`, unless it is already there.
fn make_dir(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(mode).create(path) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && path.is_dir() => Ok(()),
        other => other,
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
