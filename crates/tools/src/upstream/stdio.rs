//! Starting a stdio upstream: its process (curated environment, own process group, dies
//! with us), its stderr into our log (its last lines also kept, to say why a start failed),
//! and the transport rmcp speaks over its pipes (`lines::LineTransport`, which bounds each
//! incoming message before decoding it), and a graceful close then kill when the connection is
//! dropped.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use tokio::io::AsyncBufReadExt;

use super::error::TransportError;
use crate::config::INHERITED_ENV;
use crate::lines::{LineTransport, Unfiltered};

/// The transport to a stdio child: its stdout bounded per message (`lines`), its stdin
/// closed when the connection is dropped.
pub(super) type StdioTransport =
    LineTransport<RoleClient, tokio::process::ChildStdout, CloseNotice<tokio::process::ChildStdin>>;

/// Time a stdio server gets to exit after its stdin is closed before it is killed.
const STDIO_EXIT_GRACE: Duration = Duration::from_secs(2);
/// Lines of a child's stderr kept to explain a failed start, and the longest kept line: the
/// end of a stack trace or a usage message, not a whole log.
const STDERR_TAIL_LINES: usize = 5;
const STDERR_TAIL_LINE_CHARS: usize = 300;

/// What a stdio child left behind: how it exited and the end of its stderr.
#[derive(Clone)]
pub(super) struct ChildWatch {
    tail: Arc<Mutex<VecDeque<String>>>,
    stderr_done: tokio::sync::watch::Receiver<bool>,
    exit: tokio::sync::watch::Receiver<Option<String>>,
}

impl ChildWatch {
    /// How the child exited (if it did within `wait`) and its last stderr lines (read to the
    /// end if it closed them within `wait`).
    pub(super) async fn post_mortem(&self, wait: Duration) -> (Option<String>, Vec<String>) {
        let (mut done, mut exit) = (self.stderr_done.clone(), self.exit.clone());
        let _ = tokio::time::timeout(wait, async {
            let _ = done.wait_for(|d| *d).await;
            let _ = exit.wait_for(Option::is_some).await;
        })
        .await;
        let status = self.exit.borrow().clone();
        let tail = self
            .tail
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default();
        (status, tail)
    }
}

pub(super) async fn spawn_stdio(
    name: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
    max_message: usize,
) -> Result<(StdioTransport, ChildWatch), TransportError> {
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
    )?;
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = crate::child::spawn(cmd)
        .await
        .map_err(|error| TransportError::Run {
            command: command.to_string(),
            error,
        })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(TransportError::NoPipes(command.to_string()));
    };
    // Duplicates of the pipes' ends, to widen them when a large message passes.
    let stdin_pipe = stdin.as_fd().try_clone_to_owned().ok();
    let stdout_pipe = stdout.as_fd().try_clone_to_owned().ok();
    let server = name.to_string();
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let (done_tx, stderr_done) = tokio::sync::watch::channel(false);
    let (exit_tx, exit) = tokio::sync::watch::channel(None);
    let watch = ChildWatch {
        tail: tail.clone(),
        stderr_done,
        exit,
    };
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::info!(target: "upstream", server = %server, "{line}");
            if !line.trim().is_empty()
                && let Ok(mut t) = tail.lock()
            {
                if t.len() == STDERR_TAIL_LINES {
                    t.pop_front();
                }
                t.push_back(line.chars().take(STDERR_TAIL_LINE_CHARS).collect());
            }
        }
        let _ = done_tx.send(true);
    });
    // The child's keeper: logs how it ended; once the connection is gone (its stdin closed),
    // gives it a moment to exit on its own, then kills it.
    let (closed_tx, closed) = tokio::sync::oneshot::channel();
    let server = name.to_string();
    let pid = child.id();
    tokio::spawn(async move {
        // Dropped with the runtime at exit before the child was reaped: the whole group goes,
        // not only the child (kill-on-drop), so what it started (`npx` and its `node`, a
        // wrapper script's background job) does not outlive the server.
        let mut group = GroupKill(pid);
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
        // Reaped: its pid (the group's id) may be reused from now on.
        group.0 = None;
        match &status {
            Ok(s) => tracing::debug!(server = %server, "upstream process ended: {s}"),
            Err(e) => tracing::debug!(server = %server, "upstream process: {e}"),
        }
        let _ = exit_tx.send(Some(match status {
            Ok(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
                (Some(code), _) => format!("with status {code}"),
                (None, Some(sig)) => format!("killed by signal {sig}"),
                _ => s.to_string(),
            },
            Err(e) => format!("(its status is unknown: {e})"),
        }));
    });
    // A message over `max_message` is read to its end and thrown away as it arrives; the
    // call that waits for it fails at once with its size, the limit and this hint.
    let transport = LineTransport::new(
        stdout,
        CloseNotice {
            inner: stdin,
            closed: Some(closed_tx),
        },
        max_message,
        Arc::new(Unfiltered),
    )
    .refusal_hint(super::cap::OVERSIZED_HINT)
    .widening(stdout_pipe, stdin_pipe);
    Ok((transport, watch))
}

/// Kills an upstream's process group when dropped while it holds the pid: the keeper task
/// dropped before its child was reaped (the server's runtime shutting down), when the pid is
/// still the child's, alive or a zombie, and so still names its group.
struct GroupKill(Option<u32>);

impl Drop for GroupKill {
    fn drop(&mut self) {
        if let Some(pid) = self.0.take() {
            sandbox::kill_group(pid);
        }
    }
}

/// The environment an upstream child gets: basics from ours, then its entry's `env`.
pub fn child_env(env: &BTreeMap<String, String>) -> Vec<(OsString, OsString)> {
    let mut out: BTreeMap<OsString, OsString> = INHERITED_ENV
        .iter()
        .filter_map(|k| std::env::var_os(k).map(|v| (OsString::from(k), v)))
        .collect();
    for (k, v) in env {
        out.insert(k.into(), v.into());
    }
    out.into_iter().collect()
}

/// Finds `command` the way a shell would, on the child's PATH; relative paths with a slash
/// are taken from the server's working directory.
fn resolve_program(
    command: &str,
    env: &[(OsString, OsString)],
    cwd: Option<&Path>,
) -> Result<PathBuf, TransportError> {
    if command.contains('/') {
        let p = Path::new(command);
        return Ok(match (p.is_absolute(), cwd) {
            (true, _) => p.to_path_buf(),
            (false, Some(cwd)) => cwd.join(p),
            (false, None) => std::env::current_dir()
                .map_err(TransportError::CurrentDir)?
                .join(p),
        });
    }
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .ok_or_else(|| TransportError::NotOnPath {
            command: command.to_string(),
            path: path.to_string_lossy().into_owned(),
        })
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
