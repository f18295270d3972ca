//! The product line's own examples (issue #51): every block of the documents in
//! `tests/seeds/` (byte-for-byte copies of the originals) is extracted from their text,
//! classified, and must be listed in the table of `docs/seeds.md` with its kind and expected
//! status; every example (sandbox code, an agent-facing call, a documented answer) then runs
//! unchanged against the built server, with the reference filesystem and memory servers
//! (interop prefix) and stand-ins for the servers we lack (`test_support::standin`), and must
//! do what the table says: `pass` (it runs, and does what the document says: checked by its
//! effects, and no `[object Object]`, `undefined`, `NaN` or coroutine reached a log, a result,
//! an upstream or a prompt), `fails: OWNERS` (still failing, waiting for those parts), or
//! `unsupported: REASON` (run and reported, not asserted).
//!
//! Paths are set aside by the filesystem proxy (`/src/auth.ts` is `ROOT/src/auth.ts`); the
//! code text is never changed. A fragment using a name it never defines gets the table's
//! `given` declarations before its first line.
//!
//! Updating the table: the test prints the outcome of every example; with
//! `CODE_EXECUTOR_SEEDS_BLESS=1` it rewrites the status of each `fails:` row that now passes
//! to `pass` in `docs/seeds.md`; `CODE_EXECUTOR_SEEDS_VERBOSE=1` prints what each example
//! answered, called and prompted.

#![allow(
    deprecated,
    reason = "sampling (deprecated in 2026-07-28) is what llm.ask uses"
)]

mod extract;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    Implementation,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use test_support::{TempConfig, TempDir, workspace_bin};

use crate::common::EXE;
use extract::{Block, Expected, Kind, Row};

/// Where the originals live on the machines of this project (the copies are checked against
/// them when they are there): `$CODE_EXECUTOR_SEEDS_SOURCE`, default `/work/shared/seeds`.
fn originals() -> PathBuf {
    std::env::var_os("CODE_EXECUTOR_SEEDS_SOURCE")
        .map_or_else(|| PathBuf::from("/work/shared/seeds"), PathBuf::from)
}

#[test]
fn the_copies_in_tests_seeds_are_the_documents_byte_for_byte() {
    let src = originals();
    let copies = extract::documents_dir();
    let mut names: Vec<String> = std::fs::read_dir(&copies)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    assert!(
        names.contains(&"README.md".to_string()) && names.len() == 6,
        "tests/seeds/ holds the five documents and their README: {names:?}"
    );
    if !src.is_dir() {
        eprintln!(
            "SKIP the_copies_in_tests_seeds_are_the_documents_byte_for_byte: the originals are \
             not at {} (set CODE_EXECUTOR_SEEDS_SOURCE to their folder); the examples still run \
             from the copies in tests/seeds/",
            src.display()
        );
        return;
    }
    let mut originals: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    originals.sort();
    assert_eq!(names, originals, "the same files");
    for name in names {
        assert!(
            std::fs::read(copies.join(&name)).unwrap() == std::fs::read(src.join(&name)).unwrap(),
            "tests/seeds/{name} differs from {}",
            src.join(&name).display()
        );
    }
}

fn table() -> (Vec<Block>, Vec<Row>) {
    let blocks = extract::blocks_in(&extract::documents_dir());
    let text = std::fs::read_to_string(extract::table_path()).unwrap();
    (blocks, extract::rows_of(&text))
}

/// Every block of the documents is in the table once, with the kind the extractor finds; a
/// row for a block that is not there, or a non-example marked otherwise, is an error.
#[test]
fn every_block_of_the_documents_is_classified_in_docs_seeds_md() {
    let (blocks, rows) = table();
    let mut errors = Vec::new();
    for b in &blocks {
        let kind = extract::classify(b);
        let matching: Vec<&Row> = rows.iter().filter(|r| r.id == b.id).collect();
        let [row] = matching.as_slice() else {
            let first = b.body.lines().next().unwrap_or_default();
            errors.push(format!(
                "{} ({}, `{}`): {} rows in docs/seeds.md; add one: | {} | {} |  |  | STATUS | NOTE |",
                b.id,
                kind.name(),
                first,
                matching.len(),
                b.id,
                kind.name()
            ));
            continue;
        };
        if row.kind != kind.name() {
            errors.push(format!(
                "{}: the table says `{}`, the block is `{}`",
                b.id,
                row.kind,
                kind.name()
            ));
        }
        if kind.is_example() == (row.expected == Expected::NotAnExample) {
            errors.push(format!(
                "{}: a `{}` block is {}an example",
                b.id,
                kind.name(),
                if kind.is_example() { "" } else { "not " }
            ));
        }
        if matches!(kind, Kind::Call | Kind::Response) {
            let heading = extract::squash(&b.heading);
            if row.tool.is_empty() || !heading.contains(&extract::squash(&row.tool)) {
                errors.push(format!(
                    "{}: the tool `{}` is not the one its section `{}` names",
                    b.id, row.tool, b.heading
                ));
            }
        }
    }
    let names = extract::names_in(&extract::documents_dir());
    for (id, name) in &names {
        if !rows
            .iter()
            .any(|r| &r.id == id && r.kind == "name" && &r.tool == name)
        {
            errors.push(format!(
                "{id}: the tool name `{name}` first appears here; add: | {id} | name | `{name}` | ARGS | STATUS | NOTE |"
            ));
        }
    }
    for r in &rows {
        let known = if r.kind == "name" {
            names
                .iter()
                .any(|(id, name)| id == &r.id && name == &r.tool)
        } else {
            blocks.iter().any(|b| b.id == r.id)
        };
        if !known {
            errors.push(format!("{}: no such {} in the documents", r.id, r.kind));
        }
    }
    assert!(errors.is_empty(), "docs/seeds.md:\n{}", errors.join("\n"));
}

#[test]
fn the_extractor_reads_fences_captions_and_kinds() {
    let doc = "# Title\n\n## Tools\n\n### `search_tools`\n\n**Response:**\n```json\n{\"tools\": []}\n```\n\
               - item\n  ```bash\n  npm i\n  ```\n\n### Execute Python\n```python\n# LLM calls this tool\n\
               {\"code\": \"\"\"print(1)\"\"\"}\n```\n```typescript\n{ enableSampling: true }\n```\n\
               ```typescript\nimport { X } from 'code-executor-mcp';\n```\n```python\nimport asyncio\n```\n\
               ```javascript\n// hi\nreturn 1;\n```\n```\nplain\n```\n";
    let blocks = extract::blocks_of("009", doc);
    let got: Vec<(String, &str, String)> = blocks
        .iter()
        .map(|b| (b.id.clone(), extract::classify(b).name(), b.heading.clone()))
        .collect();
    assert_eq!(
        got,
        [
            ("009:8", "response", "`search_tools`"),
            ("009:12", "shell", "`search_tools`"),
            ("009:17", "call", "Execute Python"),
            ("009:21", "args", "Execute Python"),
            ("009:24", "host", "Execute Python"),
            ("009:27", "py", "Execute Python"),
            ("009:30", "ts", "Execute Python"),
            ("009:34", "text", "Execute Python"),
        ]
        .map(|(a, b, c)| (a.to_string(), b, c.to_string()))
    );
    assert_eq!(
        blocks[1].body, "npm i",
        "an indented fence's indentation is not text"
    );
}

/// Answers sampling with `sampled: <last prompt>` and keeps every prompt.
#[derive(Clone, Default)]
struct Model {
    prompts: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Model {
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let v = serde_json::to_value(&params).unwrap();
        let last = v["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| {
                m["content"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .unwrap_or_default();
        self.prompts.lock().unwrap().push(v.to_string());
        Ok(serde_json::from_value(json!({
            "model": "seeds-model", "role": "assistant",
            "content": {"type": "text", "text": format!("sampled: {}", last.chars().take(40).collect::<String>())}
        }))
        .unwrap())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            serde_json::from_value(json!({"sampling": {}})).unwrap(),
            Implementation::new("seeds-test", "0"),
        )
    }
}

const APP_TS: &str = "export function app(): string {\n  return 'app';\n}\n";
const AUTH_TS: &str = "export function checkToken(given: string, secret: string): boolean {\n  return given === secret; // timing-attack\n}\n";
const DATA_JSON: &str = "{\"numbers\": [1, 2, 3]}\n";
const PACKAGE_JSON: &str = "{\n  \"name\": \"seeds-demo\",\n  \"version\": \"1.0.0\"\n}\n";

/// The files the examples read, under the root the filesystem proxy serves.
fn plant(root: &Path) {
    let files: &[(&str, &str)] = &[
        ("package.json", PACKAGE_JSON),
        ("auth.ts", AUTH_TS),
        ("data.json", DATA_JSON),
        ("src/app.ts", APP_TS),
        ("src/auth.ts", AUTH_TS),
        ("tmp/data.json", DATA_JSON),
        ("Users/me/docs/ai-notes.md", "# AI notes\n"),
        ("Users/me/docs/open-ai-models.md", "# Models\n"),
        ("Users/me/docs/gardening.md", "# Soil\n"),
        ("Users/me/projects/atlas/README.md", "# Atlas\n"),
        ("Users/me/projects/notes.txt", "notes\n"),
    ];
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

struct World {
    client: RunningService<RoleClient, Model>,
    model: Model,
    root: PathBuf,
    outbox: PathBuf,
    _config: TempConfig,
    _dir: TempDir,
}

async fn world(prefix: &Path) -> World {
    let dir = TempDir::new("seeds");
    let base = dir.0.canonicalize().unwrap();
    let root = base.join("root");
    plant(&root);
    let outbox = base.join("outbox.jsonl");
    let memory = base.join("memory.jsonl");
    std::fs::write(
        &memory,
        concat!(
            r#"{"type":"entity","name":"project-atlas","entityType":"project","observations":["the atlas project ships in May"]}"#,
            "\n",
            r#"{"type":"entity","name":"Ada","entityType":"person","observations":["leads project atlas"]}"#,
            "\n"
        ),
    )
    .unwrap();
    let standin = workspace_bin("standin-server");
    let npm = prefix.join("npm/node_modules/@modelcontextprotocol");
    let env = json!({"STANDIN_OUTBOX": outbox});
    let mut servers = json!({
        "filesystem": {"command": standin, "env": env, "args": [
            "proxy", "filesystem", root, "--", "node",
            npm.join("server-filesystem/dist/index.js"), root]},
        "memory": {"command": "node", "args": [npm.join("server-memory/dist/index.js")],
                   "env": {"MEMORY_FILE_PATH": memory}},
    });
    for name in test_support::standin::NAMES {
        servers[*name] = json!({"command": standin, "args": [name], "env": env});
    }
    let config = TempConfig::new(servers);
    // Model calls allowed: a nested execution can do no more than its caller, so the
    // documents' nested `enableSampling: true` needs it for the code around it too.
    let settings = base.join("settings.json");
    std::fs::write(&settings, json!({"llm": {"enabled": true}}).to_string()).unwrap();
    let mut cmd = tokio::process::Command::new(EXE);
    cmd.arg("--config")
        .arg(&config.path)
        .arg("--no-discover")
        .env("CODE_EXECUTOR_CONFIG_PATH", &settings)
        .env("XDG_STATE_HOME", base.join("state"))
        .env("CODE_EXECUTOR_CACHE_DIR", base.join("cache"))
        .env("XDG_DATA_HOME", base.join("data"))
        .kill_on_drop(true);
    let (transport, _) = TokioChildProcess::builder(cmd).spawn().unwrap();
    let model = Model::default();
    let client = model.clone().serve(transport).await.unwrap();
    World {
        client,
        model,
        root,
        outbox,
        _config: config,
        _dir: dir,
    }
}

impl World {
    /// Calls `tool`: its structured content (or its text, parsed when it is JSON), or the
    /// error it answered.
    async fn call(&self, tool: &str, args: Value) -> Result<Value, String> {
        let Value::Object(map) = args else {
            return Err(format!("the arguments are not an object: {args}"));
        };
        let call = self
            .client
            .peer()
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map));
        let r = match tokio::time::timeout(Duration::from_secs(120), call).await {
            Err(_) => return Err(format!("{tool}: no answer in 120 s")),
            Ok(Err(e)) => return Err(format!("{tool}: {e}")),
            Ok(Ok(r)) => r,
        };
        let text: String = r
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        let v = r
            .structured_content
            .clone()
            .unwrap_or_else(|| serde_json::from_str(&text).unwrap_or(Value::String(text.clone())));
        if r.is_error == Some(true) {
            let e = v["error"].as_object().map_or(text, |e| {
                format!(
                    "{}: {}",
                    e.get("name").and_then(Value::as_str).unwrap_or("Error"),
                    e.get("message").and_then(Value::as_str).unwrap_or_default()
                )
            });
            return Err(e);
        }
        Ok(v)
    }

    /// Runs code of one language in our own execute tool (the harness's way to read a
    /// document's argument object: as the language it is written in reads it).
    async fn evaluate(&self, lang: Kind, text: &str) -> Value {
        let (tool, code) = if lang == Kind::Py {
            let literal = serde_json::to_string(text).unwrap();
            (
                "execute_python",
                format!("import ast\nast.literal_eval({literal})"),
            )
        } else {
            ("execute_typescript", format!("return (\n{text}\n);"))
        };
        let v = self
            .call(tool, json!({ "code": code }))
            .await
            .unwrap_or_else(|e| panic!("the harness cannot read the argument object {text}: {e}"));
        v["result"].clone()
    }

    fn outbox_len(&self) -> usize {
        std::fs::read_to_string(&self.outbox)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    fn calls_since(&self, n: usize) -> Vec<Value> {
        std::fs::read_to_string(&self.outbox)
            .unwrap_or_default()
            .lines()
            .skip(n)
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// What one example did.
struct Seen {
    /// The answer (an execution's structured content, or a tool's answer).
    answer: Value,
    /// Its log lines' text.
    logs: String,
    /// The calls that reached the stand-ins and the filesystem proxy.
    calls: Vec<Value>,
    /// The prompts our model was sampled with.
    prompts: Vec<String>,
}

impl Seen {
    fn called(&self, server: &str, tool: &str) -> Vec<&Value> {
        self.calls
            .iter()
            .filter(|c| c["server"] == server && c["tool"] == tool)
            .map(|c| &c["args"])
            .collect()
    }
}

/// The text of an answer's log lines (ours are `{level, text}`; the documents' are strings).
fn log_text(v: &Value) -> String {
    v["logs"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|e| {
                    e.as_str()
                        .or_else(|| e["text"].as_str())
                        .map_or_else(|| e.to_string(), str::to_string)
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Signs of an example that failed quietly.
const QUIET: &[&str] = &[
    "[object Object]",
    "[object Promise]",
    "undefined",
    "NaN",
    "<coroutine",
];

fn quiet_failures(s: &Seen) -> Result<(), String> {
    let places = [
        ("a log", s.logs.clone()),
        ("the result", s.answer["result"].to_string()),
        (
            "an upstream's arguments",
            Value::from(s.calls.clone()).to_string(),
        ),
        ("a prompt", s.prompts.join("\n")),
    ];
    for (place, text) in places {
        if let Some(sign) = QUIET.iter().find(|q| text.contains(**q)) {
            return Err(format!(
                "quietly wrong: `{sign}` in {place}: {}",
                clip(&text)
            ));
        }
    }
    Ok(())
}

fn clip(s: &str) -> String {
    let one = s.replace('\n', "⏎");
    if one.chars().count() > 300 {
        format!("{}…", one.chars().take(300).collect::<String>())
    } else {
        one
    }
}

fn ensure(ok: bool, what: &str, s: &Seen) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} (logs: {}; result: {}; calls: {})",
            clip(&s.logs),
            clip(&s.answer["result"].to_string()),
            clip(&Value::from(s.calls.clone()).to_string())
        ))
    }
}

/// What each example must have done, beyond running: its effects, as the document says.
fn effects(id: &str, s: &Seen, root: &Path, given: &str) -> Result<(), String> {
    let file = |p: &str| std::fs::read_to_string(root.join(p)).unwrap_or_default();
    let arg = |a: &Value, k: &str| a[k].as_str().unwrap_or_default().to_string();
    let reads = |path: &str| {
        s.calls.iter().any(|c| {
            c["server"] == "filesystem"
                && c["tool"].as_str().is_some_and(|t| t.starts_with("read"))
                && c["args"]["path"] == path
        })
    };
    match id {
        "001:47" => {
            let reviews = s.called("zen", "codereview");
            ensure(
                reviews.iter().any(|a| arg(a, "code") == APP_TS),
                "zen.codereview gets the file's text",
                s,
            )?;
            ensure(
                s.called("git", "commit")
                    .iter()
                    .any(|a| arg(a, "message").contains("timing-attack")),
                "git.commit gets the review's suggestions as its message",
                s,
            )
        }
        "001:127" | "001:134" => ensure(reads("/src/app.ts"), "/src/app.ts is read", s),
        "001:240" => ensure(
            s.logs.contains(PACKAGE_JSON.trim_end()),
            "the log shows package.json's text",
            s,
        ),
        "001:261" => {
            let auth = file("src/auth.ts");
            ensure(
                auth.contains("constant-time") && !auth.contains("timing-attack"),
                "/src/auth.ts holds the fixed suggestions",
                s,
            )?;
            ensure(
                s.called("zen", "codereview")
                    .iter()
                    .any(|a| arg(a, "code") == AUTH_TS && arg(a, "step") == "Security audit"),
                "zen.codereview reviews auth.ts's text",
                s,
            )?;
            ensure(
                s.called("git", "commit")
                    .iter()
                    .any(|a| arg(a, "message") == "fix: constant-time token comparison"),
                "git.commit is called with the message",
                s,
            )?;
            ensure(
                s.logs.contains("Security fixes applied and committed"),
                "the last log line",
                s,
            )
        }
        "001:322" => {
            ensure(
                s.prompts.iter().any(|p| {
                    p.contains("Analyze this code for security vulnerabilities: export function checkToken")
                }),
                "the model is asked about auth.ts's text",
                s,
            )?;
            ensure(
                s.logs.contains("Rounds: 1") && s.logs.contains("Tokens: "),
                "the sampling metrics are logged",
                s,
            )
        }
        "001:348" => ensure(
            s.prompts
                .iter()
                .any(|p| p.contains(r#"Summarize this data: {\"numbers\": [1, 2, 3]}"#)),
            "the model is asked to summarize data.json's text",
            s,
        ),
        "001:525" => ensure(
            s.called("playwright", "evaluate")
                .iter()
                .any(|a| arg(a, "script") == "document.title")
                && s.called("playwright", "navigate").len() == 1,
            "the browser navigates and evaluates document.title",
            s,
        ),
        "001:563" => ensure(
            s.logs.contains("Processed: [2, 4, 6]")
                && s.logs.contains("Found ")
                && !s.logs.contains("Found 0 tools"),
            "the tools are counted and the data doubled",
            s,
        ),
        "002:37" => ensure(
            s.called("zen", "codereview").iter().any(|a| {
                let code = arg(a, "code");
                arg(a, "language") == "typescript" && !code.is_empty() && given.contains(&code)
            }),
            "zen.codereview gets the code and its language",
            s,
        ),
        "002:399" => ensure(
            s.logs.contains("Files: 2") && s.logs.contains("/src/app.ts: "),
            "the two .ts files of /src are listed and read",
            s,
        ),
        "002:429" => ensure(
            s.called("zen", "thinkdeep")
                .iter()
                .any(|a| arg(a, "problem") == "How to optimize this algorithm?")
                && s.logs.contains("analysis_complete"),
            "zen.thinkdeep's answer is printed as JSON",
            s,
        ),
        "002:536" => ensure(
            s.called("zen", "thinkdeep")
                .iter()
                .any(|a| arg(a, "step") == "question"),
            "zen.thinkdeep is asked the question",
            s,
        ),
        "002:856" => {
            ensure(
                s.logs.starts_with("Available: ")
                    && s.logs
                        .trim_start_matches("Available: ")
                        .starts_with(|c: char| c.is_ascii_digit()),
                "the connected tools are counted",
                s,
            )?;
            ensure(
                file("src/app.ts.review.md").contains("\"issues\""),
                "the review is written beside the file",
                s,
            )
        }
        "003:133" => ensure(
            s.called("notion-workspace", "list_topics").len() == 1,
            "callMCPTool(server, tool, params) reaches the tool",
            s,
        ),
        "003:233" => ensure(
            s.answer["result"].as_array().is_some_and(|v| {
                !v.is_empty()
                    && v.iter()
                        .all(|r| r["title"].is_string() && r["url"].is_string())
            }),
            "the videos' titles and urls",
            s,
        ),
        "003:244" => ensure(
            s.answer["result"].as_array().is_some_and(|v| {
                !v.is_empty()
                    && v.iter()
                        .all(|r| r["files"].as_array().is_some_and(|f| !f.is_empty()))
            }),
            "each AI topic with the files found for it",
            s,
        ),
        "003:263" => ensure(
            s.answer["result"]["memory"]["entities"]
                .as_u64()
                .is_some_and(|n| n > 0)
                && s.answer["result"]["filesystem"]["directories"] == 1,
            "the summary counts entities and directories",
            s,
        ),
        "003:295" => {
            ensure(
                s.logs.contains("notion-workspace.query_resources"),
                "search_tools finds the tool",
                s,
            )?;
            ensure(
                s.logs.contains("Schema: ") && s.logs.contains("limit"),
                "the schema is printed",
                s,
            )?;
            ensure(
                s.answer["result"].as_array().is_some_and(|v| !v.is_empty()),
                "the resources about AI",
                s,
            )
        }
        _ => Ok(()),
    }
}

/// Strips `/* ... */` comments (the documents' placeholders in JSON).
fn without_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        rest = rest[i..].find("*/").map_or("", |j| &rest[i + j + 2..]);
    }
    out.push_str(rest);
    out
}

/// The keys the documented answer shows that the actual one lacks (an empty object documents
/// any value; an array's first element, when an object, documents its elements' fields).
fn missing_keys(doc: &Value, actual: &Value, path: &str, out: &mut Vec<String>) {
    match doc {
        Value::Object(m) if !m.is_empty() => {
            let Some(a) = actual.as_object() else {
                out.push(format!("{path} is not an object ({actual})"));
                return;
            };
            for (k, v) in m {
                match a.get(k) {
                    None => out.push(format!("{path}.{k}")),
                    Some(av) => missing_keys(v, av, &format!("{path}.{k}"), out),
                }
            }
        }
        Value::Array(items) => match (actual.as_array(), items.first()) {
            (None, _) => out.push(format!("{path} is not an array ({actual})")),
            (Some(a), Some(first @ Value::Object(_))) => match a.first() {
                Some(element) => missing_keys(first, element, &format!("{path}[0]"), out),
                None => out.push(format!("{path} is empty: its elements' fields are unseen")),
            },
            (Some(_), _) => {}
        },
        _ => {}
    }
}

/// Runs one example; `Err` says how it failed.
async fn run(w: &World, b: &Block, row: &Row) -> Result<(), String> {
    let kind = extract::classify(b);
    let before_calls = w.outbox_len();
    let before_prompts = w.model.prompts.lock().unwrap().len();
    let (answer, documented) = match kind {
        Kind::Ts | Kind::Py => {
            let (tool, sep) = if kind == Kind::Py {
                ("execute_python", "\n")
            } else {
                ("execute_typescript", " ")
            };
            let code = if row.given.is_empty() {
                b.body.clone()
            } else {
                format!("{}{sep}{}", row.given, b.body)
            };
            (w.call(tool, json!({ "code": code })).await?, None)
        }
        Kind::Call => {
            let (args, returns) = match b.body.split_once("// Returns:") {
                Some((a, r)) => (a, Some(r)),
                None => (b.body.as_str(), None),
            };
            let lang = if b.lang.starts_with("py") {
                Kind::Py
            } else {
                Kind::Ts
            };
            let args = w.evaluate(lang, args).await;
            let documented = returns.map(|r| {
                serde_json::from_str::<Value>(&without_comments(r))
                    .unwrap_or_else(|e| panic!("{}: the documented answer is not JSON: {e}", b.id))
            });
            (w.call(&row.tool, args).await?, documented)
        }
        Kind::Response => {
            let args: Value = serde_json::from_str(&row.given)
                .unwrap_or_else(|e| panic!("{}: `given` is not JSON arguments: {e}", b.id));
            let documented: Value = serde_json::from_str(&without_comments(&b.body))
                .unwrap_or_else(|e| panic!("{}: the documented answer is not JSON: {e}", b.id));
            (w.call(&row.tool, args).await?, Some(documented))
        }
        _ => return Err(format!("a `{}` block does not run", kind.name())),
    };
    let seen = Seen {
        logs: log_text(&answer),
        answer,
        calls: w.calls_since(before_calls),
        prompts: w.model.prompts.lock().unwrap()[before_prompts..].to_vec(),
    };
    if std::env::var_os("CODE_EXECUTOR_SEEDS_VERBOSE").is_some() {
        eprintln!(
            "{}: answer {}\n  calls {}\n  prompts {:?}",
            b.id,
            seen.answer,
            Value::from(seen.calls.clone()),
            seen.prompts
        );
    }
    if let Some(e) = seen.answer.get("error").filter(|e| !e.is_null()) {
        return Err(format!("error: {}", clip(&e.to_string())));
    }
    if let Some(doc) = documented {
        let mut missing = Vec::new();
        missing_keys(&doc, &seen.answer, "", &mut missing);
        if !missing.is_empty() {
            return Err(format!(
                "the answer lacks the documented {}: {}",
                missing.join(", "),
                clip(&seen.answer.to_string())
            ));
        }
    }
    quiet_failures(&seen)?;
    effects(&b.id, &seen, &w.root, &row.given)
}

/// Every example runs as the table says (one server for all of them).
#[tokio::test(flavor = "multi_thread")]
async fn every_example_of_the_documents_runs_as_docs_seeds_md_says() {
    let Some(prefix) = crate::common::interop::prefix(&[
        "npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
        "npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js",
    ]) else {
        return;
    };
    let (blocks, rows) = table();
    let w = world(&prefix).await;
    let mut report = Vec::new();
    let mut wrong = Vec::new();
    let mut blessed = Vec::new();
    for b in &blocks {
        let Some(row) = rows.iter().find(|r| r.id == b.id) else {
            continue; // every_block_of_the_documents_is_classified_in_docs_seeds_md says so
        };
        if row.expected == Expected::NotAnExample {
            continue;
        }
        if matches!(&row.expected, Expected::Unsupported(_)) && extract::classify(b) == Kind::Args {
            report.push(format!("{:8} unsupported (not run)", b.id));
            continue;
        }
        let outcome = run(&w, b, row).await;
        let got = match &outcome {
            Ok(()) => "pass".to_string(),
            Err(e) => format!("FAIL {e}"),
        };
        report.push(format!("{:8} {:28} {got}", b.id, status(&row.expected)));
        judge(row, &outcome, &mut wrong, &mut blessed);
    }
    for row in rows.iter().filter(|r| r.kind == "name") {
        let outcome = run_name(&w, row).await;
        let got = match &outcome {
            Ok(()) => "pass".to_string(),
            Err(e) => format!("FAIL {e}"),
        };
        report.push(format!(
            "{:8} {:28} {got} ({})",
            row.id,
            status(&row.expected),
            row.tool
        ));
        judge(row, &outcome, &mut wrong, &mut blessed);
    }
    eprintln!(
        "examples of tests/seeds/ (id, expected, outcome):\n{}",
        report.join("\n")
    );
    if std::env::var_os("CODE_EXECUTOR_SEEDS_BLESS").is_some_and(|v| v == "1")
        && !blessed.is_empty()
    {
        let path = extract::table_path();
        let mut text = std::fs::read_to_string(&path).unwrap();
        for row in &blessed {
            let Expected::Fails(who) = &row.expected else {
                continue;
            };
            let line = row.line.replacen(&format!(" fails: {who} "), " pass ", 1);
            text = text.replacen(&row.line, &line, 1);
        }
        std::fs::write(&path, text).unwrap();
        wrong.retain(|w| !w.contains("now passes"));
        eprintln!("docs/seeds.md: {} rows marked pass", blessed.len());
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// Compares an outcome with the table: a `pass` that fails, or a `fails:` that passes, is wrong
/// (the latter can be blessed).
fn judge(row: &Row, outcome: &Result<(), String>, wrong: &mut Vec<String>, blessed: &mut Vec<Row>) {
    match (&row.expected, outcome) {
        (Expected::Pass, Err(e)) => wrong.push(format!("{}: expected pass, failed: {e}", row.id)),
        (Expected::Fails(_), Ok(())) => {
            blessed.push(row.clone());
            wrong.push(format!(
                "{}: now passes; mark it `pass` in docs/seeds.md (CODE_EXECUTOR_SEEDS_BLESS=1 does)",
                row.id
            ));
        }
        _ => {}
    }
}

/// Calls one of the documents' tool names with the table's arguments; code given to it must
/// run (what it prints, 42013, is in the answer).
async fn run_name(w: &World, row: &Row) -> Result<(), String> {
    let args: Value = serde_json::from_str(&row.given)
        .unwrap_or_else(|e| panic!("{}: `given` is not JSON arguments: {e}", row.id));
    let answer = w.call(&row.tool, args.clone()).await?;
    if let Some(e) = answer.get("error").filter(|e| !e.is_null()) {
        return Err(format!("error: {}", clip(&e.to_string())));
    }
    if args.get("code").is_some() && !answer.to_string().contains("42013") {
        return Err(format!(
            "the code's output is not in the answer: {}",
            clip(&answer.to_string())
        ));
    }
    Ok(())
}

fn status(e: &Expected) -> String {
    match e {
        Expected::Pass => "pass".into(),
        Expected::Fails(who) => format!("fails: {who}"),
        Expected::Unsupported(_) => "unsupported".into(),
        Expected::NotAnExample => "not an example".into(),
    }
}
