//! `code-executor-mcp demo`: a sample program against a small MCP server built into the
//! binary (`code-executor-mcp __demo-server`, a made-up shop), with the token count that code
//! mode saves compared with an agent calling that server's tools directly.

use std::collections::BTreeMap;
use std::process::ExitCode;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, InitializeResult, ServerCapabilities, ServerConfig};
use rmcp::{Json, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::composition::Core;
use crate::options::CoreOptions;
use crate::server::{render_text, tool_definitions};
use crate::tokens::count_tokens;
use policy::principal::Principal;
use runtime::execution::ExecRequest;
use tools::config::{Config, ServerSpec, Settings, Transport};
use tools::console::say;
use tools::defaults::DEMO_SERVER_ARG;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LineItem {
    pub sku: String,
    pub name: String,
    pub quantity: u32,
    pub unit_price: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    pub id: String,
    pub customer_id: String,
    /// open, shipped or cancelled
    pub status: String,
    pub total: f64,
    pub currency: String,
    pub created_at: String,
    pub items: Vec<LineItem>,
    pub shipping_address: String,
    pub notes: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct OrderList {
    pub orders: Vec<Order>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Customer {
    pub id: String,
    pub name: String,
    pub email: String,
    /// bronze, silver or gold
    pub tier: String,
    pub lifetime_value: f64,
    pub since: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ListOrdersArgs {
    /// Only orders with this status: open, shipped or cancelled.
    pub status: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct IdArgs {
    /// The identifier, e.g. C-0042 or P-007.
    pub id: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// Words to look for in product names.
    pub query: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Product {
    pub sku: String,
    pub name: String,
    pub price: f64,
    pub in_stock: u32,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ProductList {
    pub products: Vec<Product>,
}

const PRODUCTS: &[&str] = &[
    "Espresso Machine",
    "Burr Grinder",
    "Milk Frother",
    "Pour-over Kettle",
    "Cold Brew Jar",
    "Tamper",
    "Knock Box",
    "Scale",
    "Filter Papers",
    "Travel Mug",
    "Descaler",
    "Bean Canister",
];
const NAMES: &[&str] = &[
    "Ada Lovelace",
    "Grace Hopper",
    "Alan Turing",
    "Edsger Dijkstra",
    "Barbara Liskov",
    "Donald Knuth",
    "Margaret Hamilton",
    "Ken Thompson",
    "Frances Allen",
    "John McCarthy",
];

/// Deterministic pseudo-random numbers, so the demo prints the same every time.
fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s >> 33
    }
}

fn price(i: usize) -> f64 {
    [
        499.0, 189.0, 59.0, 79.0, 29.0, 35.0, 25.0, 49.0, 9.5, 24.0, 14.0, 19.0,
    ][i % 12]
}

fn orders() -> Vec<Order> {
    let mut r = lcg(7);
    (1..=150)
        .map(|n| {
            let items: Vec<LineItem> = (0..1 + r() % 4)
                .map(|_| {
                    let p = (r() % PRODUCTS.len() as u64) as usize;
                    LineItem {
                        sku: format!("P-{:03}", p + 1),
                        name: PRODUCTS[p].to_string(),
                        quantity: 1 + (r() % 3) as u32,
                        unit_price: price(p),
                    }
                })
                .collect();
            let total = items
                .iter()
                .map(|i| i.unit_price * f64::from(i.quantity))
                .sum::<f64>();
            let status = ["open", "shipped", "shipped", "cancelled", "open"][(r() % 5) as usize];
            Order {
                id: format!("O-{n:04}"),
                customer_id: format!("C-{:04}", 1 + r() % 40),
                status: status.to_string(),
                total: (total * 100.0).round() / 100.0,
                currency: "EUR".into(),
                created_at: format!(
                    "2026-{:02}-{:02}T{:02}:{:02}:00Z",
                    1 + r() % 11,
                    1 + r() % 28,
                    r() % 24,
                    r() % 60
                ),
                items,
                shipping_address: format!(
                    "{} Example Street, {} Springfield",
                    1 + r() % 200,
                    10000 + r() % 89999
                ),
                notes: if r().is_multiple_of(3) {
                    "Leave at the front desk".into()
                } else {
                    String::new()
                },
            }
        })
        .collect()
}

/// The demo MCP server: a small shop.
#[derive(Clone)]
pub struct DemoShop {
    tool_router: ToolRouter<Self>,
}

impl Default for DemoShop {
    fn default() -> Self {
        DemoShop {
            tool_router: Self::tool_router(),
        }
    }
}

#[tool_router]
impl DemoShop {
    #[tool(
        description = "List the shop's orders with their line items, totals and shipping details. Optionally filter by status (open, shipped, cancelled)."
    )]
    async fn list_orders(&self, Parameters(a): Parameters<ListOrdersArgs>) -> Json<OrderList> {
        let orders = orders()
            .into_iter()
            .filter(|o| a.status.as_deref().is_none_or(|s| o.status == s))
            .collect();
        Json(OrderList { orders })
    }

    #[tool(
        description = "Get one customer's profile: name, email, loyalty tier, lifetime value and customer-since date."
    )]
    async fn get_customer(
        &self,
        Parameters(a): Parameters<IdArgs>,
    ) -> Result<Json<Customer>, String> {
        let n: u64 =
            a.id.strip_prefix("C-")
                .and_then(|d| d.parse().ok())
                .filter(|n| (1..=40).contains(n))
                .ok_or_else(|| format!("no customer {}; ids run from C-0001 to C-0040", a.id))?;
        let mut r = lcg(n);
        Ok(Json(Customer {
            id: a.id,
            name: NAMES[(n as usize) % NAMES.len()].to_string(),
            email: format!("customer{n}@example.com"),
            tier: ["bronze", "silver", "gold"][(r() % 3) as usize].to_string(),
            lifetime_value: (r() % 500_000) as f64 / 100.0,
            since: format!("20{:02}-{:02}-01", 15 + r() % 10, 1 + r() % 12),
        }))
    }

    #[tool(
        description = "Search the product catalogue by name; returns SKU, price and stock for each match."
    )]
    async fn search_products(&self, Parameters(a): Parameters<SearchArgs>) -> Json<ProductList> {
        let q = a.query.to_lowercase();
        let products = PRODUCTS
            .iter()
            .enumerate()
            .filter(|(_, p)| q.split_whitespace().any(|w| p.to_lowercase().contains(w)))
            .map(|(i, p)| Product {
                sku: format!("P-{:03}", i + 1),
                name: p.to_string(),
                price: price(i),
                in_stock: (i as u32 * 7) % 23,
            })
            .collect();
        Json(ProductList { products })
    }

    #[tool(description = "Cancel an open order by id. Fails for orders that have shipped.")]
    async fn cancel_order(&self, Parameters(a): Parameters<IdArgs>) -> Result<String, String> {
        match orders().into_iter().find(|o| o.id == a.id) {
            Some(o) if o.status == "open" => Ok(format!("order {} cancelled", o.id)),
            Some(o) => Err(format!(
                "order {} is {} and cannot be cancelled",
                o.id, o.status
            )),
            None => Err(format!("no order {}", a.id)),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for DemoShop {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("demo-shop", env!("CARGO_PKG_VERSION")))
    }
}

/// Entry of `code-executor-mcp __demo-server`: serve the shop on stdio.
pub fn serve_demo_main() -> ExitCode {
    serve_on_stdio(DemoShop::default())
}

/// Serves `server` on stdio until its client ends (the built-in servers' re-entries:
/// `__demo-server`, `__synthetic-server`).
pub fn serve_on_stdio<S: rmcp::ServerHandler>(server: S) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(_) => return ExitCode::FAILURE,
    };
    rt.block_on(async {
        match server.serve(rmcp::transport::stdio()).await {
            Ok(service) => {
                let _ = service.waiting().await;
                ExitCode::SUCCESS
            }
            Err(_) => ExitCode::FAILURE,
        }
    })
}

/// The program the demo runs.
pub const DEMO_CODE: &str = r#"// The three biggest open orders, and who placed them.
interface Order { id: string; customerId: string; total: number }
const { orders } = await tools.shop.list_orders({ status: "open" });
const top: Order[] = orders.sort((a: Order, b: Order) => b.total - a.total).slice(0, 3);
const customers = await Promise.all(
  top.map((o) => tools.shop.get_customer({ id: o.customerId })),
);
console.log(`scanned ${orders.length} open orders`);
return top.map((o, i) => ({ order: o.id, total: o.total, customer: customers[i].name, tier: customers[i].tier }));
"#;

/// A config with only the demo shop, started from our own binary.
pub fn demo_config(exe: &std::path::Path) -> Config {
    let spec = ServerSpec {
        name: "shop".into(),
        transport: Transport::Stdio {
            command: exe.display().to_string(),
            args: vec![DEMO_SERVER_ARG.into()],
            env: BTreeMap::new(),
            cwd: None,
        },
        disabled: false,
        source: "(built-in demo)".into(),
        client: "demo",
        oauth: None,
        tool_filter: None,
        startup_timeout: None,
        tool_timeout: None,
        not_applied: Vec::new(),
        referenced: Vec::new(),
    };
    Config {
        servers: BTreeMap::from([("shop".to_string(), spec)]),
        ..Config::default()
    }
}

/// `code-executor-mcp demo`.
pub async fn run_demo(opts: CoreOptions) -> anyhow::Result<ExitCode> {
    let core = Core::start(&demo_config(&opts.exe), &Settings::default(), opts);
    say(
        "code-executor-mcp demo: an agent's program, run against a built-in demo MCP server (\"shop\").\n",
    );
    say(&format!("--- program (TypeScript) ---\n{DEMO_CODE}"));
    let outcome = core
        .execute(
            runtime::worker::Language::JavaScript,
            ExecRequest {
                code: DEMO_CODE.into(),
                ..ExecRequest::default()
            },
            Principal::new("demo"),
            None,
        )
        .await;
    say(&format!(
        "--- what came back ---\n{}\n",
        render_text(&outcome)
    ));
    if outcome.error.is_some() {
        return Ok(ExitCode::FAILURE);
    }

    // What the same work costs an agent that loads the shop's tools and calls them itself:
    // every schema up front, and every raw result through its context.
    let upstreams = core.catalog.upstreams();
    let shop_tools = upstreams.tools("shop").await?;
    let direct_list = serde_json::to_string(&*shop_tools)?;
    let mut direct_results = String::new();
    let orders = upstreams
        .call(
            "shop",
            "list_orders",
            json_map(json!({"status": "open"})),
            policy::UPSTREAM_CALL_TIMEOUT,
        )
        .await?
        .0;
    direct_results.push_str(&serde_json::to_string(&orders.content)?);
    for row in outcome.result.as_array().into_iter().flatten() {
        let id = row["order"].as_str().unwrap_or_default();
        let customer = orders
            .structured_content
            .as_ref()
            .and_then(|v| v["orders"].as_array())
            .and_then(|list| list.iter().find(|o| o["id"] == id))
            .and_then(|o| o["customerId"].as_str())
            .unwrap_or_default()
            .to_string();
        let r = upstreams
            .call(
                "shop",
                "get_customer",
                json_map(json!({"id": customer})),
                policy::UPSTREAM_CALL_TIMEOUT,
            )
            .await?
            .0;
        direct_results.push_str(&serde_json::to_string(&r.content)?);
    }
    let ours = serde_json::to_string(&tool_definitions())?;
    let direct = count_tokens(&direct_list)? + count_tokens(&direct_results)?;
    let code_mode =
        count_tokens(&ours)? + count_tokens(DEMO_CODE)? + count_tokens(&render_text(&outcome))?;
    say("--- tokens through the agent's context (cl100k) ---");
    say(&format!(
        "calling the shop directly: {direct:>6}  ({} for its {} tool schemas + {} for raw results)",
        count_tokens(&direct_list)?,
        shop_tools.len(),
        count_tokens(&direct_results)?
    ));
    say(&format!(
        "through code-executor-mcp: {code_mode:>6}  (our tools/list + the program + its answer)"
    ));
    say(&format!(
        "saved: {} tokens ({:.0}%)",
        direct.saturating_sub(code_mode),
        100.0 * direct.saturating_sub(code_mode) as f64 / direct.max(1) as f64
    ));
    say(
        "\nNext: point --config (or MCP_CONFIG_PATH) at your .mcp.json and add this server to your agent.",
    );
    Ok(ExitCode::SUCCESS)
}

fn json_map(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}
