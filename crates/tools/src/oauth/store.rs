//! The token store: one JSON file per (server name, server URL) under the token directory
//! (`<user config dir>/code-executor-mcp/oauth/`), which rmcp's OAuth machinery reads and
//! writes through [`CredentialStore`].
//!
//! - The file name is the server's name (made safe for a path) plus a hash of its name and
//!   URL, so a server whose URL changed, or another server of the same name in another
//!   project, never gets this token. The file also records both and is ignored when they do
//!   not match.
//! - The directory is created 0700 and each file 0600; a write goes to a fresh temporary
//!   file in the same directory that then replaces the old one (`rename`), so a reader never
//!   sees half a file and a crash never leaves one.
//! - A refresh holds an exclusive `flock` on `<file>.lock`, so two server processes sharing
//!   a login do not both spend a rotating refresh token.
//! - Loads are cached and re-read only when the file changed on disk (another process
//!   refreshed, or `login` ran again).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::config::read::{MAX_CONFIG_BYTES, ReadError, read_bytes};

/// Version of the file format; a file of another version is ignored (log in again).
const FORMAT_VERSION: u32 = 1;

/// What a login learned besides the tokens, kept in the same file.
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoginInfo {
    /// A secret the authorization server issued at dynamic registration (most issue none).
    /// A secret from the config entry is never copied here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
    /// The server's `WWW-Authenticate` challenge at login, so that later discovery starts
    /// from the same protected-resource metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge: Option<String>,
    /// The authorization server's metadata at login: used when rediscovery fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<AuthorizationMetadata>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenFile {
    version: u32,
    server: String,
    url: String,
    #[serde(flatten)]
    login: LoginInfo,
    credentials: StoredCredentials,
}

/// One server's stored login, as read from disk.
#[derive(Clone)]
pub struct StoredLogin {
    pub login: LoginInfo,
    pub credentials: StoredCredentials,
}

/// Identity of a file's current content on disk, to know when to read it again.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            ino: meta.ino(),
            len: meta.len(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
        }
    }
}

struct Inner {
    path: PathBuf,
    server: String,
    url: String,
    /// Set by `login` before the code exchange; otherwise what the file holds.
    login: Mutex<Option<LoginInfo>>,
    cache: Mutex<Option<(Stamp, Option<StoredLogin>)>>,
}

/// The stored login of one server; cheap to clone.
#[derive(Clone)]
pub struct TokenStore(Arc<Inner>);

/// Why a token file cannot be read, written or locked. rmcp's credential store takes it as
/// text (`AuthError::CredentialStoreError`).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{} {error}", path.display())]
    Read { path: PathBuf, error: ReadError },
    /// Never the content: it holds tokens.
    #[error("{} is not a valid token file (line {line}, column {column}); log in again", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
    },
    #[error("token cache poisoned")]
    Poisoned,
    #[error("{0}")]
    Encode(#[from] serde_json::Error),
    #[error("cannot write {}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot lock {}: {error}", path.display())]
    Lock {
        path: PathBuf,
        error: nix::errno::Errno,
    },
}

impl From<StoreError> for AuthError {
    fn from(e: StoreError) -> AuthError {
        AuthError::CredentialStoreError(e.to_string())
    }
}

impl TokenStore {
    pub fn new(dir: &Path, server: &str, url: &str) -> TokenStore {
        TokenStore(Arc::new(Inner {
            path: dir.join(file_name(server, url)),
            server: server.to_string(),
            url: url.to_string(),
            login: Mutex::new(None),
            cache: Mutex::new(None),
        }))
    }

    pub fn path(&self) -> &Path {
        &self.0.path
    }

    /// Sets what the next save writes besides the tokens (used by `login`).
    pub fn set_login(&self, login: LoginInfo) {
        if let Ok(mut l) = self.0.login.lock() {
            *l = Some(login);
        }
    }

    /// The stored login, or `None` when there is none for this server and URL.
    pub fn read(&self) -> Result<Option<StoredLogin>, StoreError> {
        let meta = match std::fs::metadata(&self.0.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.set_cache(None);
                return Ok(None);
            }
            Err(error) => {
                return Err(StoreError::Io {
                    path: self.0.path.clone(),
                    error,
                });
            }
        };
        let stamp = Stamp::of(&meta);
        if let Ok(cache) = self.0.cache.lock()
            && let Some((s, value)) = &*cache
            && *s == stamp
        {
            return Ok(value.clone());
        }
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                "{} is readable by other users; it holds OAuth tokens (chmod 600 it, or log in again)",
                self.0.path.display()
            );
        }
        let text = match read_bytes(&self.0.path, MAX_CONFIG_BYTES) {
            Ok(t) => t,
            Err(ReadError::NotFound) => {
                self.set_cache(None);
                return Ok(None);
            }
            Err(error) => {
                return Err(StoreError::Read {
                    path: self.0.path.clone(),
                    error,
                });
            }
        };
        let value = match serde_json::from_slice::<TokenFile>(&text) {
            Ok(f) if f.version != FORMAT_VERSION => {
                tracing::warn!(
                    "{} has format version {}, not {FORMAT_VERSION}; ignored (log in again)",
                    self.0.path.display(),
                    f.version
                );
                None
            }
            Ok(f) if f.server != self.0.server || f.url != self.0.url => None,
            Ok(f) => Some(StoredLogin {
                login: f.login,
                credentials: f.credentials,
            }),
            // Never echo the content: it holds tokens.
            Err(e) => {
                return Err(StoreError::Invalid {
                    path: self.0.path.clone(),
                    line: e.line(),
                    column: e.column(),
                });
            }
        };
        *self.0.cache.lock().map_err(|_| StoreError::Poisoned)? = Some((stamp, value.clone()));
        Ok(value)
    }

    fn set_cache(&self, value: Option<(Stamp, Option<StoredLogin>)>) {
        if let Ok(mut c) = self.0.cache.lock() {
            *c = value;
        }
    }

    fn write(&self, credentials: StoredCredentials) -> Result<(), StoreError> {
        let login = match self.0.login.lock().ok().and_then(|l| l.clone()) {
            Some(l) => l,
            None => self.read()?.map(|s| s.login).unwrap_or_default(),
        };
        let file = TokenFile {
            version: FORMAT_VERSION,
            server: self.0.server.clone(),
            url: self.0.url.clone(),
            login: login.clone(),
            credentials: credentials.clone(),
        };
        let bytes = serde_json::to_vec_pretty(&file)?;
        write_private(&self.0.path, &bytes).map_err(|error| StoreError::Write {
            path: self.0.path.clone(),
            error,
        })?;
        let stamp = std::fs::metadata(&self.0.path).map(|m| Stamp::of(&m)).ok();
        self.set_cache(stamp.map(|s| (s, Some(StoredLogin { login, credentials }))));
        Ok(())
    }
}

#[async_trait::async_trait]
impl CredentialStore for TokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.read()?.map(|s| s.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        // A refreshed token is a secret the redactor did not know at the start.
        if let Some(t) = &credentials.token_response {
            use oauth2::TokenResponse;
            policy::redact::learn_secret(t.access_token().secret());
            if let Some(r) = t.refresh_token() {
                policy::redact::learn_secret(r.secret());
            }
        }
        Ok(self.write(credentials)?)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.set_cache(None);
        match std::fs::remove_file(&self.0.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(AuthError::CredentialStoreError(format!(
                "cannot remove {}: {e}",
                self.0.path.display()
            ))),
        }
    }

    /// The authorization server said the refresh token is dead: forget the tokens (keeping
    /// the client registration), unless another process already stored new ones.
    async fn on_refresh_token_rejected(
        &self,
        rejected: &StoredCredentials,
    ) -> Result<(), AuthError> {
        use oauth2::TokenResponse;
        let current = self.read()?;
        let same = |a: &StoredCredentials, b: &StoredCredentials| match (
            &a.token_response,
            &b.token_response,
        ) {
            (Some(a), Some(b)) => a.access_token().secret() == b.access_token().secret(),
            _ => false,
        };
        if let Some(current) = current
            && same(&current.credentials, rejected)
        {
            let mut emptied = current.credentials;
            emptied.token_response = None;
            self.write(emptied)?;
        }
        Ok(())
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let mut lock = self.0.path.clone().into_os_string();
        lock.push(".lock");
        let lock = PathBuf::from(lock);
        let guard = tokio::task::spawn_blocking(move || -> Result<_, StoreError> {
            if let Some(dir) = lock.parent() {
                create_private_dir(dir).map_err(|error| StoreError::Io {
                    path: dir.to_path_buf(),
                    error,
                })?;
            }
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(&lock)
                .map_err(|error| StoreError::Io {
                    path: lock.clone(),
                    error,
                })?;
            nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).map_err(
                |(_, error)| StoreError::Lock {
                    path: lock.clone(),
                    error,
                },
            )
        })
        .await
        .map_err(|e| AuthError::CredentialStoreError(e.to_string()))??;
        Ok(Some(CredentialRefreshGuard::new(guard)))
    }
}

/// `<safe name>-<12 hex digits of SHA-256(name, URL)>.json`.
pub fn file_name(server: &str, url: &str) -> String {
    let mut h = Sha256::new();
    h.update(server.as_bytes());
    h.update([0]);
    h.update(url.as_bytes());
    let digest = h.finalize();
    let hex: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{hex}.json", safe_name(server))
}

/// The server name with every character outside `[A-Za-z0-9._-]` written `_`, at most 64
/// characters, never starting with a dot.
fn safe_name(server: &str) -> String {
    let s: String = server
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match s.strip_prefix('.') {
        Some(rest) => format!("_{rest}"),
        None => s,
    }
}

/// Removes every stored login of `server` (whatever its URL); returns the files removed.
pub fn remove_server(dir: &Path, server: &str) -> std::io::Result<Vec<PathBuf>> {
    let prefix = format!("{}-", safe_name(server));
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut removed = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(hash) = name
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(".json"))
        else {
            continue;
        };
        if hash.len() != 12 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        // Only this server's files: the name inside must match (two names can share a
        // safe form).
        let path = entry.path();
        let ours = read_bytes(&path, MAX_CONFIG_BYTES)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|v| v.get("server").and_then(Value::as_str) == Some(server));
        if !ours {
            continue;
        }
        std::fs::remove_file(&path)?;
        let mut lock = path.clone().into_os_string();
        lock.push(".lock");
        let _ = std::fs::remove_file(PathBuf::from(lock));
        removed.push(path);
    }
    Ok(removed)
}

/// Creates `dir` (and missing parents) with mode 0700, and makes `dir` itself 0700 if it
/// already existed with a wider mode.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::metadata(dir)?;
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Writes `bytes` to `path` atomically with mode 0600: a new temporary file in the same
/// directory (created 0600, never through an existing file or link), flushed to disk, then
/// renamed over `path`.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("the token path has no directory"))?;
    create_private_dir(dir)?;
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| std::io::Error::other(e.to_string()))?;
    let suffix: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("token");
    let tmp = dir.join(format!(".{file_name}.{suffix}.tmp"));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result?;
    // The rename itself survives a crash once the directory is synced too.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cem-store-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn creds(access: &str) -> StoredCredentials {
        let token: rmcp::transport::auth::OAuthTokenResponse = serde_json::from_value(
            serde_json::json!({"access_token": access, "token_type": "Bearer", "expires_in": 60}),
        )
        .unwrap();
        StoredCredentials::new("client-1".into(), Some(token), vec![], Some(1))
    }

    /// A FIFO, `/dev/zero`, a directory or a huge file in place of a token file: an error
    /// naming the file, no hang; `logout` passes over it.
    #[test]
    fn a_hostile_thing_in_place_of_a_token_file_is_an_error_not_a_hang() {
        let dir = temp_dir("hostile");
        std::fs::create_dir_all(&dir).unwrap();
        let store = TokenStore::new(&dir, "gh", "https://a.example/mcp");
        let path = store.path().to_path_buf();
        let shapes = crate::config::read::hostile_shapes(MAX_CONFIG_BYTES);
        for (why, make) in shapes {
            make(&path);
            let store = TokenStore::new(&dir, "gh", "https://a.example/mcp");
            let Err(err) = store.read().map_err(|e| e.to_string()) else {
                panic!("{why}: read a login")
            };
            assert!(
                err.starts_with(&format!("{} is ", path.display())) && err.contains(why),
                "{err}"
            );
            assert_eq!(remove_server(&dir, "gh").unwrap(), Vec::<PathBuf>::new());
            let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir(&path));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn file_names_are_safe_and_keyed_by_name_and_url() {
        let a = file_name("github", "https://a.example/mcp");
        assert!(a.starts_with("github-") && a.ends_with(".json"), "{a}");
        assert_ne!(a, file_name("github", "https://b.example/mcp"));
        assert_ne!(a, file_name("gitlab", "https://a.example/mcp"));
        let odd = file_name("../../etc/x y", "https://a.example");
        assert!(!odd.contains('/') && !odd.starts_with('.'), "{odd}");
        // Two names with one safe form still get different files.
        assert_ne!(file_name("a/b", "u"), file_name("a_b", "u"));
    }

    #[tokio::test]
    async fn saves_0600_in_a_0700_dir_and_reads_back_only_for_the_same_url() {
        let dir = temp_dir("rw");
        let store = TokenStore::new(&dir, "s", "https://a.example/mcp");
        assert!(store.load().await.unwrap().is_none());
        store.save(creds("tok-1")).await.unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(store.path()), 0o600);
        assert_eq!(mode(&dir), 0o700);
        let back = store.load().await.unwrap().unwrap();
        assert_eq!(back.client_id, "client-1");
        // Another URL under the same name: another file, nothing to read.
        let other = TokenStore::new(&dir, "s", "https://b.example/mcp");
        assert!(other.load().await.unwrap().is_none());
        // A file copied over from another URL is refused too.
        std::fs::copy(store.path(), other.path()).unwrap();
        assert!(other.load().await.unwrap().is_none());
        // No temporary files are left behind.
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        let removed = remove_server(&dir, "s").unwrap();
        assert_eq!(removed.len(), 2);
        assert!(store.load().await.unwrap().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_change_on_disk_is_seen_and_login_info_survives_a_refresh() {
        let dir = temp_dir("reload");
        let a = TokenStore::new(&dir, "s", "u");
        a.set_login(LoginInfo {
            client_secret: Some("dcr-secret".into()),
            ..LoginInfo::default()
        });
        a.save(creds("one")).await.unwrap();
        // Another process (another store) refreshes the token.
        let b = TokenStore::new(&dir, "s", "u");
        b.save(creds("two")).await.unwrap();
        let got = a.read().unwrap().unwrap();
        let token = serde_json::to_value(&got.credentials).unwrap();
        assert_eq!(token["token_response"]["access_token"], "two");
        assert_eq!(got.login.client_secret.as_deref(), Some("dcr-secret"));
        let _guard = b.acquire_refresh_guard().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn refreshes_are_serialized_across_stores_by_a_file_lock() {
        let dir = temp_dir("lock");
        let a = TokenStore::new(&dir, "s", "u");
        let b = TokenStore::new(&dir, "s", "u");
        let held = a.acquire_refresh_guard().await.unwrap();
        // While one holds the lock (another process, say), the other waits...
        let waiting = tokio::time::timeout(
            std::time::Duration::from_millis(200),
            b.acquire_refresh_guard(),
        )
        .await;
        assert!(waiting.is_err(), "the second refresh did not wait");
        // ...and gets it once the first is done.
        drop(held);
        let got =
            tokio::time::timeout(std::time::Duration::from_secs(5), b.acquire_refresh_guard())
                .await;
        assert!(matches!(got, Ok(Ok(Some(_)))));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_rejected_refresh_token_empties_the_stored_tokens() {
        let dir = temp_dir("reject");
        let s = TokenStore::new(&dir, "s", "u");
        s.save(creds("old")).await.unwrap();
        // A stale rejection (another process already stored new tokens) changes nothing.
        s.on_refresh_token_rejected(&creds("older")).await.unwrap();
        assert!(s.load().await.unwrap().unwrap().token_response.is_some());
        s.on_refresh_token_rejected(&creds("old")).await.unwrap();
        let left = s.load().await.unwrap().unwrap();
        assert!(left.token_response.is_none());
        assert_eq!(left.client_id, "client-1");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
