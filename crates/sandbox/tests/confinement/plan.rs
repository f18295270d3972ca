//! The view's plan, resolved by the host and checked by the helper: a path that changed
//! between the plan and the mount fails the view with a clear message, and a configuration
//! whose plan binds more than its paths lead to is refused.
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::*;
use sandbox::SandboxMode::Enforce;

fn output(mut command: Command) -> Output {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn refused_with(out: &Output, reason: &str) {
    assert_eq!(
        out.status.code(),
        Some(i32::from(sandbox::EXIT_SETUP_FAILED)),
        "{out:?}"
    );
    assert_eq!(text(&out.stdout), "", "nothing ran: {out:?}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("layer `filesystem-view`"), "{stderr}");
    assert!(stderr.contains(reason), "wanted {reason:?} in {stderr}");
}

/// Builds the command for `payload` (the host plans the view now), lets `change` alter the
/// host's files, then runs it.
fn plan_then_change(
    policy: &sandbox::SandboxPolicy,
    payload: &sandbox::WorkerCommand,
    change: impl FnOnce(),
) -> Output {
    let command = sandbox::command(payload, policy).unwrap();
    change();
    output(command)
}

#[test]
fn a_path_changed_between_plan_and_mount_fails_the_view() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("planchange");
    let home = fx.home.path();
    let project = home.join("outer").join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("notes"), "project notes\n").unwrap();
    let mut policy = fx.policy(Enforce);
    policy.data_paths = vec![project.clone()];
    // `sh` alone is in the view (with its libraries): its `read` shows a file's first line.
    let show = |path: &Path| {
        sh(&format!(
            "read -r l < {}/notes && echo \"$l\"; read -r l < {} && echo \"$l\"",
            path.display(),
            fx.secret.display()
        ))
    };

    // Unchanged: the data path is there, the secret beside it is not.
    let out = plan_then_change(&policy, &show(&project), || {});
    assert_eq!(text(&out.stdout), "project notes\n", "{out:?}");
    assert!(text(&out.stderr).contains("credentials"), "{out:?}");

    // The data path itself swapped for a symlink (to the directory holding the secret).
    let moved = home.join("project.moved");
    let out = plan_then_change(&policy, &show(&project), || {
        std::fs::rename(&project, &moved).unwrap();
        symlink(home, &project).unwrap();
    });
    refused_with(
        &out,
        "changed since the view was planned (it is a symlink now)",
    );
    assert!(!text(&out.stdout).contains(SECRET));
    std::fs::remove_file(&project).unwrap();
    std::fs::rename(&moved, &project).unwrap();

    // A directory on its way swapped for a symlink, even one to the same files: nothing the
    // host did not resolve is followed.
    let outer = home.join("outer");
    let outer_moved = home.join("outer.moved");
    let out = plan_then_change(&policy, &show(&project), || {
        std::fs::rename(&outer, &outer_moved).unwrap();
        symlink(&outer_moved, &outer).unwrap();
    });
    refused_with(
        &out,
        "changed since the view was planned (a symlink is on its way now)",
    );
    std::fs::remove_file(&outer).unwrap();
    std::fs::rename(&outer_moved, &outer).unwrap();

    // Removed.
    let out = plan_then_change(&policy, &show(&project), || {
        std::fs::rename(&project, &moved).unwrap();
    });
    refused_with(&out, "changed since the view was planned (it is gone)");
    std::fs::rename(&moved, &project).unwrap();

    // A symlink the plan followed, pointed elsewhere.
    let lib = home.join("lib");
    for version in ["v1", "v2"] {
        std::fs::create_dir_all(lib.join(version)).unwrap();
    }
    let current = lib.join("current");
    symlink("v1", &current).unwrap();
    let mut policy = fx.policy(Enforce);
    policy.read_only_paths.push(current.clone());
    let out = plan_then_change(&policy, &sh("echo ran"), || {
        std::fs::remove_file(&current).unwrap();
        symlink("v2", &current).unwrap();
    });
    refused_with(&out, "it leads to v2 now, not v1");

    // The symlink replaced by the directory it led to.
    let out = plan_then_change(&policy, &sh("echo ran"), || {
        std::fs::remove_file(&current).unwrap();
        std::fs::rename(lib.join("v1"), &current).unwrap();
    });
    refused_with(&out, "it is no longer a symlink");
    std::fs::rename(&current, lib.join("v1")).unwrap();

    // Back as it was planned: runs again.
    symlink("v1", &current).unwrap();
    let out = output(sandbox::command(&sh("echo ran"), &policy).unwrap());
    assert_eq!(text(&out.stdout), "ran\n", "{out:?}");
}

/// Prefix of the environment variables that carry the helper's configuration.
const CONFIG_ENV: &str = "CODE_EXECUTOR_SANDBOX_CONFIG_";

/// The configuration the host gave `command`: its environment variables, in order, unescaped
/// (`0x01 '0'` is NUL, `0x01 '1'` is `0x01`).
fn configuration_of(command: &Command) -> Vec<u8> {
    let mut chunks: Vec<(usize, Vec<u8>)> = command
        .get_envs()
        .filter_map(|(k, v)| {
            let i = k.to_str()?.strip_prefix(CONFIG_ENV)?.parse().ok()?;
            Some((i, v?.as_encoded_bytes().to_vec()))
        })
        .collect();
    chunks.sort();
    let mut bytes = Vec::new();
    for (_, chunk) in chunks {
        let mut it = chunk.into_iter();
        while let Some(b) = it.next() {
            bytes.push(match (b, b == 1) {
                (_, true) => match it.next() {
                    Some(b'0') => 0,
                    _ => 1,
                },
                (b, false) => b,
            });
        }
    }
    assert!(!bytes.is_empty(), "the host sends a configuration");
    bytes
}

/// Replaces `command`'s configuration with `bytes` (one variable).
fn set_configuration(command: &mut Command, bytes: &[u8]) {
    let names: Vec<_> = command
        .get_envs()
        .filter(|(k, _)| k.to_str().is_some_and(|k| k.starts_with(CONFIG_ENV)))
        .map(|(k, _)| k.to_owned())
        .collect();
    for name in names {
        command.env_remove(name);
    }
    let mut value = Vec::new();
    for &b in bytes {
        match b {
            0 => value.extend_from_slice(&[1, b'0']),
            1 => value.extend_from_slice(&[1, b'1']),
            b => value.push(b),
        }
    }
    command.env(
        format!("{CONFIG_ENV}0"),
        std::ffi::OsString::from_vec(value),
    );
}

#[test]
fn a_configuration_whose_plan_binds_more_than_its_paths_is_refused() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("planforged");
    let policy = fx.policy(Enforce);
    let payload = sh(&format!(
        "read -r l < {}; echo \"[$l]\"",
        fx.secret.display()
    ));

    // As the host wrote it: the secret is not in the view.
    let out = output(sandbox::command(&payload, &policy).unwrap());
    assert_eq!(text(&out.stdout), "[]\n", "{out:?}");
    assert!(text(&out.stderr).contains("No such file"), "{out:?}");

    // The same configuration with one more bind in its plan: the directory of the secret.
    let mut command = sandbox::command(&payload, &policy).unwrap();
    let bytes = configuration_of(&command);
    let fields: Vec<&[u8]> = bytes.split(|b| *b == 0).collect();
    let at = fields
        .iter()
        .position(|f| *f == b"plan")
        .expect("the host sends a plan");
    let steps: usize = std::str::from_utf8(fields[at + 1])
        .unwrap()
        .parse()
        .unwrap();
    let mut forged = Vec::new();
    for (i, field) in fields[..fields.len() - 1].iter().enumerate() {
        if i == at + 1 {
            forged.extend_from_slice((steps + 1).to_string().as_bytes());
        } else {
            forged.extend_from_slice(field);
        }
        forged.push(0);
    }
    forged.extend_from_slice(b"pbind\0rd");
    forged.extend_from_slice(fx.home.path().as_os_str().as_encoded_bytes());
    forged.push(0);
    set_configuration(&mut command, &forged);

    let out = output(command);
    refused_with(&out, "which no configured path resolves to; refusing it");
    assert!(!text(&out.stdout).contains(SECRET));
}

#[test]
fn a_scratch_mount_point_under_directories_the_host_lacks_is_made_in_the_view() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("planat");
    let at = format!("/sandbox-test-absent-{}/deeper/ws", std::process::id());
    assert!(!Path::new(&at).exists());
    let mut policy = fx.policy(Enforce);
    policy.scratch_mount_at = Some(at.clone().into());
    let out = output(
        sandbox::command(
            &sh(&format!(
                "echo written > {at}/f && read -r l < {at}/f && echo \"$l\""
            )),
            &policy,
        )
        .unwrap(),
    );
    assert_eq!(text(&out.stdout), "written\n", "{out:?}");
    assert_eq!(
        std::fs::read_to_string(fx.scratch.path().join("f")).unwrap(),
        "written\n"
    );
}
