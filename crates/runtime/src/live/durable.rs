//! What of the live handles goes through the durable store (`store`, docs/store.md), so that
//! it outlives the server process:
//!
//! - **A session's stored values** (`store`/`load`): kind `session-value`, key
//!   `{handle}/{key}`, written before `store` answers (a store that fails makes `store`
//!   fail: nothing is acknowledged that is not durable), and the session's language (kind
//!   `session`, key the handle) with its first value. Both expire `sessions.idleTimeoutS`
//!   after the session was last alive (the sweep touches them while it lives); a session
//!   that ends (reset, idle, evicted) deletes them; one that ends with its server keeps them.
//!   After a restart its handle works again: a fresh worker, without the variables of earlier
//!   runs (their replay is not built), with the stored values.
//! - **Runs with a handle** (tasks and `wait` handles): kind `run`, key the handle, written
//!   when the handle is handed out (running) and when the run finishes (its outcome), for
//!   the keep time. After a restart `tasks/get`, `tasks/result` and `wait` answer a finished
//!   run from here, and a run that was still running when its server stopped as failed: lost
//!   to the restart, with the ledger of what it had completed (its call log, kind
//!   `calllog`, key `{handle}/{index}`: `crate::run::calllog`).
//!
//! Nothing is written for an execution that has no handle and stores nothing. What is written
//! is redacted first (the secrets the server knows become `[redacted]`), and a session whose
//! code sees personal data as values has its stored values tokenised as they leave; the
//! token map itself stays in memory (docs/store.md).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::outcome::{ExecOutcome, LogEntry};
use policy::principal::Principal;
use policy::redact::Redactor;
use store::{Key, Shared, StoreError};
use worker_protocol::ErrorInfo;

/// A session's language, under its handle.
pub const SESSION: &str = "session";
/// A session's stored value, under `{handle}/{key}`.
pub const SESSION_VALUE: &str = "session-value";
/// A run with a handle (a task, a `wait` handle), under its handle.
pub const RUN: &str = "run";
/// An execution of a session (a cell) with its call log, under `{handle}/{index:06}`: a
/// session brought back after a restart replays them on its fresh worker
/// (`crate::service::replay`).
pub const SESSION_CELL: &str = "session-cell";
/// Most cells a session keeps for its replay; past them it cannot be replayed (its next
/// life says its variables were lost, as before replays).
pub const MAX_SESSION_CELLS: u64 = 500;
/// A request to cancel a run with a handle that runs on another replica, under the handle:
/// its replica reads them ([`Durable::cancel_requests`]) and cancels the run.
pub const RUN_CANCEL: &str = "run-cancel";
/// A server process that is alive, under its boot id ([`Durable::keep_alive`]), kept by
/// the principal [`SERVERS`]: no client's records are ever of this kind.
pub const BOOT: &str = "boot";
/// Whose records the servers' own are.
const SERVERS: &str = "servers";
/// How often a server says it is alive, and how long after its last word it is taken for
/// gone (its runs still `running` in the store are then lost, not running elsewhere).
pub const BEAT: Duration = Duration::from_secs(5);
pub const BEAT_TTL: Duration = Duration::from_secs(15);

/// The store, as the live handles use it.
#[derive(Clone)]
pub struct Durable {
    store: Shared,
    /// This process: a run record of another one still `running` was lost with its server.
    boot: Arc<str>,
    redactor: Arc<Redactor>,
}

impl Durable {
    pub fn new(store: Shared, redactor: Arc<Redactor>) -> Durable {
        Durable {
            store,
            boot: Arc::from(crate::ids::random_hex::<8>()),
            redactor,
        }
    }

    pub fn store(&self) -> &Shared {
        &self.store
    }

    pub fn boot(&self) -> &str {
        &self.boot
    }

    /// Says this process is alive every [`BEAT`], for as long as the tokio runtime runs:
    /// replicas sharing the store tell a run still running on a live replica from one lost
    /// with its server by it ([`Durable::alive`]). A beat that fails is logged; the others
    /// then take this server for gone after [`BEAT_TTL`], and answer its unfinished runs
    /// as lost, which is what they are to a client that cannot reach it.
    pub fn keep_alive(&self) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(BEAT);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if let Err(e) = me.beat().await {
                    tracing::warn!("store: cannot say this server is alive: {e}");
                }
            }
        });
    }

    /// One beat: this process is alive for [`BEAT_TTL`] more.
    pub async fn beat(&self) -> Result<(), StoreError> {
        self.store
            .put(Key::new(SERVERS, BOOT, &self.boot), b"{}", BEAT_TTL)
            .await
    }

    /// Whether the process `boot` has said it is alive within [`BEAT_TTL`].
    pub async fn alive(&self, boot: &str) -> Result<bool, StoreError> {
        if boot == &*self.boot {
            return Ok(true);
        }
        Ok(self
            .store
            .get(Key::new(SERVERS, BOOT, boot))
            .await?
            .is_some())
    }

    /// What every record is cleaned with before it is written.
    pub fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    /// Run `handle`'s call log as the store has it, in order.
    pub async fn call_log(
        &self,
        owner: &Principal,
        handle: &str,
    ) -> Result<Vec<crate::run::calllog::Entry>, StoreError> {
        crate::run::calllog::read(&self.store, &owner.to_string(), handle).await
    }

    /// `value` as JSON with every known secret redacted.
    fn redacted(&self, value: &impl Serialize) -> Vec<u8> {
        let text = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
        self.redactor.str(&text).into_owned().into_bytes()
    }

    /// Keeps session `id`'s language (with its first stored value).
    pub async fn session_opened(
        &self,
        owner: &Principal,
        id: &str,
        language: &str,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let meta = SessionMeta {
            language: language.to_string(),
        };
        let p = owner.to_string();
        self.store
            .put(Key::new(&p, SESSION, id), &self.redacted(&meta), ttl)
            .await
    }

    /// Keeps (or, with `None`, deletes) session `id`'s value under `key`.
    pub async fn session_value(
        &self,
        owner: &Principal,
        id: &str,
        key: &str,
        value: Option<&Value>,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let p = owner.to_string();
        let k = format!("{id}/{key}");
        match value {
            Some(v) => {
                self.store
                    .put(Key::new(&p, SESSION_VALUE, &k), &self.redacted(v), ttl)
                    .await
            }
            None => self
                .store
                .delete(Key::new(&p, SESSION_VALUE, &k))
                .await
                .map(|_| ()),
        }
    }

    /// Session `id`'s language and stored values, if the store has it.
    pub async fn session(
        &self,
        owner: &Principal,
        id: &str,
    ) -> Result<Option<(String, Vec<(String, Value)>)>, StoreError> {
        let p = owner.to_string();
        let Some(meta) = self.store.get(Key::new(&p, SESSION, id)).await? else {
            return Ok(None);
        };
        let Ok(meta) = serde_json::from_slice::<SessionMeta>(&meta) else {
            return Ok(None);
        };
        let prefix = format!("{id}/");
        let values = self
            .store
            .list(&p, SESSION_VALUE, &prefix)
            .await?
            .into_iter()
            .filter_map(|(k, v)| {
                let key = k.strip_prefix(&prefix)?.to_string();
                serde_json::from_slice(&v).ok().map(|v| (key, v))
            })
            .collect();
        Ok(Some((meta.language, values)))
    }

    /// Keeps cell `index` of session `id` (its code, request and call log) for `ttl`.
    pub async fn session_cell(
        &self,
        owner: &Principal,
        id: &str,
        index: u64,
        cell: &Cell,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let p = owner.to_string();
        let k = format!("{id}/{index:06}");
        self.store
            .put(Key::new(&p, SESSION_CELL, &k), &self.redacted(cell), ttl)
            .await
    }

    /// Forgets session `id`'s cells: it cannot be replayed (one could not be kept).
    pub async fn forget_cells(&self, owner: &Principal, id: &str) -> Result<(), StoreError> {
        let p = owner.to_string();
        self.store
            .delete_prefix(&p, SESSION_CELL, &format!("{id}/"))
            .await
            .map(|_| ())
    }

    /// Session `id`'s cells, in order; a cell that does not read back, or one missing before
    /// it, is a gap, which makes the whole unreplayable (`None` in its place).
    pub async fn session_cells(
        &self,
        owner: &Principal,
        id: &str,
    ) -> Result<Vec<Option<Cell>>, StoreError> {
        let p = owner.to_string();
        let mut cells = self.store.list(&p, SESSION_CELL, &format!("{id}/")).await?;
        cells.sort_by(|a, b| a.0.cmp(&b.0));
        let prefix = format!("{id}/");
        Ok(cells
            .into_iter()
            .enumerate()
            .map(|(i, (k, v))| {
                // A cell missing before this one (its write failed) is a gap here too.
                let at = k.strip_prefix(&prefix)?.parse::<usize>().ok()?;
                (at == i).then(|| serde_json::from_slice(&v).ok())?
            })
            .collect())
    }

    /// Gives session `id`'s records `ttl` more.
    pub async fn touch_session(
        &self,
        owner: &Principal,
        id: &str,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let p = owner.to_string();
        self.store.touch_prefix(&p, SESSION, id, ttl).await?;
        self.store
            .touch_prefix(&p, SESSION_VALUE, &format!("{id}/"), ttl)
            .await?;
        self.store
            .touch_prefix(&p, SESSION_CELL, &format!("{id}/"), ttl)
            .await?;
        Ok(())
    }

    /// Deletes session `id`'s records (it ended).
    pub async fn forget_session(&self, owner: &Principal, id: &str) -> Result<(), StoreError> {
        let p = owner.to_string();
        self.store
            .delete_prefix(&p, SESSION_VALUE, &format!("{id}/"))
            .await?;
        self.store
            .delete_prefix(&p, SESSION_CELL, &format!("{id}/"))
            .await?;
        self.store.delete(Key::new(&p, SESSION, id)).await?;
        Ok(())
    }

    /// Keeps what is known of run `handle` for `ttl`.
    pub async fn put_run(
        &self,
        owner: &Principal,
        handle: &str,
        record: &RunRecord,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let p = owner.to_string();
        self.store
            .put(Key::new(&p, RUN, handle), &self.redacted(record), ttl)
            .await
    }

    /// Every run the store has of `owner`: (handle, record), oldest first.
    pub async fn runs(&self, owner: &Principal) -> Result<Vec<(String, RunRecord)>, StoreError> {
        let p = owner.to_string();
        let mut out: Vec<(String, RunRecord)> = self
            .store
            .list(&p, RUN, "")
            .await?
            .into_iter()
            .filter_map(|(k, v)| serde_json::from_slice(&v).ok().map(|r| (k, r)))
            .collect();
        out.sort_by_key(|(_, r)| r.created_ms);
        Ok(out)
    }

    /// Asks the replica that runs `handle` to cancel it (`by`: how the client asked).
    pub async fn request_cancel(
        &self,
        owner: &Principal,
        handle: &str,
        by: &str,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let p = owner.to_string();
        self.store
            .put(Key::new(&p, RUN_CANCEL, handle), by.as_bytes(), ttl)
            .await
    }

    /// The cancel requests the store has for `owner`'s runs: (handle, how the client asked).
    pub async fn cancel_requests(
        &self,
        owner: &Principal,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let p = owner.to_string();
        Ok(self
            .store
            .list(&p, RUN_CANCEL, "")
            .await?
            .into_iter()
            .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
            .collect())
    }

    /// A cancel request that was carried out.
    pub async fn forget_cancel(&self, owner: &Principal, handle: &str) -> Result<(), StoreError> {
        let p = owner.to_string();
        self.store
            .delete(Key::new(&p, RUN_CANCEL, handle))
            .await
            .map(|_| ())
    }

    /// What the store has of run `handle` of `owner`.
    pub async fn run(
        &self,
        owner: &Principal,
        handle: &str,
    ) -> Result<Option<RunRecord>, StoreError> {
        let p = owner.to_string();
        Ok(self
            .store
            .get(Key::new(&p, RUN, handle))
            .await?
            .and_then(|v| serde_json::from_slice(&v).ok()))
    }
}

/// What a session of an earlier server comes back with (`super::revive`).
pub struct Revived {
    pub id: String,
    /// What the next execution says was lost.
    pub lost: String,
    pub values: Vec<(String, Value)>,
    /// Its cells, to replay before its next execution (`None`: it cannot be replayed, and
    /// its variables are lost).
    pub cells: Option<Vec<Cell>>,
    /// The cells it had recorded (the next one's index).
    pub recorded: u64,
}

#[derive(Serialize, Deserialize)]
struct SessionMeta {
    language: String,
}

/// A run with a handle, as the store keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// The process that ran it ([`Durable::boot`]).
    pub boot: String,
    /// `task` or `yielded`.
    pub kind: String,
    pub documents: bool,
    pub created_at: String,
    /// Unix milliseconds.
    pub created_ms: i64,
    pub keep_ms: u64,
    #[serde(default)]
    pub cancelled_by: Option<String>,
    /// Set once it finished.
    #[serde(default)]
    pub finished: Option<StoredOutcome>,
    #[serde(default)]
    pub updated_at: Option<String>,
    #[serde(default)]
    pub finished_ms: Option<i64>,
    /// What starts it again (a run paused for a person when its server stopped is replayed
    /// against its call log); `None` for a skill's run.
    #[serde(default)]
    pub resume: Option<Resume>,
}

/// What a run with a handle is started again from: its request, and its call log's seed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resume {
    /// `typescript` or `python`.
    pub language: String,
    pub code: String,
    pub timeout_ms: Option<u64>,
    pub allowed_tools: Option<Vec<String>>,
    pub limits: policy::RequestLimits,
    pub enable_sampling: bool,
    pub permissions: Option<policy::access::PermissionsRequest>,
    pub seed: u64,
}

/// One execution of a session as the store keeps it for the session's replay: what started
/// it, its call log, and how it ended (the error's name, if it failed), which its replay
/// must match.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    pub run: Resume,
    pub log: Vec<crate::run::calllog::Entry>,
    #[serde(default)]
    pub failed: Option<String>,
}

/// An outcome as the store keeps it (the answer's fields; not the audit's).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredOutcome {
    pub result: Value,
    pub logs: Vec<(String, String)>,
    pub error: Option<ErrorInfo>,
    pub tool_calls: u32,
    pub duration_ms: f64,
    pub warning: Option<String>,
    pub output_file: Option<String>,
}

impl StoredOutcome {
    pub fn of(o: &ExecOutcome) -> StoredOutcome {
        StoredOutcome {
            result: o.result.clone(),
            logs: o
                .logs
                .iter()
                .map(|l| (l.level.to_string(), l.text.clone()))
                .collect(),
            error: o.error.clone(),
            tool_calls: o.tool_calls,
            duration_ms: o.duration_ms,
            warning: o.warning.clone(),
            output_file: o.output_file.clone(),
        }
    }

    pub fn outcome(self) -> ExecOutcome {
        let mut o = ExecOutcome::refused(ErrorInfo {
            name: String::new(),
            message: String::new(),
            stack: None,
        });
        o.result = self.result;
        o.logs = self
            .logs
            .into_iter()
            .map(|(level, text)| LogEntry {
                level: static_level(&level),
                text,
            })
            .collect();
        o.error = self.error;
        o.tool_calls = self.tool_calls;
        o.duration_ms = self.duration_ms;
        o.warning = self.warning;
        o.output_file = self.output_file;
        o
    }
}

fn static_level(level: &str) -> &'static str {
    match level {
        "debug" => "debug",
        "info" => "info",
        "warn" => "warn",
        "error" => "error",
        _ => "log",
    }
}

/// The outcome of a run that was still running when its server stopped, with the `ledger`
/// of what it had completed (`crate::run::calllog::ledger`), when its call log could be read.
pub fn lost_outcome(record: &RunRecord, ledger: Option<&str>) -> ExecOutcome {
    let known = match ledger {
        Some(ledger) => format!(
            "{ledger}. A call that was under way when it stopped is not listed and may have \
             been made"
        ),
        None => "Its call log could not be read, so which of its tool calls it made is not \
                 known"
            .into(),
    };
    ExecOutcome::refused(ErrorInfo {
        name: "LostToRestart".into(),
        message: format!(
            "this run was lost to a server restart: it was still running (started {}) when \
             its server stopped, and it did not finish. {known}. Check the effects of its \
             calls before running it again, and do not repeat what it completed",
            record.created_at
        ),
        stack: None,
    })
}
