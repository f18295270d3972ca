//! The call log of one request (issue #54): in order, every upstream tool call the execution
//! and the skills under it made (the name code asked for, the SHA-256 of its canonical
//! arguments, what came back and whether it failed), every answer a person or a model gave
//! (an approval's decision, an `llm.ask` answer), and a marker when a person is being asked.
//! With the log goes the request's random seed: each execution of the request draws its
//! worker's seed from it ([`CallLog::run_seed`]), which seeds `Math.random` and Python's
//! `random`, so a replay with the same seed draws the same numbers. Time is not logged: code
//! must be deterministic up to tool calls, time and randomness aside (docs/store.md).
//!
//! The log lives in memory (a `Vec`; an execution that calls nothing pays one allocation and
//! writes nothing; one without a handle logs its calls without their results, which are
//! neither copied nor hashed). A run with a handle (a task, a `wait` handle) **arms** it once its handle
//! is handed out ([`CallLog::arm`]): the entries so far and each later one are appended to
//! the durable store (kind [`CALLLOG`], key `{handle}/{index}`, redacted like every record)
//! before the code sees the call's result. What a run lost to a restart had completed is then
//! read back ([`read`]) and reported as its ledger ([`ledger`]).
//!
//! A log is bounded ([`MAX_ENTRIES`], [`MAX_BYTES`]): past either it ends with a
//! [`Entry::Truncated`] entry, keeps nothing more, and cannot be replayed.
//!
//! **Replay** ([`CallLog::replaying`]): a run started again from its code against the log of
//! its earlier life. Each tool call and model answer is served from the log while the log
//! lasts (nothing upstream is called for them); a request the log does not have at that step
//! (another tool, other arguments) stops the replay: that request and every later one is
//! refused with an error naming the step ([`CallLog::diverged`]); once every logged call was
//! served, the run goes on live and its new entries are appended after the old ones.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use worker_protocol::{CallError, ErrorInfo};

use policy::audit::sha256_hex;
use policy::redact::Redactor;
use store::{Key, Shared, StoreError};

/// The store's kind for call log entries, keyed `{handle}/{index:06}`.
pub const CALLLOG: &str = "calllog";
/// Most entries a log keeps.
pub const MAX_ENTRIES: usize = 2_000;
/// Most bytes (JSON) a log keeps.
pub const MAX_BYTES: usize = 8 * 1024 * 1024;

/// One entry of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Entry {
    /// An upstream tool call that came back (allowed or refused, answered or failed).
    Call {
        /// The tool as code named it (`server.tool`, or the name alone).
        tool: String,
        /// SHA-256 of its canonical arguments (object keys sorted).
        args: String,
        /// SHA-256 of what came back (the result, or the error).
        result: String,
        /// It threw in code (refused, failed, or the tool answered with an error).
        failed: bool,
        outcome: Called,
    },
    /// A person is being asked to approve a call to `tool` (the answer follows).
    Asking { tool: String },
    /// A person's (or the fallback's) answer about `tool`: `once`, `execution`, `session`,
    /// `denied`.
    Approval { tool: String, decision: String },
    /// A model's answer to `llm.ask`.
    Llm {
        /// SHA-256 of the canonical request (messages, system, limits, model).
        request: String,
        /// SHA-256 of the answer.
        answer: String,
        outcome: Answered,
    },
    /// The log passed its cap here: nothing later was kept.
    Truncated { entries: usize, bytes: usize },
}

/// What a logged tool call gave its caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Called {
    /// The server and tool it resolved to, and the tool's result (`CallToolResult`).
    Ok {
        server: String,
        tool: String,
        result: Value,
    },
    Err(ErrorInfo),
}

/// What a logged model call gave code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Answered {
    Ok(Value),
    Text(String),
    Err(ErrorInfo),
}

/// What a replayed request gets.
pub enum Replayed<T> {
    /// Not replaying (or the log is used up): made live.
    Live,
    /// Served from the log; `approvals` are the answers logged before it (their effect on
    /// later calls, `execution` and `session`, is to be applied).
    Served {
        outcome: T,
        approvals: Vec<(String, String)>,
    },
    /// The code asked for something else than the log has: refused with this.
    Diverged(ErrorInfo),
}

/// Where an armed log is appended.
pub struct Sink {
    pub store: Shared,
    pub principal: String,
    pub handle: String,
    pub ttl: Duration,
    pub redactor: Arc<Redactor>,
}

/// The call log of one request (module docs).
pub struct CallLog {
    seed: u64,
    /// What came back is kept (a run with a handle, which may be kept in the store and
    /// replayed); else a call's entry holds its name, arguments' digest and whether it
    /// failed, and its result is neither copied nor hashed.
    whole: std::sync::atomic::AtomicBool,
    /// Executions of the request started so far (each draws its own seed).
    runs: AtomicU64,
    state: std::sync::Mutex<State>,
    /// Appends go one at a time, in order.
    writing: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    entries: Vec<Entry>,
    bytes: usize,
    truncated: bool,
    /// Entries appended to the sink so far.
    written: usize,
    sink: Option<Arc<Sink>>,
    replay: Option<Replay>,
    diverged: Option<ErrorInfo>,
}

/// The log of a run's earlier life, being served.
struct Replay {
    log: Vec<Entry>,
    used: Vec<bool>,
    /// The log is a whole execution's ([`CallLog::replaying_whole`]): a step asked past its
    /// end diverges instead of going live.
    whole: bool,
}

impl Default for CallLog {
    fn default() -> Self {
        CallLog::new()
    }
}

impl CallLog {
    /// A fresh log with a random seed.
    pub fn new() -> CallLog {
        let mut b = [0u8; 8];
        let seed = match getrandom::fill(&mut b) {
            Ok(()) => u64::from_le_bytes(b),
            Err(_) => crate::ids::random_hex::<8>()
                .bytes()
                .fold(0u64, |h, c| h.rotate_left(5) ^ u64::from(c)),
        };
        CallLog::with_seed(seed)
    }

    fn with_seed(seed: u64) -> CallLog {
        CallLog {
            seed,
            whole: std::sync::atomic::AtomicBool::new(false),
            runs: AtomicU64::new(0),
            state: std::sync::Mutex::new(State::default()),
            writing: tokio::sync::Mutex::new(()),
        }
    }

    /// A log that replays `log` (a run's earlier life, as [`read`] gives it) with its `seed`:
    /// the old entries stay (a later loss reports them too) and new ones follow them.
    pub fn replaying(seed: u64, log: Vec<Entry>) -> CallLog {
        let me = CallLog::with_seed(seed);
        me.keep_results();
        {
            let mut s = me.lock();
            s.bytes = log.iter().map(entry_bytes).sum();
            s.written = log.len();
            s.entries = log.clone();
            s.replay = Some(Replay {
                used: vec![false; log.len()],
                log,
                whole: false,
            });
        }
        me
    }

    /// A log that replays `log`, the whole log of an execution that ended (a session's cell,
    /// `crate::service::replay`), with its `seed`: every step comes from it, and a step past
    /// its end diverges instead of being made live ([`CallLog::replay_left`] says what it
    /// did not ask for).
    pub fn replaying_whole(seed: u64, log: Vec<Entry>) -> CallLog {
        let me = CallLog::replaying(seed, log);
        if let Some(r) = me.lock().replay.as_mut() {
            r.whole = true;
        }
        me
    }

    /// Logged steps a replay has not served yet (0 once it is used up or went live).
    pub fn replay_left(&self) -> usize {
        let s = self.lock();
        s.replay.as_ref().map_or(0, |r| {
            (0..r.log.len())
                .filter(|&i| {
                    !r.used[i] && matches!(r.log[i], Entry::Call { .. } | Entry::Llm { .. })
                })
                .count()
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// From now on calls' results are kept in the log (a run with a handle).
    pub fn keep_results(&self) {
        self.whole.store(true, Ordering::Relaxed);
    }

    /// Whether calls' results are kept ([`CallLog::keep_results`]).
    pub fn keeps_results(&self) -> bool {
        self.whole.load(Ordering::Relaxed)
    }

    /// The request's seed (kept with a run's handle, to replay it).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The seed of the next execution of the request (the first gets the first).
    pub fn run_seed(&self) -> u64 {
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        splitmix64(
            self.seed
                .wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        )
    }

    /// The entries so far.
    pub fn entries(&self) -> Vec<Entry> {
        self.lock().entries.clone()
    }

    /// Why the replay stopped, if it did.
    pub fn diverged(&self) -> Option<ErrorInfo> {
        self.lock().diverged.clone()
    }

    /// From now on every entry (those so far first) is appended to `sink`.
    pub async fn arm(&self, sink: Sink) {
        {
            let mut s = self.lock();
            if s.sink.is_some() {
                return;
            }
            s.sink = Some(Arc::new(sink));
        }
        self.flush().await;
    }

    /// Logs `entry` (appended to the store, when armed, before this returns).
    pub async fn record(&self, entry: Entry) {
        let armed = {
            let mut s = self.lock();
            if s.truncated {
                return;
            }
            let bytes = entry_bytes(&entry);
            if s.entries.len() + 1 >= MAX_ENTRIES || s.bytes + bytes > MAX_BYTES {
                s.truncated = true;
                let t = Entry::Truncated {
                    entries: s.entries.len(),
                    bytes: s.bytes,
                };
                s.entries.push(t);
            } else {
                s.bytes += bytes;
                s.entries.push(entry);
            }
            s.sink.is_some()
        };
        if armed {
            self.flush().await;
        }
    }

    /// Appends what the sink lacks, in order. A failure is logged (the run goes on; what
    /// was not written is tried again with the next entry).
    async fn flush(&self) {
        let _turn = self.writing.lock().await;
        loop {
            let (sink, index, entry) = {
                let s = self.lock();
                let Some(sink) = s.sink.clone() else { return };
                let Some(entry) = s.entries.get(s.written).cloned() else {
                    return;
                };
                (sink, s.written, entry)
            };
            let text = serde_json::to_string(&entry).unwrap_or_else(|_| "null".into());
            let value = sink.redactor.str(&text).into_owned().into_bytes();
            let key = format!("{}/{index:06}", sink.handle);
            match sink
                .store
                .put(Key::new(&sink.principal, CALLLOG, &key), &value, sink.ttl)
                .await
            {
                Ok(()) => self.lock().written = index + 1,
                Err(e) => {
                    tracing::warn!(
                        "cannot keep entry {index} of the call log of {} in the store: {e}",
                        sink.handle
                    );
                    return;
                }
            }
        }
    }

    /// A tool call to `tool` with arguments digest `args`, when replaying.
    pub fn replay_call(&self, tool: &str, args: &str) -> Replayed<Called> {
        self.replay(
            |e| matches!(e, Entry::Call { tool: t, args: a, .. } if t == tool && a == args),
            || format!("{tool}(args sha256 {})", short(args)),
            |e| match e {
                Entry::Call { outcome, .. } => Some(outcome.clone()),
                _ => None,
            },
        )
    }

    /// A model call with request digest `request`, when replaying.
    pub fn replay_llm(&self, request: &str) -> Replayed<Answered> {
        self.replay(
            |e| matches!(e, Entry::Llm { request: r, .. } if r == request),
            || format!("llm.ask(request sha256 {})", short(request)),
            |e| match e {
                Entry::Llm { outcome, .. } => Some(outcome.clone()),
                _ => None,
            },
        )
    }

    /// Serves the first unused step of the log that `wanted` matches (concurrent calls may
    /// come in another order than they finished); a request no unused step matches while
    /// steps are left diverges, named after the first unused one.
    fn replay<T>(
        &self,
        wanted: impl Fn(&Entry) -> bool,
        asked: impl Fn() -> String,
        take: impl Fn(&Entry) -> Option<T>,
    ) -> Replayed<T> {
        let mut s = self.lock();
        if let Some(e) = &s.diverged {
            return Replayed::Diverged(e.clone());
        }
        let Some(r) = s.replay.as_mut() else {
            return Replayed::Live;
        };
        let is_step = |e: &Entry| matches!(e, Entry::Call { .. } | Entry::Llm { .. });
        let first_unused = (0..r.log.len()).find(|&i| !r.used[i] && is_step(&r.log[i]));
        let Some(first_unused) = first_unused else {
            if r.whole {
                let made = r.log.iter().filter(|e| is_step(e)).count();
                let error = ErrorInfo {
                    name: CallError::Tool.name().into(),
                    message: format!(
                        "replay diverged at call {}: the execution made {made} calls the first \
                         time, and now asks for {}; nothing is called",
                        made + 1,
                        asked()
                    ),
                    stack: None,
                };
                s.diverged = Some(error.clone());
                return Replayed::Diverged(error);
            }
            // Every logged step was served: live from here.
            s.replay = None;
            return Replayed::Live;
        };
        let found =
            (0..r.log.len()).find(|&i| !r.used[i] && is_step(&r.log[i]) && wanted(&r.log[i]));
        match found.and_then(|i| take(&r.log[i]).map(|t| (i, t))) {
            Some((i, outcome)) => {
                r.used[i] = true;
                let mut approvals = Vec::new();
                for j in 0..i {
                    if let (false, Entry::Approval { tool, decision }) = (r.used[j], &r.log[j]) {
                        approvals.push((tool.clone(), decision.clone()));
                        r.used[j] = true;
                    }
                }
                Replayed::Served { outcome, approvals }
            }
            None => {
                let step = r.log[..=first_unused].iter().filter(|e| is_step(e)).count();
                let error = ErrorInfo {
                    name: CallError::Tool.name().into(),
                    message: format!(
                        "replay diverged at call {step}: the log has {}, the code asked for \
                         {}; nothing further is called. The code must be deterministic up to \
                         tool calls (what it reads of time, files or the network must not \
                         change what it calls): run it again from the start",
                        describe_step(&r.log[first_unused]),
                        asked()
                    ),
                    stack: None,
                };
                s.diverged = Some(error.clone());
                s.replay = None;
                Replayed::Diverged(error)
            }
        }
    }
}

fn describe_step(e: &Entry) -> String {
    match e {
        Entry::Call { tool, args, .. } => format!("{tool}(args sha256 {})", short(args)),
        Entry::Llm { request, .. } => format!("llm.ask(request sha256 {})", short(request)),
        _ => "nothing".into(),
    }
}

fn short(digest: &str) -> &str {
    digest.get(..16).unwrap_or(digest)
}

fn entry_bytes(e: &Entry) -> usize {
    serde_json::to_vec(e).map_or(0, |v| v.len())
}

/// SHA-256 of `value` with every object's keys sorted (the same value, whatever the order
/// code built it in).
pub fn digest(value: &Value) -> String {
    fn canonical(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    canonical(&m[k], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    canonical(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut s = String::new();
    canonical(value, &mut s);
    sha256_hex(s.as_bytes())
}

/// SplitMix64: a seed from a seed, well mixed.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The call log of run `handle` of `principal` as the store has it, in order.
pub async fn read(store: &Shared, principal: &str, handle: &str) -> Result<Vec<Entry>, StoreError> {
    let prefix = format!("{handle}/");
    let mut rows = store.list(principal, CALLLOG, &prefix).await?;
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(rows
        .into_iter()
        .filter_map(|(_, v)| serde_json::from_slice(&v).ok())
        .collect())
}

/// Calls a ledger lists one by one; past it, a count.
const LEDGER_SHOWN: usize = 50;

/// What a run completed, for whoever asks about a run lost to a restart: each tool call
/// that came back (its name, whether it failed, its result's digest) and each answer given.
pub fn ledger(entries: &[Entry]) -> String {
    let mut lines = Vec::new();
    let mut calls = 0usize;
    let mut more = 0usize;
    let mut truncated = false;
    let mut asking: Option<&str> = None;
    for e in entries {
        let line = match e {
            Entry::Call {
                tool,
                args,
                result,
                failed,
                ..
            } => {
                calls += 1;
                format!(
                    "call {calls}: {tool} (args sha256 {}) {} (result sha256 {})",
                    short(args),
                    if *failed { "failed" } else { "completed" },
                    short(result)
                )
            }
            Entry::Llm { answer, .. } => {
                calls += 1;
                format!(
                    "call {calls}: llm.ask answered (answer sha256 {})",
                    short(answer)
                )
            }
            Entry::Approval { tool, decision } => {
                asking = None;
                format!("approval of {tool}: {decision}")
            }
            Entry::Asking { tool } => {
                asking = Some(tool);
                continue;
            }
            Entry::Truncated { .. } => {
                truncated = true;
                continue;
            }
        };
        if lines.len() < LEDGER_SHOWN {
            lines.push(line);
        } else {
            more += 1;
        }
    }
    let mut out = if calls == 0 {
        "It had completed no tool call.".to_string()
    } else {
        format!(
            "What it had completed ({calls} tool call{}): {}",
            if calls == 1 { "" } else { "s" },
            lines.join("; ")
        )
    };
    if more > 0 {
        out.push_str(&format!("; and {more} more"));
    }
    if truncated {
        out.push_str(
            "; its call log passed its cap there, so later calls are not listed (it may have \
             made more) and it cannot be started again",
        );
    }
    if let Some(tool) = asking {
        out.push_str(&format!(
            ". It was waiting for a person to approve a call to {tool}, which was not made"
        ));
    }
    out
}

#[cfg(test)]
#[path = "calllog_tests.rs"]
mod tests;
