//! Checkers are confined like workers: each checker process (one per check, or a warm
//! language server) runs inside the sandbox (`crates/sandbox`, `docs/sandbox.md`) with a view
//! that holds only
//! - its installation, read-only: a native checker's own directory (TypeScript 7's `tsc`
//!   reads its `lib.*.d.ts` there), or the interpreter it runs on (Node for `pyright` and a
//!   JavaScript `tsc`; CPython for `mypy`) with that interpreter's standard library and the
//!   checker's package, and the shared libraries all of them load;
//! - the check directory, read-only and never executable (a data path): our declarations, our
//!   configuration and the code's file;
//! - its own state directory, the one it may write: `HOME`, the XDG directories, `TMPDIR` and
//!   its caches point there.
//!
//! The parents of the check directory (`$TMPDIR`, a world-writable `/tmp`) and the user's home
//! are not in the view, so a `ty.toml`, `pyproject.toml`, `mypy.ini`, `tsconfig.json`,
//! `node_modules/@types` or virtual environment planted there cannot be read. On top, every
//! checker is given an explicit configuration of ours with the flags that stop its search
//! (see `process.rs`). It has no network, and rlimits bound its address space
//! (`check.memoryMb`), CPU time (from the check's own deadline), processes and files.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Address space a checker gets unless the settings say otherwise (`check.memoryMb`).
pub const DEFAULT_MEMORY_MB: u64 = 1024;
/// What a runtime that reserves address space up front needs beyond its heap (Node's V8: code
/// range and cages; Go: its page allocator's summaries, about 600 MiB): such a checker's
/// address space is its memory plus this, and its heap is bounded by the memory itself
/// (Node's `--max-old-space-size`, Go's `GOMEMLIMIT`).
const RUNTIME_RESERVE_BYTES: u64 = 1 << 30;
/// Threads count as processes for `RLIMIT_NPROC` (Go, rayon and Node start one per core).
const MAX_PROCESSES: u64 = 256;
const MAX_OPEN_FILES: u64 = 1024;
/// The largest file a checker may write (its caches).
const MAX_FILE_SIZE_BYTES: u64 = 256 << 20;

/// How a checker is started: the program executed, the arguments before the checker's own,
/// and the installation paths its view holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Launch {
    /// What is executed: a native checker, or the interpreter of a script.
    pub(super) program: PathBuf,
    /// Arguments before the checker's own (the interpreter's flags and the script).
    pub(super) prefix: Vec<OsString>,
    /// Read-only in the view: the installation.
    pub(super) read_only: Vec<PathBuf>,
    /// A Node program: its heap is bounded by a flag, its address space given V8's reserve.
    pub(super) node: bool,
    /// A Go program (TypeScript 7's tsc): its heap is bounded by `GOMEMLIMIT`, its address
    /// space given the runtime's reserve.
    pub(super) go: bool,
}

/// Why a checker cannot be run confined.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} is neither a native program nor a script with a `#!` line")]
    Unknown(PathBuf),
    #[error("{script} runs on `{interpreter}`, which is not on PATH")]
    NoInterpreter {
        script: PathBuf,
        interpreter: String,
    },
    #[error("{script} runs on {interpreter}, which is neither Node nor Python")]
    OtherInterpreter {
        script: PathBuf,
        interpreter: String,
    },
    #[error("cannot ask {interpreter} where its library is: {why}")]
    Probe { interpreter: PathBuf, why: String },
    #[error(
        "{path} is not reachable by the sandbox's user (the server runs as root and the \
         sandbox as 65534): install the checker where every user can read it, or name another \
         in the settings (check.typescript, check.python)"
    )]
    Unreachable { path: PathBuf },
}

/// How `program` (as found: a symlink, a launcher or the program itself) is run confined.
/// `uid_other`: the sandbox runs as another user than the server (a root host), so every path
/// must be readable by others. `reads_beside`: a native checker that reads files beside its
/// executable (TypeScript 7's tsc and its `lib.*.d.ts`).
pub(super) fn launch(
    reads_beside: bool,
    program: &Path,
    uid_other: bool,
) -> Result<Launch, LaunchError> {
    let real = std::fs::canonicalize(program).map_err(|source| LaunchError::Read {
        path: program.to_path_buf(),
        source,
    })?;
    let head = read_head(&real)?;
    let launch = if head.starts_with(b"\x7fELF") {
        Launch {
            // TypeScript 7's tsc reads its lib.*.d.ts beside it; ty is a single file.
            read_only: if reads_beside {
                real.parent().map(Path::to_path_buf).into_iter().collect()
            } else {
                Vec::new()
            },
            go: is_go(&real),
            program: real,
            prefix: Vec::new(),
            node: false,
        }
    } else if let Some(line) = head.strip_prefix(b"#!") {
        let line = String::from_utf8_lossy(line.split(|b| *b == b'\n').next().unwrap_or(&[]))
            .trim()
            .to_string();
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or("");
        // `#!/usr/bin/env node` (or `env -S node ...`): the name after env, on PATH.
        let (interpreter, name) = if first.ends_with("/env") {
            let name = words
                .find(|w| !w.starts_with('-'))
                .unwrap_or("")
                .to_string();
            let found = tools::child::on_path(&name).ok_or_else(|| LaunchError::NoInterpreter {
                script: real.clone(),
                interpreter: name.clone(),
            })?;
            (found, name)
        } else {
            let name = Path::new(first)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_string();
            (PathBuf::from(first), name)
        };
        if name.starts_with("node") {
            node_launch(&real, &interpreter)?
        } else if name.starts_with("python") {
            python_launch(&real, &interpreter, uid_other)?
        } else {
            return Err(LaunchError::OtherInterpreter {
                script: real,
                interpreter: line,
            });
        }
    } else {
        return Err(LaunchError::Unknown(real));
    };
    if uid_other {
        reachable(std::iter::once(&launch.program).chain(&launch.read_only))?;
    }
    Ok(launch)
}

fn read_head(path: &Path) -> Result<Vec<u8>, LaunchError> {
    use std::io::Read as _;
    let mut head = vec![0; 512];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|source| LaunchError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    head.truncate(n);
    Ok(head)
}

/// A Node script: Node, and the package the script belongs to (the nearest directory above
/// it with a `package.json`: the script requires its siblings).
fn node_launch(script: &Path, node: &Path) -> Result<Launch, LaunchError> {
    let node = std::fs::canonicalize(node).map_err(|source| LaunchError::Read {
        path: node.to_path_buf(),
        source,
    })?;
    let package = script
        .ancestors()
        .skip(1)
        .find(|d| d.join("package.json").is_file())
        .or_else(|| script.parent())
        .map(Path::to_path_buf)
        .into_iter()
        .collect();
    Ok(Launch {
        program: node,
        prefix: vec![script.as_os_str().to_owned()],
        read_only: package,
        node: true,
        go: false,
    })
}

/// What a Python interpreter says of itself.
#[derive(serde::Deserialize)]
struct PythonFacts {
    executable: String,
    version: (u32, u32),
    stdlib: Vec<Option<String>>,
    site: Vec<String>,
    libdir: Option<String>,
    ldlibrary: Option<String>,
}

const PYTHON_FACTS: &str = "import json, site, sys, sysconfig\n\
p = sysconfig.get_paths()\n\
print(json.dumps({'executable': sys.executable, 'version': list(sys.version_info[:2]), \
'stdlib': [p.get('stdlib'), p.get('platstdlib')] + [d for d in sys.path if d.endswith('lib-dynload')], \
'site': site.getsitepackages() if hasattr(site, 'getsitepackages') else [], \
'libdir': sysconfig.get_config_var('LIBDIR'), 'ldlibrary': sysconfig.get_config_var('LDLIBRARY')}))";

fn python_facts(interpreter: &Path, with_site: bool) -> Result<PythonFacts, LaunchError> {
    let mut cmd = std::process::Command::new(interpreter);
    cmd.arg("-I");
    if !with_site {
        cmd.arg("-S");
    }
    let out = cmd
        .args(["-c", PYTHON_FACTS])
        .env_clear()
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| LaunchError::Probe {
            interpreter: interpreter.to_path_buf(),
            why: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(LaunchError::Probe {
            interpreter: interpreter.to_path_buf(),
            why: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    serde_json::from_slice(&out.stdout).map_err(|e| LaunchError::Probe {
        interpreter: interpreter.to_path_buf(),
        why: e.to_string(),
    })
}

/// Interpreters tried when a Python checker's own cannot be reached by the sandbox (a root
/// host whose Python lives under `/root`): one of the same minor version runs the checker
/// with its site-packages as well (compiled modules need the same ABI).
const FALLBACK_PYTHONS: &[&str] = &["/usr/bin/python3", "/usr/local/bin/python3"];

/// The bootstrap that runs a Python checker: its site-packages (argv[1], `:`-separated) first
/// on the path, then the script (argv[2]) as `__main__` with the rest of the arguments. The
/// interpreter runs isolated and without `site` (`-I -S`): nothing of the environment, the
/// user's site or `.pth` files.
const PYTHON_BOOT: &str = "import sys, runpy\n\
sys.path[:0] = [p for p in sys.argv[1].split(':') if p]\n\
script = sys.argv[2]\n\
sys.argv = [script] + sys.argv[3:]\n\
runpy.run_path(script, run_name='__main__')";

/// A Python script (mypy): its interpreter (or, when the sandbox cannot reach it, one of the
/// same version it can), that interpreter's standard library and shared libraries, and the
/// site-packages of the checker's environment.
fn python_launch(
    script: &Path,
    interpreter: &Path,
    uid_other: bool,
) -> Result<Launch, LaunchError> {
    let own = python_facts(interpreter, true)?;
    let mut runner = (
        std::fs::canonicalize(&own.executable).unwrap_or(interpreter.into()),
        own.stdlib.clone(),
        own.libdir.clone(),
        own.ldlibrary.clone(),
    );
    if uid_other
        && python_paths(&runner.0, &runner.1, &runner.2, &runner.3)
            .iter()
            .any(|p| reachable(std::iter::once(p)).is_err())
    {
        let other = FALLBACK_PYTHONS.iter().find_map(|candidate| {
            let facts = python_facts(Path::new(candidate), false).ok()?;
            let exe = std::fs::canonicalize(&facts.executable).ok()?;
            let paths = python_paths(&exe, &facts.stdlib, &facts.libdir, &facts.ldlibrary);
            (facts.version == own.version && reachable(paths.iter()).is_ok()).then_some((
                exe,
                facts.stdlib,
                facts.libdir,
                facts.ldlibrary,
            ))
        });
        if let Some(other) = other {
            runner = other;
        }
    }
    let (exe, stdlib, libdir, ldlibrary) = runner;
    let site: Vec<PathBuf> = own
        .site
        .iter()
        .filter_map(|s| std::fs::canonicalize(s).ok())
        .filter(|p| p.is_dir())
        .collect();
    let mut read_only = python_paths(&exe, &stdlib, &libdir, &ldlibrary);
    read_only.retain(|p| p != &exe);
    let mut objects: Vec<PathBuf> = vec![exe.clone()];
    objects.extend(read_only.iter().filter(|p| p.is_file()).cloned());
    let dirs: Vec<PathBuf> = read_only
        .iter()
        .filter(|p| p.is_dir())
        .chain(&site)
        .cloned()
        .collect();
    objects.extend(crate::confinement::extension_modules_below(&dirs));
    for lib in sandbox::shared_libraries(&objects) {
        if !read_only.contains(&lib) {
            read_only.push(lib);
        }
    }
    for s in &site {
        if !read_only.contains(s) {
            read_only.push(s.clone());
        }
    }
    let script_dir = script.parent().map(Path::to_path_buf);
    read_only.extend(script_dir.filter(|d| !read_only.iter().any(|r| d.starts_with(r))));
    let site_arg = site
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(":");
    Ok(Launch {
        program: exe,
        prefix: vec![
            "-I".into(),
            "-S".into(),
            "-B".into(),
            "-c".into(),
            PYTHON_BOOT.into(),
            site_arg.into(),
            script.as_os_str().to_owned(),
        ],
        read_only,
        node: false,
        go: false,
    })
}

/// Whether the ELF file at `path` is a Go program (its build information's magic).
fn is_go(path: &Path) -> bool {
    const MAGIC: &[u8] = b"\xff Go buildinf:";
    std::fs::read(path).is_ok_and(|b| b.windows(MAGIC.len()).any(|w| w == MAGIC))
}

/// An interpreter's own paths: the executable, its standard library and libpython.
fn python_paths(
    exe: &Path,
    stdlib: &[Option<String>],
    libdir: &Option<String>,
    ldlibrary: &Option<String>,
) -> Vec<PathBuf> {
    let mut out = vec![exe.to_path_buf()];
    for d in stdlib.iter().flatten() {
        if let Ok(p) = std::fs::canonicalize(d)
            && p.is_dir()
            && !out.contains(&p)
        {
            out.push(p);
        }
    }
    if let (Some(dir), Some(name)) = (libdir, ldlibrary)
        && let Ok(p) = std::fs::canonicalize(Path::new(dir).join(name))
        && p.is_file()
        && !out.contains(&p)
    {
        out.push(p);
    }
    out
}

/// Every path readable by others, and its parents searchable (what the sandbox's user of a
/// root host needs).
fn reachable<'a>(paths: impl Iterator<Item = &'a PathBuf>) -> Result<(), LaunchError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.permissions().mode())
            .unwrap_or(0)
    };
    for path in paths {
        for dir in path.ancestors().skip(1) {
            if mode(dir) & 0o001 == 0 {
                return Err(LaunchError::Unreachable {
                    path: dir.to_path_buf(),
                });
            }
        }
        if mode(path) & 0o004 == 0 {
            return Err(LaunchError::Unreachable { path: path.clone() });
        }
    }
    Ok(())
}

/// Where the sandbox is, and the memory each checker gets.
#[derive(Debug, Clone)]
pub struct Confinement {
    pub mode: sandbox::SandboxMode,
    /// The binary that re-enters as the sandbox helper (the server's own).
    pub helper_exe: Option<PathBuf>,
    /// Address space of a checker (`check.memoryMb`).
    pub memory_bytes: u64,
}

impl Confinement {
    /// Whether the sandbox runs as another user than the server.
    pub(super) fn uid_other(&self) -> bool {
        self.mode == sandbox::SandboxMode::Enforce && nix::unistd::geteuid().is_root()
    }

    /// The command that runs `launch` with `args` confined: `check` the check directory
    /// (read-only), `state` the directory it may write, `cpu_seconds` its CPU time.
    pub(super) fn command(
        &self,
        launch: &Launch,
        args: Vec<OsString>,
        check: &Path,
        state: &Path,
        cpu_seconds: u64,
    ) -> Result<tokio::process::Command, sandbox::SandboxError> {
        let mut all = Vec::with_capacity(launch.prefix.len() + args.len() + 1);
        let mut address_space = self.memory_bytes;
        let mut env = env(state);
        if launch.node {
            all.push(OsString::from(format!(
                "--max-old-space-size={}",
                (self.memory_bytes >> 20).max(64)
            )));
            address_space = address_space.saturating_add(RUNTIME_RESERVE_BYTES);
        }
        if launch.go {
            env.push((
                "GOMEMLIMIT".into(),
                format!("{}MiB", self.memory_bytes >> 20).into(),
            ));
            address_space = address_space.saturating_add(RUNTIME_RESERVE_BYTES);
        }
        all.extend(launch.prefix.iter().cloned());
        all.extend(args);
        let target = sandbox::WorkerCommand {
            program: launch.program.clone(),
            args: all,
            env,
            cwd: Some(check.to_path_buf()),
        };
        let mut policy = sandbox::SandboxPolicy::new(self.mode, self.helper_exe.clone());
        policy.read_only_paths = launch.read_only.clone();
        policy.data_paths = vec![check.to_path_buf()];
        policy.scratch_dir = Some(state.to_path_buf());
        policy.limits = sandbox::ResourceLimits {
            address_space_bytes: address_space,
            cpu_seconds: cpu_seconds.max(1),
            max_processes: MAX_PROCESSES,
            max_open_files: MAX_OPEN_FILES,
            max_file_size_bytes: MAX_FILE_SIZE_BYTES,
        };
        let cmd = sandbox::command(&target, &policy)?;
        let mut cmd = tokio::process::Command::from(cmd);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        Ok(cmd)
    }
}

/// A checker's whole environment: its home, configuration, caches and temporary files in its
/// own state directory, and a PATH of nothing (no other Python or Node is found there).
pub(super) fn env(state: &Path) -> Vec<(OsString, OsString)> {
    let at = |sub: &str| state.join(sub).into_os_string();
    vec![
        ("HOME".into(), at("home")),
        ("XDG_CONFIG_HOME".into(), at("config")),
        ("XDG_CACHE_HOME".into(), at("cache")),
        ("XDG_DATA_HOME".into(), at("data")),
        ("XDG_STATE_HOME".into(), at("state")),
        ("TMPDIR".into(), at("tmp")),
        ("PATH".into(), at("bin")),
        ("LANG".into(), "C.UTF-8".into()),
    ]
}

/// Makes the state directory. The directories the environment names inside are the
/// checker's to make: in the sandbox of a root host the state directory is handed to the
/// sandbox's user, and only the directory itself.
pub(super) fn make_state(state: &Path) -> std::io::Result<()> {
    std::fs::create_dir(state)
}

/// Why a checker's process ended without an answer, in words: a signal and the limit it
/// likely means, or the sandbox's own refusal; `stderr` is quoted, `all` (everything it
/// printed) read for signs of its memory bound.
pub(super) fn ended(
    status: &std::process::ExitStatus,
    stderr: &str,
    all: &str,
    memory_mb: u64,
) -> String {
    use std::os::unix::process::ExitStatusExt;
    let tail: String = {
        let t = stderr.trim();
        let start = t.len().saturating_sub(1500);
        let start = (start..t.len())
            .find(|i| t.is_char_boundary(*i))
            .unwrap_or(t.len());
        t[start..].to_string()
    };
    match (status.signal(), status.code()) {
        (Some(9), _) => format!("the checker was killed (SIGKILL){}", said(&tail)),
        (Some(24), _) => format!("the checker used up its CPU time (SIGXCPU){}", said(&tail)),
        (Some(6), _) | (Some(11), _) => format!(
            "the checker crashed (signal {}), most likely at its memory limit of {memory_mb} MB \
             (check.memoryMb){}",
            status.signal().unwrap_or(0),
            said(&tail)
        ),
        (Some(s), _) => format!("the checker was killed by signal {s}{}", said(&tail)),
        (None, Some(c)) if c == i32::from(sandbox::EXIT_SETUP_FAILED) => {
            format!("the checker's sandbox could not be set up{}", said(&tail))
        }
        (None, Some(c)) if c == i32::from(sandbox::EXIT_EXEC_FAILED) => {
            format!(
                "the checker could not be executed in its sandbox{}",
                said(&tail)
            )
        }
        (None, Some(c)) => {
            let lower = all.to_ascii_lowercase();
            let memory = [
                "out of memory",
                "memoryerror",
                "memory allocation",
                "cannot allocate",
                "allocation failed",
                "cannot reserve",
                "failed to reserve",
            ]
            .iter()
            .any(|m| lower.contains(m));
            format!(
                "the checker ended with exit code {c}{}{}",
                if memory {
                    format!(" at its memory limit of {memory_mb} MB (check.memoryMb)")
                } else {
                    format!(
                        " (it had at most {memory_mb} MB of memory, check.memoryMb: a check \
                         that needs more ends so)"
                    )
                },
                said(&tail)
            )
        }
        (None, None) => format!("the checker ended{}", said(&tail)),
    }
}

fn said(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!(" and said: {tail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    #[test]
    fn a_checkers_end_says_why_and_names_its_bounds() {
        let said = |raw: i32, out: &str, mb: u64| ended(&ExitStatus::from_raw(raw), out, out, mb);
        assert!(said(9, "", 1024).contains("killed (SIGKILL)"));
        assert!(said(24, "", 1024).contains("CPU time (SIGXCPU)"));
        assert!(said(6, "", 512).contains("memory limit of 512 MB (check.memoryMb)"));
        let oom = said(2 << 8, "fatal error: out of memory", 100);
        assert!(
            oom.contains("at its memory limit of 100 MB") && oom.contains("out of memory"),
            "{oom}"
        );
        let other = said(2 << 8, "INTERNAL ERROR", 100);
        assert!(
            other.contains("exit code 2") && other.contains("at most 100 MB"),
            "{other}"
        );
        let setup = said(i32::from(sandbox::EXIT_SETUP_FAILED) << 8, "refusing", 1);
        assert!(setup.contains("sandbox could not be set up"), "{setup}");
    }

    #[test]
    fn a_checkers_environment_points_only_into_its_state_directory() {
        let state = Path::new("/w/state");
        for (k, v) in env(state) {
            if k != "LANG" {
                assert!(Path::new(&v).starts_with(state), "{k:?}={v:?}");
            }
        }
    }
}
