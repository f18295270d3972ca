//! The crate's top-level modules form no import cycle (docs/architecture.md, "Module
//! layering"): read from the sources, `crate::<module>` paths outside test code.

#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `crate::name` references in `text`, up to its test module.
fn references(text: &str) -> BTreeSet<String> {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        let name: String = text[i + 7..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && !path.to_string_lossy().ends_with("tests.rs")
        {
            out.push(path);
        }
    }
}

#[test]
fn top_level_modules_form_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let path = entry.path();
        let module = path.file_stem().unwrap().to_string_lossy().to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let mut sources = Vec::new();
        if path.is_dir() {
            files(&path, &mut sources);
        } else {
            sources.push(path);
        }
        let deps = graph.entry(module.clone()).or_default();
        for file in sources {
            let text = std::fs::read_to_string(&file).unwrap();
            deps.extend(references(&text).into_iter().filter(|d| *d != module));
        }
    }
    assert!(graph.len() > 10, "modules found: {:?}", graph.keys());
    // Depth-first search for a back edge.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == node) {
            let mut cycle = path[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for dep in graph.get(node).into_iter().flatten() {
            if graph.contains_key(dep)
                && let Some(c) = visit(dep, graph, path, done)
            {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        let cycle = visit(node, &graph, &mut Vec::new(), &mut done);
        assert!(
            cycle.is_none(),
            "import cycle: {}",
            cycle.unwrap().join(" -> ")
        );
    }
}
