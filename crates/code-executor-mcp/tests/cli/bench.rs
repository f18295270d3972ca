//! `code-executor-mcp bench` sections that judge issue #44's targets, run as a user runs them
//! (each prints JSON; the figures depend on the machine, so these tests check that every
//! measurement is made and reported with its target, not the figures):
//! `--start-only` (worker start, both languages), `--access-only` (granted fetch and read,
//! timed inside the code and as whole executions) and `--sdk-only --python-sdk` (back to back
//! from the official MCP Python SDK; needs the interop harness).

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use test_support::TempDir;

use crate::common::EXE;

/// `bench ARGS` with a scratch home; its JSON.
fn bench(dir: &Path, args: &[&str]) -> Value {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(EXE)
        .current_dir(dir)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("MCP_CONFIG_PATH")
        .env_remove("CODE_EXECUTOR_CONFIG_PATH")
        .args(["--no-discover", "bench"])
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench {args:?} failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let start = stdout
        .find('{')
        .unwrap_or_else(|| panic!("no JSON: {stdout}"));
    serde_json::from_str(&stdout[start..]).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn median(v: &Value) -> f64 {
    v["median"]
        .as_f64()
        .unwrap_or_else(|| panic!("no median in {v}"))
}

#[test]
fn start_only_times_worker_starts_in_both_languages_against_their_targets() {
    let dir = TempDir::new("bench-start");
    let v = &bench(&dir.0, &["--start-only", "--iterations", "5"])["worker_start"];
    for lang in ["typescript_ms", "python_ms"] {
        let m = median(&v[lang]);
        assert!(m > 0.0 && m < 5_000.0, "{lang}: {v}");
        assert_eq!(v[lang]["n"], 5, "{v}");
        assert!(v[lang]["p99"].as_f64().unwrap() >= m, "{v}");
    }
    assert_eq!(v["sandbox"], "enforce", "{v}");
    assert!(
        v["met"]["typescript"].is_boolean() && v["met"]["python"].is_boolean(),
        "{v}"
    );
    assert!(v["targets"]["typescript_median_ms"].is_string(), "{v}");
}

#[test]
fn access_only_times_granted_fetches_and_reads_inside_the_code_and_whole() {
    let dir = TempDir::new("bench-access");
    let v = &bench(&dir.0, &["--access-only", "--iterations", "5"])["access"];
    let fetch = &v["fetch_1kb"];
    let read = &v["read_10mb"];
    for (section, key) in [
        (fetch, "direct_from_host_ms"),
        (fetch, "typescript_fetch_in_code_ms"),
        (fetch, "python_fetch_in_code_ms"),
        (fetch, "typescript_execution_ms"),
        (fetch, "python_execution_ms"),
        (read, "cat_ms"),
        (read, "typescript_read_in_code_ms"),
        (read, "python_read_in_code_ms"),
        (read, "typescript_execution_ms"),
        (read, "python_execution_ms"),
    ] {
        assert!(median(&section[key]) > 0.0, "{key}: {v}");
    }
    // What code measures around its own fetch or read is part of its execution.
    for (inside, whole) in [
        (
            &fetch["typescript_fetch_in_code_ms"],
            &fetch["typescript_execution_ms"],
        ),
        (
            &read["python_read_in_code_ms"],
            &read["python_execution_ms"],
        ),
    ] {
        assert!(median(inside) < median(whole), "{v}");
    }
    for k in [
        "typescript_fetch_in_code_vs_direct",
        "python_fetch_in_code_vs_direct",
        "typescript_read_10mb_in_code_vs_cat",
        "python_read_10mb_in_code_vs_cat",
    ] {
        assert!(v["ratios"][k].as_f64().unwrap() > 0.0, "{k}: {v}");
    }
}

#[test]
fn back_to_back_from_the_official_python_sdk_is_reported_beside_its_direct_echo() {
    let Some(prefix) = crate::common::interop::prefix(&[
        "venv/bin/python",
        "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    ]) else {
        return;
    };
    let dir = TempDir::new("bench-sdk");
    let everything =
        prefix.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let python = prefix.join("venv/bin/python");
    let v = bench(
        &dir.0,
        &[
            "--sdk-only",
            "--everything",
            everything.to_str().unwrap(),
            "--python-sdk",
            python.to_str().unwrap(),
        ],
    );
    let sdk = &v["python_sdk"];
    for k in [
        "direct_echo_after_pause_ms",
        "direct_echo_back_to_back_ms",
        "execute_typescript_back_to_back_ms",
        "execute_python_back_to_back_ms",
    ] {
        assert!(median(&sdk[k]) > 0.0, "{k}: {sdk}");
    }
    assert_eq!(sdk["execute_typescript_back_to_back_ms"]["n"], 200, "{sdk}");
    assert!(
        sdk["ratios"]["typescript_vs_direct_echo_back_to_back"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{sdk}"
    );
}
