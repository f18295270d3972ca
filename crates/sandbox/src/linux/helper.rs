//! The helper: the numbered, fail-closed sequence of `docs/sandbox.md`, run in three processes.
//!
//! - the outer helper (host PID namespace, leader of the worker's process group) reads the
//!   configuration, leaves host root, makes the namespaces, forks the init and mirrors its end;
//! - the init (PID 1 of the new PID namespace) builds the filesystem view, forks the payload
//!   process, forwards signals to it, reaps, and reports the payload's end to the outer helper;
//!   when it exits the kernel kills everything left in the namespace;
//! - the payload process sets rlimits, no_new_privs, drops capabilities, applies Landlock and
//!   seccomp, and executes the payload.
//!
//! Every step either succeeds or stops the sequence with a [`SetupError`] naming its layer: the
//! helper prints it to stderr and exits with [`EXIT_SETUP_FAILED`]. Nothing is executed with a
//! required layer missing.

use std::ffi::{CString, OsString};
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::prctl;
use nix::sys::resource::{Resource, setrlimit};
use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{self, ForkResult, Gid, Pid, Uid};

use crate::error::InvocationError;
use crate::error::SetupError;
use crate::linux::config::HelperConfig;
use crate::linux::layers::{format_line, layer, remedy};
use crate::linux::spawn::{HOST_PID_ARG, TEMPLATE_ARG, UNCONFINED_ARG, config_from_env};
use crate::linux::{landlock, limits, mounts, namespaces, seccomp};
use crate::policy::{EXIT_BAD_INVOCATION, EXIT_EXEC_FAILED, EXIT_SETUP_FAILED, HELPER_ARG};

/// Layer lines on stdout in probe mode; silent otherwise (stdout belongs to the payload).
pub(crate) struct Reporter {
    probe: bool,
}

impl Reporter {
    pub fn layer(&self, name: &str, enforced: bool, detail: &str) {
        if self.probe {
            // Written straight to fd 1, unbuffered, so nothing is duplicated by a later fork.
            let _ = unistd::write(
                std::io::stdout().as_fd(),
                format_line(name, enforced, detail).as_bytes(),
            );
        }
    }
}

// A payload the helper can run in its own process: given the payload's arguments, it runs
// the payload and returns its exit code, or returns `None` for a payload it does not know
// (which is then executed as usual).
use crate::backend::InlinePayload;

/// Whether the payload program is this very binary (then an [`InlinePayload`] may run it
/// without a second `execve`); decided before any namespace changes what paths mean.
static SELF_PAYLOAD: std::sync::OnceLock<Option<InlinePayload>> = std::sync::OnceLock::new();

/// The init of a template (`linux::template::init`), given by the backend: the helper does
/// not name the template's module, which builds on this one.
pub(crate) type TemplateInit =
    fn(&HelperConfig, &Reporter, OwnedFd, Vec<mounts::GrantedTree>) -> ExitCode;

pub(crate) fn main_with(inline: Option<InlinePayload>, template: TemplateInit) -> ExitCode {
    let (config, mode) = match start() {
        Ok(started) => started,
        Err(message) => {
            let _ = writeln!(
                std::io::stderr(),
                "code-executor-mcp sandbox helper: {message}"
            );
            return ExitCode::from(EXIT_BAD_INVOCATION);
        }
    };
    let out = Reporter {
        probe: config.probe,
    };
    let is_self = config
        .program
        .as_deref()
        .is_some_and(|p| std::fs::read_link("/proc/self/exe").is_ok_and(|me| me == p));
    let _ = SELF_PAYLOAD.set(inline.filter(|_| is_self));
    match mode {
        Mode::Unconfined => return run_unconfined(&config),
        Mode::Confined => {}
        Mode::Template => {
            return match outer(&config, &out, Some(template)) {
                Ok(code) => code,
                Err(e) => fail(&out, &e),
            };
        }
    }
    match outer(&config, &out, None) {
        Ok(code) => code,
        Err(e) => fail(&out, &e),
    }
}

/// What the helper was started for (its third argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Every layer, then one payload.
    Confined,
    /// Session, parent-death signal and descriptors only, then the program.
    Unconfined,
    /// A template (see `linux::template`): the shared namespaces and view, then a worker
    /// forked for each request on stdin.
    Template,
}

pub(super) fn fail(out: &Reporter, e: &SetupError) -> ExitCode {
    out.layer(e.layer, false, &e.reason);
    let _ = writeln!(
        std::io::stderr(),
        "code-executor-mcp sandbox: refusing to run code: layer `{}` could not be applied: {}; {}",
        e.layer,
        e.reason,
        remedy(e.layer)
    );
    ExitCode::from(EXIT_SETUP_FAILED)
}

/// Step 1: what a `pre_exec` hook in the host once did, then the configuration. The host
/// starts the helper with `posix_spawn` (see `spawn::helper_command`): `<helper> __sandbox
/// --host-pid=N [--unconfined]`, the configuration in the environment. Before anything else
/// the helper leads its own session and process group, arms its parent-death signal and only
/// then checks that its parent is still the host (had the host died before, the signal would
/// never come: the helper would be an orphan), and closes every descriptor above 2. Returns
/// the configuration and whether the helper runs the program unconfined.
fn start() -> Result<(HelperConfig, Mode), InvocationError> {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).map(|a| a.as_os_str()) != Some(HELPER_ARG.as_ref()) {
        return Err(InvocationError::FirstArgument(HELPER_ARG));
    }
    let host: i32 = args
        .get(2)
        .and_then(|a| a.to_str())
        .and_then(|a| a.strip_prefix(HOST_PID_ARG))
        .and_then(|n| n.parse().ok())
        .filter(|n| *n > 0)
        .ok_or(InvocationError::HostPid(HOST_PID_ARG))?;
    let mode = match args.get(3).map(|a| a.as_os_str()) {
        None => Mode::Confined,
        Some(a) if a == UNCONFINED_ARG => Mode::Unconfined,
        Some(a) if a == TEMPLATE_ARG => Mode::Template,
        Some(a) => return Err(InvocationError::Unexpected(a.to_os_string())),
    };
    let unconfined = mode == Mode::Unconfined;
    if args.len() > 4 {
        return Err(InvocationError::TooMany);
    }
    // A new session makes the helper leader of its own process group (pgid == pid), so the
    // host's `kill_group` reaches every process it starts.
    unistd::setsid().map_err(InvocationError::Session)?;
    prctl::set_pdeathsig(Signal::SIGKILL).map_err(InvocationError::ParentDeath)?;
    if unistd::getppid().as_raw() != host {
        return Err(InvocationError::NotTheHost(host));
    }
    // Descriptors the host opened without O_CLOEXEC (none of ours, but a library's) end here.
    crate::linux::sys::close_from(3).map_err(InvocationError::CloseRange)?;
    let bytes = config_from_env()?;
    forget_environment();
    let config = HelperConfig::decode(&bytes)?;
    // The host's working directory is not ours to hold: the configuration's, or `/`.
    let cwd = match (&config.cwd, unconfined) {
        (Some(cwd), true) => cwd.as_path(),
        _ => std::path::Path::new("/"),
    };
    unistd::chdir(cwd).map_err(|error| InvocationError::Chdir {
        path: cwd.to_path_buf(),
        error,
    })?;
    Ok((config, mode))
}

/// Removes the configuration from the environment and zeroes the memory the kernel shows as
/// this process's `/proc/PID/environ` (it held only the configuration): the payload, which
/// may be this very process's descendant without an `execve` in between (an
/// [`InlinePayload`]), reads an empty environment there, as before.
fn forget_environment() {
    for (key, _) in std::env::vars_os() {
        // SAFETY: the helper is single-threaded (started before any thread by the host's
        // main); nothing reads the environment concurrently.
        unsafe { std::env::remove_var(key) };
    }
    let Some((start, end)) = stat_area(47) else {
        return;
    };
    if start == 0 || end <= start {
        return;
    }
    // SAFETY: [env_start, env_end) is this process's environment area, on its own stack,
    // mapped and writable (the kernel placed the strings there at `execve`). Nothing points
    // into it any more: every variable was removed above, so libc's `environ` array is
    // empty, and the standard library keeps no pointer of its own. What can still go wrong:
    // a kernel reporting other addresses would make this write elsewhere in our own memory;
    // the kernel has reported these fields this way since Linux 3.5.
    unsafe { std::ptr::write_bytes(start as *mut u8, 0, end - start) };
}

/// Two consecutive address fields of `/proc/self/stat`, by index after the command name
/// (field 3 is index 0): 45 for `arg_start`/`arg_end`, 47 for `env_start`/`env_end`.
fn stat_area(index: usize) -> Option<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces and parentheses: fields start after the last `)`.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(index);
    let start = fields.next()?.parse().ok()?;
    let end = fields.next()?.parse().ok()?;
    Some((start, end))
}

/// [`crate::SandboxMode::Disabled`]: nothing is confined; the session, the parent-death
/// signal, the descriptors and the working directory are in place ([`start`]). The program
/// runs with exactly its environment, in this process: executed, or inline when it is this
/// binary.
fn run_unconfined(cfg: &HelperConfig) -> ExitCode {
    let exec = match ExecArgs::new(cfg) {
        Ok(exec) => exec,
        Err(e) => return fail(&Reporter { probe: false }, &e),
    };
    match exec_or_inline(cfg, &exec) {
        Payload::Ran(code) => code,
        Payload::ExecFailed(e) => exec_failed(cfg, e),
        Payload::Probed => ExitCode::SUCCESS,
    }
}

fn exec_failed(cfg: &HelperConfig, e: nix::Error) -> ExitCode {
    let program = cfg
        .program
        .as_deref()
        .unwrap_or(std::path::Path::new(""))
        .display();
    let _ = writeln!(
        std::io::stderr(),
        "code-executor-mcp sandbox: cannot execute {program}: {e}"
    );
    ExitCode::from(EXIT_EXEC_FAILED)
}

/// Steps 2 to 5, in the outer helper (of one worker, or of a template whose init is
/// `template`).
fn outer(
    cfg: &HelperConfig,
    out: &Reporter,
    template: Option<TemplateInit>,
) -> Result<ExitCode, SetupError> {
    // Step 2: descriptors, session, core dumps.
    crate::linux::sys::close_from(3)
        .map_err(|e| SetupError::new(layer::SESSION, format!("close_range: {e}")))?;
    let me = unistd::getpid();
    let session_ok =
        unistd::getsid(None).ok() == Some(me) && unistd::getpgid(None).ok() == Some(me);
    let pdeath_ok = prctl::get_pdeathsig().ok().flatten() == Some(Signal::SIGKILL);
    if !session_ok || !pdeath_ok {
        return Err(SetupError::new(
            layer::SESSION,
            "the helper was not started through sandbox::command (no own session or parent-death signal)".into(),
        ));
    }
    let parent = unistd::getppid();
    setrlimit(Resource::RLIMIT_CORE, 0, 0)
        .map_err(|e| SetupError::new(layer::RLIMITS, format!("RLIMIT_CORE: {e}")))?;
    out.layer(
        layer::SESSION,
        true,
        "own session and process group; parent-death SIGKILL; fds closed except 0/1/2; environment exactly as given",
    );

    // Step 3: the read grants opened while still root (when the host is), then leave host
    // root; step 4: namespaces.
    let granted = if unistd::geteuid().is_root() && !cfg.data.is_empty() {
        let to = namespaces::HOST_ID_WHEN_ROOT;
        mounts::open_as_root(&cfg.data, (Uid::from_raw(to), Gid::from_raw(to)))
    } else {
        Vec::new()
    };
    let (uid, gid, who) = namespaces::leave_root(cfg.scratch.as_deref(), parent)?;
    namespaces::unshare_all(uid, gid, parent)?;
    out.layer(
        layer::USER_NAMESPACE,
        true,
        &format!(
            "new user namespace; payload uid/gid {} inside, {who}",
            namespaces::INNER_ID
        ),
    );
    let net = namespaces::check_network()?;
    out.layer(layer::NETWORK_NAMESPACE, true, &net);
    out.layer(
        layer::IPC_NAMESPACE,
        true,
        "new IPC namespace (no host SysV IPC or POSIX queues)",
    );
    namespaces::set_hostname()?;
    out.layer(
        layer::UTS_NAMESPACE,
        true,
        "new UTS namespace; hostname `sandbox`",
    );

    // Step 5: fork the init of the new PID namespace.
    let pipe = |what| {
        unistd::pipe2(OFlag::O_CLOEXEC)
            .map_err(|e| SetupError::new(layer::PID_NAMESPACE, format!("{what}: {e}")))
    };
    let (alive_r, alive_w) = pipe("pipe")?;
    let (status_r, status_w) = pipe("pipe")?;
    // Opened before the fork, while the host root is still ours: the init's `pivot_root`
    // moves this process's root and working directory into the view being built, where a
    // late `open("/dev/null")` could find the empty regular file that is the device's mount
    // point, and a file of the view's root held open for writing makes step 6.7 (root
    // read-only) fail with EBUSY. After the fork this process touches no path.
    let null = open_null(cfg.probe)?;
    // SAFETY: the helper is single-threaded (started before any thread by the host's main), so
    // the child may do anything after fork. What can go wrong: the child inherits the parent's
    // memory, including the configuration; it contains nothing the payload may not see.
    match unsafe { unistd::fork() } {
        Err(e) => Err(SetupError::new(layer::PID_NAMESPACE, format!("fork: {e}"))),
        Ok(ForkResult::Child) => {
            drop(alive_w);
            drop(status_r);
            drop(null);
            if let Some(template_init) = template {
                // Nothing of this frame may outlive the fork: the template's workers close
                // every descriptor they did not get.
                drop(status_w);
                return Ok(template_init(cfg, out, alive_r, granted));
            }
            Ok(init(cfg, out, alive_r, status_w, granted))
        }
        Ok(ForkResult::Parent { child }) => {
            drop(granted);
            drop(alive_r);
            drop(status_w);
            detach_stdio(null);
            Ok(supervise(child, status_r, alive_w))
        }
    }
}

/// The outer helper after the fork: wait for the init, then end the way the payload ended.
pub(super) fn supervise(init: Pid, status_r: OwnedFd, _alive_w: OwnedFd) -> ExitCode {
    forward_signals_to(init);
    let init_status = wait_for(init);
    let mut buf = [0u8; 5];
    let n = unistd::read(&status_r, &mut buf).unwrap_or(0);
    let status = if n == buf.len() {
        decode_status(&buf)
    } else {
        init_status
    };
    mirror(status)
}

/// Step 5 (second half) and 6, in the init (PID 1 of the new namespace); it forks step 7.
/// The first checks of an init (`who`) in a new PID namespace: it dies with its parent
/// (`parent`, whose end of `alive` closes when it exits), which is still there now that the
/// signal is armed, and it is PID 1. The helper's init and a template's worker init share them.
pub(crate) fn init_checks(alive_r: &OwnedFd, parent: &str, who: &str) -> Result<(), SetupError> {
    prctl::set_pdeathsig(Signal::SIGKILL)
        .map_err(|e| SetupError::new(layer::PID_NAMESPACE, format!("PR_SET_PDEATHSIG: {e}")))?;
    let mut fds = [PollFd::new(alive_r.as_fd(), PollFlags::POLLIN)];
    if poll(&mut fds, PollTimeout::ZERO).unwrap_or(1) != 0 {
        return Err(SetupError::new(
            layer::PID_NAMESPACE,
            format!("{parent} exited during setup"),
        ));
    }
    if unistd::getpid().as_raw() != 1 {
        return Err(SetupError::new(
            layer::PID_NAMESPACE,
            format!("{who} is not PID 1 of a new namespace"),
        ));
    }
    Ok(())
}

fn init(
    cfg: &HelperConfig,
    out: &Reporter,
    alive_r: OwnedFd,
    status_w: OwnedFd,
    granted: Vec<mounts::GrantedTree>,
) -> ExitCode {
    // The view is complete (and read-only) before the init opens anything in it.
    let view = init_steps(cfg, out, &alive_r, granted, false);
    init_with(cfg, out, alive_r, status_w, view)
}

/// The init once its view is there (built by [`init_steps`], or a template's): it forks the
/// payload, forwards signals to it, reaps until it ends and reports how it ended.
pub(super) fn init_with(
    cfg: &HelperConfig,
    out: &Reporter,
    alive_r: OwnedFd,
    status_w: OwnedFd,
    view: Result<Vec<mounts::Step>, SetupError>,
) -> ExitCode {
    match view.and_then(|view| open_null(cfg.probe).map(|null| (view, null))) {
        Err(e) => fail(out, &e),
        // SAFETY: the init is single-threaded, as the outer helper was, so the child may do
        // anything after fork. What can go wrong: a fork failure (e.g. RLIMIT_NPROC of the
        // host uid reached) is reported as a setup failure, never as a payload result.
        Ok((view, null)) => match unsafe { unistd::fork() } {
            Err(e) => fail(
                out,
                &SetupError::new(layer::PID_NAMESPACE, format!("fork: {e}")),
            ),
            Ok(ForkResult::Child) => {
                drop(alive_r);
                drop(status_w);
                drop(null);
                payload(cfg, &view, out)
            }
            Ok(ForkResult::Parent { child }) => {
                drop(alive_r);
                detach_stdio(null);
                forward_signals_to(child);
                let status = reap_until(child);
                let _ = unistd::write(&status_w, &encode_status(status));
                ExitCode::SUCCESS
            }
        },
    }
}

/// Returns the plan the view was built from. `shared`: the view of a template, whose `/proc`
/// shows each worker only its own processes (`hidepid=invisible`).
pub(super) fn init_steps(
    cfg: &HelperConfig,
    out: &Reporter,
    alive_r: &OwnedFd,
    granted: Vec<mounts::GrantedTree>,
    shared: bool,
) -> Result<Vec<mounts::Step>, SetupError> {
    // The outer helper is our parent, outside the namespace: die with it, and make sure it is
    // still there now that the signal is armed (its end of `alive` closes when it exits).
    init_checks(alive_r, "the outer helper", "the init")?;
    out.layer(
        layer::PID_NAMESPACE,
        true,
        "new PID namespace; a reaping init is PID 1; killing it (or the process group) kills every process inside",
    );
    // The host's plan of the shared paths, checked against the configured paths (it must be
    // exactly what they resolve to), then each fact in it against the host while mounting;
    // without one, the paths are resolved here.
    let plan = match &cfg.plan {
        Some(shared) => {
            mounts::check(cfg, shared)?;
            let mut steps = shared.to_vec();
            mounts::plan_own(cfg, &mut steps)?;
            steps
        }
        None => mounts::plan(cfg)?,
    };
    let detail = mounts::build(&plan, granted, shared)?;
    out.layer(layer::FILESYSTEM_VIEW, true, &detail);
    out.layer(
        layer::PROC,
        true,
        "fresh /proc of the new PID namespace (host processes invisible)",
    );
    Ok(plan)
}

/// Steps 7 to 13, in the payload process (PID 2), ending in `execve`.
fn payload(cfg: &HelperConfig, view: &[mounts::Step], out: &Reporter) -> ExitCode {
    match payload_steps(cfg, view, out) {
        Err(e) => fail(out, &e),
        Ok(Payload::Probed) => ExitCode::SUCCESS,
        Ok(Payload::Ran(code)) => code,
        Ok(Payload::ExecFailed(e)) => exec_failed(cfg, e),
    }
}

/// How the payload step ended, when it returns at all.
enum Payload {
    /// Probe mode: every layer is in place, nothing is run.
    Probed,
    /// `execve` failed.
    ExecFailed(nix::Error),
    /// An [`InlinePayload`] ran and ended with this code.
    Ran(ExitCode),
}

fn payload_steps(
    cfg: &HelperConfig,
    view: &[mounts::Step],
    out: &Reporter,
) -> Result<Payload, SetupError> {
    // Step 7: everything that allocates or opens files happens before the limits apply.
    prctl::set_pdeathsig(Signal::SIGKILL)
        .map_err(|e| SetupError::new(layer::PID_NAMESPACE, format!("PR_SET_PDEATHSIG: {e}")))?;
    let exec = ExecArgs::new(cfg)?;
    let ruleset = landlock::prepare(cfg, view)?;
    let filters = seccomp::compile()?;
    let cwd = cfg
        .cwd
        .clone()
        .or_else(|| cfg.scratch_inside().map(std::path::Path::to_owned))
        .unwrap_or_else(|| "/".into());
    unistd::chdir(&cwd).map_err(|e| {
        SetupError::new(
            layer::FILESYSTEM_VIEW,
            format!("chdir {}: {e}", cwd.display()),
        )
    })?;

    // Steps 8 to 12: limits, no_new_privs, capabilities, Landlock, seccomp.
    // A write past the file-size limit fails with EFBIG, which code can catch and the host
    // reports, instead of killing the payload with SIGXFSZ. An ignored disposition survives
    // execve.
    // SAFETY: setting one signal's disposition to "ignore" in a single-threaded process about
    // to execve; no handler runs. What can still go wrong: the payload may set it back, and
    // then the limit kills it, as before.
    let _ = unsafe { signal::signal(Signal::SIGXFSZ, SigHandler::SigIgn) };
    let detail = limits::apply_rlimits(&cfg.limits)?;
    out.layer(layer::RLIMITS, true, &detail);
    limits::no_new_privs()?;
    out.layer(
        layer::NO_NEW_PRIVS,
        true,
        "PR_SET_NO_NEW_PRIVS set: execve grants nothing",
    );
    let detail = limits::drop_capabilities()?;
    out.layer(layer::CAPABILITIES, true, &detail);
    let (enforced, detail) = landlock::restrict(ruleset);
    out.layer(layer::LANDLOCK, enforced, &detail);
    let detail = seccomp::apply(&filters)?;
    out.layer(layer::SECCOMP, true, &detail);
    // Step 13: no descriptor but 0, 1 and 2 survives execve.
    crate::linux::sys::cloexec_from(3)
        .map_err(|e| SetupError::new(layer::SESSION, format!("close_range: {e}")))?;
    if cfg.probe {
        return Ok(Payload::Probed);
    }
    Ok(exec_or_inline(cfg, &exec))
}

/// Runs the program: inline when it is this binary and an [`InlinePayload`] takes it, else
/// with `execve`, which returns only when it fails.
fn exec_or_inline(cfg: &HelperConfig, exec: &ExecArgs) -> Payload {
    if let Some(inline) = SELF_PAYLOAD.get().copied().flatten() {
        // The program is this binary: run it here, confined exactly as it would be after
        // `execve` (every layer is in place; unconfined: none is asked for), without loading
        // the binary again. Its environment is the one it would have been given.
        for (key, _) in std::env::vars_os() {
            // SAFETY: the payload process (forked from the init) and the unconfined helper
            // are single-threaded; nothing reads the environment concurrently.
            unsafe { std::env::remove_var(key) };
        }
        for entry in &cfg.env {
            let bytes = entry.as_bytes();
            if let Some(eq) = bytes.iter().position(|b| *b == b'=') {
                let (k, v) = (&bytes[..eq], &bytes[eq + 1..]);
                // SAFETY: as above, single-threaded.
                unsafe {
                    std::env::set_var(
                        std::ffi::OsStr::from_bytes(k),
                        std::ffi::OsStr::from_bytes(v),
                    )
                };
            }
        }
        // Tools that tell processes apart by their command line (`ps`, the host's tests)
        // see the payload's, as after `execve`.
        show_command_line(&exec.argv);
        if let Some(code) = inline(&cfg.args) {
            return Payload::Ran(code);
        }
    }
    let Err(e) = unistd::execve(&exec.program, &exec.argv, &exec.envp);
    Payload::ExecFailed(e)
}

struct ExecArgs {
    program: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
}

impl ExecArgs {
    fn new(cfg: &HelperConfig) -> Result<Self, SetupError> {
        let c = |s: &std::ffi::OsStr| {
            CString::new(s.as_bytes())
                .map_err(|_| SetupError::new(layer::SESSION, "NUL in argument".into()))
        };
        let program = match &cfg.program {
            Some(p) => c(p.as_os_str())?,
            None if cfg.probe => CString::default(),
            None => return Err(SetupError::new(layer::SESSION, "no program given".into())),
        };
        let mut argv = vec![program.clone()];
        for a in &cfg.args {
            argv.push(c(a)?);
        }
        let envp = cfg.env.iter().map(|e| c(e)).collect::<Result<_, _>>()?;
        Ok(Self {
            program,
            argv,
            envp,
        })
    }
}

/// Rewrites this process's command line (what `/proc/self/cmdline` shows) to `argv`, in the
/// memory the kernel reads it from, when it fits there; the rest of that memory is zeroed.
/// Best effort: a command line that cannot be rewritten stays the helper's.
fn show_command_line(argv: &[CString]) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return;
    };
    // Fields after the command name (which may hold spaces and parentheses) start at field 3;
    // arg_start and arg_end are fields 48 and 49.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let (Some(Ok(start)), Some(Ok(end))) = (
        fields.get(45).map(|f| f.parse::<usize>()),
        fields.get(46).map(|f| f.parse::<usize>()),
    ) else {
        return;
    };
    let mut bytes = Vec::new();
    for arg in argv {
        bytes.extend_from_slice(arg.as_bytes_with_nul());
    }
    let Some(room) = end.checked_sub(start) else {
        return;
    };
    if start == 0 || bytes.len() > room {
        return;
    }
    // SAFETY: [arg_start, arg_end) is this process's argument area, on its own stack, mapped
    // and writable (the kernel placed the strings there at `execve`); the process is single-
    // threaded, and what else points into the area (the standard library's saved `argv`)
    // only reads NUL-terminated strings, which it still holds after the rewrite. What can
    // still go wrong: a kernel reporting other addresses would make this write elsewhere in
    // our own memory; the kernel has reported these fields this way since Linux 3.5.
    unsafe {
        let area = start as *mut u8;
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), area, bytes.len());
        std::ptr::write_bytes(area.add(bytes.len()), 0, room - bytes.len());
    }
}

/// `/dev/null`, for [`detach_stdio`]; none in probe mode (stdout carries the report there).
pub(super) fn open_null(probe: bool) -> Result<Option<OwnedFd>, SetupError> {
    if probe {
        return Ok(None);
    }
    nix::fcntl::open(
        "/dev/null",
        OFlag::O_RDWR | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map(Some)
    .map_err(|e| SetupError::new(layer::SESSION, format!("open /dev/null: {e}")))
}

/// The helpers keep no end of the payload's stdin and stdout, so the host sees EOF as soon as
/// the payload closes its stdout, and the payload sees EOF when the host closes stdin. stderr
/// stays: setup errors go there. `null` is `/dev/null`, opened by the caller before its root
/// could change (see [`outer`]); `None` in probe mode.
pub(super) fn detach_stdio(null: Option<OwnedFd>) {
    if let Some(null) = null {
        let _ = unistd::dup2_stdin(&null);
        let _ = unistd::dup2_stdout(&null);
    }
}

/// The pid signals are forwarded to; 0 before the child exists.
static FORWARD_TO: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(sig: nix::libc::c_int) {
    let pid = FORWARD_TO.load(Ordering::Relaxed);
    if pid > 0
        && let Ok(sig) = Signal::try_from(sig)
    {
        // kill(2) is async-signal-safe.
        let _ = signal::kill(Pid::from_raw(pid), sig);
    }
}

/// Signals a process manager would send to stop a worker gently go to the child instead.
fn forward_signals_to(child: Pid) {
    FORWARD_TO.store(child.as_raw(), Ordering::Relaxed);
    let action = SigAction::new(
        SigHandler::Handler(forward),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for sig in [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
    ] {
        // SAFETY: the handler only loads an atomic and calls kill(2), both async-signal-safe.
        // A signal arriving before this line takes its default action (the helper dies, and its
        // children with it through the parent-death signal).
        let _ = unsafe { signal::sigaction(sig, &action) };
    }
}

fn wait_for(child: Pid) -> WaitStatus {
    loop {
        match waitpid(child, None) {
            Ok(status @ (WaitStatus::Exited(..) | WaitStatus::Signaled(..))) => return status,
            Ok(_) | Err(nix::Error::EINTR) => continue,
            Err(_) => return WaitStatus::Exited(child, i32::from(EXIT_SETUP_FAILED)),
        }
    }
}

/// As PID 1: reap every orphan until `child` ends; return how it ended.
fn reap_until(child: Pid) -> WaitStatus {
    loop {
        match waitpid(None, None) {
            Ok(status @ (WaitStatus::Exited(pid, _) | WaitStatus::Signaled(pid, ..)))
                if pid == child =>
            {
                return status;
            }
            Ok(_) | Err(nix::Error::EINTR) => continue,
            Err(_) => return WaitStatus::Exited(child, i32::from(EXIT_SETUP_FAILED)),
        }
    }
}

fn encode_status(status: WaitStatus) -> [u8; 5] {
    let (kind, value) = match status {
        WaitStatus::Signaled(_, sig, _) => (b'S', sig as i32),
        WaitStatus::Exited(_, code) => (b'E', code),
        _ => (b'E', i32::from(EXIT_SETUP_FAILED)),
    };
    let v = value.to_le_bytes();
    [kind, v[0], v[1], v[2], v[3]]
}

fn decode_status(buf: &[u8; 5]) -> WaitStatus {
    let value = i32::from_le_bytes([buf[1], buf[2], buf[3], buf[4]]);
    let pid = Pid::from_raw(0);
    match (buf[0], Signal::try_from(value)) {
        (b'S', Ok(sig)) => WaitStatus::Signaled(pid, sig, false),
        _ => WaitStatus::Exited(pid, value),
    }
}

/// End this process the way the payload ended: same exit code, or killed by the same signal.
fn mirror(status: WaitStatus) -> ExitCode {
    match status {
        WaitStatus::Signaled(_, sig, _) => {
            // SAFETY: restoring the default action of one signal; no handler state is touched.
            // What can still go wrong: for a signal whose default is to be ignored, raise
            // returns and we exit with 128 + the signal number instead.
            let _ = unsafe { signal::signal(sig, SigHandler::SigDfl) };
            let mut set = SigSet::empty();
            set.add(sig);
            let _ = set.thread_unblock();
            let _ = signal::raise(sig);
            ExitCode::from(128u8.saturating_add(sig as u8))
        }
        WaitStatus::Exited(_, code) => {
            ExitCode::from(u8::try_from(code & 0xff).unwrap_or(EXIT_SETUP_FAILED))
        }
        _ => ExitCode::from(EXIT_SETUP_FAILED),
    }
}
