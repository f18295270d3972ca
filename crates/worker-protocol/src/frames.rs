//! The frames themselves: what the host sends ([`HostFrame`]), what a worker sends
//! ([`WorkerFrame`], [`RawWorkerFrame`]), the requests code makes ([`CallRequest`]) and their
//! outcomes ([`CallOutcome`]), with the protocol's version and size limits.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// Protocol version, sent in [`WorkerFrame::Ready`]; the host refuses a worker that speaks another.
pub const PROTOCOL_VERSION: u32 = 3;

/// Largest frame a worker may send. A single log line, tool call or result above this is
/// a protocol violation: 16 MiB leaves room for large tool arguments and results while
/// keeping one frame from exhausting host memory.
pub const MAX_WORKER_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// How deeply a value code hands the host may nest: levels of arrays and objects in a tool
/// call's arguments (their own object is the first), a stored value, a request's options, a
/// run's result. The host decodes a worker's frames with serde_json, whose limit is 128
/// levels for the whole frame; the frame around such a value takes at most 3 of them. Workers
/// refuse a deeper value as the code's error, at the call (a result deeper than this is shown
/// as text from this level down, as Python shows every result).
pub const MAX_VALUE_DEPTH: usize = 100;

/// How deeply the JSON `text` nests (levels of arrays and objects: `1` is 0, `[1]` is 1),
/// counted in one pass without recursion; it stops counting once past `stop_past` (the
/// answer is then `stop_past + 1`), so a hostile text costs no more than the scan up to there.
/// Brackets inside strings do not count. The text is not otherwise checked.
pub fn json_depth(text: &[u8], stop_past: usize) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                // Skip the string: to the next quote not escaped.
                i += 1;
                while i < text.len() {
                    match text[i] {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > deepest {
                    deepest = depth;
                    if deepest > stop_past {
                        return deepest;
                    }
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    deepest
}

/// Largest frame the host sends (code plus bindings, or one upstream result).
pub const MAX_HOST_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// Host to worker.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostFrame {
    /// Run one piece of code. A worker runs one at a time; after [`WorkerFrame::Done`] it waits
    /// for the next `Run` (sessions) or exits when its stdin closes.
    Run(RunRequest),
    /// The answer to a [`WorkerFrame::Call`] with the same `id`. `kept`: the value is a large
    /// string the host keeps until the run ends, so a run whose result is that very string
    /// may end with [`RunOutcome::Reply`] instead of sending it back.
    Reply {
        id: u64,
        outcome: CallOutcome,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        kept: bool,
    },
    /// The answer to a tail call ([`WorkerFrame::Call`]'s `tail`) whose value is a string the
    /// host keeps (as a [`HostFrame::Reply`] with `kept`) and does not send: the code returns
    /// that value as it is, so the worker ends the run with [`RunOutcome::Reply`] for `id`
    /// without ever making the string.
    Kept { id: u64 },
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
    /// The arguments of a skill's run: what its code sees as the global `args`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// Seeds the run's randomness (`Math.random`, Python's `random`), so that a replay of
    /// the run draws the same numbers (the host's call log keeps it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
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

/// The camelCase form of a server or tool name, by which code can also reach it
/// (`tools.filesystem.readFile` for `read_file`, `getPage` for `get-page`): the name's runs of
/// ASCII letters, digits and `$` joined, each run after the first starting upper-case; a
/// leading digit gets a `_` prefix. The form wizard-generated wrappers use
/// (`filesystem.readFile(...)`). Resolved after the exact name and the [`ident`] form, and
/// only when one name has it.
pub fn camel(name: &str) -> String {
    let mut s = String::with_capacity(name.len());
    let mut boundary = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '$' {
            if boundary && !s.is_empty() {
                s.push(c.to_ascii_uppercase());
            } else {
                s.push(c);
            }
            boundary = false;
        } else {
            boundary = true;
        }
    }
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
    /// Ids are chosen by the worker and unique within one run. `tail`: a tool call whose value
    /// is the run's result as it is (the code's last statement, outside a session), which the
    /// host may answer with [`HostFrame::Kept`].
    Call {
        id: u64,
        request: CallRequest,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        tail: bool,
    },
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
    /// absent) or a bare tool name with `server` given. The host resolves and checks it, and
    /// unwraps the upstream's result into the value code sees as `shape` says.
    Tool {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
        name: String,
        #[serde(default)]
        args: Value,
        #[serde(default, skip_serializing_if = "ResultShape::is_structured")]
        shape: ResultShape,
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
    /// One tool's description with its schemas: `name` is `mcp__server__tool`, or a tool of
    /// `server` when that is given (`getToolSchema(server, tool)`).
    GetToolSchema {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
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
    /// `saveSkill(name, {code, description, inputSchema?, language?})`: keep `code` as a skill
    /// in the user's skills directory. Answered with what was saved.
    SaveSkill {
        name: String,
        code: String,
        description: String,
        /// `typescript` or `python`; the calling worker's language when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        language: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_schema: Option<Value>,
    },
    /// `listSkills()`: every skill, with what changed under the ones that call tools.
    ListSkills,
    /// `skills.name(args)`: run a saved skill as an execution of its own, with what the
    /// calling execution may do. Answered with `{"result", "logs", "warnings"}`.
    RunSkill {
        name: String,
        #[serde(default)]
        args: Value,
    },
}

/// Which value code gets for an upstream tool's result.
///
/// - `structured` (the default; the typed proxies `tools.server.tool(...)`): the result's
///   `structuredContent` when it has one, else one text block parsed as JSON when it is JSON,
///   else the text; several blocks as an array of those.
/// - `text` (the product line's own functions, `callMCPTool` and `call_mcp_tool`): the
///   answer's text, its text blocks joined. When the result has `structuredContent` and that
///   text is JSON equal to it, the structured value (the text *is* the data); when the text is
///   something else (a file's contents beside `{content}`), the text as a string. Without
///   `structuredContent`, a text that is a JSON object or array arrives parsed, any other
///   text as a string.
///
/// Both: a result with non-text blocks (images, resources) arrives as its content blocks,
/// and an `isError` result throws.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultShape {
    #[default]
    Structured,
    Text,
}

impl ResultShape {
    /// The default shape, which a request does not write.
    pub fn is_structured(&self) -> bool {
        *self == ResultShape::Structured
    }
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

/// The answer to a [`CallRequest`]. The value is raw JSON text: the host does not build a
/// tree of an upstream's result only to write it out again, and the worker parses it once,
/// in the engine.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CallOutcome {
    Ok {
        value: Box<RawValue>,
    },
    /// A success whose value is a string: a tool's text that is not JSON. In a reply frame
    /// ([`HostFrame::encode`]) it follows the frame's JSON as its UTF-8 bytes, so neither side
    /// writes or reads its escapes; written as JSON, it is `{"status":"ok","value":"…"}`.
    #[serde(rename = "ok")]
    Text {
        #[serde(rename = "value")]
        text: String,
    },
    Err {
        error: ErrorInfo,
    },
}

impl CallOutcome {
    /// A success carrying `value`, encoded once here.
    pub fn ok(value: &Value) -> CallOutcome {
        // A `Value` always encodes (its map keys are strings).
        let raw = serde_json::value::to_raw_value(value).unwrap_or_else(|_| null());
        CallOutcome::Ok { value: raw }
    }

    /// The value of a success, decoded (for small answers the worker itself reads).
    pub fn value(&self) -> Option<Value> {
        match self {
            CallOutcome::Ok { value } => serde_json::from_str(value.get()).ok(),
            CallOutcome::Text { text } => Some(Value::String(text.clone())),
            CallOutcome::Err { .. } => None,
        }
    }
}

/// The length of `text` written as a JSON string, quotes included, counted without writing
/// it: quotes, backslashes and `\n \r \t \b \f` take one more byte, other control
/// characters five. One pass, counting into bytes over blocks of 255, which the compiler
/// vectorises: 0.6 ms for 6.6 MB of escape-heavy text, against 5.5 ms counting into `usize`
/// (a megabyte text is counted on the way of every large result).
pub fn json_string_len(text: &str) -> usize {
    let (mut quotes, mut controls, mut short) = (0usize, 0usize, 0usize);
    for block in text.as_bytes().chunks(255) {
        let (mut q, mut c, mut s) = (0u8, 0u8, 0u8);
        for &b in block {
            q += u8::from(b == b'"' || b == b'\\');
            c += u8::from(b < 0x20);
            s += u8::from(matches!(b, b'\n' | b'\r' | b'\t' | 0x08 | 0x0c));
        }
        quotes += usize::from(q);
        controls += usize::from(c);
        short += usize::from(s);
    }
    2 + text.len() + quotes + short + 5 * (controls - short)
}

fn null() -> Box<RawValue> {
    RawValue::NULL.to_owned()
}

/// Equal when the values are equal as JSON (not as text: `{"a": 1}` equals `{"a":1}`).
impl PartialEq for CallOutcome {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                CallOutcome::Ok { .. } | CallOutcome::Text { .. },
                CallOutcome::Ok { .. } | CallOutcome::Text { .. },
            ) => self.value() == other.value(),
            (CallOutcome::Err { error: a }, CallOutcome::Err { error: b }) => a == b,
            _ => false,
        }
    }
}

/// The wire form of a [`CallOutcome`] and of a [`HostFrame`], read field by field: serde
/// reads an internally tagged enum through a buffer, where raw JSON cannot be kept.
#[derive(Deserialize)]
pub(crate) struct OutcomeWire {
    pub(crate) status: String,
    #[serde(default)]
    pub(crate) value: Option<Box<RawValue>>,
    #[serde(default)]
    pub(crate) error: Option<ErrorInfo>,
    /// The value is the frame's text after its JSON ([`HostFrame::encode`]).
    #[serde(default)]
    pub(crate) text: bool,
}

impl OutcomeWire {
    fn into_outcome<E: serde::de::Error>(self) -> Result<CallOutcome, E> {
        match (self.status.as_str(), self.value, self.error) {
            ("ok", _, _) if self.text => Err(E::custom(
                "an outcome whose text follows the frame's JSON, outside a frame",
            )),
            ("ok", value, _) => Ok(CallOutcome::Ok {
                value: value.unwrap_or_else(null),
            }),
            ("err", _, Some(error)) => Ok(CallOutcome::Err { error }),
            ("err", _, None) => Err(E::missing_field("error")),
            (other, _, _) => Err(E::unknown_variant(other, &["ok", "err"])),
        }
    }
}

impl<'de> Deserialize<'de> for CallOutcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        OutcomeWire::deserialize(d)?.into_outcome()
    }
}

#[derive(Deserialize)]
pub(crate) struct HostFrameWire {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) id: Option<u64>,
    pub(crate) outcome: Option<OutcomeWire>,
    pub(crate) code: Option<String>,
    pub(crate) tools: Option<Vec<ToolBinding>>,
    pub(crate) limits: Option<EngineLimits>,
    #[serde(default)]
    pub(crate) persist: bool,
    #[serde(default)]
    pub(crate) access: Option<AccessInfo>,
    #[serde(default)]
    pub(crate) args: Option<Value>,
    #[serde(default)]
    pub(crate) seed: Option<u64>,
    #[serde(default)]
    pub(crate) kept: bool,
}

impl<'de> Deserialize<'de> for HostFrame {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let w = HostFrameWire::deserialize(d)?;
        match w.kind.as_str() {
            "reply" => Ok(HostFrame::Reply {
                id: w.id.ok_or_else(|| D::Error::missing_field("id"))?,
                outcome: w
                    .outcome
                    .ok_or_else(|| D::Error::missing_field("outcome"))?
                    .into_outcome()?,
                kept: w.kept,
            }),
            "run" => Ok(HostFrame::Run(RunRequest {
                code: w.code.ok_or_else(|| D::Error::missing_field("code"))?,
                tools: w.tools.ok_or_else(|| D::Error::missing_field("tools"))?,
                limits: w.limits.ok_or_else(|| D::Error::missing_field("limits"))?,
                persist: w.persist,
                access: w.access,
                args: w.args,
                seed: w.seed,
            })),
            "kept" => Ok(HostFrame::Kept {
                id: w.id.ok_or_else(|| D::Error::missing_field("id"))?,
            }),
            other => Err(D::Error::unknown_variant(other, &["run", "reply", "kept"])),
        }
    }
}

/// Whether JSON text has a `\uXXXX` escape of a lone UTF-16 surrogate (one not part of an
/// escaped pair). Such text is valid JSON to a scan, and JavaScript writes it for a string
/// with a lone surrogate, but it has no UTF-8 form: decoding it into a `Value` fails. Raw JSON
/// with one therefore takes the decoding path, which fails or falls back as before.
pub fn has_lone_surrogate_escape(json: &str) -> bool {
    let b = json.as_bytes();
    let hex4 = |at: usize| -> Option<u16> {
        let s = std::str::from_utf8(b.get(at..at + 4)?).ok()?;
        u16::from_str_radix(s, 16).ok()
    };
    let mut i = 0;
    while let Some(off) = b
        .get(i..)
        .and_then(|rest| rest.iter().position(|&c| c == b'\\'))
    {
        let at = i + off;
        if b.get(at + 1) != Some(&b'u') {
            i = at + 2; // any other escape, `\\` included
            continue;
        }
        match hex4(at + 2) {
            Some(0xD800..=0xDBFF) => {
                let low = (b.get(at + 6..at + 8) == Some(b"\\u"))
                    .then(|| hex4(at + 8))
                    .flatten();
                if !matches!(low, Some(0xDC00..=0xDFFF)) {
                    return true;
                }
                i = at + 12;
            }
            Some(0xDC00..=0xDFFF) => return true,
            _ => i = at + 6,
        }
    }
    false
}

/// Worker-to-host frames whose large part the worker already holds as JSON text, written
/// as they are: the same bytes on the wire as the [`WorkerFrame`] they stand for.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RawWorkerFrame<'a> {
    /// [`WorkerFrame::Call`] with the request as JSON text (checked by the worker).
    Call { id: u64, request: &'a RawValue },
    /// [`WorkerFrame::Done`] with a successful run's result as JSON text.
    Done { outcome: RawRunOutcome<'a> },
}

/// [`RunOutcome::Ok`] with its result as JSON text.
#[derive(Debug, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RawRunOutcome<'a> {
    Ok { result: &'a RawValue },
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
    /// The result is the string value of reply `id`, which the host kept
    /// ([`HostFrame::Reply`]'s `kept`): code returned what a tool gave it, unchanged.
    Reply {
        id: u64,
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
