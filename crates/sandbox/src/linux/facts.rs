//! Process facts from `/proc` (see `crate::process`). A process is named by its `/proc`
//! entry: `None` for this one (`self`), else its pid.

fn proc_path(pid: Option<u32>, file: &str) -> String {
    match pid {
        None => format!("/proc/self/{file}"),
        Some(pid) => format!("/proc/{pid}/{file}"),
    }
}

/// A `kB` line of `/proc/<pid>/status` (`VmRSS:`, `VmHWM:`).
pub(crate) fn status_kib(pid: Option<u32>, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(proc_path(pid, "status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// utime + stime of the process (`/proc/<pid>/stat`), or the machine's busy time
/// (`/proc/stat`'s first line without idle and iowait).
pub(crate) fn cpu_ticks(process: Option<Option<u32>>) -> Option<u64> {
    match process {
        Some(pid) => {
            let stat = std::fs::read_to_string(proc_path(pid, "stat")).ok()?;
            // After the command's closing parenthesis: state is field 3, utime 14, stime 15.
            let rest = stat.rsplit_once(')')?.1;
            let f: Vec<u64> = rest
                .split_whitespace()
                .map(|x| x.parse().unwrap_or(0))
                .collect();
            Some(f.get(11)? + f.get(12)?)
        }
        None => {
            let stat = std::fs::read_to_string("/proc/stat").ok()?;
            let cpu: Vec<u64> = stat
                .lines()
                .next()?
                .split_whitespace()
                .skip(1)
                .map(|x| x.parse().unwrap_or(0))
                .collect();
            // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
            Some(
                cpu.iter().take(8).sum::<u64>()
                    - cpu.get(3).copied().unwrap_or(0)
                    - cpu.get(4).copied().unwrap_or(0),
            )
        }
    }
}

pub(crate) fn exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}
