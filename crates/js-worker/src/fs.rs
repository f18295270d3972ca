//! The `fs` module of the JavaScript worker: `readFile`, `readdir`, `stat`, `writeFile`,
//! `mkdir`, made with the ordinary system calls of the (sandboxed) worker process.
//!
//! Nothing here decides what may be read or written: the sandbox's view (granted paths
//! read-only, the workspace the one writable directory) and Landlock do. This module only
//! turns a failure into an error that names the missing grant, from the run's
//! [`AccessInfo`].

use std::io;
use std::path::{Component, Path, PathBuf};

use worker_protocol::AccessInfo;

/// A failed file operation, as the prelude turns it into an `Error` with a `code`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FsError {
    pub code: &'static str,
    pub message: String,
}

impl FsError {
    pub fn to_json(&self) -> String {
        serde_json::json!({"code": self.code, "message": self.message}).to_string()
    }
}

/// `path` made absolute against the working directory, `.` and `..` removed lexically.
pub(crate) fn absolute(path: &str) -> PathBuf {
    let p = Path::new(path);
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(p)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

fn code(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(nix::libc::ENOENT) => "ENOENT",
        Some(nix::libc::EACCES) => "EACCES",
        Some(nix::libc::EPERM) => "EPERM",
        Some(nix::libc::EROFS) => "EROFS",
        Some(nix::libc::EISDIR) => "EISDIR",
        Some(nix::libc::ENOTDIR) => "ENOTDIR",
        Some(nix::libc::EEXIST) => "EEXIST",
        Some(nix::libc::EFBIG) => "EFBIG",
        Some(nix::libc::ENOSPC) => "ENOSPC",
        Some(nix::libc::EXDEV) => "EXDEV",
        Some(nix::libc::ELOOP) => "ELOOP",
        _ => "EIO",
    }
}

/// The error for `op` on `path`, naming the grant that would cover it when none does.
pub(crate) fn explain(
    op: &str,
    path: &str,
    e: &io::Error,
    access: Option<&AccessInfo>,
    write: bool,
) -> FsError {
    let abs = absolute(path);
    let code = code(e);
    let mut message = format!("{code}: {op} {path}: {e}");
    let none = AccessInfo::default();
    let access = access.unwrap_or(&none);
    let in_workspace = access
        .workspace
        .as_ref()
        .is_some_and(|w| abs.starts_with(w));
    if write {
        if !in_workspace {
            match &access.workspace {
                Some(w) => message.push_str(&format!(
                    " (only the workspace {w} is writable; write there)"
                )),
                None => message.push_str(
                    " (nothing is writable: this execution has no workspace; ask for one with \
                     permissions.write, within the server's configured ceiling)",
                ),
            }
        }
    } else if !in_workspace && !access.read.iter().any(|r| abs.starts_with(r)) {
        let granted = if access.read.is_empty() {
            "none".to_string()
        } else {
            access.read.join(", ")
        };
        message.push_str(&format!(
            " (no read grant covers {}; granted: {granted}; ask with permissions.read, within \
             the server's configured ceiling)",
            abs.display()
        ));
    } else if matches!(code, "ENOENT" | "ELOOP")
        && std::fs::symlink_metadata(&abs).is_ok_and(|m| m.file_type().is_symlink())
    {
        message.push_str(" (a symlink that leads outside the granted paths finds nothing)");
    } else if matches!(code, "EACCES" | "EPERM") {
        let roots = access
            .read
            .iter()
            .map(String::as_str)
            .chain(access.workspace.as_deref());
        message.push_str(&refused(&abs, roots));
    }
    FsError { code, message }
}

/// Why a read of `path`, inside a grant (one of `roots`), is refused by the files' own
/// permissions: the first component on its way (from the grant down) the sandbox may not
/// search, or the path itself when it may not read it, with its mode and whose it is.
fn refused<'a>(path: &Path, roots: impl Iterator<Item = &'a str>) -> String {
    use nix::unistd::{AccessFlags, access};
    use std::os::unix::fs::MetadataExt;
    let root = roots
        .map(Path::new)
        .filter(|r| path.starts_with(r))
        .max_by_key(|r| r.as_os_str().len())
        .unwrap_or(path);
    let below = path.strip_prefix(root).unwrap_or(Path::new(""));
    let mut at = root.to_path_buf();
    let mut steps = vec![at.clone()];
    for c in below.components() {
        at.push(c);
        steps.push(at.clone());
    }
    let last = steps.len() - 1;
    for (i, step) in steps.iter().enumerate() {
        let need = if i == last {
            AccessFlags::R_OK
        } else {
            AccessFlags::X_OK
        };
        if access(step, need).is_ok() {
            continue;
        }
        let Ok(meta) = std::fs::metadata(step) else {
            break;
        };
        let whose = if meta.uid() == nix::unistd::getuid().as_raw() {
            "the sandbox's user"
        } else {
            "another user than the sandbox's"
        };
        return format!(
            " (a read grant covers {}, but the file permissions refuse the sandbox: {} is mode \
             {:04o}, owned by {whose}, and may not be {}; the sandbox reads a grant as the owner \
             of the granted path: on the host, make it readable (chmod) or grant it by its own \
             path)",
            path.display(),
            step.display(),
            meta.mode() & 0o7777,
            if i == last { "read" } else { "searched" },
        );
    }
    format!(
        " (a read grant covers {}, but the file permissions refuse the sandbox)",
        path.display()
    )
}

/// `stat` as JSON: size, kind, times, mode.
pub(crate) fn stat_json(meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    let ft = meta.file_type();
    serde_json::json!({
        "size": meta.len(),
        "isFile": ft.is_file(),
        "isDirectory": ft.is_dir(),
        "isSymbolicLink": ft.is_symlink(),
        "mode": meta.mode(),
        "mtimeMs": meta.mtime() as f64 * 1000.0 + meta.mtime_nsec() as f64 / 1e6,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_missing_grant() {
        let access = AccessInfo {
            read: vec!["/project".into()],
            workspace: Some("/ws".into()),
            net: false,
        };
        let enoent = io::Error::from_raw_os_error(nix::libc::ENOENT);
        let e = explain("readFile", "/etc/passwd", &enoent, Some(&access), false);
        assert_eq!(e.code, "ENOENT");
        assert!(
            e.message
                .contains("no read grant covers /etc/passwd; granted: /project"),
            "{}",
            e.message
        );
        let e = explain(
            "readFile",
            "/project/../etc/x",
            &enoent,
            Some(&access),
            false,
        );
        assert!(
            e.message.contains("no read grant covers /etc/x"),
            "{}",
            e.message
        );
        let erofs = io::Error::from_raw_os_error(nix::libc::EROFS);
        let e = explain("writeFile", "/project/a", &erofs, Some(&access), true);
        assert!(
            e.message.contains("only the workspace /ws is writable"),
            "{}",
            e.message
        );
        let e = explain("writeFile", "/tmp/a", &erofs, None, true);
        assert!(e.message.contains("permissions.write"), "{}", e.message);
        // A read the file's permissions refuse, inside a grant: that cause, never a write's.
        let eacces = io::Error::from_raw_os_error(nix::libc::EACCES);
        let e = explain("readFile", "/project/a", &eacces, Some(&access), false);
        assert_eq!(e.code, "EACCES");
        assert!(
            e.message.contains("a read grant covers /project/a")
                && e.message
                    .contains("the file permissions refuse the sandbox")
                && !e.message.contains("writable"),
            "{}",
            e.message
        );
        // A write refused by a mode in the workspace is the mode's, not a missing grant.
        let e = explain("writeFile", "/ws/a", &eacces, Some(&access), true);
        assert!(!e.message.contains("permissions."), "{}", e.message);
    }
}
