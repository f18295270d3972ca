//! Hooks: the commands a user configured to judge tool calls (Claude Code's `PreToolUse` and
//! `PostToolUse`, in Claude Code's own settings format) and runs (our `PreExecute`), read
//! into data and answered by pure functions; running them is the host's part
//! (`runtime::host::hooks`).
//!
//! Where they come from: Claude Code's settings files (`~/.claude/settings.json`, a trusted
//! project's `.claude/settings.json` and `.claude/settings.local.json`, the managed
//! `/etc/claude-code/managed-settings.json`; the same trust rules as their MCP servers,
//! `config::trust`), and our own `hooks` setting, for any client:
//!
//! ```json
//! "hooks": {
//!   "PreToolUse": [{"matcher": "mcp__github__.*",
//!                   "hooks": [{"type": "command", "command": "~/bin/check.py", "timeout": 10}]}],
//!   "PostToolUse": [...],
//!   "PreExecute": [{"hooks": [{"type": "command", "command": "opa-check"}]}],
//!   "fromClients": true,
//!   "env": {"OPA_URL": "http://127.0.0.1:8181"}
//! }
//! ```
//!
//! A matcher is Claude Code's: `*`, `""` or none matches every tool; one made only of letters,
//! digits, `_`, `-` and `|` is a list of exact names; anything else is a regular expression
//! searched in the name (`mcp__memory__.*`). A handler's `if` (permission-rule syntax) narrows
//! it further: `mcp__server`, `mcp__server__tool`, `mcp__server__*`; a rule we cannot read
//! runs the hook anyway (running it can only refuse more).
//!
//! What a hook answers ([`read_answer`]) follows Claude Code's documentation: exit 2 blocks
//! with stderr as the reason; exit 0 with nothing on stdout decides nothing; exit 0 with a
//! JSON object decides by `hookSpecificOutput.permissionDecision` (`allow`, `deny`, `ask`,
//! `defer`), the deprecated `decision` (`approve`, `block`), or `continue: false`. Where
//! Claude Code lets a call go on, we fail closed: a hook that crashes (any other exit, a
//! signal), times out, prints anything else (text, binary, a JSON that is not such an
//! object) or cannot be run at all (a `prompt`, `agent` or `http` handler, a matcher that is
//! not a regular expression we can read, a file we cannot parse) refuses the call.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::SettingError;

/// Longest stdout a hook may print; more is refused as garbage (a decision is a few hundred
/// bytes; a hook that floods its pipe is not answering).
pub const MAX_HOOK_STDOUT_BYTES: usize = 64 * 1024;
/// Longest stderr kept (the reason of an exit 2); the rest is read and dropped.
pub const MAX_HOOK_STDERR_BYTES: usize = 16 * 1024;
/// Longest reason passed on to code and the audit log.
const MAX_REASON_CHARS: usize = 2_000;
/// Claude Code's documented default for a command hook (`timeout` absent); the run's own
/// deadline bounds it further.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(600);

/// The events we run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// Before every upstream call made from code, a skill or a pinned direct tool.
    PreToolUse,
    /// After it answered (the result is held until the hooks agree).
    PostToolUse,
    /// Before a run starts: the code, the language, the principal, the tools it names.
    PreExecute,
}

impl Event {
    pub fn as_str(self) -> &'static str {
        match self {
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUse => "PostToolUse",
            Event::PreExecute => "PreExecute",
        }
    }

    const ALL: [Event; 3] = [Event::PreToolUse, Event::PostToolUse, Event::PreExecute];
}

/// Where a hook was configured: the file, for messages and the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin(pub String);

/// What a handler runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A shell command (`bash -c`), fed the event's JSON on stdin.
    Command {
        command: String,
        timeout: Duration,
        /// `async: true`: started, never waited for, never deciding.
        background: bool,
    },
    /// A handler we cannot run (a `prompt`, `agent` or `http` hook; a handler or matcher we
    /// cannot read): a call it would judge is refused with this reason.
    Refuse(String),
}

/// One handler of a matcher group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler {
    pub action: Action,
    /// Claude Code's `if` (permission-rule syntax), narrowing the group's matcher.
    pub only_if: Option<String>,
    pub origin: Origin,
}

impl Handler {
    /// What the audit log and messages call it: its command, or why it cannot run.
    pub fn label(&self) -> &str {
        match &self.action {
            Action::Command { command, .. } => command,
            Action::Refuse(why) => why,
        }
    }
}

/// Which tools a group judges.
#[derive(Debug, Clone)]
pub enum Matcher {
    All,
    Exact(Vec<String>),
    Regex(regex::Regex),
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Matcher) -> bool {
        match (self, other) {
            (Matcher::All, Matcher::All) => true,
            (Matcher::Exact(a), Matcher::Exact(b)) => a == b,
            (Matcher::Regex(a), Matcher::Regex(b)) => a.as_str() == b.as_str(),
            _ => false,
        }
    }
}

impl Eq for Matcher {}

/// What is wrong with a hook's entry in a settings file: the hook is then a refusal (fail
/// closed) whose reason this is.
#[derive(Debug, thiserror::Error)]
pub enum HookSpecError {
    #[error("the matcher \"{matcher}\" is not a regular expression we can read: {source}")]
    Matcher {
        matcher: String,
        source: regex::Error,
    },
    #[error("not an object")]
    NotAnObject,
    #[error("matcher is not a string ({0})")]
    MatcherNotText(String),
    #[error("\"hooks\" (the list of handlers) is missing or not a list")]
    NoHandlers,
    #[error(
        "a \"{0}\" hook cannot be run by code-executor-mcp (only \"command\" hooks are); narrow \
         its matcher so it does not cover the tools code calls, or set hooks.fromClients to false \
         in our settings"
    )]
    NotCommand(String),
    #[error("\"type\" is \"{0}\", not \"command\"")]
    OtherType(String),
    #[error("a command hook has no \"command\"")]
    NoCommand,
    #[error("\"timeout\" is not a positive number of seconds ({0})")]
    Timeout(String),
}

impl Matcher {
    /// Claude Code's rule: `*`, empty or absent: all; only letters, digits, `_`, `-`, `|`: a
    /// list of exact names; anything else: a regular expression searched in the name.
    pub fn parse(m: Option<&str>) -> Result<Matcher, HookSpecError> {
        let m = m.unwrap_or("");
        if m.is_empty() || m == "*" {
            return Ok(Matcher::All);
        }
        if m.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|'))
        {
            return Ok(Matcher::Exact(m.split('|').map(str::to_string).collect()));
        }
        regex::Regex::new(m)
            .map(Matcher::Regex)
            .map_err(|source| HookSpecError::Matcher {
                matcher: m.to_string(),
                source,
            })
    }

    pub fn matches(&self, name: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Exact(names) => names.iter().any(|n| n == name),
            Matcher::Regex(r) => r.is_match(name),
        }
    }
}

/// One matcher group of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub event: Event,
    pub matcher: Matcher,
    pub handlers: Vec<Handler>,
}

/// Every hook that applies, in configuration order, with what they run in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hooks {
    pub groups: Vec<Group>,
    /// Variables the user gave hooks (`hooks.env`), besides the curated few.
    pub env: BTreeMap<String, String>,
    /// Where hooks run and what `CLAUDE_PROJECT_DIR` is: the project (working) directory.
    pub project_dir: Option<PathBuf>,
}

impl Hooks {
    /// Our setting's hooks, then (unless `fromClients` is false) those of the client files
    /// (`(file, its "hooks" object)`), run in `project_dir`.
    pub fn new(
        settings: &HookSettings,
        client_files: &[(PathBuf, Value)],
        project_dir: Option<PathBuf>,
    ) -> Hooks {
        let mut groups = settings.groups(&Origin("our settings (hooks)".into()));
        if settings.from_clients != Some(false) {
            for (file, hooks) in client_files {
                groups.extend(parse_events(hooks, &Origin(file.display().to_string())));
            }
        }
        Hooks {
            groups,
            env: settings.env.clone(),
            project_dir,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Whether any hook is configured for `event` at all.
    pub fn has(&self, event: Event) -> bool {
        self.groups.iter().any(|g| g.event == event)
    }

    /// The handlers that judge `name` at `event`, each command once (Claude Code deduplicates
    /// identical commands). A tool's name is matched as we write it
    /// (`mcp__my.server__get.page`) and as Claude Code writes it (`mcp__my_server__get_page`,
    /// [`claude_name`]), so a matcher copied from Claude Code's settings applies.
    pub fn matching(&self, event: Event, name: &str) -> Vec<&Handler> {
        let alias = claude_name(name);
        let names: Vec<&str> = if alias == name {
            vec![name]
        } else {
            vec![name, alias.as_str()]
        };
        let mut out: Vec<&Handler> = Vec::new();
        for g in self
            .groups
            .iter()
            .filter(|g| g.event == event && names.iter().any(|n| g.matcher.matches(n)))
        {
            for h in &g.handlers {
                if h.only_if
                    .as_deref()
                    .is_some_and(|rule| !names.iter().any(|n| rule_applies(rule, n)))
                {
                    continue;
                }
                if !out.iter().any(|o| o.action == h.action) {
                    out.push(h);
                }
            }
        }
        out
    }
}

/// `name` as Claude Code writes an MCP tool's name: every character outside `[A-Za-z0-9_-]`
/// becomes `_`.
pub fn claude_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Whether a permission rule (`if`) could cover the tool `name`: `Tool`, `Tool(args)`,
/// `mcp__server` (every tool of it), a trailing `*`. A rule naming another tool does not;
/// anything we cannot read does (the hook then runs, which can only refuse more).
pub fn rule_applies(rule: &str, name: &str) -> bool {
    let rule = rule.trim();
    let (tool, args) = match rule.split_once('(') {
        Some((t, a)) => (t.trim(), Some(a)),
        None => (rule, None),
    };
    if tool.is_empty() {
        return true;
    }
    let named = if let Some(prefix) = tool.strip_suffix('*') {
        name.starts_with(prefix)
    } else {
        tool == name
            || (tool.starts_with("mcp__")
                && tool.matches("__").count() == 1
                && name.strip_prefix(tool).is_some_and(|r| r.starts_with("__")))
    };
    // An argument part is about the tool's input, which we do not match: the hook runs.
    named || (args.is_some() && tool == name)
}

/// Our `hooks` setting, raw: the events in Claude Code's shape, read by the same parser as
/// its files ([`parse_events`]).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookSettings {
    #[serde(rename = "PreToolUse")]
    pub pre_tool_use: Option<Value>,
    #[serde(rename = "PostToolUse")]
    pub post_tool_use: Option<Value>,
    #[serde(rename = "PreExecute")]
    pub pre_execute: Option<Value>,
    /// Whether the hooks in Claude Code's settings files run too (default true).
    #[serde(rename = "fromClients")]
    pub from_clients: Option<bool>,
    /// Variables hooks get besides the curated few (`PATH`, `HOME`, ...).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

impl HookSettings {
    /// Checks the values: a group or handler we could not run is refused here, at start,
    /// rather than at each call.
    pub fn validate(self) -> Result<HookSettings, SettingError> {
        let groups = self.groups(&Origin("settings hooks".into()));
        if let Some(why) = groups
            .iter()
            .flat_map(|g| &g.handlers)
            .find_map(|h| match &h.action {
                Action::Refuse(why) => Some(why.clone()),
                Action::Command { .. } => None,
            })
        {
            return Err(SettingError::Hooks(why));
        }
        if let Some(k) = self.env.keys().find(|k| !is_env_name(k)) {
            return Err(SettingError::Hooks(format!(
                "env: \"{k}\" is not an environment variable name"
            )));
        }
        Ok(self)
    }

    /// The groups of this setting.
    pub fn groups(&self, origin: &Origin) -> Vec<Group> {
        let mut events = Map::new();
        for (name, v) in [
            ("PreToolUse", &self.pre_tool_use),
            ("PostToolUse", &self.post_tool_use),
            ("PreExecute", &self.pre_execute),
        ] {
            if let Some(v) = v {
                events.insert(name.into(), v.clone());
            }
        }
        parse_events(&Value::Object(events), origin)
    }
}

fn is_env_name(k: &str) -> bool {
    !k.is_empty()
        && !k.starts_with(|c: char| c.is_ascii_digit())
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The groups of a settings file's `hooks` object (Claude Code's shape) for the events we
/// run; other events are not ours and are skipped. What cannot be read becomes a group that
/// matches every tool and refuses, naming the file and the problem (fail closed: a guard we
/// cannot read is not a guard we may skip).
pub fn parse_events(hooks: &Value, origin: &Origin) -> Vec<Group> {
    let broken = |event: Event, why: String| Group {
        event,
        matcher: Matcher::All,
        handlers: vec![Handler {
            action: Action::Refuse(format!("{}: hooks.{}: {why}", origin.0, event.as_str())),
            only_if: None,
            origin: origin.clone(),
        }],
    };
    let Some(obj) = hooks.as_object() else {
        return Event::ALL
            .iter()
            .map(|e| broken(*e, format!("\"hooks\" is not an object ({hooks})")))
            .collect();
    };
    let mut out = Vec::new();
    for event in Event::ALL {
        let Some(list) = obj.get(event.as_str()) else {
            continue;
        };
        let Some(list) = list.as_array() else {
            out.push(broken(event, "not a list of matcher groups".into()));
            continue;
        };
        for (i, g) in list.iter().enumerate() {
            match parse_group(event, g, origin) {
                Ok(g) => out.push(g),
                Err(why) => out.push(broken(event, format!("group {i}: {why}"))),
            }
        }
    }
    out
}

fn parse_group(event: Event, g: &Value, origin: &Origin) -> Result<Group, HookSpecError> {
    let obj = g.as_object().ok_or(HookSpecError::NotAnObject)?;
    let matcher = match obj.get("matcher") {
        None | Some(Value::Null) => Matcher::All,
        Some(Value::String(s)) => Matcher::parse(Some(s))?,
        Some(other) => return Err(HookSpecError::MatcherNotText(other.to_string())),
    };
    let list = obj
        .get("hooks")
        .and_then(Value::as_array)
        .ok_or(HookSpecError::NoHandlers)?;
    let handlers = list
        .iter()
        .enumerate()
        .map(|(i, h)| Handler {
            action: parse_action(h).unwrap_or_else(|why| {
                Action::Refuse(format!(
                    "{}: hooks.{} handler {i}: {why}",
                    origin.0,
                    event.as_str()
                ))
            }),
            only_if: h.get("if").and_then(Value::as_str).map(str::to_string),
            origin: origin.clone(),
        })
        .collect();
    Ok(Group {
        event,
        matcher,
        handlers,
    })
}

fn parse_action(h: &Value) -> Result<Action, HookSpecError> {
    let kind = h.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "command" => {}
        "prompt" | "agent" | "http" => {
            return Err(HookSpecError::NotCommand(kind.to_string()));
        }
        other => return Err(HookSpecError::OtherType(other.to_string())),
    }
    let command = h
        .get("command")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .ok_or(HookSpecError::NoCommand)?;
    let timeout = match h.get("timeout") {
        None | Some(Value::Null) => DEFAULT_HOOK_TIMEOUT,
        Some(t) => match t.as_f64() {
            Some(s) if s > 0.0 && s.is_finite() => Duration::from_secs_f64(s.min(86_400.0)),
            _ => {
                return Err(HookSpecError::Timeout(t.to_string()));
            }
        },
    };
    Ok(Action::Command {
        command: command.to_string(),
        timeout,
        background: h.get("async") == Some(&Value::Bool(true))
            || h.get("asyncRewake") == Some(&Value::Bool(true)),
    })
}

/// What one hook decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing (exit 0, no output): the call goes on through our own rules.
    Nothing,
    Allow,
    /// A person decides (`ask`, and `defer`, which asks through the caller's own interface).
    Ask(String),
    Deny(String),
}

impl Verdict {
    fn rank(&self) -> u8 {
        match self {
            Verdict::Nothing => 0,
            Verdict::Allow => 1,
            Verdict::Ask(_) => 2,
            Verdict::Deny(_) => 3,
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Nothing => "none",
            Verdict::Allow => "allow",
            Verdict::Ask(_) => "ask",
            Verdict::Deny(_) => "deny",
        }
    }
}

/// One hook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub verdict: Verdict,
    /// `updatedInput` (PreToolUse): the arguments the call goes on with, whole.
    pub updated_input: Option<Map<String, Value>>,
    /// `updatedMCPToolOutput` (PostToolUse): the result the caller gets instead.
    pub updated_output: Option<Value>,
}

/// Why a hook gave no answer we can act on; every one refuses the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookFailure {
    #[error("did not answer within {0:?} (the run's remaining time bounds every hook)")]
    TimedOut(Duration),
    #[error("crashed ({status}){}", stderr_note(.stderr))]
    Crashed { status: String, stderr: String },
    #[error(
        "answered something that is not a decision: {0}; a hook prints nothing, or one JSON object, on stdout (logs go to stderr)"
    )]
    Garbage(String),
    #[error("could not be started: {0}")]
    Spawn(String),
    #[error("{0}")]
    Unrunnable(String),
    #[error(
        "was not started: {0} `async` hooks are running already (the most at once); the call went on"
    )]
    TooManyInBackground(usize),
}

fn stderr_note(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", clip(stderr.trim()))
    }
}

/// A hook's text as code, the model and a person get it: cut, and what a reader would not
/// see for what it is (controls, bidi overrides, hidden characters) written out
/// ([`super::invisible::reveal`]).
fn clip(s: &str) -> String {
    let s = super::invisible::reveal(s);
    if s.chars().count() <= MAX_REASON_CHARS {
        return s.into_owned();
    }
    let mut c: String = s.chars().take(MAX_REASON_CHARS).collect();
    c.push('…');
    c
}

/// How a hook process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

/// A hook's answer from how it ended and what it printed (Claude Code's rules, failing
/// closed where they let a call go on; see the module's documentation).
pub fn read_answer(
    event: Event,
    exit: Exit,
    stdout: &[u8],
    stderr: &[u8],
) -> Result<Answer, HookFailure> {
    let stderr_text = String::from_utf8_lossy(stderr);
    let code = match exit {
        Exit::Signal(s) => {
            return Err(HookFailure::Crashed {
                status: format!("killed by signal {s}"),
                stderr: stderr_text.into_owned(),
            });
        }
        Exit::Code(c) => c,
    };
    let nothing = Answer {
        verdict: Verdict::Nothing,
        updated_input: None,
        updated_output: None,
    };
    match code {
        2 => {
            let reason = stderr_text.trim();
            let reason = if reason.is_empty() {
                "a hook blocked it (exit 2) without giving a reason".to_string()
            } else {
                clip(reason)
            };
            Ok(Answer {
                verdict: Verdict::Deny(reason),
                ..nothing
            })
        }
        0 => {
            let text = std::str::from_utf8(stdout)
                .map_err(|_| HookFailure::Garbage("stdout is not UTF-8 text".into()))?;
            let text = text.trim();
            if text.is_empty() {
                return Ok(nothing);
            }
            let value: Value = serde_json::from_str(text).map_err(|_| {
                HookFailure::Garbage(format!("stdout is not JSON: {}", clip(&preview(text))))
            })?;
            read_json(event, &value)
        }
        other => Err(HookFailure::Crashed {
            status: format!("exit status {other}; only 0 and 2 are answers"),
            stderr: stderr_text.into_owned(),
        }),
    }
}

fn preview(text: &str) -> String {
    let p: String = text.chars().take(120).collect();
    if p.len() < text.len() {
        format!("\"{p}…\"")
    } else {
        format!("\"{p}\"")
    }
}

fn read_json(event: Event, value: &Value) -> Result<Answer, HookFailure> {
    let garbage = |why: String| Err(HookFailure::Garbage(why));
    let Some(obj) = value.as_object() else {
        return garbage(format!(
            "stdout is JSON but not an object ({})",
            preview(&value.to_string())
        ));
    };
    let text = |key: &str, o: &Map<String, Value>| -> Result<Option<String>, HookFailure> {
        match o.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(clip(s))),
            Some(other) => Err(HookFailure::Garbage(format!(
                "\"{key}\" is not a string ({other})"
            ))),
        }
    };
    let mut answer = Answer {
        verdict: Verdict::Nothing,
        updated_input: None,
        updated_output: None,
    };
    match obj.get("continue") {
        None | Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => {
            let why = text("stopReason", obj)?
                .unwrap_or_else(|| "a hook stopped it (continue: false)".into());
            answer.verdict = Verdict::Deny(why);
            return Ok(answer);
        }
        Some(other) => return garbage(format!("\"continue\" is not true or false ({other})")),
    }
    let specific = match obj.get("hookSpecificOutput") {
        None | Some(Value::Null) => None,
        Some(Value::Object(o)) => {
            match o.get("hookEventName") {
                None => {}
                Some(Value::String(n)) if n == event.as_str() => {}
                Some(other) => {
                    return garbage(format!(
                        "hookSpecificOutput.hookEventName is {other}, not \"{}\"",
                        event.as_str()
                    ));
                }
            }
            Some(o)
        }
        Some(other) => return garbage(format!("hookSpecificOutput is not an object ({other})")),
    };
    // The deprecated top-level decision (PreToolUse), or PostToolUse's and ours.
    let reason = text("reason", obj)?;
    match (event, obj.get("decision")) {
        (_, None | Some(Value::Null)) => {}
        (Event::PreToolUse, Some(Value::String(d))) if d == "approve" => {
            answer.verdict = Verdict::Allow;
        }
        (_, Some(Value::String(d))) if d == "block" => {
            answer.verdict = Verdict::Deny(
                reason
                    .clone()
                    .unwrap_or_else(|| "a hook blocked it without giving a reason".into()),
            );
        }
        (_, Some(other)) => {
            return garbage(format!(
                "\"decision\" is {other}, not a decision of {}",
                event.as_str()
            ));
        }
    }
    if let Some(s) = specific {
        let why = text("permissionDecisionReason", s)?;
        let decided = match s.get("permissionDecision") {
            None | Some(Value::Null) => None,
            Some(Value::String(d)) => match d.as_str() {
                "allow" => Some(Verdict::Allow),
                "deny" => {
                    Some(Verdict::Deny(why.clone().unwrap_or_else(|| {
                        "a hook denied it without giving a reason".into()
                    })))
                }
                "ask" | "defer" => Some(Verdict::Ask(why.clone().unwrap_or_default())),
                other => {
                    return garbage(format!(
                        "permissionDecision is \"{other}\" (allow, deny, ask or defer)"
                    ));
                }
            },
            Some(other) => return garbage(format!("permissionDecision is not a string ({other})")),
        };
        if let Some(v) = decided {
            if event == Event::PostToolUse {
                return garbage("permissionDecision is a PreToolUse answer".into());
            }
            // The hook-specific decision wins over the deprecated one, except a block.
            if v.rank() >= answer.verdict.rank() || answer.verdict == Verdict::Allow {
                answer.verdict = v;
            }
        }
        match s.get("updatedInput") {
            None | Some(Value::Null) => {}
            Some(Value::Object(o)) if event == Event::PreToolUse => {
                answer.updated_input = Some(o.clone());
            }
            Some(other) => {
                return garbage(format!(
                    "updatedInput is not an object of arguments ({other})"
                ));
            }
        }
        match s.get("updatedMCPToolOutput") {
            None | Some(Value::Null) => {}
            Some(v) if event == Event::PostToolUse => answer.updated_output = Some(v.clone()),
            Some(_) => return garbage("updatedMCPToolOutput is a PostToolUse answer".into()),
        }
    }
    Ok(answer)
}

/// The strictest of several answers (deny > ask > allow > nothing, Claude Code's precedence):
/// the verdict, with the first reason of that strength and the first replacement input or
/// output among the hooks that did not refuse.
pub fn strictest(answers: &[Answer]) -> Answer {
    let mut out = Answer {
        verdict: Verdict::Nothing,
        updated_input: None,
        updated_output: None,
    };
    for a in answers {
        if a.verdict.rank() > out.verdict.rank() {
            out.verdict = a.verdict.clone();
        }
        if out.updated_input.is_none() {
            out.updated_input = a.updated_input.clone();
        }
        if out.updated_output.is_none() {
            out.updated_output = a.updated_output.clone();
        }
    }
    out
}
