//! The declarations code is checked against: our API (`api.d.ts`, `api.pyi`, beside this
//! file) and the tools it can reach, declared and inferred, in each language's form, plus
//! the wrapper that makes a run's code (top-level `await` and `return`, the value of its
//! last expression) a function a checker accepts, with the lines it adds.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use rmcp::model::Tool;
use serde_json::Value;

use tools::catalog::{ident, schema_py, schema_ts};

pub const TS_API: &str = include_str!("api.d.ts");
pub const PY_API: &str = include_str!("api.pyi");

/// One server as code sees it: its tools, or `None` when its list could not be had (then
/// any tool of it is allowed, untyped).
pub type ServerTools = (String, Option<Vec<Tool>>);

/// The servers code refers to: the names after `tools.` / `tools[...]` (and `atools` in
/// Python); `None` when code uses `tools` any other way (passes it on, indexes it with a
/// variable), so every server must be declared.
pub fn referenced(code: &str) -> Option<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while let Some(at) = code[i..].find("tools") {
        let start = i + at;
        let end = start + "tools".len();
        i = end;
        let before = code[..start].chars().next_back();
        let word_before = before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        let atools = start > 0 && bytes[start - 1] == b'a' && {
            let b2 = code[..start - 1].chars().next_back();
            !b2.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$')
        };
        if word_before && !atools {
            continue;
        }
        let rest = &code[end..];
        if rest.starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') {
            continue; // a longer word (`toolsList`)
        }
        let rest = rest.trim_start();
        // `tools?.x` and `tools.x` name x; `tools?.[...]` and `tools[...]` index.
        let (rest, dotted) = match rest.strip_prefix("?.") {
            Some(r) if r.trim_start().starts_with('[') => (r.trim_start(), None),
            Some(r) => (r, Some(r)),
            None => (rest, rest.strip_prefix('.')),
        };
        if let Some(after) = dotted {
            let name: String = after
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
                .collect();
            if name.is_empty() {
                return None;
            }
            out.insert(name);
        } else if let Some(after) = rest.strip_prefix('[') {
            let after = after.trim_start();
            let quote = after.chars().next()?;
            if !matches!(quote, '"' | '\'' | '`') {
                return None;
            }
            let body = &after[1..];
            let close = body.find(quote)?;
            let name = &body[..close];
            if name.contains(['\\', '$']) {
                return None;
            }
            out.insert(name.to_string());
        } else {
            return None;
        }
    }
    Some(out)
}

fn optional_args(tool: &Tool) -> bool {
    tool.input_schema
        .get("required")
        .and_then(Value::as_array)
        .is_none_or(|r| r.is_empty())
}

fn ts_key(name: &str) -> String {
    if schema_ts::is_ident(name) {
        name.to_string()
    } else {
        Value::String(name.to_string()).to_string()
    }
}

/// `tools` for TypeScript: every tool's types in a namespace of its own, and `tools` with
/// each server and tool under its name and its identifier form.
pub fn typescript(servers: &[ServerTools]) -> String {
    let mut types = String::from("declare namespace __cem {\n");
    let mut object = String::from("declare const tools: {\n");
    let mut n = 0usize;
    for (server, tools) in servers {
        let mut members = String::new();
        match tools {
            None => members.push_str("    [tool: string]: ((args?: object) => Promise<any>) & { readonly signature: string | null };\n"),
            Some(tools) => {
                for tool in tools {
                    let r = schema_ts::render(tool);
                    let ns = format!("t{n}");
                    n += 1;
                    let _ = writeln!(types, "namespace {ns} {{");
                    for t in &r.types {
                        types.push_str(t);
                        types.push('\n');
                    }
                    types.push_str("}\n");
                    let q = |t: &str| {
                        if t == "unknown" || t == "any" {
                            t.to_string()
                        } else {
                            format!("__cem.{ns}.{t}")
                        }
                    };
                    let opt = if optional_args(tool) { "?" } else { "" };
                    let ty = format!(
                        "((args{opt}: {}) => Promise<{}>) & {{ readonly signature: string | null }}",
                        q(&r.args_type),
                        q(&r.result_type)
                    );
                    let mut doc = r.doc.replace('\n', "\n    ");
                    if doc.ends_with("    ") {
                        doc.truncate(doc.len() - 4);
                    }
                    for key in names(&tool.name) {
                        let _ = writeln!(members, "    {doc}{}: {ty};", ts_key(&key));
                    }
                }
            }
        }
        for key in names(server) {
            let _ = write!(object, "  {}: {{\n{members}  }};\n", ts_key(&key));
        }
    }
    types.push_str("}\n");
    object.push_str("};\n");
    types + &object
}

/// A name and its identifier form, when they differ.
fn names(name: &str) -> Vec<String> {
    let id = ident(name);
    if id == name {
        vec![id]
    } else {
        vec![name.to_string(), id]
    }
}

/// Python stubs: a module per tool (`(module name, text)`, named `<prefix><n>`) with its
/// types, and the module that declares `tools` and `atools`, importing them.
pub fn python(servers: &[ServerTools], prefix: &str) -> (Vec<(String, String)>, String) {
    let mut modules = Vec::new();
    let mut main = String::from("from typing import Any, overload, Unpack\n");
    let mut classes = String::new();
    let mut tools_attrs = String::new();
    let mut atools_attrs = String::new();
    let mut n = 0usize;
    for (s_i, (server, tools)) in servers.iter().enumerate() {
        let sync_cls = format!("_S{s_i}");
        let async_cls = format!("_AS{s_i}");
        let mut sync_body = String::new();
        let mut async_body = String::new();
        match tools {
            None => {
                sync_body.push_str("    def __getattr__(self, name: str) -> Any: ...\n");
                async_body.push_str("    def __getattr__(self, name: str) -> Any: ...\n");
            }
            Some(tools) => {
                for tool in tools {
                    let r = schema_py::render(tool);
                    let module = format!("{prefix}{n}");
                    n += 1;
                    let mut text = String::from(schema_py::PRELUDE);
                    text.push('\n');
                    for t in &r.types {
                        text.push_str(t);
                        text.push('\n');
                    }
                    let _ = writeln!(main, "import {module}");
                    let q = |t: &str| {
                        if t == "Any" {
                            t.to_string()
                        } else {
                            format!("{module}.{t}")
                        }
                    };
                    let (args, result) = (q(&r.args_type), q(&r.result_type));
                    let default = if optional_args(tool) { " = ..." } else { "" };
                    for (cls, asy) in [
                        (format!("_T{}", n - 1), ""),
                        (format!("_AT{}", n - 1), "async "),
                    ] {
                        let _ = write!(
                            classes,
                            "class {cls}:\n    signature: str | None\n    @overload\n    {asy}def __call__(self, args: {args}{default}, /) -> {result}: ...\n    @overload\n    {asy}def __call__(self, /, **kwargs: Unpack[{args}]) -> {result}: ...\n\n"
                        );
                    }
                    let attr = ident(&tool.name);
                    if schema_py::py_ident(&attr) == attr {
                        let _ = writeln!(sync_body, "    {attr}: _T{}", n - 1);
                        let _ = writeln!(async_body, "    {attr}: _AT{}", n - 1);
                    }
                    modules.push((module, text));
                }
                sync_body.push_str("    def __getitem__(self, name: str) -> Any: ...\n");
                async_body.push_str("    def __getitem__(self, name: str) -> Any: ...\n");
            }
        }
        let _ = write!(
            classes,
            "class {sync_cls}:\n{sync_body}\nclass {async_cls}:\n{async_body}\n"
        );
        let attr = ident(server);
        if schema_py::py_ident(&attr) == attr {
            let _ = writeln!(tools_attrs, "    {attr}: {sync_cls}");
            let _ = writeln!(atools_attrs, "    {attr}: {async_cls}");
        }
    }
    main.push('\n');
    main.push_str(&classes);
    let _ = write!(
        main,
        "class _Tools:\n{tools_attrs}    def __getitem__(self, name: str) -> Any: ...\n\nclass _ATools:\n{atools_attrs}    def __getitem__(self, name: str) -> Any: ...\n\ntools: _Tools\natools: _ATools\n"
    );
    (modules, main)
}

/// The code as a checker reads it, and how its lines and columns moved.
pub struct Wrapped {
    pub text: String,
    /// Lines added before the code.
    pub lines_before: u32,
    /// Columns added at the start of each of the code's lines.
    pub indent: u32,
}

/// TypeScript: the code is the body of an async function of `args` (as the worker runs it).
pub fn wrap_ts(code: &str) -> Wrapped {
    // A `///` directive could name any file on the host for the checker to read: kept out
    // (the same length, so nothing moves).
    let code = neutralise_directives(code);
    Wrapped {
        text: format!(
            "async function __cemMain(args: any): Promise<unknown> {{\n{code}\n}}\nexport {{}};\n"
        ),
        lines_before: 1,
        indent: 0,
    }
}

fn neutralise_directives(code: &str) -> String {
    code.split_inclusive('\n')
        .map(|line| {
            let t = line.trim_start();
            match t.strip_prefix("///") {
                Some(rest) => format!("{}//_{rest}", &line[..line.len() - t.len()]),
                None => line.to_string(),
            }
        })
        .collect()
}

/// Python: the code is the body of an async function of `args`, with our API and `tools`
/// imported (from `tools_module`).
pub fn wrap_py(code: &str, tools_module: &str) -> Wrapped {
    let tabs = code.lines().any(|l| l.starts_with('\t'));
    let pad = if tabs { "\t" } else { "    " };
    // `from __future__` imports must come first in a module: they move to the first line.
    let future = |l: &str| l.starts_with("from __future__ import");
    let futures: Vec<&str> = code.lines().filter(|l| future(l)).collect();
    let mut text = format!(
        "{}\nfrom _cem_api import *\nfrom {tools_module} import tools, atools\nfrom typing import Any as __CemAny\nasync def __cem_main(args: __CemAny) -> __CemAny:\n",
        futures.join("; ")
    );
    let mut any = false;
    for line in code.lines() {
        if line.trim().is_empty() || future(line) {
            text.push('\n');
        } else {
            text.push_str(pad);
            text.push_str(line);
            text.push('\n');
            any = true;
        }
    }
    if !any {
        text.push_str(pad);
        text.push_str("pass\n");
    }
    Wrapped {
        text,
        lines_before: 5,
        indent: pad.chars().count() as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_code_names_are_found() {
        let got = |c: &str| referenced(c).map(|s| s.into_iter().collect::<Vec<_>>());
        assert_eq!(
            got(
                "const a = await tools.time.now({});\nawait tools['my-server'].x(); atools.git.log()"
            ),
            Some(vec!["git".into(), "my-server".into(), "time".into()])
        );
        assert_eq!(got("const t = tools; t.x.y()"), None);
        assert_eq!(got("tools[name].x()"), None);
        assert_eq!(got("const toolsList = 1; mytools.x"), Some(vec![]));
        assert_eq!(got("tools?.time.now()"), Some(vec!["time".into()]));
    }

    #[test]
    fn python_keeps_its_lines_and_future_imports_come_first() {
        let w = wrap_py(
            "from __future__ import annotations\nx: int = 1\n\tif x:\n\t\tpass",
            "_cem_tools_x",
        );
        let lines: Vec<&str> = w.text.lines().collect();
        assert_eq!(lines[0], "from __future__ import annotations");
        assert_eq!(lines.len() as u32, w.lines_before + 4, "{}", w.text);
        assert_eq!(lines[w.lines_before as usize + 1], "\tx: int = 1");
        assert_eq!(w.indent, 1);
    }

    #[test]
    fn directives_cannot_name_files() {
        let w = wrap_ts("/// <reference path=\"/etc/shadow\" />\nreturn 1");
        assert!(!w.text.contains("/// <reference"), "{}", w.text);
        assert_eq!(w.text.lines().count(), 5);
    }
}
