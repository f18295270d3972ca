//! Model-driven runs (`eval --model`): the configured provider (`llm.provider`: the Anthropic
//! Messages API or an OpenAI-compatible chat endpoint) does each task with tool calling, in
//! both modes. Direct: it is given every upstream tool (named `server__tool`) and its calls go
//! to the upstreams through the runtime's door, as pinned direct tools' calls (the settings'
//! rules, approvals and audit hold; a refusal is the tool error a pinned call gets). Code: it is given our `tools/list` and its calls go to our server. A
//! task succeeds when the model's final answer holds what the task expects. Tokens are what
//! the provider reports; turns are model calls, bounded by `--max-turns`.

use std::time::Instant;

use rmcp::model::Tool;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::error::EvalError;
use super::measure::round_ms;
use super::scripted::Setup;
use super::sides::{Ours, context_text};
use super::tasks::Task;
use policy::llm::{Api, ProviderSettings};

/// Default bound on model turns per task and mode.
pub(crate) const DEFAULT_MAX_TURNS: usize = 12;
/// Tokens a model may write in one turn.
const MAX_ANSWER_TOKENS: u32 = 4096;
/// Largest provider answer read, in bytes.
const MAX_ANSWER_BYTES: usize = 4 << 20;
/// Longest tool name providers accept.
const MAX_TOOL_NAME: usize = 64;

const SYSTEM: &str = "You are an agent doing a task for a user with the tools you are given. \
Call tools as needed; when you have what the task asks for, answer with it in plain text and \
call no more tools.";

/// One mode of one task, driven by the model.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ModelSide {
    /// The model answered within the turn bound, and the answer held what the task expects.
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// As the provider reported them, summed over turns.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Model calls.
    pub turns: usize,
    pub tool_calls: usize,
    /// Wall time of the whole conversation (model and tools), ms.
    pub ms: f64,
    pub answer: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ModelRow {
    pub task: String,
    pub direct: ModelSide,
    pub code: ModelSide,
}

/// A tool call the model asked for.
#[derive(Debug, Clone)]
struct Call {
    id: String,
    name: String,
    args: Map<String, Value>,
}

/// One message of a conversation, whatever the API.
enum Msg {
    User(String),
    Assistant { text: String, calls: Vec<Call> },
    Results(Vec<(String, String, bool)>),
}

/// A model's turn.
struct Reply {
    text: String,
    calls: Vec<Call>,
    input_tokens: u64,
    output_tokens: u64,
}

/// Where a tool the model sees goes.
enum Route {
    Upstream { server: String, tool: String },
    Ours,
}

/// A tool name providers accept: `[a-zA-Z0-9_-]`, at most 64 characters.
fn tool_name(server: &str, tool: &str) -> String {
    let raw = format!("{server}__{tool}");
    let mut s: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    s.truncate(MAX_TOOL_NAME);
    s
}

struct Provider<'a> {
    p: &'a ProviderSettings,
    key: Option<String>,
    http: reqwest::Client,
}

impl Provider<'_> {
    fn body(&self, tools: &[Tool], msgs: &[Msg]) -> (String, Value) {
        let base = self.p.base_url();
        match self.p.api {
            Api::Anthropic => {
                let tools: Vec<Value> = tools
                    .iter()
                    .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
                    .collect();
                let messages: Vec<Value> = msgs
                    .iter()
                    .map(|m| match m {
                        Msg::User(t) => json!({"role": "user", "content": t}),
                        Msg::Assistant { text, calls } => {
                            let mut content = Vec::new();
                            if !text.is_empty() {
                                content.push(json!({"type": "text", "text": text}));
                            }
                            content.extend(calls.iter().map(|c| {
                                json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.args})
                            }));
                            json!({"role": "assistant", "content": content})
                        }
                        Msg::Results(rs) => json!({"role": "user", "content": rs.iter().map(|(id, text, err)| {
                            json!({"type": "tool_result", "tool_use_id": id, "content": text, "is_error": err})
                        }).collect::<Vec<_>>()}),
                    })
                    .collect();
                (
                    format!("{base}/v1/messages"),
                    json!({"model": self.p.model, "max_tokens": MAX_ANSWER_TOKENS, "system": SYSTEM,
                           "tools": tools, "messages": messages}),
                )
            }
            Api::Openai => {
                let tools: Vec<Value> = tools
                    .iter()
                    .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}))
                    .collect();
                let mut messages = vec![json!({"role": "system", "content": SYSTEM})];
                for m in msgs {
                    match m {
                        Msg::User(t) => messages.push(json!({"role": "user", "content": t})),
                        Msg::Assistant { text, calls } => {
                            let mut a = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                            if !calls.is_empty() {
                                a["tool_calls"] = calls.iter().map(|c| json!({"id": c.id, "type": "function",
                                    "function": {"name": c.name, "arguments": Value::Object(c.args.clone()).to_string()}})).collect();
                            }
                            messages.push(a);
                        }
                        Msg::Results(rs) => messages.extend(rs.iter().map(|(id, text, _)| {
                            json!({"role": "tool", "tool_call_id": id, "content": text})
                        })),
                    }
                }
                (
                    format!("{base}/chat/completions"),
                    json!({"model": self.p.model, "max_tokens": MAX_ANSWER_TOKENS, "tools": tools, "messages": messages}),
                )
            }
        }
    }

    async fn turn(&self, tools: &[Tool], msgs: &[Msg]) -> Result<Reply, TurnError> {
        let (url, body) = self.body(tools, msgs);
        let mut req = self.http.post(&url).json(&body).timeout(self.p.timeout());
        req = match (self.p.api, &self.key) {
            (Api::Anthropic, k) => {
                let r = req.header("anthropic-version", "2023-06-01");
                match k {
                    Some(k) => r.header("x-api-key", k),
                    None => r,
                }
            }
            (Api::Openai, Some(k)) => req.bearer_auth(k),
            (Api::Openai, None) => req,
        };
        let mut resp = req.send().await.map_err(|e| TurnError::Http {
            url: url.clone(),
            source: e.without_url(),
        })?;
        let status = resp.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| TurnError::Http {
            url: url.clone(),
            source: e.without_url(),
        })? {
            if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(TurnError::TooBig(url));
            }
            bytes.extend_from_slice(&chunk);
        }
        let v: Value = serde_json::from_slice(&bytes).map_err(|_| TurnError::NotJson {
            url: url.clone(),
            status,
            head: String::from_utf8_lossy(&bytes).chars().take(200).collect(),
        })?;
        if !status.is_success() {
            let msg = v["error"]["message"]
                .as_str()
                .map_or_else(|| v.to_string(), str::to_string);
            return Err(TurnError::Refused { url, status, msg });
        }
        let args_of = |a: &Value| match a {
            Value::Object(m) => m.clone(),
            Value::String(s) => serde_json::from_str(s).unwrap_or_default(),
            _ => Map::new(),
        };
        Ok(match self.p.api {
            Api::Anthropic => {
                let blocks = v["content"].as_array().cloned().unwrap_or_default();
                Reply {
                    text: blocks
                        .iter()
                        .filter_map(|b| b["text"].as_str())
                        .collect::<Vec<_>>()
                        .concat(),
                    calls: blocks
                        .iter()
                        .filter(|b| b["type"] == "tool_use")
                        .map(|b| Call {
                            id: b["id"].as_str().unwrap_or_default().to_string(),
                            name: b["name"].as_str().unwrap_or_default().to_string(),
                            args: args_of(&b["input"]),
                        })
                        .collect(),
                    input_tokens: v["usage"]["input_tokens"].as_u64().unwrap_or(0),
                    output_tokens: v["usage"]["output_tokens"].as_u64().unwrap_or(0),
                }
            }
            Api::Openai => {
                let m = &v["choices"][0]["message"];
                Reply {
                    text: m["content"].as_str().unwrap_or_default().to_string(),
                    calls: m["tool_calls"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|c| Call {
                            id: c["id"].as_str().unwrap_or_default().to_string(),
                            name: c["function"]["name"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string(),
                            args: args_of(&c["function"]["arguments"]),
                        })
                        .collect(),
                    input_tokens: v["usage"]["prompt_tokens"].as_u64().unwrap_or(0),
                    output_tokens: v["usage"]["completion_tokens"].as_u64().unwrap_or(0),
                }
            }
        })
    }
}

/// The tools, the routes and the executor of one mode.
struct Mode<'a> {
    tools: Vec<Tool>,
    routes: Vec<(String, Route)>,
    ours: &'a Ours,
}

impl Mode<'_> {
    async fn call(&self, c: &Call) -> (String, bool) {
        match self
            .routes
            .iter()
            .find(|(n, _)| *n == c.name)
            .map(|(_, r)| r)
        {
            None => (format!("no tool named {:?}", c.name), true),
            Some(Route::Upstream { server, tool }) => {
                let r = self
                    .ours
                    .direct(server, tool, c.args.clone())
                    .await
                    .0
                    .into_result();
                (context_text(&r), r.is_error == Some(true))
            }
            Some(Route::Ours) => match self.ours.call(&c.name, c.args.clone()).await.0 {
                Ok(r) => (context_text(&r), r.is_error == Some(true)),
                Err(e) => (e.to_string(), true),
            },
        }
    }

    async fn drive(&self, p: &Provider<'_>, task: &Task, max_turns: usize) -> ModelSide {
        let t = Instant::now();
        let mut msgs = vec![Msg::User(task.prompt.clone())];
        let mut side = ModelSide {
            ok: false,
            error: None,
            input_tokens: 0,
            output_tokens: 0,
            turns: 0,
            tool_calls: 0,
            ms: 0.0,
            answer: String::new(),
        };
        loop {
            if side.turns >= max_turns {
                side.error = Some(format!(
                    "no answer within {max_turns} turns (raise --max-turns)"
                ));
                break;
            }
            side.turns += 1;
            let reply = match p.turn(&self.tools, &msgs).await {
                Ok(r) => r,
                Err(e) => {
                    side.error = Some(format!("the provider failed: {e}"));
                    break;
                }
            };
            side.input_tokens += reply.input_tokens;
            side.output_tokens += reply.output_tokens;
            if reply.calls.is_empty() {
                side.answer = reply.text;
                side.error = task
                    .expect
                    .missing(&side.answer)
                    .map(|m| format!("the answer does not contain the expected {m:?}"));
                side.ok = side.error.is_none();
                break;
            }
            let mut results = Vec::new();
            for c in &reply.calls {
                side.tool_calls += 1;
                let (text, err) = self.call(c).await;
                results.push((c.id.clone(), text, err));
            }
            msgs.push(Msg::Assistant {
                text: reply.text,
                calls: reply.calls,
            });
            msgs.push(Msg::Results(results));
        }
        side.ms = round_ms(t.elapsed().as_secs_f64() * 1e3);
        side
    }
}

/// Drives every task in both modes with the provider `p`.
pub(crate) async fn run_all(
    p: &ProviderSettings,
    tasks: &[Task],
    s: &Setup<'_>,
    our_tools: &[Tool],
    max_turns: usize,
) -> Result<Vec<ModelRow>, EvalError> {
    let (ours, listed) = (s.ours, s.listed);
    let key = p
        .api_key_env
        .as_deref()
        .map(|name| {
            std::env::var(name)
                .ok()
                .filter(|k| !k.is_empty())
                .ok_or_else(|| {
                    EvalError::Model(format!("the provider's key variable {name} is not set"))
                })
        })
        .transpose()?;
    tools::tls::install_tls_provider();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| EvalError::Model(e.to_string()))?;
    let provider = Provider { p, key, http };
    let mut direct_tools = Vec::new();
    let mut routes = Vec::new();
    for (server, tools) in listed {
        for t in tools.iter().flat_map(|t| t.iter()) {
            let name = tool_name(server, &t.name);
            let mut shown = t.clone();
            shown.name = name.clone().into();
            direct_tools.push(shown);
            routes.push((
                name,
                Route::Upstream {
                    server: server.clone(),
                    tool: t.name.to_string(),
                },
            ));
        }
    }
    let direct = Mode {
        tools: direct_tools,
        routes,
        ours,
    };
    let code = Mode {
        tools: our_tools.to_vec(),
        routes: our_tools
            .iter()
            .map(|t| (t.name.to_string(), Route::Ours))
            .collect(),
        ours,
    };
    let mut rows = Vec::new();
    for task in tasks {
        rows.push(ModelRow {
            task: task.name.clone(),
            direct: direct.drive(&provider, task, max_turns).await,
            code: code.drive(&provider, task, max_turns).await,
        });
    }
    Ok(rows)
}

/// Why a turn with the model's provider failed (shown in the report as the side's error).
#[derive(Debug, thiserror::Error)]
enum TurnError {
    #[error("{url}: {source}")]
    Http { url: String, source: reqwest::Error },
    #[error("{0}: the answer is over {MAX_ANSWER_BYTES} bytes")]
    TooBig(String),
    #[error("{url} answered {status} with something that is not JSON: {head}")]
    NotJson {
        url: String,
        status: reqwest::StatusCode,
        head: String,
    },
    #[error("{url} answered {status}: {msg}")]
    Refused {
        url: String,
        status: reqwest::StatusCode,
        msg: String,
    },
}

#[cfg(test)]
mod tests {
    #[test]
    fn tool_names_are_what_providers_accept() {
        assert_eq!(super::tool_name("my.server", "get-x"), "my_server__get-x");
        assert_eq!(super::tool_name(&"s".repeat(80), "t").len(), 64);
    }
}
