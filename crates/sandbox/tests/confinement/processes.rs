//! Attacks on the process tree and on resources: each must fail (or be bounded) under Enforce.
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::sync::mpsc;
use std::time::Duration;

use crate::common::*;
use sandbox::SandboxMode::{Disabled, Enforce};
use sandbox::{SandboxMode, SandboxPolicy};

#[test]
fn fork_bomb_bounded_by_process_limit() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("forkbomb");
    let mut policy = fx.policy(Enforce);
    policy.limits.max_processes = 16;
    let payload = python(
        "import time\n\
         n = 0\n\
         while n < 10000:\n\
         \x20   try:\n\
         \x20       pid = os.fork()\n\
         \x20   except OSError as e:\n\
         \x20       print('BLOCKED', errno.errorcode[e.errno], n, flush=True)\n\
         \x20       break\n\
         \x20   if pid == 0:\n\
         \x20       time.sleep(60)\n\
         \x20       os._exit(0)\n\
         \x20   n += 1\n",
    );
    let out = run(&payload, &policy);
    // 16 processes for the payload: itself and 15 children.
    assert_eq!(out.lines(), ["BLOCKED EAGAIN 15"], "{out:?}");
}

/// Reads stdout lines on a thread; the channel closes at EOF, i.e. when every process holding
/// the pipe has died.
fn line_reader(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

const DAEMONISE: &str = "import time\n\
    pid = os.fork()\n\
    if pid == 0:\n\
    \x20   os.setsid()\n\
    \x20   if os.fork() == 0:\n\
    \x20       print('daemon', os.getpid(), flush=True)\n\
    \x20       time.sleep(60)\n\
    \x20       os._exit(0)\n\
    \x20   os._exit(0)\n\
    os.waitpid(pid, 0)\n\
    print('parent', flush=True)\n\
    time.sleep(60)\n";

/// Starts the payload, waits until both the parent and the daemonised grandchild have
/// reported, kills the group, and returns the daemon's pid (as the payload saw it) and whether
/// stdout reached EOF (every holder dead) within `wait`.
fn daemon_survives_kill_group(policy: &SandboxPolicy, wait: Duration) -> (i32, bool) {
    let mut child = spawn(&python(DAEMONISE), policy);
    let lines = line_reader(&mut child);
    let mut daemon = 0;
    let mut parent = false;
    while daemon == 0 || !parent {
        let line = lines.recv_timeout(DEADLINE).expect("payload reports");
        if let Some(pid) = line.strip_prefix("daemon ") {
            daemon = pid.parse().unwrap();
        } else if line == "parent" {
            parent = true;
        }
    }
    sandbox::kill_group(child.id());
    child.wait().unwrap();
    let eof = matches!(
        lines.recv_timeout(wait),
        Err(mpsc::RecvTimeoutError::Disconnected)
    );
    (daemon, eof)
}

#[test]
fn daemonised_grandchild_dies_with_kill_group() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("daemon");
    let (_, eof) = daemon_survives_kill_group(&fx.policy(Enforce), Duration::from_secs(10));
    assert!(
        eof,
        "a process of the sandbox still holds its stdout after kill_group"
    );

    // Unconfined, the daemon escapes the process group: the test can fail.
    let (daemon, eof) =
        daemon_survives_kill_group(&fx.policy(Disabled), Duration::from_millis(500));
    assert!(!eof, "unconfined daemon should have survived kill_group");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon),
        nix::sys::signal::Signal::SIGKILL,
    );
}

#[test]
fn payload_closing_stdout_is_seen_by_the_host() {
    if skip_unless_sandbox_available() {
        return;
    }
    // The helpers hold no copy of the payload's stdout: a long-lived worker that closes it is
    // seen at once, not when the whole sandbox exits.
    let fx = Fixture::new("stdout-eof");
    let mut child = spawn(
        &python("import time\nos.close(1)\ntime.sleep(60)"),
        &fx.policy(Enforce),
    );
    let lines = line_reader(&mut child);
    let eof = matches!(
        lines.recv_timeout(Duration::from_secs(10)),
        Err(mpsc::RecvTimeoutError::Disconnected)
    );
    sandbox::kill_group(child.id());
    child.wait().unwrap();
    assert!(eof, "stdout stayed open after the payload closed it");
}

#[test]
fn host_death_kills_the_sandbox() {
    if skip_unless_sandbox_available() {
        return;
    }
    for disabled in [false, true] {
        let fx = Fixture::new("hostdeath");
        // sandbox-probe plays the host: it spawns the payload through sandbox::command with
        // stdout inherited, then is killed without any chance to clean up.
        let mut host = std::process::Command::new(HELPER);
        host.arg("run");
        if disabled {
            host.arg("--disabled");
        }
        host.arg("--scratch").arg(fx.scratch.path());
        host.arg("--ro").arg(PYTHON_STDLIB);
        host.args([
            "--",
            PYTHON,
            "-I",
            "-c",
            "import time\nprint('up', flush=True)\ntime.sleep(60)",
        ]);
        host.stdout(std::process::Stdio::piped());
        let mut host = host.spawn().unwrap();
        let lines = line_reader(&mut host);
        assert_eq!(lines.recv_timeout(DEADLINE).unwrap(), "up");
        host.kill().unwrap();
        host.wait().unwrap();
        let eof = matches!(
            lines.recv_timeout(Duration::from_secs(10)),
            Err(mpsc::RecvTimeoutError::Disconnected)
        );
        assert!(
            eof,
            "disabled={disabled}: a sandbox process outlived its host"
        );
    }
}

const PTRACE_PARENT: &str = "import ctypes\n\
    libc = ctypes.CDLL(None, use_errno=True)\n\
    parent = os.getpid()\n\
    pid = os.fork()\n\
    if pid == 0:\n\
    \x20   if libc.ptrace(16, parent, 0, 0) == 0:\n\
    \x20       os.waitpid(parent, 0x40000000)\n\
    \x20       libc.ptrace(17, parent, 0, 0)\n\
    \x20       print('OK attached', flush=True)\n\
    \x20   else:\n\
    \x20       print('BLOCKED', errno.errorcode[ctypes.get_errno()], flush=True)\n\
    \x20   os._exit(0)\n\
    os.waitpid(pid, 0)\n";

#[test]
fn ptrace_the_parent() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("ptrace");
    let confined = run(&python(PTRACE_PARENT), &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["BLOCKED EPERM"], "{confined:?}");
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").unwrap_or_default();
    if nix::unistd::geteuid().is_root() && scope.trim() != "3" {
        let open = run(&python(PTRACE_PARENT), &fx.policy(Disabled));
        assert_eq!(open.lines(), ["OK attached"], "{open:?}");
    }
}

#[test]
fn read_parent_memory_with_process_vm_readv() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("vmread");
    let payload = python(
        "import ctypes\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         r = libc.process_vm_readv(os.getppid(), None, 0, None, 0, 0)\n\
         print('OK' if r == 0 else 'BLOCKED ' + errno.errorcode[ctypes.get_errno()])",
    );
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["BLOCKED EPERM"], "{confined:?}");
    let open = run(&payload, &fx.policy(Disabled));
    assert_eq!(open.lines(), ["OK"], "{open:?}");
}

#[test]
fn create_nested_user_namespace() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("unshare");
    let payload = python(
        "import ctypes\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         for flag in (0x10000000, 0x20000000, 0x40000000):\n\
         \x20   r = libc.unshare(flag)\n\
         \x20   print('OK' if r == 0 else 'BLOCKED ' + errno.errorcode[ctypes.get_errno()])",
    );
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["BLOCKED EPERM"; 3], "{confined:?}");
}

#[test]
fn memory_bomb_hits_address_space_limit() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("membomb");
    let mut policy = fx.policy(Enforce);
    policy.limits.address_space_bytes = 256 << 20;
    let payload = python(
        "try:\n\
         \x20   b = bytearray(1 << 30)\n\
         \x20   print('OK', len(b))\n\
         except MemoryError:\n\
         \x20   print('BLOCKED MemoryError')",
    );
    let confined = run(&payload, &policy);
    assert_eq!(confined.lines(), ["BLOCKED MemoryError"], "{confined:?}");
    let open = run(&payload, &fx.policy(Disabled));
    assert_eq!(open.lines(), [format!("OK {}", 1 << 30)], "{open:?}");
}

#[test]
fn file_size_limit() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("fsize");
    let mut policy = fx.policy(Enforce);
    policy.limits.max_file_size_bytes = 1 << 20;
    let payload = python(&format!(
        "f = open({:?}, 'wb', buffering=0)\nattempt(lambda: f.write(b'x' * (1 << 20)) + f.write(b'x' * (1 << 20)))",
        fx.scratch.path().join("big").display().to_string()
    ));
    let confined = run(&payload, &policy);
    assert_eq!(confined.lines(), ["BLOCKED EFBIG"], "{confined:?}");
    assert_eq!(
        std::fs::metadata(fx.scratch.path().join("big"))
            .unwrap()
            .len(),
        1 << 20
    );
    let open = run(&payload, &fx.policy(Disabled));
    assert_eq!(open.lines(), [format!("OK {}", 2 << 20)], "{open:?}");
}

#[test]
fn fd_exhaustion() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("fds");
    let mut policy = fx.policy(Enforce);
    policy.limits.max_open_files = 64;
    let payload = python(
        "fds = []\n\
         try:\n\
         \x20   while len(fds) < 100000:\n\
         \x20       fds.append(os.open('/dev/null', os.O_RDONLY))\n\
         \x20   print('OK', len(fds))\n\
         except OSError as e:\n\
         \x20   print('BLOCKED', errno.errorcode[e.errno], max(fds) < 64)",
    );
    let confined = run(&payload, &policy);
    assert_eq!(confined.lines(), ["BLOCKED EMFILE True"], "{confined:?}");
}

#[test]
fn cpu_burn_hits_cpu_limit() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("cpu");
    let mut policy = fx.policy(Enforce);
    policy.limits.cpu_seconds = 1;
    let out = run(&python("while True: pass"), &policy);
    // SIGXCPU at the soft limit; the helper dies of the same signal so the host sees it.
    assert_eq!(out.status.signal(), Some(nix::libc::SIGXCPU), "{out:?}");
}

#[test]
fn probe_reports_every_required_layer_enforced() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("probe");
    let report = sandbox::probe(&fx.policy(Enforce));
    println!("{report}");
    assert!(report.minimum_guarantee_met(), "{report}");
    assert!(sandbox::ensure_available(&fx.policy(Enforce)).is_ok());
    let landlock = report.layer(sandbox::layer::LANDLOCK).unwrap();
    if !landlock.enforced {
        skip_or_fail_sandbox(&format!(
            "(partial) Landlock not enforced on this kernel: {}",
            landlock.detail
        ));
    }
    let disabled = sandbox::probe(&fx.policy(Disabled));
    assert!(!disabled.minimum_guarantee_met());
    assert!(sandbox::ensure_available(&fx.policy(Disabled)).is_ok());
}

#[test]
fn enforce_without_helper_is_refused() {
    let policy = SandboxPolicy::new(SandboxMode::Enforce, None);
    let err = sandbox::command(&sh("true"), &policy).unwrap_err();
    assert!(err.to_string().contains("helper_exe"), "{err}");
    let report = sandbox::probe(&policy);
    assert!(!report.minimum_guarantee_met());
    let err = sandbox::ensure_available(&policy).unwrap_err();
    assert!(
        err.to_string()
            .contains("SandboxPolicy::helper_exe is required in Enforce mode"),
        "{err}"
    );
}

#[test]
fn helper_started_outside_command_refuses() {
    // Run directly (no own session, no parent-death signal, no config): must not run anything.
    let out = std::process::Command::new(HELPER)
        .args([sandbox::HELPER_ARG, "--config-fd=99"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(i32::from(sandbox::EXIT_BAD_INVOCATION)),
        "{out:?}"
    );
}

#[test]
fn helper_whose_parent_is_not_the_host_refuses() {
    // The helper arms its parent-death signal itself and then checks that its parent is the
    // host named on its command line: a host that died before (its children reparented)
    // or a helper started by anyone else is refused before anything is read or run.
    let out = std::process::Command::new(HELPER)
        .args([sandbox::HELPER_ARG, "--host-pid=1"])
        .env_clear()
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(i32::from(sandbox::EXIT_BAD_INVOCATION)),
        "{out:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the parent is not the host"), "{stderr}");
    // Our own pid passes that check: then a missing or malformed configuration is refused.
    let host = format!("--host-pid={}", std::process::id());
    for (env, expected) in [
        (None, "no configuration in the environment"),
        (Some("\u{1}x"), "malformed configuration"),
        (Some("program"), "configuration does not end with NUL"),
    ] {
        let mut cmd = std::process::Command::new(HELPER);
        cmd.args([sandbox::HELPER_ARG, host.as_str()]).env_clear();
        if let Some(value) = env {
            cmd.env("CODE_EXECUTOR_SANDBOX_CONFIG_0", value);
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(i32::from(sandbox::EXIT_BAD_INVOCATION)),
            "{out:?}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{expected}: {stderr}");
    }
}

#[test]
fn no_child_inherits_a_configuration_or_a_descriptor_of_another() {
    if skip_unless_sandbox_available() {
        return;
    }
    // The helper's configuration travels in its own environment, not in a descriptor: children
    // started at the same moment from other threads (confined and unconfined workers, and a
    // child forked with a `pre_exec` hook, as stdio upstreams are) hold only 0, 1 and 2 and see
    // exactly the environment they were given, nothing of another child's configuration.
    let fx = Fixture::new("inherit");
    let report = python(
        "import os\n\
         print(sorted(os.listdir('/proc/self/fd')))\n\
         print(sorted(os.environ))\n\
         print(b'SANDBOX' in open('/proc/self/environ', 'rb').read())",
    );
    let enforce = fx.policy(Enforce);
    let disabled = fx.policy(Disabled);
    let mut forked = fx.policy(Disabled);
    forked.helper_exe = None;
    let outcomes = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..3)
            .flat_map(|_| [&enforce, &disabled, &forked])
            .map(|policy| scope.spawn(|| (policy.mode, run(&report, policy))))
            .collect();
        runs.into_iter()
            .map(|r| r.join().unwrap())
            .collect::<Vec<_>>()
    });
    for (mode, out) in outcomes {
        assert!(out.status.success(), "{mode:?}: {out:?}");
        assert_eq!(
            out.lines(),
            ["['0', '1', '2', '3']", "['LC_ALL', 'PATH']", "False"],
            "{mode:?}: {out:?}"
        );
    }
}

#[test]
fn exec_failure_has_its_own_exit_code() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("noexec");
    // A file that exists on the host and is bound into the view, but is not executable.
    let mut cmd = sh("");
    cmd.program = "/usr/lib/os-release".into();
    cmd.args.clear();
    let out = run(&cmd, &fx.policy(Enforce));
    assert_eq!(
        out.status.code(),
        Some(i32::from(sandbox::EXIT_EXEC_FAILED)),
        "{out:?}"
    );
    assert!(out.stderr.contains("cannot execute"), "{out:?}");
}
