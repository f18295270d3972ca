//! The run's upstream tools as the prelude's `tools.server.tool` proxies see them.
//!
//! The host sends every tool the run may call ([`ToolBinding`]s). Building a JavaScript object
//! per tool costs microseconds each in QuickJS, which a run with hundreds of tools would pay
//! before its first line; so the proxies ask here instead, one name at a time, and only code
//! that touches `tools` pays anything. The index is built on the first question.

use std::collections::{HashMap, HashSet};

use worker_protocol::{ToolBinding, camel, ident};

/// One server: its name, its identifier form, and whether its tools are known.
struct Server {
    name: String,
    ident: String,
    known: bool,
}

/// The tools of one run, by server. Lookups scan the server's tools, comparing in place:
/// cheaper than building a map of every name for the few names a run uses.
pub struct ToolIndex {
    bindings: Vec<ToolBinding>,
    servers: Vec<Server>,
}

impl ToolIndex {
    pub fn new(bindings: Vec<ToolBinding>) -> Self {
        let mut servers: Vec<Server> = Vec::new();
        for b in &bindings {
            let at = match servers.iter().position(|s| s.name == b.server) {
                Some(at) => at,
                None => {
                    servers.push(Server {
                        name: b.server.clone(),
                        ident: ident(&b.server),
                        known: false,
                    });
                    servers.len() - 1
                }
            };
            servers[at].known |= b.tool.is_some();
        }
        ToolIndex { bindings, servers }
    }

    /// `[[server, serverIdent, known], ...]` as JSON, in the host's order.
    pub fn servers_json(&self) -> String {
        let list: Vec<(&str, &str, bool)> = self
            .servers
            .iter()
            .map(|s| (s.name.as_str(), s.ident.as_str(), s.known))
            .collect();
        serde_json::to_string(&list).unwrap_or_else(|_| "[]".into())
    }

    /// The tools of server number `server`, with their binding indexes.
    fn tools(&self, server: usize) -> impl Iterator<Item = (usize, &str)> + Clone {
        let name = self.servers.get(server).map(|s| s.name.as_str());
        self.bindings
            .iter()
            .enumerate()
            .filter(move |(_, b)| Some(b.server.as_str()) == name)
            .filter_map(|(i, b)| b.tool.as_deref().map(|t| (i, t)))
    }

    /// The binding `name` means on server number `server`: the tool of that exact name, or
    /// else the one tool whose identifier form it is, or else the one whose camelCase form it
    /// is (the host resolves names the same way, `catalog::names::pick`).
    pub fn lookup(&self, server: usize, name: &str) -> Option<usize> {
        let tools = self.tools(server);
        if let Some((i, _)) = tools.clone().find(|(_, t)| *t == name) {
            return Some(i);
        }
        let mut forms = tools.clone().filter(|(_, t)| ident_is(t, name));
        match (forms.next(), forms.next()) {
            (Some((i, _)), None) => return Some(i),
            (Some(_), Some(_)) => return None,
            _ => {}
        }
        // The camelCase form (`readFile` for `read_file`), as generated wrappers name tools.
        let mut forms = tools.filter(|(_, t)| camel(t) == name);
        match (forms.next(), forms.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    }

    /// The names code can use on server number `server`, in the host's order: each tool's
    /// name, then its identifier form when that is distinct and means it.
    pub fn keys(&self, server: usize) -> Vec<String> {
        let tools: Vec<&str> = self.tools(server).map(|(_, t)| t).collect();
        let exact: HashSet<&str> = tools.iter().copied().collect();
        let forms: Vec<String> = tools.iter().map(|t| ident(t)).collect();
        let mut fits: HashMap<&str, usize> = HashMap::new();
        for form in &forms {
            *fits.entry(form.as_str()).or_default() += 1;
        }
        let mut keys = Vec::with_capacity(tools.len() * 2);
        for (tool, form) in tools.iter().zip(&forms) {
            keys.push(tool.to_string());
            if form != tool && !exact.contains(form.as_str()) && fits[form.as_str()] == 1 {
                keys.push(form.clone());
            }
        }
        keys
    }

    pub fn binding(&self, index: usize) -> Option<&ToolBinding> {
        self.bindings.get(index)
    }
}

/// Whether `form` is the identifier form of `name`, without building it.
fn ident_is(name: &str, form: &str) -> bool {
    let form = match name.starts_with(|c: char| c.is_ascii_digit()) {
        true => match form.strip_prefix('_') {
            Some(rest) => rest,
            None => return false,
        },
        false => form,
    };
    let mut mapped = name.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
            c
        } else {
            '_'
        }
    });
    let mut wanted = form.chars();
    loop {
        match (mapped.next(), wanted.next()) {
            (None, None) => return true,
            (Some(a), Some(b)) if a == b => {}
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(server: &str, tool: &str) -> ToolBinding {
        ToolBinding {
            server: server.into(),
            tool: Some(tool.into()),
        }
    }

    #[test]
    fn names_and_identifier_forms() {
        let index = ToolIndex::new(vec![
            tool("my-server", "get.page"),
            tool("my-server", "get_page"),
            tool("my-server", "read-file"),
            tool("my-server", "read.file"),
            tool("my-server", "list-all"),
            ToolBinding {
                server: "later".into(),
                tool: None,
            },
        ]);
        assert_eq!(
            index.servers_json(),
            r#"[["my-server","my_server",true],["later","later",false]]"#
        );
        // An exact name wins over another tool's identifier form.
        assert_eq!(index.lookup(0, "get_page"), Some(1));
        assert_eq!(index.lookup(0, "get.page"), Some(0));
        // An identifier form that fits two tools means neither.
        assert_eq!(index.lookup(0, "read_file"), None);
        assert_eq!(index.lookup(0, "list_all"), Some(4));
        // The camelCase form, when one tool has it; an identifier form that fits two tools
        // does not fall through to it.
        assert_eq!(index.lookup(0, "listAll"), Some(4));
        assert_eq!(index.lookup(0, "getPage"), None);
        assert_eq!(index.lookup(0, "readFile"), None);
        assert_eq!(
            index.keys(0),
            [
                "get.page",
                "get_page",
                "read-file",
                "read.file",
                "list-all",
                "list_all"
            ]
        );
        assert_eq!(index.lookup(1, "anything"), None);
        assert!(index.keys(1).is_empty());
        assert_eq!(index.lookup(7, "x"), None);
    }

    #[test]
    fn identifier_form_is_checked_in_place() {
        for name in ["get.page", "9lives", "ok_name$", "naïve-tool", "a b", ""] {
            assert!(ident_is(name, &ident(name)), "{name}");
        }
        assert!(!ident_is("get.page", "get_pag"));
        assert!(!ident_is("get.page", "get_pages"));
        assert!(!ident_is("9lives", "9lives"));
    }
}
