//! The one thread that forks every child of [`crate::command`].
//!
//! A parent-death signal (`PR_SET_PDEATHSIG`) fires when the *thread* that forked the child
//! exits, not when its process does. A child forked on a short-lived thread (a blocking-pool
//! thread that the async runtime retires after a few idle seconds, a test's thread) would be
//! killed with that thread, in the middle of its work. Every child that should live exactly
//! as long as the host is therefore forked on this thread, which is started once and never
//! exits: its parent-death signal then means "the host process is gone".
//!
//! Workers are started with `posix_spawn` (a `clone3` with `CLONE_VM | CLONE_VFORK`: see
//! `spawn::helper_command`), so the thread is blocked only until the helper's `execve`
//! (about 0.1 ms) instead of for a fork of the whole host; the child's parent is this thread
//! all the same, and the helper arms its parent-death signal itself.

use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, OnceLock};

use crate::error::SandboxError;

/// Work for the forker thread: a closure that spawns a child and hands it back.
type Job = Box<dyn FnOnce() + Send>;

static FORKER: OnceLock<Result<Sender<Job>, Arc<std::io::Error>>> = OnceLock::new();

fn start() -> Result<Sender<Job>, Arc<std::io::Error>> {
    let (tx, rx) = channel::<Job>();
    std::thread::Builder::new()
        .name("sandbox-forker".into())
        .spawn(move || {
            // The thread ends only when every sender is gone, and the static holds one for
            // the life of the process.
            while let Ok(job) = rx.recv() {
                job();
            }
        })
        .map_err(Arc::new)?;
    Ok(tx)
}

/// Runs `job` on the forker thread, which outlives every child it starts. `job` should spawn
/// the [`std::process::Command`] built by [`crate::command`] and send the result back through
/// a channel of the caller's; it must not block for long, since every spawn waits on it.
pub fn on_forker_thread(job: impl FnOnce() + Send + 'static) -> Result<(), SandboxError> {
    let sender = FORKER.get_or_init(start).as_ref().map_err(|e| {
        SandboxError::Io(std::io::Error::other(format!(
            "cannot start the thread that starts workers: {e}"
        )))
    })?;
    sender.send(Box::new(job)).map_err(|_| {
        SandboxError::Io(std::io::Error::other(
            "the thread that starts workers has stopped",
        ))
    })
}
