//! Pipes widened while a large message passes through them.
//!
//! A Linux pipe holds 64 KiB by default, so a 5 MB message crosses it in about eighty rounds
//! of "the writer fills it, the reader empties it", each a wake-up of the other side: 6-7 ms
//! between two processes here, against 4-5 ms through a 1 MiB pipe. Every large value crosses
//! several pipes (the client's, the worker's both ways, an upstream's both ways), so each end
//! the server holds widens its pipe to [`WIDE_BYTES`] when a message of [`LARGE_MESSAGE_BYTES`]
//! or more is about to pass (as soon as its size is known: a frame's length prefix, a line
//! past that size, a reply or answer encoded). Small traffic never widens anything.
//!
//! Widening allocates nothing: a pipe's pages come and go with the bytes in it. It counts
//! against the user's pipe allowance (`/proc/sys/fs/pipe-user-pages-soft`, 64 MiB by
//! default), which is why it is done only for pipes that carry large messages, and a pipe
//! that cannot be widened (not a pipe, over that allowance, or a smaller
//! `/proc/sys/fs/pipe-max-size`) carries the message as before.

use std::os::fd::AsFd;

use nix::fcntl::{FcntlArg, fcntl};

/// What a widened pipe holds: Linux's default `/proc/sys/fs/pipe-max-size`, the most an
/// unprivileged process may ask for.
pub const WIDE_BYTES: usize = 1 << 20;

/// A message of this size or more widens the pipes it passes through.
pub const LARGE_MESSAGE_BYTES: usize = 1 << 20;

/// Makes the pipe behind `fd` hold at least [`WIDE_BYTES`]; true when it does. Not a pipe,
/// or refused: false, and nothing changes.
pub fn widen(fd: impl AsFd) -> bool {
    let fd = fd.as_fd();
    match fcntl(fd, FcntlArg::F_GETPIPE_SZ) {
        Ok(n) if n as usize >= WIDE_BYTES => true,
        Ok(_) => fcntl(fd, FcntlArg::F_SETPIPE_SZ(WIDE_BYTES as i32)).is_ok(),
        Err(_) => false,
    }
}

/// How many bytes the pipe behind `fd` holds (0 for anything else).
pub fn size(fd: impl AsFd) -> usize {
    fcntl(fd.as_fd(), FcntlArg::F_GETPIPE_SZ).map_or(0, |n| n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_is_widened_and_anything_else_left_alone() {
        let (r, w) = nix::unistd::pipe().unwrap();
        assert!(size(&w) < WIDE_BYTES, "a new pipe is narrow");
        assert!(widen(&w));
        assert_eq!(size(&r), WIDE_BYTES, "both ends are the same pipe");
        assert!(widen(&r), "widening a wide pipe again is a no-op");
        assert_eq!(size(&w), WIDE_BYTES);
        let file = std::fs::File::open("/dev/null").unwrap();
        assert!(!widen(&file), "a device is not a pipe");
    }
}
