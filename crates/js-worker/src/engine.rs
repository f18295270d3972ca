//! The QuickJS worker process: one runtime, the prelude (loaded from the bytecode `build.rs`
//! compiles, its source as a fallback), and a loop that runs code.
//!
//! The worker owns its process. It reads [`HostFrame`]s from stdin and writes [`WorkerFrame`]s
//! to stdout, both on the engine thread; nothing else is ever written to
//! stdout. It never decides policy: every request it makes is checked by the host, and the
//! host kills the whole process group at the deadline.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet, VecDeque};
use std::fs::File;
use std::io::{self, BufReader, Write};
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use rquickjs::context::EvalOptions;
use rquickjs::loader::bundle::Bundle;
use rquickjs::prelude::Opt;
use rquickjs::promise::PromiseState;
use rquickjs::{
    Context, Ctx, Exception, Function, Module, Object, Persistent, Promise, Runtime, Value,
};
use worker_protocol::{
    AccessInfo, CallOutcome, CallRequest, Dialect, EngineLimits, ErrorInfo, FrameError, HostFrame,
    LogLevel, MAX_HOST_FRAME_BYTES, MAX_WORKER_FRAME_BYTES, PROTOCOL_VERSION, RawRunOutcome,
    RawValue, RawWorkerFrame, RunOutcome, RunRequest, ToolBinding, WorkerFrame, encode,
    has_lone_surrogate_escape, read_frame,
};

use crate::outgoing::{call_too_large, splice_big_strings, within_frame};
use crate::strip::SOURCE_NAME;
use crate::tools::ToolIndex;

const PRELUDE: &str = include_str!("prelude.js");

/// The prelude compiled to QuickJS bytecode at build time (`build.rs`): a module whose
/// default export is the prelude's function. Loading it skips parsing and compiling the
/// source at every worker start; [`PRELUDE`] stays as the fallback.
static PRELUDE_BYTECODE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/prelude.qjsbc"));
/// The module name of the prelude's bytecode (the file name its stack frames show).
const PRELUDE_MODULE: &str = "prelude.js";
/// The only module a worker's runtime can load, and only while the engine starts.
static PRELUDE_BUNDLE: &[(&str, &[u8])] = &[(PRELUDE_MODULE, PRELUDE_BYTECODE)];
/// The loader left in place once the prelude is loaded: code finds no module at all.
static NO_MODULES: &[(&str, &[u8])] = &[];

/// Exit code when the host broke the protocol or went away.
const EXIT_PROTOCOL: u8 = 3;

/// Entry point of `code-executor-mcp __worker js`.
pub fn worker_main() -> ExitCode {
    match run_worker() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // stderr is the host's log of this worker; stdout belongs to the protocol.
            let _ = writeln!(io::stderr(), "js worker: {e}");
            ExitCode::from(EXIT_PROTOCOL)
        }
    }
}

enum Event {
    Frame(HostFrame),
    Closed(Option<FrameError>),
}

/// Bytes from the host, read on the engine thread itself: a reply wakes the thread that runs
/// the code directly, with no reader thread and channel in between.
struct Input {
    reader: BufReader<File>,
}

impl Input {
    fn stdin() -> Result<Self, String> {
        let fd = io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| format!("cannot open stdin: {e}"))?;
        Ok(Input {
            reader: BufReader::with_capacity(64 * 1024, File::from(fd)),
        })
    }

    /// The next frame, or `None` when `wait` passed first (`None`: wait for as long as it takes).
    fn next(&mut self, wait: Option<Duration>) -> Option<Event> {
        if let Some(wait) = wait
            && self.reader.buffer().is_empty()
        {
            // Whole milliseconds, rounded up: a timer fires at most a millisecond late.
            let ms = wait.as_micros().div_ceil(1000);
            let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
            let mut fds = [PollFd::new(
                self.reader.get_ref().as_fd(),
                PollFlags::POLLIN,
            )];
            match poll(&mut fds, timeout) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => return None,
                Err(e) => return Some(Event::Closed(Some(FrameError::Io(e.into())))),
            }
        }
        Some(
            match read_frame::<_, HostFrame>(&mut self.reader, MAX_HOST_FRAME_BYTES) {
                Ok(frame) => Event::Frame(frame),
                Err(FrameError::Eof) => Event::Closed(None),
                Err(e) => Event::Closed(Some(e)),
            },
        )
    }
}

fn run_worker() -> Result<(), String> {
    let input = Input::stdin()?;
    let engine = Engine::new(input).map_err(|e| format!("engine start failed: {e}"))?;
    engine.send(&WorkerFrame::Ready {
        protocol: PROTOCOL_VERSION,
        engine: format!("quickjs-ng (rquickjs {})", env!("CARGO_PKG_VERSION")),
    })?;
    loop {
        let next = engine.shared.borrow_mut().next_event(None);
        match next {
            Some(Event::Frame(HostFrame::Run(req))) => match engine.run(req)? {
                // The host refuses a frame past its limit as a broken protocol: a result that
                // large is the code's error, said as such (the frame's envelope is 48 bytes).
                Finished::Result(result) if result.get().len() + 64 > MAX_WORKER_FRAME_BYTES => {
                    engine.send(&WorkerFrame::Done {
                        outcome: RunOutcome::Err {
                            error: ErrorInfo {
                                name: "RangeError".into(),
                                message: format!(
                                    "the result is {:.1} MiB as JSON; the limit is 16 MiB: filter \
                                     or summarise it in code and return less",
                                    result.get().len() as f64 / 1048576.0
                                ),
                                stack: None,
                            },
                        },
                    })?
                }
                Finished::Result(result) => engine.send(&RawWorkerFrame::Done {
                    outcome: RawRunOutcome::Ok { result: &result },
                })?,
                Finished::Reply(id) => engine.send(&WorkerFrame::Done {
                    outcome: RunOutcome::Reply { id },
                })?,
                Finished::Outcome(outcome) => engine.send(&WorkerFrame::Done {
                    outcome: within_frame(outcome),
                })?,
            },
            Some(Event::Frame(HostFrame::Reply { id, .. })) => {
                return Err(format!("reply {id} arrived while no code was running"));
            }
            Some(Event::Closed(None)) | None => return Ok(()),
            Some(Event::Closed(e)) => return Err(closed(e)),
        }
    }
}

/// Why the host's frames stopped: a broken frame, or the pipe closed.
fn closed(e: Option<FrameError>) -> String {
    match e {
        Some(e) => format!("bad frame from host: {e}"),
        None => "host closed the pipe".to_string(),
    }
}

/// State shared by the host functions the prelude receives.
struct Shared {
    /// Our own handle on stdout: a frame is one `write`, with no line buffering in between.
    out: File,
    started: Instant,
    outstanding: HashSet<u64>,
    timers: BinaryHeap<Reverse<(Instant, u64)>>,
    log_budget: u64,
    logs_truncated: bool,
    broken: Option<String>,
    /// The run's upstream tools, until the prelude first asks about them.
    tools: Vec<ToolBinding>,
    tool_index: Option<ToolIndex>,
    /// Frames from the host, read here on the engine thread.
    input: Input,
    /// Frames that arrived while a host function waited for its own answer
    /// ([`Shared::request_now`]), to be handled next.
    deferred: VecDeque<HostFrame>,
    /// Ids of requests made with [`Shared::request_now`], above any the prelude uses.
    next_sync_id: u64,
    /// What the run was granted (files, network), for error messages.
    access: Option<AccessInfo>,
    /// The last failed file operation, as JSON, for the prelude to throw.
    fs_error: Option<String>,
}

/// The first id of [`Shared::request_now`]'s requests: the prelude numbers its calls from 1
/// in JavaScript numbers, which stay below 2^53.
const SYNC_IDS: u64 = 1 << 53;

impl Shared {
    /// The next frame from the host (deferred ones first), or `None` when `wait` passed.
    fn next_event(&mut self, wait: Option<Duration>) -> Option<Event> {
        match self.deferred.pop_front() {
            Some(frame) => Some(Event::Frame(frame)),
            None => self.input.next(wait),
        }
    }

    /// Asks the host and waits for its answer, for a host function that must return a value
    /// at once (a tool's declaration). Other frames arriving meanwhile are kept, in order.
    fn request_now(&mut self, request: CallRequest) -> Result<CallOutcome, String> {
        let id = SYNC_IDS + self.next_sync_id;
        self.next_sync_id += 1;
        self.send(&WorkerFrame::Call { id, request });
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        loop {
            match self.input.next(None) {
                Some(Event::Frame(HostFrame::Reply {
                    id: got, outcome, ..
                })) if got == id => {
                    return Ok(outcome);
                }
                Some(Event::Frame(frame)) => self.deferred.push_back(frame),
                Some(Event::Closed(e)) => {
                    let e = closed(e);
                    self.broken = Some(e.clone());
                    return Err(e);
                }
                None => {}
            }
        }
    }

    fn tool_index(&mut self) -> &ToolIndex {
        let tools = &mut self.tools;
        self.tool_index
            .get_or_insert_with(|| ToolIndex::new(std::mem::take(tools)))
    }

    fn send<T: serde::Serialize>(&mut self, frame: &T) {
        if self.broken.is_some() {
            return;
        }
        let written = encode(frame)
            .map_err(io::Error::other)
            .and_then(|bytes| self.write_reading(&bytes));
        if let Err(e) = written {
            self.broken = Some(format!("cannot write to host: {e}"));
        }
    }

    /// Sends a call whose request is JSON text already checked by a full parse (the probe in
    /// `host.call`): written into the frame as it is, the same bytes
    /// [`RawWorkerFrame::Call`] would write, without checking the text a second time.
    fn send_call_text(&mut self, id: u64, request: &[u8]) {
        if self.broken.is_some() {
            return;
        }
        let head = format!(r#"{{"type":"call","id":{id},"request":"#);
        let len = head.len() + request.len() + 1;
        let mut bytes = Vec::with_capacity(4 + len);
        bytes.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
        bytes.extend_from_slice(head.as_bytes());
        bytes.extend_from_slice(request);
        bytes.push(b'}');
        if let Err(e) = self.write_reading(&bytes) {
            self.broken = Some(format!("cannot write to host: {e}"));
        }
    }

    /// Writes `bytes` to the host. While the pipe is full, frames from the host are read and
    /// kept for later ([`Shared::deferred`]): the host stops reading requests while its
    /// replies go unread, so a worker that only wrote would wait on the host forever.
    fn write_reading(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            match (&self.out).write(bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let readable = !self.input.reader.buffer().is_empty() || {
                        let mut fds = [
                            PollFd::new(self.out.as_fd(), PollFlags::POLLOUT),
                            PollFd::new(self.input.reader.get_ref().as_fd(), PollFlags::POLLIN),
                        ];
                        match poll(&mut fds, PollTimeout::NONE) {
                            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                            Err(e) => return Err(e.into()),
                        }
                        fds[1].any().unwrap_or(false)
                    };
                    if readable {
                        match self.input.next(None) {
                            Some(Event::Frame(frame)) => self.deferred.push_back(frame),
                            Some(Event::Closed(e)) => return Err(io::Error::other(closed(e))),
                            None => {}
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

struct Engine {
    rt: Runtime,
    ctx: Context,
    shared: Rc<RefCell<Shared>>,
    entry: Persistent<Object<'static>>,
    /// The string of the run's latest reply the host kept (`HostFrame::Reply`'s `kept`), and
    /// that reply's id: a run that returns this very string says so instead of sending it.
    /// Held (so that its address cannot be another string's) until the run ends.
    kept: RefCell<Option<(u64, Persistent<rquickjs::String<'static>>)>>,
}

impl Engine {
    fn new(input: Input) -> Result<Self, String> {
        let out = io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| format!("cannot open stdout: {e}"))?;
        // Writes that would block return at once, so the worker can read while it waits
        // ([`Shared::write_reading`]). Nothing else writes to stdout.
        let flags = fcntl(&out, FcntlArg::F_GETFL).map_err(|e| format!("stdout flags: {e}"))?;
        let flags = OFlag::from_bits_retain(flags) | OFlag::O_NONBLOCK;
        fcntl(&out, FcntlArg::F_SETFL(flags)).map_err(|e| format!("stdout flags: {e}"))?;
        Self::with_io(input, File::from(out)).map_err(|e| e.to_string())
    }

    fn with_io(input: Input, out: File) -> rquickjs::Result<Self> {
        Self::start(input, out, true)
    }

    /// [`Self::with_io`]; `bytecode`: the prelude from its bytecode (else from its source,
    /// as a fallback does; tests compare both).
    fn start(input: Input, out: File, bytecode: bool) -> rquickjs::Result<Self> {
        let rt = Runtime::new()?;
        let ctx = Context::full(&rt)?;
        let shared = Rc::new(RefCell::new(Shared {
            out,
            started: Instant::now(),
            outstanding: HashSet::new(),
            timers: BinaryHeap::new(),
            log_budget: u64::MAX,
            logs_truncated: false,
            broken: None,
            tools: Vec::new(),
            tool_index: None,
            input,
            deferred: VecDeque::new(),
            next_sync_id: 0,
            access: None,
            fs_error: None,
        }));
        rt.set_loader(Bundle(PRELUDE_BUNDLE), Bundle(PRELUDE_BUNDLE));
        let entry = ctx.with(|ctx| -> rquickjs::Result<_> {
            let host = host_object(&ctx, &shared)?;
            let loaded = if bytecode {
                prelude_from_bytecode(&ctx)
            } else {
                Err(rquickjs::Error::Unknown)
            };
            let prelude = match loaded {
                Ok(prelude) => prelude,
                Err(_) => {
                    // A bytecode QuickJS refuses (it checks its version): parse the source.
                    let _ = ctx.catch();
                    ctx.eval_with_options(PRELUDE, eval_options("prelude.js", true))?
                }
            };
            let entry: Object = prelude.call((host,))?;
            Ok(Persistent::save(&ctx, entry))
        });
        rt.set_loader(Bundle(NO_MODULES), Bundle(NO_MODULES));
        let entry = entry?;
        Ok(Engine {
            rt,
            ctx,
            shared,
            entry,
            kept: RefCell::new(None),
        })
    }

    fn send<T: serde::Serialize>(&self, frame: &T) -> Result<(), String> {
        let mut s = self.shared.borrow_mut();
        s.send(frame);
        match &s.broken {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn apply_limits(&self, limits: &EngineLimits) {
        self.rt
            .set_memory_limit(usize::try_from(limits.memory_bytes).unwrap_or(usize::MAX));
        self.rt
            .set_max_stack_size(usize::try_from(limits.stack_bytes).unwrap_or(usize::MAX));
        let mut s = self.shared.borrow_mut();
        s.log_budget = limits.max_log_bytes;
        s.logs_truncated = false;
    }

    /// Runs one request to completion (or until the host goes away).
    fn run(&self, req: RunRequest) -> Result<Finished, String> {
        self.apply_limits(&req.limits);
        {
            let mut s = self.shared.borrow_mut();
            s.tools = req.tools;
            s.tool_index = None;
            s.access = req.access;
            s.fs_error = None;
            // A session's earlier run may have left timers and unanswered calls behind: they
            // belong to a run that is over, and must neither fire into this one nor keep it
            // waiting.
            s.timers.clear();
            s.outstanding.clear();
        }
        let memory_limit = req.limits.memory_bytes;
        self.ctx.with(|ctx| {
            let entry = self
                .entry
                .clone()
                .restore(&ctx)
                .map_err(|e| e.to_string())?;
            // The code is the body of an async function. It starts on the wrapper's line so
            // that line numbers in stack traces are the code's own.
            let wrapped = format!("(async function () {{{}\n}})", req.code);
            let compiled: rquickjs::Result<Function> =
                ctx.eval_with_options(wrapped, eval_options(SOURCE_NAME, false));
            let func = match compiled {
                Ok(f) => f,
                Err(e) => return Ok(exception_outcome(&ctx, e, memory_limit).into()),
            };
            let run: Function = entry.get("run").map_err(|e| e.to_string())?;
            let promise: Promise = match run.call((func,)) {
                Ok(p) => p,
                Err(e) => return Ok(exception_outcome(&ctx, e, memory_limit).into()),
            };
            let finished = self.drive(&ctx, &entry, &promise, memory_limit);
            // The kept string belongs to this run (reply ids are the run's own).
            self.kept.borrow_mut().take();
            finished
        })
    }

    /// The event loop: microtasks, timers, and replies from the host, until the run settles.
    fn drive<'js>(
        &self,
        ctx: &Ctx<'js>,
        entry: &Object<'js>,
        promise: &Promise<'js>,
        memory_limit: u64,
    ) -> Result<Finished, String> {
        let deliver: Function = entry.get("deliver").map_err(|e| e.to_string())?;
        let deliver_value: Function = entry.get("deliverValue").map_err(|e| e.to_string())?;
        let fire: Function = entry.get("fireTimer").map_err(|e| e.to_string())?;
        loop {
            while ctx.execute_pending_job() {}
            if let Some(e) = self.shared.borrow().broken.clone() {
                return Err(e);
            }
            match promise.state() {
                PromiseState::Resolved => {
                    let settled_to: Option<Value> = promise.result::<Value>().and_then(|r| r.ok());
                    if let Some(text) = settled_to.as_ref().and_then(Value::as_string) {
                        let text = text.to_string().unwrap_or_default();
                        return Ok(settled(text, memory_limit));
                    }
                    // `[string]`: a string result, encoded here, unless it is the very string
                    // of the reply the host kept.
                    let string = settled_to
                        .as_ref()
                        .and_then(Value::as_array)
                        .and_then(|a| a.get::<rquickjs::String>(0).ok());
                    if let Some(id) = self.returned_kept(ctx, string.as_ref()) {
                        return Ok(Finished::Reply(id));
                    }
                    return Ok(string_result(ctx, string, memory_limit));
                }
                PromiseState::Rejected => {
                    let reason: Value = promise
                        .result::<Value>()
                        .and_then(|r| r.ok())
                        .unwrap_or_else(|| Value::new_null(ctx.clone()));
                    return Ok(RunOutcome::Err {
                        error: value_error(&reason, memory_limit),
                    }
                    .into());
                }
                PromiseState::Pending => {}
            }
            // Fire the timers that are due, then go round again for their microtasks.
            let now = Instant::now();
            let due: Vec<u64> = {
                let mut s = self.shared.borrow_mut();
                let mut due = Vec::new();
                while let Some(Reverse((at, id))) = s.timers.peek().copied() {
                    if at > now {
                        break;
                    }
                    s.timers.pop();
                    due.push(id);
                }
                due
            };
            if !due.is_empty() {
                for id in due {
                    if let Err(e) = fire.call::<_, ()>((id as f64,)) {
                        let _ = exception_outcome(ctx, e, memory_limit);
                    }
                }
                continue;
            }
            let (next_timer, waiting_on_host) = {
                let s = self.shared.borrow();
                (
                    s.timers.peek().map(|Reverse((at, _))| *at),
                    !s.outstanding.is_empty(),
                )
            };
            if next_timer.is_none() && !waiting_on_host {
                return Ok(RunOutcome::Err {
                    error: ErrorInfo {
                        name: "DeadlockError".into(),
                        message: "the code is awaiting a promise that nothing can settle \
                                  (no tool call or timer is pending)"
                            .into(),
                        stack: None,
                    },
                }
                .into());
            }
            let wait = next_timer.map(|at| at.saturating_duration_since(Instant::now()));
            let next = self.shared.borrow_mut().next_event(wait);
            let Some(event) = next else {
                continue; // a timer is due
            };
            match event {
                Event::Frame(HostFrame::Reply { id, outcome, kept }) => {
                    if !self.shared.borrow_mut().outstanding.remove(&id) {
                        return Err(format!("reply {id} matches no pending call"));
                    }
                    // The host keeps only its latest such reply: an older kept string is
                    // no longer one a result may refer to, even if this value is not taken
                    // as kept below.
                    if kept {
                        self.kept.borrow_mut().take();
                    }
                    // A tool's text comes as it is; a string is decoded here and handed over
                    // as one; any other value is handed to JSON.parse as the host wrote it.
                    // Either way: parsed once, or not at all.
                    let delivered = match outcome {
                        CallOutcome::Text { text } if kept => {
                            self.deliver_kept(ctx, &deliver_value, id, text)
                        }
                        CallOutcome::Text { text } => {
                            deliver_value.call::<_, ()>((id as f64, text.as_str()))
                        }
                        CallOutcome::Ok { value } => match json_string(value.get()) {
                            Some(text) if kept => self.deliver_kept(ctx, &deliver_value, id, text),
                            Some(text) => deliver_value.call::<_, ()>((id as f64, text.as_str())),
                            None => deliver.call::<_, ()>((id as f64, true, value.get())),
                        },
                        CallOutcome::Err { error } => {
                            let payload =
                                serde_json::to_string(&error).map_err(|e| e.to_string())?;
                            deliver.call::<_, ()>((id as f64, false, payload))
                        }
                    };
                    if let Err(e) = delivered {
                        return Ok(exception_outcome(ctx, e, memory_limit).into());
                    }
                }
                Event::Frame(HostFrame::Run(_)) => {
                    return Err("a second run arrived while one was in progress".into());
                }
                Event::Closed(e) => return Err(closed(e)),
            }
        }
    }

    /// Hands code a kept reply's string, remembering the JavaScript string made for it.
    fn deliver_kept<'js>(
        &self,
        ctx: &Ctx<'js>,
        deliver_value: &Function<'js>,
        id: u64,
        text: String,
    ) -> rquickjs::Result<()> {
        let string = rquickjs::String::from_str(ctx.clone(), &text)?;
        drop(text);
        *self.kept.borrow_mut() = Some((id, Persistent::save(ctx, string.clone())));
        deliver_value.call::<_, ()>((id as f64, string))
    }

    /// The kept reply's id when `string` is that reply's very string (the same JavaScript
    /// string: strings are immutable, so it holds the same text).
    fn returned_kept<'js>(
        &self,
        ctx: &Ctx<'js>,
        string: Option<&rquickjs::String<'js>>,
    ) -> Option<u64> {
        let (id, kept) = self.kept.borrow_mut().take()?;
        let kept = kept.restore(ctx).ok()?;
        (string?.as_value() == kept.as_value()).then_some(id)
    }
}

/// How a run ended: a successful result as the JSON text the prelude made (sent on as it is),
/// the kept reply's string (by its id), or any other outcome.
enum Finished {
    Result(Box<RawValue>),
    Reply(u64),
    Outcome(RunOutcome),
}

impl From<RunOutcome> for Finished {
    fn from(o: RunOutcome) -> Self {
        Finished::Outcome(o)
    }
}

/// The fields of a request from the prelude that say what it is; the rest (a tool call's
/// arguments) is checked to be JSON and passed on as text.
#[derive(serde::Deserialize)]
struct ToolProbe {
    op: String,
    #[serde(default)]
    name: Option<String>,
}

/// The prelude's settled run (`{"status":"ok","result":...}` or an error), read without
/// decoding the result into a tree.
#[derive(serde::Deserialize)]
struct Settled<'a> {
    status: String,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<ErrorInfo>,
}

/// An `InternalError` outcome: the engine could not make a result of what the run settled with.
fn internal(message: String) -> Finished {
    RunOutcome::Err {
        error: ErrorInfo {
            name: "InternalError".into(),
            message,
            stack: None,
        },
    }
    .into()
}

fn settled(text: String, memory_limit: u64) -> Finished {
    if has_lone_surrogate_escape(&text) {
        // No UTF-8 form: decoding says so, as it always did.
        return match serde_json::from_str::<RunOutcome>(&text) {
            Ok(RunOutcome::Err { error }) => RunOutcome::Err {
                error: name_oom(error, memory_limit),
            }
            .into(),
            Ok(ok) => ok.into(),
            Err(e) => internal(format!("result could not be encoded: {e}")),
        };
    }
    match serde_json::from_str::<Settled<'_>>(&text) {
        Ok(Settled { status, result, .. }) if status == "ok" => {
            Finished::Result(result.map_or_else(|| RawValue::NULL.to_owned(), |r| r.to_owned()))
        }
        Ok(Settled {
            error: Some(error), ..
        }) => RunOutcome::Err {
            error: name_oom(error, memory_limit),
        }
        .into(),
        Ok(_) => internal("the run settled without a result or an error".into()),
        Err(e) => internal(format!("result could not be encoded: {e}")),
    }
}

/// The string a reply's JSON value is, if it is one, decoded. QuickJS's `JSON.parse` reads a
/// large string a character at a time; serde reads it many times faster, and turning the
/// UTF-8 into a JavaScript string is one pass in C. A string the decoder refuses (a lone
/// surrogate escape, which the host never sends) goes to `JSON.parse` as before.
fn json_string(json: &str) -> Option<String> {
    if !json.starts_with('"') {
        return None;
    }
    serde_json::from_str(json).ok()
}

/// A run that returned a string: the string encoded here as JSON (serde's encoder instead of
/// `JSON.stringify` and its replacer in QuickJS). A string with a lone surrogate has no UTF-8
/// form and is an error, as it is when `JSON.stringify` writes it as an escape.
fn string_result(
    ctx: &Ctx<'_>,
    string: Option<rquickjs::String<'_>>,
    memory_limit: u64,
) -> Finished {
    let Some(string) = string else {
        return internal("the run settled without a result or an error".into());
    };
    match string.to_string() {
        Ok(text) => match serde_json::value::to_raw_value(&text) {
            Ok(raw) => Finished::Result(raw),
            Err(e) => internal(format!("result could not be encoded: {e}")),
        },
        Err(rquickjs::Error::Utf8(_)) => internal(
            "result could not be encoded: the string has a lone UTF-16 surrogate, which has no \
             UTF-8 form"
                .into(),
        ),
        // The one other failure is QuickJS running out of memory for the UTF-8 copy.
        Err(_) => {
            let _ = ctx.catch();
            RunOutcome::Err {
                error: memory_error(memory_limit),
            }
            .into()
        }
    }
}

/// The prelude's function, from its bytecode ([`PRELUDE_BYTECODE`], through the runtime's
/// loader, which must be [`PRELUDE_BUNDLE`] here).
fn prelude_from_bytecode<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    let namespace: Object = Module::import(ctx, PRELUDE_MODULE)?.finish()?;
    namespace.get("default")
}

fn eval_options(filename: &str, strict: bool) -> EvalOptions {
    let mut opts = EvalOptions::default();
    opts.global = true;
    opts.strict = strict;
    opts.filename = Some(filename.into());
    opts
}

/// The functions the prelude gets as `host`.
fn host_object<'js>(ctx: &Ctx<'js>, shared: &Rc<RefCell<Shared>>) -> rquickjs::Result<Object<'js>> {
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
                  bigs: Opt<Vec<rquickjs::String<'js>>>| {
                let invalid =
                    |e: String| Exception::throw_type(&ctx, &format!("invalid host request: {e}"));
                let id = id as u64;
                // A tool call's arguments go to the host as the prelude encoded them: checked
                // here by one parse that keeps nothing (valid JSON, a tool request naming a
                // tool), not decoded into a tree and encoded again.
                let probe: ToolProbe =
                    serde_json::from_str(&request).map_err(|e| invalid(e.to_string()))?;
                let tool = probe.op == "tool" && !has_lone_surrogate_escape(&request);
                if let (Some(marker), Some(bigs)) = (marker.0, bigs.0) {
                    // The prelude took the arguments' large strings out (`splitBigStrings`):
                    // they are quoted here. Anything unexpected (a string without a UTF-8
                    // form, a marker missing) sends the prelude the usual way (false).
                    if !tool || probe.name.is_none() {
                        return Ok(false);
                    }
                    let mut texts = Vec::with_capacity(bigs.len());
                    for big in bigs {
                        match big.to_string() {
                            Ok(text) => texts.push(text),
                            Err(rquickjs::Error::Utf8(_)) => return Ok(false),
                            Err(e) => return Err(e),
                        }
                    }
                    let Some(request) = splice_big_strings(&request, &marker, &texts) else {
                        return Ok(false);
                    };
                    if let Some(e) = call_too_large(&ctx, id, request.len()) {
                        return Err(e);
                    }
                    let mut s = s.borrow_mut();
                    s.outstanding.insert(id);
                    s.send_call_text(id, &request);
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
                    s.outstanding.insert(id);
                    s.send_call_text(id, request.as_bytes());
                } else {
                    let request: CallRequest =
                        serde_json::from_str(&request).map_err(|e| invalid(e.to_string()))?;
                    let mut s = s.borrow_mut();
                    s.outstanding.insert(id);
                    s.send(&WorkerFrame::Call { id, request });
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

    host.set("errorClasses", worker_protocol::CallError::table_json())?;
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

/// Turns an engine exception (from `eval` or a call) into a run outcome.
fn exception_outcome(ctx: &Ctx<'_>, err: rquickjs::Error, memory_limit: u64) -> RunOutcome {
    let error = if err.is_exception() {
        value_error(&ctx.catch(), memory_limit)
    } else {
        ErrorInfo {
            name: "InternalError".into(),
            message: err.to_string(),
            stack: None,
        }
    };
    RunOutcome::Err { error }
}

fn memory_error(memory_limit: u64) -> ErrorInfo {
    ErrorInfo {
        name: "MemoryError".into(),
        message: format!(
            "out of memory: the engine's limit of {} MiB was reached",
            memory_limit / (1024 * 1024)
        ),
        stack: None,
    }
}

/// QuickJS's own out-of-memory error, renamed so the cause is plain.
fn name_oom(error: ErrorInfo, memory_limit: u64) -> ErrorInfo {
    if error.name == "InternalError" && error.message == "out of memory" {
        memory_error(memory_limit)
    } else {
        error
    }
}

/// Describes a thrown value. QuickJS reports out-of-memory as a thrown `null`.
fn value_error(v: &Value<'_>, memory_limit: u64) -> ErrorInfo {
    if v.is_null() {
        return memory_error(memory_limit);
    }
    if let Some(obj) = v.as_object() {
        let name: Option<String> = obj.get("name").ok();
        let message: Option<String> = obj.get("message").ok();
        let stack: Option<String> = obj.get("stack").ok();
        let message = message.unwrap_or_default();
        let name = name.unwrap_or_else(|| "Error".into());
        return name_oom(
            ErrorInfo {
                name,
                message,
                stack: stack
                    .map(|s| s.trim_end().to_string())
                    .filter(|s| !s.is_empty()),
            },
            memory_limit,
        );
    }
    let text = v
        .as_string()
        .and_then(|s| s.to_string().ok())
        .or_else(|| v.as_number().map(|n| n.to_string()))
        .unwrap_or_else(|| format!("{:?}", v.type_of()));
    ErrorInfo {
        name: "Error".into(),
        message: format!("Uncaught {text}"),
        stack: None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

    use super::*;

    /// An engine on `/dev/null`. Tests never drop one (the worker never does: its process
    /// exits), since its runtime would be freed before the values it still holds.
    fn engine(bytecode: bool) -> &'static Engine {
        let null = || File::open("/dev/null").unwrap();
        let input = Input {
            reader: BufReader::new(null()),
        };
        let out = File::options().write(true).open("/dev/null").unwrap();
        Box::leak(Box::new(Engine::start(input, out, bytecode).unwrap()))
    }

    fn eval(engine: &Engine, code: &str) -> String {
        engine.ctx.with(|ctx| ctx.eval(code).unwrap())
    }

    /// What the prelude leaves behind in a context: every global's name and type, one level
    /// into objects, and the entry points it returns.
    const SHAPE: &str = "Object.getOwnPropertyNames(globalThis).sort().map(n => {\
            const v = globalThis[n];\
            const inner = v && typeof v === 'object' ? Object.getOwnPropertyNames(v).sort() : [];\
            return n + ':' + typeof v + '[' + inner.join() + ']';\
        }).join(',')";

    #[test]
    fn the_prelude_loads_from_its_bytecode_as_it_evaluates_from_source() {
        // The bytecode (compiled by build.rs) must load: the fallback to the source would
        // hide a stale or refused bytecode, and with it the saving.
        let rt = Runtime::new().unwrap();
        rt.set_loader(Bundle(PRELUDE_BUNDLE), Bundle(PRELUDE_BUNDLE));
        let ctx = Context::full(&rt).unwrap();
        ctx.with(|ctx| {
            prelude_from_bytecode(&ctx).expect("the prelude's bytecode loads");
        });
        let (bytecode, source) = (engine(true), engine(false));
        let entry = |engine: &Engine| -> Vec<String> {
            engine.ctx.with(|ctx| {
                let entry = engine.entry.clone().restore(&ctx).unwrap();
                entry.keys().collect::<rquickjs::Result<_>>().unwrap()
            })
        };
        assert_eq!(
            entry(bytecode),
            ["run", "deliver", "deliverValue", "fireTimer"]
        );
        assert_eq!(entry(bytecode), entry(source));
        let shape = eval(bytecode, SHAPE);
        assert!(shape.contains("fetch:function"), "{shape}");
        assert_eq!(shape, eval(source, SHAPE));
    }

    /// An engine whose frames go to a file, and that file.
    fn engine_writing() -> (&'static Engine, std::path::PathBuf) {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("js-worker-frames-{}-{n}", std::process::id()));
        let input = Input {
            reader: BufReader::new(File::open("/dev/null").unwrap()),
        };
        let out = File::create(&path).unwrap();
        let engine = Box::leak(Box::new(Engine::start(input, out, true).unwrap()));
        (engine, path)
    }

    /// The request texts of the call frames in `path`, in order.
    fn call_requests(path: &std::path::Path) -> Vec<String> {
        let bytes = std::fs::read(path).unwrap();
        let mut rest = &bytes[..];
        let mut requests = Vec::new();
        while rest.len() >= 4 {
            let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
            let frame = std::str::from_utf8(&rest[4..4 + len]).unwrap();
            rest = &rest[4 + len..];
            let head = frame.find(r#""request":"#).expect("a call frame");
            requests.push(frame[head + 10..frame.len() - 1].to_string());
        }
        requests
    }

    #[test]
    fn large_string_arguments_leave_as_json_stringify_writes_them() {
        // Every case's request goes out byte for byte as JSON.stringify writes it, whether
        // its large strings are quoted by the engine (top-level strings of a plain object)
        // or not (everything else); a getter is read once either way.
        let (engine, path) = engine_writing();
        let cases = [
            "{ message: big }",
            "{ a: 1, message: big, z: [big.slice(1)], n: null, u: undefined, f() {}, s: Symbol('x'), d: new Date(0), t: 'small \\u2028' }",
            "{ '10': big, '2': 'two', b: big + '!', [Symbol('k')]: big }",
            "JSON.parse('{\"__proto__\": 1}')",
            "Object.assign(JSON.parse('{\"__proto__\": 1}'), { big })",
            "Object.assign(Object.create(null), { big, x: 2 })",
            "{ nested: { big }, list: [big] }",
            "{ big, toJSON() { return { replaced: this.big.length }; } }",
            "new (class A { constructor() { this.big = big; } })()",
            "new Map([[1, big]])",
            "{ v: { toJSON: () => big }, w: big }",
            "{ big: new String(big) }",
            // Code that replaced what the prelude uses does not change what it sends.
            "(() => { Object.keys = () => []; Math.random = () => 0; return { message: big, n: 1 }; })()",
        ];
        let unit = "quote \" backslash \\ tab \t nl \n cr \r nul \0 ls \u{2028} ps \u{2029} Zoë 名前 🚀 e\u{301} \u{1f} ";
        let setup = format!(
            "globalThis.big = {}.repeat(2000); globalThis.reads = 0; \
             globalThis.expected = [];",
            serde_json::to_string(unit).unwrap()
        );
        engine
            .ctx
            .with(|ctx| ctx.eval::<(), _>(setup.as_str()).unwrap());
        for case in cases {
            let code = format!(
                "{{ const args = {case}; \
                   expected.push(JSON.stringify({{ op: 'tool', server: 's', name: 't', args }})); \
                   callMCPTool('s', 't', args); }}"
            );
            engine
                .ctx
                .with(|ctx| ctx.eval::<(), _>(code.as_str()).unwrap());
        }
        let getter = "{ let n = 0; const args = { get message() { n++; return big; }, k: 1 }; \
                      callMCPTool('s', 't', args); n }";
        let reads: i32 = engine.ctx.with(|ctx| ctx.eval(getter).unwrap());
        assert_eq!(reads, 1, "the getter was read {reads} times");
        let small =
            "{ let n = 0; callMCPTool('s', 't', { get message() { n++; return 'x'; } }); n }";
        let reads: i32 = engine.ctx.with(|ctx| ctx.eval(small).unwrap());
        assert_eq!(reads, 1, "the small getter was read {reads} times");
        let expected: Vec<String> = engine.ctx.with(|ctx| ctx.eval("expected").unwrap());
        let got = call_requests(&path);
        let _ = std::fs::remove_file(&path);
        assert_eq!(got.len(), cases.len() + 2);
        for ((case, want), got) in cases.iter().zip(&expected).zip(&got) {
            assert!(
                got == want,
                "{case}: the request differs ({} bytes, want {})",
                got.len(),
                want.len()
            );
        }
        assert!(got[cases.len()].contains(r#""k":1"#));
        assert!(got[cases.len()].len() > 2000 * unit.len());
        assert!(got[cases.len() + 1].ends_with(r#""args":{"message":"x"}}"#));
    }

    #[test]
    fn a_large_string_without_utf8_form_goes_the_usual_way() {
        // A lone surrogate: the engine declines the string, the request is encoded by
        // JSON.stringify and refused as it always was (no frame, a TypeError for the code).
        let (engine, path) = engine_writing();
        let code = "let err = null; \
                    callMCPTool('s', 't', { m: 'x'.repeat(40000) + '\\ud800' }).catch(e => { err = e.name; });";
        engine.ctx.with(|ctx| ctx.eval::<(), _>(code).unwrap());
        engine.ctx.with(|ctx| while ctx.execute_pending_job() {});
        let name: String = engine.ctx.with(|ctx| ctx.eval("err").unwrap());
        assert_eq!(name, "TypeError");
        assert!(call_requests(&path).is_empty());
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_started_engine_loads_no_module_and_draws_its_own_random_numbers() {
        let (first, second) = (engine(true), engine(true));
        let draw = "[0, 1, 2, 3].map(() => Math.random()).join()";
        // Each context is created in its own worker and seeds its own generator.
        assert_ne!(eval(first, draw), eval(second, draw));
        // The loader that served the prelude is gone once the engine runs: code imports
        // nothing, the prelude included.
        first.ctx.with(|ctx| {
            let promise: Promise = ctx.eval("import('prelude.js')").unwrap();
            assert!(promise.finish::<Value>().is_err());
            let _ = ctx.catch();
        });
    }
}
