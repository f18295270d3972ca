//! The escape suite in Python, through the real server: a real MCP client calls
//! `execute_python` on the built binary, which runs the code in a sandboxed CPython worker.
//!
//! One test per attack, named after it. Each asserts that the attack fails (the code reports
//! `BLOCKED: ...`, never `ESCAPED: ...`, and leaves no trace on the host) AND that the server
//! still answers. Several attacks defeat any in-language restriction on purpose (walking
//! `object.__subclasses__()`, ctypes raw syscalls, writing `/proc/self/mem`): only the OS
//! confinement can stop them. A missing kernel feature prints `SKIP: reason` loudly, or fails
//! the test when `CODE_EXECUTOR_REQUIRE_SANDBOX=1` (scripts/test.sh and CI set it).
//!
//! `attacks_succeed_without_the_sandbox` runs some of the same attack code with
//! `--sandbox none` and asserts that it escapes: the suite can fail.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::{Harness, TempDir, set_mode, skip_loudly, skip_or_fail_sandbox};

use crate::common::EXE;

const CANARY: &str = "canary-secret-7f3a9c";
const UPSTREAM_TOKEN: &str = "upstream-token-55e1";

/// The server under attack, with a home directory holding a planted key that everyone on the
/// host could read (so only the sandbox's view can keep it out), a canary secret in its
/// environment and an upstream token in its config file.
struct Target {
    h: Harness,
    home: TempDir,
    key: PathBuf,
}

async fn target_with(sandbox: &str) -> Option<Target> {
    let home = TempDir::new("home");
    let ssh = home.0.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    set_mode(&ssh, 0o755);
    let key = ssh.join("id_rsa");
    std::fs::write(&key, "PLANTED-PRIVATE-KEY\n").unwrap();
    set_mode(&key, 0o644);
    let home_str = home.0.display().to_string();
    let h = Harness::start(
        EXE.as_ref(),
        json!({ "fx": {"command": test_support::workspace_bin("fixture-server"), "args": ["fx"],
                       "env": {"API_TOKEN": UPSTREAM_TOKEN}} }),
        &[
            "--sandbox",
            sandbox,
            "--pool-size",
            "0",
            "--python-pool-size",
            "1",
        ],
        &[("CANARY_SECRET", CANARY), ("HOME", &home_str)],
    )
    .await;
    let (v, is_error) = h.exec_python("1 + 1").await;
    if is_error {
        let reason = format!("{}: {}", v["error"]["name"], v["error"]["message"]);
        if sandbox == "enforce" && reason.contains("refusing to run code") {
            skip_or_fail_sandbox(&format!(
                "the sandbox cannot be set up on this machine: {reason}"
            ));
            return None;
        }
        panic!("a trivial execution failed: {reason}");
    }
    Some(Target { h, home, key })
}

async fn target() -> Option<Target> {
    target_with("enforce").await
}

/// Whether every execution runs in a session of its own (see `test_support::IN_SESSION`), as
/// a Python literal.
fn in_session() -> &'static str {
    if std::env::var_os(test_support::IN_SESSION).is_some() {
        "True"
    } else {
        "False"
    }
}

impl Target {
    async fn run(&self, code: &str, timeout_ms: u64) -> (Value, bool) {
        self.h
            .exec_python_with(json!({"code": code, "timeoutMs": timeout_ms}))
            .await
    }

    /// Runs an attack whose code evaluates to `BLOCKED: ...` or `ESCAPED: ...`.
    async fn attack(&self, code: &str) -> String {
        let (v, is_error) = self.run(code, 20_000).await;
        assert!(!is_error, "the attack code itself failed: {v}");
        let r = v["result"].as_str().unwrap_or_default().to_string();
        // The outcome of every attack is printed (`--nocapture`), SKIP lines loudly.
        eprintln!("{r}");
        r
    }

    async fn blocked(&self, code: &str) -> String {
        let r = self.attack(code).await;
        assert!(
            r.starts_with("BLOCKED") || r.starts_with("SKIP:"),
            "the attack escaped: {r}"
        );
        assert!(!r.contains("ESCAPED"), "the attack escaped: {r}");
        if let Some(reason) = r.strip_prefix("SKIP:") {
            // The attack could not be tried inside the sandbox (e.g. a stdlib module missing
            // from the view): as much a sandbox problem as a kernel that cannot confine.
            skip_or_fail_sandbox(reason.trim());
        }
        self.assert_alive().await;
        r
    }

    /// The server still answers, and still runs code.
    async fn assert_alive(&self) {
        let (v, is_error) = self.h.exec_python("'alive'").await;
        assert!(!is_error, "the server no longer runs code: {v}");
        assert_eq!(v["result"], "alive");
        let r = self.h.call("list_servers", json!({})).await;
        assert!(r.structured_content.is_some());
    }

    fn pid(&self) -> u32 {
        self.h.pid.unwrap()
    }

    /// Python payload processes under the server (the pool's idle one included).
    fn python_descendants(&self) -> Vec<(u32, String)> {
        descendants(self.pid())
            .into_iter()
            .filter(|(_, comm)| comm.starts_with("python"))
            .collect()
    }

    /// Waits until at most `n` Python processes run under the server.
    async fn assert_no_leftovers(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = self.python_descendants();
            if left.len() <= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "processes left behind after the execution: {left:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Every process below `root` on the host, as (pid, comm).
fn descendants(root: u32) -> Vec<(u32, String)> {
    let mut parent = std::collections::HashMap::new();
    let mut comm = std::collections::HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_string();
        let ppid: u32 = stat[close + 2..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        parent.insert(pid, ppid);
        comm.insert(pid, name);
    }
    let mut out = Vec::new();
    for (&pid, _) in parent.iter() {
        let mut p = pid;
        let mut hops = 0;
        while p > 1 && hops < 64 {
            p = parent.get(&p).copied().unwrap_or(0);
            if p == root {
                out.push((pid, comm[&pid].clone()));
                break;
            }
            hops += 1;
        }
    }
    out
}

fn py_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn read_file_attack(path: &str) -> String {
    format!(
        "try:\n    data = open({p}, 'rb').read()\n    r = 'ESCAPED: read %d bytes: %r' % (len(data), data[:40])\nexcept OSError as e:\n    r = 'BLOCKED: %r' % e\nr",
        p = py_str(path)
    )
}

// ------------------------------------------------------------------------------- files

#[tokio::test]
async fn read_etc_shadow() {
    let Some(t) = target().await else { return };
    t.blocked(&read_file_attack("/etc/shadow")).await;
}

#[tokio::test]
async fn read_a_key_planted_in_the_servers_home() {
    let Some(t) = target().await else { return };
    let r = t.blocked(&read_file_attack(t.key.to_str().unwrap())).await;
    assert!(!r.contains("PLANTED"), "{r}");
    let home = t.home.0.display().to_string();
    t.blocked(&format!(
        "import os\ntry:\n    r = 'ESCAPED: ' + repr(os.listdir({h}))\nexcept OSError as e:\n    r = 'BLOCKED: %r' % e\nr",
        h = py_str(&home)
    ))
    .await;
}

#[tokio::test]
async fn read_the_servers_config_file_with_an_upstream_token() {
    let Some(t) = target().await else { return };
    let config = t.h.config_path().unwrap().display().to_string();
    let r = t.blocked(&read_file_attack(&config)).await;
    assert!(!r.contains(UPSTREAM_TOKEN), "{r}");
}

#[tokio::test]
async fn read_proc_environ_of_the_server() {
    let Some(t) = target().await else { return };
    let r = t
        .blocked(&read_file_attack(&format!("/proc/{}/environ", t.pid())))
        .await;
    assert!(!r.contains(CANARY), "{r}");
}

#[tokio::test]
async fn list_proc_and_see_host_processes() {
    let Some(t) = target().await else { return };
    t.blocked(&format!(
        "import os\npids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n\
         r = ('ESCAPED: ' if {pid} in pids or len(pids) > 5 else 'BLOCKED: only ') + repr(pids)\nr",
        pid = t.pid()
    ))
    .await;
}

#[tokio::test]
async fn write_outside_scratch() {
    let Some(t) = target().await else { return };
    let marker = format!("cem-escape-write-{}", std::process::id());
    let host_tmp = std::env::temp_dir().join(&marker);
    t.blocked(&format!(
        r#"
import os
wrote = []
# In a session the working directory is its workspace, writable by design.
for d in ['/tmp', '/', '/usr/lib', '/dev', '/dev/shm', '/proc', '/var/tmp', {home}] + ([] if {in_session} else [os.getcwd()]):
    try:
        with open(os.path.join(d, {m}), 'w') as f:
            f.write('x')
        wrote.append(d)
    except OSError:
        pass
'ESCAPED: wrote in %r' % wrote if wrote else 'BLOCKED: no writable directory'
"#,
        m = py_str(&marker),
        home = py_str(&t.home.0.display().to_string()),
        in_session = in_session(),
    ))
    .await;
    assert!(
        !host_tmp.exists(),
        "{} appeared on the host",
        host_tmp.display()
    );
    assert!(!t.home.0.join(&marker).exists());
}

#[tokio::test]
async fn fill_the_disk() {
    let Some(t) = target().await else { return };
    // In a session the working directory is its workspace, writable up to its quota by design
    // (the execution suite's `sessions` holds the quota's tests).
    t.blocked(&format!(
        r#"
import os, tempfile
total = 0
for d in ['/tmp', '/', '/dev/shm', '/var/tmp'] + ([] if {} else [os.getcwd()]):
    try:
        with open(os.path.join(d, 'fill'), 'wb') as f:
            for _ in range(256):
                f.write(b'\0' * (1 << 20))
                total += 1 << 20
    except OSError:
        pass
try:
    tempfile.mkstemp(dir='/tmp')
    total += 1
except OSError:
    pass
'ESCAPED: wrote %d bytes' % total if total else 'BLOCKED: nothing could be written'
"#,
        in_session()
    ))
    .await;
}

// ----------------------------------------------------------------------------- network

#[tokio::test]
async fn connect_to_a_canary_listener_on_localhost_v4_and_v6() {
    let Some(t) = target().await else { return };
    let v4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    v4.set_nonblocking(true).unwrap();
    let v6 = match std::net::TcpListener::bind("[::1]:0") {
        Ok(l) => Some(l),
        Err(e) => {
            skip_loudly(&format!(
                "no IPv6 loopback on this host ({e}); testing 127.0.0.1 only"
            ));
            None
        }
    };
    let mut targets = vec![format!(
        "('127.0.0.1', {})",
        v4.local_addr().unwrap().port()
    )];
    if let Some(l) = &v6 {
        l.set_nonblocking(true).unwrap();
        targets.push(format!("('::1', {})", l.local_addr().unwrap().port()));
    }
    t.blocked(&format!(
        r#"
import socket
out = []
for addr in [{targets}]:
    try:
        socket.create_connection(addr, timeout=3).close()
        out.append('ESCAPED: connected to %r' % (addr,))
    except OSError as e:
        out.append('blocked %r: %r' % (addr, e))
('ESCAPED ' if any(o.startswith('ESCAPED') for o in out) else 'BLOCKED ') + repr(out)
"#,
        targets = targets.join(", ")
    ))
    .await;
    assert!(
        v4.accept().is_err(),
        "the 127.0.0.1 canary got a connection"
    );
    if let Some(l) = v6 {
        assert!(l.accept().is_err(), "the ::1 canary got a connection");
    }
}

#[tokio::test]
async fn resolve_a_name() {
    let Some(t) = target().await else { return };
    t.blocked(
        r#"
import socket
out = []
for name in ['example.com', 'localhost']:
    try:
        out.append('ESCAPED: %s -> %r' % (name, socket.getaddrinfo(name, 443)[0][4]))
    except OSError as e:
        out.append('blocked %s: %r' % (name, e))
('ESCAPED ' if any(o.startswith('ESCAPED') for o in out) else 'BLOCKED ') + repr(out)
"#,
    )
    .await;
}

#[tokio::test]
async fn open_raw_packet_netlink_and_vsock_sockets() {
    let Some(t) = target().await else { return };
    t.blocked(
        r#"
import socket
tries = [
    ('raw', socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
    ('inet', socket.AF_INET, socket.SOCK_STREAM, 0),
    ('inet6', socket.AF_INET6, socket.SOCK_DGRAM, 0),
    ('packet', socket.AF_PACKET, socket.SOCK_RAW, 0),
    ('netlink', socket.AF_NETLINK, socket.SOCK_RAW, 0),
    ('vsock', getattr(socket, 'AF_VSOCK', 40), socket.SOCK_STREAM, 0),
]
opened = []
for name, fam, kind, proto in tries:
    try:
        socket.socket(fam, kind, proto).close()
        opened.append(name)
    except OSError:
        pass
'ESCAPED: opened %r' % opened if opened else 'BLOCKED: no socket family but unix'
"#,
    )
    .await;
}

#[tokio::test]
async fn connect_to_host_unix_sockets() {
    let Some(t) = target().await else { return };
    let dir = TempDir::new("unix");
    let path = dir.0.join("canary.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    set_mode(&path, 0o777);
    listener.set_nonblocking(true).unwrap();
    let abstract_name = format!("cem-canary-{}", std::process::id());
    let abstract_listener = {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
    };
    abstract_listener.set_nonblocking(true).unwrap();
    t.blocked(&format!(
        r#"
import socket
out = []
for addr in [{p}, '\0' + {a}]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(addr)
        out.append('ESCAPED: connected to %r' % addr)
    except OSError as e:
        out.append('blocked %r: %r' % (addr, e))
('ESCAPED ' if any(o.startswith('ESCAPED') for o in out) else 'BLOCKED ') + repr(out)
"#,
        p = py_str(&path.display().to_string()),
        a = py_str(&abstract_name),
    ))
    .await;
    assert!(listener.accept().is_err());
    assert!(abstract_listener.accept().is_err());
}

// --------------------------------------------------------------------------- processes

#[tokio::test]
async fn fork_bomb() {
    let Some(t) = target().await else { return };
    t.blocked(
        r#"
import os, time
n = 0
err = None
while n < 10000:
    try:
        pid = os.fork()
    except OSError as e:
        err = e
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    n += 1
('BLOCKED' if err is not None and n < 32 else 'ESCAPED') + ': %d forks, then %r' % (n, err)
"#,
    )
    .await;
    t.assert_no_leftovers(1).await;
}

#[tokio::test]
async fn os_fork_loops() {
    let Some(t) = target().await else { return };
    // The classic bomb: every process forks forever. It must end (error or deadline) and
    // leave nothing behind.
    let started = Instant::now();
    let (v, _) = t.run("import os\nwhile True:\n    os.fork()", 3_000).await;
    assert!(started.elapsed() < Duration::from_secs(15), "{v}");
    t.assert_alive().await;
    t.assert_no_leftovers(1).await;
}

#[tokio::test]
async fn spawn_a_shell() {
    let Some(t) = target().await else { return };
    t.blocked(
        r#"
import os, subprocess
out = []
for argv in (['/bin/sh', '-c', 'echo pwned'], ['sh', '-c', 'echo pwned'], ['/usr/bin/bash', '-c', 'echo pwned']):
    try:
        out.append(subprocess.run(argv, capture_output=True, timeout=5).stdout.decode())
    except (OSError, subprocess.SubprocessError) as e:
        out.append('blocked: %r' % e)
rc = os.system('echo pwned')
escaped = rc == 0 or any('pwned' in o for o in out)
('ESCAPED' if escaped else 'BLOCKED') + ': system rc %d, %r' % (rc, out)
"#,
    )
    .await;
}

#[tokio::test]
async fn kill_the_parent_and_the_server() {
    let Some(t) = target().await else { return };
    let (v, is_error) = t
        .run(
            &format!(
                r#"
import os, signal
sent = []
for pid in (os.getppid(), 1, {server}):
    try:
        os.kill(pid, signal.SIGKILL)
        sent.append(pid)
    except OSError as e:
        pass
'still running after signalling %r' % sent
"#,
                server = t.pid()
            ),
            10_000,
        )
        .await;
    // The sandbox's init ignores signals from inside, and the server is not visible: the
    // execution finishes normally and the server answers.
    assert!(!is_error, "{v}");
    assert!(
        v["result"]
            .as_str()
            .unwrap()
            .starts_with("still running after"),
        "{v}"
    );
    t.assert_alive().await;
}

#[tokio::test]
async fn a_daemonised_grandchild_dies_with_the_execution() {
    let Some(t) = target().await else { return };
    let nonce = format!("cem-daemon-canary-{}", std::process::id());
    let (v, is_error) = t
        .run(
            &format!(
                r#"
import os, sys, time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, b'%d' % os.getpid())
        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(120)', {n}])
    os._exit(0)
os.close(w)
pid = os.read(r, 64)
time.sleep(0.3)
'daemon started: ' + pid.decode()
"#,
                n = py_str(&nonce)
            ),
            10_000,
        )
        .await;
    assert!(!is_error, "{v}");
    assert!(
        v["result"].as_str().unwrap().starts_with("daemon started"),
        "{v}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive: Vec<u32> = descendants(t.pid())
            .into_iter()
            .map(|(p, _)| p)
            .chain(all_pids())
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .map(|c| String::from_utf8_lossy(&c).contains(&nonce))
                    .unwrap_or(false)
            })
            .collect();
        if alive.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the daemonised grandchild survived the execution: {alive:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    t.assert_alive().await;
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse().ok())
        .collect()
}

// ------------------------------------------------- attacks on in-language restrictions

#[tokio::test]
async fn walk_object_subclasses_to_os_and_subprocess() {
    let Some(t) = target().await else { return };
    let config = t.h.config_path().unwrap().display().to_string();
    t.blocked(&format!(
        r#"
out = []
wrap = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]
g = wrap.__init__.__globals__
for path in ('/etc/shadow', {cfg}):
    try:
        fd = g['open'](path, g['O_RDONLY'])
        out.append('ESCAPED: opened %s: %r' % (path, g['read'](fd, 200)))
    except OSError as e:
        out.append('blocked open %s: %r' % (path, e))
rc = g['system']('cat /etc/shadow')
out.append(('ESCAPED' if rc == 0 else 'blocked') + ' system rc %d' % rc)
importer = [c for c in object.__subclasses__() if c.__name__ == 'BuiltinImporter'][0]
posix = importer.load_module('posix')
try:
    pid = posix.posix_spawn('/bin/sh', ['/bin/sh', '-c', 'true'], {{}})
    out.append('ESCAPED: spawned a shell %d' % pid)
except OSError as e:
    out.append('blocked spawn: %r' % e)
('ESCAPED ' if any(o.startswith('ESCAPED') for o in out) else 'BLOCKED ') + repr(out)
"#,
        cfg = py_str(&config)
    ))
    .await;
}

#[tokio::test]
async fn ctypes_raw_syscalls() {
    let Some(t) = target().await else { return };
    t.blocked(
        r#"
try:
    import ctypes
except ImportError as e:
    r = 'SKIP: ctypes is not importable here (%s); raw syscalls not tested' % e
else:
    libc = ctypes.CDLL(None, use_errno=True)
    calls = [
        ('unshare(CLONE_NEWUSER)', 272, 0x10000000),
        ('unshare(CLONE_NEWNET)', 272, 0x40000000),
        ('socket(AF_INET, SOCK_STREAM)', 41, 2, 1, 0),
        ('socket(AF_NETLINK)', 41, 16, 3, 0),
        ('ptrace(PTRACE_ATTACH, 1)', 101, 16, 1, 0, 0),
        ('mount(tmpfs on /tmp)', 165, b'none', b'/tmp', b'tmpfs', 0, 0),
        ('setns(0, 0)', 308, 0, 0),
        ('bpf(BPF_PROG_LOAD)', 321, 5, 0, 0),
        ('perf_event_open', 298, 0, 0, -1, -1, 0),
        ('keyctl(GET_KEYRING_ID)', 250, 0, -4, 0),
        ('io_uring_setup', 425, 1, 0),
        ('init_module', 175, 0, 0, b''),
        ('process_vm_readv(1)', 310, 1, 0, 0, 0, 0, 0),
    ]
    ok = []
    for name, *args in calls:
        if libc.syscall(*args) >= 0:
            ok.append(name)
    r = ('ESCAPED: %r succeeded' % ok) if ok else 'BLOCKED: every raw syscall failed'
r
"#,
    )
    .await;
}

#[tokio::test]
async fn write_proc_self_mem() {
    let Some(t) = target().await else { return };
    t.blocked(
        r#"
target = bytes(bytearray(b'Z' * 16))
try:
    with open('/proc/self/mem', 'r+b', buffering=0) as f:
        f.seek(id(target) + 32)
        f.write(b'PWN!')
    r = 'ESCAPED: rewrote our own memory: %r' % target[:4]
except OSError as e:
    r = 'BLOCKED: %r' % e
r
"#,
    )
    .await;
}

// --------------------------------------------------------------------------- resources

#[tokio::test]
async fn a_gigabyte_of_output() {
    let Some(t) = target().await else { return };
    let started = Instant::now();
    let (v, _) = t
        .run(
            "import os\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    print(chunk)\n\
             raw = b'y' * (1 << 20)\nfor _ in range(1024):\n    os.write(2, raw)\n    os.write(1, raw)\n'done'",
            // Ends by itself or at this deadline; either way the output stays capped.
            10_000,
        )
        .await;
    let kept: usize = v["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["text"].as_str().unwrap_or("").len())
        .sum();
    assert!(kept <= 1024 * 1024 + 200, "{kept} bytes of logs kept");
    eprintln!(
        "1 GiB of output: {:?}, error {:?}",
        started.elapsed(),
        v.get("error")
    );
    t.assert_alive().await;
    let rss = std::fs::read_to_string(format!("/proc/{}/status", t.pid()))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap();
    assert!(rss < 200 * 1024, "server RSS grew to {rss} KiB");
}

#[tokio::test]
async fn exhaust_file_descriptors() {
    let Some(t) = target().await else { return };
    t.blocked(
        r#"
import os
fds = []
try:
    while len(fds) < 100000:
        fds.append(os.open('/dev/null', os.O_RDONLY))
    r = 'ESCAPED: opened %d descriptors' % len(fds)
except OSError as e:
    r = ('BLOCKED' if len(fds) < 256 else 'ESCAPED') + ': stopped after %d: %r' % (len(fds), e)
r
"#,
    )
    .await;
}

#[tokio::test]
async fn canary_secret_is_invisible_to_code_and_absent_from_results() {
    let Some(t) = target().await else { return };
    let (v, is_error) = t
        .run(
            r#"
import os
env = dict(os.environ)
print(env)
try:
    init = open('/proc/1/environ', 'rb').read().decode(errors='replace')
except OSError as e:
    init = repr(e)
[sorted(env), init]
"#,
            10_000,
        )
        .await;
    assert!(!is_error, "{v}");
    let text = v.to_string();
    assert!(!text.contains(CANARY), "the canary leaked: {text}");
    assert!(
        !text.contains(UPSTREAM_TOKEN),
        "the upstream token leaked: {text}"
    );
    assert_eq!(v["result"][0], json!(["LANG"]), "{v}");
    t.assert_alive().await;
}

// ------------------------------------------------------------ the suite can fail

#[tokio::test]
async fn attacks_succeed_without_the_sandbox() {
    let t = target_with("none").await.unwrap();
    let r = t.attack(&read_file_attack(t.key.to_str().unwrap())).await;
    assert!(r.starts_with("ESCAPED"), "{r}");
    assert!(r.contains("PLANTED"), "{r}");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let r = t
        .attack(&format!(
            "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3).close()\n    r = 'ESCAPED: connected'\nexcept OSError as e:\n    r = 'BLOCKED: %r' % e\nr"
        ))
        .await;
    assert!(r.starts_with("ESCAPED"), "{r}");
    let (v, _) = t.h.exec_python("'x'").await;
    assert!(
        v["warning"].as_str().unwrap_or("").contains("UNSANDBOXED"),
        "{v}"
    );
    // Keep the listener alive until the attack ran.
    drop(listener);
    let _ = std::io::stdout().flush();
}
