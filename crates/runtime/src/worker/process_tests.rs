//! Tests of `process`.

use super::*;
use std::os::fd::AsFd;

/// A [`FrameReader`] over a child that writes `script`'s output, and a probe of its pipe.
fn frames_of(script: &str) -> (tokio::process::Child, FrameReader, std::os::fd::OwnedFd) {
    let mut child = tokio::process::Command::new("sh")
        .args(["-c", script])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("sh runs");
    let stdout = child.stdout.take().unwrap();
    let probe = stdout.as_fd().try_clone_to_owned().unwrap();
    let stdout = PipeReader::from_owned_fd(stdout.into_owned_fd().unwrap()).unwrap();
    (child, FrameReader::new(stdout), probe)
}

#[tokio::test]
async fn a_large_frame_widens_the_workers_pipe_and_a_small_one_does_not() {
    let small = r#"{"type":"log","level":"info","text":"hi"}"#;
    assert!(small.len() < 64);
    let (_child, mut frames, probe) = frames_of(&format!(
        "printf '\\000\\000\\000\\{:03o}{small}'; sleep 5",
        small.len()
    ));
    assert!(matches!(
        frames.recv().await,
        Some(Ok(WorkerFrame::Log { .. }))
    ));
    assert!(tools::pipes::size(&probe) < tools::pipes::WIDE_BYTES);

    // A 2 MiB frame (its body is not JSON: the reader says so, after the whole of it).
    let (_child, mut frames, probe) =
        frames_of("printf '\\000\\040\\000\\000'; head -c 2097152 /dev/zero; sleep 5");
    let got = frames.recv().await;
    assert!(
        matches!(&got, Some(Err(e)) if e.contains("malformed frame")),
        "{got:?}"
    );
    assert_eq!(tools::pipes::size(&probe), tools::pipes::WIDE_BYTES);
}

#[tokio::test]
async fn bytes_a_worker_wrote_unasked_are_seen_without_reading_them() {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let (_quiet, frames, _) = frames_of("sleep 5");
    assert!(!frames.has_unread());
    let (_child, frames, probe) = frames_of("printf x; sleep 5");
    // Waits for the byte to be in the pipe (an event, not a delay).
    let mut fds = [PollFd::new(probe.as_fd(), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::from(5000u16)).unwrap();
    assert!(frames.has_unread());
}

#[test]
fn every_live_process_of_a_tree_counts() {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    // A shell and two children, and a grandchild; "ready" once they are all started.
    let mut child = std::process::Command::new("sh")
        .args([
            "-c",
            "sleep 30 & sh -c 'sleep 30 & echo ready; wait' & wait",
        ])
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let counted = live_processes(child.id());
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .ok();
    let _ = child.wait();
    assert_eq!(counted, 4);
    assert_eq!(
        live_processes(child.id()),
        0,
        "a reaped process counts nothing"
    );
}

#[test]
fn leftovers_say_what_is_left() {
    let l = |threads, processes, timers| {
        Leftovers {
            threads,
            processes,
            timers,
        }
        .to_string()
    };
    assert_eq!(l(1, 0, 0), "1 thread");
    assert_eq!(l(3, 0, 0), "3 threads");
    assert_eq!(l(0, 1, 0), "1 child process");
    assert_eq!(l(2, 2, 0), "2 threads and 2 child processes");
    assert_eq!(l(0, 0, 1), "1 timer");
    assert_eq!(l(1, 2, 3), "1 thread, 2 child processes and 3 timers");
}
