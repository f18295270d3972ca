//! A large synthetic tool catalog, generated deterministically, for the search evaluation
//! and benchmark: many SaaS-like servers, each with CRUD tools over its entities plus a few
//! tools of its own, named in the three styles servers use (snake_case, camelCase,
//! kebab-case), described the way real servers describe theirs.

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::json;

/// One kind of server: its name, product, entities as (singular, plural), and tools of its
/// own as (name, description). The table is data (`eval/synthetic_domains.json`).
#[derive(serde::Deserialize)]
struct Domain {
    server: String,
    product: String,
    entities: Vec<(String, String)>,
    tools: Vec<(String, String)>,
}

const DOMAINS_JSON: &str = include_str!("../../eval/synthetic_domains.json");

/// The domain table, parsed once (it is embedded in the binary, and a test parses it).
fn domains() -> &'static [Domain] {
    static DOMAINS: std::sync::LazyLock<Vec<Domain>> =
        std::sync::LazyLock::new(|| serde_json::from_str(DOMAINS_JSON).unwrap_or_default());
    &DOMAINS
}

/// How a server spells multi-word tool names.
#[derive(Clone, Copy)]
enum Style {
    Snake,
    Camel,
    Kebab,
}

fn spell(words: &str, style: Style) -> String {
    let parts: Vec<&str> = words.split('_').collect();
    match style {
        Style::Snake => parts.join("_"),
        Style::Kebab => parts.join("-"),
        Style::Camel => parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if i == 0 {
                    p.to_string()
                } else {
                    let mut c = p.chars();
                    c.next()
                        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                        .unwrap_or_default()
                }
            })
            .collect(),
    }
}

fn human(s: &str) -> String {
    s.replace('_', " ")
}

fn tool(name: String, description: String, schema: serde_json::Value) -> Option<Tool> {
    serde_json::from_value(json!({"name": name, "description": description, "inputSchema": schema}))
        .ok()
}

/// The tools of one domain, under the server name `server`.
fn domain_tools(di: usize, d: &Domain) -> Vec<Tool> {
    let (product, entities, extras) = (&d.product, &d.entities, &d.tools);
    let style = [Style::Snake, Style::Camel, Style::Kebab][di % 3];
    let mut out = Vec::new();
    for (ei, (one, many)) in entities.iter().enumerate() {
        let (h1, hn) = (human(one), human(many));
        let v = (di + ei) % 3;
        let id = format!("{one}_id");
        let id_prop = json!({"type": "string", "description": format!("ID of the {h1}")});
        let actions: [(String, String, serde_json::Value); 6] = [
            (
                format!("list_{many}"),
                [
                    format!("List {hn} in {product}, newest first, with optional filters and pagination."),
                    format!("Returns a page of {product} {hn}. Use the cursor to fetch more."),
                    format!("Lists all {hn} the token can access in {product}."),
                ][v]
                    .clone(),
                json!({"type": "object", "properties": {
                    "limit": {"type": "integer", "description": format!("Maximum number of {hn} to return")},
                    "cursor": {"type": "string", "description": "Pagination cursor from a previous call"}}}),
            ),
            (
                format!("get_{one}"),
                [
                    format!("Get a single {h1} from {product} by its ID."),
                    format!("Retrieve the details of a {product} {h1}."),
                    format!("Fetches one {h1} with all of its fields."),
                ][v]
                    .clone(),
                json!({"type": "object", "properties": {id.clone(): id_prop.clone()}, "required": [id]}),
            ),
            (
                format!("create_{one}"),
                [
                    format!("Create a new {h1} in {product}."),
                    format!("Creates a {product} {h1} and returns it."),
                    format!("Add a {h1} to {product}."),
                ][v]
                    .clone(),
                json!({"type": "object", "properties": {
                    "name": {"type": "string", "description": format!("Name or title of the {h1}")},
                    "description": {"type": "string"}}, "required": ["name"]}),
            ),
            (
                format!("update_{one}"),
                [
                    format!("Update fields of an existing {product} {h1}."),
                    format!("Modify a {h1}; only the given fields change."),
                    format!("Edit the properties of a {h1} in {product}."),
                ][v]
                    .clone(),
                json!({"type": "object", "properties": {id.clone(): id_prop.clone(),
                    "fields": {"type": "object", "description": "Fields to change"}}, "required": [id]}),
            ),
            (
                format!("delete_{one}"),
                [
                    format!("Permanently delete a {h1} from {product}."),
                    format!("Deletes a {product} {h1}. This cannot be undone."),
                    format!("Remove a {h1}."),
                ][v]
                    .clone(),
                json!({"type": "object", "properties": {id.clone(): id_prop}, "required": [id]}),
            ),
            (
                format!("search_{many}"),
                [
                    format!("Search {product} {hn} by keyword."),
                    format!("Find {hn} matching a text query."),
                    format!("Full-text search over {hn} in {product}."),
                ][v]
                    .clone(),
                json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": format!("Keywords to match against {hn}")}}, "required": ["query"]}),
            ),
        ];
        for (name, desc, schema) in actions {
            out.extend(tool(spell(&name, style), desc, schema));
        }
    }
    for (name, desc) in extras.iter() {
        out.extend(tool(
            spell(name, style),
            desc.to_string(),
            json!({"type": "object", "properties": {}}),
        ));
    }
    out
}

/// Server name of domain `di` in copy `copy` (copies stand for more instances of the same
/// kind of server, as in a large organization: `github`, `github-2`, ...).
fn server_name(d: &Domain, copy: usize) -> String {
    if copy == 0 {
        d.server.clone()
    } else {
        format!("{}-{}", d.server, copy + 1)
    }
}

/// At least `n` tools (whole servers), as (server, tools) lists, always the same.
pub fn catalog(n: usize) -> Vec<(String, Arc<Vec<Tool>>)> {
    let per_copy: Vec<Vec<Tool>> = domains()
        .iter()
        .enumerate()
        .map(|(i, d)| domain_tools(i, d))
        .collect();
    let mut out = Vec::new();
    let mut count = 0;
    let mut copy = 0;
    while count < n {
        for (d, tools) in domains().iter().zip(&per_copy) {
            if count >= n {
                break;
            }
            out.push((server_name(d, copy), Arc::new(tools.clone())));
            count += tools.len();
        }
        copy += 1;
    }
    out
}

/// Number of tools in one copy of every domain.
pub fn base_size() -> usize {
    domains()
        .iter()
        .map(|d| d.entities.len() * 6 + d.tools.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_domain_table_parses() {
        let parsed: Vec<Domain> = serde_json::from_str(DOMAINS_JSON).unwrap();
        assert_eq!(parsed.len(), domains().len());
        assert!(parsed.len() >= 40);
    }

    #[test]
    fn deterministic_and_large_enough() {
        assert!(base_size() >= 2000, "{}", base_size());
        let a = catalog(base_size());
        assert_eq!(a.iter().map(|(_, t)| t.len()).sum::<usize>(), base_size());
        let b = catalog(base_size());
        assert_eq!(
            serde_json::to_string(&a.iter().map(|(s, t)| (s, &**t)).collect::<Vec<_>>()).unwrap(),
            serde_json::to_string(&b.iter().map(|(s, t)| (s, &**t)).collect::<Vec<_>>()).unwrap()
        );
        let big = catalog(10_000);
        assert!(big.iter().map(|(_, t)| t.len()).sum::<usize>() >= 10_000);
        assert!(big.iter().any(|(s, _)| s == "github-2"));
        let names: Vec<&str> = a[1].1.iter().map(|t| &*t.name).take(2).collect();
        assert_eq!(names, ["listProjects", "getProject"]);
    }
}
