//! `allowedTools` patterns over qualified names `mcp__server__tool`, matched so that a
//! pattern's server part only ever matches whole configured server names.
//!
//! A qualified name cannot be split by looking at it: server names and tool names may both
//! contain `__` (servers `gh` and `gh__admin`; a tool `admin__delete`). So a pattern is never
//! matched as one glob over the whole name (`mcp__gh__*` would then reach `gh__admin`), and
//! never split at its first `__`. Instead:
//!
//! - a pattern of stars only (`*`) matches every tool;
//! - any other pattern starts with `mcp__`; the rest is split at a literal `__` into a server
//!   part and a tool part, each a glob over a whole name (`*` matches any run of characters,
//!   nothing else is special). Of the places it could be split, the one with the longest
//!   server part that matches a configured server wins (`mcp__gh__admin__*` is server
//!   `gh__admin`, all tools, when `gh__admin` is configured; else server `gh`, tools
//!   `admin__*`);
//! - a pattern whose rest holds no `__` and ends with `*` (`mcp__*`, `mcp__gh*`) is a server
//!   part alone: every tool of each server it matches (`mcp__gh*` matches `gh`, `gh_` and
//!   `gh__admin`, as a glob over server names);
//! - anything else matches nothing.

/// Whether `pattern` allows tool `tool` of server `server`, among the configured server
/// names `servers` (`server` always counts as configured).
pub fn matches<'a>(
    pattern: &str,
    servers: impl Iterator<Item = &'a str> + Clone,
    server: &str,
    tool: &str,
) -> bool {
    if !pattern.is_empty() && pattern.chars().all(|c| c == '*') {
        return true;
    }
    let Some(rest) = pattern.strip_prefix("mcp__") else {
        return false;
    };
    let splits: Vec<usize> = rest
        .char_indices()
        .map(|(i, _)| i)
        .filter(|&i| rest[i..].starts_with("__"))
        .collect();
    if splits.is_empty() {
        return rest.ends_with('*') && glob_match(rest, server);
    }
    let configured =
        |part: &str| glob_match(part, server) || servers.clone().any(|name| glob_match(part, name));
    // The longest server part that names a configured server decides the split.
    match splits.iter().rev().find(|&&i| configured(&rest[..i])) {
        Some(&i) => glob_match(&rest[..i], server) && glob_match(&rest[i + 2..], tool),
        None => false,
    }
}

/// Whether `pattern` may allow some tool of `server` (among the configured `servers`): its
/// server part, resolved as [`matches`] resolves it, matches `server`. Used to know which
/// servers a pattern reaches before their tools are listed.
pub fn reaches<'a>(
    pattern: &str,
    servers: impl Iterator<Item = &'a str> + Clone,
    server: &str,
) -> bool {
    if !pattern.is_empty() && pattern.chars().all(|c| c == '*') {
        return true;
    }
    let Some(rest) = pattern.strip_prefix("mcp__") else {
        return false;
    };
    let splits: Vec<usize> = rest
        .char_indices()
        .map(|(i, _)| i)
        .filter(|&i| rest[i..].starts_with("__"))
        .collect();
    if splits.is_empty() {
        return rest.ends_with('*') && glob_match(rest, server);
    }
    let configured =
        |part: &str| glob_match(part, server) || servers.clone().any(|name| glob_match(part, name));
    splits
        .iter()
        .rev()
        .find(|&&i| configured(&rest[..i]))
        .is_some_and(|&i| glob_match(&rest[..i], server))
}

/// What is wrong with an `allowedTools` pattern that can match nothing, if anything.
pub fn problem(pattern: &str) -> Option<String> {
    if !pattern.is_empty() && pattern.chars().all(|c| c == '*') {
        return None;
    }
    let Some(rest) = pattern.strip_prefix("mcp__") else {
        return Some(format!(
            "\"{pattern}\" is not an allowedTools pattern: write mcp__<server>__<tool>, with * \
             for any run of characters inside either name (mcp__github__*, mcp__*__read_file), \
             or * for every tool"
        ));
    };
    if !rest.contains("__") && !rest.ends_with('*') {
        return Some(format!(
            "\"{pattern}\" names no tool: write mcp__{rest}__<tool>, or mcp__{rest}__* for all \
             of its tools"
        ));
    }
    None
}

/// `mcp__server__tool`, the name an agent uses for an upstream tool.
pub fn qualified_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

/// Matches `text` against `pattern`, where `*` matches any run of characters. Exact otherwise:
/// no case folding, trimming or normalisation.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVERS: &[&str] = &["gh", "gh__admin", "g", "gh_", "a*b", "ünï.cödé-x"];

    fn m(pattern: &str, server: &str, tool: &str) -> bool {
        matches(pattern, SERVERS.iter().copied(), server, tool)
    }

    /// A pattern reaches exactly the servers some tool of which it could match.
    #[test]
    fn reaches_the_servers_its_server_part_names() {
        let r = |p: &str, server: &str| reaches(p, SERVERS.iter().copied(), server);
        assert!(r("mcp__gh__*", "gh"));
        assert!(!r("mcp__gh__*", "gh__admin"));
        assert!(r("mcp__gh__admin__*", "gh__admin"));
        assert!(!r("mcp__gh__admin__*", "gh"));
        assert!(r("mcp__gh*", "gh_"));
        assert!(r("mcp__*__read", "a*b"));
        assert!(r("*", "g"));
        assert!(!r("gh.read", "gh"));
        assert!(!r("mcp__gh", "gh"));
        // Consistent with `matches` over every case there.
        for (p, server, tool) in [("mcp__g*__x", "gh", "x"), ("mcp__gh___x", "gh_", "x")] {
            assert!(m(p, server, tool) && r(p, server), "{p} {server}");
        }
    }

    /// (pattern, server, tool, allowed) over hostile server and tool names.
    #[test]
    fn server_parts_match_whole_configured_server_names() {
        let cases = [
            // The attack of issue 18: a wildcard after `gh__` reaching `gh__admin`.
            ("mcp__gh__*", "gh", "read", true),
            ("mcp__gh__*", "gh", "admin__delete", true),
            ("mcp__gh__*", "gh__admin", "delete", false),
            ("mcp__gh__*", "gh_", "x", false),
            ("mcp__gh__*", "g", "h__x", false),
            // A server part alone is a glob over whole server names.
            ("mcp__gh*", "gh", "read", true),
            ("mcp__gh*", "gh_", "read", true),
            ("mcp__gh*", "gh__admin", "read", true),
            ("mcp__gh*", "g", "h", false),
            ("mcp__*", "gh__admin", "anything", true),
            ("mcp__gh", "gh", "read", false),
            // Wildcard servers, whole tool names.
            ("mcp__*__read", "gh", "read", true),
            ("mcp__*__read", "gh__admin", "read", true),
            ("mcp__*__read", "gh", "admin__read", false),
            ("mcp__*__read", "gh", "read_all", false),
            ("mcp__g*__x", "gh__admin", "x", true),
            ("mcp__g*__x", "gh", "x", true),
            ("*", "gh__admin", "delete", true),
            ("**", "gh", "x", true),
            // The longest configured server decides: gh__admin, not gh's tools admin__*.
            ("mcp__gh__admin__*", "gh__admin", "delete", true),
            ("mcp__gh__admin__*", "gh", "admin__delete", false),
            ("mcp__gh__admin__delete", "gh", "admin__delete", false),
            ("mcp__gh__admin__delete", "gh__admin", "delete", true),
            // gh_ is a server of its own, not gh with a tool starting `_`.
            ("mcp__gh___x", "gh_", "x", true),
            ("mcp__gh___x", "gh", "_x", false),
            // Stars and unicode in names are plain characters of the name.
            ("mcp__a*b__t", "a*b", "t", true),
            ("mcp__a*b__t", "axxb", "t", true),
            ("mcp__ünï.cödé-x__*", "ünï.cödé-x", "t", true),
            ("mcp__ünï.cödé-x__*", "uni.code-x", "t", false),
            // Not patterns.
            ("gh__*", "gh", "read", false),
            ("*__read", "gh", "read", false),
            ("", "gh", "read", false),
            ("mcp__", "gh", "read", false),
        ];
        for (pattern, server, tool, want) in cases {
            assert_eq!(
                m(pattern, server, tool),
                want,
                "{pattern:?} vs server {server:?} tool {tool:?}"
            );
        }
    }

    #[test]
    fn without_the_configured_names_the_checked_server_decides() {
        // Only `gh` known: mcp__gh__admin__* is gh's tools admin__*.
        assert!(matches(
            "mcp__gh__admin__*",
            std::iter::empty(),
            "gh",
            "admin__x"
        ));
        assert!(!matches("mcp__gh__*", std::iter::empty(), "gh__admin", "x"));
    }

    #[test]
    fn patterns_that_match_nothing_say_why() {
        assert_eq!(problem("mcp__gh__*"), None);
        assert_eq!(problem("mcp__gh*"), None);
        assert_eq!(problem("*"), None);
        assert!(
            problem("read_file")
                .unwrap()
                .contains("mcp__<server>__<tool>")
        );
        assert!(problem("mcp__gh").unwrap().contains("mcp__gh__*"));
    }
}
