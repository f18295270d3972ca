//! `import` and `export` in code that runs as the body of an async function.
//!
//! The product line's documents write sandbox code as modules: a wrapper file with
//! `export async function zenThinkDeep(...)` followed by the code that uses it,
//! `import { zenThinkDeep } from './lib/mcp/zen'`, or `import { filesystem } from
//! './mcp-wrappers'`. A function body cannot hold those statements, so they are rewritten,
//! before the TypeScript is stripped, into what they mean here:
//!
//! - `export` before a declaration is dropped (the declaration stays, usable by the code);
//!   `export default <declaration or expression>` keeps the declaration, or binds the
//!   expression to a hidden name; `export { a as b }` and re-exports are dropped (a re-export's
//!   module is checked like an import's).
//! - An imported name the code itself exports binds to that declaration (the wrapper file and
//!   the code using it, pasted together), unless the path names the module of every server
//!   (`./mcp-wrappers`). Any other imported name comes from the worker's
//!   virtual wrapper modules (`__codeExecutorModule`, in the prelude: the typed proxies of
//!   `tools`, by server and tool name), bound at the top of the code as imports are hoisted.
//! - Only relative specifiers (`./x`, `../x`) of plain names are modules: nothing is ever read
//!   from disk. A package, an absolute path, a URL or `node:` scheme, an encoded character
//!   (`%2e`, a backslash) or a path that climbs back out of a name (`./a/../b`) is a
//!   `SyntaxError` at the statement, before anything runs.
//!
//! Line numbers are kept: a rewritten statement keeps its newlines, and hoisted bindings go
//! on the first line.

use oxc::ast::ast::{
    Declaration, ExportDefaultDeclarationKind, ImportDeclarationSpecifier, ImportOrExportKind,
    ModuleDeclaration, Program, Statement,
};
use oxc::span::GetSpan;

use crate::strip::{SyntaxError, line_col};

/// The prelude's function an import becomes a call of.
pub const MODULE_FN: &str = "__codeExecutorModule";

/// The hidden name `export default <expression>` binds.
const DEFAULT_NAME: &str = "__codeExecutorDefault";

/// One edit of the source: bytes `start..end` become `text`.
struct Edit {
    start: usize,
    end: usize,
    text: String,
}

/// The source with its module statements rewritten, or `None` when it has none.
pub fn rewrite(program: &Program<'_>, source: &str) -> Result<Option<String>, SyntaxError> {
    let modules: Vec<&Statement<'_>> = program
        .body
        .iter()
        .filter(|s| s.is_module_declaration())
        .collect();
    if modules.is_empty() {
        return Ok(None);
    }
    let fail = |offset: u32, message: String| {
        let (line, column) = line_col(source, offset);
        SyntaxError {
            message,
            line,
            column,
        }
    };
    // What the code exports: exported name -> the local name it binds.
    let mut own: Vec<(String, String)> = Vec::new();
    for stmt in &modules {
        match stmt.to_module_declaration() {
            ModuleDeclaration::ExportDeclaration(d) => {
                for name in declared_names(&d.declaration) {
                    own.push((name.clone(), name));
                }
            }
            ModuleDeclaration::ExportNamedDeclaration(d)
                if d.export_kind != ImportOrExportKind::Type =>
            {
                for s in d.specifiers.iter().filter(|s| s.export_kind.is_value()) {
                    own.push((s.exported.name().to_string(), s.local.name().to_string()));
                }
            }
            ModuleDeclaration::ExportDefaultDeclaration(d) => match &d.declaration {
                ExportDefaultDeclarationKind::FunctionDeclaration(f) => {
                    let name = f.name().map_or(DEFAULT_NAME.into(), |n| n.to_string());
                    own.push(("default".into(), name));
                }
                ExportDefaultDeclarationKind::ClassDeclaration(c) => {
                    let name = c.name().map_or(DEFAULT_NAME.into(), |n| n.to_string());
                    own.push(("default".into(), name));
                }
                ExportDefaultDeclarationKind::TSInterfaceDeclaration(_) => {}
                _ => own.push(("default".into(), DEFAULT_NAME.into())),
            },
            _ => {}
        }
    }
    let own_of = |name: &str| own.iter().find(|(e, _)| e == name).map(|(_, l)| l.as_str());
    let own_list = serde_json::to_string(
        &own.iter()
            .filter(|(e, _)| e != "default")
            .map(|(e, _)| e.as_str())
            .collect::<Vec<_>>(),
    )
    .unwrap_or_else(|_| "[]".into());

    let mut edits: Vec<Edit> = Vec::new();
    let mut hoisted = String::new();
    for stmt in &modules {
        let span = stmt.span();
        let (start, end) = (span.start as usize, span.end as usize);
        let blank = |from: usize, to: usize| Edit {
            start: from,
            end: to,
            text: blanked(&source[from..to]),
        };
        match stmt.to_module_declaration() {
            ModuleDeclaration::ExportDeclaration(d) => {
                edits.push(blank(start, d.declaration.span().start as usize));
            }
            ModuleDeclaration::ExportNamedDeclaration(_) => edits.push(blank(start, end)),
            ModuleDeclaration::ExportDefaultDeclaration(d) => {
                let decl_start = d.declaration.span().start as usize;
                let named = match &d.declaration {
                    ExportDefaultDeclarationKind::FunctionDeclaration(f) => f.id.is_some(),
                    ExportDefaultDeclarationKind::ClassDeclaration(c) => c.id.is_some(),
                    ExportDefaultDeclarationKind::TSInterfaceDeclaration(_) => true,
                    _ => false,
                };
                if named {
                    edits.push(blank(start, decl_start));
                } else {
                    edits.push(Edit {
                        start,
                        end: decl_start,
                        text: format!("const {DEFAULT_NAME} = "),
                    });
                    // A function or class declaration ends without `;`: the expression it
                    // becomes must not run into the next line.
                    let decl_end = d.declaration.span().end as usize;
                    edits.push(Edit {
                        start: decl_end,
                        end: decl_end,
                        text: ";".into(),
                    });
                }
            }
            ModuleDeclaration::ExportFromDeclaration(d) => {
                check_specifier(&d.source.value).map_err(|m| fail(d.source.span.start, m))?;
                edits.push(blank(start, end));
            }
            ModuleDeclaration::ExportAllDeclaration(d) => {
                check_specifier(&d.source.value).map_err(|m| fail(d.source.span.start, m))?;
                edits.push(blank(start, end));
            }
            ModuleDeclaration::TSExportAssignment(_)
            | ModuleDeclaration::TSNamespaceExportDeclaration(_) => {
                return Err(fail(
                    span.start,
                    "`export =` and `export as namespace` are for declaration files; \
                     write `export` before a declaration, or nothing"
                        .into(),
                ));
            }
            ModuleDeclaration::ImportDeclaration(d) => {
                let spec = d.source.value.as_str();
                check_specifier(spec).map_err(|m| fail(d.source.span.start, m))?;
                edits.push(blank(start, end));
                if d.import_kind == ImportOrExportKind::Type {
                    continue;
                }
                // name in the module -> local binding
                let mut wanted: Vec<(String, String)> = Vec::new();
                let mut namespaces: Vec<(String, String)> = Vec::new();
                let mut aliases = String::new();
                // `./mcp-wrappers` is always the servers' module; any other path may be the
                // file this code's own exports came from.
                let root = names_wrapper_root(spec);
                let mut bind =
                    |imported: &str, local: &str| match own_of(imported).filter(|_| !root) {
                        Some(l) if l == local => {}
                        Some(l) => aliases.push_str(&format!("const {local} = {l}; ")),
                        None => wanted.push((imported.to_string(), local.to_string())),
                    };
                for s in d.specifiers.iter().flatten() {
                    match s {
                        ImportDeclarationSpecifier::ImportSpecifier(s) => {
                            if s.import_kind.is_value() {
                                bind(&s.imported.name(), &s.local.name);
                            }
                        }
                        ImportDeclarationSpecifier::ImportDefaultSpecifier(s) => {
                            bind("default", &s.local.name);
                        }
                        ImportDeclarationSpecifier::ImportNamespaceSpecifier(s) => {
                            // The module itself; this code's own exports are imported by name.
                            namespaces.push(("default".into(), s.local.name.to_string()));
                        }
                    }
                }
                wanted.extend(namespaces);
                if !aliases.is_empty() {
                    // At the statement: the declaration it names may be a `const` above.
                    edits.pop();
                    let mut text = aliases;
                    text.push_str(&newlines(&source[start..end]));
                    edits.push(Edit { start, end, text });
                }
                if wanted.is_empty() && d.specifiers.as_ref().is_some_and(|s| !s.is_empty()) {
                    continue;
                }
                let names: Vec<&str> = wanted.iter().map(|(i, _)| i.as_str()).collect();
                let pattern: Vec<String> = wanted
                    .iter()
                    .map(|(i, l)| format!("{}: {l}", js_string(i)))
                    .collect();
                let call = format!(
                    "{MODULE_FN}({}, {}, {own_list})",
                    js_string(spec),
                    serde_json::to_string(&names).unwrap_or_else(|_| "[]".into())
                );
                if pattern.is_empty() {
                    hoisted.push_str(&format!("{call}; "));
                } else {
                    hoisted.push_str(&format!("const {{ {} }} = {call}; ", pattern.join(", ")));
                }
            }
        }
    }
    edits.sort_by_key(|e| (e.start, e.end));
    let mut out = String::with_capacity(source.len() + hoisted.len() + 64);
    // After a hashbang line or a directive prologue would change their meaning; the first
    // line is where imports go (hoisted, as imports are), keeping every line number.
    out.push_str(&hoisted);
    let mut at = 0;
    for e in &edits {
        if e.start < at {
            continue;
        }
        out.push_str(&source[at..e.start]);
        out.push_str(&e.text);
        at = e.end;
    }
    out.push_str(&source[at..]);
    Ok(Some(out))
}

/// The names a declaration binds that code can use (types bind none).
fn declared_names(decl: &Declaration<'_>) -> Vec<String> {
    match decl {
        Declaration::VariableDeclaration(v) => v
            .declarations
            .iter()
            .flat_map(|d| d.id.get_binding_identifiers())
            .map(|b| b.name.to_string())
            .collect(),
        Declaration::FunctionDeclaration(_)
        | Declaration::ClassDeclaration(_)
        | Declaration::TSEnumDeclaration(_)
        | Declaration::TSNamespaceDeclaration(_) => {
            decl.id().map(|b| b.name.to_string()).into_iter().collect()
        }
        _ => Vec::new(),
    }
}

/// `text` with everything but its line breaks turned into spaces (a space a character, so
/// the columns after it on its last line stay).
fn blanked(text: &str) -> String {
    text.chars()
        .map(|c| if c == '\n' || c == '\r' { c } else { ' ' })
        .collect()
}

/// The newlines of `text`, to keep the lines after it where they were.
fn newlines(text: &str) -> String {
    "\n".repeat(text.matches('\n').count())
}

/// `s` as a JavaScript string literal.
fn js_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The names of the module of every server (the prelude's `WRAPPER_ROOTS`).
const WRAPPER_ROOTS: [&str; 5] = [
    "mcp-wrappers",
    "mcp_wrappers",
    "mcp-tools",
    "mcp_tools",
    "wrappers",
];

/// Whether `spec` names the module of every server (`./mcp-wrappers`, `../mcp-wrappers/index.ts`),
/// as the prelude reads it: the last name, without an extension or a trailing `index`.
fn names_wrapper_root(spec: &str) -> bool {
    let mut names: Vec<&str> = spec
        .split('/')
        .filter(|s| !s.is_empty() && *s != "." && *s != "..")
        .collect();
    let strip = |n: &str| -> String {
        let n = n.strip_suffix(".d.ts").unwrap_or(n);
        for ext in [".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"] {
            if let Some(base) = n.strip_suffix(ext) {
                return base.to_string();
            }
        }
        n.to_string()
    };
    if names.len() > 1 && names.last().map(|n| strip(n)) == Some("index".into()) {
        names.pop();
    }
    names
        .last()
        .is_some_and(|n| WRAPPER_ROOTS.contains(&strip(n).as_str()))
}

/// Whether a specifier can name a virtual wrapper module; the error says why not.
pub fn check_specifier(spec: &str) -> Result<(), String> {
    let shown = js_string(spec);
    let modules = "only the virtual wrapper modules can be imported: \"./mcp-wrappers\" (every \
                   server), \"./mcp-wrappers/<server>\" or any relative path ending in a server's \
                   name (\"./lib/mcp/zen\"), and names this code exports itself; files are read \
                   with fs (when granted), tools called with callMCPTool(...) or \
                   tools.<server>.<tool>(...)";
    if !(spec.starts_with("./") || spec.starts_with("../")) {
        let what = if spec.starts_with('/') {
            "an absolute path"
        } else if spec.contains(':') {
            "a URL or scheme (node:, file:, https:)"
        } else {
            "a package"
        };
        return Err(format!(
            "import {shown}: {what}; the sandbox has no module loader and reads no files to \
             import: {modules}"
        ));
    }
    if let Some(c) = spec
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '@' | '$')))
    {
        return Err(format!(
            "import {shown}: {:?} is not a character of a module name here (no encodings, \
             backslashes or spaces); {modules}",
            c
        ));
    }
    let mut named = false;
    for segment in spec.split('/') {
        match segment {
            "" => return Err(format!("import {shown}: an empty path segment; {modules}")),
            "." | ".." if named => {
                return Err(format!(
                    "import {shown}: a path that climbs back out of a name is not a module \
                     name; {modules}"
                ));
            }
            "." | ".." => {}
            _ => named = true,
        }
    }
    if !named {
        return Err(format!("import {shown}: names no module; {modules}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strip::strip_types;

    #[test]
    fn specifiers_that_could_name_a_file_or_package_are_refused() {
        for (spec, why) in [
            ("fs", "a package"),
            ("node:fs", "scheme"),
            ("https://example.com/x.js", "scheme"),
            ("file:///etc/passwd", "scheme"),
            ("/etc/passwd", "absolute path"),
            ("./%2e%2e/etc/passwd", "not a character"),
            ("./..\\etc", "not a character"),
            ("./a b", "not a character"),
            ("./mcp-wrappers/../../../etc/passwd", "climbs back"),
            ("./lib/./zen", "climbs back"),
            ("./", "empty path segment"),
            ("..", "a package"),
            ("./ｍcp", "not a character"),
        ] {
            let err = check_specifier(spec).unwrap_err();
            assert!(err.contains(why), "{spec}: {err}");
            assert!(err.contains("./mcp-wrappers"), "{spec}: {err}");
        }
        for spec in [
            "./mcp-wrappers",
            "../mcp-wrappers",
            "../../lib/mcp/zen.ts",
            "./mcp-wrappers/filesystem/index.js",
            "./@scope/x",
        ] {
            assert_eq!(check_specifier(spec), Ok(()), "{spec}");
        }
    }

    #[test]
    fn an_escaped_specifier_is_checked_as_the_string_it_is() {
        // `\u002e\u002e` is "..": the parser cooks the literal; the check sees the dots.
        let err =
            strip_types("import { x } from './a/\\u002e\\u002e/etc';\nreturn x;").unwrap_err();
        assert!(err.message.contains("climbs back"), "{err}");
        assert_eq!(err.line, 1);
        let err = strip_types("import { x } from 'node\\u003afs';").unwrap_err();
        assert!(err.message.contains("scheme"), "{err}");
    }

    #[test]
    fn exports_keep_their_declarations_and_lines() {
        let src = "export async function zenThinkDeep(q: string) {\n  return q;\n}\n\
                   export const a = 1, { b } = { b: 2 };\nexport class K {}\nexport enum E { X }\n\
                   export interface I { x: number }\nexport type T = string;\n\
                   const c = 3;\nexport { c as d };\nthrow new Error('line 11');\n";
        let out = strip_types(src).unwrap();
        assert!(!out.code.contains("export"), "{}", out.code);
        for kept in [
            "async function zenThinkDeep",
            "const a = 1",
            "class K",
            "E[\"X\"]",
        ] {
            assert!(out.code.contains(kept), "{kept}: {}", out.code);
        }
        let line = out.code.lines().position(|l| l.contains("throw")).unwrap() as u32 + 1;
        assert_eq!(out.original_line(line), 11, "{}", out.code);
    }

    #[test]
    fn export_default_forms_are_declarations_or_a_hidden_binding() {
        for (src, kept) in [
            (
                "export default function f() { return 1 }\nreturn f();",
                "function f()",
            ),
            ("export default class C {}\nreturn new C();", "class C"),
            (
                "export default async function () { return 1 }\n(0);",
                "__codeExecutorDefault = async function",
            ),
            (
                "export default { a: 1 }\nreturn 1;",
                "__codeExecutorDefault = { a: 1 }",
            ),
            ("export default interface I {}\nreturn 1;", "return 1"),
        ] {
            let out = strip_types(src).unwrap();
            assert!(out.code.contains(kept), "{src}: {}", out.code);
            assert!(!out.code.contains("export"), "{src}: {}", out.code);
        }
    }

    #[test]
    fn imports_bind_own_exports_or_call_the_module_function_on_the_first_line() {
        let src = "export async function zenThinkDeep(q) { return q; }\n\
                   import { zenThinkDeep } from './lib/mcp/zen';\n\
                   import { zenThinkDeep as z, thinkdeep } from './lib/mcp/zen';\n\
                   import { filesystem, memory as m } from './mcp-wrappers';\n\
                   import * as fsw from './mcp-wrappers/filesystem';\n\
                   import fsd from './mcp-wrappers/filesystem';\n\
                   import type { X } from './mcp-wrappers';\n\
                   import './mcp-wrappers';\n\
                   return [zenThinkDeep, z, thinkdeep, filesystem, m, fsw, fsd];\n";
        let out = strip_types(src).unwrap();
        let first = out.code.lines().next().unwrap();
        for call in [
            r#"const { "thinkdeep": thinkdeep } = __codeExecutorModule("./lib/mcp/zen", ["thinkdeep"], ["zenThinkDeep"]);"#,
            r#"const { "filesystem": filesystem, "memory": m } = __codeExecutorModule("./mcp-wrappers", ["filesystem","memory"]"#,
            r#"const { "default": fsw } = __codeExecutorModule("./mcp-wrappers/filesystem", ["default"]"#,
            r#"const { "default": fsd } = "#,
            r#"__codeExecutorModule("./mcp-wrappers", [], ["zenThinkDeep"]);"#,
        ] {
            assert!(first.contains(call), "{call}\n{first}");
        }
        assert!(!first.contains("\"X\""), "{first}");
        assert!(out.code.contains("const z = zenThinkDeep;"), "{}", out.code);
        assert_eq!(
            out.code.lines().count(),
            src.lines().count(),
            "{}",
            out.code
        );
        let line = out
            .code
            .lines()
            .position(|l| l.contains("return ["))
            .unwrap() as u32
            + 1;
        assert_eq!(out.original_line(line), 9);
    }

    #[test]
    fn the_servers_module_is_never_this_codes_own_exports() {
        let out = strip_types(
            "export default function b() {}\nexport const fx = 1;\n\
             import mw, { fx as f } from './mcp-wrappers/index.js';\n\
             import own, { fx as g } from './lib/mine';\nreturn [mw, f, own, g];",
        )
        .unwrap();
        assert!(out.code.contains(r#"const { "default": mw, "fx": f } = __codeExecutorModule("./mcp-wrappers/index.js""#), "{}", out.code);
        assert!(
            out.code.contains("const own = b; const g = fx;"),
            "{}",
            out.code
        );
        for spec in [
            "./mcp-wrappers",
            "../mcp_tools/index.ts",
            "./wrappers.js",
            "./x/mcp-tools/index",
        ] {
            assert!(names_wrapper_root(spec), "{spec}");
        }
        for spec in ["./mcp-wrappers/fx", "./index", "./lib/mcp/zen"] {
            assert!(!names_wrapper_root(spec), "{spec}");
        }
    }

    #[test]
    fn module_syntax_that_has_no_meaning_here_is_a_syntax_error() {
        for (src, says) in [
            ("const a = 1;\nexport = a;", "export ="),
            ("import fs from 'fs';", "a package"),
            ("export * from 'node:fs';", "scheme"),
            ("export { readFile } from '/etc/passwd';", "absolute path"),
        ] {
            let err = strip_types(src).unwrap_err();
            assert!(err.message.contains(says), "{src}: {err}");
        }
    }
}
