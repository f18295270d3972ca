//! Starting child processes (workers and stdio upstreams) so that they die with the server
//! and only then.
//!
//! Each child gets a parent-death SIGKILL from [`sandbox::command`]. The kernel sends it when
//! the thread that forked the child exits, so the fork happens on the sandbox crate's forker
//! thread, which lives as long as the process: never on a blocking-pool thread that the
//! runtime retires after ten idle seconds (which once killed every run at about 10 s).

use tokio::process::{Child, Command};

/// Spawns `cmd` on the forker thread (fork and exec stay off the async threads too).
pub async fn spawn(mut cmd: Command) -> std::io::Result<Child> {
    let runtime = tokio::runtime::Handle::current();
    let (tx, rx) = tokio::sync::oneshot::channel();
    sandbox::on_forker_thread(move || {
        // The child is registered with this runtime's process driver.
        let _entered = runtime.enter();
        let _ = tx.send(cmd.spawn());
    })
    .map_err(std::io::Error::other)?;
    rx.await
        .map_err(|_| std::io::Error::other("the thread that starts processes stopped"))?
}

/// The first file named `program` in a directory of `$PATH` (clients, type checkers).
pub fn on_path(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|f| f.is_file())
}
