//! Reading the files we parse at start and in `config show`/`doctor` (client config files,
//! our settings, trust files, OAuth token files, the tool cache) without trusting their
//! shape: any of them may sit in a cloned repository or be replaced by something hostile.
//!
//! [`read_text`] and [`read_bytes`] open without blocking (a FIFO in place of a file would
//! otherwise wait forever for a writer), check on the open descriptor that it is a regular
//! file (not a directory, FIFO, socket or device such as `/dev/zero`), refuse a file above
//! a size limit before reading it and read at most that much (a file growing meanwhile
//! cannot make us read more), and, for text, check UTF-8. Every error says what the file is
//! and what to do; the caller names the file.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Largest config-like file we read (client config files, settings, trust files, tokens).
pub const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;
/// Claude Code keeps its history in `~/.claude.json`; files of 100 MB are reported.
pub const MAX_CLAUDE_JSON_BYTES: u64 = 256 * 1024 * 1024;

/// Why a file was not read. The display is a reason to put after the file's name.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReadError {
    #[error("no such file")]
    NotFound,
    #[error("is {0}, not a regular file; replace it with a file (or remove it)")]
    NotAFile(&'static str),
    #[error(
        "is {size} bytes, more than the {limit} bytes code-executor-mcp reads from such a file; skipped (shrink it or remove it)"
    )]
    TooLarge { size: u64, limit: u64 },
    #[error("is not valid UTF-8 (at byte {0}); save it as UTF-8")]
    NotUtf8(usize),
    #[error("cannot be read: {0}")]
    Io(String),
}

impl ReadError {
    fn io(e: &std::io::Error) -> ReadError {
        match e.kind() {
            std::io::ErrorKind::NotFound => ReadError::NotFound,
            _ => ReadError::Io(e.to_string()),
        }
    }
}

/// The bytes of a regular file of at most `limit` bytes.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer; it does
    // not change reads of a regular file. O_NOCTTY: a terminal never becomes ours.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits() | nix::fcntl::OFlag::O_NOCTTY.bits())
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(code) if code == nix::errno::Errno::ENXIO as i32 => {
                ReadError::NotAFile("a socket or device")
            }
            _ => ReadError::io(&e),
        })?;
    let meta = file.metadata().map_err(|e| ReadError::io(&e))?;
    let kind = meta.file_type();
    if !kind.is_file() {
        return Err(ReadError::NotAFile(if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO (named pipe)"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_char_device() {
            "a character device"
        } else if kind.is_block_device() {
            "a block device"
        } else {
            "not a regular file"
        }));
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge {
            size: meta.len(),
            limit,
        });
    }
    let mut out = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| ReadError::io(&e))?;
    let read = out.len() as u64;
    if read > limit {
        return Err(ReadError::TooLarge { size: read, limit });
    }
    Ok(out)
}

/// The text of a regular UTF-8 file of at most `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    String::from_utf8(read_bytes(path, limit)?)
        .map_err(|e| ReadError::NotUtf8(e.utf8_error().valid_up_to()))
}

/// For tests of readers: each hostile thing to put in place of a file (named by the reason
/// its reading gives), above `limit` for the huge one.
#[cfg(test)]
pub fn hostile_shapes(limit: u64) -> Vec<HostileShape> {
    vec![
        (
            "is a FIFO (named pipe), not a regular file",
            Box::new(|p| nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap()),
        ),
        (
            "is a character device, not a regular file",
            Box::new(|p| std::os::unix::fs::symlink("/dev/zero", p).unwrap()),
        ),
        (
            "is a directory, not a regular file",
            Box::new(|p| std::fs::create_dir(p).unwrap()),
        ),
        (
            "bytes, more than the",
            Box::new(move |p| {
                std::fs::File::create(p)
                    .unwrap()
                    .set_len(limit + 1)
                    .unwrap()
            }),
        ),
    ]
}

/// The reason reading it gives, and how to make it at a path.
#[cfg(test)]
pub type HostileShape = (&'static str, Box<dyn Fn(&Path)>);

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn temp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cem-read-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let d = temp("fifo");
        let p = d.join("mcp.json");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(
            read_text(&p, MAX_CONFIG_BYTES),
            Err(ReadError::NotAFile("a FIFO (named pipe)"))
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn dev_zero_behind_a_symlink_is_refused() {
        let d = temp("zero");
        let p = d.join("mcp.json");
        std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
        assert_eq!(
            read_text(&p, MAX_CONFIG_BYTES),
            Err(ReadError::NotAFile("a character device"))
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_directory_is_refused() {
        let d = temp("dir");
        assert_eq!(
            read_text(&d, MAX_CONFIG_BYTES),
            Err(ReadError::NotAFile("a directory"))
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_huge_file_is_refused_before_it_is_read() {
        let d = temp("huge");
        let p = d.join("mcp.json");
        // Sparse: 200 MB of nothing on disk.
        std::fs::File::create(&p)
            .unwrap()
            .set_len(200 * 1024 * 1024)
            .unwrap();
        assert_eq!(
            read_text(&p, MAX_CONFIG_BYTES),
            Err(ReadError::TooLarge {
                size: 200 * 1024 * 1024,
                limit: MAX_CONFIG_BYTES
            })
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn invalid_utf8_is_refused_with_its_offset() {
        let d = temp("utf8");
        let p = d.join("mcp.json");
        std::fs::write(&p, b"{\"a\": \"\xff\"}").unwrap();
        assert_eq!(read_text(&p, MAX_CONFIG_BYTES), Err(ReadError::NotUtf8(7)));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_missing_file_and_a_regular_one() {
        let d = temp("ok");
        assert_eq!(
            read_text(&d.join("none.json"), MAX_CONFIG_BYTES),
            Err(ReadError::NotFound)
        );
        std::fs::write(d.join("ok.json"), "{}").unwrap();
        assert_eq!(read_text(&d.join("ok.json"), 2).as_deref(), Ok("{}"));
        assert_eq!(
            read_text(&d.join("ok.json"), 1),
            Err(ReadError::TooLarge { size: 2, limit: 1 })
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
