//! A template (host side): starts the template's helper, asks it for workers over a
//! `SOCK_SEQPACKET` socket pair, and reads a worker's end from its pidfd (see
//! `linux::template` for the template's side).

use std::ffi::OsString;
use std::io::{IoSlice, IoSliceMut, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use nix::fcntl::OFlag;
use nix::libc;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{
    AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg,
    sendmsg, socketpair,
};

use crate::error::{SandboxError, TemplateUnsupported};
use crate::linux::template::{READY, REFUSED, WORKER};
use crate::policy::{SandboxPolicy, WorkerCommand};

/// How long a template may take to build its view, and to fork a worker.
const TEMPLATE_TIMEOUT: Duration = Duration::from_secs(10);

/// A running template: its helper, and the host's end of its socket.
pub struct Template {
    helper: Option<Child>,
    /// A pidfd of the helper: whether the template is alive, without reaping it.
    helper_fd: OwnedFd,
    sock: Mutex<OwnedFd>,
}

/// A worker forked by a template: its pid (in the host's PID namespace), a pidfd of its
/// first process, and the host's ends of its stdin, stdout and stderr.
#[derive(Debug)]
pub struct TemplateWorker {
    pub pid: u32,
    pub pidfd: OwnedFd,
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

impl std::fmt::Debug for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Template")
            .field("pid", &self.helper.as_ref().map(Child::id))
            .finish()
    }
}

/// Whether this kernel has what a template's workers need: Landlock ABI 6 (signals and
/// abstract Unix sockets scoped to each worker's domain) and Linux 6.15 (a worker's exit
/// status read from its pidfd by the host, which is not its parent).
pub fn support() -> Result<(), TemplateUnsupported> {
    let abi = crate::linux::sys::landlock_abi();
    if abi < 6 {
        return Err(TemplateUnsupported::Landlock(abi));
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|r| r.trim().to_owned())
        .unwrap_or_default();
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse::<u32>().ok());
    let version = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if version < (6, 15) {
        return Err(TemplateUnsupported::Kernel(release));
    }
    Ok(())
}

fn io(what: &str, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Io(std::io::Error::other(format!(
        "worker template: {what}: {e}"
    )))
}

impl Template {
    /// Starts a template for workers of `target` under `policy` and waits until its view is
    /// built. The helper is started on the forker thread (it dies with the host).
    pub fn start(target: &WorkerCommand, policy: &SandboxPolicy) -> Result<Self, SandboxError> {
        support().map_err(|e| io("unsupported", e))?;
        let mut cmd = crate::linux::spawn::template_command(target, policy)?;
        let (host, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .map_err(|e| io("socketpair", e))?;
        cmd.stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let (tx, rx) = std::sync::mpsc::channel();
        crate::linux::forker::on_forker_thread(move || {
            let _ = tx.send(cmd.spawn());
        })?;
        let mut helper = rx
            .recv()
            .map_err(|e| io("forker", e))?
            .map_err(SandboxError::Io)?;
        let mut buf = [0u8; 1];
        let ready = wait_readable(host.as_fd())
            .and_then(|()| recv(&host, &mut buf))
            .and_then(|(n, fd)| {
                drop(fd);
                (n == 1 && buf[0] == READY)
                    .then_some(())
                    .ok_or_else(|| io("start", "no ready message"))
            });
        if let Err(e) = ready {
            let _ = helper.kill();
            let _ = helper.wait();
            let mut said = String::new();
            if let Some(mut stderr) = helper.stderr.take() {
                let _ = stderr.read_to_string(&mut said);
            }
            let said = said.trim();
            return Err(if said.is_empty() {
                e
            } else {
                io("start", said)
            });
        }
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1; the
        // helper is our child, not reaped (only `Drop` waits for it), so the pid is its own.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, helper.id() as libc::pid_t, 0) };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            let _ = helper.kill();
            let _ = helper.wait();
            return Err(io("pidfd_open", e));
        }
        // SAFETY: pidfd_open returned a new descriptor that nothing else owns.
        let helper_fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        Ok(Self {
            helper: Some(helper),
            helper_fd,
            sock: Mutex::new(host),
        })
    }

    /// The helper's pid (its process leads the template's process group).
    pub fn pid(&self) -> u32 {
        self.helper.as_ref().map_or(0, Child::id)
    }

    /// Forks a worker with exactly the environment `env`. Blocks for the fork (a fraction
    /// of a millisecond); one request at a time per template.
    pub fn spawn(&self, env: &[(OsString, OsString)]) -> Result<TemplateWorker, SandboxError> {
        let mut request = Vec::new();
        for (k, v) in env {
            request.extend_from_slice(k.as_bytes());
            request.push(b'=');
            request.extend_from_slice(v.as_bytes());
            request.push(0);
        }
        if request.is_empty() {
            request.push(0);
        }
        let pipe = || nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| io("pipe", e));
        let (stdin_r, stdin_w) = pipe()?;
        let (stdout_r, stdout_w) = pipe()?;
        let (stderr_r, stderr_w) = pipe()?;
        let sock = self.sock.lock().map_err(|_| io("socket", "poisoned"))?;
        let theirs = [
            stdin_r.as_raw_fd(),
            stdout_w.as_raw_fd(),
            stderr_w.as_raw_fd(),
        ];
        sendmsg::<()>(
            sock.as_raw_fd(),
            &[IoSlice::new(&request)],
            &[ControlMessage::ScmRights(&theirs)],
            MsgFlags::MSG_NOSIGNAL,
            None,
        )
        .map_err(|e| io("send", e))?;
        drop((stdin_r, stdout_w, stderr_w));
        let mut buf = [0u8; 4096];
        wait_readable(sock.as_fd())?;
        let (n, pidfd) = recv(&sock, &mut buf)?;
        drop(sock);
        match (buf.first(), pidfd) {
            (Some(&WORKER), Some(pidfd)) if n == 1 => {
                let pid = pidfd_pid(pidfd.as_fd()).map_err(|e| io("pidfd", e))?;
                Ok(TemplateWorker {
                    pid,
                    pidfd,
                    stdin: stdin_w,
                    stdout: stdout_r,
                    stderr: stderr_r,
                })
            }
            (Some(&REFUSED), _) => Err(io(
                "refused",
                String::from_utf8_lossy(&buf[1..n.min(buf.len())]),
            )),
            _ => Err(io("reply", "the template is gone")),
        }
    }

    /// Whether the template's helper is still running (a template killed takes the workers
    /// it forked with it: a pool checks this before it hands one over).
    pub fn is_alive(&self) -> bool {
        !pidfd_ended(self.helper_fd.as_fd())
    }
}

impl Drop for Template {
    /// Retires the template: its socket closes, it forks nothing more, and it exits once its
    /// running workers have ended (a thread reaps its helper then).
    fn drop(&mut self) {
        if let Some(mut helper) = self.helper.take() {
            let _ = std::thread::Builder::new()
                .name("template-reaper".into())
                .spawn(move || {
                    let _ = helper.wait();
                });
        }
    }
}

fn wait_readable(fd: BorrowedFd<'_>) -> Result<(), SandboxError> {
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    let timeout = PollTimeout::try_from(TEMPLATE_TIMEOUT).unwrap_or(PollTimeout::MAX);
    loop {
        match poll(&mut fds, timeout) {
            Ok(0) => return Err(io("reply", "timed out")),
            Ok(_) => return Ok(()),
            Err(nix::Error::EINTR) => continue,
            Err(e) => return Err(io("poll", e)),
        }
    }
}

/// One message: its length and the descriptor it carried, if any.
fn recv(sock: &OwnedFd, buf: &mut [u8]) -> Result<(usize, Option<OwnedFd>), SandboxError> {
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = recvmsg::<()>(
        sock.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .map_err(|e| io("receive", e))?;
    let mut fd = None;
    if let Ok(cmsgs) = msg.cmsgs() {
        for cmsg in cmsgs {
            if let ControlMessageOwned::ScmRights(raw) = cmsg {
                for r in raw {
                    // SAFETY: descriptors received with SCM_RIGHTS are new in this process.
                    let owned = unsafe { OwnedFd::from_raw_fd(r) };
                    if fd.is_none() {
                        fd = Some(owned);
                    }
                }
            }
        }
    }
    Ok((msg.bytes, fd))
}

/// `struct pidfd_info` of `PIDFD_GET_INFO` (Linux 6.13; the exit code since 6.15).
#[repr(C)]
#[derive(Default)]
struct PidfdInfo {
    mask: u64,
    cgroupid: u64,
    pid: u32,
    tgid: u32,
    ppid: u32,
    ruid: u32,
    rgid: u32,
    euid: u32,
    egid: u32,
    suid: u32,
    sgid: u32,
    fsuid: u32,
    fsgid: u32,
    exit_code: i32,
}

const PIDFD_INFO_PID: u64 = 1;
const PIDFD_INFO_EXIT: u64 = 1 << 3;
/// `_IOWR(0xFF, 11, struct pidfd_info)` with the 64-byte first version of the struct.
const PIDFD_GET_INFO: libc::c_ulong = 0xC040_FF0B;

fn pidfd_info(fd: BorrowedFd<'_>, mask: u64) -> std::io::Result<PidfdInfo> {
    let mut info = PidfdInfo {
        mask,
        ..PidfdInfo::default()
    };
    // SAFETY: the kernel writes at most the 64 bytes of `info`, which the ioctl number names.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), PIDFD_GET_INFO, &mut info as *mut PidfdInfo) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(info)
}

/// The pid of the process `fd` refers to, in the caller's PID namespace.
pub fn pidfd_pid(fd: BorrowedFd<'_>) -> std::io::Result<u32> {
    let info = pidfd_info(fd, PIDFD_INFO_PID)?;
    if info.mask & PIDFD_INFO_PID == 0 || info.pid == 0 {
        return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(info.pid)
}

/// How the process `fd` refers to ended (a wait status, as `waitpid` gives it), once it has
/// ended and its parent has reaped it; `None` before.
pub fn pidfd_exit_status(fd: BorrowedFd<'_>) -> Option<i32> {
    let info = pidfd_info(fd, PIDFD_INFO_EXIT).ok()?;
    (info.mask & PIDFD_INFO_EXIT != 0).then_some(info.exit_code)
}

/// Whether the process `fd` refers to has ended (its pidfd is readable).
pub fn pidfd_ended(fd: BorrowedFd<'_>) -> bool {
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n > 0)
}

/// [`crate::kill_group`] for a worker known by its pidfd: SIGKILL to the worker's first
/// process, through the pidfd (which cannot name another process whatever pids are reused
/// meanwhile). Its init has it as parent-death signal, and every other process of the worker
/// is in the init's PID namespace, which dies with it: the whole worker ends, as with
/// `kill_group`. Not its process group: a worker killed before its `setsid` is still in the
/// template's group. Lowers the worker's group's priority first, as `kill_group` does.
pub fn pidfd_kill_group(fd: BorrowedFd<'_>) {
    if !pidfd_ended(fd)
        && let Ok(pid) = pidfd_pid(fd)
    {
        // Before its `setsid` no group has this id (ESRCH); after it, the group is the
        // worker's own. A group id cannot be reused while the group has a member.
        // SAFETY: setpriority takes plain integers and touches no memory of ours.
        unsafe { libc::setpriority(libc::PRIO_PGRP, pid as libc::id_t, 19) };
    }
    // SAFETY: pidfd_send_signal reads no memory with a null siginfo.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        );
    }
}
