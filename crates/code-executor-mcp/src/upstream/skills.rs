//! Skills the upstream servers serve over the MCP skills extension (SEP-2640): listed from a
//! connected server that declares the extension (bounded: a hostile server cannot make us
//! hold or page without end), kept for a while, and their files read on demand, only those
//! its own listing names (a skill's reads stay with the server that serves it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResult, Skill};

use super::connection::Connection;

/// Most skills kept of one server, and pages asked for.
const MAX_SKILLS: usize = 1000;
const MAX_PAGES: usize = 20;
/// How long a listing is kept (a server's shorter `ttlMs` wins, down to the minimum).
const KEEP: Duration = Duration::from_secs(60);
const KEEP_AT_LEAST: Duration = Duration::from_secs(5);

/// One server's listing: when it was fetched, how long it is kept, the skills.
type Kept = (Instant, Duration, Arc<Vec<Skill>>);

/// The listings last fetched, by server.
#[derive(Default)]
pub(crate) struct UpstreamSkills {
    kept: Mutex<HashMap<String, Kept>>,
}

impl UpstreamSkills {
    /// The skills of `conn` (server `server`), from the kept listing while it is fresh.
    pub(super) async fn of(&self, server: &str, conn: &Connection) -> Arc<Vec<Skill>> {
        if let Ok(kept) = self.kept.lock()
            && let Some((at, keep, list)) = kept.get(server)
            && at.elapsed() < *keep
        {
            return list.clone();
        }
        let (list, keep) = fetch(server, conn).await;
        let list = Arc::new(list);
        if let Ok(mut kept) = self.kept.lock() {
            kept.insert(server.to_string(), (Instant::now(), keep, list.clone()));
        }
        list
    }
}

/// Pages through `skills/list` of a server that declares the extension.
async fn fetch(server: &str, conn: &Connection) -> (Vec<Skill>, Duration) {
    let peer = conn.service.peer();
    let declares = peer
        .peer_info()
        .is_some_and(|i| i.capabilities.supports_skills());
    if !declares {
        return (Vec::new(), KEEP);
    }
    let mut out = Vec::new();
    let mut keep = KEEP;
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let params = cursor
            .take()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        match peer.list_skills(params).await {
            Ok(page) => {
                if let Some(ttl) = page.ttl_ms {
                    keep = keep.min(Duration::from_millis(ttl)).max(KEEP_AT_LEAST);
                }
                out.extend(page.skills.into_iter().filter(|s| s.validate().is_ok()));
                if out.len() >= MAX_SKILLS {
                    out.truncate(MAX_SKILLS);
                    tracing::warn!(
                        server,
                        "the server lists more than {MAX_SKILLS} skills; the rest are not shown"
                    );
                    break;
                }
                match page.next_cursor {
                    Some(c) => cursor = Some(c),
                    None => break,
                }
            }
            Err(e) => {
                tracing::warn!(server, "skills/list failed: {e}");
                break;
            }
        }
    }
    (out, keep)
}

/// Reads `uri` from the server, when one of its listed skills names it (its `SKILL.md`, a
/// file of its manifest, or a file under a dynamic skill's directory).
pub(super) async fn read(
    conn: &Connection,
    skills: &[Skill],
    uri: &str,
) -> Result<ReadResourceResult, String> {
    let listed = skills.iter().any(|s| {
        s.uri == uri
            || match &s.resources {
                rmcp::model::SkillResources::Files(files) => files.iter().any(|f| f.uri == uri),
                _ => s
                    .uri
                    .strip_suffix("SKILL.md")
                    .is_some_and(|root| uri.starts_with(root) && !uri.contains("/../")),
            }
    });
    if !listed {
        return Err(format!("{uri} is not a file of a skill the server lists"));
    }
    conn.service
        .peer()
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .map_err(|e| e.to_string())
}
