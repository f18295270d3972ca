//! The README's figures about our tools and their tokens, checked against the program: the
//! number of tools we list, `tools/list` in cl100k tokens as a client receives it in every
//! protocol version (stdio, and streamable HTTP in both generations), with tools pinned
//! (`directTools`), what `demo` prints, and the reference servers' schemas the opening
//! sentence compares with.
//!
//! Each claim is a pattern over the README (line breaks read as spaces) with the figures it
//! states, compared with what was measured; and every figure about tokens or a number of
//! tools anywhere in the README must be one of those claims or an exemption listed here with
//! its reason, so a figure added later is checked too, or fails this test until it is.

use std::collections::BTreeMap;
use std::time::Duration;

use regex::Regex;
use serde_json::{Value, json};
use test_support::TempConfig;
use test_support::fixture_entry;
use test_support::http::{Generation, HttpServer, McpHttp};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use crate::common::EXE;

/// The protocol revisions a client may ask for over stdio.
const STDIO_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The tools pinned for the README's `directTools` figure.
const PINNED: [&str; 5] = [
    "mcp__fx__echo",
    "mcp__fx__add",
    "mcp__fx__fail",
    "mcp__fx__sleep",
    "mcp__fx__env",
];

fn cl100k(text: &str) -> usize {
    tiktoken_rs::cl100k_base()
        .unwrap()
        .encode_with_special_tokens(text)
        .len()
}

/// `result.tools` of a `tools/list` answer as it came (compact JSON, keys in their order):
/// its tokens and its tool names.
fn measured(answer: &Value) -> (usize, Vec<String>) {
    let tools = &answer["result"]["tools"];
    let names = tools
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {answer}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("").to_string())
        .collect();
    (cl100k(&serde_json::to_string(tools).unwrap()), names)
}

/// `tools/list` over raw stdio lines for a client of `version` (a fresh server each:
/// `initialize` fixes the revision), with `settings` as the settings file when given.
async fn stdio_list(version: &str, settings: Option<Value>) -> (usize, Vec<String>) {
    stdio_list_with(version, settings, json!({ "fx": fixture_entry("fx") })).await
}

/// [`stdio_list`] with `servers` upstream.
async fn stdio_list_with(
    version: &str,
    settings: Option<Value>,
    servers: Value,
) -> (usize, Vec<String>) {
    let config = TempConfig::new(servers);
    let mut cmd = tokio::process::Command::new(EXE);
    cmd.arg("--config")
        .arg(&config.path)
        .arg("--no-discover")
        .args(["--pool-size", "1", "--python-pool-size", "1"])
        .env("XDG_STATE_HOME", config.dir.join("state"))
        .env("CODE_EXECUTOR_CACHE_DIR", config.dir.join("cache"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    if let Some(s) = settings {
        let path = config.dir.join("settings.json");
        std::fs::write(&path, s.to_string()).unwrap();
        cmd.env("CODE_EXECUTOR_CONFIG_PATH", path);
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    // Before 2026-07-28 a session begins with `initialize`; from it, each request carries
    // its revision and client in `_meta` (after an optional `server/discover`).
    let lines = if version < "2026-07-28" {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "figures", "version": "1"}}});
        vec![
            init,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ]
    } else {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "figures", "version": "1"},
        });
        vec![
            json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": meta}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}),
        ]
    };
    for line in lines {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    stdin.flush().await.unwrap();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(60), out.next_line())
            .await
            .unwrap_or_else(|_| panic!("{version}: no tools/list answer within a minute"))
            .unwrap()
            .unwrap_or_else(|| panic!("{version}: the server closed its output"));
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == 0 && version < "2026-07-28" {
            assert_eq!(v["result"]["protocolVersion"], version, "{v}");
        }
        if v["id"] == 1 {
            assert!(v.get("result").is_some(), "{version}: {v}");
        }
        if v["id"] == 1 {
            return measured(&v);
        }
    }
}

/// `tools/list` over streamable HTTP in `generation`.
async fn http_list(s: &HttpServer, generation: Generation) -> (usize, Vec<String>) {
    let c = McpHttp::connect(&s.url, None, generation).await;
    let r = c.request("tools/list", json!({})).await;
    assert_eq!(r.status, 200, "{r:?}");
    let answer = r
        .messages
        .iter()
        .find(|m| m.get("result").is_some())
        .unwrap_or_else(|| panic!("no answer in {r:?}"));
    measured(answer)
}

/// What `demo` prints: (tokens directly, tokens through us, percent saved).
async fn demo() -> (usize, usize, usize) {
    let state = TempConfig::new(json!({}));
    let out = tokio::process::Command::new(EXE)
        .arg("demo")
        .env("XDG_STATE_HOME", state.dir.join("state"))
        .env("CODE_EXECUTOR_CACHE_DIR", state.dir.join("cache"))
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let number = |pattern: &str| -> usize {
        Regex::new(pattern)
            .unwrap()
            .captures(&text)
            .unwrap_or_else(|| panic!("demo printed no {pattern:?}:\n{text}"))[1]
            .parse()
            .unwrap()
    };
    (
        number(r"calling the shop directly:\s+(\d+)"),
        number(r"through code-executor-mcp:\s+(\d+)"),
        number(r"saved: \d+ tokens \((\d+)%\)"),
    )
}

/// The reference servers' tool lists (`catalog::eval::reference_lists`, the servers of the
/// eval): (number of tools, their `tools/list` tokens summed per server).
fn reference_servers() -> (usize, usize) {
    let lists = code_executor_mcp::catalog::eval::reference_lists();
    let tools = lists.iter().map(|(_, l)| l.len()).sum();
    let tokens = lists
        .iter()
        .map(|(_, l)| cl100k(&serde_json::to_string(&**l).unwrap()))
        .sum();
    (tools, tokens)
}

fn number(text: &str) -> usize {
    const WORDS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    WORDS
        .iter()
        .position(|w| w.eq_ignore_ascii_case(text))
        .unwrap_or_else(|| {
            text.replace(',', "")
                .parse()
                .unwrap_or_else(|_| panic!("not a number: {text:?}"))
        })
}

/// How a stated figure must match the measured one.
#[derive(Clone, Copy)]
enum Match {
    Exact,
    /// "about N", "~N": within this many percent.
    Within(f64),
    /// "under N": the measured value is below it.
    Above,
}

/// One claim: a pattern of the README, and per capture group the measured value and how it
/// must match.
struct Claim {
    what: &'static str,
    pattern: &'static str,
    figures: Vec<(usize, Match)>,
}

/// Figures about tokens or tools that are not measurements of the program (settings, a
/// rough conversion, other catalogs), each with why.
const EXEMPT: &[(&str, &str)] = &[
    (
        "100,000 input and 20,000 output tokens",
        "the default llm budget, a setting",
    ),
    (
        "(about 65,000 tokens)",
        "256 KiB at 4 characters a token, a rough conversion",
    ),
    ("(100,000)", "a default budget"),
    (
        "servers' 50 tools are typed",
        "the reference servers' tools (interop), counted by types tests",
    ),
    ("1,000 tools with", "the fixture server's size in tests"),
    ("over 10,088 tools", "the benchmark's synthetic catalog"),
    (
        "a built-in catalog of 505 tools",
        "the eval's synthetic catalog",
    ),
    ("chmod 600 tokens", "a file named tokens"),
];

#[tokio::test]
async fn readme_figures_about_tools_and_tokens_are_the_programs() {
    // Measured: every stdio revision, HTTP in both generations, pinned tools, demo.
    // The servers start at once; each answer is awaited in turn.
    let stdio: Vec<_> = STDIO_VERSIONS
        .iter()
        .map(|v| tokio::spawn(stdio_list(v, None)))
        .collect();
    let pinned = tokio::spawn(stdio_list(
        "2025-06-18",
        Some(json!({ "directTools": PINNED })),
    ));
    let demo = tokio::spawn(demo());
    let mut by_version: BTreeMap<&str, (usize, Vec<String>)> = BTreeMap::new();
    for (v, h) in STDIO_VERSIONS.iter().zip(stdio) {
        by_version.insert(v, h.await.unwrap());
    }
    let s = HttpServer::start(EXE.as_ref(), json!({"fx": fixture_entry("fx")}), &[], &[]).await;
    let http_2025 = http_list(&s, Generation::Sessions).await;
    let http_2026 = http_list(&s, Generation::Stateless).await;
    let pinned = pinned.await.unwrap();
    let (demo_direct, demo_ours, demo_saved) = demo.await.unwrap();
    let (reference_tools, reference_tokens) = reference_servers();
    for (v, (t, names)) in &by_version {
        eprintln!(
            "tools/list over stdio, {v}: {t} cl100k tokens, {} tools",
            names.len()
        );
    }
    eprintln!(
        "tools/list over HTTP: 2025-11-25 {} tokens, 2026-07-28 {} tokens; with {} pinned over stdio: {}",
        http_2025.0,
        http_2026.0,
        PINNED.len(),
        pinned.0
    );
    eprintln!("demo: {demo_direct} directly, {demo_ours} through us, {demo_saved}% saved");
    eprintln!("reference servers: {reference_tools} tools, {reference_tokens} tokens");

    // The same tools in every revision and transport.
    let names = &by_version["2025-06-18"].1;
    for (where_, (_, n)) in by_version
        .iter()
        .map(|(v, m)| (format!("stdio {v}"), m))
        .chain([
            ("HTTP 2025-11-25".to_string(), &http_2025),
            ("HTTP 2026-07-28".to_string(), &http_2026),
        ])
    {
        assert_eq!(n, names, "{where_}");
    }
    assert_eq!(pinned.1.len(), names.len() + PINNED.len(), "{:?}", pinned.1);
    let listed = names.len();
    let plain = by_version["2025-06-18"].0;
    // Before 2025-11-25 a client knows no tasks: the same list as everyone else's plain one.
    for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2026-07-28"] {
        assert_eq!(
            by_version[v].0, plain,
            "{v}: only 2025-11-25 gets taskSupport"
        );
    }
    let tasks = by_version["2025-11-25"].0;
    assert_eq!(http_2025.0, tasks, "2025-11-25 over HTTP and stdio");
    let largest = by_version
        .values()
        .map(|m| m.0)
        .chain([http_2025.0, http_2026.0])
        .max()
        .unwrap();

    let claims = [
        Claim {
            what: "the opening: how many tools, under how many tokens",
            pattern: r"it loads (\w+) small tools \(under (\d+) tokens\)",
            figures: vec![(listed, Match::Exact), (largest, Match::Above)],
        },
        Claim {
            what: "the opening: what five servers' schemas cost",
            pattern: r"connects five MCP servers loads ~(\d+) tool schemas \(~([\d,]+) tokens for the five reference servers\)",
            figures: vec![
                (reference_tools, Match::Exact),
                (reference_tokens, Match::Within(5.0)),
            ],
        },
        Claim {
            what: "demo's figures",
            pattern: r"about ([\d,]+) tokens through the agent's context when calling the demo shop's tools directly, about ([\d,]+) through us \((\d+)% fewer",
            figures: vec![
                (demo_direct, Match::Within(2.0)),
                (demo_ours, Match::Within(2.0)),
                (demo_saved, Match::Exact),
            ],
        },
        Claim {
            what: "switching the others off",
            pattern: r"so the agent sees (\w+) tools instead",
            figures: vec![(listed, Match::Exact)],
        },
        Claim {
            what: "tools/list per revision",
            pattern: r"The whole `tools/list` is under (\d+) tokens in every protocol revision \(cl100k, compact JSON, as a client receives it: (\d+) before 2025-11-25 and over stdio, (\d+) for a 2025-11-25 client, which also gets `execution.taskSupport` on the execute tools, (\d+) for a 2026-07-28 client over HTTP",
            figures: vec![
                (largest, Match::Above),
                (plain, Match::Exact),
                (tasks, Match::Exact),
                (http_2026.0, Match::Exact),
            ],
        },
        Claim {
            what: "what an empty outputSchema would cost",
            pattern: r"would say nothing for (\d+) tokens each",
            figures: vec![(cl100k(r#","outputSchema":{"type":"object"}"#), Match::Exact)],
        },
        Claim {
            what: "pinned direct tools",
            pattern: r"the list is ([\d,]+) cl100k tokens instead of (\d+)",
            figures: vec![(pinned.0, Match::Exact), (plain, Match::Exact)],
        },
        Claim {
            what: "our part stays under the budget with pins",
            pattern: r"Our own part stays under (\d+) tokens",
            figures: vec![(largest, Match::Above)],
        },
        Claim {
            what: "the benchmark table",
            pattern: r"\| `tools/list` \(`tokens`\) \| (\d+) cl100k tokens \((\d+) for a 2025-11-25 client, (\d+) for a 2026-07-28 client over HTTP\) \| \| target < (\d+)",
            figures: vec![
                (plain, Match::Exact),
                (tasks, Match::Exact),
                (http_2026.0, Match::Exact),
                (largest, Match::Above),
            ],
        },
    ];

    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    // Line breaks read as spaces, so a sentence matches however it is wrapped.
    let text = Regex::new(r"\s*\n\s*")
        .unwrap()
        .replace_all(&readme, " ")
        .to_string();
    let mut covered: Vec<(usize, usize)> = Vec::new();
    let mut wrong = Vec::new();
    for claim in &claims {
        let re = Regex::new(claim.pattern).unwrap();
        let found: Vec<_> = re.captures_iter(&text).collect();
        if found.is_empty() {
            wrong.push(format!(
                "{}: the README no longer says /{}/",
                claim.what, claim.pattern
            ));
        }
        for caps in found {
            let whole = caps.get(0).unwrap();
            covered.push((whole.start(), whole.end()));
            for (i, (measured, how)) in claim.figures.iter().enumerate() {
                let stated = number(&caps[i + 1]);
                let ok = match how {
                    Match::Exact => stated == *measured,
                    Match::Within(pct) => {
                        (stated as f64 - *measured as f64).abs() <= *measured as f64 * pct / 100.0
                    }
                    Match::Above => *measured < stated,
                };
                if !ok {
                    wrong.push(format!(
                        "{}: the README says {stated}, the program measures {measured} ({})",
                        claim.what,
                        whole.as_str()
                    ));
                }
            }
        }
    }
    // Every figure about tokens or a number of tools is a claim above or exempt.
    let figure = Regex::new(
        r"(?i)\b(?:\d[\d,]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+(?:small\s+|cl100k\s+|tool\s+)?(?:tokens|tools)\b",
    )
    .unwrap();
    for m in figure.find_iter(&text) {
        let inside = covered
            .iter()
            .any(|(a, b)| *a <= m.start() && m.end() <= *b);
        let context = &text[m.start().saturating_sub(60)..(m.end() + 60).min(text.len())];
        let exempt = EXEMPT.iter().any(|(phrase, _)| {
            let at = m.start().saturating_sub(80);
            text[at..(m.end() + 80).min(text.len())].contains(phrase)
        });
        if !inside && !exempt {
            wrong.push(format!(
                "a figure this test does not check: \"{}\" in \"...{context}...\": add a claim (or an exemption with its reason)",
                m.as_str()
            ));
        }
    }
    assert!(wrong.is_empty(), "README figures:\n{}", wrong.join("\n"));
}

/// GitHub's OpenAPI document configured (and read at start: `connectedServers`) changes
/// nothing in `tools/list`: its 1,223 operations stay behind our few tools.
#[tokio::test]
async fn tools_list_is_unchanged_with_githubs_openapi_document_configured() {
    let Some(prefix) = crate::common::interop::prefix(&[
        "openapi/node_modules/@octokit/openapi/generated/api.github.com.json",
    ]) else {
        return;
    };
    let spec = prefix.join("openapi/node_modules/@octokit/openapi/generated/api.github.com.json");
    let (plain, plain_names) = stdio_list("2025-11-25", None).await;
    let servers = json!({
        "fx": fixture_entry("fx"),
        "github": {"type": "openapi", "spec": spec, "baseUrl": "https://api.github.com"},
    });
    let settings = json!({"connectedServers": ["github"]});
    let (with, names) = stdio_list_with("2025-11-25", Some(settings), servers).await;
    assert_eq!(names, plain_names);
    assert_eq!(
        with, plain,
        "tools/list tokens changed with GitHub's document configured"
    );
    eprintln!("tools/list with GitHub's OpenAPI document configured: {with} tokens (unchanged)");
}
