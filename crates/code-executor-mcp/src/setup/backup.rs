//! Backups of the files `setup` writes, and `--undo`.
//!
//! Each run that writes gets a directory `setup-backups/<UTC time>-<pid>/` under our config
//! directory, holding a copy of every file as it was before (0600) and `manifest.json`:
//! the path, the copy (none when the file did not exist) and the SHA-256 of what we wrote.
//! `--undo` restores the newest run not yet undone: a file changed since we wrote it is left
//! alone (the person's or the client's newer edits win) unless `--force`, and then its text
//! is first kept beside the backups (`<copy>.at-undo`), so nothing is lost.
//!
//! Undo removes nothing setup did not create. A backed-up file is restored through a
//! symbolic link (the link stays, its target gets the old text). A file setup created is
//! removed only where setup created it (the manifest records the real path it wrote): once
//! the person moved it (into dotfiles, linked back; or its directory replaced by a link
//! elsewhere), it is theirs, and undo says so and leaves it. A dangling link is reported and
//! left as it is, even with `--force`.
//!
//! Writes are atomic (a temporary file in the same directory, then `rename`), keep the
//! file's permissions (a new file gets 0600: these files hold tokens), and go through a
//! symbolic link to the file it points at, so a dotfiles link stays a link.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::clients::FileChange;

#[derive(Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    pub created: String,
    pub files: Vec<BackedUp>,
    #[serde(default)]
    pub undone: bool,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct BackedUp {
    pub path: PathBuf,
    /// The copy's file name in the run's directory; `None`: the file did not exist.
    pub backup: Option<String>,
    /// SHA-256 (hex) of the text we wrote.
    pub written: String,
    /// For a file setup created: the real path (links resolved) it was written to; undo
    /// removes the file only there. `None` in manifests of version 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<PathBuf>,
}

/// The manifest version this build writes (2 added `created_at`).
const MANIFEST_VERSION: u32 = 2;

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The directory holding every run's backups.
pub fn root(config_dir: &Path) -> PathBuf {
    config_dir.join("code-executor-mcp/setup-backups")
}

/// `YYYYMMDDTHHMMSSZ` for now (UTC).
fn stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The file a path names, through a symbolic link (so the link survives the write).
fn target(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path)
            .or_else(|_| std::fs::read_link(path).map(|l| path.parent().unwrap_or(path).join(l)))
            .unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

/// Replaces `path`'s content atomically, keeping its permissions (0600 when new).
pub fn write_atomic(path: &Path, text: &[u8]) -> std::io::Result<()> {
    let path = target(path);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mode = std::fs::metadata(&path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o600);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.code-executor-{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(text)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Backs up every file about to change, then writes them; returns the run's directory.
/// Nothing is written unless every backup was made.
pub fn apply(config_dir: &Path, changes: &[&FileChange]) -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    let dir = root(config_dir).join(format!("{}-{}", stamp(), std::process::id()));
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the backup directory {}", dir.display()))?;
    let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
    let mut manifest = Manifest {
        version: MANIFEST_VERSION,
        created: stamp(),
        files: Vec::new(),
        undone: false,
    };
    for (i, c) in changes.iter().enumerate() {
        let backup = match &c.before {
            Some(text) => {
                let name = format!(
                    "{i}-{}",
                    c.path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                );
                write_atomic(&dir.join(&name), text.as_bytes())
                    .with_context(|| format!("cannot back up {}", c.path.display()))?;
                Some(name)
            }
            None => None,
        };
        manifest.files.push(BackedUp {
            path: c.path.clone(),
            backup,
            written: sha256_hex(c.after.as_bytes()),
            created_at: c.before.is_none().then(|| real_path(&c.path)),
        });
    }
    let text = serde_json::to_vec_pretty(&manifest)?;
    write_atomic(&dir.join("manifest.json"), &text)
        .with_context(|| format!("cannot write {}", dir.join("manifest.json").display()))?;
    for c in changes {
        write_atomic(&c.path, c.after.as_bytes())
            .with_context(|| format!("cannot write {}", c.path.display()))?;
    }
    Ok(dir)
}

/// The newest run not yet undone, with its directory.
pub fn latest(config_dir: &Path) -> anyhow::Result<Option<(PathBuf, Manifest)>> {
    let root = root(config_dir);
    let mut runs: Vec<PathBuf> = match std::fs::read_dir(&root) {
        Ok(rd) => rd.flatten().map(|e| e.path()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", root.display())),
    };
    // Names start with the UTC time: newest last.
    runs.sort();
    for dir in runs.into_iter().rev() {
        let Ok(bytes) = tools::config::read::read_bytes(&dir.join("manifest.json"), 1 << 20) else {
            continue;
        };
        let Ok(m) = serde_json::from_slice::<Manifest>(&bytes) else {
            continue;
        };
        if !m.undone {
            return Ok(Some((dir, m)));
        }
    }
    Ok(None)
}

/// One file's undo.
pub struct Restore {
    pub path: PathBuf,
    /// The text it has now (`None`: gone, or not readable through a dangling link).
    pub now: Option<String>,
    /// The text it gets back (`None`: it did not exist; it is removed).
    pub back: Option<String>,
    /// Changed since we wrote it.
    pub changed_since: bool,
    /// Why undo must not touch it, even with `--force` (it would remove or write what
    /// setup did not create).
    pub keep: Option<String>,
    /// Where its current text is kept before a forced undo overwrites or removes it.
    pub save_as: PathBuf,
}

/// Where a path leads now.
enum Lead {
    /// Nothing there.
    Missing,
    /// A symbolic link whose target does not exist.
    Dangling(PathBuf),
    /// Something there; the real path with links resolved, and whether the path itself
    /// is a symbolic link.
    Present { real: PathBuf, link: bool },
}

fn lead(path: &Path) -> Lead {
    match std::fs::symlink_metadata(path) {
        Err(_) => Lead::Missing,
        Ok(m) => match std::fs::canonicalize(path) {
            Ok(real) => Lead::Present {
                real,
                link: m.file_type().is_symlink(),
            },
            Err(_) => Lead::Dangling(std::fs::read_link(path).unwrap_or_default()),
        },
    }
}

/// The real path of a file (links resolved), also for a file not made yet (setup records
/// where it will create one before writing it): its nearest existing ancestor resolved, with
/// the rest of the path joined as written, so an ancestor that is a link (`~/.config` into a
/// dotfiles repository, macOS's `/var`) gives the same path `lead` finds after the write.
fn real_path(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    let mut rest = Vec::new();
    let mut at = path;
    while let (Some(parent), Some(name)) = (at.parent(), at.file_name()) {
        rest.push(name);
        if let Ok(real) = std::fs::canonicalize(parent) {
            return rest.iter().rev().fold(real, |p, n| p.join(n));
        }
        at = parent;
    }
    path.to_path_buf()
}

pub fn restores(dir: &Path, m: &Manifest) -> anyhow::Result<Vec<Restore>> {
    use anyhow::Context;
    let mut out = Vec::new();
    for (i, f) in m.files.iter().enumerate() {
        let lead = lead(&f.path);
        let now = match &lead {
            Lead::Dangling(_) => None,
            _ => super::clients::read_existing(&f.path)?,
        };
        let back = match &f.backup {
            Some(name) => Some(
                String::from_utf8(tools::config::read::read_bytes(
                    &dir.join(name),
                    tools::config::read::MAX_CLAUDE_JSON_BYTES,
                )?)
                .with_context(|| format!("backup {name} is not UTF-8"))?,
            ),
            None => None,
        };
        let changed_since =
            now.as_ref().map(|t| sha256_hex(t.as_bytes())) != Some(f.written.clone());
        let keep = match (&lead, &f.backup) {
            (Lead::Dangling(to), _) => Some(format!(
                "is a symbolic link to {}, which does not exist (moved?); left as it is: point the link at the file and run --undo again",
                to.display()
            )),
            (Lead::Present { real, link }, None) => {
                let moved = match &f.created_at {
                    Some(at) => at != real,
                    // Version 1 recorded no place: a link means the person put it there.
                    None => *link,
                };
                moved.then(|| format!(
                    "setup created it, but it is now {} (moved or linked since); it is yours, so undo does not remove it: delete the \"code-executor\" entry by hand if you no longer want it",
                    real.display()
                ))
            }
            _ => None,
        };
        let save_as = dir.join(format!(
            "{i}-{}.at-undo",
            f.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        ));
        out.push(Restore {
            path: f.path.clone(),
            now,
            back,
            changed_since,
            keep,
            save_as,
        });
    }
    Ok(out)
}

/// Puts one file back. A file changed since setup wrote it (restored with `--force`) is
/// first copied to `save_as`. Never called for a restore with `keep`.
pub fn restore(r: &Restore) -> std::io::Result<()> {
    if r.keep.is_some() {
        return Ok(());
    }
    if r.changed_since
        && let Some(now) = &r.now
    {
        write_atomic(&r.save_as, now.as_bytes())?;
    }
    match &r.back {
        Some(text) => write_atomic(&r.path, text.as_bytes()),
        // `keep` is unset: the file is where setup created it (through a link that was
        // there before, the link's target is what setup created); remove that file, and
        // leave every link as it is.
        None => match std::fs::remove_file(real_path(&r.path)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        },
    }
}

/// Marks a run undone.
pub fn mark_undone(dir: &Path, mut m: Manifest) -> anyhow::Result<()> {
    m.undone = true;
    write_atomic(&dir.join("manifest.json"), &serde_json::to_vec_pretty(&m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    /// A file not made yet below a linked directory resolves to where it will really be.
    #[test]
    fn the_real_path_of_a_file_not_made_yet_resolves_its_ancestors() {
        let dir = test_support::TempDir::new("real-path");
        std::fs::create_dir_all(dir.0.join("dotfiles/cfg")).unwrap();
        std::os::unix::fs::symlink(dir.0.join("dotfiles"), dir.0.join("link")).unwrap();
        let real = std::fs::canonicalize(&dir.0).unwrap();
        assert_eq!(
            super::real_path(&dir.0.join("link/cfg/new/file.json")),
            real.join("dotfiles/cfg/new/file.json")
        );
        assert_eq!(
            super::real_path(&dir.0.join("link/cfg")),
            real.join("dotfiles/cfg")
        );
    }

    #[test]
    fn stamp_is_a_utc_time() {
        let s = super::stamp();
        assert_eq!(s.len(), 16, "{s}");
        assert!(
            s.starts_with("20") && s.ends_with('Z') && s.as_bytes()[8] == b'T',
            "{s}"
        );
    }
}
