//! Which worker a run uses and where it goes afterwards: a pooled one (killed after its one
//! execution, the pool topped up), one of its own for the execution's file grants, or its
//! session's (back into the session's slot when the run left it usable, and nothing of the
//! run's code still runs in it: [`Lease::retire`], [`RULE`]).

use std::sync::Arc;

use super::error::RunError;
use super::live::sessions::{self as session, Session, SessionError, Sessions, Slot};
use super::outcome::ExecOutcome;
use super::run::execution::ExecContext;
use super::worker::pool::{self, Pool};
use super::worker::process::WorkerError;
use super::worker::{process as worker, workspace};

/// How long a worker that served its one execution is left before it is killed and reaped.
/// Its end (the process tree, its namespaces and mounts: about a millisecond of CPU) then
/// follows the answer instead of competing with writing it: killed at once, it cost a
/// trivial execution 0.3-0.4 ms on a 2-core machine. A worker whose run failed or ran out
/// of time was killed already; this one has sent its result and waits for its next frame.
/// Only pooled workers wait: a worker of its own may have a workspace, deleted at once.
const REAP_DELAY: std::time::Duration = std::time::Duration::from_millis(2);

/// What a session's slot says while a run holds its worker: a run that never gives it back
/// (its call was cancelled) leaves this for the next one.
const CANCELLED: &str = "the session's last execution was cancelled before it finished, so its \
                         worker was stopped";

/// Why a session's worker that code of an execution outlives is stopped, and what to do.
pub const RULE: &str = "code of one execution must not run on into the next one (under \
     its grants), so a session's worker is stopped when an execution leaves threads, tasks, \
     processes or timers running; join threads (t.join()), shut executors down (`with \
     ThreadPoolExecutor() as ex:`), await tasks, wait for child processes and delete POSIX \
     timers before the code ends";

/// The worker of one run and where it goes afterwards.
pub struct Lease<'a> {
    pub worker: worker::WorkerProcess,
    home: Home<'a>,
    /// The data paths the worker's view holds (a session keeps them with its worker).
    data: Vec<std::path::PathBuf>,
    /// A session's worker was gone: why (the answer says so).
    pub state_lost: Option<String>,
    /// Why the worker must not serve another execution although the run ended well
    /// ([`Lease::retire`]).
    retired: Option<String>,
}

enum Home<'a> {
    /// A pooled worker: it serves one execution, then dies, and the pool is topped up.
    Pool(Refill<'a>),
    /// A worker started for this execution's grants (its own view): it dies after it.
    Own,
    /// A session's worker: back into its slot if the run left it usable.
    Session {
        session: &'a Arc<Session>,
        slot: tokio::sync::MutexGuard<'a, Slot>,
    },
}

impl<'a> Lease<'a> {
    /// A worker that has received the encoded `run`: a pooled one, or the session's (waiting
    /// for the session's earlier executions, in order; started afresh when it is gone). For a
    /// session, `before` is set to its workspace's usage once the earlier runs are over and
    /// before this one has the code (it starts at once).
    pub async fn take(
        pool: &'a Pool,
        session: Option<&'a Arc<Session>>,
        run: &[u8],
        sessions: &Sessions,
        ctx: &ExecContext,
        before: &mut workspace::Usage,
        files: &Files,
    ) -> Result<Lease<'a>, RunError> {
        if session.is_none() && files.needs_own_worker() {
            let w = start_own_worker(
                pool,
                &files.data,
                files.workspace.as_deref(),
                sessions,
                "the execution's worker",
                run,
            )
            .await?;
            return Ok(Lease {
                worker: w,
                home: Home::Own,
                data: files.data.clone(),
                state_lost: None,
                retired: None,
            });
        }
        let Some(session) = session else {
            // However the run ends (even abandoned by its client), the pool gets a replacement.
            let refill = Refill(pool);
            let worker = hand_over(pool, run).await?;
            return Ok(Lease {
                worker,
                home: Home::Pool(refill),
                data: Vec::new(),
                state_lost: None,
                retired: None,
            });
        };
        let mut slot = match session.slot.try_lock() {
            Ok(slot) => slot,
            Err(_) => {
                if let Some(client) = &ctx.client {
                    client.waiting("waiting for the session's previous execution to finish");
                }
                session.slot.lock().await
            }
        };
        // Ended (reset, idle) while this execution waited for it.
        if let Some(reason) = session.ended() {
            return Err(SessionError::EndedWhileWaiting {
                id: session.id.clone(),
                reason: reason.as_str(),
            }
            .into());
        }
        *before = workspace::measure(&session.workspace, sessions.limits(), Some(*before)).await;
        if !before.kernel {
            // What changes from now on is this run's, to take back if it fails the quota.
            before.since = super::worker::tree::fs_now(&session.workspace);
        }
        let mut state_lost = slot.lost.take();
        let mut kept = slot.worker.take();
        slot.lost = Some(CANCELLED.into());
        // A kept worker's view holds the read grants it was started with: other grants need
        // another worker.
        if let Some(w) = kept.take_if(|_| slot.data != files.data) {
            tokio::spawn(w.finish());
            state_lost = Some(
                "the session's worker was restarted because this execution's read grants \
                 (permissions.read) differ from the last one's"
                    .into(),
            );
        }
        // Code of the last execution still running in the kept worker (started while it
        // waited, past the check at that execution's end) must not act in this one.
        if let Some(w) = kept.take_if(|w| w.has_unread() || w.leftovers().is_some()) {
            state_lost = Some(format!(
                "the session's worker was stopped: {}; {RULE}",
                match w.leftovers() {
                    Some(left) =>
                        format!("while it waited for this execution, the code had {left} running"),
                    None => "while it waited for this execution, the code wrote to the server (output or \
                             requests)"
                        .into(),
                }
            ));
            tokio::spawn(w.finish());
        }
        let mut worker = None;
        if let Some(mut w) = kept.take() {
            match w.send_encoded(run).await {
                Ok(()) => worker = Some(w),
                Err(_) => {
                    state_lost = Some(format!(
                        "the session's worker was gone while idle ({})",
                        w.exit_description().await
                    ));
                }
            }
        }
        let worker = match worker {
            Some(w) => w,
            None => {
                start_own_worker(
                    pool,
                    &files.data,
                    Some(&session.workspace),
                    sessions,
                    "the session's new worker",
                    run,
                )
                .await?
            }
        };
        Ok(Lease {
            worker,
            home: Home::Session { session, slot },
            data: files.data.clone(),
            state_lost,
            retired: None,
        })
    }

    /// Stops the worker with this run although it ended well, for `why`: the next run of
    /// its session starts a fresh one and says so.
    pub fn retire(&mut self, why: String) {
        self.worker.kill();
        self.retired = Some(why);
    }

    /// After the run: a pooled worker is killed (off the request path); a session's worker
    /// goes back to its slot if the run finished `reusable` (no reply left half-sent), the
    /// session still lives and the worker's memory is within the session limit; otherwise
    /// it is stopped and the slot says why for the next run.
    pub fn give_back(self, reusable: Option<bool>, out: &ExecOutcome, sessions: &Sessions) {
        let Lease {
            mut worker,
            home,
            data,
            retired,
            ..
        } = self;
        let (session, mut slot) = match home {
            // The pool's refill is woken when `_refill` drops, after the answer is ready.
            Home::Pool(_refill) => return reap_later(worker),
            // Killed now: its workspace is deleted right after, and nothing of the code may
            // write into it meanwhile.
            Home::Own => {
                worker.kill();
                tokio::spawn(worker.finish());
                return;
            }
            Home::Session { session, slot } => (session, slot),
        };
        let max_memory = sessions.limits().max_worker_memory_mb * 1024 * 1024;
        let memory = worker.memory_now();
        let lost = match reusable {
            _ if session.ended().is_some() => None,
            Some(_) if retired.is_some() => retired,
            Some(true) if memory.is_some_and(|m| m > max_memory) => Some(format!(
                "the session's worker held {} MiB after its last execution, more than \
                 sessions.maxWorkerMemoryMb ({} MiB), so it was stopped",
                memory.unwrap_or(0) >> 20,
                max_memory >> 20
            )),
            Some(true) => {
                session.set_memory(memory.unwrap_or(0));
                slot.worker = Some(worker);
                slot.data = data;
                slot.lost = None;
                return;
            }
            Some(false) => Some(
                "the session's last execution ended with tool calls still unanswered, so its \
                 worker was stopped"
                    .into(),
            ),
            None => Some(match &out.error {
                Some(e) => format!(
                    "the session's last execution ended with {}: {}",
                    e.name, e.message
                ),
                None => "the session's last execution ended its worker".into(),
            }),
        };
        slot.lost = lost;
        session.set_memory(0);
        tokio::spawn(worker.finish());
    }
}

/// Kills and reaps a worker that served its one execution, [`REAP_DELAY`] from now.
fn reap_later(worker: worker::WorkerProcess) {
    tokio::spawn(async move {
        tokio::time::sleep(REAP_DELAY).await;
        worker.finish().await
    });
}

/// The files an execution was granted: data paths its view shows read-only, and the
/// workspace of its own (outside a session).
#[derive(Default)]
pub struct Files {
    pub data: Vec<std::path::PathBuf>,
    pub workspace: Option<std::path::PathBuf>,
}

impl Files {
    fn needs_own_worker(&self) -> bool {
        !self.data.is_empty() || self.workspace.is_some()
    }
}

/// Starts a worker of its own for one execution or a session: confined as a pooled one, plus
/// `data` (read-only, never executable) and `workspace` as its one writable directory and
/// working directory, mounted at [`session::WORKSPACE_MOUNT`] (with the sandbox off: at its host
/// path), each file capped at the workspace quota; then hands it the encoded `run`. `which`
/// names the worker in errors.
async fn start_own_worker(
    pool: &Pool,
    data: &[std::path::PathBuf],
    workspace: Option<&std::path::Path>,
    sessions: &Sessions,
    which: &str,
    run: &[u8],
) -> Result<worker::WorkerProcess, RunError> {
    let mut spawner = pool.spawner().clone();
    spawner.policy.data_paths = data.to_vec();
    if let Some(ws) = workspace {
        spawner.policy.scratch_dir = Some(ws.to_owned());
        spawner.policy.scratch_mount_at = Some(session::WORKSPACE_MOUNT.into());
        // The default working directory is the scratch directory, wherever the worker sees it.
        spawner.command.cwd = None;
        let quota = sessions.limits().workspace_quota_bytes().max(1);
        spawner.policy.limits.max_file_size_bytes =
            spawner.policy.limits.max_file_size_bytes.min(quota);
    }
    let mut worker = spawner
        .spawn()
        .await
        .map_err(|e| RunError::Sandbox(format!("cannot start {which}: {e}")))?;
    worker
        .send_encoded(run)
        .await
        .map_err(|e| RunError::Sandbox(format!("{which} did not take the code: {e}")))?;
    Ok(worker)
}

/// A worker that has received the encoded `run`. A worker that died before it could take
/// the code (a pooled one killed meanwhile) is replaced, a bounded number of times: nothing of
/// the code ran, so the execution does not see it.
async fn hand_over(pool: &Pool, run: &[u8]) -> Result<worker::WorkerProcess, WorkerError> {
    let mut attempt = 1;
    loop {
        let mut worker = pool.take().await?;
        match worker.send_encoded(run).await {
            Ok(()) => return Ok(worker),
            Err(e) if attempt < pool::START_ATTEMPTS => {
                tracing::warn!("a worker died before it received the code ({e}); using another");
                attempt += 1;
                tokio::spawn(worker.finish());
            }
            Err(e) => return Err(WorkerError::NoneTookTheCode(Box::new(e))),
        }
    }
}

/// Tops its pool up when dropped, which happens after the answer is ready.
struct Refill<'a>(&'a Pool);

impl Drop for Refill<'_> {
    fn drop(&mut self) {
        self.0.replenish();
    }
}
