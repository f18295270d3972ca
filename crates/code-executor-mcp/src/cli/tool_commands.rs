//! The people-facing discovery commands: `tools search`, `tools show` and `wrappers`, over
//! the catalog (moved here from `catalog/`: they are the command line's, not the catalog's).

use std::path::Path;

use anyhow::Context;
use rmcp::model::Tool;
use serde_json::Value;

use policy::{ToolAllowlist, qualified_name};
use tools::catalog::{
    Asker, Catalog, Detail, SearchParams, ToolView, describe, ident, schema_py, schema_ts,
};
use tools::skills::store::Skills;

/// Which language wrappers and signatures are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Ts,
    Py,
}

/// `tools search QUERY`: one line per hit (name and summary), or the JSON answer. Skills
/// are ranked among the tools as `search_tools` ranks them (`--server skills` for them alone),
/// and a skill's line says so.
pub async fn search(
    catalog: &Catalog,
    skills: &Skills,
    params: &SearchParams<'_>,
    json: bool,
) -> anyhow::Result<String> {
    let docs = runtime::host::skills::search_docs(catalog, skills).await;
    let v = catalog
        .search_with(
            &ToolView::default(),
            params,
            &ToolAllowlist::allow_all(),
            Some(docs),
        )
        .await
        .map_err(anyhow::Error::msg)?;
    if json {
        return Ok(serde_json::to_string_pretty(&v)?);
    }
    let tools = v["tools"].as_array().cloned().unwrap_or_default();
    // A skill's line names it as one (`skill NAME`), and shows how code calls it.
    let label = |t: &Value| {
        let name = t["name"].as_str().unwrap_or("");
        if t["kind"] == "skill" {
            format!("skill {name}")
        } else {
            name.to_string()
        }
    };
    let width = tools
        .iter()
        .map(|t| label(t).chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for t in &tools {
        let name = label(t);
        let desc = t["description"].as_str().unwrap_or("");
        out.push_str(format!("{name:width$}  {desc}").trim_end());
        out.push('\n');
        for more in [&t["signature"], &t["call"]] {
            if let Some(line) = more.as_str() {
                out.push_str(&format!("{:width$}  {line}\n", ""));
            }
        }
    }
    out.push_str(&format!(
        "({} of {} matches{})",
        tools.len(),
        v["total"],
        v["nextCursor"]
            .as_str()
            .map(|c| format!("; next page: --cursor {c}"))
            .unwrap_or_default()
    ));
    if let Some(u) = v["unavailable"].as_array() {
        for e in u {
            out.push_str(&format!("\nunavailable: {}", e.as_str().unwrap_or("")));
        }
    }
    Ok(out)
}

/// `tools show NAME`: the description and the declarations in `lang`, or the JSON answer.
pub async fn show(catalog: &Catalog, name: &str, lang: Lang, json: bool) -> anyhow::Result<String> {
    let (server, tool) = catalog
        .resolve(None, name, Asker::Person)
        .await
        .map_err(anyhow::Error::msg)?;
    // With the output type learned from its results, when it declares none.
    let tool = catalog.typed(&server, &tool).await;
    if json {
        return Ok(serde_json::to_string_pretty(&describe(
            &server,
            &tool,
            Detail::Full,
        ))?);
    }
    Ok(match lang {
        Lang::Ts => {
            let r = schema_ts::render(&tool);
            format!(
                "// {}\n// {}\n{}",
                qualified_name(&server, &tool.name),
                r.signature(&server, &tool.name),
                r.declarations(&tool.name)
            )
        }
        Lang::Py => {
            let r = schema_py::render(&tool);
            format!(
                "# {}\n# {}\n{}",
                qualified_name(&server, &tool.name),
                r.signature(&server, &tool.name),
                r.declarations(&tool.name)
            )
        }
    })
}

/// `wrappers --lang ts|py --out DIR`: a file per tool under a folder per server, with an
/// index per folder and one at the top, for editors and for agents that browse files.
/// Returns the number of files written.
pub async fn wrappers(catalog: &Catalog, lang: Lang, out: &Path) -> anyhow::Result<String> {
    let (tools, errors) = catalog
        .tools(
            &ToolView::default(),
            None,
            &ToolAllowlist::allow_all(),
            None,
        )
        .await
        .map_err(anyhow::Error::msg)?;
    let mut servers: Vec<(String, Vec<Tool>)> = Vec::new();
    for (s, t) in tools {
        let t = catalog.typed(&s, &t).await.into_owned();
        match servers.iter_mut().find(|(n, _)| *n == s) {
            Some((_, list)) => list.push(t),
            None => servers.push((s, vec![t])),
        }
    }
    let files = write_wrappers(&servers, lang, out)?;
    let mut msg = format!(
        "wrote {files} files for {} tools of {} servers to {}",
        servers.iter().map(|(_, t)| t.len()).sum::<usize>(),
        servers.len(),
        out.display()
    );
    for e in errors {
        msg.push_str(&format!("\nskipped: {e}"));
    }
    Ok(msg)
}

/// Writes the wrapper tree for `servers`; returns the number of files written.
pub fn write_wrappers(
    servers: &[(String, Vec<Tool>)],
    lang: Lang,
    out: &Path,
) -> anyhow::Result<usize> {
    let write = |path: &Path, text: &str| -> anyhow::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    let mut count = 0;
    let mut readme = String::from(
        "# MCP tool wrappers\n\nGenerated by `code-executor-mcp wrappers` from the tools' JSON Schemas; \
         regenerate rather than edit.\n",
    );
    let mut top_index = String::new();
    let ext = match lang {
        Lang::Ts => "ts",
        Lang::Py => "py",
    };
    if lang == Lang::Ts {
        write(&out.join("runtime.d.ts"), TS_RUNTIME)?;
        count += 1;
    } else {
        write(&out.join("_runtime.py"), PY_RUNTIME)?;
        count += 1;
    }
    for (server, tools) in servers {
        let dir_name = schema_py::py_ident(server);
        let dir = out.join(&dir_name);
        let mut index = String::new();
        readme.push_str(&format!("\n## {server}\n\n"));
        for tool in tools {
            let file = schema_py::py_ident(&tool.name);
            let qualified = qualified_name(server, &tool.name);
            let summary = tool
                .description
                .as_deref()
                .and_then(|d| d.lines().next())
                .unwrap_or("")
                .trim();
            readme.push_str(&format!(
                "- `{dir_name}/{file}.{ext}`: `{qualified}` {summary}\n"
            ));
            let (text, exports) = match lang {
                Lang::Ts => ts_wrapper(server, tool),
                Lang::Py => py_wrapper(server, tool),
            };
            write(&dir.join(format!("{file}.{ext}")), &text)?;
            count += 1;
            match lang {
                Lang::Ts => index.push_str(&format!(
                    "export {{ {} }} from \"./{file}.ts\";\n",
                    exports.join(", ")
                )),
                Lang::Py => {
                    index.push_str(&format!("from .{file} import {}\n", exports.join(", ")))
                }
            }
        }
        match lang {
            Lang::Ts => {
                write(&dir.join("index.ts"), &index)?;
                top_index.push_str(&format!(
                    "export * as {dir_name} from \"./{dir_name}/index.ts\";\n"
                ));
            }
            Lang::Py => {
                write(&dir.join("__init__.py"), &index)?;
                top_index.push_str(&format!("from . import {dir_name}\n"));
            }
        }
        count += 1;
    }
    let top = match lang {
        Lang::Ts => "index.ts",
        Lang::Py => "__init__.py",
    };
    write(&out.join(top), &top_index)?;
    write(&out.join("README.md"), &readme)?;
    Ok(count + 2)
}

/// What TypeScript wrappers call: the sandbox's typed proxies, whose result is the structured
/// one the wrappers declare (`callMCPTool` answers in the text shape: a file server's text,
/// not its `{content}`).
const TS_RUNTIME: &str = "// Provided inside the code-executor sandbox.\n\
/** The typed proxies: tools[server][tool](args) answers with the structured result. */\n\
declare const tools: Record<string, Record<string, (args: object) => Promise<unknown>>>;\n\
/** The answer's text (parsed when it is JSON data); the wrappers use `tools`. */\n\
declare function callMCPTool(name: string, args: object): Promise<any>;\n";

/// What Python wrappers call: the sandbox's typed proxies, whose result is the structured one
/// the wrappers declare (`call_mcp_tool` answers in the text shape).
const PY_RUNTIME: &str = r#""""How generated wrappers reach the host: the sandbox's typed proxies (`tools`), which
answer with the structured result the wrappers declare."""

from typing import Any


def call_tool(server: str, tool: str, args: Any) -> Any:
    import builtins

    import __main__

    tools = getattr(__main__, "tools", None) or getattr(builtins, "tools", None)
    if tools is None:
        raise RuntimeError("tools is only available inside the code-executor sandbox")
    return tools[server][tool](dict(args))
"#;

/// One tool's TypeScript file and the names it exports.
fn ts_wrapper(server: &str, tool: &Tool) -> (String, Vec<String>) {
    let r = schema_ts::render(tool);
    let qualified = qualified_name(server, &tool.name);
    let mut s = format!(
        "// Generated by code-executor-mcp from the JSON Schema of {qualified}. Do not edit.\n/// <reference path=\"../runtime.d.ts\" />\n\n"
    );
    let mut exports = Vec::new();
    for t in &r.types {
        let mut lines: Vec<String> = t.lines().map(str::to_string).collect();
        if let Some(l) = lines
            .iter_mut()
            .find(|l| l.starts_with("interface ") || l.starts_with("type "))
        {
            let name = l
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .trim_end_matches(['=', '{'])
                .to_string();
            exports.push(format!("type {name}"));
            *l = format!("export {l}");
        }
        s.push_str(&lines.join("\n"));
        s.push('\n');
    }
    let f = ident(&tool.name);
    s.push_str(&r.doc);
    s.push_str(&format!(
        "export function {f}(args: {}): Promise<{}> {{\n  return tools[{}][{}](args) as Promise<{}>;\n}}\n",
        r.args_type,
        r.result_type,
        Value::String(server.to_string()),
        Value::String(tool.name.to_string()),
        r.result_type
    ));
    exports.insert(0, f);
    (s, exports)
}

/// One tool's Python module and the names it exports.
fn py_wrapper(server: &str, tool: &Tool) -> (String, Vec<String>) {
    let r = schema_py::render(tool);
    let qualified = qualified_name(server, &tool.name);
    let f = schema_py::py_ident(&tool.name);
    let decl = r.declarations(&tool.name);
    let body = format!(
        "    return call_tool({}, {}, args)\n",
        Value::String(server.to_string()),
        Value::String(tool.name.to_string())
    );
    let decl = match decl.rfind("    ...\n") {
        Some(i) => format!("{}{body}", &decl[..i]),
        None => decl,
    };
    let mut exports = vec![f, r.args_type.clone()];
    if r.result_type != "Any" {
        exports.push(r.result_type.clone());
    }
    (
        format!(
            "\"\"\"Generated by code-executor-mcp from the JSON Schema of {qualified}. Do not edit.\"\"\"\n\n{}\nfrom .._runtime import call_tool\n\n\n{decl}",
            schema_py::PRELUDE
        ),
        exports,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<(String, Vec<Tool>)> {
        tools::catalog::eval::reference_lists()
            .into_iter()
            .map(|(s, t)| (s, (*t).clone()))
            .collect()
    }

    #[test]
    fn typescript_wrapper_tree_parses() {
        let dir = std::env::temp_dir().join(format!("cem-wrappers-ts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let n = write_wrappers(&tools(), Lang::Ts, &dir).unwrap();
        assert_eq!(
            n,
            50 + 5 + 3,
            "a file per tool, an index per server, runtime, index, README"
        );
        let text = std::fs::read_to_string(dir.join("time/get_current_time.ts")).unwrap();
        assert!(
            text.contains("export interface GetCurrentTimeArgs {"),
            "{text}"
        );
        assert!(text.contains("export function get_current_time(args: GetCurrentTimeArgs): Promise<GetCurrentTimeResult> {\n  return tools[\"time\"][\"get_current_time\"](args)"), "{text}");
        // Each file parses as TypeScript once its module syntax is set aside.
        for server in ["time", "everything", "filesystem", "git", "memory"] {
            for e in std::fs::read_dir(dir.join(server)).unwrap() {
                let p = e.unwrap().path();
                let body: String = std::fs::read_to_string(&p).unwrap().replace("export ", "");
                if p.ends_with("index.ts") {
                    continue;
                }
                js_worker::strip_types(&body).unwrap_or_else(|e| panic!("{}: {e:?}", p.display()));
            }
        }
        let index = std::fs::read_to_string(dir.join("everything/index.ts")).unwrap();
        assert!(
            index.contains("export { get_sum, type GetSumArgs } from \"./get_sum.ts\";"),
            "{index}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn python_wrapper_tree_imports() {
        let dir = std::env::temp_dir().join(format!("cem-wrappers-py-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write_wrappers(&tools(), Lang::Py, &dir.join("mcp_tools")).unwrap();
        let ok = std::process::Command::new("/usr/bin/python3.11")
            .current_dir(&dir)
            .args(["-c", "import mcp_tools, typing; from mcp_tools.time import get_current_time, GetCurrentTimeArgs; print(typing.get_type_hints(GetCurrentTimeArgs))"])
            .output();
        if let Ok(out) = ok {
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(String::from_utf8_lossy(&out.stdout).contains("'timezone': <class 'str'>"));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
