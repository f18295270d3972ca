//! cgroup v2: detection only. Memory and process counts are already bounded per process by
//! rlimits (step 8); a delegated cgroup would bound the sandbox as a whole. This reports whether
//! the host offers one so `doctor` can say so; applying it is future work (docs/sandbox.md).

use std::path::PathBuf;

/// Whether this process sits in a cgroup v2 directory it may write with the memory and pids
/// controllers available, and a sentence saying what was found.
pub(crate) fn status() -> (bool, String) {
    let Some(mount) = cgroup2_mount() else {
        return (false, "no cgroup v2 hierarchy mounted".into());
    };
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let Some(rel) = own.lines().find_map(|l| l.strip_prefix("0::")) else {
        return (false, "this process is in no cgroup v2 group".into());
    };
    let dir = mount.join(rel.trim_start_matches('/'));
    let controllers = std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
    let has = |c: &str| controllers.split_whitespace().any(|x| x == c);
    if !has("memory") || !has("pids") {
        return (
            false,
            format!(
                "cgroup {} lacks the memory and pids controllers (found: {:?})",
                dir.display(),
                controllers.trim()
            ),
        );
    }
    if nix::unistd::access(&dir, nix::unistd::AccessFlags::W_OK).is_err() {
        return (
            false,
            format!("cgroup {} is not writable (not delegated)", dir.display()),
        );
    }
    (
        true,
        format!("delegated cgroup {} with memory and pids", dir.display()),
    )
}

fn cgroup2_mount() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mounts.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        left.split_whitespace().nth(4).map(PathBuf::from)
    })
}
