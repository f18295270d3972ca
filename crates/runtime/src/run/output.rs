//! Captured output of one execution: what the answer carries, and the full copy on disk.
//!
//! The answer carries whole lines up to `executionLimits.maxLogBytes`, a budget of the
//! request's that the skills it calls take from too (`super::ledger::OutputBudget`); past it,
//! a marker says how much was dropped. When output is cut, everything the code printed, up to
//! `executionLimits.maxOutputFileBytes`, is kept in `output.log` in the execution's scratch
//! directory, and both the marker and the answer's `outputFile` give its path, so an agent
//! can read the part it needs instead of printing it again.
//!
//! Scratch directories live under `$XDG_STATE_HOME/code-executor-mcp/scratch/<execution>/`
//! (`~/.local/state/...`), private to the user (directories 0700, files 0600). A directory is
//! only made when an execution's output overflows. Directories older than
//! [`SCRATCH_MAX_AGE`] and all but the newest [`KEEP_SCRATCH_DIRS`] are removed whenever a
//! new one is made.
//!
//! The file is written by the host from the frames it receives; the worker never sees the
//! host's filesystem. It holds the code's output only: whether it was cut is said by the
//! marker, which code cannot forge. The marker's level is [`HOST_LEVEL`], a level no line of
//! code's output has (theirs are `debug`, `info`, `log`, `warn` and `error`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use worker_protocol::LogLevel;

use super::ledger::OutputBudget;
use crate::outcome::LogEntry;

/// Scratch directories kept at most; the oldest beyond this are removed.
pub const KEEP_SCRATCH_DIRS: usize = 32;
/// Age after which a scratch directory is removed.
pub const SCRATCH_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// The level of entries the host adds to an execution's logs; code's output never has it.
pub const HOST_LEVEL: &str = "host";

/// Name of the full output in a scratch directory.
pub const OUTPUT_FILE: &str = "output.log";

/// The default root of scratch directories.
pub fn default_scratch_root() -> Option<PathBuf> {
    policy::audit::state_dir().map(|d| d.join("scratch"))
}

/// Where an overflowing execution's full output goes, and how much of it.
#[derive(Debug, Clone)]
pub struct Spill {
    /// The execution's scratch directory (made on first use).
    pub dir: PathBuf,
    /// Bytes of output the file holds at most.
    pub max_bytes: u64,
    /// The file is read outside any answer, so the configured secrets are taken out of
    /// each line written to it (`policy::redact`).
    pub redactor: std::sync::Arc<policy::redact::Redactor>,
}

enum FileState {
    /// No full copy is kept.
    Off,
    /// Not needed yet.
    Pending(Spill),
    Open {
        path: PathBuf,
        out: BufWriter<File>,
        written: u64,
        max_bytes: u64,
        /// The file reached its limit; later output is dropped.
        full: bool,
        redactor: std::sync::Arc<policy::redact::Redactor>,
    },
    /// Could not be written (reported in the marker).
    Failed(String),
}

/// Captured output with a byte cap; past the cap a marker says how much was dropped and,
/// when a scratch directory is configured, where the full output is.
pub struct LogCollector {
    entries: Vec<LogEntry>,
    /// Bytes left: this execution's own, or its request's (shared with the skills it calls
    /// and their callers: [`LogCollector::sharing`]).
    budget: OutputBudget,
    cap: u64,
    dropped_bytes: u64,
    truncated: bool,
    /// The worker stopped sending output at its own limit.
    worker_stopped: bool,
    file: FileState,
    /// Where each kept line is also shown while the run goes on (`wait`, tasks).
    mirror: Option<std::sync::Arc<super::events::Events>>,
    /// Personal data made tokens in every line, when code sees values (`pii`).
    pii: Option<policy::pii::Exit>,
}

/// What the answer carries: the lines, and the full output's path when it was kept.
pub struct Captured {
    pub logs: Vec<LogEntry>,
    pub file: Option<PathBuf>,
}

impl LogCollector {
    pub fn new(cap: u64, spill: Option<Spill>) -> Self {
        LogCollector {
            entries: Vec::new(),
            budget: OutputBudget::new(cap),
            cap,
            dropped_bytes: 0,
            truncated: false,
            worker_stopped: false,
            file: spill.map_or(FileState::Off, FileState::Pending),
            mirror: None,
            pii: None,
        }
    }

    /// The same collector, keeping lines while `budget` (a request's, which the skills it
    /// calls take from too) has bytes left.
    pub fn sharing(mut self, budget: OutputBudget) -> Self {
        self.budget = budget;
        self
    }

    /// The same collector, with personal data made tokens in every line it takes.
    pub fn tokenised(mut self, exit: Option<policy::pii::Exit>) -> Self {
        self.pii = exit;
        self
    }

    /// The same collector, showing each line it keeps in `events` as well.
    pub fn mirrored(mut self, events: std::sync::Arc<super::events::Events>) -> Self {
        self.mirror = Some(events);
        self
    }

    pub fn push(&mut self, level: LogLevel, mut text: String) {
        if let Some(exit) = &self.pii
            && let std::borrow::Cow::Owned(t) = exit.text(&text)
        {
            text = t;
        }
        let len = text.len() as u64;
        if self.truncated || !self.budget.take(len) {
            if !self.truncated {
                self.truncated = true;
                self.open_file();
            }
            self.dropped_bytes += len;
            self.write_line(level.as_str(), &text);
            return;
        }
        let entry = LogEntry {
            level: level.as_str(),
            text,
        };
        if let Some(events) = &self.mirror {
            events.log(&entry);
        }
        self.entries.push(entry);
    }

    pub fn truncated_by_worker(&mut self) {
        self.worker_stopped = true;
        if !self.truncated {
            self.truncated = true;
            self.open_file();
        }
    }

    /// Starts the full copy with everything kept so far.
    fn open_file(&mut self) {
        let FileState::Pending(spill) = &self.file else {
            return;
        };
        self.file = match create_output_file(&spill.dir) {
            Ok((path, file)) => FileState::Open {
                path,
                out: BufWriter::with_capacity(64 * 1024, file),
                written: 0,
                max_bytes: spill.max_bytes,
                full: false,
                redactor: spill.redactor.clone(),
            },
            Err(e) => {
                tracing::warn!("cannot keep the full output: {e}");
                FileState::Failed(e.to_string())
            }
        };
        let kept: Vec<(&'static str, String)> = self
            .entries
            .iter()
            .map(|e| (e.level, e.text.clone()))
            .collect();
        for (level, text) in kept {
            self.write_line(level, &text);
        }
    }

    fn write_line(&mut self, level: &str, text: &str) {
        let FileState::Open {
            out,
            written,
            max_bytes,
            full,
            redactor,
            ..
        } = &mut self.file
        else {
            return;
        };
        let text = &*redactor.str(text);
        if *full {
            return;
        }
        let len = text.len() as u64;
        if *written + len > *max_bytes {
            *full = true;
            return;
        }
        let res = if level == "log" {
            writeln!(out, "{text}")
        } else {
            writeln!(out, "[{level}] {text}")
        };
        match res {
            Ok(()) => *written += len,
            Err(e) => self.file = FileState::Failed(e.to_string()),
        }
    }

    pub fn finish(mut self) -> Captured {
        if !self.truncated {
            return Captured {
                logs: self.entries,
                file: None,
            };
        }
        let dropped = if self.dropped_bytes > 0 {
            format!("{} further bytes were dropped", self.dropped_bytes)
        } else {
            "later output was dropped".to_string()
        };
        let mut file = None;
        let kept = match std::mem::replace(&mut self.file, FileState::Off) {
            FileState::Off | FileState::Pending(_) => String::new(),
            FileState::Failed(e) => format!("; the full output could not be kept: {e}"),
            FileState::Open {
                path,
                mut out,
                max_bytes,
                full,
                ..
            } => {
                // The file holds only what the code printed; that it was cut is said in the
                // marker, where code cannot forge it.
                let cut = full || self.worker_stopped;
                match out.flush() {
                    Err(e) => format!("; the full output could not be kept: {e}"),
                    Ok(()) => {
                        let what = if cut {
                            format!("the first {} of the output are", size(max_bytes))
                        } else {
                            "the full output is".to_string()
                        };
                        let s = format!("; {what} in {}", path.display());
                        file = Some(path);
                        s
                    }
                }
            }
        };
        self.entries.push(LogEntry {
            level: HOST_LEVEL,
            text: format!(
                "[output truncated at the {} limit; {dropped}{kept}]",
                size(self.cap)
            ),
        });
        Captured {
            logs: self.entries,
            file,
        }
    }
}

/// A byte count as people write it: `1024 KiB`, `300 bytes`.
fn size(bytes: u64) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// Makes the execution's scratch directory (0700) and its output file (0600), after
/// removing stale scratch directories next to it.
fn create_output_file(dir: &Path) -> Result<(PathBuf, File), ScratchError> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let at = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ScratchError { path, source }
    };
    if let Some(root) = dir.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(root)
            .map_err(at(root))?;
        prune(root, KEEP_SCRATCH_DIRS.saturating_sub(1), SCRATCH_MAX_AGE);
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dir)
        .map_err(at(dir))?;
    let path = dir.join(OUTPUT_FILE);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(at(&path))?;
    Ok((path, file))
}

/// The scratch directory or the output file could not be made.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", .path.display())]
struct ScratchError {
    path: PathBuf,
    source: std::io::Error,
}

/// Removes scratch directories older than `max_age`, then the oldest beyond `keep`.
fn prune(root: &Path, keep: usize, max_age: Duration) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let now = SystemTime::now();
    let mut dirs: Vec<(SystemTime, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    dirs.sort();
    let excess = dirs.len().saturating_sub(keep);
    for (i, (modified, path)) in dirs.iter().enumerate() {
        let old = now.duration_since(*modified).unwrap_or_default() > max_age;
        if i < excess || old {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_root(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("cem-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        root
    }

    #[test]
    fn the_cap_keeps_whole_lines_and_adds_a_marker() {
        let mut logs = LogCollector::new(10, None);
        logs.push(LogLevel::Log, "12345".into());
        logs.push(LogLevel::Warn, "123456".into());
        logs.push(LogLevel::Log, "1".into());
        let out = logs.finish();
        assert_eq!(out.logs.len(), 2);
        assert_eq!(
            out.logs[0],
            LogEntry {
                level: "log",
                text: "12345".into()
            }
        );
        assert!(
            out.logs[1].text.starts_with("[output truncated")
                && out.logs[1].text.contains("7 further bytes were dropped"),
            "{:?}",
            out.logs[1]
        );
        assert!(out.file.is_none());
    }

    #[test]
    fn output_within_the_cap_makes_no_file() {
        let root = temp_root("within");
        let mut logs = LogCollector::new(
            100,
            Some(Spill {
                dir: root.join("run1"),
                max_bytes: 1000,
                redactor: Default::default(),
            }),
        );
        logs.push(LogLevel::Log, "hello".into());
        let out = logs.finish();
        assert_eq!(out.logs.len(), 1);
        assert!(out.file.is_none());
        assert!(!root.exists());
    }

    /// The full copy is read outside any answer: a configured secret code printed (one it
    /// put together from halves an upstream sent) is not in it.
    #[test]
    fn the_full_copy_holds_no_configured_secret() {
        const SECRET: &str = "ghp_joined-halves-secret";
        let root = temp_root("secret");
        let mut logs = LogCollector::new(
            4,
            Some(Spill {
                dir: root.join("run1"),
                max_bytes: 1000,
                redactor: std::sync::Arc::new(policy::redact::Redactor::new([SECRET])),
            }),
        );
        logs.push(LogLevel::Log, format!("token {SECRET}"));
        logs.push(LogLevel::Error, format!("{SECRET}!"));
        let path = logs.finish().file.unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "token [redacted]\n[error] [redacted]!\n"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn overflowing_output_is_kept_whole_in_a_private_file() {
        use std::os::unix::fs::PermissionsExt;
        let root = temp_root("overflow");
        let mut logs = LogCollector::new(
            10,
            Some(Spill {
                dir: root.join("run1"),
                max_bytes: 1000,
                redactor: Default::default(),
            }),
        );
        logs.push(LogLevel::Log, "12345".into());
        logs.push(LogLevel::Error, "123456".into());
        logs.push(LogLevel::Log, "7".into());
        let out = logs.finish();
        let path = out.file.clone().unwrap();
        assert_eq!(path, root.join("run1").join(OUTPUT_FILE));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "12345\n[error] 123456\n7\n"
        );
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&root.join("run1")), 0o700);
        let marker = &out.logs.last().unwrap().text;
        assert!(
            marker.contains(&path.display().to_string()) && marker.contains("full output"),
            "{marker}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_file_has_its_own_limit() {
        let root = temp_root("filecap");
        let mut logs = LogCollector::new(
            4,
            Some(Spill {
                dir: root.join("run1"),
                max_bytes: 8,
                redactor: Default::default(),
            }),
        );
        for _ in 0..5 {
            logs.push(LogLevel::Log, "abc".into());
        }
        let out = logs.finish();
        let text = std::fs::read_to_string(out.file.unwrap()).unwrap();
        assert_eq!(text, "abc\nabc\n", "only what the code printed");
        assert!(
            out.logs.last().unwrap().text.contains("the first 8 bytes"),
            "{:?}",
            out.logs
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn stale_and_excess_scratch_dirs_are_pruned() {
        let root = temp_root("prune");
        for i in 0..5 {
            std::fs::create_dir_all(root.join(format!("d{i}"))).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        prune(&root, 3, SCRATCH_MAX_AGE);
        let mut left: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["d2", "d3", "d4"]);
        prune(&root, 10, Duration::ZERO);
        assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
