//! How the process's allocator (glibc's `malloc`) treats large blocks. It lives here because
//! this is the crate allowed `unsafe`; it has nothing to do with confinement.
//!
//! By default glibc gives each block of 128 KiB or more its own `mmap` and unmaps it when it is
//! freed (raising that threshold only up to the size of a block freed so far, and only in the
//! main arena's way of counting). A tool's large result or arguments pass through several
//! buffers on every hop (a frame, its decoded text, the answer being written), each megabytes
//! long and each freed before the next is made: every one of them was faulted in page by page,
//! about 10,000 page faults per 5 MB execution in the server. [`keep_freed_blocks`] makes the
//! allocator keep such blocks when they are freed and hand them out again;
//! [`release_freed_memory`] gives what it keeps back to the kernel, which a long-lived process
//! calls once it is quiet. Elsewhere than Linux with glibc both do nothing.

/// Blocks up to this size come from the heap and are reused once freed (glibc's upper bound
/// for the threshold on 64-bit systems is 32 MiB; a larger block still gets its own mapping).
pub const KEPT_BLOCK_MAX: usize = 32 << 20;

/// Free memory at the top of a heap that the allocator keeps before it gives memory back by
/// itself.
pub const KEPT_FREE_MAX: usize = 128 << 20;

/// Makes the allocator keep freed blocks of up to [`KEPT_BLOCK_MAX`] (and up to
/// [`KEPT_FREE_MAX`] free at the top of a heap) for reuse instead of returning them to the
/// kernel. Call it before the process allocates much, ideally first in `main`. Returns whether
/// the allocator took both settings.
pub fn keep_freed_blocks() -> bool {
    imp::keep_freed_blocks()
}

/// Gives the free memory the allocator keeps back to the kernel (`malloc_trim(0)`: the top of
/// every heap and the free pages inside them). Returns whether any memory was released.
pub fn release_freed_memory() -> bool {
    imp::release_freed_memory()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    use super::{KEPT_BLOCK_MAX, KEPT_FREE_MAX};
    use nix::libc;

    pub(super) fn keep_freed_blocks() -> bool {
        let (Ok(block), Ok(free)) = (
            libc::c_int::try_from(KEPT_BLOCK_MAX),
            libc::c_int::try_from(KEPT_FREE_MAX),
        ) else {
            return false;
        };
        // SAFETY: mallopt takes integers and changes the allocator's parameters under its own
        // lock; it touches no memory of ours. What can go wrong: a value glibc rejects, which
        // it reports by returning 0 and leaves the parameter as it was.
        let mmap = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, block) };
        // SAFETY: as above.
        let trim = unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, free) };
        mmap == 1 && trim == 1
    }

    pub(super) fn release_freed_memory() -> bool {
        // SAFETY: malloc_trim only returns free memory of the allocator's heaps to the kernel,
        // under the allocator's locks; no block in use is touched. Nothing else can go wrong.
        unsafe { libc::malloc_trim(0) == 1 }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod imp {
    pub(super) fn keep_freed_blocks() -> bool {
        false
    }

    pub(super) fn release_freed_memory() -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minor_faults() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
        let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
        after
            .split_whitespace()
            .nth(7)
            .and_then(|f| f.parse().ok())
            .unwrap_or(0)
    }

    /// One round of what a hop does with a large value: a buffer that grows as it is read
    /// (reallocated as it doubles), a copy of it, both freed.
    fn hop(size: usize) {
        let mut read = Vec::new();
        while read.len() < size {
            read.extend_from_slice(&[7u8; 64 << 10]);
        }
        let copy = read.clone();
        std::hint::black_box((&read, &copy));
    }

    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn freed_large_blocks_are_reused_not_faulted_in_again() {
        assert!(keep_freed_blocks(), "glibc took both settings");
        let size = 6 << 20;
        // The first round faults its blocks in; the next ones reuse their pages.
        hop(size);
        let before = minor_faults();
        for _ in 0..10 {
            hop(size);
        }
        let faults = minor_faults() - before;
        // With glibc's defaults the same ten rounds fault in about 3,000 pages.
        assert!(
            faults < 1_000,
            "{faults} page faults for ten rounds of 6 MiB blocks"
        );
        release_freed_memory();
    }
}
