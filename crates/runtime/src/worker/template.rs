//! Workers forked from a template per spawner (`sandbox::Template`, `docs/sandbox.md`,
//! "Workers forked from a template"), and the process a [`super::WorkerProcess`] is: a child
//! the host spawned, or a worker a template forked, known by its pidfd.
//!
//! A [`TemplateSlot`] belongs to one spawner (a language and a confinement without grants
//! or scratch): it starts the template on first use, replaces it after
//! [`REPLACE_AFTER`] workers (the workers of one template share its address-space layout:
//! JavaScript runs in the forked process itself) and when it has died, retrying the request
//! on the fresh one; should that fail too, the spawner starts the worker with a helper of its
//! own, as without a template. Switched on with `CODE_EXECUTOR_WORKER_TEMPLATE=1`.

use std::os::fd::{AsFd, OwnedFd};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Workers one template forks before a fresh one replaces it: every worker of a template
/// shares its address-space layout (a JavaScript worker runs in the forked process, without
/// an `execve`), so the layout an execution might learn is another's for at most this many
/// workers. A template costs about one worker's start, so this adds about 1% to each.
pub const REPLACE_AFTER: u64 = 100;

/// The environment variable that switches templates on (`1`, `on`, `true`).
pub const TEMPLATE_ENV: &str = "CODE_EXECUTOR_WORKER_TEMPLATE";

/// How a spawner starts its workers, as `doctor` and `health` say it.
pub fn start_path(policy: &sandbox::SandboxPolicy) -> String {
    match why_not(policy) {
        None => format!(
            "template per spawner (workers forked with their own user, PID, IPC and UTS namespaces and Landlock domain; a template replaced every {REPLACE_AFTER} workers)"
        ),
        Some(why) => format!("a sandbox helper per worker ({why})"),
    }
}

/// Why workers of `policy` are not forked from a template; `None` when they are.
fn why_not(policy: &sandbox::SandboxPolicy) -> Option<String> {
    let on =
        std::env::var(TEMPLATE_ENV).is_ok_and(|v| matches!(v.trim(), "1" | "on" | "true" | "yes"));
    if !on {
        return Some(format!("templates are off; {TEMPLATE_ENV}=1 turns them on"));
    }
    if policy.mode != sandbox::SandboxMode::Enforce {
        return Some("the sandbox is off".into());
    }
    sandbox::template_support().err().map(|e| e.to_string())
}

/// Whether a worker of `command` under `policy` may come from the template made for
/// `base`: the same program, arguments and confinement, and nothing granted or writable
/// (grants and sessions keep a helper per worker).
fn same_confinement(
    base: &(sandbox::WorkerCommand, sandbox::SandboxPolicy),
    command: &sandbox::WorkerCommand,
    policy: &sandbox::SandboxPolicy,
) -> bool {
    policy.data_paths.is_empty()
        && policy.scratch_dir.is_none()
        && base.1 == *policy
        && base.0.program == command.program
        && base.0.args == command.args
        && base.0.cwd == command.cwd
}

/// The template of one spawner.
pub struct TemplateSlot {
    base: (sandbox::WorkerCommand, sandbox::SandboxPolicy),
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    current: Option<Arc<sandbox::Template>>,
    served: u64,
    started: u64,
}

impl std::fmt::Debug for TemplateSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateSlot").finish_non_exhaustive()
    }
}

impl TemplateSlot {
    /// A slot for workers of `command` under `policy`, when templates are on and the kernel
    /// has what they need; `None` otherwise (see [`start_path`]).
    pub fn for_spawner(
        command: &sandbox::WorkerCommand,
        policy: &sandbox::SandboxPolicy,
    ) -> Option<Arc<Self>> {
        if policy.data_paths.is_empty() && policy.scratch_dir.is_none() {
            if why_not(policy).is_some() {
                return None;
            }
            Some(Arc::new(Self {
                base: (command.clone(), policy.clone()),
                state: Mutex::new(SlotState::default()),
            }))
        } else {
            None
        }
    }

    /// Whether a worker of `command` under `policy` may come from this slot's template.
    pub fn serves(
        &self,
        command: &sandbox::WorkerCommand,
        policy: &sandbox::SandboxPolicy,
    ) -> bool {
        same_confinement(&self.base, command, policy)
    }

    /// Templates started so far (the first, and each replacement).
    pub fn started(&self) -> u64 {
        self.state.lock().map_or(0, |s| s.started)
    }

    /// Forks a worker with the environment `env` (blocking: run it off the async threads).
    /// A template that has died, or refuses, is replaced and the request tried once more on
    /// the fresh one.
    pub fn spawn(
        &self,
        env: &[(std::ffi::OsString, std::ffi::OsString)],
    ) -> Result<(sandbox::TemplateWorker, Arc<sandbox::Template>), sandbox::SandboxError> {
        let mut last = None;
        for _ in 0..2 {
            let template = {
                let mut state = self
                    .state
                    .lock()
                    .map_err(|_| sandbox::SandboxError::Io(std::io::Error::other("poisoned")))?;
                if state.served >= REPLACE_AFTER {
                    // Retired: it forks nothing more, and ends when its last worker has.
                    state.current = None;
                }
                let template = match &state.current {
                    Some(t) if t.is_alive() => t.clone(),
                    _ => {
                        let t = Arc::new(sandbox::Template::start(&self.base.0, &self.base.1)?);
                        state.current = Some(t.clone());
                        state.served = 0;
                        state.started += 1;
                        t
                    }
                };
                state.served += 1;
                template
            };
            match template.spawn(env) {
                Ok(worker) => return Ok((worker, template)),
                Err(e) => {
                    tracing::warn!(target: "worker", "worker template failed, replacing it: {e}");
                    if let Ok(mut state) = self.state.lock()
                        && state
                            .current
                            .as_ref()
                            .is_some_and(|c| Arc::ptr_eq(c, &template))
                    {
                        state.current = None;
                    }
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| sandbox::SandboxError::Io(std::io::Error::other("no template"))))
    }
}

/// The process of a worker: spawned by the host, or forked by a template.
pub(crate) enum WorkerChild {
    Spawned(tokio::process::Child),
    /// Known by a pidfd of its first process (the template is its parent, and reaps it); the
    /// template's death ends it too.
    Forked(OwnedFd, Arc<sandbox::Template>),
}

impl WorkerChild {
    /// Whether it has ended.
    pub fn ended(&mut self) -> bool {
        match self {
            WorkerChild::Spawned(child) => !matches!(child.try_wait(), Ok(None)),
            WorkerChild::Forked(pidfd, template) => {
                !template.is_alive() || sandbox::pidfd_ended(pidfd.as_fd())
            }
        }
    }

    /// Kills it and every process it started (`pid`: its process group).
    pub fn kill(&mut self, pid: u32) {
        match self {
            WorkerChild::Spawned(child) => {
                sandbox::kill_group(pid);
                let _ = child.start_kill();
            }
            WorkerChild::Forked(pidfd, _) => sandbox::pidfd_kill_group(pidfd.as_fd()),
        }
    }

    /// How it ended, once it has (the caller bounds the wait).
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        match self {
            WorkerChild::Spawned(child) => child.wait().await,
            WorkerChild::Forked(pidfd, _) => {
                // Its status is there once it has ended and the template has reaped it.
                loop {
                    if let Some(raw) = sandbox::pidfd_exit_status(pidfd.as_fd()) {
                        return Ok(ExitStatus::from_raw(raw));
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        }
    }
}

impl Drop for WorkerChild {
    /// A forked worker dropped unkilled is killed, as a spawned one is (`kill_on_drop`).
    fn drop(&mut self) {
        if let WorkerChild::Forked(pidfd, _) = self
            && !sandbox::pidfd_ended(pidfd.as_fd())
        {
            sandbox::pidfd_kill_group(pidfd.as_fd());
        }
    }
}
