//! Stand-ins for the MCP servers the product line's documents name and we do not have
//! (`tests/seeds/`, issue #51), and a path-mapping proxy in front of a real one.
//!
//! The documents' examples call `zen` (`codereview`, `thinkdeep`), `git` (`commit`, `push`),
//! `playwright` (`launch`, `navigate`, `evaluate`) and a `notion-workspace` (`query_resources`,
//! `list_topics`). Each stand-in lists those tools with schemas that accept every argument
//! shape the documents pass, and answers plausibly in the shape the documents read (zen: JSON
//! text with `suggestions` and `issues`; notion: JSON arrays; git and playwright: plain text).
//!
//! [`Proxy`] serves a real server (the reference filesystem server) through a root: every
//! absolute `path`-like argument `/p` becomes `ROOT/p` on the way in, and `ROOT` is removed
//! from the answer on the way out, so `/src/auth.ts` and `/tmp/data.json` in an example's code
//! reach files of a temporary directory, as the documents' "paths aside" allows.
//!
//! Both append each call they receive (server, tool, arguments as the code sent them) as one
//! JSON line to the file `STANDIN_OUTBOX` names, so a test sees what reached the upstream.

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler};
use serde_json::{Value, json};

/// The environment variable naming the file each call is recorded in (one JSON line each).
pub const OUTBOX_ENV: &str = "STANDIN_OUTBOX";

/// The stand-ins, by the name the documents give the server.
pub const NAMES: &[&str] = &["zen", "git", "playwright", "notion-workspace"];

fn record(server: &str, tool: &str, args: &Value) {
    use std::io::Write;
    let Some(path) = std::env::var_os(OUTBOX_ENV) else {
        return;
    };
    let line = json!({"server": server, "tool": tool, "args": args});
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{line}");
    }
}

fn schema(properties: Value, required: &[&str]) -> Arc<serde_json::Map<String, Value>> {
    let v = json!({"type": "object", "properties": properties, "required": required});
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

fn text(t: impl Into<String>) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResult::success(vec![ContentBlock::text(t.into())]).into())
}

/// One stand-in server.
#[derive(Debug, Clone)]
pub struct StandIn {
    name: String,
}

impl StandIn {
    /// The stand-in for `name` (one of [`NAMES`]), or `None`.
    pub fn new(name: &str) -> Option<Self> {
        NAMES.contains(&name).then(|| StandIn {
            name: name.to_string(),
        })
    }

    fn tools(&self) -> Vec<Tool> {
        let s = |p: Value, r: &[&str]| schema(p, r);
        match self.name.as_str() {
            "zen" => vec![
                Tool::new(
                    "codereview",
                    "Reviews code: {code, language?} or a workflow step {step, code?, step_number, total_steps}; answers JSON {status, suggestions, issues}.",
                    s(
                        json!({
                            "code": {"type": "string", "description": "The code to review."},
                            "language": {"type": "string"},
                            "step": {"type": "string"},
                            "step_number": {"type": "integer"},
                            "total_steps": {"type": "integer"},
                            "next_step_required": {"type": "boolean"},
                            "findings": {"type": "string"},
                            "model": {"type": "string"}
                        }),
                        &[],
                    ),
                ),
                Tool::new(
                    "thinkdeep",
                    "Thinks a problem through: {problem, model?} or a workflow step {step, step_number, total_steps, next_step_required, findings, model?}; answers JSON {status, findings, recommendations}.",
                    s(
                        json!({
                            "problem": {"type": "string"},
                            "step": {"type": "string"},
                            "step_number": {"type": "integer"},
                            "total_steps": {"type": "integer"},
                            "next_step_required": {"type": "boolean"},
                            "findings": {"type": "string"},
                            "model": {"type": "string"}
                        }),
                        &[],
                    ),
                ),
            ],
            "git" => vec![
                Tool::new(
                    "commit",
                    "Commits the staged changes with {message}.",
                    s(json!({"message": {"type": "string"}}), &["message"]),
                ),
                Tool::new(
                    "push",
                    "Pushes the current branch.",
                    s(
                        json!({"remote": {"type": "string"}, "branch": {"type": "string"}}),
                        &[],
                    ),
                ),
            ],
            "playwright" => vec![
                Tool::new(
                    "launch",
                    "Launches a browser.",
                    s(json!({"headless": {"type": "boolean"}}), &[]),
                ),
                Tool::new(
                    "navigate",
                    "Opens {url} in the browser.",
                    s(json!({"url": {"type": "string"}}), &["url"]),
                ),
                Tool::new(
                    "evaluate",
                    "Evaluates {script} in the page; answers its value as text.",
                    s(json!({"script": {"type": "string"}}), &["script"]),
                ),
            ],
            _ => vec![
                Tool::new(
                    "query_resources",
                    "Search and filter resources from the database: {limit?, topics?}; answers a JSON array of {id, title, type, url, topics}.",
                    s(
                        json!({
                            "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                            "topics": {"type": "array", "items": {"type": "string"}}
                        }),
                        &[],
                    ),
                ),
                Tool::new(
                    "list_topics",
                    "Lists the workspace's topics: a JSON array of {name, resources}.",
                    s(json!({}), &[]),
                ),
            ],
        }
    }

    fn answer(&self, tool: &str, args: &Value) -> Result<CallToolResponse, ErrorData> {
        let str_arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default();
        match (self.name.as_str(), tool) {
            ("zen", "codereview") => {
                let code = str_arg("code");
                let lines = code.lines().count();
                text(
                    json!({
                        "status": "review_complete",
                        "step": str_arg("step"),
                        "suggestions": format!(
                            "// Reviewed {lines} lines: replace the timing-attack prone `===` on secrets.\n{code}"
                        ),
                        "issues": [{
                            "severity": "high",
                            "line": 1,
                            "description": "token compared with === (timing-attack)"
                        }],
                        "reviewed_chars": code.chars().count()
                    })
                    .to_string(),
                )
            }
            ("zen", "thinkdeep") => {
                let question = if args.get("problem").is_some() {
                    str_arg("problem")
                } else {
                    str_arg("step")
                };
                text(
                    json!({
                        "status": "analysis_complete",
                        "step_number": args.get("step_number").cloned().unwrap_or(json!(1)),
                        "question": question,
                        "findings": "The inner loop recomputes a sum it could carry.",
                        "recommendations": ["Carry the running sum", "Sort once, outside the loop"],
                        "model": args.get("model").cloned().unwrap_or(json!("default"))
                    })
                    .to_string(),
                )
            }
            ("git", "commit") => {
                let first = str_arg("message").lines().next().unwrap_or_default();
                text(format!("[main 5eed051] {first}\n 1 file changed"))
            }
            ("git", "push") => text("Everything up-to-date"),
            ("playwright", "launch") => text("Browser launched"),
            ("playwright", "navigate") => text(format!("Navigated to {}", str_arg("url"))),
            ("playwright", "evaluate") => text(if str_arg("script") == "document.title" {
                "Example Domain"
            } else {
                "null"
            }),
            ("notion-workspace", "query_resources") => {
                let topics: Vec<&str> = args
                    .get("topics")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let limit = args
                    .get("limit")
                    .and_then(Value::as_u64)
                    .and_then(|l| usize::try_from(l).ok())
                    .unwrap_or(100);
                let all = resources();
                let picked: Vec<&Value> = all
                    .iter()
                    .filter(|r| {
                        topics.is_empty()
                            || r["topics"].as_array().is_some_and(|t| {
                                t.iter()
                                    .any(|t| topics.contains(&t.as_str().unwrap_or_default()))
                            })
                    })
                    .take(limit)
                    .collect();
                text(Value::from(picked.into_iter().cloned().collect::<Vec<_>>()).to_string())
            }
            ("notion-workspace", "list_topics") => text(
                json!([
                    {"name": "AI", "resources": 4},
                    {"name": "Databases", "resources": 2},
                    {"name": "Open AI models", "resources": 1},
                    {"name": "Gardening", "resources": 1}
                ])
                .to_string(),
            ),
            _ => Err(ErrorData::invalid_params(
                format!("{} has no tool {tool}", self.name),
                None,
            )),
        }
    }
}

/// The notion workspace's resources.
fn resources() -> Vec<Value> {
    let kinds = [
        "Video", "Article", "Podcast", "Video", "Book", "Video", "Article",
    ];
    let topics = [
        vec!["AI"],
        vec!["AI", "Databases"],
        vec!["Gardening"],
        vec!["AI"],
        vec!["Databases"],
        vec!["Open AI models", "AI"],
        vec!["AI"],
    ];
    kinds
        .iter()
        .zip(topics)
        .enumerate()
        .map(|(i, (kind, topics))| {
            json!({
                "id": format!("res-{i}"),
                "title": format!("{kind} number {i}"),
                "type": kind,
                "url": format!("https://notion.example/res-{i}"),
                "topics": topics
            })
        })
        .collect()
}

impl ServerHandler for StandIn {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                format!("{}-standin", self.name),
                "0.0.0",
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        record(&self.name, &request.name, &args);
        self.answer(&request.name, &args)
    }
}

/// Argument names that hold a path (the filesystem server's).
const PATH_ARGS: &[&str] = &["path", "source", "destination", "paths"];

/// A real server seen through a root: absolute paths in, the root removed from answers out.
#[derive(Clone)]
pub struct Proxy {
    name: String,
    root: String,
    upstream: Arc<RunningService<RoleClient, ()>>,
}

impl Proxy {
    /// Serves `upstream` (already initialized) as `name`, mapping absolute paths under `root`.
    pub fn new(name: &str, root: PathBuf, upstream: RunningService<RoleClient, ()>) -> Self {
        Proxy {
            name: name.to_string(),
            root: root.to_string_lossy().trim_end_matches('/').to_string(),
            upstream: Arc::new(upstream),
        }
    }

    fn map_out<T: serde::Serialize + serde::de::DeserializeOwned>(&self, t: T) -> T {
        map_out(&self.root, t)
    }
}

/// Takes the absolute paths among the path arguments of `args` under `root` (relative ones
/// are left to the server, which resolves them against its root).
pub fn map_in(root: &str, args: &mut serde_json::Map<String, Value>) {
    fn one(root: &str, v: &mut Value) {
        match v {
            Value::String(s) if s.starts_with('/') => *s = format!("{root}{s}"),
            Value::Array(items) => items.iter_mut().for_each(|i| one(root, i)),
            _ => {}
        }
    }
    for key in PATH_ARGS {
        if let Some(v) = args.get_mut(*key) {
            one(root, v);
        }
    }
}

/// `t` with `root` removed wherever it appears (paths in answers, tool descriptions).
pub fn map_out<T: serde::Serialize + serde::de::DeserializeOwned>(root: &str, t: T) -> T {
    let Ok(text) = serde_json::to_string(&t) else {
        return t;
    };
    // The root as it appears inside a JSON string (no character of it needs escaping).
    let mapped = text.replace(root, "");
    serde_json::from_str(&mapped).unwrap_or(t)
}

impl ServerHandler for Proxy {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(format!("{}-proxy", self.name), "0.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .upstream
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(ListToolsResult::with_all_items(self.map_out(tools)))
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        record(&self.name, &request.name, &Value::Object(args.clone()));
        let mut mapped = args;
        map_in(&self.root, &mut mapped);
        request.arguments = Some(mapped);
        let result = self
            .upstream
            .peer()
            .call_tool(request)
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(self.map_out(result).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_go_under_the_root_and_come_back_without_it() {
        let mut args = json!({"path": "/src/auth.ts", "paths": ["/a", "b"], "content": "/x",
                              "source": "./rel", "destination": "/tmp/d"})
        .as_object()
        .cloned()
        .unwrap();
        map_in("/tmp/r", &mut args);
        assert_eq!(
            Value::Object(args),
            json!({"path": "/tmp/r/src/auth.ts", "paths": ["/tmp/r/a", "b"], "content": "/x",
                   "source": "./rel", "destination": "/tmp/r/tmp/d"})
        );
        let answer = json!({"content": [{"type": "text", "text": "Successfully wrote to /tmp/r/src/a.ts"}],
                            "structuredContent": {"content": "/tmp/r/src/a.ts\n/tmp/r/b"}});
        assert_eq!(
            map_out("/tmp/r", answer),
            json!({"content": [{"type": "text", "text": "Successfully wrote to /src/a.ts"}],
                   "structuredContent": {"content": "/src/a.ts\n/b"}})
        );
    }

    #[test]
    fn stand_ins_answer_in_the_shapes_the_documents_read() {
        let zen = StandIn::new("zen").unwrap();
        let text_of = |r: Result<CallToolResponse, ErrorData>| {
            let Ok(CallToolResponse::Complete(r)) = r else {
                panic!("not a complete answer")
            };
            r.content[0].as_text().unwrap().text.clone()
        };
        let review: Value = serde_json::from_str(&text_of(
            zen.answer("codereview", &json!({"code": "a === b // timing-attack"})),
        ))
        .unwrap();
        assert!(review["suggestions"].as_str().unwrap().contains("a === b"));
        assert!(review["issues"].as_array().is_some_and(|i| !i.is_empty()));
        let notion = StandIn::new("notion-workspace").unwrap();
        let ai: Value = serde_json::from_str(&text_of(
            notion.answer("query_resources", &json!({"topics": ["AI"], "limit": 2})),
        ))
        .unwrap();
        assert_eq!(ai.as_array().unwrap().len(), 2);
        assert!(
            ai.as_array()
                .unwrap()
                .iter()
                .all(|r| r["topics"].as_array().unwrap().contains(&json!("AI")))
        );
        assert!(zen.answer("nosuch", &json!({})).is_err());
        assert!(StandIn::new("nosuch").is_none());
    }
}
