//! Task files: scripted solutions of one job each way, as JSON (docs/eval.md has the format).
//!
//! ```json
//! {
//!   "name": "reference",
//!   "vars": {"GIT_REPO": {"serverArg": {"server": "git", "after": "--repository"}}},
//!   "tasks": [{
//!     "name": "git-summary",
//!     "prompt": "Summarise the last commits of the repository.",
//!     "direct": [
//!       {"server": "git", "tool": "git_log", "arguments": {"repo_path": "${GIT_REPO}"}}
//!     ],
//!     "code": {"language": "typescript", "source": "return await tools.git.git_log({repo_path: '${GIT_REPO}'});"},
//!     "expect": {"contains": ["commit"]}
//!   }]
//! }
//! ```
//!
//! `${NAME}` (an upper-case name) in a string of a step's arguments or in the code is replaced by the variable
//! (`vars`, overridden by `--var NAME=VALUE`). A variable's value is a text, or
//! `{"serverArg": {"server": S, "after": FLAG}}`: the argument after `FLAG` in the configured
//! stdio server `S`'s arguments (the reference file finds the repository the git server
//! serves this way, so no path of one machine is written in it). A step's argument may take a value from an
//! earlier step's result, as a model would read it there: `{"$from": 0, "pointer":
//! "/structuredContent/x", "match": "regex"}` (see [`StepRef`]). The number of steps is fixed.

use std::collections::BTreeMap;
use std::path::Path;

use regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::{EvalError, StepError};

/// The ready task file for the five reference servers.
const REFERENCE: &str = include_str!("../data/tasks/reference.json");
/// The ready task file for the built-in synthetic catalog.
const SYNTHETIC: &str = include_str!("../data/tasks/synthetic.json");

/// Which servers a task file runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Servers {
    /// The user's configured servers (the default).
    #[default]
    Configured,
    /// The built-in synthetic catalog (hundreds of tools, served by our own binary).
    Synthetic,
}

/// A task file as written.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    servers: Servers,
    #[serde(default)]
    vars: BTreeMap<String, RawVar>,
    tasks: Vec<RawTask>,
}

/// A variable's value as written.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawVar {
    Text(String),
    FromServer(FromServer),
}

/// `{"serverArg": {"server": S, "after": FLAG}}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FromServer {
    server_arg: ServerArg,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerArg {
    server: String,
    after: String,
}

/// The argument after `flag` among the configured server `server`'s arguments (`--flag
/// VALUE` or `--flag=VALUE`), when it is a stdio server that has one.
pub(crate) type ServerArgs<'a> = &'a dyn Fn(&str, &str) -> Option<String>;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawTask {
    name: String,
    prompt: String,
    direct: Vec<RawStep>,
    code: RawCode,
    #[serde(default)]
    answer: Option<String>,
    #[serde(default)]
    expect: Option<Expect>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    server: String,
    tool: String,
    #[serde(default)]
    arguments: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCode {
    language: String,
    source: String,
}

/// What a task's answer must hold for the task to count as done.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Expect {
    /// Texts the answer must contain (case-sensitive).
    #[serde(default)]
    pub contains: Vec<String>,
}

impl Expect {
    /// The first expected text `text` lacks, if any.
    pub(crate) fn missing<'a>(&'a self, text: &str) -> Option<&'a str> {
        self.contains
            .iter()
            .find(|c| !text.contains(c.as_str()))
            .map(String::as_str)
    }
}

/// The language of a task's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CodeLanguage {
    TypeScript,
    Python,
}

impl CodeLanguage {
    /// Our tool that runs it.
    pub(crate) fn tool(self) -> &'static str {
        match self {
            CodeLanguage::TypeScript => "execute_typescript",
            CodeLanguage::Python => "execute_python",
        }
    }
}

/// A task file, checked, with its variables applied.
#[derive(Debug, Clone)]
pub(crate) struct TaskFile {
    pub name: String,
    pub description: Option<String>,
    pub servers: Servers,
    pub tasks: Vec<Task>,
}

/// One job, solved both ways.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    pub name: String,
    pub prompt: String,
    pub direct: Vec<Step>,
    pub language: CodeLanguage,
    pub code: String,
    pub answer: Option<String>,
    pub expect: Expect,
}

/// One direct tool call.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub server: String,
    pub tool: String,
    /// Arguments, with `$from` references still in them (resolved when the step runs).
    pub arguments: Map<String, Value>,
}

/// A value taken from an earlier step's result: `{"$from": N, "pointer": "/a/0/b",
/// "match": "regex"}`. Without `pointer`, the result's text (what the model read); with it,
/// the JSON pointer into the result's `structuredContent`, or into its text parsed as JSON.
/// `match` then takes the first capture group (or the whole match) of the value as text, and
/// `format` puts it into a text (`"{}/docs"`).
#[derive(Debug, Clone)]
pub(crate) struct StepRef {
    pub from: usize,
    pub pointer: Option<String>,
    pub pattern: Option<Regex>,
    /// A text around the value: `{}` stands for it (`"{}/docs"`).
    pub format: Option<String>,
}

impl StepRef {
    /// The reference an argument value makes, if it is one.
    fn parse(v: &Value) -> Option<Result<StepRef, StepError>> {
        let m = v.as_object()?;
        let from = m.get("$from")?;
        Some((|| {
            let from = from.as_u64().ok_or(StepError::FromNotANumber)? as usize;
            for k in m.keys() {
                if !matches!(k.as_str(), "$from" | "pointer" | "match" | "format") {
                    return Err(StepError::UnknownKey(k.clone()));
                }
            }
            let pointer = match m.get("pointer") {
                None => None,
                Some(Value::String(p)) if p.is_empty() || p.starts_with('/') => Some(p.clone()),
                Some(_) => return Err(StepError::BadPointer),
            };
            let pattern = match m.get("match") {
                None => None,
                Some(Value::String(p)) => Some(Regex::new(p)?),
                Some(_) => return Err(StepError::PatternNotText),
            };
            let format = match m.get("format") {
                None => None,
                Some(Value::String(f)) if f.contains("{}") => Some(f.clone()),
                Some(_) => return Err(StepError::BadFormat),
            };
            Ok(StepRef {
                from,
                pointer,
                pattern,
                format,
            })
        })())
    }

    /// The value this reference takes from `results` (each earlier step's structured content,
    /// or null, and its text).
    pub(crate) fn resolve(&self, results: &[(Option<Value>, String)]) -> Result<Value, StepError> {
        let (structured, text) = results.get(self.from).ok_or(StepError::NotRun(self.from))?;
        let mut value = match &self.pointer {
            None => Value::String(text.clone()),
            Some(p) => {
                let parsed;
                let doc = match structured {
                    Some(s) => s,
                    None => {
                        parsed = serde_json::from_str::<Value>(text).map_err(|_| {
                            StepError::NotJson {
                                from: self.from,
                                pointer: p.clone(),
                            }
                        })?;
                        &parsed
                    }
                };
                doc.pointer(p)
                    .cloned()
                    .ok_or_else(|| StepError::NothingAt {
                        from: self.from,
                        pointer: p.clone(),
                    })?
            }
        };
        if let Some(re) = &self.pattern {
            let hay = match &value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let caps = re.captures(&hay).ok_or_else(|| StepError::NoMatch {
                from: self.from,
                pattern: re.as_str().to_string(),
            })?;
            let m = caps
                .get(1)
                .or_else(|| caps.get(0))
                .map_or("", |m| m.as_str());
            value = Value::String(m.to_string());
        }
        if let Some(f) = &self.format {
            let text = match &value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            value = Value::String(f.replace("{}", &text));
        }
        Ok(value)
    }
}

/// Replaces every `$from` reference in `args` with its value.
pub(crate) fn resolve_args(
    args: &Map<String, Value>,
    results: &[(Option<Value>, String)],
) -> Result<Map<String, Value>, StepError> {
    fn walk(v: &Value, results: &[(Option<Value>, String)]) -> Result<Value, StepError> {
        if let Some(r) = StepRef::parse(v) {
            return r?.resolve(results);
        }
        Ok(match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| Ok((k.clone(), walk(v, results)?)))
                    .collect::<Result<_, StepError>>()?,
            ),
            Value::Array(a) => Value::Array(
                a.iter()
                    .map(|v| walk(v, results))
                    .collect::<Result<_, StepError>>()?,
            ),
            other => other.clone(),
        })
    }
    match walk(&Value::Object(args.clone()), results)? {
        Value::Object(m) => Ok(m),
        _ => Ok(Map::new()),
    }
}

/// Reads a task file: a built-in name (`reference`, `synthetic`) or a path; `vars` override
/// the file's own variables.
pub(crate) fn load(
    which: &str,
    vars: &BTreeMap<String, String>,
    server_args: ServerArgs<'_>,
) -> Result<TaskFile, EvalError> {
    let (origin, text) = match which {
        "reference" => ("built-in reference".to_string(), REFERENCE.to_string()),
        "synthetic" => ("built-in synthetic".to_string(), SYNTHETIC.to_string()),
        path => (
            path.to_string(),
            std::fs::read_to_string(Path::new(path)).map_err(|e| EvalError::Read {
                path: path.to_string(),
                reason: e.to_string(),
            })?,
        ),
    };
    parse(&origin, &text, vars, server_args)
}

/// Parses and checks a task file's text (`origin` names it in errors).
pub(crate) fn parse(
    origin: &str,
    text: &str,
    overrides: &BTreeMap<String, String>,
    server_args: ServerArgs<'_>,
) -> Result<TaskFile, EvalError> {
    let raw: RawFile = serde_json::from_str(text).map_err(|e| EvalError::Parse {
        origin: origin.to_string(),
        reason: e.to_string(),
    })?;
    let invalid = |task: &str, reason: String| EvalError::Invalid {
        origin: origin.to_string(),
        task: task.to_string(),
        reason,
    };
    let mut vars = BTreeMap::new();
    // Why a variable taken from a server has no value (said when it is used).
    let mut unresolved: BTreeMap<String, String> = BTreeMap::new();
    for (name, v) in &raw.vars {
        match v {
            RawVar::Text(t) => {
                vars.insert(name.clone(), t.clone());
            }
            RawVar::FromServer(FromServer {
                server_arg: ServerArg { server, after },
            }) => match server_args(server, after) {
                Some(value) => {
                    vars.insert(name.clone(), value);
                }
                None => {
                    unresolved.insert(
                        name.clone(),
                        format!(
                            "{name} is the argument after {after:?} of the configured server \
                             {server:?}, and no such server or argument is configured"
                        ),
                    );
                }
            },
        }
    }
    vars.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
    // An unset variable's error, with why a variable taken from a server is unset.
    let unset = |e: StepError| match e {
        StepError::Unset { name, .. } => {
            let why = unresolved
                .get(&name)
                .map(|why| format!(" ({why})"))
                .unwrap_or_default();
            StepError::Unset { name, why }
        }
        other => other,
    };
    if raw.tasks.is_empty() {
        return Err(invalid("", "the file has no tasks".into()));
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut tasks = Vec::new();
    for t in raw.tasks {
        if t.name.trim().is_empty() {
            return Err(invalid("", "a task has an empty name".into()));
        }
        if !seen.insert(t.name.clone()) {
            return Err(invalid(&t.name, "two tasks have this name".into()));
        }
        let language = match t.code.language.to_ascii_lowercase().as_str() {
            "typescript" | "ts" | "javascript" | "js" => CodeLanguage::TypeScript,
            "python" | "py" => CodeLanguage::Python,
            other => {
                return Err(invalid(
                    &t.name,
                    format!("code.language {other:?}: use \"typescript\" or \"python\""),
                ));
            }
        };
        if t.direct.is_empty() {
            return Err(invalid(&t.name, "\"direct\" has no steps".into()));
        }
        let mut steps = Vec::new();
        for (i, s) in t.direct.into_iter().enumerate() {
            let arguments = match substitute(&Value::Object(s.arguments), &vars)
                .map_err(|e| invalid(&t.name, format!("step {i}: {}", unset(e))))?
            {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            check_refs(&Value::Object(arguments.clone()), i)
                .map_err(|e| invalid(&t.name, format!("step {i}: {e}")))?;
            steps.push(Step {
                server: s.server,
                tool: s.tool,
                arguments,
            });
        }
        let code = substitute_str(&t.code.source, &vars)
            .map_err(|e| invalid(&t.name, format!("code: {}", unset(e))))?;
        tasks.push(Task {
            name: t.name,
            prompt: t.prompt,
            direct: steps,
            language,
            code,
            answer: t.answer,
            expect: t.expect.unwrap_or_default(),
        });
    }
    Ok(TaskFile {
        name: raw.name.unwrap_or_else(|| origin.to_string()),
        description: raw.description,
        servers: raw.servers,
        tasks,
    })
}

/// Every `$from` in a step's arguments is well formed and names an earlier step.
fn check_refs(v: &Value, step: usize) -> Result<(), StepError> {
    if let Some(r) = StepRef::parse(v) {
        let r = r?;
        if r.from >= step {
            return Err(StepError::NotEarlier { from: r.from, step });
        }
        return Ok(());
    }
    match v {
        Value::Object(m) => m.values().try_for_each(|v| check_refs(v, step)),
        Value::Array(a) => a.iter().try_for_each(|v| check_refs(v, step)),
        _ => Ok(()),
    }
}

fn substitute(v: &Value, vars: &BTreeMap<String, String>) -> Result<Value, StepError> {
    Ok(match v {
        Value::String(s) => Value::String(substitute_str(s, vars)?),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| Ok((k.clone(), substitute(v, vars)?)))
                .collect::<Result<_, StepError>>()?,
        ),
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|v| substitute(v, vars))
                .collect::<Result<_, StepError>>()?,
        ),
        other => other.clone(),
    })
}

/// `${NAME}` replaced by its variable; an unknown name is an error that says how to set it.
fn substitute_str(s: &str, vars: &BTreeMap<String, String>) -> Result<String, StepError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[i..]);
            return Ok(out);
        };
        let name = &after[..end];
        // Variables are upper-case names, so that JavaScript's `${x}` in template literals
        // stays as it is.
        let valid = name.as_bytes().first().is_some_and(u8::is_ascii_uppercase)
            && name
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
        if !valid {
            out.push_str("${");
            rest = after;
            continue;
        }
        match vars.get(name) {
            Some(v) => out.push_str(v),
            None => {
                return Err(StepError::Unset {
                    name: name.to_string(),
                    why: String::new(),
                });
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_built_in_files_parse() {
        for name in ["reference", "synthetic"] {
            let f = load(name, &BTreeMap::new(), &|_, _| Some("/repo".into())).unwrap();
            assert!(f.tasks.len() >= 3, "{name}");
        }
    }

    #[test]
    fn variables_are_replaced_and_a_missing_one_says_how_to_set_it() {
        let vars = BTreeMap::from([("A".to_string(), "x".to_string())]);
        assert_eq!(substitute_str("${A}/${A}", &vars).unwrap(), "x/x");
        assert_eq!(substitute_str("`${a b}`", &vars).unwrap(), "`${a b}`");
        assert_eq!(
            substitute_str("`${dir}/${A}`", &vars).unwrap(),
            "`${dir}/x`"
        );
        let e = substitute_str("${B}", &vars).unwrap_err().to_string();
        assert!(e.contains("--var B=VALUE"), "{e}");
    }

    #[test]
    fn references_take_values_from_earlier_results() {
        let results = vec![
            (None, "Allowed directories:\n/data/root\n".to_string()),
            (Some(json!({"items": [{"id": "a1"}]})), "{}".to_string()),
        ];
        let args = json!({"path": {"$from": 0, "match": "(?m)^(/\\S+)", "format": "{}/docs"},
                          "id": {"$from": 1, "pointer": "/items/0/id"}});
        let Value::Object(args) = args else { panic!() };
        let out = resolve_args(&args, &results).unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"path": "/data/root/docs", "id": "a1"})
        );
        let bad = json!({"x": {"$from": 1, "pointer": "/nope"}});
        let Value::Object(bad) = bad else { panic!() };
        assert!(matches!(
            resolve_args(&bad, &results),
            Err(StepError::NothingAt { from: 1, .. })
        ));
        let text = json!({"x": {"$from": 0, "pointer": "/a"}});
        let Value::Object(text) = text else { panic!() };
        assert!(matches!(
            resolve_args(&text, &results),
            Err(StepError::NotJson { from: 0, .. })
        ));
    }

    #[test]
    fn a_reference_to_a_later_step_is_refused() {
        let text = r#"{"tasks": [{"name": "t", "prompt": "p", "code": {"language": "ts", "source": "1"},
            "direct": [{"server": "s", "tool": "t", "arguments": {"a": {"$from": 0}}}]}]}"#;
        let e = parse("f", text, &BTreeMap::new(), &|_, _| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("earlier step"), "{e}");
    }

    /// A variable may come from a configured server's arguments; `--var` wins; a server that
    /// is not configured (or lacks the flag) leaves it unset, and its error says why.
    #[test]
    fn a_variable_may_come_from_a_configured_servers_arguments() {
        let text = r#"{"vars": {"REPO": {"serverArg": {"server": "vcs", "after": "-C"}}},
            "tasks": [{"name": "t", "prompt": "p", "code": {"language": "py", "source": "'${REPO}'"},
            "direct": [{"server": "vcs", "tool": "log", "arguments": {"at": "${REPO}/x"}}]}]}"#;
        let args = |server: &str, flag: &str| {
            (server == "vcs" && flag == "-C").then(|| "/srv/checkout".to_string())
        };
        let f = parse("f", text, &BTreeMap::new(), &args).unwrap();
        assert_eq!(f.tasks[0].direct[0].arguments["at"], "/srv/checkout/x");
        assert_eq!(f.tasks[0].code, "'/srv/checkout'");
        let over = BTreeMap::from([("REPO".to_string(), "/mine".to_string())]);
        let f = parse("f", text, &over, &|_, _| None).unwrap();
        assert_eq!(f.tasks[0].code, "'/mine'");
        let e = parse("f", text, &BTreeMap::new(), &|_, _| None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--var REPO=VALUE") && e.contains("\"-C\" of the configured server \"vcs\""),
            "{e}"
        );
        // A value of another shape is a parse error, not silently ignored.
        let bad = text.replace("serverArg", "serverArgs");
        assert!(parse("f", &bad, &BTreeMap::new(), &args).is_err());
    }
}
