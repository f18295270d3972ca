//! The QuickJS worker process: one runtime, the prelude (loaded from the bytecode `build.rs`
//! compiles, its source as a fallback), and a loop that runs code.
//!
//! The worker owns its process. It reads [`HostFrame`]s from stdin and writes [`WorkerFrame`]s
//! to stdout, both on the engine thread; nothing else is ever written to
//! stdout. It never decides policy: every request it makes is checked by the host, and the
//! host kills the whole process group at the deadline.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Instant;

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use rquickjs::context::EvalOptions;
use rquickjs::loader::bundle::Bundle;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Module, Object, Persistent, Promise, Runtime, Value};
use worker_protocol::{
    CallOutcome, EngineLimits, ErrorInfo, HostFrame, MAX_WORKER_FRAME_BYTES, PROTOCOL_VERSION,
    RawRunOutcome, RawWorkerFrame, RunOutcome, RunRequest, WorkerFrame,
};

use crate::error::WorkerError;
use crate::host::host_object;
use crate::link::{Event, Input, Shared, closed};
use crate::outgoing::within_frame;
use crate::settle::{Finished, exception_outcome, settled, string_result, value_error};
use crate::strip::SOURCE_NAME;

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

fn run_worker() -> Result<(), WorkerError> {
    let input = Input::stdin()?;
    let engine = Engine::new(input).map_err(|e| WorkerError::Start(Box::new(e)))?;
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
            // The answer to a call of the run that ended (it ended while the host was
            // answering, e.g. a Promise.all that rejected at its first refusal): nothing
            // waits for it any more.
            Some(Event::Frame(HostFrame::Reply { .. } | HostFrame::Kept { .. })) => {}
            Some(Event::Closed(None)) | None => return Ok(()),
            Some(Event::Closed(e)) => return Err(WorkerError::Broken(closed(e))),
        }
    }
}

/// Fields drop in the order declared: the values held across runs first, then the context,
/// then the runtime (freeing a runtime that still holds a value aborts the process).
struct Engine {
    entry: Persistent<Object<'static>>,
    /// The string of the run's latest reply the host kept (`HostFrame::Reply`'s `kept`), and
    /// that reply's id: a run that returns this very string says so instead of sending it.
    /// Held (so that its address cannot be another string's) until the run ends.
    kept: RefCell<Option<(u64, Persistent<rquickjs::String<'static>>)>>,
    shared: Rc<RefCell<Shared>>,
    ctx: Context,
    rt: Runtime,
}

impl Engine {
    fn new(input: Input) -> Result<Self, WorkerError> {
        let out = io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .map_err(WorkerError::Stdout)?;
        // Writes that would block return at once, so the worker can read while it waits
        // ([`Shared::write_reading`]). Nothing else writes to stdout.
        let flags = fcntl(&out, FcntlArg::F_GETFL).map_err(WorkerError::StdoutFlags)?;
        let flags = OFlag::from_bits_retain(flags) | OFlag::O_NONBLOCK;
        fcntl(&out, FcntlArg::F_SETFL(flags)).map_err(WorkerError::StdoutFlags)?;
        Ok(Self::with_io(input, File::from(out))?)
    }

    fn with_io(input: Input, out: File) -> rquickjs::Result<Self> {
        Self::start(input, out, true)
    }

    /// [`Self::with_io`]; `bytecode`: the prelude from its bytecode (else from its source,
    /// as a fallback does; tests compare both).
    fn start(input: Input, out: File, bytecode: bool) -> rquickjs::Result<Self> {
        let rt = Runtime::new()?;
        let ctx = Context::full(&rt)?;
        let shared = Rc::new(RefCell::new(Shared::new(input, out)));
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

    fn send<T: serde::Serialize>(&self, frame: &T) -> Result<(), WorkerError> {
        let mut s = self.shared.borrow_mut();
        s.send(frame);
        match &s.broken {
            Some(e) => Err(WorkerError::Broken(e.clone())),
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
    fn run(&self, req: RunRequest) -> Result<Finished, WorkerError> {
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
            let entry = self.entry.clone().restore(&ctx)?;
            // The run's randomness from the host's seed (its call log keeps it for a replay).
            if let Some(seed) = req.seed {
                let reseed: Function = entry.get("seed")?;
                let mixed = seed.rotate_left(29) ^ 0x9E37_79B9_7F4A_7C15;
                let words = [seed, seed >> 32, mixed, mixed >> 32].map(|w| w as u32);
                reseed.call::<_, ()>((words[0], words[1], words[2], words[3]))?;
            }
            // The code is the body of an async function. It starts on the wrapper's line so
            // that line numbers in stack traces are the code's own.
            // A skill's run gets its arguments as the parameter `args` (only then: in a
            // session a parameter would hide a global of that name).
            let params = if req.args.is_some() { "args" } else { "" };
            let wrapped = format!("(async function ({params}) {{{}\n}})", req.code);
            let compiled: rquickjs::Result<Function> =
                ctx.eval_with_options(wrapped, eval_options(SOURCE_NAME, false));
            let func = match compiled {
                Ok(f) => f,
                Err(e) => return Ok(exception_outcome(&ctx, e, memory_limit).into()),
            };
            let run: Function = entry.get("run")?;
            let args: Value = match &req.args {
                Some(v) => ctx.json_parse(v.to_string())?,
                None => Value::new_undefined(ctx.clone()),
            };
            let promise: Promise = match run.call((func, args)) {
                Ok(p) => p,
                Err(e) => return Ok(exception_outcome(&ctx, e, memory_limit).into()),
            };
            let finished = self.drive(&ctx, &entry, &promise, memory_limit);
            // Jobs the code queued after the run settled (while its result or error was
            // read) run now, before `done`: a call they make is this run's (the host counts
            // it here and stops a session's worker that ends with it unanswered), never the
            // next run's. Its timers never fire again (cleared at the next run's start).
            while ctx.execute_pending_job() {}
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
    ) -> Result<Finished, WorkerError> {
        let deliver: Function = entry.get("deliver")?;
        let deliver_value: Function = entry.get("deliverValue")?;
        let fire: Function = entry.get("fireTimer")?;
        loop {
            while ctx.execute_pending_job() {}
            if let Some(e) = self.shared.borrow().broken.clone() {
                return Err(WorkerError::Broken(e));
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
                    let Some(what) = self.shared.borrow_mut().outstanding.remove(&id) else {
                        return Err(WorkerError::UnknownReply(id));
                    };
                    let size = match &outcome {
                        CallOutcome::Text { text } => text.len(),
                        CallOutcome::Ok { value } => value.get().len(),
                        CallOutcome::Err { .. } => 0,
                    };
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
                            let payload = serde_json::to_string(&error)?;
                            deliver.call::<_, ()>((id as f64, false, payload))
                        }
                    };
                    if let Err(e) = delivered {
                        if !e.is_exception() {
                            return Ok(exception_outcome(ctx, e, memory_limit).into());
                        }
                        let thrown = value_error(&ctx.catch(), memory_limit);
                        if thrown.name != "MemoryError" {
                            return Ok(RunOutcome::Err { error: thrown }.into());
                        }
                        // A reply the engine's memory cannot hold: the call it answers fails
                        // with a MemoryError naming it and the limit (code may catch it), as
                        // in Python; the run goes on.
                        let error = reply_too_large(&what, size, memory_limit);
                        let payload = serde_json::to_string(&error)?;
                        if deliver.call::<_, ()>((id as f64, false, payload)).is_err() {
                            let _ = ctx.catch();
                            return Ok(RunOutcome::Err { error }.into());
                        }
                    }
                }
                Event::Frame(HostFrame::Run(_)) => {
                    return Err(WorkerError::SecondRun);
                }
                // This engine makes no tail calls.
                Event::Frame(HostFrame::Kept { id }) => {
                    return Err(WorkerError::KeptNotTail(id));
                }
                Event::Closed(e) => return Err(WorkerError::Broken(closed(e))),
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

/// The error of a call whose reply (`size` bytes) the engine's memory limit could not hold.
fn reply_too_large(what: &str, size: usize, memory_limit: u64) -> ErrorInfo {
    ErrorInfo {
        name: "MemoryError".into(),
        message: format!(
            "the reply of {what} is {:.1} MiB, too large for this run's memory limit of {} MiB \
             (making it ran out of memory): ask for less (filter, page or narrow the request), \
             or raise limits.memoryMb",
            size as f64 / (1024.0 * 1024.0),
            memory_limit / (1024 * 1024)
        ),
        stack: None,
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

    use super::*;
    use std::io::BufReader;

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
            ["run", "deliver", "deliverValue", "fireTimer", "seed"]
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

    /// The requests of the call frames in `path`, in order, decoded as the host decodes them
    /// and written as compact JSON.
    fn call_requests(path: &std::path::Path) -> Vec<String> {
        let bytes = std::fs::read(path).unwrap();
        let mut rest = &bytes[..];
        let mut requests = Vec::new();
        while rest.len() >= 4 {
            let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
            let frame = WorkerFrame::decode(&rest[4..4 + len]).unwrap();
            rest = &rest[4 + len..];
            let WorkerFrame::Call { request, .. } = frame else {
                panic!("not a call frame: {frame:?}")
            };
            requests.push(serde_json::to_string(&request).unwrap());
        }
        requests
    }

    #[test]
    fn large_string_arguments_arrive_as_json_stringify_writes_them() {
        // Every case's request arrives, decoded as the host decodes it, as JSON.stringify
        // writes it (key order included), whether its large strings follow the frame's JSON
        // (top-level strings of a plain object) or not (everything else); a getter is read
        // once either way.
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
                   expected.push(JSON.stringify({{ op: 'tool', server: 's', name: 't', args, shape: 'text' }})); \
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
        let expected: Vec<String> = expected
            .iter()
            .map(|text| {
                serde_json::from_str::<serde_json::Value>(text)
                    .unwrap()
                    .to_string()
            })
            .collect();
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
        assert!(got[cases.len() + 1].ends_with(r#""args":{"message":"x"},"shape":"text"}"#));
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
        // Each context is created in its own worker and seeds its own generator, from the
        // system's randomness (not the clock: engines started in one microsecond differ).
        assert_ne!(eval(first, draw), eval(second, draw));
        let spread = "(() => { let lo = 1, hi = 0, sum = 0; \
            for (let i = 0; i < 4000; i++) { const x = Math.random(); \
              if (!(x >= 0 && x < 1)) return 'out of range: ' + x; \
              lo = Math.min(lo, x); hi = Math.max(hi, x); sum += x; } \
            return String(lo < 0.01 && hi > 0.99 && Math.abs(sum / 4000 - 0.5) < 0.05); })()";
        assert_eq!(eval(first, spread), "true");
        // A run's seed from the host makes its draws the same in any engine (a replay).
        let seeded = |engine: &Engine| {
            engine.ctx.with(|ctx| {
                let entry = engine.entry.clone().restore(&ctx).unwrap();
                let reseed: Function = entry.get("seed").unwrap();
                reseed.call::<_, ()>((7u32, 8u32, 9u32, 10u32)).unwrap();
            });
            eval(engine, draw)
        };
        let again = seeded(first);
        assert_eq!(again, seeded(second));
        assert_eq!(again, seeded(first));
        assert_ne!(again, eval(first, draw));
        // The loader that served the prelude is gone once the engine runs: code imports
        // nothing, the prelude included.
        first.ctx.with(|ctx| {
            let promise: Promise = ctx.eval("import('prelude.js')").unwrap();
            assert!(promise.finish::<Value>().is_err());
            let _ = ctx.catch();
        });
    }
}
