//! The sandbox policy every worker runs under (`code-executor-mcp doctor` shows it).

use crate::policy;

/// The confinement every worker gets; `exe` re-enters as the sandbox helper. `longest_ms` is
/// the longest deadline any run may have (a long run's, when that is longer).
pub(crate) fn worker_policy(
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
