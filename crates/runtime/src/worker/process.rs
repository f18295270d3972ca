//! One worker process seen from the host: spawn it confined, speak frames, kill it.
//!
//! Every frame from a worker is untrusted: its length is capped before the body is read, and
//! a frame that does not decode ends that worker. Frames are read by the run loop itself
//! ([`FrameReader::recv`] is cancel-safe), so it can wait on frames, tool results and writes at
//! once without a task and a channel in between.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe::{Receiver as PipeReader, Sender as PipeWriter};

use super::template::{TemplateSlot, WorkerChild};
use worker_protocol::{
    HostFrame, MAX_WORKER_FRAME_BYTES, PROTOCOL_VERSION, WorkerFrame, check_len, encode,
};

/// Time a new worker gets to start its engine and say it is ready.
pub const WORKER_READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the explanation of an exited worker waits for the rest of its stderr (a
/// grandchild holding the pipe open must not hold the answer up).
const STDERR_DRAIN_WAIT: Duration = Duration::from_millis(200);
/// Lines of a worker's stderr kept to explain a crash.
const STDERR_TAIL_LINES: usize = 8;
/// Longest stderr line kept; the rest of a longer line is read and dropped.
const STDERR_LINE_BYTES: usize = 4096;

/// Which engine a worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    /// QuickJS in our own binary re-entered as `__worker js` (TypeScript is stripped first).
    JavaScript,
    /// The host's CPython running the embedded shim.
    Python,
}

impl Language {
    /// The language of its tool (`execute_typescript`, `execute_python`), as the audit log
    /// and session descriptions name it.
    pub fn tool_language(self) -> &'static str {
        match self {
            Language::JavaScript => "typescript",
            Language::Python => "python",
        }
    }

    /// Short name, as `health` reports pools.
    pub fn name(self) -> &'static str {
        match self {
            Language::JavaScript => "js",
            Language::Python => "python",
        }
    }
}

/// How to start workers: the program and the sandbox around it.
#[derive(Debug, Clone)]
pub struct WorkerSpawner {
    pub language: Language,
    pub command: sandbox::WorkerCommand,
    pub policy: sandbox::SandboxPolicy,
    /// Bytes written to a new worker's stdin before any frame, for the engine to read before
    /// it says it is ready (Python: its compiled shim, see `runtime/worker/python.rs`).
    pub preamble: Option<Preamble>,
    /// Extra environment for the workers a pool starts ahead while its recent code needed
    /// more than a trivial run does (Python: modules to import before `ready`; see
    /// `Pool::prefer_warm`). Empty when the language has none.
    pub warm_env: Vec<(OsString, OsString)>,
    /// The template its workers are forked from, when templates are on and the kernel has
    /// what they need (see `worker::template`); `None`: a sandbox helper per worker.
    pub template: Option<Arc<TemplateSlot>>,
}

/// What [`WorkerSpawner::preamble`] writes; shown by its length only.
#[derive(Clone, PartialEq, Eq)]
pub struct Preamble(pub Arc<[u8]>);

impl std::fmt::Debug for Preamble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Preamble({} bytes)", self.0.len())
    }
}

/// What the run loop receives from a worker (a broken frame is said in words: the worker is
/// killed, and the message is all there is).
pub type FrameResult = Result<WorkerFrame, String>;

/// Why a worker could not be started, or could not be handed a frame.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// The confinement could not be set up.
    #[error(transparent)]
    Sandbox(#[from] sandbox::SandboxError),
    #[error("cannot start worker {program}: {source}")]
    Start {
        program: String,
        source: std::io::Error,
    },
    #[error("worker started without its pipes")]
    NoPipes,
    #[error("worker speaks protocol {worker}, the host {host}")]
    Protocol { worker: u32, host: u32 },
    /// What it sent instead of `ready` (its debug form).
    #[error("worker sent {0} before ready")]
    NotReady(String),
    /// A frame it sent could not be read (the reader's words).
    #[error("{0}")]
    Frame(String),
    /// It exited before it was ready (how it exited).
    #[error("{0}")]
    Exited(String),
    #[error("worker did not become ready within {0}s")]
    Slow(u64),
    #[error("cannot encode frame: {0}")]
    Encode(String),
    #[error("cannot write to worker: {0}")]
    Write(std::io::Error),
    /// A pool tried [`pool::START_ATTEMPTS`](super::pool::START_ATTEMPTS) times.
    #[error("no worker could be started ({attempts} attempts); the last said: {last}")]
    NoneStarted {
        attempts: u32,
        last: Box<WorkerError>,
    },
    /// Every worker a pool gave died before it took the code.
    #[error("no worker took the code: {0}")]
    NoneTookTheCode(Box<WorkerError>),
}

/// A started worker that has said it is ready.
pub struct WorkerProcess {
    child: WorkerChild,
    pid: u32,
    stdin: PipeWriter,
    frames: FrameReader,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// The task reading stderr into `stderr_tail`: waited for (briefly) when the worker has
    /// exited, so the explanation of a crash holds its last lines.
    stderr_reader: tokio::task::JoinHandle<()>,
    /// `/proc/PID/status` of the engine process (under the sandbox's helpers), opened when
    /// the worker is ready, for its peak memory. Held open, it always means that process, and
    /// reading it at the end of a run costs one `pread`.
    engine_status: Option<std::fs::File>,
    /// `/proc/PID/timers` of the engine process: the POSIX timers it holds (`timer_create`,
    /// reachable from code through `ctypes`), each of which can signal it later.
    engine_timers: Option<std::fs::File>,
    /// The engine's thread count, the worker's live processes (the sandbox's helpers and
    /// the engine) and the engine's POSIX timers when it said it was ready: what a session's
    /// worker must be back to after each execution.
    at_ready: Option<(u64, u64, u64)>,
    /// [`tree_memory`] measured once while the worker waited in its pool.
    idle_memory: Option<u64>,
}

/// Smallest read from a worker's stdout.
const READ_CHUNK: usize = 64 * 1024;

/// Frames from a worker's stdout, decoded from a buffer the reads fill.
pub struct FrameReader {
    stdout: PipeReader,
    buf: Vec<u8>,
    /// Start of the bytes not yet decoded.
    pos: usize,
    /// The stream ended or broke the protocol: nothing more is read.
    done: bool,
    /// Size in bytes of the last frame returned, for what the host holds on its behalf.
    last_len: usize,
    /// The pipe was widened for a large frame (`tools::pipes`).
    wide: bool,
}

impl FrameReader {
    fn new(stdout: PipeReader) -> Self {
        FrameReader {
            stdout,
            buf: Vec::new(),
            pos: 0,
            done: false,
            last_len: 0,
            wide: false,
        }
    }

    /// Whether the worker has written anything not read yet (in the buffer, or waiting in
    /// the pipe). A session's worker waiting for its next execution writes nothing: bytes
    /// there come from code still running after its execution ended.
    pub fn has_unread(&self) -> bool {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        use std::os::fd::AsFd;
        if self.pos < self.buf.len() {
            return true;
        }
        let mut fds = [PollFd::new(self.stdout.as_fd(), PollFlags::POLLIN)];
        poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| {
            n > 0
                && fds[0]
                    .revents()
                    .is_some_and(|r| r.contains(PollFlags::POLLIN))
        })
    }

    /// A complete frame from the buffer, if there is one. The length is checked against the
    /// cap as soon as the header is in, before any of the body is waited for.
    fn take(&mut self) -> Option<FrameResult> {
        let avail = &self.buf[self.pos..];
        let header: [u8; 4] = avail.get(..4)?.try_into().ok()?;
        let len = match check_len(header, MAX_WORKER_FRAME_BYTES) {
            Ok(len) => len,
            Err(e) => {
                self.done = true;
                return Some(Err(format!("worker broke the protocol: {e}")));
            }
        };
        let body = avail.get(4..4 + len)?;
        let frame = WorkerFrame::decode(body)
            .map_err(|e| format!("worker broke the protocol: malformed frame: {e}"));
        self.pos += 4 + len;
        self.last_len = 4 + len;
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
        if frame.is_err() {
            self.done = true;
        }
        Some(frame)
    }

    /// Size in bytes of the frame [`FrameReader::recv`] returned last.
    pub fn last_len(&self) -> usize {
        self.last_len
    }

    /// The next frame; `None` when the worker has exited. Cancel-safe: a frame is either
    /// returned or stays buffered.
    pub async fn recv(&mut self) -> Option<FrameResult> {
        loop {
            if self.done {
                return None;
            }
            if let Some(frame) = self.take() {
                return Some(frame);
            }
            if self.pos > 0 {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
            // Room for the rest of the frame whose header is in (its length is capped), or
            // for a chunk.
            let frame_len = self
                .buf
                .get(..4)
                .and_then(|h| <[u8; 4]>::try_from(h).ok())
                .map(|h| u32::from_be_bytes(h) as usize + 4);
            // A large frame is on its way: the rest comes through a wider pipe.
            if !self.wide && frame_len.is_some_and(|n| n >= tools::pipes::LARGE_MESSAGE_BYTES) {
                self.wide = tools::pipes::widen(&self.stdout);
            }
            let want = frame_len.map_or(READ_CHUNK, |n| {
                n.saturating_sub(self.buf.len()).max(READ_CHUNK)
            });
            self.buf.reserve(want);
            match self.stdout.read_buf(&mut self.buf).await {
                Ok(0) => {
                    self.done = true;
                    // EOF: the worker exited; inside a frame that is worth saying.
                    return (!self.buf.is_empty())
                        .then(|| Err("worker output ended inside a frame".to_string()));
                }
                Ok(_) => {}
                Err(e) => {
                    self.done = true;
                    return Some(Err(format!("cannot read from worker: {e}")));
                }
            }
        }
    }
}

/// The whole environment of a worker: nothing of the host's (secrets live there).
pub fn worker_env() -> Vec<(OsString, OsString)> {
    vec![("LANG".into(), "C.UTF-8".into())]
}

impl WorkerSpawner {
    /// JavaScript workers: our own binary re-entered as `__worker js`.
    pub fn javascript(exe: &Path, policy: sandbox::SandboxPolicy) -> Self {
        let command = sandbox::WorkerCommand {
            program: exe.to_path_buf(),
            args: vec![
                OsString::from(tools::defaults::WORKER_ARG),
                OsString::from("js"),
            ],
            env: worker_env(),
            cwd: None,
        };
        WorkerSpawner {
            language: Language::JavaScript,
            template: TemplateSlot::for_spawner(&command, &policy),
            command,
            policy,
            preamble: None,
            warm_env: Vec::new(),
        }
    }

    /// The worker's process and pipes: forked by this spawner's template when it has one
    /// that serves this confinement (falling back to a helper of its own should the
    /// template fail twice), else started with a sandbox helper.
    async fn start(
        &self,
        command: &sandbox::WorkerCommand,
    ) -> Result<(WorkerChild, u32, PipeWriter, PipeReader, PipeReader), WorkerError> {
        let program = self.command.program.display().to_string();
        let start = |source| WorkerError::Start {
            program: program.clone(),
            source,
        };
        if let Some(slot) = self
            .template
            .as_ref()
            .filter(|slot| slot.serves(command, &self.policy))
        {
            let slot = slot.clone();
            let env = command.env.clone();
            match tokio::task::spawn_blocking(move || slot.spawn(&env)).await {
                Ok(Ok((w, template))) => {
                    return Ok((
                        WorkerChild::Forked(w.pidfd, template),
                        w.pid,
                        PipeWriter::from_owned_fd(w.stdin).map_err(start)?,
                        PipeReader::from_owned_fd(w.stdout).map_err(start)?,
                        PipeReader::from_owned_fd(w.stderr).map_err(start)?,
                    ));
                }
                Ok(Err(e)) => {
                    tracing::warn!(target: "worker", "no worker from a template, starting one with its own helper: {e}");
                }
                Err(e) => tracing::warn!(target: "worker", "template task: {e}"),
            }
        }
        let cmd = sandbox::command(command, &self.policy)?;
        let mut cmd = tokio::process::Command::from(cmd);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // On the forker thread: off the runtime thread (fork/exec of a large process blocks
        // for a millisecond or more), and on a thread that never exits, so the worker's
        // parent-death signal means the server died.
        let mut child = tools::child::spawn(cmd).await.map_err(start)?;
        let pid = child.id().unwrap_or(0);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(WorkerError::NoPipes);
        };
        let stdin = stdin.into_owned_fd().and_then(PipeWriter::from_owned_fd);
        let stdout = stdout.into_owned_fd().and_then(PipeReader::from_owned_fd);
        let stderr = stderr.into_owned_fd().and_then(PipeReader::from_owned_fd);
        Ok((
            WorkerChild::Spawned(child),
            pid,
            stdin.map_err(start)?,
            stdout.map_err(start)?,
            stderr.map_err(start)?,
        ))
    }

    /// Starts a worker and waits for its `ready` frame.
    pub async fn spawn(&self) -> Result<WorkerProcess, WorkerError> {
        self.spawn_as(false).await
    }

    /// [`WorkerSpawner::spawn`], `warm`: with [`WorkerSpawner::warm_env`].
    pub async fn spawn_as(&self, warm: bool) -> Result<WorkerProcess, WorkerError> {
        let warmed;
        let command = if warm && !self.warm_env.is_empty() {
            let mut c = self.command.clone();
            c.env.extend(self.warm_env.iter().cloned());
            warmed = c;
            &warmed
        } else {
            &self.command
        };
        let (child, pid, stdin, stdout, stderr) = self.start(command).await?;
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_reader = tokio::spawn(read_stderr(stderr, pid, stderr_tail.clone()));
        let mut worker = WorkerProcess {
            child,
            pid,
            stdin,
            frames: FrameReader::new(stdout),
            stderr_tail,
            stderr_reader,
            engine_status: None,
            engine_timers: None,
            at_ready: None,
            idle_memory: None,
        };
        let ready = async {
            if let Some(Preamble(bytes)) = &self.preamble
                && worker.stdin.write_all(bytes).await.is_err()
            {
                return None; // gone before it read it: its exit says why
            }
            worker.frames.recv().await
        };
        match tokio::time::timeout(WORKER_READY_TIMEOUT, ready).await {
            Ok(Some(Ok(WorkerFrame::Ready { protocol, .. }))) if protocol == PROTOCOL_VERSION => {
                let engine = engine_pid(pid);
                worker.engine_status =
                    engine.and_then(|p| std::fs::File::open(format!("/proc/{p}/status")).ok());
                worker.engine_timers =
                    engine.and_then(|p| std::fs::File::open(format!("/proc/{p}/timers")).ok());
                let timers = worker.engine_timer_count();
                worker.at_ready = worker
                    .engine_status_kib("Threads:")
                    .map(|threads| (threads, live_processes(pid), timers));
                Ok(worker)
            }
            Ok(Some(Ok(WorkerFrame::Ready { protocol, .. }))) => Err(WorkerError::Protocol {
                worker: protocol,
                host: PROTOCOL_VERSION,
            }),
            Ok(Some(Ok(other))) => Err(WorkerError::NotReady(format!("{other:?}"))),
            Ok(Some(Err(e))) => Err(WorkerError::Frame(e)),
            Ok(None) => Err(WorkerError::Exited(worker.exit_description().await)),
            Err(_) => Err(WorkerError::Slow(WORKER_READY_TIMEOUT.as_secs())),
        }
    }
}

/// Drains a worker's stderr into the debug log and a short tail. Lines are cut at
/// [`STDERR_LINE_BYTES`]: the worker is untrusted, and a gigabyte without a newline must not
/// become a gigabyte in the host.
async fn read_stderr(stderr: PipeReader, pid: u32, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut r = BufReader::with_capacity(16 * 1024, stderr);
    let mut line: Vec<u8> = Vec::new();
    loop {
        let chunk = match r.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(chunk) => chunk,
        };
        let (used, end) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = STDERR_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..used.min(room)]);
        r.consume(used);
        if end {
            let text = String::from_utf8_lossy(&line).trim_end().to_string();
            line.clear();
            tracing::debug!(target: "worker", pid, "{text}");
            if let Ok(mut t) = tail.lock() {
                if t.len() == STDERR_TAIL_LINES {
                    t.pop_front();
                }
                t.push_back(text);
            }
        }
    }
}

impl WorkerProcess {
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the process is still running (pooled workers can die while they wait).
    pub fn is_alive(&mut self) -> bool {
        !self.child.ended()
    }

    pub async fn send(&mut self, frame: &HostFrame) -> Result<(), WorkerError> {
        let bytes = encode(frame).map_err(|e| WorkerError::Encode(e.to_string()))?;
        self.send_encoded(&bytes).await
    }

    /// Sends a frame already encoded with [`worker_protocol::encode`].
    pub async fn send_encoded(&mut self, bytes: &[u8]) -> Result<(), WorkerError> {
        self.stdin
            .write_all(bytes)
            .await
            .map_err(WorkerError::Write)?;
        self.stdin.flush().await.map_err(WorkerError::Write)
    }

    /// [`FrameReader::has_unread`] of the worker's frames.
    pub fn has_unread(&self) -> bool {
        self.frames.has_unread()
    }

    /// The next frame; `None` when the worker has exited.
    pub async fn recv(&mut self) -> Option<FrameResult> {
        self.frames.recv().await
    }

    /// Peak resident memory (`VmHWM`) of the engine process, read from the host's `/proc`,
    /// so the worker cannot misreport it; `None` when it is already gone.
    pub fn memory_peak(&self) -> Option<u64> {
        self.engine_status_kib("VmHWM:").map(|kib| kib * 1024)
    }

    /// Resident memory (`VmRSS`) of the engine process now, read as [`Self::memory_peak`] is.
    pub fn memory_now(&self) -> Option<u64> {
        self.engine_status_kib("VmRSS:").map(|kib| kib * 1024)
    }

    /// What the code left running in the worker after an execution: threads of the engine
    /// beyond those it had when it was ready, and processes beyond the worker's own (zombies
    /// run nothing). Read from the host's `/proc`, so code in the worker cannot hide them.
    /// `None` when nothing is left, or when the engine cannot be read (it is gone).
    pub fn leftovers(&self) -> Option<Leftovers> {
        let (threads_at_ready, processes_at_ready, timers_at_ready) = self.at_ready?;
        let threads = self
            .engine_status_kib("Threads:")?
            .saturating_sub(threads_at_ready);
        let processes = live_processes(self.pid).saturating_sub(processes_at_ready);
        let timers = self.engine_timer_count().saturating_sub(timers_at_ready);
        (threads > 0 || processes > 0 || timers > 0).then_some(Leftovers {
            threads,
            processes,
            timers,
        })
    }

    /// The POSIX timers the engine holds now (an `ID:` line each in `/proc/PID/timers`; 0
    /// when the kernel does not show them). Read in 64 KiB at most: the worker's limits bound
    /// its timers, and any count above what it had when ready is enough to know.
    fn engine_timer_count(&self) -> u64 {
        use std::os::unix::fs::FileExt;
        let Some(file) = self.engine_timers.as_ref() else {
            return 0;
        };
        let mut buf = vec![0u8; 64 * 1024];
        let n = file.read_at(&mut buf, 0).unwrap_or(0);
        buf[..n]
            .split(|&b| b == b'\n')
            .filter(|line| line.starts_with(b"ID:"))
            .count() as u64
    }

    /// [`Self::leftovers`], allowing threads and processes that are ending (a thread that
    /// was joined has finished its Python but its kernel task goes a moment later) up to
    /// [`LEFTOVER_GRACE`] to be gone.
    pub async fn leftovers_settled(&self) -> Option<Leftovers> {
        let until = tokio::time::Instant::now() + LEFTOVER_GRACE;
        loop {
            let left = self.leftovers()?;
            if tokio::time::Instant::now() >= until {
                return Some(left);
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    fn engine_status_kib(&self, key: &str) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 4096];
        let n = self.engine_status.as_ref()?.read_at(&mut buf, 0).ok()?;
        let status = std::str::from_utf8(&buf[..n]).ok()?;
        status_kib(status, key)
    }

    /// Measures the worker's whole process tree ([`tree_memory`]) now (a pool does it once, when the worker is
    /// ready and idle) and keeps it for [`WorkerProcess::idle_memory`]. The `/proc` reads
    /// (`smaps_rollup` walks every mapping of each process) run on the blocking pool, not on
    /// the thread that serves requests.
    pub async fn measure_idle_memory(&mut self) {
        let pid = self.pid;
        self.idle_memory = tokio::task::spawn_blocking(move || tree_memory(pid))
            .await
            .unwrap_or_else(|_| tree_memory(pid));
    }

    /// What [`WorkerProcess::measure_idle_memory`] measured, if it was called.
    pub fn idle_memory(&self) -> Option<u64> {
        self.idle_memory
    }

    /// The frame reader and the worker's stdin apart, to read and write at once.
    pub fn io(&mut self) -> (&mut FrameReader, &mut PipeWriter) {
        (&mut self.frames, &mut self.stdin)
    }

    /// Kills the worker and everything it started (its whole process group).
    pub fn kill(&mut self) {
        self.child.kill(self.pid);
    }

    /// Kills the worker and waits (briefly) until it is reaped, so no zombie is left behind.
    pub async fn finish(mut self) {
        self.kill();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
    }

    /// Why the worker is gone: exit status and the last lines of its stderr.
    pub async fn exit_description(&mut self) -> String {
        let status = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
        let status = match status {
            Ok(Ok(s)) => {
                use std::os::unix::process::ExitStatusExt;
                match (s.code(), s.signal()) {
                    (Some(code), _) => format!("exit code {code}"),
                    (None, Some(9)) => "killed (SIGKILL), usually a resource limit".to_string(),
                    (None, Some(sig)) => format!("killed by signal {sig}"),
                    (None, None) => s.to_string(),
                }
            }
            _ => "unknown status".to_string(),
        };
        // The process is gone; its last lines may still be on their way through the pipe.
        let _ = tokio::time::timeout(STDERR_DRAIN_WAIT, &mut self.stderr_reader).await;
        let tail = self
            .stderr_tail
            .lock()
            .map(|t| t.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        if tail.is_empty() {
            format!("the worker process exited unexpectedly ({status})")
        } else {
            format!("the worker process exited unexpectedly ({status}): {tail}")
        }
    }
}

/// The engine process under the sandbox's helpers: the first process without children,
/// following the first child from `pid` (the helper, its init, then the engine). Found once
/// the worker is ready, before it is used, so reading its peak later costs one file.
fn engine_pid(pid: u32) -> Option<u32> {
    let mut current = pid;
    for _ in 0..8 {
        let children =
            std::fs::read_to_string(format!("/proc/{current}/task/{current}/children")).ok()?;
        match children.split_whitespace().next() {
            Some(child) => current = child.parse().ok()?,
            None => return Some(current),
        }
    }
    None
}

/// How long [`WorkerProcess::leftovers_settled`] lets ending threads and processes go.
const LEFTOVER_GRACE: Duration = Duration::from_millis(100);

/// What an execution left running in its worker's engine process ([`WorkerProcess::leftovers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leftovers {
    pub threads: u64,
    pub processes: u64,
    /// POSIX timers (`timer_create`) that can signal the engine later.
    pub timers: u64,
}

impl std::fmt::Display for Leftovers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let threads = match self.threads {
            1 => "1 thread".to_string(),
            n => format!("{n} threads"),
        };
        let processes = match self.processes {
            1 => "1 child process".to_string(),
            n => format!("{n} child processes"),
        };
        let timers = match self.timers {
            1 => "1 timer".to_string(),
            n => format!("{n} timers"),
        };
        let parts: Vec<&str> = [
            (self.threads, threads.as_str()),
            (self.processes, processes.as_str()),
            (self.timers, timers.as_str()),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(_, text)| text)
        .collect();
        match parts.as_slice() {
            [] => f.write_str("nothing"),
            [one] => f.write_str(one),
            [first @ .., last] => write!(f, "{} and {last}", first.join(", ")),
        }
    }
}

/// Processes of the tree under `root` (itself included; children of every thread, so a
/// process an orphan was given to, such as the sandbox's init, brings its adopted ones) that
/// are not zombies (a process that exited and was not waited for runs nothing). Bounded, as
/// the tree is the worker's (its process limit bounds it too).
fn live_processes(root: u32) -> u64 {
    let mut count = 0;
    let mut pids = vec![root];
    let mut seen = 0;
    while let Some(pid) = pids.pop() {
        seen += 1;
        if seen > 4096 {
            break;
        }
        let running = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            // `pid (comm) S ...`: the state follows the last ')'.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        });
        count += u64::from(running);
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let path = task.path().join("children");
            if let Ok(children) = std::fs::read_to_string(path) {
                pids.extend(
                    children
                        .split_whitespace()
                        .filter_map(|c| c.parse::<u32>().ok()),
                );
            }
        }
    }
    count
}

/// A `KEY:   123 kB` field of `/proc/PID/status`, in KiB.
fn status_kib(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        // One execution per worker: whatever it left running dies with it.
        self.kill();
    }
}

/// Memory of the process tree under `pid` (the sandbox's helpers and the engine), from the
/// host's `/proc`: the proportional set size (`Pss` of `smaps_rollup`: a page shared by the
/// helpers and the engine, which map the same binary, counts once in all), else the resident
/// set size; `None` when `pid` is gone.
fn tree_memory(root: u32) -> Option<u64> {
    let mut total = 0;
    let mut pids = vec![root];
    let mut seen = 0;
    while let Some(pid) = pids.pop() {
        seen += 1;
        if seen > 16 {
            break;
        }
        let kib = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
            .ok()
            .and_then(|s| status_kib(&s, "Pss:"))
            .or_else(|| {
                std::fs::read_to_string(format!("/proc/{pid}/status"))
                    .ok()
                    .and_then(|s| status_kib(&s, "VmRSS:"))
            });
        match kib {
            Some(kib) => total += kib * 1024,
            // The worker itself is gone; a helper that just exited is not.
            None if pid == root => return None,
            None => {}
        }
        if let Ok(children) = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
            pids.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    Some(total)
}

#[cfg(test)]
#[path = "process_tests.rs"]
mod tests;
