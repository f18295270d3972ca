//! Sessions through the durable store (`super::durable`): stored values written there before
//! `store` answers, a session of an earlier server brought back under its handle (a fresh
//! worker without the variables of its earlier runs, which are not replayed; its stored
//! values; its workspace files are gone), its records kept alive while it lives and deleted
//! when it ends (not when the server stops: that is what a restart brings back).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use serde_json::Value;

use super::durable::Revived;
use super::sessions::{Session, SessionError, Sessions, StoreError};
use crate::worker::Language;
use policy::audit::AuditLog;
use policy::principal::Principal;

/// What a revived session's next execution says when its cells cannot be replayed.
const LOST: &str = "the server restarted since this session's last execution: its variables \
    and functions were lost (its executions cannot be replayed: one could not be kept in the \
    store, one's call log passed its cap, or there were more than the replay keeps) and so \
    were its workspace files; its \
    stored values were kept (load(key) reads them)";

impl Session {
    /// `store` (`None`: forget the key), written to the durable store first when there is one:
    /// a value is acknowledged only once it is durable, and a store that fails leaves the
    /// session's values as they were. `exit` tokenises personal data in what is written
    /// when code sees values (`pii`).
    pub async fn store_durably(
        &self,
        key: String,
        value: Option<Value>,
        exit: Option<&policy::pii::Exit>,
    ) -> Result<(), StoreError> {
        let Some(d) = self.durable.clone() else {
            return self.store(key, value);
        };
        self.check_room(&key, value.as_ref())?;
        let ttl = self.idle_ttl;
        if value.is_some() {
            self.open_durably().await.map_err(StoreError::Durable)?;
        }
        if self.durable_opened.load(Ordering::Acquire) {
            let mut written = value.clone();
            if let (Some(v), Some(exit)) = (written.as_mut(), exit) {
                exit.value(v);
            }
            d.session_value(&self.principal, &self.id, &key, written.as_ref(), ttl)
                .await
                .map_err(StoreError::Durable)?;
        }
        self.store(key, value)
    }
}

impl Sessions {
    /// Session `id` of `principal` as an earlier server left it in the durable store, brought
    /// back under its handle (`None`: the store has no such session, or there is no store).
    pub async fn revive(
        &self,
        principal: &Principal,
        id: &str,
        language: Language,
        audit: &AuditLog,
    ) -> Result<Option<Arc<Session>>, SessionError> {
        let Some(d) = &self.durable else {
            return Ok(None);
        };
        // One at a time: two requests with the handle must not bring back two sessions.
        let _one = self.reviving.lock().await;
        if let Ok(s) = self.get(principal, id, language) {
            return Ok(Some(s));
        }
        let found = d
            .session(principal, id)
            .await
            .map_err(|error| SessionError::Durable {
                id: id.to_string(),
                error,
            })?;
        let Some((has, values)) = found else {
            return Ok(None);
        };
        if has != language.tool_language() {
            let has = [Language::Python, Language::JavaScript]
                .into_iter()
                .map(Language::tool_language)
                .find(|l| *l == has)
                .unwrap_or("other");
            return Err(SessionError::WrongLanguage {
                id: id.to_string(),
                has,
                asked: language.tool_language(),
            });
        }
        let cells =
            d.session_cells(principal, id)
                .await
                .map_err(|error| SessionError::Durable {
                    id: id.to_string(),
                    error,
                })?;
        let recorded = cells.len() as u64;
        // Whole, within the cap, and no log cut short: replayable.
        let cells: Option<Vec<_>> = cells.into_iter().collect();
        // None at all: they were forgotten (one could not be kept; a session in the store ran
        // at least once).
        let cells = cells.filter(|c| {
            !c.is_empty()
                && recorded < super::durable::MAX_SESSION_CELLS
                && c.iter().all(|c| {
                    !c.log
                        .iter()
                        .any(|e| matches!(e, crate::run::calllog::Entry::Truncated { .. }))
                })
        });
        let revived = Revived {
            id: id.to_string(),
            lost: LOST.to_string(),
            values,
            cells,
            recorded,
        };
        self.open(principal, language, audit, Some(revived))
            .map(Some)
    }

    /// Gives the durable records of the sessions alive here more time (every half idle
    /// timeout at most), so that they outlive the server by about `sessions.idleTimeoutS`.
    pub async fn touch_durable(&self) {
        if self.durable.is_none() {
            return;
        }
        let due: Vec<Arc<Session>> = self
            .all()
            .into_iter()
            .filter(|s| s.durable_opened.load(Ordering::Acquire))
            .filter(|s| {
                s.touched
                    .lock()
                    .map(|t| t.elapsed() >= s.idle_ttl / 2)
                    .unwrap_or(false)
            })
            .collect();
        for s in due {
            let Some(d) = &s.durable else { continue };
            match d.touch_session(&s.principal, &s.id, s.idle_ttl).await {
                Ok(()) => {
                    if let Ok(mut t) = s.touched.lock() {
                        *t = Instant::now();
                    }
                }
                Err(e) => tracing::warn!("cannot keep session {}'s stored values: {e}", s.id),
            }
        }
    }
}
