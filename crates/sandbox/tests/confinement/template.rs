//! Workers forked from one template (`sandbox::Template`): what they share (the read-only
//! view, an empty network namespace) must not let one reach another. Each test runs two
//! workers of the same template at once: one holds something (a process, an abstract socket,
//! a SysV segment, every process its limit allows), the other tries to reach it.
//!
//! The payload is Python reading its code from the environment (`CODE`), so one template
//! serves every attack. Without what templates need (Landlock ABI 6, Linux 6.15) each test
//! says SKIP, or fails under `CODE_EXECUTOR_REQUIRE_SANDBOX=1`.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use sandbox::{
    ResourceLimits, SandboxMode, SandboxPolicy, Template, TemplateWorker, WorkerCommand,
};

use crate::common::{DEADLINE, HELPER, PRELUDE, PYTHON, python_view};

/// The template's program: Python running the code of its worker's environment.
fn target() -> WorkerCommand {
    WorkerCommand {
        program: PYTHON.into(),
        args: vec![
            "-I".into(),
            "-c".into(),
            format!("{PRELUDE}\nexec(os.environ['CODE'])").into(),
        ],
        env: Vec::new(),
        cwd: None,
    }
}

fn policy() -> SandboxPolicy {
    SandboxPolicy {
        mode: SandboxMode::Enforce,
        read_only_paths: python_view(),
        hidden_paths: Vec::new(),
        data_paths: Vec::new(),
        scratch_dir: None,
        scratch_mount_at: None,
        limits: ResourceLimits {
            max_processes: 16,
            ..ResourceLimits::default()
        },
        helper_exe: Some(HELPER.into()),
    }
}

/// A template, or `None` (SKIP) where the kernel lacks what one needs.
fn template() -> Option<Template> {
    if let Err(why) = sandbox::template_support() {
        assert!(
            std::env::var_os("CODE_EXECUTOR_REQUIRE_SANDBOX").is_none(),
            "templates unavailable: {why}"
        );
        eprintln!("SKIP: templates unavailable here: {why}");
        return None;
    }
    Some(Template::start(&target(), &policy()).expect("template starts"))
}

fn start(t: &Template, code: &str) -> TemplateWorker {
    let env = vec![
        ("CODE".into(), code.into()),
        ("LC_ALL".into(), "C.UTF-8".into()),
    ];
    t.spawn(&env).expect("worker forked")
}

/// A worker's stdout as lines, read as they come.
struct Lines {
    out: std::io::BufReader<std::fs::File>,
}

impl Lines {
    fn of(fd: OwnedFd) -> Self {
        Self {
            out: std::io::BufReader::new(std::fs::File::from(fd)),
        }
    }

    fn next(&mut self) -> String {
        use std::io::BufRead;
        let mut line = String::new();
        let _ = self.out.read_line(&mut line);
        line.trim_end().to_owned()
    }

    fn rest(mut self) -> String {
        let mut s = String::new();
        let _ = self.out.read_to_string(&mut s);
        s
    }
}

/// The worker's end, from its pidfd, within the deadline.
fn wait(w: &TemplateWorker) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(raw) = sandbox::pidfd_exit_status(w.pidfd.as_fd()) {
            return ExitStatus::from_raw(raw);
        }
        assert!(start.elapsed() < DEADLINE, "worker {} did not end", w.pid);
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn run(t: &Template, code: &str) -> (ExitStatus, String, String) {
    let w = start(t, code);
    let TemplateWorker {
        stdin,
        stdout,
        stderr,
        ..
    } = &w;
    drop(stdin.try_clone().ok());
    let err = std::fs::File::from(stderr.try_clone().unwrap());
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = { err }.read_to_string(&mut s);
        s
    });
    let out = Lines::of(stdout.try_clone().unwrap()).rest();
    let status = wait(&w);
    drop(w);
    (status, out, err.join().unwrap())
}

#[test]
fn a_template_worker_runs_ends_as_its_payload_did_and_gets_its_own_hash_seed() {
    let Some(t) = template() else { return };
    let (status, out, err) = run(&t, "print('hi', hash('seed')); sys.exit(3)");
    assert_eq!(status.code(), Some(3), "{out}\n{err}");
    assert!(out.starts_with("hi "), "{out}\n{err}");
    let (second, out2, _) = run(&t, "print('hi', hash('seed'))");
    assert_eq!(second.code(), Some(0));
    assert_ne!(out, out2, "two workers of one template share a hash seed");
    let (killed, _, _) = run(&t, "os.kill(os.getpid(), 9)");
    assert_eq!(killed.signal(), Some(9), "{killed:?}");
}

#[test]
fn a_killed_template_worker_dies_with_its_whole_group() {
    let Some(t) = template() else { return };
    let w = start(
        &t,
        "import subprocess\nos.fork() or os.setsid()\nprint('up', flush=True)\nimport time\ntime.sleep(60)",
    );
    let mut lines = Lines::of(w.stdout.try_clone().unwrap());
    assert_eq!(lines.next(), "up");
    sandbox::pidfd_kill_group(w.pidfd.as_fd());
    let status = wait(&w);
    assert_eq!(status.signal(), Some(9), "{status:?}");
    // Every process of the worker is gone: its stdout closes (no writer is left; the
    // child that left the session said `up` too).
    drop(w);
    let rest = lines.rest();
    assert!(rest.lines().all(|l| l == "up"), "{rest}");
}

#[test]
fn workers_of_one_template_cannot_signal_see_or_connect_to_each_other() {
    let Some(t) = template() else { return };
    // The holder: an abstract socket listening, a SysV segment, then waits on stdin.
    let holder = start(
        &t,
        r#"
import socket, ctypes
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(b"\0template-canary")
s.listen(1)
libc = ctypes.CDLL(None, use_errno=True)
shm = libc.shmget(0x4242, 4096, 0o1666)
print("shm", "OK" if shm >= 0 else "BLOCKED", flush=True)
print("pids", sorted(int(p) for p in os.listdir('/proc') if p.isdigit()), flush=True)
sys.stdin.read()
print("alive", flush=True)
"#,
    );
    let mut held = Lines::of(holder.stdout.try_clone().unwrap());
    let shm = held.next();
    let pids = held.next();
    assert!(pids.starts_with("pids "), "{shm} {pids}");
    let (status, out, err) = run(
        &t,
        r#"
import socket, ctypes, signal
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
attempt(lambda: c.connect(b"\0template-canary"))
libc = ctypes.CDLL(None, use_errno=True)
print("shm", libc.shmget(0x4242, 0, 0) >= 0, flush=True)
print("pids", sorted(int(p) for p in os.listdir('/proc') if p.isdigit()), flush=True)
hit = []
for pid in range(1, 4096):
    try:
        os.kill(pid, 0)
        hit.append(pid)
    except OSError:
        pass
print("signalled", hit, flush=True)
try:
    os.kill(-1, signal.SIGKILL)
except OSError as e:
    print("kill -1", e.errno, flush=True)
print("done", flush=True)
"#,
    );
    assert_eq!(status.code(), Some(0), "{out}\n{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0], "BLOCKED EPERM",
        "abstract socket reached: {out}\n{err}"
    );
    assert_eq!(lines[1], "shm False", "SysV segment shared ({shm}): {out}");
    // Its /proc shows its own processes only (none of the holder's).
    let own: Vec<u64> = parse_list(lines[2]);
    let holders: Vec<u64> = parse_list(&pids);
    assert!(
        own.iter().all(|p| !holders.contains(p)),
        "the holder's processes {holders:?} are visible: {own:?}"
    );
    assert!(own.len() <= 2, "more than its own processes: {own:?}");
    // Signals reach nothing but itself (its own pid is 2 in its namespace).
    assert_eq!(lines[3], "signalled [2]", "{out}");
    // The holder is still there and answers.
    let mut stdin = std::fs::File::from(holder.stdin.try_clone().unwrap());
    stdin.write_all(b"x").unwrap();
    drop(stdin);
    drop(holder.stdin);
    assert_eq!(held.next(), "alive");
    assert_eq!(wait_status(&holder.pidfd).code(), Some(0));
}

fn wait_status(pidfd: &OwnedFd) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(raw) = sandbox::pidfd_exit_status(pidfd.as_fd()) {
            return ExitStatus::from_raw(raw);
        }
        assert!(start.elapsed() < DEADLINE, "worker did not end");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn parse_list(line: &str) -> Vec<u64> {
    line.split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect()
}

#[test]
fn a_fork_bomb_in_one_worker_leaves_the_next_worker_its_processes() {
    let Some(t) = template() else { return };
    let bomb = start(
        &t,
        r#"
n = 0
while True:
    try:
        if os.fork() == 0:
            import time
            time.sleep(60)
            os._exit(0)
        n += 1
    except OSError:
        break
print("forked", n, flush=True)
sys.stdin.read()
"#,
    );
    let mut bombed = Lines::of(bomb.stdout.try_clone().unwrap());
    let forked = bombed.next();
    assert!(forked.starts_with("forked "), "{forked}");
    let (status, out, err) = run(
        &t,
        "n = 0\nfor _ in range(8):\n    pid = os.fork()\n    if pid == 0: os._exit(0)\n    os.waitpid(pid, 0); n += 1\nprint('forked', n)",
    );
    assert_eq!(status.code(), Some(0), "{out}\n{err}");
    assert_eq!(
        out.trim(),
        "forked 8",
        "the other worker's processes counted: {forked}"
    );
    sandbox::pidfd_kill_group(bomb.pidfd.as_fd());
    assert_eq!(wait_status(&bomb.pidfd).signal(), Some(9));
}

#[test]
fn a_killed_template_refuses_further_workers_and_its_workers_die() {
    let Some(t) = template() else { return };
    let w = start(&t, "print('up', flush=True)\nsys.stdin.read()");
    let mut lines = Lines::of(w.stdout.try_clone().unwrap());
    assert_eq!(lines.next(), "up");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(t.pid() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    assert_eq!(wait_status(&w.pidfd).signal(), Some(9));
    let start = Instant::now();
    while t.spawn(&[]).is_ok() {
        assert!(start.elapsed() < DEADLINE, "a dead template still forks");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_worker_killed_as_soon_as_it_is_forked_takes_nothing_else_with_it() {
    let Some(t) = template() else { return };
    let holder = start(
        &t,
        "print('up', flush=True)\nsys.stdin.read()\nprint('alive', flush=True)",
    );
    let mut held = Lines::of(holder.stdout.try_clone().unwrap());
    assert_eq!(held.next(), "up");
    // Killed before (or just after) its `setsid`: still in the template's process group.
    for _ in 0..20 {
        let w = start(&t, "sys.stdin.read()");
        sandbox::pidfd_kill_group(w.pidfd.as_fd());
        assert_eq!(wait_status(&w.pidfd).signal(), Some(9));
    }
    assert!(t.is_alive(), "killing a worker killed its template");
    let (status, out, _) = run(&t, "print('next')");
    assert_eq!((status.code(), out.trim()), (Some(0), "next"));
    drop(holder.stdin);
    assert_eq!(held.next(), "alive", "killing a worker killed another");
}
