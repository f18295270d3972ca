//! A bound on how deeply code nests, checked before the code is parsed.
//!
//! oxc's parser, semantic pass, transform and code generator each recurse once per level of
//! the syntax tree, with no limit of their own: 20 KB of `[[[[...` or `!!!!...` overflows the
//! stack of the thread that parses it, and a stack overflow aborts the whole process. This
//! scan runs first, in one pass and without recursion, and refuses code whose tree could be
//! deeper than a limit, so that the parse that follows fits a stack of known size.
//!
//! The scan over-approximates the depth of the tree: every open bracket (`(`, `[`, `{`, a
//! template's `${`) is a level, and so is every operator and keyword operator since the last
//! `;` or `,` at the same level, since chains (`a+a+a`, `!!!x`, `a?b:a?b:c`, `x=>x=>x`,
//! `a.b.c`, `f()()()`, `A<A<A>>`, `await await x`) make a tree as deep as they are long. A new
//! statement resets the count: a newline between a value and a word, or a statement keyword
//! after a value. Strings, comments, regular expression literals and the text of templates
//! are skipped. Code a person or an agent writes stays far below the limit.

/// The deepest nesting [`check`] lets through by default. Hand-written code rarely goes past
/// 50; a long `+` chain of generated strings might reach a few hundred.
pub const MAX_NESTING: usize = 1000;

/// Code that nests deeper than the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep {
    /// The depth reached where the scan stopped (one more than the limit).
    pub depth: usize,
    /// Byte offset where the limit was passed.
    pub offset: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    /// `(`, `[` or `{`.
    Bracket,
    /// `${` inside a template: its `}` returns to the template's text.
    Template,
}

#[derive(Default)]
struct Count {
    /// Operators since the last `;` or `,`.
    chain: usize,
    /// Statements that take a statement as their body (`if`, `else`, `for`, `while`, `do`,
    /// `with`): `if (a) if (b) ...` and `else if` chains nest without brackets, and where
    /// such a body ends is only known to the parser, so these are never reset in a level.
    statements: usize,
}

struct Level {
    open: Open,
    count: Count,
}

/// What the previous token was, for regular expressions and statement boundaries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prev {
    /// Start of the code, an operator, an open bracket, `;` or `,`: a `/` here starts a
    /// regular expression.
    Operator,
    /// A name, literal or closing bracket.
    Value,
}

/// Keywords that act as operators: they continue an expression (and a `/` after them starts
/// a regular expression).
const OPERATOR_WORDS: &[&str] = &[
    "typeof",
    "void",
    "delete",
    "await",
    "new",
    "in",
    "instanceof",
    "as",
    "satisfies",
    "keyof",
    "yield",
    "return",
    "throw",
    "case",
    "extends",
    "infer",
    "is",
    "of",
    "unique",
    "readonly",
    "asserts",
];

/// Keywords whose statement takes another statement as its body.
const BODY_WORDS: &[&str] = &["if", "else", "for", "while", "do", "with"];

/// Keywords that start a statement: after a value they end the previous one.
const STATEMENT_WORDS: &[&str] = &[
    "function",
    "const",
    "let",
    "var",
    "if",
    "for",
    "while",
    "do",
    "class",
    "try",
    "switch",
    "break",
    "continue",
    "import",
    "export",
    "interface",
    "type",
    "enum",
];

struct Scan<'a> {
    src: &'a [u8],
    pos: usize,
    levels: Vec<Level>,
    /// The counts of the outermost level (outside every bracket).
    top: Count,
    /// `levels.len()` plus every level's counts: the depth estimate.
    depth: usize,
    limit: usize,
    prev: Prev,
    newline: bool,
}

/// Checks that `source` nests at most `limit` levels deep (as estimated; see the module docs).
pub fn check(source: &str, limit: usize) -> Result<(), TooDeep> {
    let mut scan = Scan {
        src: source.as_bytes(),
        pos: 0,
        levels: Vec::new(),
        top: Count::default(),
        depth: 0,
        limit,
        prev: Prev::Operator,
        newline: false,
    };
    scan.run()
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'\\' || b == b'#' || b >= 0x80
}

impl Scan<'_> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.src.get(self.pos + ahead).copied()
    }

    fn count(&mut self) -> &mut Count {
        match self.levels.last_mut() {
            Some(l) => &mut l.count,
            None => &mut self.top,
        }
    }

    fn grow(&mut self) -> Result<(), TooDeep> {
        self.depth += 1;
        if self.depth > self.limit {
            return Err(TooDeep {
                depth: self.depth,
                offset: self.pos,
            });
        }
        Ok(())
    }

    /// One more operator in the current level's chain.
    fn link(&mut self) -> Result<(), TooDeep> {
        self.count().chain += 1;
        self.grow()
    }

    /// One more statement whose body is a statement.
    fn body(&mut self) -> Result<(), TooDeep> {
        self.count().statements += 1;
        self.grow()
    }

    /// A new statement or list element: the current level's chain starts over.
    fn reset(&mut self) {
        let chain = std::mem::take(&mut self.count().chain);
        self.depth -= chain;
    }

    fn push(&mut self, open: Open) -> Result<(), TooDeep> {
        self.levels.push(Level {
            open,
            count: Count::default(),
        });
        self.grow()
    }

    /// Closes the innermost level; `None` when there is none (the parser reports that).
    fn pop(&mut self) -> Option<Open> {
        let level = self.levels.pop()?;
        self.depth -= 1 + level.count.chain + level.count.statements;
        Some(level.open)
    }

    fn run(&mut self) -> Result<(), TooDeep> {
        while let Some(b) = self.peek(0) {
            match b {
                b'\n' | b'\r' => {
                    self.newline = true;
                    self.pos += 1;
                }
                b' ' | b'\t' | 0x0b | 0x0c => self.pos += 1,
                b'/' if self.peek(1) == Some(b'/') => self.skip_line(),
                b'/' if self.peek(1) == Some(b'*') => self.skip_block_comment(),
                b'/' if self.prev == Prev::Operator => {
                    self.skip_regex();
                    self.value();
                }
                b'\'' | b'"' => {
                    self.skip_string(b);
                    self.value();
                }
                b'`' => {
                    self.pos += 1;
                    self.template()?;
                }
                b'(' | b'[' | b'{' => {
                    if b == b'{' && self.prev == Prev::Value && self.newline {
                        self.reset();
                    }
                    self.link()?;
                    self.pos += 1;
                    self.push(Open::Bracket)?;
                    self.operator();
                }
                b')' | b']' | b'}' => {
                    self.pos += 1;
                    if self.pop() == Some(Open::Template) {
                        self.template()?;
                    } else {
                        self.value();
                    }
                }
                b';' | b',' => {
                    self.pos += 1;
                    self.reset();
                    self.operator();
                }
                b'.' if self.peek(1).is_some_and(|c| c.is_ascii_digit()) => self.word()?,
                b if is_ident(b) => self.word()?,
                _ => {
                    // Any other punctuator: each character counts (`!!!x`, `a+-b`).
                    self.pos += 1;
                    self.link()?;
                    self.operator();
                }
            }
        }
        Ok(())
    }

    fn value(&mut self) {
        self.prev = Prev::Value;
        self.newline = false;
    }

    fn operator(&mut self) {
        self.prev = Prev::Operator;
        self.newline = false;
    }

    fn word(&mut self) -> Result<(), TooDeep> {
        let start = self.pos;
        while self.peek(0).is_some_and(|b| is_ident(b) || b == b'.') {
            // A `.` belongs to a number (`1.5`), not to a name (`a.b`).
            if self.peek(0) == Some(b'.')
                && !self.src[start].is_ascii_digit()
                && self.src[start] != b'.'
            {
                break;
            }
            self.pos += 1;
        }
        let word = std::str::from_utf8(&self.src[start..self.pos]).unwrap_or("");
        if self.prev == Prev::Value && (self.newline || STATEMENT_WORDS.contains(&word)) {
            self.reset();
        }
        if OPERATOR_WORDS.contains(&word) {
            self.link()?;
            self.operator();
        } else if BODY_WORDS.contains(&word) {
            self.body()?;
            self.operator();
        } else {
            self.value();
        }
        Ok(())
    }

    /// The text of a template after a backtick or a `${...}`'s closing brace: up to the
    /// closing backtick (a value) or the next `${` (a new level).
    fn template(&mut self) -> Result<(), TooDeep> {
        while let Some(b) = self.peek(0) {
            match b {
                b'\\' => self.pos += 2,
                b'`' => {
                    self.pos += 1;
                    self.value();
                    return Ok(());
                }
                b'$' if self.peek(1) == Some(b'{') => {
                    self.pos += 2;
                    self.push(Open::Template)?;
                    self.operator();
                    return Ok(());
                }
                _ => self.pos += 1,
            }
        }
        Ok(())
    }

    fn skip_line(&mut self) {
        while self.peek(0).is_some_and(|b| b != b'\n') {
            self.pos += 1;
        }
    }

    fn skip_block_comment(&mut self) {
        self.pos += 2;
        while let Some(b) = self.peek(0) {
            if b == b'*' && self.peek(1) == Some(b'/') {
                self.pos += 2;
                return;
            }
            if b == b'\n' {
                self.newline = true;
            }
            self.pos += 1;
        }
    }

    /// A string literal; an unterminated one ends at the line's end (the parser reports it).
    fn skip_string(&mut self, quote: u8) {
        self.pos += 1;
        while let Some(b) = self.peek(0) {
            match b {
                b'\\' => self.pos += 2,
                b'\n' => return,
                _ if b == quote => {
                    self.pos += 1;
                    return;
                }
                _ => self.pos += 1,
            }
        }
    }

    /// A regular expression literal with its flags; `[...]` classes may hold a `/`.
    fn skip_regex(&mut self) {
        self.pos += 1;
        let mut class = false;
        while let Some(b) = self.peek(0) {
            match b {
                b'\\' => self.pos += 2,
                b'\n' => return,
                b'[' => {
                    class = true;
                    self.pos += 1;
                }
                b']' => {
                    class = false;
                    self.pos += 1;
                }
                b'/' if !class => {
                    self.pos += 1;
                    while self.peek(0).is_some_and(is_ident) {
                        self.pos += 1;
                    }
                    return;
                }
                _ => self.pos += 1,
            }
        }
    }
}

/// The shapes of code that nest deeply, each `n` levels deep, for tests here and in `strip`:
/// those that made oxc overflow the stack, and their siblings.
#[cfg(test)]
pub(crate) fn hostile_shapes(n: usize) -> Vec<(&'static str, String)> {
    let r = |s: &str| s.repeat(n);
    vec![
        ("arrays", format!("let x = {}1{};", r("["), r("]"))),
        ("parens", format!("let x = {}1{};", r("("), r(")"))),
        ("unary", format!("let x = {}1;", r("!"))),
        ("negation", format!("let x = {}1;", r("- "))),
        ("blocks", format!("{}{}", r("{"), r("}"))),
        ("arrows", format!("let f = {}1;", r("x => "))),
        ("ternaries", format!("let t = {}0;", r("a ? b : "))),
        ("plus", format!("let s = {}a;", r("a + "))),
        ("plus-lines", format!("let s = {}a;", r("a +\n"))),
        ("templates", format!("let t = {}x{};", r("`${"), r("}`"))),
        (
            "generics",
            format!("let g: {}number{} = 1;", r("A<"), r(">")),
        ),
        ("members", format!("let m = a{};", r(".b"))),
        ("calls", format!("let c = f{};", r("()"))),
        ("awaits", format!("let w = {}1;", r("await "))),
        ("objects", format!("let o = {}1{};", r("{a:"), r("}"))),
        ("new", format!("let n = {}A;", r("new "))),
        ("assignments", format!("{}1;", r("a = "))),
        ("typeof", format!("let y = {}1;", r("typeof "))),
        ("if-else", format!("{}x;", r("if (a) b; else "))),
        ("ifs", format!("{}x;", r("if (a) "))),
        ("loops", format!("{}x;", r("for (;;) "))),
        ("whiles", format!("{}x;", r("while (a) "))),
        ("labels", format!("{}x;", r("l: "))),
        (
            "ts-arrows",
            format!("let f = {}1;", r("(x: number): any => ")),
        ),
        ("ts-as", format!("let f = 1{};", r(" as any"))),
        ("ts-nonnull", format!("let f = a{};", r("!"))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deepest the estimate went, found by lowering the limit until the scan passes.
    fn estimate(src: &str) -> usize {
        let mut lo = 0;
        let mut hi = src.len() * 4 + 4;
        while lo < hi {
            let mid = (lo + hi) / 2;
            if check(src, mid).is_ok() {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    #[test]
    fn every_hostile_shape_is_estimated_at_least_as_deep_as_it_nests() {
        for (name, src) in hostile_shapes(500) {
            let d = estimate(&src);
            assert!(d >= 500, "{name}: estimated {d}");
        }
    }

    #[test]
    fn ordinary_code_stays_far_below_the_limit() {
        let program = r#"
            // Fetch, filter, summarise: what agents write.
            const { orders } = await tools.shop.list_orders({ status: "open" });
            const top = orders.sort((a, b) => b.total - a.total).slice(0, 3);
            const re = /[(\[{]+/g; const half = total / 2 / count;
            let s = `a ${top.length} b ${`nested ${1 + 2}`} c`;
            interface P { x: number; y: Array<Map<string, Set<number>>> }
            for (let i = 0; i < 10; i++) { if (i % 2) continue; s += i }
            const customers = await Promise.all(top.map((o) => tools.shop.get_customer({ id: o.customerId })))
            x = 1
            y = 2
            return top.map((o, i) => ({ order: o.id, total: o.total, customer: customers[i].name }));
        "#;
        let d = estimate(program);
        assert!(d < 40, "{d}");
        // A thousand statements, with or without semicolons, one statement per line.
        let many: String = (0..1000)
            .map(|i| format!("let v{i} = a + b * c\n"))
            .collect();
        assert!(estimate(&many) < 10, "{}", estimate(&many));
        let calls: String = (0..1000).map(|i| format!("f({i}, 'x')\n")).collect();
        assert!(estimate(&calls) < 10, "{}", estimate(&calls));
        let functions: String = (0..300)
            .map(|i| format!("function f{i}(a) {{ return a + {i} }}\n"))
            .collect();
        assert!(estimate(&functions) < 10, "{}", estimate(&functions));
    }

    #[test]
    fn strings_comments_and_regexes_do_not_count() {
        let n = 5000;
        for src in [
            format!("let s = '{}';", "(".repeat(n)),
            format!("let s = \"{}\";", "[".repeat(n)),
            format!("// {}\nreturn 1", "{".repeat(n)),
            format!("/* {} */ return 1", "!".repeat(n)),
            format!("let r = /{}/;", "\\(".repeat(n)),
            format!("let t = `{}`;", "+".repeat(n)),
        ] {
            assert!(estimate(&src) < 5, "{src:.40}");
        }
    }

    #[test]
    fn the_offset_points_where_the_limit_was_passed() {
        let src = format!(
            "let ok = 1;\nlet x = {}1{};",
            "[".repeat(50),
            "]".repeat(50)
        );
        let err = check(&src, 20).unwrap_err();
        assert_eq!(err.depth, 21);
        assert_eq!(&src[err.offset - 1..err.offset], "[");
    }
}
