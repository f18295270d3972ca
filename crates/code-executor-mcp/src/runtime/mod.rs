//! Runs code: prepare it, hand it to a warm worker, serve the worker's requests, enforce the
//! deadline from outside, and collect the result.
//!
//! Both languages share one path ([`Runtime::execute`]): prepare the code (TypeScript is
//! stripped here; Python is compiled in the worker), take a warm worker from that language's
//! pool, drive it, and turn what it reports into an [`ExecOutcome`].
//!
//! - [`worker`]: one worker process and its frames;
//! - [`pool`]: pre-started workers;
//! - [`python`]: finding the host's CPython and starting it with the embedded shim;
//! - [`bridge`]: every request from code passes here (policy, then upstream).

pub mod bridge;
pub mod output;
pub mod pool;
mod prepare;
pub mod python;
pub mod worker;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde::Serialize;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use worker_protocol::{
    EngineLimits, ErrorInfo, HostFrame, RunOutcome, RunRequest, ToolBinding, WorkerFrame, encode,
};

use crate::catalog::Catalog;
use crate::policy::{Decision, Limits, Policy, RequestLimits};
use bridge::RunScope;
use output::{LogCollector, Spill};
use pool::{Pool, PoolStats};
use prepare::NotPrepared;
use python::PythonRuntime;
use worker::Language;

/// One captured line of output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    pub level: &'static str,
    pub text: String,
}

/// The result of an execution, as the agent receives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecOutcome {
    pub result: Value,
    pub logs: Vec<LogEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    pub tool_calls: u32,
    pub duration_ms: f64,
    /// Set when code ran without confinement (`--sandbox=none`), so every result says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// The full output, when it was cut and kept in the execution's scratch directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_file: Option<String>,
    /// Peak resident memory of the worker, for the audit log (not part of the answer).
    #[serde(skip)]
    pub memory_peak_bytes: Option<u64>,
}

impl ExecOutcome {
    /// An execution that was not started.
    pub fn refused(name: &str, message: String) -> ExecOutcome {
        ExecOutcome {
            result: Value::Null,
            logs: Vec::new(),
            error: Some(error(name, message)),
            tool_calls: 0,
            duration_ms: 0.0,
            warning: None,
            output_file: None,
            memory_peak_bytes: None,
        }
    }
}

/// The warning every result carries when the sandbox is off.
pub const UNSANDBOXED_WARNING: &str =
    "UNSANDBOXED: this server runs with --sandbox=none; code ran without OS confinement";

/// What to run.
#[derive(Clone, Default)]
pub struct ExecRequest {
    pub code: String,
    pub timeout_ms: Option<u64>,
    pub allowed_tools: Option<Vec<String>>,
    /// Limits the request tightens for itself.
    pub limits: RequestLimits,
    /// The execution's id in the audit log (empty: unaudited one-off).
    pub execution: String,
    /// The client's tool-call rate limiter, from admission.
    pub tool_rate: Option<Arc<governor::DefaultDirectRateLimiter>>,
    /// Counts the execution's tool-call attempts, readable even if the run is abandoned.
    pub tool_calls: Arc<std::sync::atomic::AtomicU32>,
}

/// Runs TypeScript, JavaScript and Python executions.
pub struct Runtime {
    catalog: Catalog,
    js_pool: Pool,
    python: PythonRuntime,
    unconfined: bool,
    policy: Arc<Policy>,
}

fn error(name: &str, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo {
        name: name.into(),
        message: message.into(),
        stack: None,
    }
}

impl Runtime {
    pub fn new(
        catalog: Catalog,
        js_pool: Pool,
        python: PythonRuntime,
        unconfined: bool,
        policy: Arc<Policy>,
    ) -> Self {
        Runtime {
            catalog,
            js_pool,
            python,
            unconfined,
            policy,
        }
    }

    pub async fn pool_stats(&self) -> Vec<PoolStats> {
        vec![self.js_pool.stats().await, self.python.stats().await]
    }

    pub fn python(&self) -> &PythonRuntime {
        &self.python
    }

    /// Runs TypeScript or JavaScript. Never fails: every problem is an outcome with `error`.
    pub async fn execute_typescript(&self, req: ExecRequest) -> ExecOutcome {
        self.execute(Language::JavaScript, req).await
    }

    /// Runs Python. Never fails: every problem is an outcome with `error`.
    pub async fn execute_python(&self, req: ExecRequest) -> ExecOutcome {
        self.execute(Language::Python, req).await
    }

    async fn pool(&self, language: Language) -> Result<&Pool, ErrorInfo> {
        match language {
            Language::JavaScript => Ok(&self.js_pool),
            Language::Python => self
                .python
                .pool()
                .await
                .map_err(|e| error("PythonUnavailable", e)),
        }
    }

    /// One execution in `language`. Never fails: every problem is an outcome with `error`.
    pub async fn execute(&self, language: Language, req: ExecRequest) -> ExecOutcome {
        let started = Instant::now();
        let mut out = ExecOutcome {
            result: Value::Null,
            logs: Vec::new(),
            error: None,
            tool_calls: 0,
            duration_ms: 0.0,
            warning: self.unconfined.then(|| UNSANDBOXED_WARNING.to_string()),
            output_file: None,
            memory_peak_bytes: None,
        };
        let finish = |mut out: ExecOutcome| {
            out.duration_ms = (started.elapsed().as_secs_f64() * 1e6).round() / 1e3;
            out
        };
        let limits = match Limits::configured(&self.policy.execution, req.timeout_ms)
            .and_then(|l| l.narrowed(&req.limits))
        {
            Ok(l) => l,
            Err(e) => {
                out.error = Some(error("RangeError", e));
                return finish(out);
            }
        };
        let max_code_bytes = self.policy.execution.max_code_bytes;
        if req.code.len() > max_code_bytes {
            out.error = Some(error(
                "RangeError",
                format!(
                    "the code is {} bytes; the limit is {max_code_bytes}",
                    req.code.len()
                ),
            ));
            return finish(out);
        }
        // The deadline runs from here: preparing the code counts against it.
        let deadline = tokio::time::Instant::now() + limits.timeout;
        let prepared = match prepare::prepare(language, &req.code, deadline).await {
            Ok(p) => p,
            Err(NotPrepared::Invalid(e)) => {
                out.error = Some(e);
                return finish(out);
            }
            Err(NotPrepared::Deadline) => {
                out.error = Some(timeout_error(&limits));
                return finish(out);
            }
        };
        let pool = match self.pool(language).await {
            Ok(p) => p,
            Err(e) => {
                out.error = Some(e);
                return finish(out);
            }
        };
        let scope = Arc::new(RunScope::new(
            req.execution,
            self.policy.allowlist(req.allowed_tools),
            limits,
            self.policy.clone(),
            req.tool_rate,
            req.tool_calls,
            deadline.into_std(),
        ));
        let tools = self.bindings(&scope).await;
        // Output past the answer's cap is still wanted, up to the file's own cap, when it
        // can be kept.
        let spill = self
            .policy
            .scratch
            .as_ref()
            .filter(|_| limits.max_output_file_bytes > 0)
            .map(|root| Spill {
                dir: root.join(scratch_name(&scope.execution)),
                max_bytes: limits.max_output_file_bytes,
            });
        let worker_log_bytes = match &spill {
            Some(s) => limits.max_log_bytes.max(s.max_bytes),
            None => limits.max_log_bytes,
        };
        let run = RunRequest {
            code: prepared.code,
            tools,
            limits: EngineLimits {
                memory_bytes: limits.memory_bytes,
                stack_bytes: limits.stack_bytes,
                max_log_bytes: worker_log_bytes,
            },
        };
        let run = match encode(&HostFrame::Run(run)) {
            Ok(bytes) => bytes,
            Err(e) => {
                out.error = Some(error(
                    "InternalError",
                    format!("cannot encode the run: {e}"),
                ));
                return finish(out);
            }
        };
        // However the run ends (even abandoned by its client), the pool gets a replacement.
        let _refill = Refill(pool);
        let mut worker = match tokio::time::timeout_at(deadline, hand_over(pool, &run)).await {
            Ok(Ok(w)) => w,
            Ok(Err(e)) => {
                out.error = Some(error("SandboxError", e));
                return finish(out);
            }
            Err(_) => {
                out.error = Some(timeout_error(&limits));
                return finish(out);
            }
        };
        let mut logs = LogCollector::new(limits.max_log_bytes, spill);
        let ended = tokio::time::timeout_at(
            deadline,
            drive(&mut worker, &self.catalog, &scope, &mut logs),
        )
        .await;
        out.memory_peak_bytes = worker.memory_peak();
        out.tool_calls = scope
            .tool_calls
            .load(Ordering::Relaxed)
            .min(limits.max_tool_calls);
        match ended {
            Ok(Ok(RunOutcome::Ok { result })) => out.result = result,
            Ok(Ok(RunOutcome::Err { mut error })) => {
                if let Some(stripped) = &prepared.stripped {
                    error.stack = error.stack.map(|s| map_stack(&s, stripped));
                }
                error.stack = error.stack.filter(|s| !s.trim().is_empty());
                out.error = Some(error);
            }
            Ok(Err(Failure::Protocol(e))) => {
                worker.kill();
                out.error = Some(error("WorkerError", e));
            }
            Ok(Err(Failure::Exited)) => {
                out.error = Some(error("WorkerCrashed", worker.exit_description().await));
            }
            Err(_) => {
                worker.kill();
                out.error = Some(timeout_error(&limits));
            }
        }
        // Reaping the worker and starting its replacement happen after the answer, off the
        // request path.
        tokio::spawn(worker.finish());
        let captured = logs.finish();
        out.logs = captured.logs;
        out.output_file = captured.file.map(|p| p.display().to_string());
        finish(out)
    }

    /// The tools of already-connected servers, for enumerable `tools.server` proxies; their
    /// lists are frozen in the execution's view. Servers not started yet are still callable
    /// through the proxies; starting them here would make every execution wait for every
    /// upstream. Declarations are not sent: the worker asks for one when code reads it.
    async fn bindings(&self, scope: &RunScope) -> Vec<ToolBinding> {
        let upstreams = self.catalog.upstreams();
        let allow = &scope.allow;
        let mut out = Vec::new();
        for server in upstreams.names() {
            match upstreams.tools_if_connected(server).await {
                Some(tools) => {
                    let tools = scope.view.freeze(server, tools);
                    out.extend(
                        tools
                            .iter()
                            .filter(|t| allow.check(server, t) == Decision::Allow)
                            .map(|t| ToolBinding {
                                server: server.to_string(),
                                tool: Some(t.name.to_string()),
                            }),
                    )
                }
                None => out.push(ToolBinding {
                    server: server.to_string(),
                    tool: None,
                }),
            }
        }
        out
    }
}

/// The scratch directory name of an execution: its audit id, or a fresh one for unaudited
/// runs.
fn scratch_name(execution: &str) -> String {
    if !execution.is_empty() && execution.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return execution.to_string();
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("run-{}-{}", std::process::id(), t.as_nanos())
}

/// A worker that has received the encoded `run`. A worker that died before it could take
/// the code (a pooled one killed meanwhile) is replaced, a bounded number of times: nothing of
/// the code ran, so the execution does not see it.
async fn hand_over(pool: &Pool, run: &[u8]) -> Result<worker::WorkerProcess, String> {
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
            Err(e) => return Err(format!("no worker took the code: {e}")),
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

fn timeout_error(limits: &Limits) -> ErrorInfo {
    error(
        "TimeoutError",
        format!(
            "the execution exceeded its {} ms deadline and was stopped; pass a larger timeoutMs \
             (at most {}) or do less per execution",
            limits.timeout.as_millis(),
            crate::policy::MAX_TIMEOUT_MS
        ),
    )
}

enum Failure {
    /// The worker broke the protocol; it is killed.
    Protocol(String),
    /// The worker exited before finishing.
    Exited,
}

/// Bytes of replies the worker has not read yet past which the host stops reading its
/// requests (and stops producing answers): a worker that asks and never reads blocks itself,
/// not the server's memory.
const MAX_UNREAD_REPLY_BYTES: usize = 2 << 20;
/// Bytes of requests the host may hold at once for one execution (each frame is at most
/// `worker_protocol::MAX_WORKER_FRAME_BYTES`).
const MAX_HELD_REQUEST_BYTES: usize = 8 << 20;
/// Requests of one execution the host may hold at once; more wait in the worker's pipe.
const MAX_HELD_REQUESTS: usize = 256;

/// Serves the requests of a worker that received its run until it is done.
///
/// Calls are futures polled by this loop (no task per call); replies go into an outbox that is
/// written as the worker's stdin takes it. Reading never waits for a write: a worker blocked
/// on writing a frame while the host waits to hand it a large reply would otherwise be stuck.
/// What the host holds for an execution is bounded: past [`MAX_UNREAD_REPLY_BYTES`] of
/// unread replies no call is finished and no request read, and past [`MAX_HELD_REQUESTS`]
/// requests or [`MAX_HELD_REQUEST_BYTES`] of them no request is read, until the worker
/// catches up (both workers read replies while they wait to write).
async fn drive(
    worker: &mut worker::WorkerProcess,
    catalog: &Catalog,
    scope: &Arc<RunScope>,
    logs: &mut LogCollector,
) -> Result<RunOutcome, Failure> {
    let mut calls = FuturesUnordered::new();
    let mut outbox: Vec<u8> = Vec::new();
    let mut held_bytes = 0usize;
    let (frames, stdin) = worker.io();
    loop {
        let answering = outbox.len() < MAX_UNREAD_REPLY_BYTES;
        let reading =
            answering && calls.len() < MAX_HELD_REQUESTS && held_bytes < MAX_HELD_REQUEST_BYTES;
        tokio::select! {
            biased;
            written = stdin.write(&outbox), if !outbox.is_empty() => match written {
                Ok(n) if n > 0 => {
                    outbox.drain(..n);
                    if outbox.is_empty() && outbox.capacity() > MAX_UNREAD_REPLY_BYTES {
                        outbox = Vec::new();
                    }
                }
                Ok(_) => return Err(Failure::Exited),
                Err(e) => {
                    tracing::debug!("cannot write to worker: {e}");
                    return Err(Failure::Exited);
                }
            },
            Some((id, outcome, len)) = calls.next(), if answering && !calls.is_empty() => {
                held_bytes -= len;
                match encode(&HostFrame::Reply { id, outcome }) {
                    Ok(bytes) => outbox.extend_from_slice(&bytes),
                    Err(e) => return Err(Failure::Protocol(format!("cannot encode a reply: {e}"))),
                }
            }
            frame = frames.recv(), if reading => match frame {
                None => return Err(Failure::Exited),
                Some(Err(e)) => return Err(Failure::Protocol(e)),
                Some(Ok(WorkerFrame::Log { level, text })) => logs.push(level, text),
                Some(Ok(WorkerFrame::LogsTruncated)) => logs.truncated_by_worker(),
                Some(Ok(WorkerFrame::Done { outcome })) => return Ok(outcome),
                Some(Ok(WorkerFrame::Call { id, request })) => {
                    let len = frames.last_len();
                    held_bytes += len;
                    calls.push(async move {
                        (id, bridge::handle(catalog, scope, request).await, len)
                    });
                }
                Some(Ok(WorkerFrame::Ready { .. })) => {
                    return Err(Failure::Protocol("worker sent a second ready frame".into()));
                }
            },
        }
    }
}

/// Rewrites `code.ts:LINE:COL` positions of the generated JavaScript to the user's lines and
/// drops frames of our own prelude, which mean nothing to the user.
fn map_stack(stack: &str, stripped: &js_worker::Stripped) -> String {
    let stack: String = stack
        .lines()
        .filter(|l| !l.contains("(prelude.js:"))
        .collect::<Vec<_>>()
        .join("\n");
    let stack = stack.as_str();
    let needle = format!("{}:", js_worker::SOURCE_NAME);
    let mut out = String::with_capacity(stack.len());
    let mut rest = stack;
    while let Some(i) = rest.find(&needle) {
        let (before, after) = rest.split_at(i + needle.len());
        out.push_str(before);
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        match digits.parse::<u32>() {
            Ok(line) => {
                out.push_str(&stripped.original_line(line).to_string());
                let after_line = &after[digits.len()..];
                // The column refers to generated code; drop it rather than mislead.
                let col_len = after_line
                    .strip_prefix(':')
                    .map(|r| 1 + r.chars().take_while(char::is_ascii_digit).count())
                    .unwrap_or(0);
                rest = &after_line[col_len..];
            }
            Err(_) => rest = after,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_lines_are_mapped_to_user_lines() {
        let stripped = js_worker::strip_types("type A = 1;\n\nthrow new Error('x');\n").unwrap();
        let gen_line = stripped
            .code
            .lines()
            .position(|l| l.contains("throw"))
            .unwrap()
            + 1;
        let stack =
            format!("    at <anonymous> (code.ts:{gen_line}:7)\n    at run (prelude.js:9:3)");
        assert_eq!(
            map_stack(&stack, &stripped),
            "    at <anonymous> (code.ts:3)"
        );
    }
}
