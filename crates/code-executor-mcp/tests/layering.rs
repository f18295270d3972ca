//! The module graph of every workspace crate obeys three rules (docs/architecture.md, "Module
//! layering"), read from the sources of `crates/*/src`: every `crate::`, `super::` and `self::`
//! path (`use` groups such as `crate::{a, b::c}` included) outside `#[cfg(test)]` items and
//! `*tests.rs` files, with comments and string literals left out.
//!
//! 1. No import cycle between the top-level modules of a crate.
//! 2. No import cycle between sibling modules inside any folder, at any depth (`a/x.rs` uses
//!    `a/y.rs` and `a/y.rs` uses `a/x.rs`; a use by anything under `x` counts for `x`).
//! 3. No upward arrow: a module never uses an item of one of its ancestors' files (lib.rs, a
//!    folder's `mod.rs` or `folder.rs`), defined or re-exported there; the children share
//!    through a sibling leaf module instead. Another crate's root is a dependency, not an
//!    ancestor.
//!
//! The test first shows the check bites: a circle and upward arrows planted in a temporary
//! tree are each reported, with the files and paths that make them.

#![allow(clippy::unwrap_used, reason = "tests fail loudly")]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Violations allowed: none. A new one is fixed where it is, not listed here.
const ALLOWED: &[&str] = &[];

type ModPath = Vec<String>;

/// One module of a crate: the file it lives in.
struct Crate {
    name: String,
    src: PathBuf,
    modules: BTreeMap<ModPath, PathBuf>,
}

/// A path found in a file, resolved to the module it names and the item after it.
struct Reference {
    from: ModPath,
    file: PathBuf,
    text: String,
    target: ModPath,
    item: Option<String>,
}

#[derive(Debug)]
struct Violation {
    /// What the allowlist names.
    key: String,
    message: String,
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// `text` with comments, string and char literals blanked to spaces (line breaks kept).
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|c| *c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if (b[i] == b'r' || b[i] == b'b')
            && (i == 0 || !is_ident(b[i - 1]))
            && raw_string_end(b, i).is_some()
        {
            let end = raw_string_end(b, i).unwrap();
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}', a multi-byte char); otherwise a lifetime.
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|c| *c == b'\'')
                    .map(|p| i + 2 + p + 1)
            } else {
                let len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 2 + len)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where a raw string (`r"..."`, `r#"..."#`, `br"..."`) starting at `i` ends, if one does.
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if b[j] == b'b' {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|c| **c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let close: Vec<u8> = std::iter::once(b'"')
        .chain(std::iter::repeat_n(b'#', hashes))
        .collect();
    let rest = &b[j + 1..];
    rest.windows(close.len())
        .position(|w| w == close.as_slice())
        .map(|p| j + 1 + p + close.len())
}

/// Where the brace opened at `open` closes (stripped text).
fn matching_brace(b: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (j, c) in b.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
    }
    b.len()
}

/// Stripped `text` with every `#[cfg(test)]` item blanked.
fn without_tests(code: &str) -> String {
    let mut b = code.as_bytes().to_vec();
    let mut from = 0;
    while let Some(p) = code[from..].find("#[cfg(test)]") {
        let start = from + p;
        let mut j = start + "#[cfg(test)]".len();
        // The item ends at its first `;` or at the brace closing its first `{`.
        while j < b.len() && b[j] != b';' && b[j] != b'{' {
            j += 1;
        }
        let end = if j < b.len() && b[j] == b'{' {
            matching_brace(&b, j)
        } else {
            (j + 1).min(b.len())
        };
        for c in &mut b[start..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        from = end;
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rs_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The modules of the crate whose sources are in `src`: a file's module path from its place,
/// or from a `#[path = "..."] mod name;` that declares it. Binaries (`main.rs`, `bin/`) and
/// `*tests.rs` files are left out.
fn crate_at(name: &str, src: &Path) -> Crate {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    files.retain(|f| {
        let rel = f.strip_prefix(src).unwrap();
        !rel.starts_with("bin") && rel != Path::new("main.rs")
    });
    let mut modules = BTreeMap::new();
    for file in &files {
        if file.to_string_lossy().ends_with("tests.rs") {
            continue;
        }
        let rel = file.strip_prefix(src).unwrap().with_extension("");
        let mut path: ModPath = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if path
            .last()
            .is_some_and(|l| l == "mod" || (path.len() == 1 && l == "lib"))
        {
            path.pop();
        }
        modules.insert(path, file.clone());
    }
    // A module declared under `#[cfg(test)]` (`#[cfg(test)] mod net_prop;`) is test code.
    let test_only: Vec<ModPath> = modules
        .iter()
        .flat_map(|(module, file)| {
            let text = strip(&std::fs::read_to_string(file).unwrap());
            let mut found = Vec::new();
            for (i, _) in text.match_indices("#[cfg(test)]") {
                let decl = text[i + 12..].trim_start();
                let decl = decl.strip_prefix("pub(crate) ").unwrap_or(decl);
                if let Some(rest) = decl.strip_prefix("mod ") {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if rest[name.len()..].trim_start().starts_with(';') {
                        let mut path = module.clone();
                        path.push(name);
                        found.push(path);
                    }
                }
            }
            found
        })
        .collect();
    modules.retain(|path, _| !test_only.iter().any(|t| path.starts_with(t)));
    // `#[path]` declarations move the file they name under the declaring module.
    let declared: Vec<(ModPath, PathBuf)> = modules
        .iter()
        .flat_map(|(module, file)| {
            let text = std::fs::read_to_string(file).unwrap();
            let mut found = Vec::new();
            for (i, _) in text.match_indices("#[path = \"") {
                let rest = &text[i + 10..];
                let target = &rest[..rest.find('"').unwrap()];
                let after = &rest[rest.find(']').unwrap() + 1..];
                let decl = after.trim_start().trim_start_matches("pub(crate) ");
                let Some(decl) = decl.strip_prefix("mod ") else {
                    continue;
                };
                let child: String = decl
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let mut path = module.clone();
                path.push(child);
                found.push((path, file.parent().unwrap().join(target)));
            }
            found
        })
        .collect();
    for (path, file) in declared {
        modules.retain(|_, f| *f != file);
        // A `*tests.rs` file is test code wherever it is declared from.
        if !file.to_string_lossy().ends_with("tests.rs") {
            modules.insert(path, file);
        }
    }
    Crate {
        name: name.to_string(),
        src: src.to_path_buf(),
        modules,
    }
}

/// Parses a path tree at `i` (after `crate::`, `super::` or `self::` was consumed into
/// `prefix`): segments, `{a, b::c}` groups, `*` and `as` renames.
fn parse_tree(b: &[u8], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    let mut path = prefix;
    loop {
        skip_ws(i);
        if *i < b.len() && b[*i] == b'{' {
            *i += 1;
            loop {
                skip_ws(i);
                if *i >= b.len() || b[*i] == b'}' {
                    *i += 1;
                    break;
                }
                let before = *i;
                parse_tree(b, i, path.clone(), out);
                skip_ws(i);
                // Past a `,`, or past a character no path starts with.
                if (*i < b.len() && b[*i] == b',') || *i == before {
                    *i += 1;
                }
            }
            return;
        }
        if *i < b.len() && b[*i] == b'*' {
            *i += 1;
            path.push("*".to_string());
            out.push(path);
            return;
        }
        let start = *i;
        while *i < b.len() && is_ident(b[*i]) {
            *i += 1;
        }
        if start == *i {
            out.push(path);
            return;
        }
        path.push(String::from_utf8_lossy(&b[start..*i]).into_owned());
        skip_ws(i);
        if b[*i..].starts_with(b"::") && !b[*i + 2..].starts_with(b"<") {
            *i += 2;
            continue;
        }
        if b[*i..].starts_with(b"as ") {
            *i += 3;
            skip_ws(i);
            while *i < b.len() && is_ident(b[*i]) {
                *i += 1;
            }
        }
        out.push(path);
        return;
    }
}

/// The inline modules (`mod name { ... }`) of a stripped file: name and byte span.
fn inline_modules(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (i, _) in code.match_indices("mod ") {
        if i > 0 && is_ident(b[i - 1]) {
            continue;
        }
        let name: String = code[i + 4..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = code[i + 4 + name.len()..].trim_start();
        if !name.is_empty() && after.starts_with('{') {
            let open = code.len() - after.len();
            out.push((name, open, matching_brace(b, open)));
        }
    }
    out
}

/// Every `crate::`/`super::`/`self::` path of `file` (module `module`), resolved.
fn references(krate: &Crate, module: &ModPath, file: &Path) -> Vec<Reference> {
    let code = without_tests(&strip(&std::fs::read_to_string(file).unwrap()));
    let b = code.as_bytes();
    let inline = inline_modules(&code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let word = ["crate::", "super::", "self::"]
            .into_iter()
            .find(|w| b[i..].starts_with(w.as_bytes()));
        let Some(_) = word.filter(|_| i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':')) else {
            i += 1;
            continue;
        };
        let start = i;
        let mut raw = Vec::new();
        parse_tree(b, &mut i, Vec::new(), &mut raw);
        let text: String = code[start..i]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let mut here = module.clone();
        for (name, from, to) in &inline {
            if (*from..*to).contains(&start) {
                here.push(name.clone());
            }
        }
        for segments in raw {
            let mut absolute: ModPath = Vec::new();
            for (n, s) in segments.iter().enumerate() {
                match (n, s.as_str()) {
                    (0, "crate") => absolute.clear(),
                    (0, "self") => absolute = here.clone(),
                    (0, "super") => {
                        absolute = here.clone();
                        absolute.pop();
                    }
                    (_, "super") => {
                        absolute.pop();
                    }
                    (_, "self") => {}
                    _ => absolute.push(s.clone()),
                }
            }
            let mut target = absolute.clone();
            while !krate.modules.contains_key(&target) && !target.is_empty() {
                target.pop();
            }
            let item = absolute.get(target.len()).cloned();
            out.push(Reference {
                from: here.clone(),
                file: file.to_path_buf(),
                text: text.clone(),
                target,
                item,
            });
        }
    }
    out
}

/// The rule violations of one crate.
fn check(krate: &Crate) -> Vec<Violation> {
    let rel = |f: &Path| {
        format!(
            "{}/src/{}",
            krate.name,
            f.strip_prefix(&krate.src).unwrap().display()
        )
    };
    let mut violations = BTreeMap::new();
    // folder -> child -> child -> one (file, path) that makes the edge
    let mut edges: BTreeMap<ModPath, Graph> = BTreeMap::new();
    for (module, file) in &krate.modules {
        for r in references(krate, module, file) {
            let common = r
                .from
                .iter()
                .zip(&r.target)
                .take_while(|(a, b)| a == b)
                .count();
            if common == r.target.len() && r.target.len() < r.from.len() {
                // An ancestor: only a use of an item of its file (not a child module) is upward.
                let ancestor = &krate.modules[&r.target];
                if let Some(item) = &r.item
                    && ancestor != file
                {
                    let key = format!("{} -> {}", rel(file), r.text);
                    violations.entry(key.clone()).or_insert(Violation {
                        key,
                        message: format!(
                            "upward arrow: {} uses `{}`, an item ({item}) of its ancestor {}",
                            rel(file),
                            r.text,
                            rel(ancestor)
                        ),
                    });
                }
            } else if common < r.target.len() && common < r.from.len() {
                edges
                    .entry(r.from[..common].to_vec())
                    .or_default()
                    .entry(r.from[common].clone())
                    .or_default()
                    .entry(r.target[common].clone())
                    .or_insert_with(|| (rel(&r.file), r.text.clone()));
            }
        }
    }
    for (folder, graph) in &edges {
        for component in circles(graph) {
            let place = if folder.is_empty() {
                format!("top-level modules of {}", krate.name)
            } else {
                format!("modules in {}/src/{}/", krate.name, folder.join("/"))
            };
            let mut message = format!("import circle between {place}: {}", component.join(", "));
            let cycle = witness(graph, &component);
            for pair in cycle.windows(2) {
                let (file, text) = &graph[&pair[0]][&pair[1]];
                write!(
                    message,
                    "\n    {} -> {}: {file} uses `{text}`",
                    pair[0], pair[1]
                )
                .unwrap();
            }
            let key = format!(
                "{}:{}: {}",
                krate.name,
                folder.join("/"),
                component.join(" ")
            );
            violations.insert(key.clone(), Violation { key, message });
        }
    }
    violations.into_values().collect()
}

type Graph = BTreeMap<String, BTreeMap<String, (String, String)>>;

/// The strongly connected components of more than one module (Tarjan), each sorted.
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        for w in s.graph.get(v).into_iter().flat_map(|m| m.keys()) {
            if !s.index.contains_key(w.as_str()) {
                visit(s, w);
                let low = s.low[v].min(s.low[w.as_str()]);
                s.low.insert(v, low);
            } else if s.stack.contains(&w.as_str()) {
                let low = s.low[v].min(s.index[w.as_str()]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// A shortest cycle through the component's first module, inside the component.
fn witness(graph: &Graph, component: &[String]) -> Vec<String> {
    let start = &component[0];
    let mut previous: BTreeMap<&String, &String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for w in graph.get(v).into_iter().flat_map(|m| m.keys()) {
            if w == start {
                let mut cycle = vec![start.clone()];
                let mut at = v;
                while at != start {
                    cycle.push(at.clone());
                    at = previous[at];
                }
                cycle.push(start.clone());
                cycle.reverse();
                return cycle;
            }
            if component.contains(w) && !previous.contains_key(w) {
                previous.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    component.to_vec()
}

fn workspace_violations() -> Vec<Violation> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut all = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(crates)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    names.sort();
    assert!(names.len() >= 5, "crates found: {names:?}");
    for dir in names {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        all.extend(check(&crate_at(&name, &dir.join("src"))));
    }
    all
}

/// The one test (the suite's count stays as it was): the check bites on a planted tree, reads
/// this crate, then finds nothing outside [`ALLOWED`] in the workspace.
#[test]
fn module_graph_has_no_circle_and_no_upward_arrow() {
    planted_circle_and_upward_arrow_are_caught();
    the_code_executor_crate_is_read();
    let violations = workspace_violations();
    let keys: BTreeSet<&str> = violations.iter().map(|v| v.key.as_str()).collect();
    for stale in ALLOWED.iter().filter(|a| !keys.contains(**a)) {
        eprintln!("allowed but no longer found (remove it from ALLOWED): {stale}");
    }
    let failures: Vec<&Violation> = violations
        .iter()
        .filter(|v| !ALLOWED.contains(&v.key.as_str()))
        .collect();
    assert!(
        failures.is_empty(),
        "{} violation(s) of the module layering:\n{}\n(keys: {:#?})",
        failures.len(),
        failures
            .iter()
            .map(|v| v.message.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        failures.iter().map(|v| v.key.as_str()).collect::<Vec<_>>()
    );
}

fn the_code_executor_crate_is_read() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let runtime = crate_at("runtime", &crates.join("runtime").join("src"));
    assert!(
        runtime.modules.len() > 50,
        "modules found: {:?}",
        runtime.modules.keys()
    );
    assert!(runtime.modules.contains_key(&vec!["worker".to_string()]));
    let faces = crate_at("faces", &crates.join("faces").join("src"));
    assert!(
        faces.modules.contains_key(&vec!["server".to_string()]),
        "modules found: {:?}",
        faces.modules.keys()
    );
    let binary = crate_at(
        "code-executor-mcp",
        &crates.join("code-executor-mcp").join("src"),
    );
    assert!(
        binary.modules.contains_key(&vec!["cli".to_string()]),
        "modules found: {:?}",
        binary.modules.keys()
    );
}

fn planted_circle_and_upward_arrow_are_caught() {
    let root = std::env::temp_dir().join(format!("layering-{}", std::process::id()));
    let src = root.join("src");
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "mod a;\nmod b;\npub const LIMIT: u32 = 1;\n");
    write("a.rs", "pub(crate) fn f() { crate::b::g(); }\n");
    write("b.rs", "pub(crate) fn g() {}\n");
    write(
        "a/x.rs",
        "use super::{y::Y, z};\n// crate::LIMIT in a comment is not a use\nconst S: &str = \"crate::LIMIT\";\n",
    );
    write(
        "a/y.rs",
        "pub struct Y;\nfn uses() -> u32 { super::x::X + crate::LIMIT }\n",
    );
    write(
        "a/z.rs",
        "#[cfg(test)]\nmod tests { use super::super::y::Y; }\n",
    );
    write("b/w.rs", "use crate::{a::x as ax, b::{self, Shared}};\n");
    let violations = check(&crate_at("planted", &src));
    std::fs::remove_dir_all(&root).unwrap();
    let messages: Vec<&str> = violations.iter().map(|v| v.message.as_str()).collect();
    let text = messages.join("\n");
    // The circle x <-> y inside a/, with the files and paths that make it.
    assert!(
        text.contains("import circle between modules in planted/src/a/: x, y"),
        "{text}"
    );
    assert!(
        text.contains("x -> y: planted/src/a/x.rs uses `super::{y::Y, z}`"),
        "{text}"
    );
    assert!(
        text.contains("y -> x: planted/src/a/y.rs uses `super::x::X`"),
        "{text}"
    );
    // The upward arrows: a/y.rs to lib.rs's constant, b/w.rs to b.rs's item.
    assert!(
        text.contains("upward arrow: planted/src/a/y.rs uses `crate::LIMIT`, an item (LIMIT) of its ancestor planted/src/lib.rs"),
        "{text}"
    );
    assert!(
        text.contains("upward arrow: planted/src/b/w.rs uses `crate::{a::x as ax, b::{self, Shared}}`, an item (Shared) of its ancestor planted/src/b.rs"),
        "{text}"
    );
    // b -> a at the top (b/w.rs) and a -> b (a.rs): a top-level circle.
    assert!(
        text.contains("import circle between top-level modules of planted: a, b"),
        "{text}"
    );
    // Nothing else: the comment, the string and the test module are not read.
    assert_eq!(violations.len(), 4, "{text}");
}

/// `Result<_, String>` in product code (every crate's `src`, binaries included; test code,
/// comments and strings left out) at most this many. Errors are typed (`thiserror` enums,
/// mapped to the wire in one place): a new one lowers this number, it never rises.
const STRING_ERRORS_AT_MOST: usize = 7;

/// Every `Result<..., String>` in `code`: a `Result<` whose last top-level argument is `String`.
fn string_errors(code: &str) -> usize {
    let b = code.as_bytes();
    let mut n = 0;
    for (i, _) in code.match_indices("Result<") {
        if i > 0 && is_ident(b[i - 1]) {
            continue;
        }
        let (mut depth, mut last_arg) = (0usize, i + "Result<".len());
        for (j, &c) in b.iter().enumerate().skip(i + "Result".len()) {
            match c {
                b'<' | b'(' | b'[' => depth += 1,
                b',' if depth == 1 => last_arg = j + 1,
                b'>' | b')' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        if code[last_arg..j].trim() == "String" && last_arg > i + 7 {
                            n += 1;
                        }
                        break;
                    }
                }
                b';' | b'{' => break,
                _ => {}
            }
        }
    }
    n
}

#[test]
fn errors_are_typed() {
    assert_eq!(string_errors("fn f() -> Result<(), String> {}"), 1);
    assert_eq!(
        string_errors("fn f() -> Result<Vec<(u8, String)>, String> {}"),
        1
    );
    assert_eq!(string_errors("fn f() -> Result<String, Error> {}"), 0);
    assert_eq!(string_errors("fn f() -> io::Result<String> {}"), 0);
    assert_eq!(string_errors("fn f() -> MyResult<(), String> {}"), 0);
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    for dir in std::fs::read_dir(crates).unwrap().flatten() {
        if dir.path().join("src").is_dir() {
            rs_files(&dir.path().join("src"), &mut files);
        }
    }
    let mut found: Vec<(usize, String)> = files
        .iter()
        .filter(|f| !f.to_string_lossy().ends_with("tests.rs"))
        .map(|f| {
            let code = without_tests(&strip(&std::fs::read_to_string(f).unwrap()));
            (string_errors(&code), f.display().to_string())
        })
        .filter(|(n, _)| *n > 0)
        .collect();
    found.sort();
    let total: usize = found.iter().map(|(n, _)| n).sum();
    assert!(
        total <= STRING_ERRORS_AT_MOST,
        "{total} Result<_, String> in product code (at most {STRING_ERRORS_AT_MOST}): give the \
         new ones a thiserror enum\n{found:#?}"
    );
    if total < STRING_ERRORS_AT_MOST {
        eprintln!("{total} Result<_, String> left: lower STRING_ERRORS_AT_MOST to {total}");
    }
}
