//! Back-to-back starts: every sandbox of a thousand, started four at a time, must come up. A
//! setup step that races with another process of the same sandbox (or with a concurrent
//! sandbox) shows up here as an exit with `EXIT_SETUP_FAILED`. The race this was written for
//! (the outer helper opening `/dev/null` inside the half-built view, which made the root's
//! read-only remount fail with EBUSY) struck about once in 2,000 to 6,000 starts.
//!
//! `SANDBOX_STRESS_SPAWNS` and `SANDBOX_STRESS_THREADS` raise the counts for a manual run.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use sandbox::SandboxMode::Enforce;

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn hundreds_of_sandboxes_started_in_parallel_all_come_up() {
    if skip_unless_sandbox_available() {
        return;
    }
    let spawns = count("SANDBOX_STRESS_SPAWNS", 1000);
    // More starters than cores: a helper process that is scheduled late is what loses a race.
    let threads = count("SANDBOX_STRESS_THREADS", 4);
    let fx = Fixture::new("stress");
    let policy = fx.policy(Enforce);
    // The payload writes to stdout, as a worker's first frame does.
    let payload = sh("echo up");
    let next = AtomicUsize::new(0);
    let failures: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while next.fetch_add(1, Ordering::Relaxed) < spawns {
                    let mut cmd = sandbox::command(&payload, &policy).unwrap();
                    cmd.stdin(Stdio::null());
                    let out = cmd.output().unwrap();
                    let stdout = String::from_utf8_lossy(&out.stdout);
                    if !out.status.success() || stdout != "up\n" {
                        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
                        let key = format!("{}: {stdout:?} {stderr}", out.status);
                        *failures.lock().unwrap().entry(key).or_default() += 1;
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {spawns} sandboxes failed to come up: {failures:#?}",
        failures.values().sum::<usize>()
    );
}
