//! Reading beneath a skills directory without ever following a link.
//!
//! A skills directory holds files other people wrote: a served directory, a project's, a hand
//! edit in the user's own. Anything in it may be a symlink, a fifo, a directory where a file
//! is expected, a name that is not UTF-8, or a file far larger than any skill. So every read
//! under a root is made by file descriptor from the root down: each component is opened with
//! `openat(O_NOFOLLOW)` relative to the directory above it (a link at ANY component is
//! refused, not just the last), the opened descriptor is checked with `fstat` (a regular file
//! or a directory, as asked), and what is read is that descriptor's contents, bounded. There
//! is no check by path followed by an open by path, so nothing can be swapped in between.
//!
//! The root itself is the one path followed as given: the user configured it (`skills.dir`,
//! `skills.serve`), so a dotfiles link there is theirs. A project's root is opened beneath the
//! project (`.code-executor` and `skills` are not followed either: the project is someone
//! else's tree).

use std::ffi::{CString, OsStr, OsString};
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat};

/// Why something under a skills directory was not read. Each names the path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TreeError {
    #[error(
        "{path} is a symbolic link: links are never followed under a skills directory (copy \
         the file in instead)"
    )]
    Link { path: String },
    #[error("{path} is {found}, not {wanted}")]
    Kind {
        path: String,
        found: &'static str,
        wanted: &'static str,
    },
    #[error("{path} is {len} bytes or more, more than the {max} read of such a file")]
    TooLarge { path: String, len: u64, max: u64 },
    #[error("{path} is not UTF-8 text")]
    NotText { path: String },
    #[error(
        "{path}: {segment:?} is not a plain file or directory name (no empty, `.` or `..` \
         segment, no `/`, `\\` or control character)"
    )]
    BadSegment { path: String, segment: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// Whether `segment` is a plain name: not empty, not `.` or `..`, no separator (`/` or a
/// Windows `\`), no NUL or other control character.
pub fn plain_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment != "."
        && segment != ".."
        && !segment
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control())
}

/// A skills directory: a path the user chose, and the components beneath it that are opened
/// without following (a project's `.code-executor/skills`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    base: PathBuf,
    beneath: Vec<String>,
}

impl Root {
    /// A root the user configured: `path` is followed as given.
    pub fn configured(path: PathBuf) -> Root {
        Root {
            base: path,
            beneath: Vec::new(),
        }
    }

    /// `base/rel`, where `base` is followed and each component of `rel` is not.
    pub fn beneath(base: PathBuf, rel: &str) -> Root {
        Root {
            base,
            beneath: rel.split('/').map(str::to_string).collect(),
        }
    }

    /// Opens the root (`NotFound` kind when it does not exist).
    pub fn open(&self) -> Result<Dir, TreeError> {
        let path = self.base.clone();
        let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| TreeError::BadSegment {
            path: path.display().to_string(),
            segment: path.display().to_string(),
        })?;
        let fd = openat(
            nix::fcntl::AT_FDCWD,
            c.as_c_str(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io(&path, e))?;
        let mut dir = Dir { fd, path };
        for seg in &self.beneath {
            dir = dir.dir(seg)?;
        }
        Ok(dir)
    }
}

/// A directory opened beneath a root.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// What one entry of a directory is (not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File {
        size: u64,
    },
    Dir,
    Link,
    /// A fifo, socket or device: never read.
    Other(&'static str),
}

/// One entry of a directory.
/// A directory entry's name that is not UTF-8, in its lossy form (for reports).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a UTF-8 name")]
pub struct NotUtf8Name(pub String);

#[derive(Debug)]
pub struct Entry {
    /// Its name, or the lossy form of a name that is not UTF-8.
    pub name: Result<String, NotUtf8Name>,
    /// What it is, or why that could not be told.
    pub kind: Result<Kind, TreeError>,
}

fn io(path: &Path, e: Errno) -> TreeError {
    TreeError::Io {
        path: path.display().to_string(),
        source: std::io::Error::from(e),
    }
}

fn kind_of(st: &FileStat) -> Kind {
    let fmt = SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits());
    if fmt == SFlag::S_IFREG {
        Kind::File {
            size: u64::try_from(st.st_size).unwrap_or(0),
        }
    } else if fmt == SFlag::S_IFDIR {
        Kind::Dir
    } else if fmt == SFlag::S_IFLNK {
        Kind::Link
    } else if fmt == SFlag::S_IFIFO {
        Kind::Other("a fifo")
    } else if fmt == SFlag::S_IFSOCK {
        Kind::Other("a socket")
    } else {
        Kind::Other("a device")
    }
}

fn described(kind: Kind) -> &'static str {
    match kind {
        Kind::File { .. } => "a file",
        Kind::Dir => "a directory",
        Kind::Link => "a symbolic link",
        Kind::Other(what) => what,
    }
}

impl Dir {
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn name(&self, name: &str) -> Result<(CString, PathBuf), TreeError> {
        let path = self.path.join(name);
        if !plain_segment(name) {
            return Err(TreeError::BadSegment {
                path: self.path.display().to_string(),
                segment: name.to_string(),
            });
        }
        let c = CString::new(name).map_err(|_| TreeError::BadSegment {
            path: self.path.display().to_string(),
            segment: name.to_string(),
        })?;
        Ok((c, path))
    }

    /// Why opening `name` failed, in words: a link is named as such.
    fn why(&self, c: &CString, path: &Path, e: Errno, wanted: &'static str) -> TreeError {
        match fstatat(&self.fd, c.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW).map(|st| kind_of(&st)) {
            Ok(Kind::Link) => TreeError::Link {
                path: path.display().to_string(),
            },
            Ok(found) if e == Errno::ENOTDIR || e == Errno::ELOOP => TreeError::Kind {
                path: path.display().to_string(),
                found: described(found),
                wanted,
            },
            _ => io(path, e),
        }
    }

    /// The directory `name` in this one (a single plain segment), not followed.
    pub fn dir(&self, name: &str) -> Result<Dir, TreeError> {
        let (c, path) = self.name(name)?;
        let fd = openat(
            &self.fd,
            c.as_c_str(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| self.why(&c, &path, e, "a directory"))?;
        Ok(Dir { fd, path })
    }

    /// The directory at `rel` (`/`-separated plain segments) beneath this one.
    pub fn dir_at(&self, rel: &str) -> Result<Dir, TreeError> {
        let mut segments = rel.split('/');
        let first = segments.next().unwrap_or_default();
        let mut at = self.dir(first)?;
        for seg in segments {
            at = at.dir(seg)?;
        }
        Ok(at)
    }

    /// The bytes of the regular file `name` in this directory, at most `max` of them (a larger
    /// file is refused without being read whole).
    pub fn read(&self, name: &str, max: u64) -> Result<Vec<u8>, TreeError> {
        let (c, path) = self.name(name)?;
        // O_NONBLOCK: opening a fifo does not wait for a writer; O_NOCTTY: a terminal device
        // never becomes ours. Both are refused just below anyway.
        let fd = openat(
            &self.fd,
            c.as_c_str(),
            OFlag::O_RDONLY
                | OFlag::O_NOFOLLOW
                | OFlag::O_NONBLOCK
                | OFlag::O_NOCTTY
                | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| self.why(&c, &path, e, "a file"))?;
        let st = fstat(&fd).map_err(|e| io(&path, e))?;
        let kind = kind_of(&st);
        let Kind::File { size } = kind else {
            return Err(TreeError::Kind {
                path: path.display().to_string(),
                found: described(kind),
                wanted: "a regular file",
            });
        };
        let too_large = |len| TreeError::TooLarge {
            path: path.display().to_string(),
            len,
            max,
        };
        if size > max {
            return Err(too_large(size));
        }
        let mut out = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        std::fs::File::from(fd)
            .take(max.saturating_add(1))
            .read_to_end(&mut out)
            .map_err(|source| TreeError::Io {
                path: path.display().to_string(),
                source,
            })?;
        // It grew since `fstat`: still no more than `max` is kept.
        if out.len() as u64 > max {
            return Err(too_large(out.len() as u64));
        }
        Ok(out)
    }

    /// [`Dir::read`] as UTF-8 text.
    pub fn read_text(&self, name: &str, max: u64) -> Result<String, TreeError> {
        let bytes = self.read(name, max)?;
        String::from_utf8(bytes).map_err(|_| TreeError::NotText {
            path: self.path.join(name).display().to_string(),
        })
    }

    /// The file at `rel` (`/`-separated plain segments) beneath this directory, at most `max`
    /// bytes; no component is followed.
    pub fn read_at(&self, rel: &str, max: u64) -> Result<Vec<u8>, TreeError> {
        match rel.rsplit_once('/') {
            None => self.read(rel, max),
            Some((dirs, file)) => self.dir_at(dirs)?.read(file, max),
        }
    }

    /// The entries of this directory (without `.` and `..`), at most `max` of them, sorted
    /// by name; `true` when there were more.
    pub fn entries(&self, max: usize) -> Result<(Vec<Entry>, bool), TreeError> {
        // A descriptor of its own, so each listing starts at the beginning.
        let fd = openat(
            &self.fd,
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io(&self.path, e))?;
        let mut dir = nix::dir::Dir::from_fd(fd).map_err(|e| io(&self.path, e))?;
        let mut names: Vec<OsString> = Vec::new();
        let mut more = false;
        for entry in dir.iter() {
            let entry = entry.map_err(|e| io(&self.path, e))?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            if names.len() >= max {
                more = true;
                break;
            }
            names.push(name.to_os_string());
        }
        names.sort();
        let out = names
            .into_iter()
            .map(|name| {
                let kind = fstatat(&self.fd, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
                    .map(|st| kind_of(&st))
                    .map_err(|e| io(&self.path.join(&name), e));
                let name = match name.to_str() {
                    Some(s) => Ok(s.to_string()),
                    None => Err(NotUtf8Name(name.to_string_lossy().into_owned())),
                };
                Entry { name, kind }
            })
            .collect();
        Ok((out, more))
    }
}

impl Dir {
    /// The bytes of the regular files beneath this directory (links and other entries not
    /// counted, nothing followed), at most `max_depth` directories down and `max_entries`
    /// entries read in all (what lies beyond is not counted).
    pub fn bytes(&self, max_depth: usize, max_entries: usize) -> u64 {
        let mut total = 0u64;
        let mut seen = 0usize;
        let mut stack: Vec<(Dir, usize)> = Vec::new();
        if let Ok(me) = self.dir_again() {
            stack.push((me, 0));
        }
        while let Some((dir, depth)) = stack.pop() {
            let Ok((entries, _)) = dir.entries(max_entries.saturating_sub(seen)) else {
                continue;
            };
            seen += entries.len();
            for e in entries {
                match (e.kind, e.name) {
                    (Ok(Kind::File { size }), _) => total = total.saturating_add(size),
                    (Ok(Kind::Dir), Ok(name)) if depth < max_depth => {
                        if let Ok(sub) = dir.dir(&name) {
                            stack.push((sub, depth + 1));
                        }
                    }
                    _ => {}
                }
            }
            if seen >= max_entries {
                break;
            }
        }
        total
    }

    /// This directory under a descriptor of its own.
    fn dir_again(&self) -> Result<Dir, TreeError> {
        let fd = openat(
            &self.fd,
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io(&self.path, e))?;
        Ok(Dir {
            fd,
            path: self.path.clone(),
        })
    }

    /// The directory `name` in this one, made when it is missing (mode 0700); never a link.
    pub fn make_dir(&self, name: &str) -> Result<Dir, TreeError> {
        let (c, path) = self.name(name)?;
        match nix::sys::stat::mkdirat(&self.fd, c.as_c_str(), Mode::S_IRWXU) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(io(&path, e)),
        }
        self.dir(name)
    }

    /// Moves `name` of this directory to `to_name` of `to` (both single segments; no path
    /// is resolved, so a link swapped in on the way is moved, never followed).
    pub fn rename(&self, name: &str, to: &Dir, to_name: &str) -> Result<(), TreeError> {
        let (from, path) = self.name(name)?;
        let (dest, _) = to.name(to_name)?;
        nix::fcntl::renameat(&self.fd, from.as_c_str(), &to.fd, dest.as_c_str())
            .map_err(|e| io(&path, e))
    }

    /// Writes a new regular file `name` (mode 0644) holding `bytes`; an entry of that name
    /// already there (a link planted in its place included) is an error, never written
    /// through.
    pub fn write_new(&self, name: &str, bytes: &[u8]) -> Result<(), TreeError> {
        use std::io::Write;
        let (c, path) = self.name(name)?;
        let fd = openat(
            &self.fd,
            c.as_c_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o644),
        )
        .map_err(|e| io(&path, e))?;
        std::fs::File::from(fd)
            .write_all(bytes)
            .map_err(|source| TreeError::Io {
                path: path.display().to_string(),
                source,
            })
    }

    /// Removes `name` of this directory and everything beneath it, if it is there; a link is
    /// removed itself, never followed. The path removed goes through this directory's own
    /// descriptor (`/proc/self/fd`), so no component above it is resolved again.
    pub fn remove_tree(&self, name: &str) -> Result<(), TreeError> {
        use std::os::fd::AsRawFd;
        let (_, path) = self.name(name)?;
        let through = PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd())).join(name);
        let gone =
            match fstatat(&self.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW).map(|st| kind_of(&st)) {
                Err(Errno::ENOENT) => return Ok(()),
                Ok(Kind::Dir) => std::fs::remove_dir_all(&through),
                _ => std::fs::remove_file(&through),
            };
        gone.map_err(|source| TreeError::Io {
            path: path.display().to_string(),
            source,
        })
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cem-beneath-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_link_at_any_component_is_refused() {
        let tmp = tempdir("links");
        let outside = tmp.join("outside");
        std::fs::create_dir_all(outside.join("deep")).unwrap();
        std::fs::write(outside.join("secret"), "SECRET").unwrap();
        std::fs::write(outside.join("deep/secret"), "SECRET").unwrap();
        let root = tmp.join("root");
        std::fs::create_dir_all(root.join("skill/sub")).unwrap();
        std::fs::write(root.join("skill/ok.md"), "ok").unwrap();
        symlink(outside.join("secret"), root.join("skill/file-link")).unwrap();
        symlink(&outside, root.join("skill/dir-link")).unwrap();
        symlink(&outside, root.join("skill/sub/inner")).unwrap();
        symlink(&outside, root.join("linked-skill")).unwrap();
        symlink("nowhere", root.join("skill/dangling")).unwrap();
        let dir = Root::configured(root).open().unwrap();
        assert_eq!(dir.read_at("skill/ok.md", 10).unwrap(), b"ok");
        for rel in [
            "skill/file-link",
            "skill/dir-link/secret",
            "skill/sub/inner/deep/secret",
            "linked-skill/secret",
            "skill/dangling",
        ] {
            let e = dir.read_at(rel, 1 << 20).unwrap_err();
            assert!(matches!(e, TreeError::Link { .. }), "{rel}: {e}");
            assert!(e.to_string().contains("symbolic link"), "{rel}: {e}");
        }
        assert!(matches!(
            dir.dir("linked-skill").unwrap_err(),
            TreeError::Link { .. }
        ));
    }

    #[test]
    fn a_projects_root_is_not_followed_beneath_the_project() {
        let tmp = tempdir("project");
        let outside = tmp.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(tmp.join("p/.code-executor")).unwrap();
        symlink(&outside, tmp.join("p/.code-executor/skills")).unwrap();
        let e = Root::beneath(tmp.join("p"), ".code-executor/skills")
            .open()
            .unwrap_err();
        assert!(matches!(e, TreeError::Link { .. }), "{e}");
    }

    #[test]
    fn only_regular_files_are_read_and_only_so_much() {
        let tmp = tempdir("kinds");
        std::fs::create_dir_all(tmp.join("a-dir")).unwrap();
        std::fs::write(tmp.join("big"), vec![b'x'; 100]).unwrap();
        nix::unistd::mkfifo(&tmp.join("fifo"), Mode::S_IRWXU).unwrap();
        let dir = Root::configured(tmp.clone()).open().unwrap();
        assert!(matches!(
            dir.read("a-dir", 10).unwrap_err(),
            TreeError::Kind { .. }
        ));
        // A fifo is neither waited on nor read.
        let e = dir.read("fifo", 10).unwrap_err();
        assert!(e.to_string().contains("a fifo"), "{e}");
        assert!(matches!(
            dir.read("big", 99).unwrap_err(),
            TreeError::TooLarge { .. }
        ));
        assert_eq!(dir.read("big", 100).unwrap().len(), 100);
        for bad in ["", ".", "..", "a/b", "a\\b", "a\0b", "../big"] {
            assert!(
                matches!(dir.read(bad, 10).unwrap_err(), TreeError::BadSegment { .. }),
                "{bad:?}"
            );
        }
        let (entries, more) = dir.entries(10).unwrap();
        assert!(!more);
        let kinds: Vec<(String, Kind)> = entries
            .into_iter()
            .map(|e| (e.name.unwrap(), e.kind.unwrap()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("a-dir".to_string(), Kind::Dir),
                ("big".to_string(), Kind::File { size: 100 }),
                ("fifo".to_string(), Kind::Other("a fifo")),
            ]
        );
        assert!(dir.entries(2).unwrap().1, "more than two");
    }
}
