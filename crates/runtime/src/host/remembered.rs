//! What approvals remember: tools approved for one execution ([`ExecutionApprovals`]), and
//! "approve for the session" answers kept for a session or a client ([`Remembered`]).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// Scopes (sessions, clients) whose "approve for the session" answers are remembered; past
/// this many the store starts over (a forgotten approval is asked again, never widened).
const MAX_REMEMBERED_SCOPES: usize = 4_096;

/// Tools approved for a whole session or client ("approve for the session"), and the
/// server-wide inbox of approvals waiting for a person ([`super::inbox`]).
#[derive(Default)]
pub struct Remembered {
    by_scope: Mutex<HashMap<String, HashSet<String>>>,
    pub inbox: std::sync::Arc<super::inbox::Inbox>,
}

impl Remembered {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashSet<String>>> {
        self.by_scope
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn has(&self, scope: &str, tool: &str) -> bool {
        self.lock().get(scope).is_some_and(|s| s.contains(tool))
    }

    pub fn add(&self, scope: &str, tool: &str) {
        let mut all = self.lock();
        if all.len() >= MAX_REMEMBERED_SCOPES && !all.contains_key(scope) {
            all.clear();
        }
        all.entry(scope.to_string())
            .or_default()
            .insert(tool.to_string());
    }
}

/// What one execution's approvals hold.
#[derive(Default)]
pub struct ExecutionApprovals {
    pub asking: tokio::sync::Mutex<()>,
    approved: Mutex<HashSet<String>>,
    pub remembered: std::sync::Arc<Remembered>,
}

impl ExecutionApprovals {
    pub fn new(remembered: std::sync::Arc<Remembered>) -> Self {
        ExecutionApprovals {
            remembered,
            ..ExecutionApprovals::default()
        }
    }

    pub fn execution_has(&self, tool: &str) -> bool {
        self.approved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(tool)
    }

    pub fn execution_add(&self, tool: &str) {
        self.approved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(tool.to_string());
    }
}
