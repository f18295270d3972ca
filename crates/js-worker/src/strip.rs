//! TypeScript to JavaScript in the host, before any worker is involved.
//!
//! The code of an execution is the body of an async function, so top-level `await` and
//! `return` are allowed. Types are removed with oxc; nothing is down-levelled (QuickJS-NG
//! speaks modern JavaScript). A syntax error is reported with the user's line and column,
//! and a line map lets runtime stack traces point at the user's lines too.

use std::path::Path;

use oxc::allocator::Allocator;
use oxc::ast::{AstKind, AstType};
use oxc::ast_visit::Visit;
use oxc::codegen::{Codegen, CodegenOptions};
use oxc::parser::{ParseOptions, Parser};
use oxc::semantic::SemanticBuilder;
use oxc::span::SourceType;
use oxc::transformer::{TransformOptions, Transformer};

use crate::nesting::{self, MAX_NESTING};

/// Stack for a thread that runs [`strip_types`]: eight times what the deepest code within the
/// nesting limit needed (2 MiB or less for each of 24 shapes at the limit, in release and debug
/// builds; see the `deepest_code_within_the_limit_strips_on_a_quarter_of_the_stack` test).
/// Only the pages a parse touches are ever committed.
pub const STRIP_STACK_BYTES: usize = 16 << 20;

/// File name the code carries in stack traces and diagnostics.
pub const SOURCE_NAME: &str = "code.ts";

/// JavaScript ready for the worker, with a map back to the user's lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stripped {
    pub code: String,
    /// `line_map[n]` is the 1-based user line that generated line `n + 1` came from.
    pub line_map: Vec<u32>,
}

impl Stripped {
    /// The user's line for a 1-based generated line (the line itself if unknown).
    pub fn original_line(&self, generated: u32) -> u32 {
        generated
            .checked_sub(1)
            .and_then(|i| self.line_map.get(i as usize))
            .copied()
            .unwrap_or(generated)
    }
}

/// A diagnostic that stops the code from running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub message: String,
    /// 1-based line and column in the user's code.
    pub line: u32,
    pub column: u32,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({SOURCE_NAME}:{}:{})",
            self.message, self.line, self.column
        )
    }
}

/// Strips TypeScript syntax from `source`, returning plain JavaScript.
///
/// Code that nests deeper than [`MAX_NESTING`] is refused before it is parsed (see
/// [`crate::nesting`]); below that, parsing needs at most [`STRIP_STACK_BYTES`] of stack, so
/// call this on a thread with at least that much.
pub fn strip_types(source: &str) -> Result<Stripped, SyntaxError> {
    strip(source, false)
}

/// [`strip_types`]; `rewritten`: `source` is code whose module statements were rewritten.
fn strip(source: &str, rewritten: bool) -> Result<Stripped, SyntaxError> {
    if let Err(deep) = nesting::check(source, MAX_NESTING) {
        let (line, column) = line_col(source, u32::try_from(deep.offset).unwrap_or(u32::MAX));
        return Err(SyntaxError {
            message: format!(
                "the code nests more than {MAX_NESTING} levels deep (brackets, or chains of \
                 operators without a `;` or `,`); split it into smaller statements or build \
                 deep data in a loop"
            ),
            line,
            column,
        });
    }
    let allocator = Allocator::default();
    let source_type = SourceType::ts().with_module(true);
    let parsed = Parser::new(&allocator, source, source_type)
        .with_options(ParseOptions {
            allow_return_outside_function: true,
            ..ParseOptions::default()
        })
        .parse();
    if let Some(err) = parsed.diagnostics.errors().next() {
        return Err(to_syntax_error(source, err));
    }
    let mut program = parsed.program;
    // `import`/`export` statements become what they mean in a function body (see
    // `crate::modules`); the rewritten code keeps every line where it was.
    let code = match rewritten {
        false => crate::modules::rewrite(&program, source).map_err(|r| {
            let (line, column) = line_col(source, r.offset);
            SyntaxError {
                message: r.message,
                line,
                column,
            }
        })?,
        true => None,
    };
    if let Some(code) = code {
        return strip(&code, true);
    }
    if is_plain_javascript(&program, source) {
        // Nothing to strip: the code runs as written, and its lines are the user's.
        return Ok(Stripped {
            code: source.to_string(),
            line_map: Vec::new(),
        });
    }
    let semantic = SemanticBuilder::new()
        .with_excess_capacity(2.0)
        .with_enum_eval(true)
        .build(&program);
    if let Some(err) = semantic.diagnostics.errors().next() {
        return Err(to_syntax_error(source, err));
    }
    let scoping = semantic.semantic.into_scoping();
    let transformed = Transformer::new(
        &allocator,
        Path::new(SOURCE_NAME),
        &TransformOptions::default(),
    )
    .build_with_scoping(scoping, &mut program);
    if let Some(err) = transformed.diagnostics.errors().next() {
        return Err(to_syntax_error(source, err));
    }
    let generated = Codegen::new()
        .with_options(CodegenOptions {
            source_map_path: Some(SOURCE_NAME.into()),
            ..CodegenOptions::default()
        })
        .build(&program);
    let line_count = generated.code.lines().count();
    let mut line_map: Vec<u32> = Vec::with_capacity(line_count);
    if let Some(map) = generated.map {
        for token in map.get_tokens() {
            let dst = token.get_dst_line() as usize;
            while line_map.len() <= dst {
                line_map.push(0);
            }
            if line_map[dst] == 0 {
                line_map[dst] = token.get_src_line() + 1;
            }
        }
    }
    // Lines without a token (closing braces) inherit the line above.
    let mut last = 1;
    line_map.resize(line_count.max(line_map.len()), 0);
    for slot in &mut line_map {
        if *slot == 0 {
            *slot = last;
        } else {
            last = *slot;
        }
    }
    Ok(Stripped {
        code: generated.code,
        line_map,
    })
}

/// Whether `program` (parsed as TypeScript from `source`) is plain JavaScript with the same
/// meaning, so it can skip the transform (several times the parse's cost on a cold cache).
/// It must have no TypeScript node, which also catches code that parses both ways with
/// different meanings (`f<T>(x)`: a generic call, or two comparisons), and no TypeScript flag
/// on a JavaScript node (`private x`, `f(x?)`, `declare let`, `abstract`); and `source` must
/// parse as JavaScript too.
fn is_plain_javascript(program: &oxc::ast::ast::Program<'_>, source: &str) -> bool {
    let mut find = FindTypeScript(false);
    find.visit_program(program);
    if find.0 {
        return false;
    }
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, source, SourceType::mjs())
        .with_options(ParseOptions {
            allow_return_outside_function: true,
            ..ParseOptions::default()
        })
        .parse();
    parsed.diagnostics.errors().next().is_none()
}

/// Finds TypeScript syntax: its own nodes, or its flags on JavaScript nodes.
struct FindTypeScript(bool);

impl<'a> Visit<'a> for FindTypeScript {
    fn enter_node(&mut self, kind: AstKind<'a>) {
        use oxc::ast::ast::{
            AccessorPropertyType, FunctionType, MethodDefinitionType, PropertyDefinitionType,
        };
        let t = kind.ty() as u8;
        let node = (AstType::TSThisParameter as u8..=AstType::TSInstantiationExpression as u8)
            .contains(&t)
            && t != AstType::Decorator as u8
            || t >= AstType::JSDocNullableType as u8;
        let flag = match kind {
            AstKind::VariableDeclaration(d) => d.declare,
            AstKind::VariableDeclarator(d) => d.definite,
            AstKind::Function(f) => {
                f.declare
                    || !matches!(
                        f.r#type,
                        FunctionType::FunctionDeclaration | FunctionType::FunctionExpression
                    )
            }
            AstKind::FormalParameter(p) => {
                p.optional || p.accessibility.is_some() || p.readonly || p.r#override
            }
            AstKind::Class(c) => c.r#abstract || c.declare,
            AstKind::MethodDefinition(m) => {
                m.r#override
                    || m.optional
                    || m.accessibility.is_some()
                    || m.r#type != MethodDefinitionType::MethodDefinition
            }
            AstKind::PropertyDefinition(p) => {
                p.declare
                    || p.r#override
                    || p.optional
                    || p.definite
                    || p.readonly
                    || p.accessibility.is_some()
                    || p.r#type != PropertyDefinitionType::PropertyDefinition
            }
            AstKind::AccessorProperty(a) => {
                a.r#override
                    || a.definite
                    || a.accessibility.is_some()
                    || a.r#type != AccessorPropertyType::AccessorProperty
            }
            _ => false,
        };
        self.0 |= node || flag;
    }
}

fn to_syntax_error(source: &str, err: &oxc::diagnostics::OxcDiagnostic) -> SyntaxError {
    let offset = err
        .labels
        .iter()
        .find(|l| l.primary())
        .or_else(|| err.labels.first())
        .map_or(0, |l| l.offset());
    let (line, column) = line_col(source, offset);
    let mut message = err.message.to_string();
    if let Some(help) = &err.help {
        message.push_str("; ");
        message.push_str(help);
    }
    SyntaxError {
        message,
        line,
        column,
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(source: &str, offset: u32) -> (u32, u32) {
    let offset = (offset as usize).min(source.len());
    let before = source.get(..offset).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(column).unwrap_or(u32::MAX),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_interfaces_generics_casts_and_enums_keeping_await_and_return() {
        let src = "interface P { x: number }\n\
                   enum Color { Red, Green }\n\
                   function id<T>(v: T): T { return v }\n\
                   const p = { x: 1 } as P;\n\
                   const r = await Promise.resolve(id<number>(p.x));\n\
                   return [r, Color.Green];\n";
        let out = strip_types(src).unwrap();
        assert!(!out.code.contains("interface"), "{}", out.code);
        assert!(!out.code.contains(": number"), "{}", out.code);
        assert!(out.code.contains("await Promise.resolve"), "{}", out.code);
        assert!(out.code.contains("return [r, Color.Green]"), "{}", out.code);
    }

    #[test]
    fn plain_javascript_runs_as_written_and_typescript_is_stripped() {
        for js in [
            "return 1 + 1",
            "const a = [1, 2].map((x) => x * 2);\nclass A { #p = 1; static s; get p() { return this.#p } }\nreturn a < b > c;",
            "for await (const x of xs) { if (x?.y ?? false) break; }\nreturn `t${1}`;",
        ] {
            let out = strip_types(js).unwrap();
            assert_eq!(out.code, js);
            assert_eq!(out.original_line(2), 2);
        }
        // TypeScript as nodes, as flags of JavaScript nodes, and code that parses both ways
        // with different meanings: all go through the transform.
        for (ts, gone) in [
            ("const a: number = 1; return a;", ": number"),
            ("return f<string>(x);", "<string>"),
            ("class A { private x = 1 }\nreturn new A();", "private"),
            ("function f(x?) { return x }\nreturn f();", "x?"),
            ("declare let d;\nreturn 1;", "declare"),
            ("return (x as any).y!;", " as "),
            ("enum E { A }\nreturn E.A;", "enum"),
            (
                "type T = { a: 1 };\nreturn 1 satisfies number;",
                "satisfies",
            ),
            (
                "class B { constructor(readonly r) {} }\nreturn 1;",
                "readonly",
            ),
            (
                "abstract class C { abstract m(): void }\nreturn 1;",
                "abstract",
            ),
            (
                "class D { x!: number; override y = 1; static z? = 2 }\nreturn 1;",
                "!:",
            ),
            (
                "let e!: number;\nfunction g(this: Window) {}\nreturn 1;",
                "this:",
            ),
            (
                "function h(a: string): void;\nfunction h(a) {}\nreturn h;",
                "void",
            ),
            ("class F { protected m() {} }\nreturn 1;", "protected"),
        ] {
            let out = strip_types(ts).unwrap();
            assert!(!out.code.contains(gone), "{ts} -> {}", out.code);
        }
    }

    /// Runs `strip_types` on a thread with `stack` bytes of stack, as the host does.
    fn strip_on(stack: usize, src: String) -> Result<Stripped, SyntaxError> {
        std::thread::Builder::new()
            .stack_size(stack)
            .spawn(move || strip_types(&src))
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn deepest_code_within_the_limit_strips_on_a_quarter_of_the_stack() {
        for (name, _) in crate::nesting::hostile_shapes(1) {
            // The deepest `n` of this shape that the bound lets through.
            let shape = |n| {
                crate::nesting::hostile_shapes(n)
                    .into_iter()
                    .find(|(s, _)| *s == name)
                    .unwrap()
                    .1
            };
            let (mut lo, mut hi) = (1, 2 * MAX_NESTING);
            while lo < hi {
                let mid = (lo + hi).div_ceil(2);
                if crate::nesting::check(&shape(mid), MAX_NESTING).is_ok() {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            assert!(lo >= MAX_NESTING / 5, "{name}: only {lo} levels pass");
            let out = strip_on(STRIP_STACK_BYTES / 4, shape(lo));
            assert!(out.is_ok(), "{name} at {lo}: {out:?}");
        }
    }

    #[test]
    fn code_nested_past_the_limit_is_a_syntax_error_naming_where() {
        // 100,000 levels: far past what any stack holds, and within the code-size limit.
        for (name, src) in crate::nesting::hostile_shapes(100_000) {
            let err = strip_on(STRIP_STACK_BYTES, src).unwrap_err();
            assert!(
                err.message
                    .starts_with("the code nests more than 1000 levels deep"),
                "{name}: {err}"
            );
            assert!(err.line >= 1 && err.column >= 1, "{name}: {err}");
        }
    }

    #[test]
    fn syntax_error_reports_the_users_line_and_column() {
        let err = strip_types("const a = 1;\nconst b = ;\n").unwrap_err();
        assert_eq!((err.line, err.column), (2, 11), "{err}");
    }

    #[test]
    fn an_import_of_a_package_is_refused_with_a_clear_message() {
        let err = strip_types("const a = 1;\nimport fs from 'fs';\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("no module loader"), "{err}");
        assert!(err.message.contains("./mcp-wrappers"), "{err}");
    }

    // Module statements (crate::modules), through the whole strip.
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
                   import { type Y, echo } from './mcp-wrappers/fx/echo';\n\
                   import './mcp-wrappers';\n\
                   return [zenThinkDeep, z, thinkdeep, filesystem, m, fsw, fsd, echo];\n";
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
        assert!(
            !first.contains("\"X\"") && !first.contains("\"Y\""),
            "{first}"
        );
        assert!(first.contains(r#"const { "echo": echo } = __codeExecutorModule("./mcp-wrappers/fx/echo", ["echo"]"#), "{first}");
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
        assert_eq!(out.original_line(line), 10);
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

    #[test]
    fn line_map_points_back_to_the_users_lines() {
        let src = "type A = string;\n\ninterface B {\n  x: number\n}\nconst a: A = 'x';\nthrow new Error(a);\n";
        let out = strip_types(src).unwrap();
        let gen_line = out.code.lines().position(|l| l.contains("throw")).unwrap() as u32 + 1;
        assert_eq!(
            out.original_line(gen_line),
            7,
            "{}\n{:?}",
            out.code,
            out.line_map
        );
    }
}
