//! The frames the host and a worker exchange over the worker's inherited pipes.
//!
//! Every frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON.
//! The host writes [`HostFrame`]s to the worker's stdin and reads [`WorkerFrame`]s from its
//! stdout. The Python shim speaks the same encoding; `docs/protocol.md` is the reference.
//!
//! The host treats every byte from a worker as untrusted: [`MAX_WORKER_FRAME_BYTES`] caps a
//! frame before its body is read, and a frame that does not decode ends that worker.

mod errors;

use std::io::{self, Read, Write};

pub use errors::CallError;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Protocol version, sent in [`WorkerFrame::Ready`]; the host refuses a worker that speaks another.
pub const PROTOCOL_VERSION: u32 = 1;

/// Largest frame a worker may send. A single log line, tool call or result above this is
/// a protocol violation: 16 MiB leaves room for large tool arguments and results while
/// keeping one frame from exhausting host memory.
pub const MAX_WORKER_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Largest frame the host sends (code plus bindings, or one upstream result).
pub const MAX_HOST_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// Host to worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostFrame {
    /// Run one piece of code. A worker runs one at a time; after [`WorkerFrame::Done`] it waits
    /// for the next `Run` (sessions) or exits when its stdin closes.
    Run(RunRequest),
    /// The answer to a [`WorkerFrame::Call`] with the same `id`.
    Reply { id: u64, outcome: CallOutcome },
}

/// What to run and what the code may see.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    /// Plain JavaScript (types already stripped by the host) or Python source.
    pub code: String,
    /// The upstream tools visible to this execution, for `tools.server.tool(...)` proxies.
    pub tools: Vec<ToolBinding>,
    /// Engine-side limits; the host enforces the deadline and output cap itself as well.
    pub limits: EngineLimits,
    /// The run belongs to a session: the worker keeps what the code defined (Python: the
    /// module namespace; JavaScript keeps its globals anyway) for the session's next run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub persist: bool,
    /// The files and network this run was granted, so that code can be told which grant is
    /// missing when an access fails (the sandbox and the host enforce them, not the worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<AccessInfo>,
}

/// What a run was granted, as the worker needs to know it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessInfo {
    /// Paths readable inside the sandbox (real paths; the same inside and outside).
    #[serde(default)]
    pub read: Vec<String>,
    /// The one writable directory, when the run has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// Whether `fetch` was granted any destination.
    #[serde(default)]
    pub net: bool,
}

/// One upstream tool the code may call through a `tools.server.tool(...)` proxy, or, with
/// `tool` absent, a server whose tools are not known yet (it starts on first use). A tool's
/// typed declaration is asked for ([`CallRequest::Signature`]) when code reads it, so a run
/// frame stays small however many tools there are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolBinding {
    pub server: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

/// The identifier form of a server or tool name, by which code can also reach it
/// (`tools.my_server.get_page` for `my-server`'s `get.page`): every character that cannot be in
/// an identifier becomes `_`, and a leading digit gets a `_` prefix. The host resolves calls by
/// it, and the JavaScript worker names its proxies with it, so both agree.
pub fn ident(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

/// Limits the engine applies from inside (memory, stack); the host applies the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineLimits {
    pub memory_bytes: u64,
    pub stack_bytes: u64,
    /// After this many bytes of log text the worker stops sending logs and sends one
    /// [`WorkerFrame::LogsTruncated`] instead; the host caps independently.
    pub max_log_bytes: u64,
}

/// Worker to host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerFrame {
    /// Sent once, when the engine is initialised and waiting for [`HostFrame::Run`].
    Ready { protocol: u32, engine: String },
    /// A request the code makes of the host; answered by [`HostFrame::Reply`] with the same id.
    /// Ids are chosen by the worker and unique within one run.
    Call { id: u64, request: CallRequest },
    /// One captured line of output.
    Log { level: LogLevel, text: String },
    /// The worker dropped further output after reaching [`EngineLimits::max_log_bytes`].
    LogsTruncated,
    /// The code finished.
    Done { outcome: RunOutcome },
}

/// What code inside the sandbox can ask of the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum CallRequest {
    /// Call an upstream tool. `name` is either a qualified `mcp__server__tool` (with `server`
    /// absent) or a bare tool name with `server` given. The host resolves and checks it.
    Tool {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
        name: String,
        #[serde(default)]
        args: Value,
    },
    ListServers,
    SearchTools {
        query: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// `nextCursor` of a previous page.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<String>,
    },
    GetToolSchema {
        name: String,
    },
    /// Every visible tool with its schema, grouped by server.
    DiscoverTools,
    /// A tool's typed declaration in `language` (types from its JSON Schemas and the call's
    /// signature), answered as a string: what `tools.server.tool.signature` shows.
    Signature {
        server: String,
        tool: String,
        language: Dialect,
    },
    /// Keep `value` on the host under `key` for the session's later executions (`store`);
    /// with `delete`, forget the key instead. Answered with `null`.
    Store {
        key: String,
        #[serde(default)]
        value: Value,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        delete: bool,
    },
    /// The value kept under `key` (`load`): answered with `{"found": bool, "value": ...}`.
    Load {
        key: String,
    },
    /// `progress(done, total?, message?)`: how far the code is. The host checks the values,
    /// keeps the latest for whoever polls the execution (tasks, `wait`) and, when the client
    /// asked for progress, sends `notifications/progress` at a bounded rate. Answered with
    /// `null`.
    Progress {
        done: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Ask a language model (`llm.ask`, `llm.think`): through the client's sampling or the
    /// configured provider. `messages` are `{"role": "user"|"assistant", "content": text}`;
    /// answered with the reply's text.
    Llm {
        messages: Vec<LlmMessage>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        system: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_tokens: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// An HTTP request the host makes for the code, if the run's grant allows it (see
    /// [`FetchRequest`]); answered with a [`FetchResponse`] as JSON.
    Fetch(FetchRequest),
}

/// One turn of a conversation with a language model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmMessage {
    pub role: String,
    pub content: String,
}

/// An HTTP request from code. The host checks every hop against the run's grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchRequest {
    pub url: String,
    #[serde(default = "get")]
    pub method: String,
    /// Header pairs in order (a name may repeat).
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body, base64 (standard alphabet, padded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// `follow` (default), `error` (a redirect fails), or `manual` (the 3xx is returned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect: Option<String>,
}

fn get() -> String {
    "GET".into()
}

/// The answer to a [`FetchRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchResponse {
    pub status: u16,
    pub status_text: String,
    /// The URL of the last hop.
    pub url: String,
    pub redirected: bool,
    pub headers: Vec<(String, String)>,
    /// The body, base64.
    pub body: String,
}

/// The language a declaration is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    Typescript,
    Python,
}

/// The answer to a [`CallRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CallOutcome {
    Ok { value: Value },
    Err { error: ErrorInfo },
}

/// An error as the code sees it: `name` becomes the class (`ToolError`, `PolicyError`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    pub name: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
}

/// How a run ended, from inside the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RunOutcome {
    Ok {
        #[serde(default)]
        result: Value,
    },
    Err {
        error: ErrorInfo,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    Debug,
    Info,
    Log,
    Warn,
    Error,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Log => "log",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        }
    }
}

/// Encodes one frame: length prefix plus JSON.
pub fn encode<T: Serialize>(frame: &T) -> Result<Vec<u8>, serde_json::Error> {
    let body = serde_json::to_vec(frame)?;
    let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// Writes one frame and flushes.
pub fn write_frame<W: Write, T: Serialize>(w: &mut W, frame: &T) -> io::Result<()> {
    let bytes = encode(frame).map_err(io::Error::other)?;
    w.write_all(&bytes)?;
    w.flush()
}

/// Why a frame could not be read.
#[derive(Debug)]
pub enum FrameError {
    /// The stream ended cleanly between frames.
    Eof,
    TooLarge {
        len: usize,
        max: usize,
    },
    Io(io::Error),
    Malformed(serde_json::Error),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Eof => write!(f, "end of stream"),
            FrameError::TooLarge { len, max } => {
                write!(f, "frame of {len} bytes exceeds the {max}-byte limit")
            }
            FrameError::Io(e) => write!(f, "i/o error: {e}"),
            FrameError::Malformed(e) => write!(f, "malformed frame: {e}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Checks a length prefix against `max`.
pub fn check_len(header: [u8; 4], max: usize) -> Result<usize, FrameError> {
    let len = u32::from_be_bytes(header) as usize;
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    Ok(len)
}

/// Reads one frame (blocking), refusing bodies above `max` bytes before reading them.
pub fn read_frame<R: Read, T: for<'de> Deserialize<'de>>(
    r: &mut R,
    max: usize,
) -> Result<T, FrameError> {
    let mut header = [0u8; 4];
    match r.read_exact(&mut header) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(FrameError::Eof),
        Err(e) => return Err(FrameError::Io(e)),
    }
    let len = check_len(header, max)?;
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).map_err(FrameError::Io)?;
    serde_json::from_slice(&body).map_err(FrameError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_round_trip_with_their_documented_json() {
        let frame = WorkerFrame::Call {
            id: 7,
            request: CallRequest::Tool {
                server: None,
                name: "mcp__fs__read".into(),
                args: json!({"path": "/a"}),
            },
        };
        let bytes = encode(&frame).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&bytes[4..]).unwrap(),
            json!({"type": "call", "id": 7, "request": {"op": "tool", "name": "mcp__fs__read", "args": {"path": "/a"}}})
        );
        let back: WorkerFrame = read_frame(&mut &bytes[..], MAX_WORKER_FRAME_BYTES).unwrap();
        assert_eq!(back, frame);
    }

    #[test]
    fn oversized_frame_is_refused_before_reading_the_body() {
        let header = (MAX_WORKER_FRAME_BYTES as u32 + 1).to_be_bytes();
        let err =
            read_frame::<_, WorkerFrame>(&mut &header[..], MAX_WORKER_FRAME_BYTES).unwrap_err();
        assert!(matches!(err, FrameError::TooLarge { .. }), "{err}");
    }

    #[test]
    fn garbage_is_malformed_and_empty_is_eof() {
        let mut bytes = 3u32.to_be_bytes().to_vec();
        bytes.extend_from_slice(b"{{{");
        assert!(matches!(
            read_frame::<_, WorkerFrame>(&mut &bytes[..], 100),
            Err(FrameError::Malformed(_))
        ));
        assert!(matches!(
            read_frame::<_, WorkerFrame>(&mut &[][..], 100),
            Err(FrameError::Eof)
        ));
    }
}
