//! Generated text, by snapshot: TypeScript and Python signatures of the five reference
//! servers' real tools and of a corpus of hard schemas (`schemas/hard.json`), and
//! search results. Every TypeScript rendering must also parse (oxc, as the sandbox does),
//! and every Python rendering must run under CPython when one is installed.
//!
//! Review changes with `cargo insta review` or by reading the `.snap.new` files.

use std::process::Command;
use std::sync::Arc;

use code_executor_mcp::catalog::search::Index;
use code_executor_mcp::catalog::{eval, schema_py, schema_ts};
use rmcp::model::Tool;

fn hard() -> Vec<Tool> {
    serde_json::from_str(include_str!("schemas/hard.json")).unwrap()
}

/// Each tool's TypeScript (checked to parse on its own), and all of them as one text.
fn ts_module(server: &str, tools: &[Tool]) -> String {
    let mut out = String::new();
    for t in tools {
        let r = schema_ts::render(t);
        let decl = r.declarations(&t.name);
        if let Err(e) = js_worker::strip_types(&decl) {
            panic!("generated TypeScript does not parse: {e:?}\n{decl}");
        }
        out.push_str(&format!("// {}\n{decl}\n", r.signature(server, &t.name)));
    }
    out
}

/// Each tool's Python module (run under CPython), and all of them as one text.
fn py_module(server: &str, tools: &[Tool]) -> String {
    let mut modules = Vec::new();
    let mut out = String::new();
    for t in tools {
        let r = schema_py::render(t);
        let decl = r.declarations(&t.name);
        out.push_str(&format!("# {}\n{decl}\n", r.signature(server, &t.name)));
        modules.push(format!("{}\n{decl}", schema_py::PRELUDE));
    }
    assert_runs_as_python(&modules);
    out
}

/// Runs each module under CPython 3.11+ and resolves every annotation of every TypedDict.
fn assert_runs_as_python(modules: &[String]) {
    let python = ["/usr/bin/python3.11", "python3"].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import sys; assert sys.version_info >= (3, 11)"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(python) = python else {
        eprintln!("SKIP: no CPython 3.11+ to run the generated Python");
        return;
    };
    const CHECK: &str = "import json, sys, types, typing\nfor i, src in enumerate(json.load(sys.stdin)):\n    mod = types.ModuleType(f'generated_{i}')\n    sys.modules[mod.__name__] = mod\n    try:\n        exec(compile(src, mod.__name__, 'exec'), mod.__dict__)\n        for v in list(vars(mod).values()):\n            if isinstance(v, type) and typing.is_typeddict(v):\n                typing.get_type_hints(v)\n    except Exception:\n        print(src, file=sys.stderr)\n        raise\n";
    let mut child = Command::new(python)
        .args(["-c", CHECK])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run python");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(serde_json::to_string(modules).unwrap().as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "generated Python fails:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn typescript_of_the_reference_servers() {
    for (server, tools) in eval::reference_lists() {
        let text = ts_module(&server, &tools);
        insta::assert_snapshot!(format!("ts_{server}"), text);
    }
}

#[test]
fn python_of_the_reference_servers() {
    for (server, tools) in eval::reference_lists() {
        let text = py_module(&server, &tools);
        insta::assert_snapshot!(format!("py_{server}"), text);
    }
}

#[test]
fn typescript_of_hard_schemas() {
    let text = ts_module("hard", &hard());
    insta::assert_snapshot!("ts_hard", text);
}

#[test]
fn python_of_hard_schemas() {
    let text = py_module("hard", &hard());
    insta::assert_snapshot!("py_hard", text);
}

#[test]
fn search_results_over_the_reference_servers() {
    let index = Index::build(eval::reference_lists());
    let mut out = String::new();
    for q in [
        "current time in a timezone",
        "read a file",
        "commit history",
        "remember a fact",
        "list directory",
        "gzip",
        "serach nodes",
    ] {
        let hits: Vec<String> = index
            .search(q, |_, _| true)
            .iter()
            .take(3)
            .map(|h| {
                let (s, t) = index.doc(h.doc);
                format!("{s}.{} ({:.2})", t.name, h.score)
            })
            .collect();
        out.push_str(&format!("{q}\n  {}\n", hits.join("\n  ")));
    }
    insta::assert_snapshot!("search_reference", out);
}

#[test]
fn reference_lists_are_shared_not_copied() {
    let lists = eval::reference_lists();
    assert_eq!(lists.len(), 5);
    assert_eq!(lists.iter().map(|(_, t)| t.len()).sum::<usize>(), 50);
    assert!(lists.iter().all(|(_, t)| Arc::strong_count(t) == 1));
}
