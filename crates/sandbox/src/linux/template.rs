//! A template (helper side): the namespaces and the view shared by the workers of one
//! spawner, built once, and a worker forked from it for each request (see `docs/sandbox.md`,
//! "Workers forked from a template").
//!
//! The template's helper runs the usual steps 1 to 6 once (session, leaving host root, user,
//! mount, PID, network, IPC and UTS namespaces, the read-only view with a `/proc` that shows
//! a process only to whoever may ptrace it), then its init (PID 1 of the template's PID
//! namespace) serves requests on its stdin, one end of a `SOCK_SEQPACKET` socket pair whose
//! other end the host holds. A request carries the worker's stdin, stdout and stderr
//! (`SCM_RIGHTS`) and its environment; the init forks a process that makes its own session,
//! user namespace (so `RLIMIT_NPROC` counts its processes alone), PID, IPC and UTS namespaces,
//! forks an init of its own as PID 1 of the new PID namespace, which forks the payload; the
//! payload applies rlimits, no_new_privs, capabilities, Landlock (a domain of its own, with
//! signals and abstract sockets scoped to it) and seccomp exactly as a worker of its own does.
//! The reply carries a pidfd of the worker's first process, which leads the worker's process
//! group and ends the way its payload ended; the host reads its exit status from the pidfd.
//!
//! The init reaps its workers. When the host closes its end, the init accepts nothing more
//! and exits once its last worker has ended (its end kills whatever is left in its PID
//! namespace): a retired template's running workers finish their executions.

use std::ffi::OsString;
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStringExt;
use std::process::ExitCode;

use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sched::{CloneFlags, unshare};
use nix::sys::prctl;
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{self, ForkResult, Pid};

use crate::error::SetupError;
use crate::linux::config::HelperConfig;
use crate::linux::helper::{self, Reporter};
use crate::linux::layers::layer;
use crate::linux::namespaces::INNER_ID;
use crate::linux::{mounts, namespaces};

/// The namespaces each worker of a template makes for itself.
const PER_WORKER: CloneFlags = CloneFlags::CLONE_NEWUSER
    .union(CloneFlags::CLONE_NEWPID)
    .union(CloneFlags::CLONE_NEWIPC)
    .union(CloneFlags::CLONE_NEWUTS);

/// Longest request: the worker's environment (a few variables).
const MAX_REQUEST: usize = 64 * 1024;

/// The first byte of the template's messages to the host.
pub(crate) const READY: u8 = b'R';
pub(crate) const WORKER: u8 = b'W';
pub(crate) const REFUSED: u8 = b'E';

/// The template's init: the view, then requests until the host closes its end. `alive_r`
/// closes when the template's outer helper exits.
pub(crate) fn init(
    cfg: &HelperConfig,
    out: &Reporter,
    alive_r: OwnedFd,
    granted: Vec<mounts::GrantedTree>,
) -> ExitCode {
    let view = match helper::init_steps(cfg, out, &alive_r, granted, true) {
        Ok(view) => view,
        Err(e) => return helper::fail(out, &e),
    };
    drop(alive_r);
    match Serving::new() {
        Ok(serving) => serving.serve(cfg, out, &view),
        Err(e) => helper::fail(out, &e),
    }
}

/// The init's socket and its SIGCHLD descriptor.
struct Serving {
    sock: OwnedFd,
    children: SignalFd,
    mask: SigSet,
}

impl Serving {
    fn new() -> Result<Self, SetupError> {
        let err = |what: &str, e: nix::Error| {
            SetupError::new(layer::PID_NAMESPACE, format!("template {what}: {e}"))
        };
        // The socket leaves descriptor 0 (which gets /dev/null): a worker's stdin goes there.
        let sock = nix::fcntl::fcntl(std::io::stdin(), nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(3))
            .map_err(|e| err("socket", e))?;
        // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor that nothing else owns.
        let sock = unsafe { OwnedFd::from_raw_fd(sock) };
        let null = helper::open_null(false)?;
        helper::detach_stdio(null);
        let mut mask = SigSet::empty();
        mask.add(Signal::SIGCHLD);
        mask.thread_block().map_err(|e| err("sigprocmask", e))?;
        let children = SignalFd::with_flags(&mask, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
            .map_err(|e| err("signalfd", e))?;
        Ok(Self {
            sock,
            children,
            mask,
        })
    }

    fn serve(self, cfg: &HelperConfig, out: &Reporter, view: &[mounts::Step]) -> ExitCode {
        if sendmsg::<()>(
            self.sock.as_raw_fd(),
            &[IoSlice::new(&[READY])],
            &[],
            MsgFlags::empty(),
            None,
        )
        .is_err()
        {
            return ExitCode::from(crate::policy::EXIT_SETUP_FAILED);
        }
        let mut buf = vec![0u8; MAX_REQUEST];
        let mut live = 0usize;
        let mut open = true;
        while open || live > 0 {
            let mut fds = vec![PollFd::new(self.children.as_fd(), PollFlags::POLLIN)];
            if open {
                fds.push(PollFd::new(self.sock.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) | Err(nix::Error::EINTR) => {}
                Err(_) => break,
            }
            let request = open
                && fds
                    .get(1)
                    .and_then(PollFd::revents)
                    .is_some_and(|r| !r.is_empty());
            while let Ok(Some(_)) = self.children.read_signal() {}
            live = live.saturating_sub(reap());
            if !request {
                continue;
            }
            match receive(&self.sock, &mut buf) {
                Received::Closed => open = false,
                Received::Bad(why) => self.refuse(&why),
                Received::Request { fds, env } => {
                    // SAFETY: the init is single-threaded (the helper starts no thread), so
                    // the child may do anything after fork. What can go wrong: the child
                    // inherits the init's memory (the configuration and the view's plan),
                    // which holds nothing a worker may not see.
                    match unsafe { unistd::fork() } {
                        Err(e) => self.refuse(&format!("fork: {e}")),
                        Ok(ForkResult::Child) => {
                            let Self {
                                sock,
                                children,
                                mask,
                            } = self;
                            drop(sock);
                            drop(children);
                            let _ = mask.thread_unblock();
                            let mut cfg = cfg.clone();
                            cfg.env = env;
                            return match worker(&cfg, out, view, fds) {
                                Ok(code) => code,
                                Err(e) => helper::fail(out, &e),
                            };
                        }
                        Ok(ForkResult::Parent { child }) => {
                            drop(fds);
                            live += 1;
                            self.reply(child);
                        }
                    }
                }
            }
        }
        ExitCode::SUCCESS
    }

    fn refuse(&self, why: &str) {
        let mut message = vec![REFUSED];
        message.extend_from_slice(why.as_bytes());
        let _ = sendmsg::<()>(
            self.sock.as_raw_fd(),
            &[IoSlice::new(&message)],
            &[],
            MsgFlags::empty(),
            None,
        );
    }

    /// Sends the host a pidfd of the worker's first process.
    fn reply(&self, child: Pid) {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { nix::libc::syscall(nix::libc::SYS_pidfd_open, child.as_raw(), 0) };
        if fd < 0 {
            let _ = nix::sys::signal::kill(child, Signal::SIGKILL);
            self.refuse(&format!("pidfd_open: {}", std::io::Error::last_os_error()));
            return;
        }
        // SAFETY: pidfd_open returned a new descriptor that nothing else owns.
        let pidfd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        let fds = [pidfd.as_raw_fd()];
        let sent = sendmsg::<()>(
            self.sock.as_raw_fd(),
            &[IoSlice::new(&[WORKER])],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::empty(),
            None,
        );
        if sent.is_err() {
            let _ = nix::sys::signal::kill(child, Signal::SIGKILL);
        }
    }
}

/// Reaps every ended worker; returns how many.
fn reap() -> usize {
    let mut n = 0;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..)) => n += 1,
            Ok(WaitStatus::StillAlive) | Err(_) => return n,
            Ok(_) => {}
        }
    }
}

enum Received {
    /// The host closed its end.
    Closed,
    Bad(String),
    Request {
        fds: [OwnedFd; 3],
        env: Vec<OsString>,
    },
}

fn receive(sock: &OwnedFd, buf: &mut [u8]) -> Received {
    let mut space = nix::cmsg_space!([RawFd; 3]);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = match recvmsg::<()>(
        sock.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    ) {
        Ok(msg) => msg,
        Err(nix::Error::EINTR | nix::Error::EAGAIN) => return Received::Bad("interrupted".into()),
        Err(_) => return Received::Closed,
    };
    let mut fds: Vec<OwnedFd> = Vec::new();
    if let Ok(cmsgs) = msg.cmsgs() {
        for cmsg in cmsgs {
            if let ControlMessageOwned::ScmRights(raw) = cmsg {
                // SAFETY: descriptors received with SCM_RIGHTS are new in this process.
                fds.extend(
                    raw.into_iter()
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                );
            }
        }
    }
    let bytes = msg.bytes;
    let truncated = msg
        .flags
        .intersects(MsgFlags::MSG_TRUNC | MsgFlags::MSG_CTRUNC);
    if bytes == 0 && fds.is_empty() {
        return Received::Closed;
    }
    if truncated {
        return Received::Bad("request too long".into());
    }
    let Ok(fds) = <[OwnedFd; 3]>::try_from(fds) else {
        return Received::Bad("a request carries three descriptors".into());
    };
    let env = iov[0][..bytes]
        .split(|b| *b == 0)
        .filter(|e| !e.is_empty())
        .map(|e| OsString::from_vec(e.to_vec()))
        .collect();
    Received::Request { fds, env }
}

/// One worker, in the process the template's init forked: its stdio, session, namespaces,
/// then an init of its own (PID 1 of its PID namespace) that forks the payload, as the outer
/// helper of a worker of its own does.
fn worker(
    cfg: &HelperConfig,
    out: &Reporter,
    view: &[mounts::Step],
    fds: [OwnedFd; 3],
) -> Result<ExitCode, SetupError> {
    let session = |what: &str, e: &dyn std::fmt::Display| {
        SetupError::new(layer::SESSION, format!("{what}: {e}"))
    };
    let [stdin, stdout, stderr] = fds;
    unistd::dup2_stdin(&stdin).map_err(|e| session("dup2", &e))?;
    unistd::dup2_stdout(&stdout).map_err(|e| session("dup2", &e))?;
    unistd::dup2_stderr(&stderr).map_err(|e| session("dup2", &e))?;
    drop((stdin, stdout, stderr));
    crate::linux::sys::close_from(3).map_err(|e| session("close_range", &e))?;
    unistd::setsid().map_err(|e| session("setsid", &e))?;
    let parent = unistd::getppid();
    namespaces::rearm_parent_death(parent, layer::PID_NAMESPACE)?;
    if crate::linux::sys::landlock_abi() < 6 {
        return Err(SetupError::new(
            layer::LANDLOCK,
            "a template's workers need Landlock ABI 6 (scoped signals and abstract sockets)".into(),
        ));
    }
    unshare(PER_WORKER).map_err(|e| {
        SetupError::new(
            layer::USER_NAMESPACE,
            format!("unshare(CLONE_NEWUSER|NEWPID|NEWIPC|NEWUTS) failed: {e}"),
        )
    })?;
    let err = |what: &str, e: std::io::Error| {
        SetupError::new(layer::USER_NAMESPACE, format!("{what}: {e}"))
    };
    prctl::set_dumpable(true)
        .map_err(|e| SetupError::new(layer::USER_NAMESPACE, format!("PR_SET_DUMPABLE: {e}")))?;
    namespaces::rearm_parent_death(parent, layer::USER_NAMESPACE)?;
    std::fs::write("/proc/self/setgroups", "deny")
        .map_err(|e| err("write /proc/self/setgroups", e))?;
    std::fs::write("/proc/self/uid_map", format!("{INNER_ID} {INNER_ID} 1\n"))
        .map_err(|e| err("write uid_map", e))?;
    std::fs::write("/proc/self/gid_map", format!("{INNER_ID} {INNER_ID} 1\n"))
        .map_err(|e| err("write gid_map", e))?;
    namespaces::set_hostname()?;

    let pipe = |what| {
        unistd::pipe2(OFlag::O_CLOEXEC)
            .map_err(|e| SetupError::new(layer::PID_NAMESPACE, format!("{what}: {e}")))
    };
    let (alive_r, alive_w) = pipe("pipe")?;
    let (status_r, status_w) = pipe("pipe")?;
    let null = helper::open_null(false)?;
    // SAFETY: this process is single-threaded (forked from the single-threaded template
    // init), so the child may do anything after fork.
    match unsafe { unistd::fork() } {
        Err(e) => Err(SetupError::new(layer::PID_NAMESPACE, format!("fork: {e}"))),
        Ok(ForkResult::Child) => {
            drop(alive_w);
            drop(status_r);
            drop(null);
            let view =
                helper::init_checks(&alive_r, "the worker's first process", "the worker's init")
                    .map(|()| view.to_vec());
            Ok(helper::init_with(cfg, out, alive_r, status_w, view))
        }
        Ok(ForkResult::Parent { child }) => {
            drop(alive_r);
            drop(status_w);
            helper::detach_stdio(null);
            Ok(helper::supervise(child, status_r, alive_w))
        }
    }
}
