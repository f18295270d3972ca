//! Python workers: find the host's CPython once, check the sandbox can use it, and start it
//! with the embedded shim (`python_shim.py`) inside the same confinement as JavaScript workers
//! plus exactly what the interpreter needs, read-only: its standard library (with
//! `lib-dynload`) and the shared libraries of the interpreter and its extension modules. Its
//! site-packages directories are in the view only with `--python-site-packages`; without it,
//! those inside the standard library (a pyenv or source build keeps `site-packages` there) are
//! shown empty.
//!
//! Finding the interpreter runs it once (to ask for its real executable and library paths), so
//! it happens in the background after start: the first `tools/list` never waits for it, and a
//! missing or unusable Python only affects `execute_python`, with the reason.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::OnceCell;

use super::pool::{MemoryBudget, Pool, PoolSizing, PoolStats};
use super::process::{Language, Preamble, WorkerSpawner, worker_env};
pub use super::python_error::{MIN_VERSION, PYTHON_ENV, ProbeError, PythonError};

/// Environment variable that enables site-packages when set to `1` (same as `--python-site-packages`).
pub const SITE_PACKAGES_ENV: &str = "CODE_EXECUTOR_PYTHON_SITE_PACKAGES";
/// The shim, embedded in the binary, with the table of error classes both languages share
/// ([`worker_protocol::CallError::table_json`]) in place of its placeholder.
pub static SHIM: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    // A JSON string literal is a Python string literal too.
    let table = serde_json::Value::String(worker_protocol::CallError::table_json()).to_string();
    include_str!("python_shim.py").replacen("\"__CALL_ERRORS__\"", &table, 1)
});
/// `-c` program: runs the shim as compiled by the probe, read from stdin before anything else
/// (see [`preamble`]: the interpreter's bytecode magic and the marshalled code, then the
/// source), which saves compiling it in every worker (about 12 ms). If the magic is not this
/// interpreter's (it was replaced since the probe), it compiles the source instead. The name
/// `<shim>` lets tracebacks tell its frames from the user's `code.py`. (The shim was passed as
/// arguments before: CPython decodes every argument to wide characters and back at its start,
/// about 4 ms for the shim's 230 KB.)
const BOOTSTRAP: &str = "import os,marshal,_frozen_importlib_external as f
def r(n):
 b=bytearray()
 while len(b)<n:
  c=os.read(0,n-len(b))
  if not c:raise SystemExit('the host closed stdin before the shim was read')
  b+=c
 return bytes(b)
c=r(int.from_bytes(r(4),'big'));s=r(int.from_bytes(r(4),'big'))
exec(marshal.loads(c[4:]) if c[:4]==f.MAGIC_NUMBER else compile(s,'<shim>','exec'))";
/// Time the interpreter gets to answer the start-up question about its paths.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// Processes and threads a Python worker may have: the interpreter, its protocol reader,
/// asyncio's helper threads and a few subprocesses; bounds a fork bomb.
pub const PYTHON_MAX_PROCESSES: u64 = 16;
/// Candidates tried in order when no interpreter is configured.
const DEFAULT_CANDIDATES: &[&str] = &["python3", "/usr/bin/python3", "/usr/local/bin/python3"];
/// Asked of each candidate (run as the workers run: `-I -S`): where its executable, standard
/// library (`sys.path` without site: the stdlib and `lib-dynload`), shared libpython and
/// site-packages (the interpreter's and the user's) are. A venv's python is its base
/// interpreter plus the venv's site-packages (and the base's with
/// `include-system-site-packages`), found from `pyvenv.cfg` as `site` would, without running
/// `site` (which would run `.pth` files). It also compiles the shim (argv[1]) for the
/// workers' `BOOTSTRAP` (base64 in the answer).
const PROBE: &str = r#"import binascii, json, marshal, os, site, sys, sysconfig
import _frozen_importlib_external as f
p = sysconfig.get_paths()
site_dirs = site.getsitepackages()
exe_dir = os.path.dirname(os.path.abspath(sys.executable))
for d in (exe_dir, os.path.dirname(exe_dir)):
    cfg = os.path.join(d, "pyvenv.cfg")
    if os.path.isfile(cfg):
        venv, system = os.path.dirname(exe_dir), False
        with open(cfg, encoding="utf-8") as fh:
            for line in fh:
                k, _, v = line.partition("=")
                if k.strip().lower() == "include-system-site-packages":
                    system = v.strip().lower() == "true"
        scheme = "venv" if "venv" in sysconfig.get_scheme_names() else "posix_prefix"
        v = sysconfig.get_paths(scheme, vars={"base": venv, "platbase": venv})
        p = dict(p, purelib=v.get("purelib"), platlib=v.get("platlib"))
        site_dirs = site.getsitepackages([venv]) + (site_dirs if system else [])
        break
try:
    code = f.MAGIC_NUMBER + marshal.dumps(compile(sys.argv[1], "<shim>", "exec"))
except SyntaxError:  # too old for the shim: the version check below says so
    code = b""
shared = sysconfig.get_config_var("Py_ENABLE_SHARED")
try:
    user = [site.getusersitepackages()]
except Exception:
    user = []
print(json.dumps({
    "executable": sys.executable,
    "version": [sys.version_info[0], sys.version_info[1], sys.version_info[2]],
    "stdlib": [p.get("stdlib"), p.get("platstdlib")] + sys.path,
    "libdir": sysconfig.get_config_var("LIBDIR") if shared else None,
    "ldlibrary": sysconfig.get_config_var("LDLIBRARY") if shared else None,
    "site": list(dict.fromkeys([p.get("purelib"), p.get("platlib")] + site_dirs)),
    "user_site": user,
    "shim": binascii.b2a_base64(code, newline=False).decode(),
}))"#;

/// How Python executions are configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PythonOptions {
    /// The interpreter (`--python` / `CODE_EXECUTOR_PYTHON`); else the first usable candidate.
    pub interpreter: Option<PathBuf>,
    /// Pre-started Python workers.
    pub pool_size: usize,
    /// `pool_size` was chosen: without a `poolMax` the pool keeps exactly that many.
    pub pool_size_pinned: bool,
    /// Make the interpreter's site-packages importable (read-only).
    pub site_packages: bool,
}

/// A usable interpreter, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonInstall {
    /// The real executable (symlinks resolved).
    pub executable: PathBuf,
    pub version: String,
    /// Standard library directories the worker must read (the stdlib and `lib-dynload`).
    pub library_dirs: Vec<PathBuf>,
    /// Shared libraries the interpreter and the extension modules of `library_dirs` load, as
    /// the loader opens them (libpython, libc, libssl, libffi, ...).
    pub shared_libraries: Vec<PathBuf>,
    /// Existing site-packages directories of the interpreter.
    pub site_packages: Vec<PathBuf>,
    /// Existing user site-packages directory (`~/.local/lib/pythonX.Y/site-packages`), never
    /// importable (workers run isolated) and hidden should it be inside the view.
    pub user_site: Vec<PathBuf>,
    /// The shim compiled by this interpreter: its bytecode magic, then the marshalled code.
    pub compiled_shim: Vec<u8>,
}

#[derive(Deserialize)]
struct ProbeAnswer {
    executable: String,
    version: (u32, u32, u32),
    stdlib: Vec<Option<String>>,
    libdir: Option<String>,
    ldlibrary: Option<String>,
    site: Vec<Option<String>>,
    #[serde(default)]
    user_site: Vec<Option<String>>,
    shim: String,
}

/// Finds the interpreter: the configured one, or the first usable default candidate. With
/// `sandbox_uid_other` (the host runs as root and the sandbox drops to an unprivileged uid), every
/// path must be readable by others, or the sandbox could not use it.
pub fn resolve(
    configured: Option<&Path>,
    sandbox_uid_other: bool,
) -> Result<PythonInstall, PythonError> {
    let candidates: Vec<PathBuf> = match configured {
        Some(p) => vec![p.to_path_buf()],
        None => DEFAULT_CANDIDATES.iter().map(PathBuf::from).collect(),
    };
    let mut reasons = Vec::new();
    for candidate in &candidates {
        match probe(candidate).and_then(|i| check_access(i, sandbox_uid_other)) {
            Ok(install) => return Ok(install),
            Err(e) => reasons.push((candidate.clone(), e)),
        }
    }
    Err(PythonError::NoInterpreter(reasons))
}

fn probe(candidate: &Path) -> Result<PythonInstall, ProbeError> {
    // Run with the server's environment: the interpreter is the user's choice, and launchers
    // such as pyenv's shims need PATH and HOME to find the real executable.
    let mut child = std::process::Command::new(candidate)
        .args(["-I", "-S", "-c", PROBE, SHIM.as_str()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| ProbeError::Run(e.to_string()))?;
    // The answer (with the compiled shim) outgrows a pipe's buffer: read while waiting.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > PROBE_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ProbeError::NoAnswer(PROBE_TIMEOUT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(ProbeError::Wait(e.to_string())),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if !status.success() {
        return Err(ProbeError::Failed {
            status: status.to_string(),
            stderr: String::from_utf8_lossy(&stderr).trim().to_string(),
        });
    }
    let answer: ProbeAnswer =
        serde_json::from_slice(&stdout).map_err(|e| ProbeError::Answer(e.to_string()))?;
    let (major, minor, patch) = answer.version;
    if (major, minor) < MIN_VERSION {
        return Err(ProbeError::TooOld(major, minor));
    }
    if answer.executable.is_empty() {
        return Err(ProbeError::NoExecutable);
    }
    use base64::Engine;
    let compiled_shim = base64::engine::general_purpose::STANDARD
        .decode(&answer.shim)
        .map_err(|e| ProbeError::Shim(e.to_string()))?;
    let executable = std::fs::canonicalize(&answer.executable).map_err(|e| ProbeError::Path {
        path: answer.executable.clone(),
        error: e.to_string(),
    })?;
    let existing = |paths: Vec<Option<String>>| -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for p in paths.into_iter().flatten() {
            if let Ok(p) = std::fs::canonicalize(p)
                && p.is_dir()
                && !out.contains(&p)
            {
                out.push(p);
            }
        }
        out
    };
    let site_packages = existing(answer.site);
    let user_site = existing(answer.user_site);
    // The stdlib and sys.path without site (lib-dynload); never a site directory itself.
    let library_dirs: Vec<PathBuf> = existing(answer.stdlib)
        .into_iter()
        .filter(|d| !site_packages.contains(d) && !user_site.contains(d))
        .collect();
    // The shared libpython, when there is one, is needed whichever way the loader finds it.
    let libpython = match (answer.libdir, answer.ldlibrary) {
        (Some(dir), Some(name)) => std::fs::canonicalize(Path::new(&dir).join(name))
            .ok()
            .filter(|p| p.is_file()),
        _ => None,
    };
    let mut objects = vec![executable.clone()];
    objects.extend(libpython.iter().cloned());
    objects.extend(extension_modules(&library_dirs));
    let mut shared_libraries = sandbox::shared_libraries(&objects);
    if let Some(lib) = libpython
        && !shared_libraries.contains(&lib)
    {
        shared_libraries.push(lib);
    }
    Ok(PythonInstall {
        executable,
        version: format!("{major}.{minor}.{patch}"),
        library_dirs,
        shared_libraries,
        site_packages,
        user_site,
        compiled_shim,
    })
}

/// The extension modules (`*.so`) directly in `dirs` (the stdlib keeps them in `lib-dynload`;
/// subdirectories are not searched, which keeps site-packages inside the stdlib out).
fn extension_modules(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "so") && path.is_file() {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Reads a child's pipe to its end on a thread of its own.
fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// With the sandbox running code as an unprivileged uid, every directory on the way to the
/// interpreter and its library must be searchable by others, and the files readable.
fn check_access(
    install: PythonInstall,
    sandbox_uid_other: bool,
) -> Result<PythonInstall, ProbeError> {
    if !sandbox_uid_other {
        return Ok(install);
    }
    let mode_of = |p: &Path| -> Result<u32, ProbeError> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p)
            .map(|m| m.permissions().mode())
            .map_err(|e| ProbeError::Path {
                path: p.display().to_string(),
                error: e.to_string(),
            })
    };
    let mut paths = vec![install.executable.clone()];
    paths.extend(install.library_dirs.iter().cloned());
    paths.extend(install.shared_libraries.iter().cloned());
    for path in &paths {
        for dir in path.ancestors().skip(1) {
            if mode_of(dir)? & 0o001 == 0 {
                return Err(ProbeError::NotSearchable(dir.to_path_buf()));
            }
        }
        if mode_of(path)? & 0o004 == 0 {
            return Err(ProbeError::NotReadable(path.clone()));
        }
    }
    Ok(install)
}

/// The worker command and policy for `install`: the view holds the standard library and the
/// shared libraries; with `site_packages`, also the site-packages directories and the shared
/// libraries their extension modules load (found here, once: this walks site-packages);
/// without, site directories inside the standard library are shown empty.
pub fn spawner(
    install: &PythonInstall,
    mut policy: sandbox::SandboxPolicy,
    site_packages: bool,
) -> WorkerSpawner {
    policy.limits.max_processes = PYTHON_MAX_PROCESSES;
    policy
        .read_only_paths
        .extend(install.library_dirs.iter().cloned());
    policy
        .read_only_paths
        .extend(install.shared_libraries.iter().cloned());
    policy
        .hidden_paths
        .extend(install.user_site.iter().cloned());
    let mut args: Vec<OsString> = ["-I", "-S", "-B", "-c", BOOTSTRAP]
        .iter()
        .map(OsString::from)
        .collect();
    if site_packages {
        policy
            .read_only_paths
            .extend(install.site_packages.iter().cloned());
        let modules = crate::confinement::extension_modules_below(&install.site_packages);
        if !modules.is_empty() {
            for lib in sandbox::shared_libraries(&modules) {
                if !policy.read_only_paths.contains(&lib) {
                    policy.read_only_paths.push(lib);
                }
            }
        }
        args.extend(
            install
                .site_packages
                .iter()
                .map(|p| p.as_os_str().to_owned()),
        );
    } else {
        policy
            .hidden_paths
            .extend(install.site_packages.iter().cloned());
    }
    let command = sandbox::WorkerCommand {
        program: install.executable.clone(),
        args,
        env: python_env(),
        cwd: None,
    };
    WorkerSpawner {
        language: Language::Python,
        template: super::template::TemplateSlot::for_spawner(&command, &policy),
        command,
        policy,
        preamble: Some(Preamble(preamble(&install.compiled_shim, &SHIM))),
        warm_env: vec![(WARM_ENV.into(), "asyncio".into())],
    }
}

/// Modules a worker started ahead imports before `ready` (comma-separated; the shim takes it
/// out of the environment code sees): set while the pool's recent code used asyncio
/// ([`uses_asyncio`]), whose import (10-20 ms) a worker started less than 2 s before its
/// run has not done yet (later it imports it while idle anyway).
const WARM_ENV: &str = "CODE_EXECUTOR_WARM";

/// Whether Python code (likely) runs asyncio: it awaits at top level or names the module.
/// A false positive costs only a warmer pool.
pub fn uses_asyncio(code: &str) -> bool {
    code.contains("await") || code.contains("asyncio")
}

/// A Python worker's environment: [`worker_env`], plus glibc's allocator told to keep large
/// blocks in its heap. By default every block over 128 KiB is its own `mmap`, returned with
/// `munmap` when freed, so each of the strings a large value becomes on its way (the frame's
/// bytes, the decoded text, the value, the encoded result) is faulted in page by page afresh,
/// in a process that lives for one execution: a third of a 5 MB result's time in the worker.
/// With the blocks in the heap, a freed one is reused by the next; the heap is trimmed only
/// above 128 MiB free, so a session's worker still gives back what a big step took.
fn python_env() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let mut env = worker_env();
    env.push((
        "GLIBC_TUNABLES".into(),
        "glibc.malloc.mmap_threshold=67108864:glibc.malloc.trim_threshold=134217728".into(),
    ));
    env
}

/// What a worker reads from stdin before its first frame (`BOOTSTRAP`): the compiled shim and
/// the shim's source, each after its length (4 bytes, big-endian).
fn preamble(compiled: &[u8], source: &str) -> Arc<[u8]> {
    let mut out = Vec::with_capacity(8 + compiled.len() + source.len());
    for part in [compiled, source.as_bytes()] {
        out.extend_from_slice(&(part.len() as u32).to_be_bytes());
        out.extend_from_slice(part);
    }
    out.into()
}

/// The Python side of the runtime: the interpreter is resolved and the pool started in the
/// background; executions wait for that once.
#[derive(Clone)]
pub struct PythonRuntime {
    inner: Arc<Inner>,
}

struct Inner {
    options: PythonOptions,
    policy: sandbox::SandboxPolicy,
    sizing: PoolSizing,
    budget: Arc<MemoryBudget>,
    ready: OnceCell<Result<(PythonInstall, Pool), PythonError>>,
}

impl PythonRuntime {
    /// Starts resolving the interpreter and filling the pool (needs a tokio runtime).
    pub fn start(
        options: PythonOptions,
        policy: sandbox::SandboxPolicy,
        sizing: PoolSizing,
        budget: Arc<MemoryBudget>,
    ) -> Self {
        let rt = PythonRuntime {
            inner: Arc::new(Inner {
                options,
                policy,
                sizing,
                budget,
                ready: OnceCell::new(),
            }),
        };
        let warm = rt.clone();
        tokio::spawn(async move {
            if let Err(e) = warm.pool().await {
                tracing::warn!("Python executions are unavailable: {e}");
            }
        });
        rt
    }

    async fn init(&self) -> Result<(PythonInstall, Pool), PythonError> {
        let configured = self.inner.options.interpreter.clone();
        let uid_other = self.inner.policy.mode == sandbox::SandboxMode::Enforce
            && nix::unistd::geteuid().is_root();
        let install =
            tokio::task::spawn_blocking(move || resolve(configured.as_deref(), uid_other))
                .await
                .map_err(|e| PythonError::Lookup(e.to_string()))??;
        tracing::info!(
            python = %install.executable.display(),
            version = %install.version,
            "Python workers ready to start"
        );
        // With site-packages this walks them once (for their extension modules' libraries).
        let (policy, site_packages) = (self.inner.policy.clone(), self.inner.options.site_packages);
        let for_spawner = install.clone();
        let spawner =
            tokio::task::spawn_blocking(move || spawner(&for_spawner, policy, site_packages))
                .await
                .map_err(|e| PythonError::View(e.to_string()))?;
        let pool = Pool::start(spawner, self.inner.sizing, self.inner.budget.clone());
        Ok((install, pool))
    }

    /// The pool, once the interpreter is known; the reason when there is none.
    pub async fn pool(&self) -> Result<&Pool, PythonError> {
        match self.inner.ready.get_or_init(|| self.init()).await {
            Ok((_, pool)) => Ok(pool),
            Err(e) => Err(e.clone()),
        }
    }

    /// The interpreter, if it has been resolved.
    pub fn install(&self) -> Option<&PythonInstall> {
        match self.inner.ready.get() {
            Some(Ok((install, _))) => Some(install),
            _ => None,
        }
    }

    pub async fn stats(&self) -> PoolStats {
        match self.inner.ready.get() {
            Some(Ok((_, pool))) => pool.stats().await,
            other => PoolStats {
                language: Language::Python.name(),
                ready: 0,
                target: self.inner.sizing.min,
                min: self.inner.sizing.min,
                max: self.inner.sizing.max,
                peak_target: self.inner.sizing.min,
                started: 0,
                start_failures: 0,
                misses: 0,
                grown: 0,
                shrunk: 0,
                memory_bytes: 0,
                last_error: match other {
                    Some(Err(e)) => Some(e.to_string()),
                    _ => Some("the interpreter is still being looked up".into()),
                },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shim_refuses_values_past_the_depth_the_host_decodes() {
        let line = format!("\nMAX_VALUE_DEPTH = {}\n", worker_protocol::MAX_VALUE_DEPTH);
        assert!(
            SHIM.contains(&line),
            "the shim's MAX_VALUE_DEPTH is the protocol's"
        );
    }

    #[test]
    fn a_missing_interpreter_is_refused_with_the_remedy() {
        let err = resolve(Some(Path::new("/nonexistent/python3")), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/python3: cannot run it"), "{err}");
        assert!(err.contains("--python PATH"), "{err}");
    }

    #[test]
    fn a_non_python_program_is_refused() {
        let err = resolve(Some(Path::new("/bin/true")), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unexpected answer"), "{err}");
    }

    #[test]
    fn the_system_interpreter_resolves_to_a_real_file_with_its_stdlib() {
        let Ok(install) = resolve(Some(Path::new("/usr/bin/python3")), true) else {
            eprintln!("SKIP: no /usr/bin/python3 on this machine");
            return;
        };
        assert!(install.executable.is_file(), "{install:?}");
        assert!(
            install
                .library_dirs
                .iter()
                .any(|d| d.join("os.py").is_file()),
            "{install:?}"
        );
    }

    /// The first frame a worker started with `compiled` and `source` sends.
    fn first_frame(install: &PythonInstall, compiled: &[u8], source: &str) -> String {
        use std::io::{Read, Write};
        let mut child = std::process::Command::new(&install.executable)
            .args(["-I", "-S", "-B", "-c", BOOTSTRAP])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let bytes = preamble(compiled, source);
        // More than a pipe holds: written while the worker reads.
        let writer = std::thread::spawn(move || {
            stdin.write_all(&bytes).unwrap();
            stdin
        });
        let mut out = child.stdout.take().unwrap();
        let mut len = [0u8; 4];
        out.read_exact(&mut len).unwrap();
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        out.read_exact(&mut body).unwrap();
        drop(writer.join().unwrap()); // EOF: the worker exits
        child.wait().unwrap();
        String::from_utf8(body).unwrap()
    }

    #[test]
    fn workers_run_the_shim_the_probe_compiled_or_compile_it_when_that_does_not_fit() {
        let Ok(install) = resolve(Some(Path::new("/usr/bin/python3")), false) else {
            eprintln!("SKIP: no /usr/bin/python3 on this machine");
            return;
        };
        assert!(install.compiled_shim.len() > 1000, "{}", install.version);
        // The compiled shim runs; the source is not looked at.
        let ready = first_frame(&install, &install.compiled_shim, "raise SystemExit(3)");
        assert!(ready.contains(r#""type":"ready""#), "{ready}");
        // Bytecode of another interpreter (another magic number): the source is compiled.
        let ready = first_frame(&install, &[0; 9], &SHIM);
        assert!(ready.contains(r#""type":"ready""#), "{ready}");
        // The shim is not an argument: CPython's start would decode it (about 4 ms).
        let spawner = spawner(
            &install,
            sandbox::SandboxPolicy::new(sandbox::SandboxMode::Enforce, None),
            false,
        );
        let argv: usize = spawner.command.args.iter().map(|a| a.len()).sum();
        assert!(argv < 4096, "{argv} bytes of arguments");
    }

    #[test]
    fn a_worker_whose_stdin_closes_before_the_shim_says_so() {
        let Ok(install) = resolve(Some(Path::new("/usr/bin/python3")), false) else {
            eprintln!("SKIP: no /usr/bin/python3 on this machine");
            return;
        };
        let out = std::process::Command::new(&install.executable)
            .args(["-I", "-S", "-B", "-c", BOOTSTRAP])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("closed stdin before the shim"),
            "{out:?}"
        );
    }

    #[test]
    fn site_packages_are_bound_and_passed_only_when_enabled_and_hidden_otherwise() {
        let install = PythonInstall {
            executable: "/usr/bin/python3.11".into(),
            version: "3.11.2".into(),
            library_dirs: vec!["/opt/py/lib/python3.11".into()],
            shared_libraries: vec!["/lib/x86_64-linux-gnu/libc.so.6".into()],
            site_packages: vec!["/opt/py/lib/python3.11/site-packages".into()],
            user_site: vec!["/home/u/.local/lib/python3.11/site-packages".into()],
            compiled_shim: vec![0; 4],
        };
        let policy = sandbox::SandboxPolicy::new(sandbox::SandboxMode::Enforce, None);
        let off = spawner(&install, policy.clone(), false);
        assert_eq!(
            off.policy.read_only_paths,
            [
                PathBuf::from("/opt/py/lib/python3.11"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6")
            ]
        );
        assert_eq!(
            off.policy.hidden_paths,
            [
                PathBuf::from("/home/u/.local/lib/python3.11/site-packages"),
                PathBuf::from("/opt/py/lib/python3.11/site-packages")
            ]
        );
        assert_eq!(off.command.args.len(), 5);
        assert_eq!(off.policy.limits.max_processes, PYTHON_MAX_PROCESSES);
        let on = spawner(&install, policy, true);
        assert_eq!(
            on.policy.read_only_paths,
            [
                PathBuf::from("/opt/py/lib/python3.11"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/opt/py/lib/python3.11/site-packages")
            ]
        );
        assert_eq!(
            on.policy.hidden_paths,
            [PathBuf::from("/home/u/.local/lib/python3.11/site-packages")]
        );
        assert_eq!(
            on.command.args.last(),
            Some(&OsString::from("/opt/py/lib/python3.11/site-packages"))
        );
    }

    #[test]
    fn the_view_of_the_system_interpreter_is_its_stdlib_and_libraries_without_site_packages() {
        let Ok(install) = resolve(Some(Path::new("/usr/bin/python3")), false) else {
            eprintln!("SKIP: no /usr/bin/python3 on this machine");
            return;
        };
        // No site directory is a library directory, and none is below one unless hidden.
        let off = spawner(
            &install,
            sandbox::SandboxPolicy::new(sandbox::SandboxMode::Enforce, None),
            false,
        );
        for site in &install.site_packages {
            assert!(!install.library_dirs.contains(site), "{install:?}");
            if install.library_dirs.iter().any(|d| site.starts_with(d)) {
                assert!(off.policy.hidden_paths.contains(site), "{install:?}");
            }
        }
        // No directory of system libraries as a whole: libraries are files.
        for dir in ["/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/local/lib"] {
            assert!(
                !off.policy.read_only_paths.contains(&PathBuf::from(dir)),
                "{:?}",
                off.policy.read_only_paths
            );
        }
        let names: Vec<String> = install
            .shared_libraries
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        assert!(names.iter().any(|n| n.starts_with("libc.so")), "{names:?}");
        // lib-dynload's modules need more than the interpreter links (e.g. _ssl: libssl).
        if install
            .library_dirs
            .iter()
            .any(|d| d.join("lib-dynload").is_dir() || d.ends_with("lib-dynload"))
            && extension_modules(&install.library_dirs)
                .iter()
                .any(|m| m.to_string_lossy().contains("_ssl."))
        {
            assert!(
                names.iter().any(|n| n.starts_with("libssl.so")),
                "{names:?}"
            );
        }
        for lib in &install.shared_libraries {
            assert!(lib.is_file(), "{lib:?}");
        }
    }
}
