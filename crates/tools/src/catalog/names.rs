//! Names of servers and tools as code, agents and people write them: the exact name or its
//! identifier form ([`pick`]), and the qualified `mcp__server__tool` split against the
//! configured server names ([`split_qualified`]), with errors that give the asker's own way
//! to look ([`Asker`]).

use worker_protocol::camel;
/// The identifier form of a server or tool name (see the catalog's module docs).
pub use worker_protocol::ident;

use super::error::NameError;

/// Picks the one name in `names` that is `wanted` exactly, or else whose identifier form is,
/// or else whose camelCase form ([`camel`]) is.
/// When none is, the error gives the [`nearest`] names.
pub fn pick<'a>(
    names: impl Iterator<Item = &'a str> + Clone,
    wanted: &str,
    what: &str,
) -> Result<&'a str, NameError> {
    if let Some(n) = names.clone().find(|n| *n == wanted) {
        return Ok(n);
    }
    let mut matches: Vec<&str> = names.clone().filter(|n| ident(n) == wanted).collect();
    if matches.is_empty() {
        // The camelCase form (`readFile` for `read_file`), as generated wrappers name tools.
        matches = names.clone().filter(|n| camel(n) == wanted).collect();
    }
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(NameError::NotFound {
            what: what.to_string(),
            wanted: shown(wanted),
            nearest: nearest_list(names, wanted),
        }),
        many => Err(NameError::Ambiguous {
            what: what.to_string(),
            wanted: wanted.to_string(),
            candidates: many.join(" or "),
        }),
    }
}

/// How many names an error suggests.
pub const NEAREST: usize = 5;

/// At most this many characters of a name are compared (and shown): a name code made up can
/// be of any length, and the comparison is quadratic in it.
const COMPARED_CHARS: usize = 64;

/// `wanted` as an error shows it: at most [`COMPARED_CHARS`] characters.
pub fn shown(wanted: &str) -> String {
    match wanted.char_indices().nth(COMPARED_CHARS) {
        Some((at, _)) => format!("{}...", &wanted[..at]),
        None => wanted.to_string(),
    }
}

/// The nearest names as an error lists them: `a, b, c (of 40)`, or `(none)`.
pub fn nearest_list<'a>(names: impl Iterator<Item = &'a str> + Clone, wanted: &str) -> String {
    let all = names.clone().count();
    let near = nearest(names, wanted, NEAREST);
    if near.is_empty() {
        return "(none)".to_string();
    }
    let mut out = near.join(", ");
    if all > near.len() {
        out.push_str(&format!(" (of {all})"));
    }
    out
}

/// The names of `names` nearest to `wanted`, likeliest first, at most `n`: compared in
/// lower case without `_`, `-`, `.` and spaces (so `getPage`, `get-page` and `get_page` are
/// the same), by edit distance (a swap of two neighbours is one edit), a name that contains
/// the other or begins the same way ahead of one that does not, then by name.
pub fn nearest<'a>(names: impl Iterator<Item = &'a str>, wanted: &str, n: usize) -> Vec<&'a str> {
    let want = folded(wanted);
    let mut scored: Vec<(usize, usize, &str)> = names
        .map(|name| {
            let have = folded(name);
            let contains = !want.is_empty()
                && !have.is_empty()
                && (contains_seq(&have, &want) || contains_seq(&want, &have));
            let prefix = have.iter().zip(&want).take_while(|(a, b)| a == b).count();
            // Two edits' worth for containing the other, one for each shared first character
            // up to two: `issue` is nearer `get_issue` than `tissue`'s neighbours.
            let bonus = if contains { 2 } else { 0 } + prefix.min(2);
            (
                (distance(&have, &want) * 2).saturating_sub(bonus),
                usize::MAX - prefix,
                name,
            )
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.2 == b.2);
    scored
        .into_iter()
        .take(n)
        .map(|(_, _, name)| name)
        .collect()
}

/// A name as [`nearest`] compares it.
fn folded(name: &str) -> Vec<char> {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | '.' | ' '))
        .flat_map(char::to_lowercase)
        .take(COMPARED_CHARS)
        .collect()
}

fn contains_seq(hay: &[char], needle: &[char]) -> bool {
    needle.len() <= hay.len() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Edit distance where a swap of two neighbouring characters is one edit (optimal string
/// alignment).
fn distance(a: &[char], b: &[char]) -> usize {
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[n][m]
}

/// Who asks to resolve a name, for the advice its errors give: code in the sandbox has the
/// discovery functions, an agent has our top-level tools, a person has the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asker {
    Code,
    Agent,
    Person,
}

impl Asker {
    /// Where to look up the configured servers.
    pub fn list_servers(self) -> &'static str {
        match self {
            Asker::Code => "listServers() / list_servers() lists them",
            Asker::Agent => "the list_servers tool lists them",
            Asker::Person => "`code-executor-mcp config show` lists them",
        }
    }

    /// Where to find a tool by what it does.
    pub fn search(self) -> &'static str {
        match self {
            Asker::Code => "searchTools(query) / search_tools(query) finds tools by what they do",
            Asker::Agent => "the search_tools tool finds tools by what they do",
            Asker::Person => "`code-executor-mcp tools search QUERY` finds tools by what they do",
        }
    }

    /// How to name a tool without the qualified form.
    fn separately(self) -> &'static str {
        match self {
            Asker::Code => {
                "pass the server and the tool separately: callMCPTool(server, tool, args)"
            }
            Asker::Agent => {
                "find it with the search_tools tool (its server argument and detail \"full\" give \
                 its schema)"
            }
            Asker::Person => "find it with `code-executor-mcp tools search QUERY --server NAME`",
        }
    }
}

/// Splits a qualified `mcp__server__tool` against the configured server names. A name that
/// can be read two ways (servers `a` and `a__b`) is an error naming both readings.
pub fn split_qualified<'a>(
    servers: impl Iterator<Item = &'a str>,
    qualified: &str,
    asker: Asker,
) -> Result<(String, String), NameError> {
    let Some(rest) = qualified.strip_prefix("mcp__") else {
        return Err(NameError::NotQualified {
            qualified: qualified.to_string(),
            advice: asker.separately(),
        });
    };
    let names: Vec<&str> = servers.collect();
    let readings: Vec<(String, String)> = names
        .iter()
        .filter_map(|s| {
            rest.strip_prefix(s)
                .and_then(|r| r.strip_prefix("__"))
                .filter(|tool| !tool.is_empty())
                .map(|tool| (s.to_string(), tool.to_string()))
        })
        .collect();
    match readings.len() {
        1 => Ok(readings.into_iter().next().unwrap_or_default()),
        0 => {
            // The server part as far as it can be told: up to the next `__`.
            let asked = rest.split_once("__").map_or(rest, |(s, _)| s);
            if names.contains(&asked) {
                // A server and no tool (`mcp__fs__`).
                return Err(NameError::NotQualified {
                    qualified: shown(qualified),
                    advice: asker.separately(),
                });
            }
            Err(NameError::NoServer {
                qualified: shown(qualified),
                server: shown(asked),
                nearest: nearest_list(names.iter().copied(), asked),
                advice: asker.list_servers(),
            })
        }
        _ => Err(NameError::AmbiguousQualified {
            qualified: qualified.to_string(),
            readings: readings
                .iter()
                .map(|(s, t)| format!("server \"{s}\" tool \"{t}\""))
                .collect::<Vec<_>>()
                .join(" or "),
            advice: asker.separately(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifier_forms() {
        assert_eq!(ident("my-server"), "my_server");
        assert_eq!(ident("get.page"), "get_page");
        assert_eq!(ident("9lives"), "_9lives");
        assert_eq!(ident("ok_name$"), "ok_name$");
    }

    #[test]
    fn pick_prefers_exact_then_unique_identifier_form() {
        let names = ["get-page", "get_page", "read.file"];
        assert_eq!(
            pick(names.iter().copied(), "get_page", "tool"),
            Ok("get_page")
        );
        assert_eq!(
            pick(names.iter().copied(), "read_file", "tool"),
            Ok("read.file")
        );
        // The camelCase form, after the identifier form, when one name has it.
        assert_eq!(
            pick(names.iter().copied(), "readFile", "tool"),
            Ok("read.file")
        );
        let err = pick(names.iter().copied(), "getPage", "tool")
            .unwrap_err()
            .to_string();
        assert!(err.contains("get-page or get_page"), "{err}");
        let err = pick(["a-b", "a.b"].iter().copied(), "a_b", "tool")
            .unwrap_err()
            .to_string();
        assert!(err.contains("a-b or a.b"), "{err}");
        let err = pick(names.iter().copied(), "nope", "tool")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "no tool named \"nope\"; nearest: get-page, get_page, read.file"
        );
        // More names than are shown: how many there are.
        let many: Vec<String> = (0..40).map(|i| format!("tool{i}")).collect();
        let err = pick(many.iter().map(String::as_str), "tool7x", "tool")
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("(of 40)"), "{err}");
        assert!(err.contains("nearest: tool7, "), "{err}");
        // A name of any length is shown cut, and compared within bounds.
        let long = "x".repeat(1_000_000);
        let err = pick(names.iter().copied(), &long, "tool")
            .unwrap_err()
            .to_string();
        assert!(err.len() < 300, "{}", err.len());
        let err = pick([].iter().copied(), "nope", "tool")
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("nearest: (none)"), "{err}");
    }

    /// The likeliest meant first, whatever the spelling: a typo, a swap, another case or
    /// separator, a part of the name, a plural.
    #[test]
    fn nearest_names_come_first() {
        let tools = [
            "echo",
            "add",
            "fail",
            "sleep",
            "env",
            "get.page",
            "dash-tool",
            "get_issue",
            "list_issues",
            "create_pull_request",
            "search_code",
        ];
        for (wanted, first) in [
            ("ecoh", "echo"),
            ("eho", "echo"),
            ("ECHO", "echo"),
            ("getPage", "get.page"),
            ("get_pages", "get.page"),
            ("dash_tool", "dash-tool"),
            ("issue", "get_issue"),
            ("listIssue", "list_issues"),
            ("createPullRequest", "create_pull_request"),
            ("searchcode", "search_code"),
            ("slep", "sleep"),
        ] {
            let got = nearest(tools.iter().copied(), wanted, NEAREST);
            assert_eq!(got.first(), Some(&first), "{wanted}: {got:?}");
            assert!(got.len() <= NEAREST, "{got:?}");
        }
        assert!(nearest([].iter().copied(), "x", NEAREST).is_empty());
        assert_eq!(nearest(tools.iter().copied(), "x", 0), Vec::<&str>::new());
    }

    #[test]
    fn qualified_names_split_against_servers_and_ambiguity_names_both() {
        let servers = ["fs", "git", "a", "a__b"];
        assert_eq!(
            split_qualified(servers.iter().copied(), "mcp__fs__read_file", Asker::Code),
            Ok(("fs".into(), "read_file".into()))
        );
        assert_eq!(
            split_qualified(servers.iter().copied(), "mcp__git__git__log", Asker::Code),
            Ok(("git".into(), "git__log".into()))
        );
        let err = split_qualified(servers.iter().copied(), "mcp__a__b__c", Asker::Code)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("server \"a\" tool \"b__c\"")
                && err.contains("server \"a__b\" tool \"c\""),
            "{err}"
        );
        for (name, says) in [
            (
                "mcp__FS__read_file",
                "unknown tool mcp__FS__read_file: no MCP server named \"FS\"; nearest: fs, ",
            ),
            (
                "mcp__gti__log",
                "unknown tool mcp__gti__log: no MCP server named \"gti\"; nearest: git, ",
            ),
            (
                "fs__read_file",
                "is not a qualified tool name; write mcp__<server>__<tool>",
            ),
            (
                "mcp__fs__",
                "\"mcp__fs__\" is not a qualified tool name; write mcp__<server>__<tool>",
            ),
        ] {
            let err = split_qualified(servers.iter().copied(), name, Asker::Code)
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{name}: {err}");
        }
    }
}
