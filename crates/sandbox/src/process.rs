//! What the system says of a process, for the server's own figures (its memory in `/metrics`,
//! `bench`'s readings) and for telling a live process from a gone one (the approvals page's
//! link files): the one place outside the backends that knows where such facts live. On Linux
//! they come from `/proc` (`linux::facts`); elsewhere nothing is known and every answer says
//! so (`None`, or "alive" for a pid that cannot be checked, so nothing is removed on a guess).

#[cfg(target_os = "linux")]
use crate::linux::facts;

/// Which process: this one, or another by pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Me,
    Pid(u32),
}

#[cfg(target_os = "linux")]
impl Which {
    /// The pid that names it (`None`: this process).
    fn pid(self) -> Option<u32> {
        match self {
            Which::Me => None,
            Which::Pid(pid) => Some(pid),
        }
    }
}

/// Resident memory now (`VmRSS`), in bytes.
pub fn resident_bytes(which: Which) -> Option<u64> {
    #[cfg(target_os = "linux")]
    return facts::status_kib(which.pid(), "VmRSS:").map(|k| k * 1024);
    #[cfg(not(target_os = "linux"))]
    return None;
}

/// Peak resident memory (`VmHWM`), in bytes.
pub fn peak_bytes(which: Which) -> Option<u64> {
    #[cfg(target_os = "linux")]
    return facts::status_kib(which.pid(), "VmHWM:").map(|k| k * 1024);
    #[cfg(not(target_os = "linux"))]
    return None;
}

/// CPU time used so far (user and system), in clock ticks: of the process, or with `None` of
/// the whole machine (every CPU's busy time).
pub fn cpu_ticks(which: Option<Which>) -> Option<u64> {
    #[cfg(target_os = "linux")]
    return facts::cpu_ticks(which.map(Which::pid));
    #[cfg(not(target_os = "linux"))]
    return None;
}

/// Whether a process with this pid exists (any process: a pid may have been reused). Where
/// this cannot be told, true.
pub fn exists(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    return facts::exists(pid);
    #[cfg(not(target_os = "linux"))]
    return true;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_memory_and_cpu_and_exists() {
        if !cfg!(target_os = "linux") {
            eprintln!("SKIP: process facts are read from /proc, which only Linux has");
            return;
        }
        let me = std::process::id();
        let rss = resident_bytes(Which::Me).expect("own resident memory");
        assert!(rss > 1 << 20, "{rss}");
        assert!(peak_bytes(Which::Pid(me)).expect("own peak") >= rss / 2);
        assert!(cpu_ticks(Some(Which::Me)).is_some());
        assert!(cpu_ticks(None).expect("the machine's busy time") > 0);
        assert!(exists(me));
        // A pid past the kernel's largest (4194304) is no process.
        assert!(!exists(u32::MAX - 1));
        assert_eq!(resident_bytes(Which::Pid(u32::MAX - 1)), None);
    }
}
