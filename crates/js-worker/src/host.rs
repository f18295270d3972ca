//! The functions the prelude gets as `host`: tool calls, logs and timers passed to the
//! engine's shared state, and the `fs` module's system calls.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::io::{self, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rquickjs::prelude::Opt;
use rquickjs::{Ctx, Exception, Function, Object, Value};
use worker_protocol::{
    CallOutcome, CallRequest, Dialect, LogLevel, MAX_VALUE_DEPTH, WorkerFrame,
    has_lone_surrogate_escape, json_depth,
};

use crate::link::Shared;
use crate::outgoing::{call_too_large, with_texts};

/// The fields of a request from the prelude that say what it is; the rest (a tool call's
/// arguments) is checked to be JSON and passed on as text.
#[derive(serde::Deserialize)]
struct ToolProbe {
    op: String,
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    name: Option<String>,
    /// `text` for `callMCPTool`, absent for the typed proxies.
    #[serde(default)]
    shape: Option<String>,
}

impl ToolProbe {
    /// What the request asks, as code wrote it: `tools.server.tool`, `callMCPTool('name')`,
    /// or the operation (`fetch`, `search`...).
    fn what(&self) -> String {
        match (&self.server, &self.name) {
            (Some(server), Some(name)) if self.op == "tool" && self.shape.is_some() => {
                format!("callMCPTool('{server}', '{name}')")
            }
            (Some(server), Some(name)) if self.op == "tool" => format!("tools.{server}.{name}"),
            (None, Some(name)) if self.op == "tool" => format!("callMCPTool('{name}')"),
            _ => self.op.clone(),
        }
    }
}

/// A request whose values nest deeper than [`MAX_VALUE_DEPTH`] (the request's own object
/// is one level more) is the code's `RangeError` at the call, saying the limit: the host's
/// decoder would refuse the frame and end the worker.
fn too_deep(ctx: &Ctx<'_>, probe: &ToolProbe, request: &str) -> Option<rquickjs::Error> {
    let depth = json_depth(request.as_bytes(), MAX_VALUE_DEPTH + 1).saturating_sub(1);
    if depth <= MAX_VALUE_DEPTH {
        return None;
    }
    let what = if probe.op == "tool" {
        "the arguments"
    } else {
        "the values passed"
    };
    Some(Exception::throw_range(
        ctx,
        &format!(
            "{}: {what} nest more than {MAX_VALUE_DEPTH} levels of arrays and objects, the \
             most a value passed to the host may have: flatten them, or pass the deep part \
             as a JSON string (JSON.stringify)",
            probe.what()
        ),
    ))
}

/// The functions the prelude gets as `host`.
pub(crate) fn host_object<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<RefCell<Shared>>,
) -> rquickjs::Result<Object<'js>> {
    let host = Object::new(ctx.clone())?;

    let s = shared.clone();
    host.set(
        "call",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  id: f64,
                  request: String,
                  marker: Opt<String>,
                  bigs: Opt<Vec<rquickjs::String<'js>>>,
                  keys: Opt<Vec<rquickjs::String<'js>>>| {
                let invalid =
                    |e: String| Exception::throw_type(&ctx, &format!("invalid host request: {e}"));
                let id = id as u64;
                // A tool call's arguments go to the host as the prelude encoded them: checked
                // here by one parse that keeps nothing (valid JSON, a tool request naming a
                // tool), not decoded into a tree and encoded again.
                let probe: ToolProbe =
                    serde_json::from_str(&request).map_err(|e| invalid(e.to_string()))?;
                if let Some(e) = too_deep(&ctx, &probe, &request) {
                    return Err(e);
                }
                let tool = probe.op == "tool" && !has_lone_surrogate_escape(&request);
                if let (Some(marker), Some(bigs), Some(keys)) = (marker.0, bigs.0, keys.0) {
                    // The prelude took the arguments' large strings out (`splitBigStrings`):
                    // they follow the frame's JSON as they are. Anything unexpected (a string
                    // without a UTF-8 form, a marker missing) sends the prelude the usual way
                    // (false).
                    if !tool || probe.name.is_none() {
                        return Ok(false);
                    }
                    let utf8 = |strings: Vec<rquickjs::String<'js>>| {
                        let mut out = Vec::with_capacity(strings.len());
                        for string in strings {
                            match string.to_string() {
                                Ok(text) => out.push(text),
                                Err(rquickjs::Error::Utf8(_)) => return Ok(None),
                                Err(e) => return Err(e),
                            }
                        }
                        Ok(Some(out))
                    };
                    let (Some(texts), Some(keys)) = (utf8(bigs)?, utf8(keys)?) else {
                        return Ok(false);
                    };
                    let Some(request) = with_texts(&request, &marker, &texts, &keys) else {
                        return Ok(false);
                    };
                    let len = request.len() + 1 + texts.iter().map(String::len).sum::<usize>();
                    if let Some(e) = call_too_large(&ctx, id, len) {
                        return Err(e);
                    }
                    let mut s = s.borrow_mut();
                    s.outstanding.insert(id, probe.what());
                    s.send_call_text(id, &request, &texts);
                    return Ok(true);
                }
                // Text with a lone surrogate has no UTF-8 form: the full parse below refuses
                // it, as it always did.
                if tool {
                    if probe.name.is_none() {
                        return Err(invalid("a tool request names no tool".into()));
                    }
                    if let Some(e) = call_too_large(&ctx, id, request.len()) {
                        return Err(e);
                    }
                    let mut s = s.borrow_mut();
                    s.outstanding.insert(id, probe.what());
                    s.send_call_text(id, request.as_bytes(), &[]);
                } else {
                    let request: CallRequest =
                        serde_json::from_str(&request).map_err(|e| invalid(e.to_string()))?;
                    let mut s = s.borrow_mut();
                    s.outstanding.insert(id, probe.what());
                    s.send(&WorkerFrame::Call {
                        id,
                        request,
                        tail: false,
                    });
                }
                Ok::<_, rquickjs::Error>(true)
            },
        )?,
    )?;

    let s = shared.clone();
    host.set(
        "log",
        Function::new(ctx.clone(), move |level: String, text: String| {
            let level = match level.as_str() {
                "debug" => LogLevel::Debug,
                "info" => LogLevel::Info,
                "warn" => LogLevel::Warn,
                "error" => LogLevel::Error,
                _ => LogLevel::Log,
            };
            let mut s = s.borrow_mut();
            if s.logs_truncated {
                return;
            }
            let len = text.len() as u64;
            if len > s.log_budget {
                s.logs_truncated = true;
                s.send(&WorkerFrame::LogsTruncated);
                return;
            }
            s.log_budget -= len;
            s.send(&WorkerFrame::Log { level, text });
        })?,
    )?;

    let s = shared.clone();
    host.set(
        "setTimer",
        Function::new(ctx.clone(), move |id: f64, ms: f64| {
            let delay = Duration::from_secs_f64((ms.max(0.0) / 1000.0).min(1e9));
            s.borrow_mut()
                .timers
                .push(Reverse((Instant::now() + delay, id as u64)));
        })?,
    )?;

    let s = shared.clone();
    host.set(
        "now",
        Function::new(ctx.clone(), move || {
            s.borrow().started.elapsed().as_secs_f64() * 1000.0
        })?,
    )?;

    // `tools.server.tool` proxies ask about names one at a time (see `tools.rs`).
    let s = shared.clone();
    host.set(
        "servers",
        Function::new(ctx.clone(), move || {
            s.borrow_mut().tool_index().servers_json()
        })?,
    )?;
    let s = shared.clone();
    host.set(
        "tool",
        Function::new(ctx.clone(), move |server: f64, name: String| {
            s.borrow_mut()
                .tool_index()
                .lookup(server as usize, &name)
                .map_or(-1.0, |i| i as f64)
        })?,
    )?;
    let s = shared.clone();
    host.set(
        "toolKeys",
        Function::new(ctx.clone(), move |server: f64| {
            s.borrow_mut().tool_index().keys(server as usize)
        })?,
    )?;
    let s = shared.clone();
    host.set(
        "toolName",
        Function::new(ctx.clone(), move |index: f64| {
            let mut s = s.borrow_mut();
            s.tool_index()
                .binding(index as usize)
                .and_then(|b| b.tool.clone())
        })?,
    )?;
    // A tool's declaration, asked of the host when code reads it.
    let s = shared.clone();
    host.set(
        "signature",
        Function::new(ctx.clone(), move |server: String, tool: String| {
            let request = CallRequest::Signature {
                server,
                tool,
                language: Dialect::Typescript,
            };
            match s.borrow_mut().request_now(request) {
                Ok(outcome @ (CallOutcome::Ok { .. } | CallOutcome::Text { .. })) => {
                    outcome.value().and_then(|v| v.as_str().map(str::to_string))
                }
                Ok(CallOutcome::Err { .. }) | Err(_) => None,
            }
        })?,
    )?;

    // A discovery request answered at once (`listServers()`, `getToolSchema(...)`,
    // `discoverMCPTools()`, `searchTools(...)` are values as well as promises): `1` and the
    // value's JSON, or `0` and the error's `{name, message}`.
    let s = shared.clone();
    host.set(
        "ask",
        Function::new(ctx.clone(), move |ctx: Ctx<'js>, request: String| {
            if let Ok(probe) = serde_json::from_str::<ToolProbe>(&request)
                && let Some(e) = too_deep(&ctx, &probe, &request)
            {
                return Err(e);
            }
            let request: CallRequest = serde_json::from_str(&request)
                .map_err(|e| Exception::throw_type(&ctx, &format!("invalid host request: {e}")))?;
            let outcome = s
                .borrow_mut()
                .request_now(request)
                .map_err(|e| Exception::throw_internal(&ctx, &format!("the host is gone: {e}")))?;
            let answer = match outcome {
                CallOutcome::Ok { value } => format!("1{}", value.get()),
                CallOutcome::Text { text } => format!("1{}", serde_json::Value::String(text)),
                CallOutcome::Err { error } => format!(
                    "0{}",
                    serde_json::to_string(&error).unwrap_or_else(|_| "{}".into())
                ),
            };
            Ok::<_, rquickjs::Error>(answer)
        })?,
    )?;

    host.set("errorClasses", worker_protocol::CallError::table_json())?;
    host.set("maxDepth", MAX_VALUE_DEPTH as f64)?;
    fs_functions(ctx, &host, shared)?;

    host.set(
        "randomBytes",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, n: usize| {
            let mut buf = vec![0u8; n.min(65536)];
            getrandom::fill(&mut buf)
                .map_err(|e| Exception::throw_internal(&ctx, &format!("no randomness: {e}")))?;
            Ok::<_, rquickjs::Error>(buf)
        })?,
    )?;
    Ok(host)
}

/// Largest file `fs.readFile` reads: the engine's default memory limit (a larger one could not
/// be held anyway, and reading it would only cost the host's memory and time).
const MAX_READ_FILE_BYTES: u64 = 256 << 20;

/// The `fs` module's system calls and the byte conversions `fetch` needs. A failed file
/// operation returns `null` and leaves its error for `fsError()`; bytes come in from
/// JavaScript as Latin-1 strings (one char per byte) and go out as `ArrayBuffer`s.
fn fs_functions<'js>(
    ctx: &Ctx<'js>,
    host: &Object<'js>,
    shared: &Rc<RefCell<Shared>>,
) -> rquickjs::Result<()> {
    use base64::Engine as _;
    use rquickjs::ArrayBuffer;

    fn fail(s: &Rc<RefCell<Shared>>, op: &str, path: &str, e: &io::Error, write: bool) {
        let mut s = s.borrow_mut();
        let err = crate::fs::explain(op, path, e, s.access.as_ref(), write);
        s.fs_error = Some(err.to_json());
    }
    fn latin1(s: &str) -> Option<Vec<u8>> {
        s.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect()
    }

    let s = shared.clone();
    host.set(
        "fsRead",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, path: String, text: bool| -> rquickjs::Result<Value<'js>> {
                // A file larger than the engine could hold is refused before it is read.
                if let Ok(meta) = std::fs::metadata(&path)
                    && meta.len() > MAX_READ_FILE_BYTES
                {
                    s.borrow_mut().fs_error = Some(
                        crate::fs::FsError {
                            code: "EFBIG",
                            message: format!(
                                "EFBIG: readFile {path}: the file is {} bytes; files above {MAX_READ_FILE_BYTES} bytes cannot be read whole",
                                meta.len()
                            ),
                        }
                        .to_json(),
                    );
                    return Ok(Value::new_null(ctx));
                }
                match std::fs::read(&path) {
                    Ok(bytes) if text => {
                        let t = String::from_utf8(bytes)
                            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                        rquickjs::String::from_str(ctx, &t).map(|v| v.into_value())
                    }
                    Ok(bytes) => ArrayBuffer::new(ctx, bytes).map(|b| b.into_value()),
                    Err(e) => {
                        fail(&s, "readFile", &path, &e, false);
                        Ok(Value::new_null(ctx))
                    }
                }
            },
        )?,
    )?;
    let s = shared.clone();
    host.set(
        "fsReaddir",
        Function::new(ctx.clone(), move |path: String| -> Option<String> {
            let read = std::fs::read_dir(&path).and_then(|dir| {
                let mut names = Vec::new();
                for entry in dir {
                    names.push(entry?.file_name().to_string_lossy().into_owned());
                }
                Ok(names)
            });
            match read {
                Ok(mut names) => {
                    names.sort();
                    Some(serde_json::Value::from(names).to_string())
                }
                Err(e) => {
                    fail(&s, "readdir", &path, &e, false);
                    None
                }
            }
        })?,
    )?;
    let s = shared.clone();
    host.set(
        "fsStat",
        Function::new(
            ctx.clone(),
            move |path: String, follow: bool| -> Option<String> {
                let meta = if follow {
                    std::fs::metadata(&path)
                } else {
                    std::fs::symlink_metadata(&path)
                };
                match meta {
                    Ok(m) => Some(crate::fs::stat_json(&m)),
                    Err(e) => {
                        fail(&s, if follow { "stat" } else { "lstat" }, &path, &e, false);
                        None
                    }
                }
            },
        )?,
    )?;
    let s = shared.clone();
    host.set(
        "fsWrite",
        Function::new(
            ctx.clone(),
            move |path: String, data: String, binary: bool, append: bool| -> bool {
                let bytes = if binary {
                    match latin1(&data) {
                        Some(b) => b,
                        None => {
                            let e = io::Error::new(io::ErrorKind::InvalidInput, "bad bytes");
                            fail(&s, "writeFile", &path, &e, true);
                            return false;
                        }
                    }
                } else {
                    data.into_bytes()
                };
                let written = if append {
                    std::fs::OpenOptions::new()
                        .append(true)
                        .create(true)
                        .open(&path)
                        .and_then(|mut f| f.write_all(&bytes))
                } else {
                    std::fs::write(&path, &bytes)
                };
                match written {
                    Ok(()) => true,
                    Err(e) => {
                        fail(&s, "writeFile", &path, &e, true);
                        false
                    }
                }
            },
        )?,
    )?;
    let s = shared.clone();
    host.set(
        "fsMkdir",
        Function::new(ctx.clone(), move |path: String, recursive: bool| -> bool {
            let made = if recursive {
                std::fs::create_dir_all(&path)
            } else {
                std::fs::create_dir(&path)
            };
            match made {
                Ok(()) => true,
                Err(e) => {
                    fail(&s, "mkdir", &path, &e, true);
                    false
                }
            }
        })?,
    )?;
    let s = shared.clone();
    host.set(
        "fsError",
        Function::new(ctx.clone(), move || s.borrow_mut().fs_error.take())?,
    )?;
    let s = shared.clone();
    host.set(
        "workspace",
        Function::new(ctx.clone(), move || {
            s.borrow().access.as_ref().and_then(|a| a.workspace.clone())
        })?,
    )?;
    host.set(
        "b64encode",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, data: String| {
            let bytes = latin1(&data)
                .ok_or_else(|| Exception::throw_type(&ctx, "body bytes out of range"))?;
            Ok::<_, rquickjs::Error>(base64::engine::general_purpose::STANDARD.encode(bytes))
        })?,
    )?;
    host.set(
        "b64text",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, data: String| {
            let bytes = from_host_base64(&ctx, &data)?;
            Ok::<_, rquickjs::Error>(match String::from_utf8(bytes) {
                Ok(t) => t,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            })
        })?,
    )?;
    host.set(
        "b64decode",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, data: String| {
            let bytes = from_host_base64(&ctx, &data)?;
            ArrayBuffer::new(ctx, bytes)
        })?,
    )?;
    Ok(())
}

/// Bytes the host sent as base64 (a fetch body), or a TypeError.
fn from_host_base64(ctx: &Ctx<'_>, data: &str) -> rquickjs::Result<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(data.as_bytes())
        .map_err(|e| Exception::throw_type(ctx, &format!("bad base64 from the host: {e}")))
}
