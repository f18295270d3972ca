//! `probe`: every layer tried in a helper started for it, reported layer by layer for
//! `doctor` (a [`SandboxReport`]).

use std::process::Stdio;

use crate::linux::layers::layer;
use crate::linux::spawn;
use crate::policy::{SandboxMode, SandboxPolicy};
use crate::report::SandboxReport;

/// Each layer's status under `policy`.
pub(crate) fn probe(policy: &SandboxPolicy) -> SandboxReport {
    if policy.mode == SandboxMode::Disabled {
        let mut report = SandboxReport::all(
            policy.mode,
            &crate::linux::layers::table(),
            false,
            "sandbox disabled by configuration",
        );
        report.set(
            layer::SESSION,
            true,
            "own session and process group; parent-death SIGKILL; fds closed; curated environment"
                .into(),
        );
        return report;
    }
    let mut report = SandboxReport::all(
        policy.mode,
        &crate::linux::layers::table(),
        false,
        "not reached: an earlier layer failed",
    );
    let output = spawn::probe_command(policy).and_then(|mut cmd| {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Ok(cmd.output()?)
    });
    let output = match output {
        Ok(output) => output,
        Err(e) => {
            report.set(
                layer::SESSION,
                false,
                format!("cannot start the helper: {e}"),
            );
            return report;
        }
    };
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let mut parts = line.splitn(4, '\t');
        if let (Some("LAYER"), Some(name), Some(flag), Some(detail)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        {
            report.set(name, flag == "1", detail.to_owned());
        }
    }
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let message = stderr.lines().last().unwrap_or("").to_owned();
        // Name the failure on the first layer that did not report success.
        if let Some(l) = report.layers.iter_mut().find(|l| l.required && !l.enforced) {
            l.detail = format!("helper exited with {}: {message}", output.status);
        }
    }
    let (available, detail) = crate::linux::cgroup::status();
    report.set(
        layer::CGROUP,
        false,
        if available {
            format!("not applied (not implemented yet): {detail}")
        } else {
            detail
        },
    );
    report
}
