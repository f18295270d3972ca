//! Skills served over the MCP skills extension (SEP-2640, `io.modelcontextprotocol/skills`):
//! every file of every skill is a `skill://` resource (`resources/list`, `resources/read`),
//! `skills/list` and `skills/get` give each skill's verbatim frontmatter and a complete
//! manifest of its files with SHA-256 digests, and `resources/directory/read` lists a skill's
//! directories. A client without the extension still reaches the same files as ordinary
//! resources.
//!
//! URIs are `skill://<origin>/<name>/<file>`: `user`, `project` or `served` first (so a
//! project's skill never takes a user skill's address), then the skill's name (the last
//! segment of its path, as the extension requires), then the file's path, each segment
//! percent-encoded. Only the files a skill's manifest lists are read: the walk that makes it
//! and every read are made beneath the skill's root by descriptor, never following a link at
//! any component (`tools::skills::beneath`), so nothing outside the skill's directory is ever
//! served. One skill that cannot be served (or one whose entry breaks the extension's rules,
//! or a second with an address already listed) is left out and said, in the log and in
//! `_meta` of `skills/list`; the others are listed.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CacheScope, GetSkillResult, ListResourcesResult, ListSkillsResult, ReadResourceResult,
    Resource, ResourceContents, Skill as WireSkill, SkillFrontmatter, SkillResource,
    SkillResources,
};

use tools::skills::beneath::{Kind, plain_segment};
use tools::skills::skill::{SKILL_FILE, Skill};
use tools::skills::store::Skills;
use tools::skills::uri::{self, SCHEME, encode};
use tools::upstream::Upstreams;

/// The skills of the connected upstream servers that serve the extension, as we serve them
/// (their addresses under `skill://upstream/<server>/`).
pub(crate) async fn upstream(upstreams: &Upstreams) -> Vec<WireSkill> {
    let mut out = Vec::new();
    for server in upstreams.names() {
        if let Some(list) = upstreams.skills_if_connected(server).await {
            out.extend(list.iter().filter_map(|s| uri::rewrite(server, s)));
        }
    }
    out
}
/// The extension's limits: files per skill and bytes per skill.
const MAX_FILES: usize = 512;
const MAX_BYTES: u64 = 16 * 1024 * 1024;
/// How long a client may treat a listing as current.
const TTL_MS: u64 = 30_000;
const DIRECTORY: &str = "inode/directory";

/// Deepest directory served inside a skill.
const MAX_DEPTH: usize = 16;
/// The key of `skills/list`'s `_meta` that names what was left out, and why.
pub(crate) const PROBLEMS_META: &str = "code-executor-mcp/problems";

/// One file of a skill: its path inside the skill (`/`-separated) and its size.
struct File {
    rel: String,
    size: u64,
}

/// Logs `what` the first time it is met (listings are frequent).
fn warn_once(what: String) {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static WARNED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let mut warned = WARNED
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if warned.len() < 10_000 && warned.insert(what.clone()) {
        tracing::warn!("skills: {what}");
    }
}

/// The files of `skill`: every regular file below its directory, opened beneath its root
/// (a link at any component is not followed: a linked file or directory is left out, and
/// logged, as is a fifo, a device or a name that is not UTF-8 or not a plain name), within
/// the extension's limits (else why not).
fn files(skill: &Skill) -> Result<Vec<File>, ServeError> {
    let top = skill.open()?;
    let mut out = Vec::new();
    let mut total = 0u64;
    let mut stack = vec![(top, String::new(), 0usize)];
    let too_many = || ServeError::TooMany(skill.dir.clone());
    while let Some((at, prefix, depth)) = stack.pop() {
        let (entries, more) = at.entries(MAX_FILES + 1)?;
        if more {
            return Err(too_many());
        }
        for entry in entries {
            let name = match entry.name {
                Ok(n) if plain_segment(&n) => n,
                Ok(n) => {
                    warn_once(format!(
                        "{}: {n:?} is not a plain file name; not served",
                        at.path().display()
                    ));
                    continue;
                }
                Err(tools::skills::beneath::NotUtf8Name(lossy)) => {
                    warn_once(format!(
                        "{}: the name {lossy:?} is not UTF-8; not served",
                        at.path().display()
                    ));
                    continue;
                }
            };
            let rel = format!("{prefix}{name}");
            match entry.kind {
                Ok(Kind::Dir) if depth < MAX_DEPTH => {
                    let sub = at.dir(&name)?;
                    stack.push((sub, format!("{rel}/"), depth + 1));
                }
                Ok(Kind::File { size }) => {
                    total = total.saturating_add(size);
                    out.push(File { rel, size });
                }
                Ok(Kind::Link) => warn_once(format!(
                    "{}: a symbolic link, not followed: not served",
                    at.path().join(&name).display()
                )),
                Ok(Kind::Dir) => warn_once(format!(
                    "{}: deeper than {MAX_DEPTH} directories; not served",
                    at.path().join(&name).display()
                )),
                Ok(Kind::Other(what)) => warn_once(format!(
                    "{} is {what}; not served",
                    at.path().join(&name).display()
                )),
                Err(e) => warn_once(e.to_string()),
            }
            if out.len() > MAX_FILES || total > MAX_BYTES {
                return Err(too_many());
            }
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

/// The bytes of the file `rel` of `skill`, read beneath its root (no link followed).
fn read_file(skill: &Skill, rel: &str) -> Result<Vec<u8>, ServeError> {
    Ok(skill.open()?.read_at(rel, MAX_BYTES)?)
}

/// Why a skill's files are not served.
#[derive(Debug, thiserror::Error)]
enum ServeError {
    #[error(transparent)]
    Skill(#[from] tools::skills::error::SkillError),
    #[error(transparent)]
    Tree(#[from] tools::skills::beneath::TreeError),
    #[error(
        "{} holds more than the skills extension allows a skill ({MAX_FILES} files, 16 MiB)",
        .0.display()
    )]
    TooMany(std::path::PathBuf),
}

/// `skill://<origin>/<name>`: the skill's root directory.
fn root_uri(skill: &Skill) -> String {
    format!("{SCHEME}{}/{}", skill.origin.as_str(), encode(&skill.name))
}

fn file_uri(skill: &Skill, rel: &str) -> String {
    let path: Vec<String> = rel.split('/').map(encode).collect();
    format!("{}/{}", root_uri(skill), path.join("/"))
}

/// What a `skill://` URI names: the skill, and the path inside it (empty: its root). Every
/// segment is decoded, then checked (see [`uri::segments`]): `..` in any spelling names
/// nothing.
fn resolve(store: &Skills, uri: &str) -> Option<(Skill, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (origin, rest) = rest.split_once('/')?;
    let (name, path) = match rest.split_once('/') {
        Some((n, p)) => (n, Some(p)),
        None => (rest, None),
    };
    let name = uri::segment(name).ok()?;
    let path = match path {
        None => Vec::new(),
        Some(p) => uri::segments(p).ok()?,
    };
    let skill = store.find(&format!("{origin}/{name}")).ok()?;
    Some((skill, path.join("/")))
}

fn mime(rel: &str, bytes: Option<&[u8]>) -> &'static str {
    let ext = rel.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("md") => "text/markdown",
        Some("py") => "text/x-python",
        Some("ts") => "text/x-typescript",
        Some("js" | "mjs") => "text/javascript",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("txt") => "text/plain",
        Some("html") => "text/html",
        Some("csv") => "text/csv",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("pdf") => "application/pdf",
        _ if bytes.is_none_or(|b| std::str::from_utf8(b).is_ok()) => "text/plain",
        _ => "application/octet-stream",
    }
}

/// The extension's entry of one skill: its frontmatter as written, and every file's digest.
fn entry(skill: &Skill) -> Result<WireSkill, ServeError> {
    let mut manifest = Vec::new();
    for f in files(skill)? {
        let bytes = read_file(skill, &f.rel)?;
        manifest.push(SkillResource::from_bytes(file_uri(skill, &f.rel), &bytes));
    }
    let mut frontmatter = SkillFrontmatter::new(&skill.name, &skill.description);
    for (k, v) in &skill.frontmatter {
        match k.as_str() {
            // As written (YAML may fold a description over lines).
            "name" | "description" if v.is_string() => {
                if k == "description" {
                    frontmatter.description = v.as_str().unwrap_or_default().to_string();
                }
            }
            _ => {
                frontmatter.extra.insert(k.clone(), v.clone());
            }
        }
    }
    Ok(WireSkill::new(
        file_uri(skill, SKILL_FILE),
        frontmatter,
        SkillResources::Files(manifest),
    ))
}

/// `skills/list`: every skill that can be served, then the connected upstreams'
/// (`upstream`). One that cannot be (unreadable, breaking the extension's rules, or at an
/// address already listed) is left out, logged and named in `_meta` ([`PROBLEMS_META`]):
/// one odd entry never fails the whole list.
pub(crate) fn list(store: &Skills, upstream: Vec<WireSkill>) -> ListSkillsResult {
    let (skills, mut problems) = store.list();
    let mut entries: Vec<WireSkill> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let ours = skills
        .iter()
        .map(|s| (s.dir.display().to_string(), entry(s)));
    let theirs = upstream.into_iter().map(|s| (s.uri.clone(), Ok(s)));
    for (what, e) in ours.chain(theirs) {
        let why = match e {
            Err(why) => why.to_string(),
            Ok(e) => match e.validate() {
                Err(why) => why.to_string(),
                Ok(()) if !seen.insert(e.uri.clone()) => format!(
                    "{} is listed already (the first one with that address is served)",
                    e.uri
                ),
                Ok(()) => {
                    entries.push(e);
                    continue;
                }
            },
        };
        let problem = format!("{what} is not served: {why}");
        warn_once(problem.clone());
        problems.push(problem);
    }
    // Addresses equal only once normalized (`%7E` and `~`): the rule the extension's
    // whole-list check applies, so the list is taken apart until it passes.
    if rmcp::model::validate_skills(&entries).is_err() {
        let mut kept: Vec<WireSkill> = Vec::new();
        for e in entries {
            kept.push(e);
            if rmcp::model::validate_skills(&kept).is_err()
                && let Some(dropped) = kept.pop()
            {
                let problem = format!("{} is listed already; not served twice", dropped.uri);
                warn_once(problem.clone());
                problems.push(problem);
            }
        }
        entries = kept;
    }
    let mut result = ListSkillsResult::with_all_items(entries)
        .with_ttl_ms(TTL_MS)
        .with_cache_scope(CacheScope::Private);
    if !problems.is_empty() {
        let mut meta = rmcp::model::MetaObject::new();
        meta.insert(PROBLEMS_META.into(), serde_json::json!(problems));
        result.meta = Some(meta);
    }
    result
}

fn unknown(what: String) -> McpError {
    McpError::invalid_params(what, None)
}

/// `skills/get` (`upstream`: the upstreams' skills, as [`upstream`] gives them).
pub(crate) fn get(
    store: &Skills,
    upstream: &[WireSkill],
    uri: &str,
) -> Result<GetSkillResult, McpError> {
    let no = || unknown(format!("No skill is served at {uri}"));
    if let Some(theirs) = uri::theirs(uri) {
        theirs.map_err(|e| unknown(e.to_string()))?;
        let entry = upstream.iter().find(|s| s.uri == uri).ok_or_else(no)?;
        return Ok(GetSkillResult::new(entry.clone())
            .with_ttl_ms(TTL_MS)
            .with_cache_scope(CacheScope::Private));
    }
    let (skill, path) = resolve(store, uri).ok_or_else(no)?;
    if path != SKILL_FILE {
        return Err(unknown(format!(
            "{uri} is not the URI of a skill's {SKILL_FILE}"
        )));
    }
    let entry = entry(&skill)
        .map_err(|e| e.to_string())
        .and_then(|e| e.validate().map(|()| e).map_err(|e| e.to_string()))
        .map_err(|why| unknown(format!("the skill at {uri} is not served: {why}")))?;
    Ok(GetSkillResult::new(entry)
        .with_ttl_ms(TTL_MS)
        .with_cache_scope(CacheScope::Private))
}

/// `resources/list`: every file of every skill.
pub(crate) fn resources(store: &Skills) -> ListResourcesResult {
    let (skills, _) = store.list();
    let mut out = Vec::new();
    for skill in &skills {
        let Ok(files) = files(skill) else {
            continue;
        };
        for f in files {
            let name = f.rel.rsplit('/').next().unwrap_or(&f.rel).to_string();
            let mut r = Resource::new(file_uri(skill, &f.rel), name)
                .with_mime_type(mime(&f.rel, None))
                .with_size(f.size);
            if f.rel == SKILL_FILE {
                r = Resource::new(file_uri(skill, &f.rel), skill.name.clone())
                    .with_description(skill.description.clone())
                    .with_mime_type("text/markdown")
                    .with_size(f.size);
            }
            out.push(r);
        }
    }
    ListResourcesResult::with_all_items(out)
}

/// `resources/read` of a skill's file: ours from disk, an upstream's from that server.
pub(crate) async fn read(
    store: &Skills,
    upstreams: &Upstreams,
    uri: &str,
) -> Result<ReadResourceResult, McpError> {
    let no = || {
        unknown(format!(
            "Resource not found: {uri} (skill files are skill://<origin>/<name>/<file>; resources/list shows them)"
        ))
    };
    if let Some(theirs) = uri::theirs(uri) {
        let (server, theirs) = theirs.map_err(|e| unknown(e.to_string()))?;
        let mut read = upstreams
            .read_skill_file(&server, &theirs)
            .await
            .map_err(|e| unknown(e.to_string()))?;
        // An upstream of an earlier revision sends no `resultType`; a 2026-07-28 client
        // refuses a result without one (FastMCP's skills client did).
        read.result_type = Some(rmcp::model::ResultType::COMPLETE);
        // Their addresses become ours again.
        for c in &mut read.contents {
            match c {
                ResourceContents::TextResourceContents { uri: u, .. }
                | ResourceContents::BlobResourceContents { uri: u, .. } => {
                    *u = uri::ours(&server, u).unwrap_or_else(|| uri.to_string());
                }
                _ => {}
            }
        }
        return Ok(read);
    }
    let (skill, path) = resolve(store, uri).ok_or_else(no)?;
    // Only what the manifest lists: a path that is not a regular file of the skill (a
    // symlink, a directory, something outside it) is unknown.
    let file = files(&skill)
        .map_err(|_| no())?
        .into_iter()
        .find(|f| f.rel == path)
        .ok_or_else(no)?;
    let bytes = read_file(&skill, &file.rel).map_err(|why| unknown(format!("{uri}: {why}")))?;
    let mime = mime(&file.rel, Some(&bytes));
    let contents = match String::from_utf8(bytes) {
        Ok(text) => ResourceContents::text(text, uri).with_mime_type(mime),
        Err(e) => {
            use base64::Engine as _;
            let blob = base64::engine::general_purpose::STANDARD.encode(e.into_bytes());
            ResourceContents::blob(blob, uri).with_mime_type(mime)
        }
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

/// `resources/directory/read` of a skill's root or one of its directories.
pub(crate) fn directory(store: &Skills, uri: &str) -> Result<ListResourcesResult, McpError> {
    let uri = uri.trim_end_matches('/');
    let (skill, path) =
        resolve(store, uri).ok_or_else(|| unknown(format!("{uri} is not a directory resource")))?;
    let files = files(&skill).map_err(|e| unknown(e.to_string()))?;
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    if !prefix.is_empty() && !files.iter().any(|f| f.rel.starts_with(&prefix)) {
        return Err(unknown(format!("{uri} is not a directory resource")));
    }
    let mut children: Vec<Resource> = Vec::new();
    let mut dirs = std::collections::BTreeSet::new();
    for f in &files {
        let Some(rest) = f.rel.strip_prefix(&prefix) else {
            continue;
        };
        match rest.split_once('/') {
            None => children.push(
                Resource::new(file_uri(&skill, &f.rel), rest.to_string())
                    .with_mime_type(mime(&f.rel, None))
                    .with_size(f.size),
            ),
            Some((dir, _)) => {
                dirs.insert(dir.to_string());
            }
        }
    }
    for d in dirs {
        children.push(
            Resource::new(file_uri(&skill, &format!("{prefix}{d}")), d).with_mime_type(DIRECTORY),
        );
    }
    Ok(ListResourcesResult::with_all_items(children))
}
