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
pub struct UpstreamSkills {
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
    let Some(peer) = conn.source.mcp_peer() else {
        return (Vec::new(), KEEP);
    };
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

/// Why a skill file of an upstream is not read through us.
#[derive(Debug, thiserror::Error)]
pub(super) enum NotListed {
    #[error("{uri} is refused: {why}")]
    Refused {
        uri: String,
        why: crate::skills::uri::PathError,
    },
    #[error("{uri} is not a file of a skill the server lists")]
    Unlisted { uri: String },
}

/// Whether `uri` is a file of one of `skills`: its `SKILL.md`, a file of its manifest, or a
/// path under a dynamic skill's directory whose every segment, decoded, is a plain name
/// (`%2E%2E`, `.%2E`, a trailing `..`, `%2F`, a backslash... are refused, see
/// [`crate::skills::uri::segments`]).
fn listed(skills: &[Skill], uri: &str) -> Result<(), NotListed> {
    let mut refused = None;
    let listed = skills.iter().any(|s| {
        s.uri == uri
            || match &s.resources {
                rmcp::model::SkillResources::Files(files) => files.iter().any(|f| f.uri == uri),
                _ => s
                    .uri
                    .strip_suffix("SKILL.md")
                    .and_then(|root| uri.strip_prefix(root))
                    .is_some_and(|rel| match crate::skills::uri::segments(rel) {
                        Ok(_) => true,
                        Err(why) => {
                            refused = Some(why);
                            false
                        }
                    }),
            }
    });
    match (listed, refused) {
        (true, _) => Ok(()),
        (false, Some(why)) => Err(NotListed::Refused {
            uri: uri.into(),
            why,
        }),
        (false, None) => Err(NotListed::Unlisted { uri: uri.into() }),
    }
}

/// Why a skill's file was not read.
#[derive(Debug, thiserror::Error)]
pub(super) enum ReadError {
    #[error(transparent)]
    NotListed(#[from] NotListed),
    #[error(transparent)]
    Server(#[from] rmcp::ServiceError),
    /// The source is not an MCP server: it serves no skills.
    #[error("the source is not an MCP server and serves no skills")]
    NotMcp,
}

/// Reads `uri` from the server, when one of its listed skills names it (its `SKILL.md`, a
/// file of its manifest, or a file under a dynamic skill's directory).
pub(super) async fn read(
    conn: &Connection,
    skills: &[Skill],
    uri: &str,
) -> Result<ReadResourceResult, ReadError> {
    listed(skills, uri)?;
    let peer = conn.source.mcp_peer().ok_or(ReadError::NotMcp)?;
    Ok(peer
        .read_resource(ReadResourceRequestParams::new(uri))
        .await?)
}

#[cfg(test)]
mod tests {
    use rmcp::model::{SkillFrontmatter, SkillResources};

    use super::*;

    fn dynamic(uri: &str) -> Skill {
        Skill::new(
            uri,
            SkillFrontmatter::new("dyn", "A dynamic skill."),
            SkillResources::Dynamic,
        )
    }

    #[test]
    fn a_dynamic_skills_files_are_read_only_beneath_it() {
        let skills = [dynamic("skill://acme/dyn/SKILL.md")];
        for ok in [
            "skill://acme/dyn/SKILL.md",
            "skill://acme/dyn/notes.md",
            "skill://acme/dyn/templates/a%20b.md",
        ] {
            assert!(listed(&skills, ok).is_ok(), "{ok}");
        }
        for bad in [
            "skill://acme/dyn/../other/SKILL.md",
            "skill://acme/dyn/%2E%2E/other/SKILL.md",
            "skill://acme/dyn/%2e%2e/other/SKILL.md",
            "skill://acme/dyn/.%2E/other/SKILL.md",
            "skill://acme/dyn/%2E./other/SKILL.md",
            "skill://acme/dyn/x/..",
            "skill://acme/dyn/x/%2E%2E",
            "skill://acme/dyn/..",
            "skill://acme/dyn/.",
            "skill://acme/dyn/./SKILL.md",
            "skill://acme/dyn/x//y",
            "skill://acme/dyn/",
            "skill://acme/dyn//etc/passwd",
            "skill://acme/dyn/%2Fetc%2Fpasswd",
            "skill://acme/dyn/..%2F..%2Fsecret",
            "skill://acme/dyn/..%5C..%5Csecret",
            "skill://acme/dyn/..\\..\\secret",
            "skill://acme/dyn/%252E%252E/secret",
            "skill://acme/dyn/a%00.md",
            "skill://acme/dyn/a.md?x=../../y",
            "skill://acme/other/SKILL.md",
        ] {
            assert!(listed(&skills, bad).is_err(), "{bad}");
        }
    }
}
