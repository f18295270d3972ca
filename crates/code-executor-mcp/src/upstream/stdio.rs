//! Starting a stdio upstream: its process (curated environment, own process group, dies
//! with us), its stderr into our log, and the transport rmcp speaks over its pipes, with each
//! incoming message bounded ([`super::bounded`]) and a graceful close then kill when the
//! connection is dropped.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::AsyncBufReadExt;

use super::{bounded, child_env, resolve_program};

/// The transport to a stdio child: its stdout bounded per message ([`bounded`]), its stdin
/// closed when the connection is dropped.
pub(super) type StdioTransport = AsyncRwTransport<
    RoleClient,
    bounded::BoundedLines<tokio::process::ChildStdout>,
    CloseNotice<tokio::process::ChildStdin>,
>;

/// Time a stdio server gets to exit after its stdin is closed before it is killed.
const STDIO_EXIT_GRACE: Duration = Duration::from_secs(2);

pub(super) async fn spawn_stdio(
    name: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
    max_message: usize,
) -> Result<StdioTransport, String> {
    let env = child_env(env);
    let target = sandbox::WorkerCommand {
        program: resolve_program(command, &env, cwd)?,
        args: args.iter().map(OsString::from).collect(),
        env,
        cwd: cwd.map(Path::to_path_buf),
    };
    // Upstreams are the user's own trusted servers: not confined, but isolated from our
    // environment, in their own process group, and killed when we die.
    let cmd = sandbox::command(
        &target,
        &sandbox::SandboxPolicy::new(sandbox::SandboxMode::Disabled, None),
    )
    .map_err(|e| e.to_string())?;
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = crate::child::spawn(cmd)
        .await
        .map_err(|e| format!("cannot run `{command}`: {e}"))?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(format!("`{command}` started without its pipes"));
    };
    let server = name.to_string();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::info!(target: "upstream", server = %server, "{line}");
        }
    });
    // The child's keeper: logs how it ended; once the connection is gone (its stdin closed),
    // gives it a moment to exit on its own, then kills it.
    let (closed_tx, closed) = tokio::sync::oneshot::channel();
    let server = name.to_string();
    let pid = child.id();
    tokio::spawn(async move {
        let status = tokio::select! {
            status = child.wait() => status,
            _ = closed => match tokio::time::timeout(STDIO_EXIT_GRACE, child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    if let Some(pid) = pid {
                        sandbox::kill_group(pid);
                    }
                    let _ = child.start_kill();
                    child.wait().await
                }
            },
        };
        match status {
            Ok(s) => tracing::debug!(server = %server, "upstream process ended: {s}"),
            Err(e) => tracing::debug!(server = %server, "upstream process: {e}"),
        }
    });
    Ok(AsyncRwTransport::new_client(
        bounded::BoundedLines::new(stdout, max_message),
        CloseNotice {
            inner: stdin,
            closed: Some(closed_tx),
        },
    )
    // Never reached: the bounded reader cuts first, and answers.
    .with_max_line_length(max_message.saturating_add(2)))
}

/// A writer that says when it is dropped.
pub struct CloseNotice<W> {
    inner: W,
    closed: Option<tokio::sync::oneshot::Sender<()>>,
}

impl<W> Drop for CloseNotice<W> {
    fn drop(&mut self) {
        if let Some(tx) = self.closed.take() {
            let _ = tx.send(());
        }
    }
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for CloseNotice<W> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
