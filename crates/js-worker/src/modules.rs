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

/// The prelude's function an import becomes a call of.
pub const MODULE_FN: &str = "__codeExecutorModule";

/// The hidden name `export default <expression>` binds.
const DEFAULT_NAME: &str = "__codeExecutorDefault";

/// A module statement that means nothing here: what is wrong, at a byte offset of the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub message: String,
    pub offset: u32,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.offset)
    }
}

impl std::error::Error for Refused {}

/// One edit of the source: bytes `start..end` become `text`.
struct Edit {
    start: usize,
    end: usize,
    text: String,
}

/// The source with its module statements rewritten, or `None` when it has none.
pub fn rewrite(program: &Program<'_>, source: &str) -> Result<Option<String>, Refused> {
    let modules: Vec<&Statement<'_>> = program
        .body
        .iter()
        .filter(|s| s.is_module_declaration())
        .collect();
    if modules.is_empty() {
        return Ok(None);
    }
    let fail = |offset: u32, message: String| Refused { message, offset };
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
                check_specifier(&d.source.value)
                    .map_err(|e| fail(d.source.span.start, e.to_string()))?;
                edits.push(blank(start, end));
            }
            ModuleDeclaration::ExportAllDeclaration(d) => {
                check_specifier(&d.source.value)
                    .map_err(|e| fail(d.source.span.start, e.to_string()))?;
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
                check_specifier(spec).map_err(|e| fail(d.source.span.start, e.to_string()))?;
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

/// What the modules here are, for every refused specifier.
const MODULES: &str = "only the virtual wrapper modules can be imported: \"./mcp-wrappers\" (every \
                       server), \"./mcp-wrappers/<server>\" or any relative path ending in a \
                       server's name (\"./lib/mcp/zen\"), and names this code exports itself; \
                       files are read with fs (when granted), tools called with callMCPTool(...) \
                       or tools.<server>.<tool>(...)";

/// Why a specifier names no module here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadSpecifier {
    /// Not `./` or `../`: a package, an absolute path, or a URL or scheme (`what` says which).
    NotRelative {
        spec: String,
        what: &'static str,
    },
    /// A character no module name here has (an encoding, a backslash, a space).
    Character {
        spec: String,
        found: char,
    },
    EmptySegment {
        spec: String,
    },
    /// `.` or `..` after a name (`./a/../b`).
    ClimbsBack {
        spec: String,
    },
    /// Only dots (`./`, `..`).
    NoName {
        spec: String,
    },
}

impl std::fmt::Display for BadSpecifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadSpecifier::NotRelative { spec, what } => write!(
                f,
                "import {}: {what}; the sandbox has no module loader and reads no files to \
                 import: {MODULES}",
                js_string(spec)
            ),
            BadSpecifier::Character { spec, found } => write!(
                f,
                "import {}: {found:?} is not a character of a module name here (no encodings, \
                 backslashes or spaces); {MODULES}",
                js_string(spec)
            ),
            BadSpecifier::EmptySegment { spec } => write!(
                f,
                "import {}: an empty path segment; {MODULES}",
                js_string(spec)
            ),
            BadSpecifier::ClimbsBack { spec } => write!(
                f,
                "import {}: a path that climbs back out of a name is not a module name; \
                 {MODULES}",
                js_string(spec)
            ),
            BadSpecifier::NoName { spec } => {
                write!(f, "import {}: names no module; {MODULES}", js_string(spec))
            }
        }
    }
}

impl std::error::Error for BadSpecifier {}

/// Whether a specifier can name a virtual wrapper module; the error says why not.
pub fn check_specifier(spec: &str) -> Result<(), BadSpecifier> {
    let owned = || spec.to_string();
    if !(spec.starts_with("./") || spec.starts_with("../")) {
        let what = if spec.starts_with('/') {
            "an absolute path"
        } else if spec.contains(':') {
            "a URL or scheme (node:, file:, https:)"
        } else {
            "a package"
        };
        return Err(BadSpecifier::NotRelative {
            spec: owned(),
            what,
        });
    }
    if let Some(found) = spec
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '@' | '$')))
    {
        return Err(BadSpecifier::Character {
            spec: owned(),
            found,
        });
    }
    let mut named = false;
    for segment in spec.split('/') {
        match segment {
            "" => return Err(BadSpecifier::EmptySegment { spec: owned() }),
            "." | ".." if named => return Err(BadSpecifier::ClimbsBack { spec: owned() }),
            "." | ".." => {}
            _ => named = true,
        }
    }
    if !named {
        return Err(BadSpecifier::NoName { spec: owned() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let err = check_specifier(spec).unwrap_err().to_string();
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
    fn the_servers_module_is_named_by_its_last_name() {
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
}
