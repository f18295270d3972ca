//! The executor's own tools by every name they answer to, in one table ([`NAMES`]): ours,
//! listed in `tools/list`, and the names the product line's documents give them
//! (`executeTypescript`, `run-python-code`, `execute_code`, `get_tool_signature` ...), which
//! are callable and never listed: the listed tools stay few and small (README, "Tokens").
//!
//! A name is matched exactly: no case folding, no separator ignored, no Unicode
//! normalisation. A near miss (`ExecuteTypescript`, `execute-python`) is an error that names
//! the tool it resembles, and nothing runs. Each tool's parameters are a table too
//! ([`OwnTool::params`]): ours, with the documents' spellings beside them (`timeout_ms` for
//! `timeoutMs`); [`normalize`] turns a call's arguments into ours, and an argument no table
//! names is an error that lists what the tool accepts.
//!
//! Code reaches the same tools as the server [`SELF_SERVER`] (`code-executor`, the name the
//! documents use; the name a client configured this server under is not known to it):
//! `callMCPTool('mcp__code-executor__executeTypescript', {...})`,
//! `callMCPTool('code-executor', 'search_tools', {...})` ([`from_code`]). A configured
//! upstream of that very name wins: the name is then that server's, and code reaches it as it
//! reaches any other (docs/protocol.md, "The executor's own tools from code").

use serde_json::{Map, Value, json};

pub mod reference;
pub use reference::tool_definitions;

/// The server name code calls this server by.
pub const SELF_SERVER: &str = "code-executor";

/// The language of an execute tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    TypeScript,
    Python,
}

/// What one of our tools does, whatever it is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnTool {
    /// Runs code in this language; `None` (`execute_code`): in the one its `language`
    /// argument names, JavaScript (TypeScript) when it names none.
    Execute(Option<Code>),
    SearchTools,
    GetToolSchema,
    ListServers,
    Wait,
    Health,
}

/// One name of one of our tools.
#[derive(Debug, PartialEq, Eq)]
pub struct Name {
    pub name: &'static str,
    pub tool: OwnTool,
    /// Ours, listed in `tools/list`; else a name from the documents, callable and unlisted.
    pub listed: bool,
}

const fn ours(name: &'static str, tool: OwnTool) -> Name {
    Name {
        name,
        tool,
        listed: true,
    }
}

const fn documents(name: &'static str, tool: OwnTool) -> Name {
    Name {
        name,
        tool,
        listed: false,
    }
}

/// Every name of our tools: ours first (a near miss is told ours), then the documents'.
pub const NAMES: [Name; 14] = [
    ours(
        "execute_typescript",
        OwnTool::Execute(Some(Code::TypeScript)),
    ),
    ours("execute_python", OwnTool::Execute(Some(Code::Python))),
    ours("search_tools", OwnTool::SearchTools),
    ours("get_tool_schema", OwnTool::GetToolSchema),
    ours("list_servers", OwnTool::ListServers),
    ours("wait", OwnTool::Wait),
    ours("health", OwnTool::Health),
    // The first product's README and design notes (Deno and Python executors).
    documents(
        "executeTypescript",
        OwnTool::Execute(Some(Code::TypeScript)),
    ),
    documents("executePython", OwnTool::Execute(Some(Code::Python))),
    documents(
        "run-typescript-code",
        OwnTool::Execute(Some(Code::TypeScript)),
    ),
    documents("run-python-code", OwnTool::Execute(Some(Code::Python))),
    // The JavaScript variant (`execute_code {code, timeout_ms}`, `get_tool_signature
    // {server, tool}`), and the Python one (`run_python`).
    documents("execute_code", OwnTool::Execute(None)),
    documents("run_python", OwnTool::Execute(Some(Code::Python))),
    documents("get_tool_signature", OwnTool::GetToolSchema),
];

/// The tool `name` names exactly.
pub fn lookup(name: &str) -> Option<&'static Name> {
    NAMES.iter().find(|n| n.name == name)
}

/// The name `name` resembles (ASCII case, `-` and `_` aside): ours when one is.
fn resembles(name: &str) -> Option<&'static str> {
    let fold = |s: &str| -> String {
        s.chars()
            .filter(|c| !matches!(c, '-' | '_'))
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let folded = fold(name);
    NAMES
        .iter()
        .find(|n| fold(n.name) == folded)
        .map(|n| n.name)
}

/// A name none of our tools has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown tool \"{name}\"{hint}; {who} offers execute_typescript, execute_python, \
     search_tools, get_tool_schema, list_servers, wait, health (also callable by the names of \
     the documents it grew from: executeTypescript, executePython, run-typescript-code, \
     run-python-code, execute_code, run_python, get_tool_signature){extra}"
)]
pub struct UnknownTool {
    name: String,
    /// `code-executor` when code asked, `this server` when a client did.
    who: &'static str,
    hint: String,
    extra: &'static str,
}

/// The tool a client's `tools/call` names, or why there is none (`extra` ends the message:
/// what else the server offers).
pub fn named(name: &str, extra: &'static str) -> Result<&'static Name, UnknownTool> {
    lookup(name).ok_or_else(|| unknown(name, "this server", extra))
}

fn unknown(name: &str, who: &'static str, extra: &'static str) -> UnknownTool {
    UnknownTool {
        name: name.chars().take(200).collect(),
        who,
        hint: resembles(name)
            .map(|n| format!(" (did you mean \"{n}\"? names are matched exactly)"))
            .unwrap_or_default(),
        extra,
    }
}

/// Which of our tools a call from code names, when it names this server: by server and tool
/// (`callMCPTool('code-executor', 'health')`) or by qualified name
/// (`callMCPTool('mcp__code-executor__health')`). `None`: the call is not for us (another
/// server's tool, or `upstreams` has a server named [`SELF_SERVER`], which wins).
pub fn from_code<'a>(
    mut upstreams: impl Iterator<Item = &'a str>,
    server: Option<&str>,
    name: &str,
) -> Option<Result<&'static Name, UnknownTool>> {
    let tool = match server {
        Some(s) if s == SELF_SERVER => name,
        Some(_) => return None,
        None => name.strip_prefix("mcp__code-executor__")?,
    };
    if upstreams.any(|u| u == SELF_SERVER) {
        return None;
    }
    Some(lookup(tool).ok_or_else(|| unknown(tool, SELF_SERVER, "")))
}

/// One parameter: our name, and the documents' spellings of it.
#[derive(Debug)]
pub struct Param {
    pub name: &'static str,
    pub also: &'static [&'static str],
}

const fn p(name: &'static str) -> Param {
    Param { name, also: &[] }
}

const TIMEOUT: Param = Param {
    name: "timeoutMs",
    also: &["timeout_ms"],
};

const EXECUTE: [Param; 13] = [
    p("code"),
    p("skill"),
    p("args"),
    p("save"),
    TIMEOUT,
    p("session"),
    p("yieldAfterMs"),
    p("permissions"),
    p("allowedTools"),
    p("limits"),
    p("reset"),
    p("enableSampling"),
    p("check"),
];
/// `execute_code`'s choice of language (`javascript` when absent).
const LANGUAGE: [Param; 1] = [p("language")];
const SEARCH: [Param; 5] = [
    p("query"),
    p("detail"),
    p("server"),
    p("limit"),
    p("cursor"),
];
/// `name` (`mcp__server__tool`), or `server` and `tool` (the documents' `get_tool_signature`).
const SCHEMA: [Param; 3] = [p("name"), p("server"), p("tool")];
const WAIT: [Param; 3] = [p("handle"), TIMEOUT, p("cancel")];

impl OwnTool {
    /// The parameters the tool accepts.
    pub fn params(self) -> impl Iterator<Item = &'static Param> {
        let (own, more): (&'static [Param], &'static [Param]) = match self {
            OwnTool::Execute(Some(_)) => (&EXECUTE, &[]),
            OwnTool::Execute(None) => (&EXECUTE, &LANGUAGE),
            OwnTool::SearchTools => (&SEARCH, &[]),
            OwnTool::GetToolSchema => (&SCHEMA, &[]),
            OwnTool::Wait => (&WAIT, &[]),
            OwnTool::ListServers | OwnTool::Health => (&[], &[]),
        };
        own.iter().chain(more)
    }

    /// Runs code.
    pub fn executes(self) -> bool {
        matches!(self, OwnTool::Execute(_))
    }

    /// Our listed name of the tool (an execute tool's once its language is known).
    pub fn ours(self) -> &'static str {
        match self {
            OwnTool::Execute(Some(Code::Python)) => "execute_python",
            OwnTool::Execute(_) => "execute_typescript",
            OwnTool::SearchTools => "search_tools",
            OwnTool::GetToolSchema => "get_tool_schema",
            OwnTool::ListServers => "list_servers",
            OwnTool::Wait => "wait",
            OwnTool::Health => "health",
        }
    }
}

/// Our tool `tool` called `name`, as the policy's rules see a tool: named, and annotated
/// read-only unless it runs code.
pub fn as_tool(name: &str, tool: OwnTool) -> rmcp::model::Tool {
    let mut t = rmcp::model::Tool::new(
        name.to_string(),
        String::new(),
        std::sync::Arc::new(Map::new()),
    );
    if !tool.executes() {
        t.annotations = Some(rmcp::model::ToolAnnotations::new().read_only(true));
    }
    t
}

/// What `get_tool_schema` answers for our tool `name` (any of its names): an execute tool's
/// long reference ([`reference::reference`]), another's definition as `tools/list` gives it; a name
/// of the documents says which of ours it is.
pub fn own_schema(name: &Name) -> Option<Value> {
    let ours = name.tool.ours();
    let mut v = reference::reference(ours).or_else(|| {
        tool_definitions()
            .into_iter()
            .find(|t| t.name == ours)
            .and_then(|t| serde_json::to_value(t).ok())
    })?;
    if name.name != ours {
        v["alias"] = json!(format!(
            "{} is a name of {ours}, from the documents this server grew from",
            name.name
        ));
    }
    Some(v)
}

/// Arguments a tool cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    #[error("{tool} has no parameter \"{param}\"; it accepts {accepted}")]
    Unknown {
        tool: &'static str,
        param: String,
        accepted: String,
    },
    #[error(
        "{tool}: \"{given}\" and \"{ours}\" are one parameter and were given different values; give one"
    )]
    Conflict {
        tool: &'static str,
        given: &'static str,
        ours: &'static str,
    },
    #[error("{tool}: language must be \"javascript\", \"typescript\" or \"python\", not {got}")]
    Language { tool: &'static str, got: String },
    #[error("the arguments of {tool} must be an object, not {got}")]
    NotObject { tool: &'static str, got: String },
}

/// A call of one of our tools, in our terms.
#[derive(Debug, PartialEq)]
pub struct Call {
    /// The tool (an execute tool's language resolved).
    pub tool: OwnTool,
    /// Called by a name of the documents: its answer carries their fields too
    /// ([`documents_fields`]).
    pub documents: bool,
    /// The arguments under our names.
    pub args: Map<String, Value>,
}

/// `args` of a call of `name` under our parameter names (the documents' spellings renamed,
/// `execute_code`'s `language` resolved and taken out); an argument the tool does not take
/// is an error naming every one it does.
pub fn normalize(name: &Name, args: Value) -> Result<Call, ArgError> {
    let tool_name = name.name;
    let given = match args {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => {
            return Err(ArgError::NotObject {
                tool: tool_name,
                got: shorten(&other),
            });
        }
    };
    let mut args = Map::new();
    // Ours first, so that a documents' spelling meets our value when both are given.
    let mut given: Vec<(String, Value)> = given.into_iter().collect();
    given.sort_by_key(|(k, _)| !name.tool.params().any(|p| p.name == k));
    for (key, value) in given {
        let Some(param) = name
            .tool
            .params()
            .find(|p| p.name == key || p.also.contains(&key.as_str()))
        else {
            let accepted: Vec<String> = name
                .tool
                .params()
                .map(|p| match p.also {
                    [] => p.name.to_string(),
                    also => format!("{} ({})", p.name, also.join(", ")),
                })
                .collect();
            return Err(ArgError::Unknown {
                tool: tool_name,
                param: key.chars().take(100).collect(),
                accepted: if accepted.is_empty() {
                    "none".to_string()
                } else {
                    accepted.join(", ")
                },
            });
        };
        match args.get(param.name) {
            Some(ours) if *ours != value => {
                let given = param
                    .also
                    .iter()
                    .find(|a| **a == key)
                    .copied()
                    .unwrap_or(param.name);
                return Err(ArgError::Conflict {
                    tool: tool_name,
                    given,
                    ours: param.name,
                });
            }
            _ => {
                args.insert(param.name.to_string(), value);
            }
        }
    }
    let tool = match name.tool {
        OwnTool::Execute(None) => {
            let code = match args.remove("language") {
                None | Some(Value::Null) => Code::TypeScript,
                Some(Value::String(l)) if matches!(l.as_str(), "javascript" | "typescript") => {
                    Code::TypeScript
                }
                Some(Value::String(l)) if l == "python" => Code::Python,
                Some(other) => {
                    return Err(ArgError::Language {
                        tool: tool_name,
                        got: shorten(&other),
                    });
                }
            };
            OwnTool::Execute(Some(code))
        }
        other => other,
    };
    Ok(Call {
        tool,
        documents: !name.listed,
        args,
    })
}

/// A value as an error quotes it: its JSON, at most 80 characters of it.
fn shorten(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(80) {
        Some((at, _)) => format!("{}...", &s[..at]),
        None => s,
    }
}

/// The documents' fields of an execution's answer `v` (its structured content), beside ours:
/// `success`, `samplingMetrics` (model calls as rounds and tokens, from our `llm`) and
/// `execution_ms` (our `durationMs`). An answer that is not an execution's (a task, a
/// running handle) is left alone.
pub fn documents_fields(v: &mut Value) {
    let Some(o) = v.as_object_mut() else {
        return;
    };
    // A run still going (`yieldAfterMs`) has no success or duration yet: its `running`
    // says so, and `wait` gives the end.
    if o.get("running").is_some_and(|r| !r.is_null()) {
        return;
    }
    let Some(duration) = o.get("durationMs").cloned() else {
        return;
    };
    let llm = o.get("llm");
    let count = |k: &str| {
        llm.and_then(|l| l.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let (rounds, input, output) = (count("calls"), count("inputTokens"), count("outputTokens"));
    let success = o.get("error").is_none_or(Value::is_null);
    o.insert("success".into(), json!(success));
    o.insert(
        "samplingMetrics".into(),
        json!({
            "totalRounds": rounds,
            "totalTokens": input + output,
            "inputTokens": input,
            "outputTokens": output,
        }),
    );
    o.insert("execution_ms".into(), duration);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_one_tool_and_ours_are_the_listed_ones() {
        let listed: Vec<&str> = NAMES.iter().filter(|n| n.listed).map(|n| n.name).collect();
        let defs: Vec<String> = tool_definitions()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        assert_eq!(listed, defs);
        for n in &NAMES {
            assert_eq!(lookup(n.name), Some(n), "{}", n.name);
            assert_eq!(NAMES.iter().filter(|m| m.name == n.name).count(), 1);
        }
        let cases = [
            (
                "executeTypescript",
                OwnTool::Execute(Some(Code::TypeScript)),
            ),
            ("executePython", OwnTool::Execute(Some(Code::Python))),
            (
                "run-typescript-code",
                OwnTool::Execute(Some(Code::TypeScript)),
            ),
            ("run-python-code", OwnTool::Execute(Some(Code::Python))),
            ("execute_code", OwnTool::Execute(None)),
            ("run_python", OwnTool::Execute(Some(Code::Python))),
            ("get_tool_signature", OwnTool::GetToolSchema),
        ];
        for (name, tool) in cases {
            let n = lookup(name).unwrap();
            assert_eq!((n.tool, n.listed), (tool, false), "{name}");
        }
    }

    /// Names are exact: case, separators, look-alike letters, invisible characters, padding
    /// and encodings name no tool; the near misses a person makes are told the right name.
    #[test]
    fn near_misses_name_no_tool() {
        let cases = [
            ("ExecuteTypescript", Some("execute_typescript")),
            ("executeTypeScript", Some("execute_typescript")),
            ("EXECUTEPYTHON", Some("execute_python")),
            ("run_typescript_code", Some("run-typescript-code")),
            ("run-python_code", Some("run-python-code")),
            ("execute-python", Some("execute_python")),
            ("execute-code", Some("execute_code")),
            ("executeTypescrіpt", None), // Cyrillic і
            ("executeTypescript\u{200b}", None),
            (" executeTypescript", None),
            ("executeTypescript\0", None),
            ("ｅxecuteTypescript", None), // fullwidth e
            ("executeTypescript%20", None),
            ("mcp__code-executor__executeTypescript", None),
            ("", None),
        ];
        for (name, hint) in cases {
            assert_eq!(lookup(name), None, "{name:?}");
            let e = named(name, "").unwrap_err().to_string();
            match hint {
                Some(h) => assert!(
                    e.contains(&format!("did you mean \"{h}\"")),
                    "{name:?}: {e}"
                ),
                None => assert!(!e.contains("did you mean"), "{name:?}: {e}"),
            }
        }
    }

    #[test]
    fn code_names_this_server_as_code_executor_unless_an_upstream_has_the_name() {
        let none: [&str; 2] = ["fx", "filesystem"];
        let found = |server: Option<&str>, name: &str, ups: &[&str]| {
            from_code(ups.iter().copied(), server, name).map(|r| r.map(|n| n.name))
        };
        assert_eq!(
            found(None, "mcp__code-executor__executeTypescript", &none),
            Some(Ok("executeTypescript"))
        );
        assert_eq!(
            found(Some("code-executor"), "search_tools", &none),
            Some(Ok("search_tools"))
        );
        assert_eq!(found(Some("fx"), "health", &none), None);
        assert_eq!(found(None, "mcp__fx__echo", &none), None);
        assert_eq!(found(None, "mcp__Code-Executor__health", &none), None);
        assert_eq!(found(Some("code_executor"), "health", &none), None);
        let e = found(None, "mcp__code-executor__exec", &none)
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("unknown tool \"exec\"; code-executor offers"),
            "{e}"
        );
        // A configured upstream of the name wins.
        let with = ["code-executor", "fx"];
        assert_eq!(found(Some("code-executor"), "health", &with), None);
        assert_eq!(found(None, "mcp__code-executor__health", &with), None);
    }

    fn call(name: &str, args: Value) -> Result<Call, ArgError> {
        normalize(lookup(name).unwrap(), args)
    }

    #[test]
    fn the_documents_parameters_become_ours() {
        let c = call("execute_code", json!({"code": "1", "timeout_ms": 5000})).unwrap();
        assert_eq!(c.tool, OwnTool::Execute(Some(Code::TypeScript)));
        assert!(c.documents);
        assert_eq!(
            Value::Object(c.args),
            json!({"code": "1", "timeoutMs": 5000})
        );
        let c = call("execute_code", json!({"code": "1", "language": "python"})).unwrap();
        assert_eq!(c.tool, OwnTool::Execute(Some(Code::Python)));
        assert_eq!(Value::Object(c.args), json!({"code": "1"}));
        // Both spellings with one value are one parameter; with two, an error.
        let c = call(
            "executeTypescript",
            json!({"code": "1", "timeout_ms": 10, "timeoutMs": 10}),
        )
        .unwrap();
        assert_eq!(Value::Object(c.args), json!({"code": "1", "timeoutMs": 10}));
        assert_eq!(
            call(
                "execute_typescript",
                json!({"timeout_ms": 10, "timeoutMs": 20})
            ),
            Err(ArgError::Conflict {
                tool: "execute_typescript",
                given: "timeout_ms",
                ours: "timeoutMs"
            })
        );
        let c = call(
            "get_tool_signature",
            json!({"server": "fx", "tool": "echo"}),
        )
        .unwrap();
        assert_eq!(c.tool, OwnTool::GetToolSchema);
        assert!(
            !call("execute_python", json!({"code": "1"}))
                .unwrap()
                .documents
        );
    }

    #[test]
    fn an_unknown_parameter_is_named_with_what_the_tool_accepts() {
        let e = call("executeTypescript", json!({"code": "1", "timeout": 5}))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("executeTypescript has no parameter \"timeout\""),
            "{e}"
        );
        assert!(e.contains("timeoutMs (timeout_ms)"), "{e}");
        assert!(e.contains("enableSampling"), "{e}");
        // `language` is execute_code's alone; case matters.
        assert!(call("execute_typescript", json!({"language": "python"})).is_err());
        assert!(call("executeTypescript", json!({"TimeoutMs": 5})).is_err());
        assert!(call("execute_code", json!({"language": "Python"})).is_err());
        assert!(call("execute_code", json!({"language": ["python"]})).is_err());
        let e = call("health", json!({"verbose": true}))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "health has no parameter \"verbose\"; it accepts none");
        assert!(call("health", json!({})).is_ok());
        assert!(call("list_servers", Value::Null).is_ok());
        assert!(call("search_tools", json!("x")).is_err());
    }

    #[test]
    fn an_executions_answer_gains_the_documents_fields() {
        let mut v = json!({"result": 1, "logs": [], "toolCalls": 0, "durationMs": 12.5,
            "llm": {"calls": 2, "inputTokens": 30, "outputTokens": 12}});
        documents_fields(&mut v);
        assert_eq!(v["success"], true);
        assert_eq!(v["execution_ms"], 12.5);
        assert_eq!(
            v["samplingMetrics"],
            json!({"totalRounds": 2, "totalTokens": 42, "inputTokens": 30, "outputTokens": 12})
        );
        let mut failed =
            json!({"result": null, "logs": [], "durationMs": 1, "error": {"name": "Error"}});
        documents_fields(&mut failed);
        assert_eq!(failed["success"], false);
        assert_eq!(failed["samplingMetrics"]["totalRounds"], 0);
        let mut running = json!({"running": {"handle": "h"}});
        documents_fields(&mut running);
        assert_eq!(running, json!({"running": {"handle": "h"}}));
        let yielded = json!({"result": null, "durationMs": 201, "running": {"handle": "h"}});
        let mut v = yielded.clone();
        documents_fields(&mut v);
        assert_eq!(v, yielded, "a run still going has no success yet");
    }
}
