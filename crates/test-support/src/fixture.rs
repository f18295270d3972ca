//! A fixture MCP server with one tool per behaviour the tests need.

use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, InitializeResult, ServerCapabilities,
    ServerConfig,
};
use rmcp::{Json, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct MessageArgs {
    /// Text to send back.
    pub message: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddArgs {
    pub a: f64,
    pub b: f64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Sum {
    pub sum: f64,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SleepArgs {
    pub ms: u64,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct NameArgs {
    /// Name of an environment variable.
    pub name: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct BytesArgs {
    pub bytes: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RendezvousArgs {
    /// Calls sharing this key wait for each other.
    pub key: String,
    /// How many calls must be in flight together before any returns.
    pub n: usize,
}

/// Calls that arrived at each rendezvous key.
static RENDEZVOUS: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<String, usize>>> =
    std::sync::LazyLock::new(Default::default);

#[derive(Debug, Clone)]
pub struct Fixture {
    tool_router: ToolRouter<Self>,
    name: String,
}

impl Fixture {
    pub fn new(name: &str) -> Self {
        Fixture {
            tool_router: Self::tool_router(),
            name: name.to_string(),
        }
    }
}

#[tool_router]
impl Fixture {
    #[tool(description = "Echo the message back as text.")]
    async fn echo(&self, Parameters(a): Parameters<MessageArgs>) -> String {
        format!("Echo: {}", a.message)
    }

    #[tool(description = "Add two numbers; structured result.")]
    async fn add(&self, Parameters(a): Parameters<AddArgs>) -> Json<Sum> {
        Json(Sum { sum: a.a + a.b })
    }

    #[tool(description = "Always fails with the given message (isError).")]
    async fn fail(&self, Parameters(a): Parameters<MessageArgs>) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(a.message)])
    }

    #[tool(description = "Sleep for ms milliseconds, then answer.")]
    async fn sleep(&self, Parameters(a): Parameters<SleepArgs>) -> String {
        tokio::time::sleep(Duration::from_millis(a.ms)).await;
        format!("slept {} ms", a.ms)
    }

    #[tool(description = "The value of an environment variable of this server process, or null.")]
    async fn env(&self, Parameters(a): Parameters<NameArgs>) -> String {
        serde_json::to_string(&std::env::var(&a.name).ok()).unwrap_or_default()
    }

    #[tool(description = "Exit the server process abruptly.")]
    async fn crash(&self) -> String {
        std::process::exit(3)
    }

    #[tool(description = "A text block and a 1x1 PNG image.")]
    async fn image(&self) -> CallToolResult {
        CallToolResult::success(vec![
            ContentBlock::text("a picture"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
        ])
    }

    #[tool(description = "A text of the given size.")]
    async fn big(&self, Parameters(a): Parameters<BytesArgs>) -> String {
        "x".repeat(a.bytes)
    }

    #[tool(name = "get.page", description = "A tool whose name has a dot.")]
    async fn get_page(&self) -> String {
        "page".into()
    }

    #[tool(name = "dash-tool", description = "A tool whose name has a dash.")]
    async fn dash_tool(&self) -> String {
        "dash".into()
    }

    #[tool(
        description = "Returns once n calls with the same key are in flight at once; fails after 5 s. Proves concurrency without timing."
    )]
    async fn rendezvous(&self, Parameters(a): Parameters<RendezvousArgs>) -> CallToolResult {
        let arrived = |add: usize| {
            let mut map = RENDEZVOUS.lock().expect("lock");
            let count = map.entry(a.key.clone()).or_insert(0);
            *count += add;
            *count
        };
        arrived(1);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        // Counts only grow, so every waiter sees the n-th arrival.
        while arrived(0) < a.n {
            if tokio::time::Instant::now() > deadline {
                return CallToolResult::error(vec![ContentBlock::text(format!(
                    "only {} of {} calls for {} arrived together",
                    arrived(0),
                    a.n,
                    a.key
                ))]);
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        CallToolResult::success(vec![ContentBlock::text("met")])
    }

    #[tool(description = "The name this fixture was started with.")]
    async fn whoami(&self) -> String {
        self.name.clone()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("fixture", "0.0.0"))
    }
}
