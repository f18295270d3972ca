//! JSON-RPC over a pair of byte streams, one message per line (MCP's stdio transport): the
//! server's own client on stdin/stdout, and every stdio upstream.
//!
//! rmcp's `AsyncRwTransport` does the same, but keeps its largest line and the largest message
//! it wrote allocated for the connection's life: after one 5 MB result the server held about
//! 30 MB it would never use again. Here a buffer a large message grew is let go once the message
//! is handled ([`KEPT_BYTES`]), never grows past the line limit, lines are split with a
//! vectorised search, and a message is written from the bytes it was encoded into.
//!
//! What arrives is treated as rmcp treats it, except where rmcp breaks JSON-RPC 2.0 (it drops
//! a line that is not JSON, and answers an invalid request without an `id`): a byte order mark
//! and a `\r` before the newline are dropped, an empty line is skipped, a notification rmcp
//! does not know is ignored; the server answers a line that is not JSON with a parse error
//! (`-32700`, `"id": null`; an upstream's stray output is only logged), and both sides answer
//! JSON that is not a valid JSON-RPC message with `Invalid request` (`-32600`) carrying the
//! message's id when it has one, else `"id": null` (the server also checks the envelope rmcp
//! lets pass: `"jsonrpc": "2.0"`, a string `method`, `params` an object or an array).
//!
//! Memory is bounded per message before anything is decoded: a line longer than the limit is
//! read to its end and thrown away as it arrives (only its id and whether it has a `method` are
//! kept, [`shape::Scanner`]), and a line with too many items or nested too deeply is not decoded
//! ([`shape::check`]). Such a message is not lost silently: a request is answered with an
//! error carrying its id, and a response becomes an error response with its id on this side,
//! so the call that waits for it fails at once with the size and the limit.
//!
//! The server's side runs the 2025-11-25 task shim (`server::legacy_tasks`) on each line as it
//! passes ([`LineFilter`]); upstreams pass lines as they are. Given the pipes' descriptors
//! ([`LineTransport::widening`]), a large line widens the pipe it passes through
//! (`crate::pipes`).

mod decode;
pub mod shape;
#[cfg(test)]
mod tests;

use std::marker::PhantomData;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use rmcp::model::{ErrorData, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;

use decode::DIRECT_DECODE_BYTES;
pub use decode::Decode;

/// A buffer larger than this is not kept for the next message.
pub const KEPT_BYTES: usize = 1 << 20;
/// Bytes read at a time.
const CHUNK_BYTES: usize = 64 << 10;
/// UTF-8 byte order mark, which JSON parsers may ignore (RFC 8259, 8.1).
const BOM: &[u8] = b"\xEF\xBB\xBF";
/// JSON-RPC 2.0's codes for a line that is not JSON and for JSON that is not a request.
const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;

/// Rewrites lines on their way in or out (`None`: the line passes as it is). A line handed to
/// a filter has no newline.
pub trait LineFilter: Send + Sync + 'static {
    fn inbound(&self, line: &[u8]) -> Option<Vec<u8>>;
    fn outbound(&self, line: &[u8]) -> Option<Vec<u8>>;
}

/// Lines pass as they are.
pub struct Unfiltered;

impl LineFilter for Unfiltered {
    fn inbound(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn outbound(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

/// See the module docs.
pub struct LineTransport<Role, R, W, F = Unfiltered> {
    read: R,
    chunk: Box<[u8]>,
    /// `chunk[pos..len]` is read and not yet taken into a line.
    pos: usize,
    len: usize,
    /// The line being read. It lives here, not in a local, because `receive` is polled in a
    /// `select!` and may be dropped between two reads: the next call goes on with it.
    line: Vec<u8>,
    max_line: usize,
    /// Past `max_line`: the rest of the line is read into `over` and thrown away.
    discarding: bool,
    /// The line over the limit: its size so far, its id and whether it is a request.
    over: shape::Scanner,
    over_bytes: usize,
    /// Said to the peer, or to this side's caller, with a message refused for its size: what
    /// to do instead.
    hint: &'static str,
    /// An error line owed to the peer, written before the next read.
    owed: Option<Vec<u8>>,
    /// Cancelled when the input ends (or cannot be read): what runs for the peer can stop.
    input_ended: Option<tokio_util::sync::CancellationToken>,
    write: Arc<Mutex<Option<Writer<W>>>>,
    /// The read side's pipe, to widen for a large line; `None` once one came.
    read_pipe: Option<OwnedFd>,
    filter: Arc<F>,
    _role: PhantomData<fn() -> Role>,
}

/// The write side, and a duplicate of its pipe's descriptor to widen it for a large line
/// (dropped with it: the peer sees the end of its input when the writer goes).
struct Writer<W> {
    out: W,
    pipe: Option<OwnedFd>,
}

/// How reading one line ended.
enum Read {
    Line,
    /// The line was over the limit and is gone (see `LineTransport::over`).
    TooLong,
    Eof,
}

impl<Role, R, W, F> LineTransport<Role, R, W, F>
where
    Role: Decode,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
    F: LineFilter,
{
    /// A transport over `read`/`write` that refuses lines longer than `max_line` bytes.
    pub fn new(read: R, write: W, max_line: usize, filter: Arc<F>) -> Self {
        Self {
            read,
            chunk: vec![0; CHUNK_BYTES].into_boxed_slice(),
            pos: 0,
            len: 0,
            line: Vec::new(),
            max_line,
            discarding: false,
            over: shape::Scanner::default(),
            over_bytes: 0,
            hint: "send less in one message",
            owed: None,
            input_ended: None,
            write: Arc::new(Mutex::new(Some(Writer {
                out: write,
                pipe: None,
            }))),
            read_pipe: None,
            filter,
            _role: PhantomData,
        }
    }

    /// What a refusal for size tells to do instead (default: send less in one message).
    pub fn refusal_hint(mut self, hint: &'static str) -> Self {
        self.hint = hint;
        self
    }

    /// Cancels `token` when the input ends or cannot be read, at once: rmcp itself waits up
    /// to 5 s for the answers of requests still running before it lets them go.
    pub fn on_input_end(mut self, token: tokio_util::sync::CancellationToken) -> Self {
        self.input_ended = Some(token);
        self
    }

    /// Widens the pipes behind `read` and `write` (duplicates of their descriptors) when a
    /// line of [`crate::pipes::LARGE_MESSAGE_BYTES`] or more passes.
    pub fn widening(mut self, read: Option<OwnedFd>, write: Option<OwnedFd>) -> Self {
        self.read_pipe = read;
        // Nothing else holds the writer yet: `send` has not been called.
        if let Some(Some(w)) = Arc::get_mut(&mut self.write).map(Mutex::get_mut) {
            w.pipe = write;
        }
        self
    }

    /// Reads up to the end of the next line (into `self.line`, newline included); a line over
    /// the limit is read to its end through `self.over` and not kept.
    /// Cancellation-safe: nothing read is lost when the future is dropped at its one await.
    async fn read_line(&mut self) -> std::io::Result<Read> {
        loop {
            if self.pos < self.len {
                let avail = &self.chunk[self.pos..self.len];
                let newline = memchr::memchr(b'\n', avail);
                let take = newline.map_or(avail.len(), |i| i + 1);
                if self.discarding {
                    self.over.feed_all(&avail[..take]);
                    self.over_bytes += take;
                    self.pos += take;
                    if newline.is_some() {
                        self.discarding = false;
                        return Ok(Read::TooLong);
                    }
                    continue;
                }
                if self.line.len() + take > self.max_line {
                    // What came so far goes through the scanner, the rest follows it there.
                    self.over = shape::Scanner::default();
                    self.over.feed_all(&self.line);
                    self.over_bytes = self.line.len();
                    self.line = Vec::new();
                    self.discarding = true;
                    continue;
                }
                // Grown as a vector grows, but never past the limit.
                let needed = self.line.len() + take;
                if needed > self.line.capacity() {
                    let target = needed.max(self.line.capacity() * 2).min(self.max_line);
                    self.line.reserve_exact(target - self.line.len());
                }
                self.line.extend_from_slice(&avail[..take]);
                self.pos += take;
                // A large line is coming in: the rest comes through a wider pipe.
                if self.line.len() >= crate::pipes::LARGE_MESSAGE_BYTES
                    && let Some(pipe) = self.read_pipe.take()
                {
                    crate::pipes::widen(pipe);
                }
                if newline.is_some() {
                    return Ok(Read::Line);
                }
                continue;
            }
            let n = self.read.read(&mut self.chunk).await?;
            if n == 0 {
                return Ok(Read::Eof);
            }
            self.pos = 0;
            self.len = n;
        }
    }

    /// What a message refused for `why` comes to, given its id and whether it has a method:
    /// a request is answered with an error carrying its id, a response becomes an error
    /// response with its id here (its caller fails at once), a notification is dropped, and
    /// a message with neither is answered with an error with `"id": null`.
    fn refused(
        &self,
        id: Option<Value>,
        has_method: bool,
        why: String,
    ) -> Parsed<RxJsonRpcMessage<Role>> {
        let message = format!("{why}; it was dropped unread. {}", self.hint);
        tracing::warn!(id = ?id, "a message was refused: {message}");
        match (id, has_method) {
            (Some(id), false) => match serde_json::from_value::<RequestId>(id) {
                Ok(id) => Parsed::Message(RxJsonRpcMessage::<Role>::error(
                    ErrorData::internal_error(message, None),
                    Some(id),
                )),
                Err(_) => Parsed::Ignored,
            },
            (None, true) => Parsed::Ignored,
            (id, _) => Parsed::Answer(error_line(id, INVALID_REQUEST, &message)),
        }
    }

    /// Decodes one complete line (no newline), or says what it comes to.
    fn parse_line(&self, line: &[u8]) -> Parsed<RxJsonRpcMessage<Role>> {
        let text = line.strip_suffix(b"\r").unwrap_or(line);
        let changed = self.filter.inbound(text);
        let text = changed.as_deref().unwrap_or(text);
        let text = text.strip_prefix(BOM).unwrap_or(text);
        if text.is_empty() {
            return Parsed::Ignored;
        }
        if text.len() >= shape::SHAPE_CHECKED_BYTES
            && let Err(e) = shape::check(text)
        {
            let mut scan = shape::Scanner::default();
            scan.feed_all(text);
            return self.refused(scan.id(), scan.has_method(), format!("the message {e}"));
        }
        if text.len() >= DIRECT_DECODE_BYTES
            && let Some(msg) = Role::decode_directly(text)
        {
            return Parsed::Message(msg);
        }
        if Role::CHECKS_ENVELOPE
            && let Some(answer) = check_envelope(text)
        {
            return answer;
        }
        parse::<RxJsonRpcMessage<Role>>(text, Role::CHECKS_ENVELOPE)
    }
}

impl<Role, R, W, F> Transport<Role> for LineTransport<Role, R, W, F>
where
    Role: Decode,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
    F: LineFilter,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<Role>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Encoded now, in the caller's order; written in turn under the writer's lock.
        let encoded = encode(&item).map(|bytes| match self.filter.outbound(&bytes) {
            Some(changed) => changed,
            None => bytes,
        });
        let write = self.write.clone();
        async move { write_line(&write, encoded?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<Role>> {
        loop {
            if let Some(line) = self.owed.take()
                && write_line(&self.write, line).await.is_err()
            {
                return None;
            }
            let parsed = match self.read_line().await {
                Ok(Read::Line) => {
                    let line = std::mem::take(&mut self.line);
                    let parsed = self.parse_line(line.strip_suffix(b"\n").unwrap_or(&line));
                    // The buffer is kept for the next line unless a large message grew it.
                    if line.capacity() <= KEPT_BYTES {
                        self.line = line;
                        self.line.clear();
                    }
                    parsed
                }
                Ok(Read::TooLong) => self.refused(
                    self.over.id(),
                    self.over.has_method(),
                    format!(
                        "the message is {} bytes, over the {}-byte limit for one message",
                        self.over_bytes, self.max_line
                    ),
                ),
                // Bytes without a final newline are an incomplete message: nothing to deliver.
                Ok(Read::Eof) => {
                    self.input_ended.iter().for_each(|t| t.cancel());
                    return None;
                }
                Err(e) => {
                    tracing::error!("cannot read from the stream: {e}");
                    self.input_ended.iter().for_each(|t| t.cancel());
                    return None;
                }
            };
            match parsed {
                Parsed::Ignored => continue,
                Parsed::Message(msg) => return Some(msg),
                Parsed::Answer(line) => self.owed = Some(line),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.write.lock().await.take());
        Ok(())
    }
}

/// A client's whole message (an HTTP body), judged as a line over stdio is.
pub enum ClientMessage {
    /// Not a valid JSON-RPC message of MCP: the error to answer with (which rmcp would give
    /// as a 415 and a line of text).
    Answer(Value),
    /// A notification outside MCP: accepted and ignored, never answered.
    Ignore,
    /// A message rmcp takes.
    Pass,
}

/// What the server does with a client's message, the same as over stdio, for a transport
/// that hands rmcp whole messages.
pub fn classify_client_message(text: &[u8]) -> ClientMessage {
    let answer = match check_envelope::<()>(text) {
        Some(Parsed::Answer(line)) => line,
        _ => match parse::<rmcp::model::ClientJsonRpcMessage>(text, true) {
            Parsed::Answer(line) => line,
            Parsed::Ignored => return ClientMessage::Ignore,
            Parsed::Message(_) => return ClientMessage::Pass,
        },
    };
    match serde_json::from_slice(&answer) {
        Ok(v) => ClientMessage::Answer(v),
        Err(_) => ClientMessage::Pass,
    }
}

/// A JSON-RPC error response; `None`: `"id": null`, as JSON-RPC 2.0 wants when the id
/// cannot be read (rmcp would leave the member out).
fn error_line(id: Option<Value>, code: i32, message: &str) -> Vec<u8> {
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": {"code": code, "message": message},
    });
    serde_json::to_vec(&error).unwrap_or_default()
}

/// The id of a message that is not valid, if it has one a response can carry (a string or a
/// number) and is not itself a response (answering a response could loop with its peer).
fn readable_id(msg: &Value) -> Option<Value> {
    let looks_like_response =
        msg.get("method").is_none() && (msg.get("result").is_some() || msg.get("error").is_some());
    match msg.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) if !looks_like_response => {
            Some(id.clone())
        }
        _ => None,
    }
}

/// The JSON-RPC 2.0 envelope rmcp does not check: `"jsonrpc": "2.0"`, a string `method`,
/// `params` an object or an array (or absent). `None`: it holds, or the line is left to the
/// decoder (not JSON, not an object).
fn check_envelope<T>(text: &[u8]) -> Option<Parsed<T>> {
    let Ok(Value::Object(msg)) = serde_json::from_slice::<Value>(text) else {
        return None;
    };
    let msg = Value::Object(msg);
    let problem = if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        "\"jsonrpc\" must be \"2.0\""
    } else if msg.get("method").is_some_and(|m| !m.is_string()) {
        "\"method\" must be a string"
    } else if msg.get("method").is_some()
        && msg
            .get("params")
            .is_some_and(|p| !(p.is_object() || p.is_array() || p.is_null()))
    {
        "\"params\" must be an object or an array"
    } else {
        return None;
    };
    tracing::debug!("an invalid request: {problem}");
    Some(Parsed::Answer(error_line(
        readable_id(&msg),
        INVALID_REQUEST,
        &format!("Invalid request: {problem} (JSON-RPC 2.0)"),
    )))
}

fn encode<T: serde::Serialize>(item: &T) -> std::io::Result<Vec<u8>> {
    serde_json::to_vec(item).map_err(std::io::Error::from)
}

/// Writes `bytes` and a newline, and flushes.
async fn write_line<W: AsyncWrite + Unpin>(
    write: &Mutex<Option<Writer<W>>>,
    mut bytes: Vec<u8>,
) -> std::io::Result<()> {
    bytes.push(b'\n');
    let mut guard = write.lock().await;
    let Some(w) = guard.as_mut() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotConnected,
            "the transport is closed",
        ));
    };
    // Once wide, a pipe stays so: its duplicate is not needed any more.
    if bytes.len() >= crate::pipes::LARGE_MESSAGE_BYTES {
        w.pipe.take_if(|p| crate::pipes::widen(&*p));
    }
    w.out.write_all(&bytes).await?;
    w.out.flush().await
}

/// What a line came to.
enum Parsed<T> {
    Message(T),
    /// Nothing to answer: an empty line, a notification outside MCP, an upstream's stray
    /// output, an oversized notification.
    Ignored,
    /// An error line to answer the peer with.
    Answer(Vec<u8>),
}

/// Decodes `text` as rmcp does; what does not decode is answered: a line that is not JSON
/// with a parse error when `answer_garbage` (the server's side; an upstream's stray output
/// is only logged: answering it can start an error storm with a peer that echoes it), JSON
/// that is not a message of this side with `Invalid request`.
fn parse<T: DeserializeOwned>(text: &[u8], answer_garbage: bool) -> Parsed<T> {
    match serde_json::from_slice(text) {
        Ok(msg) => Parsed::Message(msg),
        Err(e) => {
            use serde_json::error::Category;
            match e.classify() {
                Category::Syntax | Category::Eof if answer_garbage => {
                    tracing::debug!("a line that is not JSON: {e}");
                    Parsed::Answer(error_line(
                        None,
                        PARSE_ERROR,
                        &format!(
                            "Parse error: the line is not JSON ({e}); send one JSON-RPC message per line"
                        ),
                    ))
                }
                Category::Syntax | Category::Eof => {
                    tracing::debug!("ignoring a line that is not JSON: {e}");
                    Parsed::Ignored
                }
                Category::Data | Category::Io => {
                    let value: Option<Value> = serde_json::from_slice(text).ok();
                    if value.as_ref().is_some_and(ignorable_notification) {
                        Parsed::Ignored
                    } else {
                        tracing::debug!("a message that is not JSON-RPC: {e}");
                        Parsed::Answer(error_line(
                            value.as_ref().and_then(readable_id),
                            INVALID_REQUEST,
                            &format!(
                                "Invalid request: not a JSON-RPC 2.0 message of MCP ({e}); a request \
                                 is {{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"...\",\"params\":{{...}}}}"
                            ),
                        ))
                    }
                }
            }
        }
    }
}

/// A notification outside MCP (another protocol's, or an extension's this side does not know),
/// which is ignored as rmcp ignores it rather than answered with an error.
fn ignorable_notification(msg: &Value) -> bool {
    let Some(method) = msg.get("method").and_then(Value::as_str) else {
        return false;
    };
    let known_notification = KNOWN_NOTIFICATIONS.contains(&method);
    let known = known_notification || KNOWN_REQUESTS.contains(&method);
    msg.get("id").is_none() && !known || method.starts_with("notifications/") && !known_notification
}

/// The requests of the MCP revisions rmcp speaks.
const KNOWN_REQUESTS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/templates/list",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "completion/complete",
    "elicitation/create",
    "logging/setLevel",
    "roots/list",
    "sampling/createMessage",
];

/// The notifications of the MCP revisions rmcp speaks.
const KNOWN_NOTIFICATIONS: &[&str] = &[
    "notifications/cancelled",
    "notifications/initialized",
    "notifications/message",
    "notifications/progress",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "notifications/roots/list_changed",
    "notifications/subscriptions/acknowledged",
    "notifications/tools/list_changed",
];
