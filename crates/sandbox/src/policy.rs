//! What the host asks for: the worker to start ([`WorkerCommand`]), how it is confined
//! ([`SandboxPolicy`], [`ResourceLimits`]), and the helper's argument and exit codes.

use std::ffi::OsString;
use std::path::PathBuf;

/// `argv[1]` that makes the host binary act as the sandbox helper: the host's `main` calls
/// [`helper_main`] first thing when it sees it, before any thread or async runtime starts.
pub const HELPER_ARG: &str = "__sandbox";

/// Exit code of the helper when its invocation is malformed (a bug in the host, not the payload).
pub const EXIT_BAD_INVOCATION: u8 = 120;
/// Exit code of the helper when a required sandbox layer cannot be applied; stderr says which
/// layer, why, and what to do.
pub const EXIT_SETUP_FAILED: u8 = 121;
/// Exit code of the helper when every layer is in place but the payload cannot be executed.
pub const EXIT_EXEC_FAILED: u8 = 122;

/// Whether confinement is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxMode {
    /// Every layer the minimum guarantee needs, or refuse to start.
    Enforce,
    /// Explicitly chosen by the user for development: no confinement at all (the child still
    /// gets its own session, a parent-death signal, the curated environment and no extra fds).
    Disabled,
}

/// How a worker is confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    /// Paths the worker may read and execute besides the payload program, the shared
    /// libraries it links (found by [`shared_libraries`] and added by [`command`]) and the
    /// locale data its environment names (`LANG`, `LC_*`; also added by [`command`]), e.g. an
    /// interpreter's standard library. Nothing else of the host is in the view: no system
    /// library directory as a whole, so libraries loaded by anything but the program (an
    /// interpreter's extension modules) must be listed here too (see [`shared_libraries`]).
    pub read_only_paths: Vec<PathBuf>,
    /// Directories inside `read_only_paths` that the worker sees empty (an empty read-only
    /// tmpfs is mounted on each), e.g. an interpreter's `site-packages` inside its standard
    /// library. A path that does not exist, is not a directory, or is not inside a read-only
    /// path is not in the view anyway and is ignored. A path also listed in
    /// `read_only_paths` stays visible.
    pub hidden_paths: Vec<PathBuf>,
    /// Data the worker may read but never execute (read-only, noexec mounts; Landlock read
    /// rights without execute), e.g. project directories granted to code. Each appears at its
    /// own path. The host resolves symlinks before listing a path here; the view shows the
    /// real path, so a symlink inside it that leads elsewhere finds nothing. A symlink on the
    /// way to a data path when the sandbox is built (the path changed since the host resolved
    /// it) fails the filesystem view: the worker does not start.
    pub data_paths: Vec<PathBuf>,
    /// The one directory the worker may write; it appears at the same path inside, unless
    /// `scratch_mount_at` names another.
    pub scratch_dir: Option<PathBuf>,
    /// Where `scratch_dir` appears inside the sandbox (an absolute path outside every
    /// read-only path, such as `/workspace`); `None`: at its own path.
    pub scratch_mount_at: Option<PathBuf>,
    pub limits: ResourceLimits,
    /// The executable that re-enters [`helper_main`] when started with [`HELPER_ARG`]; the host
    /// passes `std::env::current_exe()`. Required in [`SandboxMode::Enforce`]. Optional in
    /// [`SandboxMode::Disabled`]: with it the child is the helper, started with `posix_spawn`
    /// (cheap for a large multi-threaded host), which makes its own session and parent-death
    /// signal and runs the program unconfined; without it the host is forked and a `pre_exec`
    /// hook does the same.
    pub helper_exe: Option<PathBuf>,
}

impl SandboxPolicy {
    /// A policy with default limits, no extra paths and no scratch directory.
    pub fn new(mode: SandboxMode, helper_exe: Option<PathBuf>) -> Self {
        Self {
            mode,
            read_only_paths: Vec::new(),
            hidden_paths: Vec::new(),
            data_paths: Vec::new(),
            scratch_dir: None,
            scratch_mount_at: None,
            limits: ResourceLimits::default(),
            helper_exe,
        }
    }
}

/// rlimits applied to the worker. `u64::MAX` means "no limit" for that resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceLimits {
    /// RLIMIT_AS: virtual address space of each process of the payload.
    pub address_space_bytes: u64,
    /// RLIMIT_CPU: CPU seconds of each process (SIGXCPU at the limit, SIGKILL one second later).
    pub cpu_seconds: u64,
    /// RLIMIT_NPROC: processes the payload may have at once, itself included. The two helper
    /// processes of the sandbox (outer helper and namespace init) are added on top.
    pub max_processes: u64,
    /// RLIMIT_NOFILE: open descriptors per process.
    pub max_open_files: u64,
    /// RLIMIT_FSIZE: largest file the payload may write.
    pub max_file_size_bytes: u64,
}

impl ResourceLimits {
    /// 1 GiB: CPython and QuickJS reserve address space generously; real use stays far below.
    pub const DEFAULT_ADDRESS_SPACE_BYTES: u64 = 1 << 30;
    /// 60 s of CPU: the host's wall-clock deadline is normally much shorter; this is a backstop.
    pub const DEFAULT_CPU_SECONDS: u64 = 60;
    /// 32 processes: a worker needs one; leaves room for `subprocess` use, bounds a fork bomb.
    pub const DEFAULT_MAX_PROCESSES: u64 = 32;
    /// 256 descriptors: a worker needs a handful; bounds descriptor exhaustion.
    pub const DEFAULT_MAX_OPEN_FILES: u64 = 256;
    /// 64 MiB: the largest file the scratch directory should ever need to hold.
    pub const DEFAULT_MAX_FILE_SIZE_BYTES: u64 = 64 << 20;
}

impl Default for ResourceLimits {
    fn default() -> Self {
        Self {
            address_space_bytes: Self::DEFAULT_ADDRESS_SPACE_BYTES,
            cpu_seconds: Self::DEFAULT_CPU_SECONDS,
            max_processes: Self::DEFAULT_MAX_PROCESSES,
            max_open_files: Self::DEFAULT_MAX_OPEN_FILES,
            max_file_size_bytes: Self::DEFAULT_MAX_FILE_SIZE_BYTES,
        }
    }
}

/// The program to run inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    /// Absolute path of the payload executable.
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The complete environment of the worker; nothing of the host's is inherited.
    pub env: Vec<(OsString, OsString)>,
    /// Working directory, as seen inside the sandbox (default: the scratch directory, else `/`;
    /// unconfined: the scratch directory, else the caller's).
    pub cwd: Option<PathBuf>,
}
