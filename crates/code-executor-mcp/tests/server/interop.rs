//! Interop with software nobody here wrote: the official Python MCP SDK as the client (and
//! the TypeScript SDK too in the settings matrix), the reference MCP servers (npm and PyPI)
//! as upstreams, and the MCP conformance suite.
//!
//! Needs `scripts/setup-interop.sh` (npm + PyPI); `.ci/run` runs it. Without it these tests
//! print a loud SKIP, unless `CODE_EXECUTOR_REQUIRE_INTEROP=1` (set in CI) makes that a failure.

use std::path::PathBuf;
use std::process::Command;

use crate::common::EXE;

fn prefix() -> Option<PathBuf> {
    crate::common::interop::prefix(&[])
}

fn scripts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop")
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run interop script");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "interop script failed:\n{text}");
}

#[test]
fn python_sdk_drives_us_with_the_five_reference_servers_upstream() {
    let Some(p) = prefix() else { return };
    run(Command::new(p.join("venv/bin/python"))
        .arg(scripts().join("sdk_e2e.py"))
        .args(["--exe", EXE, "--config"])
        .arg(p.join("upstreams.json"))
        .arg("--git-repo")
        .arg(p.join("data/git-repo"))
        .arg("--fs-root")
        .arg(p.join("data/fs-root")));
}

/// Long runs driven by the official Python SDK in both protocol generations: paging through
/// the fixture's 10,000 records as a task and with yieldAfterMs + wait, progress in order,
/// cancellation (wait, tasks/cancel, notifications/cancelled: worker gone, upstream call
/// cancelled, audited), an expired task, and limits refused with clear errors.
#[test]
fn python_sdk_runs_long_executions_as_tasks_and_with_wait() {
    let Some(p) = prefix() else { return };
    run(Command::new(p.join("venv/bin/python"))
        .arg(scripts().join("long_runs.py"))
        .args(["--exe", EXE, "--fixture"])
        .arg(test_support::workspace_bin("fixture-server")));
}

/// The 2025-11-25 task-augmented `tools/call` and `tasks/get`, `tasks/list`, `tasks/result`,
/// `tasks/cancel` over `serve --http` (the shim on each transport session), with the official
/// Python SDK in its legacy mode.
#[test]
fn python_sdk_runs_2025_tasks_over_http() {
    let Some(p) = prefix() else { return };
    run(Command::new(p.join("venv/bin/python"))
        .arg(scripts().join("long_runs.py"))
        .args(["--exe", EXE, "--http", "--fixture"])
        .arg(test_support::workspace_bin("fixture-server")));
}

#[test]
fn mcp_conformance_server_scenarios_pass() {
    let Some(p) = prefix() else { return };
    run(Command::new("bash")
        .arg(scripts().join("conformance.sh"))
        .arg(&p)
        .arg(EXE)
        .arg(p.join("upstreams.json")));
}

/// The official Python SDK as a client of `serve --http`, in both protocol generations,
/// two principals with bearer tokens, reference servers upstream.
#[test]
fn python_sdk_drives_us_over_http_in_both_generations() {
    let Some(p) = prefix() else { return };
    run(Command::new(p.join("venv/bin/python"))
        .arg(scripts().join("sdk_http.py"))
        .args(["--exe", EXE, "--config"])
        .arg(p.join("upstreams.json")));
}

/// The conformance suite's server scenarios, DNS rebinding protection among them, against
/// our own HTTP endpoint.
#[test]
fn mcp_conformance_server_scenarios_pass_over_http() {
    let Some(p) = prefix() else { return };
    run(Command::new("bash")
        .arg(scripts().join("conformance_http.sh"))
        .arg(&p)
        .arg(EXE)
        .arg(p.join("upstreams.json")));
}

/// server-everything in one of its HTTP modes on a free loopback port; killed on drop.
/// Ready once it answers an HTTP request (a listening socket alone is not a served one); a
/// server that exits first (its port taken meanwhile by another test's) is started again on
/// another port.
async fn everything_over_http(p: &std::path::Path, mode: &str) -> (tokio::process::Child, u16) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let js = p.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    for _ in 0..3 {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let mut server = tokio::process::Command::new("node")
            .arg(&js)
            .arg(mode)
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start server-everything over HTTP");
        for _ in 0..200 {
            if server.try_wait().unwrap().is_some() {
                break;
            }
            if let Ok(mut c) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
                let mut head = [0u8; 8];
                let answered = c
                    .write_all(b"GET /ready-probe HTTP/1.0\r\n\r\n")
                    .await
                    .is_ok()
                    && c.read_exact(&mut head).await.is_ok()
                    && head.starts_with(b"HTTP/1.");
                if answered {
                    return (server, port);
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    panic!("server-everything ({mode}) did not serve HTTP on a loopback port");
}

async fn call_remote(entry: serde_json::Value) {
    let h = test_support::Harness::start(
        EXE.as_ref(),
        serde_json::json!({ "remote": entry }),
        &[],
        &[],
    )
    .await;
    let (v, is_error) = h
        .exec("const r = await tools.remote.echo({ message: 'over http' }); const s = await listServers(); return [r, s.servers[0].status, s.servers[0].toolCount];")
        .await;
    assert!(!is_error, "{v}");
    assert!(v["result"][0].to_string().contains("over http"), "{v}");
    assert_eq!(v["result"][1], "connected");
    assert!(v["result"][2].as_u64().unwrap() >= 10, "{v}");
}

/// server-everything in its streamable HTTP mode, reached through us as an `http` upstream
/// with a configured header.
#[tokio::test]
async fn a_streamable_http_upstream_is_called_from_code() {
    let Some(p) = prefix() else { return };
    let (_server, port) = everything_over_http(&p, "streamableHttp").await;
    call_remote(serde_json::json!({
        "type": "http",
        "url": format!("http://127.0.0.1:{port}/mcp"),
        "headers": {"X-Test-Header": "yes"}
    }))
    .await;
}

/// server-everything in its legacy HTTP+SSE mode, reached through us as an `sse` upstream.
#[tokio::test]
async fn a_legacy_sse_upstream_is_called_from_code() {
    let Some(p) = prefix() else { return };
    let (_server, port) = everything_over_http(&p, "sse").await;
    call_remote(serde_json::json!({
        "type": "sse",
        "url": format!("http://127.0.0.1:{port}/sse"),
        "headers": {"X-Test-Header": "yes"}
    }))
    .await;
}

/// Pauses mid-script, with the official Python SDK as the client (`tests/interop/pauses.py`):
/// approvals approved, denied, timed out and with no capability (the fallback); state kept
/// across pauses and nothing before a pause run twice (the fixture counts its calls); model
/// calls in a loop through the client's sampling, with the budget and redaction.
fn pauses(mode: &str) {
    let Some(p) = prefix() else { return };
    let dir = test_support::TempDir::new("pauses");
    run(Command::new(p.join("venv/bin/python"))
        .arg(scripts().join("pauses.py"))
        .args(["--exe", EXE, "--fixture"])
        .arg(test_support::workspace_bin("fixture-server"))
        .args(["--mode", mode, "--dir"])
        .arg(&dir.0));
}

/// Skills with the official Python SDK as the client (`tests/interop/skills.py`): saved by a
/// client without code, run by name, called from the other language, found by search_tools,
/// read as ordinary resources.
fn skills(mode: &str) {
    let Some(p) = prefix() else { return };
    let dir = test_support::TempDir::new("skills-sdk");
    run(Command::new(p.join("venv/bin/python"))
        .arg(scripts().join("skills.py"))
        .args(["--exe", EXE, "--fixture"])
        .arg(test_support::workspace_bin("fixture-server"))
        .args(["--mode", mode, "--dir"])
        .arg(&dir.0));
}

/// FastMCP's skills client (SEP-2640) reads back every skill we serve, ours, a served
/// directory's and an upstream's, and verifies each against its manifest and entry
/// (`tests/interop/skills_fastmcp.py`).
#[test]
fn fastmcp_skills_client_reads_and_verifies_every_skill() {
    let Some(p) = prefix() else { return };
    let dir = test_support::TempDir::new("skills-fastmcp");
    run(Command::new(p.join("fastmcp/bin/python"))
        .arg(scripts().join("skills_fastmcp.py"))
        .args(["--exe", EXE, "--fixture"])
        .arg(test_support::workspace_bin("fixture-server"))
        .arg("--dir")
        .arg(&dir.0));
}

#[test]
fn python_sdk_legacy_saves_finds_and_runs_skills() {
    skills("legacy");
}

#[test]
fn python_sdk_2026_07_28_saves_finds_and_runs_skills() {
    skills("2026-07-28");
}

/// Before 2026-07-28: inline `elicitation/create` and `sampling/createMessage`.
#[test]
fn python_sdk_legacy_approves_denies_times_out_and_samples_inline() {
    pauses("legacy");
}

/// 2026-07-28: `input_required` with a `requestState`; the retried call resumes the same
/// worker.
#[test]
fn python_sdk_2026_07_28_pauses_by_input_required_and_resumes_the_same_worker() {
    pauses("2026-07-28");
}

/// Pinned direct tools (`tests/interop/direct_tools.py`) with the official Python SDK as the
/// client: listed with the upstream's schemas, the upstream's result (the SDK validates it
/// against the listed outputSchema, and a 2026-07-28 result's `resultType`), a rule's denial,
/// an approval asked and a denial, the audit lines.
fn direct_tools(mode: &str) {
    let Some(p) = prefix() else { return };
    let dir = test_support::TempDir::new("direct-tools");
    run(Command::new(p.join("venv/bin/python"))
        .arg(scripts().join("direct_tools.py"))
        .args(["--exe", EXE, "--fixture"])
        .arg(test_support::workspace_bin("fixture-server"))
        .args(["--mode", mode, "--dir"])
        .arg(&dir.0));
}

#[test]
fn python_sdk_legacy_calls_pinned_direct_tools_approved_inline() {
    direct_tools("legacy");
}

#[test]
fn python_sdk_2026_07_28_calls_pinned_direct_tools_approved_by_input_required() {
    direct_tools("2026-07-28");
}

/// The settings matrix (`tests/interop/matrix.py`): both official SDKs (TypeScript and
/// Python) over stdio and HTTP, at every `RUST_LOG` level, as an unprivileged user, with HOME
/// unset or read-only, without `python3` on PATH and without Python at all; every cell lists
/// the tools and runs TypeScript and Python through an upstream. Prints the table of cells.
/// The rows that need root (the user, the read-only mount, the hidden Python) print a loud
/// SKIP when not root (a fact of the machine; CI runs as root). The table is also written to
/// `target/tmp/settings-matrix.txt` (cargo shows a passing test's output only with
/// `--nocapture`).
#[test]
fn both_sdks_work_in_every_cell_of_the_settings_matrix() {
    let Some(p) = prefix() else { return };
    run(Command::new(p.join("venv/bin/python"))
        .arg(scripts().join("matrix.py"))
        .args(["--exe", EXE, "--fixture"])
        .arg(test_support::workspace_bin("fixture-server"))
        .arg("--prefix")
        .arg(&p)
        .arg("--report")
        .arg(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("settings-matrix.txt")));
}
