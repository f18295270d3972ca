//! How long the host is blocked starting one child: `posix_spawn` (what `sandbox::command`
//! gives now: no `pre_exec` hook) against a fork of the host (the same command with a no-op
//! `pre_exec` hook, which makes the standard library fork). The host is made to look like the
//! server: `RSS_MB` of touched memory and `THREADS` idle threads (default 20 and 8).
//! The child is the helper (`sandbox-probe`, build it first) in its unconfined mode running
//! `/bin/true`; the time is `Command::spawn`, which returns once the child has executed.
//!
//! `cargo build --release -p code-executor-mcp-sandbox --bin sandbox-probe --example spawn_cost`
//! then `target/release/examples/spawn_cost [RSS_MB] [THREADS]` (docs/performance.md).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::Instant;

fn main() {
    let arg = |n: usize, default: usize| {
        std::env::args()
            .nth(n)
            .and_then(|a| a.parse().ok())
            .unwrap_or(default)
    };
    let (rss_mb, threads) = (arg(1, 20), arg(2, 8));
    let ballast = vec![1u8; rss_mb << 20];
    for _ in 0..threads {
        std::thread::spawn(std::thread::park);
    }
    let exe = std::env::current_exe().unwrap();
    let helper = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("sandbox-probe");
    let target = sandbox::WorkerCommand {
        program: "/bin/true".into(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
    };
    let policy = sandbox::SandboxPolicy::new(sandbox::SandboxMode::Disabled, Some(helper));
    let mut times = [Vec::new(), Vec::new()];
    for i in 0..60 {
        // Alternately, so that both meet the same load.
        for forked in [i % 2 == 0, i % 2 != 0] {
            let mut cmd = sandbox::command(&target, &policy).expect("command");
            if forked {
                // SAFETY: the hook does nothing; it only makes the standard library fork.
                unsafe { cmd.pre_exec(|| Ok(())) };
            }
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let start = Instant::now();
            let mut child = cmd.spawn().expect("spawn");
            times[usize::from(forked)].push(start.elapsed().as_secs_f64() * 1e3);
            child.wait().unwrap();
        }
    }
    for (name, t) in ["posix_spawn", "fork + pre_exec"].iter().zip(&mut times) {
        t.sort_by(f64::total_cmp);
        println!(
            "{rss_mb} MB, {threads} threads: {name}: median {:.3} ms, min {:.3} ms",
            t[t.len() / 2],
            t[0]
        );
    }
    drop(ballast);
}
