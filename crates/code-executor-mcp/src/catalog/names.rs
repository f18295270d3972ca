//! Names of servers and tools as code, agents and people write them: the exact name or its
//! identifier form ([`pick`]), and the qualified `mcp__server__tool` split against the
//! configured server names ([`split_qualified`]), with errors that give the asker's own way
//! to look ([`Asker`]).

/// The identifier form of a server or tool name (see the catalog's module docs).
pub use worker_protocol::ident;

use super::error::NameError;

/// Picks the one name in `names` that is `wanted` exactly, or else whose identifier form is.
pub fn pick<'a>(
    names: impl Iterator<Item = &'a str> + Clone,
    wanted: &str,
    what: &str,
) -> Result<&'a str, NameError> {
    if let Some(n) = names.clone().find(|n| *n == wanted) {
        return Ok(n);
    }
    let matches: Vec<&str> = names.clone().filter(|n| ident(n) == wanted).collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => {
            let all: Vec<&str> = names.collect();
            Err(NameError::NotFound {
                what: what.to_string(),
                wanted: wanted.to_string(),
                available: if all.is_empty() {
                    "(none)".to_string()
                } else {
                    all.join(", ")
                },
            })
        }
        many => Err(NameError::Ambiguous {
            what: what.to_string(),
            wanted: wanted.to_string(),
            candidates: many.join(" or "),
        }),
    }
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
    fn list_servers(self) -> &'static str {
        match self {
            Asker::Code => "call listServers() to see them",
            Asker::Agent => "the list_servers tool lists them",
            Asker::Person => "`code-executor-mcp config show` lists them",
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
    let readings: Vec<(String, String)> = servers
        .filter_map(|s| {
            rest.strip_prefix(s)
                .and_then(|r| r.strip_prefix("__"))
                .filter(|tool| !tool.is_empty())
                .map(|tool| (s.to_string(), tool.to_string()))
        })
        .collect();
    match readings.len() {
        1 => Ok(readings.into_iter().next().unwrap_or_default()),
        0 => Err(NameError::NoServer {
            qualified: qualified.to_string(),
            advice: asker.list_servers(),
        }),
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
        let err = pick(["a-b", "a.b"].iter().copied(), "a_b", "tool")
            .unwrap_err()
            .to_string();
        assert!(err.contains("a-b or a.b"), "{err}");
        let err = pick(names.iter().copied(), "nope", "tool")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("available: get-page, get_page, read.file"),
            "{err}"
        );
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
                "\"mcp__FS__read_file\" names no configured server",
            ),
            (
                "fs__read_file",
                "is not a qualified tool name; write mcp__<server>__<tool>",
            ),
            ("mcp__fs__", "\"mcp__fs__\" names no configured server"),
        ] {
            let err = split_qualified(servers.iter().copied(), name, Asker::Code)
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{name}: {err}");
        }
    }
}
