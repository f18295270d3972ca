//! The on-disk schema cache: the tool list each upstream server last reported, so that the
//! tools of servers not started yet are searchable right after our own start.
//!
//! One JSON file per server, named by the server and a hash of its whole configuration
//! (command, arguments, environment, working directory, transport; an OpenAPI document file's
//! size and time): a changed entry misses
//! and is listed afresh on connect. Files are written atomically (a temporary file renamed
//! into place); a file that cannot be read or parsed is ignored with a warning. Nothing
//! secret is written: environment values only feed the hash.
//!
//! Location: `$CODE_EXECUTOR_CACHE_DIR`, else `$XDG_CACHE_HOME/code-executor-mcp`, else
//! `~/.cache/code-executor-mcp`. `CODE_EXECUTOR_CACHE_DIR=off` (or empty) disables it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::model::Tool;
use serde::{Deserialize, Serialize};

use crate::config::read::{ReadError, read_bytes};
use crate::config::{Config, ServerSpec};

/// Environment variable overriding the cache directory (`off` disables the cache).
pub const CACHE_DIR_ENV: &str = "CODE_EXECUTOR_CACHE_DIR";
/// Largest cache file read: a tool list beyond it is listed afresh instead.
const MAX_CACHE_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Bumped when the file format changes; older files are then ignored.
const FORMAT_VERSION: u32 = 1;
/// The same for the files of learned output types.
const TYPES_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    server: String,
    key: String,
    #[serde(rename = "savedAt")]
    saved_at: u64,
    tools: Vec<Tool>,
}

/// Where each configured server's tool list is kept.
#[derive(Debug, Clone, Default)]
pub struct ToolCache {
    dir: Option<PathBuf>,
    /// Server name -> configuration hash.
    keys: BTreeMap<String, String>,
}

impl ToolCache {
    /// A cache that keeps nothing.
    pub fn disabled() -> Self {
        ToolCache::default()
    }

    /// The cache for `config` in the default directory (see the module docs).
    pub fn for_config(config: &Config) -> Self {
        ToolCache::in_dir(default_dir(), config)
    }

    pub fn in_dir(dir: Option<PathBuf>, config: &Config) -> Self {
        ToolCache {
            dir,
            keys: config
                .servers
                .iter()
                .map(|(name, spec)| (name.clone(), spec_key(spec)))
                .collect(),
        }
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    fn path(&self, server: &str) -> Option<PathBuf> {
        self.file(server, "tools", FORMAT_VERSION)
    }

    /// `<kind>-v<version>-<server>-<key>.json` in the cache directory.
    fn file(&self, server: &str, kind: &str, version: u32) -> Option<PathBuf> {
        let key = self.keys.get(server)?;
        Some(self.dir.as_ref()?.join(format!(
            "{kind}-v{version}-{}-{key}.json",
            file_safe(server)
        )))
    }

    /// The output types learned from one server's results (`catalog::learned`); `None` when
    /// there is no usable file. Blocking file I/O.
    pub fn load_types<T: serde::de::DeserializeOwned>(&self, server: &str) -> Option<T> {
        let path = self.file(server, "types", TYPES_VERSION)?;
        let bytes = match read_bytes(&path, MAX_CACHE_FILE_BYTES) {
            Ok(b) => b,
            Err(ReadError::NotFound) => return None,
            Err(e) => {
                tracing::warn!(
                    server,
                    "ignoring the types cache {}: it {e}",
                    path.display()
                );
                return None;
            }
        };
        serde_json::from_slice(&bytes)
            .inspect_err(|e| {
                tracing::warn!(
                    server,
                    "ignoring the corrupt types cache {}: {e}",
                    path.display()
                );
            })
            .ok()
    }

    /// Saves the output types learned from one server's results, atomically. Blocking file
    /// I/O; failures are logged.
    pub fn store_types<T: Serialize>(&self, server: &str, types: &T) {
        let Some(path) = self.file(server, "types", TYPES_VERSION) else {
            return;
        };
        if let Err(e) = write_atomically(&path, types) {
            tracing::warn!(
                server,
                "cannot write the types cache {}: {e}",
                path.display()
            );
        }
    }

    /// Every configured server's cached tools that could be read. Blocking file I/O.
    pub fn load_all(&self) -> BTreeMap<String, Arc<Vec<Tool>>> {
        self.keys
            .keys()
            .filter_map(|server| Some((server.clone(), Arc::new(self.load(server)?))))
            .collect()
    }

    /// One server's cached tools; `None` when there is no usable file.
    pub fn load(&self, server: &str) -> Option<Vec<Tool>> {
        let path = self.path(server)?;
        let bytes = match read_bytes(&path, MAX_CACHE_FILE_BYTES) {
            Ok(b) => b,
            Err(ReadError::NotFound) => return None,
            Err(e) => {
                tracing::warn!(server, "ignoring the tool cache {}: it {e}", path.display());
                return None;
            }
        };
        match serde_json::from_slice::<CacheFile>(&bytes) {
            Ok(f) if f.version == FORMAT_VERSION && self.keys.get(server) == Some(&f.key) => {
                Some(f.tools)
            }
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(
                    server,
                    "ignoring the corrupt tool cache {}: {e}",
                    path.display()
                );
                None
            }
        }
    }

    /// Saves one server's tools, atomically. Blocking file I/O; failures are logged.
    pub fn store(&self, server: &str, tools: &[Tool]) {
        let (Some(path), Some(key)) = (self.path(server), self.keys.get(server)) else {
            return;
        };
        let file = CacheFile {
            version: FORMAT_VERSION,
            server: server.to_string(),
            key: key.clone(),
            saved_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            tools: tools.to_vec(),
        };
        if let Err(e) = write_atomically(&path, &file) {
            tracing::warn!(
                server,
                "cannot write the tool cache {}: {e}",
                path.display()
            );
        }
    }
}

fn write_atomically<T: Serialize>(path: &Path, file: &T) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("tools"),
        std::process::id()
    ));
    let bytes = serde_json::to_vec(file).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// `$CODE_EXECUTOR_CACHE_DIR`, `$XDG_CACHE_HOME/code-executor-mcp`, `~/.cache/...`.
pub fn default_dir() -> Option<PathBuf> {
    if let Some(v) = std::env::var_os(CACHE_DIR_ENV) {
        return (!v.is_empty() && v != "off").then(|| PathBuf::from(v));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("code-executor-mcp"))
}

/// A stable hash of everything in a server's entry that could change its tools: all of it
/// but the file it came from. (FNV-1a, 64 bits: stable across builds, unlike `Hash`.)
pub fn spec_key(spec: &ServerSpec) -> String {
    let mut spec = spec.clone();
    // Where an entry came from, and whether its client disabled it, do not change its tools.
    spec.source = PathBuf::new();
    spec.client = "";
    spec.disabled = false;
    let mut text = format!("{spec:?}");
    // An OpenAPI document file that changed (size or time) is listed afresh too.
    if let crate::config::Transport::OpenApi(o) = &spec.transport
        && let crate::config::DocumentLocation::File(path) = &o.document
        && let Ok(meta) = std::fs::metadata(path)
    {
        text.push_str(&format!(" {} {:?}", meta.len(), meta.modified().ok()));
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(args: &[&str]) -> Config {
        let text = json!({"mcpServers": {"my.srv": {"command": "srv", "args": args, "env": {"K": "secret"}}}});
        Config::parse(&text.to_string(), Path::new("/x/mcp.json"), None).unwrap()
    }

    fn tools() -> Vec<Tool> {
        serde_json::from_value(
            json!([{"name": "t", "description": "d", "inputSchema": {"type": "object"}}]),
        )
        .unwrap()
    }

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cem-cache-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// Each hostile thing in place of a cache file: ignored (a warning), no hang.
    #[test]
    fn a_fifo_dev_zero_directory_or_huge_file_in_place_of_a_cache_file_is_ignored() {
        let dir = tempdir("hostile");
        std::fs::create_dir_all(&dir).unwrap();
        let c = ToolCache::in_dir(Some(dir.clone()), &config(&["1"]));
        let path = c.path("my.srv").unwrap();
        let shapes = crate::config::read::hostile_shapes(MAX_CACHE_FILE_BYTES);
        for (shape, make) in shapes {
            make(&path);
            assert_eq!(c.load("my.srv"), None, "{shape}");
            assert_eq!(c.load_all().len(), 0, "{shape}");
            let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir(&path));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn round_trip_keyed_by_config_and_no_secrets_on_disk() {
        let dir = tempdir("rt");
        let c = ToolCache::in_dir(Some(dir.clone()), &config(&["1"]));
        assert_eq!(c.load("my.srv"), None);
        c.store("my.srv", &tools());
        assert_eq!(c.load("my.srv").unwrap(), tools());
        assert_eq!(c.load_all().len(), 1);
        let files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        assert!(
            !std::fs::read_to_string(&files[0])
                .unwrap()
                .contains("secret")
        );
        // Another configuration of the same name misses.
        let other = ToolCache::in_dir(Some(dir.clone()), &config(&["2"]));
        assert_eq!(other.load("my.srv"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn corrupt_file_is_ignored() {
        let dir = tempdir("corrupt");
        let c = ToolCache::in_dir(Some(dir.clone()), &config(&[]));
        c.store("my.srv", &tools());
        let path = c.path("my.srv").unwrap();
        std::fs::write(&path, b"{not json").unwrap();
        assert_eq!(c.load("my.srv"), None);
        assert!(c.load_all().is_empty());
        c.store("my.srv", &tools());
        assert_eq!(c.load("my.srv").unwrap(), tools());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn source_file_does_not_change_the_key() {
        let a = config(&["x"]);
        let mut spec = a.servers["my.srv"].clone();
        let k = spec_key(&spec);
        spec.source = PathBuf::from("/elsewhere.json");
        assert_eq!(spec_key(&spec), k);
        if let crate::config::Transport::Stdio { env, .. } = &mut spec.transport {
            env.insert("K".into(), "other".into());
        }
        assert_ne!(spec_key(&spec), k);
    }

    #[test]
    fn a_changed_openapi_document_changes_the_key() {
        let dir = tempdir("openapi-key");
        std::fs::create_dir_all(&dir).unwrap();
        let doc = dir.join("api.json");
        std::fs::write(&doc, "{}").unwrap();
        let text = format!(
            r#"{{"mcpServers": {{"api": {{"type": "openapi", "spec": "{}"}}}}}}"#,
            doc.display()
        );
        let config = Config::parse(&text, &dir.join("mcp.json"), None).unwrap();
        let spec = &config.servers["api"];
        let before = spec_key(spec);
        assert_eq!(spec_key(spec), before);
        std::fs::write(&doc, "{\"changed\": true}").unwrap();
        assert_ne!(spec_key(spec), before);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn disabled_keeps_nothing() {
        let c = ToolCache::disabled();
        c.store("my.srv", &tools());
        assert_eq!(c.load("my.srv"), None);
    }
}
