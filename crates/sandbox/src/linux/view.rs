//! The filesystem view's vocabulary: how a path is seen ([`Access`]) and one step that builds
//! the view ([`Step`]). `mounts` plans and builds the steps, the helper's config carries them,
//! and Landlock grants by them again.

use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Access {
    /// A directory inside a read-only path, shown empty (an empty read-only tmpfs on it).
    /// Least permissive: the same path with any other access stays visible.
    Hidden,
    /// Read only: no exec, no suid, no devices (data granted to code).
    Data,
    /// Read and execute, nothing else (nosuid, nodev).
    ReadOnly,
    /// A device node: read and write the node, no exec, no suid.
    Device,
    /// The scratch directory: read and write, no exec, no suid, no devices.
    ReadWrite,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Step {
    Dir(PathBuf),
    Symlink {
        path: PathBuf,
        target: PathBuf,
    },
    Bind {
        path: PathBuf,
        access: Access,
        is_dir: bool,
    },
    /// A host directory bound at another path of the view (the scratch directory's mount point).
    BindAt {
        source: PathBuf,
        path: PathBuf,
        access: Access,
    },
}
