//! The documents' fenced blocks, each classified by what it is, and the table of
//! `docs/seeds.md` that says what each one is expected to do.

use std::path::{Path, PathBuf};

/// The repository's root.
pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The copies of the documents (`tests/seeds/`).
pub(crate) fn documents_dir() -> PathBuf {
    repo().join("tests/seeds")
}

/// One fenced block of a document.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    /// `DOC:LINE`: the document's number (`001`) and the line of the opening fence (1-based).
    pub id: String,
    /// The fence's language (`typescript`, `python`, `json`, ..., or empty).
    pub lang: String,
    /// The block's text, without the fences and their indentation.
    pub body: String,
    /// The nearest heading above the block.
    pub heading: String,
    /// The last non-blank line above the block (its caption).
    pub caption: String,
}

/// What a block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Code for the TypeScript/JavaScript sandbox.
    Ts,
    /// Code for the Python sandbox.
    Py,
    /// An agent-facing call: the argument object of a tool the section names (and, after
    /// `// Returns:`, its answer).
    Call,
    /// A tool's documented answer (after a `Response` caption).
    Response,
    /// Part of an argument object, not a call by itself.
    Args,
    /// Host-side code using the product's npm library, not the sandbox.
    Host,
    /// Configuration (JSON, YAML) or a log line's format.
    Config,
    /// Shell commands and their output.
    Shell,
    /// Diagrams and plain text.
    Text,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Ts => "ts",
            Kind::Py => "py",
            Kind::Call => "call",
            Kind::Response => "response",
            Kind::Args => "args",
            Kind::Host => "host",
            Kind::Config => "config",
            Kind::Shell => "shell",
            Kind::Text => "text",
        }
    }

    /// Sandbox code or an agent-facing call: what must run.
    pub(crate) fn is_example(self) -> bool {
        matches!(
            self,
            Kind::Ts | Kind::Py | Kind::Call | Kind::Response | Kind::Args
        )
    }
}

/// Every fenced block of every document in `dir` (`NNN_*.txt`), in order.
pub(crate) fn blocks_in(dir: &Path) -> Vec<Block> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let doc = &name[..3];
        let text = std::fs::read_to_string(&file).unwrap();
        out.extend(blocks_of(doc, &text));
    }
    out
}

/// The fenced blocks of one document's text.
pub(crate) fn blocks_of(doc: &str, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = Vec::new();
    let mut heading = String::new();
    let mut caption = String::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if let Some(lang) = trimmed.strip_prefix("```") {
            let indent = line.len() - trimmed.len();
            let close = (i + 1..lines.len())
                .find(|&j| lines[j].trim() == "```")
                .unwrap_or_else(|| panic!("{doc}:{}: a fence that is never closed", i + 1));
            let body: Vec<&str> = lines[i + 1..close]
                .iter()
                .map(|l| {
                    let strip = l.len() - l.trim_start().len();
                    &l[strip.min(indent)..]
                })
                .collect();
            out.push(Block {
                id: format!("{doc}:{}", i + 1),
                lang: lang.trim().to_string(),
                body: body.join("\n"),
                heading: heading.clone(),
                caption: caption.clone(),
            });
            i = close + 1;
            continue;
        }
        if trimmed.starts_with('#') {
            heading = trimmed.trim_start_matches('#').trim().to_string();
        }
        if !trimmed.is_empty() {
            caption = trimmed.to_string();
        }
        i += 1;
    }
    out
}

/// The block's text after its leading comment lines (`//` or `#`) and blank lines.
fn after_comments(body: &str) -> &str {
    let mut rest = body;
    loop {
        let t = rest.trim_start();
        if t.starts_with("//") || (t.starts_with('#') && !t.starts_with("#!")) {
            rest = t.split_once('\n').map_or("", |(_, r)| r);
        } else {
            return t;
        }
    }
}

/// What `b` is, from its fence and its text alone.
pub(crate) fn classify(b: &Block) -> Kind {
    match b.lang.as_str() {
        "bash" | "sh" | "shell" => Kind::Shell,
        "yaml" | "yml" => Kind::Config,
        "json" if b.caption.to_ascii_lowercase().contains("response") => Kind::Response,
        "json" => Kind::Config,
        "typescript" | "ts" | "javascript" | "js" | "python" | "py" => {
            let py = b.lang.starts_with("py");
            let code = after_comments(&b.body);
            if b.body.contains("from 'code-executor-mcp'") || b.body.contains("new MCPClientPool") {
                Kind::Host
            } else if code.starts_with('{') {
                if b.body.contains("\"code\"") || b.body.contains("// Returns:") {
                    Kind::Call
                } else {
                    Kind::Args
                }
            } else if py {
                Kind::Py
            } else {
                Kind::Ts
            }
        }
        _ => Kind::Text,
    }
}

/// What the table expects of an example.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expected {
    /// Runs as written, and does what the document says.
    Pass,
    /// Fails today; the owners (helpers of issue #51) whose part it waits for.
    Fails(String),
    /// Not supported, with the reason.
    Unsupported(String),
    /// Not sandbox code nor an agent-facing call.
    NotAnExample,
}

/// One row of the table in `docs/seeds.md`.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub id: String,
    pub kind: String,
    /// For a call or a response: the tool, by the document's name.
    pub tool: String,
    /// What the harness supplies: declarations of names a fragment uses and never defines, or
    /// a response's call arguments (JSON).
    pub given: String,
    pub expected: Expected,
    /// The line as written (to rewrite its status).
    pub line: String,
}

pub(crate) fn table_path() -> PathBuf {
    repo().join("docs/seeds.md")
}

fn unquote(cell: &str) -> String {
    let c = cell.trim();
    c.strip_prefix('`')
        .and_then(|c| c.strip_suffix('`'))
        .unwrap_or(c)
        .to_string()
}

/// The rows of the table in `text` (lines `| DOC:LINE | kind | tool | given | expected | note |`).
pub(crate) fn rows_of(text: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("| ") else {
            continue;
        };
        let cells: Vec<&str> = rest.split(" | ").collect();
        let id = cells[0].trim();
        let is_id = id.len() > 4
            && id.as_bytes()[3] == b':'
            && id[..3].bytes().all(|c| c.is_ascii_digit())
            && id[4..].bytes().all(|c| c.is_ascii_digit());
        if !is_id {
            continue;
        }
        assert!(
            cells.len() >= 5,
            "docs/seeds.md: a row needs id | kind | tool | given | expected | note: {line}"
        );
        let status = cells[4].trim();
        let expected = if status == "pass" {
            Expected::Pass
        } else if let Some(who) = status.strip_prefix("fails:") {
            Expected::Fails(who.trim().to_string())
        } else if let Some(why) = status.strip_prefix("unsupported:") {
            Expected::Unsupported(why.trim().to_string())
        } else if status == "not an example" {
            Expected::NotAnExample
        } else {
            panic!(
                "docs/seeds.md: status `{status}` of {id} is none of pass, fails: OWNERS, \
                 unsupported: REASON, not an example"
            );
        };
        rows.push(Row {
            id: id.to_string(),
            kind: cells[1].trim().to_string(),
            tool: unquote(cells[2]),
            given: unquote(cells[3]),
            expected,
            line: line.to_string(),
        });
    }
    rows
}

/// The documents' tool names the same, case, `-` and `_` aside (`Execute TypeScript` and
/// `executeTypescript`; `execute_code`).
pub(crate) fn squash(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The agent-facing tool names of the documents' kind (their execute tools and
/// `get_tool_signature`), by their squashed shape.
const TOOL_NAME_SHAPES: &[&str] = &[
    "executetypescript",
    "executepython",
    "executecode",
    "runtypescriptcode",
    "runpythoncode",
    "runpython",
    "gettoolsignature",
];

/// The documents' agent-facing tool names, each spelling once with where it first appears
/// (`DOC:LINE`), read from their whole text, prose included (`run_python` is only named in
/// prose; `mcp__code-executor__executeTypescript` names `executeTypescript`).
pub(crate) fn names_in(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    let mut out: Vec<(String, String)> = Vec::new();
    for file in files {
        let doc = file.file_name().unwrap().to_string_lossy()[..3].to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.split('\n').enumerate() {
            // A file name keeps its extension (`execute-code.ts` in a source tree is no tool).
            let tokens = line.split(|c: char| !(c.is_ascii_alphanumeric() || "_-.".contains(c)));
            for token in tokens {
                let name = token
                    .trim_end_matches('.')
                    .rsplit("__")
                    .next()
                    .unwrap_or_default();
                if TOOL_NAME_SHAPES.contains(&squash(name).as_str())
                    && !out.iter().any(|(_, known)| known == name)
                {
                    out.push((format!("{doc}:{}", n + 1), name.to_string()));
                }
            }
        }
    }
    out
}
