//! A checker kept warm as a language server: TypeScript 7's native `tsc --lsp --stdio` (or
//! `tsgo`) and `ty server`. The server is started on the first check and kept; each check
//! opens the code's file, asks for its diagnostics (`textDocument/diagnostic`, LSP 3.17's
//! pull model) and closes it. A warm server answers in a few milliseconds where a fresh
//! checker process spends most of 60-70 ms reading the standard library's declarations.
//!
//! The server runs confined like a one-off checker (`confine.rs`): the same view, limits and
//! no network. Any failure during a check (the server dies, answers garbage or late) ends it
//! (its sandbox is killed whole) and the check with it: the code does not run, the error says
//! why, and the next check starts a new server. Only a server that cannot start leaves the
//! check to a fresh process, within what is left of the same deadline.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};

/// Why a warm checker gave no answer.
#[derive(Debug)]
pub(super) enum LspFail {
    /// It did not answer within the time left.
    Late(String),
    /// It ended, refused or answered something unreadable.
    Broken(String),
}

impl std::fmt::Display for LspFail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LspFail::Late(s) | LspFail::Broken(s) => f.write_str(s),
        }
    }
}
use tokio::sync::{Mutex, oneshot};

/// A message of more than this from the server ends it.
const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// A running language server.
pub(super) struct Lsp {
    stdin: Mutex<ChildStdin>,
    pending: std::sync::Mutex<HashMap<i64, oneshot::Sender<Value>>>,
    next: AtomicI64,
    dead: Arc<AtomicBool>,
    child: std::sync::Mutex<Child>,
    pid: u32,
    /// The last lines of its stderr, to say why it died.
    stderr_tail: Arc<std::sync::Mutex<String>>,
}

impl Drop for Lsp {
    fn drop(&mut self) {
        sandbox::kill_group(self.pid);
    }
}

/// One diagnostic as the server gave it: 1-based line and column, its message.
pub(super) struct Found {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

impl Lsp {
    /// Starts the server `cmd` (built confined, `confine.rs`) for the workspace `root`, and
    /// initialises it within `limit`.
    pub(super) async fn start(
        mut cmd: tokio::process::Command,
        root: &Path,
        limit: Duration,
    ) -> Result<Arc<Lsp>, LspFail> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = tools::child::spawn(cmd)
            .await
            .map_err(|e| LspFail::Broken(format!("cannot start it: {e}")))?;
        let pid = child.id().unwrap_or(0);
        let stderr_tail = Arc::new(std::sync::Mutex::new(String::new()));
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(keep_tail(stderr, stderr_tail.clone()));
        }
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(LspFail::Broken("started without its pipes".into()));
        };
        let lsp = Arc::new(Lsp {
            stdin: Mutex::new(stdin),
            pending: std::sync::Mutex::default(),
            next: AtomicI64::new(1),
            dead: Arc::new(AtomicBool::new(false)),
            child: std::sync::Mutex::new(child),
            pid,
            stderr_tail,
        });
        tokio::spawn(read_loop(Arc::downgrade(&lsp), BufReader::new(stdout)));
        let uri = file_uri(root);
        let init = json!({
            // Not ours: the server lives in its own PID namespace, where our pid is nobody (a
            // server watching it would end at once). It dies with us anyway (the sandbox).
            "processId": null,
            "rootUri": uri,
            "workspaceFolders": [{"uri": uri, "name": "check"}],
            "capabilities": {"textDocument": {"diagnostic": {"dynamicRegistration": false},
                "publishDiagnostics": {}}},
        });
        lsp.request("initialize", init, limit).await?;
        lsp.notify("initialized", json!({})).await?;
        Ok(lsp)
    }

    /// Ends the server: its whole sandbox is killed.
    pub(super) fn kill(&self) {
        self.dead.store(true, Ordering::Release);
        sandbox::kill_group(self.pid);
    }

    /// How it ended, in words (`None` while it runs).
    pub(super) fn death(&self, memory_mb: u64) -> Option<String> {
        let status = self.child.lock().ok()?.try_wait().ok()??;
        let tail = self
            .stderr_tail
            .lock()
            .map(|t| t.clone())
            .unwrap_or_default();
        Some(super::confine::ended(&status, &tail, &tail, memory_mb))
    }

    pub(super) fn alive(&self) -> bool {
        !self.dead.load(Ordering::Acquire)
    }

    /// The errors in the file at `path`, whose text is `text`.
    pub(super) async fn errors(
        &self,
        path: &Path,
        language: &str,
        text: &str,
        limit: Duration,
    ) -> Result<Vec<Found>, LspFail> {
        let uri = file_uri(path);
        let doc = json!({"uri": uri, "languageId": language, "version": 1, "text": text});
        self.notify("textDocument/didOpen", json!({"textDocument": doc}))
            .await?;
        let answer = self
            .request(
                "textDocument/diagnostic",
                json!({"textDocument": {"uri": uri}}),
                limit,
            )
            .await;
        let _ = self
            .notify(
                "textDocument/didClose",
                json!({"textDocument": {"uri": uri}}),
            )
            .await;
        let answer = answer?;
        let items = answer["items"].as_array().ok_or_else(|| {
            let shown: String = answer.to_string().chars().take(300).collect();
            LspFail::Broken(format!("its answer has no items: {shown}"))
        })?;
        Ok(items
            .iter()
            // 1: error (2 warning, 3 information, 4 hint: unused names and the like).
            .filter(|d| d["severity"].as_u64().unwrap_or(1) == 1)
            .map(|d| {
                let start = &d["range"]["start"];
                let mut message = d["message"].as_str().unwrap_or("").to_string();
                match &d["code"] {
                    Value::Number(n) => message.push_str(&format!(" [TS{n}]")),
                    Value::String(s) => message.push_str(&format!(" [{s}]")),
                    _ => {}
                }
                Found {
                    line: start["line"].as_u64().unwrap_or(0) as u32 + 1,
                    column: start["character"].as_u64().unwrap_or(0) as u32 + 1,
                    message,
                }
            })
            .collect())
    }

    async fn write(&self, msg: &Value) -> Result<(), LspFail> {
        let body = msg.to_string();
        let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        out.extend_from_slice(body.as_bytes());
        let mut stdin = self.stdin.lock().await;
        let wrote = stdin.write_all(&out).await.and(stdin.flush().await);
        wrote.map_err(|e| {
            self.dead.store(true, Ordering::Release);
            LspFail::Broken(format!("it stopped reading: {e}"))
        })
    }

    async fn notify(&self, method: &str, params: Value) -> Result<(), LspFail> {
        self.write(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await
    }

    async fn request(
        &self,
        method: &str,
        params: Value,
        limit: Duration,
    ) -> Result<Value, LspFail> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        let answer = match tokio::time::timeout(limit, rx).await {
            Ok(Ok(v)) => v,
            Ok(Err(_)) => return Err(LspFail::Broken("it ended".into())),
            Err(_) => {
                if let Ok(mut p) = self.pending.lock() {
                    p.remove(&id);
                }
                return Err(LspFail::Late(format!("it did not answer {method} in time")));
            }
        };
        if let Some(e) = answer.get("error") {
            let shown: String = e.to_string().chars().take(300).collect();
            return Err(LspFail::Broken(format!("it refused {method}: {shown}")));
        }
        Ok(answer.get("result").cloned().unwrap_or(Value::Null))
    }
}

/// Reads the server's messages: answers go to their requests; its own requests
/// (`workspace/configuration`, `client/registerCapability`, ...) are answered with nulls.
async fn read_loop(lsp: std::sync::Weak<Lsp>, mut out: BufReader<tokio::process::ChildStdout>) {
    let dead = match lsp.upgrade() {
        Some(l) => l.dead.clone(),
        None => return,
    };
    loop {
        let Some(msg) = read_message(&mut out).await else {
            break;
        };
        let Some(lsp) = lsp.upgrade() else { break };
        match (msg.get("id"), msg.get("method")) {
            (Some(id), Some(method)) => {
                let result = if method == "workspace/configuration" {
                    let n = msg["params"]["items"].as_array().map_or(0, Vec::len);
                    Value::Array(vec![Value::Null; n])
                } else {
                    Value::Null
                };
                let _ = lsp
                    .write(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
                    .await;
            }
            (Some(id), None) => {
                let tx = id
                    .as_i64()
                    .and_then(|id| lsp.pending.lock().ok()?.remove(&id));
                if let Some(tx) = tx {
                    let _ = tx.send(msg);
                }
            }
            _ => {}
        }
    }
    dead.store(true, Ordering::Release);
    if let Some(lsp) = lsp.upgrade()
        && let Ok(mut p) = lsp.pending.lock()
    {
        p.clear();
    }
}

/// Keeps the last 2 KB of the server's stderr.
async fn keep_tail(mut stderr: tokio::process::ChildStderr, tail: Arc<std::sync::Mutex<String>>) {
    let mut buf = vec![0; 4096];
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Ok(mut t) = tail.lock() {
            t.push_str(&String::from_utf8_lossy(&buf[..n]));
            if t.len() > 4096 {
                let cut = t.len() - 2048;
                let cut = (cut..t.len()).find(|i| t.is_char_boundary(*i)).unwrap_or(0);
                t.drain(..cut);
            }
        }
    }
}

async fn read_message(out: &mut BufReader<tokio::process::ChildStdout>) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        let n = out.read_line(&mut line).await.ok()?;
        if n == 0 || line.len() > 1024 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.trim().eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse::<usize>().ok();
        }
    }
    let length = length.filter(|l| *l <= MAX_MESSAGE)?;
    let mut body = vec![0; length];
    out.read_exact(&mut body).await.ok()?;
    serde_json::from_slice(&body).ok()
}

fn file_uri(path: &Path) -> String {
    let mut s = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}
