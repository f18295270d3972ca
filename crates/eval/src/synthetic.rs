//! The built-in synthetic catalog as real MCP servers: `code-executor-mcp __synthetic-server
//! NAME` serves one server of [`tools::catalog::synthetic`] (GitHub, GitLab, Jira, ... with
//! realistic names, descriptions and schemas) over stdio, and answers every call with
//! deterministic, verbose records, as such APIs do. `eval --tasks synthetic` configures the
//! first [`SYNTHETIC_TOOLS`] tools' servers this way, so the context cost of hundreds of tools
//! can be measured with nothing installed.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use tools::config::{Config, ServerSpec, Transport};
use tools::defaults::SYNTHETIC_SERVER_ARG;

/// Tools of the synthetic catalog `eval` configures (whole servers, at least this many).
pub(crate) const SYNTHETIC_TOOLS: usize = 500;
/// Records a `list` or `search` call answers.
const PAGE: usize = 25;

/// The synthetic servers, as (name, tools).
fn servers() -> Vec<(String, Arc<Vec<Tool>>)> {
    tools::catalog::synthetic::catalog(SYNTHETIC_TOOLS)
}

/// A config with the synthetic servers, each started from our own binary.
pub(crate) fn config(exe: &std::path::Path) -> Config {
    let servers = servers()
        .into_iter()
        .map(|(name, _)| {
            let spec = ServerSpec {
                name: name.clone(),
                transport: Transport::Stdio {
                    command: exe.display().to_string(),
                    args: vec![SYNTHETIC_SERVER_ARG.into(), name.clone()],
                    env: BTreeMap::new(),
                    cwd: None,
                },
                disabled: false,
                source: "(built-in synthetic catalog)".into(),
                client: "eval",
                oauth: None,
                tool_filter: None,
                startup_timeout: None,
                tool_timeout: None,
                not_applied: Vec::new(),
                referenced: Vec::new(),
            };
            (name, spec)
        })
        .collect();
    Config {
        servers,
        ..Config::default()
    }
}

/// One synthetic server.
#[derive(Clone)]
struct Synthetic {
    name: String,
    tools: Arc<Vec<Tool>>,
}

/// A tool name's words, whatever its spelling (snake, camel, kebab).
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in name.chars() {
        if c == '_' || c == '-' {
            out.push(std::mem::take(&mut cur));
        } else if c.is_ascii_uppercase() {
            out.push(std::mem::take(&mut cur));
            cur.push(c.to_ascii_lowercase());
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out.retain(|w| !w.is_empty());
    out
}

/// A small deterministic hash (FNV-1a).
fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

const STATUSES: [&str; 4] = ["open", "in_progress", "blocked", "closed"];
const PRIORITIES: [&str; 4] = ["low", "medium", "high", "critical"];
const PEOPLE: [&str; 6] = ["ana", "bo", "chen", "dana", "eli", "fatima"];

/// Record `i` of `entity` on `server`: the verbose shape APIs answer with.
fn record(server: &str, entity: &str, i: usize) -> Value {
    let h = hash(&format!("{server}/{entity}/{i}"));
    let pick = |n: u64, shift: u32| ((h >> shift) % n) as usize;
    let owner = PEOPLE[pick(6, 8)];
    json!({
        "id": format!("{entity}-{:04}", 1000 + i),
        "name": format!("{} {}", entity.replace('_', " "), 1000 + i),
        "status": STATUSES[pick(4, 0)],
        "priority": PRIORITIES[pick(4, 4)],
        "owner": {"login": owner, "email": format!("{owner}@example.com")},
        "labels": [format!("team-{}", pick(5, 12)), format!("area-{}", pick(7, 16))],
        "createdAt": format!("2026-{:02}-{:02}T{:02}:{:02}:00Z", 1 + pick(9, 20), 1 + pick(28, 24), pick(24, 28), pick(60, 32)),
        "updatedAt": format!("2026-10-{:02}T{:02}:{:02}:00Z", 1 + pick(28, 36), pick(24, 40), pick(60, 44)),
        "url": format!("https://{server}.example.com/{entity}/{}", 1000 + i),
        "description": format!(
            "This {} was filed by {owner} and tracks work for team {}. It has {} comments and {} watchers; \
             see the linked documents for the history of the discussion.",
            entity.replace('_', " "), pick(5, 12), pick(40, 48), pick(12, 52)
        ),
        "metrics": {"comments": pick(40, 48), "watchers": pick(12, 52), "score": pick(1000, 56) as f64 / 10.0},
    })
}

impl Synthetic {
    fn answer(&self, tool: &str, args: &serde_json::Map<String, Value>) -> Value {
        let w = words(tool);
        let verb = w.first().map_or("", String::as_str);
        let entity = w.get(1..).map(|r| r.join("_")).unwrap_or_default();
        let singular = entity.trim_end_matches('s').to_string();
        let singular = if entity.ends_with("ies") {
            format!("{}y", entity.trim_end_matches("ies"))
        } else {
            singular
        };
        match verb {
            "list" => {
                let limit = args
                    .get("limit")
                    .and_then(Value::as_u64)
                    .map_or(PAGE, |l| (l as usize).clamp(1, PAGE));
                let items: Vec<Value> = (0..limit)
                    .map(|i| record(&self.name, &singular, i))
                    .collect();
                json!({"items": items, "nextCursor": "page-2", "total": 240})
            }
            "search" => {
                let q = args
                    .get("query")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                let items: Vec<Value> = (0..4 * PAGE)
                    .map(|i| record(&self.name, &singular, i))
                    .filter(|r| {
                        q.split_whitespace()
                            .all(|t| r.to_string().to_ascii_lowercase().contains(t))
                    })
                    .take(PAGE)
                    .collect();
                json!({"items": items, "query": q})
            }
            "get" | "update" | "delete" | "create" => {
                let id = args
                    .iter()
                    .find(|(k, _)| k.ends_with("_id") || k.ends_with("Id"))
                    .and_then(|(_, v)| v.as_str())
                    .unwrap_or("");
                let n = id
                    .rsplit('-')
                    .next()
                    .and_then(|n| n.parse::<usize>().ok())
                    .map_or(0, |n| n.saturating_sub(1000));
                let mut r = record(&self.name, &entity, n);
                if verb == "create"
                    && let Some(name) = args.get("name")
                {
                    r["name"] = name.clone();
                    r["status"] = json!("open");
                }
                if verb == "delete" {
                    json!({"deleted": true, "id": r["id"]})
                } else {
                    r
                }
            }
            _ => json!({"ok": true, "tool": tool, "server": self.name}),
        }
    }
}

impl ServerHandler for Synthetic {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(self.name.clone(), "0.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items((*self.tools).clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.tools.iter().any(|t| t.name == request.name) {
            return Err(ErrorData::invalid_params(
                format!("no tool {} on {}", request.name, self.name),
                None,
            ));
        }
        let args = request.arguments.unwrap_or_default();
        // A required argument missing is the tool's error, as real APIs answer it.
        let required = self
            .tools
            .iter()
            .find(|t| t.name == request.name)
            .and_then(|t| t.input_schema.get("required").cloned())
            .and_then(|r| r.as_array().cloned())
            .unwrap_or_default();
        if let Some(missing) = required
            .iter()
            .filter_map(Value::as_str)
            .find(|k| !args.contains_key(*k))
        {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "missing required argument {missing:?}"
            ))])
            .into());
        }
        let v = self.answer(&request.name, &args);
        Ok(CallToolResult::success(vec![ContentBlock::text(v.to_string())]).into())
    }
}

/// `code-executor-mcp __synthetic-server NAME`.
pub fn serve_synthetic_main() -> ExitCode {
    let Some(name) = std::env::args().nth(2) else {
        return ExitCode::from(2);
    };
    let Some((_, tools)) = servers().into_iter().find(|(n, _)| *n == name) else {
        return ExitCode::from(2);
    };
    faces::demo::serve_on_stdio(Synthetic { name, tools })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_words_whatever_their_style() {
        assert_eq!(words("list_pull_requests"), ["list", "pull", "requests"]);
        assert_eq!(words("listPullRequests"), ["list", "pull", "requests"]);
        assert_eq!(words("list-pull-requests"), ["list", "pull", "requests"]);
    }

    #[test]
    fn the_catalog_has_hundreds_of_tools_and_answers_are_deterministic() {
        let all = servers();
        let n: usize = all.iter().map(|(_, t)| t.len()).sum();
        assert!(n >= SYNTHETIC_TOOLS, "{n}");
        let s = Synthetic {
            name: all[0].0.clone(),
            tools: all[0].1.clone(),
        };
        let a = s.answer("list_issues", &serde_json::Map::new());
        assert_eq!(a["items"].as_array().map(Vec::len), Some(PAGE));
        assert_eq!(a, s.answer("list_issues", &serde_json::Map::new()));
    }
}
