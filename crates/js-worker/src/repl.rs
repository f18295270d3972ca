//! Session code keeps what it declares at top level, as a REPL does.
//!
//! The code of an execution is the body of an async function, so its `const`, `let`, `var`,
//! `function` and `class` declarations would die with the call. In a session the same worker
//! runs the next execution, and the agent expects `const rows = ...` in one call to be there in
//! the next. [`globalize`] rewrites the top-level declarations of (already stripped)
//! JavaScript into assignments to globals, as Node's REPL does for top-level `await`:
//!
//! - `const a = 1, {b} = o;` becomes `; (a = 1), ({b} = o);`
//! - `let x;` becomes `; (x = undefined);` and `var y;` becomes `; void 0;` (a `var` keeps its
//!   value)
//! - `class C {}` becomes `;C = class C {};`
//! - `function f() {}` stays where it is (it is hoisted within the body) and is copied to the
//!   global object when the body starts.
//!
//! Every declared name is created on the global object first (`undefined` if it is not there
//! yet), so the assignments also work in strict code. Only newlines of the code itself are kept,
//! never added: line numbers in stack traces stay the user's. Declarations nested in blocks,
//! loops and functions keep their own scope.

use oxc::allocator::Allocator;
use oxc::ast::ast::{Statement, VariableDeclarationKind};
use oxc::parser::{ParseOptions, Parser};
use oxc::span::SourceType;

/// One edit of the source: replace `len` bytes at `at` with `text`.
struct Edit {
    at: usize,
    len: usize,
    text: String,
}

impl Edit {
    fn insert(at: usize, text: &str) -> Edit {
        Edit {
            at,
            len: 0,
            text: text.into(),
        }
    }
}

/// `js` with its top-level declarations turned into globals (see the module docs). Code that
/// does not parse is returned as it is, for the engine to report.
pub fn globalize(js: &str) -> String {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, js, SourceType::mjs())
        .with_options(ParseOptions {
            allow_return_outside_function: true,
            ..ParseOptions::default()
        })
        .parse();
    if parsed.diagnostics.errors().next().is_some() {
        return js.to_string();
    }
    let mut names: Vec<String> = Vec::new();
    let mut functions: Vec<String> = Vec::new();
    let mut edits: Vec<Edit> = Vec::new();
    for stmt in &parsed.program.body {
        match stmt {
            Statement::VariableDeclaration(decl) => {
                if matches!(
                    decl.kind,
                    VariableDeclarationKind::Using | VariableDeclarationKind::AwaitUsing
                ) {
                    continue; // disposed at the end of the body: nothing to keep
                }
                let start = decl.span.start as usize;
                let keyword = match decl.kind {
                    VariableDeclarationKind::Var => "var",
                    VariableDeclarationKind::Let => "let",
                    _ => "const",
                };
                edits.push(Edit {
                    at: start,
                    len: keyword.len(),
                    text: ";".into(),
                });
                for d in &decl.declarations {
                    for ident in d.id.get_binding_identifiers() {
                        names.push(ident.name.to_string());
                    }
                    let (s, e) = (d.span.start as usize, d.span.end as usize);
                    let mut wrap = |after: &str| {
                        edits.push(Edit::insert(s, "("));
                        edits.push(Edit::insert(e, after));
                    };
                    match (&d.init, decl.kind) {
                        (Some(_), _) => wrap(")"),
                        (None, VariableDeclarationKind::Var) => edits.push(Edit {
                            at: s,
                            len: e - s,
                            text: "void 0".into(),
                        }),
                        (None, _) => wrap(" = undefined)"),
                    }
                }
            }
            Statement::FunctionDeclaration(f) => {
                if let Some(id) = &f.id {
                    functions.push(id.name.to_string());
                }
            }
            Statement::ClassDeclaration(c) => {
                if let Some(id) = &c.id {
                    names.push(id.name.to_string());
                    edits.push(Edit::insert(
                        c.span.start as usize,
                        &format!(";{} = ", id.name),
                    ));
                    edits.push(Edit::insert(c.span.end as usize, ";"));
                }
            }
            _ => {}
        }
    }
    if names.is_empty() && functions.is_empty() {
        return js.to_string();
    }
    names.sort();
    names.dedup();
    let quoted = |v: &[String]| {
        v.iter()
            .map(|n| serde_json::to_string(n).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",")
    };
    // One line, before the code's first line: the code's lines keep their numbers.
    let mut out = String::with_capacity(js.len() + 64 * (names.len() + functions.len()));
    if !names.is_empty() {
        out.push_str(&format!(
            "for (const n of [{}]) if (!(n in globalThis)) globalThis[n] = undefined;",
            quoted(&names)
        ));
    }
    for f in &functions {
        out.push_str(&format!(
            "globalThis[{}] = {f};",
            quoted(std::slice::from_ref(f))
        ));
    }
    // Edits at the same place apply in the order they were made (a declarator's `)` before
    // the next edit at that offset).
    edits.sort_by_key(|e| e.at);
    let mut pos = 0;
    for e in &edits {
        if e.at < pos {
            continue;
        }
        out.push_str(&js[pos..e.at]);
        out.push_str(&e.text);
        pos = e.at + e.len;
    }
    out.push_str(&js[pos..]);
    out
}

#[cfg(test)]
mod tests {
    use super::globalize;

    #[test]
    fn declarations_become_assignments_on_the_same_lines() {
        let code = "const a = 1, {b, c: [d]} = o;\nlet x;\nvar y;\nvar z = 2\nclass C {}\n";
        let out = globalize(code);
        assert_eq!(
            out,
            r#"for (const n of ["C","a","b","d","x","y","z"]) if (!(n in globalThis)) globalThis[n] = undefined;"#
                .to_string()
                + "; (a = 1), ({b, c: [d]} = o);\n; (x = undefined);\n; void 0;\n; (z = 2)\n;C = class C {};\n"
        );
        assert_eq!(out.lines().count(), code.lines().count());
    }

    #[test]
    fn functions_are_copied_and_nested_declarations_kept() {
        let code = "function f() { const inner = 1; return inner }\nif (1) { let k = 2 }\nfor (let i = 0; i < 1; i++) {}";
        let out = globalize(code);
        assert_eq!(out, format!("globalThis[\"f\"] = f;{code}"));
    }

    #[test]
    fn code_without_declarations_or_that_does_not_parse_is_unchanged() {
        for code in ["return 1 + 1", "await x(); return y", "const = ;"] {
            assert_eq!(globalize(code), code);
        }
    }

    #[test]
    fn a_line_starting_with_a_paren_cannot_join_the_line_above() {
        let out = globalize("foo()\nconst a = 1\n");
        assert!(out.ends_with("foo()\n; (a = 1)\n"), "{out}");
    }
}
