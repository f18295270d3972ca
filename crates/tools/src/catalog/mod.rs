//! Every upstream tool under one naming scheme, with search and schema lookup.
//!
//! An upstream tool is named `mcp__server__tool` (qualified) or by the pair (server, tool).
//! Inside the sandbox, `tools.server.tool` also accepts identifier forms of both names, in
//! which every character that is not valid in an identifier is written `_`
//! (`my-server` -> `my_server`, `get.page` -> `get_page`); an identifier form that fits two
//! names is an error naming both.

pub mod cache;
pub mod direct;
pub mod error;
pub mod eval;
pub mod infer;
pub mod learned;
mod names;
mod render;
pub mod schema;
pub mod schema_py;
pub mod schema_ts;
pub mod search;
pub mod synthetic;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::Tool;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use crate::upstream::{SEARCH_START_WAIT, UpstreamError, Upstreams};
use cache::ToolCache;
use direct::{DirectTools, Pinned};
use error::{CatalogError, NameError};
use learned::LearnedTypes;
pub use names::{Asker, ident, pick, split_qualified};
use policy::{Decision, ToolAllowlist};
use render::describe_skill;
pub use render::{Detail, declaration, describe};
use search::Index;

/// Discovery over the configured upstreams: what `search_tools`, `get_tool_schema` and
/// `list_servers` answer, both as MCP tools and inside the sandbox.
#[derive(Clone)]
pub struct Catalog {
    upstreams: Arc<Upstreams>,
    shared: Arc<Shared>,
}

struct Shared {
    cache: ToolCache,
    /// The upstream tools also listed as our own (`directTools`).
    direct: DirectTools,
    /// The last tool list known for each server: from the disk cache until the server
    /// connects, then from the server. Loaded on first use, never at start.
    known: OnceCell<Mutex<BTreeMap<String, Arc<Vec<Tool>>>>>,
    /// The index over the lists last searched; rebuilt when one of them changes.
    index: Mutex<Option<Arc<Index>>>,
    /// Output types learned from results, for tools that declare none.
    learned: Arc<LearnedTypes>,
}

/// What a search asks for.
#[derive(Debug, Clone, Default)]
pub struct SearchParams<'a> {
    pub query: &'a str,
    pub detail: Option<&'a str>,
    pub server: Option<&'a str>,
    pub limit: Option<u32>,
    /// `nextCursor` of the previous page.
    pub cursor: Option<&'a str>,
}

/// The tool lists one execution sees. The first list an execution sees of a server (at its
/// start for connected servers, or when it starts one) is the list it keeps until it ends:
/// a `tools/list_changed` during a run changes nothing that run can call or validate against.
/// Outside executions a fresh view per request gives the live lists.
#[derive(Default)]
pub struct ToolView {
    lists: Mutex<HashMap<String, Arc<Vec<Tool>>>>,
}

impl ToolView {
    /// The list this view holds for `server`, if it has seen one.
    pub fn get(&self, server: &str) -> Option<Arc<Vec<Tool>>> {
        self.lists.lock().ok()?.get(server).cloned()
    }

    /// Keeps `tools` as the list of `server` unless the view already holds one; returns the
    /// list the view holds.
    pub fn freeze(&self, server: &str, tools: Arc<Vec<Tool>>) -> Arc<Vec<Tool>> {
        match self.lists.lock() {
            Ok(mut lists) => lists.entry(server.to_string()).or_insert(tools).clone(),
            Err(_) => tools,
        }
    }
}

impl Catalog {
    /// A catalog without a disk cache.
    pub fn new(upstreams: Arc<Upstreams>) -> Self {
        Catalog::with_cache(upstreams, ToolCache::disabled())
    }

    pub fn with_cache(upstreams: Arc<Upstreams>, cache: ToolCache) -> Self {
        let direct = DirectTools::new(upstreams.settings().direct_tools.clone());
        let learned = Arc::new(LearnedTypes::new(
            cache.clone(),
            upstreams.names().map(str::to_string).collect(),
        ));
        Catalog {
            upstreams,
            shared: Arc::new(Shared {
                direct,
                learned,
                cache,
                known: OnceCell::new(),
                index: Mutex::new(None),
            }),
        }
    }

    pub fn upstreams(&self) -> &Arc<Upstreams> {
        &self.upstreams
    }

    /// The `directTools` patterns.
    pub fn direct(&self) -> &DirectTools {
        &self.shared.direct
    }

    /// The pinned direct tools that `allow` permits, named as we list them; with `named`,
    /// only the servers that could list that name are asked (a lookup is not held up by
    /// another pinned server's start). The servers the patterns reach are connected as
    /// needed (concurrently, waiting at most `wait` for each start); one that failed, or is
    /// still starting after `wait`, is left out and named in the errors (its start goes on in
    /// the background).
    pub async fn pinned(
        &self,
        allow: &ToolAllowlist,
        wait: Option<Duration>,
        named: Option<&str>,
    ) -> (Vec<Pinned>, Vec<UpstreamError>) {
        let direct = &self.shared.direct;
        if direct.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let mut servers = direct.servers(self.upstreams.names());
        if let Some(name) = named {
            servers.retain(|s| DirectTools::may_name(s, name));
        }
        let got =
            futures::future::join_all(servers.iter().map(|s| self.connected_tools(s, wait))).await;
        let mut lists = Vec::new();
        let mut errors = Vec::new();
        for (s, list) in servers.into_iter().zip(got) {
            match list {
                Ok(tools) => lists.push((s, tools)),
                Err(e) => errors.push(e),
            }
        }
        let mut pinned = direct.pinned(self.upstreams.names(), &lists);
        pinned.retain(|p| allow.check(&p.server, &p.tool) == Decision::Allow);
        (pinned, errors)
    }

    /// Learns the output type of `tool` (of `server`) from one of its results, unless it
    /// declares one (see [`learned`]).
    pub async fn learn(
        &self,
        server: &str,
        tool: &Tool,
        result: &rmcp::model::CallToolResult,
        data: Option<&policy::pii::detect::Detectors>,
    ) {
        if tool.output_schema.is_some() || result.is_error == Some(true) {
            return;
        }
        let version = self.upstreams.version_if_connected(server).await;
        self.shared
            .learned
            .observe(server, version, tool, result, data.cloned())
            .await;
    }

    /// `tool` as code is shown it: with the output type learned from its results as its
    /// `outputSchema` (marked inferred: see [`INFERRED_KEY`]) when it declares none. Only for
    /// rendering to code and agents: what a client lists is the server's own definition.
    pub async fn typed<'a>(&self, server: &str, tool: &'a Tool) -> Cow<'a, Tool> {
        let one = [(server, tool)];
        self.typed_all(&one)
            .await
            .pop()
            .unwrap_or(Cow::Borrowed(tool))
    }

    /// [`Catalog::typed`] for many tools: each server's version is asked once, and a tool
    /// with nothing learned is not copied.
    pub async fn typed_all<'a>(&self, tools: &[(&str, &'a Tool)]) -> Vec<Cow<'a, Tool>> {
        let learned = &self.shared.learned;
        let mut versions: BTreeMap<&str, Option<Option<String>>> = BTreeMap::new();
        for (server, tool) in tools {
            if tool.output_schema.is_none() && !versions.contains_key(server) {
                let known = learned.knows(server).await;
                let version = if known {
                    Some(self.upstreams.version_if_connected(server).await)
                } else {
                    None
                };
                versions.insert(server, version);
            }
        }
        tools
            .iter()
            .map(|(server, tool)| {
                let Some(Some(version)) = versions.get(server) else {
                    return Cow::Borrowed(*tool);
                };
                match learned.schema_now(server, tool, version.as_deref()) {
                    Some(Value::Object(schema)) => {
                        let mut out = (*tool).clone();
                        out.output_schema = Some(Arc::new(schema));
                        Cow::Owned(out)
                    }
                    _ => Cow::Borrowed(*tool),
                }
            })
            .collect()
    }

    /// The known tool lists, loading the disk cache on first use (off the async threads).
    async fn known(&self) -> &Mutex<BTreeMap<String, Arc<Vec<Tool>>>> {
        self.shared
            .known
            .get_or_init(|| async {
                let cache = self.shared.cache.clone();
                let upstreams = self.upstreams.clone();
                // A list cached before a secret was configured (or by an older version)
                // is redacted like one that arrives (`upstream::redact`).
                let loaded = tokio::task::spawn_blocking(move || {
                    let mut all = cache.load_all();
                    for tools in all.values_mut() {
                        *tools = Arc::new(upstreams.redact_tools(tools.as_ref().clone()));
                    }
                    all
                })
                .await
                .unwrap_or_default();
                Mutex::new(loaded)
            })
            .await
    }

    /// Records the list a connected server reported; a list that differs from the cached
    /// one is written to the disk cache in the background.
    async fn observe(&self, server: &str, tools: &Arc<Vec<Tool>>) {
        let known = self.known().await;
        let changed = {
            let Ok(mut known) = known.lock() else { return };
            match known.get(server) {
                Some(old) if Arc::ptr_eq(old, tools) => false,
                Some(old) if **old == **tools => {
                    known.insert(server.to_string(), tools.clone());
                    false
                }
                _ => {
                    known.insert(server.to_string(), tools.clone());
                    true
                }
            }
        };
        if changed {
            let cache = self.shared.cache.clone();
            let (server, tools) = (server.to_string(), tools.clone());
            tokio::task::spawn_blocking(move || cache.store(&server, &tools));
        }
    }

    /// The tools of `server`, connecting it if needed (waiting at most `wait` for a start),
    /// recorded in the cache.
    async fn connected_tools(
        &self,
        server: &str,
        wait: Option<Duration>,
    ) -> Result<Arc<Vec<Tool>>, UpstreamError> {
        let tools = self.upstreams.tools_within(server, wait).await?;
        self.observe(server, &tools).await;
        Ok(tools)
    }

    /// The tools of `server` as `view` sees them: the list it froze, or the server's (connected
    /// now if needed, waiting at most `wait` for a start), which the view then keeps.
    async fn view_tools(
        &self,
        view: &ToolView,
        server: &str,
        wait: Option<Duration>,
    ) -> Result<Arc<Vec<Tool>>, UpstreamError> {
        if let Some(tools) = view.get(server) {
            return Ok(tools);
        }
        let tools = self.connected_tools(server, wait).await?;
        Ok(view.freeze(server, tools))
    }

    /// Resolves a call target to canonical (server, tool) names and the tool's definition.
    /// `server` given: `name` is a tool of it. Otherwise `name` is `mcp__server__tool`.
    pub async fn resolve(
        &self,
        server: Option<&str>,
        name: &str,
        asker: Asker,
    ) -> Result<(String, Tool), CatalogError> {
        self.find(&ToolView::default(), server, name, asker).await
    }

    /// [`Catalog::resolve`] among the tools `view` sees, for the runtime.
    pub async fn resolve_in(
        &self,
        view: &ToolView,
        server: Option<&str>,
        name: &str,
        asker: Asker,
    ) -> Result<(String, Tool), CatalogError> {
        self.find(view, server, name, asker).await
    }

    /// [`Catalog::resolve`] among the tools `view` sees.
    async fn find(
        &self,
        view: &ToolView,
        server: Option<&str>,
        name: &str,
        asker: Asker,
    ) -> Result<(String, Tool), CatalogError> {
        // An unknown server or tool is one error however the target was written: the
        // qualified name, the nearest names, and where to look.
        let unknown = |server: &str, tool: &str, why: NameError, advice| match why {
            NameError::NotFound { .. } => CatalogError::UnknownTool {
                qualified: names::shown(&format!("mcp__{server}__{tool}")),
                why: Box::new(why),
                advice,
            },
            other => CatalogError::Name(other),
        };
        let (server, tool) = match server {
            Some(s) => (
                self.server_named(s).map_err(|e| match e {
                    CatalogError::Name(why) => unknown(s, name, why, asker.list_servers()),
                    other => other,
                })?,
                name.to_string(),
            ),
            None => split_qualified(self.upstreams.names(), name, asker).map_err(|e| {
                self.refusal(None, name)
                    .map_or(CatalogError::Name(e), CatalogError::Refused)
            })?,
        };
        let tools = self.view_tools(view, &server, None).await?;
        let found = pick(
            tools.iter().map(|t| &*t.name),
            &tool,
            &format!("tool of server \"{server}\""),
        )
        .map_err(|e| {
            self.upstreams.hidden(&server, &tool).map_or_else(
                || unknown(&server, &tool, e, asker.search()),
                CatalogError::Refused,
            )
        })?;
        let def = tools
            .iter()
            .find(|t| t.name == found)
            .cloned()
            .ok_or_else(|| CatalogError::Vanished(found.to_string()))?;
        Ok((server, def))
    }

    /// The configured server `wanted` names (exactly, or in identifier form); a held-back
    /// server is an error saying why.
    fn server_named(&self, wanted: &str) -> Result<String, CatalogError> {
        pick(self.upstreams.names(), wanted, "MCP server")
            .map(str::to_string)
            .map_err(|e| {
                self.refusal(Some(wanted), "")
                    .map_or(CatalogError::Name(e), CatalogError::Refused)
            })
    }

    /// Why a call target is refused by the user's client configs, when it is: its server is
    /// held back (its client would not start it), or its tool is hidden by the server's own
    /// tool filter. `server` given: `name` is a tool of it; otherwise `mcp__server__tool`.
    pub fn refusal(&self, server: Option<&str>, name: &str) -> Option<String> {
        let held = |s: &str| {
            self.upstreams.held_back(s).map(|why| {
                UpstreamError::HeldBack {
                    server: s.to_string(),
                    reason: why.to_string(),
                }
                .to_string()
            })
        };
        match server {
            Some(s) => held(s).or_else(|| self.upstreams.hidden(s, name)),
            None => {
                let rest = name.strip_prefix("mcp__")?;
                if let Ok((s, tool)) = split_qualified(self.upstreams.names(), name, Asker::Code) {
                    return self.upstreams.hidden(&s, &tool);
                }
                let (s, _) = rest.split_once("__")?;
                held(s).or_else(|| {
                    // A held-back name may itself contain "__".
                    rest.match_indices("__").find_map(|(i, _)| held(&rest[..i]))
                })
            }
        }
    }

    /// Tools of `server` (or of every server), connecting them as needed (waiting at most
    /// `wait` for each start), that `allow` permits. Servers that fail to start, or are still
    /// starting after `wait`, are skipped; their errors come back alongside.
    pub async fn tools(
        &self,
        view: &ToolView,
        server: Option<&str>,
        allow: &ToolAllowlist,
        wait: Option<Duration>,
    ) -> Result<(Vec<(String, Tool)>, Vec<UpstreamError>), CatalogError> {
        let servers: Vec<String> = match server {
            Some(s) => vec![self.server_named(s)?],
            None => self.upstreams.names().map(str::to_string).collect(),
        };
        let lists =
            futures::future::join_all(servers.iter().map(|s| self.view_tools(view, s, wait))).await;
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for (s, list) in servers.iter().zip(lists) {
            match list {
                Ok(tools) => out.extend(
                    tools
                        .iter()
                        .filter(|t| allow.check(s, t) == Decision::Allow)
                        .map(|t| (s.clone(), t.clone())),
                ),
                Err(e) => errors.push(e),
            }
        }
        Ok((out, errors))
    }

    /// The tool lists a search covers. Connected servers give their live list; a server
    /// that is named by the `server` filter or in the query, or whose tools are not cached,
    /// is connected, waiting at most [`SEARCH_START_WAIT`] for it (a slow start is skipped,
    /// named in the errors, and goes on in the background); the others are searched from the
    /// cache without starting them.
    async fn search_lists(
        &self,
        view: &ToolView,
        server: Option<&str>,
        query: &str,
    ) -> Result<Searched, CatalogError> {
        let servers: Vec<String> = match server {
            Some(s) => vec![self.server_named(s)?],
            None => self.upstreams.names().map(str::to_string).collect(),
        };
        let query_words = search::words(query);
        let known = self.known().await;
        let mut lists: Vec<(String, Option<Arc<Vec<Tool>>>)> = Vec::new();
        for s in servers {
            let live = match view.get(&s) {
                Some(seen) => Some(seen),
                None => match self.upstreams.tools_if_connected(&s).await {
                    Some(live) => {
                        self.observe(&s, &live).await;
                        Some(view.freeze(&s, live))
                    }
                    None => None,
                },
            };
            let named = server.is_some() || {
                let w = search::words(&s);
                !w.is_empty() && w.iter().all(|x| query_words.contains(x))
            };
            let cached = known.lock().ok().and_then(|k| k.get(&s).cloned());
            let list = match live {
                Some(l) => Some(l),
                None if named => None,
                None => cached,
            };
            lists.push((s, list));
        }
        let fetched = futures::future::join_all(lists.iter().map(|(s, l)| async move {
            match l {
                Some(l) => Ok(l.clone()),
                None => self.view_tools(view, s, Some(SEARCH_START_WAIT)).await,
            }
        }))
        .await;
        let mut out = Vec::new();
        let mut errors = Vec::new();
        let mut started = Vec::new();
        for ((s, had), r) in lists.into_iter().zip(fetched) {
            match r {
                Ok(l) => {
                    if had.is_none() {
                        started.push(s.clone());
                    }
                    out.push((s, l));
                }
                Err(e) => {
                    // A server that failed to start is still searched from the cache.
                    if let Some(cached) = known.lock().ok().and_then(|k| k.get(&s).cloned()) {
                        out.push((s, cached));
                    }
                    errors.push(e);
                }
            }
        }
        Ok(Searched {
            lists: out,
            errors,
            started,
        })
    }

    /// The index over `lists`, reusing the last one when no list changed.
    fn index(&self, lists: Vec<(String, Arc<Vec<Tool>>)>) -> Arc<Index> {
        let Ok(mut slot) = self.shared.index.lock() else {
            return Arc::new(Index::build(lists));
        };
        if let Some(ix) = &*slot {
            let same = ix.lists().len() == lists.len()
                && ix
                    .lists()
                    .iter()
                    .zip(&lists)
                    .all(|((a, x), (b, y))| a == b && Arc::ptr_eq(x, y));
            if same {
                return ix.clone();
            }
        }
        let ix = Arc::new(Index::build(lists));
        *slot = Some(ix.clone());
        ix
    }

    /// `search_tools`: a page of ranked matches, the number of matches, the cursor of the
    /// next page, and the servers that could not be searched (the server's answer carries
    /// the reason as text).
    pub async fn search(
        &self,
        params: &SearchParams<'_>,
        allow: &ToolAllowlist,
    ) -> Result<Value, CatalogError> {
        self.search_in(&ToolView::default(), params, allow).await
    }

    /// [`Catalog::search`] over the lists `view` sees (for servers it has seen).
    pub async fn search_in(
        &self,
        view: &ToolView,
        params: &SearchParams<'_>,
        allow: &ToolAllowlist,
    ) -> Result<Value, CatalogError> {
        self.search_with(view, params, allow, None).await
    }

    /// [`Catalog::search_in`], with `skills` ranked among the tools: each a [`Tool`] whose
    /// `_meta.skill` is what a hit shows (see [`SKILLS_SOURCE`]). A `server` filter of
    /// `"skills"` (when no upstream has that name) searches only them.
    pub async fn search_with(
        &self,
        view: &ToolView,
        params: &SearchParams<'_>,
        allow: &ToolAllowlist,
        skills: Option<Arc<Vec<Tool>>>,
    ) -> Result<Value, CatalogError> {
        let only_skills =
            params.server == Some("skills") && !self.upstreams.names().any(|n| n == "skills");
        let params = &SearchParams {
            server: params.server.filter(|_| !only_skills),
            ..*params
        };
        let detail = Detail::parse(params.detail)?;
        let limit = params.limit.map_or(DEFAULT_SEARCH_LIMIT, |l| {
            (l as usize).clamp(1, MAX_SEARCH_LIMIT)
        });
        let offset = match params.cursor {
            None | Some("") => 0,
            Some(c) => c
                .parse::<usize>()
                .map_err(|_| CatalogError::Cursor(c.to_string()))?,
        };
        let Searched {
            mut lists,
            errors,
            started,
        } = if only_skills {
            Searched::default()
        } else {
            self.search_lists(view, params.server, params.query).await?
        };
        if let Some(skills) = skills.filter(|s| !s.is_empty())
            && (params.server.is_none() || only_skills)
        {
            lists.push((SKILLS_SOURCE.to_string(), skills));
        }
        let index = self.index(lists);
        let (hits, total) = index.search_top(
            params.query,
            |s, t| s == SKILLS_SOURCE || allow.check(s, t) == Decision::Allow,
            offset.saturating_add(limit),
        );
        let docs: Vec<(&str, &Tool)> = hits
            .iter()
            .skip(offset)
            .map(|h| {
                let (s, t) = index.doc(h.doc);
                (s, t)
            })
            .collect();
        let typed = if detail == Detail::Full {
            self.typed_all(&docs).await
        } else {
            docs.iter().map(|(_, t)| Cow::Borrowed(*t)).collect()
        };
        let page: Vec<Value> = docs
            .iter()
            .zip(&typed)
            .map(|((s, t), typed)| {
                if *s == SKILLS_SOURCE {
                    describe_skill(t, detail)
                } else {
                    let mut d = describe(s, typed, detail);
                    // A held tool says what changed; a flagged one that it hid text.
                    if let Some(n) = self.upstreams.definitions().notice(s, &t.name)
                        && let (Some(o), Value::Object(extra)) = (d.as_object_mut(), n.to_json())
                    {
                        o.extend(extra.into_iter().filter(|(k, _)| k != "tool"));
                    }
                    d
                }
            })
            .collect();
        // `query` and `lazyLoaded` (the servers this search started) as the product line's
        // documents show them.
        let mut out = json!({
            "tools": page,
            "total": total,
            "query": params.query,
            "lazyLoaded": started,
        });
        if offset + limit < total {
            out["nextCursor"] = Value::String((offset + limit).to_string());
        }
        if !errors.is_empty() {
            out["unavailable"] = errors
                .iter()
                .map(|e| Value::String(e.to_string()))
                .collect();
        }
        Ok(out)
    }

    /// `get_tool_schema`: one tool in full, by qualified name, or by its server's name and
    /// its own (the documents' `get_tool_signature`). (The server's answer carries the
    /// reason as text.)
    pub async fn schema(&self, server: Option<&str>, name: &str) -> Result<Value, CatalogError> {
        let (server, tool) = self.resolve(server, name, Asker::Agent).await?;
        Ok(describe(
            &server,
            &*self.typed(&server, &tool).await,
            Detail::Full,
        ))
    }

    /// `list_servers` (and `listServers()` in code): every configured server with its status,
    /// and, as the product line's documents have them, `available` (the servers not connected
    /// now that a call or a search starts: configured, not held back) and `totalTools` (the
    /// tools of the connected ones).
    pub async fn servers(&self) -> Value {
        let servers = self.upstreams.status().await;
        let available: Vec<&str> = servers
            .iter()
            .filter(|s| !matches!(s.status, "connected" | "heldBack"))
            .map(|s| s.name.as_str())
            .collect();
        let total: usize = servers.iter().filter_map(|s| s.tool_count).sum();
        json!({ "servers": servers, "available": available, "totalTools": total })
    }
}

/// What a search looked through: each server's list, the servers that could not be listed,
/// and those it had to start (the documents' `lazyLoaded`).
#[derive(Default)]
struct Searched {
    lists: Vec<(String, Arc<Vec<Tool>>)>,
    errors: Vec<UpstreamError>,
    started: Vec<String>,
}

/// The list name skills are indexed under (no upstream can be named so: it is not a name a
/// config file can give a server and reach by `tools.<name>`).
pub const SKILLS_SOURCE: &str = "(skills)";

/// Default and largest number of search results.
pub const DEFAULT_SEARCH_LIMIT: usize = 10;
pub const MAX_SEARCH_LIMIT: usize = 200;

#[cfg(test)]
mod tests;
