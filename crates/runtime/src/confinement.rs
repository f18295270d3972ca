//! The sandbox policy every worker runs under (`code-executor-mcp doctor` shows it).

/// The confinement every worker gets; `exe` re-enters as the sandbox helper. `longest_ms` is
/// the longest deadline any run may have (a long run's, when that is longer).
pub fn worker_policy(
    mode: sandbox::SandboxMode,
    exe: &std::path::Path,
    longest_ms: u64,
) -> sandbox::SandboxPolicy {
    let mut policy = sandbox::SandboxPolicy::new(mode, Some(exe.to_path_buf()));
    policy.limits = sandbox::ResourceLimits {
        // CPU time is a backstop behind the host's wall-clock deadline. It is counted per
        // process over all its threads, so a run that keeps every core busy until the
        // longest deadline must stay under it: the deadline times the cores, plus a margin.
        cpu_seconds: (policy::MAX_TIMEOUT_MS.max(longest_ms) / 1000)
            * std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
            + 5,
        // A JS worker is two threads (engine and pipe reader); nothing may fork.
        max_processes: 8,
        // stdin, stdout, stderr and a few the runtime opens.
        max_open_files: 64,
        ..sandbox::ResourceLimits::default()
    };
    policy
}

/// Files looked at, at most, when collecting the extension modules below a Python
/// installation's site-packages (a worker's at start, a Python checker's per launch).
const MAX_SITE_FILES: usize = 50_000;

/// The extension modules (`*.so`, `*.so.N`) anywhere below `dirs` (site-packages), at most
/// [`MAX_SITE_FILES`] entries looked at; symlinked directories are not followed. Their
/// shared libraries go into a Python sandbox's view.
pub fn extension_modules_below(dirs: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut pending: Vec<std::path::PathBuf> = dirs.to_vec();
    let mut seen = 0usize;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_SITE_FILES {
                return out;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file()
                && path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().contains(".so"))
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}
