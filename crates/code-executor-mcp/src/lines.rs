//! JSON-RPC over a pair of byte streams, one message per line (MCP's stdio transport): the
//! server's own client on stdin/stdout, and every stdio upstream.
//!
//! rmcp's `AsyncRwTransport` does the same, but keeps its largest line and the largest message
//! it wrote allocated for the connection's life: after one 5 MB result the server held about
//! 30 MB it would never use again. Here a buffer a large message grew is let go once the message
//! is handled ([`KEPT_BYTES`]), lines are split with a vectorised search, and a message is
//! written from the bytes it was encoded into. What arrives is treated as rmcp treats it, so
//! that swapping transports changes nothing a peer can see: a byte order mark and a `\r` before
//! the newline are dropped, an empty line is skipped, a line that is not JSON is ignored, a
//! notification rmcp does not know is ignored, and JSON that is not a JSON-RPC message gets an
//! `Invalid request` error (id `null`). A line longer than the limit is dropped, said in the log.
//!
//! The server's side runs the 2025-11-25 task shim (`server::legacy_tasks`) on each line as it
//! passes ([`LineFilter`]); upstreams pass lines as they are. Given the pipes' descriptors
//! ([`LineTransport::widening`]), a large line widens the pipe it passes through
//! (`crate::pipes`).

use std::marker::PhantomData;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use rmcp::model::ErrorData;
use rmcp::service::{RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;

/// A buffer larger than this is not kept for the next message.
pub(crate) const KEPT_BYTES: usize = 1 << 20;
/// Bytes read at a time.
const CHUNK_BYTES: usize = 64 << 10;
/// UTF-8 byte order mark, which JSON parsers may ignore (RFC 8259, 8.1).
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Rewrites lines on their way in or out (`None`: the line passes as it is). A line handed to
/// a filter has no newline.
pub(crate) trait LineFilter: Send + Sync + 'static {
    fn inbound(&self, line: &[u8]) -> Option<Vec<u8>>;
    fn outbound(&self, line: &[u8]) -> Option<Vec<u8>>;
}

/// Lines pass as they are.
pub(crate) struct Unfiltered;

impl LineFilter for Unfiltered {
    fn inbound(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn outbound(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

/// See the module docs.
pub(crate) struct LineTransport<Role, R, W, F = Unfiltered> {
    read: R,
    chunk: Box<[u8]>,
    /// `chunk[pos..len]` is read and not yet taken into a line.
    pos: usize,
    len: usize,
    /// The line being read. It lives here, not in a local, because `receive` is polled in a
    /// `select!` and may be dropped between two reads: the next call goes on with it.
    line: Vec<u8>,
    max_line: usize,
    /// Past `max_line`: the rest of the line is skipped.
    discarding: bool,
    /// An `Invalid request` error is owed to the peer.
    owe_error: bool,
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
    /// A transport over `read`/`write` that drops lines longer than `max_line` bytes.
    pub(crate) fn new(read: R, write: W, max_line: usize, filter: Arc<F>) -> Self {
        Self {
            read,
            chunk: vec![0; CHUNK_BYTES].into_boxed_slice(),
            pos: 0,
            len: 0,
            line: Vec::new(),
            max_line,
            discarding: false,
            owe_error: false,
            write: Arc::new(Mutex::new(Some(Writer {
                out: write,
                pipe: None,
            }))),
            read_pipe: None,
            filter,
            _role: PhantomData,
        }
    }

    /// Widens the pipes behind `read` and `write` (duplicates of their descriptors) when a
    /// line of [`crate::pipes::LARGE_MESSAGE_BYTES`] or more passes.
    pub(crate) fn widening(mut self, read: Option<OwnedFd>, write: Option<OwnedFd>) -> Self {
        self.read_pipe = read;
        // Nothing else holds the writer yet: `send` has not been called.
        if let Some(Some(w)) = Arc::get_mut(&mut self.write).map(Mutex::get_mut) {
            w.pipe = write;
        }
        self
    }

    /// Reads up to the end of the next line (into `self.line`, newline included).
    /// Cancellation-safe: nothing read is lost when the future is dropped at its one await.
    async fn read_line(&mut self) -> std::io::Result<Read> {
        loop {
            if self.pos < self.len {
                let avail = &self.chunk[self.pos..self.len];
                let newline = memchr::memchr(b'\n', avail);
                let take = newline.map_or(avail.len(), |i| i + 1);
                if self.discarding {
                    self.pos += take;
                    if newline.is_some() {
                        self.discarding = false;
                    }
                    continue;
                }
                if self.line.len() + take > self.max_line {
                    self.line = Vec::new();
                    self.pos += take;
                    self.discarding = newline.is_none();
                    return Ok(Read::TooLong);
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

    /// Writes the `Invalid request` error owed to the peer.
    async fn pay_error(&mut self) -> bool {
        let error = TxJsonRpcMessage::<Role>::error(
            ErrorData::invalid_request("Invalid request", None),
            None,
        );
        match encode(&error) {
            Ok(bytes) => write_line(&self.write, bytes).await.is_ok(),
            Err(_) => false,
        }
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
            if self.owe_error {
                if !self.pay_error().await {
                    return None;
                }
                self.owe_error = false;
            }
            match self.read_line().await {
                Ok(Read::Line) => {}
                Ok(Read::TooLong) => {
                    tracing::error!(
                        max_line_length = self.max_line,
                        "a message over the line limit was dropped"
                    );
                    continue;
                }
                // Bytes without a final newline are an incomplete message: nothing to deliver.
                Ok(Read::Eof) => return None,
                Err(e) => {
                    tracing::error!("cannot read from the stream: {e}");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let parsed = {
                let text = line.strip_suffix(b"\n").unwrap_or(&line);
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                let changed = self.filter.inbound(text);
                let text = changed.as_deref().unwrap_or(text);
                let text = text.strip_prefix(BOM).unwrap_or(text);
                let direct = (text.len() >= DIRECT_DECODE_BYTES)
                    .then(|| Role::decode_directly(text))
                    .flatten();
                match direct {
                    Some(msg) => Some(Parsed::Message(msg)),
                    None => (!text.is_empty()).then(|| parse::<RxJsonRpcMessage<Role>>(text)),
                }
            };
            // The buffer is kept for the next line unless a large message grew it.
            if line.capacity() <= KEPT_BYTES {
                self.line = line;
                self.line.clear();
            }
            match parsed {
                None | Some(Parsed::Ignored) => continue,
                Some(Parsed::Message(msg)) => return Some(msg),
                Some(Parsed::NotAMessage) => self.owe_error = true,
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.write.lock().await.take());
        Ok(())
    }
}

/// Lines at least this long are first decoded by [`Decode::decode_directly`].
const DIRECT_DECODE_BYTES: usize = 64 << 10;

/// How a side decodes a large line of its peer's when the line has the one shape that makes
/// lines large: an upstream's tool result. rmcp decodes a message through two untagged enums
/// (its JSON-RPC message, then the union of every result), buffering it and copying its
/// strings at each: for a 6 MB result three times the work of decoding the result's own type
/// (about 15 ms against 5). `None`: the line is decoded as usual, as are all lines of a
/// server's client.
pub(crate) trait Decode: ServiceRole {
    fn decode_directly(_line: &[u8]) -> Option<RxJsonRpcMessage<Self>> {
        None
    }
}

impl Decode for rmcp::RoleServer {}

impl Decode for rmcp::RoleClient {
    /// A response whose keys are `jsonrpc`, `id` and `result` only, and whose result's keys
    /// are those of a completed `CallToolResult` only: rmcp would decode it to the same
    /// message (no result type before `CallToolResult` in its union takes such an object,
    /// or every tool result would be taken for it), so the two decodings cannot disagree.
    fn decode_directly(line: &[u8]) -> Option<RxJsonRpcMessage<Self>> {
        use rmcp::model::{
            CallToolResult, ContentBlock, JsonRpcMessage, JsonRpcResponse, JsonRpcVersion2_0,
            MetaObject, RequestId, ResultType, ServerResult,
        };
        use serde::Deserialize;
        /// A present `null` is `Some(Null)`, as rmcp keeps it.
        fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
            Value::deserialize(d).map(Some)
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct ToolResult {
            #[serde(default)]
            result_type: Option<ResultType>,
            content: Vec<ContentBlock>,
            #[serde(default, deserialize_with = "present")]
            structured_content: Option<Value>,
            #[serde(default)]
            is_error: Option<bool>,
            #[serde(default, rename = "_meta")]
            meta: Option<MetaObject>,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Response {
            jsonrpc: JsonRpcVersion2_0,
            id: RequestId,
            result: ToolResult,
        }
        let r: Response = serde_json::from_slice(line).ok()?;
        if r.result
            .result_type
            .as_ref()
            .is_some_and(|t| !t.is_complete())
        {
            return None;
        }
        let mut result = CallToolResult::success(r.result.content);
        result.result_type = r.result.result_type;
        result.structured_content = r.result.structured_content;
        result.is_error = r.result.is_error;
        result.meta = r.result.meta;
        Some(JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: r.jsonrpc,
            id: r.id,
            result: ServerResult::CallToolResult(result),
        }))
    }
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

/// What a line held.
enum Parsed<T> {
    Message(T),
    /// Not JSON, or a notification outside MCP: nothing to answer.
    Ignored,
    /// JSON, but not a JSON-RPC message of this side: answered with `Invalid request`.
    NotAMessage,
}

fn parse<T: DeserializeOwned>(text: &[u8]) -> Parsed<T> {
    match serde_json::from_slice(text) {
        Ok(msg) => Parsed::Message(msg),
        Err(e) => {
            use serde_json::error::Category;
            match e.classify() {
                // No id to answer, and answering garbage can start an error storm with a peer
                // that echoes it.
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
                        Parsed::NotAMessage
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

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::RoleServer;
    use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
    use serde_json::json;
    use tokio::io::{AsyncBufReadExt, BufReader, DuplexStream};

    type Server = LineTransport<RoleServer, DuplexStream, DuplexStream>;

    /// A server-side transport, the client's end of its input, and its output as lines.
    fn server(
        max_line: usize,
    ) -> (
        Server,
        DuplexStream,
        tokio::io::Lines<BufReader<DuplexStream>>,
    ) {
        let (client_in, read) = tokio::io::duplex(1 << 20);
        let (write, client_out) = tokio::io::duplex(1 << 20);
        let t = LineTransport::new(read, write, max_line, Arc::new(Unfiltered));
        (t, client_in, BufReader::new(client_out).lines())
    }

    fn ping(id: u64) -> String {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#)
    }

    /// An upstream's large tool result decodes directly to what rmcp makes of it; every other
    /// shape (another result, a result type that is not complete, a stray key, a request, an
    /// error) is left to rmcp.
    #[test]
    fn a_large_tool_result_decodes_directly_to_what_rmcp_makes_of_it() {
        use rmcp::RoleClient;
        use rmcp::model::ServerResult;
        let big = "she said \"hi\"\n\t é 🚀 \u{1}".repeat(4000);
        let text = json!({"type": "text", "text": big});
        let direct = [
            json!({"content": [text]}),
            json!({"content": [text, {"type": "image", "data": "AAAA", "mimeType": "image/png"}],
                   "isError": true, "_meta": {"k": 1}}),
            json!({"resultType": "complete", "content": [], "structuredContent": {"t": big}}),
            json!({"content": [text], "structuredContent": null}),
            json!({"content": [text], "structuredContent": big}),
        ];
        let left_to_rmcp = [
            json!({"resultType": "input_required", "content": [text]}),
            json!({"content": [text], "extra": 1}),
            json!({"contents": [{"uri": "a:b", "text": big}]}),
            json!({"structuredContent": big}),
        ];
        let line = |result: &Value| {
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": "r-1", "result": result})).unwrap()
        };
        for result in &direct {
            let line = line(result);
            let ours = RoleClient::decode_directly(&line).expect("decoded directly");
            let theirs: RxJsonRpcMessage<RoleClient> = serde_json::from_slice(&line).unwrap();
            assert_eq!(
                serde_json::to_value(&ours).unwrap(),
                serde_json::to_value(&theirs).unwrap()
            );
            for m in [ours, theirs] {
                let JsonRpcMessage::Response(r) = m else {
                    panic!("not a response")
                };
                assert!(matches!(r.result, ServerResult::CallToolResult(_)));
            }
        }
        for result in &left_to_rmcp {
            assert!(
                RoleClient::decode_directly(&line(result)).is_none(),
                "{result}"
            );
        }
        let others = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {"x": big}}),
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": big}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [text]}, "error": null}),
        ];
        for m in others {
            assert!(RoleClient::decode_directly(&serde_json::to_vec(&m).unwrap()).is_none());
        }
        assert!(RoleServer::decode_directly(&line(&direct[0])).is_none());
    }

    fn is_ping(msg: &ClientJsonRpcMessage, want: u64) -> bool {
        matches!(msg, JsonRpcMessage::Request(r)
            if matches!(r.request, ClientRequest::PingRequest(_))
                && r.id == rmcp::model::NumberOrString::Number(want as i64))
    }

    /// Everything a server-side transport delivers from `input` (as JSON) and what it writes
    /// back, until the input ends.
    async fn deliveries<T: Transport<RoleServer>>(
        make: impl FnOnce(DuplexStream, DuplexStream) -> T,
        input: &[u8],
    ) -> (Vec<Value>, String) {
        let (mut client_in, read) = tokio::io::duplex(1 << 20);
        let (write, mut client_out) = tokio::io::duplex(1 << 20);
        let mut t = make(read, write);
        client_in.write_all(input).await.unwrap();
        drop(client_in);
        let mut got = Vec::new();
        while let Some(msg) = t.receive().await {
            got.push(serde_json::to_value(&msg).unwrap());
        }
        drop(t);
        let mut out = String::new();
        client_out.read_to_string(&mut out).await.unwrap();
        (got, out)
    }

    #[tokio::test]
    async fn lines_arrive_exactly_as_from_rmcps_transport() {
        let input = [
            format!("\u{feff}{}\r\n", ping(1)), // byte order mark, CRLF
            "\n\r\n".to_string(),              // empty lines
            "this is not json\n".to_string(),   // ignored, no answer
            "{\"jsonrpc\":\"2.0\",\"method\":\"window/logMessage\",\"params\":{}}\n".to_string(),
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/unknown/thing\"}\n".to_string(),
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"notifications/odd\"}\n".to_string(),
            "{\"jsonrpc\":\"2.0\",\"method\":\"tools/list\"}\n".to_string(), // a request without id
            format!("{}\n", ping(2)),
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"bogus\":true}\n".to_string(), // JSON, not JSON-RPC
            "[1,2]\n".to_string(),
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"arguments\":{\"s\":\"\u{2028}é🚀\"}}}\n".to_string(),
            "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":{}}\n".to_string(),
            "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":1,\"message\":\"m\"}}\n".to_string(),
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":4}}\n".to_string(),
            "\u{feff}\n".to_string(),
            format!("{}\n", ping(6)),
            // A line without its newline at the end of the stream is no message.
            ping(7),
        ]
        .concat();
        let ours = deliveries(
            |r, w| LineTransport::<RoleServer, _, _>::new(r, w, 1 << 20, Arc::new(Unfiltered)),
            input.as_bytes(),
        )
        .await;
        let rmcps = deliveries(
            rmcp::transport::async_rw::AsyncRwTransport::<RoleServer, _, _>::new,
            input.as_bytes(),
        )
        .await;
        assert_eq!(ours, rmcps);
        assert!(ours.0.len() >= 6, "{:?}", ours.0);
        assert!(ours.1.contains("-32600"), "{}", ours.1);
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_dropped_and_the_next_one_read() {
        let (mut t, mut input, _output) = server(4096);
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"ping","params":{{"x":"{}"}}}}"#,
            "a".repeat(200_000)
        );
        input
            .write_all(format!("{long}\n{}\n", ping(1)).as_bytes())
            .await
            .unwrap();
        assert!(is_ping(&t.receive().await.unwrap(), 1));
        assert!(!t.discarding);
    }

    #[tokio::test]
    async fn a_large_line_is_not_kept_and_a_small_one_is() {
        let (mut t, mut input, _output) = server(64 << 20);
        let large = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"_meta":{{"x":"{}"}}}}}}"#,
            "é".repeat(2 << 20)
        );
        let writer = tokio::spawn(async move {
            input
                .write_all(format!("{large}\n{}\n", ping(2)).as_bytes())
                .await
                .unwrap();
            input
        });
        assert!(is_ping(&t.receive().await.unwrap(), 1));
        assert!(
            t.line.capacity() <= KEPT_BYTES,
            "{} bytes kept",
            t.line.capacity()
        );
        assert!(is_ping(&t.receive().await.unwrap(), 2));
        assert!(
            t.line.capacity() > 0,
            "a small line's buffer is kept for the next"
        );
        drop(writer.await.unwrap());
    }

    /// A real pair of pipes: what goes into `cat` comes back out.
    fn cat() -> (
        tokio::process::Child,
        tokio::process::ChildStdin,
        tokio::process::ChildStdout,
    ) {
        let mut cat = tokio::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("cat runs");
        let (stdin, stdout) = (cat.stdin.take().unwrap(), cat.stdout.take().unwrap());
        (cat, stdin, stdout)
    }

    #[tokio::test]
    async fn a_large_line_widens_the_pipes_it_passes_and_small_ones_do_not() {
        use std::os::fd::AsFd;
        let (mut cat, stdin, stdout) = cat();
        let dup = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().unwrap();
        let (probe_in, probe_out) = (dup(stdin.as_fd()), dup(stdout.as_fd()));
        let mut t: LineTransport<RoleServer, _, _> =
            LineTransport::new(stdout, stdin, 16 << 20, Arc::new(Unfiltered))
                .widening(Some(dup(probe_out.as_fd())), Some(dup(probe_in.as_fd())));
        let ping_with = |id: u64, text: &str| -> TxJsonRpcMessage<RoleServer> {
            serde_json::from_value(serde_json::json!({
                "jsonrpc": "2.0", "id": id, "method": "ping", "params": {"_meta": {"x": text}}
            }))
            .unwrap()
        };
        let echoed = |msg: &ClientJsonRpcMessage| serde_json::to_value(msg).unwrap();
        let narrow = crate::pipes::size(&probe_in);
        assert!(narrow < crate::pipes::WIDE_BYTES);

        let small = "s".repeat(100 << 10);
        let (sent, got) = tokio::join!(t.send(ping_with(1, &small)), t.receive());
        sent.unwrap();
        assert_eq!(
            echoed(&got.unwrap())["params"]["_meta"]["x"],
            small.as_str()
        );
        assert_eq!(
            crate::pipes::size(&probe_in),
            narrow,
            "100 KiB do not widen"
        );
        assert_eq!(crate::pipes::size(&probe_out), narrow);

        let large = "é\"\n🚀".repeat(600 << 10);
        let (sent, got) = tokio::join!(t.send(ping_with(2, &large)), t.receive());
        sent.unwrap();
        assert!(is_ping(got.as_ref().unwrap(), 2));
        assert_eq!(
            echoed(&got.unwrap())["params"]["_meta"]["x"],
            large.as_str()
        );
        assert_eq!(crate::pipes::size(&probe_in), crate::pipes::WIDE_BYTES);
        assert_eq!(crate::pipes::size(&probe_out), crate::pipes::WIDE_BYTES);

        // The writer's duplicate goes with it: `cat` sees the end of its input and exits.
        t.close().await.unwrap();
        drop(probe_in);
        let status = tokio::time::timeout(std::time::Duration::from_secs(10), cat.wait()).await;
        assert!(status.expect("cat saw its input end").unwrap().success());
    }

    #[tokio::test]
    async fn a_transport_that_never_widened_still_closes_its_peers_input() {
        use std::os::fd::AsFd;
        let (mut cat, stdin, stdout) = cat();
        let dup = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().ok();
        let (read_pipe, write_pipe) = (dup(stdout.as_fd()), dup(stdin.as_fd()));
        let mut t: LineTransport<RoleServer, _, _> =
            LineTransport::new(stdout, stdin, 1 << 20, Arc::new(Unfiltered))
                .widening(read_pipe, write_pipe);
        t.close().await.unwrap();
        let status = tokio::time::timeout(std::time::Duration::from_secs(10), cat.wait()).await;
        assert!(status.expect("cat saw its input end").unwrap().success());
        drop(t);
    }

    #[tokio::test]
    async fn a_read_dropped_midway_loses_nothing() {
        let (mut t, mut input, _output) = server(1 << 20);
        let msg = ping(7);
        let (head, tail) = msg.split_at(10);
        input.write_all(head.as_bytes()).await.unwrap();
        // The receive is dropped while it waits for the rest of the line (as rmcp's select!
        // does when something else is ready first).
        let dropped = futures::FutureExt::now_or_never(t.receive());
        assert!(dropped.is_none(), "nothing complete to deliver yet");
        input
            .write_all(format!("{tail}\n").as_bytes())
            .await
            .unwrap();
        assert!(is_ping(&t.receive().await.unwrap(), 7));
    }

    struct Upper;
    impl LineFilter for Upper {
        fn inbound(&self, line: &[u8]) -> Option<Vec<u8>> {
            String::from_utf8(line.to_vec())
                .ok()
                .map(|s| s.replace("PONG", "ping").into_bytes())
        }
        fn outbound(&self, line: &[u8]) -> Option<Vec<u8>> {
            Some(line.to_ascii_uppercase())
        }
    }

    #[tokio::test]
    async fn messages_go_out_one_per_line_through_the_filter_until_closed() {
        let (client_in, read) = tokio::io::duplex(1 << 16);
        let (write, client_out) = tokio::io::duplex(1 << 16);
        let mut t: LineTransport<RoleServer, _, _, Upper> =
            LineTransport::new(read, write, 1 << 20, Arc::new(Upper));
        let mut output = BufReader::new(client_out).lines();
        let mut input = client_in;
        input
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"PONG\"}\n")
            .await
            .unwrap();
        assert!(
            is_ping(&t.receive().await.unwrap(), 1),
            "the inbound filter ran"
        );
        let answer = rmcp::model::ServerJsonRpcMessage::error(
            ErrorData::invalid_params("nope", None),
            Some(rmcp::model::NumberOrString::Number(1)),
        );
        t.send(answer.clone()).await.unwrap();
        t.send(answer.clone()).await.unwrap();
        for _ in 0..2 {
            let line = output.next_line().await.unwrap().unwrap();
            assert!(
                line.contains("\"JSONRPC\":\"2.0\"") && line.contains("NOPE"),
                "{line}"
            );
        }
        t.close().await.unwrap();
        let err = t.send(answer).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotConnected);
    }
}
