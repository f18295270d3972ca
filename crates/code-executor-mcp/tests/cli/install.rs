//! Installing like every MCP server, from local artifacts only (never a registry):
//! - the wheel (maturin, `bindings = "bin"`) into a fresh venv, then `uvx` and `pipx run`
//!   from a directory holding it;
//! - the npm launcher and this platform's package, `npm pack`ed, served by a local registry
//!   (tests/install/npm_registry.py), started with `npx -y` from an empty directory;
//! - `cargo install code-executor-mcp` of the packaged crate (`cargo package`), offline,
//!   crates.io replaced by a directory source holding the packaged crates and their locked
//!   dependencies.
//!
//! Each installed server is driven as an MCP server by the official Python SDK
//! (tests/install/installed_smoke.py): tools listed, TypeScript and Python run sandboxed.
//!
//! The artifacts are built once per run by `scripts/build-dist.sh` (one release build).
//! Needs the tools of `scripts/setup-dist-tools.sh` and the SDK venv of
//! `scripts/setup-interop.sh`; without them a loud SKIP, a failure under
//! `CODE_EXECUTOR_REQUIRE_INTEROP=1`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::setup::{Machine, skip_or_fail};

/// The npm launcher's name (a release decision; see packaging/README.md).
const NPM_NAME: &str = "@code-executor/mcp";
const VERSION: &str = env!("CARGO_PKG_VERSION");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn prefix() -> PathBuf {
    std::env::var_os("CODE_EXECUTOR_INTEROP")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/code-executor-interop"))
}

fn tool(name: &str) -> Option<PathBuf> {
    let p = prefix().join("dist-tools/bin").join(name);
    if p.exists() {
        Some(p)
    } else {
        skip_or_fail(&format!(
            "{} missing; run scripts/setup-interop.sh",
            p.display()
        ));
        None
    }
}

fn sdk_python() -> Option<PathBuf> {
    let p = prefix().join("venv/bin/python");
    if p.exists() {
        Some(p)
    } else {
        skip_or_fail(&format!(
            "{} missing; run scripts/setup-interop.sh",
            p.display()
        ));
        None
    }
}

/// A command without the variables cargo sets for tests (a nested cargo must not see them).
fn clean(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    for (key, _) in std::env::vars_os() {
        if let Some(k) = key.to_str()
            && [
                "CARGO_PKG_",
                "CARGO_MANIFEST_",
                "CARGO_BIN_",
                "CARGO_CRATE_",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "OUT_DIR",
            ]
            .iter()
            .any(|p| k.starts_with(p))
        {
            cmd.env_remove(&key);
        }
    }
    cmd
}

/// The target directory of the release builds these tests make (`scripts/build-dist.sh` and
/// `cargo install`): a directory of its own inside the workspace's `target/`, never
/// `target/release`, so the user's release build (`cargo run --release -- demo`, then `bench`)
/// is neither replaced by one built with other settings nor made stale by the tests.
fn build_target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("install-tests")
}

/// Every artifact, built once for all the tests of this file.
fn dist() -> Option<&'static Path> {
    static DIST: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIST.get_or_init(|| {
        tool("maturin")?;
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dist");
        let status = clean("bash")
            .arg(repo().join("scripts/build-dist.sh"))
            .arg(&out)
            .env("CARGO_TARGET_DIR", build_target())
            .env("CODE_EXECUTOR_INTEROP", prefix())
            .status()
            .unwrap();
        assert!(status.success(), "scripts/build-dist.sh failed");
        Some(out)
    })
    .as_deref()
}

fn output(cmd: &mut Command) -> String {
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?}: {text}");
    text
}

/// The commit the artifacts were built from, as `--version` names it.
fn head() -> String {
    let out = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(repo())
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn assert_version(text: &str) {
    let want = format!("code-executor-mcp {VERSION} ({}", head());
    assert!(
        text.trim().starts_with(&want),
        "{text:?} should start with {want:?}"
    );
}

/// The SDK drives `command args...` as an MCP server, with `envs` on top of the machine's.
fn smoke(m: &Machine, command: &str, args: &[&str], envs: &[(&str, String)]) {
    let Some(py) = sdk_python() else { return };
    let mut cmd = m.command(&py);
    cmd.arg(repo().join("tests/install/installed_smoke.py"))
        .arg(command)
        .args(args)
        .env("PATH", path_with_node());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let text = output(&mut cmd);
    assert!(text.contains(" passed, 0 failed"), "{text}");
}

/// PATH for programs that need node, npm, python3.
fn path_with_node() -> String {
    let mut dirs: Vec<String> = Vec::new();
    for p in ["node", "npm", "python3"] {
        if let Some(path) = std::env::var_os("PATH")
            && let Some(d) = std::env::split_paths(&path).find(|d| d.join(p).is_file())
        {
            dirs.push(d.display().to_string());
        }
    }
    dirs.extend(["/usr/local/bin".into(), "/usr/bin".into(), "/bin".into()]);
    dirs.join(":")
}

fn only_file(dir: &Path, suffix: &str) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    assert_eq!(files.len(), 1, "{suffix} in {}: {files:?}", dir.display());
    files[0].clone()
}

#[test]
fn the_wheel_installs_into_a_fresh_venv_and_serves_mcp() {
    let Some(dist) = dist() else { return };
    let wheel = only_file(&dist.join("wheels"), ".whl");
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    let arch = std::env::consts::ARCH;
    assert!(
        name.starts_with(&format!("code_executor_mcp-{VERSION}-py3-none-manylinux_"))
            && name.ends_with(&format!("_{arch}.whl")),
        "{name}"
    );
    // Its metadata: name, licence, README, the binary as a script.
    let listing = output(
        Command::new("python3")
            .args(["-c", "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); print('\\n'.join(z.namelist())); print(next(z.read(n).decode() for n in z.namelist() if n.endswith('METADATA')))"])
            .arg(&wheel),
    );
    assert!(
        listing.contains(&format!(
            "code_executor_mcp-{VERSION}.data/scripts/code-executor-mcp"
        )),
        "{listing}"
    );
    assert!(listing.contains("Name: code-executor-mcp"), "{listing}");
    assert!(
        listing.contains("License-Expression: MIT OR Apache-2.0"),
        "{listing}"
    );
    assert!(
        listing.contains("LICENSE-APACHE") && listing.contains("LICENSE-MIT"),
        "{listing}"
    );
    assert!(
        listing.contains("uvx code-executor-mcp setup"),
        "the README: {listing}"
    );

    let m = Machine::new("wheel");
    let venv = m.root.join("venv");
    output(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    output(
        m.command(&venv.join("bin/pip"))
            .args(["install", "-q", "--no-index"])
            .arg(&wheel),
    );
    let exe = venv.join("bin/code-executor-mcp");
    assert_version(&output(m.command(&exe).arg("--version")));
    smoke(&m, &exe.to_string_lossy(), &[], &[]);
}

#[test]
fn uvx_and_pipx_run_start_the_server_from_a_directory_holding_the_wheel() {
    let Some(dist) = dist() else { return };
    let (Some(uvx), Some(pipx)) = (tool("uvx"), tool("pipx")) else {
        return;
    };
    let wheels = dist.join("wheels").display().to_string();
    let m = Machine::new("uvx");
    // uv's cache where users have it ($XDG_CACHE_HOME/uv), no interpreter downloads.
    let envs = [
        ("XDG_CACHE_HOME", m.root.join("cache").display().to_string()),
        ("UV_PYTHON_DOWNLOADS", "never".to_string()),
        ("UV_NO_CONFIG", "1".to_string()),
    ];
    let uvx_args = ["--no-index", "--find-links", &wheels, "code-executor-mcp"];
    let mut cmd = m.command(&uvx);
    cmd.args(uvx_args)
        .arg("--version")
        .env("PATH", path_with_node());
    for (k, v) in &envs {
        cmd.env(k, v);
    }
    assert_version(&output(&mut cmd));
    smoke(&m, &uvx.to_string_lossy(), &uvx_args, &envs);
    // setup run through uvx writes the uvx command, not the cache path.
    m.write(".codex/config.toml", "");
    let mut cmd = m.command(&uvx);
    cmd.args(uvx_args)
        .args(["setup", "--dry-run", "--client", "codex"])
        .env("PATH", path_with_node());
    for (k, v) in &envs {
        cmd.env(k, v);
    }
    let text = output(&mut cmd);
    assert!(
        text.contains("+command = \"uvx\"\n+args = [\"code-executor-mcp\"]"),
        "{text}"
    );

    // pipx run (its uv backend, uv on PATH as pipx[uv] installs it): an empty local index,
    // the wheel's directory as find-links.
    let p = Machine::new("pipx");
    let empty = p.root.join("empty-index");
    std::fs::create_dir_all(&empty).unwrap();
    let tools = pipx.parent().unwrap().display().to_string();
    let envs = [
        ("PIPX_HOME", p.root.join("pipx").display().to_string()),
        ("XDG_CACHE_HOME", p.root.join("cache").display().to_string()),
        ("UV_PYTHON_DOWNLOADS", "never".to_string()),
        ("PATH", format!("{tools}:{}", path_with_node())),
    ];
    let index = format!("file://{}", empty.display());
    let find_links = format!("--pip-args=--find-links {wheels}");
    let pipx_args = [
        "run",
        "--index-url",
        index.as_str(),
        find_links.as_str(),
        "code-executor-mcp",
    ];
    let mut cmd = p.command(&pipx);
    cmd.args(pipx_args).arg("--version");
    for (k, v) in &envs {
        cmd.env(k, v);
    }
    assert_version(&output(&mut cmd));
    smoke(&p, &pipx.to_string_lossy(), &pipx_args, &envs);
}

/// The local registry, killed on drop.
struct Registry(std::process::Child, u16);

impl Registry {
    fn start(dir: &Path) -> Registry {
        use std::io::BufRead;
        let mut child = Command::new("python3")
            .arg(repo().join("tests/install/npm_registry.py"))
            .arg(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().unwrap();
        Registry(child, port)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn tgz_manifest(tgz: &Path) -> Value {
    let text = output(
        Command::new("tar")
            .args(["-xzOf"])
            .arg(tgz)
            .arg("package/package.json"),
    );
    serde_json::from_str(&text).unwrap()
}

#[test]
fn npx_starts_the_server_from_the_packed_tarballs() {
    let Some(dist) = dist() else { return };
    let npm = dist.join("npm");
    let plat = match std::env::consts::ARCH {
        "x86_64" => "linux-x64",
        _ => "linux-arm64",
    };
    // The launcher: a bin, every platform as an optional dependency, no install script.
    let launcher = tgz_manifest(&only_file(&npm, &format!("mcp-{VERSION}.tgz")));
    assert_eq!(launcher["name"], NPM_NAME);
    assert_eq!(
        launcher["bin"]["code-executor-mcp"],
        "bin/code-executor-mcp.js"
    );
    for p in ["linux-x64", "linux-arm64"] {
        assert_eq!(
            launcher["optionalDependencies"][format!("{NPM_NAME}-{p}")],
            VERSION,
            "{launcher}"
        );
    }
    assert!(
        launcher.get("scripts").is_none(),
        "no install scripts: {launcher}"
    );
    assert_eq!(launcher["license"], "MIT OR Apache-2.0");
    let platform = tgz_manifest(&only_file(&npm, &format!("{plat}-{VERSION}.tgz")));
    assert_eq!(platform["name"], format!("{NPM_NAME}-{plat}"));
    assert_eq!(platform["os"], serde_json::json!(["linux"]));
    assert_eq!(platform["cpu"][0], plat.trim_start_matches("linux-"));
    assert_eq!(platform["libc"], serde_json::json!(["glibc"]));
    assert!(platform.get("scripts").is_none(), "{platform}");

    let registry = Registry::start(&npm);
    let m = Machine::new("npx");
    let empty = m.root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let envs = [
        (
            "npm_config_registry",
            format!("http://127.0.0.1:{}/", registry.1),
        ),
        (
            "npm_config_cache",
            m.root.join("npm-cache").display().to_string(),
        ),
        ("npm_config_update_notifier", "false".to_string()),
        ("npm_config_audit", "false".to_string()),
        ("npm_config_fund", "false".to_string()),
    ];
    let npx = |args: &[&str]| {
        let mut cmd = m.command(Path::new("npx"));
        cmd.current_dir(&empty)
            .args(["-y", NPM_NAME])
            .args(args)
            .env("PATH", path_with_node());
        for (k, v) in &envs {
            cmd.env(k, v);
        }
        output(&mut cmd)
    };
    assert_version(&npx(&["--version"]));
    assert!(
        std::fs::read_dir(&empty).unwrap().next().is_none(),
        "npx left the empty directory empty"
    );
    smoke(&m, "npx", &["-y", NPM_NAME], &envs);
    // setup run through npx writes the npx command, not the cache path.
    m.write(".codex/config.toml", "");
    let text = npx(&["setup", "--dry-run", "--client", "codex"]);
    assert!(
        text.contains(&format!(
            "+command = \"npx\"\n+args = [\"-y\", \"{NPM_NAME}\"]"
        )),
        "{text}"
    );
}

#[test]
fn cargo_install_builds_the_packaged_crate_offline() {
    let Some(dist) = dist() else { return };
    // The published crates carry metadata, README and licences.
    for name in [
        "code-executor-mcp-worker-protocol",
        "code-executor-mcp-sandbox",
        "code-executor-mcp-js-worker",
        "code-executor-mcp-openapi",
        "code-executor-mcp-store",
        "code-executor-mcp-policy",
        "code-executor-mcp-tools",
        "code-executor-mcp-runtime",
        "code-executor-mcp-faces",
        "code-executor-mcp-bench",
        "code-executor-mcp-eval",
        "code-executor-mcp",
    ] {
        let dir = dist.join("vendor").join(format!("{name}-{VERSION}"));
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        for key in [
            "description = ",
            "license = \"MIT OR Apache-2.0\"",
            "repository = ",
            "readme = \"README.md\"",
        ] {
            assert!(manifest.contains(key), "{name}: {key} missing");
        }
        for file in [
            "README.md",
            "LICENSE-MIT",
            "LICENSE-APACHE",
            ".cargo_vcs_info.json",
        ] {
            assert!(dir.join(file).is_file(), "{name}: {file} missing");
        }
    }
    let m = Machine::new("cargo");
    let root = m.root.join("cargo-root");
    let vendor = dist.join("vendor");
    // The target directory the wheel was built in (its dependencies are reused), not the
    // workspace's: these profile settings would replace the user's release binary.
    // `cargo install code-executor-mcp` as users type it, crates.io replaced by the
    // directory source; --locked: the lock file cargo package put in the crate.
    let status = clean(env!("CARGO"))
        .current_dir(&m.root)
        .args(["install", "code-executor-mcp", "--version", VERSION])
        .args(["--locked", "--offline", "--quiet"])
        .arg("--root")
        .arg(&root)
        .args([
            "--config",
            "source.crates-io.replace-with=\"dist\"",
            "--config",
        ])
        .arg(format!("source.dist.directory=\"{}\"", vendor.display()))
        .env("CARGO_TARGET_DIR", build_target())
        .env("CARGO_PROFILE_RELEASE_LTO", "thin")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "4")
        .env("CARGO_PROFILE_RELEASE_STRIP", "symbols")
        .status()
        .unwrap();
    assert!(
        status.success(),
        "cargo install of the packaged crate failed"
    );
    let exe = root.join("bin/code-executor-mcp");
    assert_version(&output(m.command(&exe).arg("--version")));
    smoke(&m, &exe.to_string_lossy(), &[], &[]);
}
