//! Ranked tool search: BM25F over four fields of every tool, with typo and prefix tolerance.
//!
//! Fields, from most to least telling: the tool's name split into words (camelCase,
//! snake_case, kebab-case) with its title's words, the server's name, the description, and the parameters (names and
//! descriptions). Terms are lowercased and lightly stemmed (`files`/`file`,
//! `creating`/`create`). A query term also matches, at a discount, vocabulary terms it is a
//! prefix of (`repo` -> `repository`), terms one edit away (`serach` -> `search`; for terms
//! of four letters or more) and a few common synonyms (`remove` -> `delete`). A document's
//! score is the sum over query terms of the best of these, scaled by the share of query terms
//! it matched, so a tool that answers the whole query beats one that repeats a single word.
//!
//! Why not a crate: `bm25` (the maintained one) indexes a single text per document with
//! hashed tokens and has no fields, prefix or typo matching, and `tantivy` is a database.
//! This index is a few hundred lines, has no dependencies, and searches 10,000 tools in well
//! under a millisecond (see `bench`).

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::Value;

/// Indexed fields.
const NAME: usize = 0;
const SERVER: usize = 1;
const DESC: usize = 2;
const PARAMS: usize = 3;
const FIELDS: usize = 4;

/// Weight of a term occurrence in each field: the name says what a tool does; the server
/// says where; descriptions and parameters add vocabulary but also noise.
const FIELD_WEIGHT: [f32; FIELDS] = [3.0, 1.5, 1.0, 0.4];
/// BM25 length normalization per field: none for the short server name, full for prose.
const FIELD_B: [f32; FIELDS] = [0.3, 0.0, 0.75, 0.75];
/// BM25 term-frequency saturation.
const K1: f32 = 1.2;

/// Discounts of the looser matches of a query term, against 1.0 for the term itself.
const PREFIX_WEIGHT: f32 = 0.6;
const FUZZY_WEIGHT: f32 = 0.7;
const SYNONYM_WEIGHT: f32 = 0.55;
/// Terms shorter than this do not get prefix expansion (`a` would match everything).
const MIN_PREFIX_LEN: usize = 3;
/// Terms shorter than this do not get typo tolerance (`get` and `set` are one edit apart).
const MIN_FUZZY_LEN: usize = 4;
/// At most this many vocabulary terms extend one query prefix; the shortest win.
const MAX_PREFIX_EXPANSIONS: usize = 24;
/// At most this many query terms count (queries are phrases, not documents).
const MAX_QUERY_TERMS: usize = 24;

/// Words that carry no meaning in a query about tools.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or", "is",
    "are", "be", "it", "its", "this", "that", "these", "those", "my", "me", "i", "we", "our",
    "you", "your", "some", "any", "into", "as", "do", "does", "how", "can", "which", "what",
    "want", "need", "should", "would", "could", "please", "tool", "tools", "mcp", "using", "use",
    "via", "then", "there", "here", "so", "if", "not", "but", "about", "like", "let", "given",
];

/// Groups of words an agent uses interchangeably when asking for a tool. Every word of a
/// group matches the others at [`SYNONYM_WEIGHT`].
const SYNONYMS: &[&[&str]] = &[
    &[
        "get", "fetch", "retrieve", "read", "show", "view", "obtain", "lookup", "load",
    ],
    &["list", "enumerate", "browse", "all"],
    &["create", "add", "new", "make", "insert", "register"],
    &["delete", "remove", "erase", "destroy", "drop", "purge"],
    &[
        "update", "edit", "modify", "change", "patch", "set", "rename",
    ],
    &["search", "find", "query", "filter", "lookup", "locate"],
    &["send", "post", "publish", "notify"],
    &["write", "save", "store", "persist", "overwrite"],
    &["run", "execute", "trigger", "invoke", "start", "launch"],
    &["stop", "cancel", "abort", "halt", "terminate"],
    &["directory", "folder", "dir"],
    &["file", "document", "doc"],
    &["repository", "repo"],
    &["commit", "revision", "changeset"],
    &["issue", "ticket", "bug"],
    &["message", "msg", "chat"],
    &["user", "member", "account", "person", "people"],
    &["environment", "env", "variable"],
    &["image", "picture", "photo", "png"],
    &["time", "clock", "date", "now", "current"],
    &["timezone", "tz", "zone"],
    &["convert", "translate", "transform"],
    &["compress", "zip", "gzip", "archive"],
    &["diff", "difference", "changes", "compare"],
    &["log", "history"],
    &["sum", "total", "add"],
    &["echo", "repeat"],
    &["relation", "relationship", "link", "connection"],
    &["entity", "node"],
    &["observation", "fact", "note"],
    &["size", "sizes", "bytes"],
    &[
        "metadata",
        "info",
        "information",
        "details",
        "stat",
        "stats",
    ],
    &["move", "rename", "relocate"],
    &["payment", "charge", "pay"],
    &["refund", "reimburse"],
    &["customer", "client"],
    &["invoice", "bill", "billing"],
    &["email", "mail"],
    &["meeting", "event", "appointment"],
    &["table", "database", "db"],
    &["deploy", "deployment", "release", "ship"],
    &["unstage", "reset"],
    &["branch", "checkout", "switch"],
];

/// One tool as the index knows it: which list it came from and where in it.
#[derive(Debug, Clone, Copy)]
struct DocRef {
    list: u32,
    tool: u32,
}

/// Where each term occurs: (document, occurrences per field).
type Postings = Vec<(u32, [u16; FIELDS])>;

/// An immutable search index over the tools of some servers.
pub struct Index {
    lists: Vec<(String, Arc<Vec<Tool>>)>,
    docs: Vec<DocRef>,
    /// Each document's name as terms joined by spaces.
    name_terms: Vec<String>,
    /// The terms of each tool's title as a query's are taken (stop words dropped), empty
    /// without one.
    title_terms: Vec<Vec<String>>,
    /// Length of each document's fields, in terms.
    lens: Vec<[u16; FIELDS]>,
    avg_len: [f32; FIELDS],
    term_ids: HashMap<String, u32>,
    term_text: Vec<String>,
    postings: Vec<Postings>,
    /// Every term, sorted, for prefix expansion.
    sorted_terms: Vec<(String, u32)>,
    /// Each term with one character deleted, to the terms it came from (typo tolerance).
    deletions: HashMap<String, Vec<u32>>,
    /// Stemmed synonym groups.
    synonyms: HashMap<String, Vec<String>>,
}

/// One ranked hit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub doc: usize,
    pub score: f32,
}

impl Index {
    /// Indexes the tools of `lists`, each a server name and its tools.
    pub fn build(lists: Vec<(String, Arc<Vec<Tool>>)>) -> Index {
        let mut index = Index {
            lists,
            docs: Vec::new(),
            name_terms: Vec::new(),
            title_terms: Vec::new(),
            lens: Vec::new(),
            avg_len: [0.0; FIELDS],
            term_ids: HashMap::new(),
            term_text: Vec::new(),
            postings: Vec::new(),
            sorted_terms: Vec::new(),
            deletions: HashMap::new(),
            synonyms: synonym_table(),
        };
        let mut totals = [0f64; FIELDS];
        for li in 0..index.lists.len() {
            let (server, tools) = (index.lists[li].0.clone(), index.lists[li].1.clone());
            let server_terms = terms(&server);
            for (ti, tool) in tools.iter().enumerate() {
                let doc = index.docs.len() as u32;
                index.docs.push(DocRef {
                    list: li as u32,
                    tool: ti as u32,
                });
                let mut fields: [Vec<String>; FIELDS] = Default::default();
                fields[NAME] = terms(&tool.name);
                index.name_terms.push(fields[NAME].join(" "));
                // A title is the tool's name for people ("Get a repository" for
                // `repos_get`): as telling as the name, in words an agent would use.
                let title = tool.title.as_deref().map(query_terms).unwrap_or_default();
                fields[NAME].extend(title.iter().cloned());
                index.title_terms.push(title);
                fields[SERVER] = server_terms.clone();
                fields[DESC] = terms(tool.description.as_deref().unwrap_or(""));
                fields[PARAMS] = param_terms(&tool.input_schema);
                let mut counts: HashMap<u32, [u16; FIELDS]> = HashMap::new();
                let mut lens = [0u16; FIELDS];
                for (f, list) in fields.iter().enumerate() {
                    lens[f] = list.len().min(u16::MAX as usize) as u16;
                    totals[f] += list.len() as f64;
                    for t in list {
                        let id = index.term_id(t);
                        let c = counts.entry(id).or_insert([0; FIELDS]);
                        c[f] = c[f].saturating_add(1);
                    }
                }
                let mut counts: Vec<_> = counts.into_iter().collect();
                counts.sort_unstable_by_key(|(id, _)| *id);
                for (id, c) in counts {
                    index.postings[id as usize].push((doc, c));
                }
                index.lens.push(lens);
            }
        }
        let n = index.docs.len().max(1) as f64;
        for (avg, total) in index.avg_len.iter_mut().zip(totals) {
            *avg = ((total / n) as f32).max(1.0);
        }
        let mut sorted: Vec<(String, u32)> = index
            .term_ids
            .iter()
            .map(|(t, id)| (t.clone(), *id))
            .collect();
        sorted.sort_unstable();
        for (t, id) in &sorted {
            if t.chars().count() >= MIN_FUZZY_LEN {
                for d in deletions(t) {
                    index.deletions.entry(d).or_default().push(*id);
                }
            }
        }
        index.sorted_terms = sorted;
        index
    }

    fn term_id(&mut self, term: &str) -> u32 {
        if let Some(id) = self.term_ids.get(term) {
            return *id;
        }
        let id = self.postings.len() as u32;
        self.term_ids.insert(term.to_string(), id);
        self.term_text.push(term.to_string());
        self.postings.push(Vec::new());
        id
    }

    /// Number of indexed tools.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The server and tool of a document.
    pub fn doc(&self, doc: usize) -> (&str, &Tool) {
        let r = self.docs[doc];
        let (server, tools) = &self.lists[r.list as usize];
        (server, &tools[r.tool as usize])
    }

    /// The server lists this index was built from (to tell whether it is still current).
    pub fn lists(&self) -> &[(String, Arc<Vec<Tool>>)] {
        &self.lists
    }

    /// Every document that matches `query` and passes `keep`, best first (ties in index
    /// order: by server, then the server's own order). An empty query matches everything.
    pub fn search(&self, query: &str, keep: impl Fn(&str, &Tool) -> bool) -> Vec<Hit> {
        self.search_top(query, keep, usize::MAX).0
    }

    /// The best `k` matches, in order, and the number of all matches.
    pub fn search_top(
        &self,
        query: &str,
        keep: impl Fn(&str, &Tool) -> bool,
        k: usize,
    ) -> (Vec<Hit>, usize) {
        let q = query_terms(query);
        let mut hits: Vec<Hit> = if q.is_empty() {
            (0..self.docs.len())
                .map(|doc| Hit { doc, score: 0.0 })
                .collect()
        } else {
            self.score(&q)
        };
        hits.retain(|h| {
            let (s, t) = self.doc(h.doc);
            keep(s, t)
        });
        let total = hits.len();
        let order = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc));
        if k < hits.len() {
            hits.select_nth_unstable_by(k, order);
            hits.truncate(k);
        }
        hits.sort_unstable_by(order);
        (hits, total)
    }

    fn idf(&self, term: u32) -> f32 {
        let n = self.docs.len() as f32;
        let df = self.postings[term as usize].len() as f32;
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
    }

    /// BM25F contribution of one term's occurrences in one document.
    fn term_score(&self, doc: u32, tf: &[u16; FIELDS]) -> f32 {
        let lens = &self.lens[doc as usize];
        let mut w = 0.0;
        for f in 0..FIELDS {
            if tf[f] == 0 {
                continue;
            }
            let norm = 1.0 - FIELD_B[f] + FIELD_B[f] * f32::from(lens[f]) / self.avg_len[f];
            w += FIELD_WEIGHT[f] * f32::from(tf[f]) / norm;
        }
        w * (K1 + 1.0) / (K1 + w)
    }

    /// The vocabulary terms a query term stands for, each with its weight.
    fn expand(&self, term: &str) -> Vec<(u32, f32)> {
        let mut out: Vec<(u32, f32)> = Vec::new();
        let mut add = |id: u32, w: f32| match out.iter_mut().find(|(i, _)| *i == id) {
            Some(e) => e.1 = e.1.max(w),
            None => out.push((id, w)),
        };
        if let Some(id) = self.term_ids.get(term) {
            add(*id, 1.0);
        }
        let len = term.chars().count();
        if len >= MIN_PREFIX_LEN {
            let start = self
                .sorted_terms
                .partition_point(|(t, _)| t.as_str() < term);
            let mut ext: Vec<&(String, u32)> = self.sorted_terms[start..]
                .iter()
                .take_while(|(t, _)| t.starts_with(term))
                .filter(|(t, _)| t != term)
                .collect();
            ext.sort_by_key(|(t, _)| t.len());
            for (_, id) in ext.into_iter().take(MAX_PREFIX_EXPANSIONS) {
                add(*id, PREFIX_WEIGHT);
            }
        }
        if len >= MIN_FUZZY_LEN {
            let mut candidates: Vec<u32> = self.deletions.get(term).cloned().unwrap_or_default();
            for d in deletions(term) {
                if let Some(id) = self.term_ids.get(&d) {
                    candidates.push(*id);
                }
                if let Some(ids) = self.deletions.get(&d) {
                    candidates.extend(ids);
                }
            }
            candidates.sort_unstable();
            candidates.dedup();
            for id in candidates {
                let t = self.term_text[id as usize].as_str();
                if t != term && one_edit_apart(t, term) {
                    add(id, FUZZY_WEIGHT);
                }
            }
        }
        if let Some(syns) = self.synonyms.get(term) {
            for s in syns {
                if let Some(id) = self.term_ids.get(s) {
                    add(*id, SYNONYM_WEIGHT);
                }
            }
        }
        out
    }

    fn score(&self, query: &[String]) -> Vec<Hit> {
        let n = self.docs.len();
        let mut total = vec![0f32; n];
        let mut matched = vec![0u32; n];
        let mut best = vec![0f32; n];
        let mut touched: Vec<u32> = Vec::new();
        let mut any: Vec<u32> = Vec::new();
        for q in query {
            for (term, weight) in self.expand(q) {
                let idf = self.idf(term);
                for (doc, tf) in &self.postings[term as usize] {
                    let s = weight * idf * self.term_score(*doc, tf);
                    let b = &mut best[*doc as usize];
                    if *b == 0.0 {
                        touched.push(*doc);
                    }
                    if s > *b {
                        *b = s;
                    }
                }
            }
            for doc in touched.drain(..) {
                let d = doc as usize;
                if matched[d] == 0 {
                    any.push(doc);
                }
                total[d] += best[d];
                matched[d] += 1;
                best[d] = 0.0;
            }
        }
        let qn = query.len() as f32;
        let joined = query.join(" ");
        any.into_iter()
            .map(|doc| {
                let d = doc as usize;
                let coverage = matched[d] as f32 / qn;
                let mut score = total[d] * (0.3 + 0.7 * coverage * coverage);
                // The query is the tool's name, in words: nothing can be more relevant.
                let title = &self.title_terms[d];
                if self.name_terms[d] == joined || (!title.is_empty() && title.join(" ") == joined)
                {
                    score *= 1.5;
                } else if title.len() >= 2 && title.iter().all(|t| query.contains(t)) {
                    // The query names the whole title ("get information about a repository"
                    // for "Get a repository"), and more.
                    score *= 1.3;
                }
                Hit { doc: d, score }
            })
            .collect()
    }
}

/// Names and descriptions of the parameters of an input schema (top level and one level of
/// nesting), as terms.
fn param_terms(schema: &serde_json::Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(schema: &Value, depth: usize, out: &mut Vec<String>) {
        if depth > 2 {
            return;
        }
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, prop) in props {
                out.extend(terms(name));
                if let Some(d) = prop.get("description").and_then(Value::as_str) {
                    out.extend(terms(d));
                }
                walk(prop, depth + 1, out);
                if let Some(items) = prop.get("items") {
                    walk(items, depth + 1, out);
                }
            }
        }
    }
    walk(&Value::Object(schema.clone()), 0, &mut out);
    out
}

/// Splits text into lowercase words at non-alphanumerics and camelCase boundaries
/// (`getFileInfo` -> get, file, info; `HTTPServer` -> http, server).
pub fn words(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_uppercase() && !cur.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Index terms of a text: its words, stemmed.
pub fn terms(text: &str) -> Vec<String> {
    words(text).iter().map(|w| stem(w)).collect()
}

/// Terms of a query: stop words dropped (unless nothing else is left), deduplicated.
pub fn query_terms(query: &str) -> Vec<String> {
    let all = words(query);
    let kept: Vec<&String> = all
        .iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect();
    let chosen: Vec<&String> = if kept.is_empty() {
        all.iter().collect()
    } else {
        kept
    };
    let mut out: Vec<String> = Vec::new();
    for w in chosen {
        let t = stem(w);
        if !out.contains(&t) {
            out.push(t);
        }
        if out.len() == MAX_QUERY_TERMS {
            break;
        }
    }
    out
}

/// A light English stemmer: enough to meet `files`/`file`, `branches`/`branch`,
/// `directories`/`directory`, `creating`/`created`/`create`. Words of four letters or fewer
/// are kept as they are.
pub fn stem(word: &str) -> String {
    let w = word;
    if w.len() <= 4 || !w.is_ascii() {
        return w.to_string();
    }
    let mut s = if let Some(b) = w.strip_suffix("ies") {
        format!("{b}y")
    } else if w.ends_with("sses") {
        w[..w.len() - 2].to_string()
    } else if w.ends_with("ss") || w.ends_with("us") || w.ends_with("is") {
        w.to_string()
    } else if let Some(b) = w.strip_suffix("es").filter(|b| {
        b.ends_with('s')
            || b.ends_with('x')
            || b.ends_with('z')
            || b.ends_with("ch")
            || b.ends_with("sh")
    }) {
        b.to_string()
    } else if let Some(b) = w.strip_suffix('s') {
        b.to_string()
    } else if let Some(b) = w.strip_suffix("ing").filter(|b| b.len() >= 3) {
        undouble(b)
    } else if let Some(b) = w.strip_suffix("ed").filter(|b| b.len() >= 3) {
        undouble(b)
    } else {
        w.to_string()
    };
    if s.len() > 4 && s.ends_with('e') {
        s.pop();
    }
    s
}

/// `runn` -> `run`, `stopp` -> `stop` (but `ll`, `ss`, `zz` stay).
fn undouble(b: &str) -> String {
    let bytes = b.as_bytes();
    let n = bytes.len();
    if n >= 2
        && bytes[n - 1] == bytes[n - 2]
        && !matches!(bytes[n - 1], b'l' | b's' | b'z')
        && !matches!(bytes[n - 1], b'a' | b'e' | b'i' | b'o' | b'u')
    {
        b[..n - 1].to_string()
    } else {
        b.to_string()
    }
}

/// `term` with each one of its characters deleted.
fn deletions(term: &str) -> Vec<String> {
    let chars: Vec<char> = term.chars().collect();
    (0..chars.len())
        .map(|i| {
            chars
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, c)| c)
                .collect()
        })
        .collect()
}

/// True when one insertion, deletion, substitution or swap of neighbours turns `a` into `b`.
pub fn one_edit_apart(a: &str, b: &str) -> bool {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let (la, lb) = (a.len(), b.len());
    if la.abs_diff(lb) > 1 {
        return false;
    }
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if prefix == la && la == lb {
        return false;
    }
    let (ra, rb) = (&a[prefix..], &b[prefix..]);
    if la == lb {
        ra[1..] == rb[1..]
            || (ra.len() >= 2 && ra[0] == rb[1] && ra[1] == rb[0] && ra[2..] == rb[2..])
    } else if la > lb {
        ra[1..] == *rb
    } else {
        *ra == rb[1..]
    }
}

fn synonym_table() -> HashMap<String, Vec<String>> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for group in SYNONYMS {
        let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
        for s in &stems {
            let e = out.entry(s.clone()).or_default();
            for o in &stems {
                if o != s && !e.contains(o) {
                    e.push(o.clone());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, desc: &str) -> Tool {
        serde_json::from_value(
            json!({"name": name, "description": desc, "inputSchema": {"type": "object"}}),
        )
        .unwrap()
    }

    fn index(tools: &[(&str, Tool)]) -> Index {
        let mut by: Vec<(String, Arc<Vec<Tool>>)> = Vec::new();
        for (s, t) in tools {
            match by.iter_mut().find(|(n, _)| n == s) {
                Some((_, l)) => Arc::make_mut(l).push(t.clone()),
                None => by.push((s.to_string(), Arc::new(vec![t.clone()]))),
            }
        }
        Index::build(by)
    }

    fn top(ix: &Index, q: &str) -> Vec<String> {
        ix.search(q, |_, _| true)
            .iter()
            .map(|h| {
                let (s, t) = ix.doc(h.doc);
                format!("{s}.{}", t.name)
            })
            .collect()
    }

    #[test]
    fn words_split_camel_snake_kebab_and_acronyms() {
        assert_eq!(words("getFileInfo"), ["get", "file", "info"]);
        assert_eq!(
            words("read_multiple-files.v2"),
            ["read", "multiple", "files", "v2"]
        );
        assert_eq!(words("HTTPServerURL"), ["http", "server", "url"]);
        assert_eq!(words("parseJSONBody"), ["parse", "json", "body"]);
    }

    #[test]
    fn stems_meet() {
        for (a, b) in [
            ("files", "file"),
            ("branches", "branch"),
            ("directories", "directory"),
            ("creating", "create"),
            ("created", "create"),
            ("timezones", "timezone"),
            ("running", "run"),
            ("status", "status"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} vs {b}");
        }
    }

    #[test]
    fn one_edit() {
        assert!(one_edit_apart("serach", "search"));
        assert!(one_edit_apart("seach", "search"));
        assert!(one_edit_apart("searchh", "search"));
        assert!(one_edit_apart("seerch", "search"));
        assert!(!one_edit_apart("search", "search"));
        assert!(!one_edit_apart("sarech", "search"));
    }

    #[test]
    fn ranks_name_matches_then_description() {
        let ix = index(&[
            ("fs", tool("read_file", "Read a file from disk")),
            ("fs", tool("write_file", "Write a file")),
            ("git", tool("git_log", "Show commit logs; can read history")),
            (
                "mem",
                tool("createEntities", "Create entities in the graph"),
            ),
        ]);
        let r = top(&ix, "read file");
        assert_eq!(r[0], "fs.read_file");
        assert!(r.contains(&"fs.write_file".to_string()));
        assert_eq!(top(&ix, "entities"), ["mem.createEntities"]);
        assert_eq!(top(&ix, "creating entity")[0], "mem.createEntities");
        assert_eq!(top(&ix, "raed fiel")[0], "fs.read_file", "typos");
        assert_eq!(top(&ix, "remove")[..0], [] as [String; 0]);
        assert_eq!(top(&ix, "").len(), 4);
        assert_eq!(top(&ix, "commit history")[0], "git.git_log");
    }
}
