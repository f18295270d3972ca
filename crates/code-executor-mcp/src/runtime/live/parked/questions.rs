//! Questions a long run of a 2026-07-28 client puts through its handle (module docs of
//! `parked`): kept on the entry under keys unique over the run's life, shown by `tasks/get` and
//! `wait`, answered by `tasks/update` or a retried `wait`.

use serde_json::Value;

use super::{Entry, ParkError, Parked};
use crate::principal::Principal;
use crate::runtime::run::client::Ask;

/// A question a task put to its client, until `tasks/update` answers it.
pub(crate) struct Question {
    pub(crate) key: String,
    pub(crate) request: Value,
    reply: tokio::sync::oneshot::Sender<Value>,
}

impl Question {
    /// Its asker still waits (it did not time out or go away).
    pub(crate) fn open(&self) -> bool {
        !self.reply.is_closed()
    }
}

impl Entry {
    /// The questions still waiting for an answer.
    pub(crate) fn open_questions(&self) -> impl Iterator<Item = &Question> {
        self.questions.iter().filter(|q| q.open())
    }
}

impl Parked {
    /// The run behind `handle` asks its client `asks` (see the module docs). Questions of an
    /// entry that is gone are dropped, which the asker sees as no answer.
    pub(crate) fn ask(&self, handle: &str, asks: Vec<Ask>) {
        let mut t = self.lock();
        let Some(e) = t.entries.get_mut(handle) else {
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
    pub(crate) fn answer(
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
