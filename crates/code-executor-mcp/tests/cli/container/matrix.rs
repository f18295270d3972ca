//! The container rows of the settings matrix (`tests/interop/matrix.py`): both official SDKs
//! against the image run with the documented flags, over stdio (`podman run -i`, as a
//! client's entry starts it, at the default log level and at `RUST_LOG=warn`) and over HTTP
//! (the image's own `serve --http`). Here so the image is built once for every container test.

use std::path::PathBuf;
use std::process::Command;

use super::{IMAGE, TOKEN, documented_flags, env, text};

fn interop_prefix() -> Option<PathBuf> {
    crate::common::interop::prefix(&[])
}

#[test]
fn both_sdks_work_with_the_image_over_stdio_and_http() {
    let Some(env) = env() else { return };
    let Some(prefix) = interop_prefix() else {
        return;
    };
    let c = env.start("cem-test-matrix", &documented_flags());
    let d = env.dir.display();
    let stdio = |log: Option<&str>| {
        let mut cmd: Vec<String> = vec!["podman".into(), "run".into(), "-i".into(), "--rm".into()];
        cmd.extend(documented_flags());
        if let Some(level) = log {
            cmd.extend(["-e".into(), format!("RUST_LOG={level}")]);
        }
        cmd.extend([
            "-v".into(),
            format!("{d}/mcp.json:/etc/code-executor-mcp/mcp.json:ro"),
            "-v".into(),
            format!("{d}/fixture-server:/opt/fixture/fixture-server:ro"),
            IMAGE.into(),
            "--no-discover".into(),
        ]);
        cmd
    };
    // Each client starts its own container (`--rm`: gone when the client closes stdin).
    let rows = serde_json::json!({
        "container, podman run -i": stdio(None),
        "container, podman run -i, RUST_LOG=warn": stdio(Some("warn")),
    });
    let mut cmd = Command::new(prefix.join("venv/bin/python"));
    if let Some(conf) = &env.conf {
        cmd.env("CONTAINERS_CONF", conf);
    }
    let out = cmd
        .arg(super::repo().join("tests/interop/matrix.py"))
        .arg("--prefix")
        .arg(&prefix)
        .args(["--container-stdio", &rows.to_string()])
        .args(["--container-url", &format!("{}/mcp", c.base())])
        .args(["--token", TOKEN])
        .output()
        .expect("run tests/interop/matrix.py");
    let report = text(&out);
    eprintln!("{report}");
    assert!(
        out.status.success(),
        "the container rows of the matrix:\n{report}\n{}",
        c.logs()
    );
}
