//! Where session and run workspaces live: one root per server in the temporary directory,
//! locked for as long as the server runs, and the roots of servers that are gone deleted by
//! the next server to start.

use std::path::{Path, PathBuf};

/// How the name of every server's workspace root starts (then the server's pid and a tag).
pub const ROOT_PREFIX: &str = "code-executor-mcp-sessions-";
/// The lock file in a workspace root (session handles start with `s_`, runs with `run-`).
pub const ROOT_LOCK: &str = ".lock";

/// A fresh directory name for this server's session workspaces, under the temporary
/// directory: random, so nobody can have made it first, and created (mode 0711, so the
/// sandbox's uid can reach its own workspace, and nobody can list the others) when the first
/// session starts.
pub fn workspace_root() -> PathBuf {
    let mut b = [0u8; 8];
    let _ = getrandom::fill(&mut b);
    let tag: String = b.iter().map(|x| format!("{x:02x}")).collect();
    std::env::temp_dir().join(format!("{ROOT_PREFIX}{}-{tag}", std::process::id()))
}

/// Takes the lock of `root`, held while the returned file is open. The lock file is made
/// under a name of its own, locked, then moved into place: a server sweeping stale roots at
/// the same moment ([`remove_stale_roots`]) must never find it unlocked, or it would take the
/// lock itself and delete a live root (two servers starting together did).
pub fn hold_lock(root: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let making = root.join(format!("{ROOT_LOCK}-{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&making)?;
    file.try_lock().map_err(std::io::Error::from)?;
    std::fs::rename(&making, root.join(ROOT_LOCK))?;
    Ok(file)
}

fn open_lock(root: &Path, create: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(create)
        .create(create)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(root.join(ROOT_LOCK))
}

/// Deletes, in the background, the workspace roots beside `own` that belong to servers that
/// are gone: a server killed (SIGKILL, a crash) cannot delete its own, and what its sessions
/// wrote would otherwise stay in the temporary directory.
pub fn remove_stale_roots_in_background(own: PathBuf) {
    let spawned = std::thread::Builder::new()
        .name("stale-workspaces".into())
        .spawn(move || {
            let Some(dir) = own.parent() else { return };
            let n = remove_stale_roots(dir, &own);
            if n > 0 {
                tracing::info!("deleted {n} session workspace roots of servers that are gone");
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot look for stale session workspaces: {e}");
    }
}

/// Deletes the roots in `dir` (other than `own`) that are this user's and whose server is
/// gone; returns how many went. A root is gone when its lock can be taken (a live server holds
/// it; the kernel drops it when the process ends, in whatever PID namespace it ran), or, for
/// a root without a lock (made by an older version), when no process has its pid. Anything
/// else named like a root (another user's, a symlink, a file) is left alone.
pub fn remove_stale_roots(dir: &Path, own: &Path) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let me = nix::unistd::geteuid().as_raw();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(ROOT_PREFIX)) else {
            continue;
        };
        let path = entry.path();
        if path == own {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != me || !owner_gone(&path, rest) {
            continue;
        }
        match super::tree::remove(&path) {
            Ok(()) => removed += 1,
            Err(e) => tracing::debug!("cannot delete {}: {e}", path.display()),
        }
    }
    removed
}

fn owner_gone(root: &Path, rest: &str) -> bool {
    match open_lock(root, false) {
        // Taken and let go at once: its holder is gone, and nobody else makes sessions here.
        Ok(lock) => lock.try_lock().is_ok(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
            pid.is_some_and(|pid| !Path::new("/proc").join(pid.to_string()).exists())
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::sessions::Sessions;
    use policy::session_limits::SessionLimits;

    #[test]
    fn a_root_is_never_seen_with_its_lock_file_unlocked() {
        let tmp = test_support::TempDir::new("held-root");
        let root = tmp
            .0
            .join(format!("{ROOT_PREFIX}{}-held", std::process::id()));
        std::fs::create_dir(&root).unwrap();
        let held = hold_lock(&root).unwrap();
        // What a sweeping server finds: the lock file, taken.
        assert!(!owner_gone(&root, "1-held"));
        let names: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, [ROOT_LOCK], "only the lock file, under its own name");
        drop(held);
        assert!(owner_gone(&root, "1-held"), "let go when its holder goes");
    }

    #[test]
    fn only_the_roots_of_servers_that_are_gone_are_deleted() {
        let tmp = test_support::TempDir::new("stale-roots");
        let dir = tmp.0.clone();
        let root = |name: &str| dir.join(format!("{ROOT_PREFIX}{name}"));
        let with_file = |p: &Path| {
            std::fs::create_dir(p).unwrap();
            std::fs::write(p.join("data"), "kept?").unwrap();
        };
        // A live server: it holds its root's lock (another open file description here).
        let live = Sessions::new(SessionLimits::default(), root("1-live"));
        live.ensure_root().unwrap();
        // A server that died: its lock is there, nobody holds it.
        let dead = root("2-dead");
        with_file(&dead);
        drop(open_lock(&dead, true).unwrap());
        // Roots of an older version, without a lock: told apart by their pid.
        let old_dead = root("4294967-old");
        with_file(&old_dead);
        let old_live = root(&format!("{}-old", std::process::id()));
        with_file(&old_live);
        // Named like a root, but not one to touch.
        let elsewhere = test_support::TempDir::new("stale-roots-target");
        std::fs::write(elsewhere.0.join("precious"), "x").unwrap();
        std::os::unix::fs::symlink(&elsewhere.0, root("3-link")).unwrap();
        std::fs::write(root("5-file"), "x").unwrap();
        // Our own root is never looked at, even before it holds its lock.
        let own = root("6-own");
        with_file(&own);

        assert_eq!(remove_stale_roots(&dir, &own), 2);
        assert!(!dead.exists() && !old_dead.exists());
        assert!(root("1-live").join(ROOT_LOCK).exists());
        assert!(old_live.join("data").exists() && own.join("data").exists());
        assert!(elsewhere.0.join("precious").exists());
        assert!(root("3-link").symlink_metadata().is_ok() && root("5-file").is_file());
        // Once the live server is gone, its root goes too.
        drop(live);
        assert_eq!(
            remove_stale_roots(&dir, &own),
            0,
            "Sessions' drop deletes its root"
        );
    }
}
